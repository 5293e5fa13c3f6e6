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
		cr_expect(h_has(r.err, "syncshim run: warning") && h_has(r.err, cases[i].words) &&
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
	cr_expect_eq(r.code, 2, "run -c: exit %d\n%s", r.code, r.err);
	cr_expect_eq(h_nlines(r.err), 1, "%s", r.err);
	cr_expect(h_has(r.err, "is a FIFO") && h_has(r.err, "nothing was run"), "%s", r.err);
	cr_expect_eq(access(f, F_OK), -1, "the command ran");
}

/* ---- fail closed where a person watches: a typo in -p, -c or an ini side
 * is one line and exit 2, and nothing runs (no file, no round) ---- */

/* A command that leaves a mark if it runs at all. */
static const char *mark_cmd(const char *mark)
{
	return h_fmt("touch '%s'", mark);
}

Test(launch, typos_exit_2_and_run_nothing)
{
	char *typo = h_path("typo.ini"), *good = h_path("good.ini"), *mark = h_path("ran");
	h_write_file(typo, "[shim]\npolicy = defer\nmax_delay_m = 50\n");
	h_write_file(good, "[shim]\npolicy = defer\nmax_delay_ms = 50\n");
	const char *ct_scope = h_path("scope/*");
	static const struct {
		const char *what, *words;
	} rows[] = {
		{ "run -p defere", "unknown policy 'defere'" },
		{ "run --policy defere", "unknown policy 'defere'" },
		{ "run -c missing", "missing.ini: cannot read" },
		{ "run -c typo", "typo.ini:3: unknown key 'max_delay_m'" },
		{ "run -m bogus", "unknown log mode 'bogus'" },
		{ "ab passthrough typo", "typo.ini:3: unknown key 'max_delay_m'" },
		{ "ab typo passthrough", "typo.ini:3: unknown key 'max_delay_m'" },
		{ "ab passthrough defere", "'defere' is neither a policy" },
		{ "ab service typo", "typo.ini:3: unknown key 'max_delay_m'" },
		{ "crashtest -c typo", "typo.ini:3: unknown key 'max_delay_m'" },
		{ "crashtest -p defere", "unknown policy 'defere'" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct h_cmd c;
		launcher_cmd(&c);
		c.timeout_s = 20;
		const char *w = rows[i].what, *sub = strchr(w, ' ') ? h_fmt("%.*s", (int)(strchr(w, ' ') - w), w) : w;
		h_args(&c, syncshim_bin(), sub, NULL);
		if (!strcmp(w, "run -p defere"))
			h_args(&c, "-p", "defere", NULL);
		else if (!strcmp(w, "run --policy defere"))
			h_args(&c, "--policy", "defere", NULL);
		else if (!strcmp(w, "run -c missing"))
			h_args(&c, "-c", h_path("missing.ini"), NULL);
		else if (!strcmp(w, "run -c typo"))
			h_args(&c, "-c", typo, NULL);
		else if (!strcmp(w, "run -m bogus"))
			h_args(&c, "-c", good, "-m", "bogus", NULL);
		else if (!strcmp(w, "ab passthrough typo"))
			h_args(&c, "-n", "1", "-o", h_path("ab"), "passthrough", typo, NULL);
		else if (!strcmp(w, "ab typo passthrough"))
			h_args(&c, "-n", "1", "-o", h_path("ab"), typo, "passthrough", NULL);
		else if (!strcmp(w, "ab passthrough defere"))
			h_args(&c, "-n", "1", "-o", h_path("ab"), "passthrough", "defere", NULL);
		else if (!strcmp(w, "ab service typo"))
			h_args(&c, "-n", "1", "-o", h_path("ab"), "passthrough", typo, "--ready", h_fmt("file:%s", mark),
			       "--load", mark_cmd(mark), NULL);
		else if (!strcmp(w, "crashtest -c typo"))
			h_args(&c, "-n", "1", "-c", typo, "--scope", ct_scope, NULL);
		else
			h_args(&c, "-n", "1", "-p", "defere", "--scope", ct_scope, NULL);
		h_args(&c, "--", "/bin/sh", "-c", mark_cmd(mark), NULL);
		struct h_result r = h_run(&c);
		cr_assert(!r.timed_out, "%s: timed out", w);
		cr_expect_eq(r.code, 2, "%s: exit %d\n%s%s", w, r.code, r.out, r.err);
		cr_expect_eq(h_nlines(r.err), 1, "%s: want one line:\n%s", w, r.err);
		cr_expect(!strncmp(r.err, h_fmt("syncshim %s: ", sub), strlen(sub) + 11), "%s: prefix:\n%s", w, r.err);
		cr_expect(h_has(r.err, rows[i].words), "%s: want '%s' in:\n%s", w, rows[i].words, r.err);
		cr_expect(!h_has(r.out, "round 1") && !h_has(r.out, "verdict"), "%s: rounds ran:\n%s", w, r.out);
		cr_expect_eq(access(mark, F_OK), -1, "%s: the command ran", w);
		unlink(mark);
	}
	/* the same spellings, correct, do run */
	struct h_cmd c;
	launcher_cmd(&c);
	h_args(&c, syncshim_bin(), "run", "--config", good, "--mode", "summary", "--", "/bin/sh", "-c", mark_cmd(mark),
	       NULL);
	h_assert_ok(h_run(&c), "run --config good.ini");
	cr_expect_eq(access(mark, F_OK), 0, "the command did not run");
}

/* ---- the dispatch tables: every subcommand answers -h, both tools --version ---- */

static struct h_result tool(const char *prog, const char *a1, const char *a2)
{
	struct h_cmd c;
	launcher_cmd(&c);
	c.timeout_s = 10;
	h_args(&c, h_fmt("%s/%s", h_ctx.build, prog), a1, a2, NULL);
	return h_run(&c);
}

/* The subcommands a tool's --help names ("usage: TOOL SUB", "       TOOL SUB"). */
static int subcommands(const char *prog, const char *usage, char names[][32], int max)
{
	int n = 0;
	for (const char *l = usage; l && *l && n < max; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, "usage:", 6))
			l += 6;
		else if (*l != ' ')
			continue;
		l += strspn(l, " ");
		char sub[32];
		if (strncmp(l, prog, strlen(prog)) || l[strlen(prog)] != ' ' ||
		    sscanf(l + strlen(prog) + 1, "%31[a-z]", sub) != 1)
			continue;
		bool seen = false;
		for (int i = 0; i < n; i++)
			seen |= !strcmp(names[i], sub);
		if (!seen)
			snprintf(names[n++], 32, "%s", sub);
	}
	return n;
}

