/*
 * logread.c - strict reader of syncshim latency logs, and the merge of
 * several logs (a forked family) into one run.
 *
 * Reading is two-phase per block: a payload is fully checked from a cursor
 * over the file's bytes before anything is added to the log, so a log that
 * fails at block N holds exactly blocks 0..N-1 (what --salvage reports).
 * Strings are copied out only once their block has been accepted.
 */
#include "logread.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"

/* ---- allocation: a tool may simply stop when memory runs out ---- */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fputs("synclat: out of memory\n", stderr);
		exit(2);
	}
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fputs("synclat: out of memory\n", stderr);
		exit(2);
	}
	return p;
}

/* Makes room for want elements; capacity doubles so pushes are cheap. */
static void grow(void **arr, size_t *cap, size_t want, size_t size)
{
	if (want <= *cap)
		return;
	size_t n = *cap ? *cap : 8;
	while (n < want)
		n *= 2;
	*arr = xrealloc(*arr, n * size);
	*cap = n;
}

#define PUSH(arr, n, cap) \
	(grow((void **)&(arr), &(cap), (n) + 1, sizeof(*(arr))), &(arr)[(n)++])

/* ---- parse state ---- */

struct slice {
	const uint8_t *p;
	size_t n;
};

struct histkey {
	uint8_t op;
	uint16_t rule;
	uint32_t file_id;
};

struct lr_parse {
	const char *name;
	struct lr_error *err;
	uint64_t base;                /* file offset of the current payload */
	size_t block;                 /* index of the current block */
	unsigned type;
	uint32_t next_seq;
	bool newer;                   /* file minor > ours: skip what we don't know */
	unsigned minor;               /* the file's */
	bool have_second;
	uint32_t last_second;
	bool have_risk;
	uint32_t risk_second;
	uint32_t *risk_mark;          /* by file index: 1 + the last second it had a RISK entry */
	size_t cap_risk_mark;

	/* file id -> index into log->files, open addressing */
	uint32_t *ids;
	size_t *idx;
	size_t tabcap, nids;

	/* the HIST set being read */
	bool in_set, any_set;
	uint32_t set_snap, last_snap;
	uint16_t set_next, set_nparts;
	uint64_t set_time;
	struct histkey prev_key;
	struct lr_hist *cur;
	size_t ncur, capcur;
	struct hist scratch;

	size_t cap_files, cap_recs, cap_secs, cap_ivents, cap_hists, cap_events, cap_risks;
};

/* A cursor over one payload. Reads past the end set bad and return 0, so
 * a parser checks once after a group of reads. */
struct cur {
	const uint8_t *start, *p, *end;
	bool bad;
};

static bool avail(struct cur *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	return true;
}

static uint64_t rd(struct cur *c, int bytes)
{
	if (!avail(c, (size_t)bytes))
		return 0;
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | c->p[i];
	c->p += bytes;
	return v;
}

static struct slice rd_str(struct cur *c, int lenbytes)
{
	size_t n = (size_t)rd(c, lenbytes);
	struct slice s = { c->p, 0 };
	if (avail(c, n)) {
		s.n = n;
		c->p += n;
	}
	return s;
}

static char *dup_slice(struct slice s)
{
	char *d = xrealloc(NULL, s.n + 1);
	if (s.n)
		memcpy(d, s.p, s.n);
	d[s.n] = '\0';
	return d;
}

