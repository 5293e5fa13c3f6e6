/*
 * sync_errors - the host's side of tests/system/test_sync_errors.c:
 * syncs that fail, and the errors each caller and each open file
 * description is told; one subcommand each. Every one prints what it saw on one line and
 * leaves the judging to the suite (which also reads the recording layer
 * beneath the shim).
 *
 *   sync_errors group -f FILE [-t THREADS] [-n COUNT]
 *       THREADS threads, each COUNT x (pwrite + fsync) on its own
 *       descriptor of FILE. "group: zero=Z calls=N"
 *   sync_errors wberr -d DIR [-S]
 *       two opens a and b of DIR/w.dat, a write through a, then fsync,
 *       fsync, close on each (-S: the opens take turns).
 *       "wberr: a=E,E,E b=E,E,E errors=N"
 *   sync_errors dupreport -d DIR [-S]
 *       two opens a and b of DIR/d.dat (-S: a O_SYNC); a written (without
 *       -S: and fsynced), the shim's deferred sync made; a closed; b
 *       fsynced, written and fsynced, the deferred syncs made, b closed.
 *       "dupreport: close_a=E fsync_b=E,E close_b=E"
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

static const char *file, *dir;
static int nthreads = 16, count = 200, shared_path;

static void die(const char *what)
{
	fprintf(stderr, "sync_errors: %s: %s\n", what, strerror(errno));
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

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'd', OPT_STR, .p = &dir },
		{ 't', OPT_INT, .p = &nthreads },
		{ 'n', OPT_INT, .p = &count },
		{ 'S', OPT_FLAG, .p = &shared_path }
	};
	const struct subcmd cmds[] = {
		{ "group", do_group, { &file } },
		{ "wberr", do_wberr, { &dir } },
		{ "dupreport", do_dupreport, { &dir } },
	};
	return run_subcommand(argc, argv, opts, NOPTS(opts), cmds, NOPTS(cmds));
}
