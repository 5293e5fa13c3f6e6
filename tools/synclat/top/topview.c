/*
 * topview.c - synclat top's model: which processes the filter keeps, in
 * which order, each with its rows (files, or rules summed with
 * live_by_rule), and the same as JSON for --json. The text rendering is
 * toptext.c.
 *
 * Rates are the shim's own: each file's interval counts over the
 * interval it published (LIVEFORMAT.md), so the view needs no memory of
 * the previous refresh and a process's figures are the same whoever
 * reads them, whenever.
 */
#include "topview.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static const char *const sort_names[TOP_NSORT] = { "syncs", "writes", "risk", "latency", "pid" };
static const char *const sort_titles[TOP_NSORT] = { "syncs/s", "writes/s", "data at risk", "sync p99", "pid" };
static const char sort_keys[TOP_NSORT] = { 's', 'w', 'r', 'l', 'p' };

const char *top_sort_name(enum top_sort s)
{
	return s < TOP_NSORT ? sort_names[s] : "?";
}

const char *top_sort_title(enum top_sort s)
{
	return s < TOP_NSORT ? sort_titles[s] : "?";
}

int top_sort_parse(const char *name)
{
	for (int i = 0; i < TOP_NSORT; i++)
		if (!strcmp(name, sort_names[i]))
			return i;
	return -1;
}

int top_sort_of_key(int key)
{
	for (int i = 0; i < TOP_NSORT; i++)
		if (key == sort_keys[i])
			return i;
	return -1;
}

/* The filter: -p's pid, then the text as a pid or within the command line. */
static bool proc_matches(const struct live_proc *p, const struct top_opts *o)
{
	if (o->pid && (long)p->h.pid != o->pid)
		return false;
	if (!o->filter[0])
		return true;
	char pid[16];
	snprintf(pid, sizeof(pid), "%u", p->h.pid);
	return !strcmp(pid, o->filter) || strstr(p->h.cmdline, o->filter) != NULL;
}

/* What a row or a process is sorted by: larger first. */
static double sort_value(const struct live_proc *p, const struct live_file *f, enum top_sort s)
{
	switch (s) {
	case TOP_SORT_WRITES: return live_rate(p, f->iv_writes);
	case TOP_SORT_RISK: return (double)f->risk_bytes;
	case TOP_SORT_LATENCY: return (double)f->sync_p99_ns;
	case TOP_SORT_SYNCS:
	case TOP_SORT_PID:
	case TOP_NSORT: break;
	}
	return live_rate(p, f->iv_syncs);
}

struct row_ctx {
	const struct live_proc *p;
	enum top_sort sort;
};

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct row_ctx *c = arg;
	const struct live_file *x = a, *y = b;
	double vx = sort_value(c->p, x, c->sort), vy = sort_value(c->p, y, c->sort);
	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->rule != y->rule)
		return x->rule < y->rule ? -1 : 1;
	return strcmp(x->path, y->path);
}

static int cmp_procs(const void *a, const void *b, void *arg)
{
	enum top_sort s = *(const enum top_sort *)arg;
	const struct top_proc *x = a, *y = b;
	if (s != TOP_SORT_PID) {
		double vx = sort_value(x->p, &x->total, s), vy = sort_value(y->p, &y->total, s);
		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	return x->p->h.pid < y->p->h.pid ? -1 : x->p->h.pid > y->p->h.pid;
}

/* A process's rows: copies of its files, or its rules summed. */
static int proc_rows(struct top_proc *t, const struct top_opts *o)
{
	const struct live_proc *p = t->p;
	size_t n = p->h.nfiles;
	t->rows = calloc(n ? n : 1, sizeof(*t->rows));
	unsigned *nfiles = calloc(n ? n : 1, sizeof(*nfiles));
	if (!t->rows || !nfiles) {
		free(nfiles);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		live_file_add(&t->total, &p->files[i]);
	if (o->by_rule) {
		/* A rule row has no file id: it carries its count of files
		 * there, so the count moves with the row when sorted. */
		t->nrows = live_by_rule(p, t->rows, nfiles);
		for (size_t i = 0; i < t->nrows; i++)
			t->rows[i].id = nfiles[i];
	} else {
		if (n) /* (a busy process has no files, and no array) */
			memcpy(t->rows, p->files, n * sizeof(*t->rows));
		t->nrows = n;
	}
	free(nfiles);
	struct row_ctx c = { p, o->sort == TOP_SORT_PID ? TOP_SORT_SYNCS : o->sort };
	qsort_r(t->rows, t->nrows, sizeof(*t->rows), cmp_rows, &c);
	return 0;
}

int top_view_build(struct top_view *v, const struct live_snapshot *s, const struct top_opts *o)
{
	memset(v, 0, sizeof(*v));
	v->procs = calloc(s->nprocs ? s->nprocs : 1, sizeof(*v->procs));
	if (!v->procs)
		return -1;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct live_proc *p = &s->procs[i];
		if (!proc_matches(p, o))
			continue;
		struct top_proc *t = &v->procs[v->nprocs++];
		t->p = p;
		if (proc_rows(t, o) != 0)
			return -1;
		v->nfiles += p->h.nfiles;
		v->stalled += p->stalled;
		v->busy += p->busy;
		v->calls_per_s += live_rate(p, t->total.iv_writes + t->total.iv_syncs);
		v->at_risk_bytes += t->total.risk_bytes;
	}
	enum top_sort sort = o->sort;
	qsort_r(v->procs, v->nprocs, sizeof(*v->procs), cmp_procs, &sort);
	return 0;
}

void top_view_free(struct top_view *v)
{
	for (size_t i = 0; i < v->nprocs; i++)
		free(v->procs[i].rows);
	free(v->procs);
	memset(v, 0, sizeof(*v));
}
