/*
 * closeall - close every descriptor above stderr the way careless daemons
 * do, then open files and write: the shim's own descriptors (its log, a
 * flusher's private one) must never end up receiving the app's data or
 * writing their blocks into the app's files.
 *
 *   closeall -d DIR -m loop|range|from|raw|dup2 [-n FILES] [-l LOG]
 *
 * 1. DIR/a.dat: 32 records of 512 bytes, each write + fsync; then a.dat is
 *    closed with its syncs possibly still owed (defer), so a private
 *    descriptor may exist.
 * 2. Every descriptor 3..1023 is closed: by a close() loop, close_range,
 *    closefrom, raw syscall(SYS_close) (out of the shim's sight), or
 *    dup2 of /dev/null over each number and then a close() loop, where
 *    every dup2 and every close must succeed: each number is the app's.
 * 3. FILES files (default 120, so their numbers pass the shim's own) are
 *    opened, DIR/b.K.dat, and written in rounds: one 512-byte record to
 *    each + fsync. With -l, rounds go on until LOG has grown twice since
 *    step 2 (the logger wrote after the close-all), for at most 10 s.
 * Prints "closeall: ok rounds=R" (every file b.K holds R records of the
 * 16-byte pattern of tests/harness/harness.c) or errors; exit 1 on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progs.h"

#define REC 512
#define TOP 1024

static const char *dir = ".";

static int fail(const char *what)
{
	fprintf(stderr, "closeall: %s: %s\n", what, strerror(errno));
	return 1;
}

static int write_rec(int fd, long long off)
{
	char buf[REC];
	pattern(buf, REC, (unsigned long long)off);
	return pwrite(fd, buf, REC, off) == REC && fsync(fd) == 0 ? 0 : -1;
}

/* dup2 mode's calls on the app's own numbers that failed: every dup2
 * onto 3..TOP-1 must succeed, and so must every close after it (each
 * number is the app's then; a shim that let the dup2 replace its own
 * descriptor without moving it away first still calls the number its own
 * and answers EBADF). */
static int app_number_failures;

static void close_all(const char *mode)
{
	if (!strcmp(mode, "range")) {
		close_range(3, ~0u, 0);
	} else if (!strcmp(mode, "from")) {
		closefrom(3);
	} else if (!strcmp(mode, "raw")) {
		for (int fd = 3; fd < TOP; fd++)
			syscall(SYS_close, fd);
	} else {
		bool dup2_mode = !strcmp(mode, "dup2");
		if (dup2_mode) {
			int nul = open("/dev/null", O_WRONLY);
			for (int fd = 3; fd < TOP && nul >= 0; fd++)
				if (fd != nul && dup2(nul, fd) != fd) {
					fprintf(stderr, "closeall: dup2 onto %d: %s\n", fd, strerror(errno));
					app_number_failures++;
				}
		}
		for (int fd = 3; fd < TOP; fd++)
			if (close(fd) != 0 && dup2_mode) {
				fprintf(stderr, "closeall: close(%d) after dup2 onto it: %s\n", fd, strerror(errno));
				app_number_failures++;
			}
	}
}

static long long size_of(const char *path)
{
	struct stat st;
	return path && stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int main(int argc, char **argv)
{
	const char *mode = "loop", *log = NULL;
	int nfiles = 120;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'm', OPT_STR, .p = &mode },
		{ 'n', OPT_INT, .p = &nfiles },
		{ 'l', OPT_STR, .p = &log },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/a.dat", dir);
	int a = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (a < 0)
		return fail("open a.dat");
	for (int i = 0; i < 32; i++)
		if (write_rec(a, (long long)i * REC) < 0)
			return fail("write a.dat");
	close(a);
	close_all(mode);
	long long log0 = size_of(log);
	int fds[TOP];
	for (int k = 0; k < nfiles && k < TOP; k++) {
		snprintf(path, sizeof(path), "%s/b.%d.dat", dir, k);
		if ((fds[k] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0)
			return fail("open b");
	}
	int rounds = 0, grew = 0;
	uint64_t deadline = now_ns() + 10000000000ull;
	do {
		for (int k = 0; k < nfiles; k++)
			if (write_rec(fds[k], (long long)rounds * REC) < 0)
				return fail("write b");
		rounds++;
		long long sz = size_of(log);
		if (sz > log0) {
			grew++;
			log0 = sz;
		}
	} while (log && grew < 2 && now_ns() < deadline);
	for (int k = 0; k < nfiles; k++)
		close(fds[k]);
	if (app_number_failures) {
		fprintf(stderr, "closeall: %d dup2s or closes of the app's own numbers failed\n", app_number_failures);
		return 1;
	}
	printf("closeall: ok rounds=%d log_growth=%d\n", rounds, grew);
	return 0;
}
