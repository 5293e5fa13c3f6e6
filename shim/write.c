/*
 * write.c - the write family: the hot path.
 *
 * Every write on a tracked regular file costs one slot load, one relaxed
 * atomic add and, when logging is on, two clock reads. No lock, no
 * allocation, nothing a signal handler could deadlock on. Results and
 * errno are the real call's, untouched.
 */
#include <errno.h>

#include "flusher.h"
#include "shim.h"
#include "trace.h"

static void write_done(struct shim_file *f, int fd, uint32_t state, enum shim_op op,
		       ssize_t r, const struct trace_start *t)
{
	int saved = errno;
	if (r > 0) {
		atomic_fetch_add_explicit(&f->dirty_bytes, (uint64_t)r, memory_order_relaxed);
		if ((state & SLOT_OSYNC_DEFER) || f->rule.sync == SYNC_DEFER)
			flusher_after_write(f, fd, state);
	}
	trace_end(t, op, f, r, r < 0 ? saved : 0);
	errno = saved;
}

#define WRITE_WRAPPER(name, op, params, args)                                        \
	SHIM_API ssize_t name params                                                 \
	{                                                                            \
		uint32_t state = 0;                                                  \
		struct shim_file *f = shim_bypass() ? NULL : fd_file_for_write(fd, &state); \
		if (!f)                                                              \
			return REAL(name) args;                                      \
		struct trace_start t;                                                \
		trace_begin(&t);                                                     \
		ssize_t r = REAL(name) args;                                         \
		write_done(f, fd, state, op, r, &t);                                     \
		return r;                                                            \
	}

WRITE_WRAPPER(write, OP_WRITE, (int fd, const void *buf, size_t n), (fd, buf, n))
WRITE_WRAPPER(pwrite, OP_PWRITE, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off))
WRITE_WRAPPER(pwrite64, OP_PWRITE, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off))
WRITE_WRAPPER(writev, OP_WRITEV, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt))
WRITE_WRAPPER(pwritev, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off_t off),
	      (fd, iov, cnt, off))
WRITE_WRAPPER(pwritev64, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off64_t off),
	      (fd, iov, cnt, off))
WRITE_WRAPPER(pwritev2, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off_t off, int fl),
	      (fd, iov, cnt, off, fl))
WRITE_WRAPPER(pwritev64v2, OP_PWRITEV,
	      (int fd, const struct iovec *iov, int cnt, off64_t off, int fl),
	      (fd, iov, cnt, off, fl))
