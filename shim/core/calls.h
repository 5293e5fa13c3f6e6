/*
 * calls.h - the one list of interposed calls.
 *
 * Every libc function the shim stands in front of is one line of
 * SHIM_CALLS: its return type, name, parameter types, and the stand-in used
 * when libc's cannot be reached. From it come the table of libc's
 * functions, their names for dlsym, the typed LIBC() accessors, the
 * wrappers' prototypes (so the compiler checks each wrapper against both
 * this line and libc's own header), and the export map (Makefile): adding
 * a call is its line here plus its wrapper.
 *
 * Each libc function is resolved with dlsym(RTLD_NEXT, ...) once, in the
 * constructor, published with a release store and read with an acquire
 * load. A call that arrives while this thread is inside dlsym (an
 * allocator or another preloaded library calling back into us) gets the
 * stand-in instead of recursing; so does a call whose symbol this libc
 * lacks. A stand-in is a raw system call with plain kernel semantics where
 * one exists; a call with none worth having names fb_enosys_int or
 * fb_enosys_ptr (it fails with ENOSYS: only in those two cases, never in a
 * sane host).
 */
#ifndef SYNCSHIM_CALLS_H
#define SYNCSHIM_CALLS_H

#include <aio.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/select.h>
#include <ucontext.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

/* X(return type, name, parameter types, stand-in) */
#define SHIM_CALLS(X)                                                                \
	X(ssize_t, write, (int, const void *, size_t), fb_write)                                                 \
	X(ssize_t, pwrite, (int, const void *, size_t, off_t), fb_pwrite)                                        \
	X(ssize_t, pwrite64, (int, const void *, size_t, off64_t), fb_pwrite)                                    \
	X(ssize_t, writev, (int, const struct iovec *, int), fb_writev)                                          \
	X(ssize_t, pwritev, (int, const struct iovec *, int, off_t), fb_pwritev)                                 \
	X(ssize_t, pwritev64, (int, const struct iovec *, int, off64_t), fb_pwritev)                             \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int), fb_pwritev2)                          \
	X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off64_t, int), fb_pwritev2)                     \
	X(ssize_t, copy_file_range, (int, off64_t *, int, off64_t *, size_t, unsigned int), fb_copy_file_range)  \
	X(ssize_t, read, (int, void *, size_t), fb_read)                                                         \
	X(ssize_t, readv, (int, const struct iovec *, int), fb_readv)                                            \
	X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int), fb_preadv2)                            \
	X(ssize_t, preadv64v2, (int, const struct iovec *, int, off64_t, int), fb_preadv2)                       \
	X(ssize_t, pread, (int, void *, size_t, off_t), fb_pread)                                                \
	X(ssize_t, pread64, (int, void *, size_t, off64_t), fb_pread)                                            \
	X(ssize_t, preadv, (int, const struct iovec *, int, off_t), fb_preadv)                                   \
	X(ssize_t, preadv64, (int, const struct iovec *, int, off64_t), fb_preadv)                               \
	X(ssize_t, __read_chk, (int, void *, size_t, size_t), fb_read_chk)                                       \
	X(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t), fb_pread_chk)                              \
	X(ssize_t, __pread64_chk, (int, void *, size_t, off64_t, size_t), fb_pread_chk)                          \
	X(int, fstat, (int, struct stat *), fb_fstat)                                                            \
	X(int, fstat64, (int, struct stat64 *), fb_fstat)                                                        \
	X(int, stat, (const char *, struct stat *), fb_stat)                                                     \
	X(int, stat64, (const char *, struct stat64 *), fb_stat)                                                 \
	X(int, lstat, (const char *, struct stat *), fb_lstat)                                                   \
	X(int, lstat64, (const char *, struct stat64 *), fb_lstat)                                               \
	X(int, fstatat, (int, const char *, struct stat *, int), fb_fstatat)                                     \
	X(int, fstatat64, (int, const char *, struct stat64 *, int), fb_fstatat)                                 \
	X(int, statx, (int, const char *, int, unsigned int, struct statx *), fb_statx)                          \
	X(int, __fxstat, (int, int, struct stat *), fb_fxstat)                                                   \
	X(int, __fxstat64, (int, int, struct stat64 *), fb_fxstat)                                               \
	X(int, __xstat, (int, const char *, struct stat *), fb_xstat)                                            \
	X(int, __xstat64, (int, const char *, struct stat64 *), fb_xstat)                                        \
	X(int, __lxstat, (int, const char *, struct stat *), fb_lxstat)                                          \
	X(int, __lxstat64, (int, const char *, struct stat64 *), fb_lxstat)                                      \
	X(int, __fxstatat, (int, int, const char *, struct stat *, int), fb_fxstatat)                            \
	X(int, __fxstatat64, (int, int, const char *, struct stat64 *, int), fb_fxstatat)                        \
	X(int, aio_read, (struct aiocb *), fb_enosys_int)                                                        \
	X(int, aio_read64, (struct aiocb64 *), fb_enosys_int)                                                    \
	X(int, aio_write, (struct aiocb *), fb_enosys_int)                                                       \
	X(int, aio_write64, (struct aiocb64 *), fb_enosys_int)                                                   \
	X(int, aio_fsync, (int, struct aiocb *), fb_enosys_int)                                                  \
	X(int, aio_fsync64, (int, struct aiocb64 *), fb_enosys_int)                                              \
	X(int, lio_listio, (int, struct aiocb *const[], int, struct sigevent *), fb_enosys_int)                  \
	X(int, lio_listio64, (int, struct aiocb64 *const[], int, struct sigevent *), fb_enosys_int)              \
	X(off_t, lseek, (int, off_t, int), fb_lseek)                                                             \
	X(off64_t, lseek64, (int, off64_t, int), fb_lseek)                                                       \
	X(ssize_t, sendfile, (int, int, off_t *, size_t), fb_sendfile)                                           \
	X(ssize_t, sendfile64, (int, int, off64_t *, size_t), fb_sendfile)                                       \
	X(ssize_t, splice, (int, off64_t *, int, off64_t *, size_t, unsigned int), fb_splice)                    \
	X(ssize_t, sendmsg, (int, const struct msghdr *, int), fb_sendmsg)                                       \
	X(int, sendmmsg, (int, struct mmsghdr *, unsigned int, int), fb_sendmmsg)                                \
	X(FILE *, fdopen, (int, const char *), fb_enosys_ptr)                                                    \
	X(FILE *, popen, (const char *, const char *), fb_enosys_ptr)                                            \
	X(int, system, (const char *), fb_enosys_int)                                                            \
	X(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *,                          \
			     const posix_spawnattr_t *, char *const[], char *const[]), fb_enosys_int)            \
	X(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *,                         \
			      const posix_spawnattr_t *, char *const[], char *const[]), fb_enosys_int)           \
	X(int, fsync, (int), fb_fsync)                                                                           \
	X(int, fdatasync, (int), fb_fdatasync)                                                                   \
	X(int, sync_file_range, (int, off64_t, off64_t, unsigned int), fb_sync_file_range)                       \
	X(int, msync, (void *, size_t, int), fb_msync)                                                           \
	X(int, syncfs, (int), fb_syncfs)                                                                         \
	X(void, sync, (void), fb_sync)                                                                           \
	X(int, open, (const char *, int, ...), fb_open)                                                          \
	X(int, open64, (const char *, int, ...), fb_open)                                                        \
	X(int, openat, (int, const char *, int, ...), fb_openat)                                                 \
	X(int, openat64, (int, const char *, int, ...), fb_openat)                                               \
	X(int, __open_2, (const char *, int), fb_open_2)                                                         \
	X(int, __open64_2, (const char *, int), fb_open_2)                                                       \
	X(int, __openat_2, (int, const char *, int), fb_openat_2)                                                \
	X(int, __openat64_2, (int, const char *, int), fb_openat_2)                                              \
	X(int, creat, (const char *, mode_t), fb_creat)                                                          \
	X(int, creat64, (const char *, mode_t), fb_creat)                                                        \
	X(int, close, (int), fb_close)                                                                           \
	X(int, setuid, (uid_t), fb_enosys_int)                                                                   \
	X(int, setgid, (gid_t), fb_enosys_int)                                                                   \
	X(int, seteuid, (uid_t), fb_enosys_int)                                                                  \
	X(int, setegid, (gid_t), fb_enosys_int)                                                                  \
	X(int, setreuid, (uid_t, uid_t), fb_enosys_int)                                                          \
	X(int, setregid, (gid_t, gid_t), fb_enosys_int)                                                          \
	X(int, setresuid, (uid_t, uid_t, uid_t), fb_enosys_int)                                                  \
	X(int, setresgid, (gid_t, gid_t, gid_t), fb_enosys_int)                                                  \
	X(int, setgroups, (size_t, const gid_t *), fb_enosys_int)                                                \
	X(int, initgroups, (const char *, gid_t), fb_enosys_int)                                                 \
	X(int, close_range, (unsigned int, unsigned int, int), fb_close_range)                                   \
	X(int, fclose, (FILE *), fb_enosys_int)                                                                  \
	X(int, dup, (int), fb_dup)                                                                               \
	X(int, dup2, (int, int), fb_dup2)                                                                        \
	X(int, dup3, (int, int, int), fb_dup3)                                                                   \
	X(int, fcntl, (int, int, ...), fb_fcntl)                                                                 \
	X(int, fcntl64, (int, int, ...), fb_fcntl)                                                               \
	X(void, closefrom, (int), fb_closefrom)                                                                  \
	X(int, socket, (int, int, int), fb_socket)                                                               \
	X(int, socketpair, (int, int, int, int[2]), fb_socketpair)                                               \
	X(int, accept, (int, __SOCKADDR_ARG, socklen_t *), fb_accept)                                            \
	X(int, accept4, (int, __SOCKADDR_ARG, socklen_t *, int), fb_accept4)                                     \
	X(int, pipe, (int[2]), fb_pipe)                                                                          \
	X(int, pipe2, (int[2], int), fb_pipe2)                                                                   \
	X(int, eventfd, (unsigned int, int), fb_eventfd)                                                         \
	X(int, epoll_create1, (int), fb_epoll_create1)                                                           \
	X(int, memfd_create, (const char *, unsigned int), fb_memfd_create)                                      \
	X(int, epoll_create, (int), fb_epoll_create)                                                             \
	X(int, inotify_init, (void), fb_inotify_init)                                                            \
	X(int, inotify_init1, (int), fb_inotify_init1)                                                           \
	X(int, timerfd_create, (clockid_t, int), fb_timerfd_create)                                              \
	X(int, signalfd, (int, const sigset_t *, int), fb_signalfd)                                              \
	X(int, fanotify_init, (unsigned int, unsigned int), fb_fanotify_init)                                    \
	X(DIR *, opendir, (const char *), fb_enosys_ptr)                                                         \
	X(FILE *, fopen, (const char *, const char *), fb_enosys_ptr)                                            \
	X(FILE *, fopen64, (const char *, const char *), fb_enosys_ptr)                                          \
	X(FILE *, freopen, (const char *, const char *, FILE *), fb_enosys_ptr)                                  \
	X(FILE *, freopen64, (const char *, const char *, FILE *), fb_enosys_ptr)                                \
	X(int, mkstemp, (char *), fb_enosys_int)                                                                 \
	X(int, mkstemp64, (char *), fb_enosys_int)                                                               \
	X(int, mkostemp, (char *, int), fb_enosys_int)                                                           \
	X(int, mkostemp64, (char *, int), fb_enosys_int)                                                         \
	X(int, mkstemps, (char *, int), fb_enosys_int)                                                           \
	X(int, mkstemps64, (char *, int), fb_enosys_int)                                                         \
	X(int, mkostemps, (char *, int, int), fb_enosys_int)                                                     \
	X(int, mkostemps64, (char *, int, int), fb_enosys_int)                                                   \
	X(FILE *, tmpfile, (void), fb_enosys_ptr)                                                                \
	X(FILE *, tmpfile64, (void), fb_enosys_ptr)                                                              \
	X(int, fcloseall, (void), fb_enosys_int)                                                                 \
	X(int, daemon, (int, int), fb_enosys_int)                                                                \
	X(int, open_by_handle_at, (int, struct file_handle *, int), fb_open_by_handle_at)                        \
	X(int, rename, (const char *, const char *), fb_rename)                                                  \
	X(int, renameat, (int, const char *, int, const char *), fb_renameat)                                    \
	X(int, renameat2, (int, const char *, int, const char *, unsigned int), fb_renameat2)                    \
	X(int, link, (const char *, const char *), fb_link)                                                      \
	X(int, linkat, (int, const char *, int, const char *, int), fb_linkat)                                   \
	X(int, unlink, (const char *), fb_unlink)                                                                \
	X(int, unlinkat, (int, const char *, int), fb_unlinkat)                                                  \
	X(int, ftruncate, (int, off_t), fb_ftruncate)                                                            \
	X(int, ftruncate64, (int, off64_t), fb_ftruncate)                                                        \
	X(int, truncate, (const char *, off_t), fb_truncate)                                                     \
	X(int, truncate64, (const char *, off64_t), fb_truncate)                                                 \
	X(int, fallocate, (int, int, off_t, off_t), fb_fallocate)                                                \
	X(int, fallocate64, (int, int, off64_t, off64_t), fb_fallocate)                                          \
	X(void *, mmap, (void *, size_t, int, int, int, off_t), fb_mmap)                                         \
	X(void *, mmap64, (void *, size_t, int, int, int, off64_t), fb_mmap)                                     \
	X(int, munmap, (void *, size_t), fb_munmap)                                                              \
	X(int, execve, (const char *, char *const[], char *const[]), fb_execve)                                  \
	X(int, execveat, (int, const char *, char *const[], char *const[], int), fb_execveat)                    \
	X(int, fexecve, (int, char *const[], char *const[]), fb_fexecve)                                         \
	X(int, execv, (const char *, char *const[]), fb_execv)                                                   \
	X(int, execvp, (const char *, char *const[]), fb_execv)                                                  \
	X(int, execvpe, (const char *, char *const[], char *const[]), fb_execvpe)                                \
	X(pid_t, vfork, (void), fb_vfork)                                                                        \
	X(void, exit, (int), fb_exit)                                                                            \
	X(void, _exit, (int), fb_exit)                                                                           \
	X(void, _Exit, (int), fb_exit)                                                                           \
	X(void, quick_exit, (int), fb_exit)                                                                      \
	X(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *), fb_enosys_int)  \
	X(int, __libc_start_main, (int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void),  \
				   void (*)(void), void *), fb_enosys_int)  \
	X(long, syscall, (long, ...), fb_syscall)                                                                \
	X(int, sigaction, (int, const struct sigaction *, struct sigaction *), fb_enosys_int)                    \
	X(int, __sigaction, (int, const struct sigaction *, struct sigaction *), fb_enosys_int)                  \
	X(sighandler_t, signal, (int, sighandler_t), fb_enosys_ptr)                                              \
	X(sighandler_t, bsd_signal, (int, sighandler_t), fb_enosys_ptr)                                          \
	X(sighandler_t, ssignal, (int, sighandler_t), fb_enosys_ptr)                                             \
	X(sighandler_t, sysv_signal, (int, sighandler_t), fb_enosys_ptr)                                         \
	X(sighandler_t, __sysv_signal, (int, sighandler_t), fb_enosys_ptr)                                       \
	X(sighandler_t, sigset, (int, sighandler_t), fb_enosys_ptr)                                              \
	X(int, sigignore, (int), fb_enosys_int)                                                                  \
	X(int, sighold, (int), fb_enosys_int)                                                                    \
	X(int, sigblock, (int), fb_enosys_int)                                                                   \
	X(int, sigsetmask, (int), fb_enosys_int)                                                                 \
	X(int, __sigpause, (int, int), fb_enosys_int)                                                            \
	X(int, sigsuspend, (const sigset_t *), fb_enosys_int)                                                    \
	X(int, __sigsuspend, (const sigset_t *), fb_enosys_int)                                                  \
	X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *), fb_enosys_int)       \
	X(int, __ppoll_chk, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t),        \
	  fb_enosys_int)                                                                                         \
	X(int, pselect, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *),          \
	  fb_enosys_int)                                                                                         \
	X(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *), fb_enosys_int)              \
	X(int, epoll_pwait2, (int, struct epoll_event *, int, const struct timespec *, const sigset_t *),        \
	  fb_enosys_int)                                                                                         \
	X(int, setcontext, (const ucontext_t *), fb_enosys_int)                                                  \
	X(int, swapcontext, (ucontext_t *, const ucontext_t *), fb_enosys_int)                                   \
	X(int, sigprocmask, (int, const sigset_t *, sigset_t *), fb_sigprocmask)                                 \
	X(int, pthread_sigmask, (int, const sigset_t *, sigset_t *), fb_pthread_sigmask)

