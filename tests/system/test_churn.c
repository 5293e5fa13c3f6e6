/*
 * test_churn.c - the shim's memory follows the files it knows at once, not
 * the files it has ever seen (it once kept ~4 KiB per file ever seen:
 * 372 MB after 100,000).
 *
 * A service churning through files (log rotation, temp files, segments)
 * must not grow without bound. tests/progs/churn creates, writes, fsyncs
 * and closes 4*N distinct files in turn, unlinking every other one, under
 * a defer rule (live counters on, which add a per-file block) and under
 * passthrough. Measured two ways: the process's RSS after N files and
 * after 4N, from the program itself (growth over the last 3N files must
 * stay under 256 bytes a file: it was ~3.6 KiB with live counters, ~630
 * bytes without), and the shim's count of file objects ever allocated
 * (SYNCSHIM_TEST_FILE_OBJECTS), which must stay far below the files seen.
 * Counted, not timed.
 *
 *   SYNCSHIM_BUILD=$PWD/build build/tests/test_churn --verbose
 */
#include "harness.h"

TestSuite(churn, .init = h_setup, .fini = h_teardown, .timeout = 180);

#define CHURN_N 2000

static long long field_of(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	cr_assert_not_null(p, "no %s in \"%s\"", key, text);
	return strtoll(p + strlen(key), NULL, 10);
}

static void churn_under(const char *policy)
{
	/* On tmpfs where there is one: the real syncs cost nothing there, and
	 * what is measured is the shim's bookkeeping, not the disk. */
	char shm[] = "/dev/shm/syncshim-churn.XXXXXX";
	char *dir = mkdtemp(shm);
	if (!dir) {
		dir = h_path("d");
		cr_assert_eq(mkdir(dir, 0755), 0);
	}
	char *live = h_path("live");
	cr_assert_eq(mkdir(live, 0700), 0);
	char *ini = h_path("churn.ini");
	h_write_file(ini, h_fmt("[shim]\nlive = on\n[rule churn]\npath = %s/**\nsync = %s\nmax_delay_ms = 100\n",
				dir, policy));
	char *objects = h_path("objects.txt");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", live);
	h_envf(&c, "SYNCSHIM_TEST_FILE_OBJECTS=%s", objects);
	h_args(&c, h_prog("churn"), "-d", dir, NULL);
	h_argf(&c, "-n%d", CHURN_N);
	struct h_result r = h_run(&c);
	h_assert_ok(r, h_fmt("churn under %s", policy));

	long long at_n = field_of(r.out, "rss_n_kb="), at_4n = field_of(r.out, "rss_4n_kb=");
	long long grown_bytes = (at_4n - at_n) * 1024;
	char *counts = h_read_file(objects);
	long long allocated = field_of(counts, "file_objects=");
	cr_log_info("churn %s: RSS %lld KiB after %d files, %lld KiB after %d (%lld bytes a file); %lld file objects",
		    policy, at_n, CHURN_N, at_4n, 4 * CHURN_N, grown_bytes / (3 * CHURN_N), allocated);
	if (dir == shm) {
		char *rm = h_fmt("rm -rf '%s'", shm);
		cr_assert_eq(system(rm), 0);
	}
	cr_assert_lt(grown_bytes, 256ll * 3 * CHURN_N,
		     "%s: RSS grew %lld KiB over %d more distinct files (%lld bytes a file): per-file state kept "
		     "for files with no descriptor and nothing owed",
		     policy, at_4n - at_n, 3 * CHURN_N, grown_bytes / (3 * CHURN_N));
	cr_assert_lt(allocated, 256, "%s: %lld file objects allocated for %d files, at most a few known at once",
		     policy, allocated, 4 * CHURN_N);
}

Test(churn, defer_memory_follows_files_known_not_files_seen)
{
	churn_under("defer");
}

Test(churn, passthrough_memory_follows_files_known_not_files_seen)
{
	churn_under("passthrough");
}

/*
 * tests/progs/ghosts with ARGS (after -d DIR) on tmpfs (inode numbers not
 * reused there, which would drop a ghost anyway), under a defer rule for
 * DIR with the [shim] lines SHIM and max_delay_ms DELAY, every sync of
 * *.bad failing beneath the shim; HOLD, if not NULL, the test hold's file
 * for the flusher's look at a last descriptor. The shim's file objects at
 * exit (SYNCSHIM_TEST_FILE_OBJECTS) into *counts.
 */
