/*
 * exec.c - exec, _exit and vfork.
 *
 * exec replaces the process image and with it the flusher threads and
 * every pending deferred sync, so those are completed first, and the log
 * is closed cleanly. glibc's execvp and friends call execve internally,
 * out of our reach, so each entry point is caught on its own; the execl
 * forms are turned into their execv equivalents here. _exit skips atexit
 * and destructors, yet forked workers (fio's, many servers') leave
 * through it: their syncs and their log are finished too.
 *
 * vfork: the child runs on the parent's memory, this thread's included,
 * until it execs or exits. Whatever it does must leave the parent's state
 * alone (Python's subprocess closes descriptors in such a child), so the
 * thread is marked (SHIM_IN_VFORK in shim_busy, which the child shares)
 * before jumping to the real vfork, and a marked thread passes everything
 * straight through. The jump is a tail jump, in assembly: vfork must
 * return straight into its caller's frame. The child's exec and _exit
 * clear the mark just before the real call (the parent resumes only after
 * it), and put it back if exec fails; a parent that finds the mark still
 * set (its child died some other way) clears it itself (shim_vfork_child).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "flusher.h"
#include "lifecycle.h"
#include "live.h"
#include "log.h"
#include "shim.h"
#include "syncerr.h"

/* The real vfork, for the assembly below; fork until resolved. */
static pid_t vfork_fallback(void)
{
	return fork();
}
__attribute__((used)) void *shim_real_vfork = (void *)vfork_fallback;

#if defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork,@function\n"
	"vfork:\n"
	"\tmovq shim_busy@gottpoff(%rip), %rax\n"
	"\torl $0x40000000, %fs:(%rax)\n"
	"\tjmp *shim_real_vfork(%rip)\n"
	".size vfork, .-vfork\n");
_Static_assert(SHIM_IN_VFORK == 0x40000000, "the assembly's mark");
#else
#error "vfork's wrapper is written for x86_64"
#endif

bool shim_vfork_child(void)
{
	if (!(shim_busy & SHIM_IN_VFORK))
		return false;
	if (getpid() != shim.pid)
		return true;
	shim_busy &= ~SHIM_IN_VFORK; /* the parent, after a child that never exec'd */
	return false;
}

/* In a vfork child: unmark for the real call (the parent resumes after
 * it). Returns whether it was one. */
static bool leaving_vfork_child(void)
{
	if (!(shim_busy & SHIM_IN_VFORK) || !shim_vfork_child())
		return false;
	shim_busy &= ~SHIM_IN_VFORK;
	return true;
}

static void before_exec(void)
{
	if (shim_bypass())
		return;
	int cancel = shim_nocancel_begin(); /* no unwinding out of the barrier */
	flusher_flush_all();
	syncerr_tell_all_unreported();
	log_stop(-1);
	live_stop();
	shim_nocancel_end(cancel);
}

/* Exit status after the final drain: 74 (EX_IOERR) instead of 0 when a
 * sync error was never reported and the config asks for that. From a
 * signal handler inside the shim's own work too (lifecycle.c). */
static int before_exit(int status)
{
	return shim_exit_sequence(status);
}

SHIM_API void _exit(int status)
{
	if (!leaving_vfork_child())
		status = before_exit(status);
	LIBC(_exit)(status);
	__builtin_unreachable();
}

SHIM_API void _Exit(int status)
{
	if (!leaving_vfork_child())
		status = before_exit(status);
	LIBC(_Exit)(status);
	__builtin_unreachable();
}

#define EXEC_BODY(call)                                                              \
	do {                                                                         \
		bool child = leaving_vfork_child();                                  \
		if (!child)                                                          \
			before_exec();                                               \
		int r_ = call;                                                       \
		if (child)                                                           \
			shim_busy |= SHIM_IN_VFORK; /* exec failed: still the child */ \
		return r_;                                                           \
	} while (0)

SHIM_API int execve(const char *path, char *const argv[], char *const envp[])
{
	EXEC_BODY(LIBC(execve)(path, argv, envp));
}

SHIM_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	EXEC_BODY(LIBC(execveat)(dirfd, path, argv, envp, flags));
}

SHIM_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	EXEC_BODY(LIBC(fexecve)(fd, argv, envp));
}

SHIM_API int execv(const char *path, char *const argv[])
{
	EXEC_BODY(LIBC(execv)(path, argv));
}

SHIM_API int execvp(const char *file, char *const argv[])
{
	EXEC_BODY(LIBC(execvp)(file, argv));
}

SHIM_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	EXEC_BODY(LIBC(execvpe)(file, argv, envp));
}

/* Count the NULL-terminated variadic list once, then copy it into a
 * stack array (exec never returns on success, so no allocation). */
#define COLLECT_ARGS(first, argv_out, rest)                                          \
	size_t n_ = 1;                                                               \
	va_list ap_;                                                                 \
	va_start(ap_, first);                                                        \
	while (va_arg(ap_, char *))                                                  \
		n_++;                                                                \
	va_end(ap_);                                                                 \
	char *argv_out[n_ + 1];                                                      \
	argv_out[0] = (char *)(first);                                               \
	va_start(ap_, first);                                                        \
	for (size_t i_ = 1; i_ <= n_; i_++)                                          \
		argv_out[i_] = va_arg(ap_, char *);                                  \
	rest;                                                                        \
	va_end(ap_)

SHIM_API int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv, (void)0);
	return execv(path, argv);
}

SHIM_API int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, argv, (void)0);
	return execvp(file, argv);
}

SHIM_API int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	COLLECT_ARGS(arg, argv, envp = va_arg(ap_, char *const *));
	return execve(path, argv, envp);
}
