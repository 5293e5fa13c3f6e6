/*
 * test_endings.c - however a process ends, the exit barrier runs, the
 * process ends, with its own status, and the shim's words never land in
 * the app's files.
 *
 * Each run is tests/progs/endings under the shim with the recording
 * layer beneath it: the deferred syncs the barrier owes are counted where
 * they reach libc (RECLAYER_FAIL makes them fail, so an error the barrier
 * must tell is real), exit statuses and stderr come from the process, the
 * data file's bytes from the disk, the latency log from synclat's reader.
 */
#include "harness.h"
#include "logread.h"

TestSuite(endings, .init = h_setup, .fini = h_teardown, .timeout = 240);

/* Files named *.def in the test directory deferred for longer than any
 * run, *.grp ones group. */
static char *endings_ini(const char *unreported)
{
	char *ini = h_path(h_fmt("endings.%s.ini", unreported));
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\nunreported_errors = %s\n"
				"[rule def]\npath = %s/*.def\nsync = defer\nmax_delay_ms = 30000\n"
				"[rule grp]\npath = %s/*.grp\nsync = group\n",
				unreported, h_ctx.dir, h_ctx.dir));
	return ini;
}

static void endings_cmd(struct h_cmd *c, const char *unreported, bool fail_syncs)
{
	h_cmd_init(c, H_SHIM_REC);
	h_envf(c, "SYNCSHIM_CONFIG=%s", endings_ini(unreported));
	if (fail_syncs)
		h_env(c, "RECLAYER_FAIL=fdatasync:EIO");
	c->timeout_s = 30;
}

static struct h_result run_endings(struct h_cmd *c, const char *mode, int status)
{
	h_args(c, h_prog("endings"), "-d", h_ctx.dir, "-m", mode, "-s", h_fmt("%d", status), NULL);
	return h_run(c);
}

static char *failed_line(const char *name)
{
	return h_fmt("deferred sync of %s/%s failed (EIO", h_ctx.dir, name);
}

/* Real syncs of DIR/name that reached libc (the recording layer). */
static int real_syncs_of(const struct h_cmd *c, const char *name)
{
	struct h_log log = h_log_load(c);
	unsigned long long ino = h_ino(h_path(name));
	return h_count(&log, "fsync", ino) + h_count(&log, "fdatasync", ino);
}

/* ---- 14: unreported_errors = exit changes only a 0 ---------------------------- */

Test(endings, a_nonzero_status_is_the_apps_own)
{
	static const struct {
		const char *mode;
		int status, want;
	} runs[] = {
		{ "return", 3, 3 }, /* before: 74 */
		{ "exit", 3, 3 },
		{ "return", 0, 74 },
		{ "exit", 0, 74 },
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct h_cmd c;
		endings_cmd(&c, "exit", true);
		struct h_result r = run_endings(&c, runs[i].mode, runs[i].status);
		cr_assert(h_has(r.out, "endings: calls ok"), "%s", r.out);
		cr_assert_eq(r.code, runs[i].want, "%s %d with an unreported error: exit %d, want %d\n%s",
			     runs[i].mode, runs[i].status, r.code, runs[i].want, r.err);
		cr_assert(h_has(r.err, failed_line("b.def")), "%s %d: no line for the error:\n%s", runs[i].mode,
			  runs[i].status, r.err);
	}
}

/* ---- 7: quick_exit --------------------------------------------------------------- */

/* The barrier runs after the app's at_quick_exit handlers: their syncs
 * (c.def) are made too. */
