/*
 * test_crashtest.c - `syncshim crashtest` end to end: its run, its
 * rollback and its verdicts. Every verdict comes from the files a rollback left, read by
 * the examples' own checkers (wal_check, state_check, sqlite3's
 * integrity_check), never from the shim's counters; the launcher's
 * --json only carries their output and its own cut and window.
 *
 * tests/progs/wal_fake records its own undo log apart from the shim, so
 * the launcher's side (cuts, seeds, --keep, unusable trials) is tested on
 * records known exactly; the rest runs the real shim's recorder.
 */
#include "harness.h"

TestSuite(crashtest, .init = h_setup, .fini = h_teardown, .timeout = 120);

#define MAX_TRIALS 32

struct trial {
	char verdict[16];
	bool cut;
	double window_ms;   /* -1: null */
	long records;       /* rolled back */
	double planned_ms;
	char *text;         /* the trial's JSON, with its check's output */
};

struct run {
	struct h_result r;
	struct trial t[MAX_TRIALS];
	int n;
};

static double num_after(const char *s, const char *key, double def)
{
	const char *p = strstr(s, key);
	if (!p || strncmp(p + strlen(key), "null", 4) == 0)
		return def;
	return strtod(p + strlen(key), NULL);
}

/* The trials of crashtest's --json output. */
static void parse_trials(struct run *run)
{
	char *p = run->r.out;
	while (run->n < MAX_TRIALS && (p = strstr(p, "{\"trial\":"))) {
		char *next = strstr(p + 1, "{\"trial\":");
		size_t len = next ? (size_t)(next - p) : strlen(p);
		struct trial *t = &run->t[run->n++];
		t->text = h_fmt("%.*s", (int)len, p);
		const char *v = strstr(t->text, "\"verdict\":\"");
		cr_assert_not_null(v, "no verdict in %s", t->text);
		sscanf(v + 11, "%15[a-z]", t->verdict);
		t->cut = h_has(t->text, "\"cut\":true");
		t->window_ms = num_after(t->text, "\"window_ms\":", -1);
		t->records = (long)num_after(t->text, "\"records\":", 0);
		t->planned_ms = num_after(t->text, "\"planned_ms\":", -1);
		p += len;
	}
}

/* syncshim crashtest --json ARGS... (NULL-terminated), in the test's
 * directory; env, if set, one more variable for it (and CMD). */
static struct run crashtest(const char *env, ...)
{
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	if (h_ctx.prefix[0])
		h_envf(&c, "LD_PRELOAD=%s", h_ctx.prefix);
	/* env: NAME=VALUE settings separated by spaces */
	for (char *e = env ? h_fmt("%s", env) : NULL, *tok = e ? strtok(e, " ") : NULL; tok; tok = strtok(NULL, " "))
		h_env(&c, tok);
	c.timeout_s = 100;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "--json", NULL);
	va_list ap;
	va_start(ap, env);
	const char *a;
	while ((a = va_arg(ap, const char *)))
		h_arg(&c, a);
	va_end(ap);
	struct run run = { .r = h_run(&c) };
	cr_assert(!run.r.timed_out, "crashtest timed out\n%s", run.r.err);
	parse_trials(&run);
	cr_assert(h_has(run.r.out, "\"total\":"), "no total: exit %d\n%s\n%s", run.r.code, run.r.out, run.r.err);
	return run;
}

static char *ex(const char *name)
{
	return h_fmt("%s/examples/%s", h_ctx.build, name);
}

static char *data_dir(void)
{
	char *d = h_path("data");
	mkdir(d, 0755);
	return d;
}

static char *scope(void)
{
	return h_fmt("%s/**", data_dir());
}

/* The WAL workload under a policy (-p NAME) or a config (-c FILE). */
static struct run wal_trials(const char *how, const char *what, const char *trials, const char *cut)
{
	char *wal = h_fmt("%s/wal", data_dir()), *acks = h_path("acks");
	return crashtest(NULL, "-n", trials, how, what, "--cut", cut, "--scope", scope(), "--seed", "42",
			 "--check", h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks), "--",
			 ex("wal_append"), "-f", wal, "-a", acks, "-n", "100000000", "-s", "256", "-k", NULL);
}

static void expect_no_acked_loss(const char *policy)
{
	struct run run = wal_trials("-p", policy, "20", "random:20-150");
	cr_assert_eq(run.n, 20, "%s: %d trials\n%s", policy, run.n, run.r.err);
	for (int i = 0; i < run.n; i++) {
		struct trial *t = &run.t[i];
		cr_expect_str_eq(t->verdict, "pass", "%s trial %d: %s", policy, i + 1, t->text);
		cr_expect(t->cut, "%s trial %d ran to completion", policy, i + 1);
		cr_expect(h_has(t->text, "lost=0 torn_bytes=0"), "%s trial %d: %s", policy, i + 1, t->text);
	}
	cr_expect_eq(run.r.code, 0, "%s: exit %d", policy, run.r.code);
}