static void every_subcommand_answers_help(const char *prog, int at_least)
{
	struct h_result top = tool(prog, "--help", NULL);
	h_assert_ok(top, prog);
	char names[16][32];
	int n = subcommands(prog, top.out, names, 16);
	cr_assert_geq(n, at_least, "%s --help names %d subcommands:\n%s", prog, n, top.out);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			const char *flag = k ? "--help" : "-h";
			struct h_result r = tool(prog, names[i], flag);
			cr_expect_eq(r.code, 0, "%s %s %s: exit %d\n%s%s", prog, names[i], flag, r.code, r.out, r.err);
			cr_expect(h_has(r.out, h_fmt("%s %s", prog, names[i])),
				  "%s %s %s prints no usage of its own:\n%s%s", prog, names[i], flag, r.out, r.err);
		}
	}
}

Test(launch, every_subcommand_answers_help)
{
	every_subcommand_answers_help("syncshim", 4);
	every_subcommand_answers_help("synclat", 4);
	/* check used to read a file named --help */
	struct h_result r = tool("syncshim", "check", "--help");
	cr_expect(!h_has(r.err, "cannot read"), "%s", r.err);
}

Test(launch, both_tools_answer_version)
{
	const char *prog[] = { "syncshim", "synclat" };
	for (int i = 0; i < 2; i++) {
		struct h_result r = tool(prog[i], "--version", NULL);
		h_assert_ok(r, prog[i]);
		cr_expect_str_eq(r.out, h_fmt("%s %s\n", prog[i], SYNCSHIM_VERSION));
	}
	struct h_result r = tool("syncshim", "no-such-command", NULL);
	cr_expect_eq(r.code, 2);
	cr_expect(h_has(r.err, "unknown command 'no-such-command'"), "%s", r.err);
}

/* check INI PATH...: the rule that matches each path and the decision
 * table's row for it, as policy_decide gives it. */
Test(launch, check_says_what_each_call_does_to_a_path)
{
	char *ini = h_path("p.ini");
	h_write_file(ini, "[shim]\npolicy = passthrough\n\n[rule wal]\npath = /data/wal/*.log\nsync = defer\n"
			  "osync = strip\non_close = sync\n");
	struct h_cmd c;
	launcher_cmd(&c);
	h_args(&c, syncshim_bin(), "check", ini, "/data/wal/0001.log", "/data/other", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "check with paths");
	cr_expect(h_has(r.out, "live counters on"), "%s", r.out);
	const char *wal = strstr(r.out, "/data/wal/0001.log: rule 'wal' (line 4, glob /data/wal/*.log): policy defer");
	const char *other = strstr(r.out, "/data/other: no rule matches: the default, policy passthrough");
	cr_assert(wal && other && wal < other, "%s", r.out);
	static const char *const want_wal[] = { "O_SYNC open      -> strip", "fsync            -> defer",
						"fdatasync        -> defer", "close            -> barrier",
						"rename, link     -> barrier" };
	for (size_t i = 0; i < sizeof(want_wal) / sizeof(want_wal[0]); i++) {
		const char *at = strstr(wal, want_wal[i]);
		cr_expect(at && at < other, "no '%s' for the wal file:\n%s", want_wal[i], r.out);
	}
	cr_expect(h_has(other, "fsync            -> pass"), "%s", other);
	cr_expect(h_has(other, "close            -> pass"), "%s", other);
}

