/*
 * fdops.c - descriptor lifecycle: close, dup, fcntl(F_DUPFD), rename.
 *
 * A slot is cleared before the real close, so a descriptor number the
 * kernel hands out again never inherits the old file's state. Dups share
 * the file (one shim_file per inode), so a sync on any of them is a sync
 * of the same file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "flusher.h"
#include "shim.h"
#include "trace.h"

int fcntl64(int fd, int cmd, ...);

/* close reports a deferred sync's error the fd has not reported yet, as
 * close(2) reports write-back errors on NFS: the fd is closed either way. */
static int close_tracked(int fd, int (*do_close)(void *), void *arg)
{
	struct fd_slot *s = fd_slot(fd);
	struct shim_file *f = s ? atomic_load_explicit(&s->file, memory_order_acquire) : NULL;
	int e0 = errno;
	int sync_err = f && (atomic_load(&s->state) & SLOT_KIND_MASK) == FD_FILE
			       ? flusher_before_close(f, fd) : 0;
	f = fd_unbind(fd);
	errno = e0;
	if (!f)
		return do_close(arg);
	struct trace_start t;
	trace_begin(&t);
	int r = do_close(arg);
	if (r == 0 && sync_err) {
		errno = sync_err;
		r = -1;
	}
	int e = errno;
	trace_end(&t, OP_CLOSE, f, r, r == 0 ? 0 : e);
	file_put(f);
	errno = e;
	return r;
}

static int real_close_fd(void *arg)
{
	return REAL(close)(*(int *)arg);
}

static int real_fclose(void *arg)
{
	return REAL(fclose)(arg);
}

SHIM_API int close(int fd)
{
	if (shim_bypass())
		return REAL(close)(fd);
	if (flusher_close_private(fd)) {
		errno = EBADF; /* not the app's: without the shim it would not exist */
		return -1;
	}
	return close_tracked(fd, real_close_fd, &fd);
}

/* stdio closes its descriptor inside libc where we cannot see it; catch
 * fclose so the slot does not outlive the stream. */
SHIM_API int fclose(FILE *stream)
{
	if (shim_bypass() || !stream)
		return REAL(fclose)(stream);
	int e0 = errno;
	int fd = fileno(stream);
	errno = e0;
	if (fd < 0)
		return REAL(fclose)(stream);
	return close_tracked(fd, real_fclose, stream);
}

/* The range is closed around the flusher's private descriptors, which
 * the app never had: the app sees exactly what it would without us. */
static int close_range_around_private(unsigned int first, unsigned int last, int flags)
{
	unsigned int top = (unsigned int)atomic_load(&shim.private_fd_max);
	unsigned int from = first;
	for (unsigned int fd = first; fd <= last && fd <= top; fd++) {
		if (!flusher_is_private_fd((int)fd))
			continue;
		if (fd > from && REAL(close_range)(from, fd - 1, flags) != 0)
			return -1;
		from = fd + 1;
		if (fd == ~0u)
			return 0;
	}
	return from > last ? 0 : REAL(close_range)(from, last, flags);
}

SHIM_API int close_range(unsigned int first, unsigned int last, int flags)
{
	if (shim_bypass() || first > last)
		return REAL(close_range)(first, last, flags);
	if (!(flags & CLOSE_RANGE_CLOEXEC)) {
		int e0 = errno;
		unsigned int end = last < (unsigned int)shim.nfds ? last : (unsigned int)shim.nfds - 1;
		for (unsigned int fd = first; fd <= end && shim.nfds > 0; fd++) {
			struct fd_slot *s = fd_slot((int)fd);
			if ((atomic_load(&s->state) & SLOT_KIND_MASK) == FD_FILE) {
				struct shim_file *f = atomic_load(&s->file);
				if (f)
					flusher_before_close(f, (int)fd);
				file_put(fd_unbind((int)fd));
			}
		}
		errno = e0;
	}
	return close_range_around_private(first, last, flags);
}

static int dup_done(int oldfd, int newfd)
{
	if (newfd >= 0 && !shim_bypass()) {
		int e = errno;
		fd_copy(oldfd, newfd);
		errno = e;
	}
	return newfd;
}

SHIM_API int dup(int fd)
{
	return dup_done(fd, REAL(dup)(fd));
}

SHIM_API int dup2(int oldfd, int newfd)
{
	if (oldfd != newfd && !shim_bypass())
		flusher_vacate(newfd);
	int r = REAL(dup2)(oldfd, newfd);
	return oldfd == newfd ? r : dup_done(oldfd, r);
}

SHIM_API int dup3(int oldfd, int newfd, int flags)
{
	if (oldfd != newfd && !shim_bypass())
		flusher_vacate(newfd);
	return dup_done(oldfd, REAL(dup3)(oldfd, newfd, flags));
}

/* fcntl's third argument is an int, a long or a pointer depending on cmd;
 * passing it on as a pointer-sized value is what libc itself does. */
#define FCNTL_WRAPPER(name)                                                          \
	SHIM_API int name(int fd, int cmd, ...)                                      \
	{                                                                            \
		va_list ap;                                                          \
		va_start(ap, cmd);                                                   \
		void *arg = va_arg(ap, void *);                                      \
		va_end(ap);                                                          \
		int r = REAL(name)(fd, cmd, arg);                                    \
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)                        \
			return dup_done(fd, r);                                      \
		return r;                                                            \
	}

FCNTL_WRAPPER(fcntl)
FCNTL_WRAPPER(fcntl64)
