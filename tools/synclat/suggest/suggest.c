/*
 * suggest.c - `synclat suggest`: from calls-mode logs of a program run
 * under passthrough, what it does with each file, and the rules to try.
 *
 * Facts per file come from the call records (log format 1.2): sync calls
 * and their latency, bytes written and how (write/writev only, O_APPEND,
 * or positional pwrite), the flags its opens asked for (O_SYNC, O_DSYNC),
 * renames of it (the record names the file renamed), which threads synced
 * it and whether two of them synced it at once; directory syncs have
 * records of their own. Files whose names differ only in numbers (log
 * segments db-1.log, db-2.log) form one group under one glob, and each
 * group gets a policy by these rules, the reason written above the rule:
 *
 *   renamed into place       passthrough: its sync is what makes the new
 *                            name safe to publish, and the rename barrier
 *                            would complete a deferred one anyway
 *   synced often (>= 1/s)    defer, max_delay_ms from the observed rate;
 *                            group instead when syncs of it overlap
 *                            (several threads commit at once: they share
 *                            one real sync and nothing is lost)
 *   O_SYNC/O_DSYNC writes    as synced often (each write is a sync)
 *   synced rarely            passthrough: nothing to gain
 *
 * The ini is read back with the shim's own parser before it is written,
 * and every profiled file is matched against it: a file that would fall
 * under another group's rule is said.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logread.h"
#include "policy.h"
#include "report.h"
#include "suggest.h"
#include "tool.h"

#define HOT_RATE 1.0          /* syncs per second that make a file worth relaxing */
#define HOT_MIN_SYNCS 10      /* ... and at least this many in the run */
#define SYNCS_PER_PUBLISH 64 /* more syncs than this per rename: a log that is recycled by rename */
#define BATCH_SYNCS 10        /* max_delay_ms: about this many syncs' worth */
#define DELAY_MIN_MS 5
#define DELAY_MAX_MS 100
#define MAX_THREADS 16        /* distinct syncing threads kept per file */
#define MAX_LISTED 40         /* files in the report's table */
#define MAX_RULES 60          /* of the shim's 64 */
#define GLOB_MAX 180          /* "path = GLOB" within an ini line of 196 */

struct thread_id {
	uint32_t pid, tid;
	uint64_t syncs;
};

struct sfile {
	char *path, *pattern;
	uint64_t opens, osync_opens, append_opens, trunc_opens;
	uint64_t writes, pwrites, bytes, write_ns;
	uint64_t syncs, renames, syncs_after_rename, concurrent;
	uint64_t first_sync_ns, last_sync_ns; /* CLOCK_MONOTONIC, one clock for every process */
	struct hist *lat;             /* sync latency; O_(D)SYNC writes too */
	struct thread_id th[MAX_THREADS];
	unsigned nth;
	bool more_threads;
	size_t group;
	/* per log, while its records are read */
	const struct lr_log *cur;
	uint64_t renamed_at, busy_until;
	uint32_t busy_tid;
};

struct sgroup {
	char *pattern;
	size_t nfiles;
	size_t first;                 /* a file of it, for the rule's name */
	uint64_t opens, osync_opens, append_opens, writes, pwrites, bytes;
	uint64_t syncs, renames, concurrent;
	uint64_t busiest;             /* syncs of its busiest file (O_(D)SYNC writes too) */
	double busiest_rate;          /* ... per second while it was synced (first to last sync) */
	uint64_t first_sync_ns, last_sync_ns;
	unsigned threads;
	bool needed;                  /* a passthrough group written only to shadow a broader rule */
	struct hist lat;
	int policy;                   /* enum sync_policy, or -1: no rule */
	unsigned delay_ms;
	char reason[640];
	char name[64];
};

