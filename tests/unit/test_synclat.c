/*
 * test_synclat.c - the log format end to end: encoders -> strict reader ->
 * merged runs -> report/compare numbers and outputs -> the CLI's exit
 * codes. Logs are synthesized here with known answers.
 *
 * The CLI is linked into this test from libsynclat.a (synclat_main, the
 * function the program's main() calls) so its exit codes are checked
 * in-process, under the sanitizers too; the built binary is checked as
 * well when $SYNCSHIM_BUILD/synclat exists.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hist.h"
#include "logfmt.h"
#include "logread.h"
#include "report.h"
#include "svg.h"
#include "synclat_cli.h"

#define SEC 1000000000ull
#define MS 1000000ull
#define WALL0 (1700000000ull * SEC + 250000000ull)  /* not on a second boundary */
#define MONO0 (5000ull * SEC)

/* ---- building logs ---- */

struct logbuf {
	uint8_t *data;
	size_t len, cap;
	uint32_t seq;
	size_t ends[4096];      /* offsets where a block ends */
	size_t nblocks;
};

static uint8_t blk[1 << 20];

static void lb_put(struct logbuf *b, size_t n)
{
	cr_assert_gt(n, 0, "an encoder refused its block");
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->data = realloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, blk, n);
	b->len += n;
	b->seq++;
	if (b->nblocks < 4096)
		b->ends[b->nblocks++] = b->len;
}

static const struct logfmt_rule test_rules[] = {
	{ "", "", 0 },                       /* default: passthrough */
	{ "wal", "/data/*.wal", 4 },         /* group */
};

static void lb_header(struct logbuf *b, uint32_t pid, uint32_t ppid, uint64_t wall, uint64_t mono)
{
	memset(b, 0, sizeof(*b));
	struct logfmt_header h = {
		.pid = pid, .ppid = ppid, .log_mode = 2, .start_wall_ns = wall,
		.start_mono_ns = mono, .hostname = "testhost", .kernel = "6.1.0-test",
		.cmdline = "./bench --sync 1000", .rules = test_rules, .nrules = 2,
		.policy_ini = "[shim]\npolicy = passthrough\n[rule wal]\nglob = /data/*.wal\npolicy = group\n",
	};
	lb_put(b, logfmt_encode_header(blk, sizeof(blk), &h));
}

static void lb_file(struct logbuf *b, uint32_t id, const char *path, const char *fs)
{
	struct logfmt_file f = { .id = id, .rule = 1, .dev = 0x801, .ino = 1000 + id,
				 .rule_name = "wal", .fstype = fs, .path = path };
	lb_put(b, logfmt_encode_file(blk, sizeof(blk), b->seq, &f));
}

static void lb_trailer(struct logbuf *b, uint64_t wall, uint64_t mono)
{
	struct logfmt_trailer t = { wall, mono, 0 };
	lb_put(b, logfmt_encode_trailer(blk, sizeof(blk), b->seq, &t));
}

static void lb_hists(struct logbuf *b, uint32_t snap, uint64_t t, const uint8_t *ops,
		     struct hist *const *h, int n)
{
	for (int i = 0; i < n; i++) {
		struct logfmt_histkey k = { .snap = snap, .part = (uint16_t)i, .nparts = (uint16_t)n,
					    .time_ns = t, .op = ops[i], .rule = 1, .file_id = 0 };
		lb_put(b, logfmt_encode_hist(blk, sizeof(blk), b->seq, &k, h[i]));
	}
}

struct run_spec {
	uint32_t pid, ppid;
	uint64_t wall, mono;
	uint64_t sync_ns;       /* every fsync takes exactly this */
	unsigned nsync;         /* fsyncs (and as many 4096-byte writes) */
	unsigned nsec;          /* spread over this many seconds */
	const char *path;
	bool trailer, hists;
};

/* A calls-mode log: per second RECORDS + INTERVAL, then a HIST set,
 * DROPS and (if asked) the TRAILER at exactly nsec seconds. */
static void build_run(struct logbuf *b, const struct run_spec *s)
{
	struct hist *hw = malloc(sizeof(*hw)), *hs = malloc(sizeof(*hs));
	hist_init(hw);
	hist_init(hs);
	lb_header(b, s->pid, s->ppid, s->wall, s->mono);
	lb_file(b, 1, s->path, "ext4");

	struct logfmt_record *recs = calloc(2 * s->nsync, sizeof(*recs));
	unsigned done = 0;
	for (unsigned sec = 0; sec < s->nsec; sec++) {
		unsigned n = (s->nsync - done) / (s->nsec - sec);
		struct tally t[LOGOP_COUNT];
		memset(t, 0, sizeof(t));
		for (unsigned i = 0; i < n; i++) {
			uint64_t at = s->mono + sec * SEC + (uint64_t)i * (SEC / (n + 1));
			recs[2 * i] = (struct logfmt_record){ at, 2000, 4096, 4096, 1, 77, LOGOP_WRITE, 0, 1 };
			recs[2 * i + 1] = (struct logfmt_record){ at + 2000, s->sync_ns, 0, 0, 1, 77,
								  LOGOP_FSYNC, 0, 1 };
			tally_add(&t[LOGOP_WRITE], 2000, 4096);
			tally_add(&t[LOGOP_FSYNC], s->sync_ns, 0);
			hist_record(hw, 2000);
			hist_record(hs, s->sync_ns);
		}
		if (n)
			lb_put(b, logfmt_encode_records(blk, sizeof(blk), b->seq, recs, 2 * n));
		lb_put(b, logfmt_encode_interval(blk, sizeof(blk), b->seq, sec, t));
		done += n;
	}
	uint64_t end = s->mono + s->nsec * SEC;
	if (s->hists) {
		const uint8_t ops[] = { LOGOP_WRITE, LOGOP_FSYNC };
		struct hist *hh[] = { hw, hs };
		lb_hists(b, 1, end, ops, hh, 2);
	}
	lb_put(b, logfmt_encode_drops(blk, sizeof(blk), b->seq, end, 0));
	if (s->trailer)
		lb_trailer(b, s->wall + s->nsec * SEC, end);
	free(recs);
	free(hw);
	free(hs);
}

static struct run_spec spec(uint64_t sync_ns, unsigned nsec)
{
	return (struct run_spec){ .pid = 100, .ppid = 1, .wall = WALL0, .mono = MONO0,
				  .sync_ns = sync_ns, .nsync = 1000, .nsec = nsec,
				  .path = "/data/db.wal", .trailer = true, .hists = true };
}

/* ---- files and the CLI ---- */

static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/synclat-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(synclat, .init = make_tmpdir, .fini = remove_tmpdir);

static const char *tmp(const char *name)
{
	static char paths[8][128];
	static int next;
	char *p = paths[next++ % 8];
	snprintf(p, 128, "%s/%s", tmpdir, name);
	return p;
}

static const char *save(const struct logbuf *b, const char *name)
{
	const char *p = tmp(name);
	FILE *f = fopen(p, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(b->data, 1, b->len, f), b->len);
	fclose(f);
	return p;
}

struct cli {
	int rc;
	char *out, *err;
	size_t outlen, errlen;
};

/* Runs the CLI in-process with a NULL-terminated argument list. */
static struct cli run_cli(const char *arg, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;
	argv[argc++] = "synclat";
	va_start(ap, arg);
	for (const char *a = arg; a && argc < 31; a = va_arg(ap, const char *))
		argv[argc++] = strdup(a);
	va_end(ap);
	argv[argc] = NULL;

	struct cli c = { 0, NULL, NULL, 0, 0 };
	FILE *out = open_memstream(&c.out, &c.outlen), *err = open_memstream(&c.err, &c.errlen);
	c.rc = synclat_main(argc, argv, out, err);
	fclose(out);
	fclose(err);
	for (int i = 1; i < argc; i++)
		free(argv[i]);
	return c;
}

static void cli_free(struct cli *c)
{
	free(c->out);
	free(c->err);
}

static void read_ok(const struct logbuf *b, struct lr_log *log)
{
	struct lr_error e;
	int rc = lr_read_mem(b->data, b->len, "mem.log", log, &e);
	cr_assert_eq(rc, 0, "reader refused a valid log: %s", e.msg);
}

/* Recomputes both CRCs of the block at off after a test edited it. */
static void reseal(uint8_t *d, size_t off)
{
	uint32_t len = d[off + 12] | d[off + 13] << 8 | d[off + 14] << 16 | (uint32_t)d[off + 15] << 24;
	uint32_t pc = logfmt_crc32c(0, d + off + 24, len), hc;
	for (int i = 0; i < 4; i++)
		d[off + 16 + i] = (uint8_t)(pc >> (8 * i));
	hc = logfmt_crc32c(0, d + off, 20);
	for (int i = 0; i < 4; i++)
		d[off + 20 + i] = (uint8_t)(hc >> (8 * i));
}

/* ---- format ---- */

Test(synclat, crc32c_check_value)
{
	cr_assert_eq(logfmt_crc32c(0, "123456789", 9), 0xE3069283u);
	uint32_t c = logfmt_crc32c(0, "1234", 4);
	cr_assert_eq(logfmt_crc32c(c, "56789", 5), 0xE3069283u, "crc continues across calls");
}

Test(synclat, ops_and_names)
{
	cr_assert_eq(LOGOP_COUNT, 16);
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		cr_assert_eq(logop_parse(logop_name(op)), (int)op);
	cr_assert_str_eq(logop_name(LOGOP_REAL_FDATASYNC), "real_fdatasync");
	cr_assert(logop_is_sync(LOGOP_FSYNC) && !logop_is_sync(LOGOP_REAL_FSYNC));
	cr_assert(logop_is_real(LOGOP_REAL_SYNC_FILE_RANGE) && logop_is_write(LOGOP_PWRITEV));
	cr_assert_eq(logop_parse("nope"), -1);
	cr_assert_str_eq(logop_name(200), "?");
}

