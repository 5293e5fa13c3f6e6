/*
 * many_files - many files, each written and fsynced once, like a broker
 * that keeps thousands of log segments open.
 *
 *   many_files -d DIR -n N [-c] [-s BYTES] [-w MS] [-R FILE]
 *
 * Creates DIR/f0 .. DIR/f(N-1); each gets one write of BYTES (default
 * 512) and one fsync, and with -c is closed right after its fsync (files
 * written, synced and closed in turn), else all stay open until the end.
 * Then the program waits MS milliseconds (default 2000) doing nothing but
 * sampling its own threads, so a deferring policy's background syncs can
 * land before exit (whose barrier would make them land anyway) and a
 * script can tell, from a record of the real syncs beneath the policy
 * (tests/lib/reclayer.so), how long after the last request the last one
 * came.
 *
 * With -R FILE, FILE gets one line per file, "INODE CALLED RETURNED": when
 * its fsync was called and returned (CLOCK_MONOTONIC ns), so a script can
 * match each file's real syncs (recorded with its inode number) to its
 * request: the first real sync begun after the call covers it.
 *
 * Prints one line:
 *   result: files=N last_request_ns=T requests_s=S flushers_max=F fds_max=D rss_kb=R hwm_kb=H
 * last_request_ns is CLOCK_MONOTONIC when the last fsync returned;
 * flushers_max the most threads named syncshim-flush seen at once (sampled
 * every 10 ms while waiting); fds_max the most descriptors the process
 * held (sampled every 1,000 files and while waiting); rss_kb/hwm_kb the process's VmRSS/VmHWM at
 * the end of the wait (with and without a shim: the difference is what the
 * shim keeps).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "many_files"
#include "examples.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: many_files -d DIR -n N [-c] [-s BYTES] [-w MS] [-R FILE]\n");
}

static unsigned count_flushers(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[300], comm[32] = "";
		snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "syncshim-flush", 14) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	unsigned n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n > 3 ? n - 3 : 0; /* ".", ".." and the directory's own */
}

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t kl = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *returns = NULL;
	long n = 0, size = 512, wait_ms = 2000;
	int close_each = 0, c;
	while ((c = getopt(argc, argv, "d:n:cs:w:R:h")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'n': n = atol(optarg); break;
		case 'c': close_each = 1; break;
		case 's': size = atol(optarg); break;
		case 'w': wait_ms = atol(optarg); break;
		case 'R': returns = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!dir || n <= 0 || size <= 0 || size > 1 << 20 || wait_ms < 0) {
		usage(stderr);
		return 2;
	}
	char *buf = malloc((size_t)size);
	if (!buf)
		die("malloc");
	fill_pattern(buf, 0, (size_t)size);
	int *fds = close_each ? NULL : malloc((size_t)n * sizeof(int));
	if (!close_each && !fds)
		die("malloc");
	uint64_t *ret_ns = returns ? malloc((size_t)n * sizeof(uint64_t)) : NULL;
	uint64_t *ino = returns ? malloc((size_t)n * sizeof(uint64_t)) : NULL;
	uint64_t *call_ns = returns ? malloc((size_t)n * sizeof(uint64_t)) : NULL;
	if (returns && (!ret_ns || !ino || !call_ns))
		die("malloc");
	char path[4096];
	uint64_t t0 = now_ns(), last = t0;
	unsigned fds_max = 0;
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			die_path("open", path);
		struct stat st;
		if (ino && fstat(fd, &st) == 0)
			ino[i] = (uint64_t)st.st_ino;
		if (write_full(fd, buf, (size_t)size) < 0)
			die_path("write", path);
		if (call_ns)
			call_ns[i] = now_ns();
		if (fsync(fd) < 0)
			die_path("fsync", path);
		last = now_ns();
		if (ret_ns)
			ret_ns[i] = last;
		if (close_each) {
			if (close(fd) < 0)
				die_path("close", path);
		} else {
			fds[i] = fd;
		}
		if (i % 1000 == 999) {
			unsigned d = count_fds();
			if (d > fds_max)
				fds_max = d;
		}
	}
	if (ret_ns) { /* written now, before the wait: the flushers are at work */
		FILE *rf = fopen(returns, "w");
		if (!rf)
			die_path("open", returns);
		for (long i = 0; i < n; i++)
			fprintf(rf, "%llu %llu %llu\n", (unsigned long long)ino[i], (unsigned long long)call_ns[i],
				(unsigned long long)ret_ns[i]);
		if (fclose(rf) != 0)
			die_path("write", returns);
	}
	unsigned flushers_max = 0;
	uint64_t end = now_ns() + (uint64_t)wait_ms * 1000000ull;
	while (now_ns() < end) {
		unsigned f = count_flushers();
		if (f > flushers_max)
			flushers_max = f;
		unsigned d = count_fds();
		if (d > fds_max)
			fds_max = d;
		uint64_t next = now_ns() + 10000000ull;
		sleep_until(next < end ? next : end);
	}
	printf("result: files=%ld last_request_ns=%llu requests_s=%.3f flushers_max=%u fds_max=%u rss_kb=%ld hwm_kb=%ld\n", n,
	       (unsigned long long)last, (double)(last - t0) / 1e9, flushers_max, fds_max, status_kb("VmRSS"),
	       status_kb("VmHWM"));
	fflush(stdout);
	if (!close_each)
		for (long i = 0; i < n; i++)
			close(fds[i]);
	return 0;
}
