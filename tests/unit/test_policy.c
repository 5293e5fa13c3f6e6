/*
 * test_policy.c - the ini parser, globs, matching and formatting.
 *
 * Runs with the repository root as the working directory (shim.ini and
 * tests/data/policy/ are read from there).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "decide.h"
#include "policy.h"

/* ---- helpers ------------------------------------------------------------- */

static int load(const char *text, struct policy *p, char *err)
{
	return policy_load_string(text, "t.ini", p, err, POLICY_ERR_MAX);
}

static void expect_ok(const char *text, struct policy *p)
{
	char err[POLICY_ERR_MAX] = "";

	cr_assert_eq(load(text, p, err), 0, "unexpected error: %s\n--- config:\n%s", err, text);
	cr_assert_str_empty(err);
}

static bool is_defaults(const struct policy *p)
{
	struct policy d;

	policy_init_defaults(&d);
	return memcmp(p, &d, sizeof(d)) == 0;
}

/* The load fails with one line that starts with `prefix` ("t.ini:LINE: "),
 * contains `also` (if given), says how to fix it, and leaves defaults. */
static void expect_err(const char *text, const char *prefix, const char *also)
{
	char err[POLICY_ERR_MAX] = "";
	struct policy p;

	cr_assert_eq(load(text, &p, err), -1, "accepted:\n%s", text);
	cr_assert(strncmp(err, prefix, strlen(prefix)) == 0,
		  "want prefix '%s', got '%s'\n--- config:\n%s", prefix, err, text);
	cr_assert(!strchr(err, '\n'), "message is not one line: '%s'", err);
	cr_assert(strstr(err + strlen(prefix), "; "), "no '; how to fix it' in '%s'", err);
	if (also)
		cr_assert(strstr(err, also), "'%s' not in '%s'", also, err);
	cr_assert(is_defaults(&p), "snapshot not reset to defaults after: %s", err);
}

static char *read_text(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert(f, "cannot open %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static void temp_path(char *path, size_t len, const char *tag)
{
	snprintf(path, len, "/tmp/test_policy.%d.%s.ini", (int)getpid(), tag);
}

static void expect_rule_eq(const struct rule *a, const struct rule *b)
{
	cr_expect_str_eq(a->name, b->name);
	cr_expect_str_eq(a->glob, b->glob);
	cr_expect_eq(a->sync, b->sync, "%s: sync", a->name);
	cr_expect_eq(a->osync, b->osync, "%s: osync", a->name);
	cr_expect_eq(a->real_sync, b->real_sync, "%s: real_sync", a->name);
	cr_expect_eq(a->on_close, b->on_close, "%s: on_close", a->name);
	cr_expect_eq(a->max_delay_ms, b->max_delay_ms, "%s: max_delay_ms", a->name);
	cr_expect_eq(a->max_bytes, b->max_bytes, "%s: max_bytes", a->name);
	cr_expect_eq(a->max_calls, b->max_calls, "%s: max_calls", a->name);
	cr_expect_eq(a->writeback_bytes, b->writeback_bytes, "%s: writeback_bytes", a->name);
	cr_expect_eq(a->group_wait_us, b->group_wait_us, "%s: group_wait_us", a->name);
	cr_expect_eq(a->max_at_risk_ms, b->max_at_risk_ms, "%s: max_at_risk_ms", a->name);
}

/* Equal as far as the ini text can say: header lines and source differ. */
static void expect_policy_eq(const struct policy *a, const struct policy *b)
{
	expect_rule_eq(&a->deflt, &b->deflt);
	cr_assert_eq(a->nrules, b->nrules);
	for (int i = 0; i < a->nrules; i++)
		expect_rule_eq(&a->rules[i], &b->rules[i]);
	cr_expect_str_eq(a->log_path, b->log_path);
	cr_expect_eq(a->log_mode, b->log_mode);
	cr_expect_eq(a->max_flushers, b->max_flushers);
	cr_expect_eq(a->ring_records, b->ring_records);
	cr_expect_eq(a->reload, b->reload);
}

static void expect_value(const char *section, const char *key, const char *value)
{
	char text[512];
	struct policy p;

	snprintf(text, sizeof(text), "%s\n%s = %s\n", section, key, value);
	expect_ok(text, &p);
}

/* key = value after section must fail on its line with `also` in the message. */
static void expect_bad_value(const char *section, const char *key, const char *value, const char *also)
{
	char text[512], prefix[32];
	int line = 2;

	for (const char *c = section; *c; c++)
		line += *c == '\n';
	snprintf(text, sizeof(text), "%s\n%s = %s\n", section, key, value);
	snprintf(prefix, sizeof(prefix), "t.ini:%d: ", line);
	expect_err(text, prefix, also);
}

#define SHIM "[shim]"
#define RULE "[rule r]\npath = /x"
#define RULE_NO_PATH "[rule r]"

/* ---- defaults and good configs ------------------------------------------- */

Test(defaults, built_in_values)
{
	struct policy p;

	memset(&p, 0xa5, sizeof(p));
	policy_init_defaults(&p);
	cr_expect_eq(p.deflt.sync, SYNC_PASSTHROUGH);
	cr_expect_eq(p.deflt.osync, OSYNC_AUTO);
	cr_expect_eq(p.deflt.real_sync, REAL_SYNC_AUTO);
	cr_expect_eq(p.deflt.on_close, ON_CLOSE_ASYNC);
	cr_expect_eq(p.deflt.max_delay_ms, 100);
	cr_expect_eq(p.deflt.max_bytes, 16u << 20);
	cr_expect_eq(p.deflt.max_calls, 10000);
	cr_expect_eq(p.deflt.writeback_bytes, 0);
	cr_expect_eq(p.deflt.group_wait_us, POLICY_AUTO);
	cr_expect_str_empty(p.deflt.name);
	cr_expect_str_empty(p.deflt.glob);
	cr_expect_eq(p.deflt.line, 0);
	cr_expect_eq(p.nrules, 0);
	cr_expect_str_empty(p.log_path);
	cr_expect_eq(p.log_mode, LOG_SUMMARY);
	cr_expect_eq(p.max_flushers, 16);
	cr_expect_eq(p.ring_records, 16384);
	cr_expect_eq(p.reload, true);
	cr_expect_str_empty(p.source);
}

Test(good, empty_and_comment_only_texts_give_defaults)
{
	static const char *const texts[] = {
		"",
		"\n\n\n",
		"; only a comment\n# another one\n   ; indented comment\n\t\n",
		"; no newline at the end",
		"\xEF\xBB\xBF; a UTF-8 BOM first\n",
	};
	struct policy p;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		expect_ok(texts[i], &p);
		cr_expect(is_defaults(&p), "text %zu", i);
	}
}

Test(good, every_key_from_fixture_file)
{
	const char *path = "tests/data/policy/full.ini";
	char err[POLICY_ERR_MAX] = "";
	struct policy p;
	const struct rule *k, *s;

	cr_assert_eq(policy_load_file(path, &p, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(p.source, path);
	cr_expect_eq(p.deflt.sync, SYNC_GROUP);
	cr_expect_str_eq(p.log_path, "/var/log/syncshim.%p.log");
	cr_expect_eq(p.log_mode, LOG_CALLS);
	cr_expect_eq(p.max_flushers, 8);
	cr_expect_eq(p.ring_records, 65536);
	cr_expect_eq(p.reload, false);
	cr_expect_eq(p.deflt.osync, OSYNC_STRIP);
	cr_expect_eq(p.deflt.real_sync, REAL_SYNC_FSYNC);
	cr_expect_eq(p.deflt.on_close, ON_CLOSE_SYNC);
	cr_expect_eq(p.deflt.max_delay_ms, 250);
	cr_expect_eq(p.deflt.max_bytes, 32u << 20);
	cr_expect_eq(p.deflt.max_calls, 500);
	cr_expect_eq(p.deflt.writeback_bytes, 1u << 20);
	cr_expect_eq(p.deflt.group_wait_us, 150);

	cr_assert_eq(p.nrules, 2);
	k = &p.rules[0];
	cr_expect_str_eq(k->name, "kafka");
	cr_expect_str_eq(k->glob, "/var/lib/kafka/**/*.log");
	cr_expect_eq(k->line, 18);
	cr_expect_eq(k->sync, SYNC_DEFER);
	cr_expect_eq(k->osync, OSYNC_DSYNC);
	cr_expect_eq(k->real_sync, REAL_SYNC_FDATASYNC);
	cr_expect_eq(k->on_close, ON_CLOSE_ASYNC);
	cr_expect_eq(k->max_delay_ms, 1000);
	cr_expect_eq(k->max_bytes, 64u << 20);
	cr_expect_eq(k->max_calls, 10000);
	cr_expect_eq(k->writeback_bytes, 8u << 20);
	cr_expect_eq(k->group_wait_us, 0);

	/* A rule starts from the built-in defaults, not from [shim]'s knobs. */
	s = &p.rules[1];
	cr_expect_str_eq(s->name, "scratch");
	cr_expect_eq(s->line, 30);
	cr_expect_eq(s->sync, SYNC_NOOP);
	cr_expect_eq(s->osync, OSYNC_AUTO);
	cr_expect_eq(s->on_close, ON_CLOSE_ASYNC);
	cr_expect_eq(s->max_delay_ms, 100);
	cr_expect_eq(s->max_bytes, 16u << 20);
	cr_expect_eq(s->max_calls, 10000);
}

Test(good, byte_suffixes)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} cases[] = {
		{ "4096", 4096 }, { "4096B", 4096 }, { "4K", 4096 }, { "4k", 4096 },
		{ "4KiB", 4096 }, { "4kb", 4096 }, { "16M", 16u << 20 }, { "16mib", 16u << 20 },
		{ "1G", 1u << 30 }, { "2GiB", UINT64_C(2) << 30 }, { "1024G", UINT64_C(1) << 40 },
		{ "1099511627776", UINT64_C(1) << 40 }, { "007K", 7u << 10 },
	};
	char text[128];
	struct policy p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "[shim]\nmax_bytes = %s\nwriteback_bytes = %s\n",
			 cases[i].text, cases[i].text);
		expect_ok(text, &p);
		cr_expect_eq(p.deflt.max_bytes, cases[i].bytes, "%s", cases[i].text);
		cr_expect_eq(p.deflt.writeback_bytes, cases[i].bytes, "%s", cases[i].text);
	}
	expect_ok("[shim]\nwriteback_bytes = 0\n", &p);
	cr_expect_eq(p.deflt.writeback_bytes, 0);
}

