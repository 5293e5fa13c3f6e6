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
 * These tests hold the writer (SYNCSHIM_TEST_NO_HOLD=1): ordered defer
 * as it waits, which a write past held.c's bounds (or one it cannot hold)
 * still does; the rules (what waits for what) are the same when a write
 * is held instead (test_held.c: the kernel sees the same order).
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
static struct run steps_env(const char *extra_rules, bool ordered, const char *env, const char *const *script)
{
	char *dir = data_dir();
	char *ini = h_path(h_fmt("order.%d.ini", h_ctx.seq + 1));
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n%s[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
				extra_rules ? extra_rules : "", dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "SYNCSHIM_TEST_NO_HOLD=1");
	if (!ordered)
		h_env(&c, "SYNCSHIM_TEST_NO_ORDER=1");
	if (env)
		h_env(&c, env);
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps");
	return (struct run){ h_log_load(&c), r.out, dir };
}

static struct run steps(const char *extra_rules, bool ordered, const char *const *script)
{
	return steps_env(extra_rules, ordered, NULL, script);
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

/*
 * Whether record r is about the test's file with inode ino. An inode
 * number outlives its file: the live counters' files, replaced while the
 * program runs, free theirs, and a test file made later may get one
 * (the second child's Y once took the number of the first child's live
 * file, whose writes then passed for Y's). So only records from the first
 * open of ino under the test's directory on count as the file's.
 */
static bool of_file(const struct run *run, const struct h_rec *r, unsigned long long ino)
{
	if (r->ino != ino)
		return false;
	unsigned long long born = ULLONG_MAX;
	size_t dl = strlen(run->dir);
	for (size_t i = 0; i < run->log.n; i++) {
		const struct h_rec *o = &run->log.r[i];
		if (o->ino == ino && o->path && !strncmp(o->path, run->dir, dl) && o->path[dl] == '/' &&
		    o->t0 < born && (!strcmp(o->op, "open") || !strcmp(o->op, "creat")))
			born = o->t0;
	}
	return born == ULLONG_MAX || r->t0 >= born;
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
		if (of_file(run, &run->log.r[i], ino) && is_write(&run->log.r[i]))
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
		if (of_file(run, r, ino) && (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync")) && r->ret == 0 &&
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
		if (of_file(run, r, ino) && (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync")) && r->t0 < t)
			n++;
	}
	return n;
}

/* The control: the same script without ordering makes no real sync of
 * file name before its nth write (so the test's wait is ordering's). */
static void unordered_control(const char *const *script, const char *name, int nth)
{
	struct run off = steps(NULL, false, script);
	unsigned long long ino = ino_of(&off, name);
	cr_assert_eq(syncs_before(&off, ino, nth_write(&off, ino, nth)->t0), 0, "control: synced without ordering");
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

	unordered_control(same_file, "A", 4);
}

/*
 * sqlite restarting its WAL: a new header at 0, its fsync acknowledged,
 * then frames written over the old generation's, past every byte written
 * since the file was last durable. That is not forward: if a frame
 * reached the disk before the header, the old header would read a
 * shortened old WAL. The frame waits for a real sync of the header.
 */
static const char *const restart_over_old_bytes[] = {
	"a:W", "a:W", "a:W", "s:W", /* the old generation: blocks 'b' 'c' 'd', acknowledged */
	"a:X",                      /* another file's change: W's sync becomes real */
	"p:W:0:H", "s:W",           /* the new header, acknowledged */
	"p:W:4096:N",               /* a frame over the old 'c': waits */
	NULL,
};

Test(order, overwrite_of_old_durable_bytes_past_the_last_write_waits)
{
	struct run run = steps(NULL, true, restart_over_old_bytes);
	unsigned long long w = ino_of(&run, "W");
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 3, "t0"), step_time(&run, 4, "t1")),
			   "the other file's change did not make W's first generation durable");
	const struct h_rec *frame = nth_write(&run, w, 4);
	cr_assert_eq(frame->off, 4096, "the fifth write of W is the frame");
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 6, "t0"), frame->t0),
			   "the frame over old bytes reached the kernel before a real sync of the acknowledged header");

	unordered_control(restart_over_old_bytes, "W", 4);
}

/*
 * After the frame waited, the next frames follow one another over the old
 * generation's: the old bytes past them are what followed the WAL's end
 * when it was durable, so they are forward and cost no real sync. The
 * same for a log preallocated with a hole (ZooKeeper, KahaDB). The first
 * round after an open is not known to follow the last write before it:
 * its first overwrite waits once.
 */
static const char *const sequential_over_old_bytes[] = {
	"a:W", "a:W", "a:W", "a:W", "s:W", "a:X", /* old generation: 'b'..'e', durable */
	"p:W:0:H", "s:W", "p:W:4096:N",           /* the restart: the frame waits */
	"s:W", "p:W:8192:M", "s:W", "p:W:12288:L", /* the next frames: forward */
	NULL,
};

Test(order, writes_following_one_another_over_old_bytes_do_not_wait)
{
	struct run run = steps(NULL, true, sequential_over_old_bytes);
	unsigned long long w = ino_of(&run, "W");
	const struct h_rec *frame = nth_write(&run, w, 5), *last = nth_write(&run, w, 7);
	cr_assert_eq(frame->off, 4096);
	cr_assert_eq(last->off, 12288);
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 7, "t0"), frame->t0),
			   "the frame after the new header did not wait for it");
	/* A frame that waited reached the kernel after a real sync that ran
	 * within its own step (the flusher may still finish an earlier round
	 * on its own meanwhile: not a wait) */
	const struct h_rec *next = nth_write(&run, w, 6);
	cr_assert_eq(next->off, 8192);
	cr_assert_null(synced_between(&run, w, step_time(&run, 10, "t0"), next->t0),
		       "a frame following the last one over old bytes waited for a real sync");
	cr_assert_null(synced_between(&run, w, step_time(&run, 12, "t0"), last->t0),
		       "a frame following the last one over old bytes waited for a real sync");
}

static const char *const into_a_hole[] = {
	"t:Z:65536",                            /* preallocated: a hole */
	"p:Z:0:H", "s:Z", "p:Z:4096:I",         /* the first round after the open: waits once */
	"s:Z", "p:Z:8192:J", "s:Z", "p:Z:12288:K", /* the next records, into the hole: forward */
	NULL,
};