/* git's and coreutils' conventions: exit 2 for every usage error, one line
 * with one prefix "syncshim SUBCOMMAND: " that says what to do, and
 * `syncshim help` with one line per subcommand. */
Test(launch, usage_errors_exit_2_with_one_prefixed_line)
{
	static const char *const rows[][5] = {
		{ "syncshim", "run", "--bogus", NULL },
		{ "syncshim", "run", NULL },
		{ "syncshim", "check", NULL },
		{ "syncshim", "check", "--bogus", NULL },
		{ "syncshim", "ab", "passthrough", NULL },
		{ "syncshim", "ab", "-n", "0", NULL },
		{ "syncshim", "profile", "--bogus", NULL },
		{ "syncshim", "crashtest", "--bogus", NULL },
		{ "syncshim", "crashtest", "--scope", "/x", NULL },
		{ "synclat", "report", NULL },
		{ "synclat", "compare", "--bogus", NULL },
		{ "synclat", "suggest", NULL },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct h_cmd c;
		launcher_cmd(&c);
		c.timeout_s = 10;
		h_args(&c, h_fmt("%s/%s", h_ctx.build, rows[i][0]), NULL);
		for (int k = 1; rows[i][k]; k++)
			h_arg(&c, rows[i][k]);
		struct h_result r = h_run(&c);
		const char *what = h_fmt("%s %s %s", rows[i][0], rows[i][1], rows[i][2] ? rows[i][2] : "");
		cr_expect_eq(r.code, 2, "%s: exit %d\n%s", what, r.code, r.err);
		cr_expect_eq(h_nlines(r.err), 1, "%s: want one line:\n%s", what, r.err);
		cr_expect(!strncmp(r.err, h_fmt("%s %s: ", rows[i][0], rows[i][1]), strlen(rows[i][0]) + strlen(rows[i][1]) + 3),
			  "%s: prefix:\n%s", what, r.err);
	}
	for (int t = 0; t < 2; t++) {
		const char *prog = t ? "synclat" : "syncshim";
		struct h_result r = tool(prog, "help", NULL);
		h_assert_ok(r, prog);
		struct h_result usage = tool(prog, "--help", NULL);
		char names[16][32];
		int n = subcommands(prog, usage.out, names, 16);
		for (int i = 0; i < n; i++) {
			if (!strcmp(names[i], "help"))
				continue;
			const char *line = strstr(r.out, h_fmt("\n  %s ", names[i]));
			cr_expect(line && strchr(line + 1, '\n') - line > 20, "%s help: no line for %s:\n%s", prog, names[i],
				  r.out);
		}
		r = tool(prog, "help", t ? "top" : "run");
		h_assert_ok(r, "help SUB");
		cr_expect(h_has(r.out, h_fmt("usage: %s %s", prog, t ? "top" : "run")), "%s", r.out);
	}
}

/* ab names a side's rule that matched nothing: an ini whose globs were
 * written for another directory compares the default policy, not the
 * rules, and the verdict alone would not say so. */
Test(launch, ab_names_a_sides_rule_that_matched_nothing)
{
	char *dir = h_path("ab"), *ini = h_path("other-dir.ini"), *data = h_path("ab.dat");
	cr_assert_eq(mkdir(dir, 0700), 0);
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule wal]\npath = %s\nsync = defer\n"
				"[rule profiled]\npath = /srv/profiled-elsewhere/*.dat\nsync = defer\n", data));
	struct h_cmd c;
	launcher_cmd(&c);
	h_args(&c, syncshim_bin(), "ab", "-n", "1", "-o", dir, "passthrough", ini, "--",
	       h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "50", "-f", data, NULL);
	struct h_result r = h_run(&c);
	cr_assert_eq(r.code, 0, "syncshim ab: %s\n%s", r.out, r.err);
	cr_assert(h_has(r.err, h_fmt("warning: side B (%s): rule 'profiled' (defer, path = /srv/profiled-elsewhere/*.dat) "
				     "matched no file", ini)),
		  "%s", r.err);
	cr_assert(!h_has(r.err, "rule 'wal'"), "%s", r.err);
	char *html = h_read_file(h_fmt("%s/compare.html", dir));
	cr_assert(h_has(html, "warning: rule profiled (defer, path = /srv/profiled-elsewhere/*.dat) matched no file"),
		  "the page does not say it");
}
