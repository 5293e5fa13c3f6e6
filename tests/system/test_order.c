/*
 * test_order.c - ordered defer (shim/defer/order.c): under defer, a change of a
 * file reaches the kernel only after the syncs the program was already
 * told are done, of its other files and of its own promised bytes.
 *
 * Verified from outside: tests/progs/ord_steps runs a script of writes,
 * fsyncs and renames under the shim with the recording layer
 * (tests/lib/reclayer.so) beneath it, whose log holds every call the shim
 * really made, with CLOCK_MONOTONIC entry and return times. max_delay_ms
 * is 10 s, so no deadline syncs anything while the script runs: a real
 * sync in the middle of it is the ordering's doing. Each test also runs
 * the script with ordering off (SYNCSHIM_TEST_NO_ORDER=1, defer as it was
 * before ordering), which must show the reordering the test forbids.
 *
 * Run one with
 *   SYNCSHIM_BUILD=$PWD/build build/tests/test_order --filter 'order/cross*' --verbose
 */
#include "harness.h"

struct run {
	struct h_log log;
	char *out;
	char *dir;
};

/* The data directory: the outputs of the commands stay outside the rules. */
static char *data_dir(void)
{
	char *d = h_path("d");
	mkdir(d, 0755);
	return d;
}

/* ord_steps DIR STEPS... under defer (rules: extra ini text after the
 * default rule for DIR/ *), ordering on or off. */
static struct run steps(const char *extra_rules, bool ordered, const char *const *script)
{
	char *dir = data_dir();
	char *ini = h_path(h_fmt("order.%d.ini", h_ctx.seq + 1));
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n%s[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
				extra_rules ? extra_rules : "", dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	if (!ordered)
		h_env(&c, "SYNCSHIM_TEST_NO_ORDER=1");
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps");
	return (struct run){ h_log_load(&c), r.out, dir };
}

/* The program's own rename: the live counters' publisher renames its
 * file into place too (recorded by the layer like any call). */
static const struct h_rec *app_rename(const struct run *run)
{
	for (size_t i = 0; i < run->log.n; i++) {
		const struct h_rec *r = &run->log.r[i];
		if (!strcmp(r->op, "rename") && r->path && !strncmp(r->path, run->dir, strlen(run->dir)))
			return r;
	}
	return NULL;
}

static unsigned long long ino_of(const struct run *run, const char *name)
{
	return h_ino(h_fmt("%s/%s", run->dir, name));
}

/* t0 or t1 ("t0"/"t1") of step number i as the program printed it. */
static unsigned long long step_time(const struct run *run, int i, const char *which)
{
	char *key = h_fmt("step %d ", i);
	const char *line = strstr(run->out, key);
	cr_assert_not_null(line, "no step %d in:\n%s", i, run->out);
	const char *v = strstr(line, h_fmt(" %s=", which));
	cr_assert_not_null(v);
	return strtoull(v + 4, NULL, 10);
}

static bool is_write(const struct h_rec *r)
{
	return !strcmp(r->op, "write") || !strcmp(r->op, "pwrite") || !strcmp(r->op, "writev") ||
	       !strcmp(r->op, "pwritev");
}

/* The nth (from 0) write-family record of ino, by start time. */
static const struct h_rec *nth_write(const struct run *run, unsigned long long ino, int nth)
{
	const struct h_rec *best[64];
	int n = 0;
	for (size_t i = 0; i < run->log.n && n < 64; i++)
		if (run->log.r[i].ino == ino && is_write(&run->log.r[i]))
			best[n++] = &run->log.r[i];
	for (int i = 0; i < n; i++) /* tiny: insertion sort by t0 */
		for (int j = i; j > 0 && best[j]->t0 < best[j - 1]->t0; j--) {
			const struct h_rec *t = best[j];
			best[j] = best[j - 1];
			best[j - 1] = t;
		}
	cr_assert_lt(nth, n, "want write #%d of inode %llu, the log has %d", nth, ino, n);
	return best[nth];
}

/* A successful real sync of ino that began at or after from and ended at
 * or before by, or NULL. */
static const struct h_rec *synced_between(const struct run *run, unsigned long long ino, unsigned long long from,
					  unsigned long long by)
{
	for (size_t i = 0; i < run->log.n; i++) {
		const struct h_rec *r = &run->log.r[i];
		if (r->ino == ino && (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync")) && r->ret == 0 &&
		    r->t0 >= from && r->t1 <= by)
			return r;
	}
	return NULL;
}

/* Real syncs of ino that began before t. */
static int syncs_before(const struct run *run, unsigned long long ino, unsigned long long t)
{
	int n = 0;
	for (size_t i = 0; i < run->log.n; i++) {
		const struct h_rec *r = &run->log.r[i];
		if (r->ino == ino && (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync")) && r->t0 < t)
			n++;
	}
	return n;
}

TestSuite(order, .init = h_setup, .fini = h_teardown, .timeout = 90);

/*
 * sqlite's checkpoint on two files: pages into the database (A) and its
 * fsync, the WAL (B) written and synced, then A's header overwritten.
 * The overwrite must reach the kernel after a real sync of B that began
 * after B's acknowledged fsync, and after one of A itself.
 */
static const char *const checkpoint[] = { "a:A", "a:A", "s:A", "a:B", "s:B", "p:A:0:Z", NULL };

Test(order, cross_file_overwrite_waits_for_the_other_files_sync)
{
	struct run run = steps(NULL, true, checkpoint);
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	const struct h_rec *over = nth_write(&run, a, 2);
	cr_assert_eq(over->off, 0, "the third write of A is the header overwrite");
	const struct h_rec *sb = synced_between(&run, b, step_time(&run, 4, "t0"), over->t0);
	cr_assert_not_null(sb, "A's overwrite (t0=%llu) reached the kernel before any real sync of B after B's ack",
			   over->t0);
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 2, "t0"), over->t0),
			   "A's overwrite reached the kernel before a real sync of A's acknowledged pages");
	/* B's write itself had to wait for A's acknowledged sync too */
	const struct h_rec *bw = nth_write(&run, b, 0);
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 2, "t0"), bw->t0),
			   "B's write reached the kernel before A's acknowledged sync was real");

	/* The control: without ordering nothing is synced before the exit drain. */
	struct run off = steps(NULL, false, checkpoint);
	unsigned long long a2 = ino_of(&off, "A"), b2 = ino_of(&off, "B");
	const struct h_rec *over2 = nth_write(&off, a2, 2);
	cr_assert_eq(syncs_before(&off, b2, over2->t0), 0, "control: B synced before A's overwrite without ordering");
}

