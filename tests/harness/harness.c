/*
 * harness.c - running programs under the shim for the system suites
 * (tests/system/, and any suite that includes harness.h): compiled once,
 * linked into each suite that includes harness.h (see the Makefile);
 * harness.h declares it.
 *
 * A test gets a fresh temp directory (h_dir) from the suite's init, builds
 * commands with an explicit environment (nothing of the caller's
 * LD_PRELOAD or SYNCSHIM_* leaks in), runs them with fork+execve and a
 * timeout, and checks the effect independently of the shim's own
 * counters:
 *   - the recording layer (tests/lib/reclayer.so) preloaded BENEATH the
 *     shim logs every call the shim really makes (h_log_load, h_count);
 *   - strace -f -c counts the system calls (h_strace_count).
 *
 * Binaries are found through $SYNCSHIM_BUILD (default "build"); when the
 * shim is built with ASan, $SYNCSHIM_PRELOAD_PREFIX (libasan) goes first
 * in LD_PRELOAD whenever the shim is loaded.
 */
#include "harness.h"
#include "progs/progs.h"

/* Defined once here, declared in harness.h. */
#define H_FN

/* The whole file under one guard, kept from when it was a header: work
 * written against the header that appends a helper at its end still
 * merges. (Drop once no branch written against the header is left.) */
#ifndef SYNCSHIM_TEST_HARNESS_C
#define SYNCSHIM_TEST_HARNESS_C


struct h_ctx h_ctx;

/* The harness never frees its small strings and logs (each test is a
 * short-lived process): in the ASan build, keep LeakSanitizer quiet about
 * the test binary itself. The programs under test get
 * ASAN_OPTIONS=detect_leaks=0 from h_cmd_init. */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void);
__attribute__((used, visibility("default"))) const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}


/* ---- small utilities ---------------------------------------------------- */

H_FN char *h_strdup(const char *s)
{
	char *d = strdup(s);
	cr_assert_not_null(d);
	return d;
}

H_FN char *h_fmt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	cr_assert(r >= 0);
	return s;
}

/* A path in the test's directory. */
H_FN char *h_path(const char *name)
{
	return h_fmt("%s/%s", h_ctx.dir, name);
}

H_FN char *h_prog(const char *name)
{
	return h_fmt("%s/tests/progs/%s", h_ctx.build, name);
}

/* $SYNCSHIM_LIB (the sanitizer builds' shim) or the build's. */
H_FN char *h_shim_lib(void)
{
	const char *lib = getenv("SYNCSHIM_LIB");
	return lib && *lib ? h_strdup(lib) : h_fmt("%s/libsyncshim.so", h_ctx.build);
}

H_FN char *h_rec_lib(void)
{
	return h_fmt("%s/tests/lib/reclayer.so", h_ctx.build);
}

H_FN char *h_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return h_strdup("");
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	cr_assert_not_null(buf);
	size_t k;
	while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (cap - n - 1 == 0) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

H_FN void h_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot create %s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

H_FN unsigned long long h_ino(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "stat %s: %s", path, strerror(errno));
	return (unsigned long long)st.st_ino;
}

H_FN long long h_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Number of '\n'-terminated lines (plus a final unterminated one). */
H_FN int h_nlines(const char *s)
{
	int n = 0;
	for (const char *p = s; *p; p++)
		if (*p == '\n' || !p[1])
			n++;
	return n;
}

