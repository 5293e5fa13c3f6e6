/*
 * test_order_reload.c - ordered defer across a reload that changes what a
 * file's writes need: a write that overwrites bytes an acknowledged sync
 * promised still waits for that sync to be durable when the file's rule
 * changed under it.
 *
 * While a file's writes are not followed (passthrough: nothing is counted,
 * order_after_write is not called), ordered defer's idea of its bytes goes
 * stale: the highest byte written, the file's known end. knobs_set tells
 * order when that starts (order_writes_uncounted: the known end is lost)
 * and when following starts again under defer (order_starts_deferring:
 * the highest byte and the ends are "not known"). Without either, a write
 * over bytes written in between is taken for one that extends the file and
 * reaches the kernel before the acknowledged sync that promised them: a
 * crash then shows the later write without the acknowledged one.
 *
 * Each run is tests/progs/ord_steps under the shim with the recording layer
 * beneath it; the order is judged from the calls that reached libc. The
 * program stops at a handshake file while the test rewrites the ini and
 * waits for the reload to be applied: the watcher completes pending
 * deferred syncs right after it matched the files again, so the real sync
 * of a probe file left pending says the new rules are in force.
 */
#include "harness.h"

TestSuite(order_reload, .init = h_setup, .fini = h_teardown, .timeout = 120);

static unsigned long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The rules: the file under test (F) with `rule`, and the probe P under
 * defer with a window no run reaches, so only a reload syncs it. */
static void write_ini(const char *ini, const char *dir, const char *rule)
{
	char *aside = h_fmt("%s.new", ini);
	h_write_file(aside, h_fmt("[shim]\npolicy = passthrough\nlive = off\n"
				  "[rule probe]\npath = %s/P\nsync = defer\nmax_delay_ms = 600000\nmax_calls = 1000000\n"
				  "[rule f]\npath = %s/F\n%s",
				  dir, dir, rule));
	cr_assert_eq(rename(aside, ini), 0, "rename %s: %s", aside, strerror(errno));
}

static bool is_real_sync(const struct h_rec *r, unsigned long long ino)
{
	return (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync")) && r->ino == ino && r->ret == 0;
}

/* Until a real sync of the probe begun after `edit` shows (the reload is
 * applied); fails at dl. */
static void wait_for_probe_sync(struct h_cmd *c, unsigned long long probe, unsigned long long edit, double dl,
				const char *rule)
{
	for (bool applied = false; !applied;) {
		cr_assert_lt(h_now(), dl, "the reload to \"%s\" was never applied (no sync of the probe)", rule);
		struct h_log log = h_log_load(c);
		for (size_t i = 0; i < log.n && !applied; i++)
			applied = is_real_sync(&log.r[i], probe) && log.r[i].t0 >= edit;
		if (!applied)
			usleep(5000);
	}
}

/* Wait until `ready` exists (the program is at its handshake), make the
 * edit, wait until the probe's pending sync is made after it (the reload
 * is applied), then let the program go on. */
static void reload_at(struct h_cmd *c, pid_t pid, const char *dir, const char *ini, const char *rule,
		      const char *ready, const char *go)
{
	double dl = h_now() + 30;
	while (access(ready, F_OK) != 0) {
		int st;
		cr_assert(!h_done(pid, &st), "ord_steps ended before %s (status 0x%x):\n%s", ready, st,
			  h_read_file(c->err_path));
		cr_assert_lt(h_now(), dl, "ord_steps never reached %s", ready);
		usleep(2000);
	}
	unsigned long long probe = h_ino(h_fmt("%s/P", dir)), edit = mono_ns();
	write_ini(ini, dir, rule);
	wait_for_probe_sync(c, probe, edit, dl, rule);
	h_write_file(go, "");
}

/* The n-th (from 1) write call to ino at offset off that reached libc. */
static const struct h_rec *nth_write_at(const struct h_log *log, unsigned long long ino, long long off, int n)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct h_rec *r = &log->r[i];
		if ((!strcmp(r->op, "pwrite") || !strcmp(r->op, "pwritev")) && r->ino == ino && r->off == off &&
		    --n == 0)
			return r;
	}
	return NULL;
}

