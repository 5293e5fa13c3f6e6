/*
 * test_held.c - ordered defer without the wait (shim/defer/held.c): a write
 * that must come after another file's acknowledged sync (or after its own
 * file's, for an overwrite of promised bytes) is held by the shim and
 * applied later, in order, instead of making the writer wait.
 *
 * Verified from outside, as test_order.c does: tests/progs/ord_steps runs a
 * script under the shim with the recording layer (tests/lib/reclayer.so)
 * beneath it, whose log holds every write and sync the shim really made,
 * with their times. RECLAYER_SLOW makes every real sync take a while, so a
 * held write stays held long enough for the script to look at it: the
 * writer returning before the sync it depends on ended is the proof that
 * it did not wait; the write reaching the kernel after that sync ended is
 * the proof that the order was kept. Each test also counts the writes the
 * shim held (SYNCSHIM_TEST_ORDER_STATS), so none passes with holding off.
 *
 * Run one with
 *   SYNCSHIM_BUILD=$PWD/build build/tests/test_held --filter 'held/pread*' --verbose
 */
#include "harness.h"

struct run {
	struct h_log log;
	char *out, *err;
	char *dir;
	char *stats;
	int code;
};

/* How long every real sync takes in these runs: long enough that the steps
 * after a held write run while it is held. */
#define SLOW_SYNC "RECLAYER_SLOW=0:700"

static char *data_dir(void)
{
	char *d = h_path(h_fmt("d%d", h_ctx.seq + 1));
	mkdir(d, 0755);
	return d;
}

/* ord_steps DIR STEPS... under defer for DIR/ *, with extra environment
 * (NULL-terminated list). */
static struct run held_run_env(const char *const *env, const char *const *script, bool may_fail)
{
	char *dir = data_dir();
	char *ini = h_path(h_fmt("held.%d.ini", h_ctx.seq + 1));
	char *stats = h_path(h_fmt("stats.%d", h_ctx.seq + 1));
	/* .scratch (copy_file_range's target) keeps no cross-file order:
	 * what that test reads must be the read's doing, not a wait's. */
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule scratch]\npath = %s/.scratch\nsync = defer\n"
				"order = file\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 1G\n",
				dir, dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_TEST_ORDER_STATS=%s", stats);
	for (const char *const *e = env; e && *e; e++)
		h_env(&c, *e);
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = script; *s; s++)
		h_arg(&c, *s);
	struct h_result r = h_run(&c);
	if (!may_fail)
		h_assert_ok(r, "ord_steps");
	return (struct run){ h_log_load(&c), r.out, r.err, dir, stats, r.code };
}

static struct run held_run(const char *const *script)
{
	static const char *const env[] = { SLOW_SYNC, NULL };
	return held_run_env(env, script, false);
}

/* The writes the shim held, over every process of the run. */
static long long held_count(const struct run *run)
{
	char *text = h_read_file(run->stats);
	long long n = 0;
	for (const char *p = text; p && (p = strstr(p, " held=")); p++)
		n += strtoll(p + 6, NULL, 10);
	return n;
}

static unsigned long long ino_of(const struct run *run, const char *name)
{
	return h_ino(h_fmt("%s/%s", run->dir, name));
}

/* Field which ("t0", "t1", "ret") of step i as ord_steps printed it. */
static long long step_field(const struct run *run, int i, const char *which)
{
	char *key = h_fmt("step %d ", i);
	const char *line = strstr(run->out, key);
	cr_assert_not_null(line, "no step %d in:\n%s", i, run->out);
	const char *v = strstr(line, h_fmt(" %s=", which));
	cr_assert_not_null(v);
	return strtoll(v + strlen(which) + 2, NULL, 10);
}

static bool is_write(const struct h_rec *r)
{
	return !strcmp(r->op, "write") || !strcmp(r->op, "pwrite") || !strcmp(r->op, "writev") ||
	       !strcmp(r->op, "pwritev");
}

static bool is_sync(const struct h_rec *r)
{
	return !strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync");
}

