/*
 * test_log.c - the latency logger inside real processes, read back with
 * the log reader, cross-checked against strace and the recording layer;
 * and `syncshim ab` end to end.
 */
#include <ctype.h>

#include "harness.h"
#include "logread.h"
#include "policy.h"

TestSuite(log, .init = h_setup, .fini = h_teardown, .timeout = 120);

/* Sum of the last HIST set's counts for op (all rules). */
static uint64_t hist_count_op(const struct lr_log *l, unsigned op)
{
	uint64_t n = 0;
	for (size_t i = 0; i < l->nhists; i++)
		if (l->hists[i].op == op && l->hists[i].file_id == 0)
			n += l->hists[i].count;
	return n;
}

static size_t record_count_op(const struct lr_log *l, unsigned op)
{
	size_t n = 0;
	for (size_t i = 0; i < l->nrecs; i++)
		n += l->recs[i].op == op;
	return n;
}

static void read_log(const char *path, struct lr_log *l)
{
	struct lr_error err;
	cr_assert_eq(lr_read_file(path, l, &err), 0, "reading %s: %s", path, err.msg);
}

/* The one log a single process wrote, given its name template's prefix. */
static char *only_log(const char *prefix)
{
	char *pattern = h_fmt("ls %s/%s* 2>/dev/null", h_ctx.dir, prefix);
	FILE *p = popen(pattern, "r");
	cr_assert_not_null(p);
	char line[PATH_MAX];
	char *first = NULL;
	int n = 0;
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!first)
			first = h_strdup(line);
		n++;
	}
	pclose(p);
	cr_assert_eq(n, 1, "expected exactly one log %s*, found %d", prefix, n);
	return first;
}

/* The benchmark's by-hand ceiling for defer (sync_writes -b, no shim):
 * its syncing thread's fdatasyncs are real and counted, the writers make
 * none. A ceiling that never synced would flatter the shim. */
Test(log, sync_writes_background_syncs_are_real)
{
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_strace(&c, "fsync,fdatasync");
	h_args(&c, h_fmt("%s/examples/sync_writes", h_ctx.build), "-m", "none", "-b", "0", "-n", "3000",
	       "-f", h_path("d.dat"), NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sync_writes -b 0");
	const char *bg = strstr(r.out, " bg_syncs=");
	cr_assert_not_null(bg, "no bg_syncs in:\n%s", r.out);
	long reported = atol(bg + strlen(" bg_syncs="));
	cr_assert_gt(reported, 0, "the syncing thread never ran:\n%s", r.out);
	cr_assert_eq(h_strace_count(&c, "fdatasync"), reported);
	cr_assert_eq(h_strace_count(&c, "fsync"), 0);
}

Test(log, summary_counts_match_strace)
{
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s/s.%%p.log", h_ctx.dir);
	h_strace(&c, "fsync,write");
	h_args(&c, h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "200", "-f", h_path("d.dat"), NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sync_writes under the logger");
	long kernel_fsyncs = h_strace_count(&c, "fsync");
	cr_assert_eq(kernel_fsyncs, 200);

	char *path = only_log("s.");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "log mode %o, want 0600", st.st_mode & 0777);
	struct lr_log l;
	read_log(path, &l);
	cr_assert(l.has_trailer);
	cr_assert_eq(l.log_mode, LOG_SUMMARY);
	cr_assert(l.has_hists);
	cr_assert_eq(hist_count_op(&l, LOGOP_FSYNC), (uint64_t)kernel_fsyncs);
	cr_assert_eq(hist_count_op(&l, LOGOP_WRITE), 200);
	cr_assert_eq(l.nrecs, 0, "summary mode writes no call records");
	uint64_t interval_calls = 0;
	for (size_t i = 0; i < l.nivents; i++)
		if (l.ivents[i].op == LOGOP_FSYNC)
			interval_calls += l.ivents[i].t.calls;
	cr_assert_eq(interval_calls, 200, "per-second tallies add up to the calls");
	lr_free(&l);
}

Test(log, calls_mode_records_every_call)
{
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM_REC, "fdatasync");
	h_envf(&c, "SYNCSHIM_LOG=%s/c.%%p.log", h_ctx.dir);
	h_env(&c, "SYNCSHIM_LOG_MODE=calls");
	h_args(&c, h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "300", "-k", "-f", h_path("d.dat"), NULL);
	struct h_result run_ = h_run(&c);
	h_assert_ok(run_, "sync_writes in calls mode");
	struct lr_log l;
	read_log(only_log("c."), &l);
	cr_assert_eq(l.drops, 0);
	cr_assert_eq(record_count_op(&l, LOGOP_FSYNC), 300);
	cr_assert_eq(record_count_op(&l, LOGOP_WRITE), 300);
	/* what the app asked for, and what the kernel got instead */
	struct h_log rec = h_log_load(&c);
	unsigned long long ino = h_ino(h_path("d.dat"));
	cr_assert_eq(h_count(&rec, "fdatasync", ino), 300);
	cr_assert_eq(h_count(&rec, "fsync", ino), 0);
	for (size_t i = 0; i < l.nrecs; i++) {
		const struct logfmt_record *x = &l.recs[i];
		if (x->op != LOGOP_WRITE)
			continue;
		cr_assert_eq(x->bytes, 4096);
		cr_assert_eq(x->result, 4096);
		cr_assert_neq(x->file_id, 0);
		cr_assert_geq(lr_file_index(&l, x->file_id), 0, "record names an announced file");
	}
	lr_free(&l);
}

