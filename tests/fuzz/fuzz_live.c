/*
 * fuzz_live.c - libFuzzer target: the live counters reader
 * (shim/format/live/liveread.c, live_read_at) and the views built on it: synclat
 * top's text (--once and the screen's cut lines) and JSON (topview.c,
 * toptext.c, topjson.c) and synclat metrics (metrics.c).
 *
 * Input: a flags byte, the sort order, a width and a line limit for the
 * screen's text, then the bytes of a PID.live file. They are written to
 * PID.live (PID: this process, which is alive, so the file is not stale)
 * in a directory made once per process, and read back with live_read_at
 * (the reader only reads through a directory fd). Unless flag RAW is set
 * the header is fixed up first so that mutations get past the layout
 * checks: magic, version, header_size, a usable file_size and max_files,
 * nfiles within them (and at most one entry past the input's), an even
 * seq, this process's pid and start time, ended 0 or 1, intervals in
 * range, a rule table (if nrules) after the files' room; the file is
 * extended (sparse) to the length the layout needs.
 *
 * What must hold:
 * - a fixed-up file that is not marked ended is read (LIVE_OK): the
 *   reader refuses no valid file; a refusal says why in one line;
 * - what is read is bounded: nfiles <= max_files, strings terminated;
 * - the views of a snapshot holding it (and, with flag BUSY, a busy
 *   process beside it) never print a non-finite number (the file's
 *   strings are upper-cased in 'n' and 'i' first, so a "nan" or "inf" in
 *   the output came from a number), nor a control byte in the text;
 *   the screen's lines are at most `width` code points and `max_lines`
 *   lines, and the lines it drops are the ones missing; the JSON parses;
 *   every metrics line is a HELP, a TYPE, or `name{labels} value` of the
 *   family last typed, label values are escaped UTF-8, values are
 *   numbers, and no series appears twice (a scraper rejects the lot).
 *
 * The reader sleeps between attempts at a file whose sequence count is
 * odd (a writer in the middle of a rewrite); the file here never changes
 * while read, so this target's nanosleep returns at once while the reader
 * runs: the same outcome, without 1.5 ms per input.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "liveread.h"
#include "metrics.h"
#include "topview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { RAW = 1, BY_RULE = 2, STALLED = 4, BUSY = 8, FILTER = 16, NO_MATCH = 32, BY_PID = 64 };

#define HDR sizeof(struct live_header)
#define PREFIX 4

static void die_unless(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_live: %s\n", what);
		abort();
	}
}

/* ---- the reader's sleeps ---- */

static bool reading;

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (reading)
		return 0;
	return (int)syscall(SYS_nanosleep, req, rem);
}

/* ---- the file ---- */

static char dir[64], name[32];
static int dirfd_ = -1, filefd = -1;
static uint64_t my_start;

static void cleanup(void)
{
	if (dirfd_ >= 0)
		unlinkat(dirfd_, name, 0);
	rmdir(dir);
}

