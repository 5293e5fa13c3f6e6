/*
 * test_live.c - the readers of the live counters: `synclat top` (--once,
 * --json, and the interactive screen driven through tmux) and `synclat
 * metrics` (checked by promtool), against files this test writes itself
 * as shim/livefmt.h lays them out. No shim runs here: each file's
 * process is a child of the test that sleeps (so it is alive, with its
 * real /proc start time), or a pid that has just exited (stale).
 *
 * Screens are polled with a bounded deadline until they show what is
 * expected; nothing waits a fixed time and hopes.
 */
#include <ctype.h>
#include <sys/sysmacros.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness.h"
#include "liveread.h"
#include "metrics.h"

/* ---- processes for the files to belong to ------------------------------ */

static pid_t kids[16];
static int nkids;

/* A child that lives until the test ends: it waits for EOF on a pipe
 * whose write end only this process holds. */
static pid_t sleeper(void)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		close(p[1]);
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	cr_assert_lt(nkids, 16);
	kids[nkids++] = pid;
	return pid;
}

/* A pid no process has: one that has just exited and been reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

static char *tmux_sock;

static void live_fini(void)
{
	for (int i = 0; i < nkids; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	nkids = 0;
	if (tmux_sock) {
		char *cmd = h_fmt("tmux -S '%s' kill-server >/dev/null 2>&1", tmux_sock);
		if (system(cmd) < 0)
			h_note("could not stop tmux on %s", tmux_sock);
		tmux_sock = NULL;
	}
	h_teardown();
}

TestSuite(live, .init = h_setup, .fini = live_fini, .timeout = 60);

/* /proc/PID/stat field 22, parsed here independently of tools/liveread.c. */
static uint64_t start_of(pid_t pid)
{
	char *t = h_read_file(h_fmt("/proc/%d/stat", (int)pid));
	char *p = strrchr(t, ')');
	cr_assert_not_null(p, "/proc/%d/stat: %s", (int)pid, t);
	char *save = NULL;
	int field = 3;
	for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++)
		if (field == 22)
			return strtoull(tok, NULL, 10);
	cr_assert_fail("/proc/%d/stat has no field 22", (int)pid);
	return 0;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the synthetic writer ---------------------------------------------- */

#define FAKE_MAX 40
#define SEC 1000000000ull

/* A live file in memory: the header, then max_files entries, then room
 * for a rule table (used when fake_rule adds one; nrules 0 is a writer
 * from before the rule table). */
struct fake {
	struct live_header h;
	struct live_file f[FAKE_MAX];
	struct live_rule r[8];
};

static struct fake *fake_new(pid_t pid, const char *cmdline)
{
	struct fake *k = calloc(1, sizeof(*k));
	cr_assert_not_null(k);
	memcpy(k->h.magic, LIVE_MAGIC, sizeof(k->h.magic));
	k->h.version = LIVE_VERSION;
	k->h.header_size = sizeof(struct live_header);
	k->h.file_size = sizeof(struct live_file);
	k->h.max_files = FAKE_MAX;
	k->h.seq = 42;
	k->h.pid = (uint32_t)pid;
	k->h.ppid = (uint32_t)getpid();
	k->h.uid = (uint32_t)getuid();
	k->h.interval_ms = 1000;
	k->h.proc_start = pid > 0 && kill(pid, 0) == 0 ? start_of(pid) : 12345;
	k->h.start_wall_ns = clock_ns(CLOCK_REALTIME) - 60 * SEC;
	k->h.updated_wall_ns = clock_ns(CLOCK_REALTIME);
	k->h.updated_mono_ns = clock_ns(CLOCK_MONOTONIC);
	k->h.interval_ns = SEC;
	snprintf(k->h.cmdline, sizeof(k->h.cmdline), "%s", cmdline);
	snprintf(k->h.config, sizeof(k->h.config), "/etc/syncshim/test.ini");
	snprintf(k->h.default_policy, sizeof(k->h.default_policy), "passthrough");
	return k;
}

/* policy numbers as livefmt.h gives them */
enum { P_PASS = 0, P_FDATASYNC = 1, P_NOOP = 2, P_DEFER = 3, P_GROUP = 4 };

static struct live_file *fake_file(struct fake *k, unsigned rule, const char *rule_name, unsigned policy,
				   const char *path)
{
	cr_assert_lt(k->h.nfiles, FAKE_MAX);
	struct live_file *f = &k->f[k->h.nfiles++];
	f->id = k->h.nfiles;
	f->rule = (uint16_t)rule;
	f->policy = (uint8_t)policy;
	f->flags = policy == P_NOOP ? LIVEF_UNBOUNDED : 0;
	snprintf(f->rule_name, sizeof(f->rule_name), "%s", rule_name);
	snprintf(f->path, sizeof(f->path), "%s", path);
	return f;
}

static struct live_rule *fake_rule(struct fake *k, unsigned rule, const char *name, unsigned policy, const char *glob,
				   uint32_t files)
{
	cr_assert_lt(k->h.nrules, 8);
	k->h.rule_size = sizeof(struct live_rule);
	k->h.rules_offset = offsetof(struct fake, r);
	struct live_rule *r = &k->r[k->h.nrules++];
	r->rule = (uint16_t)rule;
	r->policy = (uint8_t)policy;
	r->files = files;
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->glob, sizeof(r->glob), "%s", glob);
	return r;
}

/* The file DIR/NAME ("" for PID.live), 0600, as the shim would leave it. */
static char *fake_write(const struct fake *k, const char *dir, const char *name)
{
	char *path = name && *name ? h_fmt("%s/%s", dir, name) : h_fmt("%s/%u.live", dir, k->h.pid);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, k, sizeof(*k)), (ssize_t)sizeof(*k));
	cr_assert_eq(close(fd), 0);
	return path;
}

static char *live_dir(void)
{
	char *d = h_path("live");
	mkdir(d, 0700);
	return d;
}

/* ---- the three processes most tests look at ----------------------------- */

struct trio {
	pid_t java, pg, scratch;
	struct fake *kj, *kp, *ks;
	char *dir;
};

/* java: a deferred journal and a passthrough data file; postgres: a group
 * WAL; scratchd: a noop scratch file. Rates over a 1 s interval. */
static struct trio trio_write(void)
{
	struct trio t = { sleeper(), sleeper(), sleeper(), NULL, NULL, NULL, live_dir() };
	t.kj = fake_new(t.java, "java -Xmx1g -jar broker.jar");
	t.kj->h.start_wall_ns = 1700000000120000000ull;
	struct live_file *f = fake_file(t.kj, 1, "journal", P_DEFER, "/data/kahadb/db-1.log");
	f->iv_writes = 500, f->iv_bytes = 2048000, f->iv_syncs = 400, f->iv_real_syncs = 20;
	f->sync_p50_ns = 338, f->sync_p99_ns = 24200, f->sync_max_ns = 90000;
	f->pending = 3, f->risk_bytes = 4100, f->risk_age_ns = 12000000;
	f->writes = 10000, f->bytes = 40960000, f->syncs = 8000, f->real_syncs = 400, f->errors = 2;
	f->sync_buckets[live_bucket(338)] = 300;
	f->sync_buckets[live_bucket(24200)] = 95;
	f->sync_buckets[live_bucket(1500000)] = 5;
	f->sync_buckets[live_bucket(20 * SEC)] = 1;
	f->sync_sum_ns = 21234567890ull;
	f->real_buckets[live_bucket(2000000)] = 400; /* exactly 2 ms: counted under le="0.002" */
	f->real_sum_ns = 800000000ull;
	f = fake_file(t.kj, 0, "", P_PASS, "/data/kahadb/db.data");
	f->iv_writes = 50, f->iv_syncs = 5, f->iv_real_syncs = 5, f->sync_p99_ns = 900000;
	t.kp = fake_new(t.pg, "postgres: walwriter");
	f = fake_file(t.kp, 1, "wal", P_GROUP, "/pg/wal/000000010000000000000001");
	f->iv_writes = 900, f->iv_bytes = 7372800, f->iv_syncs = 100, f->iv_real_syncs = 60, f->sync_p99_ns = 2000000;
	t.ks = fake_new(t.scratch, "/usr/bin/scratchd --tmp");
	f = fake_file(t.ks, 2, "scratch", P_NOOP, "/scratch/tmp.bin");
	f->iv_writes = 10, f->iv_syncs = 10, f->risk_bytes = 9000000, f->risk_age_ns = 30 * SEC, f->sync_p99_ns = 100;
	fake_write(t.kj, t.dir, NULL);
	fake_write(t.kp, t.dir, NULL);
	fake_write(t.ks, t.dir, NULL);
	return t;
}

/* ---- running synclat ---------------------------------------------------- */

static char *synclat_bin(void)
{
	return h_fmt("%s/synclat", h_ctx.build);
}

/* synclat ARGS... (NULL-terminated) with SYNCSHIM_LIVE_DIR=dir. */
static struct h_result synclat(const char *dir, ...)
{
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	c.timeout_s = 20;
	if (dir)
		h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_arg(&c, synclat_bin());
	va_list ap;
	va_start(ap, dir);
	for (const char *a; (a = va_arg(ap, const char *));)
		h_arg(&c, a);
	va_end(ap);
	return h_run(&c);
}

/* The pids of the "PID N" lines of top's text, in order. */
static int pid_order(const char *text, long *pids, int max)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, "PID ")) && n < max; p += 4)
		if (p == text || p[-1] == '\n')
			pids[n++] = strtol(p + 4, NULL, 10);
	return n;
}

static void expect_order(const char *text, const char *what, int n, ...)
{
	long got[8], want[8];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		want[i] = (long)va_arg(ap, pid_t);
	va_end(ap);
	int k = pid_order(text, got, 8);
	cr_assert_eq(k, n, "%s: %d processes shown, want %d:\n%s", what, k, n, text);
	for (int i = 0; i < n; i++)
		cr_assert_eq(got[i], want[i], "%s: position %d is pid %ld, want %ld:\n%s", what, i, got[i], want[i], text);
}

/* The line of text holding needle (a copy), or NULL. */
static char *line_with(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);
	if (!p)
		return NULL;
	const char *s = p, *e = strchr(p, '\n');
	while (s > text && s[-1] != '\n')
		s--;
	return strndup(s, e ? (size_t)(e - s) : strlen(s));
}

/* The line's words are exactly want (space-separated). */
static void expect_words(const char *line, const char *want)
{
	char *a = h_strdup(line), *b = h_strdup(want), *sa = NULL, *sb = NULL;
	char *x = strtok_r(a, " ", &sa), *y = strtok_r(b, " ", &sb);
	for (; x && y; x = strtok_r(NULL, " ", &sa), y = strtok_r(NULL, " ", &sb))
		cr_assert_str_eq(x, y, "in the row\n  %s\nwant\n  %s", line, want);
	cr_assert(!x && !y, "row\n  %s\nwant\n  %s", line, want);
}

/* ---- the reader's pieces ----------------------------------------------- */

Test(live, stat_start_after_the_last_parenthesis)
{
	uint64_t v = 0;
	/* A command name may hold spaces and parentheses: ") (x) y". */
	const char *tricky = "4242 (a) (b c) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n";
	cr_assert(live_stat_start(tricky, &v));
	cr_assert_eq(v, 987654);
	cr_assert(live_stat_start("1 (init) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0", &v));
	cr_assert_eq(v, 7);
	cr_assert(!live_stat_start("1 (x) S 0 1", &v), "too few fields");
	cr_assert(!live_stat_start("1 no parenthesis S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7", &v));
	cr_assert(!live_stat_start("1 (x) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7x 0", &v), "not a number");
	pid_t kid = sleeper();
	cr_assert(live_proc_start(kid, &v));
	cr_assert_eq(v, start_of(kid));
	cr_assert(!live_proc_start(dead_pid(), &v));
}