Test(order, writes_following_one_another_into_a_hole_do_not_wait)
{
	struct run run = steps(NULL, true, into_a_hole);
	unsigned long long z = ino_of(&run, "Z");
	const struct h_rec *last = nth_write(&run, z, 3);
	cr_assert_eq(last->off, 12288);
	const struct h_rec *next = nth_write(&run, z, 2);
	cr_assert_eq(next->off, 8192);
	cr_assert_null(synced_between(&run, z, step_time(&run, 5, "t0"), next->t0),
		       "a write into the hole after the last one waited for a real sync");
	cr_assert_null(synced_between(&run, z, step_time(&run, 7, "t0"), last->t0),
		       "a write into the hole after the last one waited for a real sync");
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
	h_env(&c, "SYNCSHIM_TEST_NO_HOLD=1");
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
	h_skip_forks_from_threads_under_a_sanitizer(); /* make asan: the child hung so */
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

/*
 * The same two processes, and the child's sync of the parent's B fails:
 * the fault layer beneath the shim fails each process's second real sync
 * from the fork on (the child's first is its own fsync of C, a
 * passthrough file; its second the one made from it through the
 * parent's descriptor of B; the parent's first, at its exit barrier,
 * succeeds). Like a FUSE daemon's or NFS's error, that failure reaches
 * only the caller, and the parent was told B is durable: the child must
 * hand it to the parent, which says it (its exit barrier: B has no call
 * left to report it to). It once reached nobody (oracle seed
 * mix:15753632).
 */
Test(order, a_fork_childs_failed_sync_of_its_parents_file_is_the_parents_error)
{
	static const char *const script[] = { "a:B", "s:B", "f", "s:C", "a:A", NULL };
	char *dir = data_dir();
	char *ini = h_path("forkfail.ini");
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule c]\npath = %s/C\nsync = passthrough\n"
				"[rule data]\npath = %s/*\nsync = defer\nmax_delay_ms = 10000\n",
				dir, dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "SYNCSHIM_TEST_NO_HOLD=1");
	h_env(&c, "RECLAYER_FAIL=sync:EIO:1:1");
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps");
	struct run run = { h_log_load(&c), r.out, dir };
	unsigned long long b = ino_of(&run, "B");
	long child = (long)h_num_after(r.out, "child pid=", 0), parent = 0;
	for (const char *p = r.out; (p = strstr(p, "done pid=")) != NULL; p++) /* the parent's says child= */
		if (strstr(p, " child=") && strchr(p, '\n') > strstr(p, " child="))
			parent = strtol(p + strlen("done pid="), NULL, 10);
	cr_assert_gt(child, 0, "%s", r.out);
	cr_assert_gt(parent, 0, "%s", r.out);
	int injected = 0, parent_ok = 0;
	for (size_t i = 0; i < run.log.n; i++) {
		const struct h_rec *x = &run.log.r[i];
		if (x->injected) {
			injected++;
			cr_assert_eq(x->ino, b, "the failed sync was not B's:\n%s", r.out);
			cr_assert_neq(x->pid, parent, "the failed sync of B was the parent's own:\n%s", r.out);
		}
		if (x->pid == parent && x->ino == b && !strcmp(x->op, "fdatasync") && x->ret == 0)
			parent_ok++;
	}
	cr_assert_eq(injected, 1, "%s", r.out);
	cr_assert_gt(parent_ok, 0, "the parent never synced B itself (then its own sync would have told it)");
	cr_assert(h_has(r.err, "deferred sync of") && h_has(r.err, "/B failed (EIO"),
		  "the child's failed sync of B reached nobody; stderr:\n%s", r.err);
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

/* ---- writes at the descriptor's position (shim/calls/position.h) ------------ */

/* A, acknowledged: blocks 'b' at 0 and 'c' at 4096, the position at 8192.
 * Then the script's tail moves the position back to 4096 in some way and
 * writes 'b' there with write(): identical to block 0, different from
 * block 1. Only a shim that knows the write lands at 4096 makes it wait
 * for A's sync; one that believed a stale position (8192, past every
 * promised byte, or 0, identical bytes) would let it through. */
static void moved_back_then_overwrite_waits(const char *const *tail, int ntail)
{
	const char *script[16] = { "a:A", "a:A", "s:A" };
	for (int i = 0; i < ntail; i++)
		script[3 + i] = tail[i];
	script[3 + ntail] = "W:A:b";
	script[4 + ntail] = NULL;
	struct run run = steps(NULL, true, script);
	unsigned long long a = ino_of(&run, "A");
	const struct h_rec *over = nth_write(&run, a, 2);
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 2, "t0"), over->t0),
			   "a write() at a position moved back over acknowledged bytes reached the kernel before "
			   "their real sync");
	unsigned char buf[4096];
	int fd = open(h_fmt("%s/A", run.dir), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(buf[0], 'b', "the write landed at 4096");
}

Test(order, position_moved_by_read_is_followed)
{
	const char *const tail[] = { "l:A:0", "R:A" }; /* the read moves 0 -> 4096 */
	moved_back_then_overwrite_waits(tail, 2);
}

Test(order, position_moved_through_a_dup_is_not_trusted)
{
	const char *const tail[] = { "d:A", "L:A:4096" }; /* the second number moves the shared position */
	moved_back_then_overwrite_waits(tail, 2);
}

Test(order, position_moved_by_a_fork_child_is_not_trusted)
{
	const char *const tail[] = { "c:A:4096" }; /* the child's lseek moves the parent's description */
	moved_back_then_overwrite_waits(tail, 1);
}

/* lseek, an identical rewrite and an append at the position: none waits,
 * and none asks the kernel where the position is; the overwrite after a
 * seek back still waits. */
static const char *const seeks[] = {
	"a:A", "a:A", "s:A", /* 'b' 'c' acknowledged */
	"l:A:0", "W:A:b",    /* identical bytes: forward (one pread to know) */
	"l:A:8192", "W:A:d", /* past every promised byte: forward */
	"l:A:4096", "W:A:Q", /* over 'c': waits */
	NULL,
};

Test(order, writes_at_a_followed_position_wait_only_when_they_change_promised_bytes)
{
	struct run run = steps(NULL, true, seeks);
	unsigned long long a = ino_of(&run, "A");
	const struct h_rec *same = nth_write(&run, a, 2), *fwd = nth_write(&run, a, 3), *over = nth_write(&run, a, 4);
	(void)same;
	cr_assert_eq(syncs_before(&run, a, fwd->t1), 0, "an identical rewrite or a write past the promised bytes "
			  "cost a real sync");
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 2, "t0"), over->t0),
			   "the overwrite at a sought position reached the kernel before the real sync");
}