static int fail_at(struct lr_parse *ps, enum lr_status st, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail_at(struct lr_parse *ps, enum lr_status st, uint64_t off, const char *fmt, ...)
{
	static const char *const what[] = {
		[LR_TRUNCATED] = "truncated", [LR_CORRUPT] = "corrupt",
		[LR_FOREIGN] = "not a syncshim log", [LR_IOERR] = "unreadable",
	};
	char why[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);

	struct lr_error *e = ps->err;
	e->status = st;
	e->offset = off;
	if (st == LR_IOERR && off == 0 && !ps->type)  /* could not even start */
		snprintf(e->msg, sizeof(e->msg), "%s: %s: %s", ps->name, what[st], why);
	else if (st == LR_FOREIGN)
		snprintf(e->msg, sizeof(e->msg), "%s: %s (%s at byte %llu)", ps->name,
			 what[st], why, (unsigned long long)off);
	else if (ps->type)
		snprintf(e->msg, sizeof(e->msg), "%s: %s at byte %llu (block %zu, %s): %s",
			 ps->name, what[st], (unsigned long long)off, ps->block,
			 logfmt_block_name(ps->type), why);
	else
		snprintf(e->msg, sizeof(e->msg), "%s: %s at byte %llu: %s", ps->name,
			 what[st], (unsigned long long)off, why);
	return -1;
}

/* A problem at byte at of the current payload. */
static int bad(struct lr_parse *ps, const struct cur *c, const uint8_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int bad(struct lr_parse *ps, const struct cur *c, const uint8_t *at, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return fail_at(ps, LR_CORRUPT, ps->base + (uint64_t)(at - c->start), "%s", why);
}

static int cut_short(struct lr_parse *ps, const struct cur *c)
{
	return fail_at(ps, LR_CORRUPT, ps->base + (uint64_t)(c->end - c->start),
		       "payload ends inside a field");
}

/* Every parser ends here: the payload must have been used up exactly,
 * unless a newer minor version appended fields we do not know. */
static int check_end(struct lr_parse *ps, const struct cur *c)
{
	if (c->bad)
		return cut_short(ps, c);
	if (c->p != c->end && !ps->newer)
		return bad(ps, c, c->p, "%zu stray bytes at the end of the payload",
			   (size_t)(c->end - c->p));
	return 0;
}

static int check_str(struct lr_parse *ps, const struct cur *c, struct slice s, const char *what)
{
	if (c->bad)
		return cut_short(ps, c);
	const uint8_t *nul = s.n ? memchr(s.p, '\0', s.n) : NULL;
	if (nul)
		return bad(ps, c, nul, "NUL byte inside the %s", what);
	return 0;
}

static void note_time(struct lr_log *log, uint64_t mono)
{
	if (mono > log->last_mono_ns)
		log->last_mono_ns = mono;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* ---- file ids ---- */

static size_t slot_of(const struct lr_parse *ps, uint32_t id)
{
	size_t mask = ps->tabcap - 1;
	size_t i = (id * 2654435761u) & mask;
	while (ps->ids[i] && ps->ids[i] != id)
		i = (i + 1) & mask;
	return i;
}

static long find_file(const struct lr_parse *ps, uint32_t id)
{
	if (!ps || !ps->tabcap || !id)
		return -1;
	size_t i = slot_of(ps, id);
	return ps->ids[i] ? (long)ps->idx[i] : -1;
}

static void add_file_id(struct lr_parse *ps, uint32_t id, size_t index)
{
	if (2 * (ps->nids + 1) > ps->tabcap) {
		uint32_t *oids = ps->ids;
		size_t *oidx = ps->idx, ocap = ps->tabcap;
		ps->tabcap = ocap ? ocap * 2 : 64;
		ps->ids = xcalloc(ps->tabcap, sizeof(*ps->ids));
		ps->idx = xcalloc(ps->tabcap, sizeof(*ps->idx));
		for (size_t i = 0; i < ocap; i++) {
			if (!oids[i])
				continue;
			size_t s = slot_of(ps, oids[i]);
			ps->ids[s] = oids[i];
			ps->idx[s] = oidx[i];
		}
		free(oids);
		free(oidx);
	}
	size_t s = slot_of(ps, id);
	ps->ids[s] = id;
	ps->idx[s] = index;
	ps->nids++;
}

long lr_file_index(const struct lr_log *log, uint32_t id)
{
	return find_file(log->ps, id);
}

/* ---- payloads ---- */

struct rule_in {
	uint8_t sync;
	struct slice name, glob;
};

/* The rule table of HEADER and POLICY; NULL with *rc set on error. */
static struct rule_in *parse_rules(struct lr_parse *ps, struct cur *c, size_t *n, int *rc)
{
	const uint8_t *at = c->p;
	size_t cnt = (size_t)rd(c, 2);
	*rc = 0;
	if (c->bad) {
		*rc = cut_short(ps, c);
		return NULL;
	}
	if (cnt == 0) {
		*rc = bad(ps, c, at, "empty rule table (the default rule is missing)");
		return NULL;
	}
	if (cnt * 6 > (size_t)(c->end - c->p)) {  /* 6: smallest rule */
		*rc = bad(ps, c, at, "%zu rules cannot fit in the payload", cnt);
		return NULL;
	}
	struct rule_in *r = xcalloc(cnt, sizeof(*r));
	for (size_t i = 0; i < cnt && !*rc; i++) {
		const uint8_t *rp = c->p;
		r[i].sync = (uint8_t)rd(c, 1);
		unsigned res = (unsigned)rd(c, 1);
		r[i].name = rd_str(c, 2);
		r[i].glob = rd_str(c, 2);
		if (c->bad)
			*rc = cut_short(ps, c);
		else if (r[i].sync >= SYNC_POLICY_COUNT && !ps->newer)
			*rc = bad(ps, c, rp, "rule %zu has unknown sync policy %u", i, r[i].sync);
		else if (res)
			*rc = bad(ps, c, rp + 1, "reserved byte of rule %zu not zero", i);
		else if (!(*rc = check_str(ps, c, r[i].name, "rule name")))
			*rc = check_str(ps, c, r[i].glob, "rule glob");
	}
	if (*rc) {
		free(r);
		return NULL;
	}
	*n = cnt;
	return r;
}

static void free_rules(struct lr_log *log)
{
	for (size_t i = 0; i < log->nrules; i++) {
		free(log->rules[i].name);
		free(log->rules[i].glob);
	}
	free(log->rules);
	log->rules = NULL;
	log->nrules = 0;
	free(log->policy_ini);
	log->policy_ini = NULL;
}

static void commit_rules(struct lr_log *log, const struct rule_in *in, size_t n,
			 struct slice ini)
{
	free_rules(log);
	log->rules = xcalloc(n, sizeof(*log->rules));
	for (size_t i = 0; i < n; i++) {
		log->rules[i].sync = in[i].sync;
		log->rules[i].name = dup_slice(in[i].name);
		log->rules[i].glob = dup_slice(in[i].glob);
	}
	log->nrules = n;
	log->policy_ini = dup_slice(ini);
}

static int parse_header(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	unsigned major = (unsigned)rd(c, 2), minor = (unsigned)rd(c, 2);
	if (c->bad)
		return cut_short(ps, c);
	if (major != LOGFMT_MAJOR)
		return bad(ps, c, at, "unsupported format version %u.%u (this reader reads %u.x)",
			   major, minor, LOGFMT_MAJOR);
	ps->newer = minor > LOGFMT_MINOR;
	ps->minor = minor;

	uint32_t pid = (uint32_t)rd(c, 4), ppid = (uint32_t)rd(c, 4);
	const uint8_t *at_mode = c->p;
	unsigned mode = (unsigned)rd(c, 1), res = (unsigned)rd(c, 3);
	uint64_t wall = rd(c, 8), mono = rd(c, 8);
	struct slice host = rd_str(c, 2), kernel = rd_str(c, 2), cmd = rd_str(c, 4);
	int rc;
	if (c->bad)
		return cut_short(ps, c);
	if (mode >= LOG_MODE_COUNT && !ps->newer)
		return bad(ps, c, at_mode, "unknown log mode %u", mode);
	if (res)
		return bad(ps, c, at_mode + 1, "reserved header bytes not zero");
	if ((rc = check_str(ps, c, host, "hostname")) || (rc = check_str(ps, c, kernel, "kernel")) ||
	    (rc = check_str(ps, c, cmd, "command line")))
		return rc;

	size_t nrules = 0;
	struct rule_in *rules = parse_rules(ps, c, &nrules, &rc);
	if (!rules)
		return rc;
	struct slice ini = rd_str(c, 4);
	if ((rc = check_str(ps, c, ini, "policy text")) || (rc = check_end(ps, c))) {
		free(rules);
		return rc;
	}

	log->major = (uint16_t)major;
	log->minor = (uint16_t)minor;
	log->pid = pid;
	log->ppid = ppid;
	log->log_mode = (uint8_t)mode;
	log->start_wall_ns = wall;
	log->start_mono_ns = mono;
	log->hostname = dup_slice(host);
	log->kernel = dup_slice(kernel);
	log->cmdline = dup_slice(cmd);
	commit_rules(log, rules, nrules, ini);
	free(rules);
	if (ps->newer)
		log->warnings |= LRW_NEWER;
	note_time(log, mono);
	return 0;
}

static int parse_policy(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	uint64_t t = rd(c, 8);
	size_t nrules = 0;
	int rc;
	if (c->bad)
		return cut_short(ps, c);
	struct rule_in *rules = parse_rules(ps, c, &nrules, &rc);
	if (!rules)
		return rc;
	struct slice ini = rd_str(c, 4);
	if ((rc = check_str(ps, c, ini, "policy text")) || (rc = check_end(ps, c))) {
		free(rules);
		return rc;
	}
	commit_rules(log, rules, nrules, ini);
	free(rules);
	log->npolicies++;
	note_time(log, t);
	return 0;
}

/* The shim could not resolve a path: name the file by dev and inode so
 * it stays apart from other unnamed files when runs are merged by path. */
static char *unnamed(uint64_t dev, uint64_t ino)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "(no path: dev 0x%llx ino %llu)", (unsigned long long)dev,
		 (unsigned long long)ino);
	return dup_slice((struct slice){ (const uint8_t *)buf, strlen(buf) });
}

static int parse_file(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	uint32_t id = (uint32_t)rd(c, 4);
	uint16_t rule = (uint16_t)rd(c, 2), res = (uint16_t)rd(c, 2);
	uint64_t dev = rd(c, 8), ino = rd(c, 8);
	struct slice rname = rd_str(c, 2), fstype = rd_str(c, 2), path = rd_str(c, 2);
	int rc;
	if (c->bad)
		return cut_short(ps, c);
	if (id == 0)
		return bad(ps, c, at, "file id 0 is reserved");
	if (find_file(ps, id) >= 0)
		return bad(ps, c, at, "file id %u defined twice", id);
	if (res)
		return bad(ps, c, at + 6, "reserved bytes not zero");
	if ((rc = check_str(ps, c, rname, "rule name")) || (rc = check_str(ps, c, fstype, "fs type")) ||
	    (rc = check_str(ps, c, path, "path")))
		return rc;
	if ((rc = check_end(ps, c)))
		return rc;

	struct lr_file *f = PUSH(log->files, log->nfiles, ps->cap_files);
	*f = (struct lr_file){ .id = id, .rule = rule, .dev = dev, .ino = ino,
			       .rule_name = dup_slice(rname), .fstype = dup_slice(fstype),
			       .path = path.n ? dup_slice(path) : unnamed(dev, ino) };
	add_file_id(ps, id, log->nfiles - 1);
	return 0;
}

static int check_record(struct lr_parse *ps, const struct cur *c, const uint8_t *rp,
			uint32_t i, const struct logfmt_record *r)
{
	if (r->op >= LOGOP_COUNT && !ps->newer)
		return bad(ps, c, rp + 36, "record %u has unknown op %u", i, r->op);
	unsigned known = ps->minor >= 2 ? LOGREC_FLAGS_KNOWN : LOGREC_FLAGS_KNOWN_1_1;
	if ((r->flags & ~known) && !ps->newer)
		return bad(ps, c, rp + 37, "record %u has unknown flags 0x%x", i, r->flags);
	if (r->file_id && find_file(ps, r->file_id) < 0)
		return bad(ps, c, rp + 28, "record %u references unknown file id %u", i, r->file_id);
	return 0;
}

static int parse_records(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	size_t rsz = (size_t)rd(c, 2);
	unsigned res = (unsigned)rd(c, 2);
	uint32_t n = (uint32_t)rd(c, 4);
	if (c->bad)
		return cut_short(ps, c);
	if (res)
		return bad(ps, c, at + 2, "reserved bytes not zero");
	if (rsz < LOGFMT_RECORD_SIZE || (rsz != LOGFMT_RECORD_SIZE && !ps->newer))
		return bad(ps, c, at, "record size %zu, expected %d", rsz, LOGFMT_RECORD_SIZE);
	size_t left = (size_t)(c->end - c->p);
	if ((uint64_t)n * rsz != left)
		return bad(ps, c, at + 4, "%u records of %zu bytes do not fill the %zu bytes left",
			   n, rsz, left);

	struct logfmt_record r;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *rp = c->p + (size_t)i * rsz;
		logfmt_record_get(&r, rp);
		int rc = check_record(ps, c, rp, i, &r);
		if (rc)
			return rc;
	}
	grow((void **)&log->recs, &ps->cap_recs, log->nrecs + n, sizeof(*log->recs));
	for (uint32_t i = 0; i < n; i++) {
		logfmt_record_get(&r, c->p + (size_t)i * rsz);
		if (r.op >= LOGOP_COUNT)
			continue;  /* a newer writer's op */
		log->recs[log->nrecs++] = r;
		note_time(log, sat_add(r.start_ns, r.dur_ns));
	}
	c->p = c->end;
	return 0;
}