Test(live, histogram_bounds_are_exact_live_bounds)
{
	static const char *const le[METRICS_NLE] = { "1e-06", "2e-06", "5e-06", "1e-05", "2e-05", "5e-05",
		"0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2",
		"0.5", "1", "2", "5", "10" };
	for (unsigned k = 0; k < METRICS_NLE; k++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%g", (double)metrics_le_ns(k) / 1e9);
		cr_assert_str_eq(buf, le[k]);
		unsigned b = metrics_le_bucket(k);
		cr_assert_lt(b, LIVE_NBOUNDS);
		cr_assert_eq(live_bound_ns(b), metrics_le_ns(k), "le %s is not a bucket bound", le[k]);
	}
}

Test(live, summing_per_rule)
{
	struct live_proc p;
	memset(&p, 0, sizeof(p));
	struct fake *k = fake_new(getpid(), "x");
	struct live_file *a = fake_file(k, 1, "j", P_DEFER, "/a"), *b = fake_file(k, 0, "", P_PASS, "/b"),
			 *c = fake_file(k, 1, "j", P_DEFER, "/c");
	a->writes = 1, b->writes = 10, c->writes = 100;
	a->risk_bytes = 5, c->risk_bytes = 7, a->risk_age_ns = 9, c->risk_age_ns = 3;
	a->risk_worst_bytes = 50, c->risk_worst_bytes = 20, a->sync_p99_ns = 100, c->sync_p99_ns = 300;
	a->sync_buckets[3] = 2, c->sync_buckets[3] = 5;
	p.h = k->h;
	p.files = k->f;
	struct live_file out[3];
	unsigned n[3];
	cr_assert_eq(live_by_rule(&p, out, n), 2);
	cr_assert_eq(out[0].rule, 1);
	cr_assert_eq(n[0], 2);
	cr_assert_eq(out[0].writes, 101, "counts add up");
	cr_assert_eq(out[0].risk_bytes, 12, "data at risk now adds up");
	cr_assert_eq(out[0].risk_age_ns, 9, "the oldest byte is the oldest of both");
	cr_assert_eq(out[0].risk_worst_bytes, 50, "worst figures take the larger");
	cr_assert_eq(out[0].sync_p99_ns, 300);
	cr_assert_eq(out[0].sync_buckets[3], 7, "histograms add up");
	cr_assert_eq(out[1].writes, 10);
	cr_assert_eq(n[1], 1);
}