Test(endings, quick_exit_runs_the_barrier_after_the_apps_handlers)
{
	struct h_cmd c;
	endings_cmd(&c, "warn", false);
	struct h_result r = run_endings(&c, "quick", 0);
	h_assert_ok(r, "quick_exit(0)");
	cr_assert(h_has(r.out, "at_quick_exit handler ran"), "%s", r.out);
	cr_assert_gt(real_syncs_of(&c, "b.def"), 0, "b.def's deferred syncs were never made");
	cr_assert_gt(real_syncs_of(&c, "c.def"), 0, "the at_quick_exit handler's syncs were never made");

	endings_cmd(&c, "exit", true);
	r = run_endings(&c, "quick", 0);
	cr_assert_eq(r.code, 74, "quick_exit(0), unreported error, unreported_errors = exit: exit %d\n%s", r.code,
		     r.err);
	cr_assert(h_has(r.err, failed_line("b.def")), "%s", r.err);
	cr_assert(h_has(r.err, failed_line("c.def")), "%s", r.err);

	endings_cmd(&c, "exit", true);
	r = run_endings(&c, "quick", 5);
	cr_assert_eq(r.code, 5, "quick_exit(5): exit %d\n%s", r.code, r.err);
	cr_assert(h_has(r.err, failed_line("b.def")), "%s", r.err);
}

/* ---- 8: main's pthread_exit ------------------------------------------------------- */

/* The shim's threads (log, live counters, config watcher, flushers) must
 * not keep the process alive once the app's last thread has ended: it
 * exits 0, as glibc makes it, after the barrier. */
Test(endings, pthread_exit_from_main_ends_with_the_last_app_thread)
{
	char *live = h_path("live");
	cr_assert_eq(mkdir(live, 0700), 0);
	struct h_cmd c;
	endings_cmd(&c, "warn", false);
	h_envf(&c, "SYNCSHIM_LOG=%s/l.log", h_ctx.dir);
	h_env(&c, "SYNCSHIM_LIVE=1");
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", live);
	c.timeout_s = 20;
	struct h_result r = run_endings(&c, "pthread_exit", 0);
	cr_assert(!r.timed_out, "main's pthread_exit: the process never ended");
	h_assert_ok(r, "pthread_exit from main");
	for (int i = 0; i < 4; i++)
		cr_assert_gt(real_syncs_of(&c, h_fmt("t.%d.def", i)), 0, "t.%d.def: deferred syncs never made", i);
	cr_assert_gt(real_syncs_of(&c, "b.def"), 0, "b.def: deferred syncs never made");
	struct lr_log l;
	struct lr_error err;
	cr_assert_eq(lr_read_file(h_path("l.log"), &l, &err), 0, "%s", err.msg);
	cr_assert(l.has_trailer, "the log has no trailer: the exit barrier did not run");
	cr_assert_eq(l.trailer.exit_status, 0);
	lr_free(&l);

	endings_cmd(&c, "exit", true);
	h_envf(&c, "SYNCSHIM_LOG=%s/l2.log", h_ctx.dir);
	c.timeout_s = 20;
	r = run_endings(&c, "pthread_exit", 0);
	cr_assert(!r.timed_out, "main's pthread_exit: the process never ended");
	cr_assert_eq(r.code, 74, "exit %d\n%s", r.code, r.err);
	/* Which files' errors reach nobody depends on when their syncs ran:
	 * under ordered defer a thread's later writes make the other files'
	 * syncs earlier, and a thread's own close may then be told its error.
	 * Some file's must be said (the 74 above is for it). */
	bool said = h_has(r.err, failed_line("b.def"));
	for (int i = 0; i < 4; i++)
		said |= h_has(r.err, failed_line(h_fmt("t.%d.def", i)));
	cr_assert(said, "%s", r.err);
}

/* ---- exit and exec through syscall() ------------------------------------------ */

/* syscall(SYS_exit_group), syscall(SYS_exit) of the app's last thread,
 * syscall(SYS_execve) and syscall(SYS_execveat) are barriers as exit and
 * execve are: the deferred syncs owed (30 s away) are made beneath the
 * shim before the process goes, a failed one is said on stderr, and an
 * exit keeps its status (74 for a 0 under unreported_errors = exit).
 * Before, exit_group and the execs left them unmade (no real sync, no
 * word of the error), and SYS_exit left the process running forever on
 * the shim's threads. */
