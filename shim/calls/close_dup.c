/*
 * close_dup.c - descriptor lifecycle: close, close_range, closefrom, fclose,
 * dup, dup2, dup3, fcntl(F_DUPFD).
 *
 * A slot is cleared before the real close, so a descriptor number the
 * kernel hands out again never inherits the old file's state. Before
 * that, the flusher gets its say (flusher_before_close): a sync that is
 * using the number finishes first, and if syncs are still owed it keeps a
 * descriptor of its own. Dups share the file (one shim_file per inode), so
 * a sync on any of them is a sync of the same file.
 *
 * close() reports a deferred sync's error the fd has not reported yet, as
 * close(2) reports write-back errors on NFS; close_range(), closefrom()
 * and the implicit close of dup2() cannot, so they leave it for another
 * descriptor, or, when none is left, for stderr (syncerr.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "close_dup.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "log.h"
#include "position.h"
#include "shim.h"
#include "shimfd.h"
#include "syncerr.h"
#include "trace.h"

/* Everything but the real close: the flusher's say, the slot cleared.
 * Returns the file (with a reference) and the error sequence the fd saw. */
static struct shim_file *prepare_close(int fd, uint32_t *seen)
{
	fdtable_scan_once();
	struct shim_file *f = fd_file_ref(fd);
	if (f)
		flusher_before_close(f, fd);
	file_put(fd_unbind(fd, seen));
	if (f && atomic_load(&f->nfds) == 0 && atomic_load(&f->fl.priv_fd) < 0)
		syncerr_last_descriptor(f, fd); /* the real close comes next */
	return f;
}

void fdops_before_implicit_close(int fd)
{
	int e = errno;
	uint32_t seen;
	struct shim_file *f = prepare_close(fd, &seen);
	if (f) {
		syncerr_tell_if_orphaned(f);
		file_put(f);
	}
	errno = e;
}

static int close_tracked(int fd, int (*do_close)(void *), void *arg)
{
	int e0 = errno;
	uint32_t seen;
	struct shim_file *f = prepare_close(fd, &seen);
	errno = e0;
	if (!f)
		return do_close(arg);
	int sync_err = syncerr_take_seen(f, &seen);
	errno = e0;
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
	return LIBC(close)(*(int *)arg);
}

static int real_fclose(void *arg)
{
	return LIBC(fclose)(arg);
}

SHIM_API int close(int fd)
{
	if (shim_bypass())
		return LIBC(close)(fd);
	if (shimfd_app_close(fd)) {
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
		return LIBC(fclose)(stream);
	int e0 = errno;
	int fd = fileno(stream);
	errno = e0;
	if (fd < 0)
		return LIBC(fclose)(stream);
	return close_tracked(fd, real_fclose, stream);
}

/* The highest number worth looking at in [first, last]: no slot above
 * the highest one ever used holds anything. */
static unsigned range_top(unsigned last)
{
	unsigned top = (unsigned)atomic_load(&shim.fd_hi);
	return last < top ? last : top;
}

/* The range is closed around the shim's own descriptors, which the app
 * never had: the app sees exactly what it would without us. */
static int close_range_around_ours(unsigned first, unsigned last, int flags)
{
	unsigned from = first;
	for (unsigned fd = first; fd <= range_top(last) && shim.nfds > 0; fd++) {
		if (!shimfd_is_ours((int)fd))
			continue;
		if (fd > from && LIBC(close_range)(from, fd - 1, flags) != 0)
			return -1;
		from = fd + 1;
	}
	return from > last ? 0 : LIBC(close_range)(from, last, flags);
}

static void prepare_close_range(unsigned first, unsigned last)
{
	for (unsigned fd = first; fd <= range_top(last) && shim.nfds > 0; fd++) {
		uint32_t st;
		if (fd_peek((int)fd, &st))
			fdops_before_implicit_close((int)fd);
		else if (fd_is_pass((int)fd))
			file_put(fd_unbind((int)fd, NULL));
	}
}

SHIM_API int close_range(unsigned int first, unsigned int last, int flags)
{
	if (shim_bypass() || first > last)
		return LIBC(close_range)(first, last, flags);
	int e0 = errno;
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		prepare_close_range(first, last);
	errno = e0;
	return close_range_around_ours(first, last, flags);
}

/* glibc's closefrom closes through an internal close_range: done here
 * through ours, so the shim's descriptors survive and slots are cleared. */
SHIM_API void closefrom(int lowfd)
{
	if (shim_bypass() || lowfd < 0) {
		LIBC(closefrom)(lowfd);
		return;
	}
	int e0 = errno;
	if (close_range((unsigned)lowfd, ~0u, 0) != 0 && errno == ENOSYS) {
		for (int fd = lowfd; fd < shim.nfds; fd++)
			if (!shimfd_is_ours(fd))
				LIBC(close)(fd);
	}
	errno = e0;
}

/* ---- dups ------------------------------------------------------------------ */

#define RETRY_EMFILE(r, call)                                                        \
	do {                                                                         \
		r = call;                                                            \
		if (r < 0 && errno == EMFILE && !shim_bypass() && shimfd_relieve_emfile()) \
			r = call;                                                    \
	} while (0)

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
	int r;
	pos_forget(fd); /* two numbers, one position: no longer followed */
	RETRY_EMFILE(r, LIBC(dup)(fd));
	return dup_done(fd, r);
}