/* The nth (from 0) write of ino that reached the kernel, by start time. */
static const struct h_rec *nth_write(const struct run *run, unsigned long long ino, int nth)
{
	const struct h_rec *best[64];
	int n = 0;
	for (size_t i = 0; i < run->log.n && n < 64; i++)
		if (run->log.r[i].ino == ino && is_write(&run->log.r[i]))
			best[n++] = &run->log.r[i];
	for (int i = 0; i < n; i++)
		for (int j = i; j > 0 && best[j]->t0 < best[j - 1]->t0; j--) {
			const struct h_rec *t = best[j];
			best[j] = best[j - 1];
			best[j - 1] = t;
		}
	cr_assert_lt(nth, n, "want write #%d of inode %llu, the log has %d", nth, ino, n);
	return best[nth];
}

/* The first successful real sync of ino that began at or after from. */
static const struct h_rec *sync_after(const struct run *run, unsigned long long ino, unsigned long long from)
{
	const struct h_rec *best = NULL;
	for (size_t i = 0; i < run->log.n; i++) {
		const struct h_rec *r = &run->log.r[i];
		if (r->ino == ino && is_sync(r) && r->ret == 0 && r->t0 >= from && (!best || r->t0 < best->t0))
			best = r;
	}
	return best;
}

static unsigned char byte_at(const struct run *run, const char *name, off_t off)
{
	unsigned char b = 0;
	int fd = open(h_fmt("%s/%s", run->dir, name), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, off), 1, "%s has no byte at %lld", name, (long long)off);
	close(fd);
	return b;
}

TestSuite(held, .init = h_setup, .fini = h_teardown, .timeout = 90);

/*
 * B's sync acknowledged, then A written: A's write must reach the kernel
 * after B is durable. Held: the writer returns before B's sync ends, and
 * A's bytes reach the kernel after it. The control waits (SYNCSHIM_TEST_NO_HOLD).
 */
static const char *const after_other[] = { "a:B", "s:B", "p:A:0:Z", NULL };

Test(held, a_write_after_another_files_ack_is_held_not_waited_for)
{
	struct run run = held_run(after_other);
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	cr_assert_geq(held_count(&run), 1, "nothing was held:\n%s", h_read_file(run.stats));
	const struct h_rec *sb = sync_after(&run, b, (unsigned long long)step_field(&run, 1, "t0"));
	cr_assert_not_null(sb, "B's acknowledged sync was never made real");
	const struct h_rec *wa = nth_write(&run, a, 0);
	cr_assert_geq(wa->t0, sb->t1, "A's write reached the kernel (t0=%llu) before B was durable (t1=%llu)", wa->t0,
		      sb->t1);
	cr_assert_lt((unsigned long long)step_field(&run, 2, "t1"), sb->t1,
		     "the writer of A waited for B's sync to end: not held");
	cr_assert_eq(byte_at(&run, "A", 0), 'Z');

	/* The control: the same under the wait returns only after B's sync. */
	static const char *const nohold[] = { SLOW_SYNC, "SYNCSHIM_TEST_NO_HOLD=1", NULL };
	struct run w = held_run_env(nohold, after_other, false);
	const struct h_rec *sb2 = sync_after(&w, ino_of(&w, "B"), (unsigned long long)step_field(&w, 1, "t0"));
	cr_assert_not_null(sb2);
	cr_assert_geq((unsigned long long)step_field(&w, 2, "t1"), sb2->t1, "control: the waiting writer did not wait");
	cr_assert_eq(held_count(&w), 0, "control: held with holding off");
}

/*
 * MariaDB's commit in miniature: B acknowledged, A written (held), A
 * acknowledged, B written again (held behind A's acknowledgement). The
 * kernel sees B synced, A written, A synced, B written: each change after
 * what it depends on is durable, though the program never waited.
 */
static const char *const chain[] = { "a:B", "s:B", "p:A:0:Z", "s:A", "p:B:4096:Y", NULL };

