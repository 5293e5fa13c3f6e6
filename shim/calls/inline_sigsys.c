/*
 * inline_sigsys.c - while `inline_syscalls = trap` is on, nothing blocks
 * or ignores SIGSYS.
 *
 * The kernel forces a dispatch's SIGSYS: if the thread has it blocked, or
 * its action is to ignore it, the action is reset to the default and the
 * process dies (exit 159). So every way a program can block or ignore
 * SIGSYS is met here, and the program keeps what it asked for in every
 * other respect:
 * - its SIGSYS disposition (sigaction and __sigaction, signal, bsd_signal,
 *   ssignal, sysv_signal, __sysv_signal, sigset, sigignore, and a raw
 *   rt_sigaction through syscall() or an inline instruction) is kept
 *   aside (inline_trap.c calls it for every SIGSYS that is not a
 *   dispatch), and the shim's handler stays;
 * - a mask that would hold SIGSYS loses it: sigprocmask, pthread_sigmask,
 *   sighold, sigset(SIGSYS, SIG_HOLD), sigblock, sigsetmask, __sigpause,
 *   the masks sigsuspend, ppoll, pselect, epoll_pwait and epoll_pwait2
 *   wait under, the context setcontext and swapcontext switch to, the
 *   mask any handler runs under (sigaction's sa_mask), and the raw calls
 *   (rt_sigprocmask, rt_sigsuspend, ppoll, pselect6, epoll_pwait,
 *   epoll_pwait2) through syscall() or an inline instruction;
 * - a thread that starts with SIGSYS blocked (pthread_attr_setsigmask_np)
 *   and a process that inherited it blocked across exec have it unblocked
 *   before dispatch is turned on for them (inline_trap.c).
 * What cannot be met (a handler that writes SIGSYS into its context's
 * mask before returning, io_uring_enter's own mask, the legacy BSD
 * `sigpause` symbol) is in README's limits. With trapping off every
 * wrapper is one load and the call.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "inline_trap.h"
#include "shim.h"

#ifdef SYNCSHIM_TSAN
/*
 * ThreadSanitizer build only. libtsan's own start (Initialize, run from
 * the shim's TSan module constructor) installs its signal handlers with
 * sigaction, which resolves to these wrappers before the starting thread
 * can run instrumented code (it faults in __tsan_func_entry). So here they
 * are left uninstrumented and reach libc without libc_resolve (which is
 * instrumented) while the shim's table is still empty.
 */
#include <dlfcn.h>
#define SIGNAL_CALL_ATTR __attribute__((no_sanitize("thread")))
SIGNAL_CALL_ATTR static void *signal_call_real(int id, const char *name)
{
	void *p = atomic_load_explicit(&libc_table[id], memory_order_acquire);
	return p ? p : dlsym(RTLD_NEXT, name);
}
#define SIGNAL_LIBC(name) ((libc_##name##_fn)signal_call_real(LIBC_ID_##name, #name))
#else
#define SIGNAL_CALL_ATTR
#define SIGNAL_LIBC(name) LIBC(name)
#endif

/* ---- masks ------------------------------------------------------------------ */

SIGNAL_CALL_ATTR static const sigset_t *without_sigsys(const sigset_t *set, sigset_t *copy)
{
	if (!set || !inline_trap_active() || !sigismember(set, SIGSYS))
		return set;
	*copy = *set;
	sigdelset(copy, SIGSYS);
	return copy;
}

/* The BSD calls' masks: bit sig - 1 for each signal. */
static int without_sigsys_bit(int mask)
{
	return inline_trap_active() ? mask & ~(1 << (SIGSYS - 1)) : mask;
}

SIGNAL_CALL_ATTR SHIM_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	return SIGNAL_LIBC(sigprocmask)(how, how == SIG_UNBLOCK ? set : without_sigsys(set, &copy), old);
}

SIGNAL_CALL_ATTR SHIM_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	return SIGNAL_LIBC(pthread_sigmask)(how, how == SIG_UNBLOCK ? set : without_sigsys(set, &copy), old);
}

SHIM_API int sighold(int sig)
{
	if (sig == SIGSYS && inline_trap_active())
		return 0;
	return LIBC(sighold)(sig);
}

SHIM_API int sigblock(int mask)
{
	return LIBC(sigblock)(without_sigsys_bit(mask));
}

SHIM_API int sigsetmask(int mask)
{
	return LIBC(sigsetmask)(without_sigsys_bit(mask));
}

