/*
 * real.c - resolving the real libc functions behind the shim.
 */
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

_Atomic(void *) real_table[REAL_COUNT];

static const char *const real_names[REAL_COUNT] = {
#define REAL_NAME(ret, name, params) [REAL_ID_##name] = #name,
	SHIM_REAL_FUNCS(REAL_NAME)
#undef REAL_NAME
};

/* Set while this thread is inside dlsym: dlsym may allocate, and an
 * allocator (or another preloaded library) may call open/mmap/write back
 * into us. Those calls must not resolve again. */
static __thread int in_dlsym;

/*
 * Raw-syscall stand-ins used only while a real function cannot be resolved
 * (re-entry from inside dlsym, or a libc without the symbol). They keep the
 * host working with plain kernel semantics.
 */
static long open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}

static ssize_t fb_write(int fd, const void *b, size_t n) { return syscall(SYS_write, fd, b, n); }
static ssize_t fb_pwrite(int fd, const void *b, size_t n, off_t o) { return syscall(SYS_pwrite64, fd, b, n, o); }
static ssize_t fb_writev(int fd, const struct iovec *v, int c) { return syscall(SYS_writev, fd, v, c); }
static ssize_t fb_pwritev(int fd, const struct iovec *v, int c, off_t o)
{
	return syscall(SYS_pwritev, fd, v, c, (unsigned long)o, 0UL);
}
static ssize_t fb_pwritev2(int fd, const struct iovec *v, int c, off_t o, int fl)
{
	return syscall(SYS_pwritev2, fd, v, c, (unsigned long)o, 0UL, fl);
}
static int fb_fsync(int fd) { return syscall(SYS_fsync, fd); }
static int fb_fdatasync(int fd) { return syscall(SYS_fdatasync, fd); }
static int fb_sync_file_range(int fd, off64_t o, off64_t n, unsigned int fl)
{
	return syscall(SYS_sync_file_range, fd, o, n, fl);
}
static int fb_msync(void *a, size_t n, int fl) { return syscall(SYS_msync, a, n, fl); }
static int fb_syncfs(int fd) { return syscall(SYS_syncfs, fd); }
static void fb_sync(void) { syscall(SYS_sync); }
static int fb_open(const char *p, int fl, ...)
{
	va_list ap;
	va_start(ap, fl);
	long mode = open_mode(fl, ap);
	va_end(ap);
	return syscall(SYS_openat, AT_FDCWD, p, fl, mode);
}
static int fb_openat(int dfd, const char *p, int fl, ...)
{
	va_list ap;
	va_start(ap, fl);
	long mode = open_mode(fl, ap);
	va_end(ap);
	return syscall(SYS_openat, dfd, p, fl, mode);
}
static int fb_open_2(const char *p, int fl) { return syscall(SYS_openat, AT_FDCWD, p, fl, 0); }
static int fb_openat_2(int dfd, const char *p, int fl) { return syscall(SYS_openat, dfd, p, fl, 0); }
static int fb_creat(const char *p, mode_t m)
{
	return syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_TRUNC, m);
}
static int fb_close(int fd) { return syscall(SYS_close, fd); }
static int fb_close_range(unsigned int a, unsigned int b, int fl) { return syscall(SYS_close_range, a, b, fl); }
static int fb_fclose(FILE *f)
{
	(void)f; /* no raw equivalent: refuse rather than corrupt the stream */
	errno = ENOSYS;
	return EOF;
}
static int fb_dup(int fd) { return syscall(SYS_dup, fd); }
static int fb_dup2(int a, int b) { return syscall(SYS_dup2, a, b); }
static int fb_dup3(int a, int b, int fl) { return syscall(SYS_dup3, a, b, fl); }
static int fb_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return syscall(SYS_fcntl, fd, cmd, arg);
}
static void fb_closefrom(int lo) { syscall(SYS_close_range, (unsigned)lo, ~0u, 0); }
static int fb_socket(int d, int t, int p) { return syscall(SYS_socket, d, t, p); }
static int fb_socketpair(int d, int t, int p, int *sv) { return syscall(SYS_socketpair, d, t, p, sv); }
static int fb_accept4(int fd, __SOCKADDR_ARG a, socklen_t *l, int fl)
{
	return syscall(SYS_accept4, fd, a.__sockaddr__, l, fl);
}
static int fb_accept(int fd, __SOCKADDR_ARG a, socklen_t *l) { return fb_accept4(fd, a, l, 0); }
static int fb_pipe2(int *p, int fl) { return syscall(SYS_pipe2, p, fl); }
static int fb_pipe(int *p) { return fb_pipe2(p, 0); }
static int fb_eventfd(unsigned int v, int fl) { return syscall(SYS_eventfd2, v, fl); }
static int fb_epoll_create1(int fl) { return syscall(SYS_epoll_create1, fl); }
static int fb_memfd_create(const char *n, unsigned int fl) { return syscall(SYS_memfd_create, n, fl); }
static FILE *fb_fopen(const char *p, const char *m)
{
	(void)p, (void)m; /* stdio has no raw equivalent */
	errno = ENOSYS;
	return NULL;
}
static FILE *fb_freopen(const char *p, const char *m, FILE *f)
{
	(void)p, (void)m, (void)f;
	errno = ENOSYS;
	return NULL;
}
static int fb_link(const char *a, const char *b) { return syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0); }
static int fb_linkat(int da, const char *a, int db, const char *b, int fl)
{
	return syscall(SYS_linkat, da, a, db, b, fl);
}
static pid_t fb_vfork(void) { return fork(); } /* a valid vfork, if a slower one */
static int fb_rename(const char *a, const char *b)
{
	return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 0);
}
static int fb_renameat(int da, const char *a, int db, const char *b)
{
	return syscall(SYS_renameat2, da, a, db, b, 0);
}
static int fb_renameat2(int da, const char *a, int db, const char *b, unsigned int fl)
{
	return syscall(SYS_renameat2, da, a, db, b, fl);
}
static void *fb_mmap(void *a, size_t n, int prot, int fl, int fd, off_t o)
{
	return (void *)syscall(SYS_mmap, a, n, prot, fl, fd, o);
}
static int fb_munmap(void *a, size_t n) { return syscall(SYS_munmap, a, n); }
static int fb_execve(const char *p, char *const a[], char *const e[]) { return syscall(SYS_execve, p, a, e); }
static int fb_execveat(int d, const char *p, char *const a[], char *const e[], int fl)
{
	return syscall(SYS_execveat, d, p, a, e, fl);
}
static int fb_fexecve(int fd, char *const a[], char *const e[])
{
	return syscall(SYS_execveat, fd, "", a, e, AT_EMPTY_PATH);
}
extern char **environ;
/* No PATH search in these stand-ins: they only serve a call made while
 * dlsym runs, which no sane host does. */
