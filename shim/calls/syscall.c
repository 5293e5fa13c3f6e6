/*
 * syscall.c - libc's syscall(), the way around the libc wrappers.
 *
 * A program that calls syscall(SYS_fsync, fd) gets what fsync(fd) would
 * give it under its rule: the sync numbers go through the same wrappers,
 * with syscall()'s conventions (-1 and errno), which are the wrappers'
 * own. The ends of a process and exec (exit_group, exit, execve,
 * execveat) are barriers as _exit and execve are: they go through those
 * wrappers (exec.c), and a thread's raw exit through lifecycle.c, so the
 * pending deferred syncs are made and their errors told first. io_uring's
 * three calls go to uring.c, which looks at the ring's
 * new entries before the kernel does, and io_submit (libaio's way in) to
 * aio.c. Every other number costs one
 * switch: no lock, no allocation, errno untouched, the six argument
 * words handed on as they came.
 *
 * Forwarding (x86_64, and every LP64 ABI with register arguments): a
 * system call's arguments are all integer-class words (pointers, ints,
 * longs); syscall() takes them as longs and hands all six to the kernel
 * whatever the call uses, as glibc's own does. Reading six with va_arg
 * reads the register save area and, for the sixth, the caller's stack
 * slot, exactly what glibc's syscall() reads; the words are passed on
 * unchanged (an int argument's upper half included), so the kernel sees
 * what it would have seen. Only where the shim itself interprets an
 * argument is it narrowed to the type the call's C wrapper takes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "held.h"
#include "inline_trap.h"
#include "lifecycle.h"
#include "order.h"
#include "position.h"
#include "shim.h"
#include "uring.h"

/* The raw calls about one descriptor's bytes or position (syscall_handled's
 * rest; every other number passes on as it is). */
static long descriptor_call(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	switch (nr) {
	/* A change made raw: in its order as sendfile's is (after what it
	 * depends on is durable, and after its file's held writes), but not
	 * followed (order_fd_bytes_unseen). */
	case SYS_write:
	case SYS_writev:
	case SYS_pwritev2:
		order_before_fd_change((int)a1);
		order_fd_bytes_unseen((int)a1); /* bytes the write path never sees (order.c) */
		pos_forget((int)a1);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	case SYS_pwrite64:
	case SYS_pwritev:
		order_before_fd_change((int)a1);
		order_fd_bytes_unseen((int)a1);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	/* Reads made raw see the program's held writes (held.c): applied first. */
	case SYS_pread64:
	case SYS_preadv:
	case SYS_fstat:
		held_before_read((int)a1);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	case SYS_read:
	case SYS_readv:
	case SYS_lseek:
	case SYS_preadv2:
		held_before_read((int)a1);
		pos_forget((int)a1);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	/* Calls that move (or share) a descriptor's position, made raw: the
	 * shim's mark of it goes (position.h), then the call as asked. */
	case SYS_dup:
	case SYS_dup2:
	case SYS_dup3:
	case SYS_fcntl:
		pos_forget((int)a1);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	case SYS_sendfile: /* (out, in, ...) */
		held_before_read((int)a2);
		order_before_fd_change((int)a1);
		order_fd_bytes_unseen((int)a1);
		pos_forget((int)a1);
		pos_forget((int)a2);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	case SYS_splice: /* (in, off_in, out, ...) */
	case SYS_copy_file_range:
		held_before_read((int)a1);
		order_before_fd_change((int)a3);
		order_fd_bytes_unseen((int)a3);
		pos_forget((int)a1);
		pos_forget((int)a3);
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	default:
		break;
	}
	return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
}

