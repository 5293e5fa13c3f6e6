/*
 * open_other.c - calls that hand the app a new descriptor without an open():
 * sockets, pipes, eventfd, epoll, memfd, open_by_handle_at, the mkstemp
 * family, and stdio's fopen/freopen/tmpfile (whose open happens inside
 * libc, out of our reach); and the two libc calls that close or replace
 * descriptors unseen (fcloseall, daemon).
 *
 * The shim does not track these numbers, but it must see them: a number
 * the app closed behind the shim's back and gets again here would
 * otherwise keep its old slot (a stale file whose writes would be counted
 * and whose O_SYNC deferrals would be synced on a socket), and if it was
 * one of the shim's own descriptors, its owner must stop using it. And
 * like every call that makes a descriptor, a failure with EMFILE gets the
 * shim's own descriptors given back and one retry: the app never runs out
 * because of us.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "close_dup.h"
#include "fdtable.h"
#include "flusher.h"
#include "open.h"
#include "paths.h"
#include "shim.h"
#include "shimfd.h"

/* r = CALL; on EMFILE, relieve and retry once. */
#define RETRY_EMFILE(r, call)                                                        \
	do {                                                                         \
		r = call;                                                            \
		if (r < 0 && errno == EMFILE && !shim_bypass() && shimfd_relieve_emfile()) \
			r = call;                                                    \
	} while (0)

static int got(int fd)
{
	if (fd >= 0 && !shim_bypass()) {
		int e = errno;
		fd_app_got(fd);
		fd_bind_pass(fd);
		errno = e;
	}
	return fd;
}

static int got_pair(int r, int fds[2])
{
	if (r == 0) {
		got(fds[0]);
		got(fds[1]);
	}
	return r;
}

SHIM_API int socket(int domain, int type, int protocol)
{
	int r;
	RETRY_EMFILE(r, LIBC(socket)(domain, type, protocol));
	return got(r);
}

SHIM_API int socketpair(int domain, int type, int protocol, int sv[2])
{
	int r;
	RETRY_EMFILE(r, LIBC(socketpair)(domain, type, protocol, sv));
	return got_pair(r, sv);
}

SHIM_API int accept(int fd, __SOCKADDR_ARG addr, socklen_t *len)
{
	int r;
	RETRY_EMFILE(r, LIBC(accept)(fd, addr, len));
	return got(r);
}

SHIM_API int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *len, int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(accept4)(fd, addr, len, flags));
	return got(r);
}

SHIM_API int pipe(int fds[2])
{
	int r;
	RETRY_EMFILE(r, LIBC(pipe)(fds));
	return got_pair(r, fds);
}

SHIM_API int pipe2(int fds[2], int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(pipe2)(fds, flags));
	return got_pair(r, fds);
}

SHIM_API int eventfd(unsigned int initval, int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(eventfd)(initval, flags));
	return got(r);
}

SHIM_API int epoll_create1(int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(epoll_create1)(flags));
	return got(r);
}

SHIM_API int memfd_create(const char *name, unsigned int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(memfd_create)(name, flags));
	return got(r);
}

SHIM_API int epoll_create(int size)
{
	int r;
	RETRY_EMFILE(r, LIBC(epoll_create)(size));
	return got(r);
}

SHIM_API int inotify_init(void)
{
	int r;
	RETRY_EMFILE(r, LIBC(inotify_init)());
	return got(r);
}

SHIM_API int inotify_init1(int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(inotify_init1)(flags));
	return got(r);
}

SHIM_API int timerfd_create(clockid_t clock, int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(timerfd_create)(clock, flags));
	return got(r);
}

SHIM_API int fanotify_init(unsigned int flags, unsigned int event_flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(fanotify_init)(flags, event_flags));
	return got(r);
}

/* fd -1 makes a descriptor; any other changes that one's mask. */
SHIM_API int signalfd(int fd, const sigset_t *mask, int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(signalfd)(fd, mask, flags));
	return fd == -1 ? got(r) : r;
}

/* A directory stream's descriptor is opened inside libc. (Calls libc
 * makes inside itself, like scandir's and nftw's, cannot be seen.) */
SHIM_API DIR *opendir(const char *name)
{
	DIR *d = LIBC(opendir)(name);
	if (!d && errno == EMFILE && !shim_bypass() && shimfd_relieve_emfile())
		d = LIBC(opendir)(name);
	if (d && !shim_bypass()) {
		int e = errno;
		got(dirfd(d));
		errno = e;
	}
	return d;
}

/* ---- stdio ------------------------------------------------------------- */

/* A stream's descriptor is bound like an open()'s: by its path's rule.
 * stdio cannot ask for O_SYNC, so there is nothing to rewrite. */
static FILE *stream_got(FILE *fp, const char *path)
{
	if (!fp || shim_bypass())
		return fp;
	int e = errno;
	int fd = fileno(fp);
	char abs[PATH_MAX];
	if (fd >= 0) {
		fd_app_got(fd);
		if (path && path_absolute(AT_FDCWD, path, abs, sizeof(abs)) == 0)
			open_bind(fd, abs, 0);
	}
	errno = e;
	return fp;
}

#define FOPEN_BODY(name)                                                             \
	SHIM_INLINE FILE *name##_body(const char *path, const char *mode)            \
	{                                                                            \
		FILE *fp = LIBC(name)(path, mode);                                   \
		if (!fp && errno == EMFILE && !shim_bypass() && shimfd_relieve_emfile()) \
			fp = LIBC(name)(path, mode);                                 \
		return stream_got(fp, path);                                         \
	}

FOPEN_BODY(fopen)
FOPEN_BODY(fopen64)