Test(live, where_follows_the_environment)
{
	struct live_where w;
	setenv("SYNCSHIM_LIVE_DIR", "/env/dir", 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/77", 1);
	live_where_init(&w, NULL);
	cr_assert_str_eq(w.dir, "/env/dir");
	cr_assert_str_eq(w.xdg, "/run/user/77");
	live_where_init(&w, "/opt/dir");
	cr_assert_str_eq(w.dir, "/opt/dir", "--dir wins over the environment");
	unsetenv("SYNCSHIM_LIVE_DIR");
	setenv("XDG_RUNTIME_DIR", "relative", 1);
	live_where_init(&w, NULL);
	cr_assert_null(w.dir);
	cr_assert_null(w.xdg, "a relative XDG_RUNTIME_DIR is ignored");
	cr_assert_str_eq(w.tmp, "/tmp");
	cr_assert_eq(w.uid, getuid());
	cr_assert_eq(w.all_users, geteuid() == 0);
}

/* ---- synclat top --once ------------------------------------------------- */

Test(live, once_shows_each_process_and_file)
{
	struct trio t = trio_write();
	struct h_result r = synclat(t.dir, "top", "--once", NULL);
	h_assert_ok(r, "synclat top --once");
	const char *o = r.out;
	cr_assert(!strchr(o, '\033'), "--once prints no escapes:\n%s", o);
	char *head = line_with(o, "synclat top");
	cr_assert(head && h_has(head, "processes 3  files 4  calls/s 1975  at risk 9.00 MB  sort syncs/s"), "%s", o);
	char *jl = line_with(o, h_fmt("PID %d ", (int)t.java));
	cr_assert(jl, "%s", o);
	expect_words(jl, h_fmt("PID %d 955.0 calls/s 4.10 kB at risk 2 files default passthrough config "
			       "/etc/syncshim/test.ini command: java -Xmx1g -jar broker.jar", (int)t.java));
	expect_words(line_with(o, "db-1.log"), "defer journal 500.0 2.05 400.0 20.0 338 ns 24.2 us 3 4.10 kB "
					   "12.0 ms 2 /data/kahadb/db-1.log");
	expect_words(line_with(o, "db.data"), "passthrough default 50.0 0.00 5.00 5.00 - 900 us 0 0 - 0 /data/kahadb/db.data");
	expect_words(line_with(o, "/pg/wal"), "group wal 900.0 7.37 100.0 60.0 - 2.00 ms 0 0 - 0 "
					  "/pg/wal/000000010000000000000001");
	expect_words(line_with(o, "tmp.bin"), "noop scratch 10.0 0.00 10.0 0 - 100 ns 0 9.00 MB 30.00 s 0 "
					  "[unbounded] /scratch/tmp.bin");
	cr_assert(h_has(o, "POLICY") && h_has(o, "AT RISK") && h_has(o, "OLDEST"), "%s", o);
	/* The files of a process follow its line. */
	cr_assert_lt(strstr(o, h_fmt("PID %d ", (int)t.java)), strstr(o, "db-1.log"));
	cr_assert_lt(strstr(o, "db-1.log"), strstr(o, h_fmt("PID %d ", (int)t.pg)));
}

Test(live, once_sorts)
{
	struct trio t = trio_write();
	struct h_result r = synclat(t.dir, "top", "--once", NULL);
	h_assert_ok(r, "default order");
	expect_order(r.out, "by syncs/s (default)", 3, t.java, t.pg, t.scratch);
	cr_assert_lt(strstr(r.out, "db-1.log"), strstr(r.out, "db.data"), "files by syncs/s too:\n%s", r.out);
	r = synclat(t.dir, "top", "--once", "--sort", "writes", NULL);
	h_assert_ok(r, "--sort writes");
	expect_order(r.out, "by writes/s", 3, t.pg, t.java, t.scratch);
	cr_assert(h_has(r.out, "sort writes/s"), "%s", r.out);
	r = synclat(t.dir, "top", "--once", "-s", "risk", NULL);
	h_assert_ok(r, "-s risk");
	expect_order(r.out, "by data at risk", 3, t.scratch, t.java, t.pg);
	r = synclat(t.dir, "top", "--once", "-s", "latency", NULL);
	h_assert_ok(r, "-s latency");
	expect_order(r.out, "by sync p99", 3, t.pg, t.java, t.scratch);
	cr_assert_lt(strstr(r.out, "db.data"), strstr(r.out, "db-1.log"), "files by p99 too:\n%s", r.out);
	r = synclat(t.dir, "top", "--once", "-s", "pid", NULL);
	h_assert_ok(r, "-s pid");
	pid_t v[3] = { t.java, t.pg, t.scratch };
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (v[j] < v[i]) {
				pid_t x = v[i];
				v[i] = v[j], v[j] = x;
			}
	expect_order(r.out, "by pid", 3, v[0], v[1], v[2]);
	r = synclat(t.dir, "top", "--once", "-s", "bogus", NULL);
	cr_assert_eq(r.code, 2, "an unknown sort key is a usage error: %d\n%s", r.code, r.err);
}

Test(live, once_filters_and_groups_by_rule)
{
	struct trio t = trio_write();
	struct h_result r = synclat(t.dir, "top", "--once", "--filter", "postgres", NULL);
	h_assert_ok(r, "--filter postgres");
	expect_order(r.out, "--filter postgres", 1, t.pg);
	cr_assert(h_has(r.out, "processes 1  files 1") && h_has(r.out, "filter 'postgres'"), "%s", r.out);
	r = synclat(t.dir, "top", "--once", "-f", h_fmt("%d", (int)t.scratch), NULL);
	h_assert_ok(r, "-f PID");
	expect_order(r.out, "-f PID", 1, t.scratch);
	r = synclat(t.dir, "top", "--once", "-p", h_fmt("%d", (int)t.java), NULL);
	h_assert_ok(r, "-p PID");
	expect_order(r.out, "-p PID", 1, t.java);
	r = synclat(t.dir, "top", "--once", "-f", "jar", NULL);
	h_assert_ok(r, "-f jar");
	expect_order(r.out, "-f jar", 1, t.java);
	r = synclat(t.dir, "top", "--once", "-f", "nothing-like-this", NULL);
	h_assert_ok(r, "a filter nothing matches");
	expect_order(r.out, "no match", 0);
	cr_assert(h_has(r.out, "no process matches the filter"), "%s", r.out);
	r = synclat(t.dir, "top", "--once", "-g", "-p", h_fmt("%d", (int)t.java), NULL);
	h_assert_ok(r, "-g");
	cr_assert(h_has(r.out, "by rule") && h_has(r.out, "FILES"), "%s", r.out);
	expect_words(line_with(r.out, "journal"), "defer journal 500.0 2.05 400.0 20.0 338 ns 24.2 us 3 4.10 kB "
						  "12.0 ms 2 (1 file)");
	cr_assert(!h_has(r.out, "db-1.log"), "rules, not files:\n%s", r.out);
}

/* ---- synclat top --json ------------------------------------------------- */

/* A strict JSON syntax check (RFC 8259), enough to know --json parses. */
static const char *js_value(const char *p, int depth);

static const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *js_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (; *p && *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *js_number(const char *p)
{
	const char *s = p;
	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return NULL;
	if (*p == '0' && isdigit((unsigned char)p[1]))
		return NULL;
	while (isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')
		p++;
	char *end;
	strtod(s, &end);
	return end == p ? p : NULL;
}

/* Members of an object (close '}') or elements of an array (']'). */
static const char *js_list(const char *p, char close, int depth)
{
	p = js_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			p = js_string(js_ws(p));
			if (!p || *(p = js_ws(p)) != ':')
				return NULL;
			p++;
		}
		if (!(p = js_value(p, depth + 1)))
			return NULL;
		p = js_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *js_value(const char *p, int depth)
{
	p = js_ws(p);
	if (depth > 64)
		return NULL;
	switch (*p) {
	case '{': return js_list(p, '}', depth);
	case '[': return js_list(p, ']', depth);
	case '"': return js_string(p);
	case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
	default: return js_number(p);
	}
}

static void expect_json(const char *text)
{
	const char *end = js_value(text, 0);
	cr_assert(end && !*js_ws(end), "not one JSON value (stopped near byte %ld):\n%s",
		  end ? (long)(end - text) : -1L, text);
}

Test(live, json_snapshot)
{
	cr_assert(!js_value("{\"a\": [1, 2,]}", 0) && !js_value("{\"a\" 1}", 0) && js_value("{\"a\": [1e3, -0.5]}", 0),
		  "the checker itself");
	struct trio t = trio_write();
	struct h_result r = synclat(t.dir, "top", "--json", NULL);
	h_assert_ok(r, "synclat top --json");
	expect_json(r.out);
	const char *o = r.out;
	cr_assert(h_has(o, "\"totals\": {\"processes\": 3, \"stalled\": 0, \"busy\": 0, \"files\": 4, "
			   "\"calls_per_s\": 1975, \"at_risk_bytes\": 9004100}"), "%s", o);
	const char *j = strstr(o, h_fmt("{\"pid\": %d,", (int)t.java)), *p = strstr(o, h_fmt("{\"pid\": %d,", (int)t.pg)),
		   *s = strstr(o, h_fmt("{\"pid\": %d,", (int)t.scratch));
	cr_assert(j && p && s && j < p && p < s, "processes in syncs/s order:\n%s", o);
	cr_assert(h_has(j, "\"command\": \"java\", \"cmdline\": \"java -Xmx1g -jar broker.jar\""), "%s", j);
	cr_assert(h_has(o, "\"id\": 1, \"path\": \"/data/kahadb/db-1.log\", \"rule\": 1, \"rule_name\": \"journal\", "
			   "\"policy\": \"defer\", \"unbounded\": false, \"writes_per_s\": 500, \"mb_per_s\": 2.048, "
			   "\"syncs_per_s\": 400, \"real_syncs_per_s\": 20, \"sync_p50_ns\": 338, \"sync_p99_ns\": 24200, "
			   "\"sync_max_ns\": 90000"), "%s", o);
	cr_assert(h_has(o, "\"pending\": 3, \"at_risk_bytes\": 4100, \"at_risk_oldest_ns\": 12000000"), "%s", o);
	cr_assert(h_has(o, "\"path\": \"/scratch/tmp.bin\", \"rule\": 2, \"rule_name\": \"scratch\", \"policy\": \"noop\", "
			   "\"unbounded\": true"), "%s", o);
	/* "er": in broker and walwriter, not in scratchd's command line. */
	r = synclat(t.dir, "top", "--json", "-s", "writes", "-f", "er", "-g", NULL);
	h_assert_ok(r, "--json -s writes -f er -g");
	expect_json(r.out);
	p = strstr(r.out, h_fmt("{\"pid\": %d,", (int)t.pg));
	j = strstr(r.out, h_fmt("{\"pid\": %d,", (int)t.java));
	cr_assert(p && j && p < j && !strstr(r.out, h_fmt("{\"pid\": %d,", (int)t.scratch)),
		  "postgres then java by writes/s, scratchd filtered out:\n%s", r.out);
	cr_assert(h_has(r.out, "\"rules\": [") && h_has(r.out, "{\"files\": 1, \"rule\": 1, \"rule_name\": \"journal\""),
		  "%s", r.out);
}

/* ---- what is skipped, and never blocks ---------------------------------- */

Test(live, stale_files_are_skipped_and_removed)
{
	char *dir = live_dir();
	pid_t alive = sleeper(), reused = sleeper(), ending = sleeper();
	fake_write(fake_new(alive, "alive"), dir, NULL);
	char *gone = fake_write(fake_new(dead_pid(), "gone"), dir, NULL);
	struct fake *k = fake_new(reused, "reused");
	k->h.proc_start += 1; /* another process had this pid */
	char *reuse = fake_write(k, dir, NULL);
	k = fake_new(ending, "ending");
	k->h.ended = 1;
	char *ended = fake_write(k, dir, NULL);
	k = fake_new(dead_pid(), "killed mid-write");
	k->h.seq = 7; /* odd forever: its writer died rewriting it */
	char *torn = fake_write(k, dir, NULL);

	struct h_result r = synclat(dir, "top", "--json", NULL);
	h_assert_ok(r, "top --json with stale files");
	expect_json(r.out);
	cr_assert(h_has(r.out, "\"skipped\": {\"stale\": 4, \"removed\": 3, \"bad\": 0, \"refused\": 0}"), "%s", r.out);
	cr_assert(h_has(r.out, "\"processes\": 1,") && h_has(r.out, h_fmt("{\"pid\": %d,", (int)alive)), "%s", r.out);
	cr_assert_eq(access(gone, F_OK), -1, "a file whose process is gone is removed");
	cr_assert_eq(access(reuse, F_OK), -1, "a file whose pid was reused is removed");
	cr_assert_eq(access(torn, F_OK), -1, "a torn file of a dead process is removed");
	cr_assert_eq(access(ended, F_OK), 0, "an ending process removes its own file: it is only skipped");
	r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "again");
	cr_assert(h_has(r.out, "skipped: 1 stale (0 removed)"), "%s", r.out);
	cr_assert(!h_has(r.out, "ending") && h_has(r.out, "command: alive"), "%s", r.out);
}

Test(live, removal_spares_a_new_file_under_the_name)
{
	char *dir = live_dir(), *path = h_fmt("%s/123.live", dir);
	h_write_file(path, "old");
	struct stat old;
	cr_assert_eq(stat(path, &old), 0);
	/* A new process with the same pid replaced the file since it was
	 * judged stale. (The old one is held open: a freed inode number is
	 * given to the next file at once.) */
	int hold = open(path, O_RDONLY);
	cr_assert(hold >= 0);
	cr_assert_eq(unlink(path), 0);
	h_write_file(path, "new");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert(dfd >= 0);
	cr_assert(!live_remove_exact(dfd, "123.live", old.st_dev, old.st_ino), "removed the new file");
	cr_assert_str_eq(h_read_file(path), "new");
	struct stat now;
	cr_assert_eq(stat(path, &now), 0);
	cr_assert(live_remove_exact(dfd, "123.live", now.st_dev, now.st_ino));
	cr_assert_eq(access(path, F_OK), -1);
	struct h_result r = h_sh(h_fmt("ls -A '%s'", dir), 10);
	cr_assert_str_eq(r.out, "", "nothing left aside: %s", r.out);
	close(dfd);
	close(hold);
}

Test(live, busy_file_gives_up)
{
	char *dir = live_dir();
	pid_t kid = sleeper();
	struct fake *k = fake_new(kid, "busy writer");
	k->h.seq = 9; /* a writer stopped mid-rewrite, alive */
	fake_write(k, dir, NULL);
	struct h_result r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "top --once on a file that never settles");
	cr_assert_lt(r.secs, 2.0, "gave up in %.2f s", r.secs);
	cr_assert(h_has(r.out, h_fmt("PID %d  [busy", (int)kid)) && h_has(r.out, "(0 stalled, 1 busy)"), "%s", r.out);
	r = synclat(dir, "metrics", NULL);
	h_assert_ok(r, "metrics on a busy file");
	cr_assert(h_has(r.out, "syncshim_up{service=\"?\"} 0\n"), "%s", r.out);
}

static void write_bytes(const char *path, const void *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	close(fd);
}

/* Files no reader may trust, each under a .live name. */
static void write_hostile(const char *dir, const char *elsewhere, pid_t kid)
{
	cr_assert_eq(mkfifo(h_fmt("%s/x.live", dir), 0600), 0);
	cr_assert_eq(mkdir(h_fmt("%s/d.live", dir), 0700), 0);
	struct fake *k = fake_new(kid, "behind a symlink");
	cr_assert_eq(symlink(fake_write(k, elsewhere, NULL), h_fmt("%s/%d.live", dir, (int)kid)), 0);
	write_bytes(h_fmt("%s/900001.live", dir), k, 600); /* shorter than a header */
	k->h.pid = 900002;
	write_bytes(h_fmt("%s/900002.live", dir), k, sizeof(k->h) + 2 * sizeof(k->f[0])); /* the entries cut */
	k->h.pid = 900003;
	k->h.magic[0] = 'X';
	fake_write(k, dir, NULL);
	k->h.magic[0] = 'S';
	k->h.pid = 900004;
	k->h.version = 2;
	fake_write(k, dir, NULL);
	k->h.version = LIVE_VERSION;
	k->h.pid = 900005;
	k->h.nfiles = FAKE_MAX + 1;
	fake_write(k, dir, NULL);
	k->h.nfiles = 0;
	k->h.pid = 900008;
	k->h.interval_ms = 0xffffffff;
	fake_write(k, dir, NULL);
	k->h.interval_ms = 1000;
	k->h.pid = 900006; /* named 900007 */
	fake_write(k, dir, "900007.live");
	fake_write(k, dir, "abc.live");
	h_write_file(h_fmt("%s/notes.txt", dir), "not a .live file");
}

Test(live, hostile_files_are_refused_without_blocking)
{
	char *dir = live_dir(), *elsewhere = h_path("elsewhere");
	cr_assert_eq(mkdir(elsewhere, 0700), 0);
	pid_t kid = sleeper(), good = sleeper();
	write_hostile(dir, elsewhere, kid);
	fake_write(fake_new(good, "the good one"), dir, NULL);
	struct h_result r = synclat(dir, "top", "--json", NULL);
	cr_assert(!r.timed_out, "synclat blocked (on the FIFO?)");
	h_assert_ok(r, "top --json among hostile files");
	cr_assert_lt(r.secs, 5.0);
	expect_json(r.out);
	cr_assert(h_has(r.out, "\"processes\": 1,") && h_has(r.out, h_fmt("{\"pid\": %d,", (int)good)), "%s", r.out);
	cr_assert(h_has(r.out, "\"bad\": 8, \"refused\": 3}"), "%s", r.out);
	const char *why[] = { "x.live: refused: a FIFO", "d.live: refused: a directory",
			      h_fmt("%d.live: refused: a symbolic link", (int)kid), "900001.live: truncated: 600 bytes",
			      "900002.live: truncated", "900003.live: not a live counters file", "900004.live: version 2",
			      "900005.live: nfiles 41 > max_files 40", "900007.live: names pid 900006",
			      "900008.live: interval 4294967295 ms",
			      "abc.live: not named PID.live" };
	for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++)
		cr_assert(h_has(r.out, why[i]), "no note '%s':\n%s", why[i], r.out);
	cr_assert(!h_has(r.out, "notes.txt"), "%s", r.out);
	cr_assert_eq(access(h_fmt("%s/900001.live", dir), F_OK), 0, "a bad file is not removed (only stale ones)");
	r = synclat(dir, "metrics", NULL);
	h_assert_ok(r, "metrics among hostile files");
	cr_assert(h_has(r.out, "syncshim_live_skipped_files{reason=\"unreadable\"} 11\n"), "%s", r.out);
}

Test(live, file_of_another_user_is_refused)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to give a file to another user");
	char *dir = live_dir();
	pid_t kid = sleeper();
	char *path = fake_write(fake_new(kid, "planted"), dir, NULL);
	cr_assert_eq(chown(path, 4242, 4242), 0);
	struct h_result r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "top --once");
	cr_assert(h_has(r.out, "refused: owned by uid 4242, not by the directory's owner 0"), "%s", r.out);
	cr_assert(!h_has(r.out, "planted"), "%s", r.out);
}

Test(live, newer_writer_and_unterminated_strings)
{
	char *dir = live_dir();
	pid_t kid = sleeper();
	struct fake *k = fake_new(kid, "");
	memset(k->h.cmdline, 'A', sizeof(k->h.cmdline)); /* no NUL: the reader ends it */
	memcpy(k->h.cmdline, "evil\033[2J", 8);     /* an escape for the terminal */
	struct live_file *f = fake_file(k, 3, "", P_FDATASYNC, "");
	memset(f->path, 'B', sizeof(f->path));
	f->path[0] = '/';
	f->iv_syncs = 77;
	/* A newer writer: entries 64 bytes longer, known fields first. */
	size_t fs = sizeof(struct live_file) + 64, size = sizeof(k->h) + FAKE_MAX * fs;
	k->h.file_size = (uint32_t)fs;
	uint8_t *buf = calloc(1, size);
	memcpy(buf, &k->h, sizeof(k->h));
	memcpy(buf + sizeof(k->h), f, sizeof(*f));
	memset(buf + sizeof(k->h) + sizeof(*f), 0xee, 64); /* fields this reader does not know */
	write_bytes(h_fmt("%s/%d.live", dir, (int)kid), buf, size);
	struct h_result r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "top --once");
	cr_assert(!strchr(r.out, '\033'), "an escape from the file reached the output:\n%s", r.out);
	/* the label: its first 76 bytes (one word: cut inside it) and " ..." */
	char *want_cmd = h_fmt("command: evil?[2J%.*s ...\n", 76 - 8, k->h.cmdline + 8);
	cr_assert(h_has(r.out, want_cmd), "the command line, cut to a label:\n%s", r.out);
	char *row = line_with(r.out, "fdatasync");
	cr_assert(row, "%s", r.out);
	cr_assert(h_has(row, " 77.0 ") && h_has(row, h_fmt("/%.*s", LIVE_PATH_MAX - 2, f->path + 1)), "%s", row);
	cr_assert(!h_has(row, h_fmt("/%.*s", LIVE_PATH_MAX - 1, f->path + 1)), "the path is cut at 255 bytes: %s", row);
}