Test(held, a_chain_of_files_reaches_the_kernel_in_order)
{
	struct run run = held_run(chain);
	unsigned long long a = ino_of(&run, "A"), b = ino_of(&run, "B");
	cr_assert_geq(held_count(&run), 2, "both writes after an acknowledgement are held:\n%s",
		      h_read_file(run.stats));
	const struct h_rec *sb = sync_after(&run, b, (unsigned long long)step_field(&run, 1, "t0"));
	const struct h_rec *wa = nth_write(&run, a, 0);
	cr_assert_not_null(sb);
	cr_assert_geq(wa->t0, sb->t1, "A before B was durable");
	const struct h_rec *sa = sync_after(&run, a, wa->t1);
	cr_assert_not_null(sa, "no real sync of A after its held write was applied");
	const struct h_rec *wb = nth_write(&run, b, 1);
	cr_assert_eq(wb->off, 4096);
	cr_assert_geq(wb->t0, sa->t1, "B's second write (t0=%llu) reached the kernel before A was durable (t1=%llu)",
		      wb->t0, sa->t1);
	cr_assert_lt((unsigned long long)step_field(&run, 4, "t1"), sa->t1, "the last writer waited: not held");
	cr_assert_eq(byte_at(&run, "A", 0), 'Z');
	cr_assert_eq(byte_at(&run, "B", 4096), 'Y');
}

/* An overwrite of bytes the file's own acknowledged sync promised. */
static const char *const own_overwrite[] = { "a:A", "s:A", "p:A:0:Q", NULL };

Test(held, an_overwrite_of_its_own_acknowledged_bytes_is_held)
{
	struct run run = held_run(own_overwrite);
	unsigned long long a = ino_of(&run, "A");
	cr_assert_geq(held_count(&run), 1);
	const struct h_rec *sa = sync_after(&run, a, (unsigned long long)step_field(&run, 1, "t0"));
	cr_assert_not_null(sa);
	const struct h_rec *over = nth_write(&run, a, 1);
	cr_assert_eq(over->off, 0);
	cr_assert_geq(over->t0, sa->t1, "the overwrite reached the kernel before the bytes it replaces were durable");
	cr_assert_lt((unsigned long long)step_field(&run, 2, "t1"), sa->t1, "the writer waited: not held");
	cr_assert_eq(byte_at(&run, "A", 0), 'Q');
}

/*
 * A file that holds a change (B's append, behind A's acknowledgement)
 * and is written again over bytes its own acknowledged sync promised
 * (B's first 4 KiB, acknowledged after they reached the kernel): the
 * overwrite waits for that sync of B too, not only for the held change
 * it is queued behind (A's sync does not make B durable).
 */
static const char *const held_then_own_overwrite[] = { "a:B", "a:A", "s:A", "s:B", "a:B", "p:B:0:Z", NULL };

Test(held, an_overwrite_behind_its_files_held_write_still_waits_for_its_own_promise)
{
	struct run run = held_run(held_then_own_overwrite);
	unsigned long long b = ino_of(&run, "B");
	cr_assert_geq(held_count(&run), 2, "the append and the overwrite of B are held:\n%s", h_read_file(run.stats));
	const struct h_rec *sb = sync_after(&run, b, (unsigned long long)step_field(&run, 3, "t0"));
	cr_assert_not_null(sb, "B's acknowledged sync was never made real");
	const struct h_rec *over = nth_write(&run, b, 2);
	cr_assert_eq(over->off, 0, "B's third write is the overwrite");
	cr_assert_geq(over->t0, sb->t1,
		      "B's overwrite (t0=%llu) reached the kernel before B's acknowledged bytes were durable (t1=%llu)",
		      over->t0, sb->t1);
	cr_assert_eq(byte_at(&run, "B", 0), 'Z');
}

/* Writes behind a held one are held behind it: the kernel sees them in
 * the order they were made, so the later one's bytes are the file's. */
static const char *const behind[] = { "a:B", "s:B", "p:A:0:Z", "p:A:0:Y", "p:A:4096:X", NULL };

Test(held, writes_behind_a_held_one_keep_their_order)
{
	struct run run = held_run(behind);
	unsigned long long a = ino_of(&run, "A");
	cr_assert_geq(held_count(&run), 3);
	const struct h_rec *z = nth_write(&run, a, 0), *y = nth_write(&run, a, 1);
	cr_assert_eq(z->off, 0);
	cr_assert_eq(y->off, 0);
	cr_assert_geq(y->t0, z->t1, "the later write at 0 reached the kernel before the earlier one");
	cr_assert_eq(byte_at(&run, "A", 0), 'Y', "the earlier write's bytes won");
	cr_assert_eq(byte_at(&run, "A", 4096), 'X');
}