Test(good, range_limits_are_inclusive)
{
	static const struct {
		const char *key, *lo, *hi;
	} keys[] = {
		{ "max_flushers", "1", "4096" },
		{ "ring_records", "1024", "1048576" },
		{ "max_delay_ms", "1", "600000" },
		{ "max_bytes", "4096", "1099511627776" },
		{ "max_calls", "1", "1000000000" },
		{ "writeback_bytes", "4096", "1099511627776" },
		{ "group_wait_us", "0", "1000000" },
		{ "max_at_risk_ms", "1", "600000" },
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		expect_value(SHIM, keys[i].key, keys[i].lo);
		expect_value(SHIM, keys[i].key, keys[i].hi);
	}
}

Test(good, booleans_and_enum_case)
{
	static const char *const yes[] = { "true", "yes", "on", "1", "TRUE", "Yes" };
	static const char *const no[] = { "false", "no", "off", "0", "OFF", "False" };
	char text[128];
	struct policy p;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		snprintf(text, sizeof(text), "[shim]\nreload = %s\n", yes[i]);
		expect_ok(text, &p);
		cr_expect_eq(p.reload, true, "%s", yes[i]);
		snprintf(text, sizeof(text), "[shim]\nreload = %s\n", no[i]);
		expect_ok(text, &p);
		cr_expect_eq(p.reload, false, "%s", no[i]);
	}
	expect_ok("[shim]\npolicy = DEFER\nlog_mode = Off\n", &p);
	cr_expect_eq(p.deflt.sync, SYNC_DEFER);
	cr_expect_eq(p.log_mode, LOG_OFF);
}

Test(good, layout_comments_and_line_endings)
{
	struct policy p;

	expect_ok("[shim]   ; trailing comment\r\n"
		  "policy=defer ; inline comment\r\n"
		  "  \r\n"
		  "[ rule  a.b-C_9 ]\r\n"
		  "  path = /data/a;b#c   \r\n"
		  "sync\t=\tnoop",
		  &p);
	cr_expect_eq(p.deflt.sync, SYNC_DEFER);
	cr_assert_eq(p.nrules, 1);
	cr_expect_str_eq(p.rules[0].name, "a.b-C_9");
	cr_expect_eq(p.rules[0].line, 4);
	/* ';' only starts a comment after whitespace. */
	cr_expect_str_eq(p.rules[0].glob, "/data/a;b#c");
	cr_expect_eq(p.rules[0].sync, SYNC_NOOP);
}

Test(good, log_path_escapes_and_empty)
{
	struct policy p;

	expect_ok("[shim]\nlog = /tmp/shim.%p.100%%.log\n", &p);
	cr_expect_str_eq(p.log_path, "/tmp/shim.%p.100%%.log");
	expect_ok("[shim]\nlog =\nlog_mode = calls\n", &p);
	cr_expect_str_empty(p.log_path);
	cr_expect_eq(p.log_mode, LOG_CALLS);
}

Test(good, longest_names_and_lines)
{
	char text[1024], name[64], line[200];
	struct policy p;

	memset(name, 'n', 63);
	name[63] = '\0';
	/* 196 characters exactly: "path = /" plus 188 more. */
	memcpy(line, "path = /", 8);
	memset(line + 8, 'x', 188);
	line[196] = '\0';
	snprintf(text, sizeof(text), "[rule %s]\n%s\n", name, line);
	expect_ok(text, &p);
	cr_expect_str_eq(p.rules[0].name, name);
	cr_expect_eq(strlen(p.rules[0].glob), 189);
}

Test(good, max_rules)
{
	static char text[POLICY_MAX_RULES * 40];
	size_t used = 0;
	struct policy p;

	for (int i = 0; i < POLICY_MAX_RULES; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "[rule r%d]\npath = /d%d/*\n", i, i);
	expect_ok(text, &p);
	cr_expect_eq(p.nrules, POLICY_MAX_RULES);
	cr_expect_str_eq(p.rules[POLICY_MAX_RULES - 1].glob, "/d63/*");
}

Test(good, shim_section_may_follow_rules)
{
	struct policy p;

	expect_ok("[rule a]\npath = /a\n[shim]\npolicy = noop\n", &p);
	cr_expect_eq(p.deflt.sync, SYNC_NOOP);
	cr_expect_eq(p.nrules, 1);
}

Test(good, load_string_leaves_source_empty)
{
	struct policy p;

	expect_ok("[shim]\npolicy = defer\n", &p);
	cr_expect_str_empty(p.source);
}

/* ---- errors: structure --------------------------------------------------- */

Test(errors, malformed_lines)
{
	expect_err("[shim]\npolicy defer\n", "t.ini:2: ", "malformed line");
	expect_err("[shim]\npolicy ; = defer\n", "t.ini:2: ", "malformed line");
	expect_err("[shim]\npolicy: defer\n", "t.ini:2: ", "'key = value'");
	expect_err("[shim]\n= defer\n", "t.ini:2: ", "missing key");
	expect_err("\n\n[shim\n", "t.ini:3: ", "']'");
	expect_err("[shim ;]\n", "t.ini:1: ", "']'");
	expect_err("[shim] policy = defer\n", "t.ini:1: ", "after ']'");
}

Test(errors, line_too_long)
{
	char text[512];

	memcpy(text, "[shim]\nlog = /", 14);
	memset(text + 14, 'x', 190); /* line 2: 197 characters */
	strcpy(text + 204, "\n");
	expect_err(text, "t.ini:2: ", "line too long (max 196 characters)");

	/* Even a comment: inih would split it and parse the tail. */
	memset(text, ';', 300);
	strcpy(text + 300, "\n");
	expect_err(text, "t.ini:1: ", "line too long");
}

