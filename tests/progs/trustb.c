/*
 * trustb - the host behaviours of issue 17 (defects 2-5, 11, 12, 15, 16),
 * one subcommand each. Every one prints what it saw on one line and
 * leaves the judging to tests/system/test_trust.c (which also reads the
 * recording layer beneath the shim).
 *
 *   trustb group -f FILE [-t THREADS] [-n COUNT]
 *       THREADS threads, each COUNT x (pwrite + fsync) on its own
 *       descriptor of FILE. "group: zero=Z calls=N"
 *   trustb dup2fail -f FILE [-x]
 *       FILE opened O_SYNC, a dup2 from a closed number onto it (fails
 *       EBADF; -x: not made), then 20 writes. "dup2fail: ino=I dup2=R errno=E"
 *   trustb reuse -d DIR
 *       DIR/a.def written, fsynced, closed, its deferred sync flushed
 *       (syncshim_flush), unlinked; then DIR/b.N.pass created until one
 *       reuses a.def's inode number, written and fsynced 3 times.
 *       "reuse: a=I b=I name=N fsync=E,E,E"
 *   trustb dup2race -d DIR [-n ROUNDS]
 *       two threads dup2 DIR/x.noop and DIR/y.pass onto one number at
 *       once; then the number is written and fsynced.
 *       "dup2race: pass_rounds=P noop_rounds=Q pass_ino=I"
 *   trustb dup2stale -d DIR -l HOLD
 *       with the hold chain SYNCSHIM_TEST_HOLD_AT=dup_onto_kernel,dup_onto_copied:
 *       a thread dup2s DIR/x.noop onto number 40 and is held after the
 *       kernel call (HOLD.reached); main dup2s DIR/y.pass onto 40 (the
 *       kernel keeps y.pass) and makes HOLD; the thread's slot copy names
 *       x.noop and it is held before its check (HOLD.1.reached); main
 *       writes and fsyncs 40, then makes HOLD.1.
 *       "dup2stale: reached=R,R fsync=E kernel_ino=K pass_ino=I"
 *   trustb dup2resolve -d DIR -l HOLD
 *       DIR/x.noop put on number 41 behind the shim's back (libc's own
 *       syscall(SYS_dup3));
 *       a thread fdatasyncs 41 and is held (SYNCSHIM_TEST_HOLD_AT=
 *       fd_get_resolve) after the shim looked at it, before it binds it
 *       (HOLD.reached); main dup2s DIR/y.pass onto 41, makes HOLD, joins
 *       the thread, then writes and fsyncs 41.
 *       "dup2resolve: reached=R fdatasync=E fsync=E kernel_ino=K pass_ino=I"
 *   trustb unlinked -d DIR [-t THREADS] [-n COUNT] [-S] [-k SYNCS]
 *       each thread COUNT x: open DIR/u.K (-S: all DIR/u.0), unlink it,
 *       SYNCS x (write 4 KiB + fsync) (default 1), close: a temporary
 *       file as sqlite and MariaDB make them.
 *       "unlinked: failed=F calls=N first_errno=E"
 *   trustb msyncmoved -d DIR
 *       DIR/m.dat mapped shared, written through the mapping, renamed,
 *       msync(MS_SYNC), unlinked, msync again, fsync.
 *       "msyncmoved: msync=E,E fsync=E"
 *   trustb forkpriv -f FILE
 *       FILE written, fsynced (deferred), closed; fork: the child counts
 *       its descriptors of FILE's inode. "forkpriv: child_fds=N"
 *   trustb privlost -d DIR [-S]
 *       DIR/sub/a.dat written, fsynced (deferred), closed (the shim keeps a
 *       descriptor of its own); then, behind the shim's back (syscall()),
 *       DIR/sub renamed to DIR/moved (-S: a.dat unlinked instead) and the
 *       shim's descriptor closed, so no descriptor and no name leads to
 *       the file; then syncshim_flush(). "privlost: closed=N"
 *   trustb emfile -d DIR -L LIMIT -c CLOSES
 *       RLIMIT_NOFILE LIMIT; CLOSES files written, fsynced and closed (each
 *       owes a deferred sync); then as many opendir, epoll_create,
 *       inotify_init1, timerfd_create, signalfd as succeed.
 *       "emfile: opendir=A epoll=B inotify=C timerfd=D signalfd=E"
 *   trustb closelease -f FILE
 *       FILE written and fsynced (deferred); the close waits out the
 *       background sync borrowing the number. "closelease: fd=N"
 *   trustb rwfdsync -f FILE
 *       one pwritev2(RWF_DSYNC) of 4096 bytes. "rwfdsync: ret=R"
 *   trustb lognum -f FILE -l LOG
 *       writes + fsyncs FILE (the log opens), then opens FILE.probe and
 *       prints its number, and closes the log's number
 *       (found by its inode). "lognum: fd=F probe=N logfd=L close=E"
 *   trustb forkheld -f FILE -l HOLD
 *       a thread writes + fsyncs FILE (the shim's log opens there, and
 *       holds at the test point SYNCSHIM_TEST_HOLD_AT names, making
 *       HOLD.reached); main waits up to 5 s for HOLD.reached, forks, then
 *       makes HOLD (the shim goes on).
 *       The child lists its descriptors but the listing's own and FILE's.
 *       "forkheld: reached=R child_fds=LIST"
 *   trustb dupreport -d DIR [-S]
 *       two opens a and b of DIR/d.dat (-S: a O_SYNC); a written (without
 *       -S: and fsynced), the shim's deferred sync made; a closed; b
 *       fsynced, written and fsynced, the deferred syncs made, b closed.
 *       "dupreport: close_a=E fsync_b=E,E close_b=E"
 *   trustb nofile -f FILE -L LIMIT [-l LOG]
 *       RLIMIT_NOFILE LIMIT, FILE written and fsynced, then opened until
 *       an open fails. "nofile: opens=N errno=E"
 *   trustb unmapstale -d DIR -l HOLD   (SYNCSHIM_TEST_HOLD_AT=munmap_done)
 *   trustb remapstale -d DIR -l HOLD   (SYNCSHIM_TEST_HOLD_AT=mmap_fixed_done)
 *       DIR/x.noop and DIR/y.pass, a page each; x.noop mapped shared at P.
 *       A thread takes x.noop's mapping away and is held once its kernel
 *       call is made (HOLD.reached): unmapstale munmaps P, and main then
 *       maps y.pass at P behind the shim's back (libc's own syscall());
 *       remapstale maps y.pass over P with MAP_FIXED. Main writes P and
 *       msync(MS_SYNC)s it, makes HOLD and joins the thread.
 *       "mapstale: reached=R msync=E at_p=A"
 *
 * Exit 0 unless a call the scenario depends on failed (1) or usage (2).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static const char *file, *dir, *logpath;
static int nthreads = 16, count = 200, skip_dup2, limit = 16, closes = 4, shared_path, syncs_per_file = 1;

static void die(const char *what)
{
	fprintf(stderr, "trustb: %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *ename(int r)
{
	return r == 0 ? "0" : strerrorname_np(errno);
}

/* The shim's drain (all owed syncs now), when it is loaded. */
static void flush_shim(void)
{
	void (*fl)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (fl)
		fl();
}

