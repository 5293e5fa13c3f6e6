/*
 * test_crash.c - crash-test mode's recorder (shim/observe/crash.c): the undo log
 * a shimmed program leaves, read here with the format's own definitions
 * (shim/format/undo/undofmt.h) and checked against what the program did and what the
 * files hold. (The rollback and `syncshim crashtest` are tested in
 * test_crashtest.c.)
 */
#include <sys/stat.h>

#include "harness.h"
#include "logfmt.h"
#include "undofmt.h"

TestSuite(crash, .init = h_setup, .fini = h_teardown, .timeout = 60);

struct rec {
	struct undo_rec h;
	const uint8_t *p;
	size_t at;
};

struct undo {
	uint8_t *data;
	size_t len;
	struct rec r[4096];
	size_t n;
};

static char *store(void)
{
	char *d = h_path("store");
	cr_assert_eq(mkdir(d, 0700), 0);
	h_write_file(h_fmt("%s/%s", d, UNDO_NAME), UNDO_MAGIC);
	return d;
}

/* The whole log, every record's CRC checked. */
static void load(const char *dir, struct undo *u)
{
	char *path = h_fmt("%s/%s", dir, UNDO_NAME);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	u->data = malloc(64 << 20);
	u->len = fread(u->data, 1, 64 << 20, f);
	fclose(f);
	cr_assert_geq(u->len, 8);
	cr_assert_eq(memcmp(u->data, UNDO_MAGIC, 8), 0);
	u->n = 0;
	for (size_t o = 8; o < u->len; u->n++) {
		cr_assert_leq(o + sizeof(struct undo_rec), u->len, "a cut record at %zu", o);
		struct rec *r = &u->r[u->n];
		memcpy(&r->h, u->data + o, sizeof(r->h));
		r->p = u->data + o + sizeof(r->h);
		r->at = o;
		cr_assert_eq(r->h.magic, UNDO_REC_MAGIC, "record at %zu", o);
		struct undo_rec z = r->h;
		z.crc = 0;
		uint32_t crc = logfmt_crc32c(logfmt_crc32c(0, &z, sizeof(z)), r->p, r->h.plen);
		cr_assert_eq(crc, r->h.crc, "CRC of the record at %zu", o);
		o += sizeof(r->h) + r->h.plen;
	}
}

static void crash_env(struct h_cmd *c, const char *dir, const char *scope, const char *policy)
{
	h_cmd_init(c, H_SHIM);
	h_envf(c, "SYNCSHIM_CRASH_DIR=%s", dir);
	h_envf(c, "SYNCSHIM_CRASH_SCOPE=%s", scope);
	h_envf(c, "SYNCSHIM_POLICY=%s", policy);
}

/* The records of ino, in order, of one type (0: any). */
static size_t of(const struct undo *u, unsigned long long ino, int type, const struct rec **out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < u->n && k < max; i++)
		if ((!ino || u->r[i].h.ino == ino) && (!type || u->r[i].h.type == type))
			out[k++] = &u->r[i];
	return k;
}

static bool payload_is(const struct rec *r, const char *s)
{
	return r->h.plen >= strlen(s) && memcmp(r->p, s, strlen(s)) == 0;
}

/*
 * Every change crash_ops makes, logged before it with what it replaced:
 * the overwrite's pre-image, the append's old size, the truncation's cut
 * bytes, the O_DSYNC write flagged durable, O_TRUNC's whole old content,
 * the rename's replaced target and the unlinked file kept as hard links
 * that still hold their bytes, the forked child's own records, and the
 * directory's sync.
 */