Test(live, stalled_process_is_flagged)
{
	char *dir = live_dir();
	pid_t kid = sleeper(), fresh = sleeper();
	struct fake *k = fake_new(kid, "stopped");
	k->h.updated_mono_ns -= 10 * SEC; /* 10 intervals of 1 s */
	fake_write(k, dir, NULL);
	fake_write(fake_new(fresh, "fresh"), dir, NULL);
	struct h_result r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "top --once");
	cr_assert(h_has(r.out, h_fmt("PID %d  [stalled: no update for 10.", (int)kid)), "%s", r.out);
	cr_assert(h_has(r.out, "(1 stalled, 0 busy)") && !h_has(line_with(r.out, "command: fresh"), "stalled"), "%s",
		  r.out);
	r = synclat(dir, "top", "--json", NULL);
	h_assert_ok(r, "top --json");
	cr_assert(h_has(strstr(r.out, h_fmt("{\"pid\": %d,", (int)kid)), "\"stalled\": true"), "%s", r.out);
	r = synclat(dir, "metrics", NULL);
	h_assert_ok(r, "metrics");
	cr_assert(h_has(r.out, "syncshim_up{service=\"stopped\"} 0\n") && h_has(r.out, "syncshim_up{service=\"fresh\"} 1\n"),
		  "%s", r.out);
}

/* ---- where the files are ------------------------------------------------ */

/* DIR made with this owner and mode (chmod after mkdir: the umask). */
static char *own_dir(const char *path, uid_t uid, mode_t mode)
{
	cr_assert_eq(mkdir(path, 0700), 0, "mkdir %s: %s", path, strerror(errno));
	cr_assert_eq(chown(path, uid, uid), 0);
	cr_assert_eq(chmod(path, mode), 0);
	return h_strdup(path);
}

static void own_file(const char *dir, pid_t pid, const char *cmd, uid_t uid)
{
	cr_assert_eq(chown(fake_write(fake_new(pid, cmd), dir, NULL), uid, uid), 0);
}

static bool scanned(const struct live_snapshot *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].h.pid == (uint32_t)pid)
			return true;
	return false;
}

static bool noted(const struct live_snapshot *s, const char *text)
{
	for (unsigned i = 0; i < s->nnotes; i++)
		if (h_has(s->notes[i], text))
			return true;
	return false;
}

/* Root reads every user's directory whose owner is that user, and no
 * other: the layout of /tmp and /run/user is rebuilt under the test's
 * directory (live_where's tmp and run_user). */
Test(live, root_reads_every_users_directory)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to give directories to other users");
	char *tmp = h_path("tmp"), *run = h_path("run"), *xdg = h_path("xdg");
	cr_assert_eq(mkdir(tmp, 01777) | mkdir(run, 0755) | mkdir(xdg, 0700), 0);
	pid_t a = sleeper(), b = sleeper(), c = sleeper(), d = sleeper(), e = sleeper(), f = sleeper();
	own_file(own_dir(h_fmt("%s/syncshim-4242", tmp), 4242, 0700), a, "user 4242 in /tmp", 4242);
	own_file(own_dir(h_fmt("%s/syncshim-4343", tmp), 0, 0700), b, "planted for 4343", 0);
	own_file(own_dir(h_fmt("%s/syncshim-4444", tmp), 4444, 0770), c, "group-writable", 4444);
	own_dir(h_fmt("%s/syncshim-test.x", tmp), 0, 0700); /* not a user id: never looked at */
	cr_assert_eq(symlink(h_fmt("%s/syncshim-4242", tmp), h_fmt("%s/syncshim-4545", tmp)), 0);
	own_dir(h_fmt("%s/4646", run), 4646, 0700);
	own_file(own_dir(h_fmt("%s/4646/syncshim", run), 4646, 0700), d, "user 4646 in /run/user", 4646);
	own_dir(h_fmt("%s/4747", run), 4747, 0700);
	own_file(own_dir(h_fmt("%s/4747/syncshim", run), 4747, 0700), e, "file of root in 4747's", 0);
	own_file(own_dir(h_fmt("%s/syncshim", xdg), 0, 0700), f, "root's own, in XDG_RUNTIME_DIR", 0);

	struct live_where w = { .xdg = xdg, .tmp = tmp, .run_user = run, .uid = 0, .all_users = true };
	struct live_snapshot s;
	cr_assert_eq(live_scan(&w, &s), 0);
	cr_assert(scanned(&s, a) && scanned(&s, d) && scanned(&s, f), "every user's own directory is read");
	cr_assert(!scanned(&s, b) && noted(&s, "syncshim-4343: not owned by its user"), "a directory not its user's");
	cr_assert(!scanned(&s, c) && noted(&s, "syncshim-4444: writable by others"), "a directory others may write");
	cr_assert(noted(&s, "syncshim-4545: a symbolic link"), "a symlinked directory");
	cr_assert(!scanned(&s, e) && noted(&s, "refused: owned by uid 0, not by the directory's owner 4747"),
		  "a file not the directory owner's");
	cr_assert_eq(s.nprocs, 3, "each once (the symlink is not followed)");
	cr_assert_eq(s.ndirs, 4, "xdg, tmp/syncshim-4242, run/4646, run/4747");
	live_snapshot_free(&s);

	w.all_users = false; /* a user reads only its own */
	w.uid = 4242;
	w.xdg = NULL;
	cr_assert_eq(live_scan(&w, &s), 0);
	cr_assert(scanned(&s, a) && s.nprocs == 1, "user 4242 sees its own /tmp/syncshim-4242 only");
	live_snapshot_free(&s);
}

/* Root reads every user's directory, but a stale file of another user
 * stays for that user's reader: only root's own goes. */
Test(live, root_removes_only_its_own_stale_files)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to give directories to other users");
	char *tmp = h_path("tmp");
	cr_assert_eq(mkdir(tmp, 01777), 0);
	char *theirs = own_dir(h_fmt("%s/syncshim-4242", tmp), 4242, 0700);
	char *ours = own_dir(h_fmt("%s/syncshim-0", tmp), 0, 0700);
	pid_t gone = dead_pid();
	own_file(theirs, gone, "another user's, stale", 4242);
	own_file(ours, gone, "root's, stale", 0);
	struct live_where w = { .tmp = tmp, .run_user = h_path("none"), .uid = 0, .all_users = true };
	struct live_snapshot s;
	cr_assert_eq(live_scan(&w, &s), 0);
	cr_assert_eq(s.skipped[LIVE_STALE], 2, "both are stale");
	cr_assert_eq(s.removed, 1, "only root's own is removed");
	live_snapshot_free(&s);
	cr_assert_eq(access(h_fmt("%s/%d.live", theirs, (int)gone), F_OK), 0, "user 4242's stale file was removed by root");
	cr_assert_eq(access(h_fmt("%s/%d.live", ours, (int)gone), F_OK), -1, "root's own stale file is still there");
}

Test(live, dir_option_and_missing_dir)
{
	struct trio t = trio_write();
	struct h_result r = synclat(NULL, "top", "--once", "--dir", t.dir, NULL);
	h_assert_ok(r, "--dir");
	cr_assert(h_has(r.out, "processes 3"), "%s", r.out);
	r = synclat("/nonexistent/live", "top", "--once", "--dir", t.dir, NULL);
	h_assert_ok(r, "--dir over SYNCSHIM_LIVE_DIR");
	cr_assert(h_has(r.out, "processes 3"), "--dir wins:\n%s", r.out);
	r = synclat(h_path("nowhere"), "top", "--once", NULL);
	h_assert_ok(r, "a live directory that does not exist");
	cr_assert(h_has(r.out, "nowhere: No such file or directory") && h_has(r.out, "processes 0"), "%s", r.out);
}

/* ---- synclat metrics ---------------------------------------------------- */

/* The value of the sample "NAME{LABELS}" (exact), or NULL. */
static char *sample(const char *text, const char *name, const char *labels)
{
	char *key = *labels ? h_fmt("\n%s{%s} ", name, labels) : h_fmt("\n%s ", name);
	const char *p = strstr(text, key);
	if (!p)
		return NULL;
	p += strlen(key);
	return strndup(p, strcspn(p, "\n"));
}

static void expect_sample(const char *text, const char *name, const char *labels, const char *want)
{
	char *got = sample(text, name, labels);
	cr_assert(got, "no sample %s{%s}:\n%s", name, labels, text);
	cr_assert_str_eq(got, want, "%s{%s}", name, labels);
}

/* promtool check metrics < FILE: the format and its lint rules. */
static void expect_promtool_ok(const char *text)
{
	char *file = h_path("metrics.prom");
	h_write_file(file, text);
	struct h_result r = h_sh(h_fmt("promtool check metrics < '%s'", file), 30);
	cr_assert(r.code == 0 && !r.out[0] && !r.err[0],
		  "promtool check metrics (Debian package prometheus; make deps installs it): exit %d\n%s%s", r.code,
		  r.out, r.err);
}

Test(live, metrics_pass_promtool_and_equal_the_inputs)
{
	struct trio t = trio_write();
	struct h_result r = synclat(t.dir, "metrics", "--per-file", NULL);
	h_assert_ok(r, "synclat metrics");
	const char *o = r.out;
	expect_promtool_ok(o);
	cr_assert(h_has(o, "# TYPE syncshim_writes_total counter\n") &&
			  h_has(o, "# TYPE syncshim_at_risk_bytes gauge\n") &&
			  h_has(o, "# TYPE syncshim_sync_duration_seconds histogram\n") &&
			  h_has(o, "# HELP syncshim_real_sync_duration_seconds "), "%s", o);
	expect_sample(o, "syncshim_live_processes", h_fmt("service=\"java\",pid=\"%d\"", (int)t.java), "1");
	char *L = h_fmt("service=\"java\",pid=\"%d\",rule=\"journal\",policy=\"defer\",path=\"/data/kahadb/db-1.log\"",
			(int)t.java);
	expect_sample(o, "syncshim_writes_total", L, "10000");
	expect_sample(o, "syncshim_written_bytes_total", L, "40960000");
	expect_sample(o, "syncshim_syncs_total", L, "8000");
	expect_sample(o, "syncshim_real_syncs_total", L, "400");
	expect_sample(o, "syncshim_sync_errors_total", L, "2");
	expect_sample(o, "syncshim_pending_syncs", L, "3");
	expect_sample(o, "syncshim_at_risk_bytes", L, "4100");
	expect_sample(o, "syncshim_at_risk_oldest_seconds", L, "0.012");
	expect_sample(o, "syncshim_at_risk_unbounded", L, "0");
	/* 300 at 338 ns, 95 at 24.2 us, 5 at 1.5 ms, 1 at 20 s */
	static const char *const cum[][2] = { { "1e-06", "300" }, { "2e-05", "300" }, { "5e-05", "395" },
		{ "0.001", "395" }, { "0.002", "400" }, { "10", "400" }, { "+Inf", "401" } };
	for (size_t i = 0; i < sizeof(cum) / sizeof(cum[0]); i++)
		expect_sample(o, "syncshim_sync_duration_seconds_bucket", h_fmt("%s,le=\"%s\"", L, cum[i][0]), cum[i][1]);
	expect_sample(o, "syncshim_sync_duration_seconds_sum", L, "21.23456789");
	expect_sample(o, "syncshim_sync_duration_seconds_count", L, "401");
	expect_sample(o, "syncshim_real_sync_duration_seconds_bucket", h_fmt("%s,le=\"0.001\"", L), "0");
	expect_sample(o, "syncshim_real_sync_duration_seconds_bucket", h_fmt("%s,le=\"0.002\"", L), "400");
	expect_sample(o, "syncshim_real_sync_duration_seconds_bucket", h_fmt("%s,le=\"0.005\"", L), "400");
	expect_sample(o, "syncshim_real_sync_duration_seconds_sum", L, "0.8");
	expect_sample(o, "syncshim_real_sync_duration_seconds_count", L, "400");
	int buckets = 0;
	for (const char *p = o; (p = strstr(p, h_fmt("syncshim_sync_duration_seconds_bucket{%s,", L))); p++)
		buckets++;
	cr_assert_eq(buckets, METRICS_NLE + 1, "22 bounds and +Inf");
	expect_sample(o, "syncshim_at_risk_unbounded",
		      h_fmt("service=\"scratchd\",pid=\"%d\",rule=\"scratch\",policy=\"noop\",path=\"/scratch/tmp.bin\"",
			    (int)t.scratch), "1");
	expect_sample(o, "syncshim_writes_total",
		      h_fmt("service=\"java\",pid=\"%d\",rule=\"default\",policy=\"passthrough\",path=\"/data/kahadb/db.data\"",
			    (int)t.java), "0");
	expect_sample(o, "syncshim_up", h_fmt("service=\"postgres:\",pid=\"%d\"", (int)t.pg), "1");
	/* Seconds exactly from ns, trailing zeros dropped. */
	expect_sample(o, "syncshim_start_time_seconds", h_fmt("service=\"java\",pid=\"%d\"", (int)t.java),
		      "1700000000.12");
}

