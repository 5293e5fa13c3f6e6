/*
 * ct_report.c - what `syncshim crashtest` says about each trial and in
 * total, as text or as one JSON object (--json) for scripts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashtest.h"
#include "tool.h"

static const char *const verdict_names[] = { [V_PASS] = "pass", [V_FAIL] = "fail", [V_UNUSABLE] = "unusable" };

double ct_window_ms(const struct ct_trial *t, uint64_t oldest_ns)
{
	if (!oldest_ns)
		return -1;
	return oldest_ns < t->run.end_ns ? (double)(t->run.end_ns - oldest_ns) / 1e6 : 0;
}

static const char *human(uint64_t b, char *buf, size_t len)
{
	if (b < 10240)
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
	else if (b < 10ull << 20)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024);
	else
		snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
	return buf;
}

static void when(FILE *to, const struct ct_trial *t)
{
	double ms = (double)(t->run.end_ns - t->run.start_ns) / 1e6;
	if (t->run.timed_out && !t->run.origin_ns)
		fprintf(to, "killed at the timeout, %.1f ms (the cut never came: nothing in scope was ever written)", ms);
	else if (t->run.timed_out)
		fprintf(to, "killed at the timeout, %.1f ms (the cut never came)", ms);
	else if (t->run.cut && t->run.load_ended)
		fprintf(to, "cut at %.1f ms, when the load ended (exit %d) %.1f ms after it began", ms, t->run.load_status,
			(double)(t->run.end_ns - t->run.load_ns) / 1e6);
	else if (t->run.cut && t->run.load_ns)
		fprintf(to, "cut at %.1f ms (%.1f ms into the load, ready after %.1f ms)", ms,
			(double)(t->run.end_ns - t->run.load_ns) / 1e6, (double)(t->run.ready_ns - t->run.start_ns) / 1e6);
	else if (t->run.cut)
		fprintf(to, "cut at %.1f ms (%.1f ms after its first record in scope)", ms,
			(double)(t->run.end_ns - t->run.origin_ns) / 1e6);
	else if (t->run.not_ready)
		fprintf(to, "never ready (stopped at %.1f ms)", ms);
	else if (t->run.signal)
		fprintf(to, "ran to completion (killed by signal %d) at %.1f ms", t->run.signal, ms);
	else
		fprintf(to, "ran to completion (exit %d) at %.1f ms", t->run.status, ms);
}

/* The last non-empty line of text, into buf. */
static const char *last_line(const char *text, char *buf, size_t len)
{
	buf[0] = '\0';
	const char *end = text ? text + strlen(text) : NULL;
	while (end && end > text && end[-1] == '\n')
		end--;
	if (!end || end == text)
		return buf;
	const char *start = end;
	while (start > text && start[-1] != '\n')
		start--;
	snprintf(buf, len, "%.*s", (int)(end - start), start);
	return buf;
}

static void quoted(FILE *to, const char *text, int max_lines)
{
	int n = 0;
	for (const char *p = text; p && *p && n < max_lines; n++) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		fprintf(to, "    | %.*s\n", len, p);
		p = nl ? nl + 1 : p + len;
	}
	if (n == max_lines)
		fprintf(to, "    | ...\n");
}

#define SHOW_MAX 10 /* lines per kind in the text report; --json has them all */

static void lines(FILE *to, const char *kind, char **l, size_t n)
{
	for (size_t i = 0; i < n && i < SHOW_MAX; i++)
		fprintf(to, "  %s: %s\n", kind, l[i]);
	if (n > SHOW_MAX)
		fprintf(to, "  ... %zu more %s lines\n", n - SHOW_MAX, kind);
}

static void details(FILE *to, const struct ct_trial *t)
{
	char b[64];
	size_t nf = t->rolled ? t->rb.nfiles : 0;
	for (size_t i = 0; i < nf && i < SHOW_MAX; i++) {
		const struct rb_file *f = &t->rb.files[i];
		fprintf(to, "  %s: %u record%s, %s, oldest %.1f ms before the cut\n",
			f->path ? f->path : "(not found)", f->records, f->records == 1 ? "" : "s",
			human(f->bytes, b, sizeof(b)), ct_window_ms(t, f->oldest_ns));
	}
	if (nf > SHOW_MAX)
		fprintf(to, "  ... %zu more files (--json lists them all)\n", nf - SHOW_MAX);
	if (t->rolled) {
		lines(to, "name", t->rb.names, t->rb.nnames);
		lines(to, "limit", t->rb.limits, t->rb.nlimits);
		lines(to, "problem", t->rb.problems, t->rb.nproblems);
	}
	if (t->rolled && t->rb.full)
		fprintf(to, "  not exact: the undo store reached its bound; later changes were not recorded\n");
	if (t->run.stray)
		fprintf(to, "  warning: a process of the trial was still running after the kill\n");
}

