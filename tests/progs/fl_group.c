/*
 * fl_group - THREADS threads x COUNT (pwrite SIZE bytes + sync) on one
 * shared file, every sync call timed, for the group-commit test
 * (tests/system/test_flusher.c).
 *
 *   fl_group -f FILE -o TIMES [-t THREADS] [-n COUNT] [-s SIZE] [-m fsync|fdatasync]
 *
 * Each thread opens FILE on its own descriptor; they start together
 * (pthread barrier). Iteration i of thread t writes the 16-byte record
 * pattern (tests/harness/harness.c) at offset (i*THREADS + t)*SIZE, so the file
 * ends up THREADS*COUNT*SIZE bytes of pattern. For every sync call the
 * thread notes t0 (CLOCK_MONOTONIC ns just before the call) and t1 (just
 * after it returned); TIMES gets one line "t0 t1 tid" per call.
 * Every call must return 0 (else stderr, exit 1).
 * Output: "fl_group: ok pid=P calls=N".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "progs.h"

#define MAX_THREADS 64

static const char *file, *method = "fsync";
static long threads = 8, count = 100, size = 4096;
static pthread_barrier_t start_line;

struct call {
	uint64_t t0, t1;
};

struct worker {
	pthread_t th;
	long idx;
	long tid;
	struct call *calls;
	int failed;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	w->tid = (long)syscall(SYS_gettid);
	int fd = open(file, O_WRONLY);
	char *buf = malloc((size_t)size);
	pthread_barrier_wait(&start_line);
	if (fd < 0 || !buf) {
		fprintf(stderr, "fl_group: thread %ld: open: %s\n", w->idx, strerror(errno));
		w->failed = 1;
		return NULL;
	}
	int fs = strcmp(method, "fdatasync") != 0;
	for (long i = 0; i < count; i++) {
		unsigned long long off = (unsigned long long)(i * threads + w->idx) * (unsigned long long)size;
		pattern(buf, (size_t)size, off);
		if (pwrite(fd, buf, (size_t)size, (off_t)off) != size) {
			fprintf(stderr, "fl_group: thread %ld: pwrite #%ld: %s\n", w->idx, i + 1, strerror(errno));
			w->failed = 1;
			break;
		}
		w->calls[i].t0 = now_ns();
		int r = fs ? fsync(fd) : fdatasync(fd);
		w->calls[i].t1 = now_ns();
		if (r != 0) {
			fprintf(stderr, "fl_group: thread %ld: %s #%ld: %s\n", w->idx, method, i + 1, strerror(errno));
			w->failed = 1;
			break;
		}
	}
	close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *times = NULL;
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'o', OPT_STR, .p = &times },
		{ 't', OPT_LONG, .p = &threads },
		{ 'n', OPT_LONG, .p = &count },
		{ 's', OPT_LONG, .p = &size },
		{ 'm', OPT_STR, .p = &method },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		goto usage;
	if (!file || !times || threads < 1 || threads > MAX_THREADS || count < 1 || size < 16 || size % 16)
		goto usage;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "fl_group: open %s: %s\n", file, strerror(errno));
		return 1;
	}
	close(fd);
	static struct worker w[MAX_THREADS];
	pthread_barrier_init(&start_line, NULL, (unsigned)threads);
	for (long t = 0; t < threads; t++) {
		w[t].idx = t;
		w[t].calls = calloc((size_t)count, sizeof(struct call));
		if (!w[t].calls || pthread_create(&w[t].th, NULL, run, &w[t]) != 0) {
			fprintf(stderr, "fl_group: thread %ld: cannot start\n", t);
			return 1;
		}
	}
	int failed = 0;
	for (long t = 0; t < threads; t++) {
		pthread_join(w[t].th, NULL);
		failed |= w[t].failed;
	}
	if (failed)
		return 1;
	FILE *out = fopen(times, "w");
	if (!out) {
		fprintf(stderr, "fl_group: %s: %s\n", times, strerror(errno));
		return 1;
	}
	for (long t = 0; t < threads; t++)
		for (long i = 0; i < count; i++)
			fprintf(out, "%llu %llu %ld\n", (unsigned long long)w[t].calls[i].t0,
				(unsigned long long)w[t].calls[i].t1, w[t].tid);
	if (fclose(out) != 0)
		return 1;
	printf("fl_group: ok pid=%ld calls=%ld\n", (long)getpid(), threads * count);
	return 0;
usage:
	fprintf(stderr, "usage: fl_group -f FILE -o TIMES [-t THREADS] [-n COUNT] [-s SIZE] [-m fsync|fdatasync]\n");
	return 2;
}