Test(live, metrics_escape_labels_and_merge_duplicates)
{
	char *dir = live_dir();
	pid_t kid = sleeper();
	struct fake *k = fake_new(kid, "/usr/lib/jvm/bin/java -cp x Main");
	struct live_file *f = fake_file(k, 1, "r\"1", P_DEFER, "/data/we\"ird\\dir/new\nline/\xff.log");
	f->writes = 3;
	f = fake_file(k, 2, "dup", P_GROUP, "/dup/x.log");
	f->writes = 5, f->risk_age_ns = 2000, f->sync_buckets[20] = 1;
	f = fake_file(k, 2, "dup", P_GROUP, "/dup/x.log"); /* the same name, another file object */
	f->writes = 7, f->risk_age_ns = 9000, f->sync_buckets[20] = 2;
	fake_write(k, dir, NULL);
	struct h_result r = synclat(dir, "metrics", "--per-file", NULL);
	h_assert_ok(r, "synclat metrics");
	expect_promtool_ok(r.out);
	expect_sample(r.out, "syncshim_writes_total",
		      h_fmt("service=\"java\",pid=\"%d\",rule=\"r\\\"1\",policy=\"defer\","
			    "path=\"/data/we\\\"ird\\\\dir/new\\nline/\xef\xbf\xbd.log\"", (int)kid), "3");
	char *D = h_fmt("service=\"java\",pid=\"%d\",rule=\"dup\",policy=\"group\",path=\"/dup/x.log\"", (int)kid);
	expect_sample(r.out, "syncshim_writes_total", D, "12");
	expect_sample(r.out, "syncshim_at_risk_oldest_seconds", D, "0.000009");
	expect_sample(r.out, "syncshim_sync_duration_seconds_count", D, "3");
	int n = 0;
	for (const char *p = r.out; (p = strstr(p, "syncshim_writes_total{")); p++)
		n++;
	cr_assert_eq(n, 2, "one series per label set:\n%s", r.out);
	r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "top --once");
	cr_assert(h_has(r.out, "/data/we\"ird\\dir/new?line/"), "the newline shown as '?':\n%s", r.out);
}

/* Labels are compared as printed: policy numbers this reader does not
 * know all print "?", and bytes of a path that are not UTF-8 all print
 * U+FFFD, so such entries are one series too (found by fuzz_live). */
Test(live, metrics_merge_labels_that_print_the_same)
{
	char *dir = live_dir();
	pid_t kid = sleeper();
	struct fake *k = fake_new(kid, "/usr/bin/newer-shim");
	struct live_file *f = fake_file(k, 0, "", 7, "/x/a.log");
	f->writes = 2;
	f = fake_file(k, 0, "", 9, "/x/a.log");
	f->writes = 3;
	f = fake_file(k, 0, "", P_PASS, "/x/\xff.log");
	f->writes = 5;
	f = fake_file(k, 0, "", P_PASS, "/x/\xfe.log");
	f->writes = 7;
	fake_write(k, dir, NULL);
	struct h_result r = synclat(dir, "metrics", "--per-file", NULL);
	h_assert_ok(r, "synclat metrics");
	expect_promtool_ok(r.out);
	const char *who = h_fmt("service=\"newer-shim\",pid=\"%d\",rule=\"default\"", (int)kid);
	expect_sample(r.out, "syncshim_writes_total", h_fmt("%s,policy=\"?\",path=\"/x/a.log\"", who), "5");
	expect_sample(r.out, "syncshim_writes_total",
		      h_fmt("%s,policy=\"passthrough\",path=\"/x/\xef\xbf\xbd.log\"", who), "12");
	int n = 0;
	for (const char *p = r.out; (p = strstr(p, "syncshim_writes_total{")); p++)
		n++;
	cr_assert_eq(n, 2, "one series per label set as printed:\n%s", r.out);
}

/*
 * By default a series per service (the program's name) and rule, summed
 * over the service's processes and the rule's files: two PostgreSQL
 * backends writing two WAL files are one series, with no pid or path
 * label, and the rule table gives each rule's matched files (the most of
 * any process) and the config errors.
 */
Test(live, metrics_by_default_a_series_per_service_and_rule)
{
	char *dir = live_dir();
	pid_t b1 = sleeper(), b2 = sleeper(), other = sleeper();
	struct fake *k = fake_new(b1, "postgres: 15/main: app db [local] idle");
	snprintf(k->h.comm, sizeof(k->h.comm), "postgres");
	struct live_file *f = fake_file(k, 1, "wal", P_DEFER, "/pg/wal/000000010000000000000001");
	f->writes = 10, f->syncs = 4, f->risk_bytes = 100, f->sync_buckets[live_bucket(500)] = 4, f->sync_sum_ns = 2000;
	fake_rule(k, 0, "", P_PASS, "", 7);
	fake_rule(k, 1, "wal", P_DEFER, "/pg/wal/*", 1);
	fake_rule(k, 2, "tmp", P_PASS, "/srv/pg/tmp/*", 0);
	k->h.config_errors = 1;
	fake_write(k, dir, NULL);
	k = fake_new(b2, "postgres: 15/main: walwriter");
	snprintf(k->h.comm, sizeof(k->h.comm), "postgres");
	f = fake_file(k, 1, "wal", P_DEFER, "/pg/wal/000000010000000000000002");
	f->writes = 5, f->syncs = 3, f->risk_bytes = 50, f->sync_buckets[live_bucket(500)] = 3, f->sync_sum_ns = 1000;
	f = fake_file(k, 0, "", P_PASS, "/pg/base/1/2");
	f->writes = 1;
	fake_rule(k, 0, "", P_PASS, "", 3);
	fake_rule(k, 1, "wal", P_DEFER, "/pg/wal/*", 2);
	fake_rule(k, 2, "tmp", P_PASS, "/srv/pg/tmp/*", 0);
	fake_write(k, dir, NULL);
	fake_write(fake_new(other, "/usr/bin/redis-server 127.0.0.1:6379"), dir, NULL);
	struct h_result r = synclat(dir, "metrics", NULL);
	h_assert_ok(r, "synclat metrics");
	const char *o = r.out;
	expect_promtool_ok(o);
	cr_assert(!h_has(o, "pid=") && !h_has(o, "path="), "per-process or per-file labels by default:\n%s", o);
	const char *W = "service=\"postgres\",rule=\"wal\",policy=\"defer\"";
	expect_sample(o, "syncshim_writes_total", W, "15");
	expect_sample(o, "syncshim_syncs_total", W, "7");
	expect_sample(o, "syncshim_at_risk_bytes", W, "150");
	expect_sample(o, "syncshim_sync_duration_seconds_count", W, "7");
	expect_sample(o, "syncshim_sync_duration_seconds_sum", W, "0.000003");
	expect_sample(o, "syncshim_writes_total", "service=\"postgres\",rule=\"default\",policy=\"passthrough\"", "1");
	expect_sample(o, "syncshim_live_processes", "service=\"postgres\"", "2");
	expect_sample(o, "syncshim_live_processes", "service=\"redis-server\"", "1");
	expect_sample(o, "syncshim_up", "service=\"postgres\"", "1");
	expect_sample(o, "syncshim_config_errors_total", "service=\"postgres\"", "1");
	expect_sample(o, "syncshim_rule_matched_files", W, "2");
	expect_sample(o, "syncshim_rule_matched_files", "service=\"postgres\",rule=\"tmp\",policy=\"passthrough\"", "0");
	int n = 0;
	for (const char *p = o; (p = strstr(p, "syncshim_writes_total{service=\"postgres\"")); p++)
		n++;
	cr_assert_eq(n, 2, "one series per rule of the service (wal, default), not per process or file:\n%s", o);
	r = synclat(dir, "metrics", "--per-file", NULL);
	h_assert_ok(r, "synclat metrics --per-file");
	expect_promtool_ok(r.out);
	expect_sample(r.out, "syncshim_writes_total",
		      h_fmt("service=\"postgres\",pid=\"%d\",rule=\"wal\",policy=\"defer\",path=\"/pg/wal/000000010000000000000002\"",
			    (int)b2), "5");
}

/*
 * What needs a look is said under the process in top: a rule that matched
 * no file (with its glob), the ini refusals; a rule's name is never cut.
 * A table placed outside the file is refused like any broken layout.
 */
Test(live, top_names_rules_that_matched_nothing_and_config_errors)
{
	char *dir = live_dir();
	pid_t kid = sleeper(), bad = sleeper();
	struct fake *k = fake_new(kid, "redis-server 127.0.0.1:16379                                        ");
	struct live_file *f = fake_file(k, 1, "appendonly.aof.N.incr.aof", P_DEFER, "/r/appendonlydir/appendonly.aof.1.incr.aof");
	f->iv_syncs = 10;
	fake_rule(k, 0, "", P_PASS, "", 2);
	fake_rule(k, 1, "appendonly.aof.N.incr.aof", P_DEFER, "/r/appendonlydir/appendonly.aof.*.incr.aof", 1);
	fake_rule(k, 2, "manifest", P_PASS, "/tmp/radopt/redis/appendonlydir/*.manifest", 0);
	k->h.config_errors = 2;
	snprintf(k->h.config_error, sizeof(k->h.config_error), "/etc/r.ini:4: unknown key 'max_delay_m'");
	fake_write(k, dir, NULL);
	k = fake_new(bad, "table outside");
	fake_rule(k, 0, "", P_PASS, "", 1);
	k->h.rules_offset = sizeof(*k); /* the table would end past the file */
	fake_write(k, dir, NULL);
	struct h_result r = synclat(dir, "top", "--once", NULL);
	h_assert_ok(r, "top --once");
	const char *o = r.out;
	cr_assert(h_has(o, "  ! rule manifest (passthrough) matched no file: path = /tmp/radopt/redis/appendonlydir/*.manifest\n"),
		  "%s", o);
	cr_assert(h_has(o, "  ! config errors 2, the latest: /etc/r.ini:4: unknown key 'max_delay_m'\n"), "%s", o);
	cr_assert(!h_has(o, "! rule appendonly"), "a rule with a file is no warning:\n%s", o);
	char *row = line_with(o, "appendonly.aof.1.incr.aof");
	cr_assert(row && h_has(row, " appendonly.aof.N.incr.aof "), "the rule's name whole:\n%s", o);
	cr_assert(h_has(o, "default passthrough  config /etc/syncshim/test.ini  command: redis-server 127.0.0.1:16379\n"),
		  "the command's words, its padding gone:\n%s", o);
	cr_assert(h_has(o, "1 unreadable or refused") && !h_has(o, "table outside"), "%s", o);
	r = synclat(dir, "top", "--json", NULL);
	h_assert_ok(r, "top --json");
	expect_json(r.out);
	cr_assert(h_has(r.out, "{\"rule\": 2, \"name\": \"manifest\", \"policy\": \"passthrough\", "
			       "\"glob\": \"/tmp/radopt/redis/appendonlydir/*.manifest\", \"files\": 0, \"approximate\": false}"),
		  "%s", r.out);
	cr_assert(h_has(r.out, "\"config_errors\": 2,"), "%s", r.out);
}

