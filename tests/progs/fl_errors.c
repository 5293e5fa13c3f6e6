/*
 * fl_errors - how a failed background sync is reported, errseq style, on
 * each descriptor of the file (tests/system/test_flusher.c). Run it with the
 * recording layer injecting the failure (RECLAYER_FAIL=fdatasync:EIO:0:1).
 *
 *   fl_errors -f FILE [-m fsync|fdatasync] [-F | -w WAIT_MS]
 *
 * The sequence, each call's result printed as "sN CALL ret=R errno=NAME"
 * (NAME "0" on success); nothing is judged here, the test compares:
 *   fd1 = open(FILE, O_RDWR|O_CREAT|O_TRUNC); fd2 = open(FILE, O_RDWR)
 *   write(fd1, 4096)
 *   s1 sync(fd1)                 the sync call of -m
 *   settle: -F syncshim_flush() (the deferred real sync runs and fails),
 *           or -w sleep WAIT_MS doing nothing (the flusher's deadline)
 *   s2 sync(fd1)  s3 sync(fd1)
 *   fd3 = open(FILE, O_RDWR)     opened after fd1 reported the error
 *   s4 sync(fd3)
 *   s5 close(fd2)
 *   write(fd1, 4096); s6 sync(fd1); settle; s7 sync(fd1)
 *   s8 close(fd3)  s9 close(fd1)
 * Data: 8192 bytes of the 16-byte record pattern (tests/harness/harness.c).
 * Last line "fl_errors: done pid=P".
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "progs.h"

static const char *method = "fsync";
static int use_flush;
static long wait_ms;

static void report(const char *step, const char *call, int r, int e)
{
	const char *name = r == 0 ? "0" : strerrorname_np(e);
	printf("%s %s ret=%d errno=%s\n", step, call, r, name ? name : "?");
	fflush(stdout);
}

static void do_sync(const char *step, const char *fdname, int fd)
{
	errno = 0;
	int r = strcmp(method, "fdatasync") ? fsync(fd) : fdatasync(fd);
	int e = errno;
	char call[64];
	snprintf(call, sizeof(call), "%s(%s)", method, fdname);
	report(step, call, r, e);
}

static void do_close(const char *step, const char *fdname, int fd)
{
	errno = 0;
	int r = close(fd);
	int e = errno;
	char call[64];
	snprintf(call, sizeof(call), "close(%s)", fdname);
	report(step, call, r, e);
}

static void settle(void)
{
	if (use_flush) {
		void (*fl)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
		if (fl)
			fl();
	} else {
		struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
	}
}

static void must_write(int fd, unsigned long long off)
{
	char buf[4096];
	pattern(buf, sizeof(buf), off);
	if (pwrite(fd, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf)) {
		fprintf(stderr, "fl_errors: pwrite: %s\n", strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'm', OPT_STR, .p = &method },
		{ 'F', OPT_FLAG, .p = &use_flush },
		{ 'w', OPT_LONG, .p = &wait_ms },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		goto usage;
	if (!file || (strcmp(method, "fsync") && strcmp(method, "fdatasync")))
		goto usage;
	int fd1 = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	int fd2 = open(file, O_RDWR);
	if (fd1 < 0 || fd2 < 0) {
		fprintf(stderr, "fl_errors: open %s: %s\n", file, strerror(errno));
		return 1;
	}
	must_write(fd1, 0);
	do_sync("s1", "fd1", fd1);
	settle();
	do_sync("s2", "fd1", fd1);
	do_sync("s3", "fd1", fd1);
	int fd3 = open(file, O_RDWR);
	if (fd3 < 0) {
		fprintf(stderr, "fl_errors: open %s: %s\n", file, strerror(errno));
		return 1;
	}
	do_sync("s4", "fd3", fd3);
	do_close("s5", "fd2", fd2);
	must_write(fd1, 4096);
	do_sync("s6", "fd1", fd1);
	settle();
	do_sync("s7", "fd1", fd1);
	do_close("s8", "fd3", fd3);
	do_close("s9", "fd1", fd1);
	printf("fl_errors: done pid=%ld\n", (long)getpid());
	return 0;
usage:
	fprintf(stderr, "usage: fl_errors -f FILE [-m fsync|fdatasync] [-F | -w WAIT_MS]\n");
	return 2;
}
