/*
 * test_livepub.c - the shim's side of the live counters (shim/live.c):
 * the file a shimmed process publishes (docs/LIVEFORMAT.md), read here
 * with the format's own definitions and checked against what the
 * recording layer beneath the shim saw. (synclat top and metrics, the
 * readers, are tested in test_live.c.)
 */
#include <dirent.h>
#include <sys/stat.h>

#include "harness.h"
#include "livefmt.h"
#include "policy.h"

TestSuite(livepub, .init = h_setup, .fini = h_teardown, .timeout = 60);

struct snap {
	struct live_header h;
	struct live_file f[LIVE_MAX_FILES];
};

/* One consistent copy of a live file (the spec's sequence-count read). */
static bool read_live(const char *path, struct snap *s)
{
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW);
		if (fd < 0)
			return false;
		uint32_t seq0 = 0, seq1 = 1;
		bool ok = pread(fd, &seq0, 4, offsetof(struct live_header, seq)) == 4 && !(seq0 & 1) &&
			  pread(fd, s, sizeof(*s), 0) == (ssize_t)sizeof(*s) &&
			  pread(fd, &seq1, 4, offsetof(struct live_header, seq)) == 4;
		close(fd);
		if (ok && seq0 == seq1 && s->h.seq == seq0)
			return true;
		usleep(1000);
	}
	return false;
}

static const struct live_file *entry(const struct snap *s, const char *path)
{
	for (uint32_t i = 0; i < s->h.nfiles && i < LIVE_MAX_FILES; i++)
		if (!strcmp(s->f[i].path, path))
			return &s->f[i];
	return NULL;
}

static char *live_dir(void)
{
	char *d = h_path("live");
	cr_assert_eq(mkdir(d, 0700), 0);
	return d;
}

