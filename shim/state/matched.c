/*
 * matched.c - files matched per rule: distinct paths, counted when the
 * shim first meets a file (files.c, under the registry lock), so a file
 * opened and closed a thousand times counts once. The paths are
 * remembered as 64-bit hashes in a fixed table (no allocation: this runs
 * under the registry lock); once it is full, a path met again after its
 * file object was let go may count again, and the counts say they are
 * approximate. Readers (the live publisher) load the counts without a
 * lock.
 */
#include "matched.h"

#include <stdatomic.h>
#include <string.h>

#include "policy.h"

#define SEEN_SLOTS 4096 /* power of two; 32 KiB */

static uint64_t seen[SEEN_SLOTS];   /* registry lock; 0 is an empty slot */
static uint32_t nseen;              /* registry lock */
static _Atomic uint32_t count[POLICY_MAX_RULES + 1]; /* [0]: the default rule */
static _Atomic bool approximate;

/* FNV-1a over the rule and the path, never 0. */
static uint64_t key_of(int rule_index, const char *path)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(uint32_t)(rule_index + 1);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h ? h : 1;
}

/* True if key was new (and is remembered now, room permitting). */
static bool remember(uint64_t key)
{
	if (nseen >= SEEN_SLOTS * 3 / 4) {
		atomic_store_explicit(&approximate, true, memory_order_relaxed);
		return true;
	}
	for (uint32_t i = (uint32_t)key & (SEEN_SLOTS - 1);; i = (i + 1) & (SEEN_SLOTS - 1)) {
		if (seen[i] == key)
			return false;
		if (!seen[i]) {
			seen[i] = key;
			nseen++;
			return true;
		}
	}
}

void matched_note(int rule_index, const char *path)
{
	if (rule_index < -1 || rule_index >= POLICY_MAX_RULES)
		return;
	if (remember(key_of(rule_index, path ? path : "")))
		atomic_fetch_add_explicit(&count[rule_index + 1], 1, memory_order_relaxed);
}

void matched_reset(void)
{
	memset(seen, 0, sizeof(seen));
	nseen = 0;
	for (int i = 0; i <= POLICY_MAX_RULES; i++)
		atomic_store_explicit(&count[i], 0, memory_order_relaxed);
	atomic_store_explicit(&approximate, false, memory_order_relaxed);
}

uint32_t matched_files(int rule_index)
{
	if (rule_index < -1 || rule_index >= POLICY_MAX_RULES)
		return 0;
	return atomic_load_explicit(&count[rule_index + 1], memory_order_relaxed);
}

bool matched_approximate(void)
{
	return atomic_load_explicit(&approximate, memory_order_relaxed);
}
