/*
 * report.c - synclat's numbers and tables: the report of a run and the
 * comparison of two runs, as text, CSV or JSON.
 *
 * Every percentile printed here goes through the same histogram estimator
 * (hist_percentile), whether its histogram came from the log's HIST blocks
 * or was rebuilt from call records, so two tables never disagree because
 * one was exact and the other estimated.
 */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"
#include "tool.h"

const double report_pct[REPORT_NPCT] = { 50, 90, 99, 99.9, 99.99 };
const char *const report_pct_name[REPORT_NPCT] = { "p50", "p90", "p99", "p99.9", "p99.99" };

/* The log stores policies and modes by their policy.h numbers. */
const char *report_sync_name(unsigned sync)
{
	return sync_policy_name((enum sync_policy)sync);
}

const char *report_mode_name(unsigned mode)
{
	return log_mode_name((enum log_mode)mode);
}

/* ---- numbers ---- */

bool report_op_stats(const struct run *r, unsigned op, struct op_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->op = op;
	const struct hist *h = op < LOGOP_COUNT ? r->op[op] : NULL;
	if (!h || hist_count(h) == 0)
		return false;
	s->count = hist_count(h);
	s->bytes = r->bytes[op];
	s->mean_ns = hist_mean(h);
	s->min_ns = hist_min(h);
	s->max_ns = hist_max(h);
	for (int i = 0; i < REPORT_NPCT; i++)
		s->pct_ns[i] = hist_percentile(h, report_pct[i]);
	if (r->duration_s > 0) {
		s->calls_per_s = (double)s->count / r->duration_s;
		if (logop_is_write(op))
			s->mb_per_s = (double)s->bytes / 1e6 / r->duration_s;
	}
	return true;
}

double compare_ratio(double a, double b)
{
	return a > 0 ? b / a : -1;
}

/* App write bytes per second over the whole run (0 if unknown). */
static double run_mb_per_s(const struct run *r)
{
	uint64_t bytes = 0;
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		if (logop_is_write(op))
			bytes += r->bytes[op];
	return r->duration_s > 0 ? (double)bytes / 1e6 / r->duration_s : 0;
}

static uint64_t op_count(const struct run *r, unsigned op)
{
	return r->op[op] ? hist_count(r->op[op]) : 0;
}

int compare_key_op(const struct run *a, const struct run *b)
{
	int best = -1;
	uint64_t most = 0;
	for (int pass = 0; pass < 2 && best < 0; pass++) {
		for (unsigned op = 0; op < LOGOP_COUNT; op++) {
			if (logop_is_real(op) || (pass == 0 && !logop_is_sync(op)))
				continue;
			uint64_t n = op_count(a, op) + op_count(b, op);
			if (n > most) {
				most = n;
				best = (int)op;
			}
		}
	}
	return best;
}

/* ---- formatting ---- */

void fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e4)
		snprintf(buf, len, "%.2f us", ns / 1e3);
	else if (ns < 1e5)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e6)
		snprintf(buf, len, "%.0f us", ns / 1e3);
	else if (ns < 1e7)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else if (ns < 1e8)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else if (ns < 1e9)
		snprintf(buf, len, "%.0f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

/* A count with thousands separators: 10700 -> "10,700". */
static void fmt_thousands(char *buf, size_t len, double v)
{
	char digits[32];
	snprintf(digits, sizeof(digits), "%.0f", v);
	size_t n = strlen(digits), o = 0;
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

void fmt_figure(char *buf, size_t len, double v)
{
	double a = fabs(v);
	if (a >= 1000) {
		char t[48];
		fmt_thousands(t, sizeof(t), a);
		snprintf(buf, len, "%s%s", v < 0 ? "-" : "", t);
	} else if (a >= 100) {
		snprintf(buf, len, "%.0f", v);
	} else if (a >= 10) {
		snprintf(buf, len, "%.1f", v);
	} else if (a >= 0.01 || a == 0) {
		snprintf(buf, len, "%.3f", v);
	} else {
		snprintf(buf, len, "%.6f", v);
	}
}

void fmt_ratio(char *buf, size_t len, double r)
{
	char t[32];
	if (r < 0) {
		snprintf(buf, len, "-");
	} else if (r >= 1000) {
		fmt_thousands(t, sizeof(t), r);
		snprintf(buf, len, "%sx", t);
	} else if (r >= 100) {
		snprintf(buf, len, "%.0fx", r);
	} else if (r >= 10) {
		snprintf(buf, len, "%.1fx", r);
	} else if (r >= 0.1) {
		snprintf(buf, len, "%.2fx", r);
	} else if (r > 0) { /* never "9.37e-05x": a plain fraction */
		fmt_thousands(t, sizeof(t), 1 / r);
		snprintf(buf, len, "1/%s", t);
	} else {
		snprintf(buf, len, "0x");
	}
}

void fmt_speedup(char *buf, size_t len, double a_ns, double b_ns)
{
	char t[32];
	if (a_ns <= 0 || b_ns <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	double r = a_ns >= b_ns ? a_ns / b_ns : b_ns / a_ns;
	if (r < 1.05) {
		snprintf(buf, len, "about the same");
		return;
	}
	if (r >= 1000)
		fmt_thousands(t, sizeof(t), r);
	else
		snprintf(t, sizeof(t), r >= 100 ? "%.0f" : r >= 10 ? "%.1f" : "%.2f", r);
	snprintf(buf, len, "%sx %s", t, a_ns >= b_ns ? "faster" : "slower");
}

void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	static const char *const unit[] = { "B", "kB", "MB", "GB", "TB", "PB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, unit[u]);
}

static void fmt_wall(char *buf, size_t len, uint64_t wall_ns)
{
	time_t t = (time_t)(wall_ns / 1000000000u);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "?");
}

void put_clean(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, out);
}

static void csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void markup_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			/* XML 1.0 forbids most control characters; a log's
			 * strings could hold any byte but NUL. */
			if ((unsigned char)*s >= 0x20)
				fputc(*s, out);
		}
	}
}

/* A JSON number, or null for an undefined ratio. */
static void json_num(FILE *out, double v)
{
	if (v < 0 || !isfinite(v))
		fputs("null", out);
	else
		fprintf(out, "%.6g", v);
}

static const char *op_class(unsigned op)
{
	return logop_is_real(op) ? "flusher" : "app";
}

/* ---- report: header ---- */

static const char *log_status(const struct lr_log *L)
{
	if (L->warnings & LRW_SALVAGED)
		return "damaged, read up to the first bad block";
	if (!L->has_trailer)
		return "no trailer (process ended abruptly?)";
	return "clean end";
}