/* ---- group ------------------------------------------------------------- */

static atomic_int zero, calls;

static void *group_worker(void *arg)
{
	(void)arg;
	int fd = open(file, O_WRONLY);
	if (fd < 0)
		die("open");
	for (int i = 0; i < count; i++) {
		if (pwrite(fd, "g", 1, 0) != 1)
			die("pwrite");
		int r = fsync(fd);
		atomic_fetch_add(&calls, 1);
		if (r == 0)
			atomic_fetch_add(&zero, 1);
	}
	close(fd);
	return NULL;
}

static int do_group(void)
{
	pthread_t t[256];
	if (nthreads > 256)
		nthreads = 256;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, group_worker, NULL);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("group: zero=%d calls=%d\n", zero, calls);
	return 0;
}

/* ---- dup2fail ------------------------------------------------------------ */

static int do_dup2fail(void)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_SYNC, 0644);
	if (fd < 0)
		die("open");
	struct stat st;
	fstat(fd, &st);
	int r = 0, e = 0;
	if (!skip_dup2) {
		int bad = 600;
		while (fcntl(bad, F_GETFD) >= 0) /* a number nobody holds */
			bad++;
		r = dup2(bad, fd);
		e = errno;
	}
	for (int i = 0; i < 20; i++)
		if (write(fd, "0123456789abcde\n", 16) != 16)
			die("write");
	printf("dup2fail: ino=%llu dup2=%d errno=%s\n", (unsigned long long)st.st_ino, r,
	       r ? strerrorname_np(e) : "0");
	return 0;
}