/* A real sync of ino that began at or after `after` and ended by `by`. */
static const struct h_rec *sync_between(const struct h_log *log, unsigned long long ino, unsigned long long after,
					unsigned long long by)
{
	for (size_t i = 0; i < log->n; i++)
		if (is_real_sync(&log->r[i], ino) && log->r[i].t0 >= after && log->r[i].t1 <= by)
			return &log->r[i];
	return NULL;
}

/* ord_steps DIR with `steps` under the ini's first rule for F; at each
 * handshake "+:DIR/readyK", "=:DIR/goK" the next rule of `rules` is put in. */
static struct h_log run_with_reloads(const char *first_rule, const char *const *rules, const char *const *steps,
				     const char *env, unsigned long long *ino)
{
	char *dir = h_path("d"), *ini = h_path("shim.ini");
	cr_assert_eq(mkdir(dir, 0755), 0);
	write_ini(ini, dir, first_rule);
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	if (env)
		h_env(&c, env);
	h_args(&c, h_prog("ord_steps"), dir, NULL);
	for (const char *const *s = steps; *s; s++)
		h_arg(&c, h_fmt(*s, dir));
	pid_t pid = h_spawn(&c);
	for (int k = 0; rules[k]; k++)
		reload_at(&c, pid, dir, ini, rules[k], h_fmt("%s/ready%d", dir, k + 1), h_fmt("%s/go%d", dir, k + 1));
	struct h_result r = h_reap(&c, pid, 60, false, 0);
	h_assert_ok(r, "ord_steps");
	cr_expect_str_empty(r.err, "stderr:\n%s", r.err);
	/* Every handshake met: the program went on under the new rules, not
	 * after its own wait ran out (a "=" step that timed out says ret=-1). */
	for (const char *s = r.out; (s = strstr(s, " = - ")); s++)
		cr_assert(strncmp(strstr(s, "ret="), "ret=0", 5) == 0, "a handshake timed out:\n%s", r.out);
	*ino = h_ino(h_fmt("%s/F", dir));
	return h_log_load(&c);
}

/* passthrough -> defer: F's bytes written under passthrough, then an
 * fsync acknowledged under defer (its real sync left for later), then a
 * write over those bytes. The write must not reach the kernel before a
 * real sync has made the acknowledged bytes durable
 * (order_starts_deferring: until it is called, the highest byte F's
 * writes reached is the 0 of before, and the overwrite looks forward). */
Test(order_reload, a_rule_that_starts_deferring_orders_writes_over_earlier_bytes)
{
	static const char *const rules[] = { "sync = defer\nmax_delay_ms = 600000\nmax_calls = 1000000\n", NULL };
	static const char *const steps[] = { "p:F:0:a", "p:P:0:x", "s:P", "+:%s/ready1", "=:%s/go1",
					     "s:F",	"p:F:0:b", NULL };
	unsigned long long ino;
	struct h_log log = run_with_reloads("sync = passthrough\n", rules, steps, NULL, &ino);
	const struct h_rec *before = nth_write_at(&log, ino, 0, 1), *over = nth_write_at(&log, ino, 0, 2);
	cr_assert(before && over, "the two writes at 0 of F did not both reach libc");
	const struct h_rec *cover = sync_between(&log, ino, before->t1, over->t0);
	cr_assert_not_null(cover, "the write over the bytes an acknowledged fsync promised reached the kernel "
				  "before any real sync of F: a crash could keep it and lose the acknowledged bytes");
}

/* osync = defer -> passthrough -> osync = defer: an O_DSYNC write is
 * acknowledged without the device and F's size learnt; under passthrough
 * F grows unseen; back under osync = defer another O_DSYNC write is
 * acknowledged past it, and a plain write lands on the bytes that grew
 * unseen. It must wait for the acknowledged write to be durable
 * (order_writes_uncounted: until it is called, the known end of F is
 * where it was before passthrough, and the overwrite looks like filling
 * zeros past it). Writes wait rather than being held
 * (SYNCSHIM_TEST_NO_HOLD): waiting, the second O_DSYNC write at 0 is
 * compared with the file, which learns F's size, so the write past it
 * keeps the range it skipped as a hole of zeros; held, nothing is
 * learnt and the stale end is never relied on. */