SHIM_API FILE *fopen(const char *path, const char *mode)
{
	return fopen_body(path, mode);
}

SHIM_API FILE *fopen64(const char *path, const char *mode)
{
	return fopen64_body(path, mode);
}

/* freopen closes the stream's descriptor inside libc: that close is
 * prepared like the app's own (a sync using it finishes first), though
 * its error, if any, has nowhere to go but the orphan check. */

#define FREOPEN_BODY(name)                                                           \
	SHIM_INLINE FILE *name##_body(const char *path, const char *mode, FILE *stream) \
	{                                                                            \
		if (!shim_bypass() && stream) {                                      \
			int e = errno;                                               \
			int old = fileno(stream);                                    \
			errno = e;                                                   \
			if (old >= 0)                                                \
				fdops_before_implicit_close(old);                    \
		}                                                                    \
		return stream_got(LIBC(name)(path, mode, stream), path);             \
	}

FREOPEN_BODY(freopen)
FREOPEN_BODY(freopen64)

SHIM_API FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	return freopen_body(path, mode, stream);
}

SHIM_API FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
	return freopen64_body(path, mode, stream);
}

/* ---- temporary files: a path the caller asked for, bound by its rule ---- */

static int temp_got(int fd, const char *path)
{
	if (fd >= 0 && !shim_bypass()) {
		int e = errno;
		char abs[PATH_MAX];
		fd_app_got(fd);
		if (path_absolute(AT_FDCWD, path, abs, sizeof(abs)) == 0)
			open_bind(fd, abs, 0);
		errno = e;
	}
	return fd;
}

#define MKSTEMP_BODY(name, params, args)                                             \
	SHIM_INLINE int name##_body params                                           \
	{                                                                            \
		int r;                                                               \
		RETRY_EMFILE(r, LIBC(name) args);                                    \
		return temp_got(r, tmpl);                                            \
	}

MKSTEMP_BODY(mkstemp, (char *tmpl), (tmpl))
MKSTEMP_BODY(mkstemp64, (char *tmpl), (tmpl))
MKSTEMP_BODY(mkostemp, (char *tmpl, int flags), (tmpl, flags))
MKSTEMP_BODY(mkostemp64, (char *tmpl, int flags), (tmpl, flags))
MKSTEMP_BODY(mkstemps, (char *tmpl, int suffixlen), (tmpl, suffixlen))
MKSTEMP_BODY(mkstemps64, (char *tmpl, int suffixlen), (tmpl, suffixlen))
MKSTEMP_BODY(mkostemps, (char *tmpl, int suffixlen, int flags), (tmpl, suffixlen, flags))
MKSTEMP_BODY(mkostemps64, (char *tmpl, int suffixlen, int flags), (tmpl, suffixlen, flags))

SHIM_API int mkstemp(char *tmpl)
{
	return mkstemp_body(tmpl);
}

SHIM_API int mkstemp64(char *tmpl)
{
	return mkstemp64_body(tmpl);
}

SHIM_API int mkostemp(char *tmpl, int flags)
{
	return mkostemp_body(tmpl, flags);
}

SHIM_API int mkostemp64(char *tmpl, int flags)
{
	return mkostemp64_body(tmpl, flags);
}

SHIM_API int mkstemps(char *tmpl, int suffixlen)
{
	return mkstemps_body(tmpl, suffixlen);
}

SHIM_API int mkstemps64(char *tmpl, int suffixlen)
{
	return mkstemps64_body(tmpl, suffixlen);
}

SHIM_API int mkostemps(char *tmpl, int suffixlen, int flags)
{
	return mkostemps_body(tmpl, suffixlen, flags);
}

SHIM_API int mkostemps64(char *tmpl, int suffixlen, int flags)
{
	return mkostemps64_body(tmpl, suffixlen, flags);
}

/* An unnamed file: bound at its first sync, by the kernel's name for it. */
static FILE *unnamed_got(FILE *fp)
{
	if (fp && !shim_bypass()) {
		int e = errno;
		int fd = fileno(fp);
		if (fd >= 0)
			fd_app_got(fd);
		errno = e;
	}
	return fp;
}

SHIM_API FILE *tmpfile(void)
{
	return unnamed_got(LIBC(tmpfile)());
}

SHIM_API FILE *tmpfile64(void)
{
	return unnamed_got(LIBC(tmpfile64)());
}

SHIM_API int open_by_handle_at(int mount_fd, struct file_handle *handle, int flags)
{
	int r;
	RETRY_EMFILE(r, LIBC(open_by_handle_at)(mount_fd, handle, flags));
	if (r >= 0 && !shim_bypass()) {
		int e = errno;
		fd_app_got(r);
		errno = e;
	}
	return r;
}

/* ---- libc closing and replacing descriptors unseen ----------------------- */

/* fcloseall closes every stream's descriptor inside libc: which ones, the
 * shim cannot tell, so every binding is checked again before it is trusted. */
SHIM_API int fcloseall(void)
{
	int r = LIBC(fcloseall)();
	if (!shim_bypass())
		fdtable_distrust_all();
	return r;
}

/* daemon forks (the child's state is reset by the fork handlers) and, in
 * the child, puts /dev/null on 0, 1 and 2 with libc's own dup2. */
SHIM_API int daemon(int nochdir, int noclose)
{
	int r = LIBC(daemon)(nochdir, noclose);
	if (r == 0 && !shim_bypass()) {
		int e = errno;
		for (int fd = 0; fd < 3; fd++)
			fd_app_got(fd);
		fdtable_distrust_all();
		errno = e;
	}
	return r;
}