SHIM_API int __sigpause(int sig_or_mask, int is_sig)
{
	return LIBC(__sigpause)(is_sig ? sig_or_mask : without_sigsys_bit(sig_or_mask), is_sig);
}

SHIM_API int sigsuspend(const sigset_t *set)
{
	sigset_t copy;
	return LIBC(sigsuspend)(without_sigsys(set, &copy));
}

SHIM_API int __sigsuspend(const sigset_t *set)
{
	sigset_t copy;
	return LIBC(__sigsuspend)(without_sigsys(set, &copy));
}

SHIM_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *set)
{
	sigset_t copy;
	return LIBC(ppoll)(fds, n, timeout, without_sigsys(set, &copy));
}

SHIM_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *set,
			 size_t fdslen)
{
	sigset_t copy;
	return LIBC(__ppoll_chk)(fds, n, timeout, without_sigsys(set, &copy), fdslen);
}

SHIM_API int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout, const sigset_t *set)
{
	sigset_t copy;
	return LIBC(pselect)(n, r, w, e, timeout, without_sigsys(set, &copy));
}

SHIM_API int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout, const sigset_t *set)
{
	sigset_t copy;
	return LIBC(epoll_pwait)(epfd, events, max, timeout, without_sigsys(set, &copy));
}

SHIM_API int epoll_pwait2(int epfd, struct epoll_event *events, int max, const struct timespec *timeout,
			  const sigset_t *set)
{
	sigset_t copy;
	return LIBC(epoll_pwait2)(epfd, events, max, timeout, without_sigsys(set, &copy));
}

/* The context's own mask is what the switch installs: SIGSYS leaves it
 * there (the context is the app's, and it asked for that switch). */
static void context_without_sigsys(const ucontext_t *uc)
{
	if (uc && inline_trap_active() && sigismember(&uc->uc_sigmask, SIGSYS))
		sigdelset(&((ucontext_t *)uc)->uc_sigmask, SIGSYS);
}

SHIM_API int setcontext(const ucontext_t *uc)
{
	context_without_sigsys(uc);
	return LIBC(setcontext)(uc);
}

SHIM_API int swapcontext(ucontext_t *save, const ucontext_t *uc)
{
	context_without_sigsys(uc);
	return LIBC(swapcontext)(save, uc);
}

/* ---- dispositions ----------------------------------------------------------- */

SIGNAL_CALL_ATTR SHIM_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!inline_trap_active())
		return SIGNAL_LIBC(sigaction)(sig, act, old);
	if (sig == SIGSYS) {
		inline_trap_app_action(act, old);
		return 0;
	}
	struct sigaction copy;
	if (act && sigismember(&act->sa_mask, SIGSYS)) {
		copy = *act;
		sigdelset(&copy.sa_mask, SIGSYS);
		act = &copy;
	}
	return SIGNAL_LIBC(sigaction)(sig, act, old);
}

SHIM_API int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

/* signal() and its kin for SIGSYS: the handler kept aside, with the flags
 * each would install; the previous one returned. */
static sighandler_t app_handler(sighandler_t h, int flags)
{
	struct sigaction act = { .sa_handler = h, .sa_flags = flags }, old;
	sigemptyset(&act.sa_mask);
	inline_trap_app_action(&act, &old);
	return old.sa_handler;
}

#define SIGNAL_LIKE_BODY(name, flags)                                                \
	SHIM_INLINE sighandler_t name##_body(int sig, sighandler_t h)                \
	{                                                                            \
		if (sig != SIGSYS || !inline_trap_active())                          \
			return LIBC(name)(sig, h);                                   \
		if (h == SIG_ERR) {                                                  \
			errno = EINVAL;                                              \
			return SIG_ERR;                                              \
		}                                                                    \
		return app_handler(h, flags);                                        \
	}
SIGNAL_LIKE_BODY(signal, SA_RESTART)
SIGNAL_LIKE_BODY(bsd_signal, SA_RESTART)
SIGNAL_LIKE_BODY(ssignal, SA_RESTART)
SIGNAL_LIKE_BODY(sysv_signal, SA_RESETHAND | SA_NODEFER)
SIGNAL_LIKE_BODY(__sysv_signal, SA_RESETHAND | SA_NODEFER)

SHIM_API sighandler_t signal(int sig, sighandler_t h)
{
	return signal_body(sig, h);
}

SHIM_API sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return bsd_signal_body(sig, h);
}

SHIM_API sighandler_t ssignal(int sig, sighandler_t h)
{
	return ssignal_body(sig, h);
}

