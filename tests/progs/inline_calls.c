/*
 * inline_calls - a program that makes its system calls with its own
 * `syscall` instruction, as fio does for its rings, for the tests of
 * `inline_syscalls = trap` (shim/calls/inline_trap.c).
 *
 *   inline_calls MODE FILE [N]
 *
 * Every mode appends N (default 8) 4 KiB records to FILE, each followed by
 * an inline fsync, and checks each call's result itself; it exits 0 when
 * everything returned what the kernel promises. The modes add the shapes
 * that would break a trap:
 *   plain     the main thread
 *   thread    a thread pthread_create started
 *   fork      a forked child
 *   masked    with every signal blocked through libc's sigprocmask first
 *   inmask    with every signal blocked by an inline rt_sigprocmask, which
 *             must still be in force afterwards (SIGUSR1 blocked)
 *   sigsys    the program's own SIGSYS handler, which must get a raised
 *             SIGSYS once
 *   badfd     an inline fsync of a closed number: -EBADF, errno untouched
 *   cost      (a benchmark, FILE unused) N inline getppid calls, printing
 *             the nanoseconds one takes, wall and the thread's CPU time:
 *             what one trapped call costs
 *   cost-sud-empty, cost-sud-libc
 *             the same loop under a syscall user dispatch of the program's
 *             own (Linux 6.16's inclusive mode on its text, no shim): the
 *             SIGSYS handler only sets the result (the signal's delivery
 *             and return alone), or makes the call through libc's
 *             syscall() (delivery and the call): what the shim's own
 *             handler adds is the shim's trap minus the latter
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static long inline_call(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
#else
	long r = syscall(nr, a, b, c, d);
	return r < 0 ? -errno : r;
#endif
}

static const char *file;
static int count = 8;

static void die(const char *what, long r)
{
	fprintf(stderr, "inline_calls: %s: %s\n", what, strerror((int)-r));
	exit(1);
}

static void *appends(void *unused)
{
	(void)unused;
	static char rec[4096];
	memset(rec, 'r', sizeof(rec));
	long fd = inline_call(SYS_openat, AT_FDCWD, (long)file, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		die("open", fd);
	for (int i = 0; i < count; i++) {
		long r = inline_call(SYS_write, fd, (long)rec, sizeof(rec), 0);
		if (r != (long)sizeof(rec))
			die("write", r < 0 ? r : -EIO);
		r = inline_call(SYS_fsync, fd, 0, 0, 0);
		if (r != 0)
			die("fsync", r);
	}
	long r = inline_call(SYS_close, fd, 0, 0, 0);
	if (r != 0)
		die("close", r);
	return NULL;
}

static volatile sig_atomic_t sigsys_seen;
static void on_sigsys(int sig)
{
	(void)sig;
	sigsys_seen++;
}

static double ns_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

/* N inline getppid calls: wall and this thread's CPU time per call. */
static void cost_loop(void)
{
	struct timespec a, b, ca, cb;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < count; i++)
		inline_call(SYS_getppid, 0, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
	double n = count > 0 ? count : 1;
	printf("result: calls=%d ns_per_call=%.1f cpu_ns_per_call=%.1f\n", count, ns_between(&a, &b) / n,
	       ns_between(&ca, &cb) / n);
}

#if defined(__x86_64__)
extern char __executable_start[], etext[]; /* this program's text, from the linker */
static bool dispatch_makes_call;

static void on_dispatch(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	greg_t *g = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	int saved = errno;
	long r = 0;
	if (dispatch_makes_call) { /* libc's text is outside the range: not trapped again */
		r = syscall(si->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
		if (r == -1)
			r = -errno;
	}
	g[REG_RAX] = r;
	errno = saved;
}

static int cost_own_dispatch(bool make_call)
{
	dispatch_makes_call = make_call;
	struct sigaction sa = { .sa_sigaction = on_dispatch, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) != 0 ||
	    prctl(59 /* PR_SET_SYSCALL_USER_DISPATCH */, 2 /* PR_SYS_DISPATCH_INCLUSIVE_ON */,
		  (unsigned long)__executable_start, (unsigned long)(etext - __executable_start), 0) != 0) {
		fprintf(stderr, "inline_calls: no inclusive syscall user dispatch here: %s\n", strerror(errno));
		printf("result: failed=1\n");
		return 1;
	}
	cost_loop();
	prctl(59, 0 /* PR_SYS_DISPATCH_OFF */, 0, 0, 0);
	return 0;
}
#else
static int cost_own_dispatch(bool make_call)
{
	(void)make_call;
	printf("result: failed=1\n");
	return 1;
}
#endif

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: inline_calls MODE FILE [N]\n");
		return 2;
	}
	const char *mode = argv[1];
	file = argv[2];
	if (argc > 3)
		count = atoi(argv[3]);

	if (strcmp(mode, "plain") == 0) {
		appends(NULL);
	} else if (strcmp(mode, "thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, appends, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
	} else if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			appends(NULL);
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
	} else if (strcmp(mode, "masked") == 0) {
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		appends(NULL);
	} else if (strcmp(mode, "inmask") == 0) {
		sigset_t all, now;
		sigfillset(&all);
		long r = inline_call(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, 0, _NSIG / 8);
		if (r != 0)
			die("rt_sigprocmask", r);
		appends(NULL);
		sigprocmask(SIG_SETMASK, NULL, &now);
		if (!sigismember(&now, SIGUSR1)) {
			fprintf(stderr, "inline_calls: the inline mask did not stay\n");
			return 1;
		}
	} else if (strcmp(mode, "sigsys") == 0) {
		struct sigaction sa = { .sa_handler = on_sigsys };
		sigaction(SIGSYS, &sa, NULL);
		appends(NULL);
		raise(SIGSYS);
		if (sigsys_seen != 1) {
			fprintf(stderr, "inline_calls: own SIGSYS handler ran %d times\n", (int)sigsys_seen);
			return 1;
		}
	} else if (strcmp(mode, "cost") == 0) {
		cost_loop();
	} else if (strcmp(mode, "cost-sud-empty") == 0 || strcmp(mode, "cost-sud-libc") == 0) {
		return cost_own_dispatch(strcmp(mode, "cost-sud-libc") == 0);
	} else if (strcmp(mode, "badfd") == 0) {
		errno = 1234;
		long r = inline_call(SYS_fsync, 999, 0, 0, 0);
		if (r != -EBADF || errno != 1234) {
			fprintf(stderr, "inline_calls: fsync(999) = %ld, errno %d\n", r, errno);
			return 1;
		}
		appends(NULL);
	} else {
		fprintf(stderr, "inline_calls: unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