static int parse_interval(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	uint32_t second = (uint32_t)rd(c, 4);
	size_t n = (size_t)rd(c, 2), esz = (size_t)rd(c, 2);
	if (c->bad)
		return cut_short(ps, c);
	if (esz < LOGFMT_IVENT_SIZE || (esz != LOGFMT_IVENT_SIZE && !ps->newer))
		return bad(ps, c, at + 6, "op entry size %zu, expected %d", esz, LOGFMT_IVENT_SIZE);
	size_t left = (size_t)(c->end - c->p);
	if (n * esz != left)
		return bad(ps, c, at + 4, "%zu entries of %zu bytes do not fill the %zu bytes left",
			   n, esz, left);
	if (ps->have_second && second <= ps->last_second)
		return bad(ps, c, at, "second %u does not follow the previous INTERVAL's %u",
			   second, ps->last_second);

	int prev = -1;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *ep = c->p + i * esz;
		if (ep[0] >= LOGOP_COUNT && !ps->newer)
			return bad(ps, c, ep, "entry %zu has unknown op %u", i, ep[0]);
		if ((int)ep[0] <= prev)
			return bad(ps, c, ep, "entry %zu: ops not in increasing order", i);
		for (int k = 1; k < 8; k++)
			if (ep[k])
				return bad(ps, c, ep + k, "entry %zu: reserved bytes not zero", i);
		prev = ep[0];
	}

	struct lr_second *s = PUSH(log->secs, log->nsecs, ps->cap_secs);
	s->second = second;
	s->first = log->nivents;
	s->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct cur e = { c->p + i * esz, c->p + i * esz, c->end, false };
		uint8_t op = (uint8_t)rd(&e, 1);
		e.p += 7;
		if (op >= LOGOP_COUNT)
			continue;
		struct lr_ivent *iv = PUSH(log->ivents, log->nivents, ps->cap_ivents);
		iv->op = op;
		iv->t.calls = rd(&e, 8);
		iv->t.bytes = rd(&e, 8);
		iv->t.sum_ns = rd(&e, 8);
		iv->t.max_ns = rd(&e, 8);
		s->n++;
	}
	ps->have_second = true;
	ps->last_second = second;
	note_time(log, sat_add(log->start_mono_ns, ((uint64_t)second + 1) * 1000000000u));
	c->p = c->end;
	return 0;
}

static bool key_less(struct histkey a, struct histkey b)
{
	if (a.op != b.op)
		return a.op < b.op;
	if (a.rule != b.rule)
		return a.rule < b.rule;
	return a.file_id < b.file_id;
}

/* Sets come as parts 0..nparts-1 in (op, rule, file) order; the last
 * complete one replaces the previous. */