Test(synclat, roundtrip_every_block_type)
{
	struct logbuf b;
	lb_header(&b, 4242, 4241, WALL0, MONO0);
	lb_file(&b, 7, "/data/a b.wal", "xfs");
	struct logfmt_file f2 = { .id = 9, .rule = 0, .dev = 5, .ino = 6, .rule_name = "",
				  .fstype = "tmpfs", .path = "/tmp/x" };
	lb_put(&b, logfmt_encode_file(blk, sizeof(blk), b.seq, &f2));

	struct logfmt_record recs[3] = {
		{ MONO0 + 10, 123, 4096, 4096, 7, 11, LOGOP_PWRITE, 0, 1 },
		{ MONO0 + 20, 456789, 0, -5, 7, 12, LOGOP_FDATASYNC, 0x01 /* retired bit */, 1 },
		{ MONO0 + 30, 99, 0, 0, 0, 13, LOGOP_SYNC, 0, 0 },
	};
	lb_put(&b, logfmt_encode_records(blk, sizeof(blk), b.seq, recs, 3));

	/* the streaming form gives the same bytes */
	logfmt_record_put(blk + LOGFMT_RECORDS_AT(0), &recs[0]);
	size_t n1 = logfmt_records_seal(blk, 99, 1);
	static uint8_t other[4096];
	size_t n2 = logfmt_encode_records(other, sizeof(other), 99, recs, 1);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(blk, other, n1), 0);
	cr_assert_eq(logfmt_records_fit(LOGFMT_RECORDS_AT(10)), 10);

	struct tally t[LOGOP_COUNT];
	memset(t, 0, sizeof(t));
	t[LOGOP_PWRITE] = (struct tally){ 1, 4096, 123, 123 };
	t[LOGOP_REAL_FSYNC] = (struct tally){ 2, 0, 3000, 2000 };
	lb_put(&b, logfmt_encode_interval(blk, sizeof(blk), b.seq, 0, t));

	struct hist *h = malloc(sizeof(*h));
	hist_init(h);
	hist_record(h, 456789);
	hist_record(h, 1000);
	struct logfmt_histkey k = { .snap = 3, .part = 0, .nparts = 2, .time_ns = MONO0 + 40,
				    .op = LOGOP_FDATASYNC, .rule = 1, .file_id = 0 };
	lb_put(&b, logfmt_encode_hist(blk, sizeof(blk), b.seq, &k, h));
	k.part = 1;
	k.file_id = 7;
	lb_put(&b, logfmt_encode_hist(blk, sizeof(blk), b.seq, &k, h));

	struct logfmt_event ev = { MONO0 + 50, 7, 5, LOGEV_SYNC_ERROR, "fdatasync failed" };
	lb_put(&b, logfmt_encode_event(blk, sizeof(blk), b.seq, &ev));
	static const struct logfmt_rule newrules[] = { { "", "", 1 }, { "a", "/a/*", 2 }, { "b", "/b/**", 3 } };
	lb_put(&b, logfmt_encode_policy(blk, sizeof(blk), b.seq, MONO0 + 60, newrules, 3, "[shim]\n"));
	lb_put(&b, logfmt_encode_drops(blk, sizeof(blk), b.seq, MONO0 + 70, 17));
	lb_trailer(&b, WALL0 + 2 * SEC, MONO0 + 2 * SEC);

	struct lr_log log;
	read_ok(&b, &log);
	cr_assert_eq(log.nblocks, b.nblocks);
	cr_assert_eq(log.major, LOGFMT_MAJOR);
	cr_assert_eq(log.pid, 4242);
	cr_assert_eq(log.ppid, 4241);
	cr_assert_eq(log.log_mode, 2);
	cr_assert_eq(log.start_wall_ns, WALL0);
	cr_assert_eq(log.start_mono_ns, MONO0);
	cr_assert_str_eq(log.hostname, "testhost");
	cr_assert_str_eq(log.kernel, "6.1.0-test");
	cr_assert_str_eq(log.cmdline, "./bench --sync 1000");

	/* the POLICY block replaced the HEADER's snapshot */
	cr_assert_eq(log.nrules, 3);
	cr_assert_str_eq(log.rules[2].name, "b");
	cr_assert_str_eq(log.rules[2].glob, "/b/**");
	cr_assert_eq(log.rules[2].sync, 3);
	cr_assert_str_eq(log.policy_ini, "[shim]\n");
	cr_assert_eq(log.npolicies, 1);

	cr_assert_eq(log.nfiles, 2);
	cr_assert_eq(log.files[0].id, 7);
	cr_assert_str_eq(log.files[0].path, "/data/a b.wal");
	cr_assert_str_eq(log.files[0].fstype, "xfs");
	cr_assert_str_eq(log.files[0].rule_name, "wal");
	cr_assert_eq(log.files[0].ino, 1007);
	cr_assert_eq(lr_file_index(&log, 9), 1);
	cr_assert_eq(lr_file_index(&log, 8), -1);

	cr_assert_eq(log.nrecs, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(memcmp(&log.recs[i], &recs[i], sizeof(recs[i])), 0, "record %d", i);

	cr_assert_eq(log.nsecs, 1);
	cr_assert_eq(log.secs[0].n, 2);
	cr_assert_eq(log.ivents[0].op, LOGOP_PWRITE);
	cr_assert_eq(log.ivents[0].t.bytes, 4096);
	cr_assert_eq(log.ivents[1].op, LOGOP_REAL_FSYNC);
	cr_assert_eq(log.ivents[1].t.max_ns, 2000);

	cr_assert(log.has_hists);
	cr_assert_eq(log.nhists, 2);
	cr_assert_eq(log.hists[1].file_id, 7);
	cr_assert_eq(log.hist_time_ns, MONO0 + 40);
	struct hist *d = malloc(sizeof(*d));
	lr_hist_load(&log.hists[0], d);
	cr_assert_eq(memcmp(d, h, sizeof(*h)), 0);

	cr_assert_eq(log.nevents, 1);
	cr_assert_eq(log.events[0].err, 5);
	cr_assert_eq(log.events[0].kind, LOGEV_SYNC_ERROR);
	cr_assert_str_eq(log.events[0].text, "fdatasync failed");
	cr_assert_eq(log.drops, 17);
	cr_assert(log.has_trailer);
	cr_assert_eq(log.trailer.end_mono_ns, MONO0 + 2 * SEC);
	cr_assert_eq(log.warnings, 0);

	struct lr_log *lp = &log;
	struct run r;
	run_build(&r, &lp, 1);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	report_print(out, &r, FMT_TEXT, REPORT_FILES);
	fclose(out);
	cr_assert(strstr(text, "sync-error   /data/a b.wal: fdatasync failed (Input/output error)"),
		  "%s", text);
	cr_assert(strstr(text, "(after 1 reload)"), "%s", text);
	cr_assert(strstr(text, "xfs (1 file), tmpfs (1 file)"), "%s", text);
	free(text);
	run_free(&r);
	lr_free(&log);
	free(h);
	free(d);
	free(b.data);
}

/* What the shim's logger may legitimately write: a file it could not
 * resolve, rule indices of a reloaded policy it did not log. */
Test(synclat, tolerated_writer_quirks)
{
	struct logbuf b;
	lb_header(&b, 100, 1, WALL0, MONO0);
	struct logfmt_file f = { .id = 5, .rule = 9, .dev = 0x801, .ino = 1005, .rule_name = "late",
				 .fstype = "unknown", .path = "" };
	lb_put(&b, logfmt_encode_file(blk, sizeof(blk), b.seq, &f));
	struct logfmt_record rec = { MONO0, 10, 1, 1, 5, 1, LOGOP_WRITE, 0, 9 };
	lb_put(&b, logfmt_encode_records(blk, sizeof(blk), b.seq, &rec, 1));
	struct hist *h = malloc(sizeof(*h));
	hist_init(h);
	hist_record(h, 10);
	struct logfmt_histkey k = { .snap = 0, .part = 0, .nparts = 1, .op = LOGOP_WRITE, .rule = 40 };
	lb_put(&b, logfmt_encode_hist(blk, sizeof(blk), b.seq, &k, h));
	struct logfmt_file esc = { .id = 6, .rule_name = "", .fstype = "ext4",
				   .path = "/data/\x1b[2Jevil\n.wal" };
	lb_put(&b, logfmt_encode_file(blk, sizeof(blk), b.seq, &esc));
	struct lr_log log;
	read_ok(&b, &log);
	cr_assert_str_eq(log.files[0].path, "(no path: dev 0x801 ino 1005)");
	cr_assert_eq(log.nrecs, 1);
	cr_assert_eq(log.nhists, 1);

	/* paths may hold any byte; a terminal gets no control sequences */
	struct lr_log *lp = &log;
	struct run r;
	run_build(&r, &lp, 1);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	report_print(out, &r, FMT_TEXT, REPORT_FILES);
	fclose(out);
	cr_assert(strstr(text, "/data/?[2Jevil?.wal"), "%s", text);
	cr_assert_null(strchr(text, '\x1b'));
	free(text);
	run_free(&r);
	lr_free(&log);
	free(h);
	free(b.data);
}

/* Appends extra payload bytes to the block in blk (a newer writer's
 * fields) and fixes its length and CRCs. */
static size_t widen(size_t n, size_t extra)
{
	memset(blk + n, 0xab, extra);
	n += extra;
	uint32_t len = (uint32_t)(n - LOGFMT_BLOCK_HDR);
	for (int i = 0; i < 4; i++)
		blk[12 + i] = (uint8_t)(len >> (8 * i));
	reseal(blk, 0);
	return n;
}

static void newer_parts(struct logbuf *b, unsigned minor)
{
	lb_header(b, 100, 1, WALL0, MONO0);
	b->data[26] = (uint8_t)minor;
	reseal(b->data, 0);
	struct logfmt_file f = { .id = 1, .rule = 0, .rule_name = "", .fstype = "ext4", .path = "/x" };
	lb_put(b, widen(logfmt_encode_file(blk, sizeof(blk), b->seq, &f), 6));
	size_t n = logfmt_encode_drops(blk, sizeof(blk), b->seq, MONO0, 0);
	blk[4] = 60;  /* a block type from the future */
	reseal(blk, 0);
	lb_put(b, n);
}

Test(synclat, newer_minor_is_read_leniently)
{
	struct logbuf b;
	newer_parts(&b, LOGFMT_MINOR + 1);
	struct lr_log log;
	read_ok(&b, &log);
	cr_assert(log.warnings & LRW_NEWER);
	cr_assert_eq(log.minor, LOGFMT_MINOR + 1);
	cr_assert_eq(log.nfiles, 1);
	cr_assert_str_eq(log.files[0].path, "/x");
	lr_free(&log);
	free(b.data);

	newer_parts(&b, LOGFMT_MINOR);  /* same bytes claiming our own minor: corrupt */
	struct lr_error e;
	cr_assert_eq(lr_read_mem(b.data, b.len, "strict.log", &log, &e), -1);
	cr_assert(strstr(e.msg, "6 stray bytes at the end of the payload"), "%s", e.msg);
	lr_free(&log);
	free(b.data);
}