/*
 * sqlite's WAL restart (overwrite_of_old_durable_bytes_past_the_last_write_waits)
 * made with write() at a followed position instead of pwrite: the rule
 * that a write past the last one is forward only while the writes since
 * the file was last durable went forward is fed by the position marks
 * (the two were built apart; this is where they meet). The header written
 * back at 0 makes the end unknown, so the frame over old bytes after it
 * waits; the frames that follow it at the position do not.
 */
static const char *const restart_at_the_position[] = {
	"a:W", "a:W", "a:W", "a:W", "s:W", "a:X", /* old generation 'b'..'e', durable; position 16384 */
	"l:W:0", "W:W:H", "s:W", "W:W:N",         /* the new header, acknowledged; a frame over 'c' */
	"s:W", "W:W:M", "s:W", "W:W:K",           /* the next frames, at the position: forward */
	NULL,
};

Test(order, restart_by_write_at_the_position_waits_once)
{
	struct run run = steps(NULL, true, restart_at_the_position);
	unsigned long long w = ino_of(&run, "W");
	const struct h_rec *frame = nth_write(&run, w, 5), *next = nth_write(&run, w, 6), *last = nth_write(&run, w, 7);
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 8, "t0"), frame->t0),
			   "the frame written at the position over old bytes reached the kernel before a real sync "
			   "of the acknowledged header");
	cr_assert_null(synced_between(&run, w, step_time(&run, 10, "t0"), next->t0),
		       "a frame following the last one at the position waited for a real sync");
	cr_assert_null(synced_between(&run, w, step_time(&run, 12, "t0"), last->t0),
		       "a frame following the last one at the position waited for a real sync");
	static const char want[] = "HNMK"; /* the new generation over all of the old one's blocks */
	unsigned char buf[4096];
	int fd = open(h_fmt("%s/W", run.dir), O_RDONLY);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pread(fd, buf, sizeof(buf), (off_t)i * 4096), (ssize_t)sizeof(buf));
		cr_expect_eq(buf[0], want[i], "block %d holds '%c', want '%c'", i, buf[0], want[i]);
	}
	close(fd);

	unordered_control(restart_at_the_position, "W", 5);
}

/* ord_steps under the shim and strace -f -c counting set: how many calls
 * of name the whole run made. */
static long steps_strace_count(const char *const *script, const char *env, const char *set, const char *name)
{
	char *dir = h_path(h_fmt("d.strace.%d", h_ctx.seq + 1)); /* new files each time */
	mkdir(dir, 0755);
	char *ini = h_path(h_fmt("order.%d.ini", h_ctx.seq + 1));
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
				dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "SYNCSHIM_TEST_NO_HOLD=1");
	if (env)
		h_env(&c, env);
	h_strace(&c, set);
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps");
	return h_strace_count(&c, name);
}

/* A write+fsync loop at the position: the same-file check never asks the
 * kernel for the position (it cost an fstat and an lseek per write before
 * the position was followed: 38 checks for these 20 writes), nor, in the
 * first round after the open (where the write before the open ended is
 * not known, so the old bytes past a write are not trusted to be a log's
 * dead tail: sqlite's WAL restart, restart_by_write_at_the_position_waits_once),
 * to read what each write extends the file over: one fstat for the
 * file's size, then every write lands past its known end (order.c; 19
 * preads for these writes before). */
Test(order, append_loop_at_the_position_asks_the_kernel_nothing)
{
	const char *script[64];
	int n = 0;
	for (int i = 0; i < 20; i++) {
		script[n++] = "a:L";
		script[n++] = "s:L";
	}
	script[n] = NULL;
	char *stats = h_path("order.stats");
	struct run run = steps_env(NULL, true, h_fmt("SYNCSHIM_TEST_ORDER_STATS=%s", stats), script);
	(void)run;
	char *text = h_read_file(stats);
	const char *asked = strstr(text, " checks_asked=");
	cr_assert_not_null(asked, "%s", text);
	cr_assert_leq(strtoull(asked + 14, NULL, 10), 1, "the check asked the kernel more than once a file: %s",
		      text);
	cr_assert_not_null(strstr(text, " waits_self=0"), "%s", text);
	/* and counted from outside the shim, against the same run unordered
	 * (the dynamic loader's own preads are in both) */
	long preads = steps_strace_count(script, NULL, "pread64", "pread64");
	long base = steps_strace_count(script, "SYNCSHIM_TEST_NO_ORDER=1", "pread64", "pread64");
	cr_assert_eq(preads, base, "the append loop's writes were compared with %ld preads", preads - base);
}

/*
 * The known end starts at the size the file had: a file that held 64 KiB
 * before the program opened it, written at 0 and synced (acknowledged),
 * then overwritten at 8192 with other bytes. 8192 is past every byte this
 * process wrote, but not past the file's old bytes: the overwrite waits
 * for the acknowledged sync (a known end that forgot the size would let it
 * through).
 */
Test(order, a_write_past_this_processs_writes_but_below_the_old_size_waits)
{
	char *dir = data_dir();
	char old[65536];
	memset(old, 'o', sizeof(old));
	int fd = open(h_fmt("%s/X", dir), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, old, sizeof(old)), (ssize_t)sizeof(old));
	close(fd);
	static const char *const script[] = { "p:X:0:x", "s:X", "p:X:8192:Q", NULL };
	struct run run = steps(NULL, true, script);
	unsigned long long x = ino_of(&run, "X");
	const struct h_rec *over = nth_write(&run, x, 1);
	cr_assert_eq(over->off, 8192);
	cr_assert_not_null(synced_between(&run, x, step_time(&run, 1, "t0"), over->t0),
			   "an overwrite of the file's old bytes reached the kernel before the acknowledged sync");
}

/*
 * Two threads' reserved blocks landing out of order (sync_writes -T 2):
 * the block at 8192 extends the file first and skips 4096..8192, a hole;
 * the block at 4096 lands in it later. Filling zeros is forward, and the
 * hole says so with no pread, which a write-only descriptor could not do
 * (it waited for a real sync before the hole was kept). Once filled the hole
 * is gone: the next write there changes acknowledged bytes and waits.
 */
static const char *const hole_then_refill[] = {
	"o:H", "p:H:0:a", "s:H",   /* write-only; acknowledged */
	"p:H:8192:c", "s:H",       /* extends the file past 4096..8192 */
	"p:H:4096:b", "s:H",       /* into the hole: forward */
	"p:H:4096:Q",              /* over the acknowledged 'b': waits */
	NULL,
};

