/*
 * test_hostile.c - the shim inside a hostile or careless host.
 *
 * One test (or table of runs) per way a host can break the shim's
 * guarantees: closing every descriptor, forking from threads, syncing in
 * signal handlers, closing a descriptor another thread is syncing, vfork
 * children, descriptors closed behind the shim's back, data published
 * under a new name, a failing device, a descriptor limit, a host that
 * configures jemalloc. Each checks the effect independently of the shim's
 * counters: file contents, the recording layer beneath the shim
 * (tests/lib/reclayer.so), strace, the failing file system
 * (tests/lib/failfs), stderr.
 */
#include "harness.h"
#include "logread.h"
#include "logfmt.h"

TestSuite(hostile, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

static const char *const policies[] = { "passthrough", "fdatasync", "noop", "defer", "group" };
#define NPOLICIES 5

static void hs_cmd(struct h_cmd *c, unsigned layers, const char *policy)
{
	h_cmd_policy(c, layers, policy);
	h_env(c, "SYNCSHIM_CONFIG=");
}

static unsigned long long ino_of_line(const char *out, const char *key)
{
	return (unsigned long long)h_num_after(out, key, 0);
}

/* Real fsync/fdatasync calls on ino, per the recording layer. */
static int real_syncs(const struct h_log *log, unsigned long long ino)
{
	return h_count(log, "fsync", ino) + h_count(log, "fdatasync", ino);
}

/* The last record of op on ino (NULL: none). */
static const struct h_rec *last_of(const struct h_log *log, const char *op, unsigned long long ino)
{
	const struct h_rec *r = NULL;
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->r[i].op, op) && (!ino || log->r[i].ino == ino))
			r = &log->r[i];
	return r;
}

static bool log_readable(const char *path)
{
	struct lr_log l;
	struct lr_error err;
	int r = lr_read_file(path, &l, &err);
	if (r != 0)
		cr_log_error("%s: %s", path, err.msg);
	lr_free(&l);
	return r == 0;
}

/* ---- 1: the shim's descriptors never receive or write the app's data ---- */

Test(hostile, close_all_then_open_never_mixes_log_into_app_files)
{
	static const char *const modes[] = { "loop", "range", "from", "raw", "dup2" };
	for (int p = 0; p < NPOLICIES; p++)
		for (int m = 0; m < 5; m++) {
			char *dir = h_path(h_fmt("%s.%s", policies[p], modes[m]));
			cr_assert_eq(mkdir(dir, 0755), 0);
			char *log = h_fmt("%s/run.log", dir);
			struct h_cmd c;
			hs_cmd(&c, H_SHIM, policies[p]);
			h_envf(&c, "SYNCSHIM_LOG=%s", log);
			h_env(&c, "SYNCSHIM_LOG_MODE=calls");
			h_args(&c, h_prog("closeall"), "-d", dir, "-m", modes[m], "-n", "104", "-l", log, NULL);
			struct h_result r = h_run(&c);
			char *what = h_fmt("closeall %s %s", policies[p], modes[m]);
			h_assert_ok(r, what);
			long rounds = (long)h_num_after(r.out, "rounds=", 0);
			cr_assert_gt(rounds, 0, "%s: %s", what, r.out);
			cr_assert_geq(h_num_after(r.out, "log_growth=", 0), 2, "%s: the log never grew after "
				      "the close-all (were its blocks written elsewhere?)\n%s", what, r.out);
			cr_assert(h_check_pattern(h_fmt("%s/a.dat", dir), 32 * 512), "%s: a.dat", what);
			for (int k = 0; k < 104; k++)
				cr_assert(h_check_pattern(h_fmt("%s/b.%d.dat", dir, k), rounds * 512),
					  "%s: b.%d.dat holds something the app did not write (size %lld)", what, k,
					  h_size(h_fmt("%s/b.%d.dat", dir, k)));
			cr_assert(log_readable(log), "%s: the log is damaged", what);
			cr_assert_str_empty(r.err, "%s: stderr:\n%s", what, r.err);
		}
}