/* ---- reuse --------------------------------------------------------------- */

static int do_reuse(void)
{
	char a[4096], b[4096];
	snprintf(a, sizeof(a), "%s/a.def", dir);
	int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open a");
	struct stat sa, sb;
	fstat(fd, &sa);
	if (write(fd, "a", 1) != 1)
		die("write a");
	int r0 = fsync(fd), c0 = close(fd);
	flush_shim(); /* its real sync fails beneath the shim: an error for nobody */
	if (unlink(a) != 0)
		die("unlink a");
	int n;
	for (n = 0; n < 200; n++) {
		snprintf(b, sizeof(b), "%s/b.%d.pass", dir, n);
		fd = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open b");
		fstat(fd, &sb);
		if (sb.st_ino == sa.st_ino)
			break;
		close(fd);
	}
	char res[3][32];
	for (int i = 0; i < 3; i++) {
		if (n < 200 && write(fd, "b", 1) != 1)
			die("write b");
		snprintf(res[i], sizeof(res[i]), "%s", n < 200 ? ename(fsync(fd)) : "-");
	}
	printf("reuse: a=%llu b=%llu name=%d first=%s,%s fsync=%s,%s,%s\n", (unsigned long long)sa.st_ino,
	       n < 200 ? (unsigned long long)sb.st_ino : 0ull, n, r0 ? "E" : "0", c0 ? "E" : "0", res[0], res[1],
	       res[2]);
	return 0;
}

/* ---- dup2race ------------------------------------------------------------ */

static pthread_barrier_t bar;
static int src[2], target;

static void *racer(void *arg)
{
	int k = (int)(long)arg;
	for (int i = 0; i < count; i++) {
		pthread_barrier_wait(&bar);
		dup2(src[k], target);
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar); /* main judges and syncs */
	}
	return NULL;
}