Test(order, a_block_landing_in_the_hole_an_extending_write_left_does_not_wait)
{
	struct run run = steps(NULL, true, hole_then_refill);
	unsigned long long h = ino_of(&run, "H");
	const struct h_rec *fill = nth_write(&run, h, 2), *over = nth_write(&run, h, 3);
	cr_assert_eq(fill->off, 4096);
	cr_assert_eq(over->off, 4096);
	cr_assert_eq(syncs_before(&run, h, fill->t1), 0, "a write into the hole waited for a real sync");
	cr_assert_not_null(synced_between(&run, h, step_time(&run, 6, "t0"), over->t0),
			   "a write over the filled hole's acknowledged bytes reached the kernel before their real sync");
}

/*
 * The shortcut a single-file program must not be given when it is not a
 * single-file program: A appended and synced, then B written and synced,
 * then A appended again. The append extends A, the file this thread wrote
 * before B, and is forward of A's own promised bytes; but B's
 * acknowledged sync came between, so the append waits for it.
 */
static const char *const append_after_other_files_ack[] = { "a:A", "s:A", "a:B", "s:B", "a:A", NULL };

Test(order, an_append_after_another_files_acknowledged_sync_waits_for_it)
{
	struct run run = steps(NULL, true, append_after_other_files_ack);
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	const struct h_rec *append = nth_write(&run, a, 1);
	cr_assert_not_null(synced_between(&run, b, step_time(&run, 3, "t0"), append->t0),
			   "A's append reached the kernel before B's acknowledged sync was real");

	struct run off = steps(NULL, false, append_after_other_files_ack);
	unsigned long long a2 = ino_of(&off, "A"), b2 = ino_of(&off, "B");
	cr_assert_eq(syncs_before(&off, b2, nth_write(&off, a2, 1)->t0), 0, "control: B synced before A's append");
}

/* ---- rewrite runs (order.c): a file rewritten in place in order ------------- */

/* checks_asked from an ord_steps run's stats file. */
static unsigned long long checks_asked(const char *stats)
{
	char *text = h_read_file(stats);
	const char *asked = strstr(text, " checks_asked=");
	cr_assert_not_null(asked, "%s", text);
	return strtoull(asked + 14, NULL, 10);
}

/*
 * KahaDB's DiskBenchmark: a preallocated file rewritten from its start
 * with the same bytes, each write followed by a sync. The run is compared
 * against one read of the next 64 KiB instead of a pread per write (20
 * preads for these 20 writes before runs; 1 for the first rewrite, 1 for
 * blocks 1-16, 1 for 17-19), and an identical rewrite still costs no real
 * sync.
 */
Test(order, an_identical_rewrite_run_reads_the_file_once_a_span)
{
	const char *script[128];
	int n = 0;
	for (int i = 0; i < 20; i++)
		script[n++] = "a:K";
	script[n++] = "s:K";
	for (int i = 0; i < 20; i++) {
		script[n++] = h_fmt("p:K:%d:%c", i * 4096, 'b' + i);
		script[n++] = "s:K";
	}
	script[n] = NULL;
	char *stats = h_path("order.stats");
	struct run run = steps_env(NULL, true, h_fmt("SYNCSHIM_TEST_ORDER_STATS=%s", stats), script);
	unsigned long long k = ino_of(&run, "K");
	cr_assert_eq(syncs_before(&run, k, nth_write(&run, k, 39)->t1), 0, "an identical rewrite cost a real sync");
	unsigned long long asked = checks_asked(stats);
	cr_assert_leq(asked, 4, "the run of 20 identical rewrites asked the kernel %llu times", asked);
}

/*
 * A run's copy of the file decides only what a pread would: a write in the
 * run's span that changes acknowledged bytes still waits for their real
 * sync, and so does the next one after it (the copy is dropped).
 */
static const char *const run_then_change[] = {
	"a:K", "a:K", "a:K", "a:K", "a:K", "s:K", /* blocks 'b'..'f', acknowledged */
	"p:K:0:b", "p:K:4096:c", "p:K:8192:d",    /* the run: identical */
	"p:K:12288:Q",                             /* changes acknowledged 'e': waits */
	NULL,
};

Test(order, a_write_in_a_rewrite_run_that_changes_bytes_waits)
{
	struct run run = steps(NULL, true, run_then_change);
	unsigned long long k = ino_of(&run, "K");
	const struct h_rec *same = nth_write(&run, k, 7), *over = nth_write(&run, k, 8);
	cr_assert_eq(over->off, 12288);
	cr_assert_eq(syncs_before(&run, k, same->t1), 0, "the identical run cost a real sync");
	cr_assert_not_null(synced_between(&run, k, step_time(&run, 5, "t0"), over->t0),
			   "the changed block in the run reached the kernel before a real sync of the acknowledged one");

	unordered_control(run_then_change, "K", 8);
}

/*
 * Bytes changed with no write call (a shared mapping) after the run read
 * them, and acknowledged: a write putting the run's old bytes back changes
 * promised bytes, and waits. A run that trusted its copy would call it
 * identical.
 */
static const char *const run_then_mapping[] = {
	"a:K", "a:K", "a:K", "a:K", "s:K", /* blocks 'b'..'e', acknowledged */
	"p:K:0:b", "p:K:4096:c",           /* the run: its copy holds 'c' 'd' 'e' */
	"m:K:8192:Z", "s:K",               /* 'd' becomes 'Z' through a mapping, acknowledged */
	"p:K:8192:d",                      /* the run's old bytes over the promised 'Z': waits */
	NULL,
};