/*
 * liburing's exported entry points (liburing.so.2), interposed so a ring's
 * new entries are seen before they are published (the submit family) or
 * before the kernel reads them (the raw calls, io_uring_enter and its
 * kin, which liburing makes by inline system calls) (shim/calls/uring.c). Not
 * libc's: resolved lazily, each time until found (liburing may be loaded
 * late, by dlopen), never through the table above. Their prototypes come
 * from <liburing.h>, in uring.c only.
 */
#define SHIM_LIBURING_CALLS(X)                                                                              \
	X(int, io_uring_queue_init, (unsigned, struct io_uring *, unsigned), 0)                                  \
	X(int, io_uring_queue_init_params, (unsigned, struct io_uring *, struct io_uring_params *), 0)           \
	X(void, io_uring_queue_exit, (struct io_uring *), 0)                                                     \
	X(int, io_uring_queue_mmap, (int, struct io_uring_params *, struct io_uring *), 0)                       \
	X(int, io_uring_setup, (unsigned, struct io_uring_params *), 0)                                          \
	X(int, io_uring_enter, (unsigned, unsigned, unsigned, unsigned, sigset_t *), 0)                          \
	X(int, io_uring_enter2, (unsigned, unsigned, unsigned, unsigned, sigset_t *, size_t), 0)                 \
	X(int, io_uring_register, (unsigned, unsigned, const void *, unsigned), 0)                               \
	X(int, io_uring_submit, (struct io_uring *), 0)                                                          \
	X(int, io_uring_submit_and_wait, (struct io_uring *, unsigned), 0)                                       \
	X(int, io_uring_submit_and_wait_timeout, (struct io_uring *, struct io_uring_cqe **, unsigned,           \
						  struct __kernel_timespec *, sigset_t *), 0)             \
	X(int, io_uring_submit_and_get_events, (struct io_uring *), 0)                                           \
	X(int, io_uring_get_events, (struct io_uring *), 0)                                                      \
	X(int, __io_uring_get_cqe, (struct io_uring *, struct io_uring_cqe **, unsigned, unsigned, sigset_t *), 0) \
	X(int, io_uring_wait_cqes, (struct io_uring *, struct io_uring_cqe **, unsigned,                         \
				    struct __kernel_timespec *, sigset_t *), 0)                           \
	X(int, io_uring_wait_cqe_timeout, (struct io_uring *, struct io_uring_cqe **, struct __kernel_timespec *), 0) \
	X(int, io_uring_register_files, (struct io_uring *, const int *, unsigned), 0)                           \
	X(int, io_uring_register_files_update, (struct io_uring *, unsigned, const int *, unsigned), 0)          \
	X(int, io_uring_register_files_tags, (struct io_uring *, const int *, const __u64 *, unsigned), 0)       \
	X(int, io_uring_register_files_sparse, (struct io_uring *, unsigned), 0)                                 \
	X(int, io_uring_register_files_update_tag, (struct io_uring *, unsigned, const int *, const __u64 *,     \
						    unsigned), 0)                                         \
	X(int, io_uring_unregister_files, (struct io_uring *), 0)