static int fb_execv(const char *p, char *const a[]) { return syscall(SYS_execve, p, a, environ); }
static int fb_execvpe(const char *p, char *const a[], char *const e[]) { return syscall(SYS_execve, p, a, e); }
static void fb_exit(int status)
{
	for (;;)
		syscall(SYS_exit_group, status);
}

/* On LP64 the 64-bit variants share the plain fallbacks. */
static void *const fallbacks[REAL_COUNT] = {
	[REAL_ID_write] = fb_write,
	[REAL_ID_pwrite] = fb_pwrite,
	[REAL_ID_pwrite64] = fb_pwrite,
	[REAL_ID_writev] = fb_writev,
	[REAL_ID_pwritev] = fb_pwritev,
	[REAL_ID_pwritev64] = fb_pwritev,
	[REAL_ID_pwritev2] = fb_pwritev2,
	[REAL_ID_pwritev64v2] = fb_pwritev2,
	[REAL_ID_fsync] = fb_fsync,
	[REAL_ID_fdatasync] = fb_fdatasync,
	[REAL_ID_sync_file_range] = fb_sync_file_range,
	[REAL_ID_msync] = fb_msync,
	[REAL_ID_syncfs] = fb_syncfs,
	[REAL_ID_sync] = fb_sync,
	[REAL_ID_open] = fb_open,
	[REAL_ID_open64] = fb_open,
	[REAL_ID_openat] = fb_openat,
	[REAL_ID_openat64] = fb_openat,
	[REAL_ID___open_2] = fb_open_2,
	[REAL_ID___open64_2] = fb_open_2,
	[REAL_ID___openat_2] = fb_openat_2,
	[REAL_ID___openat64_2] = fb_openat_2,
	[REAL_ID_creat] = fb_creat,
	[REAL_ID_creat64] = fb_creat,
	[REAL_ID_close] = fb_close,
	[REAL_ID_close_range] = fb_close_range,
	[REAL_ID_fclose] = fb_fclose,
	[REAL_ID_dup] = fb_dup,
	[REAL_ID_dup2] = fb_dup2,
	[REAL_ID_dup3] = fb_dup3,
	[REAL_ID_fcntl] = fb_fcntl,
	[REAL_ID_fcntl64] = fb_fcntl,
	[REAL_ID_closefrom] = fb_closefrom,
	[REAL_ID_socket] = fb_socket,
	[REAL_ID_socketpair] = fb_socketpair,
	[REAL_ID_accept] = fb_accept,
	[REAL_ID_accept4] = fb_accept4,
	[REAL_ID_pipe] = fb_pipe,
	[REAL_ID_pipe2] = fb_pipe2,
	[REAL_ID_eventfd] = fb_eventfd,
	[REAL_ID_epoll_create1] = fb_epoll_create1,
	[REAL_ID_memfd_create] = fb_memfd_create,
	[REAL_ID_fopen] = fb_fopen,
	[REAL_ID_fopen64] = fb_fopen,
	[REAL_ID_freopen] = fb_freopen,
	[REAL_ID_freopen64] = fb_freopen,
	[REAL_ID_link] = fb_link,
	[REAL_ID_linkat] = fb_linkat,
	[REAL_ID_vfork] = fb_vfork,
	[REAL_ID_exit] = fb_exit,
	[REAL_ID_rename] = fb_rename,
	[REAL_ID_renameat] = fb_renameat,
	[REAL_ID_renameat2] = fb_renameat2,
	[REAL_ID_mmap] = fb_mmap,
	[REAL_ID_mmap64] = fb_mmap,
	[REAL_ID_munmap] = fb_munmap,
	[REAL_ID_execve] = fb_execve,
	[REAL_ID_execveat] = fb_execveat,
	[REAL_ID_fexecve] = fb_fexecve,
	[REAL_ID_execv] = fb_execv,
	[REAL_ID_execvp] = fb_execv,
	[REAL_ID_execvpe] = fb_execvpe,
	[REAL_ID__exit] = fb_exit,
	[REAL_ID__Exit] = fb_exit,
};

void *real_resolve(enum real_id id)
{
	void *p = atomic_load_explicit(&real_table[id], memory_order_acquire);
	if (p)
		return p;
	if (in_dlsym)
		return fallbacks[id];
	int saved = errno; /* dlsym may set errno; the host must not see it */
	in_dlsym = 1;
	p = dlsym(RTLD_NEXT, real_names[id]);
	in_dlsym = 0;
	if (!p)
		dlerror(); /* don't leave our miss for the host's next dlerror() */
	errno = saved;
	if (!p)
		p = fallbacks[id]; /* stored too: a miss is looked up once, not per call */
	atomic_store_explicit(&real_table[id], p, memory_order_release);
	return p;
}

void real_resolve_all(void)
{
	for (int i = 0; i < REAL_COUNT; i++)
		real_resolve((enum real_id)i);
}