Test(order, a_rewrite_run_does_not_trust_bytes_changed_through_a_mapping)
{
	struct run run = steps(NULL, true, run_then_mapping);
	unsigned long long k = ino_of(&run, "K");
	const struct h_rec *back = nth_write(&run, k, 6);
	cr_assert_eq(back->off, 8192);
	cr_assert_not_null(synced_between(&run, k, step_time(&run, 8, "t0"), back->t0),
			   "the write over bytes changed through the mapping reached the kernel before their real sync");
	unsigned char buf[4096];
	int fd = open(h_fmt("%s/K", run.dir), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(buf[0], 'd', "the write's bytes are in the file");
}

/* ---- a log's last page rewritten with more records (PostgreSQL's WAL) ------- */

/*
 * A page of records ending in zeros, acknowledged, rewritten with the same
 * records and more where it held zeros: forward (on the disk ahead of the
 * promised bytes it is past the end a log's reader stops at), no real
 * sync. PostgreSQL does this on every WAL flush (366 same-file waits in
 * 775 pgbench transactions while it was taken for an overwrite).
 */
static const char *const last_page_grows[] = {
	"z:W:0:100xr,3996x0", "s:W", /* records up to 100, zeros after: acknowledged */
	"z:W:0:200xr,3896x0", "s:W", /* the same records and more where it held zeros */
	"z:W:0:300xr,3796x0",
	NULL,
};

Test(order, a_last_page_rewritten_with_more_records_where_it_held_zeros_does_not_wait)
{
	struct run run = steps(NULL, true, last_page_grows);
	unsigned long long w = ino_of(&run, "W");
	const struct h_rec *last = nth_write(&run, w, 2);
	cr_assert_eq(syncs_before(&run, w, last->t1), 0,
		     "filling the zeros after a page's acknowledged records cost a real sync");
}

/* The zeros filled must run to the end of the write: bytes of data after
 * them (a counter followed by more data, a page header) make it an
 * overwrite of promised bytes, which waits. */
static const char *const zeros_then_data[] = {
	"z:W:0:100xr,100x0,3896xd", "s:W", /* records, a run of zeros, data: acknowledged */
	"z:W:0:200xr,3896xd",              /* the zeros changed, the data after them kept */
	NULL,
};

Test(order, filling_zeros_followed_by_data_waits)
{
	struct run run = steps(NULL, true, zeros_then_data);
	unsigned long long w = ino_of(&run, "W");
	const struct h_rec *over = nth_write(&run, w, 1);
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 1, "t0"), over->t0),
			   "a write changing zeros between data reached the kernel before the real sync");
}

/*
 * After a real sync, the last page rewritten and the write going on over
 * old bytes of a recycled file (PostgreSQL writes the partial page and the
 * next ones in one call, into a segment renamed from an old one): the
 * rewrite of the previous write's tail that goes on past it keeps the
 * round forward, so the part past it is not compared with the old bytes.
 */
static const char *const tail_rewrite_goes_on[] = {
	"p:W:4096:o", "p:W:8192:o", "s:W", "a:X", /* an old generation, made durable by X's write */
	"z:W:0:100xr,3996x0", "s:W", "a:X",       /* the new first page, durable the same way */
	"z:W:0:200xr,3896x0", "s:W",              /* more records in it: acknowledged */
	"z:W:0:4096xr,100xs,3996x0",              /* page 0 full, page 1 over the old 'o' */
	NULL,
};

Test(order, a_write_that_rewrites_the_last_page_and_goes_on_stays_forward)
{
	struct run run = steps(NULL, true, tail_rewrite_goes_on);
	unsigned long long w = ino_of(&run, "W");
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 5, "t0"), step_time(&run, 6, "t1")),
			   "X's write did not make W's new first page durable");
	const struct h_rec *last = nth_write(&run, w, 4);
	cr_assert_eq(last->off, 0);
	cr_assert_null(synced_between(&run, w, step_time(&run, 8, "t0"), last->t1),
		       "the write going on past the rewritten page cost a real sync");
}

/* ---- a log that rewrites its end marker (KahaDB's journal) ------------- */

/*
 * Each batch starts over the 5-byte end marker of the one before and goes
 * on past it (ActiveMQ's journal: lseek 5 bytes back, write, fsync). Once
 * a round of writes that went forward is durable, a batch that rewrites
 * promised bytes but reaches the highest one, and changes nothing of the
 * durable log, goes on at once (order.c, "Tail rewrites"): before, every
 * batch waited for its own file's real sync.
 */
#define MARKER_LOG_DURABLE                                                                                             \
	"z:J:0:95xa,5xE", "s:J", "a:X",  /* the first round after the open (not known to go forward): durable */     \
	"z:J:95:95xb,5xE", "s:J", "a:X", /* a round that went forward, made durable by X's write: the log ends at 195 */ \
	"z:J:190:95xc,5xE", "s:J"        /* over the durable marker: acknowledged */

static const char *const marker_rewrites[] = {
	MARKER_LOG_DURABLE,
	"z:J:285:95xd,5xE", "s:J", /* over c's promised marker: the tail rewrite */
	"z:J:380:95xe,5xE",        /* and again, two batches promised below it */
	NULL,
};

Test(order, a_batch_over_the_promised_end_marker_does_not_wait)
{
	struct run run = steps(NULL, true, marker_rewrites);
	unsigned long long j = ino_of(&run, "J");
	cr_assert_not_null(synced_between(&run, j, step_time(&run, 4, "t0"), step_time(&run, 5, "t1")),
			   "X's write did not make J's second round durable");
	const struct h_rec *d = nth_write(&run, j, 3), *e = nth_write(&run, j, 4);
	cr_assert_eq(d->off, 285);
	cr_assert_eq(e->off, 380);
	cr_assert_null(synced_between(&run, j, step_time(&run, 7, "t0"), e->t1),
		       "a batch over the promised end marker cost a real sync");
	char *text = h_read_file(h_fmt("%s/J", run.dir));
	cr_assert(text[94] == 'a' && text[95] == 'b' && text[190] == 'c' && text[285] == 'd' && text[380] == 'e' &&
			  text[474] == 'e' && text[475] == 'E' && text[479] == 'E',
		  "the batches are not in the file as written");
}

/* A write over promised bytes that ends short of the highest one (a flag
 * set in an earlier batch while a later one is promised) would claim what
 * is not durable: it waits. */
static const char *const flag_in_an_earlier_batch[] = {
	MARKER_LOG_DURABLE,
	"z:J:285:95xd,5xE", "s:J",
	"z:J:200:1xF", /* inside c, short of d's end */
	NULL,
};

Test(order, a_write_over_promised_bytes_short_of_the_highest_one_waits)
{
	struct run run = steps(NULL, true, flag_in_an_earlier_batch);
	unsigned long long j = ino_of(&run, "J");
	const struct h_rec *flag = nth_write(&run, j, 4);
	cr_assert_eq(flag->off, 200);
	cr_assert_not_null(synced_between(&run, j, step_time(&run, 10, "t0"), flag->t0),
			   "a write short of the highest promised byte reached the kernel before their real sync");
}

/* One that reaches past the highest byte but begins inside the durable
 * log changes it under the promised batch: it waits. */
static const char *const rewrite_into_the_durable_part[] = {
	MARKER_LOG_DURABLE,
	"z:J:150:200xf", /* from inside b (durable) to past c's end */
	NULL,
};

