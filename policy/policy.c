/*
 * policy.c - the ini file turned into a policy snapshot.
 *
 * inih splits lines into sections, keys and values. We feed it from our own
 * line reader over the in-memory text, for three reasons: we always know
 * the current line number (Debian's inih handler gets none), we stop at the
 * first error, and the reader catches what inih gets wrong or cannot say
 * well: over-long lines, NUL bytes, continuation lines, and section names
 * longer than inih's 50-byte section buffer (so the reader, not inih,
 * tracks the current section).
 *
 * No allocation and no globals: the snapshot is the caller's struct, the
 * parser state a small struct on the stack.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* the GNU strerror_r, which returns the message */
#endif
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "policy.h"

/* inih's stack line buffer is 200 bytes and must also hold "\r\n\0". */
#define LINE_MAX_CHARS 196
#define CONFIG_MAX_BYTES (1u << 20)
#define RULE_NAME_CHARS (POLICY_NAME_MAX - 1)

/* ---- names <-> enums ---------------------------------------------------- */

static const char *const sync_names[SYNC_POLICY_COUNT] = {
	"passthrough", "fdatasync", "noop", "defer", "group",
};
static const char *const osync_names[OSYNC_MODE_COUNT] = {
	"auto", "keep", "dsync", "strip", "defer",
};
static const char *const real_sync_names[REAL_SYNC_COUNT] = {
	"auto", "fdatasync", "fsync",
};
static const char *const on_close_names[ON_CLOSE_COUNT] = { "async", "sync" };
static const char *const order_names[ORDER_MODE_COUNT] = { "domain", "file", "auto" };
static const char *const log_mode_names[LOG_MODE_COUNT] = { "off", "summary", "calls" };
static const char *const unreported_names[UNREPORTED_COUNT] = { "warn", "exit" };
static const char *const inline_syscalls_names[] = { "off", "trap" }; /* inline_trap false, true */

static int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Locale-free: this runs in processes that may have called setlocale(). */
static bool same_word(const char *a, const char *b)
{
	while (*a && ascii_lower((unsigned char)*a) == ascii_lower((unsigned char)*b))
		a++, b++;
	return ascii_lower((unsigned char)*a) == ascii_lower((unsigned char)*b);
}

static int name_parse(const char *const *names, int count, const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < count; i++)
		if (same_word(names[i], s))
			return i;
	return -1;
}

static const char *name_of(const char *const *names, int count, int i)
{
	return i >= 0 && i < count ? names[i] : "?";
}

int sync_policy_parse(const char *name) { return name_parse(sync_names, SYNC_POLICY_COUNT, name); }
int osync_mode_parse(const char *name) { return name_parse(osync_names, OSYNC_MODE_COUNT, name); }
int real_sync_parse(const char *name) { return name_parse(real_sync_names, REAL_SYNC_COUNT, name); }
int on_close_parse(const char *name) { return name_parse(on_close_names, ON_CLOSE_COUNT, name); }
int log_mode_parse(const char *name) { return name_parse(log_mode_names, LOG_MODE_COUNT, name); }

const char *sync_policy_name(enum sync_policy s) { return name_of(sync_names, SYNC_POLICY_COUNT, s); }
const char *osync_mode_name(enum osync_mode m) { return name_of(osync_names, OSYNC_MODE_COUNT, m); }
const char *real_sync_name(enum real_sync r) { return name_of(real_sync_names, REAL_SYNC_COUNT, r); }
const char *on_close_name(enum on_close c) { return name_of(on_close_names, ON_CLOSE_COUNT, c); }
const char *order_mode_name(enum order_mode o) { return name_of(order_names, ORDER_MODE_COUNT, o); }
const char *log_mode_name(enum log_mode m) { return name_of(log_mode_names, LOG_MODE_COUNT, m); }
const char *unreported_errors_name(enum unreported_errors u)
{
	return name_of(unreported_names, UNREPORTED_COUNT, u);
}

enum osync_mode rule_osync(const struct rule *r)
{
	static const enum osync_mode follow[SYNC_POLICY_COUNT] = {
		[SYNC_PASSTHROUGH] = OSYNC_KEEP,
		[SYNC_FDATASYNC] = OSYNC_DSYNC,
		[SYNC_NOOP] = OSYNC_STRIP,
		[SYNC_DEFER] = OSYNC_DEFER,
		[SYNC_GROUP] = OSYNC_KEEP,
	};

	if (r->osync != OSYNC_AUTO)
		return r->osync;
	return (unsigned)r->sync < SYNC_POLICY_COUNT ? follow[r->sync] : OSYNC_KEEP;
}

/* ---- defaults and lookup ------------------------------------------------ */

static void rule_init_defaults(struct rule *r)
{
	memset(r, 0, sizeof(*r));
	r->sync = SYNC_PASSTHROUGH;
	r->osync = OSYNC_AUTO;
	r->real_sync = REAL_SYNC_AUTO;
	r->on_close = ON_CLOSE_ASYNC;
	r->order = ORDER_AUTO;
	r->max_delay_ms = 100;
	r->max_bytes = 16u << 20;
	/* The window bounds what is at risk; a count bound low enough to beat
	 * it at ordinary rates only multiplies real syncs for the programs that
	 * sync most (one per 1,000 calls was 670 a second in the per-commit
	 * log benchmark, 8% of its speed). */
	r->max_calls = 10000;
	r->writeback_bytes = 0;
	r->group_wait_us = POLICY_AUTO; /* lingers only when it gathers callers */
	r->max_at_risk_ms = 0;
}