struct profile {
	struct sfile *files;
	size_t nfiles, cap;
	size_t *slots;                /* hash of path -> 1 + index into files */
	size_t nslots;
	uint64_t dir_syncs;
	struct thread_id dir_th[MAX_THREADS];
	unsigned dir_nth;
	uint64_t start_wall, end_wall;
	uint64_t drops;
	size_t nlogs;
	const char *cmdline;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int grow_slots(struct profile *p)
{
	size_t n = p->nslots ? p->nslots * 2 : 1024;
	size_t *s = calloc(n, sizeof(*s));
	if (!s)
		return -1;
	for (size_t i = 0; i < p->nfiles; i++) {
		size_t j = hash_str(p->files[i].path) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = i + 1;
	}
	free(p->slots);
	p->slots = s;
	p->nslots = n;
	return 0;
}

/* The file of this path, made on first sight; NULL when out of memory. */
static struct sfile *file_of(struct profile *p, const char *path)
{
	if ((p->nfiles + 1) * 2 > p->nslots && grow_slots(p) < 0)
		return NULL;
	size_t j = hash_str(path) & (p->nslots - 1);
	for (; p->slots[j]; j = (j + 1) & (p->nslots - 1))
		if (!strcmp(p->files[p->slots[j] - 1].path, path))
			return &p->files[p->slots[j] - 1];
	if (p->nfiles == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct sfile *f = realloc(p->files, cap * sizeof(*f));
		if (!f)
			return NULL;
		p->files = f;
		p->cap = cap;
	}
	struct sfile *f = &p->files[p->nfiles];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	p->slots[j] = ++p->nfiles;
	return f;
}

static void count_thread(struct thread_id *th, unsigned *n, bool *more, uint32_t pid, uint32_t tid)
{
	for (unsigned i = 0; i < *n; i++)
		if (th[i].pid == pid && th[i].tid == tid) {
			th[i].syncs++;
			return;
		}
	if (*n < MAX_THREADS)
		th[(*n)++] = (struct thread_id){ pid, tid, 1 };
	else if (more)
		*more = true;
}

static bool is_sync_op(unsigned op)
{
	return op == LOGOP_FSYNC || op == LOGOP_FDATASYNC || op == LOGOP_MSYNC;
}

static int cmp_start(const void *a, const void *b)
{
	const struct logfmt_record *x = *(const struct logfmt_record *const *)a;
	const struct logfmt_record *y = *(const struct logfmt_record *const *)b;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static void record_latency(struct sfile *f, uint64_t at, uint64_t ns)
{
	if (!f->first_sync_ns || at < f->first_sync_ns)
		f->first_sync_ns = at;
	if (at > f->last_sync_ns)
		f->last_sync_ns = at;
	if (!f->lat && (f->lat = malloc(sizeof(*f->lat))))
		hist_init(f->lat);
	if (f->lat)
		hist_record_local(f->lat, ns);
}

/* One record of a file, in start order within its log. */
static void file_record(struct sfile *f, const struct lr_log *log, const struct logfmt_record *r)
{
	if (f->cur != log) {
		f->cur = log;
		f->renamed_at = 0;
		f->busy_until = 0;
	}
	bool ok = r->result >= 0;
	switch (r->op) {
	case LOGOP_OPEN:
		if (!ok)
			return;
		f->opens++;
		f->osync_opens += (r->flags & (LOGREC_OPEN_OSYNC | LOGREC_OPEN_ODSYNC)) != 0;
		f->append_opens += (r->flags & LOGREC_OPEN_APPEND) != 0;
		f->trunc_opens += (r->flags & LOGREC_OPEN_TRUNC) != 0;
		return;
	case LOGOP_RENAME:
		if (ok) {
			f->renames++;
			f->renamed_at = r->start_ns;
		}
		return;
	case LOGOP_WRITE:
	case LOGOP_WRITEV:
	case LOGOP_PWRITE:
	case LOGOP_PWRITEV:
		if (!ok)
			return;
		f->writes++;
		f->pwrites += r->op == LOGOP_PWRITE || r->op == LOGOP_PWRITEV;
		f->bytes += r->bytes;
		f->write_ns += r->dur_ns;
		if (f->osync_opens)
			record_latency(f, r->start_ns, r->dur_ns); /* each write is a sync */
		return;
	default:
		break;
	}
	if (!is_sync_op(r->op) || !ok)
		return;
	f->syncs++;
	if (f->renamed_at && r->start_ns > f->renamed_at)
		f->syncs_after_rename++;
	record_latency(f, r->start_ns, r->dur_ns);
	/* Another thread's sync of it still running: group would have
	 * answered both with one real sync. */
	if (r->start_ns < f->busy_until && r->tid != f->busy_tid)
		f->concurrent++;
	if (r->start_ns + r->dur_ns > f->busy_until) {
		f->busy_until = r->start_ns + r->dur_ns;
		f->busy_tid = r->tid;
	}
	count_thread(f->th, &f->nth, &f->more_threads, log->pid, r->tid);
}

/* The index into log->files of the file a record is about, or -1; a
 * directory's sync is counted here. */
static long record_file(struct profile *p, const struct lr_log *log, const struct logfmt_record *r,
			const bool *seen)
{
	if (r->file_id)
		return lr_file_index(log, r->file_id);
	if (r->op == LOGOP_RENAME && r->bytes && log->minor >= 2) {
		/* A file closed before its rename: by its inode number, the
		 * latest file of that inode seen so far. */
		for (size_t k = log->nfiles; k-- > 0;)
			if (log->files[k].ino == r->bytes && seen[k])
				return (long)k;
		return -1;
	}
	if ((r->flags & LOGREC_DIRECTORY) && is_sync_op(r->op) && r->result >= 0) {
		p->dir_syncs++;
		count_thread(p->dir_th, &p->dir_nth, NULL, log->pid, r->tid);
	}
	return -1;
}

static int add_log(struct profile *p, const struct lr_log *log, FILE *err)
{
	p->nlogs++;
	uint64_t end = lr_end_wall_ns(log);
	if (!p->start_wall || log->start_wall_ns < p->start_wall) {
		p->start_wall = log->start_wall_ns;
		p->cmdline = log->cmdline; /* the first process's: the one profiled */
	}
	if (end > p->end_wall)
		p->end_wall = end;
	p->drops += log->drops;
	const struct logfmt_record **order = malloc((log->nrecs ? log->nrecs : 1) * sizeof(*order));
	struct sfile **by_file = calloc(log->nfiles ? log->nfiles : 1, sizeof(*by_file));
	bool *seen = calloc(log->nfiles ? log->nfiles : 1, sizeof(*seen));
	int rc = order && by_file && seen ? 0 : -1;
	for (size_t i = 0; !rc && i < log->nrecs; i++)
		order[i] = &log->recs[i];
	if (!rc)
		qsort(order, log->nrecs, sizeof(*order), cmp_start);
	for (size_t i = 0; !rc && i < log->nrecs; i++) {
		long fi = record_file(p, log, order[i], seen);
		if (fi < 0)
			continue;
		seen[fi] = true;
		if (!by_file[fi] && !(by_file[fi] = file_of(p, log->files[fi].path)))
			rc = -1;
		else
			file_record(by_file[fi], log, order[i]);
	}
	if (rc)
		cli_err(err, "out of memory");
	free(seen);
	free(order);
	free(by_file);
	return rc;
}

/* ---- globs and groups ------------------------------------------------------ */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A directory component that is a number (PostgreSQL's base/16384/):
 * digits, or 8 or more hex digits with a digit among them. */
static bool numeric_component(const char *s, size_t n)
{
	size_t digits = 0, hex = 0;
	for (size_t i = 0; i < n; i++) {
		digits += s[i] >= '0' && s[i] <= '9';
		hex += is_hex(s[i]);
	}
	return n && hex == n && digits && (digits == n || n >= 8);
}

/* A name's byte as the glob's literal: glob characters escaped, and ';'
 * too (after a space the ini would read it as the start of a comment). */
static size_t put_literal(char *out, size_t o, char c)
{
	if (c == '*' || c == '?' || c == '[' || c == '\\' || c == ';')
		out[o++] = '\\';
	out[o++] = c;
	return o;
}

void suggest_pattern(const char *path, char *out, size_t len)
{
	size_t o = 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	/* Directories: a component that is a number becomes '*', others stay. */
	for (const char *s = path; s < base && o + 4 < len;) {
		size_t n = strcspn(s, "/");
		if (numeric_component(s, n)) {
			out[o++] = '*';
		} else {
			for (size_t k = 0; k < n && o + 4 < len; k++)
				o = put_literal(out, o, s[k]);
		}
		s += n;
		if (*s == '/' && o + 4 < len) {
			out[o++] = '/';
			s++;
		}
	}
	/* The name: each number in it becomes '*'. */
	for (size_t i = 0; base[i] && o + 4 < len;) {
		size_t j = i, digits = i;
		bool digit = false;
		while (is_hex(base[j])) {
			digit |= base[j] >= '0' && base[j] <= '9';
			j++;
		}
		while (base[digits] >= '0' && base[digits] <= '9')
			digits++;
		if (digit && j - i >= 8) { /* a hex or long numeric name: 000000010000000000000002 */
			out[o++] = '*';
			i = j;
		} else if (digits > i) { /* a number: db-12.log */
			out[o++] = '*';
			i = digits;
		} else {
			o = put_literal(out, o, base[i++]);
		}
	}
	out[o] = '\0';
}

/* Literal characters of a glob: the more, the more specific. */
static size_t literals(const char *g)
{
	size_t n = 0;
	for (; *g; g++)
		n += *g != '*';
	return n;
}

/* A rule's name from its glob: the file name ("db-N.log"), or the
 * directory and the name when the name is only a number ("pg_wal-N"). */
static void rule_name(const char *pattern, char *out, size_t len, int serial)
{
	const char *end = pattern + strlen(pattern), *from = strrchr(pattern, '/');
	from = from ? from + 1 : pattern;
	bool letters = false;
	for (const char *s = from; *s; s++)
		letters |= (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z');
	if (!letters && from > pattern + 1) {
		from -= 2;
		while (from > pattern && from[-1] != '/')
			from--;
	}
	size_t o = 0;
	for (const char *s = from; s < end && o + 1 < len - 4; s++) {
		char c = *s;
		if (c == '*')
			c = 'N';
		else if (c == '/')
			c = '-';
		else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   c == '_' || c == '.' || c == '-'))
			continue;
		out[o++] = c;
	}
	if (!o)
		out[o++] = 'f';
	out[o] = '\0';
	if (serial > 1)
		snprintf(out + o, len - o, "-%d", serial);
}

static int cmp_group(const void *a, const void *b)
{
	const struct sgroup *x = a, *y = b;
	size_t lx = literals(x->pattern), ly = literals(y->pattern);
	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->pattern, y->pattern);
}

/* Files that matter for the rules: synced, renamed or opened O_(D)SYNC. */
static bool file_matters(const struct sfile *f)
{
	return f->syncs || f->renames || f->osync_opens;
}

static unsigned delay_for(double rate)
{
	double ms = rate > 0 ? BATCH_SYNCS * 1000.0 / rate : DELAY_MAX_MS;
	if (ms < DELAY_MIN_MS)
		ms = DELAY_MIN_MS;
	if (ms > DELAY_MAX_MS)
		ms = DELAY_MAX_MS;
	return (unsigned)ceil(ms);
}

static const char *write_kind(uint64_t writes, uint64_t pwrites, uint64_t append_opens)
{
	if (!writes)
		return "no writes";
	if (append_opens)
		return "append-only (O_APPEND)";
	if (!pwrites)
		return "sequential writes (write/writev)";
	return pwrites == writes ? "positional writes (pwrite: may overwrite)"
				 : "sequential and positional writes (may overwrite)";
}

static void decide(struct sgroup *g, double secs)
{
	char between[32], p50[32], p99[32];
	/* A file opened O_SYNC/O_DSYNC syncs with every write. */
	uint64_t syncs = g->syncs + (g->osync_opens ? g->writes : 0);
	double rate = secs > 0 ? (double)syncs / secs : 0;
	fmt_bytes(between, sizeof(between), syncs ? g->bytes / syncs : 0);
	fmt_ns(p50, sizeof(p50), (double)hist_percentile(&g->lat, 50));
	fmt_ns(p99, sizeof(p99), (double)hist_percentile(&g->lat, 99));
	const char *kind = write_kind(g->writes, g->pwrites, g->append_opens);
	/* Hot: its busiest file is synced often (a log synced per commit),
	 * not many files once each (data files at a checkpoint). */
	bool hot = g->busiest_rate >= HOT_RATE && g->busiest >= HOT_MIN_SYNCS;
	char times[96];
	if (hot) { /* the rate that matters: while the group was being synced */
		double span = (double)(g->last_sync_ns - g->first_sync_ns) / 1e9;
		rate = (double)syncs / (span > 1.0 ? span : 1.0);
	}
	snprintf(times, sizeof(times), rate >= 10 ? "%.0f times a second" : "%.1f times a second", rate);
	/* A published file gets a few syncs per version it renames into place;
	 * a log recycled by rename (PostgreSQL's WAL segments) thousands
	 * between renames: that group is judged as the log it is, and each
	 * rename still waits for its file's deferred syncs (the rename
	 * barrier). */
	bool published = g->renames && (!hot || g->syncs <= SYNCS_PER_PUBLISH * g->renames);
	if (published) {
		g->policy = SYNC_PASSTHROUGH;
		snprintf(g->reason, sizeof(g->reason),
			 "written, synced and renamed into place (%" PRIu64 " rename%s): its sync is what makes the "
			 "new name safe to publish, and the rename barrier would complete a deferred one anyway; "
			 "keep it durable",
			 g->renames, g->renames == 1 ? "" : "s");
	} else if (hot && g->concurrent * 10 >= g->syncs && g->syncs) {
		g->policy = SYNC_GROUP;
		snprintf(g->reason, sizeof(g->reason),
			 "%s synced %s (p50 %s, p99 %s, %s between syncs) by %u threads, "
			 "%" PRIu64 " syncs overlapping another: group commit answers overlapping callers with one "
			 "real sync and loses nothing; defer (max_delay_ms = %u) would return at once at the price "
			 "of that window",
			 kind, times, p50, p99, between, g->threads, g->concurrent, delay_for(rate));
	} else if (hot) {
		g->policy = SYNC_DEFER;
		g->delay_ms = delay_for(rate);
		char risk[32];
		fmt_bytes(risk, sizeof(risk), (uint64_t)((double)g->bytes / secs * g->delay_ms / 1000.0));
		snprintf(g->reason, sizeof(g->reason),
			 "%s%s synced %s (p50 %s, p99 %s, %s between syncs): a log synced per "
			 "commit. defer returns at once and syncs within max_delay_ms, about %d syncs' worth at "
			 "this rate; a crash can lose what was acknowledged in that window (about %s here). "
			 "group keeps every sync durable instead, but gains only when syncs overlap (%" PRIu64
			 " did)",
			 g->osync_opens ? "opened O_SYNC/O_DSYNC (each write a sync), " : "", kind, times, p50, p99,
			 between,
			 (int)ceil(rate * g->delay_ms / 1000.0), risk, g->concurrent);
	} else {
		g->policy = SYNC_PASSTHROUGH;
		snprintf(g->reason, sizeof(g->reason),
			 "synced rarely (%" PRIu64 " sync%s, %.2f a second, p50 %s): little to gain; keep it "
			 "durable",
			 syncs, syncs == 1 ? "" : "s", rate, p50);
	}
	if (g->renames && !published) {
		size_t n = strlen(g->reason);
		snprintf(g->reason + n, sizeof(g->reason) - n,
			 "; %" PRIu64 " rename%s of its files (a log recycled by rename): each waits for that file's "
			 "deferred syncs (the rename barrier)",
			 g->renames, g->renames == 1 ? "" : "s");
	}
}

/* A file's figures into its group's. */
static void group_add(struct sgroup *s, const struct sfile *f)
{
	s->nfiles++;
	s->opens += f->opens;
	s->osync_opens += f->osync_opens;
	s->append_opens += f->append_opens;
	s->writes += f->writes;
	s->pwrites += f->pwrites;
	s->bytes += f->bytes;
	s->syncs += f->syncs;
	s->renames += f->renames;
	s->concurrent += f->concurrent;
	s->threads = s->threads > f->nth ? s->threads : f->nth;
	uint64_t fs = f->syncs + (f->osync_opens ? f->writes : 0);
	if (f->first_sync_ns && (!s->first_sync_ns || f->first_sync_ns < s->first_sync_ns))
		s->first_sync_ns = f->first_sync_ns;
	if (f->last_sync_ns > s->last_sync_ns)
		s->last_sync_ns = f->last_sync_ns;
	if (fs > s->busiest) {
		/* The rate while it was being synced, not over a run that
		 * includes the server's start and stop: at least 1 s. */
		double span = (double)(f->last_sync_ns - f->first_sync_ns) / 1e9;
		s->busiest = fs;
		s->busiest_rate = (double)fs / (span > 1.0 ? span : 1.0);
	}
	if (f->lat)
		hist_merge(&s->lat, f->lat);
}

/* Files into groups by pattern (a file's group index in f->group). */
static struct sgroup *make_groups(struct profile *p, size_t *ngroups, double secs)
{
	struct sgroup *g = calloc(p->nfiles ? p->nfiles : 1, sizeof(*g));
	if (!g)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < p->nfiles; i++) {
		struct sfile *f = &p->files[i];
		if (!file_matters(f))
			continue;
		char pat[PATH_MAX + 64];
		suggest_pattern(f->path, pat, sizeof(pat));
		size_t k = 0;
		while (k < n && strcmp(g[k].pattern, pat))
			k++;
		if (k == n) {
			g[n].pattern = strdup(pat);
			g[n].first = i;
			hist_init(&g[n].lat);
			if (!g[n++].pattern)
				return NULL;
		}
		f->pattern = g[k].pattern;
		group_add(&g[k], f);
	}
	qsort(g, n, sizeof(*g), cmp_group);
	for (size_t k = 0; k < n; k++) {
		decide(&g[k], secs);
		int serial = 1;
		for (;;) {
			rule_name(g[k].pattern, g[k].name, sizeof(g[k].name), serial);
			size_t j = 0;
			while (j < k && strcmp(g[j].name, g[k].name))
				j++;
			if (j == k)
				break;
			serial++;
		}
		for (size_t i = 0; i < p->nfiles; i++)
			if (p->files[i].pattern == g[k].pattern)
				p->files[i].group = k;
	}
	*ngroups = n;
	return g;
}

