/*
 * test_shim_fds.c - the shim's own descriptors stay out of the app's way:
 * its log and private dups never take or write to a number of the app's, a
 * fork child keeps none of them, only processes that did something leave a
 * log, and an open that hits the descriptor limit gets them back.
 *
 * Effects are checked beneath the shim where they can be: the recording
 * layer (tests/lib/reclayer.so), failfs (tests/lib/failfs.c), strace,
 * /proc/self/fd of the process, file contents, stderr.
 */
#include <sys/mman.h>

#include "harness.h"
#include "logfmt.h"
#include "logread.h"
#include "undofmt.h"

TestSuite(shim_fds, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

static const char *const policies[] = { "passthrough", "fdatasync", "noop", "defer", "group" };
#define NPOLICIES 5

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

/* ---- the shim's descriptors never receive or write the app's data ---- */

Test(shim_fds, close_all_then_open_never_mixes_log_into_app_files)
{
	static const char *const modes[] = { "loop", "range", "from", "raw", "dup2" };
	for (int p = 0; p < NPOLICIES; p++)
		for (int m = 0; m < 5; m++) {
			char *dir = h_path(h_fmt("%s.%s", policies[p], modes[m]));
			cr_assert_eq(mkdir(dir, 0755), 0);
			char *log = h_fmt("%s/run.log", dir);
			struct h_cmd c;
			h_cmd_policy_only(&c, H_SHIM, policies[p]);
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

/* The log sits at 100 or above: the app's numbering is its own (its next
 * open gets the next number), and a close() of the log's number is
 * EBADF, as it would be without the shim. */
Test(shim_fds, log_descriptor_is_out_of_the_apps_way)
{
	char *file = h_path("ln.dat"), *log = h_path("ln.log");
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM, NULL);
	h_env(&c, "SYNCSHIM_POLICY=passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, h_prog("shim_fds"), "lognum", "-f", file, "-l", log, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "shim_fds lognum");
	long long fd = h_num_after(r.out, "fd=", -1), logfd = h_num_after(r.out, "logfd=", -1);
	cr_assert_geq(logfd, 100, "the log is not at 100 or above: %s", r.out);
	cr_assert_eq(h_num_after(r.out, "probe=", -1), fd + 1, "the app's next open got another number than "
		     "without the shim: %s", r.out);
	cr_assert(h_has(r.out, "close=EBADF"), "close() of the shim's log descriptor did not fail EBADF: %s", r.out);
}

/* ---- a fork child holds none of the parent's private descriptors ------- */

Test(shim_fds, fork_child_does_not_keep_the_private_descriptor)
{
	char *file = h_path("f.dat");
	char *ini = h_ini("f.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = defer\n"
					  "max_delay_ms = 10000\n", file));
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM, ini);
	h_args(&c, h_prog("shim_fds"), "forkpriv", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "shim_fds forkpriv");
	cr_assert_eq(h_num_after(r.out, "parent_fds=", -1), 1, "the parent should hold its dup: %s", r.out);
	cr_assert_eq(h_num_after(r.out, "child_fds=", -1), 0, "the fork child holds the parent's private "
		     "descriptor of a closed file: %s", r.out);
}

/* A fork while the shim's log is on its first number, before it moves
 * above the app's range (the test hold keeps the opening thread there):
 * the child must not keep that number, which no thread of its own would
 * close; its descriptors are those it has without the shim (oracle seed
 * fork:15690304: a child with one descriptor more). */
Test(shim_fds, fork_child_keeps_no_short_lived_shim_descriptor)
{
	char *plain_out = NULL;
	for (int shim = 0; shim < 2; shim++) {
		struct h_cmd c;
		h_cmd_ini(&c, shim ? H_SHIM : H_PLAIN, NULL);
		char *hold = h_path(shim ? "hold-shim" : "hold-plain");
		if (shim) {
			h_env(&c, "SYNCSHIM_POLICY=passthrough");
			h_envf(&c, "SYNCSHIM_LOG=%s", h_path("held.log"));
			h_env(&c, "SYNCSHIM_TEST_HOLD_AT=log_low");
			h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
		}
		h_args(&c, h_prog("shim_fds"), "forkheld", "-f", h_path(shim ? "held-shim.dat" : "held-plain.dat"), "-l",
		       hold, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "shim_fds forkheld");
		const char *fds = strstr(r.out, "child_fds=");
		cr_assert_not_null(fds, "%s", r.out);
		if (!shim) {
			plain_out = h_strdup(fds);
			continue;
		}
		cr_assert(h_has(r.out, "reached=1"), "the shim never reached its hold: %s", r.out);
		cr_assert_str_eq(fds, plain_out, "the fork child's descriptors with the shim, then without");
	}
}

/* ---- logs of forked children ------------------------------------------- */

Test(shim_fds, only_processes_that_did_something_leave_a_log)
{
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM, "passthrough");
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

/* ---- the descriptor limit -------------------------------------------- */

Test(shim_fds, shim_never_makes_an_open_fail_with_emfile)
{
	static const char *const modes[] = { "summary", "calls" };
	for (int m = 0; m < 2; m++) {
		char *dir = h_path(modes[m]);
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		h_cmd_policy_only(&c, H_SHIM_REC, "defer");
		h_envf(&c, "SYNCSHIM_LOG=%s/l.log", dir);
		h_envf(&c, "SYNCSHIM_LOG_MODE=%s", modes[m]);
		h_args(&c, h_prog("nofile"), "-d", dir, "-l", "64", "-n", "60", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, h_fmt("nofile (%s log)", modes[m]));
		cr_assert(h_has(r.out, "nofile: ok opened=60"), "%s", r.out);
		struct h_log log = h_log_load(&c);
		for (int k = 0; k < 60; k++) {
			unsigned long long ino = h_ino(h_fmt("%s/f.%d.dat", dir, k));
			cr_assert_geq(h_real_syncs(&log, ino), 1, "f.%d.dat was never synced", k);
		}
	}
}

/* ---- EMFILE relief for every call that makes a descriptor ---------------- */

/* RLIMIT_NOFILE 16, four closed files still owing deferred syncs (the
 * shim holds a descriptor of each): every maker of descriptors gets as
 * many as the same program without the shim. */
static struct h_result emfile_run(unsigned layers, const char *ini, const char *d)
{
	struct h_cmd c;
	h_cmd_ini(&c, layers, ini);
	h_args(&c, h_prog("shim_fds"), "emfile", "-d", d, "-L", "16", "-c", "4", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "shim_fds emfile");
	return r;
}

Test(shim_fds, emfile_relief_covers_every_descriptor_maker)
{
	char *d = h_path("e");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = h_ini("e.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\nsync = defer\n"
					  "max_delay_ms = 10000\n", d));
	struct h_result plain = emfile_run(H_PLAIN, NULL, d), r = emfile_run(H_SHIM, ini, d);
	static const char *const kinds[] = { "opendir=", "epoll=", "inotify=", "timerfd=", "signalfd=" };
	for (int k = 0; k < 5; k++) {
		long long want = h_num_after(plain.out, kinds[k], -1);
		cr_assert_geq(want, 10, "%s", plain.out);
		cr_assert_eq(h_num_after(r.out, kinds[k], -1), want, "%s descriptors short because of the shim: "
			     "%s (without: %s)", kinds[k], r.out, plain.out);
	}
}