void policy_init_defaults(struct policy *p)
{
	memset(p, 0, sizeof(*p));
	rule_init_defaults(&p->deflt);
	p->log_mode = LOG_SUMMARY;
	p->max_flushers = 16;
	p->ring_records = 16384;
	p->reload = true;
}

const struct rule *policy_match(const struct policy *p, const char *abspath)
{
	if (abspath)
		for (int i = 0; i < p->nrules; i++)
			if (glob_match(p->rules[i].glob, abspath))
				return &p->rules[i];
	return &p->deflt;
}

/* ---- keys --------------------------------------------------------------- */

enum key_id {
	K_POLICY, K_LOG, K_LOG_MODE, K_MAX_FLUSHERS, K_RING_RECORDS, K_RELOAD, K_UNREPORTED_ERRORS,
	K_LIVE, K_LIVE_DIR, K_INLINE_SYSCALLS,
	K_PATH, K_SYNC,
	K_OSYNC, K_REAL_SYNC, K_ON_CLOSE, K_ORDER, K_MAX_DELAY_MS, K_MAX_BYTES, K_MAX_CALLS,
	K_WRITEBACK_BYTES, K_GROUP_WAIT_US, K_MAX_AT_RISK_MS,
	KEY_COUNT
};

enum { IN_SHIM = 1, IN_RULE = 2, IN_BOTH = 3 };

/* How a key's value is checked and stored. */
enum key_kind {
	KIND_ENUM,     /* one of names[]: an int-sized enum field */
	KIND_U32,      /* a number in ranges[k] */
	KIND_U64,
	KIND_BOOL,
	KIND_SWITCH,   /* one of two names[]: a bool field, true for the second */
	KIND_LIVE,     /* "auto" or a boolean (set_live) */
	KIND_DIR,      /* an absolute directory, or "" (a POLICY_PATH_MAX field) */
	KIND_LOG_PATH, /* set_log_path */
	KIND_GLOB,     /* set_glob */
};

/* Which struct a key's field is in: the section's rule (in [shim], the
 * default rule) or the policy itself. */
enum key_home { OF_RULE, OF_POLICY };
/* Designated fields: a key without names leaves them zero, which every
 * compiler's missing-initializer warning accepts. */
#define KEY(key_name, key_sections, key_kind) .name = key_name, .sections = key_sections, .kind = key_kind
#define RULE_FIELD(field) .home = OF_RULE, .offset = offsetof(struct rule, field)
#define POLICY_FIELD(field) .home = OF_POLICY, .offset = offsetof(struct policy, field)
#define NAMES(array) .names = array, .count = (int)(sizeof(array) / sizeof(array[0]))

static const struct key_def {
	const char *name;
	int sections;
	enum key_kind kind;
	enum key_home home;
	size_t offset;
	const char *const *names; /* KIND_ENUM, KIND_SWITCH */
	int count;
} keys[KEY_COUNT] = {
	[K_POLICY] = { KEY("policy", IN_SHIM, KIND_ENUM), RULE_FIELD(sync), NAMES(sync_names) },
	[K_LOG] = { KEY("log", IN_SHIM, KIND_LOG_PATH), POLICY_FIELD(log_path) },
	[K_LOG_MODE] = { KEY("log_mode", IN_SHIM, KIND_ENUM), POLICY_FIELD(log_mode), NAMES(log_mode_names) },
	[K_MAX_FLUSHERS] = { KEY("max_flushers", IN_SHIM, KIND_U32), POLICY_FIELD(max_flushers) },
	[K_RING_RECORDS] = { KEY("ring_records", IN_SHIM, KIND_U32), POLICY_FIELD(ring_records) },
	[K_RELOAD] = { KEY("reload", IN_SHIM, KIND_BOOL), POLICY_FIELD(reload) },
	[K_UNREPORTED_ERRORS] = { KEY("unreported_errors", IN_SHIM, KIND_ENUM), POLICY_FIELD(unreported_errors),
				  NAMES(unreported_names) },
	[K_LIVE] = { KEY("live", IN_SHIM, KIND_LIVE), POLICY_FIELD(live) },
	[K_LIVE_DIR] = { KEY("live_dir", IN_SHIM, KIND_DIR), POLICY_FIELD(live_dir) },
	[K_INLINE_SYSCALLS] = { KEY("inline_syscalls", IN_SHIM, KIND_SWITCH), POLICY_FIELD(inline_trap),
				NAMES(inline_syscalls_names) },
	[K_PATH] = { KEY("path", IN_RULE, KIND_GLOB), RULE_FIELD(glob) },
	[K_SYNC] = { KEY("sync", IN_RULE, KIND_ENUM), RULE_FIELD(sync), NAMES(sync_names) },
	[K_OSYNC] = { KEY("osync", IN_BOTH, KIND_ENUM), RULE_FIELD(osync), NAMES(osync_names) },
	[K_REAL_SYNC] = { KEY("real_sync", IN_BOTH, KIND_ENUM), RULE_FIELD(real_sync), NAMES(real_sync_names) },
	[K_ON_CLOSE] = { KEY("on_close", IN_BOTH, KIND_ENUM), RULE_FIELD(on_close), NAMES(on_close_names) },
	[K_ORDER] = { KEY("order", IN_BOTH, KIND_ENUM), RULE_FIELD(order), NAMES(order_names) },
	[K_MAX_DELAY_MS] = { KEY("max_delay_ms", IN_BOTH, KIND_U32), RULE_FIELD(max_delay_ms) },
	[K_MAX_BYTES] = { KEY("max_bytes", IN_BOTH, KIND_U64), RULE_FIELD(max_bytes) },
	[K_MAX_CALLS] = { KEY("max_calls", IN_BOTH, KIND_U32), RULE_FIELD(max_calls) },
	[K_WRITEBACK_BYTES] = { KEY("writeback_bytes", IN_BOTH, KIND_U64), RULE_FIELD(writeback_bytes) },
	[K_GROUP_WAIT_US] = { KEY("group_wait_us", IN_BOTH, KIND_U32), RULE_FIELD(group_wait_us) },
	[K_MAX_AT_RISK_MS] = { KEY("max_at_risk_ms", IN_BOTH, KIND_U32), RULE_FIELD(max_at_risk_ms) },
};