static int do_dup2race(void)
{
	char x[4096], y[4096];
	snprintf(x, sizeof(x), "%s/x.noop", dir);
	snprintf(y, sizeof(y), "%s/y.pass", dir);
	src[0] = open(x, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	src[1] = open(y, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	target = open(x, O_RDONLY);
	if (src[0] < 0 || src[1] < 0 || target < 0)
		die("open");
	struct stat sy;
	fstat(src[1], &sy);
	pthread_barrier_init(&bar, NULL, 3);
	pthread_t t[2];
	for (long k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, racer, (void *)k);
	int pass = 0, noop = 0;
	for (int i = 0; i < count; i++) {
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		struct stat st;
		fstat(target, &st);
		if (st.st_ino == sy.st_ino)
			pass++;
		else
			noop++;
		if (pwrite(target, "r", 1, 0) != 1 || fsync(target) != 0)
			die("write+fsync");
		pthread_barrier_wait(&bar);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("dup2race: pass_rounds=%d noop_rounds=%d pass_ino=%llu\n", pass, noop,
	       (unsigned long long)sy.st_ino);
	return 0;
}

/* ---- dup2stale ----------------------------------------------------------- */

static int stale_noop, stale_number = 40;

static void *stale_dup2er(void *arg)
{
	(void)arg;
	if (dup2(stale_noop, stale_number) != stale_number)
		die("dup2 x.noop");
	return NULL;
}

static void make_file(const char *path)
{
	int h = open(path, O_WRONLY | O_CREAT, 0644);
	if (h >= 0)
		close(h);
}

/* The races' files, opened with access mode acc: DIR/x.noop (a noop
 * rule) into *noop, DIR/y.pass (passthrough) returned, its identity into
 * *pass_st. */
static int open_noop_and_pass(int acc, int *noop, struct stat *pass_st)
{
	char x[4096], y[4096];
	snprintf(x, sizeof(x), "%s/x.noop", dir);
	snprintf(y, sizeof(y), "%s/y.pass", dir);
	*noop = open(x, acc | O_CREAT | O_TRUNC, 0644);
	int pass = open(y, acc | O_CREAT | O_TRUNC, 0644);
	if (*noop < 0 || pass < 0 || fstat(pass, pass_st) != 0)
		die("open");
	return pass;
}

/* libc's own syscall(), not the shim's: what it does the shim never sees
 * (a runtime's raw system calls). NULL if libc has none. */
static long (*libc_syscall(void))(long, ...)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	return libc ? (long (*)(long, ...))dlsym(libc, "syscall") : NULL;
}

static int do_dup2stale(void)
{
	char path[4200];
	struct stat sy, sk;
	int pass = open_noop_and_pass(O_WRONLY, &stale_noop, &sy);
	pthread_t t;
	if (pthread_create(&t, NULL, stale_dup2er, NULL) != 0)
		die("pthread_create");
	snprintf(path, sizeof(path), "%s.reached", logpath);
	int after_kernel = hold_marker_appears(path, 5000); /* its kernel call made, its slot copy not */
	if (dup2(pass, stale_number) != stale_number) /* second in the kernel, first to copy */
		die("dup2 y.pass");
	make_file(logpath);
	snprintf(path, sizeof(path), "%s.1.reached", logpath);
	int after_copy = hold_marker_appears(path, 5000); /* its copy made (x.noop), its check not */
	fstat(stale_number, &sk);
	const char *e = pwrite(stale_number, "s", 1, 0) == 1 ? ename(fsync(stale_number)) : "write";
	snprintf(path, sizeof(path), "%s.1", logpath);
	make_file(path);
	pthread_join(t, NULL);
	printf("dup2stale: reached=%d,%d fsync=%s kernel_ino=%llu pass_ino=%llu\n", after_kernel, after_copy, e,
	       (unsigned long long)sk.st_ino, (unsigned long long)sy.st_ino);
	return 0;
}

/* ---- dup2resolve --------------------------------------------------------- */

static const char *resolve_e;

static void *resolve_syncer(void *arg)
{
	(void)arg;
	resolve_e = ename(fdatasync(stale_number));
	return NULL;
}

static int do_dup2resolve(void)
{
	char path[4200];
	struct stat sy, sk;
	int noop, pass = open_noop_and_pass(O_WRONLY, &noop, &sy);
	if (fsync(noop) != 0) /* the shim's look at inherited descriptors is done */
		die("fsync x.noop");
	stale_number = 41;
	long (*raw_syscall)(long, ...) = libc_syscall(); /* the shim never sees this dup3 */
	if (!raw_syscall || raw_syscall(SYS_dup3, noop, stale_number, 0) != stale_number)
		die("dup3");
	pthread_t t;
	if (pthread_create(&t, NULL, resolve_syncer, NULL) != 0)
		die("pthread_create");
	snprintf(path, sizeof(path), "%s.reached", logpath);
	int reached = hold_marker_appears(path, 5000); /* it saw x.noop there, has not bound it */
	if (dup2(pass, stale_number) != stale_number)
		die("dup2 y.pass");
	make_file(logpath);
	pthread_join(t, NULL);
	fstat(stale_number, &sk);
	const char *e = pwrite(stale_number, "r", 1, 0) == 1 ? ename(fsync(stale_number)) : "write";
	printf("dup2resolve: reached=%d fdatasync=%s fsync=%s kernel_ino=%llu pass_ino=%llu\n", reached, resolve_e, e,
	       (unsigned long long)sk.st_ino, (unsigned long long)sy.st_ino);
	return 0;
}

/* ---- unmapstale, remapstale ---------------------------------------------- */

static char *stale_p;
static int stale_pass_fd, stale_remap;

static void *stale_unmapper(void *arg)
{
	(void)arg;
	if (stale_remap)
		mmap(stale_p, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, stale_pass_fd, 0);
	else
		munmap(stale_p, 4096);
	return NULL;
}

/* The shim's record of which file is mapped where must never outlive the
 * kernel's: while a thread's munmap or MAP_FIXED mmap is between its
 * kernel call and the shim's bookkeeping, an msync of the address that
 * now holds y.pass must not get x.noop's rule. */
static int do_mapstale(int remap)
{
	char path[4200];
	struct stat sy;
	int noop, pass = open_noop_and_pass(O_RDWR, &noop, &sy); /* a shared mapping wants read access */
	if (ftruncate(noop, 4096) != 0 || ftruncate(pass, 4096) != 0)
		die("ftruncate");
	stale_p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, noop, 0);
	if (stale_p == MAP_FAILED)
		die("mmap x.noop");
	stale_p[0] = 'x';
	stale_pass_fd = pass;
	stale_remap = remap;
	pthread_t t;
	if (pthread_create(&t, NULL, stale_unmapper, NULL) != 0)
		die("pthread_create");
	snprintf(path, sizeof(path), "%s.reached", logpath);
	int reached = hold_marker_appears(path, 5000);
	void *at = stale_p;
	if (!remap) { /* a mapping the shim never sees made (a runtime's raw mmap) */
		long (*raw_syscall)(long, ...) = libc_syscall();
		at = raw_syscall ? (void *)raw_syscall(SYS_mmap, stale_p, 4096, PROT_READ | PROT_WRITE,
						       MAP_SHARED | MAP_FIXED_NOREPLACE, pass, 0)
				 : MAP_FAILED;
	}
	const char *e = "none";
	if (at == stale_p) {
		stale_p[0] = 'y';
		e = ename(msync(stale_p, 4096, MS_SYNC));
	}
	make_file(logpath);
	pthread_join(t, NULL);
	printf("mapstale: reached=%d msync=%s at_p=%d\n", reached, e, at == stale_p);
	return 0;
}

/* ---- unlinked ------------------------------------------------------------ */

static atomic_int failed, first_errno;

static void note_failure(int r, int e)
{
	atomic_fetch_add(&calls, 1);
	if (!r)
		return;
	atomic_fetch_add(&failed, 1);
	int none = 0;
	atomic_compare_exchange_strong(&first_errno, &none, e);
}

static void *unlinked_worker(void *arg)
{
	int k = (int)(long)arg;
	char p[4096];
	static char buf[4096];
	snprintf(p, sizeof(p), "%s/u.%d", dir, shared_path ? 0 : k);
	memset(buf, 'u', sizeof(buf));
	for (int i = 0; i < count; i++) {
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open");
		unlink(p);
		for (int s = 0; s < syncs_per_file; s++) {
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				die("write");
			int r = fsync(fd);
			note_failure(r, errno);
		}
		int r = close(fd);
		note_failure(r, errno);
	}
	return NULL;
}

static int do_unlinked(void)
{
	pthread_t t[64];
	if (nthreads > 64)
		nthreads = 64;
	for (long i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, unlinked_worker, (void *)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("unlinked: failed=%d calls=%d first_errno=%s\n", failed, calls,
	       first_errno ? strerrorname_np(first_errno) : "0");
	return 0;
}

/* ---- msyncmoved ---------------------------------------------------------- */

static int do_msyncmoved(void)
{
	char p[4096], q[4096];
	snprintf(p, sizeof(p), "%s/m.dat", dir);
	snprintf(q, sizeof(q), "%s/m.moved", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 4096) != 0)
		die("open");
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap");
	m[0] = 'm';
	if (rename(p, q) != 0)
		die("rename");
	int r1 = msync(m, 4096, MS_SYNC);
	char e1[32];
	snprintf(e1, sizeof(e1), "%s", ename(r1));
	flush_shim();
	m[1] = 'n';
	unlink(q);
	int r2 = msync(m, 4096, MS_SYNC);
	char e2[32];
	snprintf(e2, sizeof(e2), "%s", ename(r2));
	flush_shim();
	int r3 = fsync(fd);
	printf("msyncmoved: msync=%s,%s fsync=%s\n", e1, e2, ename(r3));
	return 0;
}

/* ---- forkpriv ------------------------------------------------------------ */

static int fds_of(dev_t dev, ino_t ino)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		struct stat st;
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd != dirfd(d) && fstat(fd, &st) == 0 && st.st_dev == dev &&
		    st.st_ino == ino)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static int do_forkpriv(void)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	struct stat st;
	fstat(fd, &st);
	if (write(fd, "f", 1) != 1 || fsync(fd) != 0 || close(fd) != 0)
		die("write+fsync+close");
	int parent = fds_of(st.st_dev, st.st_ino);
	pid_t pid = fork();
	if (pid == 0) {
		printf("forkpriv: parent_fds=%d child_fds=%d\n", parent, fds_of(st.st_dev, st.st_ino));
		fflush(stdout);
		_exit(0);
	}
	int ws;
	waitpid(pid, &ws, 0);
	return 0;
}