static void setup(void)
{
	if (dirfd_ >= 0)
		return;
	/* tmpfs if there is one: the file is rewritten for every input */
	snprintf(dir, sizeof(dir), "%s/fuzz_live.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	die_unless(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(name, sizeof(name), "%d%s", (int)getpid(), LIVE_SUFFIX);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	filefd = dirfd_ < 0 ? -1 : openat(dirfd_, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	die_unless(filefd >= 0, "temporary live file");
	die_unless(live_proc_start(getpid(), &my_start), "own start time");
	atexit(cleanup);
}

/* LIVEFORMAT.md's checks made to pass; returns the length the file needs. */
static size_t fix_up(struct live_header *h, size_t len)
{
	memcpy(h->magic, LIVE_MAGIC, sizeof(h->magic));
	h->version = LIVE_VERSION;
	h->header_size = HDR;
	if (h->file_size < sizeof(struct live_file) || h->file_size % 8 || h->file_size > 65536)
		h->file_size = sizeof(struct live_file);
	uint32_t avail = (uint32_t)((len - HDR) / h->file_size); /* entries the input holds */
	if (h->max_files == 0 || (h->max_files > LIVE_MAX_FILES && h->max_files > avail))
		h->max_files = avail ? avail : 1;
	/* and the whole file within what a reader reads (LIVE_READ_MAX) */
	uint32_t room = (uint32_t)((LIVE_READ_MAX - HDR) / h->file_size);
	if (h->max_files > room)
		h->max_files = room;
	if (h->nfiles > h->max_files)
		h->nfiles %= h->max_files + 1;
	if (h->nfiles > avail + 1) /* zeros past the input add nothing but time */
		h->nfiles = avail + 1;
	h->seq &= ~1u;
	h->pid = (uint32_t)getpid();
	h->proc_start = my_start;
	h->ended &= 1;
	if (h->interval_ms > 3600000u)
		h->interval_ms %= 3600001u;
	if (h->interval_ns > 3600 * 1000000000ull)
		h->interval_ns %= 3600 * 1000000000ull + 1;
	size_t files_end = HDR + (size_t)h->max_files * h->file_size;
	if (!h->nrules)
		return files_end;
	/* the rule table: after the files' room, within what a reader reads */
	if (h->rule_size < sizeof(struct live_rule) || h->rule_size % 8 || h->rule_size > 65536)
		h->rule_size = sizeof(struct live_rule);
	if (h->rules_offset < files_end || h->rules_offset > files_end + 65536)
		h->rules_offset = (uint32_t)files_end;
	size_t room_rules = (LIVE_READ_MAX - h->rules_offset) / h->rule_size;
	if (h->nrules > LIVE_MAX_RULES)
		h->nrules %= LIVE_MAX_RULES + 1;
	if (h->nrules > room_rules)
		h->nrules = (uint32_t)room_rules;
	return h->rules_offset + (size_t)h->nrules * h->rule_size;
}

static void write_file(const uint8_t *p, size_t n, size_t len)
{
	die_unless(ftruncate(filefd, 0) == 0, "truncate");
	die_unless(pwrite(filefd, p, n, 0) == (ssize_t)n, "write");
	if (len > n)
		die_unless(ftruncate(filefd, (off_t)len) == 0, "extend");
}

/* ---- checks on text ---- */

static void shout(char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++)
		if (s[i] == 'n' || s[i] == 'i')
			s[i] = (char)(s[i] - 'a' + 'A');
}

static void shout_proc(struct live_proc *p)
{
	shout(p->h.cmdline, sizeof(p->h.cmdline));
	shout(p->h.config, sizeof(p->h.config));
	shout(p->h.default_policy, sizeof(p->h.default_policy));
	shout(p->h.comm, sizeof(p->h.comm));
	shout(p->path, sizeof(p->path));
	for (uint32_t i = 0; i < p->h.nfiles; i++) {
		shout(p->files[i].rule_name, sizeof(p->files[i].rule_name));
		shout(p->files[i].path, sizeof(p->files[i].path));
	}
	shout(p->h.config_error, sizeof(p->h.config_error));
	for (uint32_t i = 0; i < p->h.nrules; i++) {
		shout(p->rules[i].name, sizeof(p->rules[i].name));
		shout(p->rules[i].glob, sizeof(p->rules[i].glob));
	}
}

static void finite_only(const char *text, size_t len)
{
	die_unless(!memmem(text, len, "nan", 3) && !memmem(text, len, "inf", 3), "a non-finite number printed");
}