H_FN bool h_has(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

/* The value after "key" on the first line of text that contains key
 * ("key=123 ..." -> 123), or def. */
H_FN long long h_num_after(const char *text, const char *key, long long def)
{
	const char *p = strstr(text, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : def;
}

/* The 16-byte record pattern of examples/ and tests/progs (pattern(),
 * tests/progs/progs.h) throughout, expect_size bytes of it; read a block
 * at a time, as the stress test's files are big. */
H_FN bool h_check_pattern(const char *path, long long expect_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[1 << 15], want[1 << 15];
	long long o = 0;
	ssize_t n;
	bool ok = true;
	while (ok && (n = read(fd, buf, sizeof(buf))) > 0) {
		pattern(want, (size_t)n, (unsigned long long)o);
		ok = memcmp(buf, want, (size_t)n) == 0;
		o += n;
	}
	close(fd);
	return ok && o == expect_size;
}

/* ---- setup / teardown --------------------------------------------------- */

H_FN int h_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

H_FN void h_setup(void)
{
	const char *b = getenv("SYNCSHIM_BUILD");
	if (!b || !*b)
		b = "build";
	cr_assert_not_null(realpath(b, h_ctx.build), "build directory %s: %s (run `make test`)", b,
			   strerror(errno));
	const char *pre = getenv("SYNCSHIM_PRELOAD_PREFIX");
	snprintf(h_ctx.prefix, sizeof(h_ctx.prefix), "%s", pre ? pre : "");
	const char *asan = getenv("SYNCSHIM_ASAN");
	h_ctx.asan = asan && strcmp(asan, "1") == 0;
	snprintf(h_ctx.dir, sizeof(h_ctx.dir), "/tmp/syncshim-test.XXXXXX");
	cr_assert_not_null(mkdtemp(h_ctx.dir), "mkdtemp: %s", strerror(errno));
	h_ctx.seq = 0;
	char *need[] = { h_shim_lib(), h_rec_lib(), h_fmt("%s/syncshim", h_ctx.build) };
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		cr_assert_eq(access(need[i], R_OK), 0, "%s missing: run `make test` (or make all and the test targets)",
			     need[i]);
}

H_FN void h_teardown(void)
{
	const char *keep = getenv("SYNCSHIM_TEST_KEEP");
	if (h_ctx.dir[0] && !(keep && *keep == '1'))
		nftw(h_ctx.dir, h_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- commands ----------------------------------------------------------- */

H_FN void h_env(struct h_cmd *c, const char *kv)
{
	cr_assert_lt(c->envc, H_MAX_ENV - 1);
	const char *eq = strchr(kv, '=');
	cr_assert_not_null(eq);
	size_t klen = (size_t)(eq - kv) + 1;
	for (int i = 0; i < c->envc; i++)
		if (strncmp(c->env[i], kv, klen) == 0) {
			c->env[i] = h_strdup(kv);
			return;
		}
	c->env[c->envc++] = h_strdup(kv);
	c->env[c->envc] = NULL;
}

/* h_env/h_arg with a printf format (h_fmt checks it). */

H_FN void h_arg(struct h_cmd *c, const char *a)
{
	cr_assert_lt(c->argc, H_MAX_ARGS - 1);
	c->argv[c->argc++] = h_strdup(a);
	c->argv[c->argc] = NULL;
}

/* NULL-terminated list of arguments. */
H_FN void h_args(struct h_cmd *c, ...)
{
	va_list ap;
	va_start(ap, c);
	const char *a;
	while ((a = va_arg(ap, const char *)))
		h_arg(c, a);
	va_end(ap);
}

/* A command with a clean environment and the given layers preloaded. The
 * shim's policy then comes from h_env(c, "SYNCSHIM_POLICY=...") etc. */
H_FN void h_cmd_init(struct h_cmd *c, unsigned layers)
{
	memset(c, 0, sizeof(*c));
	c->id = ++h_ctx.seq;
	c->layers = layers;
	c->timeout_s = H_DEFAULT_TIMEOUT_S;
	const char *path = getenv("PATH");
	h_envf(c, "PATH=%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	const char *home = getenv("HOME");
	h_envf(c, "HOME=%s", home && *home ? home : "/tmp");
	h_env(c, "LC_ALL=C");
	if (h_ctx.prefix[0] || h_ctx.asan) {
		const char *ao = getenv("ASAN_OPTIONS");
		h_envf(c, "ASAN_OPTIONS=%s", ao && *ao ? ao : "detect_leaks=0");
		const char *to = getenv("TSAN_OPTIONS");
		if (to && *to)
			h_envf(c, "TSAN_OPTIONS=%s", to);
		const char *lib = getenv("SYNCSHIM_LIB"); /* syncshim run picks the same shim */
		if (lib && *lib)
			h_envf(c, "SYNCSHIM_LIB=%s", lib);
		const char *uo = getenv("UBSAN_OPTIONS");
		if (uo && *uo)
			h_envf(c, "UBSAN_OPTIONS=%s", uo);
	}
	size_t n = 0;
	c->preload[0] = '\0';
	if ((layers & (H_SHIM | H_SANRT)) && h_ctx.prefix[0])
		n += (size_t)snprintf(c->preload + n, sizeof(c->preload) - n, "%s", h_ctx.prefix);
	if (layers & H_SHIM)
		n += (size_t)snprintf(c->preload + n, sizeof(c->preload) - n, "%s%s", n ? ":" : "", h_shim_lib());
	if (layers & H_REC) {
		n += (size_t)snprintf(c->preload + n, sizeof(c->preload) - n, "%s%s", n ? ":" : "", h_rec_lib());
		snprintf(c->reclog, sizeof(c->reclog), "%s/rec.%d.log", h_ctx.dir, c->id);
		h_envf(c, "RECLAYER_LOG=%s", c->reclog);
	}
	snprintf(c->out_path, sizeof(c->out_path), "%s/out.%d.txt", h_ctx.dir, c->id);
	snprintf(c->err_path, sizeof(c->err_path), "%s/err.%d.txt", h_ctx.dir, c->id);
}

/* Shorthand: layers plus a default policy ("" or NULL for none). */
H_FN void h_cmd_policy(struct h_cmd *c, unsigned layers, const char *policy)
{
	h_cmd_init(c, layers);
	if (policy && *policy)
		h_envf(c, "SYNCSHIM_POLICY=%s", policy);
}

/* A command under POLICY with no config file: the defaults and the
 * policy alone, whatever SYNCSHIM_CONFIG the suite itself runs with. */
H_FN void h_cmd_policy_only(struct h_cmd *c, unsigned layers, const char *policy)
{
	h_cmd_policy(c, layers, policy);
	h_env(c, "SYNCSHIM_CONFIG=");
}

/* A command with layers and the config file ini (NULL: none), nothing else. */
H_FN void h_cmd_ini(struct h_cmd *c, unsigned layers, const char *ini)
{
	h_cmd_init(c, layers);
	h_envf(c, "SYNCSHIM_CONFIG=%s", ini ? ini : "");
}

/* The file NAME in the test's directory, holding TEXT: its path. */
H_FN char *h_ini(const char *name, const char *text)
{
	char *path = h_path(name);
	h_write_file(path, text);
	return path;
}

/* Run the command under strace -f -c counting set (NULL: H_STRACE_SET). */
H_FN void h_strace(struct h_cmd *c, const char *set)
{
	snprintf(c->strace_out, sizeof(c->strace_out), "%s/strace.%d.txt", h_ctx.dir, c->id);
	snprintf(c->strace_set, sizeof(c->strace_set), "%s", set ? set : H_STRACE_SET);
}

H_FN double h_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for pid with a deadline; true if it ended (status in *st). */
/* A run that hung: every thread's stack of each process in its group
 * (at most four), into the test's directory and the test's log, so a hang
 * seen once in CI says where it was. gdb is bounded; no gdb, no stacks. */
H_FN void h_dump_stacks(pid_t group, int id)
{
	char *out = h_path(h_fmt("hang.%d.stacks", id));
	int r = system(h_fmt("for p in $(pgrep -g %d | head -4); do echo \"== pid $p: $(tr '\\0' ' ' </proc/$p/cmdline)\"; "
			     "timeout -s KILL 30 gdb -p $p -batch -nx -ex 'set pagination off' "
			     "-ex 'thread apply all bt 30' 2>&1 | grep -E '^(Thread|#)'; done >%s 2>&1",
			     (int)group, out));
	(void)r; /* whatever it got is what there is */
	char *text = h_read_file(out);
	cr_log_error("run #%d hung; its stacks (%s):\n%s", id, out, text);
	free(text);
}

/* gcc 12's sanitizer runtimes take no allocator lock around fork: a
 * child forked while another thread is inside malloc inherits that lock
 * held, and its first allocation (a thread's start in the runtime:
 * pthread_getattr_np's calloc; the shim's or the app's) waits forever.
 * Seen in make asan: every thread of the child in SizeClassAllocator64::
 * GetFromAllocator. A test that forks from a threaded host cannot run
 * there; the plain build runs it. */
H_FN void h_skip_forks_from_threads_under_a_sanitizer(void)
{
	if (h_ctx.asan)
		cr_skip_test("a sanitizer's allocator is not fork-safe in threaded hosts (gcc 12)");
}

H_FN bool h_wait(pid_t pid, int timeout_s, int *st)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		int r;
		do
			r = poll(&p, 1, timeout_s * 1000);
		while (r < 0 && errno == EINTR);
		close(pfd);
		if (r == 0)
			return false;
	}
	while (waitpid(pid, st, 0) < 0)
		if (errno != EINTR)
			return false;
	return true;
}

/* In the child of h_run or h_spawn: its own process group, stdin from
 * /dev/null, output to c's files, no other descriptor, the test's
 * directory, then argv with env (exactly: nothing of ours leaks in). */
__attribute__((noreturn, unused)) static void h_exec_child(const struct h_cmd *c, char **argv, char **env)
{
	setpgid(0, 0);
	int in = open("/dev/null", O_RDONLY);
	int out = open(c->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = open(c->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || err < 0 || chdir(h_ctx.dir) < 0)
		_exit(126);
	dup2(in, 0);
	dup2(out, 1);
	dup2(err, 2);
	syscall(SYS_close_range, 3, ~0u, 0);
	execvpe(argv[0], argv, env);
	dprintf(2, "harness: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

H_FN struct h_result h_run(struct h_cmd *c)
{
	cr_assert_gt(c->argc, 0);
	char *argv[H_MAX_ARGS + 16];
	int n = 0;
	char *env[H_MAX_ENV + 2];
	int envc = 0;
	for (int i = 0; i < c->envc; i++)
		env[envc++] = c->env[i];
	if (c->strace_out[0]) {
		argv[n++] = "strace";
		argv[n++] = "-f";
		argv[n++] = "-c";
		argv[n++] = "-o";
		argv[n++] = c->strace_out;
		argv[n++] = "-e";
		argv[n++] = h_fmt("trace=%s", c->strace_set);
		if (c->preload[0]) { /* the tracee's LD_PRELOAD only, not strace's */
			argv[n++] = "-E";
			argv[n++] = h_fmt("LD_PRELOAD=%s", c->preload);
		}
		argv[n++] = "--";
	} else if (c->preload[0]) {
		env[envc++] = h_fmt("LD_PRELOAD=%s", c->preload);
	}
	env[envc] = NULL;
	for (int i = 0; i < c->argc; i++)
		argv[n++] = c->argv[i];
	argv[n] = NULL;

	char cmdline[2048] = "";
	for (int i = 0; i < n && strlen(cmdline) < sizeof(cmdline) - 256; i++) {
		strcat(cmdline, argv[i]);
		strcat(cmdline, " ");
	}
	fflush(NULL);
	double t0 = h_now();
	pid_t pid = fork();
	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0)
		h_exec_child(c, argv, env);
	struct h_result r = { .code = -1 };
	int st = 0;
	if (!h_wait(pid, c->timeout_s, &st)) {
		/* The leader is not reaped yet, so its group id is still ours. */
		r.timed_out = true;
		h_dump_stacks(pid, c->id);
		kill(-pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	r.secs = h_now() - t0;
	if (WIFEXITED(st))
		r.code = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		r.sig = WTERMSIG(st);
	r.out = h_read_file(c->out_path);
	r.err = h_read_file(c->err_path);
	cr_log_info("run #%d (%.2fs, exit %d%s): %s", c->id, r.secs, r.code, r.timed_out ? ", TIMED OUT" : "",
		    cmdline);
	return r;
}


/* ---- the recording layer's log ------------------------------------------ */



H_FN void h_need_postgres(void)
{
	if (h_ctx.asan)
		cr_skip_test("under a sanitizer PostgreSQL's initdb and server take longer than the test's bound; "
			     "the plain build runs it");
	if (access("/usr/lib/postgresql/15/bin/postgres", X_OK) != 0)
		cr_skip_test("PostgreSQL 15 is not installed (make bench-deps installs it)");
	cr_assert_eq(chmod(h_ctx.dir, 0755), 0); /* the server may run as postgres, in here */
}

/* `sh -c SCRIPT`, no library preloaded, with the clean environment and in
 * the test's directory, as h_run runs anything; killed after timeout_s. */
H_FN struct h_result h_sh(const char *script, int timeout_s)
{
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	c.timeout_s = timeout_s;
	h_args(&c, "/bin/sh", "-c", script, NULL);
	return h_run(&c);
}

/* ---- running a program in the background -------------------------------------- */

/* Start c like h_run does (own process group, clean environment, output
 * to files, in the test's directory) but return at once. */
H_FN pid_t h_spawn(struct h_cmd *c)
{
	char *env[H_MAX_ENV + 2];
	int envc = 0;
	for (int i = 0; i < c->envc; i++)
		env[envc++] = c->env[i];
	if (c->preload[0])
		env[envc++] = h_fmt("LD_PRELOAD=%s", c->preload);
	env[envc] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0)
		h_exec_child(c, c->argv, env);
	setpgid(pid, pid);
	return pid;
}

/* Has it ended? (status in *st) */
H_FN bool h_done(pid_t pid, int *st)
{
	return waitpid(pid, st, WNOHANG) == pid;
}

/* Wait for a spawned program (status already taken if have_st), kill its
 * group after timeout_s, collect its output. */
H_FN struct h_result h_reap(struct h_cmd *c, pid_t pid, int timeout_s, bool have_st, int st)
{
	struct h_result r = { .code = -1 };
	if (!have_st && !h_wait(pid, timeout_s, &st)) {
		r.timed_out = true;
		h_dump_stacks(pid, c->id);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	kill(-pid, SIGKILL); /* leftovers of the process group */
	if (WIFEXITED(st))
		r.code = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		r.sig = WTERMSIG(st);
	r.out = h_read_file(c->out_path);
	r.err = h_read_file(c->err_path);
	cr_log_info("background run #%d (exit %d%s): %s", c->id, r.code, r.timed_out ? ", TIMED OUT" : "",
		    c->argv[0]);
	return r;
}

H_FN void h_parse_line(char *line, struct h_rec *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	char *p2 = strstr(line, " path2=");
	if (p2) {
		r->path2 = h_strdup(p2 + 7);
		*p2 = '\0';
	}
	char *p = strstr(line, " path=");
	if (p) {
		r->path = h_strdup(p + 6);
		*p = '\0';
	}
	char *save = NULL;
	for (char *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = tok, *v = eq + 1;
		if (!strcmp(k, "op"))
			snprintf(r->op, sizeof(r->op), "%s", v);
		else if (!strcmp(k, "fn"))
			snprintf(r->fn, sizeof(r->fn), "%s", v);
		else if (!strcmp(k, "pid"))
			r->pid = strtol(v, NULL, 10);
		else if (!strcmp(k, "tid"))
			r->tid = strtol(v, NULL, 10);
		else if (!strcmp(k, "fd"))
			r->fd = strtol(v, NULL, 10);
		else if (!strcmp(k, "ino"))
			r->ino = strtoull(v, NULL, 10);
		else if (!strcmp(k, "t0"))
			r->t0 = strtoull(v, NULL, 10);
		else if (!strcmp(k, "t1"))
			r->t1 = strtoull(v, NULL, 10);
		else if (!strcmp(k, "ret"))
			r->ret = strtoll(v, NULL, 10);
		else if (!strcmp(k, "errno"))
			r->err = (int)strtol(v, NULL, 10);
		else if (!strcmp(k, "flags")) {
			r->flags = strtoull(v, NULL, 16);
			r->has_flags = true;
		} else if (!strcmp(k, "addr"))
			r->addr = strtoull(v, NULL, 16);
		else if (!strcmp(k, "len"))
			r->len = strtoull(v, NULL, 10);
		else if (!strcmp(k, "off"))
			r->off = strtoll(v, NULL, 10);
		else if (!strcmp(k, "n"))
			r->n = strtoll(v, NULL, 10);
		else if (!strcmp(k, "injected"))
			r->injected = true;
	}
}

H_FN struct h_log h_log_load(const struct h_cmd *c)
{
	cr_assert(c->reclog[0], "command #%d ran without the recording layer", c->id);
	struct h_log log = { 0 };
	char *text = h_read_file(c->reclog);
	size_t cap = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (log.n == cap) {
			cap = cap ? cap * 2 : 256;
			log.r = realloc(log.r, cap * sizeof(*log.r));
			cr_assert_not_null(log.r);
		}
		h_parse_line(line, &log.r[log.n++]);
	}
	free(text);
	return log;
}

/* Records of op (NULL: any) on inode ino (0: any). */
H_FN int h_count(const struct h_log *log, const char *op, unsigned long long ino)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++)
		if ((!op || !strcmp(log->r[i].op, op)) && (!ino || log->r[i].ino == ino))
			n++;
	return n;
}

/* Real fsync and fdatasync calls on ino, per the recording layer. */
H_FN int h_real_syncs(const struct h_log *log, unsigned long long ino)
{
	return h_count(log, "fsync", ino) + h_count(log, "fdatasync", ino);
}

/* Records for which pred(rec, arg) holds. */
H_FN int h_count_if(const struct h_log *log, bool (*pred)(const struct h_rec *, const void *),
		      const void *arg)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++)
		if (pred(&log->r[i], arg))
			n++;
	return n;
}

/* The first record of op on ino, or NULL. */
H_FN const struct h_rec *h_find(const struct h_log *log, const char *op, unsigned long long ino)
{
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->r[i].op, op) && (!ino || log->r[i].ino == ino))
			return &log->r[i];
	return NULL;
}