/* ---- output ---------------------------------------------------------------- */

bool suggest_ini_safe(const char *pattern)
{
	size_t n = strlen(pattern);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)pattern[i] < 0x20 || pattern[i] == 0x7f)
			return false;
	return n && n <= GLOB_MAX && pattern[n - 1] != ' ';
}

void suggest_comment(FILE *out, const char *text)
{
	const char *s = text;
	while (*s) {
		size_t n = strlen(s);
		if (n > 90) {
			n = 90;
			while (n > 40 && s[n] != ' ')
				n--;
		}
		fputs("; ", out);
		for (size_t i = 0; i < n; i++) /* a newline would end the comment and start a line of rules */
			fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], out);
		fputc('\n', out);
		s += n;
		while (*s == ' ')
			s++;
	}
}

void suggest_write_rule(FILE *out, const char *name, const char *pattern, int policy, unsigned delay_ms,
			const char *reason)
{
	fprintf(out, "\n");
	suggest_comment(out, reason);
	fprintf(out, "[rule %s]\npath = %s\nsync = %s\n", name, pattern, sync_policy_name((enum sync_policy)policy));
	if (policy == SYNC_DEFER)
		fprintf(out, "max_delay_ms = %u\n", delay_ms);
}

static void comment(FILE *out, const char *text)
{
	suggest_comment(out, text);
}

