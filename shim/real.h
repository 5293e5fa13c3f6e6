/*
 * real.h - the libc functions the shim stands in front of.
 *
 * One list (SHIM_REAL_FUNCS) declares every interposed symbol once; it
 * generates the table of real function pointers, their names for dlsym,
 * and the typed accessors. Each pointer is resolved with
 * dlsym(RTLD_NEXT, ...) on first use, published with a release store and
 * read with an acquire load, so racing threads at worst both resolve the
 * same value. A call that arrives while this thread is inside dlsym (an
 * allocator or another preloaded library calling back into us) gets a
 * raw-syscall fallback instead of recursing.
 */
#ifndef SYNCSHIM_REAL_H
#define SYNCSHIM_REAL_H

#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* X(return type, name, parameter list) */
#define SHIM_REAL_FUNCS(X)                                                         \
	X(ssize_t, write, (int, const void *, size_t))                             \
	X(ssize_t, pwrite, (int, const void *, size_t, off_t))                     \
	X(ssize_t, pwrite64, (int, const void *, size_t, off64_t))                 \
	X(ssize_t, writev, (int, const struct iovec *, int))                       \
	X(ssize_t, pwritev, (int, const struct iovec *, int, off_t))               \
	X(ssize_t, pwritev64, (int, const struct iovec *, int, off64_t))           \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int))         \
	X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off64_t, int))    \
	X(int, fsync, (int))                                                       \
	X(int, fdatasync, (int))                                                   \
	X(int, sync_file_range, (int, off64_t, off64_t, unsigned int))             \
	X(int, msync, (void *, size_t, int))                                       \
	X(int, syncfs, (int))                                                      \
	X(void, sync, (void))                                                      \
	X(int, open, (const char *, int, ...))                                     \
	X(int, open64, (const char *, int, ...))                                   \
	X(int, openat, (int, const char *, int, ...))                              \
	X(int, openat64, (int, const char *, int, ...))                            \
	X(int, __open_2, (const char *, int))                                      \
	X(int, __open64_2, (const char *, int))                                    \
	X(int, __openat_2, (int, const char *, int))                               \
	X(int, __openat64_2, (int, const char *, int))                             \
	X(int, creat, (const char *, mode_t))                                      \
	X(int, creat64, (const char *, mode_t))                                    \
	X(int, close, (int))                                                       \
	X(int, close_range, (unsigned int, unsigned int, int))                     \
	X(int, fclose, (FILE *))                                                   \
	X(int, dup, (int))                                                         \
	X(int, dup2, (int, int))                                                   \
	X(int, dup3, (int, int, int))                                              \
	X(int, fcntl, (int, int, ...))                                             \
	X(int, fcntl64, (int, int, ...))                                           \
	X(void, closefrom, (int))                                                  \
	X(int, socket, (int, int, int))                                            \
	X(int, socketpair, (int, int, int, int *))                                 \
	X(int, accept, (int, __SOCKADDR_ARG, socklen_t *))                         \
	X(int, accept4, (int, __SOCKADDR_ARG, socklen_t *, int))                   \
	X(int, pipe, (int *))                                                      \
	X(int, pipe2, (int *, int))                                                \
	X(int, eventfd, (unsigned int, int))                                       \
	X(int, epoll_create1, (int))                                               \
	X(int, memfd_create, (const char *, unsigned int))                         \
	X(FILE *, fopen, (const char *, const char *))                             \
	X(FILE *, fopen64, (const char *, const char *))                           \
	X(FILE *, freopen, (const char *, const char *, FILE *))                   \
	X(FILE *, freopen64, (const char *, const char *, FILE *))                 \
	X(int, rename, (const char *, const char *))                               \
	X(int, renameat, (int, const char *, int, const char *))                   \
	X(int, renameat2, (int, const char *, int, const char *, unsigned int))    \
	X(int, link, (const char *, const char *))                                 \
	X(int, linkat, (int, const char *, int, const char *, int))                \
	X(void *, mmap, (void *, size_t, int, int, int, off_t))                    \
	X(void *, mmap64, (void *, size_t, int, int, int, off64_t))                \
	X(int, munmap, (void *, size_t))                                           \
	X(int, execve, (const char *, char *const[], char *const[]))               \
	X(int, execveat, (int, const char *, char *const[], char *const[], int))   \
	X(int, fexecve, (int, char *const[], char *const[]))                       \
	X(int, execv, (const char *, char *const[]))                               \
	X(int, execvp, (const char *, char *const[]))                              \
	X(int, execvpe, (const char *, char *const[], char *const[]))              \
	X(pid_t, vfork, (void))                                                    \
	X(void, exit, (int))                                                       \
	X(void, _exit, (int))                                                      \
	X(void, _Exit, (int))

enum real_id {
#define REAL_ID(ret, name, params) REAL_ID_##name,
	SHIM_REAL_FUNCS(REAL_ID)
#undef REAL_ID
	REAL_COUNT
};

/* Typed pointer types: real_write_fn, real_fsync_fn, ... */
#define REAL_TYPE(ret, name, params) typedef ret(*real_##name##_fn) params;
SHIM_REAL_FUNCS(REAL_TYPE)
#undef REAL_TYPE

extern _Atomic(void *) real_table[REAL_COUNT];
void *real_resolve(enum real_id id);

/* REAL(write)(fd, buf, n): the next definition of write after the shim. */
#define REAL(name)                                                                   \
	((real_##name##_fn)({                                                        \
		void *p_ = atomic_load_explicit(&real_table[REAL_ID_##name],          \
						memory_order_acquire);                \
		p_ ? p_ : real_resolve(REAL_ID_##name);                               \
	}))

/* Resolve everything up front (constructor), so later calls never dlsym. */
void real_resolve_all(void);

/* Also exported, though not in the table: the execl forms (turned into
 * their execv equivalents) and the shim's own API. The export map is made
 * from SHIM_REAL_FUNCS and this list (Makefile). */
#define SHIM_EXTRA_EXPORTS execl execlp execle syncshim_version syncshim_flush

#endif