static int check_set(struct lr_parse *ps, const struct cur *c, const uint8_t *at,
		     uint32_t snap, unsigned part, unsigned nparts, struct histkey key)
{
	if (part == 0) {
		if (ps->in_set)
			return bad(ps, c, at, "HIST set %u begins before set %u ended (part %u of %u missing)",
				   snap, ps->set_snap, ps->set_next, ps->set_nparts);
		if (ps->any_set && snap <= ps->last_snap)
			return bad(ps, c, at, "HIST set number %u does not follow %u", snap, ps->last_snap);
		return 0;
	}
	if (!ps->in_set || snap != ps->set_snap || nparts != ps->set_nparts || part != ps->set_next)
		return bad(ps, c, at + 4, "HIST part %u of %u of set %u out of order", part, nparts, snap);
	if (!key_less(ps->prev_key, key))
		return bad(ps, c, at + 16, "HIST set %u: histograms not in (op, rule, file) order", snap);
	return 0;
}

/* The encodings are copies: the block they came from is not kept. */
static void free_hists(struct lr_hist *h, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free(h[i].enc);
	*n = 0;
}

static void add_to_set(struct lr_log *log, struct lr_parse *ps, uint32_t snap, unsigned part,
		       unsigned nparts, uint64_t t, struct histkey key, struct slice enc)
{
	if (part == 0) {
		ps->in_set = true;
		ps->set_snap = snap;
		ps->set_nparts = (uint16_t)nparts;
		ps->set_next = 0;
		ps->set_time = t;
		free_hists(ps->cur, &ps->ncur);
	}
	if (key.op < LOGOP_COUNT) {
		struct lr_hist *h = PUSH(ps->cur, ps->ncur, ps->capcur);
		*h = (struct lr_hist){ .op = key.op, .rule = key.rule, .file_id = key.file_id,
				       .count = hist_count(&ps->scratch), .max = hist_max(&ps->scratch),
				       .enc = xrealloc(NULL, enc.n), .enclen = enc.n };
		if (enc.n)
			memcpy(h->enc, enc.p, enc.n);
	}
	ps->prev_key = key;
	if (++ps->set_next < ps->set_nparts)
		return;

	struct lr_hist *old = log->hists;
	size_t oldcap = ps->cap_hists;
	free_hists(log->hists, &log->nhists);
	log->hists = ps->cur;
	log->nhists = ps->ncur;
	ps->cap_hists = ps->capcur;
	ps->cur = old;
	ps->capcur = oldcap;
	ps->ncur = 0;
	log->has_hists = true;
	log->hist_time_ns = ps->set_time;
	ps->in_set = false;
	ps->any_set = true;
	ps->last_snap = snap;
}

static int parse_hist(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	uint32_t snap = (uint32_t)rd(c, 4);
	unsigned part = (unsigned)rd(c, 2), nparts = (unsigned)rd(c, 2);
	uint64_t t = rd(c, 8);
	struct histkey key;
	key.op = (uint8_t)rd(c, 1);
	unsigned res = (unsigned)rd(c, 1);
	key.rule = (uint16_t)rd(c, 2);
	key.file_id = (uint32_t)rd(c, 4);
	size_t hlen = (size_t)rd(c, 4);
	int rc;
	if (c->bad)
		return cut_short(ps, c);
	if (nparts == 0 || nparts > LOGFMT_MAX_HIST_PARTS)
		return bad(ps, c, at + 6, "HIST set of %u parts (1..%d allowed)", nparts,
			   LOGFMT_MAX_HIST_PARTS);
	if (part >= nparts)
		return bad(ps, c, at + 4, "HIST part %u of only %u", part, nparts);
	if (key.op >= LOGOP_COUNT && !ps->newer)
		return bad(ps, c, at + 16, "unknown op %u", key.op);
	if (res)
		return bad(ps, c, at + 17, "reserved byte not zero");
	if (key.file_id && find_file(ps, key.file_id) < 0)
		return bad(ps, c, at + 20, "unknown file id %u", key.file_id);
	if (hlen > (size_t)(c->end - c->p))
		return bad(ps, c, at + 24, "histogram of %zu bytes overruns the payload", hlen);
	if ((rc = check_set(ps, c, at, snap, part, nparts, key)))
		return rc;
	const char *why = NULL;
	if (hist_decode(&ps->scratch, c->p, hlen, &why))
		return bad(ps, c, c->p, "%s", why);
	struct slice enc = { c->p, hlen };
	c->p += hlen;
	if ((rc = check_end(ps, c)))
		return rc;
	add_to_set(log, ps, snap, part, nparts, t, key, enc);
	note_time(log, t);
	return 0;
}

static int parse_event(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	uint64_t t = rd(c, 8);
	uint32_t fid = (uint32_t)rd(c, 4);
	int32_t err = (int32_t)(uint32_t)rd(c, 4);
	unsigned kind = (unsigned)rd(c, 1), res = (unsigned)rd(c, 1);
	struct slice text = rd_str(c, 2);
	int rc;
	if (c->bad)
		return cut_short(ps, c);
	if (fid && find_file(ps, fid) < 0)
		return bad(ps, c, at + 8, "unknown file id %u", fid);
	if (kind >= LOGEV_KIND_LIMIT && !ps->newer)  /* retired kinds included */
		return bad(ps, c, at + 16, "unknown event kind %u", kind);
	if (res)
		return bad(ps, c, at + 17, "reserved byte not zero");
	if ((rc = check_str(ps, c, text, "event text")) || (rc = check_end(ps, c)))
		return rc;
	struct lr_event *e = PUSH(log->events, log->nevents, ps->cap_events);
	*e = (struct lr_event){ t, fid, err, (uint8_t)kind, dup_slice(text) };
	note_time(log, t);
	return 0;
}

static int parse_drops(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	uint64_t t = rd(c, 8), total = rd(c, 8);
	int rc;
	if ((rc = check_end(ps, c)))
		return rc;
	if (total < log->drops)
		return bad(ps, c, at + 8, "dropped-record total %llu below the previous %llu",
			   (unsigned long long)total, (unsigned long long)log->drops);
	log->drops = total;
	note_time(log, t);
	return 0;
}

static int parse_trailer(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	struct logfmt_trailer t;
	t.end_wall_ns = rd(c, 8);
	t.end_mono_ns = rd(c, 8);
	t.exit_status = (int32_t)(uint32_t)rd(c, 4);
	unsigned res = (unsigned)rd(c, 4);
	int rc;
	if (c->bad)
		return cut_short(ps, c);
	if (res)
		return bad(ps, c, at + 20, "reserved bytes not zero");
	if (t.end_mono_ns < log->start_mono_ns)
		return bad(ps, c, at + 8, "end time before the start time");
	if (ps->in_set)
		return bad(ps, c, at, "TRAILER inside HIST set %u (part %u of %u missing)",
			   ps->set_snap, ps->set_next, ps->set_nparts);
	if ((rc = check_end(ps, c)))
		return rc;
	log->has_trailer = true;
	log->trailer = t;
	note_time(log, t.end_mono_ns);
	return 0;
}

