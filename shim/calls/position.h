/*
 * position.h - where a descriptor's next write() lands, known without
 * asking the kernel (position.c has the rules and the calls that keep it).
 *
 * Ordered defer has to tell a write at the descriptor's position that
 * extends the file (forward: it never waits) from one that overwrites
 * bytes an acknowledged sync promised. Asking the kernel (lseek, fstat)
 * costs two system calls per write, as much as the write itself on a VM.
 * So each descriptor slot keeps a mark, one word:
 *   0                          not known (the kernel is asked, as before);
 *   POS_KNOWN | P              the description's position is exactly P;
 *   POS_KNOWN | POS_CLAIM | P  one call that moves it is in flight from P;
 *   POS_APPEND                 an O_APPEND description: writes land at the end.
 * A call that moves the position claims the mark (one CAS) and settles it
 * with where the call left the position (another); a second mover that
 * finds it claimed (another thread, a signal handler) sets it to 0 before
 * its own call, so the first one's settle fails and nobody trusts it
 * again. Only an open makes a mark: anything the shim cannot follow (a
 * dup, a fork, fdopen, a descriptor sent away, io_uring, ...) sets it to
 * 0 for good. Lock-free, no system call, async-signal-safe.
 */
#ifndef SYNCSHIM_POSITION_H
#define SYNCSHIM_POSITION_H

#include "fdtable.h"
#include "shim.h"

#define POS_KNOWN (UINT64_C(1) << 63)
#define POS_CLAIM (UINT64_C(1) << 62)
#define POS_APPEND (UINT64_C(1) << 61)
#define POS_VALUE ((UINT64_C(1) << 48) - 1) /* positions past 256 TiB are not kept */

/* pos_enter's answers that are not a position. */
#define POS_NOT_KNOWN (-1)
#define POS_AT_END (-2)

/* Before a call that moves fd's position (s: its slot): the position it
 * starts from (then the caller owns the mark until pos_leave), or
 * POS_NOT_KNOWN, or POS_AT_END for an O_APPEND description. */
static inline int64_t pos_enter(struct fd_slot *s)
{
	uint64_t m = atomic_load_explicit(&s->pos, memory_order_acquire);
	if (likely(m == 0))
		return POS_NOT_KNOWN;
	if (m == POS_APPEND)
		return POS_AT_END;
	if ((m & POS_KNOWN) && !(m & POS_CLAIM) &&
	    atomic_compare_exchange_strong_explicit(&s->pos, &m, m | POS_CLAIM, memory_order_acq_rel,
						    memory_order_acquire))
		return (int64_t)(m & POS_VALUE);
	/* Claimed by a call still in flight, or changed under us: two moves
	 * at once, so from now on nobody knows where it is. */
	atomic_store_explicit(&s->pos, 0, memory_order_release);
	return POS_NOT_KNOWN;
}

/* After it: the call that entered with at (>= 0) left the position at
 * now (< 0: where is not known). true when it was known throughout:
 * the call itself started exactly at at. */
static inline bool pos_leave(struct fd_slot *s, int64_t at, int64_t now)
{
	if (at < 0)
		return false;
	uint64_t claimed = POS_KNOWN | POS_CLAIM | (uint64_t)at;
	uint64_t next = now >= 0 && (uint64_t)now <= POS_VALUE ? POS_KNOWN | (uint64_t)now : 0;
	return atomic_compare_exchange_strong_explicit(&s->pos, &claimed, next, memory_order_acq_rel,
						       memory_order_relaxed);
}

/* Where a call that read or wrote r bytes from at left the position. */
static inline int64_t pos_after(int64_t at, ssize_t r)
{
	return r > 0 ? at + r : at; /* a failed call moved nothing */
}

/* fd's position is no longer followed (a call the shim cannot follow
 * moves it, or the description is shared with someone who may). */
void pos_forget(int fd);
/* Every descriptor's: a fork, a spawn, a vfork child's exec. */
void pos_forget_all(void);
/* For good, in this process: io_uring can move positions unseen. */
void pos_stop(void);
/* An open of a regular file bound fd (open flags fl): its position is 0. */
void pos_opened(int fd, int fl);

#endif
