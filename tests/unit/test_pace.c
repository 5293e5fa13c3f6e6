/*
 * test_pace.c - the pacing arithmetic (policy/pace.c): when a deferred
 * sync is due, the ceiling on data at risk, and how long a group leader
 * lingers under group_wait_us = auto.
 */
#include <criterion/criterion.h>

#include "pace.h"
#include "policy.h"

#define US 1000u
#define MS 1000000ull

Test(pace, average_starts_at_the_first_sample_and_follows)
{
	cr_expect_eq(pace_average(0, 500), 500);
	uint32_t a = 800;
	for (int i = 0; i < 64; i++)
		a = pace_average(a, 100);
	cr_expect_leq(a, 110, "after 64 samples of 100 the average is %u", a);
	cr_expect_geq(pace_average(100, 900), 150, "one slow sync moves it by an eighth");
	cr_expect_eq(pace_average(0, 0), 1, "0 stays 'not seen yet' only before any sample");
	cr_expect_eq(pace_average(0, UINT64_MAX), UINT32_MAX, "clamped");
}

Test(pace, no_linger_before_anything_is_known)
{
	struct pace_seen s = { 0 };
	cr_expect_eq(pace_linger_ns(&s, false), 0);
	s.sync_ns = 100 * US;
	cr_expect_eq(pace_linger_ns(&s, false), 0, "no arrivals seen");
	s = (struct pace_seen){ .gap_ns = 5 * US };
	cr_expect_eq(pace_linger_ns(&s, false), 0, "no sync seen");
}

Test(pace, one_caller_never_lingers)
{
	/* One thread: each request comes after its previous sync returned,
	 * so the gap is at least a sync duration. */
	struct pace_seen s = { .sync_ns = 100 * US, .gap_ns = 110 * US };
	cr_expect_eq(pace_linger_ns(&s, false), 0);
	cr_expect_eq(pace_linger_ns(&s, true), 0, "not even to probe");
	s.gap_ns = 50 * US; /* two per sync: still nobody to wait for */
	cr_expect_eq(pace_linger_ns(&s, false), 0);
}

Test(pace, many_callers_linger_twice_the_gap_at_most_a_quarter_sync)
{
	struct pace_seen s = { .sync_ns = 400 * US, .gap_ns = 20 * US };
	cr_expect_eq(pace_linger_ns(&s, false), 40 * US);
	s.gap_ns = 90 * US; /* 2 x gap = 180 us > 400 / 4 */
	cr_expect_eq(pace_linger_ns(&s, false), 100 * US);
}

Test(pace, lingering_that_gathers_nobody_stops_but_probes)
{
	struct pace_seen s = { .sync_ns = 400 * US, .gap_ns = 20 * US };
	uint32_t j = 0;
	for (int i = 0; i < 32; i++)
		j = pace_joined(j, 0);
	s.joined_x16 = j;
	cr_expect_eq(pace_linger_ns(&s, false), 0, "joined %u/16 per linger: stop", j);
	cr_expect_eq(pace_linger_ns(&s, true), 40 * US, "a probe lingers to measure again");
	for (int i = 0; i < 32; i++)
		j = pace_joined(j, 3);
	s.joined_x16 = j;
	cr_expect_eq(pace_linger_ns(&s, false), 40 * US, "joined %u/16 per linger: linger", j);
}

Test(pace, ceiling_on_data_at_risk)
{
	cr_expect_eq(pace_at_risk_ns(100, 0), 0, "a fixed window and no ceiling: none");
	cr_expect_eq(pace_at_risk_ns(100, 250), 250 * MS);
	cr_expect_eq(pace_at_risk_ns(POLICY_AUTO, 0), PACE_AUTO_AT_RISK_MS * MS, "auto gets the default ceiling");
	cr_expect_eq(pace_at_risk_ns(POLICY_AUTO, 7), 7 * MS);

	cr_expect(!pace_over_ceiling(0, 1000 * MS, 50 * MS), "nothing at risk");
	cr_expect(!pace_over_ceiling(900 * MS, 1000 * MS, 0), "no ceiling");
	cr_expect(!pace_over_ceiling(960 * MS, 1000 * MS, 50 * MS));
	cr_expect(pace_over_ceiling(940 * MS, 1000 * MS, 50 * MS));
	cr_expect(!pace_over_ceiling(1100 * MS, 1000 * MS, 50 * MS), "a stamp from the future (another CPU)");
}

Test(pace, due_after_the_window_or_at_once)
{
	cr_expect_eq(pace_due_ns(5 * MS, 100), 105 * MS);
	cr_expect_eq(pace_due_ns(5 * MS, 600000), 5 * MS + 600000 * MS);
	cr_expect_eq(pace_due_ns(5 * MS, POLICY_AUTO), 5 * MS);
}
