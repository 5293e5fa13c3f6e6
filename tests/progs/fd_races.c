/*
 * fd_races - the host's side of tests/system/test_fd_races.c: threads that
 * dup2, close or replace mappings while another syncs the same number or
 * address;
 * one subcommand each. Every one prints what it saw on one line and
 * leaves the judging to the suite (which also reads the recording layer
 * beneath the shim).
 *
 *   fd_races dup2fail -f FILE [-x]
 *       FILE opened O_SYNC, a dup2 from a closed number onto it (fails
 *       EBADF; -x: not made), then 20 writes. "dup2fail: ino=I dup2=R errno=E"
 *   fd_races dup2race -d DIR [-n ROUNDS]
 *       two threads dup2 DIR/x.noop and DIR/y.pass onto one number at
 *       once; then the number is written and fsynced.
 *       "dup2race: pass_rounds=P noop_rounds=Q pass_ino=I"
 *   fd_races dup2stale -d DIR -l HOLD
 *       with the hold chain SYNCSHIM_TEST_HOLD_AT=dup_onto_kernel,dup_onto_copied:
 *       a thread dup2s DIR/x.noop onto number 40 and is held after the
 *       kernel call (HOLD.reached); main dup2s DIR/y.pass onto 40 (the
 *       kernel keeps y.pass) and makes HOLD; the thread's slot copy names
 *       x.noop and it is held before its check (HOLD.1.reached); main
 *       writes and fsyncs 40, then makes HOLD.1.
 *       "dup2stale: reached=R,R fsync=E kernel_ino=K pass_ino=I"
 *   fd_races dup2resolve -d DIR -l HOLD
 *       DIR/x.noop put on number 41 behind the shim's back (libc's own
 *       syscall(SYS_dup3));
 *       a thread fdatasyncs 41 and is held (SYNCSHIM_TEST_HOLD_AT=
 *       fd_get_resolve) after the shim looked at it, before it binds it
 *       (HOLD.reached); main dup2s DIR/y.pass onto 41, makes HOLD, joins
 *       the thread, then writes and fsyncs 41.
 *       "dup2resolve: reached=R fdatasync=E fsync=E kernel_ino=K pass_ino=I"
 *   fd_races unmapstale -d DIR -l HOLD   (SYNCSHIM_TEST_HOLD_AT=munmap_done)
 *   fd_races remapstale -d DIR -l HOLD   (SYNCSHIM_TEST_HOLD_AT=mmap_fixed_done)
 *       DIR/x.noop and DIR/y.pass, a page each; x.noop mapped shared at P.
 *       A thread takes x.noop's mapping away and is held once its kernel
 *       call is made (HOLD.reached): unmapstale munmaps P, and main then
 *       maps y.pass at P behind the shim's back (libc's own syscall());
 *       remapstale maps y.pass over P with MAP_FIXED. Main writes P and
 *       msync(MS_SYNC)s it, makes HOLD and joins the thread.
 *       "mapstale: reached=R msync=E at_p=A"
 *   fd_races closelease -f FILE
 *       FILE written and fsynced (deferred); the close waits out the
 *       background sync borrowing the number. "closelease: fd=N"
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
static int count = 200, skip_dup2;

static void die(const char *what)
{
	fprintf(stderr, "fd_races: %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *ename(int r)
{
	return r == 0 ? "0" : strerrorname_np(errno);
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

static int do_unmapstale(void)
{
	return do_mapstale(0);
}

static int do_remapstale(void)
{
	return do_mapstale(1);
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

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'd', OPT_STR, .p = &dir },
		{ 'l', OPT_STR, .p = &logpath },
		{ 'n', OPT_INT, .p = &count },
		{ 'x', OPT_FLAG, .p = &skip_dup2 }
	};
	const struct subcmd cmds[] = {
		{ "dup2fail", do_dup2fail, { &file } },
		{ "dup2race", do_dup2race, { &dir } },
		{ "dup2stale", do_dup2stale, { &dir, &logpath } },
		{ "dup2resolve", do_dup2resolve, { &dir, &logpath } },
		{ "unmapstale", do_unmapstale, { &dir, &logpath } },
		{ "remapstale", do_remapstale, { &dir, &logpath } },
		{ "closelease", do_closelease, { &file } },
	};
	return run_subcommand(argc, argv, opts, NOPTS(opts), cmds, NOPTS(cmds));
}
