/*
 * test_all_at_once.c - everything hostile at once, with the guarantees checked
 * from outside the shim.
 *
 * tests/progs/all_at_once runs writers that sync while other threads fork,
 * vfork+exec, tear descriptors (close_range, closefrom, raw close, dup2
 * over the shim's own), squeeze the descriptor limit, and signal handlers
 * write and sync; meanwhile this test rewrites the ini file (the writers'
 * policy stays, its knobs and a scratch rule's policy change), and the data
 * lives on a device that starts failing (tests/lib/failfs: EIO on some
 * syncs) or fills up (a small loop-mounted ext4: ENOSPC). Checked, with the
 * recording layer beneath the shim and not the shim's own counters:
 *   - under passthrough, fdatasync and group, every acknowledged record
 *     (a sync that returned 0 after it was written) is covered by a real
 *     sync of its file that began after the write and ended before the ack;
 *   - under defer, each file's last write is covered by a real sync by the
 *     time the process is gone, or its failure was said on stderr;
 *   - every file holds exactly the app's bytes;
 *   - every injected device error reached the app or stderr;
 *   - nothing hung (the run's timeout fails the test).
 * `make test` runs one pass (about 4 s a run); `make soak` sets
 * SYNCSHIM_ALL_AT_ONCE_SECONDS and keeps going round for that long.
 */
#include <sys/statvfs.h>

#include "harness.h"

static void all_at_once_fini(void)
{
	if (h_ctx.dir[0]) {
		int r = system(h_fmt("umount -l %s/full 2>/dev/null", h_ctx.dir));
		(void)r; /* not mounted (the test passed, or never got there): nothing to undo */
	}
	h_failfs_fini();
}

TestSuite(all_at_once, .init = h_setup, .fini = all_at_once_fini, .timeout = 1800);

#define REC 512

struct ack {
	unsigned long long ino, tw, tr;
};

struct writer_out {
	unsigned long long ino, last_tw;
	long records, acks, errors, eio, enospc;
};

static int run_ms(void)
{
	return getenv("SYNCSHIM_ALL_AT_ONCE_SECONDS") ? 15000 : 3500;
}

/* Extra [shim] keys for the next runs ("" none). */
static const char *shim_extra = "";

static char *ini_text(const char *dir, const char *policy, int k)
{
	static const char *const cycle[] = { "defer", "group", "passthrough", "fdatasync", "noop" };
	/* live counters too: their publisher lives through the same forks,
	 * closes and reloads (they are read at start: k = 0 decides) */
	return h_fmt("[shim]\npolicy = %s\nlog = %s/all_at_once.%%p.log\nlog_mode = calls\nlive = on\n"
		     "live_dir = %s/live\nmax_delay_ms = %d\non_close = %s\nwriteback_bytes = %s\n%s\n"
		     "[rule scratch]\npath = %s/s.*.dat\nsync = %s\n",
		     policy, dir, dir, k % 2 ? 20 : 5, k % 3 ? "async" : "sync", k % 4 ? "0" : "64K", shim_extra,
		     dir, cycle[k % 5]);
}

/* ---- reading what the run left ------------------------------------------ */

static int parse_writers(const char *out, struct writer_out *w, int max)
{
	int n = 0;
	for (const char *p = strstr(out, "writer "); p && n < max; p = strstr(p + 1, "\nwriter ")) {
		const char *line = *p == '\n' ? p + 1 : p;
		w[n] = (struct writer_out){
			.ino = (unsigned long long)h_num_after(line, "ino=", 0),
			.records = (long)h_num_after(line, "records=", 0),
			.acks = (long)h_num_after(line, "acks=", 0),
			.errors = (long)h_num_after(line, "errors=", 0),
			.eio = (long)h_num_after(line, "eio=", 0),
			.enospc = (long)h_num_after(line, "enospc=", 0),
			.last_tw = (unsigned long long)h_num_after(line, "last_tw=", 0),
		};
		n++;
	}
	return n;
}

