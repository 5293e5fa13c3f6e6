/*
 * all_at_once - writers that sync, while everything a careless host does
 * happens around them (tests/system/test_all_at_once.c checks the outcome).
 *
 *   all_at_once -d DIR -T MILLIS [-t WRITERS] [-a ACKS] [-F] [-V] [-G] [-X] [-N]
 *
 * Writers (default 4): writer T owns DIR/w.T.dat and one descriptor of it
 * that nothing else touches. It pwrites 512-byte records of the pattern of
 * tests/harness/harness.c at offsets 0, 512, ... and after each one calls fsync or
 * fdatasync (alternating). A sync that returns 0 is an acknowledgement:
 * "the record, and all before it, are durable"; ACKS gets one line per ack,
 * "ino=I rec=K tw=NS tr=NS" (tw: the write returned, tr: the sync returned,
 * CLOCK_MONOTONIC). A failed call is counted by errno. A failed or short
 * write ends that writer (ENOSPC, EIO: the device is going away).
 * Around them, each optional:
 *   -F  two threads fork children: each writes DIR/c.N.dat (4 records, an
 *       fsync after each) and leaves through exit() or _exit().
 *   -V  a thread vforks children that close every descriptor above 2 and
 *       exec /bin/true.
 *   -G  every writer gets a timer aimed at it, 3 ms after its handler last
 *       returned (one-shot, re-armed by the handler: a periodic one faster
 *       than a real sync on a slow device keeps the thread inside handlers
 *       for good, shim or no shim, and a handler's sync is real whenever it
 *       interrupts a section of the shim's); the handler appends a
 *       record to DIR/h.T.dat and fsyncs it.
 *   -X  a thread tears descriptors 50 to 899 (where the shim keeps its own):
 *       close_range, raw close(2), dup2 over them, close() loops, and
 *       reopens scratch files DIR/s.K.dat there, writing and syncing them.
 *       Not above: the recording layer the test puts beneath the shim keeps
 *       its log at 900 (closefrom is tried by test_shim_fds's closeall).
 *   -N  a thread fills the descriptor table to 16 short of RLIMIT_NOFILE,
 *       then gives back half, over and over.
 * After MILLIS ms everything stops and is joined. Prints, per writer,
 * "writer T ino=I records=R acks=A errors=E eio=X enospc=Y last_tw=NS",
 * then "handler T records=R" (-G), "children forked=N failed=F" (-F),
 * "vforks=N failed=F" (-V), and "all_at_once: done". Exit 0 unless the
 * program itself broke (a call that must not fail did).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

#define REC 512
#define MAX_WRITERS 16
#define HIGH 50
#define TOP 899 /* the recording layer's log is above */

struct writer {
	pthread_t th;
	int idx, fd, hfd;
	unsigned long ino;
	long records, acks, errors, eio, enospc;
	uint64_t last_tw;
	_Atomic long hrecords;
	int acks_fd; /* write(2), not stdio: a forked child's exit() would flush a copy */
	timer_t timer;
	volatile sig_atomic_t timer_on; /* the handler re-arms it (both run in the writer's thread) */
};

static const char *dir = ".";
static struct writer writers[MAX_WRITERS];
static int nwriters = 4;
static _Atomic int stop;
static _Atomic long forked, fork_failed, vforks, vfork_failed, broken;
static pthread_mutex_t ack_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct writer *me;

static void broke(const char *what)
{
	fprintf(stderr, "all_at_once: %s: %s\n", what, strerror(errno));
	atomic_fetch_add(&broken, 1);
}

static char *path_of(char *buf, const char *name, long n)
{
	snprintf(buf, PATH_MAX, "%s/%s.%ld.dat", dir, name, n);
	return buf;
}

/* ---- writers ------------------------------------------------------------- */

static const struct itimerspec next_tick = { { 0, 0 }, { 0, 3000000 } };

static void on_timer(int sig)
{
	(void)sig;
	int saved = errno;
	struct writer *w = me;
	if (w && w->hfd >= 0) {
		long k = atomic_fetch_add(&w->hrecords, 1);
		char rec[REC];
		pattern(rec, REC, (unsigned long long)k * REC);
		if (pwrite(w->hfd, rec, REC, k * REC) != REC)
			atomic_fetch_sub(&w->hrecords, 1);
		fsync(w->hfd);
	}
	if (w && w->timer_on)
		timer_settime(w->timer, 0, &next_tick, NULL);
	errno = saved;
}