Test(endings, exits_and_execs_through_syscall_are_barriers)
{
	static const struct {
		const char *mode;
		int status, want; /* want: the exit status, -1 for an exec (/bin/true's) */
	} runs[] = {
		{ "sys_exit_group", 3, 3 }, { "sys_exit", 3, 3 }, { "sys_exit_threads", 3, 3 },
		{ "sys_execve", 3, -1 },    { "sys_execveat", 3, -1 },
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		const char *mode = runs[i].mode;
		bool threads = !strcmp(mode, "sys_exit_threads");
		struct h_cmd c;
		endings_cmd(&c, "warn", false);
		c.timeout_s = 20;
		struct h_result r = run_endings(&c, mode, runs[i].status);
		cr_assert(!r.timed_out, "%s: the process never ended", mode);
		cr_assert(h_has(r.out, "endings: calls ok"), "%s: %s", mode, r.out);
		cr_assert_eq(r.code, runs[i].want < 0 ? 0 : runs[i].want, "%s: exit %d\n%s", mode, r.code, r.err);
		cr_assert_gt(real_syncs_of(&c, "b.def"), 0, "%s: b.def's deferred syncs were never made", mode);
		for (int t = 0; threads && t < 4; t++)
			cr_assert_gt(real_syncs_of(&c, h_fmt("t.%d.def", t)), 0, "%s: t.%d.def's syncs never made", mode, t);

		endings_cmd(&c, "exit", true);
		c.timeout_s = 20;
		r = run_endings(&c, mode, 0);
		cr_assert(!r.timed_out, "%s: the process never ended", mode);
		cr_assert(h_has(r.err, failed_line("b.def")), "%s: the deferred sync's error was never told:\n%s", mode,
			  r.err);
		if (runs[i].want >= 0)
			cr_assert_eq(r.code, 74, "%s(0), an unreported error, unreported_errors = exit: exit %d\n%s", mode,
				     r.code, r.err);
	}
}

/* ---- 6: _exit from a handler inside a shim section ------------------------------- */

/* The handler runs inside the group sync the shim leads for a.grp (a
 * test point), holding what that section holds; b.def's deferred sync is
 * owed. The barrier must still make it and tell its error. */
Test(endings, exit_from_a_handler_inside_a_group_sync_makes_the_owed_syncs)
{
	struct h_cmd c;
	endings_cmd(&c, "warn", false);
	h_env(&c, "SYNCSHIM_TEST_SIGNAL_AT=lead");
	struct h_result r = run_endings(&c, "sig_exit", 0);
	h_assert_ok(r, "_exit(0) from the handler");
	cr_assert(!h_has(r.out, "never ran"), "%s", r.out);
	cr_assert_gt(real_syncs_of(&c, "b.def"), 0, "b.def's deferred sync was never made");

	endings_cmd(&c, "exit", true);
	h_env(&c, "SYNCSHIM_TEST_SIGNAL_AT=lead");
	r = run_endings(&c, "sig_exit", 0);
	cr_assert_eq(r.code, 74, "exit %d\n%s", r.code, r.err);
	cr_assert(h_has(r.err, failed_line("b.def")), "b.def's error was never told:\n%s", r.err);
	cr_assert(!h_has(r.err, "a.grp"), "a.grp's caller never had an answer; nothing to tell:\n%s", r.err);
}

/* ---- 9: cancelled while the shim holds a lock ------------------------------------ */

/* The thread's first fsync makes the log (open, write: cancellation
 * points) under the logger's lock; a pending cancel acted there and left
 * the lock held, and exit waited for it forever. */
