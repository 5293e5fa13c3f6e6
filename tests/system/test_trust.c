/*
 * test_trust.c - issue 17's ways a host lost a sync or got a wrong
 * error, each a regression test (tests/progs/trustb.c runs the host's
 * side), and the tests that kill the mutations the rest of the suite let
 * survive. Effects are checked beneath the shim: the recording layer
 * (tests/lib/reclayer.so), failfs (tests/lib/failfs.c), /proc/self/fd
 * of the process, the program's own results.
 */
#include <sys/mman.h>

#include "harness.h"
#include "undofmt.h"

TestSuite(trust, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

static char *tr_ini(const char *name, const char *text)
{
	char *path = h_path(name);
	h_write_file(path, text);
	return path;
}

/* A command with the shim (+ layers) and config ini, nothing else. */
static void tr_cmd(struct h_cmd *c, unsigned layers, const char *ini)
{
	h_cmd_init(c, layers);
	h_envf(c, "SYNCSHIM_CONFIG=%s", ini ? ini : "");
}

static int real_syncs(const struct h_log *log, unsigned long long ino)
{
	return h_count(log, "fsync", ino) + h_count(log, "fdatasync", ino);
}

static char *tr_mount(void)
{
	char *back = h_path("back"), *mnt = h_path("mnt");
	cr_assert_eq(mkdir(back, 0755), 0);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	h_failfs_mount(back, mnt);
	return mnt;
}

/* ---- 2: a group waiter covered by a failed sync gets its error ------------- */

/* Every real fsync fails; 16 threads' group fsyncs batch into few real
 * syncs, and a waiter may wake many failed syncs after its own: each
 * call must fail, as each does without the shim. */
Test(trust, group_waiter_never_gets_zero_for_a_failed_sync)
{
	char *mnt = tr_mount();
	char *file = h_fmt("%s/g.dat", mnt);
	h_write_file(file, "");
	h_failfs_ctl(mnt, "fsync EIO");
	for (int run = 0; run < 2; run++) {
		struct h_cmd c;
		tr_cmd(&c, H_SHIM, NULL);
		h_env(&c, "SYNCSHIM_POLICY=group");
		h_args(&c, h_prog("trustb"), "group", "-f", file, "-t", run ? "64" : "16", "-n", run ? "100" : "200",
		       NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "trustb group");
		cr_assert_gt(h_num_after(r.out, "calls=", 0), 0, "%s", r.out);
		cr_assert_eq(h_num_after(r.out, "zero=", -1), 0,
			     "group told callers their fsync succeeded while every real fsync failed: %s", r.out);
	}
	h_failfs_umount(mnt);
}

/* ---- 3: a failed dup2 onto an O_SYNC file keeps its binding ----------------- */

static int dup2fail_syncs(bool skip)
{
	char *file = h_path(skip ? "s.dat" : "d.dat");
	struct h_cmd c;
	tr_cmd(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=defer");
	h_args(&c, h_prog("trustb"), "dup2fail", "-f", file, skip ? "-x" : NULL, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb dup2fail");
	if (!skip)
		cr_assert(h_has(r.out, "dup2=-1 errno=EBADF"), "%s", r.out);
	struct h_log log = h_log_load(&c);
	return real_syncs(&log, (unsigned long long)h_num_after(r.out, "ino=", 0));
}

Test(trust, failed_dup2_onto_osync_file_keeps_its_syncs)
{
	cr_assert_geq(dup2fail_syncs(true), 1, "O_SYNC writes under defer got no real sync at all");
	cr_assert_geq(dup2fail_syncs(false), 1,
		      "after a failed dup2 onto it, the O_SYNC file's writes were never synced");
}

/* ---- 16: a fork child holds none of the parent's private descriptors ------- */

Test(trust, fork_child_does_not_keep_the_private_descriptor)
{
	char *file = h_path("f.dat");
	char *ini = tr_ini("f.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = defer\n"
					  "max_delay_ms = 10000\n", file));
	struct h_cmd c;
	tr_cmd(&c, H_SHIM, ini);
	h_args(&c, h_prog("trustb"), "forkpriv", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb forkpriv");
	cr_assert_eq(h_num_after(r.out, "parent_fds=", -1), 1, "the parent should hold its dup: %s", r.out);
	cr_assert_eq(h_num_after(r.out, "child_fds=", -1), 0, "the fork child holds the parent's private "
		     "descriptor of a closed file: %s", r.out);
}

/* A fork while the shim's log is on its first number, before it moves
 * above the app's range (the test hold keeps the opening thread there):
 * the child must not keep that number, which no thread of its own would
 * close; its descriptors are those it has without the shim (oracle seed
 * fork:15690304: a child with one descriptor more). */
Test(trust, fork_child_keeps_no_short_lived_shim_descriptor)
{
	char *plain_out = NULL;
	for (int shim = 0; shim < 2; shim++) {
		struct h_cmd c;
		tr_cmd(&c, shim ? H_SHIM : H_PLAIN, NULL);
		char *hold = h_path(shim ? "hold-shim" : "hold-plain");
		if (shim) {
			h_env(&c, "SYNCSHIM_POLICY=passthrough");
			h_envf(&c, "SYNCSHIM_LOG=%s", h_path("held.log"));
			h_env(&c, "SYNCSHIM_TEST_HOLD_AT=log_low");
			h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
		}
		h_args(&c, h_prog("trustb"), "forkheld", "-f", h_path(shim ? "held-shim.dat" : "held-plain.dat"), "-l",
		       hold, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "trustb forkheld");
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

/* ---- 11: a file unlinked while open is synced through a descriptor ---------- */

/* Four threads each open a file, unlink it, write, fsync (deferred) and
 * close, over and over, on a healthy disk: no call may fail. */
Test(trust, unlinked_open_files_get_no_spurious_eio)
{
	char *d = h_path("u");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = tr_ini("u.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\nsync = defer\n"
					  "max_delay_ms = auto\n", d));
	struct h_cmd c;
	tr_cmd(&c, H_SHIM, ini);
	h_args(&c, h_prog("trustb"), "unlinked", "-d", d, "-t", "4", "-n", h_ctx.asan ? "500" : "2500", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb unlinked");
	cr_assert_gt(h_num_after(r.out, "calls=", 0), 0, "%s", r.out);
	cr_assert_eq(h_num_after(r.out, "failed=", -1), 0, "fsync/close of files unlinked while open failed on a "
		     "healthy disk: %s\nstderr:\n%s", r.out, r.err);
	cr_assert_str_empty(r.err, "stderr:\n%s", r.err);
}

/* Issue 28, 1: no invented errors. A failing call beneath the shim (the
 * recording layer: the syncs and closes the kernel really answered). */
static bool real_call_failed(const struct h_rec *r, const void *arg)
{
	(void)arg;
	bool sync_or_close = !strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync") || !strcmp(r->op, "syncfs") ||
			     !strcmp(r->op, "close");
	return sync_or_close && r->ret < 0;
}

static bool real_sync_made(const struct h_rec *r, const void *arg)
{
	(void)arg;
	return (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync") || !strcmp(r->op, "syncfs")) && r->ret == 0;
}

/* Temporary files as sqlite and MariaDB make them: four threads each
 * open a file, unlink it, write 4 KiB and fsync four times, close. A
 * deferred sync led while the app closes the file (its descriptor marked
 * closing, the closer waiting for a sync that borrowed it) once found no
 * descriptor and tried the name, which an unlinked file no longer has:
 * an EIO for a fsync or close, or a "deferred sync ... failed" line, on a
 * healthy disk. The rule: every error the app is given, or told of on
 * stderr, is one the kernel gave beneath the shim. */
Test(trust, temp_files_get_no_error_the_disk_did_not_give)
{
	char *d = h_path("tmp");
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	tr_cmd(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=defer");
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync,syncfs,close");
	h_args(&c, h_prog("trustb"), "unlinked", "-d", d, "-t", "4", "-k", "4", "-n", h_ctx.asan ? "500" : "2000",
	       NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb unlinked");
	struct h_log log = h_log_load(&c);
	int beneath = h_count_if(&log, real_call_failed, NULL);
	int told = 0;
	for (const char *p = r.err; (p = strstr(p, "deferred sync of")); p++)
		told++;
	long long app = h_num_after(r.out, "failed=", -1);
	cr_assert_gt(h_num_after(r.out, "calls=", 0), 0, "%s", r.out);
	cr_assert_gt(h_count_if(&log, real_sync_made, NULL), 0, "the recording layer saw no real sync");
	cr_assert_leq(app + told, beneath,
		      "the app got %lld failed fsync/close and stderr told %d failed deferred syncs, but beneath the "
		      "shim %d sync or close failed: %s\nstderr (first lines):\n%.2000s",
		      app, told, beneath, r.out, r.err);
	/* and each was synced through a descriptor of its own: the file
	 * system's sync is for a file no descriptor or name leads to */
	cr_assert_eq(h_count(&log, "syncfs", 0), 0,
		     "a temporary file's deferred sync went to its whole file system: no descriptor of it was found "
		     "while its closer waited");
}

/* A closed file whose deferred sync is owed loses every way to it behind
 * the shim's back: its directory renamed (or the file unlinked) and the
 * shim's own descriptor closed, by raw system calls as another process
 * would. The sync owed is still made, on the file system that holds it
 * (a syncfs beneath the shim), and no error is made up: before, the
 * flusher's reopen by name failed and stderr said the deferred sync had
 * failed with EIO. */
Test(trust, file_with_no_descriptor_or_name_left_gets_no_made_up_error)
{
	for (int unlinked = 0; unlinked < 2; unlinked++) {
		char *d = h_path(unlinked ? "gone" : "moved");
		cr_assert_eq(mkdir(d, 0755), 0);
		char *ini = tr_ini(unlinked ? "gone.ini" : "moved.ini",
				   h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/**\nsync = defer\n"
					 "max_delay_ms = 60000\n", d));
		struct h_cmd c;
		tr_cmd(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("trustb"), "privlost", "-d", d, unlinked ? "-S" : NULL, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "trustb privlost");
		cr_assert(h_has(r.out, "privlost: closed=1"), "the shim kept no descriptor of its own to lose: %s", r.out);
		cr_assert(!strstr(r.err, "deferred sync of"),
			  "%s: a deferred sync reported failed that no call beneath the shim failed:\n%s",
			  unlinked ? "unlinked" : "moved", r.err);
		struct h_log log = h_log_load(&c);
		cr_assert_eq(h_count_if(&log, real_call_failed, NULL), 0, "a real sync failed on a healthy disk");
		cr_assert_geq(h_count(&log, "syncfs", 0), 1, "%s: the owed sync was never made (no syncfs beneath)",
			      unlinked ? "unlinked" : "moved");
	}
}

/* ---- 12: msync of a mapping whose file was renamed or unlinked ------------- */

Test(trust, msync_of_moved_file_is_synced_through_its_descriptor)
{
	char *d = h_path("m");
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	tr_cmd(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=defer");
	h_args(&c, h_prog("trustb"), "msyncmoved", "-d", d, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb msyncmoved");
	cr_assert(h_has(r.out, "msync=0,0 fsync=0"), "a deferred msync of a renamed/unlinked file failed "
		  "(without the shim all succeed): %s\nstderr:\n%s", r.out, r.err);
	cr_assert_str_empty(r.err, "stderr:\n%s", r.err);
	struct h_log log = h_log_load(&c);
	int n = 0;
	for (size_t i = 0; i < log.n; i++)
		n += (!strcmp(log.r[i].op, "fsync") || !strcmp(log.r[i].op, "fdatasync")) && log.r[i].ret == 0;
	cr_assert_geq(n, 2, "the two msyncs were not made durable by real syncs (%d)", n);
}

/* ---- 15: EMFILE relief for every call that makes a descriptor ---------------- */

/* RLIMIT_NOFILE 16, four closed files still owing deferred syncs (the
 * shim holds a descriptor of each): every maker of descriptors gets as
 * many as the same program without the shim. */
static struct h_result emfile_run(unsigned layers, const char *ini, const char *d)
{
	struct h_cmd c;
	tr_cmd(&c, layers, ini);
	h_args(&c, h_prog("trustb"), "emfile", "-d", d, "-L", "16", "-c", "4", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb emfile");
	return r;
}

Test(trust, emfile_relief_covers_every_descriptor_maker)
{
	char *d = h_path("e");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = tr_ini("e.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\nsync = defer\n"
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

/* ---- 5: two threads dup2 onto one number at once ---------------------------- */

/* x.noop's rule is noop, y.pass's passthrough; two threads dup2 one each
 * onto the same number, and the number is fsynced: whenever the kernel
 * kept y.pass, the fsync must reach it. */
Test(trust, racing_dup2s_never_give_a_number_the_other_files_rule)
{
	char *d = h_path("r");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = tr_ini("r.ini", h_fmt("[shim]\npolicy = passthrough\n[rule n]\npath = %s/*.noop\nsync = noop\n", d));
	struct h_cmd c;
	tr_cmd(&c, H_SHIM_REC, ini);
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync");
	h_args(&c, h_prog("trustb"), "dup2race", "-d", d, "-n", h_ctx.asan ? "1000" : "3000", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb dup2race");
	long long pass = h_num_after(r.out, "pass_rounds=", -1);
	cr_assert_gt(pass, 0, "%s", r.out);
	struct h_log log = h_log_load(&c);
	int real = real_syncs(&log, (unsigned long long)h_num_after(r.out, "pass_ino=", 0));
	cr_assert_eq(real, pass, "of %lld fsyncs of the passthrough file (reached through a number two dup2s "
		     "raced for), %d reached it: the others got the noop file's rule", pass, real);
}

/* trustb MODE in DIR (x.noop under a noop rule, passthrough for the rest),
 * real syncs recorded beneath the shim, held at the chain HOLDS (the
 * trustb side makes the hold files as its steps are done). */
static struct h_result dup2_race_run(struct h_cmd *c, const char *dir, const char *mode, const char *holds)
{
	char *hold = h_path(h_fmt("%s.hold", mode));
	char *ini = tr_ini(h_fmt("%s.ini", mode),
			   h_fmt("[shim]\npolicy = passthrough\n[rule n]\npath = %s/*.noop\nsync = noop\n", dir));
	tr_cmd(c, H_SHIM_REC, ini);
	h_env(c, "RECLAYER_OPS=fsync,fdatasync");
	h_envf(c, "SYNCSHIM_TEST_HOLD_AT=%s", holds);
	h_envf(c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
	h_args(c, h_prog("trustb"), mode, "-d", dir, "-l", hold, NULL);
	return h_run(c);
}

/* The window the race above hits only now and then (oracle fdrace:15753764,
 * 15753767, 8439381), made to happen: thread A's dup2 of x.noop reaches
 * the kernel first, main's dup2 of y.pass second (the kernel keeps
 * y.pass), main's slot copy and check run whole, then A's copy names
 * x.noop, and A is held before its own check while main fsyncs the number
 * (a hold chain: the same thread stopped twice). The fsync must reach
 * y.pass, the file the kernel has there. */
Test(trust, fsync_between_a_racing_dup2s_copy_and_its_check_gets_the_kernels_file)
{
	char *d = h_path("s");
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	struct h_result r = dup2_race_run(&c, d, "dup2stale", "dup_onto_kernel,dup_onto_copied");
	h_assert_ok(r, "trustb dup2stale");
	cr_assert(h_has(r.out, "reached=1,1 fsync=0"), "the shim never reached both holds: %s", r.out);
	unsigned long long pass = (unsigned long long)h_num_after(r.out, "pass_ino=", 0);
	cr_assert_eq((unsigned long long)h_num_after(r.out, "kernel_ino=", -1), pass, "the kernel kept the other: %s",
		     r.out);
	struct h_log log = h_log_load(&c);
	cr_assert_eq(real_syncs(&log, pass), 1,
		     "the fsync of the number the kernel gave y.pass got x.noop's rule from a slot copy not yet "
		     "checked: %s",
		     r.out);
}

/* The same race met by the shim's own look-up: a thread syncs a number
 * the shim has not bound (it saw x.noop there), and main's whole dup2 of
 * y.pass onto it lands before that thread binds what it saw. On failfs
 * (no birth times: the inode number alone names a file) that bind named
 * x.noop for good; the next fsync of the number must reach y.pass. Only
 * fsyncs are counted: the racing thread's fdatasync may go either way. */
Test(trust, a_lookup_that_a_dup2_overtakes_binds_nothing_stale)
{
	char *mnt = tr_mount();
	char *d = h_fmt("%s/l", mnt);
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	struct h_result r = dup2_race_run(&c, d, "dup2resolve", "fd_get_resolve");
	h_failfs_umount(mnt);
	h_assert_ok(r, "trustb dup2resolve");
	cr_assert(h_has(r.out, "reached=1 fdatasync=0 fsync=0"), "the shim never reached its hold: %s", r.out);
	unsigned long long pass = (unsigned long long)h_num_after(r.out, "pass_ino=", 0);
	cr_assert_eq((unsigned long long)h_num_after(r.out, "kernel_ino=", -1), pass, "%s", r.out);
	struct h_log log = h_log_load(&c);
	cr_assert_eq(h_count(&log, "fsync", pass), 1,
		     "the fsync of y.pass's number got x.noop's rule from a binding made after the dup2: %s", r.out);
}

/* The same kind of window for mappings: which file is mapped at an address
 * was the shim's to forget after the kernel call, so between a thread's
 * munmap (or MAP_FIXED mmap over it) and the shim's bookkeeping, an
 * msync of the address, where the kernel now has y.pass, got x.noop's
 * rule: MS_SYNC answered with an MS_ASYNC. */
Test(trust, an_msync_while_a_mapping_is_replaced_gets_the_new_files_rule)
{
	static const char *const modes[][2] = { { "unmapstale", "munmap_done" }, { "remapstale", "mmap_fixed_done" } };
	for (int m = 0; m < 2; m++) {
		char *d = h_path(modes[m][0]);
		cr_assert_eq(mkdir(d, 0755), 0);
		char *hold = h_path(h_fmt("%s.hold", modes[m][0]));
		char *ini = tr_ini(h_fmt("%s.ini", modes[m][0]), h_fmt("[shim]\npolicy = passthrough\n[rule n]\n"
									 "path = %s/*.noop\nsync = noop\n", d));
		struct h_cmd c;
		tr_cmd(&c, H_SHIM_REC, ini);
		h_env(&c, "RECLAYER_OPS=msync");
		h_envf(&c, "SYNCSHIM_TEST_HOLD_AT=%s", modes[m][1]);
		h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
		h_args(&c, h_prog("trustb"), modes[m][0], "-d", d, "-l", hold, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, modes[m][0]);
		cr_assert(h_has(r.out, "mapstale: reached=1 msync=0 at_p=1"), "%s: %s", modes[m][0], r.out);
		struct h_log log = h_log_load(&c);
		int full = 0;
		for (size_t i = 0; i < log.n; i++)
			full += !strcmp(log.r[i].op, "msync") && (log.r[i].flags & MS_SYNC) && log.r[i].ret == 0;
		cr_expect_eq(full, 1, "%s: the msync(MS_SYNC) of y.pass's page got x.noop's rule (%d reached libc "
			     "as MS_SYNC)", modes[m][0], full);
	}
}

/* ---- 4: a new file never inherits a deleted file's error or rule ------------ */

/* a.def (defer) gets a deferred sync that fails beneath the shim after
 * its last close, so the error waits for the next opener; it is deleted,
 * and a new file b.N.pass (passthrough) reuses its inode number. b's
 * fsyncs are its own: real, and not failed with a's error. */
Test(trust, new_file_on_a_reused_inode_number_is_a_new_file)
{
	char *d = h_path("i");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = tr_ini("i.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*/*.def\nsync = defer\n"
					  "max_delay_ms = 10000\n", d));
	int reused = 0;
	for (int run = 0; run < 3; run++) {
		char *dr = h_fmt("%s/%d", d, run);
		cr_assert_eq(mkdir(dr, 0755), 0);
		struct h_cmd c;
		tr_cmd(&c, H_SHIM_REC, ini);
		h_env(&c, "RECLAYER_FAIL=sync:EIO:0:1");
		h_args(&c, h_prog("trustb"), "reuse", "-d", dr, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "trustb reuse");
		long long a = h_num_after(r.out, "a=", 0), b = h_num_after(r.out, "b=", 0);
		if (a != b) {
			cr_log_warn("run %d: no new file reused the inode number: %s", run, r.out);
			continue;
		}
		reused++;
		cr_assert(h_has(r.out, "fsync=0,0,0"), "the new file's fsyncs failed with the deleted file's error: "
			  "%s\nstderr:\n%s", r.out, r.err);
		struct h_log log = h_log_load(&c);
		cr_assert_eq(real_syncs(&log, (unsigned long long)b), 1 + 3, "the new passthrough file's 3 fsyncs "
			     "did not all reach it (the deleted file's rule?): %s", r.out);
	}
	cr_assert_gt(reused, 0, "ext4 never reused the inode number here");
}

/* ==== mutations the rest of the suite let survive ============================== */

/* defer: close waits for a background sync that borrowed the number
 * (max_calls = 1 starts it at once; the recording layer makes it last
 * 400 ms): the real close of the number comes after that sync ends, never
 * while it runs on it. */
Test(trust, defer_close_waits_for_the_sync_borrowing_its_number)
{
	char *file = h_path("cl.dat");
	h_write_file(file, "");
	unsigned long long ino = h_ino(file);
	char *ini = tr_ini("cl.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = defer\n"
					   "max_calls = 1\nmax_delay_ms = 10000\n", file));
	struct h_cmd c;
	tr_cmd(&c, H_SHIM_REC, ini);
	h_envf(&c, "RECLAYER_SLOW=%llu:400", ino);
	h_args(&c, h_prog("trustb"), "closelease", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb closelease");
	long fd = (long)h_num_after(r.out, "fd=", -1);
	struct h_log log = h_log_load(&c);
	const struct h_rec *cl = NULL;
	for (size_t i = 0; i < log.n; i++)
		if (!strcmp(log.r[i].op, "close") && log.r[i].fd == fd && log.r[i].ino == ino)
			cl = &log.r[i];
	cr_assert_not_null(cl, "no real close of fd %ld", fd);
	int borrowed = 0;
	for (size_t i = 0; i < log.n; i++) {
		const struct h_rec *s = &log.r[i];
		if ((strcmp(s->op, "fdatasync") && strcmp(s->op, "fsync")) || s->ino != ino || s->fd != fd)
			continue;
		borrowed++;
		cr_assert(s->t1 <= cl->t0 || s->t0 >= cl->t1, "a real sync on fd %ld ran from %llu to %llu while the "
			  "app's close of it ran (%llu..%llu): close did not wait", fd, s->t0, s->t1, cl->t0, cl->t1);
	}
	cr_assert_gt(borrowed, 0, "no background sync borrowed the app's descriptor (nothing was tested)");
}

/* osync = strip: a pwritev2(RWF_DSYNC) write whose flag the shim drops is
 * acknowledged as durable and is not: the log counts it as at risk. */
Test(trust, stripped_rwf_dsync_write_is_data_at_risk)
{
	char *file = h_path("rw.dat"), *log = h_path("rw.log");
	char *ini = tr_ini("rw.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = passthrough\n"
					   "osync = strip\n", file));
	struct h_cmd c;
	tr_cmd(&c, H_SHIM, ini);
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, h_prog("trustb"), "rwfdsync", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb rwfdsync");
	cr_assert(h_has(r.out, "ret=4096"), "%s", r.out);
	struct h_cmd s;
	h_cmd_init(&s, H_PLAIN);
	h_args(&s, h_fmt("%s/synclat", h_ctx.build), "report", log, NULL);
	struct h_result rep = h_run(&s);
	h_assert_ok(rep, "synclat report");
	cr_assert(h_has(rep.out, "at risk: max 4.10 kB"), "the stripped RWF_DSYNC write is not counted as data at "
		  "risk:\n%s", rep.out);
}

/* The log sits at 100 or above: the app's numbering is its own (its next
 * open gets the next number), and a close() of the log's number is
 * EBADF, as it would be without the shim. */
Test(trust, log_descriptor_is_out_of_the_apps_way)
{
	char *file = h_path("ln.dat"), *log = h_path("ln.log");
	struct h_cmd c;
	tr_cmd(&c, H_SHIM, NULL);
	h_env(&c, "SYNCSHIM_POLICY=passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, h_prog("trustb"), "lognum", "-f", file, "-l", log, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb lognum");
	long long fd = h_num_after(r.out, "fd=", -1), logfd = h_num_after(r.out, "logfd=", -1);
	cr_assert_geq(logfd, 100, "the log is not at 100 or above: %s", r.out);
	cr_assert_eq(h_num_after(r.out, "probe=", -1), fd + 1, "the app's next open got another number than "
		     "without the shim: %s", r.out);
	cr_assert(h_has(r.out, "close=EBADF"), "close() of the shim's log descriptor did not fail EBADF: %s", r.out);
}

/* RLIMIT_NOFILE 32 under passthrough with a log: an open that hits the
 * limit gets the log's descriptor back, so the app opens as many files as
 * without the shim. */
static long long nofile_opens(unsigned layers, const char *log)
{
	struct h_cmd c;
	tr_cmd(&c, layers, NULL);
	if (layers & H_SHIM) {
		h_env(&c, "SYNCSHIM_POLICY=passthrough");
		h_envf(&c, "SYNCSHIM_LOG=%s", log);
	}
	h_args(&c, h_prog("trustb"), "nofile", "-f", h_path("nf.dat"), "-L", "32", "-l", log, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb nofile");
	cr_assert(h_has(r.out, "errno=EMFILE"), "%s", r.out);
	if (layers & H_SHIM)
		cr_assert_eq(h_size(log) > 0, true, "the log was never written");
	return h_num_after(r.out, "opens=", -1);
}

Test(trust, emfile_relief_under_passthrough_gives_back_the_log)
{
	char *log = h_path("nf.log");
	long long plain = nofile_opens(H_PLAIN, log), shim = nofile_opens(H_SHIM, log);
	cr_assert_gt(plain, 20);
	cr_assert_eq(shim, plain, "with a log the app opened %lld files, without the shim %lld", shim, plain);
}

/* ---- 13: one write-back error, told once to each open file description ------ */

static struct h_result wberr_run(const char *mnt, unsigned layers, const char *policy, bool turns)
{
	h_failfs_ctl(mnt, "reset");
	h_failfs_ctl(mnt, "write EIO once");
	struct h_cmd c;
	tr_cmd(&c, layers, NULL);
	if (policy)
		h_envf(&c, "SYNCSHIM_POLICY=%s", policy);
	h_args(&c, h_prog("trustb"), "wberr", "-d", mnt, turns ? "-S" : NULL, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb wberr");
	return r;
}

/* Two opens of a file on failfs with the kernel's writeback cache, one
 * write-back failure: each open file description is told it once (its
 * next fsync), as without the shim, whichever opens' calls come first,
 * and nothing is said on stderr (everyone was told). */
Test(trust, writeback_error_told_once_to_each_open)
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
	char *ini = tr_ini(app_path ? "dp.ini" : "dd.ini",
			   h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\n%s\n", mnt,
				 app_path ? "osync = defer" : "sync = defer"));
	struct h_cmd c;
	tr_cmd(&c, H_SHIM, ini);
	h_write_file(h_fmt("%s/%s", store, UNDO_NAME), UNDO_MAGIC);
	h_envf(&c, "SYNCSHIM_CRASH_DIR=%s", store);
	h_envf(&c, "SYNCSHIM_CRASH_SCOPE=%s/*", mnt);
	h_args(&c, h_prog("trustb"), "dupreport", "-d", mnt, app_path ? "-S" : NULL, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "trustb dupreport");
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
Test(trust, second_report_of_a_told_error_is_not_a_sync)
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
Test(trust, fresh_failure_after_a_told_error_is_reported)
{
	for (int app_path = 0; app_path < 2; app_path++) {
		const char *what = app_path ? "the app's own fsync (passthrough)" : "the flusher's (defer)";
		char *dir = h_path(app_path ? "fresh-app" : "fresh-flusher");
		cr_assert_eq(mkdir(dir, 0755), 0);
		char *ini = tr_ini(app_path ? "fp.ini" : "fd.ini",
				   h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\n%s\n", dir,
					 app_path ? "osync = defer" : "sync = defer"));
		struct h_cmd c;
		tr_cmd(&c, H_SHIM_REC, ini);
		h_env(&c, "RECLAYER_FAIL=sync:EIO:0:2");
		h_env(&c, "RECLAYER_FAIL_SUFFIX=.dat");
		h_args(&c, h_prog("trustb"), "dupreport", "-d", dir, app_path ? "-S" : NULL, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "trustb dupreport");
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