/* A group its rule can name: a policy, a glob the shim takes, and one the
 * ini can hold exactly. */
static bool rule_fits(const struct sgroup *g)
{
	return g->policy >= 0 && strlen(g->pattern) <= GLOB_MAX && g->pattern[0] == '/' && suggest_ini_safe(g->pattern);
}

/* A group left out only because no ini value can name it exactly. */
static bool rule_unwritable(const struct sgroup *g)
{
	return g->policy >= 0 && !suggest_ini_safe(g->pattern);
}

/* A rule is written for a relaxed group, a file renamed into place (to
 * say it stays durable), and a rarely synced group only when a broader
 * relaxed rule would otherwise catch its files (needed); the rest are
 * passthrough anyway, as the default. */
static bool rule_written(const struct sgroup *g)
{
	return rule_fits(g) && (g->policy != SYNC_PASSTHROUGH || g->renames || g->needed);
}

static void write_ini(FILE *out, const struct profile *p, const struct sgroup *g, size_t n, double secs)
{
	char buf[512];
	fprintf(out, "; syncshim rules proposed by synclat suggest from %zu log%s of a %.1f s run of\n", p->nlogs,
		p->nlogs == 1 ? "" : "s", secs);
	snprintf(buf, sizeof(buf), "%s", p->cmdline ? p->cmdline : "?");
	comment(out, buf);
	fprintf(out, "; Read the reasons before you use them: a defer rule trades a bounded loss window\n"
		     "; for latency. Check with `syncshim check FILE PATH...`; measure with\n"
		     "; `syncshim ab passthrough FILE ... -- SERVER`.\n\n");
	fprintf(out, "[shim]\n; Every file no rule names keeps its syncs.\npolicy = passthrough\n");
	int rules = 0;
	size_t rare = 0, unwritable = 0;
	for (size_t k = 0; k < n; k++) {
		if (!rule_written(&g[k])) {
			rare += rule_fits(&g[k]);
			unwritable += rule_unwritable(&g[k]);
			continue;
		}
		if (rules == MAX_RULES) {
			fprintf(out, "\n; (more groups left out: the shim takes at most 64 rules, and the rest are "
				     "passthrough, as the default)\n");
			break;
		}
		if (g[k].policy == SYNC_PASSTHROUGH && rules >= MAX_RULES - 8)
			continue;
		snprintf(buf, sizeof(buf), "%zu file%s: %s", g[k].nfiles, g[k].nfiles == 1 ? "" : "s", g[k].reason);
		suggest_write_rule(out, g[k].name, g[k].pattern, g[k].policy, g[k].delay_ms, buf);
		rules++;
	}
	if (unwritable)
		fprintf(out, "\n; %zu group%s of files whose names hold a control character (or end in a space) "
			     "left out:\n; no ini value names them exactly, so they keep the default, passthrough "
			     "(synclat suggest\n; lists them).\n", unwritable, unwritable == 1 ? "" : "s");
	if (rare)
		fprintf(out, "\n; %zu more group%s of files synced rarely keep the default, passthrough\n"
			     "; (synclat suggest lists them).\n", rare, rare == 1 ? "" : "s");
	if (p->dir_syncs)
		fprintf(out, "\n; %" PRIu64 " directory sync%s (%.2f a second): directories always pass through "
			     "the shim,\n; so no rule is needed (or possible) for them.\n",
			p->dir_syncs, p->dir_syncs == 1 ? "" : "s", secs > 0 ? (double)p->dir_syncs / secs : 0);
}

