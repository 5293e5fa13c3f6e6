/*
 * inline_trap.c - system calls a program makes with its own `syscall`
 * instruction, seen through the kernel's syscall user dispatch.
 *
 * A preload sees what goes through libc. Some programs enter the kernel
 * themselves: fio enters its io_uring rings with `syscall` instructions in
 * its own text, so the shim never sees a ring set up or entered and the
 * ring's syncs follow no policy. Linux 6.16 and later can raise SIGSYS for
 * the system calls made from one address range only
 * (PR_SYS_DISPATCH_INCLUSIVE_ON) and run every other one natively. With
 * `inline_syscalls = trap`, that range is the main program's executable
 * text: calls through libc, the shim's own included, never trap and cost
 * nothing; an inline call costs one signal, and the handler carries it out
 * through syscall(), where the shim sees it exactly as it sees a program's
 * syscall() (syscall.c: syncs, io_uring, io_submit), and hands its result
 * back in %rax the way the kernel would have.
 *
 * The hard parts:
 * - Dispatch is a per-thread setting, and fork, clone and exec clear it.
 *   It is turned on for the main thread at load, for each thread
 *   pthread_create starts (before the app's start routine, lifecycle.c),
 *   and for a fork child (init.c's atfork child).
 * - The kernel forces the SIGSYS: a thread that blocks or ignores SIGSYS
 *   has the action reset to the default and dies. So while trapping is
 *   on no call blocks or ignores it (inline_sigsys.c: the masks lose it,
 *   the app's disposition is kept aside here and called for every
 *   SIGSYS that is not a dispatch: a seccomp trap, a kill), and a thread
 *   or process that starts with it blocked has it unblocked before
 *   dispatch is turned on.
 * - Some calls cannot be carried out from inside a handler: clone, clone3,
 *   fork and vfork (the child would start in the handler's frame, on
 *   another stack for a thread) and rt_sigreturn. For those the handler
 *   turns dispatch off for this thread and restarts the instruction, which
 *   then runs natively; that thread's later inline calls go unseen, said
 *   once.
 * Only x86_64; elsewhere, and on a kernel without the inclusive mode, the
 * key is refused with one line and nothing is trapped.
 */
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "shim.h"
#include "inline_trap.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif
#ifndef PR_SYS_DISPATCH_OFF
#define PR_SYS_DISPATCH_OFF 0
#endif
#define DISPATCH_INCLUSIVE_ON 2 /* <linux/prctl.h>: PR_SYS_DISPATCH_INCLUSIVE_ON */
#ifndef SYS_USER_DISPATCH
#define SYS_USER_DISPATCH 2 /* si_code of a dispatch SIGSYS */
#endif

static atomic_bool trap_on;
static uintptr_t text_lo, text_hi; /* the main program's executable text */

/* The app's own SIGSYS disposition, kept aside while ours is installed
 * (no lock: a handler may call sigaction, and two threads setting SIGSYS's
 * action at once is a race in the app already). */
static struct sigaction app_sigsys;

/* Called first thing in a new thread (lifecycle.c), before a sanitizer's
 * per-thread state exists: plain code only. */
__attribute__((no_sanitize("address", "thread"))) bool inline_trap_active(void)
{
	return atomic_load_explicit(&trap_on, memory_order_relaxed);
}

#if defined(__x86_64__)

static int find_main_text(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	/* The first object dl_iterate_phdr reports is the main program. */
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (!text_lo || lo < text_lo)
			text_lo = lo;
		if (hi > text_hi)
			text_hi = hi;
	}
	return 1;
}

/* SIGSYS unblocked in this thread (a mask from pthread_attr_setsigmask_np,
 * or inherited across exec), by a plain system call: this runs before a
 * sanitizer's per-thread state exists, and the shim's text never traps. */
__attribute__((no_sanitize("address", "thread"))) static void unblock_sigsys(void)
{
	uint64_t set = 1ull << (SIGSYS - 1);
	long ret;
	register long size __asm__("r10") = sizeof(set);
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_rt_sigprocmask), "D"((long)SIG_UNBLOCK), "S"(&set), "d"(0L), "r"(size)
			 : "rcx", "r11", "memory");
	(void)ret;
}

