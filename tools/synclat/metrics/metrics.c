/*
 * metrics.c - the live counters as Prometheus metrics (text exposition
 * format 0.0.4): one series per process and file, labelled pid, command,
 * rule, policy and path.
 *
 * The format wants every sample of a family together under one HELP and
 * TYPE, so the output is written family by family over all processes.
 * Two entries of one process whose labels print the same (a file
 * replaced under its name keeps both in the shim until the old one goes;
 * policies this reader does not know all print "?"; bytes of a path that
 * are not UTF-8 all print U+FFFD) are summed into one series: a scraper
 * rejects duplicate series. Seconds are printed exactly from nanoseconds
 * (no float rounding), and no timestamps are written (the textfile
 * collector refuses them).
 */
#include "metrics.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- the buckets ---- */

uint64_t metrics_le_ns(unsigned k)
{
	static const unsigned mant[3] = { 1, 2, 5 };
	uint64_t ns = 1000; /* 1 us */
	for (unsigned d = 0; d < k / 3; d++)
		ns *= 10;
	return ns * mant[k % 3]; /* k = 21: 10 s */
}

unsigned metrics_le_bucket(unsigned k)
{
	/* The bucket whose upper bound it is, found by the bound itself: it
	 * does not depend on which side of a bound live_bucket puts a value
	 * equal to it. (Not a bound at all: the test of these bounds fails.) */
	uint64_t ns = metrics_le_ns(k);
	unsigned i = 0;
	while (i + 1 < LIVE_NBOUNDS && live_bound_ns(i) < ns)
		i++;
	return i;
}

/* ---- values ---- */

/* Nanoseconds as decimal seconds, exactly: "0.0015", "12", "3.000000001". */
static void put_seconds(FILE *out, uint64_t ns)
{
	char frac[16];
	snprintf(frac, sizeof(frac), "%09" PRIu64, ns % 1000000000u);
	size_t n = strlen(frac);
	while (n && frac[n - 1] == '0')
		frac[--n] = '\0';
	fprintf(out, "%" PRIu64 "%s%s", ns / 1000000000u, n ? "." : "", frac);
}

/* Length of the valid UTF-8 character at p, 0 if it is not one. */
static size_t utf8_char(const unsigned char *p)
{
	if (p[0] < 0x80)
		return 1;
	size_t n;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && p[0] == 0xe0 && p[1] < 0xa0) || (n == 3 && p[0] == 0xed && p[1] >= 0xa0) ||
	    (n == 4 && p[0] == 0xf0 && p[1] < 0x90) || (n == 4 && p[0] == 0xf4 && p[1] >= 0x90))
		return 0; /* overlong, surrogate, or past U+10FFFF */
	return n;
}

/* The character put_label_value prints for the one at p: itself, or
 * U+FFFD for a byte that is not UTF-8. Returns where the next one starts. */
static const unsigned char *label_char(const unsigned char *p, const unsigned char **c, size_t *len)
{
	size_t n = utf8_char(p);
	if (!n) {
		*c = (const unsigned char *)"\xef\xbf\xbd";
		*len = 3;
		return p + 1;
	}
	*c = p;
	*len = n;
	return p + n;
}

/* A label value: \, " and newline escaped as the format says; a byte
 * that is not UTF-8 (a path may hold any) becomes U+FFFD, since the
 * format is UTF-8 and a scraper refuses anything else. */
static void put_label_value(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		if (*p == '\\' || *p == '"') {
			fprintf(out, "\\%c", *p++);
		} else if (*p == '\n') {
			fputs("\\n", out);
			p++;
		} else {
			const unsigned char *c;
			size_t n;
			p = label_char(p, &c, &n);
			fwrite(c, 1, n, out);
		}
	}
}

static void put_label(FILE *out, const char *name, const char *value, bool first)
{
	fprintf(out, "%s%s=\"", first ? "" : ",", name);
	put_label_value(out, value);
	fputc('"', out);
}

/* ---- the series ---- */

/* One process: its files with equal labels summed. */
struct mproc {
	const struct live_proc *p;
	char command[64];
	struct live_file *rows;
	size_t nrows;
};

static const char *rule_label(const struct live_file *f)
{
	return f->rule_name[0] ? f->rule_name : "default";
}

/* Whether two label values print the same (escaping is one to one;
 * replacing bytes that are not UTF-8 is not). */
static bool same_label_value(const char *a, const char *b)
{
	const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
	while (*p && *q) {
		const unsigned char *x, *y;
		size_t nx, ny;
		p = label_char(p, &x, &nx);
		q = label_char(q, &y, &ny);
		if (nx != ny || memcmp(x, y, nx) != 0)
			return false;
	}
	return !*p && !*q;
}