/* The numbers the shim looks at; every other one is passed straight on. */
static long syscall_handled(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	switch (nr) {
	case SYS_fsync:
		return fsync((int)a1);
	case SYS_fdatasync:
		return fdatasync((int)a1);
	case SYS_sync_file_range:
		return sync_file_range((int)a1, (off64_t)a2, (off64_t)a3, (unsigned int)a4);
	case SYS_msync:
		return msync((void *)a1, (size_t)a2, (int)a3);
	case SYS_syncfs:
		return syncfs((int)a1);
	case SYS_sync:
		sync();
		return 0;
	case SYS_exit_group:
		if (shim_bypass()) /* the shim's own (libc.c's stand-ins) */
			break;
		_exit((int)a1);
	case SYS_exit:
		if (!shim_bypass())
			lifecycle_raw_thread_exit((int)a1);
		break;
	case SYS_execve:
		if (shim_bypass())
			break;
		return execve((const char *)a1, (char *const *)a2, (char *const *)a3);
	case SYS_execveat:
		if (shim_bypass())
			break;
		return execveat((int)a1, (const char *)a2, (char *const *)a3, (char *const *)a4, (int)a5);
	/* While inline_syscalls = trap is on, none of these may block or
	 * ignore SIGSYS (inline_sigsys.c); otherwise passed on. */
	case SYS_rt_sigaction:
	case SYS_rt_sigprocmask:
	case SYS_rt_sigsuspend:
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_epoll_pwait:
	case SYS_epoll_pwait2: {
		struct sigsys_scratch scratch;
		long a[6] = { a1, a2, a3, a4, a5, a6 }, r;
		if (inline_trap_signal_call(nr, a, &scratch, &r))
			return r;
		return LIBC(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
	case SYS_io_uring_setup:
		return uring_sys_setup(a1, a2);
	case SYS_io_uring_enter:
		return uring_sys_enter(a1, a2, a3, a4, a5, a6);
	case SYS_io_uring_register:
		return uring_sys_register(a1, a2, a3, a4);
	case SYS_io_submit:
		return aio_sys_submit(a1, a2, a3);
	/* Credentials changed raw (one thread's, as the kernel does it): the
	 * process leaves a domain it shares first, as for libc's set*id. */
	case SYS_setuid:
	case SYS_setgid:
	case SYS_setreuid:
	case SYS_setregid:
	case SYS_setresuid:
	case SYS_setresgid:
	case SYS_setgroups:
	case SYS_setfsuid:
	case SYS_setfsgid:
	case SYS_capset:
		if (!shim_bypass())
			order_before_credentials();
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	default:
		return descriptor_call(nr, a1, a2, a3, a4, a5, a6);
	}
	return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
}

#if defined(__x86_64__)
/*
 * x86_64: syscall() itself is a few instructions. A number outside the
 * set above jumps straight into libc's syscall() with every register and
 * the caller's stack untouched (a tail jump: the sixth argument stays
 * where the caller put it, and %rax, the caller's vector-register count
 * for a variadic call, is left alone), so a pass-through costs one bit
 * test and two loads. The set, and calls made before libc's syscall() is
 * resolved, jump to syscall_slow: a plain function of seven longs, whose
 * arguments sit exactly where a variadic call of syscall() put them.
 */
#define SYSCALL_IN_WORD(w, n) ((n) / 64 == (w) ? 1ull << ((n) % 64) : 0ull)
#define SYSCALL_WORD(w)                                                              \
	(SYSCALL_IN_WORD(w, SYS_fsync) | SYSCALL_IN_WORD(w, SYS_fdatasync) |         \
	 SYSCALL_IN_WORD(w, SYS_sync_file_range) | SYSCALL_IN_WORD(w, SYS_msync) |   \
	 SYSCALL_IN_WORD(w, SYS_syncfs) | SYSCALL_IN_WORD(w, SYS_sync) |             \
	 SYSCALL_IN_WORD(w, SYS_io_uring_setup) | SYSCALL_IN_WORD(w, SYS_io_uring_enter) | \
	 SYSCALL_IN_WORD(w, SYS_io_uring_register) | SYSCALL_IN_WORD(w, SYS_io_submit) |   \
	 SYSCALL_IN_WORD(w, SYS_read) | SYSCALL_IN_WORD(w, SYS_readv) | SYSCALL_IN_WORD(w, SYS_write) | \
	 SYSCALL_IN_WORD(w, SYS_writev) | SYSCALL_IN_WORD(w, SYS_lseek) | SYSCALL_IN_WORD(w, SYS_preadv2) | \
	 SYSCALL_IN_WORD(w, SYS_pwritev2) | SYSCALL_IN_WORD(w, SYS_dup) | SYSCALL_IN_WORD(w, SYS_dup2) | \
	 SYSCALL_IN_WORD(w, SYS_dup3) | SYSCALL_IN_WORD(w, SYS_fcntl) | SYSCALL_IN_WORD(w, SYS_sendfile) | \
	 SYSCALL_IN_WORD(w, SYS_splice) | SYSCALL_IN_WORD(w, SYS_copy_file_range) |   \
	 SYSCALL_IN_WORD(w, SYS_pwrite64) | SYSCALL_IN_WORD(w, SYS_pwritev) | SYSCALL_IN_WORD(w, SYS_pread64) | \
	 SYSCALL_IN_WORD(w, SYS_preadv) | SYSCALL_IN_WORD(w, SYS_fstat) | SYSCALL_IN_WORD(w, SYS_setuid) | \
	 SYSCALL_IN_WORD(w, SYS_setgid) | SYSCALL_IN_WORD(w, SYS_setreuid) | SYSCALL_IN_WORD(w, SYS_setregid) | \
	 SYSCALL_IN_WORD(w, SYS_setresuid) | SYSCALL_IN_WORD(w, SYS_setresgid) | SYSCALL_IN_WORD(w, SYS_setgroups) | \
	 SYSCALL_IN_WORD(w, SYS_setfsuid) | SYSCALL_IN_WORD(w, SYS_setfsgid) | SYSCALL_IN_WORD(w, SYS_capset) | \
	 SYSCALL_IN_WORD(w, SYS_exit) | SYSCALL_IN_WORD(w, SYS_exit_group) | \
	 SYSCALL_IN_WORD(w, SYS_execve) | SYSCALL_IN_WORD(w, SYS_execveat) | \
	 SYSCALL_IN_WORD(w, SYS_rt_sigaction) | SYSCALL_IN_WORD(w, SYS_rt_sigprocmask) | \
	 SYSCALL_IN_WORD(w, SYS_rt_sigsuspend) | SYSCALL_IN_WORD(w, SYS_ppoll) | \
	 SYSCALL_IN_WORD(w, SYS_pselect6) | SYSCALL_IN_WORD(w, SYS_epoll_pwait) | \
	 SYSCALL_IN_WORD(w, SYS_epoll_pwait2))
_Static_assert(SYS_fsync < 512 && SYS_fdatasync < 512 && SYS_sync_file_range < 512 && SYS_msync < 512 &&
		       SYS_syncfs < 512 && SYS_sync < 512 && SYS_io_uring_setup < 512 &&
		       SYS_io_uring_enter < 512 && SYS_io_uring_register < 512 && SYS_io_submit < 512 &&
		       SYS_exit < 512 && SYS_exit_group < 512 && SYS_execve < 512 && SYS_execveat < 512 &&
		       SYS_rt_sigaction < 512 && SYS_rt_sigprocmask < 512 && SYS_rt_sigsuspend < 512 &&
		       SYS_ppoll < 512 && SYS_pselect6 < 512 && SYS_epoll_pwait < 512 && SYS_epoll_pwait2 < 512,
	       "syscall_handled_map covers numbers below 512");

extern const uint64_t syscall_handled_map[8];
const uint64_t syscall_handled_map[8] = {
	SYSCALL_WORD(0), SYSCALL_WORD(1), SYSCALL_WORD(2), SYSCALL_WORD(3),
	SYSCALL_WORD(4), SYSCALL_WORD(5), SYSCALL_WORD(6), SYSCALL_WORD(7),
};
extern _Atomic(void *) *const syscall_real_slot;
_Atomic(void *) *const syscall_real_slot = &libc_table[LIBC_ID_syscall];

long syscall_slow(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
#ifdef SYNCSHIM_TSAN
/*
 * ThreadSanitizer build only. libtsan does not intercept syscall(), so
 * this can be the first shim code a process runs: from the constructor
 * of a library preloaded after the shim (the recording layer opens its
 * log with syscall(SYS_openat)), which ld.so runs before the shim's own
 * constructors and so before the shim's TSan module constructor has
 * started the runtime. Instrumented code then finds no thread state and
 * faults in __tsan_func_entry. So this entry is left uninstrumented and
 * starts the runtime itself (idempotent) before any instrumented code;
 * syscall_handled is not inlined into it (the attributes differ), so
 * everything past this point is checked as usual.
 */
void __tsan_init(void);
__attribute__((used, no_sanitize("thread"))) long syscall_slow(long nr, long a1, long a2, long a3, long a4, long a5,
								 long a6)
{
	__tsan_init();
	return syscall_handled(nr, a1, a2, a3, a4, a5, a6);
}
#else
__attribute__((used)) long syscall_slow(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	return syscall_handled(nr, a1, a2, a3, a4, a5, a6);
}
#endif

__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	".p2align 4\n"
	"syscall:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	cmpq $511, %rdi\n" /* unsigned: a negative number is not ours either */
	"	ja 1f\n"
	"	movq %rdi, %r10\n"
	"	shrq $6, %r10\n"
	"	leaq syscall_handled_map(%rip), %r11\n"
	"	movq (%r11,%r10,8), %r11\n"
	"	btq %rdi, %r11\n" /* bit nr % 64 of word nr / 64 */
	"	jc 2f\n"
	"1:	movq syscall_real_slot(%rip), %r11\n"
	"	movq (%r11), %r11\n"
	"	testq %r11, %r11\n"
	"	jz 2f\n"
	"	jmp *%r11\n"
	"2:	jmp syscall_slow\n"
	"	.cfi_endproc\n"
	".size syscall, .-syscall\n");
#else
SHIM_API long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	return syscall_handled(nr, a1, a2, a3, a4, a5, a6);
}
#endif