/* A write with nothing of its own to wait for, behind a held write of
 * its file, is held behind it too: it neither passes it nor waits for it
 * (the overwrite of A's own promised bytes is held; the forward write
 * after it needs nothing but its place in the line). */
static const char *const forward_behind_held[] = { "a:A", "s:A", "p:A:0:Q", "p:A:8192:X", NULL };

Test(held, a_forward_write_behind_a_held_one_is_held_not_waited_for)
{
	struct run run = held_run(forward_behind_held);
	unsigned long long a = ino_of(&run, "A");
	const struct h_rec *sa = sync_after(&run, a, (unsigned long long)step_field(&run, 1, "t0"));
	cr_assert_not_null(sa, "A's acknowledged sync was never made real");
	const struct h_rec *q = nth_write(&run, a, 1), *x = nth_write(&run, a, 2);
	cr_assert_eq(q->off, 0);
	cr_assert_eq(x->off, 8192, "the forward write passed the held one");
	cr_assert_geq(x->t0, q->t1);
	cr_assert_lt((unsigned long long)step_field(&run, 3, "t1"), sa->t1,
		     "the forward write waited for the held one's sync: not held behind it");
	cr_assert_eq(byte_at(&run, "A", 0), 'Q');
	cr_assert_eq(byte_at(&run, "A", 8192), 'X');
}

/*
 * A real sync of a file covers no request that promises a write of it
 * still held. A is acknowledged; a write of A is held behind .scratch's
 * slow sync (order = file: its own writes wait for nothing, so nothing
 * syncs A early), and A is acknowledged again. C's write, with two files
 * to wait for, has A synced up to what it can cover; counted as covering
 * the second acknowledgement, C's write would pass the held one.
 */
static const char *const sync_covers_held[] = { "a:A",         "s:A", "a:.scratch", "s:.scratch",
						"p:A:4096:Z", "s:A", "p:C:0:Y",    NULL };

Test(held, a_sync_does_not_cover_a_request_whose_write_is_still_held)
{
	struct run run = held_run(sync_covers_held);
	unsigned long long a = ino_of(&run, "A"), c = ino_of(&run, "C");
	const struct h_rec *z = nth_write(&run, a, 1);
	cr_assert_not_null(z);
	cr_assert_eq(z->off, 4096);
	const struct h_rec *sa = sync_after(&run, a, z->t1);
	cr_assert_not_null(sa, "no real sync of A after its held write reached the kernel");
	const struct h_rec *y = nth_write(&run, c, 0);
	cr_assert_geq(y->t0, sa->t1, "C's write (t0=%llu) reached the kernel before A's held write was durable (t1=%llu)",
		      y->t0, sa->t1);
	cr_assert_eq(byte_at(&run, "C", 0), 'Y');
}

/*
 * Reading what it wrote. Each read of A runs while A's write is held (B's
 * sync is slow); it must return the held bytes. Positioned reads lay them
 * over the kernel's bytes (the read returns before A's write reaches the
 * kernel: it was served from what is held); everything else has A's held
 * writes applied first (the read returns after).
 */
enum served { OVERLAY, APPLIED_FIRST };

static void reads_what_it_wrote(const char *step, long long want, enum served how)
{
	const char *script[] = { "a:B", "s:B", "p:A:0:Z", step, NULL };
	struct run run = held_run(script);
	cr_assert_geq(held_count(&run), 1, "nothing was held:\n%s", h_read_file(run.stats));
	cr_assert_eq(step_field(&run, 3, "ret"), want, "%s read %lld, the program wrote %lld:\n%s", step,
		     step_field(&run, 3, "ret"), want, run.out);
	const struct h_rec *wa = nth_write(&run, ino_of(&run, "A"), 0);
	if (how == OVERLAY)
		cr_assert_lt((unsigned long long)step_field(&run, 3, "t1"), wa->t0,
			     "%s returned after A's write was applied: not served from what is held", step);
	else
		cr_assert_leq(wa->t1, (unsigned long long)step_field(&run, 3, "t1"),
			      "%s returned before A's write was applied", step);
}

