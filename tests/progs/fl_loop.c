/*
 * fl_loop - one thread: COUNT x (write SIZE bytes [+ a sync call every
 * EVERY writes]) on one file, recording CLOCK_MONOTONIC times, for the
 * flusher tests (tests/system/test_flusher.c).
 *
 *   fl_loop -f FILE [-n COUNT] [-s SIZE] [-m fsync|fdatasync|none] [-e EVERY]
 *           [-p PAUSE_US] [-w WAIT_MS] [-O] [-F] [-S STOPFILE [-I]] [-T MAX_MS]
 *
 *   -n  iterations (default 100); with -S the most iterations
 *   -s  bytes per write (default 4096)
 *   -m  sync call after every EVERY-th write (default fsync every write)
 *   -p  pause this many microseconds after each iteration (shapes the
 *       workload: a rate, not synchronisation)
 *   -w  after the loop, sleep this many ms doing nothing, then exit
 *   -O  open with O_DSYNC
 *   -F  after the loop call syncshim_flush() (dlsym(RTLD_DEFAULT)) if the
 *       shim is loaded
 *   -S  stop (before the next iteration) once STOPFILE exists
 *   -I  after the loop (and -F, -w), create STOPFILE.idle (so a test
 *       knows every call of the loop has returned), then idle until
 *       STOPFILE exists (looked for every 10 ms; the program makes no
 *       other call meanwhile)
 *   -T  stop after MAX_MS in any case (a bound, default 20000)
 *
 * Data: the 16-byte record pattern of tests/harness/harness.c (each record is its
 * own file offset in 15 hex digits and '\n'), written with write() at
 * increasing offsets, so the file is COUNT*SIZE bytes of pattern.
 * Every sync call must return 0 (else the error goes to stderr, exit 1).
 *
 * Output, one line on stdout at the end (all times CLOCK_MONOTONIC ns):
 *   fl_loop: pid=P tid=T iters=N syncs=K first_t0=NS last_sync_t0=NS
 *            last_sync_t1=NS last_write_t1=NS loop_end=NS end_t=NS
 *            getfl=0xFLAGS flushed=0|1 run_delay=NS
 * run_delay: how long the process's threads (the shim's included) waited
 * for a CPU while runnable, summed (/proc/self/task/T/schedstat): a test
 * judges the flusher's promptness against when it could run.
 *   fl_loop: ok
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "progs.h"

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* Run-queue waits of every thread of the process so far, summed (ns). */
static unsigned long long run_delay_ns(void)
{
	unsigned long long sum = 0;
	DIR *d = opendir("/proc/self/task");
	for (struct dirent *e; d && (e = readdir(d));) {
		char path[300];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		FILE *f = fopen(path, "r");
		unsigned long long run, wait;
		if (f && fscanf(f, "%llu %llu", &run, &wait) == 2)
			sum += wait;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

static void usage(void)
{
	fprintf(stderr, "usage: fl_loop -f FILE [-n COUNT] [-s SIZE] [-m fsync|fdatasync|none] [-e EVERY]\n"
			"               [-p PAUSE_US] [-w WAIT_MS] [-O] [-F] [-S STOPFILE [-I]] [-T MAX_MS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *file = NULL, *method = "fsync", *stop = NULL;
	long count = 100, size = 4096, every = 1, pause_us = 0, wait_ms = 0, max_ms = 20000;
	int odsync = 0, flush = 0, idle = 0;
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'n', OPT_LONG, .p = &count },
		{ 's', OPT_LONG, .p = &size },
		{ 'm', OPT_STR, .p = &method },
		{ 'e', OPT_LONG, .p = &every },
		{ 'p', OPT_LONG, .p = &pause_us },
		{ 'w', OPT_LONG, .p = &wait_ms },
		{ 'O', OPT_FLAG, .p = &odsync },
		{ 'F', OPT_FLAG, .p = &flush },
		{ 'S', OPT_STR, .p = &stop },
		{ 'I', OPT_FLAG, .p = &idle },
		{ 'T', OPT_LONG, .p = &max_ms },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		usage();
	int m_fsync = !strcmp(method, "fsync"), m_fdatasync = !strcmp(method, "fdatasync");
	if (!file || size <= 0 || size % 16 || every <= 0 || (!m_fsync && !m_fdatasync && strcmp(method, "none")))
		usage();
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | (odsync ? O_DSYNC : 0), 0644);
	if (fd < 0) {
		fprintf(stderr, "fl_loop: open %s: %s\n", file, strerror(errno));
		return 1;
	}
	int getfl = fcntl(fd, F_GETFL);
	char *buf = malloc((size_t)size);
	if (!buf)
		return 1;
	uint64_t start = now_ns(), first_t0 = 0, last_sync_t0 = 0, last_sync_t1 = 0, last_write_t1 = 0;
	long i, syncs = 0;
	for (i = 0; i < count; i++) {
		if (stop && access(stop, F_OK) == 0)
			break;
		if (now_ns() - start > (uint64_t)max_ms * 1000000ull)
			break;
		pattern(buf, (size_t)size, (unsigned long long)i * (unsigned long long)size);
		if (write(fd, buf, (size_t)size) != size) {
			fprintf(stderr, "fl_loop: write #%ld: %s\n", i + 1, strerror(errno));
			return 1;
		}
		last_write_t1 = now_ns();
		if ((m_fsync || m_fdatasync) && (i + 1) % every == 0) {
			uint64_t t0 = now_ns();
			int r = m_fsync ? fsync(fd) : fdatasync(fd);
			uint64_t t1 = now_ns();
			if (r != 0) {
				fprintf(stderr, "fl_loop: %s #%ld: %s\n", method, syncs + 1, strerror(errno));
				return 1;
			}
			if (!first_t0)
				first_t0 = t0;
			last_sync_t0 = t0;
			last_sync_t1 = t1;
			syncs++;
		}
		if (pause_us > 0)
			sleep_ns((uint64_t)pause_us * 1000ull);
	}
	uint64_t loop_end = now_ns();
	int flushed = 0;
	if (flush) {
		void (*fl)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
		if (fl) {
			fl();
			flushed = 1;
		}
	}
	if (wait_ms > 0)
		sleep_ns((uint64_t)wait_ms * 1000000ull);
	if (idle && stop) {
		char mark[4096];
		snprintf(mark, sizeof(mark), "%s.idle", stop);
		int m = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (m >= 0)
			close(m);
	}
	while (idle && stop && access(stop, F_OK) != 0 && now_ns() - start < (uint64_t)max_ms * 1000000ull)
		sleep_ns(10 * 1000000ull);
	if (close(fd) != 0) {
		fprintf(stderr, "fl_loop: close: %s\n", strerror(errno));
		return 1;
	}
	printf("fl_loop: pid=%ld tid=%ld iters=%ld syncs=%ld first_t0=%llu last_sync_t0=%llu "
	       "last_sync_t1=%llu last_write_t1=%llu loop_end=%llu end_t=%llu getfl=0x%x flushed=%d run_delay=%llu\n",
	       (long)getpid(), (long)syscall(SYS_gettid), i, syncs, (unsigned long long)first_t0,
	       (unsigned long long)last_sync_t0, (unsigned long long)last_sync_t1,
	       (unsigned long long)last_write_t1, (unsigned long long)loop_end, (unsigned long long)now_ns(),
	       (unsigned)getfl, flushed, run_delay_ns());
	printf("fl_loop: ok\n");
	free(buf);
	return 0;
}