Test(crashtest, wal_passthrough_loses_no_acknowledged_record)
{
	expect_no_acked_loss("passthrough");
}

Test(crashtest, wal_fdatasync_loses_no_acknowledged_record)
{
	expect_no_acked_loss("fdatasync");
}

Test(crashtest, wal_group_loses_no_acknowledged_record)
{
	expect_no_acked_loss("group");
}

/* noop: acknowledged records lost in nearly every trial, and said so. */
Test(crashtest, wal_noop_loses_acknowledged_records_and_says_so)
{
	struct run run = wal_trials("-p", "noop", "20", "random:20-150");
	cr_assert_eq(run.n, 20);
	int lost = 0;
	for (int i = 0; i < run.n; i++) {
		struct trial *t = &run.t[i];
		bool l = h_num_after(t->text, "lost=", 0) > 0;
		lost += l;
		if (l) {
			cr_expect_str_eq(t->verdict, "fail", "trial %d lost records but passed", i + 1);
			cr_expect_gt(t->records, 0, "trial %d: lost records, none reported rolled back", i + 1);
			cr_expect_gt(t->window_ms, 0, "trial %d: no window reported", i + 1);
		}
	}
	cr_expect_geq(lost, 18, "noop lost acknowledged records in only %d of 20 trials", lost);
	cr_expect_eq(run.r.code, 1);
}

/* The window of max_delay_ms, judged against when the flusher could run
 * rather than against the clock: a record acknowledged more than
 * max_delay_ms before the cut was overdue (its request came before its
 * acknowledgement, and the deadline counts from the request), so at the
 * cut a flusher thread must have been at work on it, running, waiting
 * for a CPU or the disk, or inside the real sync (the launcher's look at
 * /proc just before the kill). How long a loaded machine makes that take
 * is the machine's; a flusher asleep past the deadline is the shim's.
 * The slack is the timer's wake-up, not a guess at the load. */
#define DEADLINE_SLACK_MS 5

static void expect_flusher_at_work_if_overdue(const char *what, int i, double oldest_ms, int max_delay_ms,
					      const char *text)
{
	if (oldest_ms <= max_delay_ms + DEADLINE_SLACK_MS)
		return;
	const char *at = strstr(text, "\"flushers_at_cut\":");
	cr_expect(at && num_after(at, "\"busy\":", -1) > 0,
		  "%s trial %d: a record acknowledged %.1f ms before the cut (deadline %d ms) was lost while no "
		  "flusher thread was at work: %s",
		  what, i + 1, oldest_ms, max_delay_ms, text);
}

/* defer: only what was acknowledged within max_delay_ms before the cut,
 * or since then while the flusher was at work on it (above), and the
 * window the launcher reports is the lost acknowledgements' age. */
Test(crashtest, wal_defer_loses_only_its_window_and_reports_it)
{
	char *ini = h_path("defer.ini");
	/* The acks stand for replies to a client, which are no file change
	 * ordered defer would hold back behind the WAL's sync (order = file). */
	h_write_file(ini, h_fmt("[shim]\npolicy = defer\nmax_delay_ms = 50\nmax_calls = 1000000\nmax_bytes = 1G\n"
				"[rule acks]\npath = %s\nsync = defer\norder = file\n",
				h_path("acks")));
	struct run run = wal_trials("-c", ini, "20", "random:60-200");
	cr_assert_eq(run.n, 20);
	int lost = 0;
	for (int i = 0; i < run.n; i++) {
		struct trial *t = &run.t[i];
		double oldest = num_after(t->text, "lost_oldest_ms=", -1);
		if (h_num_after(t->text, "lost=", 0) == 0)
			continue;
		lost++;
		expect_flusher_at_work_if_overdue("wal defer", i, oldest, 50, t->text);
		/* The rollback's window runs from the first lost record's write,
		 * its acknowledgement came after its sync: between the two. */
		double written = num_after(t->text, "lost_oldest_written_ms=", -1);
		cr_expect(written >= oldest, "trial %d: no write time in the acks\n%s", i + 1, t->text);
		cr_expect(t->window_ms >= oldest - 0.01 && t->window_ms <= written + 0.01,
			  "trial %d: reported window %.3f ms; oldest lost record written %.3f ms, acknowledged %.3f "
			  "ms before the cut",
			  i + 1, t->window_ms, written, oldest);
		cr_expect(!h_has(t->text, "torn_bytes=") || h_has(t->text, "torn_bytes=0"), "%s", t->text);
	}
	cr_expect_geq(lost, 10, "defer lost nothing in %d of 20 trials: no window was exercised", 20 - lost);
}