Test(held, pread_sees_the_held_write)
{
	reads_what_it_wrote("P:A:0", 'Z', OVERLAY);
}

Test(held, preadv_sees_the_held_write)
{
	reads_what_it_wrote("V:A:4095", 'Z', OVERLAY);
}

Test(held, fstat_counts_the_held_write_in_the_size)
{
	reads_what_it_wrote("F:A", 4096, OVERLAY);
}

Test(held, read_at_the_position_sees_the_held_write)
{
	reads_what_it_wrote("G:A:10", 'Z', APPLIED_FIRST);
}

Test(held, a_mapping_sees_the_held_write)
{
	reads_what_it_wrote("M:A:100", 'Z', APPLIED_FIRST);
}

Test(held, lseek_to_the_end_sees_the_held_write)
{
	reads_what_it_wrote("E:A", 4096, APPLIED_FIRST);
}

Test(held, stat_by_name_sees_the_held_write)
{
	reads_what_it_wrote("Q:A", 4096, APPLIED_FIRST);
}

Test(held, sendfile_from_the_file_sees_the_held_write)
{
	reads_what_it_wrote("Y:A:7", 'Z', APPLIED_FIRST);
}

Test(held, copy_file_range_from_the_file_sees_the_held_write)
{
	reads_what_it_wrote("C:A:9", 'Z', APPLIED_FIRST);
}

/* A read submitted through an io_uring ring (the kernel reads it, unseen
 * by the shim after the submission): the held write is applied first, and
 * holding goes on after the ring exists. */
Test(held, an_io_uring_read_sees_the_held_write)
{
	reads_what_it_wrote("h:A:11", 'Z', APPLIED_FIRST);
}

/* The same through libaio. */
Test(held, a_libaio_read_sees_the_held_write)
{
	reads_what_it_wrote("k:A:12", 'Z', APPLIED_FIRST);
}

/* A fork child reads the parent's files in the kernel: the fork applies
 * everything first; from then on the parent holds nothing (its memory is
 * not the child's), and the child is no process to hold in either. */
Test(held, a_fork_child_sees_the_held_write_and_nothing_is_held_after)
{
	const char *script[] = { "a:B", "s:B", "p:A:0:Z", "K:A:0", "s:A", "p:B:8192:W", NULL };
	struct run run = held_run(script);
	cr_assert_eq(step_field(&run, 3, "ret"), 'Z', "the fork child read %lld:\n%s", step_field(&run, 3, "ret"),
		     run.out);
	cr_assert_eq(held_count(&run), 1, "after the fork a write was held again:\n%s", h_read_file(run.stats));
	const struct h_rec *wa = nth_write(&run, ino_of(&run, "A"), 0);
	cr_assert_leq(wa->t1, (unsigned long long)step_field(&run, 3, "t1"));
	/* ... and the write after the fork waited, as before held changes */
	const struct h_rec *sa = sync_after(&run, ino_of(&run, "A"), (unsigned long long)step_field(&run, 4, "t0"));
	cr_assert_not_null(sa);
	cr_assert_geq((unsigned long long)step_field(&run, 5, "t1"), sa->t1);
}

/*
 * A signal handler that lands while its thread waits for held writes (a
 * stat by name applies A's held write, which waits for B's acknowledged
 * sync) and writes C: an ordinary caller, so C's bytes reach the kernel
 * after B is durable. The shim raises SIGUSR1 inside that wait
 * (SYNCSHIM_TEST_SIGNAL_AT=held_wait). When the wait was a shim section,
 * the handler's write went straight to the kernel, ahead of B's sync.
 */
