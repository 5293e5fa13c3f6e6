/*
 * test_services.c - `syncshim ab` in front of real services: a server
 * under the shim, a load without it (examples/redis/, examples/postgres/),
 * and every way a round can fail: one line naming the round and side,
 * the outputs kept, a non-zero exit, nothing left running, also when
 * syncshim ab itself is sent SIGTERM.
 */
#include <signal.h>
#include <sys/stat.h>

#include "harness.h"

TestSuite(services, .init = h_setup, .fini = h_teardown, .timeout = 120);

static char *in_top(const char *rel)
{
	char cwd[PATH_MAX];
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(access("docs/man/syncshim.1", R_OK), 0, "tests run from the top of the tree");
	return h_fmt("%s/%s", cwd, rel);
}

static void plain(struct h_cmd *c)
{
	h_cmd_init(c, H_PLAIN);
	if (h_ctx.prefix[0])
		h_envf(c, "LD_PRELOAD=%s", h_ctx.prefix);
	h_envf(c, "SYNCSHIM_BUILD=%s", h_ctx.build);
	h_envf(c, "TMPDIR=%s", h_ctx.dir);
}

static bool alive(pid_t pid)
{
	return pid > 0 && kill(pid, 0) == 0;
}

static pid_t pid_in(const char *path)
{
	char *s = h_read_file(path);
	return s ? (pid_t)atoi(s) : 0;
}

/*
 * examples/NAME/ab.sh ARGS... -o RUN, one short round: it exits 0, leaves
 * no server (pgrep -f SERVER, a pattern that names the test's directory)
 * and no temp dir syncshim-NAME.*, and prints each side's figure, the B/A
 * ratio and the server's sync-latency table.
 */
static struct h_result service_ab(const char *name, const char *server, int timeout_s, const char *run,
				  const char *const *args)
{
	struct h_cmd c;
	plain(&c);
	c.timeout_s = timeout_s;
	h_arg(&c, in_top(h_fmt("examples/%s/ab.sh", name)));
	for (; *args; args++)
		h_arg(&c, *args);
	h_args(&c, "-o", run, NULL);
	struct h_result r = h_run(&c);
	struct h_result left = h_sh(h_fmt("pgrep -f -- '%s' ; ls -d '%s'/syncshim-%s.* 2>/dev/null", server,
					 h_ctx.dir, name), 10);
	cr_assert_eq(r.code, 0, "exit %d%s\n%s%s", r.code, r.timed_out ? " (timed out)" : "", r.out, r.err);
	cr_expect_str_eq(left.out, "", "left behind:\n%s", left.out);
	cr_expect(h_has(r.out, "round 1 A (passthrough): metric "), "%s", r.out);
	cr_expect(h_has(r.out, "round 1 B (defer): metric "), "%s", r.out);
	cr_expect(h_has(r.out, "  B/A "), "%s", r.out);
	cr_expect(h_has(r.out, "fdatasync"), "no sync-latency table:\n%s", r.out);
	return r;
}

/* Redis with --appendfsync always, one short round: the load's own figure
 * per side, the B/A ratio, the server's sync-latency table, the AOF's
 * fdatasyncs deferred on B; no server and no temp dir left. */
Test(services, redis_ab_in_one_command)
{
	if (access("/usr/bin/redis-server", X_OK) != 0 || access("/usr/bin/redis-benchmark", X_OK) != 0)
		cr_skip_test("redis-server and redis-benchmark are not installed (make deps installs them)");
	char *run = h_path("run");
	static const char *const args[] = { "-n", "1", "-r", "400", "-c", "4", NULL };
	struct h_result r = service_ab("redis", h_fmt("unixsocket[ ]%s/", h_ctx.dir), 90, run, args);
	cr_expect(h_has(r.out, "median"), "%s", r.out);
	cr_expect(h_has(r.out, "real_fdatasync"), "%s", r.out);
	const char *kept[] = { "A-1.load.out", "B-1.load.out", "A-1.server.out", "B-1.setup.out", "compare.html" };
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		cr_expect_geq(h_size(h_fmt("%s/%s", run, kept[i])), i == 3 ? 0 : 1, "%s not kept", kept[i]);
	cr_expect(h_has(h_read_file(h_fmt("%s/B-1.load.out", run)), "requests per second"));
}

/* PostgreSQL under pgbench, one short round: tps per side, B/A, the
 * server's table; no postgres and no temp dir left. As root the server
 * runs as the postgres user. */
