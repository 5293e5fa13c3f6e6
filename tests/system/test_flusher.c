/*
 * test_flusher.c - the per-file flusher (policies defer and group, the
 * ordering barriers, sticky errors, live reload) verified from outside:
 * programs in tests/progs/fl_*.c run under the shim with the recording
 * layer (tests/lib/reclayer.so) BENEATH it, so the log holds exactly the
 * calls the shim really made, with CLOCK_MONOTONIC entry/return times that
 * compare directly with the times the programs print. Nothing here reads
 * the shim's own counters or log.
 *
 * "Real sync" below means a reclayer record of op fsync or fdatasync on
 * the file's inode. Every test fails if its feature is missing: either a
 * control run (passthrough, or the knob left out) shows the difference,
 * or the setup leaves nothing but the feature to produce what is checked
 * (max_delay_ms = 10 s, so only a barrier can sync in time). This was
 * checked by running the suite against shims with each feature broken.
 *
 * Suites: defer (deadline, max_calls, max_bytes, osync=defer,
 * writeback_bytes), group (shared durable syncs, real_sync), barrier
 * (rename, close async/sync, exec, fork, sync/syncfs, exit paths), errors
 * (sticky errseq reporting, injected with RECLAYER_FAIL), reload (live
 * edits, broken edits), stress (threads + forks + reloads under a hard
 * timeout).
 *
 * Run one test with
 *   SYNCSHIM_BUILD=$PWD/build build/tests/test_flusher --filter 'defer/deadline*' --verbose
 * and keep its temp directory (/tmp/syncshim-fl.PID.XXXXXX) with
 * SYNCSHIM_TEST_KEEP=1.
 */
#include "harness.h"
#include "logread.h"
#include "policy.h"

#define MS 1000000ull /* ns */

/* ---- setup ----------------------------------------------------------------- */

/* h_setup, but the temp directory carries the test process's pid. */
static void fl_setup(void)
{
	h_setup();
	rmdir(h_ctx.dir);
	snprintf(h_ctx.dir, sizeof(h_ctx.dir), "/tmp/syncshim-fl.%d.XXXXXX", (int)getpid());
	cr_assert_not_null(mkdtemp(h_ctx.dir), "mkdtemp: %s", strerror(errno));
}

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* Replace the ini file in one step (write aside, rename over), so the
 * shim's watcher never reads half an edit. Returns its path. */
static char *fl_ini_write(const char *name, const char *text)
{
	char *path = h_path(name), *tmp = h_fmt("%s.new", path);
	h_write_file(tmp, text);
	cr_assert_eq(rename(tmp, path), 0, "rename %s: %s", tmp, strerror(errno));
	return path;
}

/* The usual config: passthrough by default, one rule for glob with extra
 * knobs (lines "key = value\n"). */
static char *fl_ini_rule(const char *name, const char *glob, const char *sync, const char *knobs)
{
	return fl_ini_write(name, h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = %s\n%s", glob,
					sync, knobs ? knobs : ""));
}

/* A command with the shim (+ recording layer) reading config ini. */
static void fl_cmd(struct h_cmd *c, unsigned layers, const char *ini)
{
	h_cmd_init(c, layers);
	if (ini)
		h_envf(c, "SYNCSHIM_CONFIG=%s", ini);
}

/* ---- programs' output -------------------------------------------------------- */

/* The value of " key=" (or "key=" at the start) on the first line of text
 * that starts with prefix. The test fails if it is missing. */
static unsigned long long fl_val(const char *text, const char *prefix, const char *key)
{
	size_t pl = strlen(prefix), kl = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (!strncmp(line, prefix, pl)) {
			for (const char *p = line; p + kl < end; p++)
				if ((p == line || p[-1] == ' ') && !strncmp(p, key, kl) && p[kl] == '=')
					return strtoull(p + kl + 1, NULL, 10);
		}
		line = *end ? end + 1 : NULL;
	}
	cr_assert_fail("no %s= on a line starting \"%s\" in:\n%s", key, prefix, text);
	return 0;
}

/* ---- the recording layer's log ------------------------------------------------ */

static bool is_real_sync(const struct h_rec *r, unsigned long long ino)
{
	return r->ino == ino && (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync"));
}

struct syncs {
	const struct h_rec **r;
	size_t n;
};

static int by_t0(const void *a, const void *b)
{
	const struct h_rec *x = *(const struct h_rec *const *)a, *y = *(const struct h_rec *const *)b;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* The real syncs of ino (pid 0: any process), by start time. */
static struct syncs real_syncs(const struct h_log *log, unsigned long long ino, long pid)
{
	struct syncs s = { calloc(log->n + 1, sizeof(*s.r)), 0 };
	cr_assert_not_null(s.r);
	for (size_t i = 0; i < log->n; i++)
		if (is_real_sync(&log->r[i], ino) && (!pid || log->r[i].pid == pid))
			s.r[s.n++] = &log->r[i];
	qsort(s.r, s.n, sizeof(*s.r), by_t0);
	return s;
}

/* Records of op on ino made by thread tid of process pid (tid 0: any). */
static int count_by(const struct h_log *log, const char *op, unsigned long long ino, long pid, long tid)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (!strcmp(r->op, op) && r->ino == ino && r->pid == pid && (!tid || r->tid == tid))
			n++;
	}
	return n;
}

/* Latest return time of a write-family record on ino (0 if none). */
static unsigned long long last_write_t1(const struct h_log *log, unsigned long long ino)
{
	unsigned long long t = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (r->ino == ino && r->ret > 0 &&
		    (!strcmp(r->op, "write") || !strcmp(r->op, "pwrite") || !strcmp(r->op, "writev") ||
		     !strcmp(r->op, "pwritev")) && r->t1 > t)
			t = r->t1;
	}
	return t;
}

/* A successful real sync of ino that started at or after t (so it covers
 * everything written before t), or NULL. */
static const struct h_rec *sync_started_after(const struct syncs *s, unsigned long long t)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->r[i]->t0 >= t && s->r[i]->ret == 0)
			return s->r[i];
	return NULL;
}

static void log_syncs(const char *what, const struct syncs *s)
{
	for (size_t i = 0; i < s->n && i < 40; i++)
		cr_log_info("%s: real %s pid=%ld tid=%ld fd=%ld t0=%llu t1=%llu ret=%lld errno=%d", what, s->r[i]->op,
			    s->r[i]->pid, s->r[i]->tid, s->r[i]->fd, s->r[i]->t0, s->r[i]->t1, s->r[i]->ret,
			    s->r[i]->err);
}

/* ======================================================================== */
/* 1, 2, 8, 9: defer on one thread                                          */
/* ======================================================================== */
TestSuite(defer, .init = fl_setup, .fini = h_teardown, .timeout = 60);

#define DEFER_N 1000
#define DEFER_DELAY_MS 50
/* A flusher thread is woken at the deadline. How late it then starts is
 * judged against when it could run, not against the clock: the process's
 * threads' waits for a CPU (fl_loop's run_delay, from schedstat) are
 * allowed on top, and this for the rest of the way (the timer's wake-up,
 * a page fault, a statx): no guess at the machine's load. */
#define WAKE_SLACK_MS 20

/* When the flusher could start the sync due at due: then, or once a real
 * sync of the file still running then had ended (one at a time). */
static unsigned long long could_start(const struct syncs *s, unsigned long long due)
{
	unsigned long long could = due;
	for (size_t i = 0; i < s->n; i++)
		if (s->r[i]->t0 < due && s->r[i]->t1 > could)
			could = s->r[i]->t1;
	return could;
}

/*
 * 1000 x (4 KiB write + fsync) under defer, max_delay_ms=50. The program
 * then does nothing for 4 x max_delay (room for the deadline to fire
 * before exit, so the exit drain has nothing left) and exits.
 */
Test(defer, deadline_batches_syncs_on_flusher_thread)
{
	char *file = h_path("d.dat");
	char *ini = fl_ini_rule("shim.ini", h_path("*.dat"), "defer",
				h_fmt("max_delay_ms = %d\nmax_calls = 1000000\nmax_bytes = 1G\n", DEFER_DELAY_MS));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-m", "fsync", "-s", "4096", NULL);
	h_argf(&c, "-n%d", DEFER_N);
	h_argf(&c, "-w%d", 4 * DEFER_DELAY_MS);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_loop under defer");
	cr_assert(h_check_pattern(file, DEFER_N * 4096LL), "defer: data in %s wrong", file);
	long pid = (long)fl_val(r.out, "fl_loop:", "pid");
	unsigned long long last_call = fl_val(r.out, "fl_loop:", "last_sync_t0");
	cr_assert_eq(fl_val(r.out, "fl_loop:", "syncs"), DEFER_N);

	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("defer", &s);
	cr_assert_gt(s.n, 0, "defer: no real sync reached libc at all");
	cr_assert_lt(s.n, DEFER_N / 10, "defer: %zu real syncs for %d fsync calls: not batched", s.n, DEFER_N);
	/* The exit drain (after the program's end, on its main thread) is the
	 * barrier's: only a flusher that could not run in the idle leaves it
	 * anything, which the bound below judges. */
	unsigned long long end_t = fl_val(r.out, "fl_loop:", "end_t"), delayed = fl_val(r.out, "fl_loop:", "run_delay");
	for (size_t i = 0; i < s.n; i++) {
		cr_assert(s.r[i]->tid != pid || s.r[i]->t0 > end_t,
			  "defer: a real %s ran on the app's main thread (tid %ld) before its end", s.r[i]->op, pid);
		cr_assert_eq(s.r[i]->ret, 0, "defer: real %s failed: errno %d", s.r[i]->op, s.r[i]->err);
	}
	/* the last request is made durable within max_delay_ms of when the
	 * flusher could start it, plus the time its threads waited for a CPU */
	const struct h_rec *after = sync_started_after(&s, last_call);
	cr_assert_not_null(after, "defer: no real sync started after the last fsync call (t=%llu)", last_call);
	unsigned long long could = could_start(&s, last_call + DEFER_DELAY_MS * MS);
	cr_assert_leq(after->t0, could + WAKE_SLACK_MS * MS + delayed,
		      "defer: first real sync after the last fsync call started %.1f ms later (max_delay_ms=%d; "
		      "it could start %.1f ms after the call; the process waited %.1f ms for a CPU; slack %d ms)",
		      (after->t0 - last_call) / 1e6, DEFER_DELAY_MS, (could - last_call) / 1e6, delayed / 1e6,
		      WAKE_SLACK_MS);
	cr_log_info("defer: %zu real syncs for %d calls; last request synced %.1f ms after the call", s.n, DEFER_N,
		    (after->t0 - last_call) / 1e6);
	/* every byte is covered */
	unsigned long long lw = last_write_t1(&log, ino);
	cr_assert_gt(lw, 0, "defer: no write recorded");
	cr_assert_not_null(sync_started_after(&s, lw), "defer: the last write (t1=%llu) is covered by no real sync", lw);

	/* the same program under passthrough: every fsync reaches libc from the app */
	struct h_cmd p;
	fl_cmd(&p, H_SHIM_REC, NULL);
	h_env(&p, "SYNCSHIM_POLICY=passthrough");
	char *pfile = h_path("p.dat");
	h_args(&p, h_prog("fl_loop"), "-f", pfile, "-m", "fsync", "-s", "4096", NULL);
	h_argf(&p, "-n%d", DEFER_N);
	struct h_result pr = h_run(&p);
	h_assert_ok(pr, "fl_loop under passthrough");
	long ppid = (long)fl_val(pr.out, "fl_loop:", "pid");
	struct h_log plog = h_log_load(&p);
	unsigned long long pino = h_ino(pfile);
	cr_assert_eq(count_by(&plog, "fsync", pino, ppid, ppid), DEFER_N, "passthrough: want %d fsyncs from the app",
		     DEFER_N);
	cr_assert_eq(real_syncs(&plog, pino, 0).n, DEFER_N, "passthrough: want exactly the app's syncs");
}

