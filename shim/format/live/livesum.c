/*
 * livesum.c - summing live counters entries (per rule, per label set),
 * rates over the publishing interval, and the names the views print.
 */
#include "liveread.h"

#include <stdio.h>
#include <string.h>

#include "policy.h"

#define MAX_OF(a, b) ((a) > (b) ? (a) : (b))

void live_file_add(struct live_file *sum, const struct live_file *f)
{
	sum->flags |= f->flags;
	sum->writes += f->writes;
	sum->bytes += f->bytes;
	sum->syncs += f->syncs;
	sum->real_syncs += f->real_syncs;
	sum->errors += f->errors;
	sum->pending += f->pending;
	sum->risk_bytes += f->risk_bytes;
	sum->iv_writes += f->iv_writes;
	sum->iv_bytes += f->iv_bytes;
	sum->iv_syncs += f->iv_syncs;
	sum->iv_real_syncs += f->iv_real_syncs;
	sum->iv_errors += f->iv_errors;
	sum->sync_sum_ns += f->sync_sum_ns;
	sum->real_sum_ns += f->real_sum_ns;
	for (unsigned i = 0; i < LIVE_NBUCKETS; i++) {
		sum->sync_buckets[i] += f->sync_buckets[i];
		sum->real_buckets[i] += f->real_buckets[i];
	}
	/* Ages, the interval's worst and percentiles do not add up: the
	 * group is as bad as its worst file. */
	sum->risk_age_ns = MAX_OF(sum->risk_age_ns, f->risk_age_ns);
	sum->risk_worst_bytes = MAX_OF(sum->risk_worst_bytes, f->risk_worst_bytes);
	sum->risk_worst_age_ns = MAX_OF(sum->risk_worst_age_ns, f->risk_worst_age_ns);
	sum->sync_p50_ns = MAX_OF(sum->sync_p50_ns, f->sync_p50_ns);
	sum->sync_p99_ns = MAX_OF(sum->sync_p99_ns, f->sync_p99_ns);
	sum->sync_max_ns = MAX_OF(sum->sync_max_ns, f->sync_max_ns);
	sum->real_p50_ns = MAX_OF(sum->real_p50_ns, f->real_p50_ns);
	sum->real_p99_ns = MAX_OF(sum->real_p99_ns, f->real_p99_ns);
	sum->real_max_ns = MAX_OF(sum->real_max_ns, f->real_max_ns);
}

size_t live_by_rule(const struct live_proc *p, struct live_file *out, unsigned *nfiles)
{
	size_t n = 0;
	for (uint32_t i = 0; i < p->h.nfiles; i++) {
		const struct live_file *f = &p->files[i];
		size_t j = 0;
		while (j < n && (out[j].rule != f->rule || out[j].policy != f->policy))
			j++;
		if (j == n) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].rule = f->rule;
			out[n].policy = f->policy;
			memcpy(out[n].rule_name, f->rule_name, sizeof(out[n].rule_name));
			nfiles[n++] = 0;
		}
		live_file_add(&out[j], f);
		nfiles[j]++;
	}
	return n;
}

double live_rate(const struct live_proc *p, uint64_t iv_count)
{
	return p->h.interval_ns ? (double)iv_count * 1e9 / (double)p->h.interval_ns : 0;
}

const char *live_policy_name(unsigned policy)
{
	/* The live format numbers policies as policy.h does. */
	return policy < SYNC_POLICY_COUNT ? sync_policy_name((enum sync_policy)policy) : "?";
}

const char *live_command(const struct live_proc *p, char *buf, size_t len)
{
	if (p->h.comm[0]) { /* the kernel's name: exact even with spaces in the path */
		snprintf(buf, len, "%.15s", p->h.comm);
		return buf;
	}
	const char *c = p->h.cmdline;
	size_t n = strcspn(c, " ");
	const char *slash = NULL;
	for (size_t i = 0; i < n; i++)
		if (c[i] == '/')
			slash = c + i;
	if (slash) {
		n -= (size_t)(slash + 1 - c);
		c = slash + 1;
	}
	if (n >= len)
		n = len - 1;
	memcpy(buf, c, n);
	buf[n] = '\0';
	if (!n)
		snprintf(buf, len, "%s", p->busy ? "?" : "-");
	return buf;
}