Test(synclat, encoders_refuse_small_buffers)
{
	struct logfmt_record r = { 0 };
	cr_assert_eq(logfmt_encode_records(blk, LOGFMT_RECORDS_AT(1) - 1, 1, &r, 1), 0);
	cr_assert_eq(logfmt_encode_drops(blk, 30, 1, 0, 0), 0);
	struct logfmt_file f = { .id = 1, .path = "/x", .fstype = "", .rule_name = "" };
	cr_assert_eq(logfmt_encode_file(blk, 40, 1, &f), 0);
	f.id = 0;
	cr_assert_eq(logfmt_encode_file(blk, sizeof(blk), 1, &f), 0, "file id 0 is reserved");
	struct hist *h = malloc(sizeof(*h));
	hist_init(h);
	struct logfmt_histkey k = { .part = 1, .nparts = 1 };
	cr_assert_eq(logfmt_encode_hist(blk, sizeof(blk), 1, &k, h), 0, "part beyond nparts");
	free(h);
}

/* ---- reports with known answers ---- */

Test(synclat, report_known_answers)
{
	struct logbuf b;
	struct run_spec s = spec(500000, 10);
	build_run(&b, &s);
	struct lr_log log, *lp = &log;
	read_ok(&b, &log);
	struct run r;
	run_build(&r, &lp, 1);
	cr_assert_eq(r.pct_source, PCT_HIST);
	cr_assert_float_eq(r.duration_s, 10.0, 1e-9);

	struct op_stats st;
	cr_assert(report_op_stats(&r, LOGOP_FSYNC, &st));
	cr_assert_eq(st.count, 1000);
	for (int i = 0; i < REPORT_NPCT; i++)
		cr_assert_eq(st.pct_ns[i], 500000, "%s", report_pct_name[i]);
	cr_assert_eq(st.max_ns, 500000);
	cr_assert_float_eq(st.mean_ns, 500000.0, 1e-6);
	cr_assert_float_eq(st.calls_per_s, 100.0, 1e-9);
	cr_assert(report_op_stats(&r, LOGOP_WRITE, &st));
	cr_assert_eq(st.bytes, 4096000);
	cr_assert_float_eq(st.mb_per_s, 0.4096, 1e-9);
	cr_assert(!report_op_stats(&r, LOGOP_MSYNC, &st));

	cr_assert_eq(r.nfiles, 1);
	cr_assert_eq(r.files[0].calls[LOGOP_FSYNC], 1000);
	cr_assert_eq(r.files[0].bytes, 4096000);
	cr_assert_eq(hist_percentile(r.files[0].sync, 99), 500000);
	cr_assert_eq(r.nsecs, 10);
	cr_assert_eq(r.secs[9].sec, 9);
	cr_assert_eq(r.secs[3].op[LOGOP_FSYNC].calls, 100);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	report_print(out, &r, FMT_TEXT, REPORT_FILES | REPORT_PER_SECOND);
	fclose(out);
	cr_assert(strstr(text, "fsync"), "%s", text);
	cr_assert(strstr(text, "500 us"), "%s", text);
	cr_assert(strstr(text, "dropped : 0 call records"), "%s", text);
	cr_assert(strstr(text, "./bench --sync 1000"));
	cr_assert(strstr(text, "wal=group [/data/*.wal]"), "%s", text);
	cr_assert(strstr(text, "ext4 (1 file)"), "%s", text);
	cr_assert(strstr(text, "/data/db.wal"));
	cr_assert(strstr(text, "flusher real syncs: none"), "%s", text);
	cr_assert_null(strstr(text, "no trailer"));
	free(text);
	run_free(&r);
	lr_free(&log);
	free(b.data);
}

Test(synclat, percentiles_from_records_without_hist)
{
	struct logbuf b;
	struct run_spec s = spec(250000, 4);
	s.hists = false;
	build_run(&b, &s);
	struct lr_log log, *lp = &log;
	read_ok(&b, &log);
	struct run r;
	run_build(&r, &lp, 1);
	cr_assert_eq(r.pct_source, PCT_RECORDS);
	struct op_stats st;
	cr_assert(report_op_stats(&r, LOGOP_FSYNC, &st));
	cr_assert_eq(st.count, 1000);
	cr_assert_eq(st.pct_ns[0], 250000);
	run_free(&r);
	lr_free(&log);
	free(b.data);
}

Test(synclat, compare_known_answers)
{
	struct logbuf a, b;
	struct run_spec sa = spec(500000, 10), sb = spec(1000, 2);
	build_run(&a, &sa);
	build_run(&b, &sb);
	struct lr_log la, lb, *pa = &la, *pb = &lb;
	read_ok(&a, &la);
	read_ok(&b, &lb);
	struct run ra, rb;
	run_build(&ra, &pa, 1);
	run_build(&rb, &pb, 1);

	cr_assert_eq(compare_key_op(&ra, &rb), LOGOP_FSYNC);
	struct op_stats x, y;
	report_op_stats(&ra, LOGOP_FSYNC, &x);
	report_op_stats(&rb, LOGOP_FSYNC, &y);
	cr_assert_float_eq(compare_ratio((double)x.pct_ns[0], (double)y.pct_ns[0]), 0.002, 1e-12);
	cr_assert_float_eq(compare_ratio(x.calls_per_s, y.calls_per_s), 5.0, 1e-9);

	char v[1024];
	compare_verdict(&ra, &rb, v, sizeof(v));
	cr_assert(strstr(v, "verdict: B's fsync p50 500x faster (500 us -> 1.00 us)"), "%s", v);
	cr_assert(strstr(v, "fsync calls/s 5.00x"), "%s", v);
	cr_assert(strstr(v, "p99 500x faster"), "%s", v);
	cr_assert(strstr(v, "write MB/s 5.00x"), "%s", v);
	/* the price beside the gain, for each side */
	cr_assert(strstr(v, "; B ") && strstr(v, "; A ") && strstr(v, "at risk"), "%s", v);
	cr_assert(!strstr(v, "e-0"), "an exponent: %s", v);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	compare_print(out, &ra, &rb, FMT_TEXT);
	fclose(out);
	cr_assert(strstr(text, "B/A"), "%s", text);
	cr_assert(strstr(text, "1/500"), "%s", text);
	cr_assert(strstr(text, "verdict: B's fsync"), "%s", text);
	free(text);

	run_free(&ra);
	run_free(&rb);
	lr_free(&la);
	lr_free(&lb);
	free(a.data);
	free(b.data);
}

Test(synclat, per_second_table_matches_intervals)
{
	struct logbuf b;
	lb_header(&b, 100, 1, WALL0, MONO0);
	struct tally t[LOGOP_COUNT];
	memset(t, 0, sizeof(t));
	t[LOGOP_WRITE] = (struct tally){ 10, 40960, 20000, 5000 };
	t[LOGOP_FSYNC] = (struct tally){ 2, 0, 1000000, 600000 };
	lb_put(&b, logfmt_encode_interval(blk, sizeof(blk), b.seq, 0, t));
	memset(t, 0, sizeof(t));
	lb_put(&b, logfmt_encode_interval(blk, sizeof(blk), b.seq, 1, t));  /* a stalled second */
	t[LOGOP_FSYNC] = (struct tally){ 1, 0, 2 * SEC, 2 * SEC };
	lb_put(&b, logfmt_encode_interval(blk, sizeof(blk), b.seq, 2, t));
	lb_trailer(&b, WALL0 + 3 * SEC, MONO0 + 3 * SEC);

	struct lr_log log, *lp = &log;
	read_ok(&b, &log);
	struct run r;
	run_build(&r, &lp, 1);
	cr_assert_eq(r.nsecs, 3);
	cr_assert_eq(r.secs[0].op[LOGOP_WRITE].bytes, 40960);
	cr_assert_eq(r.secs[0].op[LOGOP_FSYNC].max_ns, 600000);
	cr_assert_eq(r.secs[1].op[LOGOP_FSYNC].calls, 0);
	cr_assert_eq(r.secs[2].sec, 2);
	cr_assert_eq(r.secs[2].op[LOGOP_FSYNC].max_ns, 2 * SEC);
	cr_assert_eq(r.bytes[LOGOP_WRITE], 40960);

	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	report_print(out, &r, FMT_TEXT, REPORT_PER_SECOND);
	fclose(out);
	/* sec 0: 0.04 MB/s, 12 calls; write 10 calls mean 2.00 us max 5.00 us */
	cr_assert(strstr(text, "     0      0.04        12 |       10    2.00 us    5.00 us |        2     500 us     600 us"),
		  "%s", text);
	cr_assert(strstr(text, "     2      0.00         1 |        0          -          - |        1     2.00 s     2.00 s"),
		  "%s", text);

	free(text);
	text = NULL;
	out = open_memstream(&text, &len);
	report_print(out, &r, FMT_CSV, REPORT_PER_SECOND);
	fclose(out);
	cr_assert(strstr(text, "\nsecond,2,fsync,1,0,2000000000.0,,,,,,2000000000,,\n"), "%s", text);
	cr_assert(strstr(text, "\nsecond,0,write,10,40960,2000.0,,,,,,5000,,\n"), "%s", text);
	free(text);
	run_free(&r);
	lr_free(&log);
	free(b.data);
}

Test(synclat, forked_family_merges)
{
	struct logbuf p, c;
	struct run_spec sp = spec(500000, 10), sc = spec(100000, 5);
	sc.pid = 101;
	sc.ppid = 100;
	sc.nsync = 500;
	sc.wall = WALL0 + 2 * SEC + 900000000ull;  /* 2.9 s later: its second 0 is row 3 */
	sc.mono = MONO0 + 2 * SEC + 900000000ull;
	build_run(&p, &sp);
	build_run(&c, &sc);
	const char *pp = save(&p, "run.100.log"), *cp = save(&c, "run.101.log");

	struct lr_log logs[2];
	struct lr_error e;
	cr_assert_eq(lr_read_file(pp, &logs[0], &e), 0, "%s", e.msg);
	cr_assert_eq(lr_read_file(cp, &logs[1], &e), 0, "%s", e.msg);
	struct lr_log *lp[2] = { &logs[0], &logs[1] };
	struct run r;
	run_build(&r, lp, 2);

	struct op_stats st;
	report_op_stats(&r, LOGOP_FSYNC, &st);
	cr_assert_eq(st.count, 1500, "histograms add up");
	cr_assert_eq(st.min_ns, 100000);
	cr_assert_eq(st.max_ns, 500000);
	cr_assert_eq(r.nfiles, 1, "the same path is one file");
	cr_assert_eq(r.files[0].calls[LOGOP_FSYNC], 1500);
	cr_assert_eq(r.files[0].bytes, 1500 * 4096);
	cr_assert_float_eq(r.duration_s, 10.0, 1e-9);  /* child ended at 7.9 s */
	/* parent rows 0..9; the child's seconds 0..4 land on rows 3..7 */
	cr_assert_eq(r.nsecs, 10);
	cr_assert_eq(r.secs[2].op[LOGOP_FSYNC].calls, 100);
	cr_assert_eq(r.secs[3].op[LOGOP_FSYNC].calls, 200);
	cr_assert_eq(r.secs[7].op[LOGOP_FSYNC].calls, 200);
	cr_assert_eq(r.secs[8].op[LOGOP_FSYNC].calls, 100);
	run_free(&r);
	lr_free(&logs[0]);
	lr_free(&logs[1]);

	struct cli o = run_cli("report", pp, cp, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.out, "2 logs merged (forked family)"), "%s", o.out);
	cr_assert(strstr(o.out, "pid 101 ppid 100"), "%s", o.out);
	cli_free(&o);
	free(p.data);
	free(c.data);
}

