/*
 * test_profile.c - `syncshim profile` and `synclat suggest`: a program run
 * under passthrough with every call logged, what it does with each file,
 * and the rules proposed for it. The programs' own behaviour is the truth
 * the proposal is checked against (tests/progs/profile_mix.c does one of
 * each kind of file; fl_group syncs one file from threads at once; Redis
 * is the real service), and every proposal must pass `syncshim check`,
 * whose per-path answer says which rule each real file gets.
 */
#include <signal.h>
#include <sys/stat.h>

#include "harness.h"

TestSuite(profile, .init = h_setup, .fini = h_teardown, .timeout = 120);

static void plain(struct h_cmd *c)
{
	h_cmd_init(c, H_PLAIN);
	if (h_ctx.prefix[0])
		h_envf(c, "LD_PRELOAD=%s", h_ctx.prefix);
	h_envf(c, "SYNCSHIM_BUILD=%s", h_ctx.build);
	h_envf(c, "TMPDIR=%s", h_ctx.dir);
}

/* syncshim check INI PATH: the line saying which rule PATH gets. */
static char *check_line(const char *ini, const char *path)
{
	struct h_result r = h_sh(h_fmt("'%s/syncshim' check '%s' '%s' | grep -F -- '%s:' | tail -1", h_ctx.build, ini,
				       path, path), 30);
	return r.out;
}

static struct h_result profile_mix(const char *data, const char *ini, int n)
{
	cr_assert_eq(mkdir(data, 0755), 0);
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 90;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "-o", ini, "--", h_prog("profile_mix"), data,
	       h_fmt("%d", n), NULL);
	return h_run(&c);
}

/* An append+fsync log pair, an O_DSYNC file, a file published by rename
 * and a directory fsync: each gets its rule, the numbered pair one glob,
 * and the proposal passes check. */
Test(profile, each_kind_of_file_gets_its_rule)
{
	char *data = h_path("data"), *ini = h_path("proposed.ini");
	struct h_result r = profile_mix(data, ini, 200);
	cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.out, r.err);

	/* the report: the facts of each file */
	cr_expect(h_has(r.out, "append-only (O_APPEND)"), "%s", r.out);
	cr_expect(h_has(r.out, "journal.dat; positional writes (pwrite: may overwrite); 1 O_SYNC/O_DSYNC open"), "%s",
		  r.out);
	cr_expect(h_has(r.out, "state.tmp; sequential writes (write/writev); truncated at open; renamed into place (20x)"),
		  "%s", r.out);
	cr_expect(h_has(r.out, "directory syncs: 20 "), "%s", r.out);
	cr_expect(h_has(r.out, "     100 "), "seg-1.log's 100 syncs:\n%s", r.out);
	cr_expect(!h_has(r.out, "notes.txt"), "a file never synced is no rule's business:\n%s", r.out);

	/* the ini: valid, one glob for the pair, each file under its rule */
	char *text = h_read_file(ini);
	cr_assert_not_null(text, "no proposal written");
	struct h_result chk = h_sh(h_fmt("'%s/syncshim' check '%s'", h_ctx.build, ini), 30);
	cr_expect_eq(chk.code, 0, "syncshim check: %s%s", chk.out, chk.err);
	cr_expect(h_has(text, h_fmt("path = %s/seg-*.log\nsync = defer\nmax_delay_ms = ", data)), "%s", text);
	cr_expect(!h_has(text, "seg-1.log"), "the numbered pair is one glob:\n%s", text);
	cr_expect(h_has(text, h_fmt("path = %s/journal.dat\nsync = defer\n", data)), "%s", text);
	cr_expect(h_has(text, h_fmt("path = %s/state.tmp\nsync = passthrough\n", data)), "%s", text);
	cr_expect(h_has(text, "renamed into place"), "the reason is written:\n%s", text);
	cr_expect(h_has(text, "directory sync"), "%s", text);

	cr_expect(h_has(check_line(ini, h_fmt("%s/seg-2.log", data)), "policy defer"));
	cr_expect(h_has(check_line(ini, h_fmt("%s/seg-9.log", data)), "policy defer"), "a later segment too");
	cr_expect(h_has(check_line(ini, h_fmt("%s/journal.dat", data)), "policy defer"));
	cr_expect(h_has(check_line(ini, h_fmt("%s/state.tmp", data)), "policy passthrough"));
	cr_expect(h_has(check_line(ini, h_fmt("%s/notes.txt", data)), "no rule matches"));

	/* nothing left of the run: its temp dir is gone */
	struct h_result left = h_sh(h_fmt("ls -d '%s'/syncshim-profile.* 2>/dev/null", h_ctx.dir), 10);
	cr_expect_str_eq(left.out, "", "left behind: %s", left.out);
}

/* The proposal is side B of syncshim ab as it is: the same program under
 * it defers the segments' and journal's syncs (the flusher's real syncs
 * show in the log) and still syncs state.tmp itself. */