Test(order_reload, a_rule_that_stops_counting_writes_forgets_the_known_end)
{
	static const char *const rules[] = { "sync = passthrough\nosync = keep\n",
					     "sync = passthrough\nosync = defer\nmax_delay_ms = 600000\nmax_calls = 1000000\n",
					     NULL };
	/* P's deferred fsync first: it starts the flusher threads, without
	 * which an O_DSYNC write is synced inline, not acknowledged early.
	 * (F's writes wait for it; P's request before each handshake is a
	 * new one, left pending for the reload to make.) */
	static const char *const steps[] = { "p:P:0:x",	 "s:P",	       "D:F:0:a",    "D:F:0:a", "p:P:0:y",
					     "s:P",	 "+:%s/ready1", "=:%s/go1",   "p:F:4096:c", "p:P:0:z",
					     "s:P",	 "+:%s/ready2", "=:%s/go2",   "D:F:8192:d", "p:F:4096:e",
					     NULL };
	unsigned long long ino;
	struct h_log log = run_with_reloads(rules[1], rules, steps, "SYNCSHIM_TEST_NO_HOLD=1", &ino);
	const struct h_rec *acked = nth_write_at(&log, ino, 8192, 1), *over = nth_write_at(&log, ino, 4096, 2);
	cr_assert(acked && over, "the acknowledged write at 8192 or the overwrite at 4096 did not reach libc");
	cr_assert_geq(over->t0, acked->t1, "the overwrite reached libc before the write it follows");
	const struct h_rec *cover = sync_between(&log, ino, acked->t1, over->t0);
	cr_assert_not_null(cover, "the write over bytes that grew while F was passthrough reached the kernel before "
				  "any real sync made the acknowledged O_DSYNC write durable");
}

/*
 * An edit made after the shim read the ini at load but before the reload
 * watcher's thread first looks is applied: the watcher's first stamp is
 * the one taken as the load read the file. (It was taken when the thread
 * first ran: such an edit matched it and was never applied.) The watcher
 * is held at its start while the ini is edited; the probe's pending
 * deferred sync, made real by the reload, says it was applied.
 */
Test(order_reload, an_edit_before_the_watcher_first_looks_is_applied)
{
	char *dir = h_path("d"), *ini = h_path("shim.ini"), *hold = h_path("hold");
	cr_assert_eq(mkdir(dir, 0755), 0);
	write_ini(ini, dir, "sync = defer\nmax_delay_ms = 600000\nmax_calls = 1000000\n");
	struct h_cmd c;
	h_cmd_init(&c, H_SHIM_REC);
	h_envf(&c, "SYNCSHIM_CONFIG=%s", ini);
	h_env(&c, "SYNCSHIM_TEST_HOLD_AT=reload_watcher_starts");
	h_envf(&c, "SYNCSHIM_TEST_HOLD_FILE=%s", hold);
	h_args(&c, h_prog("ord_steps"), dir, "p:P:0:x", "s:P", h_fmt("=:%s/go", dir), NULL);
	pid_t pid = h_spawn(&c);
	double dl = h_now() + 30;
	char *reached = h_fmt("%s.reached", hold);
	while (access(reached, F_OK) != 0) {
		int st;
		cr_assert(!h_done(pid, &st), "ord_steps ended before the watcher started (status 0x%x):\n%s", st,
			  h_read_file(c.err_path));
		cr_assert_lt(h_now(), dl, "the reload watcher never started");
		usleep(2000);
	}
	unsigned long long probe = h_ino(h_fmt("%s/P", dir)), edit = mono_ns();
	write_ini(ini, dir, "sync = passthrough\n");
	h_write_file(hold, "");
	wait_for_probe_sync(&c, probe, edit, dl, "sync = passthrough");
	h_write_file(h_fmt("%s/go", dir), "");
	struct h_result r = h_reap(&c, pid, 60, false, 0);
	h_assert_ok(r, "ord_steps");
	/* The sync came while the program waited, not from its exit after
	 * its wait ran out (a "=" step that timed out says ret=-1). */
	const char *wait = strstr(r.out, " = - ");
	cr_assert(wait && strncmp(strstr(wait, "ret="), "ret=0", 5) == 0,
		  "the edit was not applied while the program ran (only its exit synced the probe):\n%s", r.out);
}