static struct h_result run_ghosts(const char *shim, int delay, const char *hold, char **counts, const char *arg1,
				  const char *arg2)
{
	char shm[] = "/dev/shm/syncshim-ghosts.XXXXXX";
	char *dir = mkdtemp(shm);
	if (!dir) {
		dir = h_path("g");
		cr_assert_eq(mkdir(dir, 0755), 0);
	}
	char *ini = h_path("ghosts.ini");
	h_write_file(ini, h_fmt("[shim]\n%s[rule g]\npath = %s/**\nsync = defer\nmax_delay_ms = %d\n", shim, dir, delay));
	char *objects = h_path("objects.txt");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_TEST_FILE_OBJECTS=%s", objects);
	h_env(&c, "RECLAYER_FAIL=sync:EIO");
	h_env(&c, "RECLAYER_FAIL_SUFFIX=.bad");
	if (hold) {
		h_env(&c, "SYNCSHIM_TEST_HOLD_AT=last_descriptor");
		h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
	}
	h_args(&c, h_prog("ghosts"), "-d", dir, arg1, arg2, NULL);
	struct h_result r = h_run(&c);
	if (dir == shm) {
		char *rm = h_fmt("rm -rf '%s'", shm);
		cr_assert_eq(system(rm), 0);
	}
	*counts = h_read_file(objects);
	cr_assert_not_null(*counts, "no file objects reported at exit: %s", r.err);
	return r;
}

/*
 * Closed files whose deferred sync failed and that are then unlinked (temp
 * files, old segments): no one can open them again, so their errors (said
 * on stderr, each, and counted for the exit status) must not be kept for a
 * next opener, nor take the places (256) kept for files that can be
 * reopened: before, 300 of them left 256 ghosts and the next file's error
 * could find no place. At exit the shim holds no ghost of a temp file,
 * every failure was said on stderr, the file that stays still gets its
 * error at its rename, and with unreported_errors = exit the status is 74.
 */
Test(churn, unlinked_files_keep_no_error_for_a_next_opener)
{
	char *counts;
	struct h_result r = run_ghosts("unreported_errors = exit\n", 5000, NULL, &counts, "-n300", NULL);
	long long ghosts = field_of(counts, "ghosts=");
	int said = 0;
	for (const char *p = r.err; (p = strstr(p, "deferred sync of ")); p++)
		said++;
	cr_log_info("ghosts: %s; %s; %d failures said on stderr", r.out, counts, said);
	cr_assert_leq(ghosts, 1, "%lld ghosts kept at exit: errors of unlinked files kept for a next opener", ghosts);
	cr_assert_geq(said, 300, "only %d failed syncs said on stderr (300 temp files): an error lost", said);
	cr_assert_not_null(strstr(r.out, "rename=-1 errno=5"), "the kept file's failure did not reach its rename: %s",
			   r.out);
	cr_assert_eq(r.code, 74, "exit status %d, want 74 (unreported_errors = exit)", r.code);
}

/*
 * The same ghost, one unlink at the worst moment: the flusher's deferred
 * sync of a closed file fails, and it looks at its private descriptor's
 * link count (still 1) before closing it; the app's unlink lands right
 * then (the shim's test hold keeps the flusher there), finds the file
 * still held and marks it gone; the flusher's late note of "still
 * linked" must not undo that, or a ghost nobody can open is kept (once
 * under load in the test above: 2 ghosts).
 */
Test(churn, an_unlink_during_the_last_descriptors_look_leaves_no_ghost)
{
	char *counts, *hold = h_path("hold");
	struct h_result r = run_ghosts("", 20, hold, &counts, "-H", hold);
	cr_assert(h_has(r.err, "deferred sync of "), "the failure was not said on stderr: %s", r.err);
	cr_assert(h_has(r.out, "reached=1 unlink=0"), "the flusher never reached its look, or the unlink failed: %s%s",
		  r.out, r.err);
	cr_assert_eq(field_of(counts, "ghosts="), 0, "a ghost of the unlinked file kept at exit: %s", counts);
}