/* ---- 2: fork from a threaded host ----------------------------------------- */

Test(hostile, fifty_forks_from_threads_never_hang)
{
	h_skip_forks_from_threads_under_a_sanitizer(); /* also in make tsan's TSAN_SKIP */
	int runs = 50;
	for (int run = 0; run < runs; run++) {
		const char *pol = policies[run % NPOLICIES];
		char *dir = h_path(h_fmt("f%d", run));
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		hs_cmd(&c, H_SHIM, pol);
		if (run % 2)
			h_envf(&c, "SYNCSHIM_LOG=%s/l.%%p.log", dir);
		/* Half the runs with the live counters forced off: under defer
		 * and noop they are on by default (live = auto), and each forked
		 * child publishing its own file makes a run ~1.5x longer. */
		if (run % 4 >= 2)
			h_env(&c, "SYNCSHIM_LIVE=0");
		c.timeout_s = 20;
		h_args(&c, h_prog("fork_threads"), "-d", dir, "-t", "4", "-f", "20", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, h_fmt("fork_threads run %d (%s)", run, pol));
	}
}

/* ---- 3: signal handlers that write and sync ------------------------------ */

/* The shim raises SIGUSR1 at each of its test points, so the handler's
 * write + fsync + open run inside every critical section it has. */
Test(hostile, handlers_sync_inside_every_critical_section)
{
	for (int p = 0; p < NPOLICIES; p++) {
		char *dir = h_path(policies[p]);
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		hs_cmd(&c, H_SHIM, policies[p]);
		h_env(&c, "SYNCSHIM_TEST_SIGNAL_AT=all");
		h_envf(&c, "SYNCSHIM_LOG=%s/l.log", dir);
		h_env(&c, "SYNCSHIM_LOG_MODE=calls");
		c.timeout_s = 60;
		h_args(&c, h_prog("sig_sync"), "-d", dir, "-n", "30", "-t", "2", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, h_fmt("sig_sync under %s", policies[p]));
		cr_assert(h_has(r.out, "sig_sync: ok"), "%s", r.out);
		cr_assert_gt(h_num_after(r.out, "handler=", 0), 30, "%s: the handlers hardly ran:\n%s",
			     policies[p], r.out);
	}
}

/* sig_sync under defer with the shim raising its signal at one test point
 * (SYNCSHIM_TEST_SIGNAL_AT): every handler's write and fsync must complete,
 * and enough of them must have run for the point to have been met. */
static void handlers_at(const char *point, const char *iters, const char *what)
{
	struct h_cmd c;
	hs_cmd(&c, H_SHIM, "defer");
	h_envf(&c, "SYNCSHIM_TEST_SIGNAL_AT=%s", point);
	c.timeout_s = 30;
	h_args(&c, h_prog("sig_sync"), "-d", h_ctx.dir, "-n", iters, "-t", "2", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, what);
	cr_assert(h_has(r.out, "sig_sync: ok"), "%s", r.out);
	cr_assert_gt(h_num_after(r.out, "handler=", 0), 5, "the handlers hardly ran:\n%s", r.out);
}

/* The domain's lock (one for every process of a service) held, and a
 * handler that writes: under defer its write waits for other files like
 * any write, which takes the same lock. Every section holding it is one
 * of the shim's, where the handler's calls go straight to libc. */
Test(hostile, handler_inside_the_order_domain_lock)
{
	handlers_at("domain", "30", "sig_sync with handlers inside the domain lock");
}

/* A handler inside the moment a file is being handed to the flusher
 * threads (claimed, not yet where they look): under defer its write must
 * wait for that file's acknowledged sync, which no thread could find
 * until the handler returned. It passes straight to libc there, as in
 * every section of the shim's own. */