Test(order, a_rewrite_reaching_into_the_durable_log_waits)
{
	struct run run = steps(NULL, true, rewrite_into_the_durable_part);
	unsigned long long j = ino_of(&run, "J");
	const struct h_rec *over = nth_write(&run, j, 3);
	cr_assert_eq(over->off, 150);
	cr_assert_not_null(synced_between(&run, j, step_time(&run, 8, "t0"), over->t0),
			   "a write into the durable log reached the kernel before the promised batch's real sync");
}

/* The first round after an open is not known to have gone forward (what
 * the file held past it is not known), nor is the log it made durable: a
 * rewrite of the next round's promised marker waits. */
static const char *const marker_rewrite_after_the_open[] = {
	"z:J:0:95xa,5xE", "s:J", "a:X",
	"z:J:95:95xb,5xE", "s:J",
	"z:J:190:95xc,5xE",
	NULL,
};

Test(order, a_marker_rewrite_before_a_forward_round_is_durable_waits)
{
	struct run run = steps(NULL, true, marker_rewrite_after_the_open);
	unsigned long long j = ino_of(&run, "J");
	const struct h_rec *c = nth_write(&run, j, 2);
	cr_assert_eq(c->off, 190);
	cr_assert_not_null(synced_between(&run, j, step_time(&run, 5, "t0"), c->t0),
			   "a rewrite of a promised marker reached the kernel before its real sync");
}

/*
 * Processes of one domain writing one file (PostgreSQL's backends and the
 * WAL): the child's write forward of the parent's acknowledged bytes is
 * the same-file rule's, as within one process: no real sync (before, the
 * child made the parent's slot durable first, one fdatasync per WAL write
 * after another backend's commit). A change of the parent's promised
 * bytes still waits for them.
 */
static const char *const child_appends_to_parents_log[] = {
	"z:W:0:100xr,3996x0", "s:W", "f", /* the parent's records, acknowledged; then the child: */
	"z:W:0:200xr,3896x0",             /* more records where the page held zeros */
	"p:W:4096:n",                     /* the next page */
	NULL,
};

Test(order, a_fork_childs_write_forward_of_its_parents_promised_bytes_does_not_wait)
{
	struct run run = steps(NULL, true, child_appends_to_parents_log);
	unsigned long long w = ino_of(&run, "W");
	long child = (long)h_num_after(run.out, "child pid=", 0);
	cr_assert_gt(child, 0, "%s", run.out);
	const struct h_rec *next = nth_write(&run, w, 2);
	cr_assert_eq(next->pid, child, "the third write is the child's");
	cr_assert_eq(syncs_before(&run, w, next->t1), 0, "the child's writes forward of the parent's cost a real sync");
}

static const char *const child_overwrites_parents_bytes[] = {
	"z:W:0:100xr,3996x0", "s:W", "f",
	"p:W:0:Q", /* the child changes the parent's promised records */
	NULL,
};

Test(order, a_fork_childs_overwrite_of_its_parents_promised_bytes_waits)
{
	struct run run = steps(NULL, true, child_overwrites_parents_bytes);
	unsigned long long w = ino_of(&run, "W");
	const struct h_rec *over = nth_write(&run, w, 1);
	cr_assert_not_null(synced_between(&run, w, step_time(&run, 1, "t0"), over->t0),
			   "the child's overwrite reached the kernel before the parent's acknowledged bytes were durable");
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
 * What ordered defer is for: under defer without ordering most cuts leave a
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

/*
 * Changes made around the write calls are ordered too: a sendfile, a
 * splice, a POSIX aio_write, a libaio io_submit and a raw
 * syscall(SYS_pwrite64) into B after
 * A's acknowledged sync reach the kernel only after A is durable (the
 * step returns after a real sync of A ended: the shim waits before the
 * call). Without ordering, nothing syncs A before the exit.
 */
static void change_after_other_files_ack(const char *step, char want)
{
	/* sendfile's source is outside the order (passthrough, order = file):
	 * what the step waits for is the change of B's order, not its own */
	char *src_rule = h_fmt("[rule source]\npath = %s/.source\nsync = passthrough\norder = file\n", h_path("d"));
	const char *script[] = { "a:A", "s:A", step, NULL };
	struct run run = steps(src_rule, true, script);
	unsigned long long a = ino_of(&run, "A");
	cr_assert_not_null(synced_between(&run, a, step_time(&run, 1, "t0"), step_time(&run, 2, "t1")),
			   "%s into B was made before A's acknowledged sync was real:\n%s", step, run.out);
	unsigned char b = 0;
	int fd = open(h_fmt("%s/B", run.dir), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, 4096), 1);
	close(fd);
	cr_assert_eq(b, want, "%s's bytes are not in B", step);

	struct run off = steps(src_rule, false, script);
	cr_assert_null(synced_between(&off, ino_of(&off, "A"), step_time(&off, 1, "t0"), step_time(&off, 2, "t1")),
		       "control: A synced before %s without ordering", step);
}

Test(order, sendfile_into_a_file_waits_for_the_other_files_ack)
{
	change_after_other_files_ack("x:B:4096:S", 'S');
}

Test(order, splice_into_a_file_waits_for_the_other_files_ack)
{
	change_after_other_files_ack("j:B:4096:P", 'P');
}

Test(order, aio_write_waits_for_the_other_files_ack)
{
	change_after_other_files_ack("J:B:4096:J", 'J');
}

Test(order, a_raw_syscall_write_waits_for_the_other_files_ack)
{
	change_after_other_files_ack("Z:B:4096:Z", 'Z');
}

/* A write submitted through libaio (InnoDB's data pages, each after a
 * redo log sync) is submitted only after what it depends on is durable. */
Test(order, a_libaio_write_waits_for_the_other_files_ack)
{
	change_after_other_files_ack("b:B:4096:L", 'L');
}

/* The same through an io_uring ring (MariaDB's InnoDB on Linux). */
Test(order, an_io_uring_write_waits_for_the_other_files_ack)
{
	change_after_other_files_ack("g:B:4096:U", 'U');
}

/* ---- the domain: its members, alive, stopped, killed, or no longer trusted ---- */

/* ord_steps with its output and the recording layer's log, under an ini
 * of its own (text), extra environment (NULL-terminated). */