static const char *pct_source_text(enum pct_source s)
{
	switch (s) {
	case PCT_HIST: return "HIST snapshots (complete counts)";
	case PCT_RECORDS: return "call records (no HIST snapshot in the log)";
	case PCT_MIXED: return "HIST snapshots, call records for logs without one";
	case PCT_NONE: break;
	}
	return "no calls";
}

size_t run_rule_matches(const struct run *r, struct rule_match *out, size_t max)
{
	size_t n = 0;
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		for (size_t i = 0; i < L->nrules && n < max; i++) {
			const char *name = i ? L->rules[i].name : "";
			size_t j = 0;
			while (j < n && strcmp(out[j].name, name))
				j++;
			if (j == n)
				out[n++] = (struct rule_match){ name, i ? L->rules[i].glob : "", L->rules[i].sync, 0 };
		}
	}
	/* run_build merged the logs' files by path: each is one distinct path */
	for (size_t f = 0; f < r->nfiles; f++)
		for (size_t j = 0; j < n; j++)
			if (!strcmp(out[j].name, r->files[f].rule_name ? r->files[f].rule_name : "")) {
				out[j].files++;
				break;
			}
	return n;
}

int report_rule_warnings(FILE *out, const struct run *r, const char *side)
{
	static struct rule_match m[REPORT_MAX_RULES];
	size_t n = run_rule_matches(r, m, REPORT_MAX_RULES);
	int warned = 0;
	for (size_t i = 0; i < n; i++) {
		if (!m[i].name[0] || m[i].files)
			continue;
		char line[1024];
		snprintf(line, sizeof(line),
			 "warning: %s%srule '%s' (%s, path = %s) matched no file: its glob names none of the paths the "
			 "program used (rules match absolute paths: syncshim check INI PATH says which rule a path gets)",
			 side ? side : "", side ? ": " : "", m[i].name, report_sync_name(m[i].sync), m[i].glob);
		cli_err(out, "%s", line);
		warned++;
	}
	return warned;
}

/* "policy  : default=passthrough (5 files); wal=defer [/x/a.log] (1 file); ..." */
static void print_policy(FILE *out, const struct run *r)
{
	static struct rule_match m[REPORT_MAX_RULES];
	size_t n = run_rule_matches(r, m, REPORT_MAX_RULES);
	fputs("policy  : ", out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "; " : "", out);
		put_clean(out, m[i].name[0] ? m[i].name : "default");
		fprintf(out, "=%s", report_sync_name(m[i].sync));
		if (m[i].glob[0]) {
			fputs(" [", out);
			put_clean(out, m[i].glob);
			fputc(']', out);
		}
		if (m[i].files || !m[i].name[0])
			fprintf(out, " (%zu file%s)", m[i].files, m[i].files == 1 ? "" : "s");
		else
			fputs(" (matched no file)", out);
	}
	const struct lr_log *L = r->logs[0];
	if (L->npolicies)
		fprintf(out, " (after %zu reload%s)", L->npolicies, L->npolicies > 1 ? "s" : "");
	fputc('\n', out);
}

/* Distinct fs types with their file counts, in order of first use. */
static void print_fstypes(FILE *out, const struct run *r)
{
	fputs("fs types: ", out);
	if (!r->nfiles)
		fputs("no files", out);
	for (size_t i = 0, shown = 0; i < r->nfiles; i++) {
		size_t j = 0, n = 0;
		while (j < i && strcmp(r->files[j].fstype, r->files[i].fstype))
			j++;
		if (j < i)
			continue;
		for (size_t k = i; k < r->nfiles; k++)
			n += !strcmp(r->files[k].fstype, r->files[i].fstype);
		fputs(shown++ ? ", " : "", out);
		put_clean(out, r->files[i].fstype[0] ? r->files[i].fstype : "?");
		fprintf(out, " (%zu file%s)", n, n > 1 ? "s" : "");
	}
	fputc('\n', out);
}

/* Seconds from the log's start to a mono time (negative if before). */
static double since_start_s(const struct lr_log *L, uint64_t mono)
{
	return ((double)mono - (double)L->start_mono_ns) / 1e9;
}

static void print_events(FILE *out, const struct run *r)
{
	size_t total = 0, shown = 0;
	for (size_t l = 0; l < r->nlogs; l++)
		total += r->logs[l]->nevents;
	if (!total)
		return;
	fprintf(out, "events  : %zu\n", total);
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		for (size_t i = 0; i < L->nevents && shown < 20; i++, shown++) {
			const struct lr_event *e = &L->events[i];
			long fi = lr_file_index(L, e->file_id);
			fprintf(out, "  pid %u +%.3f s %-12s ", L->pid, since_start_s(L, e->time_ns),
				logev_name(e->kind));
			if (fi >= 0) {
				put_clean(out, L->files[fi].path);
				fputs(": ", out);
			}
			put_clean(out, e->text);
			if (e->err)
				fprintf(out, " (%s)", strerror(e->err));
			fputc('\n', out);
		}
	}
	if (total > shown)
		fprintf(out, "  ... %zu more (see --json)\n", total - shown);
}

static void print_head(FILE *out, const struct run *r)
{
	char when[64];
	const struct lr_log *L0 = r->logs[0];
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		fprintf(out, "log     : %s  pid %u ppid %u, %s mode, %s\n", L->path, L->pid, L->ppid,
			report_mode_name(L->log_mode), log_status(L));
		fputs("command : ", out);
		put_clean(out, L->cmdline);
		fputc('\n', out);
	}
	fputs("host    : ", out);
	put_clean(out, L0->hostname);
	fputs(", kernel ", out);
	put_clean(out, L0->kernel);
	fputc('\n', out);
	fmt_wall(when, sizeof(when), r->start_wall_ns);
	fprintf(out, "start   : %s, ran %.3f s\n", when, r->duration_s);
	fprintf(out, "latency : percentiles from %s\n", pct_source_text(r->pct_source));
	print_policy(out, r);
	print_fstypes(out, r);
	fprintf(out, "dropped : %" PRIu64 " call records%s\n", r->drops,
		r->drops ? " (per-file numbers from records are incomplete)" : "");
	print_events(out, r);
}

/* ---- report: tables ---- */

static const char *const lat_cols[] = { "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max" };

static void lat_values(const struct op_stats *s, double v[7])
{
	v[0] = s->mean_ns;
	for (int i = 0; i < REPORT_NPCT; i++)
		v[1 + i] = (double)s->pct_ns[i];
	v[6] = (double)s->max_ns;
}