static struct ack *load_acks(const char *path, size_t *n)
{
	char *text = h_read_file(path);
	size_t cap = 1024;
	struct ack *a = malloc(cap * sizeof(*a));
	*n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (*n == cap)
			a = realloc(a, (cap *= 2) * sizeof(*a));
		a[(*n)++] = (struct ack){ (unsigned long long)h_num_after(line, "ino=", 0),
					  (unsigned long long)h_num_after(line, "tw=", 0),
					  (unsigned long long)h_num_after(line, "tr=", 0) };
	}
	free(text);
	return a;
}

static bool is_real_sync(const struct h_rec *r)
{
	return (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync")) && r->ret == 0;
}

/* The successful real syncs of the run, by (ino, start): the checks ask
 * about tens of thousands of acks. */
struct sync_span {
	unsigned long long ino, t0, t1;
};

struct sync_index {
	struct sync_span *s;
	size_t n;
};

static int span_cmp(const void *a, const void *b)
{
	const struct sync_span *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static struct sync_index index_syncs(const struct h_log *log)
{
	struct sync_index ix = { malloc((log->n + 1) * sizeof(struct sync_span)), 0 };
	for (size_t i = 0; i < log->n; i++)
		if (is_real_sync(&log->r[i]))
			ix.s[ix.n++] = (struct sync_span){ log->r[i].ino, log->r[i].t0, log->r[i].t1 };
	qsort(ix.s, ix.n, sizeof(*ix.s), span_cmp);
	return ix;
}

/* A successful real sync of ino that began at or after from and ended by
 * until (0: any time). */
static bool covered(const struct sync_index *ix, unsigned long long ino, unsigned long long from,
		    unsigned long long until)
{
	size_t lo = 0, hi = ix->n;
	struct sync_span key = { ino, from, 0 };
	while (lo < hi) { /* the first span >= (ino, from) */
		size_t mid = lo + (hi - lo) / 2;
		if (span_cmp(&ix->s[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < ix->n && ix->s[i].ino == ino; i++) {
		if (until && ix->s[i].t0 > until)
			break;
		if (!until || ix->s[i].t1 <= until)
			return true;
	}
	return false;
}

/* The file's bytes are the app's pattern throughout, and there are between
 * min and max of them. */
static bool pattern_ok(const char *path, long long min, long long max)
{
	long long size = h_size(path);
	return size >= min && size <= max && h_check_pattern(path, size);
}

/* ---- the checks -------------------------------------------------------- */

static void check_acks(const char *what, const struct sync_index *log, const char *acks_path)
{
	size_t n;
	struct ack *a = load_acks(acks_path, &n);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		if (!covered(log, a[i].ino, a[i].tw, a[i].tr) && bad++ < 3)
			cr_log_error("%s: ack of ino %llu (written %llu, acked %llu) has no real sync inside", what,
				     a[i].ino, a[i].tw, a[i].tr);
	cr_assert_eq(bad, 0, "%s: %zu of %zu acknowledged records were never made durable before the ack", what,
		     bad, n);
	free(a);
}

static void check_writers(const char *what, const char *dir, const char *policy, const struct sync_index *log,
			  const struct h_result *r, const char *mnt)
{
	struct writer_out w[16];
	int n = parse_writers(r->out, w, 16);
	cr_assert_gt(n, 0, "%s: no writer lines:\n%s", what, r->out);
	for (int t = 0; t < n; t++) {
		char *path = h_fmt("%s/w.%d.dat", dir, t);
		cr_assert(pattern_ok(path, w[t].records * REC, (w[t].records + 1) * REC - 1),
			  "%s: w.%d.dat holds bytes the app did not write (records %ld, size %lld)", what, t,
			  w[t].records, h_size(path));
		/* By name (the file's own sticky error, said at exit), or by
		 * inode: a fork child that synced the writer's file for its
		 * domain's order and failed says so itself when the writer's own
		 * sync freed the file's slot meanwhile (order.c, tell_owner).
		 * Under load that happens: the child's sync is slow, the
		 * writer's flusher does not wait for it. */
		bool said = h_has(r->err, h_fmt("w.%d.dat failed", t)) ||
			    h_has(r->err, h_fmt("(inode %llu) made for the order of its domain failed", w[t].ino));
		if (!strcmp(policy, "defer") && w[t].records > 0)
			cr_assert(covered(log, w[t].ino, w[t].last_tw, 0) || said,
				  "%s: w.%d.dat's last write was never synced, and nothing was said", what, t);
		if (mnt) {
			long long injected = h_failfs_file_stat(mnt, h_fmt("/w.%d.dat", t), "injected");
			cr_assert(injected == 0 || w[t].errors > 0 || said,
				  "%s: %lld sync errors of w.%d.dat reached neither the app nor stderr", what,
				  injected, t);
		}
	}
}

static void check_handlers_and_children(const char *what, const char *dir, const struct h_result *r)
{
	for (int t = 0; t < 16; t++) {
		const char *line = strstr(r->out, h_fmt("handler %d ", t));
		if (!line)
			break;
		long recs = (long)h_num_after(line, "records=", 0);
		char *path = h_fmt("%s/h.%d.dat", dir, t);
		cr_assert(pattern_ok(path, recs * REC, recs * REC), "%s: h.%d.dat wrong (records %ld, size %lld)",
			  what, t, recs, h_size(path));
	}
	long kids = (long)h_num_after(r->out, "children forked=", 0);
	for (long k = 0; k < kids; k++) {
		char *path = h_fmt("%s/c.%ld.dat", dir, k);
		cr_assert(access(path, F_OK) != 0 || pattern_ok(path, 0, 4 * REC), "%s: %s wrong", what, path);
	}
}

/* ---- running it -------------------------------------------------------- */

struct stress_run {
	const char *policy;
	const char *dir;   /* where the data goes */
	const char *mnt;   /* failfs mount, or NULL */
	const char *flags; /* the program's own options */
	bool faults_ok;    /* children may fail: the device is failing or full */
};

static struct h_result run_stress(const struct stress_run *cr, struct h_cmd *c, int round)
{
	char *ini = h_path(h_fmt("all_at_once.%d.ini", round));
	char *acks = h_path(h_fmt("acks.%d.txt", round));
	h_write_file(ini, ini_text(cr->dir, cr->policy, 0));
	h_cmd_init(c, H_SHIM_REC);
	h_envf(c, "SYNCSHIM_CONFIG=%s", ini);
	c->timeout_s = run_ms() / 1000 + 60;
	h_args(c, h_prog("all_at_once"), "-d", cr->dir, "-t", "4", "-a", acks, NULL);
	h_argf(c, "-T%d", run_ms());
	for (const char *f = cr->flags; *f; f++)
		h_argf(c, "-%c", *f);
	/* The ini is rewritten while it runs: same policy for the writers. */
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		for (int k = 1; k < run_ms() / 150; k++) {
			usleep(150000);
			FILE *f = fopen(h_fmt("%s.tmp", ini), "w");
			if (f) {
				fputs(ini_text(cr->dir, cr->policy, k), f);
				fclose(f);
				rename(h_fmt("%s.tmp", ini), ini);
			}
		}
		_exit(0);
	}
	struct h_result r = h_run(c);
	int st;
	waitpid(pid, &st, 0);
	return r;
}

static struct h_result stress_once(const struct stress_run *cr, int round)
{
	char *what = h_fmt("round %d, %s, -%s%s", round, cr->policy, cr->flags, cr->mnt ? " on failfs" : "");
	struct h_cmd c;
	struct h_result r = run_stress(cr, &c, round);
	cr_assert(!r.timed_out, "%s: hung\nstdout:\n%s\nstderr:\n%s", what, r.out, r.err);
	cr_assert_eq(r.code, 0, "%s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.sig, r.out,
		     r.err);
	cr_assert(h_has(r.out, "all_at_once: done"), "%s:\n%s", what, r.out);
	struct h_log log = h_log_load(&c);
	struct sync_index ix = index_syncs(&log);
	if (strcmp(cr->policy, "noop") && strcmp(cr->policy, "defer"))
		check_acks(what, &ix, h_path(h_fmt("acks.%d.txt", round)));
	check_writers(what, cr->dir, cr->policy, &ix, &r, cr->mnt);
	check_handlers_and_children(what, cr->dir, &r);
	if (!cr->faults_ok)
		cr_assert_eq(h_num_after(r.out, "failed=", 0), 0, "%s: a child failed:\n%s", what, r.out);
	cr_log_info("%s: %.1f s, %zu recorded calls, %zu real syncs", what, r.secs, log.n, ix.n);
	free(ix.s);
	return r;
}

static const char *fresh_dir(const char *name)
{
	char *d = h_path(name);
	cr_assert_eq(mkdir(d, 0755), 0, "mkdir %s: %s", d, strerror(errno));
	return d;
}

static void failfs_round(const char *policy, const char *flags, int round)
{
	char *back = (char *)fresh_dir(h_fmt("back.%d", round)), *mnt = (char *)fresh_dir(h_fmt("mnt.%d", round));
	h_failfs_mount(back, mnt);
	h_failfs_ctl(mnt, "fsync EIO after 50 times 3");
	struct stress_run cr = { policy, mnt, mnt, flags, true };
	stress_once(&cr, round);
	h_failfs_umount(mnt);
}

/* One pass: every policy on a failing device with everything on, then a
 * device that fills up. */
static void stress_pass(int *round)
{
	static const char *const policies[] = { "passthrough", "fdatasync", "group", "defer", "noop" };
	/* Not -F under ASan: gcc 12's libasan takes no allocator lock around
	 * fork, so a child forked while another thread is inside malloc
	 * inherits the lock held, and the first allocation there (the shim's
	 * threads restarting, or the app's) waits forever. Seen in make asan:
	 * every thread of the child in SizeClassAllocator64::GetFromAllocator.
	 * The plain build runs -F every time. */
	const char *all = h_ctx.asan ? "VGXN" : "FVGXN", *some = h_ctx.asan ? "VGX" : "FVGX";
	for (int p = 0; p < 5; p++, (*round)++)
		failfs_round(policies[p], p % 2 ? some : all, *round);
	const char *d = fresh_dir(h_fmt("plain.%d", *round));
	struct stress_run plain = { "group", d, NULL, h_ctx.asan ? "GX" : "FGX", false };
	stress_once(&plain, (*round)++);
}

Test(all_at_once, everything_at_once_every_policy)
{
	int round = 0;
	double deadline = h_now() + (getenv("SYNCSHIM_ALL_AT_ONCE_SECONDS") ? atof(getenv("SYNCSHIM_ALL_AT_ONCE_SECONDS")) : 0);
	do
		stress_pass(&round);
	while (h_now() < deadline);
}

/* ENOSPC from a real (loop-mounted, 16 MiB) ext4 that fills up under defer. */
Test(all_at_once, a_device_that_fills_up)
{
	char *img = h_path("fs.img"), *mnt = (char *)fresh_dir("full");
	char *mk = h_fmt("truncate -s 16M %s && mkfs.ext4 -q -F %s >/dev/null 2>&1 && mount -o loop %s %s", img,
			 img, img, mnt);
	cr_assert_eq(system(mk), 0, "could not make a loop file system: %s", mk);
	/* Leave the writers 1 MiB: they fill it in well under a second on
	 * any machine, where 14 MiB took 3.5 s of a busy one. */
	struct statvfs vfs;
	cr_assert_eq(statvfs(mnt, &vfs), 0);
	long long room = (long long)vfs.f_bavail * (long long)vfs.f_frsize - (1 << 20);
	if (room > 0) {
		char *filler = h_fmt("%s/filler", mnt);
		int fd = open(filler, O_CREAT | O_WRONLY, 0644);
		cr_assert_geq(fd, 0, "%s: %s", filler, strerror(errno));
		cr_assert_eq(posix_fallocate(fd, 0, room), 0, "could not fill %s to 1 MiB short", mnt);
		close(fd);
	}
	/* Independent per-writer files: under ordered defer every record
	 * would wait for the other writers' and the handlers' syncs, and the
	 * device would not fill in the time; order = file is their case. */
	shim_extra = "order = file\n";
	struct stress_run cr = { "defer", mnt, NULL, "GX", true };
	struct h_result r = stress_once(&cr, 100);
	struct writer_out w[16];
	long full = 0;
	for (int t = parse_writers(r.out, w, 16) - 1; t >= 0; t--)
		full += w[t].enospc;
	cr_assert_gt(full, 0, "the device never filled up:\n%s", r.out);
	cr_assert_eq(system(h_fmt("umount -l %s", mnt)), 0);
}