/* Flusher-thread (not main thread) real syncs of ino in process pid that
 * started before t. */
static int flusher_syncs_before(const struct h_log *log, unsigned long long ino, long pid, unsigned long long t)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (is_real_sync(r, ino) && r->pid == pid && r->tid != pid && r->t0 < t && r->ret == 0)
			n++;
	}
	return n;
}

/* One defer run of fl_loop with knobs; returns the flusher-thread syncs
 * that started while the program was still in its loop. */
static int threshold_run(const char *name, const char *knobs, const char *n, const char *every, const char *pause,
			 int *total)
{
	char *file = h_path(h_fmt("%s.dat", name));
	char *ini = fl_ini_rule(h_fmt("%s.ini", name), file, "defer", knobs);
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-m", "fsync", "-s", "4096", "-n", n, "-e", every, "-p", pause,
	       NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, name);
	cr_assert(h_check_pattern(file, atol(n) * 4096LL), "%s: data wrong", name);
	long pid = (long)fl_val(r.out, "fl_loop:", "pid");
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	struct syncs s = real_syncs(&log, ino, 0);
	*total = (int)s.n;
	/* the exit drain covers the rest */
	cr_assert_not_null(sync_started_after(&s, last_write_t1(&log, ino)), "%s: last write not covered", name);
	int during = flusher_syncs_before(&log, ino, pid, fl_val(r.out, "fl_loop:", "loop_end"));
	cr_log_info("%s: %d flusher syncs during the loop, %zu real syncs in all", name, during, s.n);
	return during;
}

/*
 * max_calls=10, max_delay_ms=60000 (never reached), 100 fsyncs paced 2 ms
 * apart: the count alone must drive about 10 real syncs. With max_calls
 * left huge the same run gets none until exit.
 */
Test(defer, max_calls_drives_syncs)
{
	int total = 0;
	int during = threshold_run("calls", "max_delay_ms = 60000\nmax_calls = 10\nmax_bytes = 1G\n", "100", "1", "2000",
				   &total);
	cr_assert_geq(during, 5, "max_calls=10: only %d real syncs during 100 fsync calls (want about 10)", during);
	cr_assert_leq(total, 25, "max_calls=10: %d real syncs for 100 calls (want about 10)", total);
	int base = threshold_run("calls-off", "max_delay_ms = 60000\nmax_calls = 1000000\nmax_bytes = 1G\n", "100", "1",
				 "2000", &total);
	cr_assert_eq(base, 0, "control (max_calls huge): %d syncs during the loop", base);
}

/*
 * max_bytes=64K, max_delay_ms=60000: 400 x 4 KiB writes with an fsync only
 * every 10th (40 KiB per request): the dirty bytes must drive the syncs
 * (about one per 64 KiB). With max_bytes=1G the same run gets none until
 * exit.
 */
Test(defer, max_bytes_drives_syncs)
{
	int total = 0;
	/* Paced slower under a sanitizer: its flusher's every step is slower,
	 * and a sync still running when the next 64 KiB is written covers both
	 * (make asan on a loaded machine: 4 syncs during the loop at 500 us). */
	const char *pause = h_ctx.asan ? "2000" : "500";
	int during = threshold_run("bytes", "max_delay_ms = 60000\nmax_calls = 1000000\nmax_bytes = 64K\n", "400",
				   "10", pause, &total);
	cr_assert_geq(during, 8, "max_bytes=64K: only %d real syncs while writing 1600 KiB (want about 25)", during);
	int base = threshold_run("bytes-off", "max_delay_ms = 60000\nmax_calls = 1000000\nmax_bytes = 1G\n", "400", "10",
				 pause, &total);
	cr_assert_eq(base, 0, "control (max_bytes=1G): %d syncs during the loop", base);
}

static bool is_open_of(const struct h_rec *r, const void *path)
{
	return !strcmp(r->op, "open") && r->path && !strcmp(r->path, (const char *)path) && r->ret >= 0;
}

static const struct h_rec *find_open(const struct h_log *log, const char *path)
{
	for (size_t i = 0; i < log->n; i++)
		if (is_open_of(&log->r[i], path))
			return &log->r[i];
	return NULL;
}

/*
 * osync=defer: an O_DSYNC open under defer reaches the kernel without
 * O_DSYNC, each write becomes a deferred request, and far fewer real syncs
 * than writes cover all the data. Control: under passthrough the open
 * keeps O_DSYNC.
 */
Test(defer, osync_defer_strips_odsync)
{
	const int n = 500;
	char *file = h_path("o.dat");
	char *ini = fl_ini_rule("shim.ini", file, "defer", "osync = defer\nmax_delay_ms = 50\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-m", "none", "-O", "-s", "4096", "-w", "200", NULL);
	h_argf(&c, "-n%d", n);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_loop -O under defer, osync=defer");
	cr_assert(h_check_pattern(file, n * 4096LL));
	struct h_log log = h_log_load(&c);
	const struct h_rec *op = find_open(&log, file);
	cr_assert_not_null(op, "no open of %s recorded", file);
	cr_assert(op->has_flags && !(op->flags & O_DSYNC), "osync=defer: open reached libc with flags 0x%llx (O_DSYNC)",
		  op->flags);
	unsigned long long ino = h_ino(file);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("osync=defer", &s);
	cr_assert_gt(s.n, 0, "osync=defer: no real sync at all");
	cr_assert_lt(s.n, (size_t)n / 5, "osync=defer: %zu real syncs for %d O_DSYNC writes", s.n, n);
	cr_assert_not_null(sync_started_after(&s, last_write_t1(&log, ino)), "osync=defer: last write not covered");

	struct h_cmd p;
	fl_cmd(&p, H_SHIM_REC, NULL);
	h_env(&p, "SYNCSHIM_POLICY=passthrough");
	char *pfile = h_path("op.dat");
	h_args(&p, h_prog("fl_loop"), "-f", pfile, "-m", "none", "-O", "-s", "4096", "-n", "20", NULL);
	struct h_result pr = h_run(&p);
	h_assert_ok(pr, "fl_loop -O under passthrough");
	struct h_log plog = h_log_load(&p);
	const struct h_rec *pop = find_open(&plog, pfile);
	cr_assert(pop && (pop->flags & O_DSYNC), "passthrough: open lost O_DSYNC");
}

static bool is_sfr_write(const struct h_rec *r, unsigned long long ino, long pid)
{
	return !strcmp(r->op, "sync_file_range") && r->ino == ino && r->pid == pid && r->tid != pid &&
	       (r->flags & SYNC_FILE_RANGE_WRITE) && r->ret == 0;
}

/* writeback_bytes=64K: 1 MiB of writes and no sync call at all; the
 * flusher starts writeback (sync_file_range WRITE) while the app writes.
 * Without the key, none. */
Test(defer, writeback_bytes_starts_early_writeback)
{
	for (int k = 0; k < 2; k++) {
		char *file = h_path(h_fmt("w%d.dat", k));
		char *ini = fl_ini_rule(h_fmt("w%d.ini", k), file, "defer",
					h_fmt("max_delay_ms = 60000\nmax_bytes = 1G\n%s", k ? "" : "writeback_bytes = 64K\n"));
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("fl_loop"), "-f", file, "-m", "none", "-s", "4096", "-n", "256", "-p", "500", "-w",
		       "300", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "fl_loop writes only");
		cr_assert(h_check_pattern(file, 256 * 4096LL));
		long pid = (long)fl_val(r.out, "fl_loop:", "pid");
		struct h_log log = h_log_load(&c);
		unsigned long long ino = h_ino(file);
		int n = 0;
		unsigned long long first = 0;
		for (size_t i = 0; i < log.n; i++)
			if (is_sfr_write(&log.r[i], ino, pid)) {
				n++;
				if (!first || log.r[i].t0 < first)
					first = log.r[i].t0;
			}
		int any = h_count(&log, "sync_file_range", ino);
		cr_log_info("writeback_bytes %s: %d sync_file_range(WRITE) from flusher threads", k ? "unset" : "64K", n);
		if (k == 0) {
			cr_assert_geq(n, 1, "writeback_bytes=64K: no sync_file_range(WRITE) from a flusher thread");
			cr_assert_lt(first, last_write_t1(&log, ino),
				     "writeback_bytes=64K: writeback started only after the last write");
		} else {
			cr_assert_eq(any, 0, "no writeback_bytes: %d sync_file_range calls", any);
		}
	}
}

/* ======================================================================== */
/* 3: group commit                                                          */
/* ======================================================================== */
TestSuite(group, .init = fl_setup, .fini = h_teardown, .timeout = 60);

#define G_THREADS 8
#define G_COUNT 100

struct call_iv {
	unsigned long long t0, t1;
};

static size_t load_calls(const char *path, struct call_iv **out)
{
	char *text = h_read_file(path);
	size_t cap = 1024, n = 0;
	struct call_iv *v = malloc(cap * sizeof(*v));
	cr_assert_not_null(v);
	for (char *line = text; *line;) {
		unsigned long long a, b;
		long tid;
		if (sscanf(line, "%llu %llu %ld", &a, &b, &tid) == 3) {
			if (n == cap)
				v = realloc(v, (cap *= 2) * sizeof(*v));
			v[n++] = (struct call_iv){ a, b };
		}
		char *nl = strchr(line, '\n');
		if (!nl)
			break;
		line = nl + 1;
	}
	*out = v;
	return n;
}

/* Runs fl_group; returns the number of calls whose interval contains no
 * whole successful real sync, and the real syncs in *s. */