/* ---- privlost ------------------------------------------------------------ */

static int do_privlost(void)
{
	char sub[2048], p[4096], moved[4096];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(p, sizeof(p), "%s/a.dat", sub);
	snprintf(moved, sizeof(moved), "%s/moved", dir);
	if (mkdir(sub, 0755) != 0)
		die("mkdir");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	struct stat st;
	fstat(fd, &st);
	if (write(fd, "p", 1) != 1 || fsync(fd) != 0 || close(fd) != 0)
		die("write+fsync+close");
	/* Raw, as another process would (a rename or unlink through libc
	 * waits for the ordered domain's acknowledged syncs). */
	if (shared_path ? syscall(SYS_unlink, p) != 0 : syscall(SYS_rename, sub, moved) != 0)
		die("unlink or rename");
	int closed = 0;
	for (int n = 3; n < 1024; n++) {
		struct stat ns;
		if (fstat(n, &ns) == 0 && ns.st_dev == st.st_dev && ns.st_ino == st.st_ino &&
		    syscall(SYS_close, n) == 0)
			closed++;
	}
	void (*flush)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (flush)
		flush();
	printf("privlost: closed=%d\n", closed);
	return 0;
}

/* ---- forkheld -------------------------------------------------------------- */

/* This process's descriptors, but skip and the listing's own: "0,1,2". */
static void list_fds(int skip, char *out, size_t len)
{
	out[0] = '\0';
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	int own = dirfd(d);
	struct dirent *e;
	size_t n = 0;
	int fds[256], k = 0;
	while ((e = readdir(d)) != NULL && k < 256)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && atoi(e->d_name) != own && atoi(e->d_name) != skip)
			fds[k++] = atoi(e->d_name);
	closedir(d);
	for (int i = 0; i < k; i++) /* tiny: insertion sort */
		for (int j = i; j > 0 && fds[j] < fds[j - 1]; j--) {
			int t = fds[j];
			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
	for (int i = 0; i < k && n + 12 < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%d", i ? "," : "", fds[i]);
}

static int held_fd = -1;

/* The first write and sync: the shim's log opens on this thread, which
 * the hold keeps there while main forks. */
static void *forkheld_writer(void *arg)
{
	(void)arg;
	if (write(held_fd, "h", 1) != 1 || fsync(held_fd) != 0)
		die("write+fsync");
	return NULL;
}

static int do_forkheld(void)
{
	int fd = held_fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	pthread_t t;
	if (pthread_create(&t, NULL, forkheld_writer, NULL) != 0)
		die("pthread_create");
	char reached[4200];
	snprintf(reached, sizeof(reached), "%s.reached", logpath);
	struct stat st;
	int waited = 0;
	while (stat(reached, &st) != 0 && waited++ < 5000) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	int ok = stat(reached, &st) == 0;
	pid_t pid = fork();
	if (pid == 0) {
		char fds[1024];
		list_fds(fd, fds, sizeof(fds));
		printf("forkheld: reached=%d child_fds=%s\n", ok, fds);
		fflush(stdout);
		_exit(0);
	}
	int ws;
	waitpid(pid, &ws, 0);
	int h = open(logpath, O_WRONLY | O_CREAT, 0644);
	if (h >= 0)
		close(h);
	pthread_join(t, NULL);
	return 0;
}

/* ---- emfile -------------------------------------------------------------- */

static int do_emfile(void)
{
	struct rlimit rl = { (rlim_t)limit, (rlim_t)limit };
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)limit;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		die("setrlimit");
	for (int i = 0; i < closes; i++) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/e.%d", dir, i);
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "e", 1) != 1 || fsync(fd) != 0 || close(fd) != 0)
			die("open+write+fsync+close");
	}
	int n[5] = { 0 };
	sigset_t ss;
	sigemptyset(&ss);
	sigaddset(&ss, SIGUSR1);
	/* Each kind alone from the same start: every one should reach the limit. */
	for (int kind = 0; kind < 5; kind++) {
		int got[64], k = 0;
		DIR *dirs[64];
		for (;;) {
			int r = -1;
			if (kind == 0) {
				DIR *d = opendir(dir);
				dirs[k] = d;
				r = d ? dirfd(d) : -1;
			} else if (kind == 1) {
				r = epoll_create(1);
			} else if (kind == 2) {
				r = inotify_init1(IN_CLOEXEC);
			} else if (kind == 3) {
				r = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
			} else {
				r = signalfd(-1, &ss, SFD_CLOEXEC);
			}
			if (r < 0 || k == 63)
				break;
			got[k++] = r;
		}
		n[kind] = k;
		for (int i = 0; i < k; i++) {
			if (kind == 0)
				closedir(dirs[i]);
			else
				close(got[i]);
		}
	}
	printf("emfile: opendir=%d epoll=%d inotify=%d timerfd=%d signalfd=%d\n", n[0], n[1], n[2], n[3], n[4]);
	return 0;
}

