/*
 * pwrite_loop - the tightest write loop: N x pwrite of SIZE bytes over a
 * small region of one file, so every write hits the page cache and the
 * time per call is the cost of the call itself. `make bench` runs it with
 * and without the shim to measure what interposition and logging add.
 *
 *   pwrite_loop [-n COUNT] [-s SIZE] [-r REGION_BYTES] [-f FILE] [-i] [-k] [-a]
 *
 * -i starts one idle thread (blocked on a condition variable) before the
 * loop: the baseline for a shim that starts a thread of its own. Once a
 * process has a second thread the kernel's fdget() takes and drops a file
 * reference on every fd system call instead of its single-threaded fast
 * path, so the loop pays that whoever started the thread.
 *
 * -a alternates, in bursts of 1000 calls, the pwrite the program links
 * (the shim's, when it is preloaded) with libc's own (looked up in
 * libc.so.6 itself), in one process: the two share every disturbance of
 * a noisy machine, so their ratio is steadier than two processes'. It
 * adds " direct_cpu_ns_per_call=D ratio=R" (R: the linked pwrite's CPU
 * time per call over libc's; about 1 without a shim).
 *
 * Prints "result: calls=N seconds=S ns_per_call=X cpu_ns_per_call=Y threads=T": wall
 * time, and the calling thread's own CPU time, which a noisy shared
 * machine (steal, other tenants) disturbs far less.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "pwrite_loop"
#include "examples.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: pwrite_loop [-n COUNT] [-s SIZE] [-r REGION] [-f FILE] [-i] [-k]\n"
		     "  -i  start one idle thread first (a multithreaded baseline)\n"
		     "  -a  alternate bursts through the linked pwrite and libc's own\n");
}

/* -i: a thread that does nothing until told to exit. */
static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int idle_done;

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idle_mu);
	while (!idle_done)
		pthread_cond_wait(&idle_cv, &idle_mu);
	pthread_mutex_unlock(&idle_mu);
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t count = 1000000, size = 4096, region = 1 << 20;
	char file[4096];
	int keep = 0, file_given = 0, idle = 0, alternate = 0;
	const struct opt opts[] = {
		{ 'n', OPT_U64, .p = &count },
		{ 's', OPT_U64, .p = &size },
		{ 'r', OPT_U64, .p = &region },
		{ 'f', OPT_PATH, .p = file, .max = sizeof(file), .seen = &file_given },
		{ 'i', OPT_FLAG, .p = &idle },
		{ 'k', OPT_FLAG, .p = &keep },
		{ 'a', OPT_FLAG, .p = &alternate },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (count < 1 || size < 1 || region < size) {
		fprintf(stderr, "pwrite_loop: bad sizes\n");
		return 2;
	}
	if (!file_given)
		snprintf(file, sizeof(file), "/tmp/pwrite_loop.%d.dat", (int)getpid());
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *buf = malloc(size);
	if (fd < 0 || !buf) {
		fprintf(stderr, "pwrite_loop: open %s: %s\n", file, strerror(errno));
		return 1;
	}
	memset(buf, 'x', size);
	uint64_t slots = region / size;
	for (uint64_t i = 0; i < slots; i++) /* allocate the region first: steady state only */
		if (pwrite(fd, buf, size, (off_t)(i * size)) != (ssize_t)size)
			return 1;
	pthread_t idle_tid;
	int rc;
	if (idle && (rc = pthread_create(&idle_tid, NULL, idle_main, NULL)) != 0) {
		fprintf(stderr, "pwrite_loop: pthread_create: %s\n", strerror(rc));
		return 1;
	}
	/* -a: libc's own pwrite, and the CPU time each of the two spent */
	ssize_t (*direct)(int, const void *, size_t, off_t) = NULL;
	double cpu_of[2] = { 0, 0 };
	uint64_t calls_of[2] = { 0, 0 };
	if (alternate) {
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
		direct = libc ? (ssize_t (*)(int, const void *, size_t, off_t))dlsym(libc, "pwrite") : NULL;
		if (!direct) {
			fprintf(stderr, "pwrite_loop: libc's own pwrite not found\n");
			return 1;
		}
	}
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	for (uint64_t i = 0; i < count;) {
		uint64_t end = alternate && count - i > 1000 ? i + 1000 : count;
		int use_direct = alternate && (i / 1000) % 2;
		double b0 = alternate ? clock_s(CLOCK_THREAD_CPUTIME_ID) : 0;
		for (; i < end; i++) {
			off_t at = (off_t)(i % slots * size);
			if ((use_direct ? direct(fd, buf, size, at) : pwrite(fd, buf, size, at)) != (ssize_t)size) {
				fprintf(stderr, "pwrite_loop: pwrite: %s\n", strerror(errno));
				return 1;
			}
		}
		if (alternate) {
			cpu_of[use_direct] += clock_s(CLOCK_THREAD_CPUTIME_ID) - b0;
			calls_of[use_direct] += 1000;
		}
	}
	double secs = clock_s(CLOCK_MONOTONIC) - t0, cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	if (idle) {
		pthread_mutex_lock(&idle_mu);
		idle_done = 1;
		pthread_cond_signal(&idle_cv);
		pthread_mutex_unlock(&idle_mu);
		pthread_join(idle_tid, NULL);
	}
	close(fd);
	if (!keep)
		unlink(file);
	printf("result: calls=%" PRIu64 " seconds=%.4f ns_per_call=%.1f cpu_ns_per_call=%.1f threads=%d", count, secs,
	       secs * 1e9 / (double)count, cpu * 1e9 / (double)count, idle ? 2 : 1);
	if (alternate && calls_of[0] && calls_of[1]) {
		double linked = cpu_of[0] * 1e9 / (double)calls_of[0], own = cpu_of[1] * 1e9 / (double)calls_of[1];
		printf(" direct_cpu_ns_per_call=%.1f ratio=%.4f", own, linked / own);
	}
	printf("\n");
	return 0;
}