static void trial_to(FILE *to, const struct ct_opts *o, const struct ct_trial *t)
{
	char b[64], line[256];
	fprintf(to, "trial %u: ", t->n);
	when(to, t);
	if (t->rolled && t->rb.records)
		fprintf(to, "; rolled back %u record%s, %s in %zu file%s, window lost %.1f ms", t->rb.records,
			t->rb.records == 1 ? "" : "s", human(t->rb.bytes, b, sizeof(b)), t->rb.nfiles,
			t->rb.nfiles == 1 ? "" : "s", ct_window_ms(t, t->rb.oldest_ns));
	else if (t->rolled)
		fprintf(to, "; nothing to roll back");
	if (t->rolled && t->rb.kept_bytes)
		fprintf(to, "; writeback kept %s of it in %u page%s", human(t->rb.kept_bytes, b, sizeof(b)),
			t->rb.kept_pages, t->rb.kept_pages == 1 ? "" : "s");
	if (t->verdict == V_UNUSABLE)
		fprintf(to, "; UNUSABLE: %s\n", t->why);
	else if (t->verdict == V_FAIL)
		fprintf(to, "; check FAILED (%s)\n", t->why);
	else if (o->check)
		fprintf(to, "; check passed%s%s\n", t->check_out && *t->check_out ? ": " : "",
			last_line(t->check_out, line, sizeof(line)));
	else
		fprintf(to, "\n");
	details(to, t);
	if (t->verdict != V_PASS && t->check_out && *t->check_out)
		quoted(to, t->check_out, 20);
	if (t->kept[0])
		fprintf(to, "  kept in %s\n", t->kept);
}

void ct_report_trial(const struct ct_opts *o, const struct ct_trial *t)
{
	trial_to(stdout, o, t);
	fflush(stdout);
}

void ct_report_trial_to(const char *path, const struct ct_opts *o, const struct ct_trial *t)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	trial_to(f, o, t);
	fclose(f);
}

void ct_totals_add(struct ct_totals *tot, const struct ct_trial *t)
{
	tot->trials++;
	tot->passed += t->verdict == V_PASS;
	tot->failed += t->verdict == V_FAIL;
	tot->unusable += t->verdict == V_UNUSABLE;
	tot->cut += t->run.cut;
	tot->completed += !t->run.cut && !t->run.not_ready;
	if (!t->rolled)
		return;
	tot->inexact += !rollback_exact(&t->rb);
	tot->records += t->rb.records;
	tot->bytes += t->rb.bytes;
	tot->kept_bytes += t->rb.kept_bytes;
	double w = ct_window_ms(t, t->rb.oldest_ns);
	if (w > tot->max_window_ms)
		tot->max_window_ms = w;
}

void ct_report_total(const struct ct_opts *o, const struct ct_totals *tot, const char *keep_note)
{
	char b[64];
	printf("\n%u trial%s of %s under %s, cut %s, names %s, writeback %s: %u passed, %u failed, %u unusable\n",
	       tot->trials, tot->trials == 1 ? "" : "s", o->cmd[0],
	       o->config ? o->config : o->policy ? o->policy : "passthrough", o->cut_text, names_model_name(o->names),
	       o->writeback_text, tot->passed, tot->failed, tot->unusable);
	printf("cut %u, ran to completion %u; rolled back %llu records, %s; largest window lost %.1f ms\n",
	       tot->cut, tot->completed, (unsigned long long)tot->records, human(tot->bytes, b, sizeof(b)),
	       tot->max_window_ms);
	if (tot->inexact)
		printf("%u trial%s not exact (LIMIT or FULL records, or a rollback problem): see above\n", tot->inexact,
		       tot->inexact == 1 ? "" : "s");
	if (keep_note && *keep_note)
		printf("%s\n", keep_note);
	printf("seed %llu (the same cuts again: --seed %llu)\n", (unsigned long long)o->seed,
	       (unsigned long long)o->seed);
}

/* ---- JSON ---- */

static void jlines(const char *key, char **lines, size_t n)
{
	printf(",\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		if (i)
			putchar(',');
		json_str(stdout, lines[i]);
	}
	putchar(']');
}

static void jnum_or_null(const char *key, double v)
{
	if (v < 0)
		printf(",\"%s\":null", key);
	else
		printf(",\"%s\":%.3f", key, v);
}

void ct_json_begin(const struct ct_opts *o)
{
	printf("{\"seed\":%llu,\"policy\":", (unsigned long long)o->seed);
	json_str(stdout, o->policy ? o->policy : o->config ? "" : "passthrough");
	printf(",\"config\":");
	json_str(stdout, o->config);
	printf(",\"cut\":");
	json_str(stdout, o->cut_text);
	printf(",\"names\":");
	json_str(stdout, names_model_name(o->names));
	printf(",\"writeback\":");
	json_str(stdout, o->writeback_text);
	printf(",\"command\":[");
	for (char **a = o->cmd; *a; a++) {
		if (a != o->cmd)
			putchar(',');
		json_str(stdout, *a);
	}
	printf("],\"trials\":[");
}