/*
 * Same file: an overwrite of acknowledged bytes with other bytes waits for
 * the file's sync; rewriting identical bytes and appending do not.
 */
static const char *const same_file[] = {
	"a:A", "a:A", "s:A", /* blocks 'b' and 'c', acknowledged */
	"p:A:0:b",           /* identical bytes: forward */
	"a:A",               /* an append: forward */
	"p:A:4096:Q",        /* changes acknowledged bytes: waits */
	NULL,
};

Test(order, same_file_overwrite_waits_identical_rewrite_does_not)
{
	struct run run = steps(NULL, true, same_file);
	unsigned long long a = ino_of(&run, "A");
	const struct h_rec *same = nth_write(&run, a, 2), *append = nth_write(&run, a, 3),
			   *over = nth_write(&run, a, 4);
	cr_assert_eq(same->off, 0);
	cr_assert_eq(over->off, 4096);
	cr_assert_eq(syncs_before(&run, a, append->t1), 0,
		     "an identical rewrite or an append cost a real sync (%d before the append returned)",
		     syncs_before(&run, a, append->t1));
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 2, "t0"), over->t0),
			   "the overwrite of acknowledged bytes reached the kernel before a real sync of them");
	unsigned char buf[4096];
	int fd = open(h_fmt("%s/A", run.dir), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(buf[0], 'Q', "the overwrite's bytes are in the file");

	struct run off = steps(NULL, false, same_file);
	unsigned long long a2 = ino_of(&off, "A");
	cr_assert_eq(syncs_before(&off, a2, nth_write(&off, a2, 4)->t0), 0, "control: synced without ordering");
}

/*
 * order = file: A's writes do not wait for B's acknowledged sync, while
 * B's writes still wait for A's.
 */
static const char *const opt_out[] = { "a:B", "s:B", "a:A", "s:A", "a:B", NULL };

