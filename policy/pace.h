/*
 * pace.h - when a sync should start: the arithmetic behind
 * `max_delay_ms = auto`, `max_at_risk_ms` and `group_wait_us = auto`.
 *
 * Pure functions of what the flusher has observed (how long the file's
 * real syncs take, how far apart its sync requests arrive, how many
 * callers a linger gathered), so they are unit-tested on their own; the
 * shim keeps the observations per file (shim/defer/flusher.c) and asks here.
 */
#ifndef SYNCSHIM_PACE_H
#define SYNCSHIM_PACE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

/* The ceiling on data at risk when max_delay_ms = auto and no
 * max_at_risk_ms is given: the old fixed default window, so auto never
 * risks more than the default did. */
#define PACE_AUTO_AT_RISK_MS 100u

/* The observations, in nanoseconds; 0 means "not seen yet". joined_x16
 * is how many requests a linger gathered, on average, times 16. */
struct pace_seen {
	uint32_t sync_ns;
	uint32_t gap_ns;
	uint32_t joined_x16;
};

/* Moving average with weight 1/8 (a few syncs of memory, so it follows a
 * device that slows down); the first sample is taken as it is. */
uint32_t pace_average(uint32_t avg, uint64_t sample);

/* How long a group leader lingers before its real sync under
 * group_wait_us = auto. Only when requests arrive faster than two per
 * sync duration (so callers are waiting to join), never longer than a
 * quarter of a sync, and not while lingering has been gathering fewer
 * than one caller on average: then the wait costs more than it saves.
 * probe: linger anyway to measure again (the caller does this rarely),
 * since without lingering nothing would ever show it started to pay. */
uint64_t pace_linger_ns(const struct pace_seen *s, bool probe);

/* Fold the requests one linger gathered into joined_x16. */
uint32_t pace_joined(uint32_t joined_x16, uint64_t gathered);

/* The ceiling in ns on how old the oldest acknowledged but not yet
 * durable request may get before an app sync waits for the device:
 * max_at_risk_ms, or PACE_AUTO_AT_RISK_MS under an auto window; 0 none. */
uint64_t pace_at_risk_ns(uint32_t max_delay_ms, uint32_t max_at_risk_ms);

/* When a deferred file whose oldest uncovered request came at first_ns is
 * due for its sync: after max_delay_ms, or under auto at once (one file
 * never has two syncs in flight, so back-to-back syncs already wait for
 * the device: the window is as short as the device allows and widens by
 * itself when the device slows down). */
uint64_t pace_due_ns(uint64_t first_ns, uint32_t max_delay_ms);

/* Whether an app sync should wait for the device: the oldest request
 * still at risk (oldest_ns, 0 none) is older than the ceiling at now. */
bool pace_over_ceiling(uint64_t oldest_ns, uint64_t now_ns, uint64_t ceiling_ns);

#endif
