/*
 * test_launcher.c - the launcher says when it cannot work: exit statuses
 * as a shell's, programs the loader will not preload into (setuid,
 * setgid, static), and syncshim ab comparing only its own logs.
 */
#include <sys/statvfs.h>

#include "harness.h"

TestSuite(launch, .init = h_setup, .fini = h_teardown, .timeout = 60);

static char *syncshim_bin(void)
{
	return h_fmt("%s/syncshim", h_ctx.build);
}

/* A command running the launcher; the ASan runtime first when the shim
 * needs it (as in test_log.c). */
static void launcher_cmd(struct h_cmd *c)
{
	h_cmd_init(c, H_PLAIN);
	if (h_ctx.prefix[0])
		h_envf(c, "LD_PRELOAD=%s", h_ctx.prefix);
}

static struct h_result run_cmd(const char *cmd)
{
	struct h_cmd c;
	launcher_cmd(&c);
	h_args(&c, syncshim_bin(), "run", "-p", "noop", "--", cmd, NULL);
	return h_run(&c);
}

/* 127: there is no such command; 126: there is, but it cannot be run. */
Test(launch, run_exit_status_like_a_shell)
{
	struct h_result r = run_cmd(h_path("no-such-program"));
	cr_expect_eq(r.code, 127, "missing: exit %d\n%s", r.code, r.err);
	r = run_cmd("no-such-program-in-path");
	cr_expect_eq(r.code, 127, "not in PATH: exit %d\n%s", r.code, r.err);

	char *plain = h_path("not-executable");
	h_write_file(plain, "#!/bin/sh\nexit 0\n");
	cr_assert_eq(chmod(plain, 0644), 0);
	r = run_cmd(plain);
	cr_expect_eq(r.code, 126, "not executable: exit %d\n%s", r.code, r.err);
	cr_expect(h_has(r.err, "Permission denied"), "%s", r.err);

	r = run_cmd(h_ctx.dir);
	cr_expect_eq(r.code, 126, "a directory: exit %d\n%s", r.code, r.err);
}