/* Length of the valid UTF-8 character at p (n bytes left), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t k = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
		 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	if (!k || k > n)
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) || (p[0] == 0xf0 && p[1] < 0x90) ||
	    (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return k;
}

/* The screen's text: printable but for newlines; returns the lines. */
static size_t text_lines(const char *t, size_t len, int width)
{
	size_t lines = 0;
	int cps = 0;
	die_unless(len == 0 || t[len - 1] == '\n', "text does not end a line");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)t[i];
		if (c == '\n') {
			lines++;
			cps = 0;
			continue;
		}
		die_unless(c >= 0x20 && c != 0x7f, "a control byte in top's text");
		cps += (c & 0xc0) != 0x80;
		die_unless(!width || cps <= width, "a line wider than the screen");
	}
	return lines;
}

/* ---- JSON ---- */

struct jp {
	const char *p, *end;
	int depth;
};

static void jws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r'))
		j->p++;
}

static bool jlit(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n))
		return false;
	j->p += n;
	return true;
}

static bool jdigits(struct jp *j)
{
	const char *s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static bool jnumber(struct jp *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!jdigits(j))
		return false;
	if (j->p < j->end && *j->p == '.' && (j->p++, !jdigits(j)))
		return false;
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		return jdigits(j);
	}
	return true;
}

static bool jstring(struct jp *j)
{
	if (!jlit(j, "\""))
		return false;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p++;
		if (c < 0x20)
			return false;
		if (c != '\\')
			continue;
		if (j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
			return false;
		if (*j->p++ == 'u')
			for (int k = 0; k < 4; k++, j->p++)
				if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p))
					return false;
	}
	return jlit(j, "\"");
}

static bool jvalue(struct jp *j);

static bool jcontainer(struct jp *j, char close, bool object)
{
	if (++j->depth > 32)
		return false;
	jws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		j->depth--;
		return true;
	}
	for (;;) {
		if (object) {
			jws(j);
			if (!jstring(j))
				return false;
			jws(j);
			if (!jlit(j, ":"))
				return false;
		}
		if (!jvalue(j))
			return false;
		jws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		j->depth--;
		return j->p < j->end && *j->p++ == close;
	}
}

static bool jvalue(struct jp *j)
{
	jws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p) {
	case '{': j->p++; return jcontainer(j, '}', true);
	case '[': j->p++; return jcontainer(j, ']', false);
	case '"': return jstring(j);
	case 't': return jlit(j, "true");
	case 'f': return jlit(j, "false");
	case 'n': return jlit(j, "null");
	default: return jnumber(j);
	}
}

static void check_json(const char *t, size_t len)
{
	struct jp j = { t, t + len, 0 };
	die_unless(jvalue(&j), "top --json is not JSON");
	jws(&j);
	die_unless(j.p == j.end, "top --json: bytes after the value");
}

/* ---- Prometheus text ---- */

static bool name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
	       (!first && c >= '0' && c <= '9');
}

/* A metric or label name at p; its length, 0 if none. */
static size_t name_len(const char *p, bool colon)
{
	size_t n = 0;
	while (name_char(p[n], n == 0, colon))
		n++;
	return n;
}

struct series {
	uint64_t hash;
	const char *key;
};

/* FNV-1a: sorting hashes is much cheaper than sorting long keys that
 * mostly share their first hundred bytes. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

struct families {
	char type_of[64][64];   /* every family typed so far */
	size_t n;
	char cur[64], cur_type[16];
	struct series *series;  /* name{labels} of every sample */
	size_t nseries, cap;
};

static bool sample_of_family(const struct families *f, const char *name, size_t n)
{
	size_t k = strlen(f->cur);
	if (n == k && !memcmp(name, f->cur, k))
		return true;
	if (strcmp(f->cur_type, "histogram") || n < k || memcmp(name, f->cur, k))
		return false;
	const char *suffix = name + k;
	size_t sn = n - k;
	return (sn == 7 && !memcmp(suffix, "_bucket", 7)) || (sn == 4 && !memcmp(suffix, "_sum", 4)) ||
	       (sn == 6 && !memcmp(suffix, "_count", 6));
}

/* {name="value",...}: label values escaped (\\, \", \n only) UTF-8.
 * end: the line's end. */
