/*
 * fl_barrier - ordering points for deferred syncs (tests/system/test_flusher.c):
 * write + fsync, then the barrier, with CLOCK_MONOTONIC times (ns) on
 * stdout so the test can order them against the recording layer's log.
 * Data is the 16-byte record pattern of tests/harness/harness.c, SIZE bytes per
 * file (default 65536). Every call must succeed (else stderr, exit 1).
 *
 *   fl_barrier rename -d DIR [-s SIZE]
 *       for V in rename renameat renameat2: DIR/V.tmp written + fsync'd,
 *       then renamed to DIR/V.dat with that call. Prints per V:
 *       "V: write_t1=NS fsync_t1=NS rename_t0=NS rename_t1=NS".
 *   fl_barrier close -f FILE [-w WAIT_MS] [-s SIZE]
 *       write + fsync + close, then WAIT_MS doing nothing. Prints
 *       "close: fd=N write_t1=NS close_t0=NS close_t1=NS end_t=NS".
 *   fl_barrier exec -f FILE -x CALL [-s SIZE]
 *       write + fsync, then this program is exec'd again as "stamp" with
 *       CALL (execve execv execl execle execvp execlp execvpe fexecve).
 *       Prints "exec: pid=P write_t1=NS exec_t0=NS" before the call.
 *   fl_barrier stamp
 *       prints "stamp: pid=P t=NS" (CLOCK_MONOTONIC at the start of main).
 *   fl_barrier fork -f PFILE -g CFILE [-w CHILD_WAIT_MS] [-s SIZE] [-E]
 *       parent: write + fsync PFILE, fork; the child writes + fsyncs
 *       CFILE, waits CHILD_WAIT_MS doing nothing and returns from main
 *       (-E: exit() from a helper, same thing) ; meanwhile the parent writes
 *       a second SIZE to PFILE + fsync, then waits for the child. Prints
 *       "child: pid=P write_t1=NS end_t=NS" and
 *       "parent: pid=P child=P status=S write_t1=NS".
 *   fl_barrier replace -f FILE [-s SIZE]
 *       the classic atomic replace: FILE gets 4096 bytes, then FILE.tmp is
 *       written (SIZE), fsync'd and closed, and renamed over FILE. The
 *       results are printed, not judged (for error injection):
 *       "replace: fsync=R/ERR close=R/ERR rename=R/ERR" (ERR "0" or a name).
 *   fl_barrier syncall -f FILE -x sync|syncfs [-s SIZE]
 *       write + fsync, then sync() or syncfs(fd). Prints
 *       "syncall: write_t1=NS call_t0=NS call_t1=NS".
 *   fl_barrier exit -f FILE -x return|exit|_exit|_Exit [-s SIZE]
 *       write + fsync, print "exit: pid=P write_t1=NS", leave that way.
 *   fl_barrier ... prints "fl_barrier: ok" last on success.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "progs.h"

extern char **environ;

static long size = 65536;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static void die(const char *what)
{
	fprintf(stderr, "fl_barrier: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Append SIZE bytes of pattern at offset off and fsync; returns the time
 * the write returned. */
static uint64_t write_sync(int fd, unsigned long long off)
{
	char *buf = malloc((size_t)size);
	if (!buf)
		die("malloc");
	pattern(buf, (size_t)size, off);
	if (pwrite(fd, buf, (size_t)size, (off_t)off) != size)
		die("pwrite");
	uint64_t t = now_ns();
	if (fsync(fd) != 0)
		die("fsync");
	free(buf);
	return t;
}

static int open_new(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path);
	return fd;
}

