/*
 * metrics.c - the live counters as Prometheus metrics (text exposition
 * format 0.0.4): by default one series per service (the program's name)
 * and rule, labelled service, rule and policy; with per_file, one per
 * process and file, labelled pid and path too.
 *
 * The format wants every sample of a family together under one HELP and
 * TYPE, so the output is written family by family over all processes.
 * Entries whose labels print the same (the files of one rule; in
 * per_file, a file replaced under its name, which the shim keeps until
 * the old one goes; policies this reader does not know all print "?";
 * bytes of a path that are not UTF-8 all print U+FFFD) are summed into
 * one series: a scraper rejects duplicate series. Seconds are printed exactly from nanoseconds
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

/*
 * Labels: by default what an operator aggregates on, service (the
 * program's name: "redis-server", "postgres", "java") and, for files,
 * rule and policy, each series summed over the service's processes and
 * the rule's files. A service's count of series is its rules' count,
 * however many processes it forks (PostgreSQL's backends) and files it
 * churns through. With per_file, pid and path too: a series per process
 * and file, for a look at one file.
 *
 * A counter summed over processes drops when one of them ends; rate()
 * and increase() take the drop for a reset.
 */
struct mseries {
	char service[64];
	uint32_t pid;               /* per_file; else 0 */
	struct live_file f;         /* rule_name, policy, path (per_file) and the sums */
	uint32_t processes;         /* process series: how many were summed */
	uint32_t current;           /* process series: of them, not stalled nor busy */
	uint32_t config_errors, omitted;
	uint64_t start_wall_ns;     /* per_file process series */
	uint32_t rule_files;        /* rule series: the most files any process matched */
};