Test(profile, the_proposal_is_side_b_of_ab)
{
	char *data = h_path("data"), *ini = h_path("proposed.ini"), *run = h_path("ab");
	struct h_result r = profile_mix(data, ini, 100);
	cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.out, r.err);
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 90;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "ab", "-n", "1", "-m", "calls", "-o", run, "passthrough", ini, "--",
	       h_prog("profile_mix"), data, "100", NULL);
	struct h_result ab = h_run(&c);
	cr_assert_eq(ab.code, 0, "exit %d\n%s%s", ab.code, ab.out, ab.err);
	cr_expect(h_has(ab.out, "real_fdatasync"), "no deferred syncs on B:\n%s", ab.out);
	struct h_result files = h_sh(h_fmt("'%s/synclat' report --files '%s'/B-*.log", h_ctx.build, run), 30);
	cr_expect(h_has(files.out, "seg-N.log"), "the segments under the proposed rule:\n%s", files.out);
}

/* Two threads syncing one file at once: group, which shares their syncs
 * and loses nothing, rather than defer. */
Test(profile, overlapping_syncs_get_group)
{
	char *file = h_path("shared.dat"), *ini = h_path("proposed.ini");
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 90;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "-o", ini, "--", h_prog("fl_group"), "-f", file, "-o",
	       h_path("times"), "-t", "4", "-n", "100", NULL);
	struct h_result r = h_run(&c);
	cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.out, r.err);
	char *text = h_read_file(ini);
	cr_assert_not_null(text);
	cr_expect(h_has(text, h_fmt("path = %s\nsync = group\n", file)), "%s\n%s", text, r.out);
	cr_expect(h_has(text, "overlapping"), "%s", text);
}

/* --duration stops a program that would run on, its whole group, and
 * the profile still reads its logs. */
Test(profile, duration_stops_the_program)
{
	char *file = h_path("loop.dat");
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 60;
	double t0 = h_now();
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "--duration", "1", "--", "/bin/sh", "-c",
	       h_fmt("'%s' -f '%s' -n 100000000 -s 64 & wait", h_prog("syncloop"), file), NULL);
	struct h_result r = h_run(&c);
	double secs = h_now() - t0;
	cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect_lt(secs, 30, "took %.1f s", secs);
	cr_expect(h_has(r.out, "loop.dat"), "%s", r.out);
	cr_expect(h_has(r.out, "[shim]\n"), "the proposal follows the report without -o:\n%s", r.out);
	struct h_result left = h_sh(h_fmt("pgrep -f -- '[s]yncloop -f %s'", file), 10);
	cr_expect_str_eq(left.out, "", "still running: %s", left.out);
}

/* Redis with an always-fsync AOF, profiled as a service: its AOF under a
 * relaxed rule, the files it publishes by rename (the manifest, the
 * rewritten AOF) kept durable, a valid ini; no server and no temp dir
 * left. */
Test(profile, redis_names_its_aof)
{
	if (access("/usr/bin/redis-server", X_OK) != 0 || access("/usr/bin/redis-benchmark", X_OK) != 0)
		cr_skip_test("redis-server and redis-benchmark are not installed (make deps installs them)");
	char *sock = h_path("redis.sock"), *data = h_path("data"), *ini = h_path("redis.ini");
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 90;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "-o", ini, "--setup",
	       h_fmt("rm -rf '%s' && mkdir '%s'", data, data), "--ready", h_fmt("unix:%s", sock), "--load",
	       h_fmt("redis-benchmark -s '%s' -t set -n 2000 -c 4 -q", sock), "--", "redis-server", "--port", "0",
	       "--unixsocket", sock, "--dir", data, "--appendonly", "yes", "--appendfsync", "always", "--save", "",
	       "--daemonize", "no", NULL);
	struct h_result r = h_run(&c);
	struct h_result left = h_sh(h_fmt("pgrep -f -- 'unixsocket[ ]%s' ; ls -d '%s'/syncshim-profile.* 2>/dev/null",
					 sock, h_ctx.dir), 10);
	cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect_str_eq(left.out, "", "left behind:\n%s", left.out);
	char *text = h_read_file(ini);
	cr_assert_not_null(text);
	cr_expect(h_has(text, h_fmt("path = %s/appendonlydir/appendonly.aof.*.incr.aof\nsync = defer\n", data)), "%s",
		  text);
	cr_expect(h_has(text, h_fmt("path = %s/appendonlydir/temp-appendonly.aof.manifest\nsync = passthrough\n", data)),
		  "%s", text);
	struct h_result chk = h_sh(h_fmt("'%s/syncshim' check '%s'", h_ctx.build, ini), 30);
	cr_expect_eq(chk.code, 0, "%s%s", chk.out, chk.err);
	cr_expect(h_has(check_line(ini, h_fmt("%s/appendonlydir/appendonly.aof.2.incr.aof", data)), "policy defer"));
}