/* KIND_ENUM stores through an int: every enum a key names is int-sized. */
_Static_assert(sizeof(enum sync_policy) == sizeof(int) && sizeof(enum osync_mode) == sizeof(int) &&
		       sizeof(enum real_sync) == sizeof(int) && sizeof(enum on_close) == sizeof(int) &&
		       sizeof(enum order_mode) == sizeof(int) && sizeof(enum log_mode) == sizeof(int) &&
		       sizeof(enum unreported_errors) == sizeof(int),
	       "an enum key's field is not int-sized");
_Static_assert(sizeof(((struct policy *)0)->live_dir) == POLICY_PATH_MAX, "KIND_DIR's field size");

static int key_find(const char *name)
{
	for (int k = 0; k < KEY_COUNT; k++)
		if (strcmp(keys[k].name, name) == 0)
			return k;
	return -1;
}

/* ---- parser state and errors -------------------------------------------- */

enum section_kind { SECTION_NONE, SECTION_SHIM, SECTION_RULE };

struct parser {
	const char *name;          /* file name for messages */
	const char *pos, *end;     /* text not yet handed to inih */
	int lineno;                /* line being read (the last one handed out) */
	bool after_key;            /* inih would take an indented line as a continuation */
	struct policy *p;
	enum section_kind section;
	struct rule *rule;         /* what the current section fills */
	int section_line;
	int shim_line;             /* line of [shim], 0 until seen */
	int key_line[KEY_COUNT];   /* where each key was set in this section, 0 = not yet */
	char *err;
	size_t errlen;
	int err_at;                /* line being read when the first error was found, 0 = none */
};

static void vreport(struct parser *ps, int line, const char *fmt, va_list ap)
{
	int n;

	if (!ps->err || !ps->errlen)
		return;
	if (line > 0)
		n = snprintf(ps->err, ps->errlen, "%s:%d: ", ps->name, line);
	else /* not from a file: an environment variable */
		n = snprintf(ps->err, ps->errlen, "%s: ", ps->name);
	if (n >= 0 && (size_t)n < ps->errlen)
		vsnprintf(ps->err + n, ps->errlen - n, fmt, ap);
}

/* Record the first error: about `line`, found while reading ps->lineno.
 * Returns 0 so handlers can `return fail(...)`. */
__attribute__((format(printf, 3, 4)))
static int fail(struct parser *ps, int line, const char *fmt, ...)
{
	va_list ap;

	if (ps->err_at)
		return 0;
	ps->err_at = ps->lineno;
	va_start(ap, fmt);
	vreport(ps, line, fmt, ap);
	va_end(ap);
	return 0;
}

/* The line-less form, for errors about the file as a whole. */
__attribute__((format(printf, 4, 5)))
static int fail_file(const char *name, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return -1;
	n = snprintf(err, errlen, "%s: ", name);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* "a, b, c" into buf, for messages that list the valid choices. */
static const char *join_names(const char *const *names, int count, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < count && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

const char *sync_policy_names(char *buf, size_t len)
{
	return join_names(sync_names, SYNC_POLICY_COUNT, buf, len);
}

static const char *join_keys(int sections, char *buf, size_t len)
{
	const char *names[KEY_COUNT];
	int n = 0;

	for (int k = 0; k < KEY_COUNT; k++)
		if (keys[k].sections & sections)
			names[n++] = keys[k].name;
	return join_names(names, n, buf, len);
}

/* ---- values ------------------------------------------------------------- */

/* Plain unsigned decimal; byte sizes may end in K, M or G (x1024, any case,
 * optionally followed by "iB" or "B"), or in a lone "B". */
static bool parse_number(const char *s, bool bytes, uint64_t *out)
{
	uint64_t n = 0;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned digit = (unsigned)(*s - '0');

		if (n > (UINT64_MAX - digit) / 10)
			return false;
		n = n * 10 + digit;
	}
	if (bytes && *s) {
		switch (ascii_lower((unsigned char)*s)) {
		case 'k': shift = 10; s++; break;
		case 'm': shift = 20; s++; break;
		case 'g': shift = 30; s++; break;
		}
		if (shift && ascii_lower((unsigned char)s[0]) == 'i' && ascii_lower((unsigned char)s[1]) == 'b')
			s += 2;
		else if (ascii_lower((unsigned char)*s) == 'b')
			s++;
		if (n > UINT64_MAX >> shift)
			return false;
		n <<= shift;
	}
	if (*s)
		return false;
	*out = n;
	return true;
}

struct num_range {
	uint64_t lo, hi;
	bool bytes;         /* K/M/G suffixes allowed */
	bool zero_ok;       /* 0 is also valid (means "off") */
	bool auto_ok;       /* "auto" is also valid (POLICY_AUTO) */
	bool power_of_two;
};

static const struct num_range ranges[KEY_COUNT] = {
	[K_MAX_FLUSHERS] = { .lo = 1, .hi = 4096 },
	[K_RING_RECORDS] = { .lo = 1024, .hi = 1048576, .power_of_two = true },
	[K_MAX_DELAY_MS] = { .lo = 1, .hi = 600000, .auto_ok = true },
	[K_MAX_BYTES] = { .lo = 4096, .hi = UINT64_C(1) << 40, .bytes = true },
	[K_MAX_CALLS] = { .lo = 1, .hi = 1000000000 },
	[K_WRITEBACK_BYTES] = { .lo = 4096, .hi = UINT64_C(1) << 40, .bytes = true, .zero_ok = true },
	[K_GROUP_WAIT_US] = { .lo = 0, .hi = 1000000, .auto_ok = true },
	[K_MAX_AT_RISK_MS] = { .lo = 1, .hi = 600000, .zero_ok = true },
};

static const char *range_text(const struct num_range *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%llu to %llu%s%s", r->auto_ok ? "auto or " : "",
		 r->zero_ok ? "0 (off) or " : "",
		 (unsigned long long)r->lo, (unsigned long long)r->hi,
		 r->power_of_two ? ", a power of two" : "",
		 r->bytes ? " (suffix K, M or G allowed)" : "");
	return buf;
}