static int group_run(const char *policy_or_ini, bool is_ini, const char *name, struct syncs *s, long *pid_out)
{
	char *file = h_path(h_fmt("%s.dat", name)), *times = h_path(h_fmt("%s.times", name));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, is_ini ? policy_or_ini : NULL);
	if (!is_ini)
		h_envf(&c, "SYNCSHIM_POLICY=%s", policy_or_ini);
	h_args(&c, h_prog("fl_group"), "-f", file, "-o", times, NULL);
	h_argf(&c, "-t%d", G_THREADS);
	h_argf(&c, "-n%d", G_COUNT);
	struct h_result r = h_run(&c);
	h_assert_ok(r, name);
	cr_assert(h_check_pattern(file, G_THREADS * G_COUNT * 4096LL), "%s: data wrong", name);
	*pid_out = (long)fl_val(r.out, "fl_group:", "pid");
	struct call_iv *calls;
	size_t n = load_calls(times, &calls);
	cr_assert_eq(n, G_THREADS * G_COUNT, "%s: %zu call times", name, n);
	struct h_log log = h_log_load(&c);
	*s = real_syncs(&log, h_ino(file), 0);
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		bool ok = false;
		for (size_t j = 0; j < s->n && s->r[j]->t0 <= calls[i].t1 && !ok; j++)
			ok = s->r[j]->t0 >= calls[i].t0 && s->r[j]->t1 <= calls[i].t1 && s->r[j]->ret == 0;
		if (!ok && bad++ < 5)
			cr_log_error("%s: call [%llu, %llu] contains no whole real sync", name, calls[i].t0, calls[i].t1);
	}
	return bad;
}

/*
 * 8 threads x 100 (write + fsync) on one file under group: each fsync call
 * returns only after a real sync that began after the call and completed
 * before it returned; concurrent callers share real syncs (< 800). Under
 * passthrough the same program makes all 800.
 */
Test(group, callers_share_durable_syncs)
{
	char *ini = fl_ini_rule("shim.ini", h_path("g.dat"), "group", NULL);
	struct syncs s;
	long pid;
	int bad = group_run(ini, true, "g", &s, &pid);
	cr_log_info("group: %zu real syncs for %d fsync calls", s.n, G_THREADS * G_COUNT);
	cr_assert_eq(bad, 0, "group: %d of %d fsync calls returned without a whole real sync inside the call", bad,
		     G_THREADS * G_COUNT);
	cr_assert_gt(s.n, 0);
	cr_assert_lt(s.n, G_THREADS * G_COUNT, "group: %zu real syncs for %d calls: nothing shared", s.n,
		     G_THREADS * G_COUNT);
	/* leader/follower: never two real syncs of the file at once */
	for (size_t j = 1; j < s.n; j++)
		cr_assert_geq(s.r[j]->t0, s.r[j - 1]->t1, "group: real syncs #%zu and #%zu overlap", j - 1, j);
	/* real_sync=auto: callers asked fsync, so the shared sync is an fsync */
	for (size_t j = 0; j < s.n; j++)
		cr_assert_str_eq(s.r[j]->op, "fsync", "group, real_sync=auto, fsync callers: real %s", s.r[j]->op);

	struct syncs ps;
	long ppid;
	int pbad = group_run("passthrough", false, "gp", &ps, &ppid);
	cr_assert_eq(pbad, 0);
	cr_assert_eq(ps.n, G_THREADS * G_COUNT, "passthrough: %zu real syncs, want %d", ps.n, G_THREADS * G_COUNT);
}

/* Ops of the real syncs of file in a run: counts of fsync and fdatasync,
 * and how many came from a thread other than the main one. */
static void real_ops(struct h_cmd *c, const char *file, int *fs, int *fds)
{
	struct h_log log = h_log_load(c);
	struct syncs s = real_syncs(&log, h_ino(file), 0);
	*fs = *fds = 0;
	for (size_t i = 0; i < s.n; i++)
		(*(strcmp(s.r[i]->op, "fsync") ? fds : fs))++;
}

/* real_sync: auto gives group what the callers asked (fdatasync callers:
 * fdatasync) and defer fdatasync; the knob forces either. */
Test(group, real_sync_choice)
{
	static const struct {
		const char *sync, *knob, *method;
		bool want_fsync;
	} t[] = {
		{ "group", "", "fdatasync", false },
		{ "group", "real_sync = fdatasync\n", "fsync", false },
		{ "defer", "real_sync = fsync\n", "fdatasync", true },
		{ "defer", "", "fsync", false },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *file = h_path(h_fmt("rs%zu.dat", i));
		char *ini = fl_ini_rule(h_fmt("rs%zu.ini", i), file, t[i].sync, h_fmt("max_delay_ms = 20\n%s", t[i].knob));
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		if (!strcmp(t[i].sync, "group"))
			h_args(&c, h_prog("fl_group"), "-f", file, "-o", h_path(h_fmt("rs%zu.times", i)), "-t", "4", "-n",
			       "20", "-m", t[i].method, NULL);
		else
			h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "20", "-w", "100", "-m", t[i].method, NULL);
		struct h_result r = h_run(&c);
		char *what = h_fmt("%s, %s callers, %s", t[i].sync, t[i].method, *t[i].knob ? t[i].knob : "real_sync auto");
		h_assert_ok(r, what);
		int fs, fds;
		real_ops(&c, file, &fs, &fds);
		cr_assert_gt(fs + fds, 0, "%s: no real sync", what);
		cr_assert_eq(t[i].want_fsync ? fds : fs, 0, "%s: want only real %s, got %d fsync, %d fdatasync", what,
			     t[i].want_fsync ? "fsync" : "fdatasync", fs, fds);
	}
}

/* ======================================================================== */
/* 4: barriers                                                              */
/* ======================================================================== */
TestSuite(barrier, .init = fl_setup, .fini = h_teardown, .timeout = 60);

#define B_SIZE 65536
/* max_delay_ms for barrier tests: nothing but the barrier (or exit) may
 * cause the real sync. */
#define B_LONG "max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n"

static const struct h_rec *find_rename_to(const struct h_log *log, const char *dst_base)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (!strcmp(r->op, "rename") && r->path2 && r->ret == 0) {
			const char *b = strrchr(r->path2, '/');
			if (!strcmp(b ? b + 1 : r->path2, dst_base))
				return r;
		}
	}
	return NULL;
}

/* write + fsync + rename (rename, renameat, renameat2): the source's
 * deferred sync completes before the rename starts. */
Test(barrier, rename_completes_pending_sync)
{
	char *ini = fl_ini_write("shim.ini",
				 h_fmt("[shim]\npolicy = passthrough\n[rule tmp]\npath = %s\nsync = defer\n%s"
				       "[rule dat]\npath = %s\nsync = defer\n%s",
				       h_path("*.tmp"), B_LONG, h_path("*.dat"), B_LONG));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	/* Ordered defer also holds a rename back until every acknowledged
	 * sync is durable (order.c): off, so this sees the barrier alone. */
	h_env(&c, "SYNCSHIM_TEST_NO_ORDER=1");
	h_args(&c, h_prog("fl_barrier"), "rename", "-d", h_ctx.dir, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_barrier rename");
	struct h_log log = h_log_load(&c);
	static const char *const calls[] = { "rename", "renameat", "renameat2" };
	for (int v = 0; v < 3; v++) {
		char *dst = h_path(h_fmt("%s.dat", calls[v]));
		cr_assert(h_check_pattern(dst, B_SIZE), "%s: data at the new name wrong", calls[v]);
		unsigned long long ino = h_ino(dst);
		const struct h_rec *rn = find_rename_to(&log, h_fmt("%s.dat", calls[v]));
		cr_assert_not_null(rn, "%s: no rename recorded", calls[v]);
		cr_assert_str_eq(rn->fn, calls[v]);
		struct syncs s = real_syncs(&log, ino, 0);
		log_syncs(calls[v], &s);
		const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
		cr_assert_not_null(cover, "%s: the data is covered by no real sync", calls[v]);
		cr_assert_leq(cover->t1, rn->t0,
			      "%s: the real sync covering the source ended %.3f ms after the rename started", calls[v],
			      ((double)cover->t1 - (double)rn->t0) / 1e6);
	}
}

/* The classic atomic replace: write FILE.tmp, fsync, close (on_close =
 * async: nothing synced yet), rename over FILE. The closed source's
 * pending sync still completes before the rename. */
Test(barrier, rename_after_close_completes_pending_sync)
{
	char *file = h_path("cl.dat");
	char *ini = fl_ini_write("shim.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s*\nsync = defer\n"
						   "on_close = async\n%s",
						   file, B_LONG));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_barrier"), "replace", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_barrier replace");
	cr_assert(h_has(r.out, "replace: fsync=0/0 close=0/0 rename=0/0"), "%s", r.out);
	cr_assert(h_check_pattern(file, B_SIZE), "the new contents are not in place");
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	const struct h_rec *rn = find_rename_to(&log, "cl.dat");
	cr_assert_not_null(rn);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("replace", &s);
	const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
	cr_assert_not_null(cover, "the new contents got no real sync");
	cr_assert_leq(cover->t1, rn->t0, "the closed source's sync ended %.3f ms after the rename started",
		      ((double)cover->t1 - (double)rn->t0) / 1e6);
}

static const struct h_rec *find_close(const struct h_log *log, unsigned long long ino, long pid, long fd)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (!strcmp(r->op, "close") && r->ino == ino && r->pid == pid && r->tid == pid && r->fd == fd)
			return r;
	}
	return NULL;
}

/* on_close=async: close returns at once; the flusher, on its own
 * descriptor, makes the data durable later (max_delay_ms=300, while the
 * program still runs). */
Test(barrier, close_async_flusher_completes_later)
{
	char *file = h_path("ca.dat");
	char *ini = fl_ini_rule("shim.ini", file, "defer", "on_close = async\nmax_delay_ms = 300\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_barrier"), "close", "-f", file, "-w", "1200", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_barrier close (async)");
	cr_assert(h_check_pattern(file, B_SIZE));
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	long fd = (long)fl_val(r.out, "close:", "fd");
	/* the app's pid: the process that opened the file */
	const struct h_rec *op = find_open(&log, file);
	cr_assert_not_null(op);
	long pid = op->pid;
	const struct h_rec *cl = find_close(&log, ino, pid, fd);
	cr_assert_not_null(cl, "no close of fd %ld recorded", fd);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("on_close=async", &s);
	cr_assert_gt(s.n, 0, "on_close=async: the data never got a real sync");
	cr_assert_geq(s.r[0]->t0, cl->t1, "on_close=async: a real sync started before close returned (close waited)");
	const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
	cr_assert_not_null(cover);
	cr_assert_neq(cover->tid, pid, "on_close=async: the sync ran on the main thread, not a flusher");
	cr_assert_neq(cover->fd, fd, "on_close=async: synced on the app's closed descriptor number");
	cr_assert_leq(cover->t1, fl_val(r.out, "close:", "end_t"),
		      "on_close=async: the real sync came only at exit, not from the flusher");
}

/* on_close=sync: close waits; the real sync ends before the real close. */
Test(barrier, close_sync_waits)
{
	char *file = h_path("cs.dat");
	char *ini = fl_ini_rule("shim.ini", file, "defer", h_fmt("on_close = sync\n%s", B_LONG));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_barrier"), "close", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_barrier close (sync)");
	cr_assert(h_check_pattern(file, B_SIZE));
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	long fd = (long)fl_val(r.out, "close:", "fd");
	const struct h_rec *op = find_open(&log, file);
	cr_assert_not_null(op);
	const struct h_rec *cl = find_close(&log, ino, op->pid, fd);
	cr_assert_not_null(cl, "no close of fd %ld recorded", fd);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("on_close=sync", &s);
	const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
	cr_assert_not_null(cover, "on_close=sync: the data got no real sync");
	cr_assert_leq(cover->t1, cl->t0, "on_close=sync: the real sync ended %.3f ms after close started",
		      ((double)cover->t1 - (double)cl->t0) / 1e6);
	cr_assert_leq(cover->t1, fl_val(r.out, "close:", "close_t1"));
}

