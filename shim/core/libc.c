/*
 * libc.c - reaching libc's functions behind the shim (calls.h), and the
 * stand-ins for when they cannot be reached.
 */
#include "calls.h"
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

SHIM_HOT_FIRST _Atomic(void *) libc_table[LIBC_COUNT];

static const char *const libc_names[LIBC_COUNT] = {
#define LIBC_NAME(ret, name, params, fb) [LIBC_ID_##name] = #name,
	SHIM_CALLS(LIBC_NAME)
#undef LIBC_NAME
};

/* Set while this thread is inside dlsym: dlsym may allocate, and an
 * allocator (or another preloaded library) may call open/mmap/write back
 * into us. Those calls must not resolve again. */
static __thread int in_dlsym;

/*
 * syscall()'s own stand-in: the instruction itself, with syscall()'s
 * conventions (-1 and errno). Six arguments are always passed; the kernel
 * ignores those a call does not take.
 */
static long fb_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	long r;
#if defined(__x86_64__)
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
	r = x0;
#else
#error "fb_syscall: no raw system call for this architecture"
#endif
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The stand-ins below reach the kernel through libc's syscall() (or the
 * stand-in above), never through the shim's own (syscall.c): that one
 * routes the sync numbers back into the very wrappers they stand in for. */
#define syscall(...) LIBC(syscall)(__VA_ARGS__)

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
static ssize_t fb_copy_file_range(int in, off64_t *oin, int out, off64_t *oout, size_t n, unsigned int fl)
{
	return syscall(SYS_copy_file_range, in, oin, out, oout, n, fl);
}
static ssize_t fb_read(int fd, void *b, size_t n) { return syscall(SYS_read, fd, b, n); }
static ssize_t fb_readv(int fd, const struct iovec *v, int c) { return syscall(SYS_readv, fd, v, c); }
static ssize_t fb_preadv2(int fd, const struct iovec *v, int c, off_t o, int fl)
{
	return syscall(SYS_preadv2, fd, v, c, (unsigned long)o, 0UL, fl);
}
static off_t fb_lseek(int fd, off_t o, int whence) { return syscall(SYS_lseek, fd, o, whence); }
static ssize_t fb_pread(int fd, void *b, size_t n, off_t o) { return syscall(SYS_pread64, fd, b, n, o); }
static ssize_t fb_preadv(int fd, const struct iovec *v, int c, off_t o)
{
	return syscall(SYS_preadv, fd, v, c, (unsigned long)o, 0UL);
}
static ssize_t fb_read_chk(int fd, void *b, size_t n, size_t buflen)
{
	return syscall(SYS_read, fd, b, n < buflen ? n : buflen);
}
static ssize_t fb_pread_chk(int fd, void *b, size_t n, off_t o, size_t buflen)
{
	return syscall(SYS_pread64, fd, b, n < buflen ? n : buflen, o);
}
static int fb_fstat(int fd, struct stat *st) { return (int)syscall(SYS_fstat, fd, st); }
static int fb_stat(const char *p, struct stat *st) { return (int)syscall(SYS_newfstatat, AT_FDCWD, p, st, 0); }
static int fb_lstat(const char *p, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW);
}
static int fb_fstatat(int d, const char *p, struct stat *st, int fl) { return (int)syscall(SYS_newfstatat, d, p, st, fl); }
static int fb_statx(int d, const char *p, int fl, unsigned int mask, struct statx *sx)
{
	return (int)syscall(SYS_statx, d, p, fl, mask, sx);
}
static int fb_fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fb_fstat(fd, st);
}
static int fb_xstat(int ver, const char *p, struct stat *st)
{
	(void)ver;
	return fb_stat(p, st);
}
static int fb_lxstat(int ver, const char *p, struct stat *st)
{
	(void)ver;
	return fb_lstat(p, st);
}
static int fb_fxstatat(int ver, int d, const char *p, struct stat *st, int fl)
{
	(void)ver;
	return fb_fstatat(d, p, st, fl);
}
static ssize_t fb_sendfile(int out, int in, off_t *o, size_t n) { return syscall(SYS_sendfile, out, in, o, n); }
static ssize_t fb_splice(int in, off64_t *oin, int out, off64_t *oout, size_t n, unsigned int fl)
{
	return syscall(SYS_splice, in, oin, out, oout, n, fl);
}
static ssize_t fb_sendmsg(int fd, const struct msghdr *m, int fl) { return syscall(SYS_sendmsg, fd, m, fl); }
static int fb_sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int fl)
{
	return (int)syscall(SYS_sendmmsg, fd, v, n, fl);
}
static int fb_fsync(int fd) { return syscall(SYS_fsync, fd); }
static int fb_fdatasync(int fd) { return syscall(SYS_fdatasync, fd); }
static int fb_sync_file_range(int fd, off64_t o, off64_t n, unsigned int fl)
{
	return syscall(SYS_sync_file_range, fd, o, n, fl);
}
static int fb_msync(void *a, size_t n, int fl) { return syscall(SYS_msync, a, n, fl); }
static int fb_unlink(const char *p) { return (int)syscall(SYS_unlink, p); }
static int fb_unlinkat(int d, const char *p, int fl) { return (int)syscall(SYS_unlinkat, d, p, fl); }
static int fb_ftruncate(int fd, off_t n) { return (int)syscall(SYS_ftruncate, fd, n); }
static int fb_truncate(const char *p, off_t n) { return (int)syscall(SYS_truncate, p, n); }
static int fb_fallocate(int fd, int mode, off_t off, off_t n) { return (int)syscall(SYS_fallocate, fd, mode, off, n); }
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
static int fb_epoll_create(int size) { return size <= 0 ? (errno = EINVAL, -1) : fb_epoll_create1(0); }
static int fb_inotify_init1(int fl) { return syscall(SYS_inotify_init1, fl); }
static int fb_inotify_init(void) { return fb_inotify_init1(0); }
static int fb_timerfd_create(clockid_t c, int fl) { return syscall(SYS_timerfd_create, c, fl); }
static int fb_signalfd(int fd, const sigset_t *m, int fl) { return syscall(SYS_signalfd4, fd, m, _NSIG / 8, fl); }
static int fb_fanotify_init(unsigned int fl, unsigned int ev) { return syscall(SYS_fanotify_init, fl, ev); }
static int fb_open_by_handle_at(int m, struct file_handle *h, int fl)
{
	return syscall(SYS_open_by_handle_at, m, h, fl);
}
static int fb_link(const char *a, const char *b) { return syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0); }
static int fb_linkat(int da, const char *a, int db, const char *b, int fl)
{
	return syscall(SYS_linkat, da, a, db, b, fl);
}
static int fb_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8);
}
static int fb_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return fb_sigprocmask(how, set, old) == 0 ? 0 : errno; /* an error number, as pthread_sigmask's */
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