Test(order, order_file_opts_out_and_others_still_wait_for_it)
{
	char *dir = data_dir();
	struct run run = steps(h_fmt("[rule own]\npath = %s/A\nsync = defer\norder = file\nmax_delay_ms = 10000\n"
				     "max_calls = 1000000\nmax_bytes = 1G\n",
				     dir),
			       true, opt_out);
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	const struct h_rec *aw = nth_write(&run, a, 0), *bw2 = nth_write(&run, b, 1);
	cr_assert_eq(syncs_before(&run, b, aw->t0), 0, "order = file: A's write waited for B's sync");
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 3, "t0"), bw2->t0),
			   "B (order = domain) wrote before A's acknowledged sync was real");

	/* The same script with A ordered: A's write waits for B. */
	struct run dom = steps(NULL, true, opt_out);
	unsigned long long a2 = ino_of(&dom, "A"), b2 = ino_of(&dom, "B");
	cr_assert_not_null(synced_between(&dom, b2, step_time(&dom, 1, "t0"), nth_write(&dom, a2, 0)->t0),
			   "order = domain: A's write did not wait for B's acknowledged sync");
}

/*
 * Names: a rename, an unlink and a truncation wait for every file's
 * acknowledged syncs (RocksDB deletes a compaction's inputs after the
 * MANIFEST edit; PostgreSQL recycles WAL segments after pg_control).
 */
Test(order, rename_unlink_and_truncate_wait_for_acknowledged_syncs)
{
	static const char *const script[] = { "a:B", "s:B", "a:C", "r:C:D", "a:E", "s:E", "u:A", "a:F", "s:F",
					      "t:G:0", NULL };
	struct run run = steps(NULL, true, script);
	unsigned long long b = ino_of(&run, "B");
	const struct h_rec *ren = app_rename(&run);
	cr_assert_not_null(ren, "no rename recorded");
	cr_assert_not_null(synced_between(&run, b, step_time(&run, 1, "t0"), ren->t0),
			   "the rename reached the kernel before B's acknowledged sync");
	/* unlink and ftruncate are not recorded by the layer: the program's
	 * own step times bound them (the wait happens inside the call). */
	unsigned long long e = ino_of(&run, "E"), f = ino_of(&run, "F");
	cr_assert_not_null(synced_between(&run, e, step_time(&run, 5, "t0"), step_time(&run, 6, "t1")),
			   "the unlink returned without E's acknowledged sync");
	cr_assert_not_null(synced_between(&run, f, step_time(&run, 8, "t0"), step_time(&run, 9, "t1")),
			   "the ftruncate returned without F's acknowledged sync");

	struct run off = steps(NULL, false, script);
	const struct h_rec *ren2 = app_rename(&off);
	cr_assert_not_null(ren2);
	cr_assert_eq(syncs_before(&off, ino_of(&off, "B"), ren2->t0), 0, "control: B synced before the rename");
}

/*
 * The waited-for sync fails (the device returns EIO): the waiting write is
 * not failed for another file's error; the error stays B's own, reported
 * by B's next fsync, and A's own sync is clean.
 */
Test(order, a_failed_sync_being_waited_for_stays_the_other_files_error)
{
	static const char *const script[] = { "a:B", "s:B", "a:A", "S:B", "S:A", NULL };
	char *dir = data_dir();
	char *ini = h_path("fail.ini");
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\n",
				dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO:0:1");
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps");
	struct run run = { h_log_load(&c), r.out, dir };
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	const struct h_rec *failed = NULL;
	for (size_t i = 0; i < run.log.n; i++)
		if (run.log.r[i].injected)
			failed = &run.log.r[i];
	cr_assert_not_null(failed, "no injected failure happened:\n%s", r.out);
	cr_assert_eq(failed->ino, b, "the failed sync was not B's");
	cr_assert_leq(failed->t1, nth_write(&run, a, 0)->t0, "A's write reached the kernel before B's sync ended");
	cr_assert(h_has(r.out, "step 2 a A ") && h_has(r.out, "ret=4096 err=0"), "A's write failed:\n%s", r.out);
	cr_assert(strstr(r.out, "step 3 S B ") && strstr(strstr(r.out, "step 3 S B "), "ret=-1 err=EIO"),
		  "B's next fsync did not report its failed sync:\n%s", r.out);
	cr_assert(strstr(r.out, "step 4 S A ") && strstr(strstr(r.out, "step 4 S A "), "ret=0 err=0"),
		  "A was given B's error:\n%s", r.out);
}

/*
 * Two processes of one domain (a fork child, as PostgreSQL's backends are
 * the postmaster's): the parent acknowledged B's sync; the child's write
 * of A must wait until B is durable, which the child makes so through the
 * parent's descriptor. Under ordering off the child writes at once.
 */