/* write + fsync, then exec (every entry point): the real sync completes
 * before the new image starts. */
Test(barrier, exec_completes_pending_sync)
{
	static const char *const calls[] = { "execve", "execv", "execl", "execle",
					     "execvp", "execlp", "execvpe", "fexecve" };
	for (size_t v = 0; v < sizeof(calls) / sizeof(calls[0]); v++) {
		char *file = h_path(h_fmt("x.%s.dat", calls[v]));
		char *ini = fl_ini_rule(h_fmt("x.%s.ini", calls[v]), file, "defer", B_LONG);
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("fl_barrier"), "exec", "-f", file, "-x", calls[v], NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, calls[v]);
		cr_assert(h_has(r.out, "stamp:"), "%s: the new image did not run:\n%s", calls[v], r.out);
		cr_assert(h_check_pattern(file, B_SIZE));
		unsigned long long exec_t0 = fl_val(r.out, "exec:", "exec_t0");
		unsigned long long start = fl_val(r.out, "stamp:", "t");
		struct h_log log = h_log_load(&c);
		unsigned long long ino = h_ino(file);
		struct syncs s = real_syncs(&log, ino, 0);
		log_syncs(calls[v], &s);
		const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
		cr_assert_not_null(cover, "%s: the data got no real sync", calls[v]);
		cr_assert_geq(cover->t0, exec_t0, "%s: synced before exec was called (not by the barrier?)", calls[v]);
		cr_assert_lt(cover->t1, start, "%s: the real sync ended %.3f ms after the new image started", calls[v],
			     ((double)cover->t1 - (double)start) / 1e6);
	}
}

/*
 * fork with a pending sync: the parent's pending syncs are still done by
 * the parent (p.dat: max_delay 10 s, so at its exit), the child gets a
 * working flusher of its own (c.dat: max_delay 100 ms, the child idles
 * 400 ms, so its own flusher thread syncs it) and exits normally.
 */
Test(barrier, fork_parent_and_child_keep_their_syncs)
{
	h_skip_forks_from_threads_under_a_sanitizer(); /* make asan: the child hung so */
	for (int k = 0; k < 2; k++) {
		char *pf = h_path(h_fmt("p%d.dat", k)), *cf = h_path(h_fmt("c%d.dat", k));
		char *ini = fl_ini_write(h_fmt("f%d.ini", k),
					 h_fmt("[shim]\npolicy = passthrough\n[rule p]\npath = %s\nsync = defer\n%s"
					       "[rule c]\npath = %s\nsync = defer\nmax_delay_ms = 100\n",
					       pf, B_LONG, cf));
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		/* the child waits for its flusher thread (max_delay_ms 100): longer
		 * under a sanitizer, whose threads start slowly on a loaded machine */
		h_args(&c, h_prog("fl_barrier"), "fork", "-f", pf, "-g", cf, "-w", h_ctx.asan ? "1500" : "400", NULL);
		if (k)
			h_arg(&c, "-E");
		struct h_result r = h_run(&c);
		h_assert_ok(r, "fl_barrier fork");
		cr_assert_eq(fl_val(r.out, "parent:", "status"), 0);
		cr_assert(h_check_pattern(pf, 2 * B_SIZE), "parent's data wrong");
		cr_assert(h_check_pattern(cf, B_SIZE), "child's data wrong");
		long ppid = (long)fl_val(r.out, "parent:", "pid"), cpid = (long)fl_val(r.out, "child:", "pid");
		struct h_log log = h_log_load(&c);
		unsigned long long pino = h_ino(pf), cino = h_ino(cf);
		struct syncs ps = real_syncs(&log, pino, ppid), cs = real_syncs(&log, cino, cpid);
		log_syncs("fork parent", &ps);
		log_syncs("fork child", &cs);
		cr_assert_not_null(sync_started_after(&ps, last_write_t1(&log, pino)),
				   "fork: the parent's file is covered by no real sync of the parent");
		const struct h_rec *cc = sync_started_after(&cs, last_write_t1(&log, cino));
		cr_assert_not_null(cc, "fork: the child's file is covered by no real sync of the child");
		cr_assert_neq(cc->tid, cpid, "fork: the child's sync came from its exit, not its own flusher thread");
		cr_assert_leq(cc->t1, fl_val(r.out, "child:", "end_t"), "fork: the child's flusher did not sync in time");
	}
}

/*
 * A fork right after a close that left a deferred sync owed (the shim
 * keeps a private descriptor of the file until its sync lands, and a
 * flusher thread closes it then): the child must never inherit that
 * descriptor with no one left to close it. A fork between the flusher's
 * taking it off the file and its close did that in about one round in
 * ten. 400 rounds; the child
 * counts its own descriptors in /proc/self/fd (tests/progs/fork_privs).
 */
Test(barrier, fork_child_inherits_no_private_descriptor)
{
	char *dir = h_path("fp");
	cr_assert_eq(mkdir(dir, 0755), 0);
	char *ini = fl_ini_write("fp.ini", h_fmt("[rule p]\npath = %s/**\nsync = defer\nmax_delay_ms = auto\n", dir));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM, ini);
	h_args(&c, h_prog("fork_privs"), "-d", dir, "-n", "400", NULL);
	struct h_result r = h_run(&c);
	cr_log_info("%s", r.out);
	h_assert_ok(r, "fork_privs: a fork child held a descriptor the program never opened");
}

static const struct h_rec *find_op_by(const struct h_log *log, const char *op, long pid)
{
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->r[i].op, op) && log->r[i].pid == pid && log->r[i].tid == pid)
			return &log->r[i];
	return NULL;
}

/* sync() and syncfs() complete the pending deferred syncs before the
 * real call. */
Test(barrier, sync_and_syncfs_complete_pending_syncs)
{
	static const char *const calls[] = { "sync", "syncfs" };
	for (int v = 0; v < 2; v++) {
		char *file = h_path(h_fmt("s.%s.dat", calls[v]));
		char *ini = fl_ini_rule(h_fmt("s.%s.ini", calls[v]), file, "defer", B_LONG);
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("fl_barrier"), "syncall", "-f", file, "-x", calls[v], NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, calls[v]);
		cr_assert(h_check_pattern(file, B_SIZE));
		struct h_log log = h_log_load(&c);
		const struct h_rec *op = find_open(&log, file);
		cr_assert_not_null(op);
		const struct h_rec *call = find_op_by(&log, calls[v], op->pid);
		cr_assert_not_null(call, "%s: the real %s was not made", calls[v], calls[v]);
		unsigned long long ino = h_ino(file);
		struct syncs s = real_syncs(&log, ino, 0);
		log_syncs(calls[v], &s);
		const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
		cr_assert_not_null(cover, "%s: the data got no real sync", calls[v]);
		cr_assert_leq(cover->t1, call->t0, "%s: the deferred sync ended %.3f ms after the real %s started",
			      calls[v], ((double)cover->t1 - (double)call->t0) / 1e6, calls[v]);
		cr_assert_geq(cover->t0, fl_val(r.out, "syncall:", "call_t0"), "%s: synced before the call", calls[v]);
	}
}

/* Every way out of a process completes its pending deferred syncs
 * (max_delay_ms=10 s: only the exit can): returning from main, exit(),
 * and _exit()/_Exit(), which skip destructors but are interposed. */
Test(barrier, exit_paths_complete_pending_syncs)
{
	static const char *const how[] = { "return", "exit", "_exit", "_Exit" };
	for (int v = 0; v < 4; v++) {
		char *file = h_path(h_fmt("q.%s.dat", how[v]));
		char *ini = fl_ini_rule(h_fmt("q.%s.ini", how[v]), file, "defer", B_LONG);
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("fl_barrier"), "exit", "-f", file, "-x", how[v], NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, how[v]);
		cr_assert(h_check_pattern(file, B_SIZE));
		long pid = (long)fl_val(r.out, "exit:", "pid");
		struct h_log log = h_log_load(&c);
		unsigned long long ino = h_ino(file);
		struct syncs s = real_syncs(&log, ino, pid);
		log_syncs(how[v], &s);
		cr_assert_not_null(sync_started_after(&s, last_write_t1(&log, ino)),
				   "leaving by %s: the pending sync was never made", how[v]);
	}
}

/* A shared library whose destructor writes + fsyncs a file, as a library
 * closing its database or log from a static destructor does. Built by
 * the test (the Makefile builds no such library for us). */
static const char late_lib_src[] =
	"#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
	"__attribute__((destructor)) static void late(void)\n{\n"
	"\tconst char *p = getenv(\"FL_LATE_FILE\");\n"
	"\tint fd = p ? open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;\n"
	"\tif (fd < 0)\n\t\treturn;\n"
	"\tssize_t w = write(fd, \"000000000000000\\n\", 16);\n"
	"\tint r = fsync(fd);\n"
	"\tdprintf(1, \"late: write=%zd fsync=%d\\n\", w, r);\n"
	"\tclose(fd);\n}\n";

/*
 * Regression: a sync requested at normal exit after the shim's destructor
 * ran must still be made (the shim now stops deferring once it drains). Destructors run in
 * reverse initialisation order, and the shim (preloaded) is initialised
 * after the app's DT_NEEDED libraries (and after libraries preloaded
 * behind it), so their destructors run AFTER shim_fini() drained the
 * flusher. A fsync there under defer returns 0, is
 * queued, and the process ends with it pending (max_delay_ms = 10 s
 * here, but any delay loses it): the file is never synced. Reproducer
 * outside the suite: a libd.so with
 *   __attribute__((destructor)) void d(void) { fd = open(...); write; fsync(fd); }
 * linked into any program (gcc main.c -L. -ld), run under a defer rule:
 * the reclayer shows the open and write, no fsync/fdatasync. A fix could
 * flips the shim to "exiting", after which sync requests are made inline
 * (as passthrough). Control: under passthrough
 * the same destructor's fsync reaches libc.
 */
Test(barrier, sync_from_late_destructor_is_made)
{
	char *src = h_path("fl_late.c"), *so = h_path("libfl_late.so");
	h_write_file(src, late_lib_src);
	struct h_cmd cc;
	h_cmd_init(&cc, H_PLAIN);
	const char *compiler = getenv("CC");
	h_args(&cc, compiler && *compiler ? compiler : "cc", "-shared", "-fPIC", "-O1", "-o", so, src, NULL);
	struct h_result cr = h_run(&cc);
	if (cr.code != 0)
		cr_skip_test("cannot build the helper library: %s", cr.err);
	for (int k = 0; k < 2; k++) {
		char *file = h_path(h_fmt("late%d.dat", k));
		char *ini = fl_ini_rule(h_fmt("late%d.ini", k), file, k ? "defer" : "passthrough", B_LONG);
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		size_t n = strlen(c.preload);
		snprintf(c.preload + n, sizeof(c.preload) - n, ":%s", so); /* loaded before the shim is initialised */
		h_envf(&c, "FL_LATE_FILE=%s", file);
		h_args(&c, h_prog("fl_loop"), "-f", h_path(h_fmt("main%d.dat", k)), "-n", "1", "-m", "none", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "fl_loop + late destructor");
		cr_assert(h_has(r.out, "late: write=16 fsync=0"), "the library's destructor did not run:\n%s", r.out);
		cr_assert(h_check_pattern(file, 16));
		struct h_log log = h_log_load(&c);
		unsigned long long ino = h_ino(file);
		struct syncs s = real_syncs(&log, ino, 0);
		cr_expect_not_null(sync_started_after(&s, last_write_t1(&log, ino)),
				   "%s: the fsync a library destructor made at exit (returned 0) was never made",
				   k ? "defer" : "passthrough");
	}
}