/* write-tmp, fsync, rename under defer: the rename barrier keeps every
 * target whole; without it a cut finds an empty or torn one. */
static struct run rename_trials(const char *env, const char *trials)
{
	char *d = data_dir(), *state = h_fmt("%s/state", d), *content = h_fmt("%4096s", "");
	for (int i = 0; i < 4096; i++)
		content[i] = "iteration=0\n"[i % 12];
	h_write_file(state, content);
	char *ini = h_path("defer.ini");
	h_write_file(ini, "[shim]\npolicy = defer\nmax_delay_ms = 50\n");
	return crashtest(env, "-n", trials, "-c", ini, "--cut", "random:30-200", "--scope", scope(), "--seed", "7",
			 "--check", h_fmt("%s -d %s -s 4096", ex("state_check"), d), "--", ex("write_tmp_rename"),
			 "-d", d, "-n", "100000000", "-s", "4096", "-k", NULL);
}

Test(crashtest, rename_under_defer_never_tears_the_target)
{
	struct run run = rename_trials(NULL, "20");
	cr_assert_eq(run.n, 20);
	for (int i = 0; i < run.n; i++)
		cr_expect(h_has(run.t[i].text, "state=whole") && !strcmp(run.t[i].verdict, "pass"),
			  "trial %d: %s", i + 1, run.t[i].text);
	cr_expect_eq(run.r.code, 0);
}

/* Ordered defer is a second barrier before a rename (every acknowledged
 * sync first): both off, as before either existed. */
Test(crashtest, without_the_rename_barrier_crashtest_catches_a_torn_target)
{
	struct run run = rename_trials("SYNCSHIM_TEST_NO_RENAME_BARRIER=1 SYNCSHIM_TEST_NO_ORDER=1", "5");
	cr_assert_eq(run.n, 5);
	int bad = 0;
	for (int i = 0; i < run.n; i++)
		bad += h_has(run.t[i].text, "state=empty") || h_has(run.t[i].text, "state=torn");
	cr_expect_geq(bad, 1, "no torn or empty target in 5 trials without the barrier");
	cr_expect_eq(run.r.code, 1);
}

/* sqlite3, PRAGMA synchronous=FULL, one INSERT per commit. */
static struct run sqlite_trials(const char *policy, const char *trials)
{
	char *d = data_dir(), *db = h_fmt("%s/db", d), *acks = h_path("acks");
	char *dir = h_fmt("%s/../examples/sqlite", h_ctx.build);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, "sqlite3", db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)", NULL);
	h_assert_ok(h_run(&c), "sqlite3 create");
	return crashtest(NULL, "-n", trials, "-p", policy, "--cut", "random:100-500", "--scope", scope(), "--seed",
			 "5", "--check", h_fmt("%s/check.sh %s %s", dir, db, acks), "--", h_fmt("%s/insert.sh", dir),
			 db, acks, NULL);
}

/* integrity_check passes after every cut. (In rollback-journal mode FULL
 * does not sync the directory after the journal's unlink, the commit:
 * sqlite's documentation says the last transaction may roll back after
 * a power loss, and crashtest shows that one row, never more.) */
Test(crashtest, sqlite_under_passthrough_keeps_its_integrity)
{
	struct run run = sqlite_trials("passthrough", "8");
	cr_assert_eq(run.n, 8);
	for (int i = 0; i < run.n; i++) {
		cr_expect(h_has(run.t[i].text, "integrity=ok"), "trial %d: %s", i + 1, run.t[i].text);
		cr_expect_leq(h_num_after(run.t[i].text, "lost=", 99), 1, "trial %d: %s", i + 1, run.t[i].text);
	}
}

Test(crashtest, sqlite_under_noop_shows_what_it_lost)
{
	struct run run = sqlite_trials("noop", "4");
	cr_assert_eq(run.n, 4);
	for (int i = 0; i < run.n; i++) {
		cr_expect_str_eq(run.t[i].verdict, "fail", "trial %d: %s", i + 1, run.t[i].text);
		/* at least the acknowledged rows of the cut's moment: a slow
		 * (sanitizer) build may have acknowledged only one by then */
		cr_expect_geq(h_num_after(run.t[i].text, "lost=", 0), 1, "trial %d: %s", i + 1, run.t[i].text);
		cr_expect_gt(run.t[i].records, 0, "trial %d: nothing reported rolled back", i + 1);
	}
	cr_expect_eq(run.r.code, 1);
}

