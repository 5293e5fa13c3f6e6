/*
 * knobs.h - a file's copy of its rule (knobs.c).
 */
#ifndef SYNCSHIM_KNOBS_H
#define SYNCSHIM_KNOBS_H

#include <stdint.h>

#include "decide.h"
#include "policy.h"

struct shim_file;

/*
 * What the file's rule says, as the shim acts on it: the decision table's
 * answer for every call (policy/decide.h) and the flusher's knobs, copied
 * into the file, so no path ever dereferences a policy snapshot that a
 * reload may retire. A reload rewrites it under a sequence count; readers
 * copy it whole (knobs_of) and retry if a rewrite overlapped. Read and
 * written as whole words with relaxed atomics.
 */
struct knobs {
	uint64_t at_risk_ns;         /* max_at_risk_ms as it applies (policy/pace.h), 0 none */
	uint64_t max_bytes;
	uint64_t writeback_bytes;
	uint32_t max_delay_ms;
	uint32_t max_calls;
	uint32_t group_wait_us;
	int32_t rule_index;          /* -1: the [shim] default rule */
	uint8_t real_sync;           /* enum real_sync: which call the flusher makes */
	uint8_t act[CALL_COUNT];     /* enum shim_action, by enum shim_call */
	uint8_t order;               /* enum order_mode (policy.h) */
	uint8_t pad[19 - CALL_COUNT];
};

void knobs_from_rule(struct knobs *k, const struct rule *r, int rule_index);
void knobs_of(const struct shim_file *f, struct knobs *out);
/* One word of f's rule read alone, without the copy: for a threshold the
 * write path compares against, where the value from before a reload and
 * the one after are both right. */
#define KNOB_ONE(f, field) __atomic_load_n(&(f)->knobs.field, __ATOMIC_RELAXED)
void knobs_set(struct shim_file *f, const struct knobs *k); /* one writer at a time */

#endif
