/*
 * unlinked_files - the host's side of tests/system/test_unlinked_files.c: files
 * unlinked, renamed or reborn on a reused inode number while the shim
 * owes them syncs;
 * one subcommand each. Every one prints what it saw on one line and
 * leaves the judging to the suite (which also reads the recording layer
 * beneath the shim).
 *
 *   unlinked_files reuse -d DIR
 *       DIR/a.def written, fsynced, closed, its deferred sync flushed
 *       (syncshim_flush), unlinked; then DIR/b.N.pass created until one
 *       reuses a.def's inode number, written and fsynced 3 times.
 *       "reuse: a=I b=I name=N fsync=E,E,E"
 *   unlinked_files unlinked -d DIR [-t THREADS] [-n COUNT] [-S] [-k SYNCS]
 *       each thread COUNT x: open DIR/u.K (-S: all DIR/u.0), unlink it,
 *       SYNCS x (write 4 KiB + fsync) (default 1), close: a temporary
 *       file as sqlite and MariaDB make them.
 *       "unlinked: failed=F calls=N first_errno=E"
 *   unlinked_files msyncmoved -d DIR
 *       DIR/m.dat mapped shared, written through the mapping, renamed,
 *       msync(MS_SYNC), unlinked, msync again, fsync.
 *       "msyncmoved: msync=E,E fsync=E"
 *   unlinked_files privlost -d DIR [-S]
 *       DIR/sub/a.dat written, fsynced (deferred), closed (the shim keeps a
 *       descriptor of its own); then, behind the shim's back (syscall()),
 *       DIR/sub renamed to DIR/moved (-S: a.dat unlinked instead) and the
 *       shim's descriptor closed, so no descriptor and no name leads to
 *       the file; then syncshim_flush(). "privlost: closed=N"
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

static const char *dir;
static int nthreads = 16, count = 200, shared_path, syncs_per_file = 1;

static void die(const char *what)
{
	fprintf(stderr, "unlinked_files: %s: %s\n", what, strerror(errno));
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

/* ---- unlinked ------------------------------------------------------------ */

static atomic_int calls; /* the calls note_failure judged, all threads */

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

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 't', OPT_INT, .p = &nthreads },
		{ 'n', OPT_INT, .p = &count },
		{ 'S', OPT_FLAG, .p = &shared_path },
		{ 'k', OPT_INT, .p = &syncs_per_file }
	};
	const struct subcmd cmds[] = {
		{ "reuse", do_reuse, { &dir } },
		{ "unlinked", do_unlinked, { &dir } },
		{ "msyncmoved", do_msyncmoved, { &dir } },
		{ "privlost", do_privlost, { &dir } },
	};
	return run_subcommand(argc, argv, opts, NOPTS(opts), cmds, NOPTS(cmds));
}