/* sqlite3 in WAL mode, one connection, a checkpoint every 100 pages,
 * under adversarial writeback: each trial starts from a fresh
 * database (--setup); -shm stays out of scope (sqlite truncates it on the
 * first open after a crash; it is a shared mapping the log cannot see). */
static struct run sqlite_wal_trials(const char *policy, const char *trials, const char *cut)
{
	char *d = data_dir(), *db = h_fmt("%s/db", d), *acks = h_path("acks");
	char *dir = h_fmt("%s/../examples/sqlite", h_ctx.build);
	char *setup = h_fmt("rm -f %s %s %s-wal %s-shm %s-journal && sqlite3 %s 'PRAGMA journal_mode=WAL; CREATE TABLE "
			    "t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)' >/dev/null", acks, db, db, db, db, db);
	return crashtest(NULL, "-n", trials, "-p", policy, "--cut", cut, "--writeback", "adversarial", "--scope", db,
			 "--scope", h_fmt("%s-wal", db), "--scope", h_fmt("%s-journal", db), "--seed", "18", "--setup",
			 setup, "--check", h_fmt("%s/check.sh %s %s", dir, db, acks), "--",
			 h_fmt("%s/insert.sh", dir), db, acks, "100000", "wal", NULL);
}

/* sqlite is crash-safe: whatever order the kernel wrote its pages back
 * in, integrity_check passes and no acknowledged row is lost; this is
 * the check of the adversarial mode itself (it produces only states a
 * kernel could). Whether a page of an unsynced write survives depends on
 * the cut's moment (under passthrough only the commit in flight is
 * unsynced): the unit tests in test_rollback.c show the mode's effect.
 * Cuts after 1.5 s: sqlite3's start takes most of a second on a busy
 * machine. */
Test(crashtest, sqlite_wal_under_passthrough_stays_whole_with_adversarial_writeback)
{
	struct run run = sqlite_wal_trials("passthrough", "4", "random:1500-3000");
	cr_assert_eq(run.n, 4, "%s", run.r.err);
	for (int i = 0; i < run.n; i++) {
		cr_expect_str_eq(run.t[i].verdict, "pass", "trial %d: %s", i + 1, run.t[i].text);
		cr_expect(h_has(run.t[i].text, "integrity=ok") && h_has(run.t[i].text, " lost=0 "), "trial %d: %s",
			  i + 1, run.t[i].text);
	}
	cr_expect(h_has(run.r.out, "\"writeback\":\"adversarial\""), "%.300s", run.r.out);
	cr_expect_eq(run.r.code, 0);
}

Test(crashtest, sqlite_wal_under_noop_is_caught_with_adversarial_writeback)
{
	struct run run = sqlite_wal_trials("noop", "1", "random:2500-3000");
	cr_assert_eq(run.n, 1, "%s", run.r.err);
	cr_expect_str_eq(run.t[0].verdict, "fail", "%s", run.t[0].text);
	/* nothing was ever synced: rows lost, or pages of a checkpoint torn
	 * apart (a malformed database) */
	cr_expect(h_num_after(run.t[0].text, " lost=", 0) > 0 || h_has(run.t[0].text, "integrity=failed"), "%s",
		  run.t[0].text);
	cr_expect_eq(run.r.code, 1);
}

/* ---- a preload after the shim that eats syncs ---- */

/* Debian's libeatmydata (make deps installs it): its fsync & co. return
 * 0 without a system call. */
static char *eatmydata(void)
{
	static const char *const where[] = { "/usr/lib/x86_64-linux-gnu/libeatmydata.so",
					     "/usr/lib/aarch64-linux-gnu/libeatmydata.so", "/usr/lib/libeatmydata.so" };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], R_OK) == 0)
			return h_strdup(where[i]);
	cr_assert_fail("libeatmydata.so not found: make deps installs libeatmydata1");
	return NULL;
}

/* LD_PRELOAD=[prefix:]shim:eatmydata, as a user would write it. */
static char *shim_then_eatmydata(void)
{
	return h_fmt("LD_PRELOAD=%s%s%s:%s", h_ctx.prefix, h_ctx.prefix[0] ? ":" : "", h_shim_lib(), eatmydata());
}

/* The shim says at load, in one line, which library its syncs reach
 * instead of libc, whatever the policy; not a word without one. */
