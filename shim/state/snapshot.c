/*
 * snapshot.c - the live policy: published by one writer, read by many.
 *
 * A reload builds a new immutable snapshot and swaps the pointer. The old
 * one may be freed only when no thread can still be reading it, and the
 * readers are any app thread, even a signal handler, so they must neither
 * lock nor block. Readers announce themselves in one of two counters (by
 * the parity of an epoch) around the few lines that look at the snapshot;
 * the writer swaps the pointer, moves the epoch on, and waits until the
 * old parity's counter drains. A reader that took the old parity either
 * saw the old pointer (and is counted) or re-checks the epoch and retries.
 * Reader sections are a handful of instructions and never block, so the
 * wait is short; it waits for readers, never for a guessed time.
 *
 * Per-file settings do not live here: each file keeps a copy (knobs.c).
 * The snapshot is read only by opens (which rule matches a new path),
 * sync() and syncfs() without a tracked file, and a few global settings.
 */
#include <time.h>

#include "alloc.h"
#include "shim.h"
#include "snapshot.h"

static _Atomic uint64_t epoch;
static _Atomic uint64_t readers[2];

const struct policy *policy_enter(unsigned *ticket)
{
	for (;;) {
		uint64_t e = atomic_load(&epoch);
		atomic_fetch_add(&readers[e & 1], 1);
		if (atomic_load(&epoch) == e) {
			*ticket = (unsigned)(e & 1);
			TEST_POINT("policy");
			return atomic_load(&shim.policy);
		}
		atomic_fetch_sub(&readers[e & 1], 1);
	}
}

void policy_leave(unsigned ticket)
{
	atomic_fetch_sub(&readers[ticket & 1], 1);
}

void policy_publish(struct policy *next)
{
	const struct policy *old = atomic_exchange(&shim.policy, next);
	uint64_t e = atomic_fetch_add(&epoch, 1);
	while (atomic_load(&readers[e & 1]) != 0) {
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
	if (old && old != shim_boot_policy)
		shim_free((void *)old);
}

/* The child has one thread, which is not inside a reader section (fork is
 * never called from one): counts inherited from the parent's other threads
 * would make the child's next reload wait forever. */
void policy_atfork_child(void)
{
	atomic_store(&readers[0], 0);
	atomic_store(&readers[1], 0);
}