/* syncshim ab's rounds: runs one after another, with the other side's runs
 * in the gaps. Throughput must use the time the runs covered, not the span
 * from the first start to the last end. */
Test(synclat, sequential_runs_count_their_own_time)
{
	struct logbuf a, b;
	struct run_spec sa = spec(500000, 2), sb = spec(500000, 3);
	sb.pid = 200;
	sb.ppid = 1;
	sb.wall = WALL0 + 10 * SEC; /* 8 s after the first ended */
	sb.mono = MONO0 + 10 * SEC;
	build_run(&a, &sa);
	build_run(&b, &sb);
	const char *pa = save(&a, "seq.1.log"), *pb = save(&b, "seq.2.log");
	struct lr_log logs[2];
	struct lr_error e;
	cr_assert_eq(lr_read_file(pa, &logs[0], &e), 0, "%s", e.msg);
	cr_assert_eq(lr_read_file(pb, &logs[1], &e), 0, "%s", e.msg);
	struct lr_log *lp[2] = { &logs[0], &logs[1] };
	struct run r;
	run_build(&r, lp, 2);
	cr_assert_float_eq(r.duration_s, 5.0, 1e-9, "2 s + 3 s, not the 13 s span");
	struct op_stats st;
	report_op_stats(&r, LOGOP_FSYNC, &st);
	cr_assert_float_eq(st.calls_per_s, 2000.0 / 5.0, 1e-6);
	run_free(&r);
	lr_free(&logs[0]);
	lr_free(&logs[1]);
	free(a.data);
	free(b.data);
}

/* ---- damage ---- */

Test(synclat, missing_trailer_is_a_warning)
{
	struct logbuf b;
	struct run_spec s = spec(500000, 3);
	s.trailer = false;
	build_run(&b, &s);
	struct lr_log log;
	read_ok(&b, &log);
	cr_assert(log.warnings & LRW_NO_TRAILER);
	lr_free(&log);

	struct cli o = run_cli("report", save(&b, "killed.log"), NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.err, "no trailer (process ended abruptly?)"), "%s", o.err);
	cr_assert(strstr(o.out, "no trailer (process ended abruptly?)"), "%s", o.out);
	cr_assert(strstr(o.out, "fsync"), "%s", o.out);
	cli_free(&o);
	free(b.data);
}

Test(synclat, truncated_at_every_offset)
{
	struct logbuf b;
	struct run_spec s = spec(500000, 2);
	s.nsync = 6;
	build_run(&b, &s);
	size_t blk_i = 0, start = 0;
	for (size_t cut = 0; cut < b.len; cut++) {
		while (blk_i < b.nblocks && b.ends[blk_i] <= cut)
			start = b.ends[blk_i++];
		struct lr_log log;
		struct lr_error e;
		int rc = lr_read_mem(b.data, cut, "cut.log", &log, &e);
		if (cut == start && cut > 0) {
			/* ends on a block boundary: valid, like a SIGKILLed process */
			cr_assert_eq(rc, 0, "cut at boundary %zu: %s", cut, e.msg);
			cr_assert(log.warnings & LRW_NO_TRAILER);
		} else {
			cr_assert_eq(rc, -1, "accepted a cut at %zu", cut);
			cr_assert_eq(e.status, LR_TRUNCATED, "cut %zu: %s", cut, e.msg);
			cr_assert_eq(e.offset, start, "cut %zu: %s", cut, e.msg);
			char want[64];
			snprintf(want, sizeof(want), "cut.log: truncated at byte %zu", start);
			cr_assert(strstr(e.msg, want), "%s", e.msg);
			if (start > 0)
				cr_assert(lr_salvage(&log, &e));
		}
		lr_free(&log);
	}
	free(b.data);
}

/* Under the sanitizers this is the fuzz test: damage anywhere must give
 * either a log or an error naming an offset inside the file. */
Test(synclat, random_damage_never_crashes)
{
	struct logbuf b;
	struct run_spec s = spec(500000, 2);
	s.nsync = 6;
	build_run(&b, &s);
	uint8_t *d = malloc(b.len);
	uint64_t seed = 12345;
	int accepted = 0;
	for (int i = 0; i < 4000; i++) {
		memcpy(d, b.data, b.len);
		int flips = 1 + i % 3;
		for (int k = 0; k < flips; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			d[(seed >> 33) % b.len] ^= (uint8_t)(1u << ((seed >> 20) % 8));
		}
		/* CRCs catch raw flips; re-sealing lets damage reach the payload parsers */
		if (i % 2)
			for (size_t k = 0, off = 0; k < b.nblocks; off = b.ends[k++])
				if (d[off] == 'S' && d[off + 12] == b.data[off + 12] &&
				    d[off + 13] == b.data[off + 13] && d[off + 14] == b.data[off + 14] &&
				    d[off + 15] == b.data[off + 15])
					reseal(d, off);
		struct lr_log log;
		struct lr_error e;
		if (lr_read_mem(d, b.len, "fuzz.log", &log, &e) == 0) {
			accepted++;
			struct lr_log *lp = &log;
			struct run r;
			run_build(&r, &lp, 1);
			FILE *devnull = fopen("/dev/null", "w");
			report_print(devnull, &r, FMT_TEXT, REPORT_FILES | REPORT_PER_SECOND);
			report_print(devnull, &r, FMT_JSON, REPORT_FILES | REPORT_PER_SECOND);
			fclose(devnull);
			run_free(&r);
		} else {
			cr_assert_leq(e.offset, b.len, "%s", e.msg);
			cr_assert(strstr(e.msg, "fuzz.log: "), "%s", e.msg);
			cr_assert(strstr(e.msg, "byte "), "%s", e.msg);
		}
		lr_free(&log);
	}
	cr_assert_lt(accepted, 4000, "damage went unnoticed every time");
	free(d);
	free(b.data);
}

static struct logbuf small_log(void)
{
	struct logbuf b;
	struct run_spec s = spec(500000, 2);
	s.nsync = 4;
	build_run(&b, &s);
	return b;
}

static void expect_error(const uint8_t *d, size_t len, enum lr_status st, uint64_t off,
			 const char *words)
{
	struct lr_log log;
	struct lr_error e;
	cr_assert_eq(lr_read_mem(d, len, "bad.log", &log, &e), -1, "accepted damage (%s)", words);
	cr_assert_eq(e.status, st, "%s", e.msg);
	cr_assert_eq(e.offset, off, "%s", e.msg);
	cr_assert(strstr(e.msg, words), "'%s' not in: %s", words, e.msg);
	cr_assert(strstr(e.msg, "bad.log: "), "%s", e.msg);
	lr_free(&log);
}

/* A log with an event of kind k and a record with flags fl, both after a
 * FILE block (the record's file). */
static void retired_log(struct logbuf *b, unsigned k, unsigned fl)
{
	lb_header(b, 100, 1, WALL0, MONO0);
	lb_file(b, 1, "/data/x.wal", "ext4");
	struct logfmt_event ev = { MONO0 + 5, 0, 0, (uint8_t)k, "old" };
	lb_put(b, logfmt_encode_event(blk, sizeof(blk), b->seq, &ev));
	struct logfmt_record r = { MONO0 + 6, 10, 0, 0, 1, 7, LOGOP_FSYNC, (uint8_t)fl, 1 };
	lb_put(b, logfmt_encode_records(blk, sizeof(blk), b->seq, &r, 1));
}

/* Event kinds 0 and 4 and record flag bit 0 were defined in 1.0 and are
 * retired: a log holding them still reads; the next numbers up do not. */
Test(synclat, retired_values_still_read)
{
	static const unsigned kinds[] = { 0, 4 };
	for (int i = 0; i < 2; i++) {
		struct logbuf b;
		retired_log(&b, kinds[i], 0x01);
		struct lr_log log;
		read_ok(&b, &log);
		cr_assert_eq(log.nevents, 1);
		cr_assert_eq(log.events[0].kind, kinds[i]);
		cr_assert_str_eq(logev_name(kinds[i]), "?");
		cr_assert_eq(log.recs[0].flags, 0x01);
		lr_free(&log);
		free(b.data);
	}
	struct logbuf b;
	retired_log(&b, LOGEV_KIND_LIMIT, 0);
	expect_error(b.data, b.len, LR_CORRUPT, b.ends[1] + 24 + 16, "unknown event kind 5");
	free(b.data);
	/* Every bit of the u8 has a meaning since 1.2; in a 1.1 log only the
	 * retired bit 0 is allowed. */
	retired_log(&b, LOGEV_SYNC_ERROR, LOGREC_RING);
	b.data[24 + 2] = 1; /* the HEADER's minor */
	reseal(b.data, 0);
	expect_error(b.data, b.len, LR_CORRUPT, b.ends[2] + 24 + 8 + 37, "unknown flags 0x40");
	free(b.data);
}

/* The record flags of 1.2 (open flags, a directory's sync, calls through a
 * ring or libaio) read in a 1.2 log; the same bits in a log that says 1.1
 * are corrupt. */
Test(synclat, record_flags_of_minor_2)
{
	struct logbuf b;
	retired_log(&b, LOGEV_SYNC_ERROR, LOGREC_RING | LOGREC_AIO); /* the sources */
	struct lr_log src;
	read_ok(&b, &src);
	cr_assert_eq(src.recs[0].flags, LOGREC_RING | LOGREC_AIO);
	lr_free(&src);
	free(b.data);
	retired_log(&b, LOGEV_SYNC_ERROR, LOGREC_OPEN_ODSYNC | LOGREC_DIRECTORY);
	struct lr_log log;
	read_ok(&b, &log);
	cr_assert_eq(log.recs[0].flags, LOGREC_OPEN_ODSYNC | LOGREC_DIRECTORY);
	lr_free(&log);
	b.data[24 + 2] = 1; /* the HEADER's minor */
	reseal(b.data, 0);
	expect_error(b.data, b.len, LR_CORRUPT, b.ends[2] + 24 + 8 + 37, "unknown flags 0x24");
	free(b.data);
}

