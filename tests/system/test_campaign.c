/*
 * test_campaign.c - the power-cut campaigns' own checkers
 * (tools/scripts/crash_campaign.sh). A campaign is only as good as the
 * check that judges each cut: one blind to a reordered state would pass
 * whatever the shim did. So each test makes a state with the real
 * program (examples/twolog), breaks it the way a reorder or a torn write
 * would, and expects twolog_check to reject it, naming the rule; the
 * intact state must pass. No shim is involved: these are tests of the
 * checker itself.
 */
#include "harness.h"

TestSuite(campaign, .init = h_setup, .fini = h_teardown, .timeout = 60);

#define RECORD 128 /* twolog's -s */

static char *ex(const char *name)
{
	return h_fmt("%s/examples/%s", h_ctx.build, name);
}

/* A fresh twolog directory with n transactions, each in both logs. */
static char *twolog_state(const char *name, int n)
{
	char *dir = h_path(name);
	h_assert_ok(h_sh(h_fmt("rm -rf '%s' && '%s' -d '%s' -n %d -s %d -k", dir, ex("twolog"), dir, n, RECORD), 30),
		    "twolog");
	return dir;
}

static void keep_records(const char *dir, const char *log, int n)
{
	char *path = h_fmt("%s/%s", dir, log);
	cr_assert_eq(truncate(path, (off_t)n * RECORD), 0, "truncate %s: %s", path, strerror(errno));
}

static struct h_result check(const char *dir, const char *options)
{
	struct h_result r = h_sh(h_fmt("'%s' -d '%s' %s", ex("twolog_check"), dir, options), 30);
	cr_assert(!r.timed_out, "twolog_check timed out");
	return r;
}

static void expect_broken(struct h_result r, const char *rule)
{
	cr_expect_eq(r.code, 1, "exit %d, not 1:\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.out, "result: integrity=failed"), "not judged broken:\n%s", r.out);
	cr_expect(h_has(r.out, rule), "does not say \"%s\":\n%s", rule, r.out);
}

Test(campaign, twolog_check_passes_the_state_twolog_leaves)
{
	char *dir = twolog_state("tl", 10);
	struct h_result r = check(dir, "");
	cr_expect_eq(r.code, 0, "exit %d:\n%s%s", r.code, r.out, r.err);
	cr_expect(h_has(r.out, "integrity=ok a_records=10 b_records=10 acked=10 lost=0"), "%s", r.out);
	/* A one ahead of B: a cut between A's sync and B's, nothing acknowledged lost */
	keep_records(dir, "b.log", 9);
	h_write_file(h_fmt("%s/acks", dir), "acked 0 1 1\n");
	r = check(dir, "");
	cr_expect_eq(r.code, 0, "A one ahead of B: exit %d:\n%s", r.code, r.out);
	cr_expect(h_has(r.out, "integrity=ok a_records=10 b_records=9"), "%s", r.out);
}

/* The campaign's reason to exist: B's write reached the disk before A's
 * acknowledged sync did. */
Test(campaign, twolog_check_rejects_b_holding_what_a_lacks)
{
	char *dir = twolog_state("tl", 10);
	keep_records(dir, "a.log", 5);
	expect_broken(check(dir, "-w 1000000"), "B holds records 5..9 that A lacks");
}

/* A's record 4 was written after B's sync of record 3 returned: A cannot
 * keep 4 when B lost 3. */
Test(campaign, twolog_check_rejects_a_ahead_of_an_acknowledged_sync_of_b)
{
	char *dir = twolog_state("tl", 10);
	keep_records(dir, "b.log", 3);
	expect_broken(check(dir, "-w 1000000"), "A holds record 4, written after B's sync of record 3 was acknowledged");
}

Test(campaign, twolog_check_rejects_a_torn_record)
{
	char *dir = twolog_state("tl", 10);
	keep_records(dir, "b.log", 8);
	cr_assert_eq(truncate(h_fmt("%s/b.log", dir), 8 * RECORD + 40), 0);
	expect_broken(check(dir, "-w 1000000"), "B has 40 bytes after its last whole record (8)");
}

/* Two runs' logs: every record whole and numbered right, but A's are not
 * B's. */
Test(campaign, twolog_check_rejects_logs_that_differ)
{
	char *one = twolog_state("one", 6), *two = twolog_state("two", 6);
	h_assert_ok(h_sh(h_fmt("cp '%s/b.log' '%s/b.log'", one, two), 10), "cp");
	expect_broken(check(two, "-w 1000000"), "a record both logs hold differs between them");
}

/* An acknowledged transaction both logs lost: inside the window it is
 * the policy's promise, beyond it a failure, and without -w any loss is. */
Test(campaign, twolog_check_judges_a_lost_acknowledgement_by_its_age)
{
	char *dir = twolog_state("tl", 10);
	keep_records(dir, "a.log", 9);
	keep_records(dir, "b.log", 9);
	char *acks = h_read_file(h_fmt("%s/acks", dir));
	const char *line = strstr(acks, "acked 9 ");
	cr_assert_not_null(line, "%s", acks);
	unsigned long long acked_ns = strtoull(line + 8, NULL, 10);
	char *cut = h_fmt("-c %llu", acked_ns + 50000000ULL); /* 50 ms after record 9's ack */

	struct h_result r = check(dir, h_fmt("%s -w 200", cut));
	cr_expect_eq(r.code, 0, "lost 50 ms before the cut, window 200 ms: exit %d\n%s", r.code, r.out);
	cr_expect(h_has(r.out, "integrity=ok a_records=9 b_records=9 acked=10 lost=1 lost_oldest_ms=50.000 lost_beyond_window=0"),
		  "%s", r.out);

	r = check(dir, h_fmt("%s -w 20", cut));
	cr_expect_eq(r.code, 1, "lost 50 ms before the cut, window 20 ms: exit %d\n%s", r.code, r.out);
	cr_expect(h_has(r.out, "integrity=ok") && h_has(r.out, "lost_beyond_window=1"), "%s", r.out);

	r = check(dir, cut);
	cr_expect_eq(r.code, 1, "no window: exit %d\n%s", r.code, r.out);
	cr_expect(h_has(r.out, "lost=1 ") && h_has(r.out, "lost_beyond_window=1"), "%s", r.out);
}