/* RLIMIT_NOFILE 32 under passthrough with a log: an open that hits the
 * limit gets the log's descriptor back, so the app opens as many files as
 * without the shim. */
static long long nofile_opens(unsigned layers, const char *log)
{
	struct h_cmd c;
	h_cmd_ini(&c, layers, NULL);
	if (layers & H_SHIM) {
		h_env(&c, "SYNCSHIM_POLICY=passthrough");
		h_envf(&c, "SYNCSHIM_LOG=%s", log);
	}
	h_args(&c, h_prog("shim_fds"), "nofile", "-f", h_path("nf.dat"), "-L", "32", "-l", log, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "shim_fds nofile");
	cr_assert(h_has(r.out, "errno=EMFILE"), "%s", r.out);
	if (layers & H_SHIM)
		cr_assert_eq(h_size(log) > 0, true, "the log was never written");
	return h_num_after(r.out, "opens=", -1);
}

Test(shim_fds, emfile_relief_under_passthrough_gives_back_the_log)
{
	char *log = h_path("nf.log");
	long long plain = nofile_opens(H_PLAIN, log), shim = nofile_opens(H_SHIM, log);
	cr_assert_gt(plain, 20);
	cr_assert_eq(shim, plain, "with a log the app opened %lld files, without the shim %lld", shim, plain);
}
