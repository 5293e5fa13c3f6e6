/*
 * test_unseen_fds.c - descriptors closed, made or replaced out of the
 * shim's sight (a raw close, close_range, mkstemp, fcloseall, daemon): the
 * shim checks again and neither misapplies a rule nor swallows an error.
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

TestSuite(unseen_fds, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

static unsigned long long ino_of_line(const char *out, const char *key)
{
	return (unsigned long long)h_num_after(out, key, 0);
}

/* ---- descriptors closed behind the shim's back -------------------------- */

Test(unseen_fds, stale_slot_of_a_raw_closed_number)
{
	char *log = h_path("s.log");
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM_REC, "defer");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_env(&c, "SYNCSHIM_LOG_MODE=calls");
	h_args(&c, h_prog("stale_slot"), "-d", h_ctx.dir, "-m", "reuse", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "stale_slot reuse");
	cr_assert(h_has(r.out, "fsync=0 errno=0"), "s.dat got an error that was not its own:\n%s", r.out);
	unsigned long long sock = ino_of_line(r.out, "sock_ino=");
	struct h_log rec = h_log_load(&c);
	cr_assert_eq(h_real_syncs(&rec, sock), 0, "the shim synced the socket that took the old number");
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

Test(unseen_fds, close_range_does_not_swallow_a_deferred_error)
{
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM_REC, "defer");
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO");
	h_args(&c, h_prog("stale_slot"), "-d", h_ctx.dir, "-m", "range", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "stale_slot range");
	cr_assert(h_has(r.err, h_fmt("deferred sync of %s/s.dat failed (EIO", h_ctx.dir)), "stderr:\n%s", r.err);
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

Test(unseen_fds, mkstemp_files_get_their_rule)
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
	cr_assert_eq(h_real_syncs(&log, h_ino(path)), 0, "%s matches a noop rule, yet its fsync reached libc", path);
}

/* fcloseall closes inside libc; a raw open then takes the number. The old
 * binding (a noop file) must not be trusted for the new file's fsync. */
Test(unseen_fds, fcloseall_makes_the_shim_check_again)
{
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", unseen_ini());
	h_args(&c, h_prog("unseen"), "-d", h_ctx.dir, "-m", "fcloseall", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "unseen -m fcloseall");
	struct h_log log = h_log_load(&c);
	cr_assert_eq(h_real_syncs(&log, ino_of_line(r.out, "b_ino=")), 1,
		     "b.dat (passthrough) took a noop file's old number: its fsync was skipped");
}

/* daemon puts /dev/null on stdout with libc's own dup2: fsync(1) is then
 * the real call on /dev/null (EINVAL), not the noop of the file stdout was. */
Test(unseen_fds, daemon_makes_the_shim_check_again)
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