static void count_error(struct writer *w, int e)
{
	w->errors++;
	w->eio += e == EIO;
	w->enospc += e == ENOSPC;
}

static void ack(struct writer *w, long k, uint64_t tw, uint64_t tr)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "ino=%lu rec=%ld tw=%llu tr=%llu\n", w->ino, k,
			 (unsigned long long)tw, (unsigned long long)tr);
	pthread_mutex_lock(&ack_mu);
	if (w->acks_fd >= 0 && write(w->acks_fd, line, (size_t)n) != n)
		broke("ack");
	pthread_mutex_unlock(&ack_mu);
	w->acks++;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	me = w;
	char rec[REC];
	for (long k = 0; !atomic_load(&stop); k++) {
		pattern(rec, REC, (unsigned long long)k * REC);
		ssize_t n = pwrite(w->fd, rec, REC, k * REC);
		uint64_t tw = now_ns();
		if (n != REC) {
			count_error(w, n < 0 ? errno : ENOSPC);
			break;
		}
		w->records = k + 1;
		w->last_tw = tw;
		if ((k % 2 ? fdatasync(w->fd) : fsync(w->fd)) == 0)
			ack(w, k, tw, now_ns());
		else
			count_error(w, errno);
	}
	return NULL;
}

static void writer_timer(struct writer *w)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1 };
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &ev, &w->timer) != 0)
		broke("timer");
	w->timer_on = true;
	if (timer_settime(w->timer, 0, &next_tick, NULL) != 0)
		broke("timer");
}

static void *writer_with_timer(void *arg)
{
	struct writer *w = arg;
	me = w;
	writer_timer(w);
	writer_main(w);
	w->timer_on = false;
	timer_delete(w->timer);
	return NULL;
}

/* ---- fork and vfork -------------------------------------------------------- */

static void child_body(long n)
{
	char path[PATH_MAX], rec[REC];
	int fd = open(path_of(path, "c", n), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = fd >= 0;
	for (int i = 0; ok && i < 4; i++) {
		pattern(rec, REC, (unsigned long long)i * REC);
		ok = write(fd, rec, REC) == REC && fsync(fd) == 0;
	}
	if (n % 2)
		_exit(ok ? 0 : 1);
	exit(ok ? 0 : 1);
}

static void *forker_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		long n = atomic_fetch_add(&forked, 1);
		pid_t pid = fork();
		if (pid == 0)
			child_body(n);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			atomic_fetch_add(&fork_failed, 1);
	}
	return NULL;
}

static void *vforker_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		atomic_fetch_add(&vforks, 1);
		pid_t pid = vfork();
		if (pid == 0) {
			close_range(3, ~0u, 0);
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			atomic_fetch_add(&vfork_failed, 1);
	}
	return NULL;
}

/* ---- descriptors torn behind everyone's back ------------------------------ */