static int cmp_files(const void *a, const void *b)
{
	const struct sfile *x = *(const struct sfile *const *)a, *y = *(const struct sfile *const *)b;
	uint64_t sx = x->syncs + (x->osync_opens ? x->writes : 0), sy = y->syncs + (y->osync_opens ? y->writes : 0);
	if (sx != sy)
		return sx > sy ? -1 : 1;
	return strcmp(x->path, y->path);
}

static void thread_list(char *buf, size_t len, const struct sfile *f)
{
	size_t o = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < f->nth && o + 24 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%u/%u", i ? " " : "", f->th[i].pid, f->th[i].tid);
	if (f->more_threads && o + 5 < len)
		snprintf(buf + o, len - o, " ...");
}

/* One row of the report's file table. */
static void print_file(FILE *out, const struct sfile *f, double secs)
{
	uint64_t syncs = f->syncs + (f->osync_opens ? f->writes : 0);
	char p50[32] = "-", p99[32] = "-", per[32], th[256];
	if (f->lat) {
		fmt_ns(p50, sizeof(p50), (double)hist_percentile(f->lat, 50));
		fmt_ns(p99, sizeof(p99), (double)hist_percentile(f->lat, 99));
	}
	fmt_bytes(per, sizeof(per), syncs ? f->bytes / syncs : 0);
	fprintf(out, "%9" PRIu64 " %8.1f %9s %9s %10s  ", syncs, secs > 0 ? (double)syncs / secs : 0, p50, p99, per);
	put_clean(out, f->path);
	fprintf(out, "; %s", write_kind(f->writes, f->pwrites, f->append_opens));
	if (f->osync_opens)
		fprintf(out, "; %" PRIu64 " O_SYNC/O_DSYNC open%s", f->osync_opens, f->osync_opens == 1 ? "" : "s");
	if (f->trunc_opens)
		fprintf(out, "; truncated at open");
	if (f->renames)
		fprintf(out, "; renamed into place (%" PRIu64 "x)", f->renames);
	if (f->nth) {
		thread_list(th, sizeof(th), f);
		fprintf(out, "; synced by pid/tid %s", th);
	}
	if (f->concurrent)
		fprintf(out, "; %" PRIu64 " overlapping syncs", f->concurrent);
	fprintf(out, "\n");
}