static bool set_number(struct parser *ps, int k, const char *v, uint64_t *out)
{
	const struct num_range *r = &ranges[k];
	char text[96];
	uint64_t n;

	if (r->auto_ok && strcmp(v, "auto") == 0) {
		*out = POLICY_AUTO;
		return true;
	}
	if (!parse_number(v, r->bytes, &n))
		return fail(ps, ps->lineno, "bad number '%s' for %s; use a plain decimal number, %s",
			    v, keys[k].name, range_text(r, text, sizeof(text)));
	if (!(r->zero_ok && n == 0) &&
	    (n < r->lo || n > r->hi || (r->power_of_two && (n & (n - 1)))))
		return fail(ps, ps->lineno, "%s = %s is out of range; use %s",
			    keys[k].name, v, range_text(r, text, sizeof(text)));
	*out = n;
	return true;
}

static bool set_enum(struct parser *ps, int k, const char *v, const char *const *names,
		     int count, int *out)
{
	char list[128];
	int e = name_parse(names, count, v);

	if (e < 0)
		return fail(ps, ps->lineno, "unknown %s '%s'; use one of: %s", keys[k].name, v,
			    join_names(names, count, list, sizeof(list)));
	*out = e;
	return true;
}

static bool set_bool(struct parser *ps, int k, const char *v, bool *out)
{
	static const char *const words[] = { "false", "true", "no", "yes", "off", "on", "0", "1" };
	int i = name_parse(words, 8, v);

	if (i < 0)
		return fail(ps, ps->lineno, "bad boolean '%s' for %s; use true/false, yes/no, on/off or 1/0",
			    v, keys[k].name);
	*out = i & 1;
	return true;
}

/* live: "auto" (the default: on where a rule can acknowledge a sync
 * early, policy_live_wanted), or a boolean that forces it. */
static bool set_live(struct parser *ps, int k, const char *v, struct policy *p)
{
	p->live_set = strcmp(v, "auto") != 0;
	p->live = false;
	return !p->live_set || set_bool(ps, k, v, &p->live);
}

/* "" (no log) or an absolute path where %p is the pid and %% a '%'. */
static bool set_log_path(struct parser *ps, const char *v)
{
	if (*v && *v != '/')
		return fail(ps, ps->lineno, "log path '%s' is relative; use an absolute path, or leave it empty for no log", v);
	for (const char *c = v; *c; c++) {
		if (*c != '%')
			continue;
		c++;
		if (*c != 'p' && *c != '%')
			return fail(ps, ps->lineno, "bad '%%%.1s' in log path '%s'; use %%p for the pid or %%%% for a literal %%", c, v);
	}
	if (strlen(v) >= sizeof(ps->p->log_path))
		return fail(ps, ps->lineno, "log path too long (max %zu characters); use a shorter path",
			    sizeof(ps->p->log_path) - 1);
	memcpy(ps->p->log_path, v, strlen(v) + 1);
	return true;
}

/* An absolute directory, or "" for the default place. */
static bool set_dir_path(struct parser *ps, int k, const char *v, char *out, size_t len)
{
	if (*v && *v != '/')
		return fail(ps, ps->lineno, "%s '%s' is relative; use an absolute path, or leave it empty for the default",
			    keys[k].name, v);
	if (strlen(v) >= len)
		return fail(ps, ps->lineno, "%s too long (max %zu characters); use a shorter path", keys[k].name,
			    len - 1);
	memcpy(out, v, strlen(v) + 1);
	return true;
}

static bool set_glob(struct parser *ps, const char *v)
{
	char why[128];

	if (glob_check(v, why, sizeof(why)) < 0)
		return fail(ps, ps->lineno, "bad path glob '%s': %s; fix the pattern (syntax in shim.ini)", v, why);
	memcpy(ps->rule->glob, v, strlen(v) + 1);
	return true;
}