static void live_cmd(struct h_cmd *c, const char *dir, const char *policy)
{
	h_cmd_init(c, H_SHIM_REC);
	h_env(c, "SYNCSHIM_LIVE=1");
	h_envf(c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_envf(c, "SYNCSHIM_POLICY=%s", policy);
}

/* Poll (bounded) until the process's file shows path with want(e). */
static bool wait_entry(const char *file, const char *path, struct snap *s,
		       bool (*want)(const struct live_file *, long), long arg)
{
	for (double dl = h_now() + 15; h_now() < dl; usleep(20000)) {
		const struct live_file *e;
		if (read_live(file, s) && (e = entry(s, path)) && want(e, arg))
			return true;
	}
	return false;
}

static bool wrote_n(const struct live_file *e, long n)
{
	return e->writes == (uint64_t)n && e->syncs == (uint64_t)n;
}

static bool settled(const struct live_file *e, long n)
{
	return wrote_n(e, n) && e->pending == 0 && e->risk_bytes == 0;
}

static int count_ops(const struct h_log *log, const char *op, unsigned long long ino)
{
	int n = 0;
	for (size_t i = 0; i < log->n; i++)
		n += !strcmp(log->r[i].op, op) && log->r[i].ino == ino;
	return n;
}

/*
 * defer: 200 (write + fsync), then the app idles. While it runs its file
 * is DIR/PID.live, 0600 in a 0700 directory; once everything is synced,
 * the counts equal what the recording layer saw: 200 writes of 4 KiB, and
 * exactly as many real syncs as reached the kernel. At exit it is gone.
 */
Test(livepub, counts_match_what_really_happened)
{
	char *dir = live_dir(), *file = h_path("d.dat"), *stop = h_path("stop");
	struct h_cmd c;
	live_cmd(&c, dir, "defer");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "200", "-S", stop, "-I", "-T", "20000", NULL);
	pid_t pid = h_spawn(&c);
	char *live = h_fmt("%s/%d.live", dir, (int)pid);
	static struct snap s;
	bool ok = wait_entry(live, file, &s, settled, 200);
	struct stat st;
	bool mode_ok = stat(live, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_uid == getuid();
	struct h_log log = h_log_load(&c);
	h_write_file(stop, "");
	struct h_result r = h_reap(&c, pid, 20, false, 0);
	h_assert_ok(r, "fl_loop");
	cr_assert(ok, "the live file never showed 200 writes, 200 syncs, all synced");
	cr_assert(mode_ok, "the live file is not 0600 and ours");
	const struct live_file *e = entry(&s, file);
	unsigned long long ino = h_ino(file);
	cr_assert_eq(s.h.pid, (uint32_t)pid);
	cr_assert_str_eq(s.h.default_policy, "defer");
	cr_assert_eq(e->policy, SYNC_DEFER);
	cr_assert_eq(e->bytes, 200 * 4096ull);
	cr_assert_eq(count_ops(&log, "write", ino), 200);
	int real = count_ops(&log, "fsync", ino) + count_ops(&log, "fdatasync", ino);
	cr_assert_eq(e->real_syncs, (uint64_t)real, "live says %llu real syncs, the kernel saw %d",
		     (unsigned long long)e->real_syncs, real);
	cr_assert_lt(real, 200, "defer batched nothing?");
	cr_assert_eq(e->errors, 0);
	cr_assert(access(live, F_OK) != 0, "%s still there after exit", live);
}

/* passthrough: every sync is a real one, nothing is ever at risk. */
Test(livepub, passthrough_has_nothing_at_risk)
{
	char *dir = live_dir(), *file = h_path("p.dat"), *stop = h_path("stop");
	struct h_cmd c;
	live_cmd(&c, dir, "passthrough");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "100", "-S", stop, "-I", "-T", "20000", NULL);
	pid_t pid = h_spawn(&c);
	static struct snap s;
	bool ok = wait_entry(h_fmt("%s/%d.live", dir, (int)pid), file, &s, wrote_n, 100);
	h_write_file(stop, "");
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "fl_loop");
	cr_assert(ok);
	const struct live_file *e = entry(&s, file);
	cr_assert_eq(e->real_syncs, 100);
	cr_assert_eq(e->risk_bytes + e->risk_worst_bytes + e->risk_age_ns + e->risk_worst_age_ns, 0);
	cr_assert_eq(e->sync_buckets[LIVE_NBUCKETS - 1] + e->sync_buckets[0] <= 100, true);
	uint64_t n = 0;
	for (unsigned b = 0; b < LIVE_NBUCKETS; b++)
		n += e->sync_buckets[b];
	cr_assert_eq(n, 100, "the sync histogram holds %llu calls", (unsigned long long)n);
}

static bool one_write(const struct live_file *e, long n)
{
	return wrote_n(e, n);
}

static bool one_write_or_more(const struct live_file *e, long n)
{
	return e->writes >= (uint64_t)n;
}

/* A forked child publishes its own file with only its own counts; the
 * parent's file keeps only the parent's; both go at exit. */
Test(livepub, fork_child_publishes_its_own)
{
	char *dir = live_dir(), *stop = h_path("stop");
	struct h_cmd c;
	live_cmd(&c, dir, "passthrough");
	h_args(&c, h_prog("live_fork"), "-d", h_ctx.dir, "-S", stop, NULL);
	pid_t pid = h_spawn(&c);
	double dl = h_now() + 15;
	while ((access(h_fmt("%s.child.idle", stop), F_OK) || access(h_fmt("%s.parent.idle", stop), F_OK)) &&
	       h_now() < dl)
		usleep(10000);
	/* The child's publisher makes its file on its own round, which can
	 * come after the child said it is idle: look until the deadline. */
	char *child_live = NULL;
	do {
		DIR *d = opendir(dir);
		for (struct dirent *de; d && (de = readdir(d));)
			if (de->d_name[0] != '.' && strstr(de->d_name, ".live") && !strstr(de->d_name, ".tmp") &&
			    atoi(de->d_name) != pid)
				child_live = h_fmt("%s/%s", dir, de->d_name);
		if (d)
			closedir(d);
	} while (!child_live && h_now() < dl && usleep(10000) == 0);
	static struct snap ps, cs;
	bool pok = wait_entry(h_fmt("%s/%d.live", dir, (int)pid), h_path("parent.dat"), &ps, one_write, 2);
	bool cok = child_live && wait_entry(child_live, h_path("child.dat"), &cs, one_write, 1);
	h_write_file(stop, "");
	struct h_result r = h_reap(&c, pid, 20, false, 0);
	h_assert_ok(r, "live_fork");
	cr_assert(pok, "the parent's file never showed its 2 writes");
	cr_assert(cok, "no file of the child (%s) with its 1 write", child_live ? child_live : "none");
	const struct live_file *pe = entry(&cs, h_path("parent.dat"));
	cr_assert(!pe || pe->writes == 0, "the child's file counts the parent's writes");
	cr_assert_eq(cs.h.ppid, (uint32_t)pid);
	cr_assert(access(child_live, F_OK) != 0 && access(h_fmt("%s/%d.live", dir, (int)pid), F_OK) != 0,
		  "a live file outlived its process");
}