/* dup2/dup3 close newfd first: ours is moved away, the app's prepared like
 * a close. Only if oldfd is a descriptor: a dup2 from a bad number fails
 * without touching newfd, and a slot unbound for it would be rebound from
 * F_GETFL, where the O_SYNC the shim stripped is gone for good. */
static void before_dup_onto(int oldfd, int newfd)
{
	if (oldfd == newfd || shim_bypass())
		return;
	int e = errno;
	bool bad = LIBC(fcntl)(oldfd, F_GETFD) < 0;
	errno = e;
	if (bad)
		return;
	shimfd_vacate(newfd);
	fdops_before_implicit_close(newfd);
}

/*
 * Onto a number the app chose, another thread's dup2 onto the same number
 * may land in the kernel before or after ours, and the two slot copies in
 * either order: the slot can name the file the kernel did not keep. So
 * after the copy the number is checked against the kernel (one statx per
 * dup2 of a tracked file), and a slot that names another file is cleared,
 * to be bound from the kernel by its next use. Whichever copy comes last,
 * its check comes after it and after both kernel calls.
 *
 * Until that check, though, a stale slot looks like any other binding
 * (kernel: ours, then theirs; copies: theirs, then ours): a sync of the
 * number in between got the replaced file's rule, a noop answering for a
 * passthrough file (test_fd_races holds it:
 * fsync_between_a_racing_dup2s_copy_and_its_check_gets_the_kernels_file).
 * So from before the copy to after the check shim.dups_onto is raised,
 * and while it is no binding is vouched for without a look at the kernel
 * (fdtable.c, vouched()). Ordering: the increment comes before the
 * copy's release stores, so a reader that has seen the copy (its acquire
 * load of the slot's file) sees the count raised; the decrement comes
 * after the check's unbind, so a reader that sees the count back at zero
 * and then loads the slot again sees that unbind, or something newer.
 */
static int dup_onto_done(int oldfd, int newfd)
{
	if (newfd < 0 || shim_bypass())
		return newfd;
	TEST_HOLD("dup_onto_kernel"); /* the kernel call made, the slot not yet copied */
	atomic_fetch_add(&shim.dups_onto, 1);
	dup_done(oldfd, newfd);
	TEST_HOLD("dup_onto_copied"); /* copied, not yet checked */
	int e = errno;
	struct shim_file *f = fd_file_ref(newfd);
	if (f) {
		dev_t dev;
		ino_t ino;
		if (fd_identity(newfd, &dev, &ino, NULL) != 0 || dev != f->dev || ino != f->ino)
			file_put(fd_unbind(newfd, NULL));
		file_put(f);
	}
	atomic_fetch_sub(&shim.dups_onto, 1);
	errno = e;
	return newfd;
}

SHIM_API int dup2(int oldfd, int newfd)
{
	pos_forget(oldfd);
	pos_forget(newfd);
	before_dup_onto(oldfd, newfd);
	int r = LIBC(dup2)(oldfd, newfd);
	return oldfd == newfd ? r : dup_onto_done(oldfd, r);
}

SHIM_API int dup3(int oldfd, int newfd, int flags)
{
	pos_forget(oldfd);
	pos_forget(newfd);
	before_dup_onto(oldfd, newfd);
	return dup_onto_done(oldfd, LIBC(dup3)(oldfd, newfd, flags));
}

/* fcntl's third argument is an int, a long or a pointer depending on cmd;
 * passing it on as a pointer-sized value is what libc itself does. */
#define FCNTL_BODY(name)                                                             \
	SHIM_INLINE int name##_body(int fd, int cmd, void *arg)                      \
	{                                                                            \
		if (cmd == F_SETFL) { /* O_APPEND may change */                     \
			pos_forget(fd);                                              \
			fd_state_clear(fd, SLOT_PLAIN_WRITER);                       \
		}                                                                    \
		if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC)                        \
			return LIBC(name)(fd, cmd, arg);                             \
		pos_forget(fd);                                                      \
		int r;                                                               \
		RETRY_EMFILE(r, LIBC(name)(fd, cmd, arg));                           \
		return dup_done(fd, r);                                              \
	}

FCNTL_BODY(fcntl)
FCNTL_BODY(fcntl64)

SHIM_API int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_body(fd, cmd, arg);
}

SHIM_API int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl64_body(fd, cmd, arg);
}