__attribute__((no_sanitize("address", "thread"))) static int dispatch_on(void)
{
	unblock_sigsys(); /* before: a trapped call with SIGSYS blocked kills the process */
	return prctl(PR_SET_SYSCALL_USER_DISPATCH, DISPATCH_INCLUSIVE_ON, text_lo, text_hi - text_lo, 0);
}

__attribute__((no_sanitize("address", "thread"))) void inline_trap_thread_start(void)
{
	if (inline_trap_active())
		dispatch_on();
}

void inline_trap_atfork_child(void)
{
	inline_trap_thread_start();
}

/* Calls that must not be made from inside the handler (see the top). */
static bool run_natively(long nr)
{
	switch (nr) {
	case SYS_clone:
	case SYS_fork:
	case SYS_vfork:
	case SYS_rt_sigreturn:
#ifdef SYS_clone3
	case SYS_clone3:
#endif
		return true;
	default:
		return false;
	}
}

void inline_trap_app_action(const struct sigaction *act, struct sigaction *old)
{
	if (old)
		*old = app_sigsys;
	if (act)
		app_sigsys = *act;
}

static void call_app_sigsys(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = app_sigsys;
	if (a.sa_flags & SA_SIGINFO) {
		if (a.sa_sigaction)
			a.sa_sigaction(sig, si, uc);
		return;
	}
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_handler != SIG_DFL) {
		a.sa_handler(sig);
		return;
	}
	/* The default action (a core dump): as if we had never been here. */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	LIBC(sigaction)(SIGSYS, &dfl, NULL);
	raise(SIGSYS); /* blocked in this handler: delivered as it returns */
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	if (si->si_code != SYS_USER_DISPATCH) {
		call_app_sigsys(sig, si, ucv);
		return;
	}
	greg_t *g = uc->uc_mcontext.gregs;
	long nr = si->si_syscall;
	int saved = errno;
	if (run_natively(nr)) {
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
		g[REG_RIP] -= 2; /* `syscall` is 0f 05: run it again, untrapped */
		g[REG_RAX] = nr;
		static atomic_flag said = ATOMIC_FLAG_INIT;
		if (!atomic_flag_test_and_set(&said))
			shim_say("inline_syscalls = trap: a thread made system call %ld by itself; "
				 "its later inline calls are not seen",
				 nr);
		errno = saved;
		return;
	}
	long a[6] = { g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9] };
	/* syscall() keeps SIGSYS out of any mask the call installs, and keeps
	 * an rt_sigaction(SIGSYS) aside (inline_sigsys.c). */
	long r = syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	g[REG_RAX] = r == -1 ? -errno : r;
	if (nr == SYS_rt_sigprocmask && r == 0) {
		/* The handler's return restores the mask it was entered with:
		 * make that the one the app just set. */
		sigset_t now;
		if (LIBC(pthread_sigmask)(SIG_SETMASK, NULL, &now) == 0)
			uc->uc_sigmask = now;
	}
	errno = saved;
}

void inline_trap_start(const struct policy *p)
{
	if (!p->inline_trap)
		return;
	dl_iterate_phdr(find_main_text, NULL);
	if (!text_lo || text_hi <= text_lo) {
		shim_say("inline_syscalls = trap: the program's text was not found; nothing is trapped");
		return;
	}
	/* Nothing more blocked while a call is carried out (it may wait, and
	 * the app's signals must still interrupt it), and SIGSYS itself not
	 * either (SA_NODEFER): an app handler that runs meanwhile may make an
	 * inline call of its own. */
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (LIBC(sigaction)(SIGSYS, &sa, &app_sigsys) != 0) {
		shim_say("inline_syscalls = trap: SIGSYS: %s; nothing is trapped", strerror(errno));
		return;
	}
	if (dispatch_on() != 0) {
		int e = errno;
		LIBC(sigaction)(SIGSYS, &app_sigsys, NULL);
		shim_say("inline_syscalls = trap: this kernel cannot (%s; Linux 6.16 or later has the "
			 "inclusive syscall user dispatch); nothing is trapped",
			 strerror(e));
		return;
	}
	atomic_store(&trap_on, true);
}

#else /* !__x86_64__ */

void inline_trap_thread_start(void)
{
}

void inline_trap_atfork_child(void)
{
}

void inline_trap_start(const struct policy *p)
{
	if (p->inline_trap)
		shim_say("inline_syscalls = trap: only on x86_64; nothing is trapped");
}

#endif