Test(services, postgres_ab_in_one_command, .timeout = 240)
{
	h_need_postgres();
	char *run = h_path("run");
	static const char *const args[] = { "-n", "1", "-t", "1", "-c", "1", NULL };
	service_ab("postgres", h_fmt("[-]D %s/", h_ctx.dir), 220, run, args);
	cr_expect(h_has(h_read_file(h_fmt("%s/A-1.load.out", run)), "tps = "));
}

/* syncshim ab's service form on tiny shell "services". */
static struct h_result ab(const char *server, const char *ready, const char *load, const char *more)
{
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 60;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "ab", "-n", "2", "-o", h_path("run"), "passthrough", "defer",
	       "--timeout", "2", "--ready", ready, "--load", load, NULL);
	if (more)
		h_args(&c, "--metric", more, NULL);
	h_args(&c, "--", "/bin/sh", "-c", server, NULL);
	return h_run(&c);
}

Test(services, failures_name_the_round_and_side)
{
	char *flag = h_path("up");
	/* a probe that never succeeds: bounded, the server stopped */
	char *srv = h_fmt("echo $$ > %s/srv.pid; exec sleep 60", h_ctx.dir);
	struct h_result r = ab(srv, h_fmt("file:%s", flag), "true", NULL);
	cr_expect_eq(r.code, 1, "exit %d\n%s", r.code, r.err);
	cr_expect(h_has(r.err, h_fmt("round 1 A: the readiness probe file:%s did not succeed in 2 s", flag)), "%s", r.err);
	cr_expect(!alive(pid_in(h_path("srv.pid"))), "the server was left running");
	cr_expect_lt(r.secs, 15);

	/* a server that dies before it is ready */
	r = ab("echo starting; exit 3", h_fmt("file:%s", flag), "true", NULL);
	cr_expect_eq(r.code, 1);
	cr_expect(h_has(r.err, "round 1 A: the server exited (status 3) before"), "%s", r.err);
	cr_expect(h_has(h_read_file(h_path("run/A-1.server.out")), "starting"), "the server's output not kept");

	/* a load that fails, on side B of round 2 */
	srv = h_fmt("touch %s; exec sleep 60", flag);
	r = ab(srv, h_fmt("file:%s", flag), "[ \"$SYNCSHIM_AB_ROUND$SYNCSHIM_AB_SIDE\" != 2B ] || exit 4", NULL);
	cr_expect_eq(r.code, 1);
	cr_expect(h_has(r.err, "round 2 B: the load failed (exit 4)"), "%s", r.err);

	/* a --metric that matches nothing */
	r = ab(srv, h_fmt("file:%s", flag), "echo 12 ops", "([0-9]+) tps");
	cr_expect_eq(r.code, 1);
	cr_expect(h_has(r.err, "round 1 A: --metric '([0-9]+) tps' matched no number"), "%s", r.err);

	/* the load runs without the shim; the server with it. Each round's
	 * server replaces srv.env whole (a rename): the readiness file stays
	 * from round 1, so a later round's server can be stopped before it
	 * wrote, and a truncated file read as "no shim" (seen under load). */
	char *env_up = h_path("env-up");
	r = ab(h_fmt("echo \"$LD_PRELOAD\" > %s/srv.env.$$ && mv %s/srv.env.$$ %s/srv.env; touch %s; exec sleep 60",
		     h_ctx.dir, h_ctx.dir, h_ctx.dir, env_up),
	       h_fmt("file:%s", env_up),
	       h_fmt("echo \"[$LD_PRELOAD]\" > %s/load.env; echo 7 ops", h_ctx.dir), "([0-9]+) ops");
	cr_expect_eq(r.code, 0, "%s%s", r.out, r.err);
	cr_expect(h_has(h_read_file(h_path("load.env")), "[]"), "the load ran under LD_PRELOAD");
	cr_expect(h_has(h_read_file(h_path("srv.env")), "libsyncshim.so"), "the server ran without the shim");
	cr_expect(h_has(r.out, "median 7, min 7, max 7"), "%s", r.out);
}

/* SIGTERM to syncshim ab in the middle of a load: the load and the server
 * are stopped, it says so and exits 128+15. */
