/*
 * mt_writer - THREADS threads, each COUNT x (write + sync) on its own file
 * and on one shared file, then every byte is checked.
 *
 *   mt_writer -d DIR [-t THREADS] [-n COUNT] [-s SIZE] [-m fsync|fdatasync|none]
 *
 * Own files DIR/own.K are written with write(); the shared file DIR/shared
 * with pwrite() at offsets reserved atomically (one descriptor shared by
 * all threads), and each thread syncs it through a descriptor of its own
 * (opened by path), so several descriptors map to one inode. Data: 16-byte
 * records holding their own offset (as examples/). Every thread opens,
 * writes and closes concurrently with the others.
 * Output "mt_writer: ok threads=T count=N syncs=S"; exit 1 on a failed call
 * or wrong data, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "progs.h"

#define MAX_THREADS 64

static const char *dir;
static int nthreads = 4, count = 50;
static size_t size = 4096;
static const char *method = "fsync";
static int shared_fd;
static atomic_ullong next_off;
static atomic_int failed;
static atomic_int syncs;

static int do_sync(int fd)
{
	if (strcmp(method, "none") == 0)
		return 0;
	atomic_fetch_add(&syncs, 1);
	return strcmp(method, "fdatasync") == 0 ? fdatasync(fd) : fsync(fd);
}

static void fail(const char *what, int k)
{
	fprintf(stderr, "mt_writer: thread %d: %s: %s\n", k, what, strerror(errno));
	atomic_store(&failed, 1);
}

static void *worker(void *arg)
{
	int k = (int)(long)arg;
	char path[4096], spath[4096];
	snprintf(path, sizeof(path), "%s/own.%d", dir, k);
	snprintf(spath, sizeof(spath), "%s/shared", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int sfd = open(spath, O_WRONLY);
	if (fd < 0 || sfd < 0) {
		fail("open", k);
		return NULL;
	}
	char *buf = malloc(size);
	for (int i = 0; i < count && !atomic_load(&failed); i++) {
		pattern(buf, size, (unsigned long long)i * size);
		if (write(fd, buf, size) != (ssize_t)size || do_sync(fd) != 0) {
			fail("own write/sync", k);
			break;
		}
		unsigned long long off = atomic_fetch_add(&next_off, size);
		pattern(buf, size, off);
		if (pwrite(shared_fd, buf, size, (off_t)off) != (ssize_t)size || do_sync(sfd) != 0) {
			fail("shared pwrite/sync", k);
			break;
		}
	}
	free(buf);
	if (close(fd) != 0 || close(sfd) != 0)
		fail("close", k);
	return NULL;
}

static int verify(const char *path, size_t expect)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	char buf[65536], want[65536];
	size_t off = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		pattern(want, (size_t)r, off);
		if (memcmp(buf, want, (size_t)r) != 0) {
			fprintf(stderr, "mt_writer: %s: bad data near %zu\n", path, off);
			close(fd);
			return -1;
		}
		off += (size_t)r;
	}
	close(fd);
	if (off != expect) {
		fprintf(stderr, "mt_writer: %s: %zu bytes, expected %zu\n", path, off, expect);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 't', OPT_INT, .p = &nthreads },
		{ 'n', OPT_INT, .p = &count },
		{ 's', OPT_SIZE, .p = &size },
		{ 'm', OPT_STR, .p = &method },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		goto usage;
	if (!dir || nthreads < 1 || nthreads > MAX_THREADS || count < 0 || !size ||
	    (strcmp(method, "fsync") && strcmp(method, "fdatasync") && strcmp(method, "none"))) {
usage:
		fprintf(stderr, "usage: mt_writer -d DIR [-t THREADS] [-n COUNT] [-s SIZE] [-m fsync|fdatasync|none]\n");
		return 2;
	}
	char spath[4096];
	snprintf(spath, sizeof(spath), "%s/shared", dir);
	shared_fd = open(spath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (shared_fd < 0) {
		perror(spath);
		return 1;
	}
	pthread_t t[MAX_THREADS];
	for (int k = 0; k < nthreads; k++)
		if (pthread_create(&t[k], NULL, worker, (void *)(long)k) != 0) {
			fprintf(stderr, "mt_writer: pthread_create failed\n");
			return 1;
		}
	for (int k = 0; k < nthreads; k++)
		pthread_join(t[k], NULL);
	if (close(shared_fd) != 0)
		fail("close shared", -1);
	if (atomic_load(&failed))
		return 1;
	int bad = verify(spath, (size_t)nthreads * count * size) != 0;
	for (int k = 0; k < nthreads; k++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/own.%d", dir, k);
		bad |= verify(path, (size_t)count * size) != 0;
	}
	if (bad)
		return 1;
	printf("mt_writer: ok threads=%d count=%d syncs=%d\n", nthreads, count, atomic_load(&syncs));
	return 0;
}
