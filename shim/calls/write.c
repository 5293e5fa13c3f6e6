/*
 * write.c - the write family: the hot path.
 *
 * Every write on a tracked regular file costs one slot load and, for
 * deferred files, a relaxed atomic add; with logging on, two clock reads.
 * No lock, no allocation, no system call, nothing a signal handler could
 * deadlock on. A number the shim has not seen opened passes straight
 * through (it is bound at the next call that may check it). Results and
 * errno are the real call's, untouched.
 */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "knobs.h"
#include "live.h"
#include "order.h"
#include "risk.h"
#include "shim.h"
#include "trace.h"

static inline void write_done(struct shim_file *f, int fd, uint32_t state, enum shim_op op, off_t off,
			      ssize_t r, const struct trace_start *t)
{
	/* Only files whose syncs may be answered without the device count
	 * their bytes (data at risk, the flusher's thresholds): the others
	 * skip the atomic. */
	unsigned work = file_write_work(f);
	bool counted = r > 0 && ((work & WRITES_COUNTED) || (state & (SLOT_OSYNC_DEFER | SLOT_OSYNC_STRIP)));
	if (work & WRITES_LIVE)
		live_wrote(f, r);
	if (!counted && !t->t0)
		return; /* the common case: nothing to do, errno never touched */
	int saved = errno;
	if (counted) {
		order_after_write(&f->ord, off, r);
		risk_wrote(&f->risk, (uint64_t)r);
		if (state & SLOT_OSYNC_STRIP)
			risk_acked(f, trace_now()); /* the app thinks this write is durable */
		if ((work & WRITES_DEFERRED) || (state & SLOT_OSYNC_DEFER)) {
			TEST_POINT("write");
			flusher_after_write(f, fd, state);
		}
	}
	trace_end(t, op, f, r, r < 0 ? saved : 0);
	errno = saved;
}

/* An O_SYNC/O_DSYNC descriptor whose flag the policy kept: each write is
 * durable when it returns (crash-test mode's OSYNC records). */
static inline bool osync_kept(uint32_t state)
{
	return (state & (SLOT_APP_OSYNC | SLOT_APP_ODSYNC)) && !(state & (SLOT_OSYNC_DEFER | SLOT_OSYNC_STRIP));
}

/* OFF: where the write lands (-1: the descriptor's position); IOV, CNT:
 * what it writes. Used only in crash-test mode (crash.h). */
#define WRITE_WRAPPER(name, op, params, args, OFF, IOV, CNT)                         \
	SHIM_API ssize_t name params                                                 \
	{                                                                            \
		uint32_t state = 0;                                                  \
		struct shim_file *f = shim_bypass() ? NULL : fd_peek(fd, &state);    \
		if (!f)                                                              \
			return LIBC(name) args;                                      \
		order_before_write(f, fd, OFF, IOV, CNT);                            \
		struct crash_write cw = { .locked = false };                         \
		if (unlikely(file_write_work(f) & WRITES_CRASH))                     \
			crash_write_begin(f, fd, OFF, IOV, CNT, osync_kept(state), &cw); \
		struct trace_start t;                                                \
		trace_begin(&t);                                                     \
		ssize_t r = LIBC(name) args;                                         \
		crash_write_done(&cw);                                               \
		write_done(f, fd, state, op, OFF, r, &t);                                 \
		return r;                                                            \
	}

#define ONE(buf, n) (&(struct iovec){ (void *)(buf), (n) })
WRITE_WRAPPER(write, OP_WRITE, (int fd, const void *buf, size_t n), (fd, buf, n), -1, ONE(buf, n), 1)
WRITE_WRAPPER(pwrite, OP_PWRITE, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), off,
	      ONE(buf, n), 1)
WRITE_WRAPPER(pwrite64, OP_PWRITE, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), off,
	      ONE(buf, n), 1)
