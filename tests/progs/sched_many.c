/*
 * sched_many - many deferred files at once, for the schedule's cost check
 * (tests/system/test_sched.c).
 *
 *   sched_many -d DIR -n N -L RECLOG [-c] [-T MAX_MS] [-l NOFILE]
 *
 * Opens DIR/s0 .. DIR/s(N-1) and writes 64 bytes to each, then fsyncs
 * them all in one tight loop (under defer every fsync returns at once, so
 * all N are owed together and the flusher threads hold N files), then
 * waits until the recording layer's log RECLOG (tests/lib/reclayer.so,
 * beneath the shim) holds N real syncs, looking every 10 ms, at most
 * MAX_MS (default 30000). With -c each file is instead written, fsynced
 * and closed in turn, and the program counts the descriptors it holds
 * right after the loop (fds=, the shim's own included), before it
 * (fds_start=) and the most it held at any close (fds_max=, counted after
 * every close). Exits 0 once they are there, 1 if they never
 * came (the count goes to stderr). Raises its soft descriptor limit to the
 * hard one first, or with -l sets it to NOFILE (the shim bounds its
 * private descriptors of closed files by a quarter of it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static long count_syncs(const char *log)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return 0;
	char line[4096];
	long n = 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "op=fsync ", 9) == 0 || strncmp(line, "op=fdatasync ", 13) == 0)
			n++;
	fclose(f);
	return n;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own */
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *log = NULL;
	long n = 0, max_ms = 30000;
	int c, close_each = 0;
	long nofile = 0;
	while ((c = getopt(argc, argv, "d:n:L:cT:l:")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'n': n = atol(optarg); break;
		case 'L': log = optarg; break;
		case 'c': close_each = 1; break;
		case 'T': max_ms = atol(optarg); break;
		case 'l': nofile = atol(optarg); break;
		default: return 2;
		}
	}
	if (!dir || !log || n <= 0)
		return 2;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && (nofile > 0 || rl.rlim_cur < rl.rlim_max)) {
		rl.rlim_cur = nofile > 0 && (rlim_t)nofile < rl.rlim_max ? (rlim_t)nofile : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int fds_start = count_fds(), fds_max = fds_start;
	int *fds = calloc((size_t)n, sizeof(int));
	char buf[64], path[4096];
	if (!fds)
		return 1;
	pattern(buf, sizeof(buf), 0);
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/s%ld", dir, i);
		fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fds[i] < 0 || write(fds[i], buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			fprintf(stderr, "sched_many: %s: %s\n", path, strerror(errno));
			return 1;
		}
		if (close_each && (fsync(fds[i]) != 0 || close(fds[i]) != 0)) {
			fprintf(stderr, "sched_many: fsync/close %s: %s\n", path, strerror(errno));
			return 1;
		}
		int held = close_each ? count_fds() : 0;
		if (held > fds_max)
			fds_max = held;
	}
	int fds_held = count_fds();
	for (long i = 0; i < n && !close_each; i++)
		if (fsync(fds[i]) != 0) {
			fprintf(stderr, "sched_many: fsync: %s\n", strerror(errno));
			return 1;
		}
	uint64_t end = now_ns() + (uint64_t)max_ms * 1000000ull;
	long got;
	while ((got = count_syncs(log)) < n && now_ns() < end) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	printf("sched_many: files=%ld real_syncs=%ld fds=%d fds_start=%d fds_max=%d\n", n, got, fds_held, fds_start,
	       fds_max);
	if (got < n) {
		fprintf(stderr, "sched_many: %ld of %ld real syncs after %ld ms\n", got, n, max_ms);
		return 1;
	}
	return 0;
}