static void print_op_table(FILE *out, const struct run *r, bool real)
{
	bool any = false;
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		struct op_stats s;
		if (logop_is_real(op) != real || !report_op_stats(r, op, &s))
			continue;
		if (!any) {
			fprintf(out, "\n%-20s %10s %10s", real ? "flusher real syncs" : "app calls",
				"count", "bytes");
			for (int i = 0; i < 7; i++)
				fprintf(out, " %10s", lat_cols[i]);
			fputc('\n', out);
			any = true;
		}
		char b[32], t[32];
		double v[7];
		if (logop_is_write(op))
			fmt_bytes(b, sizeof(b), s.bytes);
		else
			snprintf(b, sizeof(b), "-");
		fprintf(out, "%-20s %10" PRIu64 " %10s", logop_name(op), s.count, b);
		lat_values(&s, v);
		for (int i = 0; i < 7; i++) {
			fmt_ns(t, sizeof(t), v[i]);
			fprintf(out, " %10s", t);
		}
		fputc('\n', out);
	}
	if (!any)
		fprintf(out, "\n%s: none\n", real ? "flusher real syncs" : "app calls");
}

struct file_sum {
	uint64_t writes, syncs, flushes;
};

static struct file_sum file_sum(const struct run_file *f)
{
	struct file_sum s = { 0, 0, 0 };
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		if (logop_is_write(op))
			s.writes += f->calls[op];
		else if (logop_is_sync(op))
			s.syncs += f->calls[op];
		else if (logop_is_real(op))
			s.flushes += f->calls[op];
	}
	return s;
}

static int cmp_busiest(const void *a, const void *b)
{
	const struct run_file *x = *(const struct run_file *const *)a;
	const struct run_file *y = *(const struct run_file *const *)b;
	struct file_sum p = file_sum(x), q = file_sum(y);
	uint64_t m = p.syncs + p.flushes, n = q.syncs + q.flushes;
	if (m != n)
		return m > n ? -1 : 1;
	if (p.writes != q.writes)
		return p.writes > q.writes ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Files with the most syncs first. */
static const struct run_file **files_by_syncs(const struct run *r)
{
	const struct run_file **v = calloc(r->nfiles ? r->nfiles : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nfiles; i++)
		v[i] = &r->files[i];
	qsort(v, r->nfiles, sizeof(*v), cmp_busiest);
	return v;
}

static void put_padded(FILE *out, const char *s, int width)
{
	put_clean(out, s);
	for (int n = (int)strlen(s); n < width + 1; n++)
		fputc(' ', out);
}

static void print_files(FILE *out, const struct run *r)
{
	const struct run_file **v = files_by_syncs(r);
	if (!v)
		return;
	fprintf(out, "\nfiles %8s %10s %8s %10s %10s %10s %8s  %-8s %-10s %s\n", "writes", "bytes",
		"syncs", "sync p50", "sync p99", "sync max", "flushes", "fs", "rule", "path");
	/* Per-file counts come from call records: a summary log has none, and
	 * zeros would read as "this file was never written". */
	bool any_records = false;
	for (size_t l = 0; l < r->nlogs; l++)
		any_records |= r->logs[l]->log_mode == LOG_CALLS;
	if (!any_records)
		fputs("(per-file counts need log_mode = calls; the files are listed only)\n", out);
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct run_file *f = v[i];
		struct file_sum s = file_sum(f);
		char b[32], p50[32] = "-", p99[32] = "-", mx[32] = "-";
		fmt_bytes(b, sizeof(b), f->bytes);
		if (f->sync && hist_count(f->sync)) {
			fmt_ns(p50, sizeof(p50), (double)hist_percentile(f->sync, 50));
			fmt_ns(p99, sizeof(p99), (double)hist_percentile(f->sync, 99));
			fmt_ns(mx, sizeof(mx), (double)hist_max(f->sync));
		}
		fprintf(out, "      %8" PRIu64 " %10s %8" PRIu64 " %10s %10s %10s %8" PRIu64 "  ",
			s.writes, b, s.syncs, p50, p99, mx, s.flushes);
		put_padded(out, f->fstype, 8);
		put_padded(out, f->rule_name[0] ? f->rule_name : "default", 10);
		put_clean(out, f->path);
		fputc('\n', out);
	}
	free(v);
}

struct sec_sum {
	uint64_t calls, bytes;
};

static struct sec_sum sec_sum(const struct run_sec *s)
{
	struct sec_sum t = { 0, 0 };
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		if (logop_is_real(op))
			continue;
		t.calls += s->op[op].calls;
		if (logop_is_write(op))
			t.bytes += s->op[op].bytes;
	}
	return t;
}

static bool sec_has_op(const struct run *r, unsigned op)
{
	for (size_t i = 0; i < r->nsecs; i++)
		if (r->secs[i].op[op].calls)
			return true;
	return false;
}

static void print_seconds(FILE *out, const struct run *r)
{
	bool show[LOGOP_COUNT];
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		show[op] = sec_has_op(r, op);

	fprintf(out, "\nper second %15s%s", "", r->has_risk ? "                      " : "");
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		if (show[op])
			fprintf(out, " | %30s", logop_name(op));
	fprintf(out, "\n%6s %9s %9s", "sec", "MB/s", "calls");
	if (r->has_risk)
		fprintf(out, " %10s %10s", "at risk", "oldest");
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		if (show[op])
			fprintf(out, " | %8s %10s %10s", "n", "mean", "max");
	fputc('\n', out);
	for (size_t i = 0; i < r->nsecs; i++) {
		const struct run_sec *s = &r->secs[i];
		struct sec_sum t = sec_sum(s);
		fprintf(out, "%6" PRId64 " %9.2f %9" PRIu64, s->sec, (double)t.bytes / 1e6, t.calls);
		if (r->has_risk) {
			char b[32] = "-", age[32] = "-";
			if (s->risk) {
				fmt_bytes(b, sizeof(b), s->risk_bytes);
				fmt_ns(age, sizeof(age), (double)s->risk_age_ns);
			}
			fprintf(out, " %10s %10s", b, age);
		}
		for (unsigned op = 0; op < LOGOP_COUNT; op++) {
			if (!show[op])
				continue;
			const struct tally *o = &s->op[op];
			char mean[32] = "-", mx[32] = "-";
			if (o->calls) {
				fmt_ns(mean, sizeof(mean), (double)o->sum_ns / (double)o->calls);
				fmt_ns(mx, sizeof(mx), (double)o->max_ns);
			}
			fprintf(out, " | %8" PRIu64 " %10s %10s", o->calls, mean, mx);
		}
		fputc('\n', out);
	}
	if (!r->nsecs)
		fputs("(no INTERVAL blocks in the log)\n", out);
}

/* ---- data at risk ---- */

/* Some log of the run was written by a shim that accounts for data at
 * risk (format minor 1): no RISK entry then means none was ever at risk. */
static bool run_counts_risk(const struct run *r)
{
	for (size_t l = 0; l < r->nlogs; l++)
		if (r->logs[l]->minor >= 1)
			return true;
	return false;
}