/* A file named at most once per second, across the second's blocks. */
static bool risk_mark_once(struct lr_parse *ps, size_t index, uint32_t second)
{
	if (index >= ps->cap_risk_mark) {
		size_t cap = ps->cap_risk_mark ? ps->cap_risk_mark : 64;
		while (cap <= index)
			cap *= 2;
		ps->risk_mark = xrealloc(ps->risk_mark, cap * sizeof(*ps->risk_mark));
		memset(ps->risk_mark + ps->cap_risk_mark, 0, (cap - ps->cap_risk_mark) * sizeof(*ps->risk_mark));
		ps->cap_risk_mark = cap;
	}
	if (ps->risk_mark[index] == second + 1)
		return false;
	ps->risk_mark[index] = second + 1;
	return true;
}

static int check_risk_entry(struct lr_parse *ps, const struct cur *c, const uint8_t *ep, size_t i,
			    uint32_t second, uint32_t prev_id, const struct lr_risk *e)
{
	long index = find_file(ps, e->file_id);
	if (index < 0)
		return bad(ps, c, ep, "entry %zu references unknown file id %u", i, e->file_id);
	if (e->file_id <= prev_id)
		return bad(ps, c, ep, "entry %zu: file ids not in increasing order", i);
	if (ep[4] | ep[5] | ep[6] | ep[7])
		return bad(ps, c, ep + 4, "entry %zu: reserved bytes not zero", i);
	if (e->bytes > e->worst_bytes || e->age_ns > e->worst_age_ns)
		return bad(ps, c, ep + 8, "entry %zu: at risk at the end exceeds the second's worst", i);
	if (e->worst_bytes > e->written)
		return bad(ps, c, ep + 8, "entry %zu: %llu bytes at risk of %llu written", i,
			   (unsigned long long)e->worst_bytes, (unsigned long long)e->written);
	if (!risk_mark_once(ps, (size_t)index, second))
		return bad(ps, c, ep, "entry %zu: file id %u already has an entry for second %u", i,
			   e->file_id, second);
	return 0;
}

/* RISK (minor 1): per second, the files that had data at risk. */
static int parse_risk(struct lr_log *log, struct lr_parse *ps, struct cur *c)
{
	const uint8_t *at = c->p;
	uint32_t second = (uint32_t)rd(c, 4);
	size_t n = (size_t)rd(c, 2), esz = (size_t)rd(c, 2);
	if (c->bad)
		return cut_short(ps, c);
	if (esz < LOGFMT_RISK_SIZE || (esz != LOGFMT_RISK_SIZE && !ps->newer))
		return bad(ps, c, at + 6, "file entry size %zu, expected %d", esz, LOGFMT_RISK_SIZE);
	size_t left = (size_t)(c->end - c->p);
	if (!n || n * esz != left)
		return bad(ps, c, at + 4, "%zu entries of %zu bytes do not fill the %zu bytes left",
			   n, esz, left);
	if (ps->have_risk && second < ps->risk_second)
		return bad(ps, c, at, "second %u goes back from the previous RISK block's %u", second,
			   ps->risk_second);
	uint32_t prev_id = 0;
	for (size_t i = 0; i < n; i++) {
		struct cur e = { c->p + i * esz, c->p + i * esz, c->end, false };
		struct lr_risk r = { .second = second };
		r.file_id = (uint32_t)rd(&e, 4);
		e.p += 4;
		r.worst_bytes = rd(&e, 8);
		r.worst_age_ns = rd(&e, 8);
		r.bytes = rd(&e, 8);
		r.age_ns = rd(&e, 8);
		r.written = rd(&e, 8);
		int rc = check_risk_entry(ps, c, e.start, i, second, prev_id, &r);
		if (rc)
			return rc;
		prev_id = r.file_id;
		*PUSH(log->risks, log->nrisks, ps->cap_risks) = r;
	}
	ps->have_risk = true;
	ps->risk_second = second;
	note_time(log, sat_add(log->start_mono_ns, ((uint64_t)second + 1) * 1000000000u));
	c->p = c->end;
	return 0;
}

static int parse_payload(struct lr_log *log, struct lr_parse *ps, const struct logfmt_blockhdr *b,
			 struct cur *c)
{
	if (b->type == LOGBLK_HEADER && ps->block != 0)
		return bad(ps, c, c->start, "second HEADER block");
	switch (b->type) {
	case LOGBLK_HEADER: return parse_header(log, ps, c);
	case LOGBLK_FILE: return parse_file(log, ps, c);
	case LOGBLK_RECORDS: return parse_records(log, ps, c);
	case LOGBLK_INTERVAL: return parse_interval(log, ps, c);
	case LOGBLK_HIST: return parse_hist(log, ps, c);
	case LOGBLK_EVENT: return parse_event(log, ps, c);
	case LOGBLK_DROPS: return parse_drops(log, ps, c);
	case LOGBLK_POLICY: return parse_policy(log, ps, c);
	case LOGBLK_TRAILER: return parse_trailer(log, ps, c);
	case LOGBLK_RISK:
		if (log->minor >= 1)
			return parse_risk(log, ps, c);
		break;
	}
	if (ps->newer)
		return 0;  /* a block type from a newer minor: skip it */
	return fail_at(ps, LR_CORRUPT, ps->base - LOGFMT_BLOCK_HDR + 4, "unknown block type %u",
		       b->type);
}

/* ---- where the bytes come from ---- */

/*
 * A log is read one block at a time, from memory or from a descriptor.
 * From a descriptor only the current block is held (24 bytes of header,
 * then its payload, at most 4 MiB, grown only as bytes arrive), so
 * memory never follows the file's size or a length field, and a file
 * that is not a log is refused after its first 24 bytes.
 */
struct src {
	const uint8_t *mem;   /* memory: the whole log */
	size_t memlen;
	int fd;               /* descriptor, when mem is NULL */
	uint8_t *buf;         /* descriptor: bytes of the block at buf_off */
	size_t have, cap;
	uint64_t buf_off;
	int err;              /* errno of a failed read */
};

#define READ_CHUNK 65536

/* Up to n bytes of the log from offset off (within one block, in order):
 * sets *p and returns how many there are (fewer only at the end). */