static int do_rename(const char *dir)
{
	static const char *const calls[] = { "rename", "renameat", "renameat2" };
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		die(dir);
	int fds[3];
	for (int v = 0; v < 3; v++) {
		char src[PATH_MAX], dst[PATH_MAX];
		snprintf(src, sizeof(src), "%s/%s.tmp", dir, calls[v]);
		snprintf(dst, sizeof(dst), "%s/%s.dat", dir, calls[v]);
		fds[v] = open_new(src);
		uint64_t w1 = write_sync(fds[v], 0);
		uint64_t f1 = now_ns();
		uint64_t r0 = now_ns();
		int r;
		if (v == 0)
			r = rename(src, dst);
		else if (v == 1)
			r = renameat(dfd, strrchr(src, '/') + 1, dfd, strrchr(dst, '/') + 1);
		else
			r = renameat2(AT_FDCWD, src, dfd, strrchr(dst, '/') + 1, 0);
		uint64_t r1 = now_ns();
		if (r != 0)
			die(calls[v]);
		printf("%s: write_t1=%llu fsync_t1=%llu rename_t0=%llu rename_t1=%llu\n", calls[v],
		       (unsigned long long)w1, (unsigned long long)f1, (unsigned long long)r0,
		       (unsigned long long)r1);
	}
	for (int v = 0; v < 3; v++)
		if (close(fds[v]) != 0)
			die("close");
	close(dfd);
	return 0;
}

static int do_close(const char *file, long wait_ms)
{
	int fd = open_new(file);
	uint64_t w1 = write_sync(fd, 0);
	uint64_t c0 = now_ns();
	int r = close(fd);
	uint64_t c1 = now_ns();
	if (r != 0)
		die("close");
	sleep_ms(wait_ms);
	printf("close: fd=%d write_t1=%llu close_t0=%llu close_t1=%llu end_t=%llu\n", fd,
	       (unsigned long long)w1, (unsigned long long)c0, (unsigned long long)c1,
	       (unsigned long long)now_ns());
	return 0;
}

static int do_exec(const char *file, const char *call)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		die("readlink /proc/self/exe");
	self[n] = '\0';
	int fd = open_new(file);
	uint64_t w1 = write_sync(fd, 0);
	int xfd = -1;
	if (!strcmp(call, "fexecve") && (xfd = open(self, O_RDONLY | O_CLOEXEC)) < 0)
		die(self);
	char *argv[] = { self, "stamp", NULL };
	printf("exec: pid=%ld write_t1=%llu exec_t0=%llu\n", (long)getpid(), (unsigned long long)w1,
	       (unsigned long long)now_ns());
	fflush(stdout);
	/* fd stays open: exec is the barrier, not close */
	if (!strcmp(call, "execve"))
		execve(self, argv, environ);
	else if (!strcmp(call, "execv"))
		execv(self, argv);
	else if (!strcmp(call, "execl"))
		execl(self, self, "stamp", (char *)NULL);
	else if (!strcmp(call, "execle"))
		execle(self, self, "stamp", (char *)NULL, environ);
	else if (!strcmp(call, "execvp"))
		execvp(self, argv);
	else if (!strcmp(call, "execlp"))
		execlp(self, self, "stamp", (char *)NULL);
	else if (!strcmp(call, "execvpe"))
		execvpe(self, argv, environ);
	else if (!strcmp(call, "fexecve"))
		fexecve(xfd, argv, environ);
	else {
		fprintf(stderr, "fl_barrier: unknown exec call %s\n", call);
		return 2;
	}
	die(call);
	return 1;
}

static const char *ename(int r, int e)
{
	const char *n = strerrorname_np(e);
	return r == 0 ? "0" : n ? n : "?";
}

static int do_replace(const char *file)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	long keep = size;
	size = 4096;
	int fd = open_new(file);
	write_sync(fd, 0);
	if (close(fd) != 0)
		die("close");
	size = keep;
	fd = open_new(tmp);
	char *buf = malloc((size_t)size);
	if (!buf)
		die("malloc");
	pattern(buf, (size_t)size, 0);
	if (write(fd, buf, (size_t)size) != size)
		die("write");
	errno = 0;
	int fr = fsync(fd), fe = errno;
	errno = 0;
	int cr = close(fd), ce = errno;
	errno = 0;
	int rr = rename(tmp, file), re = errno;
	printf("replace: fsync=%d/%s close=%d/%s rename=%d/%s\n", fr, ename(fr, fe), cr, ename(cr, ce), rr,
	       ename(rr, re));
	free(buf);
	return 0;
}