static struct run domain_steps(const char *ini_text, const char *const *env, const char *const *script, struct h_result *res)
{
	char *dir = data_dir();
	char *ini = h_path(h_fmt("domain.%d.ini", h_ctx.seq + 1));
	h_write_file(ini, ini_text ? ini_text
				   : h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
					   "max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
					   dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	for (const char *const *e = env; e && *e; e++)
		h_env(&c, *e);
	c.timeout_s = 60;
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	if (res)
		*res = r;
	h_assert_ok(r, "ord_steps");
	return (struct run){ h_log_load(&c), r.out, dir };
}

static bool is_any_sync(const struct h_rec *r)
{
	return !strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync") || !strcmp(r->op, "syncfs") ||
	       !strcmp(r->op, "sync");
}

/* Real syncs of any kind (of ino, or of anything for sync/syncfs) made by
 * process pid between from and by. */
static int syncs_by_between(const struct run *run, long pid, unsigned long long ino, unsigned long long from,
			    unsigned long long by)
{
	int n = 0;
	for (size_t i = 0; i < run->log.n; i++) {
		const struct h_rec *r = &run->log.r[i];
		if ((pid < 0 || r->pid == pid) && is_any_sync(r) && r->t0 >= from && r->t1 <= by &&
		    (of_file(run, r, ino) || !strcmp(r->op, "sync") || !strcmp(r->op, "syncfs")))
			n++;
	}
	return n;
}

/*
 * A fork child SIGKILLed with an acknowledged deferred sync pending: its
 * promise is still the domain's. The parent's next write to another file
 * reaches the kernel only after the child's file is durable (made so from
 * here: the child has no flusher any more), and the dead child's slot is
 * freed: the parent's writes after that sync nothing more.
 */
Test(order, a_killed_childs_acknowledged_sync_is_made_durable_before_the_parents_next_change)
{
	static const char *const script[] = { "&", "a:X", "s:X", "!:k", "^", "a:B", "a:B", "a:B", NULL };
	struct run run = domain_steps(NULL, NULL, script, NULL);
	unsigned long long x = ino_of(&run, "X");
	const struct h_rec *b = nth_write(&run, ino_of(&run, "B"), 0), *b3 = nth_write(&run, ino_of(&run, "B"), 2);
	cr_assert_geq(syncs_by_between(&run, b->pid, x, step_time(&run, 2, "t1"), b->t0), 1,
		      "the parent's write reached the kernel before the killed child's acknowledged file was durable:\n%s",
		      run.out);
	cr_assert_eq(syncs_by_between(&run, b->pid, x, b->t1, b3->t1), 0,
		     "the dead child's slot was not freed: the parent's later writes synced again");
}

/*
 * A second acknowledgement of a file already pending (PostgreSQL's WAL,
 * acknowledged, made durable by another process's wait, then acknowledged
 * again) is the domain's too: the next process's change after it waits
 * for that second one, not only the first.
 */
Test(order, a_second_acknowledgement_of_a_pending_file_orders_the_others_again)
{
	static const char *const script[] = { "a:W", "s:W",       /* the parent's first acknowledgement */
					      "&", "a:X", "!", "^", /* a child's change: W durable as of it */
					      "a:W", "s:W",       /* W acknowledged again (still pending) */
					      "&", "a:Y", "!", "^", /* another child's change must wait for that */
					      NULL };
	struct run run = domain_steps(NULL, NULL, script, NULL);
	unsigned long long w = ino_of(&run, "W");
	const struct h_rec *y = nth_write(&run, ino_of(&run, "Y"), 0);
	cr_assert_geq(syncs_by_between(&run, -1, w, step_time(&run, 7, "t0"), y->t0), 1,
		      "the second child's write reached the kernel before W's second acknowledged sync was real:\n%s",
		      run.out);
}

/*
 * A child that takes on other credentials leaves the domain before the
 * call: nothing it runs afterwards can reach the others' table (a child
 * that stayed could lock the shared mutex and hang its root parent). The
 * test program looks at its own mappings: the domain's shared one is gone
 * from the child after setuid, where it was before.
 */
Test(order, a_child_that_takes_on_other_credentials_leaves_the_domain)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to change uid");
	char *dir = data_dir();
	char *ini = h_path("cred.ini");
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\n",
				dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_args(&c, h_prog("domain_creds"), dir, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "domain_creds");
	cr_assert(h_has(r.out, "before: shared=1"), "the domain's table was not found before setuid:\n%s", r.out);
	cr_assert(h_has(r.out, "after: shared=0"), "the child could still reach the domain's table after setuid:\n%s",
		  r.out);
	cr_assert(h_has(r.out, "parent: acked ok"), "the parent's sync after the child left failed:\n%s", r.out);
}

/*
 * A member stopped while it holds the domain's lock (a signal, a
 * debugger, a frozen cgroup): the others wait a bounded time, then go on
 * with their own order (their syncs made durable first), never hang. The
 * child is held at a test point with the lock taken; the parent's next
 * acknowledged sync needs the lock; the parent lets the child go only
 * after that sync returned, so with an unbounded wait it could not.
 */
Test(order, a_stopped_member_holding_the_domains_lock_costs_a_bounded_wait)
{
	char *hold = h_path("hold");
	const char *env[] = { "SYNCSHIM_TEST_HOLD_AT=domain_in_child", h_fmt("SYNCSHIM_TEST_HOLD_FILE=%s", hold), NULL };
	const char *script[] = { "&", "a:X", "s:X", "!", /* the child: held with the lock */
				 h_fmt("=:%s.reached", hold), "a:B", "s:B", h_fmt("+:%s", hold), "^", NULL };
	struct h_result r;
	struct run run = domain_steps(NULL, env, script, &r);
	long long parent_sync_end = (long long)step_time(&run, 6, "t1"), released = (long long)step_time(&run, 7, "t0");
	cr_assert_lt(parent_sync_end, released);
	cr_assert(h_has(run.out, "step 2 s X"), "the child's sync never ended:\n%s", run.out);
	cr_assert_lt((long long)step_time(&run, 6, "t1") - (long long)step_time(&run, 6, "t0"), 5000000000ll,
		     "the parent's sync waited for the stopped child's lock (the hold's own bound ended it)");
	cr_assert(h_has(r.err, "held its lock too long"), "the parent did not say it left the domain:\n%s", r.err);
}

/*
 * A child killed with more pending files than the table has slots: its
 * overflow is given back with it. The parent's writes after it make one
 * sync() for the dead child's files, not one per write.
 */
