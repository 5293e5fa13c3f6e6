/*
 * fl_stress - many threads writing and syncing shared and private files
 * while the main thread forks short-lived children, for the flusher stress
 * test (tests/system/test_flusher.c; the test rewrites the shim's ini file under
 * it meanwhile).
 *
 *   fl_stress -d DIR [-t THREADS] [-T DURATION_MS] [-k SHARED] [-c CHILD_MS] [-s SIZE]
 *
 * Files (all SIZE-byte records of the 16-byte pattern of tests/harness/harness.c,
 * each record at its own offset, so any record in the wrong place or torn
 * shows):
 *   DIR/shared.K.dat  K < SHARED: every thread reserves the next record with
 *                     an atomic counter and pwrites it, through the main
 *                     thread's descriptor or its own (alternating), then
 *                     fsync or fdatasync (alternating) on it.
 *   DIR/own.T.dat     thread T appends records with write(); a sync call
 *                     every 3rd iteration; every 64 iterations the thread
 *                     closes it and reopens it O_APPEND.
 *   DIR/final.T.dat   every 32 iterations: DIR/tmp.T.dat gets one record,
 *                     fsync, rename over final.T.dat.
 *   DIR/child.N.dat   child N (forked every CHILD_MS by the main thread):
 *                     8 records, each write + fsync/fdatasync, an fsync of
 *                     an inherited shared descriptor, then exit(0) (even N,
 *                     destructors run) or _exit(0) (odd N).
 * Runs for DURATION_MS, then joins the threads and waits for every child.
 * Output: "shared K records=N" per shared file, "own T records=N" per
 * thread, "children=N failed=F", then "fl_stress: ok" (exit 0) if every
 * call succeeded and every child exited 0, else errors on stderr, exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "progs.h"

#define MAX_THREADS 64
#define MAX_SHARED 8
#define MAX_CHILDREN 4096
#define CHILD_RECORDS 8

static const char *dir;
static long threads = 16, duration_ms = 3000, nshared = 3, child_ms = 50, size = 4096;
static int shared_fd[MAX_SHARED];
static _Atomic long shared_next[MAX_SHARED];
static _Atomic int stop;
static _Atomic int failures;

struct worker {
	pthread_t th;
	long idx;
	long own_records;
};

static void fail(const char *who, long idx, const char *what)
{
	fprintf(stderr, "fl_stress: %s %ld: %s: %s\n", who, idx, what, strerror(errno));
	atomic_fetch_add(&failures, 1);
}

static int sync_fd(int fd, long i)
{
	return i % 2 ? fdatasync(fd) : fsync(fd);
}

static char *path_of(char *buf, const char *name, long n)
{
	snprintf(buf, PATH_MAX, "%s/%s.%ld.dat", dir, name, n);
	return buf;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char path[PATH_MAX], tmp[PATH_MAX], fin[PATH_MAX];
	char *buf = malloc((size_t)size);
	int mine[MAX_SHARED];
	for (long k = 0; k < nshared; k++)
		if ((mine[k] = open(path_of(path, "shared", k), O_WRONLY)) < 0)
			fail("thread", w->idx, "open shared");
	int own = open(path_of(path, "own", w->idx), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (own < 0 || !buf) {
		fail("thread", w->idx, "open own");
		return NULL;
	}
	path_of(tmp, "tmp", w->idx);
	path_of(fin, "final", w->idx);
	for (long i = 0; !atomic_load(&stop); i++) {
		/* a shared file: reserved record, then a sync on the same fd */
		long k = i % nshared;
		int fd = (i / nshared) % 2 ? shared_fd[k] : mine[k];
		unsigned long long off = (unsigned long long)atomic_fetch_add(&shared_next[k], 1) * (unsigned long long)size;
		pattern(buf, (size_t)size, off);
		if (pwrite(fd, buf, (size_t)size, (off_t)off) != size)
			fail("thread", w->idx, "pwrite shared");
		if (sync_fd(fd, i) != 0)
			fail("thread", w->idx, "sync shared");
		/* its own file */
		pattern(buf, (size_t)size, (unsigned long long)w->own_records * (unsigned long long)size);
		if (write(own, buf, (size_t)size) != size)
			fail("thread", w->idx, "write own");
		w->own_records++;
		if (i % 3 == 0 && sync_fd(own, i / 3) != 0)
			fail("thread", w->idx, "sync own");
		if (i % 64 == 63) {
			if (close(own) != 0)
				fail("thread", w->idx, "close own");
			if ((own = open(path_of(path, "own", w->idx), O_WRONLY | O_APPEND)) < 0) {
				fail("thread", w->idx, "reopen own");
				return NULL;
			}
		}
		/* write tmp, fsync, rename */
		if (i % 32 == 5) {
			int t = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			pattern(buf, (size_t)size, 0);
			if (t < 0 || write(t, buf, (size_t)size) != size || fsync(t) != 0 || rename(tmp, fin) != 0 ||
			    close(t) != 0)
				fail("thread", w->idx, "tmp+rename");
		}
	}
	if (close(own) != 0)
		fail("thread", w->idx, "close own");
	for (long k = 0; k < nshared; k++)
		if (mine[k] >= 0 && close(mine[k]) != 0)
			fail("thread", w->idx, "close shared");
	free(buf);
	return NULL;
}