Test(errors, continuation_lines)
{
	expect_err("[shim]\npolicy = defer\n  log_mode = calls\n", "t.ini:3: ", "continuation");
	expect_err("[rule a]\npath = /data/very/long\n\t/more\n", "t.ini:3: ", "continuation");
	expect_err("[shim]\npolicy = defer\n   [rule a]\n", "t.ini:3: ", "continuation");
}

Test(errors, key_outside_section)
{
	expect_err("; header comment\npolicy = defer\n[shim]\n", "t.ini:2: ", "outside any section");
}

Test(errors, sections)
{
	expect_err("[shim]\n[global]\n", "t.ini:2: ", "valid sections are [shim] and [rule NAME]");
	expect_err("[rules x]\n", "t.ini:1: ", "unknown section [rules x]");
	expect_err("[SHIM]\n", "t.ini:1: ", "unknown section");
	expect_err("[rule]\n", "t.ini:1: ", "[rule NAME]");
	expect_err("[rule   ]\n", "t.ini:1: ", "[rule NAME]");
	expect_err("[rule a/b]\n", "t.ini:1: ", "bad rule name 'a/b'");
	expect_err("[rule a b]\n", "t.ini:1: ", "bad rule name");
	expect_err("[rule nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn]\n",
		   "t.ini:1: ", "1-63 characters");
	expect_err("[rule a]\npath = /a\n\n[rule a]\npath = /b\n", "t.ini:4: ", "first at line 1");
	expect_err("[shim]\npolicy = noop\n[shim]\n", "t.ini:3: ", "first at line 1");
}

Test(errors, rule_without_path_reports_its_header)
{
	expect_err("[shim]\n[rule a]\nsync = noop\n[rule b]\npath = /b\n", "t.ini:2: ", "rule 'a' has no path");
	expect_err("[rule a]\npath = /a\n[rule b]\nsync = defer\n", "t.ini:3: ", "rule 'b' has no path");
	expect_err("[rule last]\n", "t.ini:1: ", "has no path");
}

Test(errors, too_many_rules)
{
	static char text[(POLICY_MAX_RULES + 1) * 40];
	size_t used = 0;

	for (int i = 0; i <= POLICY_MAX_RULES; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "[rule r%d]\npath = /d%d/*\n", i, i);
	expect_err(text, "t.ini:129: ", "too many rules (max 64)");
}

/* ---- errors: keys and values --------------------------------------------- */

Test(errors, unknown_keys_list_the_valid_ones)
{
	expect_err("[shim]\nflush = 1\n", "t.ini:2: ",
		   "unknown key 'flush' in [shim]; valid keys here: policy, log, log_mode, max_flushers, "
		   "ring_records, reload, unreported_errors, live, live_dir, inline_syscalls, osync, real_sync, on_close, order, "
		   "max_delay_ms, max_bytes, max_calls, writeback_bytes, group_wait_us, max_at_risk_ms");
	expect_err("[rule a]\npath = /a\nPath = /b\n", "t.ini:3: ",
		   "unknown key 'Path' in [rule a]; valid keys here: path, sync, osync, real_sync, on_close, "
		   "order, max_delay_ms, max_bytes, max_calls, writeback_bytes, group_wait_us, max_at_risk_ms");
	expect_err("[shim]\npath = /a\n", "t.ini:2: ", "only in [rule NAME]");
	expect_err("[shim]\nsync = defer\n", "t.ini:2: ", "only in [rule NAME]");
	expect_err("[rule a]\npath = /a\npolicy = defer\n", "t.ini:3: ", "only in [shim]");
	expect_err("[rule a]\npath = /a\nreload = no\n", "t.ini:3: ", "only in [shim]");
}

Test(errors, key_given_twice)
{
	expect_err("[shim]\npolicy = defer\nlog_mode = calls\npolicy = noop\n", "t.ini:4: ",
		   "'policy' given twice in this section (first at line 2)");
	/* The same key in different sections is fine. */
	struct policy p;
	expect_ok("[shim]\nmax_calls = 5\n[rule a]\npath = /a\nmax_calls = 6\n", &p);
}

Test(errors, enum_values_list_the_valid_ones)
{
	expect_bad_value(SHIM, "policy", "fsync", "unknown policy 'fsync'; use one of: passthrough, fdatasync, noop, defer, group");
	expect_bad_value(RULE, "sync", "", "use one of: passthrough, fdatasync, noop, defer, group");
	expect_bad_value(SHIM, "osync", "sync", "use one of: auto, keep, dsync, strip, defer");
	expect_bad_value(RULE, "osync", "none", "use one of: auto, keep, dsync, strip, defer");
	expect_bad_value(SHIM, "real_sync", "sync", "use one of: auto, fdatasync, fsync");
	expect_bad_value(SHIM, "on_close", "wait", "use one of: async, sync");
	expect_bad_value(SHIM, "log_mode", "verbose", "use one of: off, summary, calls");
	expect_bad_value(SHIM, "policy", "defer;x", "unknown policy");
}

Test(errors, bad_numbers)
{
	static const char *const bad[] = {
		"", "-1", "+5", "0x10", "1 0", "1.5", "12abc", "1e3", "99999999999999999999999",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_bad_value(SHIM, "max_calls", bad[i], "bad number");
		expect_bad_value(RULE, "max_bytes", bad[i], "bad number");
	}
	/* Suffixes are for byte sizes only. */
	expect_bad_value(SHIM, "max_calls", "16K", "bad number '16K' for max_calls; use a plain decimal number, 1 to 1000000000");
	expect_bad_value(SHIM, "max_bytes", "16T", "bad number");
	expect_bad_value(SHIM, "max_bytes", "16KK", "bad number");
	expect_bad_value(SHIM, "max_bytes", "16iB", "bad number");
	expect_bad_value(SHIM, "max_bytes", "K", "bad number");
	expect_bad_value(SHIM, "max_bytes", "18446744073709551615K", "bad number");
}

Test(errors, out_of_range_names_the_range)
{
	expect_bad_value(SHIM, "max_flushers", "0", "max_flushers = 0 is out of range; use 1 to 4096");
	expect_bad_value(SHIM, "max_flushers", "4097", "1 to 4096");
	expect_bad_value(SHIM, "ring_records", "512", "1024 to 1048576, a power of two");
	expect_bad_value(SHIM, "ring_records", "3000", "a power of two");
	expect_bad_value(SHIM, "ring_records", "2097152", "a power of two");
	expect_bad_value(SHIM, "max_delay_ms", "0", "1 to 600000");
	expect_bad_value(RULE, "max_delay_ms", "600001", "1 to 600000");
	expect_bad_value(SHIM, "max_bytes", "4095", "4096 to 1099511627776");
	expect_bad_value(RULE, "max_bytes", "1025G", "4096 to 1099511627776");
	expect_bad_value(SHIM, "max_bytes", "0", "out of range");
	expect_bad_value(SHIM, "max_calls", "0", "1 to 1000000000");
	expect_bad_value(RULE, "max_calls", "1000000001", "1 to 1000000000");
	expect_bad_value(SHIM, "writeback_bytes", "1", "0 (off) or 4096 to 1099511627776");
	expect_bad_value(RULE, "writeback_bytes", "4095", "0 (off) or 4096");
	expect_bad_value(SHIM, "group_wait_us", "1000001", "auto or 0 to 1000000");
	expect_bad_value(SHIM, "max_delay_ms", "0", "auto or 1 to 600000");
	expect_bad_value(RULE, "max_at_risk_ms", "600001", "0 (off) or 1 to 600000");
}