static size_t src_fetch(struct src *s, uint64_t off, size_t n, const uint8_t **p)
{
	if (s->mem) {
		size_t left = off < s->memlen ? s->memlen - (size_t)off : 0;
		*p = s->mem + (off < s->memlen ? off : s->memlen);
		return n < left ? n : left;
	}
	if (off != s->buf_off) {  /* the next block: forget the last one */
		s->buf_off = off;
		s->have = 0;
	}
	while (s->have < n && !s->err) {
		size_t want = n - s->have < READ_CHUNK ? n - s->have : READ_CHUNK;
		grow((void **)&s->buf, &s->cap, s->have + want, 1);
		ssize_t r = read(s->fd, s->buf + s->have, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {  /* a non-blocking pipe on stdin: wait for it */
			struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
			if (poll(&pfd, 1, -1) >= 0 || errno == EINTR)
				continue;
		}
		if (r < 0)
			s->err = errno;
		if (r <= 0)
			break;
		s->have += (size_t)r;
	}
	*p = s->buf;
	return n < s->have ? n : s->have;
}

/* ---- blocks ---- */

/* Checks and applies the block at off, whose first got (<= 24) bytes are
 * at p; *len is its whole length. */
static int parse_block(struct lr_log *log, struct lr_parse *ps, struct src *src, size_t off,
		       const uint8_t *p, size_t got, size_t *len)
{
	static const uint8_t magic[4] = { 'S', 'S', 'L', 'G' };

	ps->type = 0;
	if (log->has_trailer)
		return fail_at(ps, LR_CORRUPT, off, "data after the TRAILER");
	if (got < LOGFMT_BLOCK_HDR) {
		if (off == 0 && memcmp(p, magic, got < 4 ? got : 4) != 0)
			return fail_at(ps, LR_FOREIGN, 0, "no SSLG magic");
		return fail_at(ps, LR_TRUNCATED, off, "partial block header (%zu of %d bytes)",
			       got, LOGFMT_BLOCK_HDR);
	}
	struct logfmt_blockhdr b;
	const char *why = NULL;
	if (logfmt_block_header(p, &b, &why)) {
		if (off == 0 && b.magic != LOGFMT_MAGIC)
			return fail_at(ps, LR_FOREIGN, 0, "no SSLG magic");
		return fail_at(ps, LR_CORRUPT, off, "%s (block %zu)", why, ps->block);
	}
	ps->type = b.type;
	if (off == 0 && b.type != LOGBLK_HEADER)
		return fail_at(ps, LR_CORRUPT, off + 4, "first block is not a HEADER");
	if (b.seq != ps->next_seq)
		return fail_at(ps, LR_CORRUPT, off + 8,
			       "sequence number %u where %u was due (a block is missing or repeated)",
			       b.seq, ps->next_seq);
	got = src_fetch(src, off, LOGFMT_BLOCK_HDR + (size_t)b.len, &p);
	if (src->err)
		return fail_at(ps, LR_IOERR, off + got, "%s", strerror(src->err));
	if (got < LOGFMT_BLOCK_HDR + (size_t)b.len)
		return fail_at(ps, LR_TRUNCATED, off,
			       "partial block: %u payload bytes announced, %zu present", b.len,
			       got - LOGFMT_BLOCK_HDR);
	if (!logfmt_block_payload_ok(&b, p + LOGFMT_BLOCK_HDR))
		return fail_at(ps, LR_CORRUPT, off + 16, "payload CRC mismatch");

	*len = LOGFMT_BLOCK_HDR + (size_t)b.len;
	ps->base = off + LOGFMT_BLOCK_HDR;
	struct cur c = { p + LOGFMT_BLOCK_HDR, p + LOGFMT_BLOCK_HDR, p + LOGFMT_BLOCK_HDR + b.len, false };
	return parse_payload(log, ps, &b, &c);
}

static int parse_all(struct lr_log *log, struct lr_parse *ps, struct src *src)
{
	for (size_t off = 0, len = 0;; off += len) {
		const uint8_t *p;
		size_t got = src_fetch(src, off, LOGFMT_BLOCK_HDR, &p);
		if (src->err)
			return fail_at(ps, LR_IOERR, off + got, "%s", strerror(src->err));
		if (got == 0 && off == 0)
			return fail_at(ps, LR_TRUNCATED, 0, "empty file (no HEADER block)");
		if (got == 0)
			return 0;
		if (parse_block(log, ps, src, off, p, got, &len))
			return -1;
		log->size = off + len;
		ps->next_seq++;
		ps->block++;
		log->nblocks++;
	}
}

static void finish_warnings(struct lr_log *log)
{
	if (!log->has_trailer)
		log->warnings |= LRW_NO_TRAILER;
	if (log->ps->in_set)
		log->warnings |= LRW_HIST_CUT;
}

static void start(struct lr_log *log, const char *name, struct lr_error *err)
{
	memset(log, 0, sizeof(*log));
	memset(err, 0, sizeof(*err));
	log->path = dup_slice((struct slice){ (const uint8_t *)name, strlen(name) });
	log->ps = xcalloc(1, sizeof(*log->ps));
	log->ps->name = log->path;
	log->ps->err = err;
}

static int finish_read(struct lr_log *log, struct src *src)
{
	int rc = parse_all(log, log->ps, src);
	log->ps->err = NULL;
	if (rc == 0)
		finish_warnings(log);
	free(src->buf);
	return rc;
}

int lr_read_mem(const void *buf, size_t len, const char *name, struct lr_log *log,
		struct lr_error *err)
{
	struct src src = { .mem = buf ? buf : (const void *)"", .memlen = buf ? len : 0, .fd = -1 };
	start(log, name, err);
	return finish_read(log, &src);
}

/* What a path names, if it is not something a log can be read from. */
static const char *not_a_log_file(mode_t mode)
{
	if (S_ISREG(mode))
		return NULL;
	if (S_ISFIFO(mode))
		return "a FIFO, not a regular file (to read a pipe, give '-' and redirect it to standard input)";
	if (S_ISDIR(mode))
		return "a directory, not a log";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device, not a regular file";
	if (S_ISSOCK(mode))
		return "a socket, not a regular file";
	return "not a regular file";
}

/* The descriptor to read path from, or -1 with the error set. "-" is
 * standard input, whatever it is (a pipe given on purpose); anything
 * else must be a regular file, checked before it is opened. */
static int open_log(const char *path, struct lr_parse *ps)
{
	struct stat st;
	int fd;

	if (strcmp(path, "-") == 0) {
		if (isatty(0))
			return fail_at(ps, LR_IOERR, 0, "standard input is a terminal; redirect a log to it");
		return 0;
	}
	if (stat(path, &st) < 0)
		return fail_at(ps, LR_IOERR, 0, "%s", strerror(errno));
	if (not_a_log_file(st.st_mode))
		return fail_at(ps, LR_IOERR, 0, "%s", not_a_log_file(st.st_mode));
	do
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return fail_at(ps, LR_IOERR, 0, "%s", strerror(errno));
	if (fstat(fd, &st) < 0 || not_a_log_file(st.st_mode)) {  /* swapped since the stat */
		close(fd);
		return fail_at(ps, LR_IOERR, 0, "not a regular file");
	}
	return fd;
}

int lr_read_file(const char *path, struct lr_log *log, struct lr_error *err)
{
	start(log, strcmp(path, "-") ? path : "(stdin)", err);
	int fd = open_log(path, log->ps);
	if (fd < 0)
		return -1;
	struct src src = { .fd = fd };
	int rc = finish_read(log, &src);
	if (fd > 0)
		close(fd);
	return rc;
}

bool lr_salvage(struct lr_log *log, const struct lr_error *err)
{
	if ((err->status != LR_TRUNCATED && err->status != LR_CORRUPT) || log->major == 0)
		return false;
	finish_warnings(log);
	log->warnings |= LRW_SALVAGED;
	return true;
}

void lr_free(struct lr_log *log)
{
	free(log->path);
	free(log->hostname);
	free(log->kernel);
	free(log->cmdline);
	free_rules(log);
	for (size_t i = 0; i < log->nfiles; i++) {
		free(log->files[i].rule_name);
		free(log->files[i].fstype);
		free(log->files[i].path);
	}
	free(log->files);
	free(log->recs);
	free(log->secs);
	free(log->ivents);
	free_hists(log->hists, &log->nhists);
	free(log->hists);
	for (size_t i = 0; i < log->nevents; i++)
		free(log->events[i].text);
	free(log->events);
	free(log->risks);
	if (log->ps) {
		free(log->ps->risk_mark);
		free(log->ps->ids);
		free(log->ps->idx);
		free_hists(log->ps->cur, &log->ps->ncur);
		free(log->ps->cur);
		free(log->ps);
	}
	memset(log, 0, sizeof(*log));
}

void lr_hist_load(const struct lr_hist *lh, struct hist *h)
{
	/* validated when read, so this cannot fail */
	if (hist_decode(h, lh->enc, lh->enclen, NULL))
		hist_init(h);
}

uint64_t lr_end_wall_ns(const struct lr_log *log)
{
	if (log->has_trailer)
		return log->trailer.end_wall_ns;
	if (log->last_mono_ns > log->start_mono_ns)
		return log->start_wall_ns + (log->last_mono_ns - log->start_mono_ns);
	return log->start_wall_ns;
}

/* ---- runs: logs of a forked family merged ---- */

static struct hist *new_hist(void)
{
	struct hist *h = xcalloc(1, sizeof(*h));
	hist_init(h);
	return h;
}

static void merge_into(struct hist **slot, const struct hist *src)
{
	if (!*slot)
		*slot = new_hist();
	hist_merge(*slot, src);
}

static void record_into(struct hist **slot, uint64_t ns)
{
	if (!*slot)
		*slot = new_hist();
	hist_record(*slot, ns);
}

static bool has_file_hists(const struct lr_log *log)
{
	for (size_t i = 0; i < log->nhists; i++)
		if (log->hists[i].file_id)
			return true;
	return false;
}

/* Percentiles come from the HIST set when a log has one (it counts every
 * call, even those whose records were dropped), else from its records. */
static void run_ops(struct run *r, struct hist *tmp)
{
	size_t from_hist = 0, from_recs = 0;
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		if (L->has_hists) {
			from_hist++;
			for (size_t i = 0; i < L->nhists; i++) {
				if (L->hists[i].file_id)
					continue;
				lr_hist_load(&L->hists[i], tmp);
				merge_into(&r->op[L->hists[i].op], tmp);
			}
		} else if (L->nrecs) {
			from_recs++;
			for (size_t i = 0; i < L->nrecs; i++)
				record_into(&r->op[L->recs[i].op], L->recs[i].dur_ns);
		}
		/* bytes: INTERVAL counts are complete; records may have drops */
		if (L->nsecs) {
			for (size_t i = 0; i < L->nivents; i++)
				r->bytes[L->ivents[i].op] += L->ivents[i].t.bytes;
		} else {
			for (size_t i = 0; i < L->nrecs; i++)
				if (L->recs[i].result >= 0)
					r->bytes[L->recs[i].op] += L->recs[i].bytes;
		}
	}
	r->pct_source = from_hist && from_recs ? PCT_MIXED : from_hist ? PCT_HIST
			: from_recs ? PCT_RECORDS : PCT_NONE;
}