/* A directory others can write in is not used: one line on stderr, no
 * file, and the program's own work unchanged. */
Test(livepub, refuses_a_directory_others_can_write)
{
	char *dir = h_path("open");
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	char *file = h_path("o.dat");
	struct h_cmd c;
	live_cmd(&c, dir, "passthrough");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "20", "-w", "1500", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fl_loop");
	cr_assert(h_has(r.err, "is not ours alone") && h_has(r.err, "live counters off"), "stderr: %s", r.err);
	cr_assert_eq(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err), "more than one line: %s", r.err);
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(n, 0, "a file was written in a directory others can write");
	cr_assert(h_check_pattern(file, 20 * 4096));
}

/* live off (the default): no thread, no file. */
Test(livepub, off_by_default)
{
	char *dir = live_dir(), *file = h_path("n.dat");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "20", "-w", "1500", NULL);
	h_assert_ok(h_run(&c), "fl_loop");
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(n, 0);
}

/* Someone truncates the live file, then replaces it with a file of their
 * own: the host never notices (a store into a mapped page past the end
 * would have been its SIGBUS), the truncated file is written again, and
 * the replacement is never written into: a file of the shim's own comes
 * back instead. */
Test(livepub, a_tampered_file_never_hurts_the_host)
{
	char *dir = live_dir(), *file = h_path("t.dat"), *stop = h_path("stop");
	struct h_cmd c;
	live_cmd(&c, dir, "passthrough");
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "1000000", "-p", "1000", "-S", stop, "-T", "30000", NULL);
	pid_t pid = h_spawn(&c);
	char *live = h_fmt("%s/%d.live", dir, (int)pid);
	static struct snap s;
	bool first = wait_entry(live, file, &s, one_write_or_more, 1);
	bool back = false, own = false;
	if (first) {
		cr_assert_eq(truncate(live, 0), 0);
		back = wait_entry(live, file, &s, one_write_or_more, 1);
		char *mine = h_fmt("%s.mine", live);
		h_write_file(mine, "not a live file");
		cr_assert_eq(rename(mine, live), 0);
		for (double dl = h_now() + 15; !own && h_now() < dl; usleep(20000))
			own = read_live(live, &s) && entry(&s, file);
	}
	h_write_file(stop, "");
	struct h_result r = h_reap(&c, pid, 20, false, 0);
	h_assert_ok(r, "fl_loop with its live file tampered with");
	cr_assert(first && back, "the live file did not come back after its truncation");
	cr_assert(own, "no live file of the shim's own after the replacement");
}

/* The publisher never takes a number the app could be handed: with every
 * open of the live file's names held 60 ms beneath the shim (a slow file
 * system), an app thread that opens and closes one file over and over
 * always gets the same, lowest number, and fsync of that number once
 * closed is always EBADF, while the live file is made and published. */
static void lownum_under(const char *policy)
{
	char *dir = h_path(h_fmt("ln.%s", policy)), *live = h_path(h_fmt("ln.%s.live", policy));
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(mkdir(live, 0700), 0);
	struct h_cmd c;
	live_cmd(&c, live, policy);
	h_env(&c, "RECLAYER_SLOW_OPEN=.live:60");
	h_args(&c, h_prog("lownum"), dir, live, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, h_fmt("lownum under %s", policy));
	cr_expect(h_has(r.out, "shifted=0 ebadf_wrong=0") && h_has(r.out, "seen=1"),
		  "under %s the app met the publisher's descriptor: %s%s", policy, r.out, r.err);
}

