/*
 * knobs.c - a file's copy of its rule, safe to read from any thread.
 *
 * Every path that acts on a file (the write path included) needs a few of
 * its rule's settings, while a reload may change them at any moment. A
 * pointer into the policy snapshot would need the snapshot kept alive for
 * every reader; instead each file keeps its own copy under a sequence
 * count (a seqlock): the one writer (file creation before the file is
 * published, or the reload watcher under the registry lock) makes the
 * count odd, rewrites, makes it even; a reader copies the words and
 * retries if the count moved. Readers never block and never write, so a
 * signal handler may read; the writer runs with every signal blocked, so
 * no handler can spin on a rewrite its own thread left half done, and it
 * holds the registry lock, which fork's prepare handler takes, so a child
 * never inherits one either.
 */
#include <string.h>

#include "files.h"
#include "knobs.h"
#include "pace.h"
#include "shim.h"

#define KNOB_WORDS (sizeof(struct knobs) / sizeof(uint64_t))
_Static_assert(sizeof(struct knobs) % sizeof(uint64_t) == 0, "knobs must be whole words");

union knob_words {
	struct knobs k;
	uint64_t w[KNOB_WORDS];
};

void knobs_from_rule(struct knobs *k, const struct rule *r, int rule_index)
{
	memset(k, 0, sizeof(*k));
	for (int c = 0; c < CALL_COUNT; c++)
		k->act[c] = (uint8_t)rule_decide(r, (enum shim_call)c);
	k->real_sync = (uint8_t)r->real_sync;
	k->max_delay_ms = r->max_delay_ms;
	k->max_bytes = r->max_bytes;
	k->max_calls = r->max_calls;
	k->writeback_bytes = r->writeback_bytes;
	k->group_wait_us = r->group_wait_us;
	k->at_risk_ns = pace_at_risk_ns(r->max_delay_ms, r->max_at_risk_ms);
	k->rule_index = rule_index;
	k->order = (uint8_t)r->order;
}

void knobs_of(const struct shim_file *f, struct knobs *out)
{
	const uint64_t *src = ((const union knob_words *)(const void *)&f->knobs)->w;
	uint64_t *dst = ((union knob_words *)(void *)out)->w; /* the caller's: a torn copy is retried */
	for (;;) {
		uint32_t s = atomic_load_explicit(&f->knob_seq, memory_order_acquire);
		if (s & 1) {
			__builtin_ia32_pause();
			continue;
		}
		for (size_t i = 0; i < KNOB_WORDS; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&f->knob_seq, memory_order_relaxed) == s)
			return;
	}
}

/* Writes are counted wherever a sync may be answered without the device:
 * that is what data at risk is made of (risk.h). */
static uint8_t write_work_of(const struct shim_file *f, const struct knobs *k)
{
	static const enum shim_call answers[] = { CALL_FSYNC, CALL_FDATASYNC, CALL_MSYNC };
	uint8_t w = k->act[CALL_WRITE] == ACT_DEFER ? WRITES_DEFERRED | WRITES_COUNTED : 0;
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
		if (k->act[answers[i]] == ACT_NOOP || k->act[answers[i]] == ACT_DEFER)
			w |= WRITES_COUNTED;
	if (k->act[CALL_OPEN_SYNC] == ACT_STRIP || k->act[CALL_OPEN_SYNC] == ACT_DEFER)
		w |= WRITES_COUNTED;
	/* Scratch files (noop) keep no order; order = file opts out, and so
	 * does, by default, an inherited standard output or error. */
	bool domain = k->order == ORDER_DOMAIN ||
		      (k->order == ORDER_AUTO && !atomic_load_explicit(&f->std_stream, memory_order_relaxed));
	if (domain && k->act[CALL_FSYNC] != ACT_NOOP)
		w |= WRITES_ORDERED;
	return w;
}

void knobs_set(struct shim_file *f, const struct knobs *k)
{
	uint64_t *dst = ((union knob_words *)(void *)&f->knobs)->w;
	union knob_words from = { .k = *k };
	uint32_t s = atomic_load_explicit(&f->knob_seq, memory_order_relaxed);
	atomic_store_explicit(&f->knob_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (size_t i = 0; i < KNOB_WORDS; i++)
		__atomic_store_n(&dst[i], from.w[i], __ATOMIC_RELAXED);
	atomic_store_explicit(&f->knob_seq, s + 2, memory_order_release);
	uint8_t w = write_work_of(f, k) | (f->live ? WRITES_LIVE : 0) | (f->crash.tracked ? WRITES_CRASH : 0);
	if (!(w & WRITES_COUNTED))
		file_parts_writes_uncounted(f); /* its writes stop being followed (order.c) */
	else if ((w & WRITES_DEFERRED) && !(file_write_work(f) & WRITES_DEFERRED))
		file_parts_starts_deferring(f); /* its writes were not followed until now */
	atomic_store_explicit(&f->write_work, w, memory_order_relaxed);
}