Test(endings, cancelled_in_its_first_fsync_with_logging_on)
{
	for (int i = 0; i < 3; i++) {
		struct h_cmd c;
		endings_cmd(&c, "warn", false);
		char *log = h_path(h_fmt("c%d.log", i));
		h_envf(&c, "SYNCSHIM_LOG=%s", log);
		c.timeout_s = 20;
		struct h_result r = run_endings(&c, "cancel", 0);
		cr_assert(!r.timed_out, "run %d: the process hung at exit", i);
		h_assert_ok(r, "cancel");
		cr_assert(h_has(r.out, "thread cancelled"), "%s", r.out);
		struct lr_log l;
		struct lr_error err;
		cr_assert_eq(lr_read_file(log, &l, &err), 0, "%s", err.msg);
		cr_assert(l.has_trailer, "run %d: no trailer", i);
		lr_free(&l);
	}
}

/* ---- 17: thread slots of the latency log ------------------------------------------ */

Test(endings, calls_records_of_many_short_threads_are_all_kept)
{
	struct h_cmd c;
	endings_cmd(&c, "warn", false);
	char *log = h_path("calls.log");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_env(&c, "SYNCSHIM_LOG_MODE=calls");
	h_args(&c, h_prog("endings"), "-d", h_ctx.dir, "-m", "threads", "-t", "200", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "200 short threads");
	struct lr_log l;
	struct lr_error err;
	cr_assert_eq(lr_read_file(log, &l, &err), 0, "%s", err.msg);
	size_t writes = 0;
	for (size_t i = 0; i < l.nrecs; i++)
		writes += l.recs[i].op == LOGOP_WRITE && l.recs[i].bytes == 64;
	cr_assert_eq(l.drops, 0, "%llu records dropped, though no ring was full", (unsigned long long)l.drops);
	cr_assert_eq(writes, 2000, "%zu of the 200 threads' 2000 writes have a record", writes);
	lr_free(&l);
}

/* ---- 1: the shim's messages and fd 2 -------------------------------------------- */

/* The process starts with 0-2 closed (a daemon), so its data file gets
 * fd 2; or it dup2s its data file onto 2. A message of the shim's (here
 * the exit barrier's failed sync) must not land in it. */
Test(endings, messages_never_land_in_the_apps_file_on_fd_2)
{
	static const char *const modes[] = { "closed_std", "dup2_std" };
	for (int m = 0; m < 2; m++) {
		struct h_cmd c;
		endings_cmd(&c, "warn", true);
		char *data = h_path("data");
		unlink(data);
		h_args(&c, "/bin/sh", "-c",
		       h_fmt("exec %s -d %s -m %s 0<&- 1>&- 2>&-", h_prog("endings"), h_ctx.dir, modes[m]), NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, modes[m]);
		cr_assert_eq(real_syncs_of(&c, "b.def") > 0, true, "%s: the barrier made no sync", modes[m]);
		char *text = h_read_file(data);
		cr_assert(!h_has(text, "syncshim"), "%s: the shim wrote into the app's data file:\n%s", modes[m],
			  text + (strlen(text) > 4096 ? 4096 : 0));
		cr_assert(h_check_pattern(data, 4096), "%s: the data file holds more than the app's bytes",
			  modes[m]);
	}
	/* stderr as it was at load still gets the line */
	struct h_cmd c;
	endings_cmd(&c, "warn", true);
	struct h_result r = run_endings(&c, "return", 0);
	h_assert_ok(r, "return");
	cr_assert(h_has(r.err, failed_line("b.def")), "%s", r.err);
}

/* A newline in a SYNCSHIM_* value cannot forge a line of its own. */
Test(endings, environment_values_are_shown_escaped)
{
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_env(&c, "SYNCSHIM_LOG_MODE=bogus\nsyncshim: all is well\x1b[2K");
	h_args(&c, "/bin/true", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "true");
	cr_assert_eq(h_nlines(r.err), 1, "want one line:\n%s", r.err);
	cr_assert(h_has(r.err, "bogus\\nsyncshim: all is well\\x1b[2K"), "%s", r.err);
}