static const char *labels(const char *p, const char *end)
{
	if (*p != '{')
		return p;
	p++;
	while (*p != '}') {
		size_t n = name_len(p, false);
		die_unless(n > 0, "metrics: a label without a name");
		p += n;
		die_unless(p[0] == '=' && p[1] == '"', "metrics: a label without =\"");
		p += 2;
		while (*p != '"') {
			die_unless(*p != '\0', "metrics: a label value not closed");
			if (*p == '\\') {
				die_unless(p[1] == '\\' || p[1] == '"' || p[1] == 'n', "metrics: a bad escape in a label");
				p += 2;
				continue;
			}
			size_t k = utf8_len((const unsigned char *)p, (size_t)(end - p));
			die_unless(k > 0, "metrics: a label value that is not UTF-8");
			p += k;
		}
		p++;
		if (*p == ',')
			p++;
		else
			die_unless(*p == '}', "metrics: labels not separated by commas");
	}
	return p + 1;
}

static void metric_line(struct families *f, char *line, size_t len)
{
	if (!strncmp(line, "# HELP ", 7) || !strncmp(line, "# TYPE ", 7)) {
		bool type = line[2] == 'T';
		char *nm = line + 7;
		size_t n = name_len(nm, true);
		die_unless(n > 0 && n < sizeof(f->cur) && nm[n] == ' ' && nm[n + 1], "metrics: HELP/TYPE without a name");
		if (!type)
			return;
		const char *t = nm + n + 1;
		die_unless(!strcmp(t, "counter") || !strcmp(t, "gauge") || !strcmp(t, "histogram"),
			   "metrics: an unknown TYPE");
		for (size_t i = 0; i < f->n; i++)
			die_unless(strncmp(f->type_of[i], nm, n) || f->type_of[i][n], "metrics: a family typed twice");
		die_unless(f->n < 64, "metrics: too many families");
		snprintf(f->type_of[f->n++], sizeof(f->type_of[0]), "%.*s", (int)n, nm);
		snprintf(f->cur, sizeof(f->cur), "%.*s", (int)n, nm);
		snprintf(f->cur_type, sizeof(f->cur_type), "%s", t);
		return;
	}
	die_unless(line[0] != '#', "metrics: a comment that is neither HELP nor TYPE");
	size_t n = name_len(line, true);
	die_unless(n > 0, "metrics: a sample without a name");
	die_unless(sample_of_family(f, line, n), "metrics: a sample outside its family");
	char *end = (char *)labels(line + n, line + len);
	die_unless(*end == ' ', "metrics: no space before the value");
	*end = '\0';
	if (f->nseries == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 256;
		f->series = realloc(f->series, f->cap * sizeof(*f->series));
		die_unless(f->series != NULL, "out of memory");
	}
	f->series[f->nseries++] = (struct series){ fnv1a(line), line };
	/* the value: a plain decimal number, and nothing after it */
	const char *v = end + 1;
	size_t d = strspn(v, "0123456789");
	die_unless(d > 0, "metrics: a value that is not a number");
	v += d;
	if (*v == '.') {
		d = strspn(v + 1, "0123456789");
		die_unless(d > 0, "metrics: a bad fraction");
		v += 1 + d;
	}
	die_unless(*v == '\0', "metrics: bytes after the value");
}

static int cmp_series(const void *a, const void *b)
{
	const struct series *x = a, *y = b;
	return (x->hash > y->hash) - (x->hash < y->hash);
}

static void check_metrics(char *t, size_t len)
{
	struct families f;
	memset(&f, 0, sizeof(f));
	die_unless(len && t[len - 1] == '\n' && strlen(t) == len, "metrics: not whole lines");
	for (char *line = t, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = '\0';
		metric_line(&f, line, (size_t)(nl - line));
	}
	qsort(f.series, f.nseries, sizeof(*f.series), cmp_series);
	for (size_t i = 1; i < f.nseries; i++) /* equal hashes, then maybe equal keys */
		for (size_t j = i; j-- > 0 && f.series[j].hash == f.series[i].hash;)
			die_unless(strcmp(f.series[j].key, f.series[i].key) != 0, "metrics: the same series twice");
	free(f.series);
}