/* "auto" where the key takes it (and exactly "auto"); nowhere else. */
Test(errors, auto_only_where_it_means_something)
{
	expect_bad_value(SHIM, "max_at_risk_ms", "auto", "bad number 'auto' for max_at_risk_ms");
	expect_bad_value(RULE, "max_bytes", "auto", "bad number 'auto'");
	expect_bad_value(SHIM, "max_calls", "auto", "bad number");
	expect_bad_value(SHIM, "max_delay_ms", "Auto", "use a plain decimal number, auto or 1 to 600000");
	expect_bad_value(RULE, "group_wait_us", "auto1", "bad number");
}

Test(good, live_keys_load_format_and_env)
{
	struct policy p, q;
	char out[8192], err[POLICY_ERR_MAX];
	expect_ok("[shim]\nlive = on\nlive_dir = /run/live here\n", &p);
	cr_expect(p.live);
	cr_expect_str_eq(p.live_dir, "/run/live here");
	policy_format(&p, out, sizeof(out));
	expect_ok(out, &q);
	cr_expect(q.live);
	cr_expect_str_eq(q.live_dir, "/run/live here");
	expect_bad_value(SHIM, "live_dir", "relative/dir", "is relative; use an absolute path");
	expect_bad_value(SHIM, "live", "sometimes", "bad boolean");

	policy_init_defaults(&p);
	cr_expect(!p.live, "off unless asked for");
	struct policy_env env = { .live = "1", .live_dir = "/x" };
	cr_expect_eq(policy_apply_env(&p, &env, err, sizeof(err)), 0, "%s", err);
	cr_expect(p.live);
	cr_expect_str_eq(p.live_dir, "/x");
	env = (struct policy_env){ .live_dir = "x" };
	cr_expect_eq(policy_apply_env(&p, &env, err, sizeof(err)), -1);
	cr_expect(strstr(err, "SYNCSHIM_LIVE_DIR=x: live_dir 'x' is relative"), "%s", err);
}

Test(good, inline_syscalls_loads_formats_and_env)
{
	struct policy p, q;
	char out[8192], err[POLICY_ERR_MAX];
	expect_ok("[shim]\ninline_syscalls = trap\n", &p);
	cr_expect(p.inline_trap);
	policy_format(&p, out, sizeof(out));
	expect_ok(out, &q);
	cr_expect(q.inline_trap, "%s", out);
	expect_bad_value(SHIM, "inline_syscalls", "sometimes", "off, trap");
	policy_init_defaults(&p);
	cr_expect(!p.inline_trap, "off unless asked for");
	struct policy_env env = { .inline_syscalls = "trap" };
	cr_expect_eq(policy_apply_env(&p, &env, err, sizeof(err)), 0, "%s", err);
	cr_expect(p.inline_trap);
}

Test(good, auto_pacing_values_load_and_format)
{
	struct policy p, q;
	char out[8192];
	expect_ok("[shim]\nmax_delay_ms = auto\ngroup_wait_us = auto\n"
		  "[rule a]\npath = /a/**\nsync = defer\nmax_delay_ms = auto\nmax_at_risk_ms = 250\n", &p);
	cr_expect_eq(p.deflt.max_delay_ms, POLICY_AUTO);
	cr_expect_eq(p.deflt.group_wait_us, POLICY_AUTO);
	cr_expect_eq(p.deflt.max_at_risk_ms, 0, "default: none given");
	cr_expect_eq(p.rules[0].max_delay_ms, POLICY_AUTO);
	cr_expect_eq(p.rules[0].max_at_risk_ms, 250);
	policy_format(&p, out, sizeof(out));
	cr_expect(strstr(out, "max_delay_ms = auto\n"), "%s", out);
	cr_expect(strstr(out, "group_wait_us = auto\n"), "%s", out);
	cr_expect(strstr(out, "max_at_risk_ms = 250\n"), "%s", out);
	expect_ok(out, &q);
	cr_expect_eq(q.rules[0].max_delay_ms, POLICY_AUTO, "formatted text loads to the same policy");
	cr_expect_eq(q.rules[0].max_at_risk_ms, 250);
}

Test(errors, bad_booleans)
{
	expect_bad_value(SHIM, "reload", "maybe", "use true/false, yes/no, on/off or 1/0");
	expect_bad_value(SHIM, "reload", "", "bad boolean");
	expect_bad_value(SHIM, "reload", "2", "bad boolean");
}

Test(errors, bad_globs_say_why)
{
	expect_bad_value(RULE_NO_PATH, "path", "", "empty pattern");
	expect_bad_value(RULE_NO_PATH, "path", "data/*.log", "must start with '/'");
	expect_bad_value(RULE_NO_PATH, "path", "/data/[ab", "unterminated");
	expect_bad_value(RULE_NO_PATH, "path", "/data/[]x", "empty class");
	expect_bad_value(RULE_NO_PATH, "path", "/data/x\\", "trailing '\\'");
	expect_bad_value(RULE_NO_PATH, "path", "/data/***", "'***'");
	expect_bad_value(RULE_NO_PATH, "path", "/data/[z-a]", "reversed range 'z-a'");
	expect_err("[rule a]\npath = /a\npath = /b\n", "t.ini:3: ", "given twice");
}

Test(errors, bad_log_paths)
{
	expect_bad_value(SHIM, "log", "shim.log", "relative; use an absolute path");
	expect_bad_value(SHIM, "log", "~/shim.log", "relative");
	expect_bad_value(SHIM, "log", "/tmp/shim.%d.log", "'%d'");
	expect_bad_value(SHIM, "log", "/tmp/shim.%", "use %p for the pid");
}

Test(errors, first_error_wins)
{
	/* Both value errors: the earlier line. */
	expect_err("[shim]\npolicy = bogus\nmax_calls = 0\n", "t.ini:2: ", "unknown policy");
	/* A bad value inside a rule with no path: the value, read first. */
	expect_err("[rule a]\nsync = bogus\n", "t.ini:2: ", "unknown sync");
	/* A missing path is found at the next header, before later errors. */
	expect_err("[rule a]\nsync = noop\n[rule b]\npath = /b\nbogus line\n", "t.ini:1: ", "no path");
	/* A malformed line before a missing path is found. */
	expect_err("[rule a]\npath /a\n[rule b]\n", "t.ini:2: ", "malformed");
}

Test(errors, resets_a_used_snapshot_to_defaults)
{
	char err[POLICY_ERR_MAX];
	struct policy p;

	expect_ok("[shim]\npolicy = defer\n[rule a]\npath = /a\n", &p);
	cr_assert_eq(load("[shim]\npolicy = group\n[rule b]\npath = /b\nsync = x\n", &p, err), -1);
	cr_expect(is_defaults(&p));
}