/* One key's value, checked as its kind says, into its field. */
static bool set_key(struct parser *ps, int k, const char *v)
{
	const struct key_def *d = &keys[k];
	char *field = (d->home == OF_RULE ? (char *)ps->rule : (char *)ps->p) + d->offset;
	uint64_t n = 0;

	switch (d->kind) {
	case KIND_ENUM:
		return set_enum(ps, k, v, d->names, d->count, (int *)(void *)field);
	case KIND_U32:
	case KIND_U64:
		if (!set_number(ps, k, v, &n))
			return false;
		if (d->kind == KIND_U32)
			*(uint32_t *)(void *)field = (uint32_t)n;
		else
			*(uint64_t *)(void *)field = n;
		return true;
	case KIND_BOOL:
		return set_bool(ps, k, v, (bool *)field);
	case KIND_SWITCH: {
		int e;
		if (!set_enum(ps, k, v, d->names, d->count, &e))
			return false;
		*(bool *)field = e == 1;
		return true;
	}
	case KIND_LIVE:
		return set_live(ps, k, v, ps->p);
	case KIND_DIR:
		return set_dir_path(ps, k, v, field, POLICY_PATH_MAX);
	case KIND_LOG_PATH:
		return set_log_path(ps, v);
	case KIND_GLOB:
		return set_glob(ps, v);
	}
	return false;
}

/* ---- environment overrides --------------------------------------------- */

/* One variable, checked by the same code and with the same messages as
 * the ini key it overrides; the message names it as "VAR=VALUE". */
static int env_one(struct policy *p, const char *var, const char *value, int k,
		   char *err, size_t errlen)
{
	char name[160];
	struct parser ps = {
		.name = name, .p = p, .section = SECTION_SHIM, .rule = &p->deflt,
		.err = err, .errlen = errlen,
	};

	if (!value || !*value)
		return 0;
	snprintf(name, sizeof(name), "%s=%.*s%s", var, 100, value, strlen(value) > 100 ? "..." : "");
	return set_key(&ps, k, value) ? 0 : -1;
}

int policy_apply_env(struct policy *p, const struct policy_env *env, char *err, size_t errlen)
{
	char first[POLICY_ERR_MAX] = "";
	bool log_set = env->log && *env->log;
	int bad = 0;

	if (err && errlen)
		err[0] = '\0';
	bad |= env_one(p, "SYNCSHIM_POLICY", env->policy, K_POLICY, first, sizeof(first));
	if (env_one(p, "SYNCSHIM_LOG", env->log, K_LOG, bad ? NULL : first, sizeof(first)) < 0)
		bad = -1;
	else if (log_set && p->log_mode == LOG_OFF)
		p->log_mode = LOG_SUMMARY; /* asking for a log means wanting one */
	if (env_one(p, "SYNCSHIM_LOG_MODE", env->log_mode, K_LOG_MODE, bad ? NULL : first,
		    sizeof(first)) < 0)
		bad = -1;
	if (env_one(p, "SYNCSHIM_LIVE", env->live, K_LIVE, bad ? NULL : first, sizeof(first)) < 0)
		bad = -1;
	if (env_one(p, "SYNCSHIM_LIVE_DIR", env->live_dir, K_LIVE_DIR, bad ? NULL : first, sizeof(first)) < 0)
		bad = -1;
	if (env_one(p, "SYNCSHIM_INLINE_SYSCALLS", env->inline_syscalls, K_INLINE_SYSCALLS, bad ? NULL : first,
		    sizeof(first)) < 0)
		bad = -1;
	if (bad && err && errlen)
		snprintf(err, errlen, "%s", first);
	return bad ? -1 : 0;
}

/* ---- the inih handler --------------------------------------------------- */

static const char *section_title(const struct parser *ps, char *buf, size_t len)
{
	if (ps->section == SECTION_SHIM)
		return "[shim]";
	snprintf(buf, len, "[rule %s]", ps->rule->name);
	return buf;
}

static int unknown_key(struct parser *ps, const char *name, int k)
{
	int here = ps->section == SECTION_SHIM ? IN_SHIM : IN_RULE;
	char title[POLICY_NAME_MAX + 8], list[384];

	const char *where = section_title(ps, title, sizeof(title));

	join_keys(here, list, sizeof(list));
	if (k >= 0)
		return fail(ps, ps->lineno, "'%s' is not allowed in %s (only in %s); valid keys here: %s",
			    name, where, keys[k].sections == IN_SHIM ? "[shim]" : "[rule NAME]", list);
	return fail(ps, ps->lineno, "unknown key '%s' in %s; valid keys here: %s", name, where, list);
}

/* inih calls this for every "key = value"; `section` is ignored because
 * inih truncates long ones (the reader tracks the real section). */
static int on_pair(void *user, const char *section, const char *name, const char *value)
{
	struct parser *ps = user;
	int here = ps->section == SECTION_SHIM ? IN_SHIM : IN_RULE;
	int k;

	(void)section;
	if (!value) /* only if someone turned on inih's ini_allow_no_value */
		value = "";
	if (ps->err_at)
		return 0;
	if (ps->section == SECTION_NONE)
		return fail(ps, ps->lineno, "'%s' is outside any section; put it under [shim] or a [rule NAME] header", name);
	if (!*name)
		return fail(ps, ps->lineno, "missing key before '='; write 'key = value'");
	k = key_find(name);
	if (k < 0 || !(keys[k].sections & here))
		return unknown_key(ps, name, k);
	if (ps->key_line[k])
		return fail(ps, ps->lineno, "'%s' given twice in this section (first at line %d); keep one",
			    name, ps->key_line[k]);
	ps->key_line[k] = ps->lineno;
	return set_key(ps, k, value);
}

/* ---- sections ----------------------------------------------------------- */

