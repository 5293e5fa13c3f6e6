/*
 * test_badconfig.c - every config a careless or hostile user could hand
 * the preloaded shim, in one table.
 *
 * Each row names a config (its bytes, or a path that is not a config at
 * all) and what must happen when a host runs with it: a bad one gives
 * exactly one stderr line naming the problem, and the host runs as
 * passthrough (counted independently: the recording layer beneath the
 * shim sees every fsync reach libc) and exits as it would without the
 * shim, within a second. Odd but valid ones (BOM, CRLF, upper case) load
 * and apply their policy without a word.
 */
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/un.h>

#include "harness.h"

#include <criterion/parameterized.h>

#define N_SYNCS 20

enum expect {
	BAD,        /* one line naming the problem, then passthrough */
	LOADS_NOOP, /* valid: its policy = noop applies, nothing said */
	LOADS_PASS, /* valid, but nothing in it changes this host's syncs */
};

struct row {
	const char *name;
	enum expect expect;
	const char *words;                 /* BAD: the message must hold these */
	const char *text;                  /* the file's bytes ... */
	size_t len;                        /* ... (0: strlen) */
	const char *(*make)(const char *name); /* or: makes the path to use */
};

#define TEXT(t) .text = (t), .len = sizeof(t) - 1

/* ---- configs that need building ---- */

static const char *file_of(const char *name, const char *data, size_t len)
{
	char *p = h_path(name);
	FILE *f = fopen(p, "wb");
	cr_assert_not_null(f, "%s: %s", p, strerror(errno));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	return p;
}

/* size bytes: "[shim]\npolicy = noop\n", then ';' comment lines. */
static const char *sized(const char *name, size_t size)
{
	char *buf = malloc(size);
	cr_assert_not_null(buf);
	static const char head[] = "[shim]\npolicy = noop\n";
	memset(buf, ';', size);
	memcpy(buf, head, sizeof(head) - 1);
	for (size_t i = sizeof(head) - 1 + 99; i < size; i += 100)
		buf[i] = '\n';
	buf[size - 1] = '\n';
	const char *p = file_of(name, buf, size);
	free(buf);
	return p;
}

static const char *make_1mib(const char *name) { return sized(name, 1 << 20); }
static const char *make_1mib_plus(const char *name) { return sized(name, (1 << 20) + 1); }

static const char *make_long_line(const char *name)
{
	char *t = h_fmt("[shim]\npolicy = noop\nlog = /%0196d\n", 0);
	return file_of(name, t, strlen(t));
}

/* One line of 1 MiB without a newline. */
static const char *make_huge_line(const char *name)
{
	size_t n = 1 << 20;
	char *buf = malloc(n);
	cr_assert_not_null(buf);
	memset(buf, 'x', n);
	const char *p = file_of(name, buf, n);
	free(buf);
	return p;
}

static const char *rules(const char *name, int n)
{
	char *t = h_strdup("[shim]\npolicy = noop\n");
	for (int i = 0; i < n; i++)
		t = h_fmt("%s[rule r%d]\npath = /nowhere/%d/**\nsync = passthrough\n", t, i, i);
	return file_of(name, t, strlen(t));
}

static const char *make_64_rules(const char *name) { return rules(name, 64); }
static const char *make_65_rules(const char *name) { return rules(name, 65); }

static const char *make_binary(const char *name)
{
	unsigned char buf[4096];
	unsigned x = 12345;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(0x80 | (x >> 16)); /* high bytes: no NUL */
		if (i % 50 == 49)
			buf[i] = '\n';
	}
	return file_of(name, (const char *)buf, sizeof(buf));
}

static const char *make_elf(const char *name)
{
	(void)name;
	return h_prog("syncloop");
}

static const char *make_fifo(const char *name)
{
	char *p = h_path(name);
	cr_assert_eq(mkfifo(p, 0600), 0, "mkfifo: %s", strerror(errno));
	return p;
}

static const char *make_dir(const char *name)
{
	char *p = h_path(name);
	cr_assert_eq(mkdir(p, 0700), 0);
	return p;
}