Test(crashtest, a_sync_preloaded_after_the_shim_is_named_at_load)
{
	static const char *const policies[] = { "passthrough", "defer", "noop" };
	char *file = h_path("f");
	for (size_t i = 0; i < 3; i++) {
		struct h_cmd c;
		h_cmd_policy(&c, H_PLAIN, policies[i]);
		h_env(&c, shim_then_eatmydata());
		h_args(&c, ex("sync_writes"), "-n", "3", "-f", file, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "sync_writes");
		cr_expect(h_has(r.err, "syncshim: fsync, fdatasync, msync, sync_file_range, sync, syncfs after the shim "
				"are defined by ") && h_has(r.err, "libeatmydata.so, not libc"),
			  "%s: want the load line naming libeatmydata:\n%s", policies[i], r.err);
		char *nl = strstr(r.err, "libeatmydata.so, not libc");
		cr_expect(nl && !strstr(nl + 1, "libeatmydata.so, not libc"), "more than one line:\n%s", r.err);
		/* alone, and above the recording layer, which passes every sync on
		 * and says so (syncshim_layer_passes_syncs) */
		for (unsigned layers = H_SHIM; layers <= H_SHIM_REC; layers++) {
			h_cmd_policy(&c, layers, policies[i]);
			h_args(&c, ex("sync_writes"), "-n", "3", "-f", file, NULL);
			r = h_run(&c);
			h_assert_ok(r, "sync_writes without eatmydata");
			cr_expect(!h_has(r.err, "not libc"), "%s, layers %u:\n%s", policies[i], layers, r.err);
		}
	}
}

/* Behind eatmydata every "durable" mark is a lie: crashtest must not
 * judge such trials (it reported 0 lost where every ack was lost). */
Test(crashtest, trials_behind_a_sync_eating_preload_are_unusable)
{
	char *wal = h_fmt("%s/wal", data_dir()), *acks = h_path("acks");
	struct run run = crashtest(shim_then_eatmydata(), "-n", "2", "-p", "passthrough", "--cut", "random:400-600",
				   "--scope", scope(), "--seed", "3", "--check",
				   h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks), "--", ex("wal_append"), "-f", wal,
				   "-a", acks, "-n", "100000000", "-k", NULL);
	cr_assert_eq(run.n, 2, "%s", run.r.err);
	for (int i = 0; i < run.n; i++) {
		cr_expect_str_eq(run.t[i].verdict, "unusable", "trial %d: %s", i + 1, run.t[i].text);
		cr_expect(h_has(run.t[i].text, "libeatmydata.so, not libc"), "trial %d: %s", i + 1, run.t[i].text);
	}
	cr_expect_eq(run.r.code, 1);
}

/* A program that exits normally loses nothing, whatever the policy, but
 * under noop, where nothing it wrote was ever synced. */
Test(crashtest, a_normal_exit_loses_nothing_but_under_noop)
{
	static const char *const policies[] = { "passthrough", "fdatasync", "defer", "group", "noop" };
	char *wal = h_fmt("%s/wal", data_dir()), *acks = h_path("acks");
	for (size_t i = 0; i < 5; i++) {
		struct run run = crashtest(NULL, "-n", "1", "-p", policies[i], "--cut", "after-ms:60000", "--scope",
					   scope(), "--check", h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks), "--",
					   ex("wal_append"), "-f", wal, "-a", acks, "-n", "20", "-k", NULL);
		cr_assert_eq(run.n, 1, "%s\n%s", run.r.out, run.r.err);
		cr_expect(!run.t[0].cut, "%s: cut?", policies[i]);
		if (i < 4) {
			cr_expect_eq(run.t[0].records, 0, "%s: rolled back %ld records", policies[i], run.t[0].records);
			cr_expect_str_eq(run.t[0].verdict, "pass", "%s: %s", policies[i], run.t[0].text);
		} else {
			cr_expect_gt(run.t[0].records, 0, "noop: nothing rolled back");
			cr_expect_str_eq(run.t[0].verdict, "fail");
		}
	}
}

/* ---- the launcher on a recorder of its own (wal_fake) ---- */

static struct run fake_trials(const char *trials, const char *cut, const char *flag, const char *keep)
{
	char *wal = h_fmt("%s/wal", data_dir()), *acks = h_path("acks");
	return crashtest(NULL, "-n", trials, "--cut", cut, "--scope", scope(), "--seed", "1234", "--keep",
			 keep ? keep : h_path("keep"), "--check", h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks),
			 "--", h_prog("wal_fake"), "-f", wal, "-a", acks, "-n", "100000000", flag, NULL);
}

