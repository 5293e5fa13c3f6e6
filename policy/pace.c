/*
 * pace.c - when a sync should start (see pace.h).
 */
#include "pace.h"

#define NS_PER_MS 1000000ull

uint32_t pace_average(uint32_t avg, uint64_t sample)
{
	if (sample > UINT32_MAX)
		sample = UINT32_MAX;
	if (!avg)
		return sample ? (uint32_t)sample : 1;
	int64_t next = (int64_t)avg + ((int64_t)sample - (int64_t)avg) / 8;
	return next < 1 ? 1 : (uint32_t)next;
}

uint64_t pace_linger_ns(const struct pace_seen *s, bool probe)
{
	if (!s->sync_ns || !s->gap_ns)
		return 0;
	/* Fewer than two arrivals per sync: the next caller would mostly
	 * come after the sync anyway, and the leader would wait for nobody. */
	if ((uint64_t)s->gap_ns * 2 >= s->sync_ns)
		return 0;
	if (!probe && s->joined_x16 && s->joined_x16 < 16)
		return 0;
	uint64_t linger = 2ull * s->gap_ns, cap = s->sync_ns / 4;
	return linger < cap ? linger : cap;
}

uint32_t pace_joined(uint32_t joined_x16, uint64_t gathered)
{
	return pace_average(joined_x16, gathered * 16);
}

uint64_t pace_at_risk_ns(uint32_t max_delay_ms, uint32_t max_at_risk_ms)
{
	if (max_at_risk_ms)
		return max_at_risk_ms * NS_PER_MS;
	return max_delay_ms == POLICY_AUTO ? PACE_AUTO_AT_RISK_MS * NS_PER_MS : 0;
}

uint64_t pace_due_ns(uint64_t first_ns, uint32_t max_delay_ms)
{
	if (max_delay_ms == POLICY_AUTO)
		return first_ns;
	return first_ns + max_delay_ms * NS_PER_MS;
}

bool pace_over_ceiling(uint64_t oldest_ns, uint64_t now_ns, uint64_t ceiling_ns)
{
	return ceiling_ns && oldest_ns && now_ns > oldest_ns && now_ns - oldest_ns > ceiling_ns;
}