static void print_report(FILE *out, const struct profile *p, struct sgroup *g, size_t n, double secs)
{
	fprintf(out, "profile of %zu log%s, %.1f s", p->nlogs, p->nlogs == 1 ? "" : "s", secs);
	if (p->cmdline) {
		fprintf(out, ": ");
		put_clean(out, p->cmdline);
	}
	fprintf(out, "\n");
	if (p->drops)
		fprintf(out, "warning: %" PRIu64 " call records were dropped (ring full): the figures are "
			     "incomplete; raise ring_records\n", p->drops);
	size_t nm = 0;
	const struct sfile **list = malloc((p->nfiles ? p->nfiles : 1) * sizeof(*list));
	if (!list)
		return;
	for (size_t i = 0; i < p->nfiles; i++)
		if (file_matters(&p->files[i]))
			list[nm++] = &p->files[i];
	qsort(list, nm, sizeof(*list), cmp_files);
	fprintf(out, "\nfiles that sync, rename or open O_SYNC/O_DSYNC: %zu of %zu\n", nm, p->nfiles);
	fprintf(out, "%9s %8s %9s %9s %10s  %-s\n", "syncs", "per s", "p50", "p99", "bytes/sync", "file; writes; notes");
	for (size_t i = 0; i < nm && i < MAX_LISTED; i++)
		print_file(out, list[i], secs);
	if (nm > MAX_LISTED)
		fprintf(out, "  ... and %zu more\n", nm - MAX_LISTED);
	if (p->dir_syncs) {
		fprintf(out, "directory syncs: %" PRIu64 " (%.2f a second) by %u thread%s\n", p->dir_syncs,
			secs > 0 ? (double)p->dir_syncs / secs : 0, p->dir_nth, p->dir_nth == 1 ? "" : "s");
	}
	fprintf(out, "\ngroups (the proposed rules, first match wins):\n");
	for (size_t k = 0; k < n; k++) {
		fprintf(out, "  %-12s ", sync_policy_name((enum sync_policy)g[k].policy));
		put_clean(out, g[k].pattern);
		fprintf(out, " (%zu file%s", g[k].nfiles, g[k].nfiles == 1 ? "" : "s");
		if (g[k].policy == SYNC_DEFER)
			fprintf(out, ", max_delay_ms = %u", g[k].delay_ms);
		fprintf(out, ")%s\n", rule_fits(&g[k]) ? "" : " - no rule: the glob is too long for an ini line");
		fprintf(out, "      %s\n", g[k].reason);
	}
	free(list);
}

