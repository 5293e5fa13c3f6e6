/*
 * test_fd_races.c - threads racing over one descriptor number or address:
 * dup2s onto the same number, a dup2 overtaking the shim's look-up, a
 * mapping replaced under an msync, a close while a sync borrows the
 * number: the number always gets the rule of the file the kernel has
 * there.
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

TestSuite(fd_races, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

/* ---- a failed dup2 onto an O_SYNC file keeps its binding ----------------- */

static int dup2fail_syncs(bool skip)
{
	char *file = h_path(skip ? "s.dat" : "d.dat");
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=defer");
	h_args(&c, h_prog("fd_races"), "dup2fail", "-f", file, skip ? "-x" : NULL, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fd_races dup2fail");
	if (!skip)
		cr_assert(h_has(r.out, "dup2=-1 errno=EBADF"), "%s", r.out);
	struct h_log log = h_log_load(&c);
	return h_real_syncs(&log, (unsigned long long)h_num_after(r.out, "ino=", 0));
}

Test(fd_races, failed_dup2_onto_osync_file_keeps_its_syncs)
{
	cr_assert_geq(dup2fail_syncs(true), 1, "O_SYNC writes under defer got no real sync at all");
	cr_assert_geq(dup2fail_syncs(false), 1,
		      "after a failed dup2 onto it, the O_SYNC file's writes were never synced");
}

/* ---- two threads dup2 onto one number at once ---------------------------- */

/* x.noop's rule is noop, y.pass's passthrough; two threads dup2 one each
 * onto the same number, and the number is fsynced: whenever the kernel
 * kept y.pass, the fsync must reach it. */
Test(fd_races, racing_dup2s_never_give_a_number_the_other_files_rule)
{
	char *d = h_path("r");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = h_ini("r.ini", h_fmt("[shim]\npolicy = passthrough\n[rule n]\npath = %s/*.noop\nsync = noop\n", d));
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM_REC, ini);
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync");
	h_args(&c, h_prog("fd_races"), "dup2race", "-d", d, "-n", h_ctx.asan ? "1000" : "3000", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fd_races dup2race");
	long long pass = h_num_after(r.out, "pass_rounds=", -1);
	cr_assert_gt(pass, 0, "%s", r.out);
	struct h_log log = h_log_load(&c);
	int real = h_real_syncs(&log, (unsigned long long)h_num_after(r.out, "pass_ino=", 0));
	cr_assert_eq(real, pass, "of %lld fsyncs of the passthrough file (reached through a number two dup2s "
		     "raced for), %d reached it: the others got the noop file's rule", pass, real);
}

/* fd_races MODE in DIR (x.noop under a noop rule, passthrough for the rest),
 * real syncs recorded beneath the shim, held at the chain HOLDS (the
 * program makes the hold files as its steps are done). */
static struct h_result dup2_race_run(struct h_cmd *c, const char *dir, const char *mode, const char *holds)
{
	char *hold = h_path(h_fmt("%s.hold", mode));
	char *ini = h_ini(h_fmt("%s.ini", mode),
			   h_fmt("[shim]\npolicy = passthrough\n[rule n]\npath = %s/*.noop\nsync = noop\n", dir));
	h_cmd_ini(c, H_SHIM_REC, ini);
	h_env(c, "RECLAYER_OPS=fsync,fdatasync");
	h_envf(c, "SYNCSHIM_TEST_HOLD_AT=%s", holds);
	h_envf(c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
	h_args(c, h_prog("fd_races"), mode, "-d", dir, "-l", hold, NULL);
	return h_run(c);
}

/* The window the race above hits only now and then (a noop rule
 * answering for the passthrough file the kernel has), made to happen: thread A's dup2 of x.noop reaches
 * the kernel first, main's dup2 of y.pass second (the kernel keeps
 * y.pass), main's slot copy and check run whole, then A's copy names
 * x.noop, and A is held before its own check while main fsyncs the number
 * (a hold chain: the same thread stopped twice). The fsync must reach
 * y.pass, the file the kernel has there. */
Test(fd_races, fsync_between_a_racing_dup2s_copy_and_its_check_gets_the_kernels_file)
{
	char *d = h_path("s");
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	struct h_result r = dup2_race_run(&c, d, "dup2stale", "dup_onto_kernel,dup_onto_copied");
	h_assert_ok(r, "fd_races dup2stale");
	cr_assert(h_has(r.out, "reached=1,1 fsync=0"), "the shim never reached both holds: %s", r.out);
	unsigned long long pass = (unsigned long long)h_num_after(r.out, "pass_ino=", 0);
	cr_assert_eq((unsigned long long)h_num_after(r.out, "kernel_ino=", -1), pass, "the kernel kept the other: %s",
		     r.out);
	struct h_log log = h_log_load(&c);
	cr_assert_eq(h_real_syncs(&log, pass), 1,
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
Test(fd_races, a_lookup_that_a_dup2_overtakes_binds_nothing_stale)
{
	char *mnt = h_failfs_new();
	char *d = h_fmt("%s/l", mnt);
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	struct h_result r = dup2_race_run(&c, d, "dup2resolve", "fd_get_resolve");
	h_failfs_umount(mnt);
	h_assert_ok(r, "fd_races dup2resolve");
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
Test(fd_races, an_msync_while_a_mapping_is_replaced_gets_the_new_files_rule)
{
	static const char *const modes[][2] = { { "unmapstale", "munmap_done" }, { "remapstale", "mmap_fixed_done" } };
	for (int m = 0; m < 2; m++) {
		char *d = h_path(modes[m][0]);
		cr_assert_eq(mkdir(d, 0755), 0);
		char *hold = h_path(h_fmt("%s.hold", modes[m][0]));
		char *ini = h_ini(h_fmt("%s.ini", modes[m][0]), h_fmt("[shim]\npolicy = passthrough\n[rule n]\n"
									 "path = %s/*.noop\nsync = noop\n", d));
		struct h_cmd c;
		h_cmd_ini(&c, H_SHIM_REC, ini);
		h_env(&c, "RECLAYER_OPS=msync");
		h_envf(&c, "SYNCSHIM_TEST_HOLD_AT=%s", modes[m][1]);
		h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
		h_args(&c, h_prog("fd_races"), modes[m][0], "-d", d, "-l", hold, NULL);
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

/* defer: close waits for a background sync that borrowed the number
 * (max_calls = 1 starts it at once; the recording layer makes it last
 * 400 ms): the real close of the number comes after that sync ends, never
 * while it runs on it. */
Test(fd_races, defer_close_waits_for_the_sync_borrowing_its_number)
{
	char *file = h_path("cl.dat");
	h_write_file(file, "");
	unsigned long long ino = h_ino(file);
	char *ini = h_ini("cl.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s\nsync = defer\n"
					   "max_calls = 1\nmax_delay_ms = 10000\n", file));
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM_REC, ini);
	h_envf(&c, "RECLAYER_SLOW=%llu:400", ino);
	h_args(&c, h_prog("fd_races"), "closelease", "-f", file, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fd_races closelease");
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

/* ---- no recycling under a running sync ---------------------------------- */

Test(fd_races, file_state_survives_a_close_during_its_sync)
{
	char *a = h_path("a.dat");
	h_write_file(a, "");
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM_REC, "group");
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
		cr_assert_geq(h_real_syncs(&log, ino), 1, "n.%d.dat: its fsync returned 0 without a real sync", k);
	}
}