Test(hostile, handler_while_its_thread_hands_a_file_to_the_flusher)
{
	handlers_at("schedule", "40", "sig_sync with handlers while a file is scheduled");
}

/* Without test points: under group a real sync (made 3 ms slow) is being
 * led most of the time, and a 10 ms timer's handler syncs the same file
 * from whichever thread it lands in, often the leader's. It must not wait
 * for itself. (The timer is slower than the handler: a faster one would
 * keep a thread inside handlers for good, shim or not.) */
Test(hostile, group_handler_sync_while_its_thread_leads)
{
	char *d = h_path("d.dat");
	h_write_file(d, "");
	struct h_cmd c;
	hs_cmd(&c, H_SHIM_REC, "group");
	h_envf(&c, "RECLAYER_SLOW=%llu:3", h_ino(d));
	c.timeout_s = 30;
	h_args(&c, h_prog("sig_sync"), "-d", h_ctx.dir, "-n", "80", "-t", "3", "-i", "10000", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sig_sync with a 10 ms timer under group");
	cr_assert_gt(h_num_after(r.out, "handler=", 0), 5, "%s", r.out);
}

/* ---- 4: a sync error with nobody left to tell ------------------------------ */

static struct h_result run_defer_exit(const char *mode, const char *ini)
{
	struct h_cmd c;
	hs_cmd(&c, H_SHIM_REC, "defer");
	if (ini)
		h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO");
	h_args(&c, h_prog("defer_exit"), "-d", h_ctx.dir, "-m", mode, NULL);
	return h_run(&c);
}

Test(hostile, deferred_error_after_the_last_call_is_said)
{
	static const char *const modes[] = { "main", "exit", "_exit", "close", "threads" };
	/* The threads' files are independent: ordered, each thread's write
	 * would wait for (and its next fsync report) the other files' failed
	 * syncs, and no error would be left for exit to say. */
	char *independent = h_path("independent.ini");
	h_write_file(independent, "[shim]\npolicy = defer\norder = file\n");
	for (int m = 0; m < 5; m++) {
		struct h_result r = run_defer_exit(modes[m], strcmp(modes[m], "threads") ? NULL : independent);
		h_assert_ok(r, h_fmt("defer_exit -m %s", modes[m]));
		cr_assert(h_has(r.out, "calls ok"), "%s", r.out);
		int files = strcmp(modes[m], "threads") ? 1 : 4;
		cr_assert_eq(h_nlines(r.err), files, "%s: want one stderr line per file:\n%s", modes[m], r.err);
		for (int k = 0; k < files; k++) {
			char *name = h_fmt("deferred sync of %s/x.%d.dat failed (EIO", h_ctx.dir, k);
			cr_assert(h_has(r.err, name), "%s: no line for x.%d.dat:\n%s", modes[m], k, r.err);
		}
	}
	char *ini = h_path("strict.ini");
	h_write_file(ini, "[shim]\npolicy = defer\nunreported_errors = exit\n");
	struct h_result r = run_defer_exit("main", ini);
	cr_assert_eq(r.code, 74, "unreported_errors = exit: exit %d, want 74\n%s", r.code, r.err);
	r = run_defer_exit("_exit", ini);
	cr_assert_eq(r.code, 74, "unreported_errors = exit, _exit(0): exit %d, want 74", r.code);
}

/* A real EIO, from a file system: the app's fsyncs were deferred and
 * returned 0; the exit barrier's real sync reaches the device and fails. */
Test(hostile, real_eio_at_exit_from_failfs_is_said)
{
	char *back = h_path("back"), *mnt = h_path("mnt");
	cr_assert_eq(mkdir(back, 0755), 0);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	h_failfs_mount(back, mnt);
	h_failfs_ctl(mnt, "fsync EIO");
	struct h_cmd c;
	hs_cmd(&c, H_SHIM, "defer");
	h_args(&c, h_prog("defer_exit"), "-d", mnt, "-m", "main", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "defer_exit on failfs");
	cr_assert(h_has(r.err, h_fmt("deferred sync of %s/x.0.dat failed (EIO", mnt)), "stderr:\n%s", r.err);
	cr_assert_gt(h_failfs_stat(mnt, "injected"), 0, "no sync reached the device:\n%s", h_failfs_stats(mnt));
	h_failfs_umount(mnt);
}

/* ---- 5: group never hands out an EIO a thread did not earn ---------------- */

Test(hostile, group_leader_losing_its_descriptor_gives_no_eio)
{
	char *f = h_path("g.dat");
	h_write_file(f, "");
	struct h_cmd c;
	hs_cmd(&c, H_SHIM_REC, "group");
	h_envf(&c, "RECLAYER_SLOW=%llu:2", h_ino(f));
	h_args(&c, h_prog("group_close"), "-f", f, "-t", "4", "-T", "1500", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "group_close");
	const char *healthy = strstr(r.out, "healthy"), *victim = strstr(r.out, "victim");
	cr_assert(healthy && victim, "%s", r.out);
	cr_assert_gt(h_num_after(healthy, "ok=", 0), 0, "%s", r.out);
	cr_assert_eq(h_num_after(healthy, "EIO=", -1), 0, "healthy threads got EIO:\n%s", r.out);
	cr_assert_eq(h_num_after(healthy, "EBADF=", -1), 0, "healthy threads got EBADF:\n%s", r.out);
	cr_assert_eq(h_num_after(healthy, "other=", -1), 0, "%s", r.out);
	cr_assert_eq(h_num_after(victim, "EIO=", -1), 0, "the victim got EIO where EBADF is right:\n%s", r.out);
	cr_assert_eq(h_num_after(victim, "other=", -1), 0, "%s", r.out);
}

/* ---- 6: vfork children ----------------------------------------------------- */

/* strace -f of the whole run: after the second batch's last write, a real
 * sync of the file must follow (before: the child's close_range unbound
 * the parent's O_SYNC-deferred slot and nothing ever synced it). */
Test(hostile, vfork_child_closing_descriptors_leaves_parent_synced)
{
	static const char *const modes[] = { "range", "close", "dup2" };
	for (int m = 0; m < 3; m++) {
		char *f = h_path(h_fmt("v.%s.dat", modes[m]));
		char *trace = h_path(h_fmt("strace.%s.txt", modes[m]));
		struct h_cmd c;
		h_cmd_init(&c, H_PLAIN);
		h_args(&c, "strace", "-f", "-qq", "-e", "trace=write,fdatasync,fsync", "-o", trace, "-E",
		       h_fmt("LD_PRELOAD=%s%s%s", h_ctx.prefix, h_ctx.prefix[0] ? ":" : "", h_shim_lib()),
		       "-E", "SYNCSHIM_POLICY=defer", h_prog("vfork_close"), "-f", f, "-m", modes[m], NULL);
		h_assert_ok(h_run(&c), h_fmt("vfork_close -m %s", modes[m]));
		cr_assert(h_check_pattern(f, 16 * 4096), "%s: data", modes[m]);
		char *text = h_read_file(trace);
		const char *last = strstr(text, "write(3, \"00000000000f000");
		cr_assert_not_null(last, "%s: the last write is not in the trace:\n%s", modes[m], text);
		cr_assert(h_has(last, "fdatasync(") || h_has(last, "fsync("),
			  "%s: no real sync after the second batch:\n%s", modes[m], last);
	}
}

/* ---- 7: no recycling under a running sync ---------------------------------- */

Test(hostile, file_state_survives_a_close_during_its_sync)
{
	char *a = h_path("a.dat");
	h_write_file(a, "");
	struct h_cmd c;
	hs_cmd(&c, H_SHIM_REC, "group");
	h_envf(&c, "RECLAYER_SLOW=%llu:300", h_ino(a));
	h_env(&c, "SYNCSHIM_TEST_SIGNAL_AT=lead");
	h_env(&c, "SYNCSHIM_TEST_SIGNAL_MAX=1");
	h_args(&c, h_prog("recycle"), "-d", h_ctx.dir, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "recycle");
	cr_assert(h_has(r.out, "a=0 new=ok"), "%s", r.out);
	struct h_log log = h_log_load(&c);
	for (int k = 0; k < 4; k++) {
		unsigned long long ino = h_ino(h_path(h_fmt("n.%d.dat", k)));
		cr_assert_geq(real_syncs(&log, ino), 1, "n.%d.dat: its fsync returned 0 without a real sync", k);
	}
}

/* ---- 9: descriptors closed behind the shim's back -------------------------- */

Test(hostile, stale_slot_of_a_raw_closed_number)
{
	char *log = h_path("s.log");
	struct h_cmd c;
	hs_cmd(&c, H_SHIM_REC, "defer");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_env(&c, "SYNCSHIM_LOG_MODE=calls");
	h_args(&c, h_prog("stale_slot"), "-d", h_ctx.dir, "-m", "reuse", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "stale_slot reuse");
	cr_assert(h_has(r.out, "fsync=0 errno=0"), "s.dat got an error that was not its own:\n%s", r.out);
	unsigned long long sock = ino_of_line(r.out, "sock_ino=");
	struct h_log rec = h_log_load(&c);
	cr_assert_eq(real_syncs(&rec, sock), 0, "the shim synced the socket that took the old number");
	struct lr_log l;
	struct lr_error err;
	cr_assert_eq(lr_read_file(log, &l, &err), 0, "%s", err.msg);
	size_t writes = 0; /* s.dat may have had two ids: before and after its raw close */
	for (size_t i = 0; i < l.nrecs; i++) {
		long k = lr_file_index(&l, l.recs[i].file_id);
		writes += k >= 0 && h_has(l.files[k].path, "/s.dat") && l.recs[i].op == LOGOP_WRITE;
	}
	cr_assert_eq(writes, 1, "%zu writes counted to s.dat: the socket's writes were blamed on it", writes);
	lr_free(&l);
}

Test(hostile, close_range_does_not_swallow_a_deferred_error)
{
	struct h_cmd c;
	hs_cmd(&c, H_SHIM_REC, "defer");
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO");
	h_args(&c, h_prog("stale_slot"), "-d", h_ctx.dir, "-m", "range", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "stale_slot range");
	cr_assert(h_has(r.err, h_fmt("deferred sync of %s/s.dat failed (EIO", h_ctx.dir)), "stderr:\n%s", r.err);
}

/* ---- 10: publishing a name is a barrier ------------------------------------ */

Test(hostile, link_tmpfile_and_exchange_wait_for_pending_syncs)
{
	static const char *const modes[] = { "link", "tmpfile", "exchange" };
	for (int m = 0; m < 3; m++) {
		char *dir = h_path(modes[m]);
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		hs_cmd(&c, H_SHIM_REC, "defer");
		h_args(&c, h_prog("publish"), "-d", dir, "-m", modes[m], NULL);
		h_assert_ok(h_run(&c), h_fmt("publish -m %s", modes[m]));
		struct h_log log = h_log_load(&c);
		const char *op = m == 2 ? "rename" : "link";
		const struct h_rec *pub = last_of(&log, op, 0);
		cr_assert_not_null(pub, "%s: no %s recorded", modes[m], op);
		unsigned long long published = h_ino(h_fmt("%s/dst.dat", dir));
		unsigned long long other = m == 2 ? h_ino(h_fmt("%s/src.dat", dir)) : 0;
		for (int k = 0; k < (m == 2 ? 2 : 1); k++) {
			unsigned long long ino = k ? other : published;
			bool before = false;
			for (size_t i = 0; i < log.n; i++)
				if ((!strcmp(log.r[i].op, "fdatasync") || !strcmp(log.r[i].op, "fsync")) &&
				    log.r[i].ino == ino && log.r[i].t1 <= pub->t0)
					before = true;
			cr_assert(before, "%s: the data published was not synced before the %s", modes[m], op);
		}
	}
}

/* ---- 11: the private allocator is deaf to the host's settings ------------- */

Test(hostile, malloc_conf_of_the_host_does_not_reach_the_shim)
{
	const char *progs[] = { "/bin/true", h_fmt("%s/examples/sync_writes", h_ctx.build) };
	for (int i = 0; i < 2; i++) {
		struct h_cmd c;
		h_cmd_init(&c, H_SANRT);
		h_env(&c, "MALLOC_CONF=abort_conf:true,bogus:1");
		h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "run", "-p", "defer", "--", progs[i], NULL);
		if (i)
			h_args(&c, "-n", "20", "-f", h_path("w.dat"), NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, progs[i]);
		cr_assert_str_empty(r.err, "%s: stderr:\n%s", progs[i], r.err);
	}
}