/* ---- strace -c ---------------------------------------------------------- */

/* Calls of syscall name in the command's strace -c summary (0 if absent). */
H_FN long h_strace_count(const struct h_cmd *c, const char *name)
{
	cr_assert(c->strace_out[0], "command #%d ran without strace", c->id);
	char *text = h_read_file(c->strace_out);
	cr_assert(h_has(text, "syscall"), "no strace summary in %s:\n%s", c->strace_out, text);
	long calls = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tok[8];
		int nt = 0;
		char *s2 = NULL;
		for (char *t = strtok_r(line, " \t", &s2); t && nt < 8; t = strtok_r(NULL, " \t", &s2))
			tok[nt++] = t;
		/* % time, seconds, usecs/call, calls, [errors], syscall */
		if ((nt == 5 || nt == 6) && strcmp(tok[nt - 1], name) == 0 && strchr(tok[0], '.')) {
			calls = strtol(tok[3], NULL, 10);
			break;
		}
	}
	free(text);
	return calls;
}

/* ---- failfs: a real file system that fails on demand -------------------- */
/*
 * tests/lib/failfs (a FUSE file system) mirrors a backing directory and
 * makes fsync/fdatasync/msync, write, flush (close) or fsyncdir fail with
 * a chosen errno when the test says so; the command syntax is at the top
 * of tests/lib/failfs.c.
 *
 *   char *mnt = h_path("mnt");
 *   h_failfs_mount(h_path("back"), mnt);
 *   h_failfs_ctl(mnt, "fsync EIO once");
 *   ... programs work on files under mnt ...
 *   cr_assert_eq(h_failfs_stat(mnt, "fsync"), 3);
 *   cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "injected"), 1);
 *
 * A suite that mounts must unmount before h_teardown deletes the test
 * directory (nftw would walk into the mount): use .fini = h_failfs_fini.
 * No mount outlives a test, however it ends:
 *   - fini unmounts lazily when a failed assertion left a descriptor open,
 *     then stops failfs (SIGTERM, SIGKILL after a deadline);
 *   - failfs gets SIGTERM when the test process dies (PR_SET_PDEATHSIG),
 *     as when criterion kills a test that crashed or timed out;
 *   - failfs mounts with auto_unmount: its fusermount3 watcher unmounts
 *     as soon as failfs dies, even by SIGKILL.
 */