/* Equal as printed, not as stored: two policy numbers this reader does
 * not know both print "?", and two paths that differ only in bytes that
 * are not UTF-8 print the same U+FFFD. */
static bool same_labels(const struct live_file *a, const struct live_file *b)
{
	return !strcmp(live_policy_name(a->policy), live_policy_name(b->policy)) &&
	       same_label_value(rule_label(a), rule_label(b)) && same_label_value(a->path, b->path);
}

static int mproc_init(struct mproc *m, const struct live_proc *p)
{
	m->p = p;
	live_command(p, m->command, sizeof(m->command));
	m->nrows = 0;
	m->rows = calloc(p->h.nfiles ? p->h.nfiles : 1, sizeof(*m->rows));
	if (!m->rows)
		return -1;
	for (uint32_t i = 0; i < p->h.nfiles; i++) {
		const struct live_file *f = &p->files[i];
		size_t j = 0;
		while (j < m->nrows && !same_labels(&m->rows[j], f))
			j++;
		if (j == m->nrows)
			m->rows[m->nrows++] = *f;
		else
			live_file_add(&m->rows[j], f);
	}
	return 0;
}

static void put_proc_labels(FILE *out, const struct mproc *m)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%u", m->p->h.pid);
	put_label(out, "pid", pid, true);
	put_label(out, "command", m->command, false);
}

static void put_file_labels(FILE *out, const struct mproc *m, const struct live_file *f)
{
	put_proc_labels(out, m);
	put_label(out, "rule", rule_label(f), false);
	put_label(out, "policy", live_policy_name(f->policy), false);
	put_label(out, "path", f->path, false);
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

enum mfield { MF_WRITES, MF_BYTES, MF_SYNCS, MF_REAL, MF_ERRORS, MF_PENDING, MF_RISK, MF_RISK_AGE,
	      MF_RISK_WORST, MF_UNBOUNDED };

static const struct {
	const char *name, *type, *help;
	enum mfield field;
	bool seconds; /* the field is in ns */
} file_families[] = {
	{ "syncshim_writes_total", "counter", "Writes the application made to the file since the shim met it.", MF_WRITES, false },
	{ "syncshim_written_bytes_total", "counter", "Bytes the application wrote to the file.", MF_BYTES, false },
	{ "syncshim_syncs_total", "counter", "The application's fsync, fdatasync and msync(MS_SYNC) calls on the file.", MF_SYNCS, false },
	{ "syncshim_real_syncs_total", "counter", "Real syncs of the file: the application's own that passed through, and the flusher's.", MF_REAL, false },
	{ "syncshim_sync_errors_total", "counter", "Syncs of the file that failed, returned to the application or made on its behalf.", MF_ERRORS, false },
	{ "syncshim_pending_syncs", "gauge", "Deferred sync requests no real sync covers yet.", MF_PENDING, false },
	{ "syncshim_at_risk_bytes", "gauge", "Bytes the application was told are durable that no completed real sync covers.", MF_RISK, false },
	{ "syncshim_at_risk_oldest_seconds", "gauge", "Age of the oldest byte at risk, 0 if none.", MF_RISK_AGE, true },
	{ "syncshim_at_risk_worst_bytes", "gauge", "The most bytes at risk during the process's last publishing interval.", MF_RISK_WORST, false },
	{ "syncshim_at_risk_unbounded", "gauge", "1 if the file's rule never syncs (noop): its data at risk only grows.", MF_UNBOUNDED, false },
};

static uint64_t field_of(const struct live_file *f, enum mfield m)
{
	switch (m) {
	case MF_WRITES: return f->writes;
	case MF_BYTES: return f->bytes;
	case MF_SYNCS: return f->syncs;
	case MF_REAL: return f->real_syncs;
	case MF_ERRORS: return f->errors;
	case MF_PENDING: return f->pending;
	case MF_RISK: return f->risk_bytes;
	case MF_RISK_AGE: return f->risk_age_ns;
	case MF_RISK_WORST: return f->risk_worst_bytes;
	case MF_UNBOUNDED: return (f->flags & LIVEF_UNBOUNDED) != 0;
	}
	return 0;
}

static void file_family(FILE *out, const struct mproc *m, size_t n, size_t k)
{
	family(out, file_families[k].name, file_families[k].type, file_families[k].help);
	for (size_t i = 0; i < n; i++) {
		for (size_t r = 0; r < m[i].nrows; r++) {
			const struct live_file *f = &m[i].rows[r];
			uint64_t v = field_of(f, file_families[k].field);
			fprintf(out, "%s{", file_families[k].name);
			put_file_labels(out, &m[i], f);
			fputs("} ", out);
			if (file_families[k].seconds)
				put_seconds(out, v);
			else
				fprintf(out, "%" PRIu64, v);
			fputc('\n', out);
		}
	}
}

/* One histogram series: cumulative buckets at the 1-2-5 bounds, +Inf,
 * sum and count, from the live buckets since the shim met the file. */
static void histogram_series(FILE *out, const char *name, const struct mproc *m, const struct live_file *f,
			     const uint64_t *buckets, uint64_t sum_ns)
{
	uint64_t cum = 0, total = 0;
	unsigned next = 0; /* live buckets summed into cum so far */
	for (unsigned i = 0; i < LIVE_NBUCKETS; i++)
		total += buckets[i];
	for (unsigned k = 0; k < METRICS_NLE; k++) {
		for (unsigned b = metrics_le_bucket(k); next <= b; next++)
			cum += buckets[next];
		fprintf(out, "%s_bucket{", name);
		put_file_labels(out, m, f);
		fprintf(out, ",le=\"%g\"} %" PRIu64 "\n", (double)metrics_le_ns(k) / 1e9, cum);
	}
	fprintf(out, "%s_bucket{", name);
	put_file_labels(out, m, f);
	fprintf(out, ",le=\"+Inf\"} %" PRIu64 "\n%s_sum{", total, name);
	put_file_labels(out, m, f);
	fputs("} ", out);
	put_seconds(out, sum_ns);
	fprintf(out, "\n%s_count{", name);
	put_file_labels(out, m, f);
	fprintf(out, "} %" PRIu64 "\n", total);
}

static void histograms(FILE *out, const struct mproc *m, size_t n, bool real)
{
	const char *name = real ? "syncshim_real_sync_duration_seconds" : "syncshim_sync_duration_seconds";
	family(out, name, "histogram",
	       real ? "Latency of the real syncs of the file (the application's that passed through, and the flusher's)."
		    : "Latency of the application's sync calls on the file, as the application saw it.");
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < m[i].nrows; r++) {
			const struct live_file *f = &m[i].rows[r];
			histogram_series(out, name, &m[i], f, real ? f->real_buckets : f->sync_buckets,
					 real ? f->real_sum_ns : f->sync_sum_ns);
		}
}

