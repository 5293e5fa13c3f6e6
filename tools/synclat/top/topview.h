/*
 * topview.h - what `synclat top` shows, apart from the terminal: the
 * processes of a live snapshot (live.h) filtered and sorted, each with
 * its files (or its rules), printed as text for the screen and --once, or
 * as JSON. Pure: no terminal, no system call but the writes to out.
 */
#ifndef SYNCSHIM_TOPVIEW_H
#define SYNCSHIM_TOPVIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "liveread.h"

enum top_sort { TOP_SORT_SYNCS, TOP_SORT_WRITES, TOP_SORT_RISK, TOP_SORT_LATENCY, TOP_SORT_PID, TOP_NSORT };

struct top_opts {
	enum top_sort sort;
	char filter[128];  /* a process's pid, or a substring of its command line; "" for all */
	long pid;          /* -p: this process alone; 0 for all */
	bool by_rule;      /* one row per rule instead of one per file */
};

/* "syncs" (for --sort) and "syncs/s" (for the header). */
const char *top_sort_name(enum top_sort s);
const char *top_sort_title(enum top_sort s);
/* --sort NAME; -1 if unknown. */
int top_sort_parse(const char *name);
/* The interactive key for each order ('s', 'w', 'r', 'l', 'p'); -1 none. */
int top_sort_of_key(int key);

struct top_proc {
	const struct live_proc *p;
	struct live_file *rows;    /* its files, or its rules (by_rule: id = files summed), sorted */
	size_t nrows;
	struct live_file total;    /* all its files summed */
};

struct top_view {
	struct top_proc *procs;    /* the ones the filter keeps, sorted */
	size_t nprocs, nfiles;
	unsigned stalled, busy;
	double calls_per_s;        /* writes and syncs */
	uint64_t at_risk_bytes;
};

int top_view_build(struct top_view *v, const struct live_snapshot *s, const struct top_opts *o);
void top_view_free(struct top_view *v);

/* Text, one line at a time: at most width code points a line (0: whole
 * lines, paths never cut) and max_lines lines (-1: all). Returns how many
 * lines did not fit. notes: print why files were refused. */
int top_print_text(FILE *out, const struct live_snapshot *s, const struct top_view *v, const struct top_opts *o,
		   int width, int max_lines, bool notes);
void top_print_json(FILE *out, const struct live_snapshot *s, const struct top_view *v, const struct top_opts *o);

#endif