/* ---- closelease ---------------------------------------------------------- */

static int do_closelease(void)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	char buf[4096];
	memset(buf, 'c', sizeof(buf));
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0)
		die("write+fsync");
	/* Close while the forced background sync (max_calls = 1) runs on fd:
	 * the close must wait for it. Give the flusher the time to start. */
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	if (close(fd) != 0)
		die("close");
	printf("closelease: fd=%d\n", fd);
	return 0;
}

/* ---- rwfdsync ------------------------------------------------------------ */

static int do_rwfdsync(void)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	char buf[4096];
	memset(buf, 'r', sizeof(buf));
	struct iovec iov = { buf, sizeof(buf) };
	ssize_t r = pwritev2(fd, &iov, 1, 0, RWF_DSYNC);
	printf("rwfdsync: ret=%zd\n", r);
	fflush(stdout);
	return 0;
}

/* ---- wberr ----------------------------------------------------------------- */

/* Two opens of DIR/w.dat; a write through the first (failfs fails its
 * write-back); then fsync, fsync, close on each. Without the shim each
 * open file description is told the write-back error once. */
static int do_wberr(void)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/w.dat", dir);
	int fd[2] = { open(p, O_RDWR | O_CREAT | O_TRUNC, 0644), open(p, O_RDWR) };
	if (fd[0] < 0 || fd[1] < 0)
		die("open");
	if (write(fd[0], "cached\n", 7) != 7)
		die("write");
	char res[2][3][32];
	for (int i = 0; i < 6; i++) {
		/* -S: the opens take turns (a b a b a b), else a's three calls first */
		int k = shared_path ? i % 2 : i / 3, c = shared_path ? i / 2 : i % 3;
		if (i == 1 || i == 3 || i == 4)
			flush_shim(); /* let the deferred syncs happen in between */
		snprintf(res[k][c], sizeof(res[k][c]), "%s", ename(c < 2 ? fsync(fd[k]) : close(fd[k])));
	}
	int eio = 0;
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < 3; c++)
			eio += strcmp(res[k][c], "0") != 0;
	printf("wberr: a=%s,%s,%s b=%s,%s,%s errors=%d\n", res[0][0], res[0][1], res[0][2], res[1][0], res[1][1],
	       res[1][2], eio);
	return 0;
}