/* noop answers every sync without ever making one: its risk only grows. */
static bool risk_unbounded(const struct run_file *f)
{
	return f->sync_policy == SYNC_NOOP;
}

static void print_risk(FILE *out, const struct run *r)
{
	if (!run_counts_risk(r))
		return;
	const struct run_file *worst = NULL;
	for (size_t i = 0; i < r->nfiles; i++)
		if (r->files[i].risk && (!worst || r->files[i].risk_age_ns > worst->risk_age_ns))
			worst = &r->files[i];
	if (!worst) {
		fputs("\nat risk: none (every sync the app made was durable when it returned)\n", out);
		return;
	}
	char b[32], age[32];
	uint64_t most = 0;
	for (size_t i = 0; i < r->nfiles; i++)
		if (r->files[i].risk_bytes > most)
			most = r->files[i].risk_bytes;
	fmt_bytes(b, sizeof(b), most);
	fmt_ns(age, sizeof(age), (double)worst->risk_age_ns);
	fprintf(out, "\nat risk: max %s, oldest %s (acknowledged as durable, not yet synced)\n", b, age);
	fprintf(out, "%10s %10s  %-11s %s\n", "max", "oldest", "policy", "path");
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct run_file *f = &r->files[i];
		if (!f->risk)
			continue;
		fmt_bytes(b, sizeof(b), f->risk_bytes);
		fmt_ns(age, sizeof(age), (double)f->risk_age_ns);
		fprintf(out, "%10s %10s  ", b, age);
		put_padded(out, report_sync_name(f->sync_policy), 11);
		put_clean(out, f->path);
		fputs(risk_unbounded(f) ? "  (unbounded: noop never syncs)\n" : "\n", out);
	}
}

/* Calls-mode records of calls submitted around libc (record flags since
 * minor 2): a ring's syncs and writes, libaio's syncs. */
static void print_sources(FILE *out, const struct run *r)
{
	uint64_t ring = 0, aio = 0;
	for (size_t l = 0; l < r->nlogs; l++)
		for (size_t i = 0; i < r->logs[l]->nrecs; i++) {
			ring += (r->logs[l]->recs[i].flags & LOGREC_RING) != 0;
			aio += (r->logs[l]->recs[i].flags & LOGREC_AIO) != 0;
		}
	if (ring || aio)
		fprintf(out, "\naround libc: %" PRIu64 " call records through io_uring rings, %" PRIu64
			     " through libaio\n", ring, aio);
}

static void report_text(FILE *out, const struct run *r, unsigned flags)
{
	fprintf(out, "synclat report: %zu log%s%s\n", r->nlogs, r->nlogs > 1 ? "s" : "",
		r->nlogs > 1 ? " merged (forked family)" : "");
	print_head(out, r);
	print_op_table(out, r, false);
	print_op_table(out, r, true);
	print_sources(out, r);
	if (flags & REPORT_FILES)
		print_files(out, r);
	print_risk(out, r);
	if (flags & REPORT_PER_SECOND)
		print_seconds(out, r);
	if (r->warnings & LRW_NO_TRAILER)
		fputs("\nwarning: no trailer (process ended abruptly?)\n", out);
}

/* ---- report: CSV, one rectangular table with a kind column ---- */

static void csv_stats(FILE *out, const char *kind, const char *name, const char *op,
		      const struct op_stats *s, bool lat)
{
	csv_field(out, kind);
	fputc(',', out);
	csv_field(out, name);
	fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",", op, s->count, s->bytes);
	if (lat) {
		fprintf(out, "%.1f", s->mean_ns);
		for (int i = 0; i < REPORT_NPCT; i++)
			fprintf(out, ",%" PRIu64, s->pct_ns[i]);
		fprintf(out, ",%" PRIu64 ",%.6g,%.6g\n", s->max_ns, s->calls_per_s, s->mb_per_s);
	} else {
		fprintf(out, ",,,,,,,,\n");
	}
}

static void csv_hist_stats(const struct hist *h, struct op_stats *s)
{
	s->mean_ns = hist_mean(h);
	for (int i = 0; i < REPORT_NPCT; i++)
		s->pct_ns[i] = hist_percentile(h, report_pct[i]);
	s->max_ns = hist_max(h);
}

static void report_csv(FILE *out, const struct run *r, unsigned flags)
{
	fputs("kind,name,op,count,bytes,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,"
	      "calls_per_s,mb_per_s\n", out);
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		struct op_stats s;
		if (report_op_stats(r, op, &s))
			csv_stats(out, "op", op_class(op), logop_name(op), &s, true);
	}
	struct op_stats d = { .count = r->drops };
	csv_stats(out, "dropped", "", "", &d, false);

	for (size_t i = 0; (flags & REPORT_FILES) && i < r->nfiles; i++) {
		const struct run_file *f = &r->files[i];
		struct file_sum fs = file_sum(f);
		struct op_stats w = { .count = fs.writes, .bytes = f->bytes };
		csv_stats(out, "file", f->path, "writes", &w, false);
		struct op_stats sy = { .count = fs.syncs };
		if (f->sync)
			csv_hist_stats(f->sync, &sy);
		csv_stats(out, "file", f->path, "syncs", &sy, f->sync != NULL);
		struct op_stats rs = { .count = fs.flushes };
		if (f->real)
			csv_hist_stats(f->real, &rs);
		csv_stats(out, "file", f->path, "real_syncs", &rs, f->real != NULL);
	}
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct run_file *f = &r->files[i];
		if (!f->risk)
			continue;
		csv_field(out, "risk");
		fputc(',', out);
		csv_field(out, f->path);
		fprintf(out, ",%s,0,%" PRIu64 ",,,,,,,%" PRIu64 ",,\n", report_sync_name(f->sync_policy),
			f->risk_bytes, f->risk_age_ns);
	}
	for (size_t i = 0; (flags & REPORT_PER_SECOND) && i < r->nsecs; i++) {
		char sec[32];
		snprintf(sec, sizeof(sec), "%" PRId64, r->secs[i].sec);
		for (unsigned op = 0; op < LOGOP_COUNT; op++) {
			const struct tally *t = &r->secs[i].op[op];
			if (!t->calls)
				continue;
			fprintf(out, "second,%s,%s,%" PRIu64 ",%" PRIu64 ",%.1f,,,,,,%" PRIu64 ",,\n", sec,
				logop_name(op), t->calls, t->bytes, (double)t->sum_ns / (double)t->calls,
				t->max_ns);
		}
	}
}

/* ---- report: JSON ---- */