#include <sys/mount.h>
#include <sys/prctl.h>


static struct h_failfs h_failfs_tab[H_FAILFS_MAX];

H_FN char *h_failfs_bin(void)
{
	return h_fmt("%s/tests/lib/failfs", h_ctx.build);
}

/* Whether a failfs is mounted on mnt (absolute, no escapes: the test
 * directories have no spaces), by /proc/self/mountinfo: fields 5 (the
 * mount point) and the first after " - " (the type). */
H_FN bool h_failfs_mounted(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	cr_assert_not_null(f, "/proc/self/mountinfo: %s", strerror(errno));
	char line[4 * PATH_MAX], point[PATH_MAX], type[64];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");
		found = sep && sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
			sscanf(sep + 3, "%63s", type) == 1 && !strcmp(point, mnt) &&
			!strcmp(type, "fuse.failfs");
	}
	fclose(f);
	return found;
}

H_FN struct h_failfs *h_failfs_find(const char *mnt)
{
	for (int i = 0; i < H_FAILFS_MAX; i++)
		if (h_failfs_tab[i].pid && !strcmp(h_failfs_tab[i].mnt, mnt))
			return &h_failfs_tab[i];
	return NULL;
}

/* The child: failfs in the foreground, its output in the test directory.
 * It must not hold criterion's descriptors, and must die with the test. */
