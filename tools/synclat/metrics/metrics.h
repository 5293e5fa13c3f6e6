/*
 * metrics.h - `synclat metrics`: the live counters (live.h) in the
 * Prometheus text exposition format, version 0.0.4, for node_exporter's
 * textfile collector or any scraper of such files.
 */
#ifndef SYNCSHIM_METRICS_H
#define SYNCSHIM_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "liveread.h"

/* The histograms' `le` bounds: every 1-2-5 value from 1 us to 10 s,
 * each an exact bound of the live format's buckets (livefmt.h). */
#define METRICS_NLE 22
/* Bound k in ns, and the live bucket it closes (live_bound_ns(i) == ns). */
uint64_t metrics_le_ns(unsigned k);
unsigned metrics_le_bucket(unsigned k);

/* One exposition of a snapshot: series per service and rule, or with
 * per_file per process and file too (pid and path labels); -1 when out
 * of memory (nothing written). */
int metrics_write(FILE *out, const struct live_snapshot *s, bool per_file);

/* --listen ADDR: serves GET /metrics over HTTP, every client with its own
 * deadline (slow or idle ones never block a scraper), until SIGTERM or
 * SIGINT; 0, or EXIT_USAGE when it cannot listen. */
int metrics_serve(const char *addr, const struct live_where *w, bool per_file, FILE *out, FILE *err);

/* "synclat metrics ARGS" (argv[0] is "metrics"): 0 ok, 2 a usage error or
 * the output file could not be written. */
int cmd_metrics(int argc, char **argv, FILE *out, FILE *err);

#endif
