/*
 * defer_exit - a process whose every call succeeded and that exits while
 * the shim still owes syncs: if those fail, the shim must say so.
 *
 *   defer_exit -d DIR -m main|exit|_exit|close|threads [-t THREADS]
 *
 * Each writer appends 8 records of 4 KiB to its own file DIR/x.N.dat, an
 * fsync after each (deferred, so each returns 0 at once), and then:
 *   main     returns from main       exit     calls exit(0)
 *   _exit    calls _exit(0)          close    closes the file, then returns
 *   threads  THREADS threads (default 4) write their files concurrently;
 *            main joins them and returns.
 * Prints "defer_exit: calls ok" when every call the app made returned
 * success (it cannot know about the deferred ones); exit status 0 then,
 * 1 when one of its own calls failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

static const char *dir = ".";
static _Atomic int failures;

static int write_file(long n, bool close_it)
{
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/x.%ld.dat", dir, n);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	for (int i = 0; i < 8; i++) {
		pattern(buf, sizeof(buf), (unsigned long long)i * sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0)
			return -1;
	}
	return close_it ? close(fd) : 0;
}

static void *writer(void *arg)
{
	if (write_file((long)arg, false) < 0)
		atomic_fetch_add(&failures, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = "main";
	int threads = 4;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'm', OPT_STR, .p = &mode },
		{ 't', OPT_INT, .p = &threads },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	if (!strcmp(mode, "threads")) {
		pthread_t th[64];
		threads = threads > 64 ? 64 : threads;
		for (long i = 0; i < threads; i++)
			pthread_create(&th[i], NULL, writer, (void *)i);
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	} else if (write_file(0, !strcmp(mode, "close")) < 0) {
		atomic_fetch_add(&failures, 1);
	}
	printf("defer_exit: %s\n", failures ? "a call failed" : "calls ok");
	fflush(stdout);
	if (!strcmp(mode, "exit"))
		exit(failures ? 1 : 0);
	if (!strcmp(mode, "_exit"))
		_exit(failures ? 1 : 0);
	return failures ? 1 : 0;
}