WRITE_WRAPPER(writev, OP_WRITEV, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), -1, iov, cnt)
WRITE_WRAPPER(pwritev, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off_t off),
	      (fd, iov, cnt, off), off, iov, cnt)
WRITE_WRAPPER(pwritev64, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off64_t off),
	      (fd, iov, cnt, off), off, iov, cnt)

/* The kernel copies into fd_out: a write to that file like any other. */
SHIM_API ssize_t copy_file_range(int fd_in, off64_t *off_in, int fd_out, off64_t *off_out, size_t len,
				 unsigned int flags)
{
	uint32_t state = 0;
	struct shim_file *f = shim_bypass() ? NULL : fd_peek(fd_out, &state);
	if (!f)
		return LIBC(copy_file_range)(fd_in, off_in, fd_out, off_out, len, flags);
	order_before_write(f, fd_out, off_out ? (off_t)*off_out : -1, NULL, 0);
	struct crash_write cw = { .locked = false };
	if (unlikely(file_write_work(f) & WRITES_CRASH))
		crash_write_begin(f, fd_out, off_out ? (off_t)*off_out : -1, ONE(NULL, len), 1, osync_kept(state), &cw);
	struct trace_start t;
	trace_begin(&t);
	ssize_t r = LIBC(copy_file_range)(fd_in, off_in, fd_out, off_out, len, flags);
	crash_write_done(&cw);
	write_done(f, fd_out, state, OP_WRITE, off_out ? (off_t)*off_out - (r > 0 ? r : 0) : -1, r, &t);
	return r;
}

/*
 * pwritev2's RWF_SYNC/RWF_DSYNC make one write an O_SYNC/O_DSYNC write:
 * the rule's osync setting applies to them as it does to opens.
 */
static int rwf_adjust(const struct shim_file *f, int flags, uint32_t *state)
{
	if (!(flags & (RWF_SYNC | RWF_DSYNC)))
		return flags;
	struct knobs k;
	knobs_of(f, &k);
	switch (k.act[CALL_OPEN_SYNC]) {
	case ACT_DATASYNC:
		return (flags & ~RWF_SYNC) | RWF_DSYNC;
	case ACT_STRIP:
		*state |= SLOT_OSYNC_STRIP;
		return flags & ~(RWF_SYNC | RWF_DSYNC);
	case ACT_DEFER:
		*state |= SLOT_OSYNC_DEFER | ((flags & RWF_SYNC) ? SLOT_APP_OSYNC : 0);
		return flags & ~(RWF_SYNC | RWF_DSYNC);
	default:
		return flags;
	}
}

#define PWRITEV2_WRAPPER(name, off_type)                                             \
	SHIM_API ssize_t name(int fd, const struct iovec *iov, int cnt, off_type off, int flags) \
	{                                                                            \
		uint32_t state = 0;                                                  \
		struct shim_file *f = shim_bypass() ? NULL : fd_peek(fd, &state);    \
		if (!f)                                                              \
			return LIBC(name)(fd, iov, cnt, off, flags);                 \
		int fl = rwf_adjust(f, flags, &state);                               \
		order_before_write(f, fd, (flags & RWF_APPEND) ? -1 : off, iov, cnt); \
		struct crash_write cw = { .locked = false };                         \
		if (unlikely(file_write_work(f) & WRITES_CRASH))                     \
			crash_write_begin(f, fd, off, iov, cnt,                      \
					  osync_kept(state) || (fl & (RWF_SYNC | RWF_DSYNC)), &cw); \
		struct trace_start t;                                                \
		trace_begin(&t);                                                     \
		ssize_t r = LIBC(name)(fd, iov, cnt, off, fl);                       \
		crash_write_done(&cw);                                               \
		write_done(f, fd, state, OP_PWRITEV, (flags & RWF_APPEND) ? -1 : off, r, &t);                         \
		return r;                                                            \
	}

PWRITEV2_WRAPPER(pwritev2, off_t)
PWRITEV2_WRAPPER(pwritev64v2, off64_t)
