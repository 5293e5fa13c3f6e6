/*
 * test_sched.c - the flusher threads' schedule (shim/defer/workers.c) costs a
 * logarithm per file, not a scan of every file the threads hold.
 *
 * Counted, not timed: the shim counts its schedule steps (heap links and
 * cuts, files looked at) and, with SYNCSHIM_TEST_SCHED_STEPS=FILE, writes
 * the count at exit. A schedule that scans a list of n files for every
 * file it syncs takes about n*n/2 steps for n files owed at once; a heap
 * about n*log2(n). The real syncs are checked from outside too: the
 * recording layer beneath the shim must see every file synced, on the
 * flusher threads, before the program exits.
 *
 *   SYNCSHIM_BUILD=$PWD/build build/tests/test_sched --verbose
 */
#include <sys/resource.h>

#include "harness.h"
#include "logread.h"

TestSuite(sched, .init = h_setup, .fini = h_teardown, .timeout = 120);

/* 2,000 files, fewer if the hard descriptor limit is lower. */
static int sched_files(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2100)
		return rl.rlim_max > 200 ? (int)rl.rlim_max - 100 : 100;
	return 2000;
}

static unsigned long long field_of(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	cr_assert_not_null(p, "no %s in \"%s\"", key, text);
	return strtoull(p + strlen(key), NULL, 10);
}

/*
 * 2,000 files, each written and fsynced once, all owed at once under
 * defer (max_delay_ms = 300: the tight fsync loop takes a few ms). Every
 * file gets its real sync from a flusher thread; the schedule's steps stay
 * within 4 * n * ceil(log2 n) (88,000 here; a scanned list takes about
 * 2,000,000).
 */
Test(sched, steps_grow_as_n_log_n)
{
	const int SCHED_FILES = sched_files();
	char *dir = h_path("d");
	cr_assert_eq(mkdir(dir, 0755), 0);
	char *ini = h_path("sched.ini");
	h_write_file(ini, h_fmt("[rule many]\npath = %s/**\nsync = defer\nmax_delay_ms = 300\n"
				"max_calls = 1000000000\nmax_bytes = 1024G\n",
				dir));
	char *steps = h_path("steps.txt");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_TEST_SCHED_STEPS=%s", steps);
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync");
	h_args(&c, h_prog("sched_many"), "-d", dir, "-L", c.reclog, NULL);
	h_argf(&c, "-n%d", SCHED_FILES);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sched_many under defer");

	/* From outside: each file synced once, by a flusher thread, none by
	 * the app's own thread (the exit barrier would be on it). */
	struct h_log log = h_log_load(&c);
	long pid = -1;
	size_t flusher_syncs = 0;
	for (size_t i = 0; i < log.n; i++) {
		const struct h_rec *rec = &log.r[i];
		if (strcmp(rec->op, "fsync") && strcmp(rec->op, "fdatasync"))
			continue;
		pid = rec->pid;
		if (rec->tid != rec->pid && rec->ret == 0)
			flusher_syncs++;
	}
	cr_assert_gt(pid, 0, "no real sync recorded");
	cr_assert_geq(flusher_syncs, SCHED_FILES, "%zu real syncs on flusher threads, want %d", flusher_syncs,
		      SCHED_FILES);

	char *counts = h_read_file(steps);
	unsigned long long n = field_of(counts, "sched_steps="), filed = field_of(counts, "filed=");
	unsigned log2n = 0;
	while ((1 << log2n) < SCHED_FILES)
		log2n++;
	unsigned long long bound = 4ull * SCHED_FILES * log2n;
	cr_log_info("sched: %llu steps for %d files (%llu filings); bound %llu", n, SCHED_FILES, filed, bound);
	cr_assert_geq(filed, SCHED_FILES, "the threads filed %llu files, want every one of %d", filed, SCHED_FILES);
	cr_assert_leq(n, bound, "the schedule took %llu steps for %d files: more than 4 n log2 n = %llu (a scan per file?)",
		      n, SCHED_FILES, bound);
}

/*
 * 3,000 files written, fsynced and closed in turn under defer (max_delay_ms
 * = 2000: none is due while the loop runs): the shim may keep a private
 * descriptor for a closed file whose sync is owed, but only a bounded
 * number of them (1,024, or a quarter of the descriptor limit), syncing
 * early past that. Counted from outside: the descriptors the process holds
 * after the loop, and every file's real sync beneath the shim.
 */
Test(sched, closed_files_hold_a_bounded_number_of_descriptors)
{
	char *dir = h_path("c");
	cr_assert_eq(mkdir(dir, 0755), 0);
	char *ini = h_path("closed.ini");
	h_write_file(ini, h_fmt("[rule many]\npath = %s/**\nsync = defer\nmax_delay_ms = 2000\n"
				"max_calls = 1000000000\nmax_bytes = 1024G\n",
				dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync");
	h_args(&c, h_prog("sched_many"), "-c", "-d", dir, "-L", c.reclog, "-n3000", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sched_many -c under defer");
	unsigned long long fds = field_of(r.out, "fds=");
	cr_log_info("closed: %llu descriptors held after closing 3000 files", fds);
	cr_assert_leq(fds, 1024 + 16, "%llu descriptors held after 3,000 files were closed: unbounded private dups?",
		      fds);
	cr_assert_geq(field_of(r.out, "real_syncs="), 3000, "%s", r.out);
}

/*
 * The bound itself, reached. Under the default order every file's change
 * waits for the other files' acknowledged syncs, so a program moving from
 * file to file makes each closed file's sync at once and the shim never
 * holds more than a few private descriptors (the test above holds 5-7).
 * With `order = file` nothing waits: each closed file keeps its
 * descriptor until its window ends. 300 files written, fsynced and closed
 * in turn with the soft descriptor limit at 256 (the bound: a quarter,
 * 64) and every real sync 10 ms slower (the recording layer's
 * RECLAYER_SLOW), so the early syncs past half the bound cannot keep up:
 * the descriptors the process holds, counted in /proc/self/fd after every
 * close, must reach half the bound (the path is taken) and never pass it
 * (the closer makes the sync itself there). Without the bound they climb
 * to the descriptor limit.
 */
Test(sched, closed_files_reach_and_keep_the_private_descriptor_bound)
{
	char *dir = h_path("b");
	cr_assert_eq(mkdir(dir, 0755), 0);
	char *ini = h_path("bound.ini");
	h_write_file(ini, h_fmt("[rule many]\npath = %s/**\nsync = defer\norder = file\nmax_delay_ms = 1000\n"
				"max_calls = 1000000000\nmax_bytes = 1024G\n",
				dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync");
	h_env(&c, "RECLAYER_SLOW=0:10");
	h_args(&c, h_prog("sched_many"), "-c", "-d", dir, "-L", c.reclog, "-n300", "-l256", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sched_many -c -l256 under defer, order = file");
	long long start = (long long)field_of(r.out, "fds_start="), most = (long long)field_of(r.out, "fds_max=");
	const long long bound = 256 / 4;
	cr_log_info("bound: %lld descriptors at the start, at most %lld while closing 300 files (bound %lld)", start,
		    most, bound);
	cr_assert_geq(most - start, bound / 2,
		      "only %lld private descriptors held at once: the test no longer reaches the bound", most - start);
	cr_assert_leq(most - start, bound + 1,
		      "%lld descriptors held beyond the %lld the program started with: past the bound of %lld", most - start,
		      start, bound);
	cr_assert_geq(field_of(r.out, "real_syncs="), 300, "%s", r.out);
}