/* Rarely synced groups whose files a relaxed rule of the proposal would
 * catch: they need their own passthrough rule. Their count. */
static size_t mark_shadowed(const char *text, const struct profile *p, struct sgroup *g)
{
	static struct policy pol;
	char why[POLICY_ERR_MAX];
	size_t n = 0;
	if (policy_load_string(text, "proposal", &pol, why, sizeof(why)) < 0)
		return 0; /* verify() says so */
	for (size_t i = 0; i < p->nfiles; i++) {
		const struct sfile *f = &p->files[i];
		if (!f->pattern || g[f->group].needed || rule_written(&g[f->group]) || !rule_fits(&g[f->group]))
			continue;
		if (policy_match(&pol, f->path)->sync != SYNC_PASSTHROUGH) {
			g[f->group].needed = true;
			n++;
		}
	}
	return n;
}

/* The ini read back by the shim's parser, and each profiled file matched:
 * 0, or -1 after saying what is wrong. */
static int verify(const char *text, const struct profile *p, const struct sgroup *g, FILE *out, FILE *err)
{
	static struct policy pol;
	char why[POLICY_ERR_MAX];
	if (policy_load_string(text, "proposal", &pol, why, sizeof(why)) < 0) {
		cli_err(err, "the proposed ini does not load (a bug): %s", why);
		return -1;
	}
	size_t off = 0;
	for (size_t i = 0; i < p->nfiles; i++) {
		const struct sfile *f = &p->files[i];
		if (!f->pattern || !rule_fits(&g[f->group]))
			continue;
		/* A file of an unwritten group must get the default's passthrough. */
		const struct rule *r = policy_match(&pol, f->path);
		if ((int)r->sync != g[f->group].policy && off++ < 5) {
			fprintf(out, "note: ");
			put_clean(out, f->path);
			fprintf(out, " falls under rule %s (%s), not its group's %s\n", r->name[0] ? r->name : "[shim]",
				sync_policy_name(r->sync), sync_policy_name((enum sync_policy)g[f->group].policy));
		}
	}
	return 0;
}