struct fref {
	const char *path;
	size_t log, file;
};

static int cmp_fref(const void *a, const void *b)
{
	const struct fref *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	if (c)
		return c;
	if (x->log != y->log)
		return x->log < y->log ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file;
}

static void file_records(struct run *r, const struct lr_log *L, const size_t *map, bool fh)
{
	for (size_t i = 0; i < L->nrecs; i++) {
		const struct logfmt_record *rec = &L->recs[i];
		if (!rec->file_id)
			continue;
		struct run_file *f = &r->files[map[lr_file_index(L, rec->file_id)]];
		f->calls[rec->op]++;
		if (rec->result < 0)
			f->errors++;
		else if (logop_is_write(rec->op))
			f->bytes += rec->bytes;
		if (fh)
			continue;  /* the log's per-file HISTs are complete; use those */
		if (logop_is_sync(rec->op))
			record_into(&f->sync, rec->dur_ns);
		else if (logop_is_real(rec->op))
			record_into(&f->real, rec->dur_ns);
	}
}

static void file_hists(struct run *r, const struct lr_log *L, const size_t *map, struct hist *tmp)
{
	for (size_t i = 0; i < L->nhists; i++) {
		const struct lr_hist *lh = &L->hists[i];
		if (!lh->file_id)
			continue;
		struct run_file *f = &r->files[map[lr_file_index(L, lh->file_id)]];
		lr_hist_load(lh, tmp);
		if (logop_is_sync(lh->op))
			merge_into(&f->sync, tmp);
		else if (logop_is_real(lh->op))
			merge_into(&f->real, tmp);
		if (!L->nrecs)
			f->calls[lh->op] += lh->count;
	}
}

/* Each file's worst data at risk, and what its rule's policy was. */
static void file_risks(struct run *r, const struct lr_log *L, const size_t *map)
{
	for (size_t f = 0; f < L->nfiles; f++) {
		uint16_t rule = L->files[f].rule;
		if (rule < L->nrules)
			r->files[map[f]].sync_policy = L->rules[rule].sync;
	}
	for (size_t i = 0; i < L->nrisks; i++) {
		const struct lr_risk *k = &L->risks[i];
		long f = lr_file_index(L, k->file_id);
		if (f < 0)
			continue;
		struct run_file *rf = &r->files[map[f]];
		rf->risk = true;
		if (k->worst_bytes > rf->risk_bytes)
			rf->risk_bytes = k->worst_bytes;
		if (k->worst_age_ns > rf->risk_age_ns)
			rf->risk_age_ns = k->worst_age_ns;
	}
}