static const char *make_socket(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *p = h_path(name);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(s >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
	cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind %s: %s", p, strerror(errno));
	return p; /* left open: the test process ends soon */
}

static const char *make_loop(const char *name)
{
	char *p = h_path(name);
	cr_assert_eq(symlink(p, p), 0);
	return p;
}

static const char *make_dangling(const char *name)
{
	char *p = h_path(name);
	cr_assert_eq(symlink(h_path("nothing-here"), p), 0);
	return p;
}

static const char *make_link_to_fifo(const char *name)
{
	char *p = h_path(name);
	cr_assert_eq(symlink(make_fifo(h_fmt("%s.target", name)), p), 0);
	return p;
}

static const char *make_through_file(const char *name)
{
	const char *f = file_of(name, "x", 1);
	return h_fmt("%s/shim.ini", f); /* ENOTDIR, even for root */
}

static const char *make_too_long(const char *name)
{
	(void)name;
	return h_fmt("%s/%0300d.ini", h_ctx.dir, 0); /* ENAMETOOLONG */
}

static const char *make_missing(const char *name) { return h_path(name); }
static const char *dev_null(const char *name) { (void)name; return "/dev/null"; }
static const char *dev_zero(const char *name) { (void)name; return "/dev/zero"; }
static const char *dev_urandom(const char *name) { (void)name; return "/dev/urandom"; }
static const char *proc_status(const char *name) { (void)name; return "/proc/self/status"; }
static const char *proc_mem(const char *name) { (void)name; return "/proc/self/mem"; }

static const char *sys_file(const char *name)
{
	(void)name;
	if (access("/sys/kernel/address_bits", F_OK) != 0)
		cr_skip_test("no /sys/kernel/address_bits here");
	return "/sys/kernel/address_bits";
}

static const char *block_device(const char *name)
{
	(void)name;
	static const char *const cands[] = { "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0" };
	struct stat st;
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (stat(cands[i], &st) == 0 && S_ISBLK(st.st_mode))
			return cands[i];
	cr_skip_test("no block device node found");
	return NULL;
}

/* ---- the table ---- */

static const struct row table[] = {
	/* bytes that are not text */
	{ "binary (high bytes)", BAD, "malformed line", .make = make_binary },
	{ "an ELF executable", BAD, "NUL byte", .make = make_elf },
	{ "NUL hiding a rule", BAD, ":3: NUL byte",
	  TEXT("[shim]\npolicy = noop\n\0\n[rule keep]\npath = /**\nsync = passthrough\n") },
	{ "NUL inside a value", BAD, "NUL byte", TEXT("[shim]\npolicy = no\0op\n") },
	{ "UTF-16 with BOM", BAD, "NUL byte", TEXT("\xff\xfe[\0s\0h\0i\0m\0]\0\n\0") },
	{ "BOM twice", BAD, ":1: malformed line", TEXT("\xef\xbb\xbf\xef\xbb\xbf[shim]\npolicy = noop\n") },
	/* odd but valid text */
	{ "UTF-8 BOM", LOADS_NOOP, NULL, TEXT("\xef\xbb\xbf[shim]\npolicy = noop\n") },
	{ "CRLF line ends", LOADS_NOOP, NULL, TEXT("[shim]\r\npolicy = noop\r\n") },
	{ "BOM and CRLF", LOADS_NOOP, NULL, TEXT("\xef\xbb\xbf[shim]\r\npolicy = noop\r\n") },
	{ "upper-case value", LOADS_NOOP, NULL, TEXT("[shim]\npolicy = NOOP\n") },
	{ "no final newline", LOADS_NOOP, NULL, TEXT("[shim]\npolicy = noop") },
	{ "inline comment", LOADS_NOOP, NULL, TEXT("[shim]\npolicy = noop ; scratch\n") },
	{ "empty file", LOADS_PASS, NULL, TEXT("") },
	{ "exactly 1 MiB", LOADS_NOOP, NULL, .make = make_1mib },
	{ "64 rules", LOADS_NOOP, NULL, .make = make_64_rules },
	{ "star-heavy glob", LOADS_NOOP, NULL,
	  TEXT("[shim]\npolicy = noop\n[rule s]\npath = /a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n") },
	/* malformed text */
	{ "CR-only line ends", BAD, "unexpected text after ']'", TEXT("[shim]\rpolicy = noop\r") },
	{ "1 MiB + 1 byte", BAD, "file too large", .make = make_1mib_plus },
	{ "197-character line", BAD, ":3: line too long", .make = make_long_line },
	{ "1 MiB on one line", BAD, ":1: line too long", .make = make_huge_line },
	{ "65 rules", BAD, "too many rules", .make = make_65_rules },
	{ "missing ']'", BAD, ":1: section header without closing ']'", TEXT("[shim\npolicy = noop\n") },
	{ "unknown section", BAD, "unknown section [shm]", TEXT("[shm]\npolicy = noop\n") },
	{ "unknown key", BAD, "unknown key 'polcy'", TEXT("[shim]\npolcy = noop\n") },
	{ "key outside a section", BAD, ":1: 'policy' is outside any section", TEXT("policy = noop\n") },
	{ "key given twice", BAD, ":3: 'policy' given twice", TEXT("[shim]\npolicy = noop\npolicy = noop\n") },
	{ "continuation line", BAD, "continuation", TEXT("[shim]\npolicy = noop\n  fdatasync\n") },
	{ "colon for equals", BAD, "':' between key and value", TEXT("[shim]\npolicy: noop\n") },
	{ "comment glued to value", BAD, "unknown policy 'noop;x'", TEXT("[shim]\npolicy = noop;x\n") },
	{ "bad rule name", BAD, "bad rule name", TEXT("[shim]\npolicy = noop\n[rule a/b]\npath = /x\n") },
	{ "rule without path", BAD, "has no path", TEXT("[shim]\npolicy = noop\n[rule r]\nsync = noop\n") },
	/* numbers */
	{ "overflow", BAD, "bad number '99999999999999999999999'",
	  TEXT("[shim]\npolicy = noop\nmax_calls = 99999999999999999999999\n") },
	{ "overflow by suffix", BAD, "bad number '17179869184G'",
	  TEXT("[shim]\npolicy = noop\nmax_bytes = 17179869184G\n") },
	{ "32-bit overflow", BAD, "out of range", TEXT("[shim]\npolicy = noop\nmax_calls = 4294967297\n") },
	{ "negative", BAD, "bad number '-1'", TEXT("[shim]\npolicy = noop\nmax_delay_ms = -1\n") },
	{ "zero delay", BAD, "max_delay_ms = 0 is out of range", TEXT("[shim]\npolicy = noop\nmax_delay_ms = 0\n") },
	{ "zero flushers", BAD, "max_flushers = 0 is out of range", TEXT("[shim]\npolicy = noop\nmax_flushers = 0\n") },
	{ "hex", BAD, "bad number '0x10'", TEXT("[shim]\npolicy = noop\nmax_flushers = 0x10\n") },
	{ "not a power of two", BAD, "ring_records = 1000 is out of range",
	  TEXT("[shim]\npolicy = noop\nring_records = 1000\n") },
	{ "relative log path", BAD, "is relative", TEXT("[shim]\npolicy = noop\nlog = rel.log\n") },
	/* globs */
	{ "glob ***", BAD, "'***' is ambiguous", TEXT("[shim]\npolicy = noop\n[rule g]\npath = /a/***\n") },
	{ "glob unterminated [", BAD, "unterminated '['", TEXT("[shim]\npolicy = noop\n[rule g]\npath = /a/[b\n") },
	{ "glob reversed range", BAD, "reversed range", TEXT("[shim]\npolicy = noop\n[rule g]\npath = /a/[z-a]\n") },
	{ "glob '/' in class", BAD, "'/' inside [...]", TEXT("[shim]\npolicy = noop\n[rule g]\npath = /a[/]b\n") },
	{ "relative glob", BAD, "must start with '/'", TEXT("[shim]\npolicy = noop\n[rule g]\npath = data/*.log\n") },
	{ "glob trailing \\", BAD, "trailing '\\' escapes nothing", TEXT("[shim]\npolicy = noop\n[rule g]\npath = /a\\\n") },
	/* paths that are not config files */
	{ "FIFO", BAD, "is a FIFO", .make = make_fifo },
	{ "symlink to a FIFO", BAD, "is a FIFO", .make = make_link_to_fifo },
	{ "directory", BAD, "is a directory", .make = make_dir },
	{ "socket", BAD, "is a socket", .make = make_socket },
	{ "/dev/null", BAD, "is a character device", .make = dev_null },
	{ "/dev/zero", BAD, "is a character device", .make = dev_zero },
	{ "/dev/urandom", BAD, "is a character device", .make = dev_urandom },
	{ "block device", BAD, "is a block device", .make = block_device },
	{ "/proc/self/status", BAD, "is on procfs", .make = proc_status },
	{ "/proc/self/mem", BAD, "is on procfs", .make = proc_mem },
	{ "a /sys file", BAD, "is on sysfs", .make = sys_file },
	{ "symlink loop", BAD, "Too many levels of symbolic links", .make = make_loop },
	{ "dangling symlink", BAD, "No such file or directory", .make = make_dangling },
	{ "missing file", BAD, "No such file or directory", .make = make_missing },
	{ "path through a file", BAD, "Not a directory", .make = make_through_file },
	{ "name too long", BAD, "File name too long", .make = make_too_long },
};

#define NROWS (sizeof(table) / sizeof(table[0]))

static const char *config_path(const struct row *row, size_t i)
{
	const char *name = h_fmt("row%02zu.ini", i);
	if (row->make)
		return row->make(name);
	return file_of(name, row->text, row->len);
}

/* A second is the bound; the sanitizer build starts each process slower. */
static double time_bound(void)
{
	return h_ctx.asan ? 3.0 : 1.0;
}

static void check_row(const struct row *row, size_t i)
{
	const char *ini = config_path(row, i);
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	c.timeout_s = 10;
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	char *f = h_path(h_fmt("row%02zu.dat", i));
	h_args(&c, h_prog("syncloop"), "-f", f, "-n", h_fmt("%d", N_SYNCS), NULL);
	struct h_result r = h_run(&c);
	const char *what = row->name;

	cr_assert(!r.timed_out, "%s: the host hung", what);
	cr_expect_eq(r.code, 0, "%s: exit %d, signal %d:\n%s", what, r.code, r.sig, r.err);
	cr_expect_lt(r.secs, time_bound(), "%s: took %.2f s", what, r.secs);
	cr_expect(h_has(r.out, h_fmt("syncloop: ok files=1 count=%d", N_SYNCS)), "%s: %s", what, r.out);
	struct h_log log = h_log_load(&c);
	int real = h_count(&log, "fsync", h_ino(f));
	if (row->expect == BAD) {
		cr_expect_eq(h_nlines(r.err), 1, "%s: want one stderr line, got:\n%s", what, r.err);
		cr_expect(!strncmp(r.err, "syncshim: ", 10), "%s: %s", what, r.err);
		cr_expect(h_has(r.err, row->words), "%s: want '%s' in:\n%s", what, row->words, r.err);
		cr_expect(h_has(r.err, "; running as passthrough\n"), "%s: %s", what, r.err);
		cr_expect_eq(real, N_SYNCS, "%s: %d of %d fsyncs reached libc (passthrough)", what, real, N_SYNCS);
	} else {
		cr_expect_str_empty(r.err, "%s: a valid config, yet:\n%s", what, r.err);
		int want = row->expect == LOADS_NOOP ? 0 : N_SYNCS;
		cr_expect_eq(real, want, "%s: %d fsyncs reached libc, want %d", what, real, want);
	}
}

TestSuite(badconfig, .init = h_setup, .fini = h_teardown, .timeout = 120);

Test(badconfig, table_has_forty_bad_rows)
{
	size_t bad = 0;
	for (size_t i = 0; i < NROWS; i++)
		bad += table[i].expect == BAD;
	cr_expect_geq(bad, 40, "only %zu bad configs in the table", bad);
}

/* One test per row would mean one process per row; criterion's
 * parameterized tests do exactly that, in parallel. */
ParameterizedTestParameters(badconfig, each_row)
{
	static size_t idx[NROWS];
	for (size_t i = 0; i < NROWS; i++)
		idx[i] = i;
	return cr_make_param_array(size_t, idx, NROWS);
}

ParameterizedTest(size_t *i, badconfig, each_row)
{
	cr_log_info("row %zu: %s", *i, table[*i].name);
	check_row(&table[*i], *i);
}

/* "Exits as it would without the shim": a host that fails keeps its own
 * status under a config that is refused. */
Test(badconfig, host_exit_status_kept)
{
	for (int k = 0; k < 2; k++) {
		struct h_cmd c;
		h_cmd_init(&c, k ? H_SHIM : H_PLAIN);
		c.timeout_s = 10;
		if (k)
			h_envf(&c, "SYNCSHIM_CONFIG=%s", make_fifo("exit.fifo"));
		h_args(&c, "/bin/sh", "-c", "exit 3", NULL);
		struct h_result r = h_run(&c);
		cr_expect(!r.timed_out);
		cr_expect_eq(r.code, 3, "%s: exit %d", k ? "under the shim" : "alone", r.code);
		cr_expect_eq(h_nlines(r.err), k, "%s", r.err);
	}
}

/* EACCES is not real for root: the host runs as nobody, and the config
 * is a file nobody may read. */
Test(badconfig, unreadable_file)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to switch to another user");
	char *box = h_path("nobody");
	cr_assert_eq(mkdir(box, 0777), 0);
	cr_assert_eq(chmod(box, 0777), 0);
	cr_assert_eq(chmod(h_ctx.dir, 0711), 0);
	const char *ini = file_of("nobody/secret.ini", "[shim]\npolicy = noop\n", 21);
	cr_assert_eq(chmod(ini, 0000), 0);
	char *f = h_fmt("%s/data", box), *rec = h_fmt("%s/rec.log", box);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	c.timeout_s = 10;
	h_args(&c, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "env", NULL);
	h_argf(&c, "LD_PRELOAD=%s%s%s:%s", h_ctx.prefix, h_ctx.prefix[0] ? ":" : "", h_shim_lib(), h_rec_lib());
	h_argf(&c, "RECLAYER_LOG=%s", rec);
	h_argf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_args(&c, h_prog("syncloop"), "-f", f, "-n", h_fmt("%d", N_SYNCS), NULL);
	struct h_result r = h_run(&c);
	cr_assert(!r.timed_out);
	cr_expect_eq(r.code, 0, "exit %d:\n%s", r.code, r.err);
	cr_expect_eq(h_nlines(r.err), 1, "%s", r.err);
	cr_expect(h_has(r.err, "cannot read: Permission denied") && h_has(r.err, "running as passthrough"),
		  "%s", r.err);
	snprintf(c.reclog, sizeof(c.reclog), "%s", rec);
	struct h_log log = h_log_load(&c);
	cr_expect_eq(h_count(&log, "fsync", h_ino(f)), N_SYNCS, "passthrough");
}