Test(services, sigterm_stops_everything)
{
	char *srv = h_fmt("echo $$ > %s/srv.pid.tmp && mv %s/srv.pid.tmp %s/srv.pid; exec sleep 60", h_ctx.dir,
			  h_ctx.dir, h_ctx.dir);
	char *load = h_fmt("echo $$ > %s/load.pid.tmp && mv %s/load.pid.tmp %s/load.pid; exec sleep 60", h_ctx.dir,
			   h_ctx.dir, h_ctx.dir);
	struct h_cmd c;
	plain(&c);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "ab", "-n", "1", "-o", h_path("run"), "passthrough", "defer",
	       "--ready", h_fmt("file:%s/srv.pid", h_ctx.dir), "--load", load, "--", "/bin/sh", "-c", srv, NULL);
	pid_t ab_pid = h_spawn(&c);
	char *lp = h_path("load.pid");
	for (double end = h_now() + 20; h_now() < end && h_size(lp) <= 0; usleep(20000))
		;
	cr_assert_gt(h_size(lp), 0, "the load never started");
	pid_t load_pid = pid_in(lp), srv_pid = pid_in(h_path("srv.pid"));
	cr_assert(alive(load_pid) && alive(srv_pid));
	kill(ab_pid, SIGTERM);
	struct h_result r = h_reap(&c, ab_pid, 30, false, 0);
	cr_expect_eq(r.code, 143, "exit %d\n%s", r.code, r.err);
	cr_expect(h_has(r.err, "stopped by signal 15"), "%s", r.err);
	cr_expect(!alive(load_pid), "the load was left running");
	cr_expect(!alive(srv_pid), "the server was left running");
}

/* A TCP probe of a port nobody listens on must not succeed by connecting
 * to itself (simultaneous open, when the kernel picks that very port as
 * the probe's own): in a network namespace whose only local port is the
 * probed one every connect would, and the probe still waits, then fails. */
Test(services, tcp_probe_is_not_fooled_by_a_self_connect)
{
	if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0)
		cr_skip_test("needs root and unshare for a network namespace of its own");
	/* h_sh's environment is clean: a sanitizer build's runtime must be
	 * preloaded for the server by hand */
	struct h_result r = h_sh(h_fmt("unshare -n sh -c 'ip link set lo up && "
				       "echo \"40001 40001\" > /proc/sys/net/ipv4/ip_local_port_range && "
				       "exec env %s%s %s/syncshim ab -n 1 -o %s passthrough defer --timeout 1 "
				       "--ready tcp:127.0.0.1:40001 --load true -- sleep 30'",
				       h_ctx.prefix[0] ? "LD_PRELOAD=" : "", h_ctx.prefix, h_ctx.build, h_path("run")),
				 60);
	if (h_has(r.err, "Operation not permitted") || h_has(r.err, "unshare failed"))
		cr_skip_test("no network namespaces here: %s", r.err);
	cr_expect_eq(r.code, 1, "exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.err, "round 1 A: the readiness probe tcp:127.0.0.1:40001 did not succeed in 1 s"), "%s%s",
		  r.out, r.err);
	cr_expect(!h_has(r.out, "round 1 A (passthrough)"), "the load ran against no server:\n%s", r.out);
}

/*
 * Issue 29, point 5: a server that changes user (runuser, setpriv) cannot
 * write its latency log into a run directory only root may write. The
 * round fails at once, naming the log's path and why, instead of a
 * comparison that blames a killed process and exit 0.
 */
Test(services, a_server_under_another_user_says_which_log_failed)
{
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("needs root and setpriv to run a server as another user");
	char *run = h_path("run"), *box = h_path("box");
	cr_assert_eq(mkdir(run, 0700), 0);
	cr_assert_eq(mkdir(box, 0777), 0);
	cr_assert_eq(chmod(box, 0777), 0);
	cr_assert_eq(chmod(h_ctx.dir, 0711), 0);
	struct h_cmd c;
	plain(&c);
	c.timeout_s = 60;
	/* the server writes a file (the shim opens its log at its first work),
	 * then says it is up */
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "ab", "-n", "1", "-o", run, "passthrough", "defer", "--setup",
	       h_fmt("rm -f %s/up", box), "--ready", h_fmt("file:%s/up", box), "--load", "true", "--", "setpriv",
	       "--reuid=65534", "--regid=65534", "--clear-groups", "--", "/bin/sh", "-c",
	       h_fmt("echo data > %s/data && touch %s/up && exec sleep 60", box, box), NULL);
	struct h_result r = h_run(&c);
	cr_expect_eq(r.code, 1, "exit %d\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.err, "round 1 A: the server could not write its latency log: ") &&
			  h_has(r.err, h_fmt("%s/A-1.", run)) && h_has(r.err, "Permission denied") &&
			  h_has(r.err, "mode 0700"),
		  "%s", r.err);
	cr_expect(!h_has(r.out, "killed before its exit handlers"), "%s", r.out);
}