/* A copy of a test program with set-id bits, owned by nobody. */
static char *setid_copy(const char *prog, const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to make set-id programs");
	struct statvfs vfs;
	if (statvfs(h_ctx.dir, &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
		cr_skip_test("%s is on a nosuid mount", h_ctx.dir);
	char *dst = h_path(name);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, "cp", h_prog(prog), dst, NULL);
	h_assert_ok(h_run(&c), "cp");
	cr_assert_eq(chown(dst, uid, gid), 0, "chown: %s", strerror(errno));
	cr_assert_eq(chmod(dst, mode), 0); /* after chown, which clears set-id bits */
	return dst;
}

/* The loader drops LD_PRELOAD for a program that gains privileges: run
 * warns (and the program runs, unshimmed), as for a static binary. */
Test(launch, setid_programs_warn_and_run_unshimmed)
{
	static const struct {
		const char *name, *words;
		mode_t mode;
		uid_t uid;
		gid_t gid;
	} cases[] = {
		{ "suid-print-env", "setuid", 04755, 65534, 0 },
		{ "sgid-print-env", "setgid", 02755, 0, 65534 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *bin = setid_copy("print_env", cases[i].name, cases[i].mode, cases[i].uid, cases[i].gid);
		struct h_result r = run_cmd(bin);
		cr_expect_eq(r.code, 0, "%s: exit %d\n%s", cases[i].name, r.code, r.err);
		cr_expect(h_has(r.out, "shim=no"), "%s: the loader kept the shim?\n%s", cases[i].name, r.out);
		cr_expect(h_has(r.err, "syncshim: warning") && h_has(r.err, cases[i].words) &&
				  h_has(r.err, "ignores LD_PRELOAD"),
			  "%s: want a warning naming %s:\n%s", cases[i].name, cases[i].words, r.err);
	}
}

static struct h_result ab_of(const char *dir, const char *const *cmd)
{
	struct h_cmd c;
	launcher_cmd(&c);
	h_args(&c, syncshim_bin(), "ab", "-n", "1", "-o", dir, "passthrough", "noop", "--", NULL);
	for (; *cmd; cmd++)
		h_arg(&c, *cmd);
	return h_run(&c);
}

/* An A/B of a program the shim cannot reach would compare nothing:
 * refused before the first round, with the reason. */
Test(launch, ab_refuses_what_it_cannot_reach)
{
	char *suid = setid_copy("print_env", "suid-print-env", 04755, 65534, 0);
	const char *const suid_cmd[] = { suid, NULL };
	struct h_result r = ab_of(h_path("ab-suid"), suid_cmd);
	cr_expect_eq(r.code, 1, "setuid: exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.err, "setuid") && h_has(r.err, "nothing to compare"), "%s", r.err);
	cr_expect(!h_has(r.out, "round 1"), "rounds ran:\n%s", r.out);

	const char *const missing[] = { h_path("nope"), NULL };
	r = ab_of(h_path("ab-missing"), missing);
	cr_expect_eq(r.code, 127, "missing: exit %d\n%s", r.code, r.err);
	cr_expect(!h_has(r.out, "round 1"), "rounds ran:\n%s", r.out);

	const char *stat_bin = "/sbin/ldconfig"; /* static-pie on Debian */
	struct h_cmd f;
	h_cmd_init(&f, H_PLAIN);
	h_args(&f, "file", "-L", stat_bin, NULL);
	struct h_result fr = h_run(&f);
	if (fr.code != 0 || !h_has(fr.out, "static"))
		cr_skip_test("no static %s here to try ab on", stat_bin);
	const char *const static_cmd[] = { stat_bin, "-p", NULL };
	r = ab_of(h_path("ab-static"), static_cmd);
	cr_expect_eq(r.code, 1, "static: exit %d\n%s", r.code, r.err);
	cr_expect(h_has(r.err, "statically linked") && h_has(r.err, "nothing to compare"), "%s", r.err);
}

/* -o DIR holding an earlier run's logs: they stay, but only this run's
 * logs are compared. */
Test(launch, ab_compares_only_its_own_logs)
{
	char *dir = h_path("ab");
	cr_assert_eq(mkdir(dir, 0700), 0);
	/* an earlier run's log under a name ab used to give its own */
	char *old = h_fmt("%s/A-1.4242.log", dir);
	struct h_cmd p;
	h_cmd_policy(&p, H_SHIM, "passthrough");
	h_envf(&p, "SYNCSHIM_LOG=%s", old);
	h_args(&p, h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "20", "-f", h_path("old.dat"), NULL);
	h_assert_ok(h_run(&p), "the earlier run");
	cr_assert_gt(h_size(old), 0, "the earlier run wrote no log");

	const char *const cmd[] = { h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "50", "-f",
				    h_path("ab.dat"), NULL };
	struct h_result r = ab_of(dir, cmd);
	cr_assert_eq(r.code, 0, "syncshim ab: %s\n%s", r.out, r.err);
	cr_expect(!h_has(r.out, "A-1.4242.log"), "the earlier log was compared:\n%s", r.out);
	cr_expect(h_has(r.out, "1 log of earlier runs"), "no word about the earlier log:\n%s", r.out);
	cr_expect_gt(h_size(old), 0, "the earlier log is kept");
	char *html = h_read_file(h_fmt("%s/compare.html", dir));
	cr_expect(!h_has(html, "A-1.4242.log"), "the page lists the earlier log");
}

/* syncshim check and run -c read the config with the shim's own reader:
 * a FIFO is refused at once, not waited on; a NUL byte is refused too. */
Test(launch, check_and_run_c_refuse_a_fifo_at_once)
{
	char *fifo = h_path("config.fifo");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	struct h_cmd c;
	launcher_cmd(&c);
	c.timeout_s = 10;
	h_args(&c, syncshim_bin(), "check", fifo, NULL);
	struct h_result r = h_run(&c);
	cr_assert(!r.timed_out, "syncshim check waited on the FIFO");
	cr_expect_eq(r.code, 2, "check: exit %d\n%s", r.code, r.err);
	cr_expect(h_has(r.err, "is a FIFO"), "%s", r.err);
	cr_expect_lt(r.secs, 1.0 + 2.0 * h_ctx.asan);

	launcher_cmd(&c);
	c.timeout_s = 10;
	char *f = h_path("run-c.dat");
	h_args(&c, syncshim_bin(), "run", "-c", fifo, "--", h_prog("syncloop"), "-f", f, "-n", "10", NULL);
	r = h_run(&c);
	cr_assert(!r.timed_out, "syncshim run -c waited on the FIFO");
	cr_expect_eq(r.code, 0, "run -c: exit %d\n%s", r.code, r.err);
	cr_expect_eq(h_nlines(r.err), 1, "%s", r.err);
	cr_expect(h_has(r.err, "is a FIFO") && h_has(r.err, "running as passthrough"), "%s", r.err);
}