Test(crash, every_change_is_logged_before_it_is_made)
{
	char *dir = store(), *data = h_path("data");
	cr_assert_eq(mkdir(data, 0755), 0);
	struct h_cmd c;
	crash_env(&c, dir, h_fmt("%s/*.dat", data), "passthrough");
	h_args(&c, h_prog("crash_ops"), data, NULL);
	struct h_result res = h_run(&c);
	h_assert_ok(res, "crash_ops");
	static struct undo u;
	load(dir, &u);
	const struct rec *v[64];

	/* a.dat: CREATE, WRITE 8 @0, DURABLE, WRITE 4 @2 (was "AAAA"), WRITE 2 @8, SIZE 10 -> 6 (cut "AAcc") */
	size_t n = of(&u, 0, UNDO_CREATE, v, 64);
	cr_assert_geq(n, 4, "CREATE records: %zu", n);
	cr_assert(payload_is(v[0], h_fmt("%s/a.dat", data)));
	unsigned long long a = v[0]->h.ino;
	n = of(&u, a, UNDO_WRITE, v, 64);
	cr_assert_eq(n, 3);
	cr_assert(v[0]->h.off == 0 && v[0]->h.len == 8 && v[0]->h.old_size == 0 && v[0]->h.plen == 0);
	cr_assert(v[1]->h.off == 2 && v[1]->h.len == 4 && v[1]->h.old_size == 8 && payload_is(v[1], "AAAA"));
	cr_assert(v[2]->h.off == 8 && v[2]->h.len == 2 && v[2]->h.old_size == 8 && v[2]->h.plen == 0);
	const struct rec *d[8];
	cr_assert_eq(of(&u, a, UNDO_DURABLE, d, 8), 1, "one fsync of a.dat");
	cr_assert(d[0]->h.off > v[0]->at && d[0]->h.off <= v[1]->at, "the mark covers the first write only");
	cr_assert_eq(of(&u, a, UNDO_SIZE, v, 64), 1);
	cr_assert(v[0]->h.off == 6 && v[0]->h.old_size == 10 && payload_is(v[0], "AAcc"), "truncation's cut bytes");
	cr_assert_eq(of(&u, a, UNDO_UNLINK, v, 64), 1);
	const char *kept = (const char *)v[0]->p + strlen((const char *)v[0]->p) + 1;
	cr_assert(h_has(h_read_file(kept), "AAbbbb"), "the unlinked a.dat kept: %s", kept);

	/* b.dat: O_DSYNC write flagged; c.dat: O_TRUNC keeps "old"; rename keeps the old b.dat */
	cr_assert_geq(of(&u, 0, UNDO_WRITE, v, 64), 6);
	bool osync = false, trunc = false;
	for (size_t i = 0; i < u.n; i++) {
		osync |= u.r[i].h.type == UNDO_WRITE && (u.r[i].h.flags & UNDO_F_OSYNC) && u.r[i].h.len == 2 &&
			 u.r[i].h.old_size == 0 && h_ino(h_fmt("%s/b.dat", data)) != u.r[i].h.ino;
		trunc |= u.r[i].h.type == UNDO_SIZE && u.r[i].h.off == 0 && payload_is(&u.r[i], "old");
	}
	cr_assert(osync, "the O_DSYNC write is not flagged durable");
	cr_assert(trunc, "the O_TRUNC open did not keep the old content");
	cr_assert_eq(of(&u, h_ino(h_fmt("%s/b.dat", data)), UNDO_RENAME, v, 64), 1);
	const char *p = (const char *)v[0]->p;
	cr_assert_str_eq(p, h_fmt("%s/c.dat", data));
	p += strlen(p) + 1;
	cr_assert_str_eq(p, h_fmt("%s/b.dat", data));
	p += strlen(p) + 1;
	cr_assert_str_eq(h_read_file(p), "dd", "the replaced b.dat kept: %s", p);

	/* the child's append to d.dat, its fsync, and the directory's */
	long child = (long)strtol(strstr(res.out, "child=") + 6, NULL, 10);
	unsigned long long dd = h_ino(h_fmt("%s/d.dat", data));
	cr_assert_eq(of(&u, dd, UNDO_WRITE, v, 64), 1);
	cr_assert_eq((long)v[0]->h.pid, child);
	cr_assert_eq(of(&u, dd, UNDO_DURABLE, v, 64), 1);
	cr_assert_eq(of(&u, h_ino(data), UNDO_DIRSYNC, v, 64), 1);
	/* writes through a shared writable mapping are not seen: said, naming e.dat */
	cr_assert_eq(of(&u, h_ino(h_fmt("%s/e.dat", data)), UNDO_LIMIT, v, 64), 1);
	cr_assert(payload_is(v[0], "a shared writable mapping"), "%.*s", (int)v[0]->h.plen, v[0]->p);
	free(u.data);
}

/* noop never syncs: writes are logged, no mark ever says durable. */
Test(crash, noop_leaves_no_durable_marks)
{
	char *dir = store(), *file = h_path("n.dat");
	struct h_cmd c;
	crash_env(&c, dir, file, "noop");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "20", NULL);
	h_assert_ok(h_run(&c), "fl_loop");
	static struct undo u;
	load(dir, &u);
	const struct rec *v[64];
	cr_assert_eq(of(&u, 0, UNDO_WRITE, v, 64), 20);
	cr_assert_eq(of(&u, 0, UNDO_DURABLE, v, 64), 0);
	free(u.data);
}

/* defer: the app's fsyncs make no marks; the flusher's real syncs do,
 * and the last one (the exit drain) covers every write. */
Test(crash, defer_marks_come_from_real_syncs)
{
	char *dir = store(), *file = h_path("d.dat");
	struct h_cmd c;
	crash_env(&c, dir, file, "defer");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "50", NULL);
	h_assert_ok(h_run(&c), "fl_loop");
	static struct undo u;
	load(dir, &u);
	const struct rec *w[64], *d[64];
	cr_assert_eq(of(&u, 0, UNDO_WRITE, w, 64), 50);
	size_t nd = of(&u, 0, UNDO_DURABLE, d, 64);
	cr_assert(nd >= 1 && nd < 50, "%zu marks for 50 deferred fsyncs", nd);
	cr_assert_gt(d[nd - 1]->h.off, w[49]->at, "the exit drain's mark does not cover the last write");
	free(u.data);
}