H_FN void h_failfs_exec(char *const argv[], const char *log, pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
		_exit(125);
	int in = open("/dev/null", O_RDONLY);
	int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0)
		_exit(126);
	dup2(in, 0);
	dup2(out, 1);
	dup2(out, 2);
	syscall(SYS_close_range, 3, ~0u, 0);
	execv(argv[0], argv);
	dprintf(2, "harness: exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Polls until failfs is mounted on mnt; fails the test, with failfs's
 * output, if it exits or the deadline passes first. */
H_FN void h_failfs_wait_mounted(pid_t pid, const char *mnt, const char *log)
{
	double deadline = h_now() + H_FAILFS_DEADLINE_S;
	while (!h_failfs_mounted(mnt)) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			cr_assert_fail("failfs on %s exited (status 0x%x) before mounting:\n%s", mnt, st,
				       h_read_file(log));
		if (h_now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			cr_assert_fail("failfs on %s: not mounted after %d s:\n%s", mnt, H_FAILFS_DEADLINE_S,
				       h_read_file(log));
		}
		struct timespec tick = { 0, 2 * 1000 * 1000 }; /* poll interval, not a synchronisation */
		nanosleep(&tick, NULL);
	}
}

/* Mounts failfs on mnt mirroring backing (both created if missing), with
 * extra -o options (NULL or "" for none; e.g. "writeback_cache"), and
 * returns once the mount is up. */
