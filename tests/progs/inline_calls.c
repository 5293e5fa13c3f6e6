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
 * and the ways a program blocks or ignores SIGSYS (each killed its host,
 * exit 159, before the shim met it):
 *   attrmask      a thread started with every signal blocked
 *                 (pthread_attr_setsigmask_np)
 *   signal_ign, sysv_signal_ign, sigignore, raw_sigaction_ign,
 *   inline_sigaction_ign   SIGSYS ignored through signal(),
 *                 sysv_signal(), sigignore(), syscall(SYS_rt_sigaction)
 *                 and an inline rt_sigaction; a raised SIGSYS is then
 *                 ignored, and the disposition reads back as SIG_IGN
 *   sigset_hold, sighold, sigblock, sigsetmask, raw_sigmask
 *                 SIGSYS blocked through sigset(SIG_HOLD), sighold(),
 *                 sigblock(), sigsetmask() and
 *                 syscall(SYS_rt_sigprocmask)
 *   handler_mask, raw_handler_mask   the appends made by a SIGUSR1
 *                 handler whose sa_mask holds every signal (sigaction,
 *                 an inline rt_sigaction)
 *   sigsuspend, ppoll, pselect, epoll_pwait, epoll_pwait2   the appends
 *                 made by a SIGUSR1 handler run while the call waits with
 *                 every other signal blocked
 *   swapcontext   the appends made in a context whose mask holds every
 *                 signal
 *   signalfd      every signal blocked, SIGUSR1 read from a signalfd
 *   execmask      (not trapped itself) execs "plain" with SIGSYS
 *                 blocked and ignored
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
#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/signalfd.h>
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

/* rt_sigaction's struct on x86_64. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static void on_usr1_appends(int sig)
{
	(void)sig;
	appends(NULL);
}

static void full_mask_but(sigset_t *set, int but)
{
	sigfillset(set);
	if (but)
		sigdelset(set, but);
}

/* SIGUSR1's handler appends; SIGUSR1 is blocked and made pending; then
 * the mode's wait runs with every other signal blocked. */
static int wait_mode(const char *mode)
{
	struct sigaction sa = { .sa_handler = on_usr1_appends };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t usr1, wait;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	raise(SIGUSR1);
	full_mask_but(&wait, SIGUSR1);
	int r = -1;
	if (strcmp(mode, "sigsuspend") == 0) {
		r = sigsuspend(&wait);
	} else if (strcmp(mode, "ppoll") == 0) {
		r = ppoll(NULL, 0, NULL, &wait);
	} else if (strcmp(mode, "pselect") == 0) {
		r = pselect(0, NULL, NULL, NULL, NULL, &wait);
	} else {
		int ep = epoll_create1(0);
		struct epoll_event ev;
		r = strcmp(mode, "epoll_pwait") == 0 ? epoll_pwait(ep, &ev, 1, -1, &wait)
						     : epoll_pwait2(ep, &ev, 1, NULL, &wait);
	}
	if (r != -1 || errno != EINTR) {
		fprintf(stderr, "inline_calls: %s returned %d (%s), want EINTR\n", mode, r, strerror(errno));
		return 1;
	}
	return 0;
}

static ucontext_t main_ctx, masked_ctx;

static void in_masked_context(void)
{
	appends(NULL);
}

/* The legacy calls are the point here: programs still make them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wcpp"

static int ignored_mode(const char *mode)
{
	if (strcmp(mode, "signal_ign") == 0) {
		signal(SIGSYS, SIG_IGN);
	} else if (strcmp(mode, "sysv_signal_ign") == 0) {
		sysv_signal(SIGSYS, SIG_IGN);
	} else if (strcmp(mode, "sigignore") == 0) {
		sigignore(SIGSYS);
	} else {
		struct kernel_sigaction k = { .handler = SIG_IGN };
		long r = strcmp(mode, "raw_sigaction_ign") == 0
				 ? syscall(SYS_rt_sigaction, SIGSYS, &k, NULL, sizeof(k.mask))
				 : inline_call(SYS_rt_sigaction, SIGSYS, (long)&k, 0, sizeof(k.mask));
		if (r != 0)
			die("rt_sigaction", r < 0 ? r : -EIO);
	}
	appends(NULL);
	raise(SIGSYS); /* ignored, as asked */
	struct sigaction now;
	sigaction(SIGSYS, NULL, &now);
	if (now.sa_handler != SIG_IGN) {
		fprintf(stderr, "inline_calls: %s: SIGSYS does not read back as ignored\n", mode);
		return 1;
	}
	return 0;
}