Test(livepub, never_on_a_number_of_the_apps)
{
	lownum_under("defer");
	lownum_under("passthrough");
}

/* The same for the reload watcher, which shares the app's table (it
 * completes pending syncs through the app's descriptors): the ini it reads
 * again after an edit is opened where no number of the app's is. */
Test(livepub, reload_reads_the_ini_on_no_number_of_the_apps)
{
	char *dir = h_path("rl"), *ini = h_path("rl.ini");
	cr_assert_eq(mkdir(dir, 0755), 0);
	h_write_file(ini, "[shim]\npolicy = defer\nreload = true\nlive = off\n");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "RECLAYER_SLOW_OPEN=rl.ini:60");
	h_args(&c, h_prog("lownum"), dir, "-", ini, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "lownum with a reload");
	cr_expect(h_has(r.out, "shifted=0 ebadf_wrong=0") && h_has(r.out, "seen=1"),
		  "the app met the watcher's descriptor: %s%s", r.out, r.err);
}

/* ---- the rule table and the config errors ---------------------------------- */

/* The header and the rule table (the format's own offsets), one
 * consistent copy; false if the file is not there or never settles. */
static bool read_rules(const char *path, struct live_header *h, struct live_rule *rules)
{
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW);
		if (fd < 0)
			return false;
		uint32_t seq0 = 0, seq1 = 1;
		bool ok = pread(fd, &seq0, 4, offsetof(struct live_header, seq)) == 4 && !(seq0 & 1) &&
			  pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) && h->nrules <= LIVE_MAX_RULES &&
			  h->rule_size == sizeof(struct live_rule) &&
			  pread(fd, rules, h->nrules * sizeof(*rules), h->rules_offset) ==
				  (ssize_t)(h->nrules * sizeof(*rules)) &&
			  pread(fd, &seq1, 4, offsetof(struct live_header, seq)) == 4;
		close(fd);
		if (ok && seq0 == seq1 && h->seq == seq0)
			return true;
		usleep(1000);
	}
	return false;
}

static const struct live_rule *rule_named(const struct live_header *h, const struct live_rule *rules,
					  const char *name)
{
	for (uint32_t i = 0; i < h->nrules; i++)
		if (!strcmp(rules[i].name, name))
			return &rules[i];
	return NULL;
}

/* A line into fifo, so that pid's read of it returns: once its reader
 * is there (never blocking on a reader that died or never came). */
static void release_reader(const char *fifo, pid_t pid)
{
	for (double end = h_now() + 15; h_now() < end && kill(pid, 0) == 0; usleep(10000)) {
		int w = open(fifo, O_WRONLY | O_NONBLOCK);
		if (w < 0)
			continue; /* ENXIO: not opened for reading yet */
		cr_expect_eq(write(w, "\n", 1), 1);
		close(w);
		return;
	}
}

/*
 * Each rule in force is in the file with the files it matched, counted
 * once per path: the shell appends to f1 five times (five opens, each
 * file object let go at its close) and to f2 once. A rule whose glob names
 * another directory is listed with 0, the way a profile written for other
 * paths shows up.
 */