/* A ring far too small for a tight loop: what does not fit is dropped and
 * counted, exactly, while the histograms still count every call. */
Test(log, ring_overflow_counted_exactly)
{
	char *ini = h_path("small.ini");
	h_write_file(ini, h_fmt("[shim]\nring_records = 1024\nlog = %s/o.%%p.log\nlog_mode = calls\n", h_ctx.dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_args(&c, h_fmt("%s/examples/pwrite_loop", h_ctx.build), "-n", "400000", "-r", "65536", "-f",
	       h_path("p.dat"), NULL);
	struct h_result run_ = h_run(&c);
	h_assert_ok(run_, "pwrite_loop");
	struct lr_log l;
	read_log(only_log("o."), &l);
	cr_assert_eq(hist_count_op(&l, LOGOP_PWRITE), 400000 + 65536 / 4096,
		     "histograms count every call: the loop plus its prefill");
	/* Drops are counted over all ops (the open or close may be dropped too). */
	uint64_t calls = 0;
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		calls += hist_count_op(&l, op);
	uint64_t recorded = l.nrecs;
	cr_assert_gt(l.drops, 0, "a 1024-record ring cannot keep up with this loop");
	cr_assert_eq(recorded + l.drops, calls, "recorded %lu + dropped %lu != %lu calls",
		     (unsigned long)recorded, (unsigned long)l.drops, (unsigned long)calls);
	lr_free(&l);
}

Test(log, planted_symlink_and_existing_file_untouched)
{
	char *victim = h_path("victim");
	h_write_file(victim, "precious\n");
	char *log = h_path("planted.log");
	cr_assert_eq(symlink(victim, log), 0);
	char *existing = h_path("existing.log");
	h_write_file(existing, "someone else's\n");
	for (int i = 0; i < 2; i++) {
		struct h_cmd c;
		h_cmd_policy(&c, H_SHIM, "passthrough");
		h_envf(&c, "SYNCSHIM_LOG=%s", i == 0 ? log : existing);
		h_args(&c, h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "10", "-f", h_path("d.dat"), NULL);
		struct h_result run_ = h_run(&c);
	h_assert_ok(run_, "sync_writes");
	}
	cr_assert_str_eq(h_read_file(victim), "precious\n", "the symlink was not followed");
	cr_assert_str_eq(h_read_file(existing), "someone else's\n", "an existing file is not truncated");
	struct lr_log l;
	read_log(h_fmt("%s.1", log), &l); /* the log went to a fresh sibling name */
	cr_assert_eq(hist_count_op(&l, LOGOP_FSYNC), 10);
	lr_free(&l);
	read_log(h_fmt("%s.1", existing), &l);
	lr_free(&l);
}

Test(log, sigkill_leaves_a_readable_log)
{
	char *path = h_path("k.log");
	char *prog = h_fmt("%s/examples/sync_writes", h_ctx.build);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *pre = h_ctx.prefix[0] ? h_fmt("%s:%s", h_ctx.prefix, h_shim_lib()) : h_shim_lib();
		char *env[] = { h_fmt("LD_PRELOAD=%s", pre), h_fmt("SYNCSHIM_LOG=%s", path),
				"SYNCSHIM_LOG_MODE=calls", "ASAN_OPTIONS=detect_leaks=0", NULL };
		char *argv[] = { prog, "-t", "30", "-n", "100000000", "-f", h_path("k.dat"), NULL };
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		execve(prog, argv, env);
		_exit(127);
	}
	/* Wait until the logger has written some seconds' worth, then kill. */
	double deadline = h_now() + 20;
	while (h_size(path) < 200000 && h_now() < deadline)
		usleep(10000);
	cr_assert_geq(h_size(path), 200000, "the log grows while the process runs");
	kill(pid, SIGKILL);
	int st;
	cr_assert(h_wait(pid, 10, &st));
	cr_assert(WIFSIGNALED(st));
	struct lr_log l;
	read_log(path, &l);
	cr_assert_not(l.has_trailer);
	cr_assert(l.warnings & LRW_NO_TRAILER);
	cr_assert_gt(record_count_op(&l, LOGOP_FSYNC), 0);
	lr_free(&l);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, h_fmt("%s/synclat", h_ctx.build), "report", path, NULL);
	struct h_result r = h_run(&c);
	cr_assert_eq(r.code, 0, "synclat report on a killed process's log: %s", r.err);
	cr_assert(h_has(r.err, "no trailer"));
}

