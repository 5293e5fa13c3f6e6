/*
 * risk.c - data at risk (see risk.h).
 *
 * The oldest acknowledgement not yet durable is tracked in two steps: an
 * acknowledgement starts the clock in `since` if it is not running; a real
 * sync that begins takes `since` over into `covering` (everything it
 * covers was acknowledged at or after it), and a later acknowledgement
 * starts `since` again. When the sync completes, `covering` is cleared; if
 * it failed, the clock it took goes back to `since`, since that data is
 * still not durable. Concurrent real syncs of one file (passthrough
 * callers on several threads) share `covering` with compare-and-swap:
 * the figures stay conservative (never younger than the truth).
 *
 * The most bytes at risk in a reader's interval: acked and durable only
 * grow, so the bytes at risk (acked - durable) only drop when durable
 * moves, at the end of a real sync. That end records the peak it ends
 * into each reader's worst; a reader takes the larger of its worst and
 * what is at risk now. An acknowledgement, the hot path, only moves acked.
 */
#include "files.h"
#include "risk.h"
#include "trace.h"

static void store_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	while (v > old && !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed,
								  memory_order_relaxed))
		;
}

/* Set *p to v if *p is 0 or younger (a later stamp) than v. */
static void store_oldest(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	while (v && (!old || v < old) &&
	       !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed, memory_order_relaxed))
		;
}

void risk_reset(struct shim_file *f)
{
	struct risk *r = &f->risk;
	atomic_store(&r->written, 0);
	atomic_store(&r->acked, 0);
	atomic_store(&r->durable, 0);
	atomic_store(&r->since, 0);
	atomic_store(&r->covering, 0);
	for (int i = 0; i < RISK_READERS; i++) {
		atomic_store(&r->worst_bytes[i], 0);
		atomic_store(&r->worst_age[i], 0);
	}
}

static uint64_t at_risk_bytes(struct risk *r)
{
	uint64_t acked = atomic_load_explicit(&r->acked, memory_order_relaxed);
	uint64_t durable = atomic_load_explicit(&r->durable, memory_order_relaxed);
	return acked > durable ? acked - durable : 0;
}

void risk_acked(struct shim_file *f, uint64_t now)
{
	struct risk *r = &f->risk;
	store_max(&r->acked, atomic_load_explicit(&r->written, memory_order_relaxed));
	store_oldest(&r->since, now);
}

void risk_acked_at_once(struct shim_file *f)
{
	struct risk *r = &f->risk;
	store_max(&r->acked, atomic_load_explicit(&r->written, memory_order_relaxed));
	if (!atomic_load_explicit(&r->since, memory_order_relaxed))
		store_oldest(&r->since, trace_now());
}

struct risk_sync risk_sync_begins(struct shim_file *f, uint64_t held)
{
	struct risk *r = &f->risk;
	uint64_t written = atomic_load(&r->written);
	struct risk_sync s = { written > held ? written - held : 0, held ? 0 : atomic_exchange(&r->since, 0) };
	store_oldest(&r->covering, s.since);
	return s;
}

void risk_sync_ends(struct shim_file *f, struct risk_sync s, bool ok, uint64_t now)
{
	struct risk *r = &f->risk;
	if (ok) {
		/* The only drop of the bytes at risk: the peak it ends goes to
		 * the readers' worst (acked read after durable moved, so an
		 * acknowledgement racing with it is in the peak or after it). */
		uint64_t durable0 = atomic_load(&r->durable);
		store_max(&r->durable, s.written);
		uint64_t acked = atomic_load(&r->acked);
		uint64_t peak = acked > durable0 ? acked - durable0 : 0;
		for (int i = 0; i < RISK_READERS; i++)
			store_max(&r->worst_bytes[i], peak);
	}
	if (!s.since)
		return;
	uint64_t mine = s.since;
	atomic_compare_exchange_strong(&r->covering, &mine, 0);
	if (!ok) {
		store_oldest(&r->since, s.since);
		return;
	}
	uint64_t age = now > s.since ? now - s.since : 0;
	for (int i = 0; i < RISK_READERS; i++)
		store_max(&r->worst_age[i], age);
}

uint64_t risk_oldest(struct shim_file *f)
{
	uint64_t c = atomic_load_explicit(&f->risk.covering, memory_order_relaxed);
	uint64_t s = atomic_load_explicit(&f->risk.since, memory_order_relaxed);
	return c && (!s || c < s) ? c : s;
}

void risk_read(struct shim_file *f, enum risk_reader who, uint64_t now, struct risk_now *out)
{
	struct risk *r = &f->risk;
	uint64_t oldest = risk_oldest(f);
	out->bytes = at_risk_bytes(r);
	out->age_ns = oldest && now > oldest ? now - oldest : 0;
	out->written = atomic_load_explicit(&r->written, memory_order_relaxed);
	uint64_t wb = atomic_exchange_explicit(&r->worst_bytes[who], 0, memory_order_relaxed);
	uint64_t wa = atomic_exchange_explicit(&r->worst_age[who], 0, memory_order_relaxed);
	out->worst_bytes = wb > out->bytes ? wb : out->bytes;
	out->worst_age_ns = wa > out->age_ns ? wa : out->age_ns;
}

bool risk_seen(const struct shim_file *f)
{
	return atomic_load_explicit(&f->risk.acked, memory_order_relaxed) != 0 ||
	       atomic_load_explicit(&f->risk.since, memory_order_relaxed) != 0 ||
	       atomic_load_explicit(&f->risk.covering, memory_order_relaxed) != 0;
}
_Static_assert(RISK_READERS == sizeof(((struct risk *)0)->worst_age) / sizeof(uint64_t), "one worst slot per reader");