Test(held, a_handler_while_its_thread_waits_for_held_writes_keeps_the_order)
{
	static const char *const script[] = { "a:B", "s:B", "p:A:0:Z", "H:C:4096:Y", "Q:A", NULL };
	static const char *const env[] = { SLOW_SYNC, "SYNCSHIM_TEST_SIGNAL_AT=held_wait", NULL };
	struct run run = held_run_env(env, script, false);
	cr_assert(h_has(run.out, "handler=1"), "the handler never ran (or its write failed):\n%s", run.out);
	cr_assert_eq(step_field(&run, 4, "ret"), 4096, "stat by name did not see the held write:\n%s", run.out);
	const struct h_rec *sb = sync_after(&run, ino_of(&run, "B"), (unsigned long long)step_field(&run, 1, "t0"));
	cr_assert_not_null(sb, "B's acknowledged sync was never made real");
	const struct h_rec *wc = nth_write(&run, ino_of(&run, "C"), 0);
	cr_assert_eq(wc->off, 4096, "C's only write is the handler's");
	cr_assert_geq(wc->t0, sb->t1, "the handler's write of C (t0=%llu) reached the kernel before B was durable (t1=%llu)",
		      wc->t0, sb->t1);
	cr_assert_eq(byte_at(&run, "C", 4096), 'Y');
}

/*
 * Two writes at one description's position at once, the second from a
 * signal handler that lands inside the first one's call before the shim
 * has placed it (SYNCSHIM_TEST_SIGNAL_AT=held_position: the first write is
 * about to be held behind B's acknowledged sync). Without the shim the
 * kernel gives each write its own bytes: the handler's Y at 0, then Z at
 * 4096, then Q at 8192. The shim read Z's offset (0) from its mark before
 * the handler moved the position; when it held Z at 0 and set the position
 * to 4096, the applier wrote Z over Y and Q went over Z. Z must take its
 * room from the kernel's position instead.
 */
Test(held, a_write_at_the_position_raced_by_another_keeps_both)
{
	static const char *const script[] = { "a:B", "s:B", "H:A:-:Y", "W:A:Z", "W:A:Q", "F:A", NULL };
	static const char *const env[] = { SLOW_SYNC, "SYNCSHIM_TEST_SIGNAL_AT=held_position", NULL };
	struct run run = held_run_env(env, script, false);
	cr_assert(h_has(run.out, "handler=1"), "the handler never ran (or its write failed):\n%s", run.out);
	cr_assert_geq(held_count(&run), 1, "Z was not held:\n%s", h_read_file(run.stats));
	cr_assert(h_has(h_read_file(run.stats), "position_moved=1"), "the shim did not see the position move:\n%s",
		  h_read_file(run.stats));
	cr_assert_eq(step_field(&run, 5, "ret"), 3 * 4096, "fstat's size:\n%s", run.out);
	cr_assert_eq(byte_at(&run, "A", 0), 'Y', "the handler's write was lost");
	cr_assert_eq(byte_at(&run, "A", 4096), 'Z', "the held write did not land past the handler's");
	cr_assert_eq(byte_at(&run, "A", 8192), 'Q', "the next write at the position did not land past both");
	/* The kernel saw each at its own offset (the recording layer). */
	unsigned long long a = ino_of(&run, "A");
	cr_assert_eq(nth_write(&run, a, 0)->off, 0);
	cr_assert_eq(nth_write(&run, a, 1)->off, 4096);
}

/*
 * Only the applier thread writes held changes to the kernel: a reader that
 * needs them (here a stat by name) wakes it and sleeps, so no read, sync
 * or write of the program runs the apply (the flusher's lease, a reopened
 * descriptor, a failure made the file's error). The applier is stopped at
 * a test hold before its first pass, and a helper of the test's lets it go
 * 300 ms after it got there: the stat returns only after that, with the
 * write made by the applier. When a reader applied for itself whenever the
 * thread was not at it, the stat applied A at once from the program's own
 * thread (B's sync takes 30 ms here). The 300 ms only gives that old
 * behaviour room to show; the test's pass never depends on it.
 */