/* ---- dupreport ------------------------------------------------------------- */

/* The write-back of a's write fails in the shim's deferred sync through
 * a: the shim tells a (its close) and b (its first fsync). The kernel
 * still owes b's open file description that report, so b's next real
 * sync, after a second write, meets it again: under -S (sync =
 * passthrough, osync = defer) the app's own fsync makes it, else the
 * flusher through b. */
static int do_dupreport(void)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/d.dat", dir);
	int a = open(p, O_RDWR | O_CREAT | O_TRUNC | (shared_path ? O_SYNC : 0), 0644);
	int b = open(p, O_RDWR);
	if (a < 0 || b < 0)
		die("open");
	if (write(a, "first\n", 6) != 6)
		die("write a");
	if (!shared_path && fsync(a) != 0)
		die("fsync a (deferred)");
	flush_shim();
	const char *ca = ename(close(a));
	char fb[2][32];
	snprintf(fb[0], sizeof(fb[0]), "%s", ename(fsync(b)));
	if (pwrite(b, "second\n", 7, 6) != 7)
		die("pwrite b");
	snprintf(fb[1], sizeof(fb[1]), "%s", ename(fsync(b)));
	flush_shim();
	printf("dupreport: close_a=%s fsync_b=%s,%s close_b=%s\n", ca, fb[0], fb[1], ename(close(b)));
	return 0;
}