/* Files outside the scope are not logged; without the variable nothing is. */
Test(crash, only_the_scope_and_only_when_asked)
{
	char *dir = store(), *in = h_path("in.dat"), *out = h_path("out.dat");
	struct h_cmd c;
	crash_env(&c, dir, in, "passthrough");
	h_args(&c, h_prog("fl_loop"), "-f", out, "-n", "5", NULL);
	h_assert_ok(h_run(&c), "fl_loop");
	static struct undo u;
	load(dir, &u);
	cr_assert_eq(u.n, 0, "%zu records of a file outside the scope", u.n);
	free(u.data);

	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CRASH_SCOPE=%s", in);
	h_args(&c, h_prog("fl_loop"), "-f", in, "-n", "5", NULL);
	h_assert_ok(h_run(&c), "fl_loop");
	load(dir, &u);
	cr_assert_eq(u.n, 0, "recorded without SYNCSHIM_CRASH_DIR");
	free(u.data);
}

/* The bound: past it one FULL record, then nothing, and one line. */
Test(crash, a_full_store_says_so_and_stops)
{
	char *dir = store(), *file = h_path("f.dat");
	struct h_cmd c;
	crash_env(&c, dir, file, "passthrough");
	h_env(&c, "SYNCSHIM_CRASH_MAX=2000");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "100", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_loop");
	cr_assert(h_has(r.err, "reached its bound"), "%s", r.err);
	static struct undo u;
	load(dir, &u);
	cr_assert_eq(u.r[u.n - 1].h.type, UNDO_FULL);
	cr_assert_lt(u.len, 2000 + 2 * sizeof(struct undo_rec));
	cr_assert(h_check_pattern(file, 100 * 4096), "the program's own work changed");
	free(u.data);
}

/* No undo.log to append to: one line, the program runs unrecorded. */
Test(crash, a_missing_store_is_one_line)
{
	char *file = h_path("m.dat");
	struct h_cmd c;
	crash_env(&c, h_path("nowhere"), file, "passthrough");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "5", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_loop");
	cr_assert(h_has(r.err, "crash-test mode: cannot append to"), "%s", r.err);
	cr_assert_eq(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err), "more than one line: %s", r.err);
	cr_assert(h_check_pattern(file, 5 * 4096));
}

/*
 * A held write (ordered defer: it follows another file's acknowledged sync
 * and the shim writes it later) is recorded when the shim makes it, but
 * with the time the program made it: the launcher's window lost counts
 * from there. Recorded at its apply, a held write lost at a cut looked
 * fresh (a campaign on ActiveMQ: 0.5 ms reported for acks 219 ms old). The
 * applier thread is stopped at a test hold, so the exit applies the write
 * after every step has returned: a record timed at its apply is younger
 * than the step.
 */
Test(crash, a_held_write_is_recorded_with_the_time_the_program_made_it)
{
	char *dir = store(), *data = h_path("data"), *hold = h_path("hold");
	cr_assert_eq(mkdir(data, 0755), 0);
	char *ini = h_path("held.ini");
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
				data));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CRASH_DIR=%s", dir);
	h_envf(&c, "SYNCSHIM_CRASH_SCOPE=%s/*", data);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_TEST_ORDER_STATS=%s", h_path("stats"));
	h_env(&c, "SYNCSHIM_TEST_HOLD_AT=applier_pass");
	h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
	h_args(&c, h_prog("ord_steps"), data, "a:B", "s:B", "p:A:0:Z", NULL);
	struct h_result res = h_run(&c);
	h_assert_ok(res, "ord_steps");
	char *stats = h_read_file(h_path("stats"));
	cr_assert(stats && strstr(stats, " held=1"), "the write was not held: %s", stats ? stats : "(no stats)");

	const char *line = strstr(res.out, "step 2 p A ");
	cr_assert_not_null(line, "%s", res.out);
	unsigned long long t0 = strtoull(strstr(line, " t0=") + 4, NULL, 10);
	unsigned long long t1 = strtoull(strstr(line, " t1=") + 4, NULL, 10);
	static struct undo u;
	load(dir, &u);
	const struct rec *v[8];
	cr_assert_eq(of(&u, h_ino(h_fmt("%s/A", data)), UNDO_WRITE, v, 8), 1, "one WRITE record of A");
	cr_assert(v[0]->h.mono_ns >= t0 && v[0]->h.mono_ns <= t1,
		  "the held write was recorded at %llu, not during the program's write (%llu..%llu)",
		  (unsigned long long)v[0]->h.mono_ns, t0, t1);
}