static void json_files(const struct ct_trial *t)
{
	printf(",\"files\":[");
	for (size_t i = 0; t->rolled && i < t->rb.nfiles; i++) {
		const struct rb_file *f = &t->rb.files[i];
		printf("%s{\"path\":", i ? "," : "");
		json_str(stdout, f->path);
		printf(",\"dev\":%llu,\"ino\":%llu,\"records\":%u,\"bytes\":%llu,\"durable_upto\":%llu",
		       (unsigned long long)f->dev, (unsigned long long)f->ino, f->records, (unsigned long long)f->bytes,
		       (unsigned long long)f->durable);
		jnum_or_null("window_ms", ct_window_ms(t, f->oldest_ns));
		putchar('}');
	}
	putchar(']');
}

void ct_json_trial(const struct ct_trial *t, bool first)
{
	printf("%s{\"trial\":%u,\"verdict\":\"%s\",\"why\":", first ? "" : ",", t->n, verdict_names[t->verdict]);
	json_str(stdout, t->why);
	double ms = (double)(t->run.end_ns - t->run.start_ns) / 1e6;
	printf(",\"cut\":%s,\"timed_out\":%s,\"end_ms\":%.3f", t->run.cut ? "true" : "false",
	       t->run.timed_out ? "true" : "false", ms);
	jnum_or_null("cut_ms", t->run.cut ? ms : -1);
	jnum_or_null("first_record_ms", t->run.origin_ns ? (double)(t->run.origin_ns - t->run.start_ns) / 1e6 : -1);
	if (t->run.cut)
		printf(",\"flushers_at_cut\":{\"threads\":%d,\"busy\":%d,\"syncing\":%d}", t->run.flushers,
		       t->run.flushers_busy, t->run.flushers_syncing);
	else
		printf(",\"flushers_at_cut\":null");
	printf(",\"exit_status\":%d,\"planned_ms\":%llu", t->run.status, (unsigned long long)t->planned_ms);
	/* the server form */
	jnum_or_null("ready_ms", t->run.ready_ns ? (double)(t->run.ready_ns - t->run.start_ns) / 1e6 : -1);
	jnum_or_null("load_ms", t->run.load_ns ? (double)(t->run.end_ns - t->run.load_ns) / 1e6 : -1);
	printf(",\"load_ended\":%s", t->run.load_ended ? "true" : "false");
	if (t->run.load_ended)
		printf(",\"load_status\":%d", t->run.load_status);
	printf(",\"log_records\":%zu,\"log_bytes\":%llu", t->log_records, (unsigned long long)t->log_bytes);
	printf(",\"records\":%u,\"bytes\":%llu,\"kept_bytes\":%llu,\"writeback_seed\":%llu", t->rolled ? t->rb.records : 0,
	       (unsigned long long)(t->rolled ? t->rb.bytes : 0), (unsigned long long)(t->rolled ? t->rb.kept_bytes : 0),
	       (unsigned long long)t->writeback_seed);
	jnum_or_null("window_ms", t->rolled ? ct_window_ms(t, t->rb.oldest_ns) : -1);
	printf(",\"exact\":%s,\"full\":%s", t->rolled && rollback_exact(&t->rb) ? "true" : "false",
	       t->rolled && t->rb.full ? "true" : "false");
	json_files(t);
	jlines("names", t->rolled ? t->rb.names : NULL, t->rolled ? t->rb.nnames : 0);
	jlines("limits", t->rolled ? t->rb.limits : NULL, t->rolled ? t->rb.nlimits : 0);
	jlines("problems", t->rolled ? t->rb.problems : NULL, t->rolled ? t->rb.nproblems : 0);
	printf(",\"check\":{\"status\":%d,\"timed_out\":%s,\"output\":", t->check_status,
	       t->check_timed_out ? "true" : "false");
	json_str(stdout, t->check_out);
	printf("},\"kept\":");
	if (t->kept[0])
		json_str(stdout, t->kept);
	else
		printf("null");
	putchar('}');
}

void ct_json_end(const struct ct_totals *tot)
{
	printf("],\"total\":{\"trials\":%u,\"passed\":%u,\"failed\":%u,\"unusable\":%u,\"cut\":%u,\"completed\":%u,"
	       "\"inexact\":%u,\"records\":%llu,\"bytes\":%llu,\"kept_bytes\":%llu,\"max_window_ms\":%.3f}}\n",
	       tot->trials, tot->passed, tot->failed, tot->unusable, tot->cut, tot->completed, tot->inexact,
	       (unsigned long long)tot->records, (unsigned long long)tot->bytes, (unsigned long long)tot->kept_bytes,
	       tot->max_window_ms);
	fflush(stdout);
}