static int usage(FILE *to, int rc)
{
	fprintf(to, "usage: synclat suggest [-o INI] [--salvage] LOG...\n"
		    "  LOG...     calls-mode logs of one run under passthrough (log_mode = calls,\n"
		    "             as the profile subcommand of syncshim makes them)\n"
		    "  -o INI     write the proposed rules there (default: after the report)\n"
		    "  --salvage  read the valid part of a damaged log\n");
	return rc;
}

static void profile_free(struct profile *p, struct sgroup *g, size_t ng)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		free(p->files[i].path);
		free(p->files[i].lat);
	}
	free(p->files);
	free(p->slots);
	for (size_t k = 0; g && k < ng; k++)
		free(g[k].pattern);
	free(g);
}

/* The logs read and checked, added to the profile: 0, or EXIT_INPUT. */
static int read_logs(struct lr_log *logs, char **paths, size_t n, bool salvage, struct profile *p, FILE *err)
{
	for (size_t i = 0; i < n; i++) {
		struct lr_error e;
		if (lr_read_file(paths[i], &logs[i], &e) < 0 && !(salvage && lr_salvage(&logs[i], &e))) {
			cli_err(err, "%s", e.msg);
			return EXIT_INPUT;
		}
		if (logs[i].log_mode != LOG_CALLS) {
			cli_err(err, "%s has no call records (log_mode = %s); profile with log_mode = "
				     "calls (syncshim profile does)", logs[i].path, report_mode_name(logs[i].log_mode));
			return EXIT_INPUT;
		}
		if (logs[i].minor < 2)
			cli_err(err, "%s is a log of format 1.%u: it does not say which files were "
				     "opened O_SYNC/O_DSYNC or renamed; profile with this version's shim",
				logs[i].path, logs[i].minor);
		if (add_log(p, &logs[i], err) < 0)
			return EXIT_INPUT;
	}
	return 0;
}

/* The proposal as text (NULL when out of memory): written once, and
 * again when rarely synced groups turn out to need their own rule. */
static char *proposal(struct profile *p, struct sgroup *g, size_t ng, double secs)
{
	for (int pass = 0; pass < 2; pass++) {
		char *text = NULL;
		size_t tlen = 0;
		FILE *mem = open_memstream(&text, &tlen);
		if (!mem)
			return NULL;
		write_ini(mem, p, g, ng, secs);
		if (fclose(mem) != 0) {
			free(text);
			return NULL;
		}
		if (pass == 1 || mark_shadowed(text, p, g) == 0)
			return text;
		free(text);
	}
	return NULL;
}

static int write_text(const char *path, const char *text, FILE *out, FILE *err)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok) {
		cli_err(err, "cannot write %s: %s", path, strerror(errno));
		return EXIT_INPUT;
	}
	fprintf(out, "\nproposed rules written to %s\n", path);
	return 0;
}

int cmd_suggest(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "salvage", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *ini = NULL;
	bool salvage = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': ini = optarg; break;
		case 'S': salvage = true; break;
		case 'h': return usage(out, 0);
		default: return cli_bad_option(argc, argv, err);
		}
	}
	if (optind >= argc) {
		cli_err(err, "no log given; %s -h says more", cli_name());
		return EXIT_USAGE;
	}
	size_t nlogs = (size_t)(argc - optind), ng = 0;
	struct lr_log *logs = calloc(nlogs, sizeof(*logs));
	struct profile p = { 0 };
	struct sgroup *g = NULL;
	char *text = NULL;
	int rc = logs ? read_logs(logs, argv + optind, nlogs, salvage, &p, err) : EXIT_INPUT;
	double secs = p.end_wall > p.start_wall ? (double)(p.end_wall - p.start_wall) / 1e9 : 0;
	if (!rc && (!(g = make_groups(&p, &ng, secs)) || !(text = proposal(&p, g, ng, secs)))) {
		cli_err(err, "out of memory");
		rc = EXIT_INPUT;
	}
	if (!rc) {
		print_report(out, &p, g, ng, secs);
		if (verify(text, &p, g, out, err) < 0)
			rc = EXIT_INPUT;
		else if (ini)
			rc = write_text(ini, text, out, err);
		else
			fprintf(out, "\n%s", text);
	}
	free(text);
	for (size_t i = 0; logs && i < nlogs; i++)
		lr_free(&logs[i]);
	free(logs);
	profile_free(&p, g, ng);
	return rc;
}
