/*
 * shim_fds - the host's side of tests/system/test_shim_fds.c: the shim's own
 * descriptors (its log, a private dup, a short-lived one) against forks
 * and the descriptor limit;
 * one subcommand each. Every one prints what it saw on one line and
 * leaves the judging to the suite (which also reads the recording layer
 * beneath the shim).
 *
 *   shim_fds forkpriv -f FILE
 *       FILE written, fsynced (deferred), closed; fork: the child counts
 *       its descriptors of FILE's inode. "forkpriv: child_fds=N"
 *   shim_fds forkheld -f FILE -l HOLD
 *       a thread writes + fsyncs FILE (the shim's log opens there, and
 *       holds at the test point SYNCSHIM_TEST_HOLD_AT names, making
 *       HOLD.reached); main waits up to 5 s for HOLD.reached, forks, then
 *       makes HOLD (the shim goes on).
 *       The child lists its descriptors but the listing's own and FILE's.
 *       "forkheld: reached=R child_fds=LIST"
 *   shim_fds emfile -d DIR -L LIMIT -c CLOSES
 *       RLIMIT_NOFILE LIMIT; CLOSES files written, fsynced and closed (each
 *       owes a deferred sync); then as many opendir, epoll_create,
 *       inotify_init1, timerfd_create, signalfd as succeed.
 *       "emfile: opendir=A epoll=B inotify=C timerfd=D signalfd=E"
 *   shim_fds lognum -f FILE -l LOG
 *       writes + fsyncs FILE (the log opens), then opens FILE.probe and
 *       prints its number, and closes the log's number
 *       (found by its inode). "lognum: fd=F probe=N logfd=L close=E"
 *   shim_fds nofile -f FILE -L LIMIT [-l LOG]
 *       RLIMIT_NOFILE LIMIT, FILE written and fsynced, then opened until
 *       an open fails. "nofile: opens=N errno=E"
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
static int limit = 16, closes = 4;

static void die(const char *what)
{
	fprintf(stderr, "shim_fds: %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *ename(int r)
{
	return r == 0 ? "0" : strerrorname_np(errno);
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
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'd', OPT_STR, .p = &dir },
		{ 'l', OPT_STR, .p = &logpath },
		{ 'L', OPT_INT, .p = &limit },
		{ 'c', OPT_INT, .p = &closes }
	};
	const struct subcmd cmds[] = {
		{ "forkpriv", do_forkpriv, { &file } },
		{ "forkheld", do_forkheld, { &file, &logpath } },
		{ "emfile", do_emfile, { &dir } },
		{ "lognum", do_lognum, { &file, &logpath } },
		{ "nofile", do_nofile, { &file } },
	};
	return run_subcommand(argc, argv, opts, NOPTS(opts), cmds, NOPTS(cmds));
}
