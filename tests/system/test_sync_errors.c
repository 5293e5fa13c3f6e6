/*
 * test_sync_errors.c - a sync that fails: every caller and every open file
 * description hears of it once, as without the shim, and an error with
 * nobody left to tell is said on stderr at exit.
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

TestSuite(sync_errors, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

/* ---- a group waiter covered by a failed sync gets its error ------------- */

/* Every real fsync fails; 16 threads' group fsyncs batch into few real
 * syncs, and a waiter may wake many failed syncs after its own: each
 * call must fail, as each does without the shim. */
Test(sync_errors, group_waiter_never_gets_zero_for_a_failed_sync)
{
	char *mnt = h_failfs_new();
	char *file = h_fmt("%s/g.dat", mnt);
	h_write_file(file, "");
	h_failfs_ctl(mnt, "fsync EIO");
	for (int run = 0; run < 2; run++) {
		struct h_cmd c;
		h_cmd_ini(&c, H_SHIM, NULL);
		h_env(&c, "SYNCSHIM_POLICY=group");
		h_args(&c, h_prog("sync_errors"), "group", "-f", file, "-t", run ? "64" : "16", "-n", run ? "100" : "200",
		       NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "sync_errors group");
		cr_assert_gt(h_num_after(r.out, "calls=", 0), 0, "%s", r.out);
		cr_assert_eq(h_num_after(r.out, "zero=", -1), 0,
			     "group told callers their fsync succeeded while every real fsync failed: %s", r.out);
	}
	h_failfs_umount(mnt);
}

/* ---- one write-back error, told once to each open file description ------ */

static struct h_result wberr_run(const char *mnt, unsigned layers, const char *policy, bool turns)
{
	h_failfs_ctl(mnt, "reset");
	h_failfs_ctl(mnt, "write EIO once");
	struct h_cmd c;
	h_cmd_ini(&c, layers, NULL);
	if (policy)
		h_envf(&c, "SYNCSHIM_POLICY=%s", policy);
	h_args(&c, h_prog("sync_errors"), "wberr", "-d", mnt, turns ? "-S" : NULL, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sync_errors wberr");
	return r;
}

/* Two opens of a file on failfs with the kernel's writeback cache, one
 * write-back failure: each open file description is told it once (its
 * next fsync), as without the shim, whichever opens' calls come first,
 * and nothing is said on stderr (everyone was told). */
Test(sync_errors, writeback_error_told_once_to_each_open)
{
	char *back = h_path("back"), *mnt = h_path("wb");
	cr_assert_eq(mkdir(back, 0755), 0);
	h_failfs_mount_opts(back, mnt, "writeback_cache");
	static const char *const pols[] = { "passthrough", "fdatasync", "defer", "group" };
	for (int turns = 0; turns < 2; turns++) {
		struct h_result plain = wberr_run(mnt, H_PLAIN, NULL, turns);
		cr_assert_eq(h_num_after(plain.out, "errors=", -1), 2, "%s", plain.out);
		for (int p = 0; p < 4; p++) {
			struct h_result r = wberr_run(mnt, H_SHIM, pols[p], turns);
			cr_expect_eq(h_num_after(r.out, "errors=", -1), 2, "%s%s: %s (without the shim: %s)", pols[p],
				     turns ? " -S" : "", r.out, plain.out);
			cr_expect(h_has(r.out, "a=EIO") || h_has(r.out, "a=0,EIO"), "%s: %s", pols[p], r.out);
			cr_expect(h_has(r.out, "b=EIO") || h_has(r.out, "b=0,EIO"), "%s: %s", pols[p], r.out);
			cr_expect_str_empty(r.err, "%s%s: stderr:\n%s", pols[p], turns ? " -S" : "", r.err);
		}
	}
	h_failfs_umount(mnt);
}

/* ---- the kernel's second report of a sticky error is not a sync -------------- */

/* FSYNC requests failfs received for MNT/d.dat. */
static long long dupreport_fsyncs(const char *mnt)
{
	return h_failfs_file_stat(mnt, "/d.dat", "fsync") + h_failfs_file_stat(mnt, "/d.dat", "fdatasync");
}

/* Crash-test mode's undo log in STORE: does a durable mark cover the
 * write of LEN bytes at OFF (b's second write)? -1: that write is not
 * in the log. */
static int dupreport_marked(const char *store, uint64_t off, uint64_t len)
{
	FILE *f = fopen(h_fmt("%s/%s", store, UNDO_NAME), "rb");
	cr_assert_not_null(f);
	static uint8_t buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f), at = 8;
	fclose(f);
	cr_assert(n >= 8 && !memcmp(buf, UNDO_MAGIC, 8));
	long long write_at = -1;
	int marked = -1;
	while (at + sizeof(struct undo_rec) <= n) {
		struct undo_rec h;
		memcpy(&h, buf + at, sizeof(h));
		cr_assert_eq(h.magic, UNDO_REC_MAGIC);
		if (h.type == UNDO_WRITE && h.off == off && h.len == len)
			write_at = (long long)at, marked = 0;
		if (h.type == UNDO_DURABLE && write_at >= 0 && h.off > (uint64_t)write_at)
			marked = 1;
		at += sizeof(h) + h.plen;
	}
	return marked;
}