/* Checks that need the whole section, run when the next one starts or at
 * the end of the text. */
static bool end_section(struct parser *ps)
{
	if (ps->section == SECTION_RULE && !ps->rule->glob[0])
		return fail(ps, ps->section_line, "rule '%s' has no path; add 'path = /some/glob' to it",
			    ps->rule->name);
	return true;
}

static bool rule_name_ok(const char *s, size_t len)
{
	if (len < 1 || len > RULE_NAME_CHARS)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static bool start_rule(struct parser *ps, const char *name, size_t len)
{
	struct policy *p = ps->p;
	struct rule *r;

	if (!rule_name_ok(name, len))
		return fail(ps, ps->lineno, "bad rule name '%.*s'; use 1-%d characters from A-Z a-z 0-9 _ . -",
			    (int)len, name, RULE_NAME_CHARS);
	for (int i = 0; i < p->nrules; i++)
		if (strlen(p->rules[i].name) == len && memcmp(p->rules[i].name, name, len) == 0)
			return fail(ps, ps->lineno, "rule '%.*s' defined twice (first at line %d); give each rule a unique name",
				    (int)len, name, p->rules[i].line);
	if (p->nrules == POLICY_MAX_RULES)
		return fail(ps, ps->lineno, "too many rules (max %d); merge rules with a broader glob",
			    POLICY_MAX_RULES);
	r = &p->rules[p->nrules++];
	rule_init_defaults(r);
	memcpy(r->name, name, len);
	r->line = ps->lineno;
	ps->section = SECTION_RULE;
	ps->rule = r;
	return true;
}

static bool start_shim(struct parser *ps)
{
	if (ps->shim_line)
		return fail(ps, ps->lineno, "[shim] given twice (first at line %d); merge the two sections",
			    ps->shim_line);
	ps->shim_line = ps->lineno;
	ps->section = SECTION_SHIM;
	ps->rule = &ps->p->deflt;
	return true;
}

/* Trimmed text between '[' and ']'. */
static bool start_section(struct parser *ps, const char *s, size_t len)
{
	while (len && is_space(*s))
		s++, len--;
	while (len && is_space(s[len - 1]))
		len--;
	if (!end_section(ps))
		return false;
	memset(ps->key_line, 0, sizeof(ps->key_line));
	ps->section_line = ps->lineno;
	if (len == 4 && memcmp(s, "shim", 4) == 0)
		return start_shim(ps);
	if (len >= 4 && memcmp(s, "rule", 4) == 0 && (len == 4 || is_space(s[4]))) {
		size_t skip = 4;

		while (skip < len && is_space(s[skip]))
			skip++;
		if (skip == len)
			return fail(ps, ps->lineno, "rule section without a name; write [rule NAME]");
		return start_rule(ps, s + skip, len - skip);
	}
	return fail(ps, ps->lineno, "unknown section [%.*s]; valid sections are [shim] and [rule NAME]",
		    (int)len, s);
}

/* ---- the line reader ---------------------------------------------------- */

/* inih's scan: up to one of `chars`, or to a ';' that follows whitespace
 * (an inline comment), or to the end. */
static const char *find_chars_or_comment(const char *s, const char *chars)
{
	bool was_space = false;

	while (*s && !strchr(chars, *s) && !(was_space && *s == ';')) {
		was_space = is_space(*s);
		s++;
	}
	return s;
}

/* Look at a line the way inih will, before it does. */
static bool check_line(struct parser *ps, const char *line)
{
	const char *s = line, *end, *rest;

	while (is_space(*s))
		s++;
	if (!*s || *s == ';' || *s == '#')
		return true;
	if (s > line && ps->after_key)
		return fail(ps, ps->lineno, "indented line after a key would continue its value, and "
			    "continuation lines are not supported; remove the leading whitespace "
			    "and keep each value on one line");
	if (*s == '[') {
		end = find_chars_or_comment(s + 1, "]");
		if (*end != ']')
			return fail(ps, ps->lineno, "section header without closing ']'; write [shim] or [rule NAME]");
		for (rest = end + 1; is_space(*rest); rest++)
			;
		if (*rest && *rest != ';')
			return fail(ps, ps->lineno, "unexpected text after ']'; put only a ';' comment after a section header");
		ps->after_key = false;
		return start_section(ps, s + 1, (size_t)(end - s - 1));
	}
	end = find_chars_or_comment(s, "=:");
	if (*end == ':')
		return fail(ps, ps->lineno, "':' between key and value; write 'key = value'");
	if (*end != '=')
		return fail(ps, ps->lineno, "malformed line; expected 'key = value', '[section]' or a ';' comment");
	ps->after_key = true;
	return true;
}

/* fgets() for inih over the in-memory text: hands out one whole line. */
static char *read_line(char *buf, int size, void *stream)
{
	struct parser *ps = stream;
	const char *start = ps->pos, *nl;
	size_t len, chars;

	if (ps->err_at || start >= ps->end)
		return NULL;
	nl = memchr(start, '\n', (size_t)(ps->end - start));
	len = nl ? (size_t)(nl + 1 - start) : (size_t)(ps->end - start);
	chars = len - (nl != NULL);
	if (chars && start[chars - 1] == '\r')
		chars--;
	ps->pos = start + len;
	ps->lineno++;

	if (memchr(start, '\0', len)) {
		fail(ps, ps->lineno, "NUL byte in file; the config must be plain text");
		return NULL;
	}
	if (chars > LINE_MAX_CHARS || size < 1 || len > (size_t)size - 1) {
		fail(ps, ps->lineno, "line too long (max %d characters); shorten it", LINE_MAX_CHARS);
		return NULL;
	}
	memcpy(buf, start, len);
	buf[len] = '\0';
	return check_line(ps, buf) ? buf : NULL;
}

/* ---- loading ------------------------------------------------------------ */

static int parse_text(const char *text, size_t len, const char *name, struct policy *p,
		      char *err, size_t errlen)
{
	struct parser ps = {
		.name = name, .pos = text, .end = text + len, .p = p, .err = err, .errlen = errlen,
	};
	int syntax;

	policy_init_defaults(p);
	if (err && errlen)
		err[0] = '\0';
	if (len > CONFIG_MAX_BYTES)
		return fail_file(name, err, errlen, "file too large (more than %u bytes); "
				 "point SYNCSHIM_CONFIG at the right file", CONFIG_MAX_BYTES);
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		ps.pos += 3;

	syntax = ini_parse_stream(read_line, &ps, on_pair, &ps);
	if (!ps.err_at) {
		ps.lineno++; /* the end of the text is "read" after the last line */
		end_section(&ps);
	}
	/* The reader flags every malformed line itself; inih's own verdict is a
	 * backstop, and it wins only if it came first. */
	if (syntax > 0 && (!ps.err_at || syntax < ps.err_at)) {
		ps.err_at = 0;
		fail(&ps, syntax, "malformed line; expected 'key = value', '[section]' or a ';' comment");
	} else if (syntax < 0 && !ps.err_at) {
		fail(&ps, ps.lineno, "ini parser failed (%d)", syntax);
	}
	if (ps.err_at) {
		policy_init_defaults(p);
		return -1;
	}
	return 0;
}

int policy_load_string(const char *text, const char *name, struct policy *p, char *err, size_t errlen)
{
	if (!name)
		name = "<string>";
	if (!text)
		text = "";
	return parse_text(text, strnlen(text, CONFIG_MAX_BYTES + 1), name, p, err, errlen);
}

int policy_load_mem(const char *text, size_t len, const char *name, struct policy *p,
		    char *err, size_t errlen)
{
	if (!name)
		name = "<memory>";
	if (!text)
		len = 0;
	return parse_text(text ? text : "", len, name, p, err, errlen);
}

/* ---- reading the file ----------------------------------------------------- */

/*
 * The shim reads the config inside other people's processes, from its
 * constructor: whatever the path names, the read must neither block nor
 * touch anything but a plain file. So the path is stat'ed before it is
 * opened (opening a device can have effects: a tape rewinds, a watchdog
 * arms), opened non-blocking (a FIFO swapped in after the stat must not
 * wait for a writer) and checked again on the descriptor.
 */

/* Pseudo file systems whose "files" are not configs: reads can block,
 * never end, or have effects. */
static const struct {
	unsigned long magic;
	const char *name;
} pseudo_fs[] = {
	{ 0x9fa0, "procfs (/proc)" },
	{ 0x62656572, "sysfs (/sys)" },
	{ 0x64626720, "debugfs" },
	{ 0x74726163, "tracefs" },
	{ 0x73636673, "securityfs" },
	{ 0x62656570, "configfs" },
};

/* "is a FIFO" and so on, or NULL for a regular file. */
static const char *not_regular(mode_t mode)
{
	if (S_ISREG(mode))
		return NULL;
	if (S_ISDIR(mode))
		return "is a directory";
	if (S_ISFIFO(mode))
		return "is a FIFO (named pipe)";
	if (S_ISSOCK(mode))
		return "is a socket";
	if (S_ISCHR(mode))
		return "is a character device";
	if (S_ISBLK(mode))
		return "is a block device";
	return "is not a regular file";
}

static int fail_errno(const char *path, char *err, size_t errlen, int e)
{
	char why[128];

	return fail_file(path, err, errlen, "cannot read: %s; check the path and its permissions",
			 strerror_r(e, why, sizeof(why)));
}

static int fail_kind(const char *path, char *err, size_t errlen, const char *what)
{
	return fail_file(path, err, errlen, "%s, not a regular file; name an ini file instead", what);
}

static const char *pseudo_fs_name(const struct statfs *sfs)
{
	for (size_t i = 0; i < sizeof(pseudo_fs) / sizeof(pseudo_fs[0]); i++)
		if ((unsigned long)sfs->f_type == pseudo_fs[i].magic)
			return pseudo_fs[i].name;
	return NULL;
}

static int fail_pseudo(const char *path, char *err, size_t errlen, const char *fs)
{
	return fail_file(path, err, errlen, "is on %s, not a config file; "
			 "copy the settings into an ini file", fs);
}

/* Opens path for reading if it is a regular file on a real file system;
 * -1 with the message in err otherwise. */
static int open_config(const char *path, char *err, size_t errlen)
{
	struct stat st;
	struct statfs sfs;
	int fd;

	if (stat(path, &st) < 0)
		return fail_errno(path, err, errlen, errno);
	if (not_regular(st.st_mode))
		return fail_kind(path, err, errlen, not_regular(st.st_mode));
	if (statfs(path, &sfs) == 0 && pseudo_fs_name(&sfs))
		return fail_pseudo(path, err, errlen, pseudo_fs_name(&sfs));
	do
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return fail_errno(path, err, errlen, errno);
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return fail_errno(path, err, errlen, e);
	}
	if (not_regular(st.st_mode)) { /* swapped after the stat */
		close(fd);
		return fail_kind(path, err, errlen, not_regular(st.st_mode));
	}
	if (fstatfs(fd, &sfs) == 0 && pseudo_fs_name(&sfs)) {
		close(fd);
		return fail_pseudo(path, err, errlen, pseudo_fs_name(&sfs));
	}
	return fd;
}