Test(livepub, rule_table_counts_paths_and_shows_a_rule_that_matched_nothing)
{
	char *dir = live_dir(), *ini = h_path("rules.ini"), *fifo = h_path("go");
	char *f1 = h_path("f1"), *f2 = h_path("f2");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\nlive = on\nlive_dir = %s\n"
				"[rule wal]\npath = %s\nsync = defer\n"
				"[rule others]\npath = %s\nsync = passthrough\n"
				"[rule elsewhere]\npath = /var/lib/nothing-here/*.log\nsync = defer\n",
				dir, f1, h_path("f*")));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_args(&c, "/bin/sh", "-c",
	       h_fmt("for i in 1 2 3 4 5; do echo x >> %s; done; echo y >> %s; read line < %s", f1, f2, fifo), NULL);
	pid_t pid = h_spawn(&c);
	char *live = h_fmt("%s/%d.live", dir, (int)pid);
	static struct live_header h;
	static struct live_rule rules[LIVE_MAX_RULES];
	const struct live_rule *wal = NULL, *others = NULL;
	bool seen = false;
	for (double dl = h_now() + 15; !seen && h_now() < dl; usleep(20000))
		seen = read_rules(live, &h, rules) && (wal = rule_named(&h, rules, "wal")) &&
		       (others = rule_named(&h, rules, "others")) && wal->files >= 1 && others->files >= 1;
	struct h_result st = h_sh(h_fmt("'%s/syncshim' status --dir '%s' %d", h_ctx.build, dir, (int)pid), 20);
	release_reader(fifo, pid);
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "sh");
	cr_assert(seen, "the live file never listed rules wal and others with a file each: nrules %u, %s %u, %s %u, %s %u",
		  h.nrules, rules[1].name, rules[1].files, rules[2].name, rules[2].files, rules[0].name, rules[0].files);
	cr_assert_eq(h.nrules, 4, "the default and three rules");
	cr_assert_eq(rules[0].rule, 0);
	cr_assert_str_eq(rules[0].name, "");
	cr_assert_eq(rules[0].policy, SYNC_PASSTHROUGH);
	cr_assert_eq(wal->rule, 1);
	cr_assert_eq(wal->policy, SYNC_DEFER);
	cr_assert_str_eq(wal->glob, f1);
	cr_assert_eq(wal->files, 1, "f1, opened five times, counted %u times", wal->files);
	cr_assert_eq(others->files, 1, "f2 alone (f1 is wal's): %u", others->files);
	const struct live_rule *none = rule_named(&h, rules, "elsewhere");
	cr_assert(none, "the rule that matched nothing is not listed");
	cr_assert_eq(none->files, 0);
	cr_assert_str_eq(none->glob, "/var/lib/nothing-here/*.log");
	cr_assert_eq(none->flags & LIVER_APPROXIMATE, 0);
	cr_assert_eq(h.config_errors, 0);
	/* syncshim status says the same, and warns */
	cr_assert_eq(st.code, 0, "%s%s", st.out, st.err);
	cr_assert(h_has(st.out, "  rule wal (defer): 1 file matched; at risk") &&
			  h_has(st.out, "  rule elsewhere (defer): 0 files matched\n") &&
			  h_has(st.out, "warning: 1 rule matched no file"),
		  "%s", st.out);
}

/* Wait (bounded) until the file shows config_errors >= n. */
static bool wait_config_errors(const char *live, struct live_header *h, uint32_t n)
{
	static struct live_rule rules[LIVE_MAX_RULES];
	for (double dl = h_now() + 15; h_now() < dl; usleep(20000))
		if (read_rules(live, h, rules) && h->config_errors >= n)
			return true;
	return false;
}

/*
 * A bare LD_PRELOAD with a typo in its ini fails open (passthrough, one
 * line on stderr) and, although nothing asked for live counters, publishes
 * them with config_errors 1 and the parser's message, so top, status and
 * metrics show it.
 */
