/*
 * toptext.c - synclat top as text: the same lines on the screen and in
 * --once, so a script sees what a person sees. On the screen each line is
 * cut to the terminal's width (a long path loses its start, which is the
 * part that repeats) and the lines to its height; --once keeps all.
 * Every byte that came from a live file goes through the sink, which
 * shows control bytes as '?': a command line or path could carry escape
 * sequences meant for the terminal.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"
#include "tool.h"
#include "topview.h"

/* The rule column is as wide as the longest rule name shown (never cut:
 * a profile's names are globs like "appendonly.aof.N.incr.aof"). */
#define ROW_FMT "  %-11s %-*s %9s %8s %9s %8s %9s %9s %6s %9s %8s %5s  "
#define RULE_HEAD "RULE"
/* The command line in a process's line: its first words. */
#define COMMAND_SHOWN 80

struct sink {
	FILE *out;
	int width;    /* code points a line; 0 no limit */
	int left;     /* lines left; -1 no limit */
	int dropped;  /* lines that did not fit */
};

static bool utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Code points in s. */
static int cp_len(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += !utf8_cont((unsigned char)*s);
	return n;
}

static void sink_line(struct sink *k, const char *line)
{
	if (k->left == 0) {
		k->dropped++;
		return;
	}
	int n = 0;
	for (const unsigned char *p = (const unsigned char *)line; *p; p++) {
		if (!utf8_cont(*p) && k->width && n++ == k->width)
			break;
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, k->out);
	}
	fputc('\n', k->out);
	if (k->left > 0)
		k->left--;
}

/* s into dst, or "..." and its last code points when it is longer than
 * room (room <= 0: no limit). */
static void elide_start(char *dst, size_t len, const char *s, int room)
{
	int n = cp_len(s);
	if (room <= 0 || n <= room) {
		snprintf(dst, len, "%s", s);
		return;
	}
	int keep = room > 3 ? room - 3 : 0;
	const char *t = s + strlen(s);
	while (keep > 0 && t > s) {
		t--;
		if (!utf8_cont((unsigned char)*t))
			keep--;
	}
	snprintf(dst, len, "%s%s", room > 3 ? "..." : "", t);
}

static void fmt_rate(char *buf, size_t len, double v)
{
	if (v == 0)
		snprintf(buf, len, "0");
	else if (v < 10)
		snprintf(buf, len, "%.2f", v);
	else if (v < 1000)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
}

/* Latencies and ages: "-" for none. */
static void fmt_opt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns)
		fmt_ns(buf, len, (double)ns);
	else
		snprintf(buf, len, "-");
}

static void fmt_risk(char *buf, size_t len, uint64_t bytes)
{
	if (bytes)
		fmt_bytes(buf, len, bytes);
	else
		snprintf(buf, len, "0");
}

static const char *rule_shown(const struct live_file *f)
{
	return f->rule_name[0] ? f->rule_name : "default";
}

/* Code points of the widest rule name any row shows (the heading's at least). */
static int rule_width(const struct top_view *v)
{
	int w = (int)strlen(RULE_HEAD);
	for (size_t i = 0; i < v->nprocs; i++)
		for (size_t r = 0; r < v->procs[i].nrows; r++) {
			int n = cp_len(rule_shown(&v->procs[i].rows[r]));
			w = n > w ? n : w;
		}
	return w;
}

