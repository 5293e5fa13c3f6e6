/*
 * sig_sync - signal handlers that write and sync while their thread is
 * inside the shim: the shim must never wait for itself, and every byte
 * must land.
 *
 *   sig_sync -d DIR [-n ITERS] [-t THREADS] [-i MICROS]
 *
 * The handler (SIGUSR1, and SIGALRM for the timer) appends a 16-byte
 * record to DIR/h.dat and fsyncs it, fsyncs DIR/d.dat (the file the
 * threads sync), and every 8th run opens, writes, fsyncs and closes
 * DIR/h2.dat. Who raises the signal:
 *   - the shim itself, at its test points (SYNCSHIM_TEST_SIGNAL_AT=all):
 *     inside its allocator, registry, regions and flusher locks, while
 *     leading a real sync, in the write path;
 *   - with -i, a timer per thread, every MICROS us, aimed at that thread
 *     (for shims without test points: under group a thread is leading a
 *     real sync most of the time, so its timer lands inside one).
 * THREADS threads (default 2) each run ITERS iterations (default 40):
 * append a record to d.dat through their own descriptor + fsync; open a
 * new file DIR/t.T.K.dat, write it, map it shared, msync, munmap, rename
 * it to DIR/r.T.K.dat, close.
 * Prints "sig_sync: ok handler=H" and checks every file's contents; exit
 * 1 on any failed call or wrong data.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define REC 16

static const char *dir = ".";
static int hfd = -1, dfd = -1;
static char h2path[PATH_MAX];
static _Atomic long handler_runs, handler_errors, failures, d_next;

static void failed(const char *what)
{
	fprintf(stderr, "sig_sync: %s: %s\n", what, strerror(errno));
	atomic_fetch_add(&failures, 1);
}

static void on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	long n = atomic_fetch_add(&handler_runs, 1);
	char rec[REC];
	pattern(rec, REC, (unsigned long long)n * REC);
	if (pwrite(hfd, rec, REC, n * REC) != REC || fsync(hfd) != 0 || fsync(dfd) != 0)
		atomic_fetch_add(&handler_errors, 1);
	if (n % 8 == 0) {
		int fd = open(h2path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd < 0 || write(fd, rec, REC) != REC || fsync(fd) != 0 || close(fd) != 0)
			atomic_fetch_add(&handler_errors, 1);
	}
	errno = saved;
}


static void churn_one(long t, int k)
{
	char path[PATH_MAX], to[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/t.%ld.%d.dat", dir, t, k);
	snprintf(to, sizeof(to), "%s/r.%ld.%d.dat", dir, t, k);
	pattern(buf, sizeof(buf), 0);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return failed("write t");
	char *m = mmap(NULL, sizeof(buf), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return failed("mmap");
	m[0] = buf[0];
	if (msync(m, sizeof(buf), MS_SYNC) != 0 || munmap(m, sizeof(buf)) != 0)
		failed("msync");
	if (rename(path, to) != 0 || close(fd) != 0)
		failed("rename/close");
}

static int micros;

/* SIGALRM every micros us, to this thread only. */
static timer_t thread_timer(void)
{
	timer_t tm = 0;
	if (micros <= 0)
		return tm;
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM };
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	struct itimerspec it = { { 0, micros * 1000L }, { 0, micros * 1000L } };
	if (timer_create(CLOCK_MONOTONIC, &ev, &tm) != 0 || timer_settime(tm, 0, &it, NULL) != 0)
		failed("timer");
	return tm;
}

static void *run(void *arg)
{
	long t = (long)arg;
	timer_t tm = thread_timer();
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/d.dat", dir);
	int fd = open(path, O_WRONLY);
	for (int k = 0; k < atoi(getenv("SIG_SYNC_N")); k++) {
		char rec[REC];
		long n = atomic_fetch_add(&d_next, 1);
		pattern(rec, REC, (unsigned long long)n * REC);
		if (fd < 0 || pwrite(fd, rec, REC, n * REC) != REC || fsync(fd) != 0)
			failed("write d");
		churn_one(t, k);
	}
	if (micros > 0)
		timer_delete(tm);
	close(fd);
	return NULL;
}

static int check(const char *name, long records)
{
	char path[PATH_MAX], buf[REC], want[REC];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size != records * REC) {
		fprintf(stderr, "sig_sync: %s: want %ld records\n", name, records);
		return 1;
	}
	for (long i = 0; i < records; i++) {
		pattern(want, REC, (unsigned long long)i * REC);
		if (pread(fd, buf, REC, i * REC) != REC || memcmp(buf, want, REC)) {
			fprintf(stderr, "sig_sync: %s: record %ld wrong\n", name, i);
			return 1;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	int threads = 2;
	const char *n_arg = "40";
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_STR, .p = &n_arg },
		{ 't', OPT_INT, .p = &threads },
		{ 'i', OPT_INT, .p = &micros },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	char n[16];
	snprintf(n, sizeof(n), "%s", n_arg);
	setenv("SIG_SYNC_N", n, 1);
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigset_t both, old;
	sigemptyset(&both);
	sigaddset(&both, SIGUSR1);
	sigaddset(&both, SIGALRM);
	sigprocmask(SIG_BLOCK, &both, &old); /* until the handler's files are open */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/h.dat", dir);
	hfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	snprintf(path, sizeof(path), "%s/d.dat", dir);
	dfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	snprintf(h2path, sizeof(h2path), "%s/h2.dat", dir);
	if (hfd < 0 || dfd < 0)
		return 1;
	sigprocmask(SIG_SETMASK, &old, NULL);
	pthread_t th[16];
	threads = threads > 16 ? 16 : threads;
	for (long t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, run, (void *)t);
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	signal(SIGUSR1, SIG_IGN); /* no handler may add a record while we count them */
	signal(SIGALRM, SIG_IGN);
	int bad = check("h.dat", atomic_load(&handler_runs)) | check("d.dat", atomic_load(&d_next));
	printf("sig_sync: %s handler=%ld errors=%ld failures=%ld\n", bad ? "FAILED" : "ok",
	       atomic_load(&handler_runs), atomic_load(&handler_errors), atomic_load(&failures));
	return bad || failures || handler_errors ? 1 : 0;
}