/* The strace line from p on ends with "= 0". */
static bool succeeded(const char *p)
{
	char *line = strndup(p, strcspn(p, "\n"));
	size_t n = strlen(line);
	return n >= 3 && !strcmp(line + n - 3, "= 0");
}

Test(live, metrics_out_replaces_atomically)
{
	struct trio t = trio_write();
	char *mdir = h_path("textfile"), *prom = h_fmt("%s/syncshim.prom", mdir);
	cr_assert_eq(mkdir(mdir, 0755), 0);
	char *run = h_fmt("umask 077; SYNCSHIM_LIVE_DIR='%s' '%s' metrics --out '%s'", t.dir, synclat_bin(), prom);
	h_assert_ok(h_sh(run, 20), "metrics --out");
	struct stat st;
	cr_assert_eq(stat(prom, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "mode %o, want 0644 whatever the umask", st.st_mode & 07777);
	struct h_result r = synclat(t.dir, "metrics", NULL);
	h_assert_ok(r, "metrics to stdout");
	char *first = h_read_file(prom);
	cr_assert_str_eq(first, r.out, "--out writes what stdout gets");

	/* A reader that has the file open keeps a whole exposition; the name
	 * moves to a new one. */
	int held = open(prom, O_RDONLY);
	cr_assert(held >= 0);
	char *trace = h_path("strace.txt");
	h_assert_ok(h_sh(h_fmt("SYNCSHIM_LIVE_DIR='%s' strace -f -o '%s' -e trace=openat,fsync,rename,renameat,renameat2 "
			     "'%s' metrics --out '%s'", t.dir, trace, synclat_bin(), prom), 30),
		    "metrics --out under strace");
	cr_assert_neq(h_ino(prom), st.st_ino, "replaced by rename, not rewritten in place");
	char buf[1 << 16];
	ssize_t n = pread(held, buf, sizeof(buf) - 1, 0);
	cr_assert_eq(n, (ssize_t)strlen(first), "the old file is whole");
	close(held);
	cr_assert_str_eq(h_sh(h_fmt("ls -A '%s'", mdir), 10).out, "syncshim.prom\n", "no temporary file left");

	/* The steps, in order: a temporary beside it, synced, renamed over it. */
	char *tr = h_read_file(trace);
	char *tmpl = h_fmt("openat(AT_FDCWD, \"%s/.syncshim.prom.tmp.", mdir);
	const char *open_at = strstr(tr, tmpl);
	cr_assert(open_at, "no temporary file in the same directory:\n%s", tr);
	const char *eq = strstr(open_at, ") = ");
	cr_assert(eq && strstr(open_at, "O_EXCL") && strstr(open_at, "O_EXCL") < eq, "%s", tr);
	int fd = atoi(eq + 4);
	const char *sync_at = strstr(open_at, h_fmt("fsync(%d)", fd));
	const char *ren_at = strstr(open_at, h_fmt("\", \"%s\")", prom));
	cr_assert(sync_at && ren_at && sync_at < ren_at, "the temporary file is synced before the rename:\n%s", tr);
	cr_assert(succeeded(sync_at) && succeeded(ren_at), "%s", tr);
	const char *dsync = strstr(ren_at, "fsync(");
	cr_assert(dsync && succeeded(dsync), "then the directory:\n%s", tr);

	r = synclat(t.dir, "metrics", "--out", h_path("no/such/dir/x.prom"), NULL);
	cr_assert_eq(r.code, 2, "an unwritable --out: exit %d\n%s", r.code, r.err);
	cr_assert(h_has(r.err, "cannot create a file beside it"), "%s", r.err);
}

/* ---- the interactive view, in tmux -------------------------------------- */

/* tmux ARGS on this test's own server (socket in its directory). */
static struct h_result tmux(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct h_result tmux(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *args = NULL;
	cr_assert(vasprintf(&args, fmt, ap) >= 0);
	va_end(ap);
	struct h_result r = h_sh(h_fmt("tmux -S '%s' %s", tmux_sock, args), 20);
	cr_assert_eq(r.code, 0, "tmux %s: exit %d (Debian package tmux; make deps installs it)\n%s", args, r.code,
		     r.err);
	return r;
}

/* In a 160x40 window: synclat top, its exit status and the terminal's
 * settings after it recorded, then again once a line is typed. */
static void tmux_start(const char *live, const char *args)
{
	tmux_sock = h_path("tmux.sock");
	char *script = h_path("pane.sh");
	h_write_file(script, h_fmt("stty -g > '%s/stty.before'\n"
				   "for i in 1 2; do\n"
				   "  SYNCSHIM_LIVE_DIR='%s' '%s' top %s\n"
				   "  rc=$?\n"
				   "  stty -g > '%s/stty.after.'$i\n"
				   "  echo \"synclat-exit-$i=$rc\"\n"
				   "  read again\n"
				   "done\n"
				   "exec cat\n",
				   h_ctx.dir, live, synclat_bin(), args, h_ctx.dir));
	tmux("-f /dev/null new-session -d -s live -x 160 -y 40 'sh %s'", script);
}

static char *screen(void)
{
	return tmux("capture-pane -p -t live").out;
}

typedef bool (*screen_test)(const char *screen, const void *arg);

/* Polls the screen until test passes; fails after 10 s with the screen. */
static char *await(screen_test test, const void *arg, const char *what)
{
	double end = h_now() + 10;
	char *s;
	while (!test((s = screen()), arg)) {
		cr_assert_lt(h_now(), end, "the screen never showed %s:\n%s", what, s);
		struct timespec ts = { 0, 20 * 1000 * 1000 }; /* a poll interval, not a guess at timing */
		nanosleep(&ts, NULL);
	}
	return s;
}

static bool has(const char *s, const void *needle)
{
	return h_has(s, needle);
}

static bool lacks(const char *s, const void *needle)
{
	return !h_has(s, needle);
}

/* A header text and the processes in this order. */
struct order {
	const char *head;
	int n;
	pid_t pid[3];
};

static bool in_order(const char *s, const void *arg)
{
	const struct order *o = arg;
	long got[8];
	if (!h_has(s, o->head) || pid_order(s, got, 8) != o->n)
		return false;
	for (int i = 0; i < o->n; i++)
		if (got[i] != o->pid[i])
			return false;
	return true;
}

static void expect_restored(int run, const char *exit_line)
{
	await(has, exit_line, exit_line);
	char *before = h_read_file(h_path("stty.before")), *after = h_read_file(h_path(h_fmt("stty.after.%d", run)));
	cr_assert(before[0] && !strcmp(before, after), "the terminal settings were not put back:\n%s%s", before, after);
	char *flags = tmux("display -p -t live '#{alternate_on} #{cursor_flag}'").out;
	cr_assert_str_eq(flags, "0 1\n", "main screen and a visible cursor again (alternate_on cursor_flag)");
}

Test(live, interactive_keys_in_tmux)
{
	struct trio t = trio_write();
	tmux_start(t.dir, "-d 0.2");
	struct order o = { "sort syncs/s", 3, { t.java, t.pg, t.scratch } };
	await(in_order, &o, "the processes by syncs/s");
	cr_assert_str_eq(tmux("display -p -t live '#{alternate_on} #{cursor_flag}'").out, "1 0\n",
			 "the alternate screen, cursor hidden");
	tmux("send-keys -t live w");
	o = (struct order){ "sort writes/s", 3, { t.pg, t.java, t.scratch } };
	await(in_order, &o, "w: by writes/s");
	tmux("send-keys -t live r");
	o = (struct order){ "sort data at risk", 3, { t.scratch, t.java, t.pg } };
	await(in_order, &o, "r: by data at risk");
	tmux("send-keys -t live l");
	o = (struct order){ "sort sync p99", 3, { t.pg, t.java, t.scratch } };
	await(in_order, &o, "l: by sync p99");

	tmux("send-keys -t live f");
	await(has, "filter (a pid", "f: the filter prompt");
	tmux("send-keys -t live -l postgres");
	tmux("send-keys -t live Enter");
	o = (struct order){ "filter 'postgres'", 1, { t.pg } };
	await(in_order, &o, "the filter applied");
	tmux("send-keys -t live / C-u Enter");
	o = (struct order){ "processes 3", 3, { t.pg, t.java, t.scratch } };
	await(in_order, &o, "/ and an empty filter: all again");
	cr_assert(!h_has(screen(), "filter '"), "%s", screen());

	tmux("send-keys -t live g");
	await(has, "(1 file)", "g: one row per rule");
	tmux("send-keys -t live g h");
	await(has, "synclat top - keys", "h: the help");
	tmux("send-keys -t live x");
	await(lacks, "synclat top - keys", "any key leaves the help");

	/* Refreshed: the java process's journal now makes 7777 syncs/s. */
	t.kj->f[0].iv_syncs = 7777;
	t.kj->h.updated_mono_ns = clock_ns(CLOCK_MONOTONIC);
	fake_write(t.kj, t.dir, NULL);
	await(has, " 7777 ", "the new rate after a refresh");

	tmux("resize-window -t live -x 100 -y 8");
	char *s = await(has, "more lines", "a smaller window: the lines that do not fit counted");
	for (char *line = s, *nl; (nl = strchr(line, '\n')); line = nl + 1)
		cr_assert_leq(nl - line, 100, "a line wider than the window:\n%s", s);

	tmux("send-keys -t live q");
	expect_restored(1, "synclat-exit-1=0");
}

Test(live, interactive_restores_the_terminal_on_signals)
{
	struct trio t = trio_write();
	tmux_start(t.dir, "-d 3600"); /* a signal must end the wait, not the next refresh */
	await(has, "sort syncs/s", "the view");
	tmux("send-keys -t live C-c");
	expect_restored(1, "synclat-exit-1=0");
	tmux("send-keys -t live Enter");
	await(has, "sort syncs/s", "the view, started again");
	int pane = atoi(tmux("display -p -t live '#{pane_pid}'").out);
	struct h_result r = h_sh(h_fmt("pkill -TERM -P %d -x synclat", pane), 10);
	cr_assert_eq(r.code, 0, "no synclat under the pane's shell %d", pane);
	expect_restored(2, "synclat-exit-2=143");
}

/* Ctrl-Z under a shell with job control (an interactive bash, as in a
 * terminal: the kernel discards SIGTSTP for a process group no shell
 * could continue, such as a script's): the terminal is put back while
 * synclat is stopped, and taken again by fg. */
Test(live, interactive_suspends_and_resumes)
{
	struct trio t = trio_write();
	tmux_sock = h_path("tmux.sock");
	tmux("-f /dev/null new-session -d -s live -x 160 -y 40 'PS1=\"$ \" bash --norc --noprofile -i'");
	char *cmd = h_fmt("SYNCSHIM_LIVE_DIR=%s %s top -d 3600", t.dir, synclat_bin());
	tmux("send-keys -t live -l '%s'", cmd);
	tmux("send-keys -t live Enter");
	await(has, "sort syncs/s", "the view");
	tmux("send-keys -t live C-z");
	await(has, "Stopped", "bash's word that the job stopped");
	cr_assert_str_eq(tmux("display -p -t live '#{alternate_on} #{cursor_flag}'").out, "0 1\n",
			 "the main screen and the cursor back while stopped");
	tmux("send-keys -t live -l fg");
	tmux("send-keys -t live Enter");
	await(has, "sort syncs/s", "the view again after fg");
	cr_assert_str_eq(tmux("display -p -t live '#{alternate_on} #{cursor_flag}'").out, "1 0\n");
	tmux("send-keys -t live q");
	await(lacks, "sort syncs/s", "q after fg");
	tmux("send-keys -t live -l 'echo synclat-exit=$?'");
	tmux("send-keys -t live Enter");
	await(has, "synclat-exit=0", "exit status 0");
}

Test(live, top_without_a_terminal_and_bad_options)
{
	char *dir = live_dir();
	struct h_result r = synclat(dir, "top", NULL);
	cr_assert_eq(r.code, 2, "no terminal: exit %d\n%s", r.code, r.err);
	cr_assert(h_has(r.err, "needs a terminal; use --once or --json"), "%s", r.err);
	const char *bad[][3] = { { "-d", "0", NULL }, { "-d", "soon", NULL }, { "-p", "x", NULL },
				 { "--once", "--json", NULL }, { "extra", NULL, NULL }, { "--bogus", NULL, NULL } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = synclat(dir, "top", bad[i][0], bad[i][1], NULL);
		cr_assert_eq(r.code, 2, "top %s %s: exit %d", bad[i][0], bad[i][1] ? bad[i][1] : "", r.code);
		cr_assert(h_has(r.err, "usage: synclat top"), "%s", r.err);
	}
	r = synclat(dir, "metrics", "extra", NULL);
	cr_assert_eq(r.code, 2, "metrics extra: exit %d", r.code);
	r = synclat(dir, "top", "-h", NULL);
	h_assert_ok(r, "top -h");
	cr_assert(h_has(r.out, "keys: q quit"), "%s", r.out);
	r = synclat(dir, "--help", NULL);
	cr_assert(h_has(r.out, "synclat top [") && h_has(r.out, "synclat metrics ["), "%s", r.out);
}

/* The writer has created its file and not yet written it (empty, or a
 * header of zeros): busy while its process lives, stale once it is gone. */
Test(live, file_being_created_is_busy_not_bad)
{
	char *dir = live_dir();
	pid_t kid = sleeper(), dead = dead_pid();
	h_write_file(h_fmt("%s/%d.live", dir, (int)kid), "");
	char *zeros = calloc(1, sizeof(struct fake));
	write_bytes(h_fmt("%s/%d.live", dir, (int)dead), zeros, sizeof(struct fake));
	struct h_result r = synclat(dir, "top", "--json", NULL);
	h_assert_ok(r, "top --json");
	cr_assert(h_has(r.out, "\"busy\": 1") && h_has(r.out, "\"stale\": 1, \"removed\": 1, \"bad\": 0"), "%s", r.out);
	cr_assert(h_has(strstr(r.out, h_fmt("{\"pid\": %d,", (int)kid)), "\"busy\": true"), "%s", r.out);
}

/* ======================================================================== */
/* With the real shim: a shimmed program's own live file, as the readers    */
/* show it (shim/live.c writes it; test_livepub.c checks its counts).       */
/* ======================================================================== */

/* fl_loop under POLICY with live counters on, a write + fsync every
 * 500 us until the stop file appears. */
static pid_t shimmed_loop(const char *dir, const char *policy, const char *file, const char *stop,
			  struct h_cmd *c, const char *log)
{
	h_cmd_init(c, H_SHIM);
	h_env(c, "SYNCSHIM_LIVE=1");
	h_envf(c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_envf(c, "SYNCSHIM_POLICY=%s", policy);
	if (log) {
		h_envf(c, "SYNCSHIM_LOG=%s", log);
		h_env(c, "SYNCSHIM_LOG_MODE=calls");
	}
	h_args(c, h_prog("fl_loop"), "-f", file, "-n", "1000000", "-p", "500", "-S", stop, "-T", "30000", NULL);
	return h_spawn(c);
}

/* Polls `synclat top --json` until the file's entry satisfies want. */
static char *await_json(const char *dir, const char *file, bool (*want)(const char *entry))
{
	for (double end = h_now() + 15; h_now() < end; usleep(50000)) {
		struct h_result r = synclat(dir, "top", "--json", NULL);
		const char *e = strstr(r.out, h_fmt("\"path\": \"%s\"", file));
		if (e && want(e))
			return r.out;
	}
	return NULL;
}

static double json_num(const char *entry, const char *key)
{
	const char *p = strstr(entry, h_fmt("\"%s\": ", key));
	return p ? strtod(p + strlen(key) + 4, NULL) : -1;
}

static bool busy_and_at_risk(const char *e)
{
	return json_num(e, "writes_per_s") > 0 && json_num(e, "at_risk_worst_bytes") > 0;
}

static bool busy(const char *e)
{
	return json_num(e, "writes_per_s") > 0 && json_num(e, "syncs_per_s") > 0;
}

/*
 * A running program under defer appears in top --once with its file, its
 * policy, its calls/s and data at risk; under passthrough the same program
 * has none at risk, in every snapshot.
 */
Test(live, real_shimmed_process_in_top_once)
{
	char *dir = live_dir(), *file = h_path("d.dat"), *stop = h_path("stop");
	struct h_cmd c;
	pid_t pid = shimmed_loop(dir, "defer", file, stop, &c, NULL);
	char *json = await_json(dir, file, busy_and_at_risk);
	struct h_result once = synclat(dir, "top", "--once", NULL);
	h_write_file(stop, "");
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "fl_loop");
	cr_assert_not_null(json, "defer: top --json never showed the file busy with data at risk");
	char *row = line_with(once.out, file);
	cr_assert_not_null(row, "top --once has no row for %s:\n%s", file, once.out);
	cr_assert(h_has(row, "defer"), "the row does not name its policy: %s", row);
	cr_assert(h_has(once.out, h_fmt("PID %d", (int)pid)), "%s", once.out);

	char *pfile = h_path("p.dat"), *pstop = h_path("pstop");
	pid = shimmed_loop(dir, "passthrough", pfile, pstop, &c, NULL);
	int seen = 0;
	for (double end = h_now() + 15; h_now() < end && seen < 3; usleep(100000)) {
		struct h_result r = synclat(dir, "top", "--json", NULL);
		const char *e = strstr(r.out, h_fmt("\"path\": \"%s\"", pfile));
		if (!e || !busy(e))
			continue;
		seen++;
		cr_assert_eq(json_num(e, "at_risk_bytes"), 0, "passthrough: data at risk in\n%s", e);
		cr_assert_eq(json_num(e, "at_risk_worst_bytes"), 0, "passthrough: data at risk in\n%s", e);
	}
	h_write_file(pstop, "");
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "fl_loop");
	cr_assert_eq(seen, 3, "passthrough: saw the busy file in only %d snapshots", seen);
}

/* The interactive view of the same: in a tmux pane, the defer program's
 * row with its policy and path. */
Test(live, real_shimmed_process_in_the_interactive_view)
{
	char *dir = live_dir(), *file = h_path("i.dat"), *stop = h_path("stop");
	struct h_cmd c;
	pid_t pid = shimmed_loop(dir, "defer", file, stop, &c, NULL);
	tmux_start(dir, "-d 0.5");
	char *s = await(has, file, "the shimmed program's file");
	char *row = line_with(s, file);
	tmux("send-keys -t live q");
	h_write_file(stop, "");
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "fl_loop");
	cr_assert(row && h_has(row, "defer"), "%s", s);
	cr_assert(h_has(s, h_fmt("PID %d", (int)pid)), "%s", s);
}