Test(synclat, corruption_is_named)
{
	struct logbuf b = small_log();
	uint8_t *d = malloc(b.len);
	size_t b1 = b.ends[0], b2 = b.ends[1];  /* FILE block at b1, RECORDS at b2 */

	memcpy(d, b.data, b.len);
	d[b2 + 30] ^= 0x10;
	expect_error(d, b.len, LR_CORRUPT, b2 + 16, "payload CRC mismatch");

	memcpy(d, b.data, b.len);
	d[b2 + 9] ^= 1;  /* seq, caught by the header CRC */
	expect_error(d, b.len, LR_CORRUPT, b2, "bad block header CRC");

	memcpy(d, b.data, b.len);
	d[b1] = 'X';
	expect_error(d, b.len, LR_CORRUPT, b1, "bad block magic");

	memcpy(d, b.data, b.len);
	d[0] = 'X';
	expect_error(d, b.len, LR_FOREIGN, 0, "not a syncshim log");

	memcpy(d, b.data, b.len);
	memset(d + b2 + 12, 0xff, 4);  /* huge length, header CRC made right */
	reseal(d, 0);
	d[b2 + 20] = 0;
	{
		uint32_t hc = logfmt_crc32c(0, d + b2, 20);
		for (int i = 0; i < 4; i++)
			d[b2 + 20 + i] = (uint8_t)(hc >> (8 * i));
	}
	expect_error(d, b.len, LR_CORRUPT, b2, "impossible block length");

	memcpy(d, b.data, b.len);
	d[24] = 2;  /* format major 2 */
	reseal(d, 0);
	expect_error(d, b.len, LR_CORRUPT, 24, "unsupported format version 2.");

	memcpy(d, b.data, b.len);
	d[b2 + 24 + 8 + 28] = 99;  /* first record's file id */
	reseal(d, b2);
	expect_error(d, b.len, LR_CORRUPT, b2 + 24 + 8 + 28, "unknown file id 99");

	memcpy(d, b.data, b.len);
	d[b2 + 24 + 8 + 36] = 200;  /* first record's op */
	reseal(d, b2);
	expect_error(d, b.len, LR_CORRUPT, b2 + 24 + 8 + 36, "unknown op 200");

	memcpy(d, b.data, b.len);
	d[b2 + 4] = 77;  /* block type */
	reseal(d, b2);
	expect_error(d, b.len, LR_CORRUPT, b2 + 4, "unknown block type 77");

	/* a block dropped from the middle */
	memcpy(d, b.data, b1);
	memcpy(d + b1, b.data + b2, b.len - b2);
	expect_error(d, b.len - (b2 - b1), LR_CORRUPT, b1 + 8, "a block is missing");

	/* garbage after the trailer */
	uint8_t *g = malloc(b.len + 30);
	memcpy(g, b.data, b.len);
	memcpy(g + b.len, b.data, 30);
	expect_error(g, b.len + 30, LR_CORRUPT, b.len, "data after the TRAILER");

	const char text[] = "#!/bin/sh\necho this is not a log at all\n";
	expect_error((const uint8_t *)text, sizeof(text) - 1, LR_FOREIGN, 0, "not a syncshim log");
	expect_error((const uint8_t *)"SS", 2, LR_TRUNCATED, 0, "partial block header");
	expect_error((const uint8_t *)"", 0, LR_TRUNCATED, 0, "empty file");
	free(g);
	free(d);
	free(b.data);
}

Test(synclat, last_complete_hist_set_wins)
{
	struct logbuf b;
	lb_header(&b, 100, 1, WALL0, MONO0);
	struct hist *h1 = malloc(sizeof(*h1)), *h2 = malloc(sizeof(*h2));
	hist_init(h1);
	hist_init(h2);
	for (int i = 0; i < 10; i++)
		hist_record(h1, 1000);
	for (int i = 0; i < 30; i++)
		hist_record(h2, 1000);
	const uint8_t ops[] = { LOGOP_WRITE, LOGOP_FSYNC };
	struct hist *s1[] = { h1, h1 }, *s2[] = { h2, h2 };
	lb_hists(&b, 1, MONO0 + SEC, ops, s1, 2);
	lb_hists(&b, 2, MONO0 + 2 * SEC, ops, s2, 2);
	size_t before_cut = b.len;
	uint32_t seq_before = b.seq;
	lb_hists(&b, 3, MONO0 + 3 * SEC, ops, s1, 2);
	b.len = b.ends[b.nblocks - 2];  /* set 3 lost its last part: killed mid-set */

	struct lr_log log;
	read_ok(&b, &log);
	cr_assert(log.warnings & LRW_HIST_CUT);
	cr_assert(log.warnings & LRW_NO_TRAILER);
	cr_assert_eq(log.nhists, 2);
	cr_assert_eq(log.hists[1].count, 30, "set 2 is the last complete one");
	lr_free(&log);

	/* a set left unfinished in the middle of a log is corrupt */
	b.len = before_cut;
	b.seq = seq_before;
	struct logfmt_histkey k = { .snap = 3, .part = 0, .nparts = 2, .op = LOGOP_FSYNC, .rule = 1 };
	lb_put(&b, logfmt_encode_hist(blk, sizeof(blk), b.seq, &k, h1));
	size_t at = b.len;
	lb_trailer(&b, WALL0 + 4 * SEC, MONO0 + 4 * SEC);
	expect_error(b.data, b.len, LR_CORRUPT, at + 24, "TRAILER inside HIST set 3");
	free(h1);
	free(h2);
	free(b.data);
}

/* ---- outputs ---- */

/* A minimal JSON syntax check: returns the end of one value or NULL. */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p && *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\' && !*++p)
			return NULL;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_seq(const char *p, char close, bool keys)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (keys) {
			if (!(p = json_string(json_ws(p))))
				return NULL;
			p = json_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		if (!(p = json_value(p)))
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '{')
		return json_seq(p, '}', true);
	if (*p == '[')
		return json_seq(p, ']', false);
	if (*p == '"')
		return json_string(p);
	for (const char *w = "true\0false\0null\0"; *w; w += strlen(w) + 1)
		if (!strncmp(p, w, strlen(w)))
			return p + strlen(w);
	char *end;
	strtod(p, &end);
	return end > p ? end : NULL;
}

static bool json_valid(const char *s)
{
	const char *end = json_value(s);
	return end && *json_ws(end) == '\0';
}