/* ---- the views ---- */

static char *render(int what, const struct live_snapshot *s, const struct top_view *v, const struct top_opts *o,
		    int width, int max_lines, int *dropped, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	die_unless(f != NULL, "open_memstream");
	if (what == 0)
		*dropped = top_print_text(f, s, v, o, width, max_lines, true);
	else if (what == 1)
		top_print_json(f, s, v, o);
	else
		die_unless(metrics_write(f, s, what == 3) == 0, "metrics_write"); /* 2: per service, 3: --per-file */
	die_unless(fclose(f) == 0, "memstream");
	return text;
}

static void views(const struct live_snapshot *s, const struct top_opts *o, int width, int max_lines)
{
	struct top_view v;
	size_t len;
	int dropped = 0, cut = 0;

	die_unless(top_view_build(&v, s, o) == 0, "top_view_build");
	char *t = render(0, s, &v, o, 0, -1, &dropped, &len); /* --once */
	finite_only(t, len);
	size_t all = text_lines(t, len, 0);
	die_unless(dropped == 0, "--once dropped lines");
	free(t);
	t = render(0, s, &v, o, width, max_lines, &cut, &len); /* the screen */
	size_t shown = text_lines(t, len, width);
	die_unless(max_lines < 0 || shown <= (size_t)max_lines, "more lines than the screen");
	die_unless(shown + (size_t)cut == all, "lines lost that are not counted as dropped");
	free(t);
	t = render(1, s, &v, o, 0, 0, NULL, &len);
	finite_only(t, len);
	check_json(t, len);
	free(t);
	top_view_free(&v);
	for (int mode = 2; mode <= 3; mode++) {
		t = render(mode, s, &v, o, 0, 0, NULL, &len);
		finite_only(t, len);
		check_metrics(t, len);
		free(t);
	}
}

