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
#include "held.h"
#include "knobs.h"
#include "live.h"
#include "order.h"
#include "position.h"
#include "risk.h"
#include "shim.h"
#include "trace.h"

/* held: the write was held (held.c), not made: its bytes are counted as
 * the program's, but they reach ordering's marks and crash-test mode only
 * when they are applied. */
static inline void write_done(struct shim_file *f, int fd, uint32_t state, enum shim_op op, off_t off,
			      ssize_t r, const struct trace_start *t, bool held)
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
		/* Ordering follows the writes of files whose syncs it can be
		 * asked to order (deferred); a rule that starts deferring later
		 * starts from "not known" (order_starts_deferring). */
		if (!held && ((work & WRITES_DEFERRED) || (state & SLOT_OSYNC_DEFER)))
			order_after_write(&f->ord, off, r, atomic_load_explicit(&f->fl.req_seq, memory_order_relaxed));
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

/* A write at a given offset the shim has nothing to do around: no other
 * file's sync to wait for (order.h's summary word), no bytes to count
 * (data at risk, the flusher, the live counters), no crash-test record,
 * no log. The common case under passthrough with logging off: a few
 * relaxed loads, then the real call as a tail call, with no frame of the
 * shim's around it. It is so whoever calls, the shim's own threads and a
 * vfork child included (shim_bypass: they get the real call too), so it is
 * looked at first: only reads, of objects that are never freed (fd_peek),
 * and no thread-local access. (A write at the position still follows
 * it: below.) */
static inline bool write_is_plain(const struct shim_file *f, uint32_t state)
{
	return !(file_write_work(f) & (WRITES_COUNTED | WRITES_DEFERRED | WRITES_LIVE | WRITES_CRASH)) &&
	       !(state & (SLOT_OSYNC_DEFER | SLOT_OSYNC_STRIP)) && !atomic_load_explicit(&trace_on, memory_order_relaxed) &&
	       likely(atomic_load_explicit(ORDER_SUMMARY(order_dom), memory_order_relaxed) == 0);
}

static inline size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* A write ordering held instead of making it wait (held.c): the program
 * sees it done, all of it. One at the position took its room in the
 * kernel's position before it was held (order_before_write's moved_to):
 * the mark follows, to just past it. */
static ssize_t write_was_held(struct shim_file *f, int fd, uint32_t state, enum shim_op op, struct fd_slot *ps,
			      int64_t at, off_t moved_to, off_t lands, ssize_t r, const struct trace_start *t)
{
	if (moved_to >= 0) {
		pos_leave(ps, at, moved_to + r);
		lands = moved_to;
	}
	write_done(f, fd, state, op, lands, r, t, true);
	return r;
}

/* A write at the position that took its room (moved_to) and then was not
 * held wrote at moved_to with the positional call: a short or failed one
 * leaves the position where the plain call would have (exact unless
 * another mover raced it, which a racing program cannot tell apart). */
static void position_after_taken(int fd, off_t moved_to, size_t total, ssize_t r)
{
	if (r >= 0 && (size_t)r == total)
		return;
	int e = errno;
	LIBC(lseek)(fd, moved_to + (r > 0 ? r : 0), SEEK_SET);
	errno = e;
}

/* OFF: where the write lands (-1: the descriptor's position, when
 * MOVES: the call moves it, position.h); IOV, CNT: what it writes. OFF
 * as given is what crash-test mode records (crash.h); ordering is told
 * the position when the slot's mark knows it, so a write at the position
 * that extends the file costs it no lseek or fstat. A write where it
 * lands is known (and that the program does not expect durable on return:
 * an O_SYNC kept) may be held rather than wait. */