/* ---- lognum, nofile -------------------------------------------------------- */

/* The shim's log is opened by its thread after the first write or sync:
 * wait (up to 5 s) until it exists, when the shim is loaded. */
static void wait_for_log(void)
{
	if (!dlsym(RTLD_DEFAULT, "syncshim_version"))
		return;
	struct stat st;
	for (int i = 0; i < 5000 && stat(logpath, &st) != 0; i++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* RLIMIT_NOFILE LIMIT; FILE written and fsynced (the log opens); then
 * opens of FILE until one fails. "nofile: opens=N errno=E" */
static int do_nofile(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)limit;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		die("setrlimit");
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "n", 1) != 1 || fsync(fd) != 0)
		die("open+write+fsync");
	wait_for_log();
	int n = 0, e = 0;
	for (;;) {
		int r = open(file, O_RDONLY);
		if (r < 0) {
			e = errno;
			break;
		}
		n++;
	}
	printf("nofile: opens=%d errno=%s\n", n, strerrorname_np(e));
	return 0;
}

static int do_lognum(void)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	if (write(fd, "l", 1) != 1 || fsync(fd) != 0)
		die("write+fsync");
	wait_for_log();
	char probe[4096];
	snprintf(probe, sizeof(probe), "%s.probe", file);
	int p = open(probe, O_WRONLY | O_CREAT, 0644);
	struct stat ls;
	int logfd = -1;
	if (stat(logpath, &ls) == 0) {
		for (int k = 0; k < 1024; k++) {
			struct stat st;
			if (fstat(k, &st) == 0 && st.st_ino == ls.st_ino && st.st_dev == ls.st_dev)
				logfd = k;
		}
	}
	int c = logfd >= 0 ? close(logfd) : 0;
	printf("lognum: fd=%d probe=%d logfd=%d close=%s\n", fd, p, logfd, logfd >= 0 ? ename(c) : "-");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *cmd = argv[1];
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file }, { 'd', OPT_STR, .p = &dir },	  { 'l', OPT_STR, .p = &logpath },
		{ 't', OPT_INT, .p = &nthreads }, { 'n', OPT_INT, .p = &count }, { 'x', OPT_FLAG, .p = &skip_dup2 },
		{ 'L', OPT_INT, .p = &limit }, { 'S', OPT_FLAG, .p = &shared_path },	  { 'c', OPT_INT, .p = &closes },
		{ 'k', OPT_INT, .p = &syncs_per_file },
	};
	optind = 2;
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "group") && file)
		return do_group();
	if (!strcmp(cmd, "dup2fail") && file)
		return do_dup2fail();
	if (!strcmp(cmd, "reuse") && dir)
		return do_reuse();
	if (!strcmp(cmd, "dup2race") && dir)
		return do_dup2race();
	if (!strcmp(cmd, "dup2stale") && dir && logpath)
		return do_dup2stale();
	if (!strcmp(cmd, "dup2resolve") && dir && logpath)
		return do_dup2resolve();
	if ((!strcmp(cmd, "unmapstale") || !strcmp(cmd, "remapstale")) && dir && logpath)
		return do_mapstale(!strcmp(cmd, "remapstale"));
	if (!strcmp(cmd, "unlinked") && dir)
		return do_unlinked();
	if (!strcmp(cmd, "msyncmoved") && dir)
		return do_msyncmoved();
	if (!strcmp(cmd, "forkpriv") && file)
		return do_forkpriv();
	if (!strcmp(cmd, "privlost") && dir)
		return do_privlost();
	if (!strcmp(cmd, "emfile") && dir)
		return do_emfile();
	if (!strcmp(cmd, "closelease") && file)
		return do_closelease();
	if (!strcmp(cmd, "rwfdsync") && file)
		return do_rwfdsync();
	if (!strcmp(cmd, "wberr") && dir)
		return do_wberr();
	if (!strcmp(cmd, "dupreport") && dir)
		return do_dupreport();
	if (!strcmp(cmd, "nofile") && file)
		return do_nofile();
	if (!strcmp(cmd, "lognum") && file && logpath)
		return do_lognum();
	if (!strcmp(cmd, "forkheld") && file && logpath)
		return do_forkheld();
	return 2;
}
