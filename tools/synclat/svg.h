/*
 * svg.h - plots for synclat compare: a self-contained SVG (no scripts, no
 * fonts or images fetched) and an HTML page wrapping it with the table.
 *
 * The SVG has one panel per main op with both runs' latency-percentile
 * curves (x: percentile on a "nines" scale, 0 .. 99.99; y: latency, log
 * scale), and a panel with each run's per-second max latency of app calls.
 */
#ifndef SYNCSHIM_SVG_H
#define SYNCSHIM_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "logread.h"

/* The ops that get a percentile panel (at most max, returns how many):
 * app syncs, the busiest app write op, then the flusher's real syncs. */
size_t svg_plot_ops(const struct run *a, const struct run *b, unsigned *ops, size_t max);

/* standalone: a whole .svg file (XML prolog); else a bare <svg> element
 * for inlining in HTML. la and lb name the runs in the legend. */
void svg_compare(FILE *out, const struct run *a, const struct run *b, const char *la,
		 const char *lb, bool standalone);

/* One HTML page: the runs, the verdict, the comparison table, the SVG. */
void html_compare(FILE *out, const struct run *a, const struct run *b, const char *la,
		  const char *lb);

#endif