static void process_families(FILE *out, const struct live_snapshot *s, const struct mproc *m, size_t n)
{
	family(out, "syncshim_live_processes", "gauge", "Shimmed processes whose live counters file was found.");
	fprintf(out, "syncshim_live_processes %zu\n", n);
	family(out, "syncshim_live_skipped_files", "gauge",
	       "Live counters files not read: stale (their process is gone), or unreadable (refused, truncated, foreign).");
	fprintf(out, "syncshim_live_skipped_files{reason=\"stale\"} %u\n", s->skipped[LIVE_STALE]);
	fprintf(out, "syncshim_live_skipped_files{reason=\"unreadable\"} %u\n",
		s->skipped[LIVE_BAD] + s->skipped[LIVE_REFUSED]);
	family(out, "syncshim_up", "gauge",
	       "1 if the process's live counters are current; 0 if it has not published for 5 intervals, or they kept changing while read.");
	for (size_t i = 0; i < n; i++) {
		fputs("syncshim_up{", out);
		put_proc_labels(out, &m[i]);
		fprintf(out, "} %d\n", !m[i].p->stalled && !m[i].p->busy);
	}
	family(out, "syncshim_start_time_seconds", "gauge", "When the shim started in the process, in seconds since the epoch.");
	for (size_t i = 0; i < n; i++) {
		if (m[i].p->busy)
			continue;
		fputs("syncshim_start_time_seconds{", out);
		put_proc_labels(out, &m[i]);
		fputs("} ", out);
		put_seconds(out, m[i].p->h.start_wall_ns);
		fputc('\n', out);
	}
	family(out, "syncshim_omitted_files", "gauge", "Files with activity that did not fit in the process's live counters file.");
	for (size_t i = 0; i < n; i++) {
		fputs("syncshim_omitted_files{", out);
		put_proc_labels(out, &m[i]);
		fprintf(out, "} %u\n", m[i].p->h.omitted);
	}
}

int metrics_write(FILE *out, const struct live_snapshot *s)
{
	struct mproc *m = calloc(s->nprocs ? s->nprocs : 1, sizeof(*m));
	size_t n = 0;
	int rc = m ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < s->nprocs; i++)
		rc = mproc_init(&m[n++], &s->procs[i]);
	if (rc == 0) {
		process_families(out, s, m, n);
		for (size_t k = 0; k < sizeof(file_families) / sizeof(file_families[0]); k++)
			file_family(out, m, n, k);
		histograms(out, m, n, false);
		histograms(out, m, n, true);
	}
	for (size_t i = 0; m && i < n; i++)
		free(m[i].rows);
	free(m);
	return rc;
}