static void row_line(struct sink *k, const struct live_proc *p, const struct live_file *f, bool by_rule, int rule_w)
{
	char w[24], mb[24], sy[24], re[24], p50[24], p99[24], pend[24], risk[24], age[24], err[24];
	fmt_rate(w, sizeof(w), live_rate(p, f->iv_writes));
	snprintf(mb, sizeof(mb), "%.2f", live_rate(p, f->iv_bytes) / 1e6);
	fmt_rate(sy, sizeof(sy), live_rate(p, f->iv_syncs));
	fmt_rate(re, sizeof(re), live_rate(p, f->iv_real_syncs));
	fmt_opt_ns(p50, sizeof(p50), f->sync_p50_ns);
	fmt_opt_ns(p99, sizeof(p99), f->sync_p99_ns);
	snprintf(pend, sizeof(pend), "%" PRIu64, f->pending);
	fmt_risk(risk, sizeof(risk), f->risk_bytes);
	fmt_opt_ns(age, sizeof(age), f->risk_age_ns);
	snprintf(err, sizeof(err), "%" PRIu64, f->errors);
	char line[1024], what[LIVE_PATH_MAX + 64], cut[LIVE_PATH_MAX + 64];
	/* %-*s pads by bytes: a name with multibyte code points gets the difference */
	const char *rule = rule_shown(f);
	int pad = rule_w + (int)strlen(rule) - cp_len(rule);
	int n = snprintf(line, sizeof(line), ROW_FMT, live_policy_name(f->policy), pad, rule, w, mb, sy, re, p50, p99,
			 pend, risk, age, err);
	const char *mark = f->flags & LIVEF_UNBOUNDED ? "[unbounded] " : "";
	if (by_rule)
		snprintf(what, sizeof(what), "%s(%u file%s)", mark, f->id, f->id == 1 ? "" : "s");
	else
		snprintf(what, sizeof(what), "%s%s", mark, f->path);
	elide_start(cut, sizeof(cut), what, k->width ? (k->width - n > 1 ? k->width - n : 1) : 0);
	snprintf(line + n, sizeof(line) - (size_t)n, "%s", cut);
	sink_line(k, line);
}

/* Under a process's line, what needs a look: a refused ini, rules that
 * matched no file (a glob written for other paths). */
static void warning_lines(struct sink *k, const struct live_proc *p)
{
	char line[1024];
	if (p->h.config_errors) {
		snprintf(line, sizeof(line), "  ! config errors %u, the latest: %s", p->h.config_errors,
			 p->h.config_error[0] ? p->h.config_error : "?");
		sink_line(k, line);
	}
	for (uint32_t i = 0; i < p->h.nrules; i++) {
		const struct live_rule *r = &p->rules[i];
		if (!r->rule || r->files)
			continue;
		snprintf(line, sizeof(line), "  ! rule %s (%s) matched no file: path = %s", r->name,
			 live_policy_name(r->policy), r->glob);
		sink_line(k, line);
	}
}

static void proc_line(struct sink *k, const struct top_proc *t, uint64_t now_mono_ns)
{
	const struct live_proc *p = t->p;
	char line[1024], calls[24], risk[24], state[64] = "", omitted[32] = "", command[COMMAND_SHOWN + 8];
	if (p->busy) {
		snprintf(line, sizeof(line), "PID %u  [busy: its counters kept changing while read; next time]",
			 p->h.pid);
		sink_line(k, line);
		return;
	}
	fmt_rate(calls, sizeof(calls), live_rate(p, t->total.iv_writes + t->total.iv_syncs));
	fmt_risk(risk, sizeof(risk), t->total.risk_bytes);
	if (p->stalled) {
		char age[24];
		fmt_ns(age, sizeof(age), (double)(now_mono_ns - p->h.updated_mono_ns));
		snprintf(state, sizeof(state), "  [stalled: no update for %s]", age);
	}
	if (p->h.omitted)
		snprintf(omitted, sizeof(omitted), " (+%u omitted)", p->h.omitted);
	command_label(command, sizeof(command), p->h.cmdline, COMMAND_SHOWN);
	/* "default": the [shim] policy of files no rule matches, not the
	 * policy of the rows below it */
	snprintf(line, sizeof(line), "PID %u%s  %s calls/s  %s at risk  %u file%s%s  default %s  config %s  command: %s",
		 p->h.pid, state, calls, risk, p->h.nfiles, p->h.nfiles == 1 ? "" : "s", omitted,
		 p->h.default_policy[0] ? p->h.default_policy : "?", p->h.config[0] ? p->h.config : "-", command);
	sink_line(k, line);
	warning_lines(k, p);
}