/* The same seed draws the same cut moments; they fall in the range. */
Test(crashtest, cuts_come_from_the_seed)
{
	struct run a = fake_trials("4", "random:20-60", NULL, NULL), b = fake_trials("4", "random:20-60", NULL, NULL);
	cr_assert(a.n == 4 && b.n == 4);
	bool same_all = true;
	for (int i = 0; i < 4; i++) {
		cr_expect(a.t[i].planned_ms >= 20 && a.t[i].planned_ms <= 60, "%f", a.t[i].planned_ms);
		cr_expect_eq(a.t[i].planned_ms, b.t[i].planned_ms, "trial %d: %f then %f", i + 1, a.t[i].planned_ms,
			     b.t[i].planned_ms);
		same_all &= a.t[i].planned_ms == a.t[0].planned_ms;
		cr_expect_str_eq(a.t[i].verdict, "pass", "%s", a.t[i].text);
		cr_expect_leq(a.t[i].records, 1, "a synced WAL rolls back at most its one unsynced record");
	}
	cr_expect(!same_all, "four equal cut moments from a random range");
	cr_expect_eq(a.r.code, 0);
}

/* A drawn cut counts from the program's first record in scope: a program
 * that takes 400 ms to start (as a JVM does) is never cut before it did
 * anything, whatever the load, even with a cut range of 20-30 ms. */
Test(crashtest, a_slow_start_is_not_cut_before_the_program_did_anything)
{
	char *wal = h_fmt("%s/wal", data_dir()), *acks = h_path("acks");
	struct run run = crashtest(NULL, "-n", "2", "--cut", "random:20-30", "--scope", scope(), "--seed", "7",
				   "--check", h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks), "--", "/bin/sh",
				   "-c", "sleep 0.4; exec \"$0\" \"$@\"", h_prog("wal_fake"), "-f", wal, "-a", acks,
				   "-n", "100000000", NULL);
	cr_assert_eq(run.n, 2);
	for (int i = 0; i < run.n; i++) {
		double first = num_after(run.t[i].text, "\"first_record_ms\":", -1);
		double end = num_after(run.t[i].text, "\"end_ms\":", -1);
		cr_expect(run.t[i].cut, "trial %d was not cut: %s", i + 1, run.t[i].text);
		cr_expect_geq(first, 400, "trial %d: first record at %.1f ms, before the program started", i + 1, first);
		cr_expect_geq(end, first + run.t[i].planned_ms, "trial %d: cut %.1f ms after the start, first record at %.1f",
			      i + 1, end, first);
		cr_expect_gt(num_after(run.t[i].text, "\"log_records\":", 0), 1, "trial %d: %s", i + 1, run.t[i].text);
		cr_expect_str_eq(run.t[i].verdict, "pass", "trial %d: %s", i + 1, run.t[i].text);
	}
}

/* A lying program fails every trial; each failing trial is kept. */
Test(crashtest, failing_trials_are_kept_for_inspection)
{
	char *keep = h_path("kept");
	struct run run = fake_trials("2", "random:20-40", "-L", keep);
	cr_assert_eq(run.n, 2);
	cr_expect_eq(run.r.code, 1);
	for (int i = 1; i <= 2; i++) {
		cr_expect_str_eq(run.t[i - 1].verdict, "fail");
		char *report = h_read_file(h_fmt("%s/trial-%d/report.txt", keep, i));
		cr_expect(h_has(report, "check FAILED"), "trial %d's report.txt: %s", i, report);
		cr_expect(h_size(h_fmt("%s/trial-%d/store/undo.log", keep, i)) > 8, "trial %d: no undo.log kept", i);
		cr_expect(h_has(h_read_file(h_fmt("%s/trial-%d/store/check.out", keep, i)), "LOST"),
			  "trial %d: no check output kept", i);
	}
}

/* after-syncs:N cuts once N syncs are in the log: the WAL then holds at
 * least N records (one sync each), checked from the file. */
Test(crashtest, after_syncs_cuts_after_that_many_syncs)
{
	struct run run = fake_trials("3", "after-syncs:40", NULL, NULL);
	cr_assert_eq(run.n, 3);
	for (int i = 0; i < run.n; i++) {
		long records = h_num_after(run.t[i].text, "result: records=", 0);
		cr_expect(run.t[i].cut && records >= 40 && records < 400, "trial %d: %ld records at the cut", i + 1,
			  records);
	}
}

/* A log damaged before its tail makes the trial unusable, never a pass. */
Test(crashtest, a_damaged_log_makes_the_trial_unusable)
{
	struct run run = fake_trials("1", "random:20-30", "-G", NULL);
	cr_assert_eq(run.n, 1);
	cr_expect_str_eq(run.t[0].verdict, "unusable");
	/* after the magic and the CREATE record (72 bytes and the WAL's path) */
	char *at = h_fmt("byte %zu: no record starts here", 8 + 72 + strlen(h_fmt("%s/wal", data_dir())));
	cr_expect(h_has(run.t[0].text, at), "want \"%s\" in %s", at, run.t[0].text);
	cr_expect_eq(run.r.code, 1);
}