static void check_proc(const struct live_proc *p, enum live_status st, uint64_t now)
{
	die_unless(p->h.pid == (uint32_t)getpid(), "pid");
	if (st == LIVE_BUSY) {
		die_unless(p->busy && p->h.nfiles == 0 && !p->stalled, "busy");
		return;
	}
	const struct live_header *h = &p->h;
	die_unless(!p->busy && p->files && h->nfiles <= h->max_files, "nfiles");
	die_unless(strnlen(h->cmdline, sizeof(h->cmdline)) < sizeof(h->cmdline) &&
		   strnlen(h->config, sizeof(h->config)) < sizeof(h->config) &&
		   strnlen(h->default_policy, sizeof(h->default_policy)) < sizeof(h->default_policy) &&
		   strnlen(h->comm, sizeof(h->comm)) < sizeof(h->comm), "header strings");
	for (uint32_t i = 0; i < h->nfiles; i++)
		die_unless(strnlen(p->files[i].path, LIVE_PATH_MAX) < LIVE_PATH_MAX &&
			   strnlen(p->files[i].rule_name, LIVE_NAME_MAX) < LIVE_NAME_MAX, "file strings");
	die_unless(strnlen(h->config_error, sizeof(h->config_error)) < sizeof(h->config_error), "config_error");
	die_unless(h->nrules <= LIVE_READ_RULES && (h->nrules == 0 || p->rules), "nrules");
	for (uint32_t i = 0; i < h->nrules; i++)
		die_unless(strnlen(p->rules[i].name, LIVE_NAME_MAX) < LIVE_NAME_MAX &&
			   strnlen(p->rules[i].glob, LIVE_PATH_MAX) < LIVE_PATH_MAX, "rule strings");
	uint64_t iv = (h->interval_ms ? h->interval_ms : 1000) * 1000000ull;
	die_unless(p->stalled == (now > h->updated_mono_ns && now - h->updated_mono_ns > LIVE_STALL_INTERVALS * iv),
		   "stalled");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < PREFIX)
		return 0;
	setup();
	unsigned flags = data[0];
	struct top_opts o = { .sort = (enum top_sort)(data[1] % TOP_NSORT), .by_rule = flags & BY_RULE };
	int width = data[2], max_lines = data[3] == 0xff ? -1 : data[3];
	data += PREFIX;
	size -= PREFIX;

	/* the file's bytes, the header at least whole unless RAW */
	size_t n = flags & RAW || size >= HDR ? size : HDR;
	uint8_t *buf = calloc(n ? n : 1, 1);
	die_unless(buf != NULL, "out of memory");
	memcpy(buf, data, size);
	size_t len = n;
	struct live_header h;
	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, n >= HDR ? HDR : n);
	if (!(flags & RAW)) {
		size_t need = fix_up(&h, n);
		memcpy(buf, &h, HDR);
		len = need > n ? need : n;
	}
	write_file(buf, n, len);
	free(buf);

	/* now: just after the last publish, or long enough after it to stall */
	uint64_t now = n >= HDR ? h.updated_mono_ns : 0;
	if (flags & STALLED)
		now += (LIVE_STALL_INTERVALS + 1) * 3600 * 1000000000ull;
	struct live_proc p;
	char why[256];
	reading = true;
	enum live_status st = live_read_at(dirfd_, name, geteuid(), now, &p, why, sizeof(why));
	reading = false;

	struct live_snapshot s;
	memset(&s, 0, sizeof(s));
	struct live_proc procs[2];
	char *dirs[1] = { dir };
	s.procs = procs;
	s.dirs = dirs;
	s.ndirs = 1;
	s.mono_ns = now;
	s.wall_ns = 1700000000ull * 1000000000ull;
	if (!(flags & RAW) && !h.ended && st != LIVE_OK) {
		fprintf(stderr, "fuzz_live: the reader said: %s\n", why);
		die_unless(false, "a valid live file refused");
	}
	if (st == LIVE_OK || st == LIVE_BUSY) {
		check_proc(&p, st, now);
		snprintf(p.path, sizeof(p.path), "%s/%s", dir, name);
		shout_proc(&p);
		procs[s.nprocs++] = p;
	} else {
		die_unless(st != LIVE_GONE && st != LIVE_REFUSED, "our own file gone or refused");
		die_unless(why[0] && !strchr(why, '\n'), "a refusal without a one-line reason");
		s.skipped[st]++;
		if (st != LIVE_STALE)
			snprintf(s.notes[s.nnotes++], sizeof(s.notes[0]), "%s: %s", name, why);
	}
	if (flags & BUSY) { /* another process, caught mid-rewrite */
		memset(&procs[s.nprocs], 0, sizeof(procs[0]));
		procs[s.nprocs].h.pid = (uint32_t)getpid() + 1;
		procs[s.nprocs++].busy = true;
	}
	if (flags & FILTER)
		snprintf(o.filter, sizeof(o.filter), "%s", flags & NO_MATCH ? "\x01no such" : "e");
	if (flags & BY_PID)
		o.pid = getpid();
	for (unsigned i = 0; i < s.nnotes; i++)
		shout(s.notes[i], sizeof(s.notes[i]));
	/* the directory's name is ours: no "nan" or "inf" in it either */
	char shouted_dir[sizeof(dir)];
	snprintf(shouted_dir, sizeof(shouted_dir), "%s", dir);
	shout(shouted_dir, sizeof(shouted_dir));
	dirs[0] = shouted_dir;
	views(&s, &o, width, max_lines);
	for (size_t i = 0; i < s.nprocs; i++)
		live_proc_free(&procs[i]);
	return 0;
}