static int blocked_mode(const char *mode)
{
	if (strcmp(mode, "sigset_hold") == 0) {
		sigset(SIGSYS, SIG_HOLD);
	} else if (strcmp(mode, "sighold") == 0) {
		sighold(SIGSYS);
	} else if (strcmp(mode, "sigblock") == 0) {
		sigblock(1 << (SIGSYS - 1));
	} else if (strcmp(mode, "sigsetmask") == 0) {
		sigsetmask(~0);
	} else {
		unsigned long all = ~0ul;
		if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof(all)) != 0)
			die("rt_sigprocmask", -errno);
	}
	appends(NULL);
	return 0;
}

static int handler_mask_mode(bool raw)
{
	struct sigaction sa = { .sa_handler = on_usr1_appends };
	full_mask_but(&sa.sa_mask, 0);
	sigaction(SIGUSR1, &sa, NULL);
	if (raw) { /* the kernel's copy (with glibc's restorer), its mask made full inline */
		struct kernel_sigaction k;
		long r = inline_call(SYS_rt_sigaction, SIGUSR1, 0, (long)&k, sizeof(k.mask));
		k.mask = ~0ul;
		if (r == 0)
			r = inline_call(SYS_rt_sigaction, SIGUSR1, (long)&k, 0, sizeof(k.mask));
		if (r != 0)
			die("rt_sigaction", r);
	}
	raise(SIGUSR1);
	return 0;
}

static int signalfd_mode(void)
{
	sigset_t all, usr1;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	int sfd = signalfd(-1, &usr1, 0);
	raise(SIGUSR1);
	struct signalfd_siginfo si;
	if (sfd < 0 || read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si) || si.ssi_signo != SIGUSR1) {
		fprintf(stderr, "inline_calls: SIGUSR1 was not read from the signalfd\n");
		return 1;
	}
	appends(NULL);
	return 0;
}

/* Dispatch off for this thread (prctl through libc is not trapped), then
 * SIGSYS blocked and ignored by untrapped inline calls; exec "plain". */
static int execmask_mode(const char *self)
{
	prctl(PR_SET_SYSCALL_USER_DISPATCH, 0, 0, 0, 0);
	unsigned long sigsys = 1ul << (SIGSYS - 1);
	struct kernel_sigaction ign = { .handler = SIG_IGN };
	if (inline_call(SYS_rt_sigprocmask, SIG_BLOCK, (long)&sigsys, 0, sizeof(sigsys)) != 0 ||
	    inline_call(SYS_rt_sigaction, SIGSYS, (long)&ign, 0, sizeof(ign.mask)) != 0)
		return 1;
	char n[16];
	snprintf(n, sizeof(n), "%d", count);
	execl(self, self, "plain", file, n, (char *)NULL);
	return 1;
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
	} else if (strcmp(mode, "attrmask") == 0) {
		pthread_attr_t attr;
		sigset_t all;
		pthread_t t;
		sigfillset(&all);
		pthread_attr_init(&attr);
		pthread_attr_setsigmask_np(&attr, &all);
		if (pthread_create(&t, &attr, appends, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
	} else if (strstr(mode, "_ign") || strcmp(mode, "sigignore") == 0) {
		return ignored_mode(mode);
	} else if (strcmp(mode, "sigset_hold") == 0 || strcmp(mode, "sighold") == 0 || strcmp(mode, "sigblock") == 0 ||
		   strcmp(mode, "sigsetmask") == 0 || strcmp(mode, "raw_sigmask") == 0) {
		return blocked_mode(mode);
	} else if (strcmp(mode, "handler_mask") == 0 || strcmp(mode, "raw_handler_mask") == 0) {
		return handler_mask_mode(strcmp(mode, "raw_handler_mask") == 0);
	} else if (strcmp(mode, "sigsuspend") == 0 || strcmp(mode, "ppoll") == 0 || strcmp(mode, "pselect") == 0 ||
		   strncmp(mode, "epoll_pwait", 11) == 0) {
		return wait_mode(mode);
	} else if (strcmp(mode, "swapcontext") == 0) {
		static char stack[256 * 1024];
		getcontext(&masked_ctx);
		masked_ctx.uc_stack.ss_sp = stack;
		masked_ctx.uc_stack.ss_size = sizeof(stack);
		masked_ctx.uc_link = &main_ctx;
		sigfillset(&masked_ctx.uc_sigmask);
		makecontext(&masked_ctx, in_masked_context, 0);
		if (swapcontext(&main_ctx, &masked_ctx) != 0)
			return 1;
	} else if (strcmp(mode, "signalfd") == 0) {
		return signalfd_mode();
	} else if (strcmp(mode, "execmask") == 0) {
		return execmask_mode(argv[0]);
	} else {
		fprintf(stderr, "inline_calls: unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