#define WRITE_BODY(name, op, params, args, MOVES, OFF, IOV, CNT, AT_CALL)            \
	static __attribute__((noinline)) ssize_t name##_tracked params               \
	{                                                                            \
		uint32_t state = 0;                                                  \
		bool bypass = shim_bypass();                                         \
		struct shim_file *f = bypass ? NULL : fd_peek(fd, &state);          \
		if (!f) {                                                            \
			if (MOVES && unlikely(shim_busy))                            \
				pos_forget(fd); /* moved out of sight */             \
			if (unlikely(bypass))                                 \
				order_fd_bytes_unseen(fd); /* written unseen */      \
			return LIBC(name) args;                                      \
		}                                                                    \
		struct fd_slot *ps = MOVES ? fd_slot(fd) : NULL;                     \
		int64_t at = ps ? pos_enter(ps) : POS_NOT_KNOWN;                     \
		off_t lands = write_lands(MOVES, OFF, at);                           \
		struct trace_start t;                                                \
		off_t moved_to = -1;                                                 \
		if (order_before_write(f, fd, lands, IOV, CNT, lands >= 0 && !osync_kept(state), \
				       MOVES && at >= 0 ? &moved_to : NULL)) {       \
			trace_begin(&t);                                             \
			return write_was_held(f, fd, state, op, ps, at, moved_to, lands, \
					      (ssize_t)iov_total(IOV, CNT), &t);     \
		}                                                                    \
		struct crash_write cw = { .locked = false };                         \
		if (unlikely(file_write_work(f) & WRITES_CRASH))                     \
			crash_write_begin(f, fd, moved_to >= 0 ? moved_to : OFF, IOV, CNT, osync_kept(state), &cw); \
		trace_begin(&t);                                                     \
		ssize_t r = moved_to >= 0 ? AT_CALL : LIBC(name) args;              \
		crash_write_done(&cw);                                               \
		if (moved_to >= 0) {                                                 \
			position_after_taken(fd, moved_to, iov_total(IOV, CNT), r);  \
			pos_leave(ps, at, pos_after(moved_to, r));                   \
			write_done(f, fd, state, op, moved_to, r, &t, false);        \
			return r;                                                    \
		}                                                                    \
		bool exact = ps && pos_leave(ps, at, pos_after(at, r));              \
		write_done(f, fd, state, op, MOVES ? (exact ? (off_t)at : -1) : OFF, r, &t, false); \
		return r;                                                            \
	}                                                                            \
	SHIM_INLINE ssize_t name##_body params                                       \
	{                                                                            \
		if (!MOVES) {                                                        \
			uint32_t state = 0;                                          \
			struct shim_file *f = fd_peek(fd, &state);                   \
			void *real = atomic_load_explicit(&libc_table[LIBC_ID_##name], memory_order_acquire); \
			if (f && real && write_is_plain(f, state)) /* whoever calls */ \
				return ((libc_##name##_fn)real) args;                \
		}                                                                    \
		return name##_tracked args;                                          \
	}

/* Where ordering is told a write lands: OFF, or for a write at the
 * position the mark's (at, from pos_enter): the position itself, or
 * ORDER_AT_END for an O_APPEND description, or -1 (the kernel is asked). */
static inline off_t write_lands(bool moves, off_t off, int64_t at)
{
	if (!moves)
		return off;
	return at >= 0 ? (off_t)at : at == POS_AT_END ? ORDER_AT_END : -1;
}

#define ONE(buf, n) (&(struct iovec){ (void *)(buf), (n) })
/* AT_CALL: the same write at moved_to (order_before_write), for a write
 * at the position; the positional calls never take that branch. */
WRITE_BODY(write, OP_WRITE, (int fd, const void *buf, size_t n), (fd, buf, n), true, -1, ONE(buf, n), 1,
	   LIBC(pwrite64)(fd, buf, n, moved_to))
WRITE_BODY(pwrite, OP_PWRITE, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), false, off,
	   ONE(buf, n), 1, LIBC(pwrite)(fd, buf, n, off))
WRITE_BODY(pwrite64, OP_PWRITE, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), false,
	   off, ONE(buf, n), 1, LIBC(pwrite64)(fd, buf, n, off))
WRITE_BODY(writev, OP_WRITEV, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), true, -1, iov,
	   cnt, LIBC(pwritev64)(fd, iov, cnt, moved_to))
WRITE_BODY(pwritev, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off_t off),
	   (fd, iov, cnt, off), false, off, iov, cnt, LIBC(pwritev)(fd, iov, cnt, off))
WRITE_BODY(pwritev64, OP_PWRITEV, (int fd, const struct iovec *iov, int cnt, off64_t off),
	   (fd, iov, cnt, off), false, off, iov, cnt, LIBC(pwritev64)(fd, iov, cnt, off))

SHIM_API ssize_t write(int fd, const void *buf, size_t n)
{
	return write_body(fd, buf, n);
}

SHIM_API ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite_body(fd, buf, n, off);
}

SHIM_API ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return pwrite64_body(fd, buf, n, off);
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	return writev_body(fd, iov, cnt);
}

SHIM_API ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pwritev_body(fd, iov, cnt, off);
}

SHIM_API ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	return pwritev64_body(fd, iov, cnt, off);
}

