/*
 * live.h - the live counters (docs/LIVEFORMAT.md): per-file statistics
 * kept while `live = on`, and the thread that publishes them once a
 * second in DIR/PID.live for synclat top and synclat metrics.
 *
 * The write path's share is one relaxed add (calls and bytes packed into
 * one word); syncs add a few more, and a clock read around the call.
 * Everything else happens in the publisher thread.
 */
#ifndef SYNCSHIM_LIVE_H
#define SYNCSHIM_LIVE_H

#include "livefmt.h"
#include "files.h"

/* writes_packed: calls in the high bits, bytes in the low ones. The
 * publisher takes differences once a second, which stay exact while a
 * second sees fewer than 2^24 writes and 2^40 bytes. */
#define LIVE_BYTES_BITS 40
#define LIVE_BYTES_MASK ((UINT64_C(1) << LIVE_BYTES_BITS) - 1)

struct live_stats {
	_Atomic uint64_t writes_packed;
	_Atomic uint64_t syncs, real_syncs, errors;
	_Atomic uint64_t sync_sum, real_sum;
	_Atomic uint64_t sync_max, real_max;     /* since the publisher last looked */
	_Atomic uint64_t sync_b[LIVE_NBUCKETS], real_b[LIVE_NBUCKETS];
	/* the publisher's own: totals and the last look, for intervals */
	uint64_t writes, bytes, last_packed, last_syncs, last_real, last_errors;
	uint64_t last_sync_b[LIVE_NBUCKETS], last_real_b[LIVE_NBUCKETS];
};

/* At load: remember whether and where to publish (nothing starts yet). */
void live_start(const struct policy *p);
/* The first call worth publishing starts the publisher thread. */
void live_maybe_start(void);
/* Exit or exec: the file says so and goes. */
void live_stop(void);
/* End the publisher thread (its last round, the file removed) so that it
 * no longer exists; live_maybe_start starts another (set*id, setid.c). */
void live_quiesce(void);
void live_atfork_child(void);

/* A new file object's statistics (NULL when live is off). */
struct live_stats *live_stats_new(void);
void live_stats_reset(struct live_stats *s);
/* A file's part (files.h's table): its counters made with the object
 * (NULL unless live = on), zeroed for each new file. */
void live_file_init(struct shim_file *f);
void live_file_reset(struct shim_file *f);

static inline void live_wrote(struct shim_file *f, ssize_t r)
{
	atomic_fetch_add_explicit(&f->live->writes_packed,
				  (UINT64_C(1) << LIVE_BYTES_BITS) + (r > 0 ? (uint64_t)r : 0),
				  memory_order_relaxed);
}

/* The app's sync call on f took ns; a real sync of f took ns (err: its errno). */
void live_app_synced(struct shim_file *f, uint64_t ns);
void live_real_synced(struct shim_file *f, uint64_t ns, int err);

#endif
