/*
 * recycle - another thread closes the last descriptor of a file while a
 * thread is inside a group-commit fsync of it, then opens new files: the
 * file's state must not be recycled under the syncing thread, and the new
 * files' syncs must really happen.
 *
 *   recycle -d DIR
 *
 * Thread A: fsync(fd) on DIR/a.dat after a write (the test makes that
 * sync slow). Main: once A is inside the shim's sync (A's SIGUSR1 handler,
 * raised by the shim's "lead" test point, posts a semaphore; without test
 * points main waits up to 100 ms for it), closes fd, then opens
 * DIR/n.K.dat for K < 4 and writes 4 KiB to each; once A's fsync has
 * returned, fsyncs each (a recycled file state that A's finishing sync
 * marked "done" would make these return without a real sync).
 * Prints "recycle: a=R new=ok" (R: A's fsync result); exit 1 when a call
 * of main failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static const char *dir = ".";
static sem_t inside;
static int afd;
static int a_result = 99;

static void on_usr1(int sig)
{
	(void)sig;
	sem_post(&inside);
}

static void *thread_a(void *arg)
{
	(void)arg;
	char buf[4096];
	pattern(buf, sizeof(buf), 0);
	if (write(afd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		a_result = fsync(afd) == 0 ? 0 : errno;
	return NULL;
}

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	sem_init(&inside, 0, 0);
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/a.dat", dir);
	afd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pthread_t a;
	pthread_create(&a, NULL, thread_a, NULL);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (sem_timedwait(&inside, &ts) != 0 && errno == EINTR)
		;
	close(afd);
	int bad = 0, fds[4];
	for (int k = 0; k < 4; k++) {
		snprintf(path, sizeof(path), "%s/n.%d.dat", dir, k);
		fds[k] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		pattern(buf, sizeof(buf), 0);
		if (fds[k] < 0 || write(fds[k], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			bad = 1;
	}
	pthread_join(a, NULL);
	for (int k = 0; k < 4; k++)
		if (fsync(fds[k]) != 0 || close(fds[k]) != 0)
			bad = 1;
	printf("recycle: a=%d new=%s\n", a_result, bad ? "FAILED" : "ok");
	return bad;
}