/* ---- the environment, checked like the ini ---- */

static struct h_result env_run(struct h_cmd *c, const char *kv, const char *kv2, const char *f)
{
	h_cmd_init(c, H_SHIM_REC);
	c->timeout_s = 10;
	h_env(c, kv);
	if (kv2)
		h_env(c, kv2);
	h_args(c, h_prog("syncloop"), "-f", f, "-n", h_fmt("%d", N_SYNCS), NULL);
	return h_run(c);
}

Test(badconfig, bad_environment_values)
{
	static const struct {
		const char *kv, *words;
	} rows[] = {
		{ "SYNCSHIM_LOG_MODE=bogus", "SYNCSHIM_LOG_MODE=bogus: unknown log_mode 'bogus'; use one of: off, summary, calls" },
		{ "SYNCSHIM_LOG=rel.log", "SYNCSHIM_LOG=rel.log: log path 'rel.log' is relative" },
		{ "SYNCSHIM_LOG=/tmp/x.%d.log", "SYNCSHIM_LOG=/tmp/x.%d.log: bad '%d' in log path" },
		{ "SYNCSHIM_POLICY=sometimes", "SYNCSHIM_POLICY=sometimes: unknown policy 'sometimes'" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct h_cmd c;
		char *f = h_path(h_fmt("env%zu.dat", i));
		/* with policy noop asked for: a bad setting must leave passthrough */
		struct h_result r = env_run(&c, rows[i].kv, strstr(rows[i].kv, "POLICY") ? NULL : "SYNCSHIM_POLICY=noop", f);
		cr_assert(!r.timed_out);
		cr_expect_eq(r.code, 0, "%s: %s", rows[i].kv, r.err);
		cr_expect_eq(h_nlines(r.err), 1, "%s: want one line:\n%s", rows[i].kv, r.err);
		cr_expect(h_has(r.err, h_fmt("syncshim: %s", rows[i].words)), "%s:\n%s", rows[i].kv, r.err);
		cr_expect(h_has(r.err, "; running as passthrough"), "%s", r.err);
		struct h_log log = h_log_load(&c);
		cr_expect_eq(h_count(&log, "fsync", h_ino(f)), N_SYNCS, "%s: passthrough", rows[i].kv);
	}
	/* a relative SYNCSHIM_LOG writes nothing into the working directory */
	cr_expect_eq(access(h_path("rel.log"), F_OK), -1, "rel.log was created");
}