Test(order, a_killed_child_with_more_pending_files_than_slots_is_released)
{
	static const char *const script[] = { "&", "N:K:1100", "!:k", "^", NULL };
	const char *more[64];
	int n = 0;
	for (int i = 0; i < (int)(sizeof(script) / sizeof(script[0])) - 1; i++)
		more[n++] = script[i];
	for (int i = 0; i < 40; i++)
		more[n++] = "a:B";
	more[n] = NULL;
	/* K.* keep no cross-file order, so none waits for the others: all
	 * 1,100 stay pending, more than the table's slots. */
	char *dir = data_dir();
	const char *ini = h_fmt("[shim]\npolicy = passthrough\n[rule many]\npath = %s/K.*\nsync = defer\norder = file\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n[rule data]\npath = %s/*\n"
				"sync = defer\nmax_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
				dir, dir);
	struct run run = domain_steps(ini, NULL, more, NULL);
	cr_assert(h_has(run.out, "N K") && h_has(run.out, "ret=1100"), "the child did not make its files:\n%s", run.out);
	const struct h_rec *b1 = nth_write(&run, ino_of(&run, "B"), 1), *b40 = nth_write(&run, ino_of(&run, "B"), 39);
	int later = 0;
	for (size_t i = 0; i < run.log.n; i++) {
		const struct h_rec *r = &run.log.r[i];
		if (r->pid == b1->pid && !strcmp(r->op, "sync") && r->t0 >= b1->t0 && r->t1 <= b40->t1)
			later++;
	}
	cr_assert_eq(later, 0, "%d sync() calls among the parent's later writes: the dead child's overflow lingers",
		     later);
}

/*
 * msync(MS_SYNC) under defer is an acknowledged sync like fsync: its real
 * sync comes within the window, not at exit.
 */
Test(order, msync_under_defer_is_made_real_within_the_window)
{
	char *dir = data_dir();
	const char *ini = h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 100\n",
				dir);
	static const char *const script[] = { "n:M:0:Q", "w:1500", "a:Z", NULL };
	struct run run = domain_steps(ini, NULL, script, NULL);
	unsigned long long m = ino_of(&run, "M");
	cr_assert_geq(syncs_by_between(&run, -1, m, step_time(&run, 0, "t1"), step_time(&run, 2, "t0")), 1,
		      "msync's deferred sync was not made within the window:\n%s", run.out);
}

/*
 * A log line per commit to the standard output the process inherited,
 * redirected to a regular file (a service's own log): it keeps no order
 * across files by default (order = auto), so it waits for no
 * acknowledged sync and is not held for one. The journal's real sync
 * comes only at the exit here (its window is 10 s): every log line reaches
 * the kernel before it. A rule that says order = domain for the log makes
 * it wait again (the control).
 */
static struct run log_line_run_from(const char *log_rule, const char *first)
{
	char *dir = data_dir();
	char *log = h_path("service.log");
	char *ini = h_path(h_fmt("log.%d.ini", h_ctx.seq + 1));
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n%s[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\n",
				log_rule ? h_fmt(log_rule, log) : "", dir));
	char *cmd = h_fmt("exec '%s' '%s' %s a:J s:J 1:commit-1 a:J s:J 1:commit-2 >'%s'", h_prog("ord_steps"), dir,
			  first, log);
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_args(&c, "/bin/sh", "-c", cmd, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps > log");
	cr_assert(h_has(h_read_file(log), "commit-2"), "the log lines are not in the log");
	return (struct run){ h_log_load(&c), r.err, dir };
}

static struct run log_line_run(const char *log_rule)
{
	return log_line_run_from(log_rule, "");
}

static const struct h_rec *write_of(const struct run *run, unsigned long long ino, int nth)
{
	for (size_t i = 0; i < run->log.n; i++)
		if (of_file(run, &run->log.r[i], ino) && is_write(&run->log.r[i]) && nth-- == 0)
			return &run->log.r[i];
	cr_assert_fail("write #%d of inode %llu not in the log", nth, ino);
	return NULL;
}

Test(order, a_log_line_to_the_inherited_stdout_waits_for_no_sync)
{
	struct run run = log_line_run(NULL);
	unsigned long long j = ino_of(&run, "J"), log = h_ino(h_path("service.log"));
	const struct h_rec *line2 = write_of(&run, log, 1);
	cr_assert_eq(syncs_before(&run, j, line2->t1), 0,
		     "a log line waited for the journal's acknowledged sync (a real sync of J before it returned)");

	struct run ordered = log_line_run("[rule log]\npath = %s\norder = domain\n");
	unsigned long long j2 = ino_of(&ordered, "J"), log2 = h_ino(h_path("service.log"));
	cr_assert_gt(syncs_before(&ordered, j2, write_of(&ordered, log2, 1)->t1), 0,
		     "control: a log under order = domain did not wait");
}

/*
 * The same with the main thread gone before the first call that looks at
 * the descriptors the process inherited (ord_steps' T: the steps run in a
 * thread after the main one called pthread_exit). The inherited standard
 * output is still found and still the service's log: no wait by default,
 * a wait under order = domain. When the shim listed them from the
 * leader's /proc/self/fd, which is gone by then, it found none, and the
 * log's lines went to the kernel unseen: unordered under order = domain.
 */
Test(order, descriptors_inherited_by_a_process_whose_main_thread_exited_are_seen)
{
	struct run run = log_line_run_from(NULL, "T");
	unsigned long long j = ino_of(&run, "J"), log = h_ino(h_path("service.log"));
	cr_assert_eq(syncs_before(&run, j, write_of(&run, log, 1)->t1), 0,
		     "a log line waited for the journal's acknowledged sync after the main thread exited");

	struct run ordered = log_line_run_from("[rule log]\npath = %s\norder = domain\n", "T");
	unsigned long long j2 = ino_of(&ordered, "J"), log2 = h_ino(h_path("service.log"));
	cr_assert_gt(syncs_before(&ordered, j2, write_of(&ordered, log2, 1)->t1), 0,
		     "a log under order = domain did not wait: its inherited descriptor went unseen");
}

/* Stores through a shared mapping are not ordered (a stated limit): a run
 * whose mapped file is synced while another file's acknowledged sync is
 * not durable says so, once. */
Test(order, an_unordered_path_is_said_once)
{
	static const char *const script[] = { "n:M:4096:P", "a:A", "s:A", "n:M:0:Q", "n:M:4096:R", NULL };
	struct h_result r;
	domain_steps(NULL, NULL, script, &r);
	const char *line = "stores through shared mappings are not ordered";
	cr_assert(h_has(r.err, line), "not said:\n%s", r.err);
	cr_assert(!h_has(strstr(r.err, line) + 1, line), "said more than once:\n%s", r.err);
}