struct mset {
	struct mseries *s;
	size_t n, cap;
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
 * are not UTF-8 print the same U+FFFD. Labels a mode does not print are
 * left empty (pid 0, path "") and compare equal. */
static bool same_labels(const struct mseries *a, const struct mseries *b, bool file)
{
	if (a->pid != b->pid || !same_label_value(a->service, b->service))
		return false;
	return !file || (!strcmp(live_policy_name(a->f.policy), live_policy_name(b->f.policy)) &&
			 same_label_value(rule_label(&a->f), rule_label(&b->f)) && same_label_value(a->f.path, b->f.path));
}

/* The series with k's labels, added if new; NULL when out of memory. */
static struct mseries *series_of(struct mset *m, const struct mseries *k, bool file)
{
	for (size_t i = 0; i < m->n; i++)
		if (same_labels(&m->s[i], k, file))
			return &m->s[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct mseries *s = realloc(m->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		m->s = s;
		m->cap = cap;
	}
	m->s[m->n] = *k;
	memset(&m->s[m->n].f, 0, sizeof(m->s[m->n].f));
	m->s[m->n].f.rule = k->f.rule;
	m->s[m->n].f.policy = k->f.policy;
	memcpy(m->s[m->n].f.rule_name, k->f.rule_name, sizeof(k->f.rule_name));
	memcpy(m->s[m->n].f.path, k->f.path, sizeof(k->f.path));
	return &m->s[m->n++];
}

/* The key of a process's series, and of its files' (labels only). */
static void key_of(struct mseries *k, const struct live_proc *p, bool per_file)
{
	memset(k, 0, sizeof(*k));
	live_command(p, k->service, sizeof(k->service));
	k->pid = per_file ? p->h.pid : 0;
}

struct mall {
	struct mset procs, files, rules;
};

static int gather(struct mall *a, const struct live_snapshot *snap, bool per_file)
{
	for (size_t i = 0; i < snap->nprocs; i++) {
		const struct live_proc *p = &snap->procs[i];
		static struct mseries k;
		key_of(&k, p, per_file);
		struct mseries *ps = series_of(&a->procs, &k, false);
		if (!ps)
			return -1;
		ps->processes++;
		ps->current += !p->stalled && !p->busy;
		ps->config_errors += p->h.config_errors;
		ps->omitted += p->h.omitted;
		ps->start_wall_ns = p->h.start_wall_ns;
		for (uint32_t j = 0; j < p->h.nfiles; j++) {
			const struct live_file *f = &p->files[j];
			k.f.rule = f->rule;
			k.f.policy = f->policy;
			memcpy(k.f.rule_name, f->rule_name, sizeof(k.f.rule_name));
			snprintf(k.f.path, sizeof(k.f.path), "%s", per_file ? f->path : "");
			struct mseries *fs = series_of(&a->files, &k, true);
			if (!fs)
				return -1;
			live_file_add(&fs->f, f);
		}
		k.f.path[0] = '\0';
		for (uint32_t j = 0; j < p->h.nrules; j++) {
			const struct live_rule *r = &p->rules[j];
			k.f.rule = r->rule;
			k.f.policy = r->policy;
			snprintf(k.f.rule_name, sizeof(k.f.rule_name), "%s", r->name);
			struct mseries *rs = series_of(&a->rules, &k, true);
			if (!rs)
				return -1;
			rs->rule_files = r->files > rs->rule_files ? r->files : rs->rule_files;
		}
	}
	return 0;
}

static void put_proc_labels(FILE *out, const struct mseries *m)
{
	put_label(out, "service", m->service, true);
	if (m->pid) {
		char pid[16];
		snprintf(pid, sizeof(pid), "%u", m->pid);
		put_label(out, "pid", pid, false);
	}
}

static void put_file_labels(FILE *out, const struct mseries *m)
{
	put_proc_labels(out, m);
	put_label(out, "rule", rule_label(&m->f), false);
	put_label(out, "policy", live_policy_name(m->f.policy), false);
	if (m->pid) /* per_file */
		put_label(out, "path", m->f.path, false);
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
	{ "syncshim_writes_total", "counter", "Writes the application made to the rule's files since the shim met them.", MF_WRITES, false },
	{ "syncshim_written_bytes_total", "counter", "Bytes the application wrote to the rule's files.", MF_BYTES, false },
	{ "syncshim_syncs_total", "counter", "The application's fsync, fdatasync and msync(MS_SYNC) calls on the rule's files.", MF_SYNCS, false },
	{ "syncshim_real_syncs_total", "counter", "Real syncs of the rule's files: the application's own that passed through, and the flusher's.", MF_REAL, false },
	{ "syncshim_sync_errors_total", "counter", "Syncs of the rule's files that failed, returned to the application or made on its behalf.", MF_ERRORS, false },
	{ "syncshim_pending_syncs", "gauge", "Deferred sync requests no real sync covers yet.", MF_PENDING, false },
	{ "syncshim_at_risk_bytes", "gauge", "Bytes the application was told are durable that no completed real sync covers.", MF_RISK, false },
	{ "syncshim_at_risk_oldest_seconds", "gauge", "Age of the oldest byte at risk, 0 if none.", MF_RISK_AGE, true },
	{ "syncshim_at_risk_worst_bytes", "gauge", "The most bytes at risk of one file during its process's last publishing interval.", MF_RISK_WORST, false },
	{ "syncshim_at_risk_unbounded", "gauge", "1 if the rule never syncs (noop): its data at risk only grows.", MF_UNBOUNDED, false },
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

static void file_family(FILE *out, const struct mset *m, size_t k)
{
	family(out, file_families[k].name, file_families[k].type, file_families[k].help);
	for (size_t i = 0; i < m->n; i++) {
		const struct mseries *s = &m->s[i];
		uint64_t v = field_of(&s->f, file_families[k].field);
		fprintf(out, "%s{", file_families[k].name);
		put_file_labels(out, s);
		fputs("} ", out);
		if (file_families[k].seconds)
			put_seconds(out, v);
		else
			fprintf(out, "%" PRIu64, v);
		fputc('\n', out);
	}
}

/* One histogram series: cumulative buckets at the 1-2-5 bounds, +Inf,
 * sum and count, from the live buckets since the shim met the files. */
static void histogram_series(FILE *out, const char *name, const struct mseries *s, const uint64_t *buckets,
			     uint64_t sum_ns)
{
	uint64_t cum = 0, total = 0;
	unsigned next = 0; /* live buckets summed into cum so far */
	for (unsigned i = 0; i < LIVE_NBUCKETS; i++)
		total += buckets[i];
	for (unsigned k = 0; k < METRICS_NLE; k++) {
		for (unsigned b = metrics_le_bucket(k); next <= b; next++)
			cum += buckets[next];
		fprintf(out, "%s_bucket{", name);
		put_file_labels(out, s);
		fprintf(out, ",le=\"%g\"} %" PRIu64 "\n", (double)metrics_le_ns(k) / 1e9, cum);
	}
	fprintf(out, "%s_bucket{", name);
	put_file_labels(out, s);
	fprintf(out, ",le=\"+Inf\"} %" PRIu64 "\n%s_sum{", total, name);
	put_file_labels(out, s);
	fputs("} ", out);
	put_seconds(out, sum_ns);
	fprintf(out, "\n%s_count{", name);
	put_file_labels(out, s);
	fprintf(out, "} %" PRIu64 "\n", total);
}

static void histograms(FILE *out, const struct mset *m, bool real)
{
	const char *name = real ? "syncshim_real_sync_duration_seconds" : "syncshim_sync_duration_seconds";
	family(out, name, "histogram",
	       real ? "Latency of the real syncs of the rule's files (the application's that passed through, and the flusher's)."
		    : "Latency of the application's sync calls on the rule's files, as the application saw it.");
	for (size_t i = 0; i < m->n; i++) {
		const struct mseries *s = &m->s[i];
		histogram_series(out, name, s, real ? s->f.real_buckets : s->f.sync_buckets,
				 real ? s->f.real_sum_ns : s->f.sync_sum_ns);
	}
}

static void proc_series(FILE *out, const struct mset *m, const char *name, uint64_t (*value)(const struct mseries *))
{
	for (size_t i = 0; i < m->n; i++) {
		fprintf(out, "%s{", name);
		put_proc_labels(out, &m->s[i]);
		fprintf(out, "} %" PRIu64 "\n", value(&m->s[i]));
	}
}

static uint64_t v_processes(const struct mseries *s) { return s->processes; }
static uint64_t v_up(const struct mseries *s) { return s->current == s->processes; }
static uint64_t v_omitted(const struct mseries *s) { return s->omitted; }
static uint64_t v_config_errors(const struct mseries *s) { return s->config_errors; }

static void process_families(FILE *out, const struct live_snapshot *snap, const struct mall *a, bool per_file)
{
	family(out, "syncshim_live_processes", "gauge", "Shimmed processes of the service whose live counters file was found.");
	proc_series(out, &a->procs, "syncshim_live_processes", v_processes);
	family(out, "syncshim_live_skipped_files", "gauge",
	       "Live counters files not read: stale (their process is gone), or unreadable (refused, truncated, foreign).");
	fprintf(out, "syncshim_live_skipped_files{reason=\"stale\"} %u\n", snap->skipped[LIVE_STALE]);
	fprintf(out, "syncshim_live_skipped_files{reason=\"unreadable\"} %u\n",
		snap->skipped[LIVE_BAD] + snap->skipped[LIVE_REFUSED]);
	family(out, "syncshim_up", "gauge",
	       "1 if the live counters of every process of the service are current; 0 if one has not published for 5 intervals, or they kept changing while read.");
	proc_series(out, &a->procs, "syncshim_up", v_up);
	family(out, "syncshim_config_errors_total", "counter",
	       "Inis the shim refused: at load (the process runs as passthrough) or on a reload (the rules it had are kept).");
	proc_series(out, &a->procs, "syncshim_config_errors_total", v_config_errors);
	family(out, "syncshim_omitted_files", "gauge", "Files with activity that did not fit in their process's live counters file.");
	proc_series(out, &a->procs, "syncshim_omitted_files", v_omitted);
	if (per_file) {
		family(out, "syncshim_start_time_seconds", "gauge", "When the shim started in the process, in seconds since the epoch.");
		for (size_t i = 0; i < a->procs.n; i++) {
			fputs("syncshim_start_time_seconds{", out);
			put_proc_labels(out, &a->procs.s[i]);
			fputs("} ", out);
			put_seconds(out, a->procs.s[i].start_wall_ns);
			fputc('\n', out);
		}
	}
	family(out, "syncshim_rule_matched_files", "gauge",
	       "Files the rule matched (distinct paths, the most in any one process of the service); 0: its glob names none of the files the service opened.");
	for (size_t i = 0; i < a->rules.n; i++) {
		const struct mseries *s = &a->rules.s[i];
		fputs("syncshim_rule_matched_files{", out);
		put_proc_labels(out, s);
		put_label(out, "rule", rule_label(&s->f), false);
		put_label(out, "policy", live_policy_name(s->f.policy), false);
		fprintf(out, "} %u\n", s->rule_files);
	}
}

int metrics_write(FILE *out, const struct live_snapshot *s, bool per_file)
{
	struct mall a;
	memset(&a, 0, sizeof(a));
	int rc = gather(&a, s, per_file);
	if (rc == 0) {
		process_families(out, s, &a, per_file);
		for (size_t k = 0; k < sizeof(file_families) / sizeof(file_families[0]); k++)
			file_family(out, &a.files, k);
		histograms(out, &a.files, false);
		histograms(out, &a.files, true);
	}
	free(a.procs.s);
	free(a.files.s);
	free(a.rules.s);
	return rc;
}
