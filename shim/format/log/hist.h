/*
 * hist.h - fixed-size latency histograms and per-second tallies.
 *
 * Runs inside other people's processes: no allocation, no stdio, no locks,
 * no system calls. Recording is a handful of relaxed atomic read-modify-
 * writes on a fixed array, so any thread, even a signal handler, may record
 * into a shared histogram while the logger thread snapshots it.
 *
 * Buckets are log-linear, HdrHistogram style, in nanoseconds:
 *   [0, 128)          one bucket per value (exact)
 *   [2^k, 2^(k+1))    64 equal buckets for k = 7..36, i.e. up to ~137 s
 *   >= 2^37           one overflow bucket (max stays exact)
 * A bucket is at most 1/64 of its lower bound wide, so reporting its middle
 * is within 1/128 (0.78%) of any value in it: the 1% bound holds from 0 to
 * 137 s. 2049 counters of 8 bytes: sizeof(struct hist) is 16424 bytes.
 */
#ifndef SYNCSHIM_HIST_H
#define SYNCSHIM_HIST_H

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS 6                       /* 64 buckets per octave */
#define HIST_LINEAR 128                       /* 2 << HIST_SUB_BITS exact values */
#define HIST_TOP_BITS 37                      /* 2^37 ns ~ 137 s overflows */
#define HIST_OVERFLOW (HIST_LINEAR + (HIST_TOP_BITS - HIST_SUB_BITS - 1) * (1 << HIST_SUB_BITS))
#define HIST_NBUCKETS (HIST_OVERFLOW + 1)     /* 2048 + overflow = 2049 */
#define HIST_OVERFLOW_NS (UINT64_C(1) << HIST_TOP_BITS)

/* Largest hist_encode() output: fixed part plus two maximal varints per
 * bucket. A caller buffer this big always fits. */
#define HIST_ENCODED_MAX (36 + HIST_NBUCKETS * (2 + 10))

/*
 * All fields are updated with atomic builtins; treat them as opaque and
 * use the functions below. min is UINT64_MAX while the histogram is empty.
 */
struct hist {
	uint64_t count;
	uint64_t sum;
	uint64_t min;
	uint64_t max;
	uint64_t bucket[HIST_NBUCKETS];
};

void hist_init(struct hist *h);

/* Lock-free and async-signal-safe; safe against concurrent hist_record,
 * hist_merge (as source) and hist_encode on the same histogram. */
void hist_record(struct hist *h, uint64_t ns);

/*
 * Single-writer variants: only one thread ever records into h (or t), so
 * no locked read-modify-write is needed, just relaxed loads and stores,
 * which other threads may read concurrently (a snapshot may miss a call in
 * flight, never tear a counter). A third of hist_record's cost, and the
 * counters stay in the recording thread's cache.
 */
struct tally;
void hist_record_local(struct hist *h, uint64_t ns);
void tally_add_local(struct tally *t, uint64_t ns, uint64_t bytes);

/* Adds src into dst (both may be live). */
void hist_merge(struct hist *dst, const struct hist *src);

uint64_t hist_count(const struct hist *h);
uint64_t hist_sum(const struct hist *h);
uint64_t hist_min(const struct hist *h);     /* 0 when empty */
uint64_t hist_max(const struct hist *h);     /* 0 when empty */
double hist_mean(const struct hist *h);      /* 0 when empty */

/*
 * The value at percentile p in [0, 100]: an estimate of the rank-th
 * smallest recorded value, rank = hist_rank(count, p). p <= 0 gives the
 * exact min, p >= 100 (or rank == count) the exact max; otherwise the
 * middle of the bucket holding that rank, clamped to [min, max], which is
 * within 0.78% of the true order statistic below 2^37 ns. 0 when empty.
 */
uint64_t hist_percentile(const struct hist *h, double p);

/* 1-based rank of percentile p among count values: ceil(p/100 * count),
 * at least 1, at most count. Exposed so tests and tools agree with it. */
uint64_t hist_rank(uint64_t count, double p);

/* Bucket geometry: the bucket a value falls in and the values it holds,
 * [hist_bucket_low(i), hist_bucket_low(i) + hist_bucket_width(i)). The
 * overflow bucket reports low 2^37 and width 0 (unbounded). */
unsigned hist_bucket_index(uint64_t ns);
uint64_t hist_bucket_low(unsigned i);
uint64_t hist_bucket_width(unsigned i);

/*
 * Sparse little-endian encoding (layout in docs/LOGFORMAT.md, "HIST").
 * hist_encode reads a possibly live histogram; the count it writes is the
 * sum of the buckets it read, so the snapshot is self-consistent. Returns
 * the encoded length, or 0 if cap is too small (HIST_ENCODED_MAX always
 * fits). hist_decode accepts exactly len bytes and checks every field;
 * it returns 0, or -1 with a static reason in *why (h is then undefined).
 */
size_t hist_encode(const struct hist *h, uint8_t *buf, size_t cap);
int hist_decode(struct hist *h, const uint8_t *buf, size_t len, const char **why);

/*
 * Per-op counters for one interval (the log's INTERVAL blocks). App
 * threads tally_add() into the current interval; the logger tally_take()s
 * it once a second, which reads and zeroes each field atomically (a call
 * racing the take may split between two seconds: harmless).
 */
struct tally {
	uint64_t calls;
	uint64_t bytes;
	uint64_t sum_ns;
	uint64_t max_ns;
};

void tally_add(struct tally *t, uint64_t ns, uint64_t bytes);
void tally_take(struct tally *t, struct tally *out);

#endif