static struct h_result dupreport_run(const char *mnt, const char *store, bool app_path)
{
	h_failfs_ctl(mnt, "reset");
	h_failfs_ctl(mnt, "write EIO once");
	char *ini = h_ini(app_path ? "dp.ini" : "dd.ini",
			   h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\n%s\n", mnt,
				 app_path ? "osync = defer" : "sync = defer"));
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM, ini);
	h_write_file(h_fmt("%s/%s", store, UNDO_NAME), UNDO_MAGIC);
	h_envf(&c, "SYNCSHIM_CRASH_DIR=%s", store);
	h_envf(&c, "SYNCSHIM_CRASH_SCOPE=%s/*", mnt);
	h_args(&c, h_prog("sync_errors"), "dupreport", "-d", mnt, app_path ? "-S" : NULL, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sync_errors dupreport");
	return r;
}

/*
 * One write-back error, found by the shim's deferred sync through one
 * open (a) and told by the shim to both. The other open (b) still owes
 * the kernel's report, which its next real sync gets instead of a sync:
 * the file system returns it before its own sync (FUSE sends no FSYNC).
 * That report must be neither told again nor taken for a sync: the
 * shim syncs again, so b's data reaches the file system's fsync (failfs
 * counts the request, beneath the shim) whether the sync is the app's
 * own (passthrough, sync.c) or the flusher's (defer); both paths tell the
 * caller the same, and crash-test mode marks b's write durable exactly
 * when the file system was asked to sync it.
 */
Test(sync_errors, second_report_of_a_told_error_is_not_a_sync)
{
	char *back = h_path("back"), *mnt = h_path("wb");
	cr_assert_eq(mkdir(back, 0755), 0);
	h_failfs_mount_opts(back, mnt, "writeback_cache");
	for (int app_path = 0; app_path < 2; app_path++) {
		const char *what = app_path ? "the app's own fsync (passthrough)" : "the flusher's (defer)";
		char *store = h_path(app_path ? "store-app" : "store-flusher");
		cr_assert_eq(mkdir(store, 0700), 0);
		struct h_result r = dupreport_run(mnt, store, app_path);
		cr_expect(h_has(r.out, "close_a=EIO fsync_b=EIO,0 close_b=0"), "%s: %s", what, r.out);
		long long fsyncs = dupreport_fsyncs(mnt);
		int marked = dupreport_marked(store, 6, 7);
		cr_expect_neq(marked, -1, "%s: b's write is not in the undo log", what);
		cr_expect_eq(marked, fsyncs > 0, "%s: crash-test mode %s b's write durable, and %lld fsync reached "
			     "the file system", what, marked ? "marked" : "did not mark", fsyncs);
		cr_expect_gt(fsyncs, 0,
			     "%s: b's second write was reported synced, but no fsync reached the file "
			     "system: %s", what, r.out);
		cr_expect_str_empty(r.err, "%s: stderr:\n%s", what, r.err);
	}
	h_failfs_umount(mnt);
}

