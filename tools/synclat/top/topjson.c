/*
 * topjson.c - `synclat top --json`: one snapshot for machines, the same
 * processes, order and filter as the screen, with the raw counts beside
 * the rates (a script can take its own deltas).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "report.h"
#include "topview.h"

static void jnum(FILE *out, const char *key, double v, bool comma)
{
	fprintf(out, "\"%s\": ", key);
	if (isfinite(v))
		fprintf(out, "%.6g", v);
	else
		fputs("null", out);
	fputs(comma ? ", " : "", out);
}

static void jint(FILE *out, const char *key, uint64_t v, bool comma)
{
	fprintf(out, "\"%s\": %" PRIu64 "%s", key, v, comma ? ", " : "");
}

static void jstr(FILE *out, const char *key, const char *s, bool comma)
{
	fprintf(out, "\"%s\": ", key);
	json_str(out, s);
	fputs(comma ? ", " : "", out);
}

static void jbool(FILE *out, const char *key, bool v, bool comma)
{
	fprintf(out, "\"%s\": %s%s", key, v ? "true" : "false", comma ? ", " : "");
}

/* The figures of one row: a file, a rule's sum, or a process's total. */
static void json_figures(FILE *out, const struct live_proc *p, const struct live_file *f)
{
	jstr(out, "policy", live_policy_name(f->policy), true);
	jbool(out, "unbounded", f->flags & LIVEF_UNBOUNDED, true);
	jnum(out, "writes_per_s", live_rate(p, f->iv_writes), true);
	jnum(out, "mb_per_s", live_rate(p, f->iv_bytes) / 1e6, true);
	jnum(out, "syncs_per_s", live_rate(p, f->iv_syncs), true);
	jnum(out, "real_syncs_per_s", live_rate(p, f->iv_real_syncs), true);
	jint(out, "sync_p50_ns", f->sync_p50_ns, true);
	jint(out, "sync_p99_ns", f->sync_p99_ns, true);
	jint(out, "sync_max_ns", f->sync_max_ns, true);
	jint(out, "real_p50_ns", f->real_p50_ns, true);
	jint(out, "real_p99_ns", f->real_p99_ns, true);
	jint(out, "pending", f->pending, true);
	jint(out, "at_risk_bytes", f->risk_bytes, true);
	jint(out, "at_risk_oldest_ns", f->risk_age_ns, true);
	jint(out, "at_risk_worst_bytes", f->risk_worst_bytes, true);
	jint(out, "at_risk_worst_age_ns", f->risk_worst_age_ns, true);
	jint(out, "errors", f->errors, true);
	jint(out, "writes", f->writes, true);
	jint(out, "bytes", f->bytes, true);
	jint(out, "syncs", f->syncs, true);
	jint(out, "real_syncs", f->real_syncs, false);
}

static void json_row(FILE *out, const struct live_proc *p, const struct live_file *f, bool by_rule)
{
	fputc('{', out);
	if (by_rule) {
		jint(out, "files", f->id, true);
	} else {
		jint(out, "id", f->id, true);
		jstr(out, "path", f->path, true);
	}
	jint(out, "rule", f->rule, true);
	jstr(out, "rule_name", f->rule_name[0] ? f->rule_name : "default", true);
	json_figures(out, p, f);
	fputc('}', out);
}

static void json_proc(FILE *out, const struct top_proc *t, bool by_rule)
{
	const struct live_proc *p = t->p;
	char cmd[LIVE_CMD_MAX];
	fputc('{', out);
	jint(out, "pid", p->h.pid, true);
	jint(out, "ppid", p->h.ppid, true);
	jint(out, "uid", p->h.uid, true);
	jstr(out, "command", live_command(p, cmd, sizeof(cmd)), true);
	jstr(out, "cmdline", p->h.cmdline, true);
	jstr(out, "config", p->h.config, true);
	jstr(out, "default_policy", p->h.default_policy, true);
	jstr(out, "live_file", p->path, true);
	jbool(out, "stalled", p->stalled, true);
	jbool(out, "busy", p->busy, true);
	jint(out, "interval_ns", p->h.interval_ns, true);
	jint(out, "start_wall_ns", p->h.start_wall_ns, true);
	jint(out, "updated_wall_ns", p->h.updated_wall_ns, true);
	jint(out, "nfiles", p->h.nfiles, true);
	jint(out, "omitted", p->h.omitted, true);
	jint(out, "config_errors", p->h.config_errors, true);
	jstr(out, "config_error", p->h.config_error, true);
	/* every rule in force with the files it matched (none from a writer
	 * before the rule table) */
	fputs("\"rule_table\": [", out);
	for (uint32_t i = 0; i < p->h.nrules; i++) {
		const struct live_rule *r = &p->rules[i];
		fputs(i ? ", {" : "{", out);
		jint(out, "rule", r->rule, true);
		jstr(out, "name", r->rule ? r->name : "default", true);
		jstr(out, "policy", live_policy_name(r->policy), true);
		jstr(out, "glob", r->glob, true);
		jint(out, "files", r->files, true);
		jbool(out, "approximate", r->flags & LIVER_APPROXIMATE, false);
		fputc('}', out);
	}
	fputs("], \"total\": {", out);
	json_figures(out, p, &t->total);
	fprintf(out, "}, \"%s\": [", by_rule ? "rules" : "files");
	for (size_t i = 0; i < t->nrows; i++) {
		fputs(i ? ",\n    " : "\n    ", out);
		json_row(out, p, &t->rows[i], by_rule);
	}
	fputs("]}", out);
}

static void json_head(FILE *out, const struct live_snapshot *s, const struct top_view *v, const struct top_opts *o)
{
	jint(out, "time_wall_ns", s->wall_ns, true);
	jstr(out, "sort", top_sort_name(o->sort), true);
	jstr(out, "filter", o->filter, true);
	jint(out, "pid_filter", (uint64_t)o->pid, true);
	jbool(out, "by_rule", o->by_rule, true);
	fputs("\"dirs\": [", out);
	for (size_t i = 0; i < s->ndirs; i++) {
		fputs(i ? ", " : "", out);
		json_str(out, s->dirs[i]);
	}
	fputs("],\n \"skipped\": {", out);
	jint(out, "stale", s->skipped[LIVE_STALE], true);
	jint(out, "removed", s->removed, true);
	jint(out, "bad", s->skipped[LIVE_BAD], true);
	jint(out, "refused", s->skipped[LIVE_REFUSED], false);
	fputs("}, \"notes\": [", out);
	for (unsigned i = 0; i < s->nnotes; i++) {
		fputs(i ? ", " : "", out);
		json_str(out, s->notes[i]);
	}
	fputs("],\n \"totals\": {", out);
	jint(out, "processes", v->nprocs, true);
	jint(out, "stalled", v->stalled, true);
	jint(out, "busy", v->busy, true);
	jint(out, "files", v->nfiles, true);
	jnum(out, "calls_per_s", v->calls_per_s, true);
	jint(out, "at_risk_bytes", v->at_risk_bytes, false);
	fputs("},\n", out);
}

void top_print_json(FILE *out, const struct live_snapshot *s, const struct top_view *v, const struct top_opts *o)
{
	fputs("{", out);
	json_head(out, s, v, o);
	fputs(" \"processes\": [", out);
	for (size_t i = 0; i < v->nprocs; i++) {
		fputs(i ? ",\n  " : "\n  ", out);
		json_proc(out, &v->procs[i], o->by_rule);
	}
	fputs("]}\n", out);
}