H_FN void h_failfs_mount_opts(const char *backing, const char *mnt, const char *opts)
{
	cr_assert(mkdir(backing, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", backing, strerror(errno));
	cr_assert(mkdir(mnt, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", mnt, strerror(errno));
	struct h_failfs *slot = NULL;
	for (int i = 0; !slot && i < H_FAILFS_MAX; i++)
		if (!h_failfs_tab[i].pid)
			slot = &h_failfs_tab[i];
	cr_assert_not_null(slot, "more than %d failfs mounts in one test", H_FAILFS_MAX);
	cr_assert_not_null(realpath(mnt, slot->mnt), "%s: %s", mnt, strerror(errno));
	cr_assert(!h_failfs_mounted(slot->mnt), "failfs already mounted on %s", slot->mnt);
	char *argv[8];
	int n = 0;
	argv[n++] = h_failfs_bin();
	argv[n++] = "-f";
	if (opts && *opts) {
		argv[n++] = "-o";
		argv[n++] = (char *)opts;
	}
	argv[n++] = (char *)backing;
	argv[n++] = slot->mnt;
	argv[n] = NULL;
	char *log = h_fmt("%s/failfs.%d.log", h_ctx.dir, ++h_ctx.seq);
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0)
		h_failfs_exec(argv, log, parent);
	h_failfs_wait_mounted(pid, slot->mnt, log);
	slot->pid = pid;
	cr_log_info("failfs pid %d mounted on %s (log %s)", (int)pid, slot->mnt, log);
}

H_FN void h_failfs_mount(const char *backing, const char *mnt)
{
	h_failfs_mount_opts(backing, mnt, NULL);
}

/* failfs over a new backing directory, both in the test's directory: the
 * mount point. */
H_FN char *h_failfs_new(void)
{
	char *back = h_path("back"), *mnt = h_path("mnt");
	cr_assert_eq(mkdir(back, 0755), 0);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	h_failfs_mount(back, mnt);
	return mnt;
}

/* failfs's pid on mnt, e.g. to kill it. */
H_FN pid_t h_failfs_pid(const char *mnt)
{
	char abs[PATH_MAX];
	struct h_failfs *f = h_failfs_find(realpath(mnt, abs) ? abs : mnt);
	cr_assert_not_null(f, "no failfs of this test on %s", mnt);
	return f->pid;
}

/* Unmounts and stops one failfs; true if that went cleanly (the mount
 * was not busy and failfs exited on its own terms). Never asserts: it
 * runs in fini after a failed test too. */
H_FN bool h_failfs_stop(struct h_failfs *f)
{
	bool clean = true;
	if (umount2(f->mnt, 0) != 0 && errno != EINVAL) {
		/* Busy: a descriptor is still open (a failed assertion skipped
		 * its close). Detach the mount now; it goes when they close. */
		clean = false;
		umount2(f->mnt, MNT_DETACH);
	}
	/* Unmounted, failfs sees its device closed and exits; SIGTERM makes
	 * it exit in the lazy case too. */
	kill(f->pid, SIGTERM);
	int st = 0;
	if (!h_wait(f->pid, H_FAILFS_DEADLINE_S, &st)) {
		clean = false;
		kill(f->pid, SIGKILL); /* aborts the connection: nothing can hang on it */
		waitpid(f->pid, &st, 0);
	}
	if (h_failfs_mounted(f->mnt)) { /* should not happen: auto_unmount */
		clean = false;
		umount2(f->mnt, MNT_DETACH);
	}
	f->pid = 0;
	return clean;
}

/* Unmounts the failfs on mnt; the test fails if the mount was busy. */
H_FN void h_failfs_umount(const char *mnt)
{
	char abs[PATH_MAX];
	struct h_failfs *f = h_failfs_find(realpath(mnt, abs) ? abs : mnt);
	cr_assert_not_null(f, "no failfs of this test on %s", mnt);
	char *what = h_strdup(f->mnt);
	cr_assert(h_failfs_stop(f), "failfs on %s: busy at unmount (a descriptor left open?) or hung", what);
	cr_assert(!h_failfs_mounted(what), "failfs still mounted on %s", what);
}

/* Every failfs this test mounted; for fini. */
H_FN void h_failfs_umount_all(void)
{
	for (int i = 0; i < H_FAILFS_MAX; i++)
		if (h_failfs_tab[i].pid)
			h_failfs_stop(&h_failfs_tab[i]);
}

/* The .fini of a suite that mounts failfs. */
H_FN void h_failfs_fini(void)
{
	h_failfs_umount_all();
	h_teardown();
}

/* Sends one command (a line of failfs.c's control syntax); the test fails
 * if failfs refuses it. */
H_FN void h_failfs_ctl(const char *mnt, const char *cmd)
{
	char *ctl = h_fmt("%s/.failfs", mnt);
	char *line = h_fmt("%s\n", cmd);
	int fd = open(ctl, O_WRONLY);
	cr_assert(fd >= 0, "open %s: %s", ctl, strerror(errno));
	ssize_t n = write(fd, line, strlen(line));
	int err = errno;
	close(fd);
	cr_assert_eq(n, (ssize_t)strlen(line), "failfs command '%s': %s", cmd, n < 0 ? strerror(err) : "short write");
}

/* The counters as text (see failfs.c), for messages. */
H_FN char *h_failfs_stats(const char *mnt)
{
	return h_read_file(h_fmt("%s/.failfs-stats", mnt));
}

/* The value of " key=" in line (up to end). */
H_FN long long h_failfs_field(const char *line, const char *end, const char *key)
{
	char *pat = h_fmt(" %s=", key);
	const char *p = strstr(line, pat);
	cr_assert(p && p < end, "failfs stats: no %s in: %.*s", key, (int)(end - line), line);
	return strtoll(p + strlen(pat), NULL, 10);
}

/* A total counter: fsync, fdatasync, write, bytes, flush, fsyncdir or
 * injected (requests that reached failfs, failed ones included). */
H_FN long long h_failfs_stat(const char *mnt, const char *key)
{
	char *text = h_failfs_stats(mnt);
	cr_assert(!strncmp(text, "total ", 6), "failfs stats of %s: %s", mnt, text);
	char *nl = strchr(text, '\n');
	return h_failfs_field(text, nl ? nl : text + strlen(text), key);
}

/* A counter of one file, by its path from the mount root ("/a.log");
 * 0 if no request for that path reached failfs. */
H_FN long long h_failfs_file_stat(const char *mnt, const char *path, const char *key)
{
	char *text = h_failfs_stats(mnt);
	char *tail = h_fmt(" path=%s\n", path);
	for (char *p = strstr(text, tail); p; p = strstr(p + 1, tail)) {
		char *start = p;
		while (start > text && start[-1] != '\n')
			start--;
		if (!strncmp(start, "file ", 5))
			return h_failfs_field(start, p, key);
	}
	h_failfs_stat(mnt, key); /* the key itself must exist */
	return 0;
}

#endif