static void summary_line(struct sink *k, const struct live_snapshot *s, const struct top_view *v,
			 const struct top_opts *o)
{
	char when[32] = "?", calls[24], risk[24], state[64] = "", filter[200] = "";
	time_t t = (time_t)(s->wall_ns / 1000000000u);
	struct tm tm;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fmt_rate(calls, sizeof(calls), v->calls_per_s);
	fmt_risk(risk, sizeof(risk), v->at_risk_bytes);
	if (v->stalled || v->busy)
		snprintf(state, sizeof(state), " (%u stalled, %u busy)", v->stalled, v->busy);
	if (o->pid)
		snprintf(filter, sizeof(filter), "  pid %ld", o->pid);
	if (o->filter[0])
		snprintf(filter + strlen(filter), sizeof(filter) - strlen(filter), "  filter '%s'", o->filter);
	char line[1024];
	snprintf(line, sizeof(line), "synclat top  %s  processes %zu%s  files %zu  calls/s %s  at risk %s  sort %s%s%s",
		 when, v->nprocs, state, v->nfiles, calls, risk, top_sort_title(o->sort), o->by_rule ? "  by rule" : "",
		 filter);
	sink_line(k, line);
}

/* Why a process may be missing: what was skipped, and where we looked. */
static void skipped_lines(struct sink *k, const struct live_snapshot *s, const struct top_view *v, bool notes)
{
	char line[1024];
	unsigned bad = s->skipped[LIVE_BAD] + s->skipped[LIVE_REFUSED];
	if (s->skipped[LIVE_STALE] || bad) {
		snprintf(line, sizeof(line), "skipped: %u stale (%u removed), %u unreadable or refused",
			 s->skipped[LIVE_STALE], s->removed, bad);
		sink_line(k, line);
	}
	for (unsigned i = 0; notes && i < s->nnotes; i++) {
		snprintf(line, sizeof(line), "  %s", s->notes[i]);
		sink_line(k, line);
	}
	if (v->nprocs)
		return;
	if (s->nprocs) {
		sink_line(k, "no process matches the filter");
		return;
	}
	size_t n = (size_t)snprintf(line, sizeof(line), "no shimmed process publishes live counters in");
	for (size_t i = 0; i < s->ndirs && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", s->dirs[i]);
	if (!s->ndirs)
		snprintf(line + n, sizeof(line) - n, " any directory (none exists yet)");
	sink_line(k, line);
	sink_line(k, "(a process publishes them with live = on in [shim], or SYNCSHIM_LIVE=1)");
}

int top_print_text(FILE *out, const struct live_snapshot *s, const struct top_view *v, const struct top_opts *o,
		   int width, int max_lines, bool notes)
{
	struct sink k = { out, width > 0 ? width : 0, max_lines, 0 };
	char line[512];
	summary_line(&k, s, v, o);
	skipped_lines(&k, s, v, notes);
	int rule_w = rule_width(v);
	snprintf(line, sizeof(line), ROW_FMT "%s", "POLICY", rule_w, RULE_HEAD, "WRITES/S", "MB/S", "SYNCS/S", "REAL/S",
		 "SYNC P50", "SYNC P99", "PEND", "AT RISK", "OLDEST", "ERR", o->by_rule ? "FILES" : "PATH");
	if (v->nprocs)
		sink_line(&k, line);
	for (size_t i = 0; i < v->nprocs; i++) {
		const struct top_proc *t = &v->procs[i];
		proc_line(&k, t, s->mono_ns);
		for (size_t r = 0; r < t->nrows; r++)
			row_line(&k, t->p, &t->rows[r], o->by_rule, rule_w);
	}
	return k.dropped;
}