/*
 * Regression: the shim must never close a descriptor that belongs to the
 * application (it once did, as described here; now a dup2 onto the
 * flusher's private number moves the dup away first, and the shim only
 * ever closes a number it still owns).
 * The flusher's private dup of a defer file takes the lowest free number
 * (PRIVATE_FD_MIN 3 in shim/defer/flusher.c), i.e. the number the app's next
 * open would have got without the shim. An app that puts a descriptor at
 * a number of its choosing, as shells do for "exec 4>file" (open, dup2 to
 * 4, close), silently replaces the private dup; fd_copy() rebinds the
 * slot, but f->fl.fd still says 4, and when the deferred file's last
 * reference goes, flusher_release_file() does REAL(close)(4): the app's
 * descriptor 4 is closed behind its back (EBADF on its next write).
 * Reproducer with bash (defer rule for A.dat only):
 *   bash -c 'exec 3>A.dat; exec 4>B.txt; exec 3>&-; echo hi >&4'
 *   -> "bash: 4: Bad file descriptor" (without the shim: fine).
 * With a pending sync (-S) the sync path notices (fd_is_file +
 * reopen_private) and the app's descriptor survives.
 */
Test(barrier, app_descriptor_numbers_are_the_apps)
{
	for (int k = 0; k < 2; k++) {
		char *a = h_path(h_fmt("a%d.dat", k)), *b = h_path(h_fmt("b%d.txt", k));
		char *ini = fl_ini_rule(h_fmt("n%d.ini", k), a, "defer", "max_delay_ms = 50\n");
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("fl_fdnum"), "-a", a, "-b", b, NULL);
		if (k)
			h_arg(&c, "-S");
		struct h_result r = h_run(&c);
		cr_expect(!r.timed_out && r.code == 0 && h_has(r.out, "fl_fdnum: ok"),
			  "%s: the app's descriptor did not stay its own:\n%s%s", k ? "with a pending sync" : "no sync",
			  r.out, r.err);
	}
}

/* ======================================================================== */
/* 5: sticky errors                                                         */
/* ======================================================================== */
TestSuite(flush_errors, .init = fl_setup, .fini = h_teardown, .timeout = 60);

/* The errseq sequence of fl_errors for a failed background sync. */
static void expect_sticky(const char *what, const char *out, const char *err, const char *sync)
{
	const char *want[] = {
		h_fmt("s1 %s(fd1) ret=0 errno=0\n", sync),
		h_fmt("s2 %s(fd1) ret=-1 errno=%s\n", sync, err),
		h_fmt("s3 %s(fd1) ret=0 errno=0\n", sync),
		h_fmt("s4 %s(fd3) ret=0 errno=0\n", sync),
		h_fmt("s5 close(fd2) ret=-1 errno=%s\n", err),
		h_fmt("s6 %s(fd1) ret=0 errno=0\n", sync),
		h_fmt("s7 %s(fd1) ret=0 errno=0\n", sync),
		"s8 close(fd3) ret=0 errno=0\n",
		"s9 close(fd1) ret=0 errno=0\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(h_has(out, want[i]), "%s: want \"%.*s\" in:\n%s", what, (int)strlen(want[i]) - 1, want[i],
			  out);
}

static void sticky_run(const char *errname, const char *settle, const char *knobs)
{
	char *file = h_path(h_fmt("e.%s.%s.dat", errname, settle));
	char *ini = fl_ini_rule(h_fmt("e.%s.%s.ini", errname, settle), file, "defer", knobs);
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_envf(&c, "RECLAYER_FAIL=fdatasync:%s:0:1", errname);
	h_args(&c, h_prog("fl_errors"), "-f", file, "-m", "fsync", NULL);
	if (!strcmp(settle, "flush"))
		h_arg(&c, "-F");
	else
		h_args(&c, "-w", "400", NULL);
	struct h_result r = h_run(&c);
	char *what = h_fmt("defer, injected %s, settle by %s", errname, settle);
	h_assert_ok(r, what);
	expect_sticky(what, r.out, errname, "fsync");
	cr_expect(h_check_pattern(file, 8192), "%s: data wrong", what);
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs(what, &s);
	cr_assert(s.n >= 1 && s.r[0]->injected, "%s: the first real sync was not the injected failure", what);
	cr_assert_not_null(sync_started_after(&s, last_write_t1(&log, ino)),
			   "%s: after the failure, the data got no successful real sync", what);
}

/* The failed deferred sync is reported once per descriptor open at the
 * time: by fd1's next fsync (then fd1 is clean again) and fd2's close;
 * fd3, opened after fd1 reported it, does not see it. Settled with
 * syncshim_flush(). */
Test(flush_errors, sticky_eio_enospc_edquot_after_flush)
{
	sticky_run("EIO", "flush", B_LONG);
	sticky_run("ENOSPC", "flush", B_LONG);
	sticky_run("EDQUOT", "flush", B_LONG);
}

/* The same when the flusher thread's deadline (max_delay_ms=50) made the
 * failing sync while the app did nothing for 400 ms. */
Test(flush_errors, sticky_eio_after_deadline)
{
	sticky_run("EIO", "wait", "max_delay_ms = 50\n");
}

/* Sanity: the injection works, and without deferral the app's own call
 * fails at once. Passthrough + fdatasync:EIO:0:1: the app's fdatasync
 * (the app must call fdatasync: the spec only fails fdatasync) returns
 * EIO directly. Group + sync:EIO:0:1: the caller waits for the shared
 * real sync, so it gets that sync's error itself. */
Test(flush_errors, direct_error_without_deferral)
{
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=passthrough");
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO:0:1");
	h_args(&c, h_prog("fl_errors"), "-f", h_path("ep.dat"), "-m", "fdatasync", "-F", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_errors under passthrough");
	cr_assert(h_has(r.out, "s1 fdatasync(fd1) ret=-1 errno=EIO\n"), "passthrough: want EIO at once:\n%s", r.out);

	char *gf = h_path("eg.dat");
	char *ini = fl_ini_rule("g.ini", gf, "group", NULL);
	struct h_cmd g;
	fl_cmd(&g, H_SHIM_REC, ini);
	h_env(&g, "RECLAYER_FAIL=sync:EIO:0:1");
	h_args(&g, h_prog("fl_errors"), "-f", gf, "-m", "fsync", "-F", NULL);
	struct h_result gr = h_run(&g);
	h_assert_ok(gr, "fl_errors under group");
	cr_assert(h_has(gr.out, "s1 fsync(fd1) ret=-1 errno=EIO\n"), "group: want the shared sync's EIO:\n%s", gr.out);
	cr_assert(h_has(gr.out, "s2 fsync(fd1) ret=0 errno=0\n"), "group: the error is reported once:\n%s", gr.out);
}

/*
 * Regression: a failed deferred sync must not be lost when the rename
 * barrier makes it (the rename now fails with the sync's errno). The classic atomic replace under
 * defer: write FILE.tmp, fsync (0: deferred), close (0: on_close=async,
 * nothing has failed yet), rename(FILE.tmp, FILE). The rename barrier
 * (flusher_before_rename -> flusher_drain, sticky) runs the real sync,
 * which fails (RECLAYER_FAIL=fdatasync:EIO:0:1), records the error as
 * sticky on the file, and the rename goes ahead and returns 0. No
 * descriptor of the file is left to report the error on, so no call of
 * the app ever returns it, and the old FILE has been replaced by data the
 * kernel failed to make durable: exactly what write+fsync+rename exists
 * to prevent. The only call left that can report it is the rename (EIO
 * is a documented rename(2) error); the barrier fails the rename with the
 * sync's errno and leaves FILE alone.
 */
Test(flush_errors, rename_barrier_failure_is_reported)
{
	char *file = h_path("rp.dat");
	/* Only FILE.tmp deferred: under ordered defer a deferred FILE would
	 * be synced first (FILE.tmp's writes wait for it), taking the one
	 * injected failure. */
	char *ini = fl_ini_write("shim.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s.tmp\nsync = defer\n%s",
						   file, B_LONG));
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO:0:1");
	h_args(&c, h_prog("fl_barrier"), "replace", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_barrier replace");
	struct h_log log = h_log_load(&c);
	int injected = 0;
	for (size_t i = 0; i < log.n; i++)
		injected += log.r[i].injected;
	cr_assert_eq(injected, 1, "the injected failure did not happen:\n%s", r.out);
	cr_assert(h_has(r.out, "replace: fsync=0/0 close=0/0 rename="), "%s", r.out);
	cr_expect(h_has(r.out, "rename=-1/EIO"),
		  "the failed sync of FILE.tmp was reported by no call (fsync, close, rename):\n%s", r.out);
	cr_expect(h_check_pattern(file, 4096), "FILE was replaced by data whose sync failed (size %lld)", h_size(file));
}

/*
 * The deferred sync fails after the app closed its only descriptor: the
 * next opener's fsync reports it once, as the kernel does for a write-back
 * error nobody has seen (the shim keeps the file known until then). The
 * control run without an injected failure shows 0 there.
 */
Test(flush_errors, failure_after_last_close_reaches_next_opener)
{
	for (int inject = 0; inject < 2; inject++) {
		char *file = h_path(h_fmt("ro%d.dat", inject));
		char *ini = fl_ini_rule(h_fmt("ro%d.ini", inject), file, "defer", B_LONG);
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		if (inject)
			h_env(&c, "RECLAYER_FAIL=fdatasync:EIO:0:1");
		h_args(&c, h_prog("fl_reopen"), "-f", file, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "fl_reopen");
		cr_assert(h_has(r.out, "s1 fsync ret=0 errno=0\n") && h_has(r.out, "s2 close ret=0 errno=0\n"),
			  "%s", r.out);
		if (inject)
			cr_assert(h_has(r.out, "s3 fsync(reopened) ret=-1 errno=EIO\n"),
				  "the failure nobody saw must reach the next opener:\n%s", r.out);
		else
			cr_assert(h_has(r.out, "s3 fsync(reopened) ret=0 errno=0\n"), "%s", r.out);
		cr_assert(h_has(r.out, "s4 fsync(reopened) ret=0 errno=0\n"), "reported once:\n%s", r.out);
	}
}

/*
 * A slow file (its device throttled: the recording layer delays its syncs
 * by 1.5 s) must not hold up another file's deferred sync: a second
 * flusher thread takes the fast file while the first is stuck. The control
 * run with max_flushers = 1 shows the fast file's sync queued behind the
 * slow one, so the test can tell the difference.
 */
Test(defer, slow_file_does_not_hold_up_another)
{
	for (int cap = 0; cap < 2; cap++) {
		char *slow = h_path(h_fmt("slow%d.dat", cap)), *fast = h_path(h_fmt("fast%d.dat", cap));
		h_write_file(slow, "");
		char *ini = fl_ini_write(h_fmt("two%d.ini", cap),
					 h_fmt("[shim]\npolicy = passthrough\nmax_flushers = %d\n"
					       "[rule r]\npath = %s/*.dat\nsync = defer\nmax_delay_ms = 20\n",
					       cap ? 1 : 16, h_ctx.dir));
		struct h_cmd c;
		fl_cmd(&c, H_SHIM_REC, ini);
		h_envf(&c, "RECLAYER_SLOW=%llu:1500", h_ino(slow));
		h_args(&c, h_prog("fl_two"), slow, fast, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "fl_two");
		struct h_log log = h_log_load(&c);
		struct syncs ss = real_syncs(&log, h_ino(slow), 0), sf = real_syncs(&log, h_ino(fast), 0);
		cr_assert_gt(ss.n, 0);
		cr_assert_gt(sf.n, 0);
		/* a flusher thread (not the main thread's final drain) synced the
		 * fast file while the slow file's sync was still running */
		bool overtook = false;
		for (size_t i = 0; i < sf.n; i++)
			overtook |= sf.r[i]->tid != sf.r[i]->pid && sf.r[i]->t1 < ss.r[0]->t1;
		if (cap == 0)
			cr_assert(overtook, "the fast file's deferred sync waited for the slow file's");
		else
			cr_assert_not(overtook, "with one flusher thread the fast file must queue (control)");
	}
}

/* ======================================================================== */
/* 6: live reload                                                           */
/* ======================================================================== */
TestSuite(reload, .init = fl_setup, .fini = h_teardown, .timeout = 60);

/* fl_loop writing + fsyncing r.dat until the stop file appears. */
static pid_t reload_start(struct h_cmd *c, const char *ini, const char *file, const char *stop)
{
	fl_cmd(c, H_SHIM_REC, ini);
	h_args(c, h_prog("fl_loop"), "-f", file, "-m", "fsync", "-s", "4096", "-n", "1000000", "-p", "2000", "-S", stop,
	       "-T", "15000", NULL);
	pid_t pid = h_spawn(c);
	/* until it has done some iterations (its data file grows) */
	double dl = h_now() + 10;
	while (h_size(file) < 20 * 4096 && h_now() < dl) {
		int st;
		cr_assert(!h_done(pid, &st), "fl_loop ended early (status 0x%x):\n%s", st, h_read_file(c->err_path));
		sleep_ms(10);
	}
	cr_assert_geq(h_size(file), 20 * 4096, "fl_loop made no progress");
	return pid;
}

static struct h_result reload_stop(struct h_cmd *c, pid_t pid, const char *stop)
{
	h_write_file(stop, "");
	struct h_result r = h_reap(c, pid, 20, false, 0);
	h_assert_ok(r, "fl_loop");
	return r;
}

/* App fsyncs (main thread) on ino with t0 in [a, b). */
static int app_fsyncs(const struct h_log *log, unsigned long long ino, long pid, unsigned long long a,
		      unsigned long long b)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (!strcmp(r->op, "fsync") && r->ino == ino && r->tid == pid && r->t0 >= a && r->t0 < b)
			n++;
	}
	return n;
}