static int do_syncall(const char *file, const char *call)
{
	int fd = open_new(file);
	uint64_t w1 = write_sync(fd, 0);
	uint64_t t0 = now_ns();
	if (!strcmp(call, "sync"))
		sync();
	else if (!strcmp(call, "syncfs")) {
		if (syncfs(fd) != 0)
			die("syncfs");
	} else {
		fprintf(stderr, "fl_barrier: unknown call %s\n", call);
		return 2;
	}
	uint64_t t1 = now_ns();
	printf("syncall: write_t1=%llu call_t0=%llu call_t1=%llu\n", (unsigned long long)w1, (unsigned long long)t0,
	       (unsigned long long)t1);
	if (close(fd) != 0)
		die("close");
	return 0;
}

static int do_exit(const char *file, const char *how)
{
	int fd = open_new(file);
	uint64_t w1 = write_sync(fd, 0);
	printf("exit: pid=%ld write_t1=%llu\nfl_barrier: ok\n", (long)getpid(), (unsigned long long)w1);
	fflush(stdout);
	if (!strcmp(how, "exit"))
		exit(0);
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "_Exit"))
		_Exit(0);
	return strcmp(how, "return") ? 2 : 3; /* 3: main returns 0 without a second ok line */
}

static void child_exit(void)
{
	exit(0);
}

static int do_fork(const char *pfile, const char *cfile, long wait_ms, int use_exit)
{
	int pfd = open_new(pfile);
	write_sync(pfd, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int cfd = open_new(cfile);
		uint64_t w1 = write_sync(cfd, 0);
		sleep_ms(wait_ms);
		printf("child: pid=%ld write_t1=%llu end_t=%llu\n", (long)getpid(), (unsigned long long)w1,
		       (unsigned long long)now_ns());
		fflush(stdout);
		if (use_exit)
			child_exit();
		return 0; /* normal exit: atexit handlers and destructors run */
	}
	uint64_t w1 = write_sync(pfd, (unsigned long long)size);
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	printf("parent: pid=%ld child=%ld status=%d write_t1=%llu\n", (long)getpid(), (long)pid, st,
	       (unsigned long long)w1);
	if (close(pfd) != 0)
		die("close");
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		goto usage;
	const char *mode = argv[1];
	if (!strcmp(mode, "stamp")) {
		uint64_t t = now_ns();
		printf("stamp: pid=%ld t=%llu\n", (long)getpid(), (unsigned long long)t);
		printf("fl_barrier: ok\n");
		return 0;
	}
	const char *dir = NULL, *file = NULL, *file2 = NULL, *call = NULL;
	long wait_ms = 0;
	int use_exit = 0;
	optind = 2;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'f', OPT_STR, .p = &file },
		{ 'g', OPT_STR, .p = &file2 },
		{ 'x', OPT_STR, .p = &call },
		{ 'w', OPT_LONG, .p = &wait_ms },
		{ 's', OPT_LONG, .p = &size },
		{ 'E', OPT_FLAG, .p = &use_exit },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		goto usage;
	if (size < 16 || size % 16)
		goto usage;
	int r;
	if (!strcmp(mode, "rename") && dir)
		r = do_rename(dir);
	else if (!strcmp(mode, "close") && file)
		r = do_close(file, wait_ms);
	else if (!strcmp(mode, "exec") && file && call)
		r = do_exec(file, call);
	else if (!strcmp(mode, "fork") && file && file2)
		r = do_fork(file, file2, wait_ms, use_exit);
	else if (!strcmp(mode, "replace") && file)
		r = do_replace(file);
	else if (!strcmp(mode, "syncall") && file && call)
		r = do_syncall(file, call);
	else if (!strcmp(mode, "exit") && file && call)
		r = do_exit(file, call);
	else
		goto usage;
	if (r == 3)
		return 0;
	if (r == 0)
		printf("fl_barrier: ok\n");
	return r;
usage:
	fprintf(stderr, "usage: fl_barrier rename -d DIR | close -f FILE [-w MS] | exec -f FILE -x CALL |\n"
			"       stamp | fork -f PFILE -g CFILE [-w MS] [-E] | replace -f FILE |\n"
			"       syncall -f FILE -x sync|syncfs | exit -f FILE -x return|exit|_exit|_Exit   [-s SIZE]\n");
	return 2;
}