Test(synclat, json_checker_checks)
{
	cr_assert(json_valid("{\"a\":[1,2.5e3,\"x\\\"y\",true,null,{}]}"));
	cr_assert(!json_valid("{\"a\":1,}"));
	cr_assert(!json_valid("{\"a\" 1}"));
	cr_assert(!json_valid("[1 2]"));
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

Test(synclat, csv_and_json_parse)
{
	struct logbuf b;
	struct run_spec s = spec(500000, 10);
	s.path = "/data/odd,name \"q\".wal";
	build_run(&b, &s);
	const char *p = save(&b, "a.log");

	struct cli o = run_cli("report", "--json", "--files", "--per-second", p, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(json_valid(o.out), "invalid JSON: %s", o.out);
	cr_assert(strstr(o.out, "{\"op\":\"fsync\",\"class\":\"app\",\"count\":1000,\"bytes\":0,"
			 "\"mean_ns\":500000.0,\"p50_ns\":500000,"), "%s", o.out);
	cr_assert(strstr(o.out, "\"dropped\":0"), "%s", o.out);
	cr_assert(strstr(o.out, "\"path\":\"/data/odd,name \\\"q\\\".wal\""), "%s", o.out);
	cr_assert(strstr(o.out, "\"calls_per_s\":100,"), "%s", o.out);
	cli_free(&o);

	o = run_cli("report", "--csv", "--files", p, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	char *save_ptr = NULL, *line = strtok_r(o.out, "\n", &save_ptr);
	cr_assert_str_eq(line, "kind,name,op,count,bytes,mean_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,"
			 "p99.99_ns,max_ns,calls_per_s,mb_per_s");
	int rows = 0, fsync_rows = 0, file_rows = 0;
	while ((line = strtok_r(NULL, "\n", &save_ptr))) {
		/* count fields outside quotes: every row has 14 */
		int fields = 1;
		bool q = false;
		for (const char *c = line; *c; c++) {
			if (*c == '"')
				q = !q;
			else if (*c == ',' && !q)
				fields++;
		}
		cr_assert_eq(fields, 14, "row '%s'", line);
		rows++;
		if (starts_with(line, "op,app,fsync,1000,0,500000.0,500000,500000,500000,500000,500000,500000,100,0"))
			fsync_rows++;
		if (starts_with(line, "file,\"/data/odd,name \"\"q\"\".wal\",syncs,1000,"))
			file_rows++;
	}
	cr_assert_eq(fsync_rows, 1, "fsync row missing");
	cr_assert_eq(file_rows, 1, "quoted file row missing");
	cr_assert_geq(rows, 5);
	cli_free(&o);

	struct run_spec sb = spec(1000, 2);
	free(b.data);
	build_run(&b, &sb);
	const char *q = save(&b, "b.log");
	o = run_cli("compare", "--json", p, q, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(json_valid(o.out), "invalid JSON: %s", o.out);
	cr_assert(strstr(o.out, "\"p50_ns\":0.002,"), "%s", o.out);
	cr_assert(strstr(o.out, "\"verdict\":\"verdict: B's fsync p50 500x faster"), "%s", o.out);
	cli_free(&o);

	o = run_cli("compare", "--csv", "-a", p, "-b", q, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.out, "op,class,metric,a,b,b_over_a\n"), "%s", o.out);
	cr_assert(strstr(o.out, "\nfsync,app,p50_ns,500000,1000,0.002\n"), "%s", o.out);
	cr_assert(strstr(o.out, "\nfsync,app,calls_per_s,100,500,5\n"), "%s", o.out);
	cli_free(&o);
	free(b.data);
}

Test(synclat, svg_and_html_are_self_contained)
{
	struct logbuf a, b;
	struct run_spec sa = spec(500000, 10), sb = spec(1000, 2);
	build_run(&a, &sa);
	build_run(&b, &sb);
	const char *pa = save(&a, "a.log"), *pb = save(&b, "b.log");
	const char *svg = tmp("cmp.svg"), *html = tmp("cmp.html");

	struct cli o = run_cli("compare", "--svg", svg, "--html", html, pa, pb, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.out, "verdict: B's fsync p50 500x faster"), "%s", o.out);
	cli_free(&o);

	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(i ? html : svg, "r");
		cr_assert_not_null(f);
		static char buf[1 << 20];
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		cr_assert(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
		cr_assert(strstr(buf, "</svg>"));
		cr_assert(strstr(buf, "fsync latency by percentile"));
		cr_assert(strstr(buf, "per-second max latency"));
		cr_assert(strstr(buf, "<polyline"));
		cr_assert_null(strstr(buf, "<script"));
		cr_assert_null(strstr(buf, "href="), "nothing fetched");
		if (i) {
			cr_assert(!strncmp(buf, "<!DOCTYPE html>", 15));
			cr_assert(strstr(buf, "<table>"));
			cr_assert(strstr(buf, "verdict: B's fsync"));
		} else {
			cr_assert(!strncmp(buf, "<?xml", 5));
		}
	}
	free(a.data);
	free(b.data);
}

/* The one escaper of the SVG and HTML writers: markup characters become
 * entities, control bytes (not allowed in XML) are left out. */
Test(synclat, markup_text_escapes)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	markup_text(out, "a<b>&\"c\"\x1b[1m\tz\x7f\xc3\xa9");
	fclose(out);
	cr_assert_str_eq(text, "a&lt;b&gt;&amp;&quot;c&quot;[1mz\x7f\xc3\xa9");
	free(text);
}

/* ---- the CLI ---- */

Test(synclat, cli_exit_codes)
{
	struct logbuf b = small_log();
	const char *good = save(&b, "good.log");
	b.data[b.ends[1] + 30] ^= 1;
	const char *bad = save(&b, "bad.log");
	b.data[b.ends[1] + 30] ^= 1;
	b.len = b.ends[2] + 10;
	const char *cut = save(&b, "cut.log");

	struct cli o = run_cli(NULL);
	cr_assert_eq(o.rc, 2);
	cli_free(&o);
	o = run_cli("frobnicate", NULL);
	cr_assert_eq(o.rc, 2);
	cr_assert(strstr(o.err, "unknown command"), "%s", o.err);
	cli_free(&o);
	o = run_cli("report", "--bogus", good, NULL);
	cr_assert_eq(o.rc, 2);
	cli_free(&o);
	o = run_cli("report", "--csv", "--json", good, NULL);
	cr_assert_eq(o.rc, 2);
	cli_free(&o);
	o = run_cli("compare", good, NULL);
	cr_assert_eq(o.rc, 2);
	cli_free(&o);
	o = run_cli("report", NULL);
	cr_assert_eq(o.rc, 2);
	cli_free(&o);
	o = run_cli("--help", NULL);
	cr_assert_eq(o.rc, 0);
	cr_assert(strstr(o.out, "usage: synclat report"));
	cli_free(&o);

	o = run_cli("report", good, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cli_free(&o);

	o = run_cli("report", good, bad, NULL);
	cr_assert_eq(o.rc, 2);
	char want[256];
	snprintf(want, sizeof(want), "synclat report: %s: corrupt at byte %zu", bad, b.ends[1] + 16);
	cr_assert(strstr(o.err, want), "'%s' not in: %s", want, o.err);
	cr_assert_eq(strchr(o.err, '\n'), o.err + strlen(o.err) - 1, "one line: %s", o.err);
	cli_free(&o);

	o = run_cli("report", cut, NULL);
	cr_assert_eq(o.rc, 2);
	snprintf(want, sizeof(want), "synclat report: %s: truncated at byte %zu", cut, b.ends[2]);
	cr_assert(strstr(o.err, want), "'%s' not in: %s", want, o.err);
	cli_free(&o);

	o = run_cli("report", "--salvage", cut, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.err, "reporting the blocks before it"), "%s", o.err);
	cli_free(&o);

	o = run_cli("compare", good, tmp("missing.log"), NULL);
	cr_assert_eq(o.rc, 2);
	cr_assert(strstr(o.err, "missing.log: unreadable"), "%s", o.err);
	cli_free(&o);

	o = run_cli("report", "/etc/hostname", NULL);
	cr_assert_eq(o.rc, 2);
	cr_assert(strstr(o.err, "not a syncshim log"), "%s", o.err);
	cli_free(&o);
	free(b.data);
}

/* The built binary, when the Makefile has made one. */
Test(synclat, built_binary_exit_codes)
{
	const char *dir = getenv("SYNCSHIM_BUILD");
	char bin[512];
	snprintf(bin, sizeof(bin), "%s/synclat", dir ? dir : "build");
	if (access(bin, X_OK) != 0)
		cr_skip_test("%s not built", bin);

	struct logbuf b = small_log();
	const char *good = save(&b, "good.log");
	b.data[b.ends[1] + 30] ^= 1;
	const char *bad = save(&b, "bad.log");
	const char *err = tmp("err.txt");
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "'%s' report '%s' >/dev/null 2>'%s'", bin, good, err);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(cmd, sizeof(cmd), "'%s' report '%s' >/dev/null 2>'%s'", bin, bad, err);
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d", st);
	FILE *f = fopen(err, "r");
	char line[512] = "";
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert(strstr(line, "bad.log: corrupt at byte"), "%s", line);
	snprintf(cmd, sizeof(cmd), "'%s' report --nope >/dev/null 2>&1", bin);
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	free(b.data);
}

/* ---- hostile inputs: plots of salvaged logs, files that are not logs ---- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	char *buf = NULL;
	size_t cap = 0;
	FILE *m = open_memstream(&buf, &cap);
	int c;
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	*len = cap;
	return buf;
}

/* No NaN or infinity printed as a number: the test's own paths (random
 * letters) are cut out first so they cannot look like one. */
static void expect_finite_numbers(const char *path)
{
	size_t len;
	char *text = slurp(path, &len);
	for (char *at; (at = strstr(text, tmpdir));)
		memmove(at, at + strlen(tmpdir), strlen(at + strlen(tmpdir)) + 1);
	cr_expect_null(strstr(text, "nan"), "%s holds a NaN: ...%.80s", path, strstr(text, "nan"));
	cr_expect_null(strstr(text, "inf"), "%s holds an infinity: ...%.80s", path, strstr(text, "inf"));
	free(text);
}

/* A log cut short before its first INTERVAL: salvaged, it has histograms
 * but no per-second maximum, and the per-second panel's empty range must
 * not reach the SVG as inf (UB in the int conversion) or y="-nan". */
Test(synclat, plots_of_salvaged_logs_stay_finite)
{
	struct logbuf b;
	struct hist *h = malloc(sizeof(*h));
	hist_init(h);
	for (int i = 1; i <= 50; i++)
		hist_record(h, 1000u * (uint64_t)i);
	lb_header(&b, 7, 1, WALL0, MONO0);
	lb_file(&b, 1, "/data/db.wal", "ext4");
	const uint8_t ops[] = { LOGOP_FSYNC };
	lb_hists(&b, 1, MONO0 + SEC / 2, ops, &h, 1);
	lb_trailer(&b, WALL0 + SEC, MONO0 + SEC);
	b.len -= 5;  /* the TRAILER cut short: a process killed mid-write */
	const char *pa = save(&b, "cut-a.log"), *pb = save(&b, "cut-b.log");
	const char *svg = tmp("cut.svg"), *html = tmp("cut.html");

	struct cli o = run_cli("compare", "--salvage", "--svg", svg, "--html", html, pa, pb, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.err, "reporting the blocks before it"), "%s", o.err);
	cli_free(&o);
	expect_finite_numbers(svg);
	expect_finite_numbers(html);
	free(h);
	free(b.data);
}

struct proc_run {
	int status;       /* exit status, or 128 + signal */
	double secs;
	long maxrss_kb;
	char *err;
};

/* Runs the built synclat with argv (stdout discarded, stdin from in_path
 * or /dev/null); killed after 10 s if it hangs. */
static struct proc_run run_synclat(const char *in_path, const char *arg, ...)
{
	const char *dir = getenv("SYNCSHIM_BUILD");
	char bin[512], *argv[8];
	int argc = 0;
	snprintf(bin, sizeof(bin), "%s/synclat", dir ? dir : "build");
	argv[argc++] = bin;
	va_list ap;
	va_start(ap, arg);
	for (const char *a = arg; a && argc < 7; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	const char *err = tmp("proc.err");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
		int out = open("/dev/null", O_WRONLY), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || out < 0 || e < 0)
			_exit(125);
		dup2(in, 0);
		dup2(out, 1);
		dup2(e, 2);
		alarm(10);  /* survives exec: a hang ends as SIGALRM */
		execv(bin, argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	struct proc_run r = { WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
			      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
			      ru.ru_maxrss, NULL };
	size_t len;
	r.err = slurp(err, &len);
	return r;
}

/* The binary's verdict on path: exit 2, one line saying why, within a
 * second and 50 MB. */
static void expect_refused_fast(const char *what, const char *path, const char *in_path,
				const char *words)
{
	struct proc_run r = run_synclat(in_path, "report", path, NULL);
	cr_expect_eq(r.status, 2, "%s: exit %d (%s)", what, r.status, r.err);
	cr_expect_lt(r.secs, 1.0, "%s: took %.2f s", what, r.secs);
	cr_expect_lt(r.maxrss_kb, 50 * 1024, "%s: RSS reached %ld KB", what, r.maxrss_kb);
	cr_expect(strstr(r.err, words), "%s: want '%s' in: %s", what, words, r.err);
	cr_expect_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "%s: one line: %s", what, r.err);
	cr_log_info("%s: %.3f s, %ld KB: %s", what, r.secs, r.maxrss_kb, r.err);
	free(r.err);
}

