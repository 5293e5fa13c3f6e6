/*
 * trace.h - the hooks every interposed call uses to time itself.
 *
 * With logging off the cost is one load of a global and a branch. The
 * logger itself (log.c) decides what to do with a finished call.
 */
#ifndef SYNCSHIM_TRACE_H
#define SYNCSHIM_TRACE_H

#include <stdint.h>
#include <time.h>

#include "shim.h"

enum shim_op {
	OP_WRITE,
	OP_PWRITE,
	OP_WRITEV,
	OP_PWRITEV,
	OP_FSYNC,
	OP_FDATASYNC,
	OP_MSYNC,
	OP_SYNC_FILE_RANGE,
	OP_SYNCFS,
	OP_SYNC,
	OP_OPEN,
	OP_CLOSE,
	OP_RENAME,
	OP_REAL_FSYNC,
	OP_REAL_FDATASYNC,
	OP_REAL_SYNC_FILE_RANGE,
	OP_COUNT
};

struct trace_start {
	uint64_t t0; /* CLOCK_MONOTONIC ns, 0 when not timing */
};

extern _Atomic int trace_on;

static inline uint64_t trace_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void trace_begin(struct trace_start *t)
{
	t->t0 = atomic_load_explicit(&trace_on, memory_order_relaxed) ? trace_now() : 0;
}

/* Record a finished call: result r (or -1 with err). Never touches errno. */
void trace_record(enum shim_op op, const struct shim_file *f, uint64_t t0, uint64_t t1,
		  int64_t bytes, int64_t r, int err);

static inline void trace_end(const struct trace_start *t, enum shim_op op,
			     const struct shim_file *f, int64_t r, int err)
{
	if (t->t0)
		trace_record(op, f, t->t0, trace_now(), r, r, err);
}

/* Writes report the bytes asked for even when the call fails. */
static inline void trace_end_bytes(const struct trace_start *t, enum shim_op op,
				   const struct shim_file *f, int64_t bytes, int64_t r, int err)
{
	if (t->t0)
		trace_record(op, f, t->t0, trace_now(), bytes, r, err);
}

/* A real sync issued by the shim itself (flusher, group leader): logged
 * apart from the app's calls, whenever logging is on. */
static inline void trace_real_sync(enum shim_op op, const struct shim_file *f, uint64_t t0,
				   uint64_t t1, int64_t bytes, int r, int err)
{
	if (atomic_load_explicit(&trace_on, memory_order_relaxed))
		trace_record(op, f, t0, t1, bytes, r, err);
}

#endif