static bool counted(const char *text, const void *arg)
{
	(void)arg;
	return h_has(text, "syncshim_writes_total{");
}

/*
 * metrics on a real run pass promtool, and their counts are the log's:
 * after the program has stopped writing (it idles), synclat metrics and
 * synclat report of the same run give the same writes, bytes and syncs.
 */
Test(live, real_metrics_match_the_report_of_the_same_run)
{
	char *dir = live_dir(), *file = h_path("m.dat"), *stop = h_path("stop"), *log = h_path("m.log");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_env(&c, "SYNCSHIM_LIVE=1");
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_env(&c, "SYNCSHIM_POLICY=passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_env(&c, "SYNCSHIM_LOG_MODE=calls");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "300", "-S", stop, "-I", "-T", "30000", NULL);
	pid_t pid = h_spawn(&c);
	char *labels = NULL, *m = NULL;
	for (double end = h_now() + 15; h_now() < end; usleep(50000)) {
		m = synclat(dir, "metrics", NULL).out;
		const char *w = counted(m, NULL) ? strstr(m, "syncshim_writes_total{") : NULL;
		const char *close = w ? strchr(w, '}') : NULL;
		if (close && strtol(close + 1, NULL, 10) == 300) {
			const char *open = w + strlen("syncshim_writes_total{");
			labels = strndup(open, (size_t)(close - open));
			break;
		}
	}
	h_write_file(stop, "");
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "fl_loop");
	cr_assert_not_null(labels, "metrics never showed 300 writes:\n%s", m ? m : "");
	expect_promtool_ok(m);
	expect_sample(m, "syncshim_written_bytes_total", labels, "1228800");
	expect_sample(m, "syncshim_syncs_total", labels, "300");
	expect_sample(m, "syncshim_real_syncs_total", labels, "300");
	expect_sample(m, "syncshim_sync_duration_seconds_count", labels, "300");
	struct h_result rep = synclat(NULL, "report", "--csv", "--files", log, NULL);
	cr_assert_eq(rep.code, 0, "%s", rep.err);
	cr_assert(h_has(rep.out, h_fmt("file,%s,writes,300,1228800,", file)), "%s", rep.out);
	cr_assert(h_has(rep.out, h_fmt("file,%s,syncs,300,", file)), "%s", rep.out);
}