Test(held, only_the_applier_thread_applies_held_writes)
{
	char *hold = h_path("hold");
	pid_t helper = fork();
	cr_assert_geq(helper, 0);
	if (helper == 0) {
		char *reached = h_fmt("%s.reached", hold);
		for (int i = 0; i < 20000 && access(reached, F_OK) != 0; i++)
			usleep(1000);
		usleep(300 * 1000);
		int fd = open(hold, O_WRONLY | O_CREAT, 0600);
		_exit(fd < 0);
	}
	const char *env[] = { "RECLAYER_SLOW=0:30", "SYNCSHIM_TEST_HOLD_AT=applier_pass",
			      h_fmt("SYNCSHIM_TEST_HOLD_FILE=%s", hold), NULL };
	static const char *const script[] = { "a:B", "s:B", "p:A:0:Z", "Q:A", NULL };
	struct run run = held_run_env(env, script, false);
	int st = 0;
	cr_assert(h_wait(helper, 30, &st) && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the test's helper failed");
	cr_assert_geq(held_count(&run), 1, "A's write was not held:\n%s", h_read_file(run.stats));
	const struct h_rec *wa = nth_write(&run, ino_of(&run, "A"), 0);
	cr_assert_neq(wa->tid, wa->pid, "A's held write was applied by the program's own thread, not the applier");
	cr_assert_geq((unsigned long long)step_field(&run, 3, "t1"), wa->t1,
		      "the stat returned before the held write reached the kernel");
	cr_assert_eq(step_field(&run, 3, "ret"), 4096, "stat by name did not see the held write:\n%s", run.out);
	cr_assert(access(h_fmt("%s.left", hold), F_OK) == 0, "the applier thread never passed its hold");
}

/* The process ends with the write held: its exit applies it. */
Test(held, exit_applies_what_is_held)
{
	struct run run = held_run(after_other);
	cr_assert_geq(held_count(&run), 1);
	const struct h_rec *wa = nth_write(&run, ino_of(&run, "A"), 0);
	cr_assert_gt(wa->t0, (unsigned long long)step_field(&run, 2, "t1"), "not held until the exit");
	cr_assert_eq(byte_at(&run, "A", 0), 'Z', "the held write was lost at exit");
}

/* The same with the applier thread stopped before it could apply
 * anything (a test hold): the exit applies the held write itself. */
Test(held, exit_applies_what_is_held_without_the_applier_thread)
{
	char *hold = h_path("hold");
	const char *env[] = { SLOW_SYNC, "SYNCSHIM_TEST_HOLD_AT=applier_pass", h_fmt("SYNCSHIM_TEST_HOLD_FILE=%s", hold),
			      NULL };
	struct run run = held_run_env(env, after_other, false);
	cr_assert_geq(held_count(&run), 1);
	cr_assert(access(h_fmt("%s.reached", hold), F_OK) == 0 && access(h_fmt("%s.left", hold), F_OK) != 0,
		  "the applier thread was not stopped before its pass");
	cr_assert_eq(byte_at(&run, "A", 0), 'Z', "the held write was lost at exit");
}

/*
 * A held write that fails when applied (the device is full): the file's
 * sticky error, reported by its next fsync, never invented for another
 * file and never lost. lseek to the end applies it first, so the fsync
 * after it sees the failure.
 */
Test(held, a_held_write_that_fails_when_applied_is_the_files_error)
{
	static const char *const env[] = { SLOW_SYNC, "RECLAYER_FAIL=pwrite:ENOSPC:0:1", "RECLAYER_FAIL_SUFFIX=/A",
					   NULL };
	static const char *const script[] = { "a:B", "s:B", "p:A:0:Z", "E:A", "S:A", "S:B", NULL };
	struct run run = held_run_env(env, script, false);
	cr_assert_geq(held_count(&run), 1);
	const struct h_rec *failed = NULL;
	for (size_t i = 0; i < run.log.n; i++)
		if (run.log.r[i].injected)
			failed = &run.log.r[i];
	cr_assert_not_null(failed, "the held write's apply never failed:\n%s", run.out);
	cr_assert_eq(step_field(&run, 2, "ret"), 4096, "the write itself was told of a failure it had not had");
	cr_assert(h_has(run.out, "step 4 S A ") && strstr(strstr(run.out, "step 4 S A "), "err=ENOSPC"),
		  "A's next fsync did not report its held write's failure:\n%s", run.out);
	cr_assert(strstr(strstr(run.out, "step 5 S B "), "ret=0 err=0"), "B was given A's error:\n%s", run.out);
}

/* A write the descriptor could not make (read-only) is not held: it fails
 * as it would have, EBADF, and the file is untouched. */
Test(held, a_write_through_a_read_only_descriptor_fails_as_before)
{
	static const char *const script[] = { "a:B", "s:B", "O:A", "q:A:0:Z", NULL };
	struct run run = held_run(script);
	cr_assert(strstr(strstr(run.out, "step 3 q A "), "ret=-1 err=EBADF"),
		  "a write through a read-only descriptor did not fail with EBADF:\n%s", run.out);
	cr_assert_eq(held_count(&run), 0);
	cr_assert_eq(h_size(h_fmt("%s/A", run.dir)), 0);
}

/* ord_steps under defer with max_bytes = 8192: two 4 KiB held writes fill
 * it, a third meets the bound. */
static struct run bound_run(const char *const *script)
{
	char *dir = data_dir();
	char *ini = h_path("bound.ini");
	char *stats = h_path("bound.stats");
	h_write_file(ini, h_fmt("[shim]\npolicy = passthrough\n[rule data]\npath = %s/*\nsync = defer\n"
				"max_delay_ms = 10000\nmax_calls = 1000000\nmax_bytes = 8192\n",
				dir));
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_envf(&c, "SYNCSHIM_TEST_ORDER_STATS=%s", stats);
	h_env(&c, SLOW_SYNC);
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *st = script; *st; st++)
		h_arg(&c, *st);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "ord_steps");
	return (struct run){ h_log_load(&c), r.out, r.err, dir, stats, r.code };
}