/* The kernel copies into fd_out: a write to that file like any other. */
SHIM_API ssize_t copy_file_range(int fd_in, off64_t *off_in, int fd_out, off64_t *off_out, size_t len,
				 unsigned int flags)
{
	if (!off_in) /* positions it moves: no longer followed (position.h) */
		pos_forget(fd_in);
	if (!off_out)
		pos_forget(fd_out);
	uint32_t state = 0;
	bool bypass = shim_bypass();
	struct shim_file *f = bypass ? NULL : fd_peek(fd_out, &state);
	if (!f) {
		if (unlikely(bypass))
			order_fd_bytes_unseen(fd_out); /* written unseen */
		return LIBC(copy_file_range)(fd_in, off_in, fd_out, off_out, len, flags);
	}
	held_before_read(fd_in); /* its bytes as the program wrote them */
	order_before_write(f, fd_out, off_out ? (off_t)*off_out : -1, NULL, 0, false, NULL);
	struct crash_write cw = { .locked = false };
	if (unlikely(file_write_work(f) & WRITES_CRASH))
		crash_write_begin(f, fd_out, off_out ? (off_t)*off_out : -1, ONE(NULL, len), 1, osync_kept(state), &cw);
	struct trace_start t;
	trace_begin(&t);
	ssize_t r = LIBC(copy_file_range)(fd_in, off_in, fd_out, off_out, len, flags);
	crash_write_done(&cw);
	write_done(f, fd_out, state, OP_WRITE, off_out ? (off_t)*off_out - (r > 0 ? r : 0) : -1, r, &t, false);
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

/* At offset -1 pwritev2 writes at the position and moves it, as write;
 * RWF_APPEND lands at the end (and at -1 moves the position there). */
#define PWRITEV2_BODY(name, off_type)                                                \
	SHIM_INLINE ssize_t name##_body(int fd, const struct iovec *iov, int cnt, off_type off, int flags) \
	{                                                                            \
		bool moves = off == -1;                                              \
		if (moves && (flags & RWF_APPEND))                                   \
			pos_forget(fd);                                              \
		uint32_t state = 0;                                                  \
		bool bypass = shim_bypass();                                         \
		struct shim_file *f = bypass ? NULL : fd_peek(fd, &state);          \
		if (!f) {                                                            \
			if (moves && unlikely(shim_busy))                            \
				pos_forget(fd);                                      \
			if (unlikely(bypass))                                 \
				order_fd_bytes_unseen(fd); /* written unseen */      \
			return LIBC(name)(fd, iov, cnt, off, flags);                 \
		}                                                                    \
		int fl = rwf_adjust(f, flags, &state);                               \
		struct fd_slot *ps = moves && !(flags & RWF_APPEND) ? fd_slot(fd) : NULL; \
		int64_t at = ps ? pos_enter(ps) : POS_NOT_KNOWN;                     \
		off_t lands = (flags & RWF_APPEND) ? ORDER_AT_END : write_lands(moves, off, at); \
		struct trace_start t;                                                \
		off_t moved_to = -1;                                                 \
		if (order_before_write(f, fd, lands, iov, cnt,                       \
				       lands >= 0 && fl == 0 && !osync_kept(state),  \
				       ps && at >= 0 ? &moved_to : NULL)) {           \
			trace_begin(&t);                                             \
			return write_was_held(f, fd, state, OP_PWRITEV, ps, at, moved_to, lands, \
					      (ssize_t)iov_total(iov, cnt), &t);     \
		}                                                                    \
		struct crash_write cw = { .locked = false };                         \
		if (unlikely(file_write_work(f) & WRITES_CRASH))                     \
			crash_write_begin(f, fd, moved_to >= 0 ? moved_to : off, iov, cnt, \
					  osync_kept(state) || (fl & (RWF_SYNC | RWF_DSYNC)), &cw); \
		trace_begin(&t);                                                     \
		ssize_t r = LIBC(name)(fd, iov, cnt, moved_to >= 0 ? moved_to : off, fl); \
		crash_write_done(&cw);                                               \
		if (moved_to >= 0) {                                                 \
			position_after_taken(fd, moved_to, iov_total(iov, cnt), r);  \
			pos_leave(ps, at, pos_after(moved_to, r));                   \
			write_done(f, fd, state, OP_PWRITEV, moved_to, r, &t, false); \
			return r;                                                    \
		}                                                                    \
		bool exact = ps && pos_leave(ps, at, pos_after(at, r));              \
		off_t done_at = (flags & RWF_APPEND) || (moves && !exact) ? -1 : moves ? (off_t)at : off; \
		write_done(f, fd, state, OP_PWRITEV, done_at, r, &t, false);         \
		return r;                                                            \
	}

PWRITEV2_BODY(pwritev2, off_t)
PWRITEV2_BODY(pwritev64v2, off64_t)

SHIM_API ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return pwritev2_body(fd, iov, cnt, off, flags);
}

SHIM_API ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return pwritev64v2_body(fd, iov, cnt, off, flags);
}
