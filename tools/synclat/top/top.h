/*
 * top.h - `synclat top`: its command line (top.c) and its interactive
 * screen (topscreen.c). What it shows is topview.h's.
 */
#ifndef SYNCSHIM_TOP_H
#define SYNCSHIM_TOP_H

#include <stdbool.h>
#include <stdio.h>

#include "liveread.h"
#include "topview.h"

struct top_cfg {
	struct top_opts o;
	double delay_s;           /* -d: seconds between refreshes */
	bool once, json;          /* one snapshot as text, or as JSON */
	struct live_where where;
};

/* "synclat top ARGS" (argv[0] is "top"): 0 ok, 1 usage error or no
 * terminal, 2 the snapshot could not be read (out of memory). */
int cmd_top(int argc, char **argv, FILE *out, FILE *err);

/* The interactive view on standard input and output until q. */
int top_interactive(struct top_cfg *c, FILE *err);

#endif