Test(livepub, a_refused_ini_is_counted_where_the_views_see_it)
{
	char *dir = live_dir(), *ini = h_path("typo.ini"), *file = h_path("t.dat"), *stop = h_path("stop");
	h_write_file(ini, h_fmt("[shim]\npolicy = defere\nlive_dir = %s\n", dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", dir); /* the refused ini's live_dir is not read */
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "3", "-S", stop, "-I", NULL);
	pid_t pid = h_spawn(&c);
	static struct live_header h;
	bool seen = wait_config_errors(h_fmt("%s/%d.live", dir, (int)pid), &h, 1);
	h_write_file(stop, "");
	struct h_result r = h_reap(&c, pid, 20, false, 0);
	h_assert_ok(r, "fl_loop under a refused ini");
	cr_assert(seen, "no live file with config_errors 1 (the process ran with live counters off?)");
	cr_assert_eq(h.config_errors, 1);
	cr_assert(h_has(h.config_error, "unknown policy 'defere'"), "config_error: '%s'", h.config_error);
	cr_assert_str_eq(h.config, ini);
	cr_assert_str_eq(h.default_policy, "passthrough");
	cr_assert_eq(h_nlines(r.err), 1, "one line on stderr, not:\n%s", r.err);
	cr_assert(h_has(r.err, "running as passthrough"), "%s", r.err);
}

/* A reload that the parser refuses keeps the rules and counts it too. */
Test(livepub, a_refused_reload_is_counted_and_the_rules_stay)
{
	char *dir = live_dir(), *ini = h_path("r.ini"), *file = h_path("r.dat"), *stop = h_path("stop");
	h_write_file(ini, "[shim]\npolicy = defer\nreload = true\n");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", dir);
	h_args(&c, h_prog("fl_loop"), "-f", file, "-n", "3", "-S", stop, "-I", NULL);
	pid_t pid = h_spawn(&c);
	char *live = h_fmt("%s/%d.live", dir, (int)pid);
	static struct live_header h;
	static struct live_rule rules[LIVE_MAX_RULES];
	bool published = false;
	for (double dl = h_now() + 15; !published && h_now() < dl; usleep(20000))
		published = read_rules(live, &h, rules);
	cr_assert(published, "no live file from a process under defer");
	cr_assert_eq(h.config_errors, 0);
	h_write_file(ini, "[shim]\npolicy = defer\nreload = true\nmax_delay_ms = fast\n");
	bool seen = wait_config_errors(live, &h, 1);
	h_write_file(stop, "");
	struct h_result r = h_reap(&c, pid, 20, false, 0);
	h_assert_ok(r, "fl_loop with a refused reload");
	cr_assert(seen, "the refused reload was never counted");
	cr_assert_eq(h.config_errors, 1);
	cr_assert(h_has(h.config_error, "max_delay_ms"), "config_error: '%s'", h.config_error);
	cr_assert_str_eq(h.default_policy, "defer");
	cr_assert(h_has(r.err, "keeping the previous policy"), "%s", r.err);
}

/*
 * A server that rewrites its command line into a title (redis-server,
 * PostgreSQL; perl's $0 here) is still named by the command it was
 * started with, in the live file and in the log: the title is set by
 * the time the shim first publishes or logs.
 */
Test(livepub, the_command_as_started_not_the_title_set_later)
{
	char *dir = live_dir(), *file = h_path("p.dat"), *fifo = h_path("go"), *log = h_path("p.log");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	struct h_cmd c;
	live_cmd(&c, dir, "defer");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, "perl", "-e",
	       "$0 = 'rewritten title' . (' ' x 80); open(my $f, '>>', $ARGV[0]) or die; syswrite($f, 'x'); "
	       "open(my $g, '<', $ARGV[1]) or die; my $l = <$g>;", /* $f open: the file stays in the live file */
	       file, fifo, NULL);
	pid_t pid = h_spawn(&c);
	char *live = h_fmt("%s/%d.live", dir, (int)pid);
	static struct snap s;
	bool seen = wait_entry(live, file, &s, one_write_or_more, 1);
	char *title = h_read_file(h_fmt("/proc/%d/cmdline", (int)pid));
	release_reader(fifo, pid);
	h_assert_ok(h_reap(&c, pid, 20, false, 0), "perl");
	cr_assert(seen, "no live entry for %s", file);
	cr_assert(h_has(title, "rewritten title"), "perl did not set its title: '%s'", title);
	cr_assert(!strncmp(s.h.cmdline, "perl -e $0 = 'rewritten title'", 30), "live cmdline: '%s'", s.h.cmdline);
	struct h_cmd rep;
	h_cmd_init(&rep, H_PLAIN);
	h_args(&rep, h_fmt("%s/synclat", h_ctx.build), "report", log, NULL);
	struct h_result r = h_run(&rep);
	h_assert_ok(r, "synclat report");
	cr_assert(h_has(r.out, "command : perl -e $0 = 'rewritten title'"), "%s", r.out);
}