/*
 * Issue 28, item 9: a file name writes no rules. A program syncs a file
 * named "journal\nosync = strip\non_close = async" and one named
 * "semi ;colon.log" (a ';' after a space starts an ini comment). The first
 * cannot be named by any ini value: it is left out with a note, and no
 * line of the proposal sets osync or on_close. The second is written
 * escaped, and check puts that very file under its defer rule.
 */
Test(profile, a_file_name_writes_no_rules)
{
	char *data = h_path("data"), *ini = h_path("proposed.ini");
	cr_assert_eq(mkdir(data, 0755), 0);
	char *evil = h_fmt("%s/journal\nosync = strip\non_close = async", data), *semi = h_fmt("%s/semi ;colon.log", data);
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 90;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "-o", ini, "--", "/bin/sh", "-c",
	       "\"$0\" -f \"$1\" -n 300 && \"$0\" -f \"$2\" -n 300", h_prog("syncloop"), evil, semi, NULL);
	struct h_result r = h_run(&c);
	cr_assert_eq(r.code, 0, "exit %d\n%s%s", r.code, r.out, r.err);
	cr_assert_eq(access(evil, F_OK), 0, "the program never made the file");
	char *text = h_read_file(ini);
	cr_assert_not_null(text, "no proposal written");
	cr_expect(!h_has(text, "\nosync = strip") && !h_has(text, "\non_close = async"),
		  "a file name wrote rules:\n%s", text);
	cr_expect(h_has(text, "1 group of files whose names hold a control character"), "no note:\n%s", text);
	cr_expect(h_has(text, h_fmt("path = %s/semi \\;colon.log\nsync = defer\n", data)), "%s", text);
	struct h_result chk = h_sh(h_fmt("'%s/syncshim' check '%s'", h_ctx.build, ini), 30);
	cr_expect_eq(chk.code, 0, "%s%s", chk.out, chk.err);
	cr_expect(h_has(check_line(ini, semi), "policy defer"), "%s", text);
	/* the file itself keeps the default, as every file no rule names */
	struct h_cmd k;
	plain(&k);
	h_args(&k, h_fmt("%s/syncshim", h_ctx.build), "check", ini, evil, NULL);
	struct h_result kr = h_run(&k);
	cr_expect(h_has(kr.out, "1 rule,") && h_has(kr.out, "no rule matches: the default, policy passthrough"),
		  "%s", kr.out);
}

/* A bad invocation: one line and exit 2; a program that cannot be run:
 * no log, exit 2, and the temp dir kept and named. */
Test(profile, failures_say_what)
{
	struct h_cmd c;
	plain(&c);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "--load", "true", "--", "/bin/true", NULL);
	struct h_result r = h_run(&c);
	cr_expect_eq(r.code, 2);
	cr_expect_eq(h_nlines(r.err), 1, "%s", r.err);
	cr_expect(h_has(r.err, "syncshim profile: a service needs both --ready PROBE and --load CMD"), "%s", r.err);
	plain(&c);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "profile", "--", "/bin/true", NULL);
	r = h_run(&c);
	cr_expect_eq(r.code, 2, "%s%s", r.out, r.err);
	cr_expect(h_has(r.err, "no latency log"), "%s", r.err);
}

/* PostgreSQL under pgbench, profiled by examples/postgres/ab.sh -P: the
 * WAL (pg_wal/) under a relaxed rule, the files it writes then renames
 * (pg_stat/, pg_logical/, pg_internal.init) kept durable, a valid ini; no
 * postgres and no work dir left. As root the server runs as postgres. */
Test(profile, postgres_names_its_wal, .timeout = 240)
{
	h_need_postgres();
	char *work = h_path("pg"), *ini = h_path("pg.ini");
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 220;
	char cwd[PATH_MAX];
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	h_args(&c, h_fmt("%s/examples/postgres/ab.sh", cwd), "-w", work, "-t", "2", "-c", "2", "-P", ini, NULL);
	struct h_result r = h_run(&c);
	struct h_result left = h_sh(h_fmt("pgrep -f -- '[-]D %s/' ; ls -d '%s' 2>/dev/null", work, work), 10);
	cr_assert_eq(r.code, 0, "exit %d%s\n%s%s", r.code, r.timed_out ? " (timed out)" : "", r.out, r.err);
	cr_expect_str_eq(left.out, "", "left behind:\n%s", left.out);
	char *text = h_read_file(ini);
	cr_assert_not_null(text);
	cr_expect(h_has(text, h_fmt("path = %s/data/pg_wal/*\nsync = defer\n", work)), "%s\n%s", text, r.out);
	cr_expect(h_has(r.out, "renamed into place"), "%s", r.out);
	struct h_result chk = h_sh(h_fmt("'%s/syncshim' check '%s'", h_ctx.build, ini), 30);
	cr_expect_eq(chk.code, 0, "%s%s", chk.out, chk.err);
	cr_expect(h_has(check_line(ini, h_fmt("%s/data/pg_wal/000000010000000000000007", work)), "policy defer"));
	cr_expect(h_has(check_line(ini, h_fmt("%s/data/global/pg_control", work)), "policy passthrough"));
}