enum libc_id {
#define LIBC_ID(ret, name, params, fb) LIBC_ID_##name,
	SHIM_CALLS(LIBC_ID)
#undef LIBC_ID
	LIBC_COUNT
};

/* Typed pointer types: libc_write_fn, libc_fsync_fn, ... */
#define LIBC_TYPE(ret, name, params, fb) typedef ret(*libc_##name##_fn) params;
SHIM_CALLS(LIBC_TYPE)
#undef LIBC_TYPE

/* The wrappers' prototypes, as the list has them. */
#define LIBC_PROTO(ret, name, params, fb) ret name params;
SHIM_CALLS(LIBC_PROTO)
#undef LIBC_PROTO

extern _Atomic(void *) libc_table[LIBC_COUNT];
void *libc_resolve(enum libc_id id);

/* LIBC(write)(fd, buf, n): the next definition of write after the shim. */
#define LIBC(name)                                                                   \
	((libc_##name##_fn)({                                                        \
		void *p_ = atomic_load_explicit(&libc_table[LIBC_ID_##name],          \
						memory_order_acquire);                \
		p_ ? p_ : libc_resolve(LIBC_ID_##name);                               \
	}))

/* Resolve everything up front (constructor), so later calls never dlsym. */
void libc_resolve_all(void);

/* Also exported, though not in the list: the execl forms (turned into
 * their execv equivalents) and the shim's own API. */
#define SHIM_EXTRA_EXPORTS execl execlp execle syncshim_version syncshim_flush
int execl(const char *path, const char *arg, ...);
int execlp(const char *file, const char *arg, ...);
int execle(const char *path, const char *arg, ...);
const char *syncshim_version(void);
void syncshim_flush(void);

#endif