static int flusher_syncs_in(const struct h_log *log, unsigned long long ino, long pid, unsigned long long a,
			    unsigned long long b)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if (is_real_sync(r, ino) && r->pid == pid && r->tid != pid && r->t0 >= a && r->t0 < b && r->ret == 0)
			n++;
	}
	return n;
}

static int writes_in(const struct h_log *log, unsigned long long ino, unsigned long long a, unsigned long long b)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->r[i].op, "write") && log->r[i].ino == ino && log->r[i].t0 >= a && log->r[i].t0 < b)
			n++;
	return n;
}

/* passthrough -> defer while the program runs: applied within 1 s. */
Test(reload, edit_applies_within_one_second)
{
	char *file = h_path("r.dat"), *stop = h_path("stop");
	char *ini = fl_ini_write("shim.ini", "[shim]\npolicy = passthrough\n");
	struct h_cmd c;
	pid_t pid = reload_start(&c, ini, file, stop);
	unsigned long long e0 = now_ns();
	fl_ini_rule("shim.ini", file, "defer", "max_delay_ms = 50\n");
	unsigned long long e1 = now_ns();
	sleep_ms(1500);
	struct h_result r = reload_stop(&c, pid, stop);
	cr_expect_str_empty(r.err, "stderr:\n%s", r.err);
	long iters = (long)fl_val(r.out, "fl_loop:", "iters");
	cr_assert(h_check_pattern(file, iters * 4096LL), "data wrong");
	long apid = (long)fl_val(r.out, "fl_loop:", "pid");
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file), end = ~0ull;
	int before = app_fsyncs(&log, ino, apid, 0, e0);
	int late = app_fsyncs(&log, ino, apid, e1 + 1000 * MS, end);
	int late_writes = writes_in(&log, ino, e1 + 1000 * MS, end);
	int flushes = flusher_syncs_in(&log, ino, apid, e0, end);
	cr_log_info("reload: %d app fsyncs before the edit, %d after edit+1s, %d writes after edit+1s, "
		    "%d flusher syncs after the edit",
		    before, late, late_writes, flushes);
	cr_assert_geq(before, 10, "before the edit (passthrough) the app's fsyncs should reach libc");
	cr_assert_geq(late_writes, 10, "the program stopped writing too early for the check to mean anything");
	cr_assert_eq(late, 0, "%d app fsyncs reached libc more than 1 s after the edit to defer", late);
	cr_assert_gt(flushes, 0, "after the edit no flusher sync at all");
}

/* The config as Kubernetes mounts a ConfigMap: shim.ini -> ..data/shim.ini,
 * and each update swaps the ..data symlink to a new directory. */
static void configmap_swap(const char *name, const char *text)
{
	char *dir = h_path(name), *tmp = h_path("..data.new");
	cr_assert_eq(mkdir(dir, 0755), 0);
	h_write_file(h_fmt("%s/shim.ini", dir), text);
	cr_assert_eq(symlink(name, tmp), 0);
	cr_assert_eq(rename(tmp, h_path("..data")), 0, "swap ..data: %s", strerror(errno));
}

/* Every swap is seen, not only the first: the path is watched as named,
 * with its symlinks followed at each look (defer -> passthrough -> defer). */
Test(reload, symlinked_config_swapped_twice)
{
	char *file = h_path("r.dat"), *stop = h_path("stop");
	char *deferred = h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = defer\n", file);
	configmap_swap("v1", deferred);
	cr_assert_eq(symlink("..data/shim.ini", h_path("shim.ini")), 0);
	struct h_cmd c;
	pid_t pid = reload_start(&c, h_path("shim.ini"), file, stop);
	unsigned long long s0 = now_ns();
	configmap_swap("v2", "[shim]\npolicy = passthrough\n");
	sleep_ms(1500);
	unsigned long long s1 = now_ns();
	configmap_swap("v3", deferred);
	sleep_ms(1500);
	struct h_result r = reload_stop(&c, pid, stop);
	cr_expect_str_empty(r.err, "stderr:\n%s", r.err);
	long apid = (long)fl_val(r.out, "fl_loop:", "pid");
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	int early = app_fsyncs(&log, ino, apid, 0, s0);
	int middle = app_fsyncs(&log, ino, apid, s0 + 1000 * MS, s1);
	int late = app_fsyncs(&log, ino, apid, s1 + 1000 * MS, ~0ull);
	cr_log_info("configmap: %d app fsyncs under v1 (defer), %d under v2 (passthrough), %d under v3 (defer)",
		    early, middle, late);
	cr_assert_eq(early, 0, "under v1 (defer) %d app fsyncs reached libc", early);
	cr_assert_geq(middle, 5, "the first swap (to passthrough) was not applied");
	cr_assert_eq(late, 0, "the second swap (back to defer) was not applied: %d app fsyncs", late);
}

/* An edit away from defer completes the pending deferred syncs at once
 * (max_delay_ms=60 s, the app idle after its last fsync: only the reload
 * can sync). */
Test(reload, edit_flushes_pending_syncs)
{
	char *file = h_path("r.dat"), *stop = h_path("stop");
	char *ini = fl_ini_rule("shim.ini", file, "defer", "max_delay_ms = 60000\nmax_calls = 1000000\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-m", "fsync", "-s", "4096", "-n", "5", "-S", stop, "-I", "-T", "15000",
	       NULL);
	pid_t pid = h_spawn(&c);
	/* the loop is done when it has written it all (+ a moment for its last fsync call) */
	double dl = h_now() + 10;
	while (h_size(file) < 5 * 4096 && h_now() < dl)
		sleep_ms(10);
	sleep_ms(100);
	unsigned long long e0 = now_ns();
	fl_ini_write("shim.ini", "[shim]\npolicy = passthrough\n");
	unsigned long long e1 = now_ns();
	sleep_ms(1500);
	unsigned long long s0 = now_ns();
	reload_stop(&c, pid, stop);
	cr_assert(h_check_pattern(file, 5 * 4096LL));
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("reload flush", &s);
	const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
	cr_assert_not_null(cover, "the pending sync was never made");
	cr_assert_geq(cover->t0, e0, "synced before the edit?");
	cr_assert_leq(cover->t1, e1 + 1000 * MS, "the pending sync was made %.0f ms after the edit (want < 1000)",
		      ((double)cover->t1 - (double)e1) / 1e6);
	cr_assert_lt(cover->t1, s0);
}

/* A broken edit: one stderr line, the old policy (defer) stays; the next
 * good edit (passthrough) still applies. */
Test(reload, broken_edit_keeps_policy)
{
	char *file = h_path("r.dat"), *stop = h_path("stop");
	char *ini = fl_ini_rule("shim.ini", file, "defer", "max_delay_ms = 50\n");
	struct h_cmd c;
	pid_t pid = reload_start(&c, ini, file, stop);
	fl_ini_write("shim.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = sometimes\n", file));
	unsigned long long b1 = now_ns();
	sleep_ms(1500);
	unsigned long long g0 = now_ns();
	fl_ini_write("shim.ini", "[shim]\npolicy = passthrough\n");
	unsigned long long g1 = now_ns();
	sleep_ms(1500);
	struct h_result r = reload_stop(&c, pid, stop);
	long iters = (long)fl_val(r.out, "fl_loop:", "iters");
	cr_assert(h_check_pattern(file, iters * 4096LL), "data wrong");
	cr_assert_eq(h_nlines(r.err), 1, "want exactly one stderr line for the broken edit:\n%s", r.err);
	cr_assert(!strncmp(r.err, "syncshim: ", 10) && h_has(r.err, "shim.ini"), "stderr:\n%s", r.err);
	long apid = (long)fl_val(r.out, "fl_loop:", "pid");
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	int early = app_fsyncs(&log, ino, apid, 0, g0);
	int kept = flusher_syncs_in(&log, ino, apid, b1 + 1000 * MS, g0);
	int late = app_fsyncs(&log, ino, apid, g1 + 1000 * MS, ~0ull);
	cr_log_info("broken edit: %d app fsyncs before the good edit, %d flusher syncs after broken edit+1s, "
		    "%d app fsyncs after good edit+1s",
		    early, kept, late);
	cr_assert_eq(early, 0, "%d app fsyncs reached libc under defer (the broken edit changed the policy?)", early);
	cr_assert_gt(kept, 0, "after the broken edit the flusher stopped syncing");
	cr_assert_geq(late, 5, "the good edit after the broken one was not applied (%d app fsyncs)", late);
}