static const char *sparse_file(const char *name, long long size, const struct logbuf *head)
{
	const char *p = tmp(name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	if (head)
		cr_assert_eq(write(fd, head->data, head->len), (ssize_t)head->len);
	cr_assert_eq(ftruncate(fd, size), 0, "ftruncate: %s", strerror(errno));
	close(fd);
	return p;
}

/* /dev/zero, a 5 GB sparse file, a FIFO nobody writes to: refused at once
 * with little memory, instead of read whole (or waited on) first. */
Test(synclat, non_logs_refused_fast_and_small)
{
	const char *dir = getenv("SYNCSHIM_BUILD");
	char bin[512];
	snprintf(bin, sizeof(bin), "%s/synclat", dir ? dir : "build");
	if (access(bin, X_OK) != 0)
		cr_skip_test("%s not built", bin);
	const long long five_gb = 5LL << 30;

	expect_refused_fast("/dev/zero", "/dev/zero", NULL, "a device, not a regular file");
	expect_refused_fast("sparse 5 GB", sparse_file("sparse.log", five_gb, NULL), NULL,
			    "not a syncshim log");
	struct logbuf b = small_log();
	expect_refused_fast("log + 5 GB of zeros", sparse_file("tail.log", five_gb, &b), NULL,
			    "corrupt at byte");
	const char *fifo = tmp("fifo.log");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	expect_refused_fast("FIFO", fifo, NULL, "a FIFO");
	expect_refused_fast("/dev/zero on stdin", "-", "/dev/zero", "not a syncshim log");
	unlink(tmp("sparse.log"));
	unlink(tmp("tail.log"));
	free(b.data);
}

/* '-' reads standard input: how a pipe or FIFO is given on purpose. */
Test(synclat, dash_reads_stdin)
{
	const char *dir = getenv("SYNCSHIM_BUILD");
	char bin[512];
	snprintf(bin, sizeof(bin), "%s/synclat", dir ? dir : "build");
	if (access(bin, X_OK) != 0)
		cr_skip_test("%s not built", bin);
	struct logbuf b = small_log();
	struct proc_run r = run_synclat(save(&b, "in.log"), "report", "-", NULL);
	cr_expect_eq(r.status, 0, "%s", r.err);
	free(r.err);
	free(b.data);
}

/* ---- data at risk (RISK blocks, format 1.1) ---- */

static void lb_risk(struct logbuf *b, uint32_t second, const struct logfmt_risk *r, uint16_t n)
{
	lb_put(b, logfmt_encode_risk(blk, sizeof(blk), b->seq, second, r, n));
}

static void lb_interval(struct logbuf *b, uint32_t second)
{
	struct tally t[LOGOP_COUNT];
	memset(t, 0, sizeof(t));
	t[LOGOP_WRITE] = (struct tally){ 1, 4096, 100, 100 };
	lb_put(b, logfmt_encode_interval(blk, sizeof(blk), b->seq, second, t));
}

/* Two files (7 under the "wal" rule, group; 9 under the default), two
 * seconds; second 1 split over two blocks. */
static struct logbuf risk_log(void)
{
	struct logbuf b;
	lb_header(&b, 300, 1, WALL0, MONO0);
	lb_file(&b, 7, "/data/a.wal", "ext4");
	struct logfmt_file f9 = { .id = 9, .rule = 0, .dev = 5, .ino = 6, .rule_name = "", .fstype = "ext4",
				  .path = "/data/b.log" };
	lb_put(&b, logfmt_encode_file(blk, sizeof(blk), b.seq, &f9));
	lb_interval(&b, 0);
	struct logfmt_risk s0[] = { { 7, 8192, 30 * MS, 4096, 10 * MS, 16384 },
				    { 9, 1000, 5 * MS, 0, 0, 1000 } };
	lb_risk(&b, 0, s0, 2);
	lb_interval(&b, 1);
	struct logfmt_risk s1a[] = { { 9, 20000, 250 * MS, 20000, 250 * MS, 30000 } };
	struct logfmt_risk s1b[] = { { 7, 4096, 12 * MS, 0, 0, 20480 } };
	lb_risk(&b, 1, s1a, 1);
	lb_risk(&b, 1, s1b, 1);
	lb_trailer(&b, WALL0 + 2 * SEC, MONO0 + 2 * SEC);
	return b;
}

static char *report_of(struct lr_log *log, enum report_format fmt, unsigned flags)
{
	struct run r;
	run_build(&r, &log, 1);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	report_print(out, &r, fmt, flags);
	fclose(out);
	run_free(&r);
	return text;
}

Test(synclat, risk_blocks_read_and_reported)
{
	struct logbuf b = risk_log();
	struct lr_log log;
	read_ok(&b, &log);
	cr_assert_eq(log.minor, LOGFMT_MINOR); /* written by this build: RISK since 1 */
	cr_assert_eq(log.nrisks, 4);
	cr_assert_eq(log.risks[2].file_id, 9);
	cr_assert_eq(log.risks[2].second, 1);
	cr_assert_eq(log.risks[2].worst_age_ns, 250 * MS);

	char *text = report_of(&log, FMT_TEXT, REPORT_PER_SECOND);
	cr_assert(strstr(text, "at risk: max 20.00 kB, oldest 250 ms"), "%s", text);
	cr_assert(strstr(text, "8.19 kB    30.0 ms  group       /data/a.wal"), "%s", text);
	cr_assert(strstr(text, "20.00 kB     250 ms  passthrough /data/b.log"), "%s", text);
	cr_assert(strstr(text, "9.19 kB    30.0 ms"), "second 0: the files' worst summed, the oldest:\n%s", text);
	cr_assert(!strstr(text, "unbounded"), "%s", text);
	free(text);
	text = report_of(&log, FMT_JSON, REPORT_FILES | REPORT_PER_SECOND);
	cr_assert(strstr(text, "\"risk\":{\"max_bytes\":8192,\"oldest_ns\":30000000,\"unbounded\":false}"), "%s", text);
	cr_assert(strstr(text, "\"risk\":{\"bytes\":24096,\"oldest_ns\":250000000}"), "%s", text);
	free(text);
	text = report_of(&log, FMT_CSV, 0);
	cr_assert(strstr(text, "risk,/data/b.log,passthrough,0,20000,,,,,,,250000000,,"), "%s", text);
	free(text);
	lr_free(&log);
	free(b.data);
}

/* noop never syncs: the report says its risk has no bound. */
Test(synclat, risk_under_noop_is_flagged_unbounded)
{
	static const struct logfmt_rule noop_rules[] = { { "", "", 2 } };
	struct logbuf b;
	memset(&b, 0, sizeof(b));
	struct logfmt_header h = { .pid = 1, .ppid = 0, .log_mode = 1, .start_wall_ns = WALL0,
				   .start_mono_ns = MONO0, .hostname = "h", .kernel = "k", .cmdline = "c",
				   .rules = noop_rules, .nrules = 1, .policy_ini = "[shim]\npolicy = noop\n" };
	lb_put(&b, logfmt_encode_header(blk, sizeof(blk), &h));
	struct logfmt_file f = { .id = 1, .rule = 0, .dev = 1, .ino = 2, .rule_name = "", .fstype = "ext4",
				 .path = "/n" };
	lb_put(&b, logfmt_encode_file(blk, sizeof(blk), b.seq, &f));
	struct logfmt_risk r = { 1, 1 << 20, 3 * SEC, 1 << 20, 3 * SEC, 1 << 20 };
	lb_risk(&b, 2, &r, 1);
	struct lr_log log;
	read_ok(&b, &log);
	char *text = report_of(&log, FMT_TEXT, 0);
	cr_assert(strstr(text, "noop        /n  (unbounded: noop never syncs)"), "%s", text);
	free(text);
	lr_free(&log);
	free(b.data);
}

/* A 1.1 run with no RISK block had nothing at risk; a 1.0 log (written
 * before the accounting existed) still reads, and says nothing either way. */
Test(synclat, risk_none_and_logs_of_1_0)
{
	struct logbuf b;
	lb_header(&b, 5, 1, WALL0, MONO0);
	lb_file(&b, 7, "/data/a.wal", "ext4");
	lb_interval(&b, 0);
	lb_trailer(&b, WALL0 + SEC, MONO0 + SEC);
	struct lr_log log;
	read_ok(&b, &log);
	char *text = report_of(&log, FMT_TEXT, 0);
	cr_assert(strstr(text, "at risk: none"), "%s", text);
	free(text);
	lr_free(&log);
	free(b.data);

	struct lr_error e;
	cr_assert_eq(lr_read_file("tests/data/log-1.0-summary.log", &log, &e), 0, "%s", e.msg);
	cr_assert_eq(log.minor, 0);
	cr_assert_eq(log.warnings & LRW_NEWER, 0);
	text = report_of(&log, FMT_TEXT, REPORT_PER_SECOND);
	cr_assert(strstr(text, "synclat report"), "%s", text);
	cr_assert(!strstr(text, "at risk"), "a 1.0 log cannot know:\n%s", text);
	free(text);
	lr_free(&log);
}

/* Offset of the payload of block i (0: HEADER). */
static size_t block_at(const struct logbuf *b, size_t i)
{
	return (i ? b->ends[i - 1] : 0) + LOGFMT_BLOCK_HDR;
}

static void put32le(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

Test(synclat, risk_corruption_is_named)
{
	struct logbuf b = risk_log();
	/* blocks: 0 HEADER, 1-2 FILE, 3 INTERVAL, 4 RISK(0), 5 INTERVAL, 6-7 RISK(1), 8 TRAILER */
	size_t r0 = block_at(&b, 4), r1a = block_at(&b, 6), r1b = block_at(&b, 7);
	uint8_t *d = malloc(b.len);

	memcpy(d, b.data, b.len);
	put32le(d + r0 + 8, 99);
	reseal(d, r0 - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r0 + 8, "references unknown file id 99");

	memcpy(d, b.data, b.len);
	put32le(d + r0 + 8 + 48, 7); /* 7, 7 */
	reseal(d, r0 - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r0 + 8 + 48, "not in increasing order");

	memcpy(d, b.data, b.len);
	put32le(d + r1b + 8, 9); /* file 9 again in second 1 */
	reseal(d, r1b - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r1b + 8, "file id 9 already has an entry for second 1");

	memcpy(d, b.data, b.len);
	put32le(d + r1b, 0); /* second 0 after second 1 */
	reseal(d, r1b - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r1b, "second 0 goes back from the previous RISK block's 1");

	memcpy(d, b.data, b.len);
	d[r1a + 8 + 24] = 0xff; /* bytes at the end above the worst */
	reseal(d, r1a - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r1a + 8 + 8, "exceeds the second's worst");

	memcpy(d, b.data, b.len);
	put32le(d + r1a + 8 + 40, 100); /* written below the worst */
	reseal(d, r1a - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r1a + 8 + 8, "20000 bytes at risk of 100 written");

	memcpy(d, b.data, b.len);
	d[r0 + 8 + 5] = 1;
	reseal(d, r0 - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r0 + 8 + 4, "reserved bytes not zero");

	memcpy(d, b.data, b.len);
	d[r0 + 6] = 40; /* entry size */
	reseal(d, r0 - LOGFMT_BLOCK_HDR);
	expect_error(d, b.len, LR_CORRUPT, r0 + 6, "file entry size 40, expected 48");

	/* the same bytes in a log that says 1.0: RISK did not exist */
	memcpy(d, b.data, b.len);
	d[LOGFMT_BLOCK_HDR + 2] = 0;
	reseal(d, 0);
	expect_error(d, b.len, LR_CORRUPT, r0 - LOGFMT_BLOCK_HDR + 4, "unknown block type 10");
	free(d);
	free(b.data);
}

/* compare draws data at risk over time when either side has any: here B
 * has, A (a 1.1 log with none) is said to have nothing at risk. */
Test(synclat, compare_plots_data_at_risk)
{
	struct logbuf a, b = risk_log();
	lb_header(&a, 5, 1, WALL0, MONO0);
	lb_file(&a, 7, "/data/a.wal", "ext4");
	lb_interval(&a, 0);
	lb_interval(&a, 1);
	lb_trailer(&a, WALL0 + 2 * SEC, MONO0 + 2 * SEC);
	const char *pa = save(&a, "norisk.log"), *pb = save(&b, "risk.log"), *svg = tmp("risk.svg");
	struct cli o = run_cli("compare", "--svg", svg, pa, pb, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	FILE *f = fopen(svg, "r");
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *risk = strstr(buf, "data at risk: age of the oldest unsynced byte"), *lat = strstr(buf, "per-second max latency");
	cr_assert(risk, "no risk panel");
	cr_assert(lat && risk < lat, "the risk panel comes after the latency plots: the first screen misses the price");
	cr_assert(strstr(buf, "A: nothing at risk"), "side A not described");
	cli_free(&o);

	o = run_cli("compare", "--svg", svg, pa, pa, NULL);
	f = fopen(svg, "r");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	cr_assert(!strstr(buf, "data at risk"), "a risk panel for two runs without any");
	cli_free(&o);
	free(a.data);
	free(b.data);
}

/* ---- rules that matched nothing, the price in the tables, noise ---- */

/* A log under two rules (wal, for the .wal files of /data, and spare, for /spare),
 * whose only file is wal's: spare matched nothing. */
static const struct logfmt_rule two_rules[] = {
	{ "", "", 0 },
	{ "wal", "/data/*.wal", 3 },
	{ "spare", "/spare/*", 3 },
};

static struct logbuf spare_log(uint32_t pid)
{
	struct logbuf b;
	memset(&b, 0, sizeof(b));
	struct logfmt_header h = {
		.pid = pid, .ppid = 1, .log_mode = 1, .start_wall_ns = WALL0, .start_mono_ns = MONO0,
		.hostname = "testhost", .kernel = "6.1.0-test", .cmdline = "redis-server 127.0.0.1:6379        ",
		.rules = two_rules, .nrules = 3, .policy_ini = "",
	};
	lb_put(&b, logfmt_encode_header(blk, sizeof(blk), &h));
	lb_file(&b, 7, "/data/a.wal", "ext4");
	struct logfmt_file f9 = { .id = 9, .rule = 1, .dev = 5, .ino = 6, .rule_name = "wal", .fstype = "ext4",
				  .path = "/data/a.wal" }; /* the same path again: one file */
	lb_put(&b, logfmt_encode_file(blk, sizeof(blk), b.seq, &f9));
	lb_interval(&b, 0);
	lb_trailer(&b, WALL0 + SEC, MONO0 + SEC);
	return b;
}

/* Each rule says how many files (distinct paths) it matched; a rule that
 * matched none is a warning, in report and (per side) in compare. */
Test(synclat, rules_say_what_they_matched_and_warn_when_nothing)
{
	struct logbuf b = spare_log(41);
	const char *path = save(&b, "spare.log");
	struct cli o = run_cli("report", path, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.out, "policy  : default=passthrough (0 files); wal=defer [/data/*.wal] (1 file); "
				"spare=defer [/spare/*] (matched no file)\n"),
		  "%s", o.out);
	cr_assert(strstr(o.err, "warning: rule 'spare' (defer, path = /spare/*) matched no file"), "%s", o.err);
	cr_assert(!strstr(o.err, "rule 'wal'"), "%s", o.err);
	cli_free(&o);
	o = run_cli("report", "--json", path, NULL);
	cr_assert(strstr(o.out, "{\"name\":\"spare\",\"glob\":\"/spare/*\",\"sync\":\"defer\",\"files\":0}"), "%s", o.out);
	cr_assert(strstr(o.out, "{\"name\":\"wal\",\"glob\":\"/data/*.wal\",\"sync\":\"defer\",\"files\":1}"), "%s", o.out);
	cli_free(&o);
	o = run_cli("compare", "--name-a", "passthrough", "--name-b", "redis.ini", path, path, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	cr_assert(strstr(o.err, "warning: side B (redis.ini): rule 'spare'"), "%s", o.err);
	cr_assert(strstr(o.err, "warning: side A (passthrough): rule 'spare'"), "%s", o.err);
	cli_free(&o);
	free(b.data);
}

/* compare's text, CSV and JSON carry each side's data at risk beside the
 * table; the rate of an op that is not a write or a sync (open, close)
 * gets no B/A: the same calls over a shorter run are no gain. */
Test(synclat, compare_tables_carry_the_price_and_no_open_rates)
{
	struct logbuf a, b = risk_log();
	lb_header(&a, 5, 1, WALL0, MONO0);
	lb_file(&a, 7, "/data/a.wal", "ext4");
	struct tally t[LOGOP_COUNT];
	memset(t, 0, sizeof(t));
	t[LOGOP_OPEN] = (struct tally){ 2, 0, 2000, 1000 };
	t[LOGOP_WRITE] = (struct tally){ 1, 4096, 100, 100 };
	struct hist ho, hw;
	hist_init(&ho);
	hist_init(&hw);
	hist_record(&ho, 1000);
	hist_record(&ho, 1000);
	hist_record(&hw, 100);
	const uint8_t ops[] = { LOGOP_WRITE, LOGOP_OPEN };
	struct hist *hh[] = { &hw, &ho };
	lb_put(&a, logfmt_encode_interval(blk, sizeof(blk), a.seq, 0, t));
	lb_hists(&a, 1, MONO0 + SEC, ops, hh, 2);
	lb_trailer(&a, WALL0 + 4 * SEC, MONO0 + 4 * SEC);
	struct logbuf b2;
	lb_header(&b2, 6, 1, WALL0, MONO0);
	lb_file(&b2, 7, "/data/a.wal", "ext4");
	lb_put(&b2, logfmt_encode_interval(blk, sizeof(blk), b2.seq, 0, t));
	lb_hists(&b2, 1, MONO0 + SEC, ops, hh, 2);
	lb_trailer(&b2, WALL0 + SEC, MONO0 + SEC);
	const char *pa = save(&a, "a4.log"), *pb = save(&b2, "b1.log"), *pr = save(&b, "risk.log");
	struct cli o = run_cli("compare", pa, pb, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	char *open_ratio = strstr(o.out, "\nopen ");
	cr_assert(open_ratio, "%s", o.out);
	open_ratio = strstr(open_ratio, "B/A");
	cr_assert(open_ratio && !strncmp(open_ratio, "B/A       1.00x          -          -", 36),
		  "open's B/A row has a rate ratio:\n%s", o.out);
	char *write_ratio = strstr(strstr(o.out, "\nwrite "), "B/A");
	cr_assert(write_ratio && !strncmp(write_ratio, "B/A       1.00x      4.00x", 26), "%s", o.out);
	cli_free(&o);
	o = run_cli("compare", pa, pr, NULL);
	cr_assert(strstr(o.out, "\nat risk              run         max     oldest      files\n"), "%s", o.out);
	cr_assert(strstr(o.out, "A             0          -          0\n"), "%s", o.out);
	cr_assert(strstr(o.out, "B      20.00 kB     250 ms          2\n"), "%s", o.out);
	cli_free(&o);
	o = run_cli("compare", "--csv", pa, pr, NULL);
	cr_assert(strstr(o.out, "at_risk,price,max_bytes,0,20000,\n") && strstr(o.out, "at_risk,price,files,0,2,\n"),
		  "%s", o.out);
	cli_free(&o);
	o = run_cli("compare", "--json", pa, pr, NULL);
	cr_assert(strstr(o.out, "\"at_risk\":{\"max_bytes\":20000,\"oldest_ns\":250000000,\"files\":2,\"unbounded\":false}"),
		  "%s", o.out);
	cli_free(&o);
	free(a.data);
	free(b.data);
	free(b2.data);
}

/* The per-second plots break their line where a second has nothing (a
 * gap between a server's rounds) instead of drawing across it. */
Test(synclat, per_second_lines_break_at_gaps)
{
	struct logbuf a;
	lb_header(&a, 5, 1, WALL0, MONO0);
	lb_file(&a, 7, "/data/a.wal", "ext4");
	lb_interval(&a, 0);
	lb_interval(&a, 1);
	lb_interval(&a, 5);
	lb_interval(&a, 6);
	lb_trailer(&a, WALL0 + 7 * SEC, MONO0 + 7 * SEC);
	const char *pa = save(&a, "gap.log"), *svg = tmp("gap.svg");
	struct cli o = run_cli("compare", "--svg", svg, pa, pa, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	FILE *f = fopen(svg, "r");
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *panel = strstr(buf, "per-second max latency");
	cr_assert(panel, "%s", buf);
	int lines = 0;
	for (char *p = panel; (p = strstr(p, "<polyline")); p++)
		lines++;
	cr_assert_eq(lines, 4, "two runs of seconds per side: 4 lines, not %d", lines);
	cli_free(&o);
	free(a.data);
}

/* The page's first screen: the verdict and the price before the sides'
 * details, the command's words without a title's padding, a rule that
 * matched nothing said, at most two log names. */
Test(synclat, html_first_screen_has_gain_price_and_no_noise)
{
	struct logbuf b = spare_log(41);
	const char *path = save(&b, "spare.log"), *html = tmp("first.html");
	char *many = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&many, &len);
	for (int i = 0; i < 40; i++)
		fprintf(m, "%s%s", i ? "," : "", path);
	fclose(m);
	struct cli o = run_cli("compare", "--html", html, "--name-b", "redis.ini", many, path, NULL);
	cr_assert_eq(o.rc, 0, "%s", o.err);
	size_t plen;
	char *page = slurp(html, &plen);
	char *verdict = strstr(page, "class=\"verdict\">verdict:"), *risk = strstr(page, "class=\"risk\"");
	char *side = strstr(page, "class=\"side\"><b>A</b>");
	cr_assert(verdict && risk && side && verdict < risk && risk < side, "verdict, price, then the sides:\n%s", page);
	cr_assert(strstr(page, "<code>redis-server 127.0.0.1:6379</code>"), "%s", page);
	cr_assert(strstr(page, "and 38 more"), "%s", page);
	cr_assert(strstr(page, "warning: rule spare (defer, path = /spare/*) matched no file in this run"), "%s", page);
	char *a_line = strstr(page, "<p class=\"side\"><b>A</b>");
	cr_assert(a_line && strcspn(a_line, "\n") < 400, "side A's line is %zu characters", strcspn(a_line, "\n"));
	free(page);
	free(many);
	cli_free(&o);
	free(b.data);
}

/* A load's figure in the verdict's lead: plain digits, never "4.292e+04". */
Test(synclat, figures_in_plain_digits)
{
	static const struct { double v; const char *want; } cases[] = {
		{ 42918.6, "42,919" }, { 1234567, "1,234,567" }, { 451.2, "451" }, { 12.54, "12.5" },
		{ 0.2637, "0.264" }, { 0, "0.000" }, { 0.00042, "0.000420" }, { -2500, "-2,500" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char b[48];
		fmt_figure(b, sizeof(b), cases[i].v);
		cr_expect_str_eq(b, cases[i].want, "fmt_figure(%g)", cases[i].v);
	}
}