static void json_stats(FILE *out, const struct op_stats *s)
{
	fprintf(out, "\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"mean_ns\":%.1f", s->count,
		s->bytes, s->mean_ns);
	for (int i = 0; i < REPORT_NPCT; i++)
		fprintf(out, ",\"%s_ns\":%" PRIu64, report_pct_name[i], s->pct_ns[i]);
	fprintf(out, ",\"max_ns\":%" PRIu64 ",\"calls_per_s\":", s->max_ns);
	json_num(out, s->calls_per_s);
	fputs(",\"mb_per_s\":", out);
	json_num(out, s->mb_per_s);
}

static void json_hist(FILE *out, const char *key, const struct hist *h)
{
	fprintf(out, ",\"%s\":", key);
	if (!h) {
		fputs("null", out);
		return;
	}
	fprintf(out, "{\"count\":%" PRIu64 ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
		",\"max_ns\":%" PRIu64 "}", hist_count(h), hist_percentile(h, 50),
		hist_percentile(h, 99), hist_max(h));
}

/* Distinct paths of one log whose FILE block names rule i. */
static size_t log_rule_files(const struct lr_log *L, size_t i)
{
	size_t n = 0;
	for (size_t f = 0; f < L->nfiles; f++) {
		if (L->files[f].rule != i)
			continue;
		size_t g = 0;
		while (g < f && (L->files[g].rule != i || strcmp(L->files[g].path, L->files[f].path)))
			g++;
		n += g == f;
	}
	return n;
}

static void json_logs(FILE *out, const struct run *r)
{
	fputs("\"logs\":[", out);
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		fputs(l ? ",{\"path\":" : "{\"path\":", out);
		json_str(out, L->path);
		fprintf(out, ",\"pid\":%u,\"ppid\":%u,\"command\":", L->pid, L->ppid);
		json_str(out, L->cmdline);
		fputs(",\"host\":", out);
		json_str(out, L->hostname);
		fputs(",\"kernel\":", out);
		json_str(out, L->kernel);
		fprintf(out, ",\"log_mode\":\"%s\",\"format\":\"%u.%u\",\"start_wall_ns\":%" PRIu64
			",\"trailer\":%s,\"exit_status\":", report_mode_name(L->log_mode), L->major,
			L->minor, L->start_wall_ns, L->has_trailer ? "true" : "false");
		if (L->has_trailer)
			fprintf(out, "%d", L->trailer.exit_status);
		else
			fputs("null", out);
		fprintf(out, ",\"blocks\":%zu,\"dropped\":%" PRIu64 ",\"policy\":[", L->nblocks, L->drops);
		for (size_t i = 0; i < L->nrules; i++) {
			fputs(i ? ",{\"name\":" : "{\"name\":", out);
			json_str(out, i ? L->rules[i].name : "default");
			fputs(",\"glob\":", out);
			json_str(out, L->rules[i].glob);
			fprintf(out, ",\"sync\":\"%s\",\"files\":%zu}", report_sync_name(L->rules[i].sync),
				log_rule_files(L, i));
		}
		fputs("],\"events\":[", out);
		for (size_t i = 0; i < L->nevents; i++) {
			const struct lr_event *e = &L->events[i];
			long fi = lr_file_index(L, e->file_id);
			fprintf(out, "%s{\"t_s\":%.6f,\"kind\":\"%s\",\"errno\":%d,\"file\":", i ? "," : "",
				since_start_s(L, e->time_ns), logev_name(e->kind), e->err);
			if (fi >= 0)
				json_str(out, L->files[fi].path);
			else
				fputs("null", out);
			fputs(",\"text\":", out);
			json_str(out, e->text);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputc(']', out);
}

static void json_warnings(FILE *out, const struct run *r)
{
	static const struct { unsigned bit; const char *text; } w[] = {
		{ LRW_NO_TRAILER, "no trailer (process ended abruptly?)" },
		{ LRW_HIST_CUT, "last HIST set cut short; the previous one is used" },
		{ LRW_NEWER, "written by a newer format minor version; unknown parts skipped" },
		{ LRW_SALVAGED, "damaged log: read only up to the first bad block" },
	};
	fputs(",\"warnings\":[", out);
	int n = 0;
	for (size_t l = 0; l < r->nlogs; l++)
		for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
			if (!(r->logs[l]->warnings & w[i].bit))
				continue;
			char line[1024];
			snprintf(line, sizeof(line), "%s: %s", r->logs[l]->path, w[i].text);
			fputs(n++ ? "," : "", out);
			json_str(out, line);
		}
	fputc(']', out);
}