Test(errors, small_or_missing_error_buffer)
{
	char err[12];
	struct policy p;

	memset(err, 'x', sizeof(err));
	cr_assert_eq(policy_load_string("[shim]\nbogus\n", "t.ini", &p, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "t.ini:2: ma");
	cr_expect_eq(policy_load_string("[shim]\nbogus\n", "t.ini", &p, NULL, 0), -1);
	cr_expect_eq(policy_load_string("[shim]\nbogus\n", NULL, &p, err, 1), -1);
	cr_expect_str_empty(err);
	cr_expect_eq(policy_load_string(NULL, NULL, &p, err, sizeof(err)), 0);
}

/* ---- errors: files ------------------------------------------------------- */

Test(files, unreadable_file_uses_lineless_form)
{
	char err[POLICY_ERR_MAX];
	struct policy p;

	cr_assert_eq(policy_load_file("/nonexistent/dir/shim.ini", &p, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "/nonexistent/dir/shim.ini: cannot read: No such file or directory; "
			 "check the path and its permissions");
	cr_expect(is_defaults(&p));
	cr_assert_eq(policy_load_file("tests", &p, err, sizeof(err)), -1);
	cr_expect_str_eq(err, "tests: is a directory, not a regular file; name an ini file instead");
}

/* Whatever the path names, the one reader answers at once with one line
 * naming what it is, and never opens what is not a plain file. */
static void expect_refused(const char *path, const char *what)
{
	char err[POLICY_ERR_MAX];
	struct policy p;

	errno = 12345;
	cr_assert_eq(policy_load_file(path, &p, err, sizeof(err)), -1, "%s accepted", path);
	cr_expect_eq(errno, 12345, "%s: errno not restored", path);
	cr_expect(strncmp(err, path, strlen(path)) == 0 && strstr(err, what) && strstr(err, "; "),
		  "%s: want '%s' in '%s'", path, what, err);
	cr_expect(!strchr(err, '\n'), "%s: not one line: %s", path, err);
	cr_expect(is_defaults(&p));
}

/* alarm() rather than .timeout: criterion (2.4) leaks in its runner when
 * two tests with timeouts run at once, and LeakSanitizer fails make asan.
 * A read that hangs ends the test by SIGALRM, which criterion reports. */
Test(files, fifo_is_refused_without_blocking)
{
	char path[128];

	alarm(10);

	temp_path(path, sizeof(path), "fifo");
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo: %s", strerror(errno));
	expect_refused(path, "is a FIFO");
	unlink(path);
}

Test(files, devices_sockets_and_pseudo_files_are_refused)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	alarm(10);

	expect_refused("/dev/null", "is a character device");
	expect_refused("/dev/zero", "is a character device");
	expect_refused("/proc/self/status", "is on procfs");
	if (access("/sys/kernel/address_bits", R_OK) == 0)
		expect_refused("/sys/kernel/address_bits", "is on sysfs");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/test_policy.%d.sock", (int)getpid());
	unlink(sa.sun_path);
	cr_assert(s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "socket: %s", strerror(errno));
	expect_refused(sa.sun_path, "is a socket");
	close(s);
	unlink(sa.sun_path);
}

Test(files, symlink_loop_and_non_directory)
{
	char loop[128], through[160];

	temp_path(loop, sizeof(loop), "loop");
	unlink(loop);
	cr_assert_eq(symlink(loop, loop), 0);
	expect_refused(loop, "Too many levels of symbolic links");
	unlink(loop);
	snprintf(through, sizeof(through), "%s/x.ini", "/dev/null");
	expect_refused(through, "Not a directory");
}

/* What the shim read up to a NUL, the one reader refuses: the noop before
 * it must not apply without the passthrough rule after it. */
Test(files, nul_byte_hides_nothing)
{
	static const char text[] = "[shim]\npolicy = noop\n\0\n[rule keep]\npath = /**\nsync = passthrough\n";
	char path[128], err[POLICY_ERR_MAX];
	struct policy p;

	cr_expect_eq(policy_load_mem(text, sizeof(text) - 1, "m.ini", &p, err, sizeof(err)), -1);
	cr_expect(strstr(err, "m.ini:3: NUL byte"), "%s", err);
	temp_path(path, sizeof(path), "nul2");
	write_file(path, text, sizeof(text) - 1);
	cr_expect_eq(policy_load_file(path, &p, err, sizeof(err)), -1);
	cr_expect(strstr(err, ":3: NUL byte"), "%s", err);
	cr_expect_eq(p.deflt.sync, SYNC_PASSTHROUGH);
	unlink(path);
}

/* ---- the environment's overrides ---------------------------------------- */

static void expect_env_err(struct policy_env env, const char *want)
{
	char err[POLICY_ERR_MAX];
	struct policy p;

	policy_init_defaults(&p);
	cr_assert_eq(policy_apply_env(&p, &env, err, sizeof(err)), -1, "accepted, want '%s'", want);
	cr_expect(strncmp(err, want, strlen(want)) == 0, "want '%s...', got '%s'", want, err);
	cr_expect(strstr(err + strlen(want), "; "), "no fix in '%s'", err);
	cr_expect(!strchr(err, '\n'));
}

Test(env, bad_values_get_the_ini_messages)
{
	expect_env_err((struct policy_env){ .log_mode = "bogus" },
		       "SYNCSHIM_LOG_MODE=bogus: unknown log_mode 'bogus'");
	expect_env_err((struct policy_env){ .log = "rel.log" },
		       "SYNCSHIM_LOG=rel.log: log path 'rel.log' is relative");
	expect_env_err((struct policy_env){ .log = "/tmp/x.%q" }, "SYNCSHIM_LOG=/tmp/x.%q: bad '%q'");
	expect_env_err((struct policy_env){ .policy = "sometimes" },
		       "SYNCSHIM_POLICY=sometimes: unknown policy 'sometimes'");
	/* the first bad one is named */
	expect_env_err((struct policy_env){ .policy = "x", .log_mode = "y" }, "SYNCSHIM_POLICY=x:");
}

Test(env, good_values_apply)
{
	char err[POLICY_ERR_MAX];
	struct policy p;

	policy_init_defaults(&p);
	p.log_mode = LOG_OFF;
	cr_assert_eq(policy_apply_env(&p, &(struct policy_env){ .policy = "NOOP", .log = "/tmp/l.%p" },
				      err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(p.deflt.sync, SYNC_NOOP);
	cr_expect_str_eq(p.log_path, "/tmp/l.%p");
	cr_expect_eq(p.log_mode, LOG_SUMMARY, "a log asked for is not off");
	cr_assert_eq(policy_apply_env(&p, &(struct policy_env){ .log_mode = "calls", .policy = "" },
				      err, sizeof(err)), 0);
	cr_expect_eq(p.log_mode, LOG_CALLS);
	cr_expect_eq(p.deflt.sync, SYNC_NOOP, "empty means unset");
}

Test(files, error_lines_name_the_file)
{
	char path[128], err[POLICY_ERR_MAX], want[256];
	const char text[] = "[shim]\n\npolicy = sometimes\n";
	struct policy p;

	temp_path(path, sizeof(path), "lines");
	write_file(path, text, sizeof(text) - 1);
	cr_assert_eq(policy_load_file(path, &p, err, sizeof(err)), -1);
	unlink(path);
	snprintf(want, sizeof(want), "%s:3: unknown policy 'sometimes'", path);
	cr_expect(strncmp(err, want, strlen(want)) == 0, "got '%s'", err);
	cr_expect_str_empty(p.source);
}

Test(files, nul_byte)
{
	char path[128], err[POLICY_ERR_MAX], want[256];
	const char text[] = "[shim]\npolicy = de\0fer\n";
	struct policy p;

	temp_path(path, sizeof(path), "nul");
	write_file(path, text, sizeof(text) - 1);
	cr_assert_eq(policy_load_file(path, &p, err, sizeof(err)), -1);
	unlink(path);
	snprintf(want, sizeof(want), "%s:2: NUL byte in file; ", path);
	cr_expect(strncmp(err, want, strlen(want)) == 0, "got '%s'", err);
	cr_expect(is_defaults(&p));
}

/* 1 MiB of comments loads; one byte more is refused before parsing. */
Test(files, size_limit, .timeout = 20)
{
	static char big[(1 << 20) + 64];
	char path[128], err[POLICY_ERR_MAX], want[256];
	struct policy p;

	for (size_t i = 0; i + 64 <= sizeof(big); i += 64) {
		memset(big + i, ';', 63);
		big[i + 63] = '\n';
	}
	temp_path(path, sizeof(path), "big");
	write_file(path, big, 1 << 20);
	cr_expect_eq(policy_load_file(path, &p, err, sizeof(err)), 0, "%s", err);
	write_file(path, big, (1 << 20) + 1);
	cr_expect_eq(policy_load_file(path, &p, err, sizeof(err)), -1);
	unlink(path);
	snprintf(want, sizeof(want), "%s: file too large", path);
	cr_expect(strncmp(err, want, strlen(want)) == 0, "got '%s'", err);
	cr_expect(is_defaults(&p));
}

/* ---- globs --------------------------------------------------------------- */

static const struct {
	const char *pattern, *path;
	bool match;
} glob_table[] = {
	/* literals */
	{ "/a/b", "/a/b", true },
	{ "/a/b", "/a/bc", false },
	{ "/a/b", "/a/", false },
	{ "/a/b", "/a", false },
	/* '*' stays within a component */
	{ "/data/*.log", "/data/a.log", true },
	{ "/data/*.log", "/data/.log", true },
	{ "/data/*.log", "/data/a/b.log", false },
	{ "/data/*.log", "/data/a.log.1", false },
	{ "/a*", "/a", true },
	{ "/a*", "/abc", true },
	{ "/a*", "/ab/c", false },
	{ "*", "/x", false },
	{ "/*/x", "/a/x", true },
	{ "/*/x", "/a/b/x", false },
	{ "/d/*a*b*", "/d/xaybz", true },
	{ "/d/*a*b*", "/d/xa/b", false },
	/* '?' is one character, never '/' */
	{ "/data/?.log", "/data/a.log", true },
	{ "/data/?.log", "/data/ab.log", false },
	{ "/data/?.log", "/data/.log", false },
	{ "/a?b", "/a/b", false },
	{ "/a?b", "/axb", true },
	/* classes */
	{ "/d/[abc].log", "/d/b.log", true },
	{ "/d/[abc].log", "/d/d.log", false },
	{ "/d/[a-c]x", "/d/cx", true },
	{ "/d/[a-c]x", "/d/dx", false },
	{ "/d/[0-9a-f]", "/d/e", true },
	{ "/d/[!a]x", "/d/bx", true },
	{ "/d/[!a]x", "/d/ax", false },
	{ "/d/[^a-c]x", "/d/dx", true },
	{ "/d/[^a-c]x", "/d/bx", false },
	{ "/d[!a]x", "/d/x", false },
	{ "/d[^x]x", "/d/x", false },
	{ "/d[!a-z]x", "/d/x", false },
	{ "/d/[\\]]", "/d/]", true },
	{ "/d/[a-]", "/d/-", true },
	{ "/d/[-a]", "/d/-", true },
	{ "/d/[*?]", "/d/?", true },
	{ "/d/[*?]", "/d/x", false },
	/* escapes */
	{ "/d/\\*.log", "/d/*.log", true },
	{ "/d/\\*.log", "/d/a.log", false },
	{ "/d/\\?", "/d/?", true },
	{ "/d/\\?", "/d/x", false },
	{ "/d/\\[a]", "/d/[a]", true },
	{ "/d/\\[a]", "/d/a", false },
	{ "/d/a\\\\b", "/d/a\\b", true },
	{ "/d/\\x", "/d/x", true },
	/* '**' + '/': zero or more whole directories */
	{ "/data/**/x.log", "/data/x.log", true },
	{ "/data/**/x.log", "/data/a/x.log", true },
	{ "/data/**/x.log", "/data/a/b/x.log", true },
	{ "/data/**/x.log", "/data/ax.log", false },
	{ "/data/**/x.log", "/datax.log", false },
	{ "/data/**/x.log", "/data/a/b/y.log", false },
	{ "/data/**/x.log", "/data/a/bx.log", false },
	{ "/data/**/x.log", "/data/ab/x.log", true },
	{ "/data/**/x.log", "/data/x.log/x.log", true },
	{ "/a/**/", "/a/", true },
	{ "/a/**/", "/a/b/c/", true },
	{ "/a/**/", "/a/b", false },
	{ "/data/**/*.log", "/data/k/00001.log", true },
	{ "/data/**/*.log", "/data/00001.log", true },
	{ "/data/**/*.log", "/data/k/00001.index", false },
	{ "/a/**/b/**/c", "/a/b/c", true },
	{ "/a/**/b/**/c", "/a/x/b/y/z/c", true },
	{ "/a/**/b/**/c", "/a/x/by/c", false },
	{ "**/x.log", "/x.log", true },
	{ "**/x.log", "/a/b/x.log", true },
	{ "**/x.log", "/a/bx.log", false },
	/* '**' elsewhere: any run, '/' included */
	{ "/data/**.log", "/data/a/b.log", true },
	{ "/data/**.log", "/data/.log", true },
	{ "/data/**.log", "/data/a/b.txt", false },
	{ "/data/**", "/data/", true },
	{ "/data/**", "/data/a/b", true },
	{ "/data/**", "/data", false },
	{ "/data/**", "/database", false },
	{ "/data**", "/database/x", true },
	{ "**", "/anything/at/all", true },
	{ "/d/x**/y", "/d/x/y", true },
	{ "/d/x**/y", "/d/xa/b/y", true },
	/* bytes beyond ASCII are literals */
	{ "/d/\xc3\xa9*", "/d/\xc3\xa9t\xc3\xa9", true },
	{ "/d/[\xc3]*", "/d/\xc3\xa9", true },
};

Test(glob, match_table)
{
	for (size_t i = 0; i < sizeof(glob_table) / sizeof(glob_table[0]); i++) {
		char why[128];

		cr_assert_eq(glob_check(glob_table[i].pattern, why, sizeof(why)), 0,
			     "%s: %s", glob_table[i].pattern, why);
		cr_expect_eq(glob_match(glob_table[i].pattern, glob_table[i].path), glob_table[i].match,
			     "glob_match(\"%s\", \"%s\") should be %s", glob_table[i].pattern,
			     glob_table[i].path, glob_table[i].match ? "true" : "false");
	}
}

Test(glob, check_rejects_with_reason)
{
	static const struct {
		const char *pattern, *why;
	} bad[] = {
		{ "", "empty" },
		{ "data/x", "start with '/'" },
		{ "?x", "start with '/'" },
		{ "[/]x", "start with '/'" },
		{ "/a[b", "unterminated" },
		{ "/a[b-", "unterminated" },
		{ "/a[\\]", "unterminated" },
		{ "/a[]", "empty class" },
		{ "/a[!]", "empty class" },
		{ "/a[]b]", "empty class" },
		{ "/a\\", "trailing '\\'" },
		{ "/a/***", "'***'" },
		{ "/a/****/b", "'***'" },
		{ "/[z-a]", "reversed range" },
		{ "/[a/]", "'/'" },
	};
	char why[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(glob_check(bad[i].pattern, why, sizeof(why)), -1, "%s", bad[i].pattern);
		cr_expect(strstr(why, bad[i].why), "%s: why '%s' lacks '%s'", bad[i].pattern, why, bad[i].why);
		cr_expect_eq(glob_match(bad[i].pattern, "/a[b"), false, "%s", bad[i].pattern);
	}
	cr_expect_eq(glob_check(NULL, why, sizeof(why)), -1);
	cr_expect_eq(glob_check("/x[", NULL, 0), -1);
	cr_expect_eq(glob_match(NULL, "/x"), false);
	cr_expect_eq(glob_match("/x", NULL), false);
}

Test(glob, length_limit)
{
	char pat[POLICY_GLOB_MAX + 1], why[128];

	memset(pat, 'x', sizeof(pat));
	pat[0] = '/';
	pat[POLICY_GLOB_MAX - 1] = '\0';
	cr_expect_eq(glob_check(pat, why, sizeof(why)), 0, "%s", why);
	cr_expect(glob_match(pat, pat));
	pat[POLICY_GLOB_MAX - 1] = 'x';
	pat[POLICY_GLOB_MAX] = '\0';
	cr_expect_eq(glob_check(pat, why, sizeof(why)), -1);
	cr_expect(strstr(why, "too long"), "%s", why);
	cr_expect_eq(glob_match(pat, pat), false);
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Backtracking matchers take exponential time here. */
Test(glob, pathological_patterns_run_fast, .timeout = 10)
{
	static char path[100002];
	char deep[4096];
	size_t used = 0;
	double start = now_seconds();

	path[0] = '/';
	memset(path + 1, 'a', sizeof(path) - 2);
	cr_expect_eq(glob_match("/a*a*a*a*a*a*a*b", path), false);
	cr_expect_eq(glob_match("/a*a*a*a*a*a*a*a", path), true);
	cr_expect_eq(glob_match("/**a**a**a**a**a**a**b", path), false);

	while (used < sizeof(deep) - 4)
		used += (size_t)snprintf(deep + used, sizeof(deep) - used, "/a");
	cr_expect_eq(glob_match("/**/a/**/a/**/a/**/a/**/a/**/b", deep), false);
	cr_expect_eq(glob_match("/**/a/**/a/**/a/**/a/**/a/**/a", deep), true);
	cr_expect(now_seconds() - start < 1.0, "took %.3f s", now_seconds() - start);
}

/* ---- matching and resolution --------------------------------------------- */

Test(match, first_matching_rule_wins)
{
	struct policy p;

	expect_ok("[shim]\npolicy = fdatasync\n"
		  "[rule logs]\npath = /data/*.log\nsync = defer\n"
		  "[rule all]\npath = /data/**\nsync = noop\n"
		  "[rule never]\npath = /data/x.log\nsync = group\n",
		  &p);
	cr_expect_str_eq(policy_match(&p, "/data/x.log")->name, "logs");
	cr_expect_str_eq(policy_match(&p, "/data/sub/x.log")->name, "all");
	cr_expect_eq(policy_match(&p, "/data/sub/x.log")->sync, SYNC_NOOP);
	cr_expect_eq(policy_match(&p, "/other/x.log"), &p.deflt);
	cr_expect_eq(policy_match(&p, "/other/x.log")->sync, SYNC_FDATASYNC);
	cr_expect_eq(policy_match(&p, NULL), &p.deflt);

	expect_ok("[rule all]\npath = /data/**\nsync = noop\n"
		  "[rule logs]\npath = /data/*.log\nsync = defer\n",
		  &p);
	cr_expect_str_eq(policy_match(&p, "/data/x.log")->name, "all");
}

Test(match, defaults_match_nothing)
{
	struct policy p;

	policy_init_defaults(&p);
	cr_expect_eq(policy_match(&p, "/any/file"), &p.deflt);
}

Test(resolve, rule_osync)
{
	static const enum osync_mode follow[SYNC_POLICY_COUNT] = {
		[SYNC_PASSTHROUGH] = OSYNC_KEEP, [SYNC_FDATASYNC] = OSYNC_DSYNC,
		[SYNC_NOOP] = OSYNC_STRIP, [SYNC_DEFER] = OSYNC_DEFER, [SYNC_GROUP] = OSYNC_KEEP,
	};
	struct rule r;

	memset(&r, 0, sizeof(r));
	for (int s = 0; s < SYNC_POLICY_COUNT; s++) {
		r.sync = (enum sync_policy)s;
		r.osync = OSYNC_AUTO;
		cr_expect_eq(rule_osync(&r), follow[s], "auto for %s", sync_policy_name(r.sync));
		for (int m = OSYNC_KEEP; m < OSYNC_MODE_COUNT; m++) {
			r.osync = (enum osync_mode)m;
			cr_expect_eq(rule_osync(&r), (enum osync_mode)m, "%s with %s", sync_policy_name(r.sync),
				     osync_mode_name(r.osync));
		}
	}
}

Test(resolve, enum_names_round_trip)
{
	for (int i = 0; i < SYNC_POLICY_COUNT; i++)
		cr_expect_eq(sync_policy_parse(sync_policy_name((enum sync_policy)i)), i);
	for (int i = 0; i < OSYNC_MODE_COUNT; i++)
		cr_expect_eq(osync_mode_parse(osync_mode_name((enum osync_mode)i)), i);
	for (int i = 0; i < REAL_SYNC_COUNT; i++)
		cr_expect_eq(real_sync_parse(real_sync_name((enum real_sync)i)), i);
	for (int i = 0; i < ON_CLOSE_COUNT; i++)
		cr_expect_eq(on_close_parse(on_close_name((enum on_close)i)), i);
	for (int i = 0; i < LOG_MODE_COUNT; i++)
		cr_expect_eq(log_mode_parse(log_mode_name((enum log_mode)i)), i);

	cr_expect_str_eq(sync_policy_name(SYNC_GROUP), "group");
	cr_expect_str_eq(osync_mode_name(OSYNC_STRIP), "strip");
	cr_expect_str_eq(real_sync_name(REAL_SYNC_FSYNC), "fsync");
	cr_expect_str_eq(on_close_name(ON_CLOSE_SYNC), "sync");
	cr_expect_str_eq(log_mode_name(LOG_CALLS), "calls");
	cr_expect_eq(sync_policy_parse("fsync"), -1);
	cr_expect_eq(sync_policy_parse(""), -1);
	cr_expect_eq(sync_policy_parse(NULL), -1);
	cr_expect_eq(osync_mode_parse("deferred"), -1);
	cr_expect_eq(real_sync_parse("sync"), -1);
	cr_expect_eq(on_close_parse("close"), -1);
	cr_expect_eq(log_mode_parse("all"), -1);
	cr_expect_str_eq(sync_policy_name(SYNC_POLICY_COUNT), "?");
	cr_expect_str_eq(log_mode_name((enum log_mode)-1), "?");
}

/* ---- formatting ---------------------------------------------------------- */

static void expect_round_trip(const char *text)
{
	static char out[1 << 16];
	char err[POLICY_ERR_MAX];
	struct policy a, b;
	size_t n;

	expect_ok(text, &a);
	n = policy_format(&a, out, sizeof(out));
	cr_assert_lt(n, sizeof(out) - 1, "output truncated");
	cr_assert_eq(n, strlen(out));
	cr_assert_eq(load(out, &b, err), 0, "formatted text does not parse: %s\n%s", err, out);
	expect_policy_eq(&a, &b);
}

Test(format, round_trip)
{
	char text[2048], glob[200];

	expect_round_trip("");
	expect_round_trip(read_text("tests/data/policy/full.ini"));
	expect_round_trip("[shim]\nlog = /tmp/x.%p.%%\nreload = off\nmax_bytes = 12345\n"
			  "writeback_bytes = 1536K\n"
			  "[rule odd.names-1]\npath = /d/[!a-c]\\*;x#y/**/?.log\nsync = group\n"
			  "[rule b]\npath = **\nsync = fdatasync\nosync = keep\nmax_bytes = 4097\n");

	/* A glob as long as a line allows still fits on one formatted line. */
	memset(glob, 'g', sizeof(glob));
	glob[0] = '/';
	glob[191] = '\0';
	snprintf(text, sizeof(text), "[rule long]\npath=%s\n", glob);
	expect_round_trip(text);
}

Test(format, names_every_key)
{
	static char out[1 << 16];
	static const char *const shim_keys[] = {
		"policy = ", "log =", "log_mode = ", "max_flushers = ", "ring_records = ", "reload = ",
	};
	static const char *const knobs[] = {
		"osync = ", "real_sync = ", "on_close = ", "max_delay_ms = ", "max_bytes = ",
		"max_calls = ", "writeback_bytes = ", "group_wait_us = ",
	};
	struct policy p;
	const char *rule;

	expect_ok("[rule a]\npath = /a\n", &p);
	policy_format(&p, out, sizeof(out));
	rule = strstr(out, "[rule a]\npath = /a\nsync = passthrough\n");
	cr_assert(rule, "%s", out);
	cr_expect(strncmp(out, "[shim]\n", 7) == 0);
	for (size_t i = 0; i < sizeof(shim_keys) / sizeof(shim_keys[0]); i++)
		cr_expect(strstr(out, shim_keys[i]), "no '%s' in\n%s", shim_keys[i], out);
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		const char *first = strstr(out, knobs[i]);

		cr_expect(first && first < rule, "'%s' not in [shim]", knobs[i]);
		cr_expect(strstr(rule, knobs[i]), "'%s' not in the rule", knobs[i]);
	}
}

Test(format, truncates_and_terminates)
{
	char small[16];
	struct policy p;

	policy_init_defaults(&p);
	memset(small, 'x', sizeof(small));
	cr_expect_eq(policy_format(&p, small, sizeof(small)), sizeof(small) - 1);
	cr_expect_str_eq(small, "[shim]\npolicy =");
	cr_expect_eq(policy_format(&p, small, 1), 0);
	cr_expect_str_empty(small);
	cr_expect_eq(policy_format(&p, NULL, 0), 0);
}

/* ---- the shipped shim.ini ------------------------------------------------ */

Test(shipped, shim_ini_parses_to_the_documented_defaults)
{
	char err[POLICY_ERR_MAX];
	struct policy p;

	cr_assert_eq(policy_load_file("shim.ini", &p, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(p.source, "shim.ini");
	memset(p.source, 0, sizeof(p.source));
	cr_expect(is_defaults(&p), "shim.ini differs from the built-in defaults");
}

Test(shipped, shim_ini_documents_every_key)
{
	static const char *const keys[] = {
		"policy", "log", "log_mode", "max_flushers", "ring_records", "reload", "path", "sync",
		"osync", "real_sync", "on_close", "order", "max_delay_ms", "max_bytes", "max_calls",
		"writeback_bytes", "group_wait_us", "max_at_risk_ms", "live", "live_dir", "SYNCSHIM_CONFIG",
		"SYNCSHIM_POLICY", "SYNCSHIM_LOG",
	};
	const char *text = read_text("shim.ini");

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_expect(strstr(text, keys[i]), "shim.ini never mentions %s", keys[i]);
	/* Present, or shown commented out with its default. */
	static const char *const lines[] = {
		"\npolicy = passthrough\n", "\nlog =\n", "\nlog_mode = summary\n", "\nmax_flushers = 16\n",
		"\nring_records = 16384\n", "\nreload = true\n", "\n; osync = auto\n",
		"\n; real_sync = auto\n", "\n; on_close = async\n", "\n; order = domain\n", "\n; max_delay_ms = 100\n",
		"\n; max_bytes = 16M\n", "\n; max_calls = 10000\n", "\n; writeback_bytes = 0\n",
		"\n; group_wait_us = auto\n", "\n; max_at_risk_ms = 0\n", "\nlive = auto\n", "\nlive_dir =\n",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		cr_expect(strstr(text, lines[i]), "shim.ini lacks the line '%s'", lines[i] + 1);
}

/* The commented-out example rules work once uncommented. */
Test(shipped, shim_ini_examples_parse_when_enabled)
{
	static char text[1 << 16];
	const char *src = read_text("shim.ini");
	char err[POLICY_ERR_MAX];
	size_t used = 0;
	struct policy p;

	/* Example lines are ";x" with no space after the ';'. */
	for (const char *line = src; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);

		if (line[0] == ';' && len > 1 && line[1] != ' ' && line[1] != '\n')
			line++, len--;
		memcpy(text + used, line, len);
		used += len;
		line += len;
	}
	text[used] = '\0';
	cr_assert_eq(load(text, &p, err), 0, "%s", err);
	cr_assert_eq(p.nrules, 4);
	cr_expect_eq(policy_match(&p, "/var/lib/kafka/logs/topic-0/00000000000000000000.log")->sync, SYNC_DEFER);
	cr_expect_eq(policy_match(&p, "/var/lib/kafka/logs/topic-0/00000000000000000000.index"), &p.deflt);
	cr_expect_eq(policy_match(&p, "/var/lib/activemq/data/kahadb/db-1.log")->sync, SYNC_GROUP);
	cr_expect_str_eq(policy_match(&p, "/var/lib/postgresql/15/main/pg_wal/000000010000000000000001")->name,
			 "postgres-wal");
	cr_expect_eq(policy_match(&p, "/scratch/tmp/x")->sync, SYNC_NOOP);
}

/* ---- concurrency --------------------------------------------------------- */

struct worker {
	const char *text;
	const struct policy *want;
	int failures;
};

static void *load_repeatedly(void *arg)
{
	struct worker *w = arg;
	char err[POLICY_ERR_MAX], out[4096];
	struct policy p;

	for (int i = 0; i < 200; i++) {
		if (policy_load_string(w->text, "t.ini", &p, err, sizeof(err)) != 0 ||
		    memcmp(&p, w->want, sizeof(p)) != 0 ||
		    !glob_match(p.rules[0].glob, "/var/lib/kafka/t-0/0.log"))
			w->failures++;
		policy_format(&p, out, sizeof(out));
	}
	return NULL;
}

/* No shared state: parallel loads agree with a serial one. */
Test(threads, parallel_loads_agree)
{
	const char *text = read_text("tests/data/policy/full.ini");
	struct policy want;
	struct worker w[4];
	pthread_t t[4];

	expect_ok(text, &want);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .text = text, .want = &want };
		cr_assert_eq(pthread_create(&t[i], NULL, load_repeatedly, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(w[i].failures, 0, "thread %d", i);
	}
}

/* A few answers that are the product's promises, spelled out. */
Test(decide, promises)
{
	cr_assert_eq(policy_decide(SYNC_PASSTHROUGH, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_FSYNC), ACT_PASS);
	cr_assert_eq(policy_decide(SYNC_FDATASYNC, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_FSYNC), ACT_DATASYNC);
	cr_assert_eq(policy_decide(SYNC_FDATASYNC, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_OPEN_SYNC), ACT_DATASYNC);
	cr_assert_eq(policy_decide(SYNC_NOOP, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_OPEN_SYNC), ACT_STRIP);
	cr_assert_eq(policy_decide(SYNC_DEFER, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_OPEN_SYNC), ACT_DEFER);
	cr_assert_eq(policy_decide(SYNC_DEFER, OSYNC_KEEP, ON_CLOSE_ASYNC, CALL_OPEN_SYNC), ACT_PASS);
	cr_assert_eq(policy_decide(SYNC_GROUP, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_FDATASYNC), ACT_GROUP);
	cr_assert_eq(policy_decide(SYNC_DEFER, OSYNC_AUTO, ON_CLOSE_SYNC, CALL_CLOSE), ACT_BARRIER);
	for (int s = 0; s < SYNC_POLICY_COUNT; s++) {
		cr_assert_eq(policy_decide((enum sync_policy)s, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_PUBLISH), ACT_BARRIER,
			     "%s: rename/link must wait for pending syncs", sync_policy_name((enum sync_policy)s));
		cr_assert_eq(policy_decide((enum sync_policy)s, OSYNC_AUTO, ON_CLOSE_ASYNC, CALL_EXIT), ACT_BARRIER);
	}
}

/* live = auto (the default) is on exactly where a rule can acknowledge a
 * sync before the device has it; live = on|off forces it. */
Test(good, live_follows_the_rules_unless_forced)
{
	static const struct { const char *ini; bool want; } cases[] = {
		{ "[shim]\npolicy = passthrough\n", false },
		{ "[shim]\npolicy = fdatasync\n", false },
		{ "[shim]\npolicy = group\n", false },
		{ "[shim]\npolicy = defer\n", true },
		{ "[shim]\npolicy = noop\n", true },
		{ "[shim]\npolicy = passthrough\n[rule w]\npath = /w/*\nsync = defer\n", true },
		{ "[shim]\npolicy = passthrough\n[rule w]\npath = /w/*\nosync = strip\n", true },
		{ "[shim]\npolicy = passthrough\n[rule w]\npath = /w/*\nosync = defer\n", true },
		{ "[shim]\npolicy = passthrough\n[rule w]\npath = /w/*\nosync = dsync\n", false },
		{ "[shim]\npolicy = defer\nlive = off\n", false },
		{ "[shim]\npolicy = passthrough\nlive = on\n", true },
		{ "[shim]\npolicy = defer\nlive = auto\n", true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct policy p;
		char err[POLICY_ERR_MAX];
		cr_assert_eq(policy_load_string(cases[i].ini, "t.ini", &p, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(policy_live_wanted(&p), cases[i].want, "%s", cases[i].ini);
	}
	static struct policy p;
	char err[POLICY_ERR_MAX];
	cr_assert_eq(policy_load_string("[shim]\npolicy = defer\n", "t.ini", &p, err, sizeof(err)), 0);
	cr_assert_eq(policy_apply_env(&p, &(struct policy_env){ .live = "0" }, err, sizeof(err)), 0, "%s", err);
	cr_expect(!policy_live_wanted(&p), "SYNCSHIM_LIVE=0 forces it off");
}