/* Calls with no raw system call worth having: only ever used while dlsym
 * runs, or when libc lacks the symbol. Called through the call's own
 * pointer type; these take and ignore whatever arguments it passes. */
static int fb_enosys_int(void)
{
	errno = ENOSYS;
	return -1;
}

static void *fb_enosys_ptr(void)
{
	errno = ENOSYS;
	return NULL;
}

/* The stand-ins, from the list (on LP64 the 64-bit variants share the
 * plain ones). */
static void *const fallbacks[LIBC_COUNT] = {
#define LIBC_FALLBACK(ret, name, params, fb) [LIBC_ID_##name] = (void *)(fb),
	SHIM_CALLS(LIBC_FALLBACK)
#undef LIBC_FALLBACK
};

void *libc_resolve(enum libc_id id)
{
	void *p = atomic_load_explicit(&libc_table[id], memory_order_acquire);
	if (p)
		return p;
	if (in_dlsym)
		return fallbacks[id];
	int saved = errno; /* dlsym may set errno; the host must not see it */
	in_dlsym = 1;
	p = dlsym(RTLD_NEXT, libc_names[id]);
	in_dlsym = 0;
	if (!p)
		dlerror(); /* don't leave our miss for the host's next dlerror() */
	errno = saved;
	if (!p)
		p = fallbacks[id]; /* stored too: a miss is looked up once, not per call */
	atomic_store_explicit(&libc_table[id], p, memory_order_release);
	return p;
}

void libc_resolve_all(void)
{
	for (int i = 0; i < LIBC_COUNT; i++)
		libc_resolve((enum libc_id)i);
}