/* ---- 12: logs of forked children ------------------------------------------- */

Test(hostile, only_processes_that_did_something_leave_a_log)
{
	struct h_cmd c;
	hs_cmd(&c, H_SHIM, "passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s/l.%%p.log", h_ctx.dir);
	h_args(&c, h_prog("fork_logs"), "-d", h_ctx.dir, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fork_logs");
	long pids[4] = { h_num_after(r.out, "parent=", 0), h_num_after(r.out, " a=", 0),
			 h_num_after(r.out, " b=", 0), h_num_after(r.out, " c=", 0) };
	bool want[4] = { true, false, true, false };
	const char *who[4] = { "the parent", "the child that only exec'd", "the child that wrote",
			       "the child that did nothing" };
	for (int i = 0; i < 4; i++) {
		char *log = h_path(h_fmt("l.%ld.log", pids[i]));
		cr_assert_eq(access(log, F_OK) == 0, want[i], "%s: log %s %s", who[i], log,
			     want[i] ? "missing" : "written");
		cr_assert_eq(access(h_fmt("%s.1", log), F_OK), -1, "%s: a second log", who[i]);
		if (want[i])
			cr_assert(log_readable(log));
	}
}

/* ---- 13: the descriptor limit -------------------------------------------- */

Test(hostile, shim_never_makes_an_open_fail_with_emfile)
{
	static const char *const modes[] = { "summary", "calls" };
	for (int m = 0; m < 2; m++) {
		char *dir = h_path(modes[m]);
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		hs_cmd(&c, H_SHIM_REC, "defer");
		h_envf(&c, "SYNCSHIM_LOG=%s/l.log", dir);
		h_envf(&c, "SYNCSHIM_LOG_MODE=%s", modes[m]);
		h_args(&c, h_prog("nofile"), "-d", dir, "-l", "64", "-n", "60", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, h_fmt("nofile (%s log)", modes[m]));
		cr_assert(h_has(r.out, "nofile: ok opened=60"), "%s", r.out);
		struct h_log log = h_log_load(&c);
		for (int k = 0; k < 60; k++) {
			unsigned long long ino = h_ino(h_fmt("%s/f.%d.dat", dir, k));
			cr_assert_geq(real_syncs(&log, ino), 1, "f.%d.dat was never synced", k);
		}
	}
}

/* ---- descriptors libc makes, closes or replaces out of the shim's sight -- */

static char *unseen_ini(void)
{
	char *ini = h_path("unseen.ini");
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule scratch]\npath = %s/*.noop\nsync = noop\n"
				"[rule temp]\npath = %s/tmp.*\nsync = noop\n[rule out]\npath = %s/out.*\nsync = noop\n",
				h_ctx.dir, h_ctx.dir, h_ctx.dir));
	return ini;
}

Test(hostile, mkstemp_files_get_their_rule)
{
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", unseen_ini());
	h_args(&c, h_prog("unseen"), "-d", h_ctx.dir, "-m", "mkstemp", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "unseen -m mkstemp");
	char *path = h_strdup(strstr(r.out, "path=") + 5);
	path[strcspn(path, "\n")] = '\0';
	struct h_log log = h_log_load(&c);
	cr_assert_eq(real_syncs(&log, h_ino(path)), 0, "%s matches a noop rule, yet its fsync reached libc", path);
}

/* fcloseall closes inside libc; a raw open then takes the number. The old
 * binding (a noop file) must not be trusted for the new file's fsync. */
Test(hostile, fcloseall_makes_the_shim_check_again)
{
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", unseen_ini());
	h_args(&c, h_prog("unseen"), "-d", h_ctx.dir, "-m", "fcloseall", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "unseen -m fcloseall");
	struct h_log log = h_log_load(&c);
	cr_assert_eq(real_syncs(&log, ino_of_line(r.out, "b_ino=")), 1,
		     "b.dat (passthrough) took a noop file's old number: its fsync was skipped");
}

/* daemon puts /dev/null on stdout with libc's own dup2: fsync(1) is then
 * the real call on /dev/null (EINVAL), not the noop of the file stdout was. */
Test(hostile, daemon_makes_the_shim_check_again)
{
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", unseen_ini());
	h_args(&c, h_prog("unseen"), "-d", h_ctx.dir, "-m", "daemon", NULL);
	h_assert_ok(h_run(&c), "unseen -m daemon");
	char *res = h_path("result");
	double deadline = h_now() + 20;
	while (!h_has(h_read_file(res), "\n") && h_now() < deadline)
		usleep(20000); /* the daemon is no child of ours: poll for its result */
	cr_assert_str_eq(h_read_file(res), "fsync=-1 errno=EINVAL\n", "the daemon's fsync(1) on /dev/null");
}

/* ---- set*id with the shim's threads running ------------------------------- */

/* glibc runs setresgid in every thread and aborts when one thread's
 * result differs; a host that kept its capabilities across setresuid in
 * its own thread alone (setpriv, libcap-ng) made the shim's threads fail
 * it (they had lost theirs). With a flusher (defer), the logger and the
 * live publisher running, under defer and group, the host drops to
 * nobody and goes on writing and syncing. */
static void setid_under(const char *policy)
{
	char tmpl[] = "/tmp/syncshim-setid-XXXXXX";
	char *dir = mkdtemp(tmpl);
	cr_assert(dir && chmod(dir, 0777) == 0);
	char *file = h_fmt("%s/d.dat", dir);
	struct h_cmd c;
	hs_cmd(&c, H_SHIM, policy);
	h_env(&c, "SYNCSHIM_LIVE=1");
	char *live = h_path(h_fmt("setid.%s.live", policy));
	cr_assert_eq(mkdir(live, 0700), 0);
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", live);
	h_envf(&c, "SYNCSHIM_LOG=%s/l.log", dir);
	h_args(&c, h_prog("setid_threads"), file, "65534", "65534", NULL);
	struct h_result r = h_run(&c);
	char buf[64] = "";
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	unlink(file);
	unlink(h_fmt("%s/l.log", dir));
	rmdir(dir);
	cr_expect(!r.timed_out && r.code == 0 && h_has(r.out, "setid_threads: ok uid=65534 gid=65534"),
		  "set*id under %s: exit %d signal %d\n%s%s", policy, r.code, r.sig, r.out, r.err);
	cr_expect_str_eq(buf, "before\nafter\n", "under %s", policy);
}

Test(hostile, setid_from_a_threaded_host_never_aborts)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (setresuid)");
	setid_under("defer");
	setid_under("group");
	setid_under("passthrough");
}