static void run_files(struct run *r, struct hist *tmp)
{
	size_t n = 0;
	for (size_t l = 0; l < r->nlogs; l++)
		n += r->logs[l]->nfiles;
	struct fref *refs = xcalloc(n, sizeof(*refs));
	size_t **map = xcalloc(r->nlogs, sizeof(*map));
	n = 0;
	for (size_t l = 0; l < r->nlogs; l++) {
		map[l] = xcalloc(r->logs[l]->nfiles, sizeof(**map));
		for (size_t f = 0; f < r->logs[l]->nfiles; f++)
			refs[n++] = (struct fref){ r->logs[l]->files[f].path, l, f };
	}
	qsort(refs, n, sizeof(*refs), cmp_fref);

	r->files = xcalloc(n, sizeof(*r->files));
	for (size_t i = 0; i < n; i++) {
		const struct lr_file *lf = &r->logs[refs[i].log]->files[refs[i].file];
		if (!r->nfiles || strcmp(r->files[r->nfiles - 1].path, lf->path) != 0)
			r->files[r->nfiles++] = (struct run_file){ .path = lf->path, .fstype = lf->fstype,
								   .rule_name = lf->rule_name };
		map[refs[i].log][refs[i].file] = r->nfiles - 1;
	}
	for (size_t l = 0; l < r->nlogs; l++) {
		bool fh = has_file_hists(r->logs[l]);
		file_records(r, r->logs[l], map[l], fh);
		file_hists(r, r->logs[l], map[l], tmp);
		file_risks(r, r->logs[l], map[l]);
		free(map[l]);
	}
	free(map);
	free(refs);
}

struct sref {
	int64_t rel;
	const struct lr_log *log;
	const struct lr_second *s;
};

static int cmp_sref(const void *a, const void *b)
{
	const struct sref *x = a, *y = b;
	return x->rel < y->rel ? -1 : x->rel > y->rel;
}

static void tally_merge(struct tally *d, const struct tally *s)
{
	d->calls += s->calls;
	d->bytes += s->bytes;
	d->sum_ns += s->sum_ns;
	if (s->max_ns > d->max_ns)
		d->max_ns = s->max_ns;
}

static struct run_sec *sec_row(struct run *r, int64_t rel)
{
	size_t lo = 0, hi = r->nsecs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->secs[mid].sec < rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nsecs && r->secs[lo].sec == rel ? &r->secs[lo] : NULL;
}

/* RISK entries onto the rows of their wall-clock seconds (the logger
 * writes an INTERVAL for every second it writes a RISK for). */
static void secs_risks(struct run *r, const struct lr_log *L, uint64_t wall0)
{
	for (size_t i = 0; i < L->nrisks; i++) {
		const struct lr_risk *k = &L->risks[i];
		uint64_t at = L->start_wall_ns + (uint64_t)k->second * 1000000000u;
		struct run_sec *row = sec_row(r, (int64_t)(at / 1000000000u - wall0));
		if (!row)
			continue;
		row->risk = true;
		row->risk_bytes += k->worst_bytes;
		if (k->worst_age_ns > row->risk_age_ns)
			row->risk_age_ns = k->worst_age_ns;
	}
	if (L->nrisks)
		r->has_risk = true;
}

/* Each log counts seconds from its own start; rows are aligned on the
 * wall-clock second each interval began in. */
static void run_secs(struct run *r)
{
	size_t n = 0;
	for (size_t l = 0; l < r->nlogs; l++)
		n += r->logs[l]->nsecs;
	struct sref *refs = xcalloc(n, sizeof(*refs));
	uint64_t wall0 = r->start_wall_ns / 1000000000u;
	n = 0;
	for (size_t l = 0; l < r->nlogs; l++) {
		const struct lr_log *L = r->logs[l];
		for (size_t i = 0; i < L->nsecs; i++) {
			uint64_t at = L->start_wall_ns + (uint64_t)L->secs[i].second * 1000000000u;
			refs[n++] = (struct sref){ (int64_t)(at / 1000000000u - wall0), L, &L->secs[i] };
		}
	}
	qsort(refs, n, sizeof(*refs), cmp_sref);

	r->secs = xcalloc(n ? n : 1, sizeof(*r->secs));
	for (size_t i = 0; i < n; i++) {
		if (!r->nsecs || r->secs[r->nsecs - 1].sec != refs[i].rel)
			r->secs[r->nsecs++] = (struct run_sec){ .sec = refs[i].rel };
		struct run_sec *row = &r->secs[r->nsecs - 1];
		const struct lr_second *s = refs[i].s;
		for (size_t k = 0; k < s->n; k++) {
			const struct lr_ivent *iv = &refs[i].log->ivents[s->first + k];
			tally_merge(&row->op[iv->op], &iv->t);
		}
	}
	free(refs);
	for (size_t l = 0; l < r->nlogs; l++)
		secs_risks(r, r->logs[l], wall0);
}

struct span {
	uint64_t s, e;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* Time covered by at least one log: a forked family overlaps and counts
 * once, sequential runs (syncshim ab's rounds) add up, and the gaps between
 * them - the other side's runs - do not dilute throughput. */
static uint64_t covered_wall_ns(struct lr_log **logs, size_t nlogs)
{
	struct span *v = xcalloc(nlogs ? nlogs : 1, sizeof(*v));
	for (size_t l = 0; l < nlogs; l++)
		v[l] = (struct span){ logs[l]->start_wall_ns, lr_end_wall_ns(logs[l]) };
	qsort(v, nlogs, sizeof(*v), cmp_span);
	uint64_t total = 0, cs = 0, ce = 0;
	for (size_t l = 0; l < nlogs; l++) {
		if (v[l].e <= v[l].s)
			continue;
		if (ce > cs && v[l].s <= ce) {
			if (v[l].e > ce)
				ce = v[l].e;
			continue;
		}
		total += ce - cs;
		cs = v[l].s;
		ce = v[l].e;
	}
	total += ce - cs;
	free(v);
	return total;
}

int run_build(struct run *r, struct lr_log **logs, size_t nlogs)
{
	memset(r, 0, sizeof(*r));
	r->logs = logs;
	r->nlogs = nlogs;
	for (size_t l = 0; l < nlogs; l++) {
		uint64_t s = logs[l]->start_wall_ns, e = lr_end_wall_ns(logs[l]);
		if (l == 0 || s < r->start_wall_ns)
			r->start_wall_ns = s;
		if (l == 0 || e > r->end_wall_ns)
			r->end_wall_ns = e;
		r->drops += logs[l]->drops;
		r->warnings |= logs[l]->warnings;
	}
	r->duration_s = (double)covered_wall_ns(logs, nlogs) / 1e9;

	struct hist *tmp = new_hist();
	run_ops(r, tmp);
	run_files(r, tmp);
	free(tmp);
	run_secs(r);
	return 0;
}

void run_free(struct run *r)
{
	for (int op = 0; op < LOGOP_COUNT; op++)
		free(r->op[op]);
	for (size_t i = 0; i < r->nfiles; i++) {
		free(r->files[i].sync);
		free(r->files[i].real);
	}
	free(r->files);
	free(r->secs);
	memset(r, 0, sizeof(*r));
}