SHIM_API sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return sysv_signal_body(sig, h);
}

SHIM_API sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	return __sysv_signal_body(sig, h);
}

/* SIG_HOLD would block it: the handler stays, and is what is returned. */
SHIM_API sighandler_t sigset(int sig, sighandler_t disp)
{
	if (sig != SIGSYS || !inline_trap_active())
		return LIBC(sigset)(sig, disp);
	if (disp == SIG_HOLD) {
		struct sigaction old;
		inline_trap_app_action(NULL, &old);
		return old.sa_handler;
	}
	return app_handler(disp, 0);
}

SHIM_API int sigignore(int sig)
{
	if (sig != SIGSYS || !inline_trap_active())
		return LIBC(sigignore)(sig);
	app_handler(SIG_IGN, 0);
	return 0;
}

/* ---- raw calls -------------------------------------------------------------- */

/* The kernel's struct sigaction (rt_sigaction's) on x86_64: the scratch's. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};
_Static_assert(sizeof(struct kernel_sigaction) == sizeof(((struct sigsys_scratch *)0)->act), "the scratch's layout");
#define KERNEL_SIGSYS_BIT (1ull << (SIGSYS - 1))

/* *arg, a kernel sigset of len bytes, without SIGSYS: a copy in *copy. */
static void strip_raw_set(long *arg, long len, uint64_t *copy)
{
	if (!*arg || len != (long)sizeof(*copy)) /* the kernel refuses other sizes itself */
		return;
	memcpy(copy, (const void *)*arg, sizeof(*copy));
	if (!(*copy & KERNEL_SIGSYS_BIT))
		return;
	*copy &= ~KERNEL_SIGSYS_BIT;
	*arg = (long)copy;
}

/* rt_sigaction(SIGSYS): the app's disposition, kept aside. */
static long raw_sigsys_action(const struct kernel_sigaction *act, struct kernel_sigaction *old, long len)
{
	if (len != (long)sizeof(uint64_t)) {
		errno = EINVAL;
		return -1;
	}
	struct sigaction a, o;
	if (act) {
		a = (struct sigaction){ .sa_handler = (sighandler_t)act->handler, .sa_flags = (int)act->flags };
		a.sa_restorer = (void (*)(void))act->restorer;
		sigemptyset(&a.sa_mask);
		memcpy(&a.sa_mask, &act->mask, sizeof(act->mask));
	}
	inline_trap_app_action(act ? &a : NULL, &o);
	if (old) {
		*old = (struct kernel_sigaction){ (void *)o.sa_handler, (unsigned long)o.sa_flags,
						  (void *)o.sa_restorer, 0 };
		memcpy(&old->mask, &o.sa_mask, sizeof(old->mask));
	}
	return 0;
}

bool inline_trap_signal_call(long nr, long a[6], struct sigsys_scratch *s, long *ret)
{
	if (!inline_trap_active())
		return false;
	switch (nr) {
	case SYS_rt_sigaction:
		if (a[0] == SIGSYS) {
			*ret = raw_sigsys_action((const void *)a[1], (void *)a[2], a[3]);
			return true;
		}
		if (a[1] && a[3] == (long)sizeof(uint64_t) &&
		    (((const struct kernel_sigaction *)a[1])->mask & KERNEL_SIGSYS_BIT)) {
			memcpy(&s->act, (const void *)a[1], sizeof(s->act));
			s->act.mask &= ~KERNEL_SIGSYS_BIT;
			a[1] = (long)&s->act;
		}
		return false;
	case SYS_rt_sigprocmask:
		if (a[0] != SIG_UNBLOCK)
			strip_raw_set(&a[1], a[3], &s->set);
		return false;
	case SYS_rt_sigsuspend:
		strip_raw_set(&a[0], a[1], &s->set);
		return false;
	case SYS_ppoll:
		strip_raw_set(&a[3], a[4], &s->set);
		return false;
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		strip_raw_set(&a[4], a[5], &s->set);
		return false;
	case SYS_pselect6:
		if (a[5]) { /* { const sigset_t *ss; size_t ss_len } */
			memcpy(&s->pselect_arg, (const void *)a[5], sizeof(s->pselect_arg));
			long set = (long)s->pselect_arg.set;
			strip_raw_set(&set, (long)s->pselect_arg.len, &s->set);
			s->pselect_arg.set = (const void *)set;
			a[5] = (long)&s->pselect_arg;
		}
		return false;
	default:
		return false;
	}
}
