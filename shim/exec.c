/*
 * exec.c - exec and _exit as barriers.
 *
 * exec replaces the process image and with it the flusher threads and
 * every pending deferred sync, so those are completed first, and the log
 * is closed cleanly. glibc's execvp and friends call execve internally,
 * out of our reach, so each entry point is caught on its own; the execl
 * forms are turned into their execv equivalents here.
 */
#include <stdarg.h>
#include <unistd.h>

#include "flusher.h"
#include "log.h"
#include "shim.h"

/* Not in a vfork child: it shares the parent's memory, and with it the
 * parent's flusher and log, which are not its to finish. */
static bool own_process(void)
{
	return getpid() == shim.pid;
}

static void before_exec(void)
{
	if (shim_bypass() || !own_process())
		return;
	flusher_flush_all();
	log_before_exec();
}

/* _exit skips atexit and destructors, yet forked workers (fio's, many
 * servers') leave through it: finish their syncs and their log too. */
static void before_exit(void)
{
	if (!shim_bypass() && own_process()) {
		atomic_store(&shim.exiting, 1);
		flusher_flush_all();
		log_stop();
	}
}

SHIM_API void _exit(int status)
{
	before_exit();
	REAL(_exit)(status);
	__builtin_unreachable();
}

SHIM_API void _Exit(int status)
{
	before_exit();
	REAL(_Exit)(status);
	__builtin_unreachable();
}

SHIM_API int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execve)(path, argv, envp);
}

SHIM_API int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	before_exec();
	return REAL(execveat)(dirfd, path, argv, envp, flags);
}

SHIM_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

SHIM_API int execv(const char *path, char *const argv[])
{
	before_exec();
	return REAL(execv)(path, argv);
}

SHIM_API int execvp(const char *file, char *const argv[])
{
	before_exec();
	return REAL(execvp)(file, argv);
}

SHIM_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execvpe)(file, argv, envp);
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