/* Reads up to cap bytes; returns the size, or -1 with errno set. */
static ssize_t read_all(int fd, char *buf, size_t cap)
{
	size_t got = 0;

	while (got < cap) {
		ssize_t n = read(fd, buf + got, cap - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int load_fd(int fd, const char *path, struct policy *p, char *err, size_t errlen)
{
	/* One byte more than allowed, to tell "exactly 1 MiB" from "too big".
	 * Anonymous memory, not a file mapping: a config truncated while we
	 * read it must not SIGBUS the host process. */
	const size_t cap = CONFIG_MAX_BYTES + 1;
	char *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ssize_t len;
	int rc;

	if (buf == MAP_FAILED)
		return fail_errno(path, err, errlen, errno);
	len = read_all(fd, buf, cap);
	if (len < 0)
		rc = fail_errno(path, err, errlen, errno);
	else
		rc = parse_text(buf, (size_t)len, path, p, err, errlen);
	munmap(buf, cap);
	return rc;
}

int policy_load_file(const char *path, struct policy *p, char *err, size_t errlen)
{
	int saved_errno = errno; /* in the shim, the host's errno */
	int fd, rc;

	policy_init_defaults(p);
	if (err && errlen)
		err[0] = '\0';
	if (!path || !*path) {
		rc = fail_file("(none)", err, errlen, "cannot read: no config file named; "
			       "set SYNCSHIM_CONFIG to the ini file");
	} else if ((fd = open_config(path, err, errlen)) < 0) {
		rc = -1;
	} else {
		rc = load_fd(fd, path, p, err, errlen);
		close(fd);
	}
	if (rc == 0)
		snprintf(p->source, sizeof(p->source), "%s", path);
	else
		policy_init_defaults(p);
	errno = saved_errno;
	return rc;
}

/* ---- formatting --------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, used; /* used may pass len: then the text was truncated */
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->used < o->len ? o->len - o->used : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used += (size_t)n;
}

/* "key = value", or "key=value" if the spaces would overflow the line
 * limit (a value that came from "key=value" must round-trip). */
static void put_str(struct out *o, const char *key, const char *value)
{
	if (!*value)
		put(o, "%s =\n", key);
	else if (strlen(key) + 3 + strlen(value) > LINE_MAX_CHARS)
		put(o, "%s=%s\n", key, value);
	else
		put(o, "%s = %s\n", key, value);
}

static void put_bytes(struct out *o, const char *key, uint64_t n)
{
	static const char units[] = "GMK";

	for (int i = 0; i < 3; i++) {
		uint64_t unit = UINT64_C(1) << (30 - 10 * i);

		if (n && n % unit == 0) {
			put(o, "%s = %llu%c\n", key, (unsigned long long)(n / unit), units[i]);
			return;
		}
	}
	put(o, "%s = %llu\n", key, (unsigned long long)n);
}

static void put_auto(struct out *o, const char *key, uint32_t n)
{
	if (n == POLICY_AUTO)
		put(o, "%s = auto\n", key);
	else
		put(o, "%s = %u\n", key, (unsigned)n);
}

static void put_knobs(struct out *o, const struct rule *r)
{
	put(o, "osync = %s\n", osync_mode_name(r->osync));
	put(o, "real_sync = %s\n", real_sync_name(r->real_sync));
	put(o, "on_close = %s\n", on_close_name(r->on_close));
	put(o, "order = %s\n", order_mode_name(r->order));
	put_auto(o, "max_delay_ms", r->max_delay_ms);
	put_bytes(o, "max_bytes", r->max_bytes);
	put(o, "max_calls = %u\n", (unsigned)r->max_calls);
	put_bytes(o, "writeback_bytes", r->writeback_bytes);
	put_auto(o, "group_wait_us", r->group_wait_us);
	put(o, "max_at_risk_ms = %u\n", (unsigned)r->max_at_risk_ms);
}

size_t policy_format(const struct policy *p, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len, .used = 0 };

	put(&o, "[shim]\n");
	put(&o, "policy = %s\n", sync_policy_name(p->deflt.sync));
	put_str(&o, "log", p->log_path);
	put(&o, "log_mode = %s\n", log_mode_name(p->log_mode));
	put(&o, "max_flushers = %u\n", (unsigned)p->max_flushers);
	put(&o, "ring_records = %u\n", (unsigned)p->ring_records);
	put(&o, "reload = %s\n", p->reload ? "true" : "false");
	put(&o, "unreported_errors = %s\n", unreported_errors_name(p->unreported_errors));
	put(&o, "live = %s\n", !p->live_set ? "auto" : p->live ? "true" : "false");
	put_str(&o, "live_dir", p->live_dir);
	put(&o, "inline_syscalls = %s\n", p->inline_trap ? "trap" : "off");
	put_knobs(&o, &p->deflt);
	for (int i = 0; i < p->nrules && i < POLICY_MAX_RULES; i++) {
		const struct rule *r = &p->rules[i];

		put(&o, "\n[rule %s]\n", r->name);
		put_str(&o, "path", r->glob);
		put(&o, "sync = %s\n", sync_policy_name(r->sync));
		put_knobs(&o, r);
	}
	if (!len)
		return 0;
	return o.used < len ? o.used : len - 1;
}
