/*
 * group_close - under group commit, a thread whose descriptor another
 * thread closes must not hand an error to the threads that share its sync
 * with descriptors of their own.
 *
 *   group_close -f FILE [-t HEALTHY] [-T MILLIS]
 *
 * HEALTHY threads (default 4) each open FILE themselves and loop: pwrite
 * a 512-byte record at their own offsets, fsync. A victim thread loops on
 * fsync of a shared descriptor V, while a closer thread loops: close(V),
 * open FILE again as V. For MILLIS ms (default 1500).
 * Prints per kind of thread how many fsyncs returned which errno:
 * "healthy ok=N EIO=N EBADF=N other=N" and "victim ok=... ", then
 * "group_close: done". Nothing is judged here.
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

enum { OK, E_IO, E_BADF, E_OTHER, NKINDS };

static const char *file;
static _Atomic int stop;
static _Atomic int shared_fd = -1;
static _Atomic long healthy[NKINDS], victim[NKINDS];

static void count(_Atomic long *c, int r, int e)
{
	atomic_fetch_add(&c[r == 0 ? OK : e == EIO ? E_IO : e == EBADF ? E_BADF : E_OTHER], 1);
}

static void *healthy_main(void *arg)
{
	long t = (long)arg;
	char buf[512];
	int fd = open(file, O_WRONLY);
	for (long i = 0; !atomic_load(&stop) && fd >= 0; i++) {
		long long off = (t * 1000000LL + i % 1000) * 512;
		pattern(buf, sizeof(buf), (unsigned long long)off);
		if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
			break;
		int r = fsync(fd);
		count(healthy, r, errno);
	}
	close(fd);
	return NULL;
}

static void *victim_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int r = fsync(atomic_load(&shared_fd));
		count(victim, r, errno);
	}
	return NULL;
}

static void *closer_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		close(atomic_load(&shared_fd));
		atomic_store(&shared_fd, open(file, O_WRONLY));
	}
	return NULL;
}

static void print(const char *who, _Atomic long *c)
{
	printf("%s ok=%ld EIO=%ld EBADF=%ld other=%ld\n", who, atomic_load(&c[OK]), atomic_load(&c[E_IO]),
	       atomic_load(&c[E_BADF]), atomic_load(&c[E_OTHER]));
}

int main(int argc, char **argv)
{
	int nhealthy = 4, millis = 1500;
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 't', OPT_INT, .p = &nhealthy },
		{ 'T', OPT_INT, .p = &millis },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	if (!file)
		return 2;
	atomic_store(&shared_fd, open(file, O_WRONLY | O_CREAT, 0644));
	pthread_t th[34];
	nhealthy = nhealthy > 32 ? 32 : nhealthy;
	for (long i = 0; i < nhealthy; i++)
		pthread_create(&th[i], NULL, healthy_main, (void *)i);
	pthread_create(&th[nhealthy], NULL, victim_main, NULL);
	pthread_create(&th[nhealthy + 1], NULL, closer_main, NULL);
	uint64_t end = now_ns() + (uint64_t)millis * 1000000ull;
	while (now_ns() < end)
		usleep(10000);
	atomic_store(&stop, 1);
	for (int i = 0; i < nhealthy + 2; i++)
		pthread_join(th[i], NULL);
	print("healthy", healthy);
	print("victim", victim);
	printf("group_close: done\n");
	return 0;
}
