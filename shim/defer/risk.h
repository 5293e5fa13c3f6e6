/*
 * risk.h - data at risk: what the app was told is durable and is not.
 *
 * Per file, three byte counts on one scale: written (every byte the app
 * wrote to the file while its rule could answer a sync without the
 * device), acked (written, as of the latest sync the shim answered
 * without a covering real sync: a deferred or no-op fsync, fdatasync or
 * msync, or a write to an O_SYNC file whose flag was dropped) and durable
 * (written, as of the start of the latest real sync that completed). At
 * risk: acked - durable bytes, the oldest of them acknowledged at
 * risk_oldest(). Under passthrough and group the shim never answers
 * without the device, so nothing is ever at risk; under defer the flusher
 * catches up within the window; under noop it only grows.
 *
 * Everything is lock-free: the write path's share is one relaxed add.
 * Writes through shared mappings are not seen (an msync answered without
 * the device still starts the clock, with no bytes).
 */
#ifndef SYNCSHIM_RISK_H
#define SYNCSHIM_RISK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "file_parts.h" /* struct risk */

struct shim_file;

/* Who reads the worst-per-interval figures; each has its own. */
enum risk_reader { RISK_LOG, RISK_LIVE, RISK_READERS };

struct risk_now {
	uint64_t bytes;       /* at risk now */
	uint64_t age_ns;      /* age of the oldest byte at risk now, 0 none */
	uint64_t worst_bytes; /* most at risk since this reader last looked */
	uint64_t worst_age_ns;
	uint64_t written;     /* total, for rates */
};

/* A real sync in progress: what it will make durable. */
struct risk_sync {
	uint64_t written;     /* written when it began */
	uint64_t since;       /* oldest acknowledgement it covers, 0 none */
};

void risk_reset(struct shim_file *f);

/* The write path's share: r is the file's (&f->risk), so this header needs
 * no struct shim_file (files.h embeds struct risk). */
static inline void risk_wrote(struct risk *r, uint64_t bytes)
{
	atomic_fetch_add_explicit(&r->written, bytes, memory_order_relaxed);
}

static inline uint64_t risk_written(const struct risk *r)
{
	return atomic_load_explicit(&r->written, memory_order_relaxed);
}

/* The shim answered a sync of f without the device (at now, ns). */
void risk_acked(struct shim_file *f, uint64_t now);
/* The same for an answer nothing will ever make durable (noop): the
 * clock is read only for the first, the oldest. */
void risk_acked_at_once(struct shim_file *f);
/* A real sync of f begins / ended (ok: it succeeded). held: bytes written
 * and held back (held.c), not in the kernel: the sync makes neither them
 * nor any acknowledgement durable for certain, so the oldest stays. */
struct risk_sync risk_sync_begins(struct shim_file *f, uint64_t held);
void risk_sync_ends(struct shim_file *f, struct risk_sync s, bool ok, uint64_t now);
/* When the oldest acknowledged byte not yet durable was acknowledged, 0 none. */
uint64_t risk_oldest(struct shim_file *f);
/* The figures, and the reader's worst since it last looked (then reset). */
void risk_read(struct shim_file *f, enum risk_reader who, uint64_t now, struct risk_now *out);
/* Ever acknowledged anything without the device (worth reporting). */
bool risk_seen(const struct shim_file *f);

#endif