/* Without --setup the launcher copies the scope before trial 1 and puts
 * it back after the last. */
Test(crashtest, the_scope_is_restored_after_the_trials)
{
	char *keepme = h_fmt("%s/keepme", data_dir());
	h_write_file(keepme, "as it was");
	fake_trials("1", "random:20-30", NULL, NULL);
	cr_expect_str_eq(h_read_file(keepme), "as it was");
	cr_expect_eq(h_size(h_fmt("%s/wal", data_dir())), -1, "the trial's WAL is left behind");
}

Test(crashtest, usage_errors)
{
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "--cut", "sometime", "--scope", "/x/*", "--", "true",
	       NULL);
	struct h_result r = h_run(&c);
	cr_expect_eq(r.code, 2);
	cr_expect(h_has(r.err, "bad value 'sometime'"), "%s", r.err);
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "-p", "fast", "--scope", "/x/*", "--", "true", NULL);
	r = h_run(&c);
	cr_expect_eq(r.code, 2);
	cr_expect(h_has(r.err, "unknown policy 'fast'"), "%s", r.err);
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "--ready", "file:/x", "--scope", "/x/*", "--", "true",
	       NULL);
	r = h_run(&c);
	cr_expect_eq(r.code, 2);
	cr_expect(h_has(r.err, "both --ready PROBE and --load CMD"), "%s", r.err);
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "--ready", "http://x", "--load", "true", "--scope", "/x/*",
	       "--", "true", NULL);
	r = h_run(&c);
	cr_expect_eq(r.code, 2);
	cr_expect(h_has(r.err, "bad --ready 'http://x'"), "%s", r.err);
}

/* ---- the server form: --ready, --load ---------------------------------- */

/* wal_append as the server (it writes until killed), ready once its WAL
 * exists; the load, run without the shim, is what the cut interrupts. */
static struct run server_trials(const char *policy, const char *trials, const char *load, const char *ready,
				const char *more)
{
	char *wal = h_fmt("%s/wal", data_dir()), *acks = h_path("acks");
	return crashtest(NULL, "-n", trials, "-p", policy, "--cut", "random:20-120", "--scope", scope(), "--seed", "7",
			 "--timeout", more ? more : "60", "--setup", h_fmt("rm -f '%s' '%s'", wal, acks), "--ready",
			 ready ? ready : h_fmt("file:%s", wal), "--load", load, "--check",
			 h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks), "--", ex("wal_append"), "-f", wal, "-a", acks,
			 "-n", "100000000", "-s", "256", "-k", NULL);
}

/* The cut comes during the load, counted from its start; the check runs
 * on what the rollback left. */
Test(crashtest, server_form_cuts_during_the_load)
{
	struct run run = server_trials("passthrough", "5", "tail -f /dev/null", NULL, NULL);
	cr_assert_eq(run.n, 5, "%s", run.r.err);
	for (int i = 0; i < run.n; i++) {
		struct trial *t = &run.t[i];
		cr_expect_str_eq(t->verdict, "pass", "trial %d: %s", i + 1, t->text);
		cr_expect(t->cut, "trial %d was not cut: %s", i + 1, t->text);
		double ready = num_after(t->text, "\"ready_ms\":", -1), load = num_after(t->text, "\"load_ms\":", -1);
		cr_expect(ready >= 0 && load >= t->planned_ms - 0.5, "trial %d: ready %.1f ms, cut %.1f ms into the load, "
			  "planned %.0f: %s", i + 1, ready, load, t->planned_ms, t->text);
		cr_expect(h_has(t->text, "\"load_ended\":false"), "%s", t->text);
		cr_expect(h_has(t->text, "lost=0 torn_bytes=0"), "trial %d: %s", i + 1, t->text);
	}
	cr_expect_eq(run.r.code, 0);
}

/* A load that ends before the drawn moment is the cut: what it was told
 * must have survived. */
Test(crashtest, server_form_cuts_when_the_load_ends)
{
	struct run run = server_trials("passthrough", "3", "exit 3", NULL, NULL);
	cr_assert_eq(run.n, 3, "%s", run.r.err);
	for (int i = 0; i < run.n; i++) {
		struct trial *t = &run.t[i];
		cr_expect(t->cut && h_has(t->text, "\"load_ended\":true,\"load_status\":3"), "trial %d: %s", i + 1, t->text);
		cr_expect_str_eq(t->verdict, "pass", "trial %d: %s", i + 1, t->text);
	}
}