/*
 * The same two opens, where the file system fails each call on its own
 * (a FUSE daemon's reply, NFS; here the fault layer beneath the shim
 * fails the first two real syncs): the deferred sync through a fails and
 * is told to a and b, as above; then b's own real sync fails too, a
 * fresh failure of a sync b's second write was waiting for. The shim
 * once took the failure of the first real sync through b for the
 * kernel's second report, synced again, got 0 and told nobody (oracle
 * seed mix:15753722): b's close must report it, on either path.
 */
Test(sync_errors, fresh_failure_after_a_told_error_is_reported)
{
	for (int app_path = 0; app_path < 2; app_path++) {
		const char *what = app_path ? "the app's own fsync (passthrough)" : "the flusher's (defer)";
		char *dir = h_path(app_path ? "fresh-app" : "fresh-flusher");
		cr_assert_eq(mkdir(dir, 0755), 0);
		char *ini = h_ini(app_path ? "fp.ini" : "fd.ini",
				   h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\n%s\n", dir,
					 app_path ? "osync = defer" : "sync = defer"));
		struct h_cmd c;
		h_cmd_ini(&c, H_SHIM_REC, ini);
		h_env(&c, "RECLAYER_FAIL=sync:EIO:0:2");
		h_env(&c, "RECLAYER_FAIL_SUFFIX=.dat");
		h_args(&c, h_prog("sync_errors"), "dupreport", "-d", dir, app_path ? "-S" : NULL, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "sync_errors dupreport");
		struct h_log log = h_log_load(&c);
		int injected = 0;
		for (size_t i = 0; i < log.n; i++)
			injected += log.r[i].injected;
		cr_expect_eq(injected, 2, "%s: %s", what, r.out);
		/* defer: the flusher's sync through b fails, b's close says so;
		 * passthrough: b's own second fsync fails */
		cr_expect(h_has(r.out, app_path ? "close_a=EIO fsync_b=EIO,EIO close_b=0"
						: "close_a=EIO fsync_b=EIO,0 close_b=EIO"),
			  "%s: b's second failure was told to nobody: %s", what, r.out);
	}
}

/* ---- a sync error with nobody left to tell ------------------------------ */

static struct h_result run_defer_exit(const char *mode, const char *ini)
{
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM_REC, "defer");
	if (ini)
		h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO");
	h_args(&c, h_prog("defer_exit"), "-d", h_ctx.dir, "-m", mode, NULL);
	return h_run(&c);
}

Test(sync_errors, deferred_error_after_the_last_call_is_said)
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
Test(sync_errors, real_eio_at_exit_from_failfs_is_said)
{
	char *back = h_path("back"), *mnt = h_path("mnt");
	cr_assert_eq(mkdir(back, 0755), 0);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	h_failfs_mount(back, mnt);
	h_failfs_ctl(mnt, "fsync EIO");
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM, "defer");
	h_args(&c, h_prog("defer_exit"), "-d", mnt, "-m", "main", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "defer_exit on failfs");
	cr_assert(h_has(r.err, h_fmt("deferred sync of %s/x.0.dat failed (EIO", mnt)), "stderr:\n%s", r.err);
	cr_assert_gt(h_failfs_stat(mnt, "injected"), 0, "no sync reached the device:\n%s", h_failfs_stats(mnt));
	h_failfs_umount(mnt);
}

/* ---- group never hands out an EIO a thread did not earn ---------------- */

Test(sync_errors, group_leader_losing_its_descriptor_gives_no_eio)
{
	char *f = h_path("g.dat");
	h_write_file(f, "");
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM_REC, "group");
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