Test(log, forked_child_writes_its_own_log_and_reports_merge)
{
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM_REC, "passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s/f.%%p.log", h_ctx.dir);
	h_args(&c, h_prog("fork_sync"), "-d", h_ctx.dir, NULL);
	struct h_result run_ = h_run(&c);
	h_assert_ok(run_, "fork_sync");
	struct h_log rec = h_log_load(&c);
	int kernel = h_count(&rec, "fsync", 0);
	cr_assert_gt(kernel, 0);

	char *list = h_fmt("ls %s/f.*.log", h_ctx.dir);
	FILE *p = popen(list, "r");
	char line[PATH_MAX], *logs[8];
	int n = 0;
	uint64_t fsyncs = 0;
	pid_t pids[8];
	while (n < 8 && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		logs[n] = h_strdup(line);
		struct lr_log l;
		read_log(logs[n], &l);
		fsyncs += hist_count_op(&l, LOGOP_FSYNC);
		pids[n] = (pid_t)l.pid;
		lr_free(&l);
		n++;
	}
	pclose(p);
	cr_assert_eq(n, 2, "parent and child each write a log");
	cr_assert_neq(pids[0], pids[1]);
	cr_assert_eq(fsyncs, (uint64_t)kernel, "the two logs together count every fsync");

	struct h_cmd s;
	h_cmd_init(&s, H_PLAIN);
	h_args(&s, h_fmt("%s/synclat", h_ctx.build), "report", "--json", logs[0], logs[1], NULL);
	struct h_result r = h_run(&s);
	cr_assert_eq(r.code, 0, "%s", r.err);
	cr_assert(h_has(r.out, h_fmt("%d", pids[0])) && h_has(r.out, h_fmt("%d", pids[1])));
}

