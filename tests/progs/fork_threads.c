/*
 * fork_threads - fork from the main thread while other threads open,
 * write, sync and close files: the shim must never deadlock a forking
 * host (its locks and its private allocator's are taken in one order
 * around fork).
 *
 *   fork_threads -d DIR [-t THREADS] [-f FORKS]
 *
 * THREADS threads (default 4) loop: open DIR/t.N.K.dat (a new name every
 * iteration, so the shim meets a new file and allocates), write 512
 * bytes, fsync, close. Meanwhile the main thread forks FORKS times
 * (default 20); each child opens and writes a file of its own, fsyncs it
 * and leaves with exit() or _exit() (alternating). The threads stop once
 * every child is reaped.
 * Output "fork_threads: ok forks=F opens=N"; exit 1 on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static const char *dir = ".";
static _Atomic int stop;
static _Atomic long opens, failures;

static void *churn(void *arg)
{
	long t = (long)arg;
	char path[PATH_MAX], buf[512];
	pattern(buf, sizeof(buf), 0);
	for (long k = 0; !atomic_load(&stop); k++) {
		snprintf(path, sizeof(path), "%s/t.%ld.%ld.dat", dir, t, k % 64);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0 ||
		    close(fd) != 0) {
			fprintf(stderr, "fork_threads: thread %ld: %s\n", t, strerror(errno));
			atomic_fetch_add(&failures, 1);
			return NULL;
		}
		atomic_fetch_add(&opens, 1);
	}
	return NULL;
}

static void child(int n)
{
	char path[PATH_MAX], buf[512];
	pattern(buf, sizeof(buf), 0);
	snprintf(path, sizeof(path), "%s/child.%d.dat", dir, n);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) && fsync(fd) == 0;
	if (n % 2)
		_exit(ok ? 0 : 1);
	exit(ok ? 0 : 1);
}

int main(int argc, char **argv)
{
	int threads = 4, forks = 20;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 't', OPT_INT, .p = &threads },
		{ 'f', OPT_INT, .p = &forks },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	pthread_t th[64];
	if (threads > 64)
		threads = 64;
	for (long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, churn, (void *)i);
	int bad = 0;
	for (int n = 0; n < forks; n++) {
		pid_t pid = fork();
		if (pid == 0)
			child(n);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("fork_threads: %s forks=%d opens=%ld bad=%d\n", bad || failures ? "FAILED" : "ok", forks,
	       atomic_load(&opens), bad);
	return bad || failures ? 1 : 0;
}