/* A server that never answers its probe makes the trial unusable, never
 * a pass, and the launcher says which probe and what the server said. */
Test(crashtest, server_form_never_ready_is_unusable)
{
	struct run run = server_trials("passthrough", "1", "true", h_fmt("file:%s", h_path("never")), "3");
	cr_assert_eq(run.n, 1, "%s", run.r.err);
	cr_expect_str_eq(run.t[0].verdict, "unusable");
	cr_expect(h_has(run.t[0].text, h_fmt("did not answer --ready file:%s within 3 s", h_path("never"))), "%s",
		  run.t[0].text);
	cr_expect_eq(run.r.code, 1);
}

/* A directory the user nobody can reach: the test's own, opened to
 * traversal, with a subdirectory of its. */
static char *nobody_dir(const char *name, uid_t owner, mode_t mode)
{
	cr_assert_eq(chmod(h_ctx.dir, 0711), 0);
	char *d = h_path(name);
	cr_assert_eq(mkdir(d, 0700), 0);
	cr_assert_eq(chown(d, owner, owner), 0);
	cr_assert_eq(chmod(d, mode), 0);
	return d;
}

/* A server that runs as another user (started as PostgreSQL's scripts
 * do it with runuser; chroot --userspec here, which does the same without
 * libcap-ng, whose constructor an ASan-built shim cannot yet meet) records
 * into a store given to the owner of its data directory: the trials pass
 * and recorded its writes. */
Test(crashtest, a_server_under_another_user_records_into_a_store_it_owns)
{
	if (geteuid() != 0 || access("/usr/sbin/chroot", X_OK) != 0)
		cr_skip_test("needs root and chroot");
	char *acks_dir = nobody_dir("acks", 65534, 0700);
	char *data = h_path("data"), *wal = h_fmt("%s/wal", data), *acks = h_fmt("%s/acks", acks_dir);
	struct run run = crashtest(NULL, "-n", "3", "-p", "passthrough", "--cut", "random:20-120", "--scope",
				   h_fmt("%s/**", data), "--setup",
				   h_fmt("rm -rf '%s' '%s' && mkdir '%s' && chown nobody: '%s'", data, acks, data, data),
				   "--ready", h_fmt("file:%s", wal), "--load", "tail -f /dev/null", "--check",
				   h_fmt("%s -f %s -a %s", ex("wal_check"), wal, acks), "--", "chroot", "--userspec=65534:65534",
				   "/", ex("wal_append"), "-f", wal, "-a", acks, "-n", "100000000", "-s", "256", "-k", NULL);
	cr_assert_eq(run.n, 3, "exit %d\n%s", run.r.code, run.r.err);
	for (int i = 0; i < run.n; i++) {
		struct trial *t = &run.t[i];
		cr_expect_str_eq(t->verdict, "pass", "trial %d: %s", i + 1, t->text);
		cr_expect_gt(num_after(t->text, "\"log_records\":", 0), 0, "trial %d recorded nothing: %s", i + 1, t->text);
		cr_expect(h_has(t->text, "lost=0 torn_bytes=0"), "trial %d: %s", i + 1, t->text);
	}
	cr_expect_eq(run.r.code, 0, "%s", run.r.err);
}

/* One whose store it cannot write (its data directory is not its own):
 * the exact path and error, and exit 2 before a second trial. */
Test(crashtest, a_store_the_server_cannot_write_is_named)
{
	if (geteuid() != 0 || access("/usr/sbin/chroot", X_OK) != 0)
		cr_skip_test("needs root and chroot");
	nobody_dir("acks", 65534, 0700);
	char *data = h_path("data"), *wal = h_fmt("%s/wal", data), *acks = h_path("acks/acks");
	struct run run = crashtest(NULL, "-n", "3", "-p", "passthrough", "--scope", h_fmt("%s/**", data), "--setup",
				   h_fmt("rm -rf '%s' && mkdir -m 1777 '%s'", data, data), "--ready", h_fmt("file:%s", wal),
				   "--load", "tail -f /dev/null", "--", "chroot", "--userspec=65534:65534", "/", ex("wal_append"),
				   "-f", wal, "-a", acks, "-n", "100000000", "-s", "256", "-k", NULL);
	cr_expect_eq(run.r.code, 2, "%s", run.r.err);
	cr_expect_eq(run.n, 0);
	cr_expect(h_has(run.r.err, "trial 1: the program could not record: crash-test mode: cannot append to ") &&
			  h_has(run.r.err, "/trial-1/undo.log: Permission denied"),
		  "%s", run.r.err);
}