Test(log, ab_compares_two_policies_and_plots)
{
	char *dir = h_path("ab");
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	if (h_ctx.prefix[0]) /* the ASan shim needs its runtime first in every host */
		h_envf(&c, "LD_PRELOAD=%s", h_ctx.prefix);
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "ab", "-n", "3", "-o", dir, "passthrough", "noop", "--",
	       h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "200", "-f", h_path("ab.dat"), NULL);
	struct h_result r = h_run(&c);
	cr_assert_eq(r.code, 0, "syncshim ab: %s\n%s", r.out, r.err);
	for (int round = 1; round <= 3; round++)
		cr_assert(h_has(r.out, h_fmt("round %d A (passthrough)", round)) &&
			  h_has(r.out, h_fmt("round %d B (noop)", round)));
	/* one verdict, the load's figure first, then the sync latency, then
	 * the price: noop's fsync far faster, and its data at risk */
	const char *v = strstr(r.out, "\nverdict: wall time B/A ");
	cr_assert_not_null(v, "%s", r.out);
	const char *p50 = strstr(v, "B's fsync p50 ");
	cr_assert_not_null(p50, "%s", v);
	char digits[32] = "";
	for (const char *d = p50 + strlen("B's fsync p50 "); (isdigit((unsigned char)*d) || *d == ',' || *d == '.') &&
							    strlen(digits) < sizeof(digits) - 1;
	     d++)
		if (*d != ',')
			strncat(digits, d, 1);
	double faster = strtod(digits, NULL); /* "1,932x faster" */
	cr_assert(faster > 10 && h_has(p50, "x faster ("), "noop fsync p50 only %gx faster:\n%s", faster, v);
	cr_expect(h_has(v, "; B at risk max ") && h_has(v, "; A nothing at risk"), "no price in:\n%s", v);
	cr_expect(!h_has(v, "e-0"), "an exponent:\n%s", v);
	char *svg = h_read_file(h_fmt("%s/compare.svg", dir));
	cr_assert(h_has(svg, "<svg"), "the plot is an SVG");
	char *html = h_read_file(h_fmt("%s/compare.html", dir));
	cr_assert(h_has(html, "<svg") && !h_has(html, "<script src"), "a self-contained page");
	/* the same verdict, gain and price, on the page and in the plot */
	cr_expect(h_has(html, "B at risk max ") && h_has(html, "wall time B/A"), "the page's verdict has no price");
	cr_expect(h_has(svg, "B at risk max "), "the plot's verdict has no price");
}

/* A log name that exists: /dev/null is refused with one line (no
 * /dev/null.1 is ever made); a regular file's sibling NAME.1 is used, and
 * one line says which file to read. */
Test(log, existing_log_names_are_said)
{
	const char *names[2] = { "/dev/null", h_path("taken.log") };
	h_write_file(names[1], "someone else's\n");
	for (int i = 0; i < 2; i++) {
		struct h_cmd c;
		h_cmd_policy(&c, H_SHIM, "passthrough");
		h_envf(&c, "SYNCSHIM_LOG=%s", names[i]);
		h_args(&c, h_fmt("%s/examples/sync_writes", h_ctx.build), "-n", "10", "-f", h_path("d.dat"), NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "sync_writes");
		cr_assert_eq(h_nlines(r.err), 1, "want one stderr line for log %s:\n%s", names[i], r.err);
		if (i == 0) {
			cr_assert(h_has(r.err, "/dev/null exists and is not a regular file; logging off"), "%s", r.err);
			cr_assert_neq(access("/dev/null.1", F_OK), 0, "/dev/null.1 was created");
		} else {
			cr_assert(h_has(r.err, h_fmt("logging to %s.1", names[1])), "%s", r.err);
			struct lr_log l;
			read_log(h_fmt("%s.1", names[1]), &l);
			lr_free(&l);
		}
	}
}

/* copy_file_range writes into its destination: counted as a write of the
 * destination file, bytes and all. */
Test(log, copy_file_range_counts_as_a_write)
{
	char *log = h_path("c.log");
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "passthrough");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_env(&c, "SYNCSHIM_LOG_MODE=calls");
	h_args(&c, h_prog("copy_range"), "-d", h_ctx.dir, "-n", "65536", NULL);
	h_assert_ok(h_run(&c), "copy_range");
	cr_assert(h_check_pattern(h_path("dst.dat"), 65536));
	struct lr_log l;
	read_log(log, &l);
	uint64_t bytes = 0;
	for (size_t i = 0; i < l.nrecs; i++) {
		long k = lr_file_index(&l, l.recs[i].file_id);
		if (k >= 0 && h_has(l.files[k].path, "/dst.dat") && l.recs[i].op == LOGOP_WRITE)
			bytes += l.recs[i].bytes;
	}
	cr_assert_eq(bytes, 65536, "%llu bytes of writes counted to dst.dat", (unsigned long long)bytes);
	lr_free(&l);
}