/* fl_loop under POLICY with only the live directory set: live = auto. */
static pid_t default_loop(const char *dir, const char *policy, const char *file, const char *stop, struct h_cmd *c)
{
	h_cmd_init(c, H_SHIM);
	h_envf(c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_envf(c, "SYNCSHIM_POLICY=%s", policy);
	h_args(c, h_prog("fl_loop"), "-f", file, "-n", "1000000", "-p", "500", "-S", stop, "-T", "30000", NULL);
	return h_spawn(c);
}

/*
 * Without any live option, a process under defer publishes (top shows it
 * and its data at risk) while one under passthrough, started first and
 * already writing, publishes nothing: live = auto follows the rules.
 */
Test(live, on_by_default_where_data_can_be_at_risk)
{
	char *dir = live_dir(), *pfile = h_path("p.dat"), *file = h_path("d.dat"), *stop = h_path("stop");
	struct h_cmd pc, dc;
	pid_t ppid = default_loop(dir, "passthrough", pfile, stop, &pc);
	for (double end = h_now() + 15; h_now() < end && h_size(pfile) <= 0; usleep(20000))
		;
	pid_t dpid = default_loop(dir, "defer", file, stop, &dc);
	char *json = await_json(dir, file, busy_and_at_risk);
	struct h_result once = synclat(dir, "top", "--json", NULL);
	h_write_file(stop, "");
	h_assert_ok(h_reap(&dc, dpid, 20, false, 0), "fl_loop under defer");
	h_assert_ok(h_reap(&pc, ppid, 20, false, 0), "fl_loop under passthrough");
	cr_assert_gt(h_size(pfile), 0, "the passthrough loop never wrote");
	cr_assert_not_null(json, "defer without a live option: top never showed the file with data at risk");
	cr_expect(h_has(once.out, h_fmt("{\"pid\": %d,", (int)dpid)), "%s", once.out);
	cr_expect(!h_has(once.out, h_fmt("{\"pid\": %d,", (int)ppid)), "passthrough published:\n%s", once.out);
	cr_expect(!h_has(once.out, pfile), "passthrough published:\n%s", once.out);
}

/* A port in 20000-59999 nobody listens on now (loopback). */
static int free_port(void)
{
	for (int tries = 0; tries < 50; tries++) {
		int port = 20000 + (int)(h_now() * 1e6) % 40000 + tries;
		struct h_result r = h_sh(h_fmt("ss -Hltn 'sport = :%d' | grep -q . && echo busy", port), 10);
		if (!h_has(r.out, "busy"))
			return port;
	}
	cr_assert_fail("no free port");
	return 0;
}

/*
 * Debian's Prometheus scrapes `synclat metrics --listen 127.0.0.1:PORT`
 * and a PromQL query over its HTTP API returns the data at risk of a
 * process under defer (live counters on by default). Everything on
 * loopback; Prometheus, the endpoint and the process stopped at the end.
 */
Test(live, prometheus_scrapes_the_endpoint, .timeout = 120)
{
	if (access("/usr/bin/prometheus", X_OK) != 0 || access("/usr/bin/curl", X_OK) != 0)
		cr_skip_test("prometheus or curl is not installed (make deps installs them)");
	char *dir = live_dir(), *file = h_path("prom.dat"), *stop = h_path("stop");
	int mport = free_port(), pport = mport + 1;
	struct h_cmd loop, ep, prom;
	pid_t lpid = default_loop(dir, "defer", file, stop, &loop);

	h_cmd_init(&ep, H_PLAIN);
	h_envf(&ep, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_args(&ep, synclat_bin(), "metrics", "--listen", h_fmt("127.0.0.1:%d", mport), NULL);
	pid_t epid = h_spawn(&ep);

	char *cfg = h_path("prometheus.yml");
	h_write_file(cfg, h_fmt("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
				"scrape_configs:\n  - job_name: syncshim\n    static_configs:\n"
				"      - targets: ['127.0.0.1:%d']\n", mport));
	h_cmd_init(&prom, H_PLAIN);
	h_args(&prom, "/usr/bin/prometheus", h_fmt("--config.file=%s", cfg),
	       h_fmt("--storage.tsdb.path=%s", h_path("tsdb")), h_fmt("--web.listen-address=127.0.0.1:%d", pport), NULL);
	pid_t ppid = h_spawn(&prom);

	(void)lpid; /* the endpoint reads dir alone: fl_loop is that one process */
	const char *query = "max(syncshim_at_risk_worst_bytes{service=\"fl_loop\",policy=\"defer\"})";
	char *answer = NULL;
	for (double end = h_now() + 60; h_now() < end; usleep(200000)) {
		struct h_result q = h_sh(h_fmt("curl -s -G --max-time 5 'http://127.0.0.1:%d/api/v1/query' "
					       "--data-urlencode '%s'", pport, h_fmt("query=%s", query)), 10);
		const char *v = strstr(q.out, "\"value\":[");
		/* "value":[TIME,"BYTES"]: a non-zero figure */
		if (v && (v = strchr(v, ',')) && v[1] == '"' && atof(v + 2) > 0) {
			answer = q.out;
			break;
		}
	}
	struct h_result direct = h_sh(h_fmt("curl -s --max-time 5 http://127.0.0.1:%d/metrics", mport), 10);
	h_write_file(stop, "");
	kill(ppid, SIGTERM);
	kill(epid, SIGTERM);
	struct h_result pr = h_reap(&prom, ppid, 30, false, 0);
	struct h_result er = h_reap(&ep, epid, 10, false, 0);
	h_assert_ok(h_reap(&loop, lpid, 20, false, 0), "fl_loop");
	cr_expect_eq(er.code, 0, "synclat metrics --listen: exit %d\n%s", er.code, er.err);
	cr_expect(h_has(direct.out, "syncshim_at_risk_worst_bytes"), "the endpoint:\n%s", direct.out);
	cr_assert_not_null(answer, "Prometheus never returned %s > 0; its log:\n%s", query, pr.err);
	cr_expect(h_has(answer, "\"status\":\"success\""), "%s", answer);
}

/* A TCP connection to 127.0.0.1:port, or -1. */
static int connect_local(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Issue 28, item 8: slow and idle clients, more of them than the endpoint
 * keeps, never blind monitoring. Each of 80 connections holds half a
 * request (one byte, or "GET /met" with no end), and one more sends a byte
 * between scrapes as a trickler would; every scrape is still answered
 * whole. The old server, one connection at a time with 5 s per read, made
 * the first scrape wait 80 x 5 s: curl's 20 s bound tells the two apart.
 */
Test(live, slow_clients_never_blind_the_endpoint, .timeout = 120)
{
	if (access("/usr/bin/curl", X_OK) != 0)
		cr_skip_test("curl is not installed (make deps installs it)");
	char *dir = live_dir();
	int port = free_port();
	struct h_cmd ep;
	h_cmd_init(&ep, H_PLAIN);
	h_envf(&ep, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_args(&ep, synclat_bin(), "metrics", "--listen", h_fmt("127.0.0.1:%d", port), NULL);
	pid_t epid = h_spawn(&ep);
	int trickler = -1;
	for (double end = h_now() + 20; trickler < 0 && h_now() < end; usleep(20000))
		trickler = connect_local(port);
	cr_assert_geq(trickler, 0, "the endpoint never listened");
	enum { IDLE = 80 };
	int idle[IDLE];
	for (int i = 0; i < IDLE; i++) {
		idle[i] = connect_local(port);
		cr_assert_geq(idle[i], 0, "connection %d refused", i);
		if (i % 2)
			cr_assert_eq(send(idle[i], "GET /met", 8, MSG_NOSIGNAL), 8);
		else
			cr_assert_eq(send(idle[i], "G", 1, MSG_NOSIGNAL), 1);
	}
	int answered = 0;
	for (int k = 0; k < 3; k++) {
		(void)!send(trickler, "G", 1, MSG_NOSIGNAL);
		struct h_result r = h_sh(h_fmt("curl -s -o /dev/null -w '%%{http_code}' --max-time 20 "
					       "http://127.0.0.1:%d/metrics", port), 30);
		cr_expect(h_has(r.out, "200"), "scrape %d with %d slow clients: '%s' %s", k, IDLE + 1, r.out, r.err);
		answered += h_has(r.out, "200");
	}
	kill(epid, SIGTERM);
	struct h_result er = h_reap(&ep, epid, 20, false, 0);
	for (int i = 0; i < IDLE; i++)
		close(idle[i]);
	close(trickler);
	cr_expect_eq(er.code, 0, "synclat metrics --listen: exit %d\n%s", er.code, er.err);
	cr_expect_eq(answered, 3);
}

/*
 * Issue 29, point 4: a service with a /tmp of its own (systemd's
 * PrivateTmp; here unshare -m with a directory bound over /tmp) publishes
 * its live counters where no reader outside looked. `syncshim status PID`
 * finds it through /proc/PID/maps and reads its counters through
 * /proc/PID/root; `synclat top` and `synclat metrics` find it the same way,
 * with no --dir.
 */
Test(live, status_finds_a_process_in_another_mount_namespace, .timeout = 90)
{
	if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0)
		cr_skip_test("needs root and unshare for a mount namespace of its own");
	char *priv = h_path("privtmp");
	cr_assert_eq(mkdir(priv, 0777), 0);
	cr_assert_eq(chmod(priv, 01777), 0);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, "unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
	       h_fmt("mount --bind '%s' /tmp && exec env -u SYNCSHIM_LIVE_DIR -u XDG_RUNTIME_DIR LD_PRELOAD=%s%s%s "
		     "SYNCSHIM_POLICY=defer '%s' -f /tmp/d.dat -n 1000000 -p 500 -S /tmp/stop -T 30000",
		     priv, h_ctx.prefix, h_ctx.prefix[0] ? ":" : "", h_shim_lib(), h_prog("fl_loop")),
	       NULL);
	pid_t pid = h_spawn(&c);
	char *data = h_fmt("%s/d.dat", priv);
	for (double end = h_now() + 20; h_now() < end && h_size(data) <= 0; usleep(20000))
		;
	bool writing = h_size(data) > 0;
	struct h_result st = { 0 }, top = { 0 }, met = { 0 };
	const char *counters = h_fmt("counters /proc/%d/root/tmp/syncshim-0/%d.live", (int)pid, (int)pid);
	/* The counters publish a rule's matched files before the file's own
	 * entry (the next publication): poll until all three readers have
	 * what they are asked for, or the time is up. */
	for (double end = h_now() + 30; writing && h_now() < end; usleep(100000)) {
		st = h_sh(h_fmt("env -u SYNCSHIM_LIVE_DIR %s%s '%s/syncshim' status %d", h_ctx.prefix[0] ? "LD_PRELOAD=" : "",
				h_ctx.prefix, h_ctx.build, (int)pid), 20);
		if (!(h_has(st.out, counters) && h_has(st.out, "default (defer): ") && h_has(st.out, " matched; at risk")))
			continue;
		top = h_sh(h_fmt("env -u SYNCSHIM_LIVE_DIR %s%s '%s/synclat' top --json", h_ctx.prefix[0] ? "LD_PRELOAD=" : "",
				 h_ctx.prefix, h_ctx.build), 20);
		met = h_sh(h_fmt("env -u SYNCSHIM_LIVE_DIR %s%s '%s/synclat' metrics --per-file", h_ctx.prefix[0] ? "LD_PRELOAD=" : "",
				 h_ctx.prefix, h_ctx.build), 20);
		if (h_has(top.out, h_fmt("{\"pid\": %d,", (int)pid)) && h_has(met.out, "/tmp/d.dat"))
			break;
	}
	h_write_file(h_fmt("%s/stop", priv), "");
	struct h_result r = h_reap(&c, pid, 30, false, 0);
	if (h_has(r.err, "Operation not permitted") || h_has(r.err, "unshare failed"))
		cr_skip_test("no mount namespaces here: %s", r.err);
	cr_assert(writing, "the process never wrote:\n%s", r.err);
	cr_expect_eq(st.code, 0, "syncshim status %d: exit %d\n%s%s", (int)pid, st.code, st.out, st.err);
	cr_expect(h_has(st.out, h_fmt("%d ", (int)pid)) && h_has(st.out, ": under syncshim"), "%s", st.out);
	cr_expect(h_has(st.out, counters) && h_has(st.out, "default policy defer"), "%s", st.out);
	cr_expect(h_has(st.out, "default (defer): ") && h_has(st.out, " matched; at risk"), "%s", st.out);
	cr_expect(h_has(top.out, h_fmt("{\"pid\": %d,", (int)pid)), "synclat top did not find it:\n%s%s", top.out, top.err);
	cr_expect(h_has(met.out, h_fmt("%d", (int)pid)) && h_has(met.out, "/tmp/d.dat"),
		  "synclat metrics did not find it:\n%s%s", met.out, met.err);
	/* a process not under the shim: said so, exit 1 */
	struct h_result none = h_sh(h_fmt("'%s/syncshim' status %d", h_ctx.build, (int)getpid()), 20);
	cr_expect_eq(none.code, 1, "%s", none.out);
	cr_expect(h_has(none.out, "not under syncshim"), "%s", none.out);
}