/* ======================================================================== */
/* 7: stress                                                                */
/* ======================================================================== */
TestSuite(stress, .init = fl_setup, .fini = h_teardown, .timeout = 60);

#define S_RS 512
#define S_HARD_TIMEOUT_S 30

/*
 * 16 threads writing + fsync/fdatasync on 3 shared files and their own,
 * with tmp+rename, while the main thread forks a child every 50 ms
 * (children write + sync and exit() or _exit()), for 4 s; meanwhile the
 * ini file is rewritten every 100 ms cycling defer / group / passthrough
 * / fdatasync / noop (with on_close and writeback knobs varying). Killed
 * after 30 s: a deadlock. Every process must exit 0 and every file hold
 * exactly the records the program says it wrote.
 */
Test(stress, threads_forks_and_reloads)
{
	h_skip_forks_from_threads_under_a_sanitizer(); /* make asan: the child hung so */
	static const char *const pols[] = { "defer", "group", "passthrough", "fdatasync", "noop" };
	char *glob = h_path("*.dat");
	char *ini = fl_ini_rule("shim.ini", glob, "defer", "max_delay_ms = 20\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM, ini);
	/* Under a sanitizer, fewer forks: GCC 12's TSan and ASan runtimes do
	 * not hold their allocator's lock across fork, so a child forked while
	 * another thread is inside malloc can hang in the runtime's own code
	 * (TSan: once in 7 runs, the child's new thread blocked in TSan's
	 * allocator; ASan: once in ~20, the child's malloc blocked in
	 * SizeClassAllocator64; nothing of the shim's on either stack).
	 * fl_stress's children no longer call malloc for that reason. */
	h_args(&c, h_prog("fl_stress"), "-d", h_ctx.dir, "-t", "16", "-k", "3", "-T", "4000", "-c",
	       h_ctx.asan ? "400" : "50", NULL);
	h_argf(&c, "-s%d", S_RS);
	double t0 = h_now();
	pid_t pid = h_spawn(&c);
	int st = 0, k = 0;
	bool done = false;
	while (!(done = h_done(pid, &st)) && h_now() - t0 < S_HARD_TIMEOUT_S) {
		sleep_ms(100);
		k++;
		const char *p = pols[k % 5];
		fl_ini_rule("shim.ini", glob, p,
			    h_fmt("max_delay_ms = %d\non_close = %s\nwriteback_bytes = %s\nmax_calls = %d\n",
				  k % 2 ? 20 : 5, k % 3 ? "async" : "sync", k % 4 ? "0" : "64K", k % 7 ? 1000 : 8));
	}
	struct h_result r = h_reap(&c, pid, 1, done, st);
	cr_log_info("stress: %d config rewrites in %.1f s", k, h_now() - t0);
	cr_assert(!r.timed_out && done, "stress: still running after %d s: deadlock?\nstdout:\n%s\nstderr:\n%s",
		  S_HARD_TIMEOUT_S, r.out, r.err);
	h_assert_ok(r, "fl_stress");
	cr_assert(h_has(r.out, "fl_stress: ok"), "%s", r.out);
	cr_expect_str_empty(r.err, "stress: stderr:\n%s", r.err);
	for (int s = 0; s < 3; s++) {
		long n = (long)fl_val(r.out, h_fmt("shared %d ", s), "records");
		char *f = h_path(h_fmt("shared.%d.dat", s));
		cr_expect(n > 0 && h_check_pattern(f, n * S_RS), "stress: %s: want %ld records, size %lld", f, n,
			  h_size(f));
	}
	for (int t = 0; t < 16; t++) {
		long n = (long)fl_val(r.out, h_fmt("own %d ", t), "records");
		char *f = h_path(h_fmt("own.%d.dat", t));
		cr_expect(n > 0 && h_check_pattern(f, n * S_RS), "stress: %s: want %ld records, size %lld", f, n,
			  h_size(f));
		char *fin = h_path(h_fmt("final.%d.dat", t));
		cr_expect(h_check_pattern(fin, S_RS), "stress: %s wrong (size %lld)", fin, h_size(fin));
	}
	long kids = (long)fl_val(r.out, "children", "children");
	cr_expect_geq(kids, h_ctx.asan ? 5 : 20, "stress: only %ld children forked", kids);
	for (long i = 0; i < kids; i++) {
		char *f = h_path(h_fmt("child.%ld.dat", i));
		cr_expect(h_check_pattern(f, 8 * S_RS), "stress: %s wrong (size %lld)", f, h_size(f));
	}
}

/* ======================================================================== */
/* Pacing: max_delay_ms = auto, max_at_risk_ms, group_wait_us = auto        */
/* (the arithmetic itself is unit-tested in test_pace.c)                    */
/* ======================================================================== */
TestSuite(flush_pace, .init = fl_setup, .fini = h_teardown, .timeout = 60);

/* Wait (polling, bounded) until path exists. */
static bool appears(const char *path, double timeout_s)
{
	double dl = h_now() + timeout_s;
	while (access(path, F_OK) != 0) {
		if (h_now() > dl)
			return false;
		sleep_ms(5);
	}
	return true;
}

/* Real syncs of ino that ended before t (ns). */
static int syncs_before(const struct syncs *s, unsigned long long t)
{
	int n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->r[i]->t1 < t;
	return n;
}

/*
 * max_delay_ms = auto: one deferred fsync, then the app idles. The real
 * sync comes from a flusher thread while the app is still idling: no
 * window to wait out. (Read as a fixed window, or not at all, the sync
 * would come only from the exit drain, or from the app's own thread.)
 */
Test(flush_pace, auto_window_syncs_without_waiting_out_a_window)
{
	char *file = h_path("a.dat"), *stop = h_path("stop");
	char *ini = fl_ini_rule("shim.ini", file, "defer", "max_delay_ms = auto\nmax_calls = 1000000\nmax_bytes = 1G\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "1", "-S", stop, "-I", "-T", "20000", NULL);
	pid_t pid = h_spawn(&c);
	unsigned long long ino = 0;
	bool synced = false;
	for (double dl = h_now() + 15; !synced && h_now() < dl; sleep_ms(5)) {
		if (!ino && access(file, F_OK) == 0)
			ino = h_ino(file);
		if (ino) {
			struct h_log log = h_log_load(&c);
			synced = real_syncs(&log, ino, 0).n > 0;
		}
	}
	unsigned long long stopped = now_ns();
	struct h_result r = reload_stop(&c, pid, stop);
	cr_assert(synced, "auto window: no real sync while the app idled for 15 s");
	cr_assert(h_check_pattern(file, 4096));
	struct h_log log = h_log_load(&c);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("auto window", &s);
	const struct h_rec *cover = sync_started_after(&s, last_write_t1(&log, ino));
	cr_assert_not_null(cover, "auto window: no real sync began after the write");
	cr_assert_lt(cover->t1, stopped);
	cr_assert_neq(cover->tid, (long)fl_val(r.out, "fl_loop:", "pid"),
		      "auto window: the app's own thread synced: the fsync was not deferred");
}

/*
 * max_at_risk_ms = 50 under a 10-minute window: the first fsync is
 * deferred; the second, 150 ms later, finds acknowledged data older than
 * the ceiling and waits for a real sync, made on the app's own thread
 * before the call returns. The third is deferred again (what was at risk
 * is durable now), so while the app idles exactly one real sync exists.
 */
Test(flush_pace, at_risk_ceiling_makes_the_app_sync_wait)
{
	char *file = h_path("c.dat"), *stop = h_path("stop");
	char *ini = fl_ini_rule("shim.ini", file, "defer",
				"max_delay_ms = 600000\nmax_at_risk_ms = 50\nmax_calls = 1000000\nmax_bytes = 1G\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "3", "-p", "150000", "-S", stop, "-I", "-T", "20000",
	       NULL);
	pid_t pid = h_spawn(&c);
	cr_assert(appears(h_fmt("%s.idle", stop), 15), "fl_loop never reached its idle state");
	unsigned long long idle = now_ns();
	struct h_result r = reload_stop(&c, pid, stop);
	cr_assert(h_check_pattern(file, 3 * 4096));
	long app = (long)fl_val(r.out, "fl_loop:", "pid");
	struct h_log log = h_log_load(&c);
	unsigned long long ino = h_ino(file);
	struct syncs s = real_syncs(&log, ino, 0);
	log_syncs("ceiling", &s);
	cr_assert_eq(syncs_before(&s, idle), 1, "ceiling: %d real syncs before the app idled, want 1",
		     syncs_before(&s, idle));
	cr_assert_eq(s.r[0]->tid, app, "ceiling: the waiting sync ran on thread %ld, not the app's (%ld)",
		     s.r[0]->tid, app);
	cr_assert_eq(s.r[0]->ret, 0);
}

/* The sync the ceiling made the app wait for fails: the app gets EIO from
 * that very call (it was told nothing was deferred this time). */
Test(flush_pace, at_risk_ceiling_wait_reports_the_device_error)
{
	char *file = h_path("e.dat");
	char *ini = fl_ini_rule("shim.ini", file, "defer",
				"max_delay_ms = 600000\nmax_at_risk_ms = 50\nmax_calls = 1000000\nmax_bytes = 1G\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_env(&c, "RECLAYER_FAIL=sync:EIO");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "2", "-p", "150000", NULL);
	struct h_result r = h_run(&c);
	cr_assert_eq(r.code, 1, "ceiling + failing device: exit %d, want 1 (the fsync's EIO)\n%s", r.code, r.err);
	cr_assert(h_has(r.err, "fl_loop: fsync #2: Input/output error"), "stderr: %s", r.err);
}

/* group_wait_us = auto keeps group's promise: every fsync contains a
 * whole real sync that began after it, and callers still share syncs. */
Test(flush_pace, auto_linger_keeps_every_group_call_durable)
{
	char *ini = fl_ini_rule("shim.ini", h_path("ga.dat"), "group", "group_wait_us = auto\n");
	struct syncs s;
	long pid;
	int bad = group_run(ini, true, "ga", &s, &pid);
	cr_log_info("group, auto linger: %zu real syncs for %d fsync calls", s.n, G_THREADS * G_COUNT);
	cr_assert_eq(bad, 0, "auto linger: %d fsync calls returned without a whole real sync inside", bad);
	cr_assert_lt(s.n, G_THREADS * G_COUNT);
	for (size_t j = 1; j < s.n; j++)
		cr_assert_geq(s.r[j]->t0, s.r[j - 1]->t1, "auto linger: real syncs #%zu and #%zu overlap", j - 1, j);
}

/* ======================================================================== */
/* Data at risk (shim/defer/risk.c), as the log reports it, against what the     */
/* recording layer beneath the shim saw really happen                      */
/* ======================================================================== */
TestSuite(risk, .init = fl_setup, .fini = h_teardown, .timeout = 60);

struct risk_seen {
	bool any;
	uint64_t bytes, age_ns;  /* the worst of any second */
	bool unbounded;
};

/* The run's log, read back with the tools' own reader. */
static struct risk_seen risk_of_log(const char *path, const char *file)
{
	struct lr_log log;
	struct lr_error e;
	cr_assert_eq(lr_read_file(path, &log, &e), 0, "%s", e.msg);
	cr_assert_geq(log.minor, 1);
	struct lr_log *lp = &log;
	struct run r;
	run_build(&r, &lp, 1);
	struct risk_seen s = { 0 };
	for (size_t i = 0; i < r.nfiles; i++)
		if (!strcmp(r.files[i].path, file) && r.files[i].risk)
			s = (struct risk_seen){ true, r.files[i].risk_bytes, r.files[i].risk_age_ns,
						r.files[i].sync_policy == SYNC_NOOP };
	run_free(&r);
	lr_free(&log);
	return s;
}

static struct h_result risk_run(const char *ini, const char *file, const char *log, const char *n,
				 const char *pause_us, const char *wait_ms, struct h_cmd *c)
{
	fl_cmd(c, H_SHIM_REC, ini);
	h_envf(c, "SYNCSHIM_LOG=%s", log);
	h_args(c, h_prog("fl_loop"), "-f", file, "-n", n, "-p", pause_us, "-w", wait_ms, NULL);
	struct h_result r = h_run(c);
	h_assert_ok(r, "fl_loop");
	return r;
}

/* passthrough and group return from a sync only after a real one: the
 * log never has anything at risk. */
Test(risk, durable_policies_never_have_data_at_risk)
{
	static const char *const pols[] = { "passthrough", "group", "fdatasync" };
	for (int i = 0; i < 3; i++) {
		char *file = h_path(h_fmt("%s.dat", pols[i])), *log = h_path(h_fmt("%s.log", pols[i]));
		char *ini = fl_ini_rule(h_fmt("%s.ini", pols[i]), file, pols[i], NULL);
		struct h_cmd c;
		risk_run(ini, file, log, "300", "200", "1100", &c);
		struct risk_seen s = risk_of_log(log, file);
		cr_assert(!s.any, "%s: %llu bytes at risk, oldest %llu ns", pols[i], (unsigned long long)s.bytes,
			  (unsigned long long)s.age_ns);
	}
}

/*
 * defer, max_delay_ms = 50: 4 KiB write + fsync every ~500 us for about
 * 1.5 s. The worst age the log reports must match what the recording
 * layer saw: for each write (the fsync that acknowledges it follows at
 * once), the time until the first real sync begun after it completed.
 * Both stay within the window plus the real syncs (one still running at
 * the deadline, the one that covers it) and the time the process waited
 * for a CPU (when the flusher could run, not a guess at the load); the
 * worst bytes within what was written in that span.
 */
Test(risk, defer_stays_within_the_window_plus_one_sync)
{
	char *file = h_path("d.dat"), *log = h_path("d.log");
	char *ini = fl_ini_rule("shim.ini", file, "defer", "max_delay_ms = 50\nmax_calls = 1000000\nmax_bytes = 1G\n");
	struct h_cmd c;
	struct h_result r = risk_run(ini, file, log, "3000", "500", "0", &c);
	cr_assert(h_check_pattern(file, 3000 * 4096LL));
	struct risk_seen s = risk_of_log(log, file);
	cr_assert(s.any && s.bytes > 0 && s.age_ns > 0, "defer: nothing at risk in the log");

	struct h_log rl = h_log_load(&c);
	unsigned long long ino = h_ino(file), longest = 0;
	struct syncs sy = real_syncs(&rl, ino, 0);
	for (size_t j = 0; j < sy.n; j++)
		if (sy.r[j]->t1 - sy.r[j]->t0 > longest)
			longest = sy.r[j]->t1 - sy.r[j]->t0;
	unsigned long long truth = 0;
	size_t j = 0;
	for (size_t i = 0; i < rl.n; i++) {
		const struct h_rec *w = &rl.r[i];
		if (w->ino != ino || (strcmp(w->op, "write") && strcmp(w->op, "pwrite")))
			continue;
		while (j < sy.n && sy.r[j]->t0 < w->t1)
			j++;
		cr_assert_lt(j, sy.n, "a write at %llu was never covered by a real sync", w->t1);
		if (sy.r[j]->t1 - w->t1 > truth)
			truth = sy.r[j]->t1 - w->t1;
	}
	/* The window, a real sync still running at its deadline (the next one
	 * waits for it), the sync that covers it, and the time the process's
	 * threads waited for a CPU (when the flusher could run). */
	unsigned long long delayed = fl_val(r.out, "fl_loop:", "run_delay");
	unsigned long long bound = (DEFER_DELAY_MS + WAKE_SLACK_MS) * MS + 2 * longest + delayed;
	cr_log_info("defer: log says worst %.1f ms / %llu bytes at risk; recording layer: %.1f ms; longest real "
		    "sync %.1f ms; %zu real syncs",
		    s.age_ns / 1e6, (unsigned long long)s.bytes, truth / 1e6, longest / 1e6, sy.n);
	cr_assert_leq(s.age_ns, bound, "defer: %.1f ms at risk exceeds the window + one sync", s.age_ns / 1e6);
	cr_assert_leq(truth, bound);
	/* The shim stamps the acknowledgement a moment after the write returned
	 * and the completion a moment after the sync did: it may read a little
	 * late (a busy machine can stretch that moment), hardly ever early.
	 * Under a sanitizer the instrumented path between the write's return
	 * beneath the shim and the shim's stamp is longer (make tsan on a
	 * loaded machine: 115.3 ms logged, 134.2 ms recorded). A thread that
	 * waits for a CPU between the two stretches it by that wait: the
	 * process's waits (delayed) are allowed either way. */
	double early = (h_ctx.asan ? 25e6 : 2e6) + (double)delayed;
	cr_assert_geq((double)s.age_ns, (double)truth - early - 0.02 * (double)truth,
		      "the log's worst age %.1f ms is below the recording layer's %.1f ms", s.age_ns / 1e6,
		      truth / 1e6);
	cr_assert_leq((double)s.age_ns, (double)truth + 10e6 + (double)delayed + 0.2 * (double)truth,
		      "the log's worst age %.1f ms is above the recording layer's %.1f ms", s.age_ns / 1e6,
		      truth / 1e6);
	/* bytes: never more than was written in any span of the bound's length */
	unsigned long long most = 0;
	size_t lo = 0, sum = 0;
	for (size_t i = 0; i < rl.n; i++) {
		const struct h_rec *w = &rl.r[i];
		if (w->ino != ino || w->ret <= 0 || (strcmp(w->op, "write") && strcmp(w->op, "pwrite")))
			continue;
		sum += (size_t)w->ret;
		while (rl.r[lo].t1 + bound < w->t1) {
			if (rl.r[lo].ino == ino && rl.r[lo].ret > 0 &&
			    (!strcmp(rl.r[lo].op, "write") || !strcmp(rl.r[lo].op, "pwrite")))
				sum -= (size_t)rl.r[lo].ret;
			lo++;
		}
		if (sum > most)
			most = sum;
	}
	cr_assert_leq(s.bytes, most, "defer: %llu bytes at risk, but at most %llu were written in %.0f ms",
		      (unsigned long long)s.bytes, most, bound / 1e6);
}

/* noop: nothing is ever synced, so everything written stays at risk and
 * the report flags it. The app holds the file open 1.2 s after its last
 * write, so the log sees the final figures. */
Test(risk, noop_grows_without_bound_and_is_flagged)
{
	char *file = h_path("n.dat"), *log = h_path("n.log");
	char *ini = fl_ini_rule("shim.ini", file, "noop", NULL);
	struct h_cmd c;
	risk_run(ini, file, log, "300", "0", "1200", &c);
	struct risk_seen s = risk_of_log(log, file);
	struct h_log rl = h_log_load(&c);
	cr_assert_eq(real_syncs(&rl, h_ino(file), 0).n, 0, "noop: real syncs were made");
	cr_assert(s.any && s.unbounded, "noop: not flagged");
	cr_assert_eq(s.bytes, 300 * 4096ull, "noop: %llu bytes at risk, all %d written are", (unsigned long long)s.bytes,
		     300 * 4096);
	cr_assert_geq(s.age_ns, 1000 * MS, "noop: oldest at risk %.0f ms, the app idled 1200 ms after", s.age_ns / 1e6);
}

/* An O_DSYNC file under noop: the flag is dropped, so every write is one
 * the app believes durable and is not. */
Test(risk, osync_writes_with_the_flag_dropped_are_at_risk)
{
	char *file = h_path("o.dat"), *log = h_path("o.log");
	char *ini = fl_ini_rule("shim.ini", file, "noop", NULL);
	struct h_cmd c;
	fl_cmd(&c, H_SHIM_REC, ini);
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "50", "-O", "-m", "none", "-w", "1200", NULL);
	h_assert_ok(h_run(&c), "fl_loop -O");
	struct risk_seen s = risk_of_log(log, file);
	cr_assert(s.any && s.unbounded, "O_DSYNC writes under noop: nothing at risk in the log");
	cr_assert_eq(s.bytes, 50 * 4096ull, "%llu bytes at risk", (unsigned long long)s.bytes);
}

/* osync = strip: a pwritev2(RWF_DSYNC) write whose flag the shim drops is
 * acknowledged as durable and is not: the log counts it as at risk. */
Test(risk, stripped_rwf_dsync_write_is_data_at_risk)
{
	char *dir = h_path("rw"), *log = h_path("rw.log");
	cr_assert_eq(mkdir(dir, 0755), 0);
	char *ini = fl_ini_rule("rw.ini", h_fmt("%s/rw.dat", dir), "passthrough", "osync = strip\n");
	struct h_cmd c;
	fl_cmd(&c, H_SHIM, ini);
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, h_prog("ord_steps"), dir, "D:rw.dat:0:x", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps: one pwritev2(RWF_DSYNC)");
	cr_assert(h_has(r.out, "ret=4096"), "%s", r.out);
	struct h_cmd s;
	h_cmd_init(&s, H_PLAIN);
	h_args(&s, h_fmt("%s/synclat", h_ctx.build), "report", log, NULL);
	struct h_result rep = h_run(&s);
	h_assert_ok(rep, "synclat report");
	cr_assert(h_has(rep.out, "at risk: max 4.10 kB"), "the stripped RWF_DSYNC write is not counted as data at "
		  "risk:\n%s", rep.out);
}