static const char *const two_procs[] = { "a:B", "s:B", "f", "a:A", NULL };

Test(order, a_fork_child_waits_for_its_parents_acknowledged_sync)
{
	struct run run = steps(NULL, true, two_procs);
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	const struct h_rec *aw = nth_write(&run, a, 0);
	long child = (long)h_num_after(run.out, "child pid=", 0);
	cr_assert_gt(child, 0, "%s", run.out);
	cr_assert_eq(aw->pid, child, "A's write is the child's");
	cr_assert_not_null(synced_between(&run, b, step_time(&run, 1, "t0"), aw->t0),
			   "the child's write of A reached the kernel before the parent's acknowledged sync of B was real");

	struct run off = steps(NULL, false, two_procs);
	unsigned long long a2 = ino_of(&off, "A"), b2 = ino_of(&off, "B");
	cr_assert_eq(syncs_before(&off, b2, nth_write(&off, a2, 0)->t0), 0, "control: B synced before A's write");
}

/* A single file appended and synced over and over never waits. */
Test(order, single_append_log_never_waits)
{
	const char *script[64];
	int n = 0;
	for (int i = 0; i < 20; i++) {
		script[n++] = "a:L";
		script[n++] = "s:L";
	}
	script[n] = NULL;
	struct run run = steps(NULL, true, script);
	unsigned long long l = ino_of(&run, "L");
	cr_assert_eq(syncs_before(&run, l, step_time(&run, n - 1, "t1")), 0,
		     "an append log paid real syncs for ordering");
}

/* ---- sqlite3 in WAL mode under crash-test mode ------------------------------ */

TestSuite(order_sqlite, .init = h_setup, .fini = h_teardown, .timeout = 180);

/* syncshim crashtest of examples/sqlite/insert_wal.sh (one sqlite3, WAL,
 * synchronous=FULL, a checkpoint every 20 pages) under defer; env: an
 * extra variable for the shim or NULL. Returns crashtest's stdout. */
static char *sqlite_wal_trials(const char *env, const char *trials)
{
	char *d = h_path(h_fmt("data%d", h_ctx.seq));
	mkdir(d, 0755);
	char *db = h_fmt("%s/db", d), *acks = h_fmt("%s.acks", d);
	char *ex = h_fmt("%s/../examples/sqlite", h_ctx.build);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, "sqlite3", db, "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)",
	       NULL);
	h_assert_ok(h_run(&c), "sqlite3 create");
	struct h_cmd t;
	h_cmd_init(&t, H_PLAIN);
	if (h_ctx.prefix[0])
		h_envf(&t, "LD_PRELOAD=%s", h_ctx.prefix);
	if (env)
		h_env(&t, env);
	t.timeout_s = 170;
	h_args(&t, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "-n", trials, "-p", "defer", "--cut",
	       "random:500-1500", "--scope", h_fmt("%s/**", d), "--seed", "7", "--check",
	       h_fmt("%s/check.sh %s %s", ex, db, acks), "--", h_fmt("%s/insert_wal.sh", ex), db, acks, NULL);
	struct h_result r = h_run(&t);
	cr_assert(!r.timed_out, "crashtest timed out\n%s", r.err);
	cr_assert(h_has(r.out, "trials of"), "no summary: exit %d\n%s\n%s", r.code, r.out, r.err);
	return r.out;
}

static int count_of(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * The measurement: under defer without ordering most cuts leave a
 * database that fails integrity_check (the WAL overwritten before the
 * checkpointed pages were durable). Ordered: none does; rows may be lost
 * only as the window allows.
 */
Test(order_sqlite, wal_checkpoints_under_defer_keep_the_database_whole)
{
	char *out = sqlite_wal_trials(NULL, "8");
	cr_log_info("ordered:\n%s", out);
	cr_expect_eq(count_of(out, "integrity_check FAILED"), 0, "ordered defer left a damaged database:\n%s", out);
	cr_expect_eq(count_of(out, "integrity=ok"), 8, "want 8 checked trials:\n%s", out);

	/* The control, logged, not asserted: without ordering most cuts
	 * damage the database, but not every run of 6 has one (the unit
	 * tests above assert the reordering itself, with hard controls). */
	char *off = sqlite_wal_trials("SYNCSHIM_TEST_NO_ORDER=1", "6");
	cr_log_info("unordered: %d of 6 cuts left a damaged database\n%s", count_of(off, "integrity_check FAILED"),
		    off);
}