/* Held bytes count toward max_bytes: past it the writer waits as before. */
Test(held, past_max_bytes_the_writer_waits)
{
	static const char *const script[] = { "a:B", "s:B", "p:A:0:Z", "p:A:4096:Y", "p:A:8192:X", NULL };
	struct run run = bound_run(script);
	cr_assert_eq(held_count(&run), 2, "held more than max_bytes allows:\n%s", h_read_file(run.stats));
	cr_assert(h_has(h_read_file(run.stats), "bound_waits=1"), "%s", h_read_file(run.stats));
	const struct h_rec *x = nth_write(&run, ino_of(&run, "A"), 2);
	cr_assert_eq(x->off, 8192);
	cr_assert_leq(x->t1, (unsigned long long)step_field(&run, 4, "t1"), "the write past the bound was held");
	cr_assert_eq(byte_at(&run, "A", 8192), 'X');
}

/* The same bound met by writes at the position: the third took its room
 * in the kernel's position before the hold was refused, so it is made
 * at that room (pwrite), and the position is where write() would have
 * left it: the fourth write lands after it. */
Test(held, past_max_bytes_a_write_at_the_position_lands_at_its_room)
{
	static const char *const script[] = { "a:B", "s:B", "W:A:Z", "W:A:Y", "W:A:X", "W:A:Q", "F:A", NULL };
	struct run run = bound_run(script);
	cr_assert_geq(held_count(&run), 2, "%s", h_read_file(run.stats));
	cr_assert(h_has(h_read_file(run.stats), "bound_waits=1"), "the third write did not meet the bound:\n%s",
		  h_read_file(run.stats));
	const struct h_rec *x = nth_write(&run, ino_of(&run, "A"), 2);
	cr_assert_eq(x->off, 8192, "the write past the bound reached the kernel at %lld", x->off);
	cr_assert_leq(x->t1, (unsigned long long)step_field(&run, 4, "t1"), "the write past the bound was held");
	cr_assert_eq(step_field(&run, 6, "ret"), 4 * 4096, "fstat's size:\n%s", run.out);
	cr_assert_eq(byte_at(&run, "A", 0), 'Z');
	cr_assert_eq(byte_at(&run, "A", 4096), 'Y');
	cr_assert_eq(byte_at(&run, "A", 8192), 'X');
	cr_assert_eq(byte_at(&run, "A", 12288), 'Q');
}