static void json_ops(FILE *out, const struct run *r)
{
	fputs(",\"ops\":[", out);
	int n = 0;
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		struct op_stats s;
		if (!report_op_stats(r, op, &s))
			continue;
		fprintf(out, "%s{\"op\":\"%s\",\"class\":\"%s\",", n++ ? "," : "", logop_name(op),
			op_class(op));
		json_stats(out, &s);
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_files(FILE *out, const struct run *r)
{
	fputs(",\"files\":[", out);
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct run_file *f = &r->files[i];
		fputs(i ? ",{\"path\":" : "{\"path\":", out);
		json_str(out, f->path);
		fputs(",\"fs\":", out);
		json_str(out, f->fstype);
		fputs(",\"rule\":", out);
		json_str(out, f->rule_name);
		fprintf(out, ",\"bytes\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"calls\":{", f->bytes,
			f->errors);
		for (unsigned op = 0, k = 0; op < LOGOP_COUNT; op++)
			if (f->calls[op])
				fprintf(out, "%s\"%s\":%" PRIu64, k++ ? "," : "", logop_name(op),
					f->calls[op]);
		fputc('}', out);
		json_hist(out, "sync", f->sync);
		json_hist(out, "real_sync", f->real);
		if (f->risk)
			fprintf(out, ",\"risk\":{\"max_bytes\":%" PRIu64 ",\"oldest_ns\":%" PRIu64
				",\"unbounded\":%s}", f->risk_bytes, f->risk_age_ns,
				risk_unbounded(f) ? "true" : "false");
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_seconds(FILE *out, const struct run *r)
{
	fputs(",\"seconds\":[", out);
	for (size_t i = 0; i < r->nsecs; i++) {
		const struct run_sec *s = &r->secs[i];
		struct sec_sum t = sec_sum(s);
		fprintf(out, "%s{\"sec\":%" PRId64 ",\"calls\":%" PRIu64 ",\"mb\":%.6f,\"ops\":{",
			i ? "," : "", s->sec, t.calls, (double)t.bytes / 1e6);
		for (unsigned op = 0, k = 0; op < LOGOP_COUNT; op++) {
			const struct tally *o = &s->op[op];
			if (!o->calls)
				continue;
			fprintf(out, "%s\"%s\":{\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64
				",\"mean_ns\":%.1f,\"max_ns\":%" PRIu64 "}", k++ ? "," : "",
				logop_name(op), o->calls, o->bytes,
				(double)o->sum_ns / (double)o->calls, o->max_ns);
		}
		fputc('}', out);
		if (s->risk)
			fprintf(out, ",\"risk\":{\"bytes\":%" PRIu64 ",\"oldest_ns\":%" PRIu64 "}", s->risk_bytes,
				s->risk_age_ns);
		fputc('}', out);
	}
	fputc(']', out);
}

static void report_json(FILE *out, const struct run *r, unsigned flags)
{
	fputc('{', out);
	json_logs(out, r);
	fprintf(out, ",\"duration_s\":%.6f,\"dropped\":%" PRIu64 ",\"percentiles_from\":\"%s\"",
		r->duration_s, r->drops,
		r->pct_source == PCT_HIST ? "hist" : r->pct_source == PCT_RECORDS ? "records"
		: r->pct_source == PCT_MIXED ? "mixed" : "none");
	json_warnings(out, r);
	json_ops(out, r);
	if (flags & REPORT_FILES)
		json_files(out, r);
	if (flags & REPORT_PER_SECOND)
		json_seconds(out, r);
	fputs("}\n", out);
}

void report_print(FILE *out, const struct run *r, enum report_format fmt, unsigned flags)
{
	if (fmt == FMT_CSV)
		report_csv(out, r, flags);
	else if (fmt == FMT_JSON)
		report_json(out, r, flags);
	else
		report_text(out, r, flags);
}

void report_warnings(FILE *out, const struct run *r)
{
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		if (L->warnings & LRW_NO_TRAILER)
			cli_err(out, "warning: %s: no trailer (process ended abruptly?)", L->path);
		if (L->warnings & LRW_HIST_CUT)
			cli_err(out, "warning: %s: last HIST set cut short; using the one before",
				L->path);
		if (L->warnings & LRW_NEWER)
			cli_err(out, "warning: %s: format %u.%u is newer than this synclat (%d.%d); "
				"unknown parts skipped", L->path, L->major, L->minor, LOGFMT_MAJOR,
				LOGFMT_MINOR);
	}
}

/* ---- compare ---- */

struct cmp_row {
	struct op_stats a, b;
	bool in_a, in_b;
};

static void cmp_row(const struct run *a, const struct run *b, unsigned op, struct cmp_row *c)
{
	c->in_a = report_op_stats(a, op, &c->a);
	c->in_b = report_op_stats(b, op, &c->b);
}

/* The compared metrics, in table order; throughput first. */
#define CMP_NMETRIC 10
static const char *const cmp_metric[CMP_NMETRIC] = {
	"count", "calls_per_s", "mb_per_s", "mean_ns", "p50_ns", "p90_ns", "p99_ns",
	"p99.9_ns", "p99.99_ns", "max_ns",
};

static void cmp_values(const struct op_stats *s, double v[CMP_NMETRIC])
{
	v[0] = (double)s->count;
	v[1] = s->calls_per_s;
	v[2] = s->mb_per_s;
	v[3] = s->mean_ns;
	for (int i = 0; i < REPORT_NPCT; i++)
		v[4 + i] = (double)s->pct_ns[i];
	v[9] = (double)s->max_ns;
}

/* One op of a comparison: both sides' stats and their metric values. */
struct cmp_line {
	struct cmp_row c;
	double va[CMP_NMETRIC], vb[CMP_NMETRIC];
};

/* Advances *op to the next op either side has (from *op on) and fills
 * line; false when there is none. Every output format walks the ops so. */
static bool cmp_next(const struct run *a, const struct run *b, unsigned *op, struct cmp_line *line)
{
	for (; *op < LOGOP_COUNT; ++*op) {
		cmp_row(a, b, *op, &line->c);
		if (!line->c.in_a && !line->c.in_b)
			continue;
		cmp_values(&line->c.a, line->va);
		cmp_values(&line->c.b, line->vb);
		return true;
	}
	return false;
}

/* Appends to a bounded line without overflowing it. */
static void cat(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (used + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

static void cat_lat(char *buf, size_t len, const char *name, double a, double b, bool first)
{
	char ra[48], sa[32], sb[32];
	(void)first;
	fmt_speedup(ra, sizeof(ra), a, b);
	fmt_ns(sa, sizeof(sa), a);
	fmt_ns(sb, sizeof(sb), b);
	cat(buf, len, " %s %s (%s -> %s)", name, ra, sa, sb);
}

/* A side's data at risk (acknowledged as durable, not yet synced): the
 * worst of any second, over its files. */
struct risk_sum {
	bool known;          /* a log of format 1.1 or later: RISK blocks say */
	uint64_t most, oldest;
	size_t files;        /* files that ever had some */
	bool unbounded;      /* one of them is under noop */
};

static struct risk_sum risk_of(const struct run *r)
{
	struct risk_sum s = { .known = run_counts_risk(r) };
	for (size_t i = 0; i < r->nfiles; i++) {
		const struct run_file *f = &r->files[i];
		if (!f->risk)
			continue;
		s.files++;
		s.most = f->risk_bytes > s.most ? f->risk_bytes : s.most;
		s.oldest = f->risk_age_ns > s.oldest ? f->risk_age_ns : s.oldest;
		s.unbounded |= risk_unbounded(f);
	}
	return s;
}

/* The price beside the gain: a side's data at risk, its largest and its
 * oldest. */
static void cat_risk(char *buf, size_t len, const char *side, const struct run *r)
{
	struct risk_sum rs = risk_of(r);
	if (!rs.known) {
		cat(buf, len, "; %s at risk: unknown (a log older than format 1.1)", side);
		return;
	}
	uint64_t most = rs.most, oldest = rs.oldest;
	if (!most && !oldest) {
		cat(buf, len, "; %s nothing at risk", side);
		return;
	}
	char b[32], age[32];
	fmt_bytes(b, sizeof(b), most);
	fmt_ns(age, sizeof(age), (double)oldest);
	cat(buf, len, "; %s at risk max %s, oldest %s", side, b, age);
}

static char verdict_lead[512];

void compare_set_lead(const char *lead)
{
	snprintf(verdict_lead, sizeof(verdict_lead), "%s", lead ? lead : "");
}

void compare_verdict(const struct run *a, const struct run *b, char *buf, size_t len)
{
	int key = compare_key_op(a, b);
	snprintf(buf, len, "verdict:");
	if (verdict_lead[0])
		cat(buf, len, " %s;", verdict_lead);
	if (key < 0) {
		cat(buf, len, " no app calls in either run");
		return;
	}
	struct cmp_row c;
	cmp_row(a, b, (unsigned)key, &c);
	const char *name = logop_name((unsigned)key);
	if (!c.in_a || !c.in_b) {
		cat(buf, len, " %s only in %s (%" PRIu64 " calls)", name, c.in_a ? "A" : "B",
		    c.in_a ? c.a.count : c.b.count);
		return;
	}
	char r[32];
	cat(buf, len, " B's %s", name);
	cat_lat(buf, len, "p50", (double)c.a.pct_ns[0], (double)c.b.pct_ns[0], true);
	cat(buf, len, ",");
	cat_lat(buf, len, "p99", (double)c.a.pct_ns[2], (double)c.b.pct_ns[2], false);
	fmt_ratio(r, sizeof(r), compare_ratio(c.a.calls_per_s, c.b.calls_per_s));
	/* the rate of this system call, not the load's own figure */
	cat(buf, len, "; %s calls/s %s", name, r);
	double ma = run_mb_per_s(a), mb = run_mb_per_s(b);
	if (ma > 0 || mb > 0) {
		fmt_ratio(r, sizeof(r), compare_ratio(ma, mb));
		cat(buf, len, ", write MB/s %s (%.2f -> %.2f)", r, ma, mb);
	}
	if (a->duration_s <= 0 || b->duration_s <= 0)
		cat(buf, len, " (run duration unknown: no rates)");
	cat_risk(buf, len, "B", b);
	cat_risk(buf, len, "A", a);
}

static void cmp_side_head(FILE *out, const char *side, const struct run *r)
{
	fprintf(out, "%s: ", side);
	/* a server's run leaves dozens of logs: two named, the rest counted */
	for (size_t l = 0; l < r->nlogs && l < 2; l++)
		fprintf(out, "%s%s (pid %u)", l ? ", " : "", r->logs[l]->path, r->logs[l]->pid);
	if (r->nlogs > 2)
		fprintf(out, " and %zu more logs", r->nlogs - 2);
	fputs("; ", out);
	char command[112];
	command_label(command, sizeof(command), r->logs[0]->cmdline, 100); /* its first words */
	put_clean(out, command);
	fprintf(out, "; ran %.3f s; dropped %" PRIu64 "%s\n", r->duration_s,
		r->drops, (r->warnings & LRW_NO_TRAILER) ? "; no trailer (process ended abruptly?)" : "");
}

static void cmp_text_row(FILE *out, const char *op, const char *run, const double v[CMP_NMETRIC],
			 bool present)
{
	char cell[32];
	fprintf(out, "%-20s %-4s", op, run);
	for (int i = 0; i < CMP_NMETRIC; i++) {
		if (!present)
			snprintf(cell, sizeof(cell), "-");
		else if (i == 0)
			snprintf(cell, sizeof(cell), "%.0f", v[i]);
		else if (i == 1)
			snprintf(cell, sizeof(cell), v[i] > 0 ? "%.1f" : "-", v[i]);
		else if (i == 2)
			snprintf(cell, sizeof(cell), v[i] > 0 ? "%.2f" : "-", v[i]);
		else
			fmt_ns(cell, sizeof(cell), v[i]);
		fprintf(out, " %10s", cell);
	}
	fputc('\n', out);
}

/* B/A of metric i of op, or -1 for none: the rate of an op that is not a
 * write or a sync (open, close, rename) is the same calls over a shorter
 * or longer run, no gain of its own ("open calls/s 135x"). */
static double cmp_ratio_of(unsigned op, int i, const double a[CMP_NMETRIC], const double b[CMP_NMETRIC], bool both)
{
	bool rate = i == 1 || i == 2;
	if (!both || (rate && !logop_is_write(op) && !logop_is_sync(op) && !logop_is_real(op)))
		return -1;
	return compare_ratio(a[i], b[i]);
}

static void cmp_text_ratio(FILE *out, unsigned op, const double a[CMP_NMETRIC], const double b[CMP_NMETRIC],
			   bool both)
{
	char cell[32];
	fprintf(out, "%-20s %-4s", "", "B/A");
	for (int i = 0; i < CMP_NMETRIC; i++) {
		fmt_ratio(cell, sizeof(cell), cmp_ratio_of(op, i, a, b, both));
		fprintf(out, " %10s", cell);
	}
	fputc('\n', out);
}

/* The price in the table: each side's data at risk, its worst. */
static void fmt_risk_cells(const struct risk_sum *rs, char *most, char *oldest, size_t len)
{
	if (!rs->known) {
		snprintf(most, len, "?");
		snprintf(oldest, len, "?");
		return;
	}
	if (rs->most)
		fmt_bytes(most, len, rs->most);
	else
		snprintf(most, len, "0");
	if (rs->oldest)
		fmt_ns(oldest, len, (double)rs->oldest);
	else
		snprintf(oldest, len, "-");
}

static void cmp_text_risk(FILE *out, const struct run *a, const struct run *b)
{
	const struct run *r[2] = { a, b };
	fprintf(out, "\n%-20s %-4s %10s %10s %10s\n", "at risk", "run", "max", "oldest", "files");
	for (int s = 0; s < 2; s++) {
		struct risk_sum rs = risk_of(r[s]);
		char most[32], oldest[32];
		fmt_risk_cells(&rs, most, oldest, sizeof(most));
		fprintf(out, "%-20s %-4s %10s %10s %10zu%s\n", s ? "" : "(acked, not synced)", s ? "B" : "A", most, oldest,
			rs.files, rs.unbounded ? "  unbounded: a noop file never syncs" : "");
	}
}

/* Column heads of the comparison, in cmp_values() order. */
static const char *const cmp_head[CMP_NMETRIC] = { "count", "calls/s", "MB/s", "mean", "p50",
						   "p90", "p99", "p99.9", "p99.99", "max" };

static void compare_text(FILE *out, const struct run *a, const struct run *b)
{
	fputs("synclat compare\n", out);
	cmp_side_head(out, "A", a);
	cmp_side_head(out, "B", b);
	fprintf(out, "\n%-20s %-4s", "op", "run");
	for (int i = 0; i < CMP_NMETRIC; i++)
		fprintf(out, " %10s", cmp_head[i]);
	fputc('\n', out);
	struct cmp_line line;
	for (unsigned op = 0; cmp_next(a, b, &op, &line); op++) {
		const struct cmp_row c = line.c;
		const double *va = line.va, *vb = line.vb;
		cmp_text_row(out, logop_name(op), "A", va, c.in_a);
		cmp_text_row(out, "", "B", vb, c.in_b);
		cmp_text_ratio(out, op, va, vb, c.in_a && c.in_b);
	}
	cmp_text_risk(out, a, b);
	char v[1024];
	compare_verdict(a, b, v, sizeof(v));
	fprintf(out, "\n%s\n", v);
}

static void compare_csv(FILE *out, const struct run *a, const struct run *b)
{
	fputs("op,class,metric,a,b,b_over_a\n", out);
	struct cmp_line line;
	for (unsigned op = 0; cmp_next(a, b, &op, &line); op++) {
		const struct cmp_row c = line.c;
		const double *va = line.va, *vb = line.vb;
		for (int i = 0; i < CMP_NMETRIC; i++) {
			fprintf(out, "%s,%s,%s,%.6g,%.6g,", logop_name(op), op_class(op), cmp_metric[i],
				va[i], vb[i]);
			double r = cmp_ratio_of(op, i, va, vb, c.in_a && c.in_b);
			if (r >= 0)
				fprintf(out, "%.6g", r);
			fputc('\n', out);
		}
	}
	/* the price: the worst bytes and age at risk, and the files that had some */
	struct risk_sum ra = risk_of(a), rb = risk_of(b);
	if (ra.known && rb.known) {
		fprintf(out, "at_risk,price,max_bytes,%" PRIu64 ",%" PRIu64 ",\n", ra.most, rb.most);
		fprintf(out, "at_risk,price,oldest_ns,%" PRIu64 ",%" PRIu64 ",\n", ra.oldest, rb.oldest);
		fprintf(out, "at_risk,price,files,%zu,%zu,\n", ra.files, rb.files);
	}
}

static void json_side(FILE *out, const char *key, const struct run *r)
{
	fprintf(out, "\"%s\":{\"logs\":[", key);
	for (size_t l = 0; l < r->nlogs; l++) {
		fputs(l ? "," : "", out);
		json_str(out, r->logs[l]->path);
	}
	fprintf(out, "],\"duration_s\":%.6f,\"dropped\":%" PRIu64 ",\"trailer\":%s,\"mb_per_s\":",
		r->duration_s, r->drops, (r->warnings & LRW_NO_TRAILER) ? "false" : "true");
	json_num(out, run_mb_per_s(r));
	struct risk_sum rs = risk_of(r);
	if (rs.known)
		fprintf(out, ",\"at_risk\":{\"max_bytes\":%" PRIu64 ",\"oldest_ns\":%" PRIu64 ",\"files\":%zu,\"unbounded\":%s}",
			rs.most, rs.oldest, rs.files, rs.unbounded ? "true" : "false");
	else
		fputs(",\"at_risk\":null", out);
	fputc('}', out);
}

static void compare_json(FILE *out, const struct run *a, const struct run *b)
{
	fputc('{', out);
	json_side(out, "a", a);
	fputc(',', out);
	json_side(out, "b", b);
	fputs(",\"ops\":[", out);
	int n = 0;
	struct cmp_line line;
	for (unsigned op = 0; cmp_next(a, b, &op, &line); op++) {
		const struct cmp_row c = line.c;
		const double *va = line.va, *vb = line.vb;
		fprintf(out, "%s{\"op\":\"%s\",\"class\":\"%s\",\"a\":", n++ ? "," : "", logop_name(op),
			op_class(op));
		if (c.in_a) {
			fputc('{', out);
			json_stats(out, &c.a);
			fputc('}', out);
		} else {
			fputs("null", out);
		}
		fputs(",\"b\":", out);
		if (c.in_b) {
			fputc('{', out);
			json_stats(out, &c.b);
			fputc('}', out);
		} else {
			fputs("null", out);
		}
		fputs(",\"ratio\":{", out);
		for (int i = 0; i < CMP_NMETRIC; i++) {
			fprintf(out, "%s\"%s\":", i ? "," : "", cmp_metric[i]);
			json_num(out, cmp_ratio_of(op, i, va, vb, c.in_a && c.in_b));
		}
		fputs("}}", out);
	}
	char v[1024];
	compare_verdict(a, b, v, sizeof(v));
	fputs("],\"verdict\":", out);
	json_str(out, v);
	fputs("}\n", out);
}

void compare_print(FILE *out, const struct run *a, const struct run *b, enum report_format fmt)
{
	if (fmt == FMT_CSV)
		compare_csv(out, a, b);
	else if (fmt == FMT_JSON)
		compare_json(out, a, b);
	else
		compare_text(out, a, b);
}

static void html_row(FILE *out, const char *op, const char *run, const double v[CMP_NMETRIC],
		     bool present, const char *cls)
{
	fprintf(out, "<tr class=\"%s\"><td>%s</td><td>%s</td>", cls, op, run);
	for (int i = 0; i < CMP_NMETRIC; i++) {
		char cell[32];
		if (!present)
			snprintf(cell, sizeof(cell), "-");
		else if (i == 0)
			snprintf(cell, sizeof(cell), "%.0f", v[i]);
		else if (i <= 2)
			snprintf(cell, sizeof(cell), v[i] > 0 ? "%.2f" : "-", v[i]);
		else
			fmt_ns(cell, sizeof(cell), v[i]);
		fprintf(out, "<td>%s</td>", cell);
	}
	fputs("</tr>\n", out);
}

void compare_html_table(FILE *out, const struct run *a, const struct run *b)
{
	fputs("<table>\n<tr><th>op</th><th>run</th>", out);
	for (int i = 0; i < CMP_NMETRIC; i++)
		fprintf(out, "<th>%s</th>", cmp_head[i]);
	fputs("</tr>\n", out);
	struct cmp_line line;
	for (unsigned op = 0; cmp_next(a, b, &op, &line); op++) {
		const struct cmp_row c = line.c;
		const double *va = line.va, *vb = line.vb;
		html_row(out, logop_name(op), "A", va, c.in_a, "a");
		html_row(out, "", "B", vb, c.in_b, "b");
		fputs("<tr class=\"ratio\"><td></td><td>B/A</td>", out);
		for (int i = 0; i < CMP_NMETRIC; i++) {
			char cell[32];
			fmt_ratio(cell, sizeof(cell), cmp_ratio_of(op, i, va, vb, c.in_a && c.in_b));
			fputs("<td>", out);
			markup_text(out, cell);
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</table>\n", out);
}

void compare_html_risk(FILE *out, const struct run *a, const struct run *b)
{
	const struct run *r[2] = { a, b };
	fputs("<table class=\"risk\">\n<tr><th>data at risk (acknowledged, not yet synced)</th><th>run</th>"
	      "<th>max</th><th>oldest</th><th>files</th><th></th></tr>\n", out);
	for (int s = 0; s < 2; s++) {
		struct risk_sum rs = risk_of(r[s]);
		char most[32], oldest[32];
		fmt_risk_cells(&rs, most, oldest, sizeof(most));
		fprintf(out, "<tr class=\"%s\"><td></td><td>%s</td><td>%s</td><td>%s</td><td>%zu</td><td>%s</td></tr>\n",
			s ? "b" : "a", s ? "B" : "A", most, oldest, rs.files,
			rs.unbounded ? "unbounded: a noop file never syncs" : "");
	}
	fputs("</table>\n", out);
}
