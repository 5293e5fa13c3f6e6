/*
 * trace.h - the hooks every interposed call uses to time itself.
 *
 * With logging off the cost is one load of a global and a branch. With it
 * on, a call is stamped twice with the cheapest clock there is - the TSC
 * when the CPU says it is invariant, else CLOCK_MONOTONIC - and counted
 * by log.c into the calling thread's own counters.
 */
#ifndef SYNCSHIM_TRACE_H
#define SYNCSHIM_TRACE_H

#include <stdint.h>
#include <time.h>

#include "logfmt.h"
#include "shim.h"

/* The log's op numbers (logfmt.h), under the shim's names. */
enum shim_op {
	OP_WRITE = LOGOP_WRITE,
	OP_PWRITE = LOGOP_PWRITE,
	OP_WRITEV = LOGOP_WRITEV,
	OP_PWRITEV = LOGOP_PWRITEV,
	OP_FSYNC = LOGOP_FSYNC,
	OP_FDATASYNC = LOGOP_FDATASYNC,
	OP_MSYNC = LOGOP_MSYNC,
	OP_SYNC_FILE_RANGE = LOGOP_SYNC_FILE_RANGE,
	OP_SYNCFS = LOGOP_SYNCFS,
	OP_SYNC = LOGOP_SYNC,
	OP_OPEN = LOGOP_OPEN,
	OP_CLOSE = LOGOP_CLOSE,
	OP_RENAME = LOGOP_RENAME,
	OP_REAL_FSYNC = LOGOP_REAL_FSYNC,
	OP_REAL_FDATASYNC = LOGOP_REAL_FDATASYNC,
	OP_REAL_SYNC_FILE_RANGE = LOGOP_REAL_SYNC_FILE_RANGE,
	OP_COUNT = LOGOP_COUNT
};

struct trace_start {
	uint64_t t0; /* a stamp, 0 when not timing */
};

extern _Atomic int trace_on;
extern int trace_use_tsc; /* set once, before trace_on */

static inline uint64_t trace_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A stamp: TSC ticks or monotonic ns; only log.c converts them. */
static inline uint64_t trace_stamp(void)
{
#if defined(__x86_64__)
	if (trace_use_tsc)
		return __builtin_ia32_rdtsc();
#endif
	return trace_now();
}

static inline void trace_begin(struct trace_start *t)
{
	t->t0 = atomic_load_explicit(&trace_on, memory_order_relaxed) ? trace_stamp() : 0;
}

/* Where the calls this thread records now come from: 0 (libc), or
 * LOGREC_RING / LOGREC_AIO while the shim handles a ring's entries or an
 * io_submit's iocbs (set and restored around that work). */
extern __thread uint8_t trace_source;

/* Record a finished call between stamps s0 and s1: result r (or -1 with
 * err). Never touches errno; no lock, no allocation, no system call. */
void trace_record(enum shim_op op, const struct shim_file *f, uint64_t s0, uint64_t s1,
		  int64_t bytes, int64_t r, int err);
/* The same with record flags (LOGREC_*: open flags, a directory's sync). */
void trace_record_flags(enum shim_op op, const struct shim_file *f, uint64_t s0, uint64_t s1,
			int64_t bytes, int64_t r, int err, uint8_t flags);

static inline void trace_end(const struct trace_start *t, enum shim_op op,
			     const struct shim_file *f, int64_t r, int err)
{
	if (t->t0)
		trace_record(op, f, t->t0, trace_stamp(), r, r, err);
}

static inline void trace_end_flags(const struct trace_start *t, enum shim_op op,
				   const struct shim_file *f, int64_t r, int err, uint8_t flags)
{
	if (t->t0)
		trace_record_flags(op, f, t->t0, trace_stamp(), r, r, err, flags);
}

/* A real sync issued by the shim itself (flusher, group leader): logged
 * apart from the app's calls, whenever logging is on. s0, s1 are stamps. */
static inline void trace_real_sync(enum shim_op op, const struct shim_file *f, uint64_t s0,
				   uint64_t s1, int64_t bytes, int r, int err)
{
	if (atomic_load_explicit(&trace_on, memory_order_relaxed))
		trace_record(op, f, s0, s1, bytes, r, err);
}

#endif