/* Made before any thread starts: a child must not call malloc. A
 * sanitizer's allocator (GCC 12's ASan and TSan) is not held across fork,
 * so a child forked while another thread is inside malloc can block in
 * the allocator's lock forever, nothing of the shim's on its stack. */
static char *child_buf;

static void child(long n)
{
	char path[PATH_MAX];
	char *buf = child_buf;
	int fd = open(path_of(path, "child", n), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !buf)
		_exit(3);
	for (long r = 0; r < CHILD_RECORDS; r++) {
		pattern(buf, (size_t)size, (unsigned long long)r * (unsigned long long)size);
		if (write(fd, buf, (size_t)size) != size || sync_fd(fd, r) != 0) {
			fprintf(stderr, "fl_stress: child %ld: write/sync: %s\n", n, strerror(errno));
			_exit(4);
		}
	}
	if (fsync(shared_fd[n % nshared]) != 0) {
		fprintf(stderr, "fl_stress: child %ld: fsync inherited: %s\n", n, strerror(errno));
		_exit(5);
	}
	if (close(fd) != 0)
		_exit(6);
	if (n % 2 == 0)
		exit(0);
	_exit(0);
}

static long reap(pid_t *kids, long nkids, int block, long *failed)
{
	long left = 0;
	for (long i = 0; i < nkids; i++) {
		if (!kids[i])
			continue;
		int st;
		pid_t r = waitpid(kids[i], &st, block ? 0 : WNOHANG);
		if (r == kids[i]) {
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "fl_stress: child %ld (pid %d): status 0x%x\n", i, (int)kids[i], st);
				(*failed)++;
			}
			kids[i] = 0;
		} else {
			left++;
		}
	}
	return left;
}

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 't', OPT_LONG, .p = &threads },
		{ 'T', OPT_LONG, .p = &duration_ms },
		{ 'k', OPT_LONG, .p = &nshared },
		{ 'c', OPT_LONG, .p = &child_ms },
		{ 's', OPT_LONG, .p = &size },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		goto usage;
	if (!dir || threads < 1 || threads > MAX_THREADS || nshared < 1 || nshared > MAX_SHARED || child_ms < 1 ||
	    size < 16 || size % 16)
		goto usage;
	if (!(child_buf = malloc((size_t)size))) {
		fprintf(stderr, "fl_stress: out of memory\n");
		return 1;
	}
	char path[PATH_MAX];
	for (long k = 0; k < nshared; k++)
		if ((shared_fd[k] = open(path_of(path, "shared", k), O_RDWR | O_CREAT | O_TRUNC, 0644)) < 0) {
			fprintf(stderr, "fl_stress: %s: %s\n", path, strerror(errno));
			return 1;
		}
	static struct worker w[MAX_THREADS];
	for (long t = 0; t < threads; t++) {
		w[t].idx = t;
		if (pthread_create(&w[t].th, NULL, run, &w[t]) != 0) {
			fprintf(stderr, "fl_stress: cannot start thread %ld\n", t);
			return 1;
		}
	}
	static pid_t kids[MAX_CHILDREN];
	long nkids = 0, failed = 0;
	uint64_t end = now_ns() + (uint64_t)duration_ms * 1000000ull;
	while (now_ns() < end) {
		if (nkids < MAX_CHILDREN) {
			fflush(NULL);
			pid_t p = fork();
			if (p == 0)
				child(nkids);
			if (p < 0)
				fail("main", 0, "fork");
			else
				kids[nkids++] = p;
		}
		struct timespec ts = { child_ms / 1000, (child_ms % 1000) * 1000000L };
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
		reap(kids, nkids, 0, &failed);
	}
	atomic_store(&stop, 1);
	for (long t = 0; t < threads; t++)
		pthread_join(w[t].th, NULL);
	reap(kids, nkids, 1, &failed);
	for (long k = 0; k < nshared; k++) {
		if (close(shared_fd[k]) != 0)
			fail("main", k, "close shared");
		printf("shared %ld records=%ld\n", k, atomic_load(&shared_next[k]));
	}
	for (long t = 0; t < threads; t++)
		printf("own %ld records=%ld\n", t, w[t].own_records);
	printf("children=%ld failed=%ld\n", nkids, failed);
	if (failed || atomic_load(&failures))
		return 1;
	printf("fl_stress: ok\n");
	return 0;
usage:
	fprintf(stderr, "usage: fl_stress -d DIR [-t THREADS] [-T DURATION_MS] [-k SHARED] [-c CHILD_MS] [-s SIZE]\n");
	return 2;
}