static int scratch_open(long k)
{
	char path[PATH_MAX];
	int fd = open(path_of(path, "s", k % 8), O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return -1;
	int high = fcntl(fd, F_DUPFD, HIGH + (int)(k % 80));
	close(fd);
	return high;
}

static void scratch_use(int fd)
{
	char rec[REC];
	pattern(rec, REC, 0);
	if (pwrite(fd, rec, REC, 0) == REC)
		fsync(fd);
}

static void tear(long round)
{
	switch (round % 5) {
	case 0:
		close_range(HIGH, TOP, 0);
		break;
	case 1:
		close_range(HIGH + 40, TOP, 0);
		break;
	case 2:
		for (int fd = HIGH; fd < HIGH + 90; fd++)
			syscall(SYS_close, fd);
		break;
	case 3: {
		int nul = open("/dev/null", O_WRONLY);
		for (int fd = HIGH; fd < HIGH + 90 && nul >= 0; fd++)
			if (fd != nul)
				dup2(nul, fd);
		close(nul);
		break;
	}
	default:
		for (int fd = HIGH; fd < HIGH + 90; fd++)
			close(fd);
	}
}

static void *tearer_main(void *arg)
{
	(void)arg;
	for (long round = 0; !atomic_load(&stop); round++) {
		for (long k = 0; k < 8; k++) {
			int fd = scratch_open(round * 8 + k);
			if (fd >= 0)
				scratch_use(fd);
		}
		tear(round);
	}
	return NULL;
}

/* ---- the descriptor limit ------------------------------------------------ */

static void *squeezer_main(void *arg)
{
	(void)arg;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	int held[4096], n = 0;
	int want = (int)(rl.rlim_cur < 4096 ? rl.rlim_cur : 4096) - 16;
	while (!atomic_load(&stop)) {
		while (n < want) {
			int fd = open("/dev/null", O_RDONLY);
			if (fd < 0)
				break;
			held[n++] = fd;
		}
		while (n > want / 2)
			close(held[--n]);
		struct timespec ts = { 0, 20000000 }; /* pressure, not a flood of opens */
		nanosleep(&ts, NULL);
	}
	while (n > 0)
		close(held[--n]);
	return NULL;
}

/* ---- main ------------------------------------------------------------------- */

static void open_writer(struct writer *w, int t, int acks, bool handler)
{
	char path[PATH_MAX];
	struct stat st;
	w->idx = t;
	w->acks_fd = acks;
	w->fd = open(path_of(path, "w", t), O_RDWR | O_CREAT | O_TRUNC, 0644);
	w->hfd = handler ? open(path_of(path, "h", t), O_RDWR | O_CREAT | O_TRUNC, 0644) : -1;
	if (w->fd < 0 || fstat(w->fd, &st) != 0)
		broke("open writer file");
	w->ino = (unsigned long)st.st_ino;
}

static void report(bool handlers, bool forks, bool vfk)
{
	for (int t = 0; t < nwriters; t++) {
		struct writer *w = &writers[t];
		printf("writer %d ino=%lu records=%ld acks=%ld errors=%ld eio=%ld enospc=%ld last_tw=%llu\n", t,
		       w->ino, w->records, w->acks, w->errors, w->eio, w->enospc,
		       (unsigned long long)w->last_tw);
		if (handlers)
			printf("handler %d records=%ld\n", t, atomic_load(&w->hrecords));
	}
	if (forks)
		printf("children forked=%ld failed=%ld\n", atomic_load(&forked), atomic_load(&fork_failed));
	if (vfk)
		printf("vforks=%ld failed=%ld\n", atomic_load(&vforks), atomic_load(&vfork_failed));
	printf("all_at_once: done\n");
}

int main(int argc, char **argv)
{
	long millis = 2000;
	int F = 0, V = 0, G = 0, X = 0, N = 0;
	const char *acks_path = NULL;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'T', OPT_LONG, .p = &millis },
		{ 't', OPT_INT, .p = &nwriters },
		{ 'a', OPT_STR, .p = &acks_path },
		{ 'F', OPT_FLAG, .p = &F },
		{ 'V', OPT_FLAG, .p = &V },
		{ 'G', OPT_FLAG, .p = &G },
		{ 'X', OPT_FLAG, .p = &X },
		{ 'N', OPT_FLAG, .p = &N },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	if (nwriters > MAX_WRITERS)
		nwriters = MAX_WRITERS;
	struct sigaction sa = { .sa_handler = on_timer, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	int acks = acks_path ? open(acks_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644) : -1;
	for (int t = 0; t < nwriters; t++)
		open_writer(&writers[t], t, acks, G);
	pthread_t extra[6];
	int nextra = 0;
	for (int t = 0; t < nwriters; t++)
		pthread_create(&writers[t].th, NULL, G ? writer_with_timer : writer_main, &writers[t]);
	if (F) {
		pthread_create(&extra[nextra++], NULL, forker_main, NULL);
		pthread_create(&extra[nextra++], NULL, forker_main, NULL);
	}
	if (V)
		pthread_create(&extra[nextra++], NULL, vforker_main, NULL);
	if (X)
		pthread_create(&extra[nextra++], NULL, tearer_main, NULL);
	if (N)
		pthread_create(&extra[nextra++], NULL, squeezer_main, NULL);
	uint64_t end = now_ns() + (uint64_t)millis * 1000000ull;
	while (now_ns() < end) {
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < nwriters; t++)
		pthread_join(writers[t].th, NULL);
	for (int i = 0; i < nextra; i++)
		pthread_join(extra[i], NULL);
	signal(SIGUSR1, SIG_IGN);
	if (acks >= 0)
		close(acks);
	report(G, F, V);
	return atomic_load(&broken) ? 1 : 0;
}
