/*
 * test_hist.c - the latency histogram: bucket geometry, percentile error
 * against exact order statistics, merge, concurrent recording, encoding.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "hist.h"
#include "livefmt.h"

#define N 20000

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, good enough for sampling */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static double unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;  /* [0, 1) */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static struct hist *new_hist(void)
{
	struct hist *h = malloc(sizeof(*h));
	cr_assert_not_null(h);
	hist_init(h);
	return h;
}

/* Every checked percentile within 1% of the exact order statistic of the
 * same rank; p0 and p100 exact. */
static void check_percentiles(const char *what, uint64_t *v, size_t n)
{
	static const double ps[] = { 0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100 };
	struct hist *h = new_hist();
	for (size_t i = 0; i < n; i++)
		hist_record(h, v[i]);
	qsort(v, n, sizeof(*v), cmp_u64);

	cr_assert_eq(hist_count(h), n, "%s: count", what);
	cr_assert_eq(hist_min(h), v[0], "%s: min", what);
	cr_assert_eq(hist_max(h), v[n - 1], "%s: max", what);
	cr_assert_eq(hist_percentile(h, 0), v[0], "%s: p0 is the min", what);
	cr_assert_eq(hist_percentile(h, 100), v[n - 1], "%s: p100 is the max", what);
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t exact = v[hist_rank(n, ps[i]) - 1];
		uint64_t got = hist_percentile(h, ps[i]);
		if (exact >= HIST_OVERFLOW_NS)
			continue;  /* overflow bucket: only max is exact */
		double err = fabs((double)got - (double)exact) / (exact ? (double)exact : 1.0);
		cr_assert(err <= 0.01, "%s: p%g = %llu, exact %llu (error %.3f%%)", what, ps[i],
			  (unsigned long long)got, (unsigned long long)exact, err * 100);
	}
	free(h);
}

Test(hist, geometry)
{
	cr_assert_eq(HIST_NBUCKETS, 2049);
	cr_assert_leq(sizeof(struct hist), 20 * 1024, "fixed memory per histogram");
	cr_assert_eq(hist_bucket_index(0), 0);
	cr_assert_eq(hist_bucket_index(127), 127);
	cr_assert_eq(hist_bucket_index(HIST_OVERFLOW_NS - 1), HIST_OVERFLOW - 1);
	cr_assert_eq(hist_bucket_index(HIST_OVERFLOW_NS), HIST_OVERFLOW);
	cr_assert_eq(hist_bucket_index(UINT64_MAX), HIST_OVERFLOW);
	/* buckets tile the range without gaps */
	for (unsigned i = 0; i + 1 < HIST_OVERFLOW; i++)
		cr_assert_eq(hist_bucket_low(i) + hist_bucket_width(i), hist_bucket_low(i + 1),
			     "gap after bucket %u", i);
	rng_state = 42;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = rnd() >> (rnd() % 64);
		unsigned b = hist_bucket_index(v);
		if (b == HIST_OVERFLOW) {
			cr_assert_geq(v, HIST_OVERFLOW_NS);
			continue;
		}
		cr_assert(v >= hist_bucket_low(b) && v - hist_bucket_low(b) < hist_bucket_width(b),
			  "value %llu outside its bucket %u", (unsigned long long)v, b);
		/* the 1% bound needs buckets at most 1/64 of their low end */
		if (v >= 128)
			cr_assert_leq(hist_bucket_width(b) * 64, hist_bucket_low(b));
	}
}

Test(hist, rank)
{
	cr_assert_eq(hist_rank(0, 50), 0);
	cr_assert_eq(hist_rank(10, 0), 1);
	cr_assert_eq(hist_rank(10, 50), 5);
	cr_assert_eq(hist_rank(10, 51), 6);
	cr_assert_eq(hist_rank(10, 100), 10);
	cr_assert_eq(hist_rank(10000, 99.99), 9999);
	cr_assert_eq(hist_rank(1000, 99.9), 999);
	cr_assert_eq(hist_rank(3, 99.99), 3);
}

Test(hist, empty)
{
	struct hist *h = new_hist();
	cr_assert_eq(hist_count(h), 0);
	cr_assert_eq(hist_min(h), 0);
	cr_assert_eq(hist_max(h), 0);
	cr_assert_eq(hist_mean(h), 0.0);
	cr_assert_eq(hist_percentile(h, 50), 0);
	free(h);
}

Test(hist, uniform)
{
	uint64_t *v = malloc(N * sizeof(*v));
	rng_state = 1;
	for (int i = 0; i < N; i++)
		v[i] = 1000 + rnd() % 999000;  /* 1 us .. 1 ms */
	check_percentiles("uniform", v, N);
	free(v);
}

Test(hist, log_uniform)
{
	uint64_t *v = malloc(N * sizeof(*v));
	rng_state = 2;
	for (int i = 0; i < N; i++)
		v[i] = (uint64_t)pow(10, 2 + 8 * unit());  /* 100 ns .. 10 s */
	check_percentiles("log-uniform", v, N);
	free(v);
}

Test(hist, bimodal)
{
	uint64_t *v = malloc(N * sizeof(*v));
	rng_state = 3;
	for (int i = 0; i < N; i++)
		v[i] = rnd() % 10 < 9 ? 40000 + rnd() % 20000      /* 40..60 us */
				      : 4000000 + rnd() % 2000000; /* 4..6 ms */
	check_percentiles("bimodal", v, N);
	free(v);
}

Test(hist, pareto_heavy_tail)
{
	uint64_t *v = malloc(N * sizeof(*v));
	rng_state = 4;
	for (int i = 0; i < N; i++) {
		double x = 10000.0 / pow(1.0 - unit(), 1 / 1.2);  /* xm 10 us, alpha 1.2 */
		v[i] = x > 1e15 ? (uint64_t)1e15 : (uint64_t)x;
	}
	check_percentiles("pareto", v, N);
	free(v);
}

Test(hist, constant)
{
	uint64_t *v = malloc(N * sizeof(*v));
	for (int i = 0; i < N; i++)
		v[i] = 500000;
	check_percentiles("constant", v, N);
	struct hist *h = new_hist();
	for (int i = 0; i < 1000; i++)
		hist_record(h, 500000);
	/* clamping to [min, max] makes a constant exact at every percentile */
	cr_assert_eq(hist_percentile(h, 50), 500000);
	cr_assert_eq(hist_percentile(h, 99.9), 500000);
	cr_assert_eq(hist_mean(h), 500000.0);
	free(h);
	free(v);
}

Test(hist, tiny_values_exact)
{
	uint64_t *v = malloc(N * sizeof(*v));
	rng_state = 5;
	for (int i = 0; i < N; i++)
		v[i] = rnd() % 100;  /* 0 .. 99 ns */
	struct hist *h = new_hist();
	for (int i = 0; i < N; i++)
		hist_record(h, v[i]);
	qsort(v, N, sizeof(*v), cmp_u64);
	for (double p = 0; p <= 100; p += 0.5)
		cr_assert_eq(hist_percentile(h, p), v[hist_rank(N, p) - 1], "p%g", p);
	free(h);
	free(v);
}

Test(hist, huge_values)
{
	uint64_t *v = malloc(N * sizeof(*v));
	rng_state = 6;
	for (int i = 0; i < N; i++)
		v[i] = 10000000000ull + rnd() % 90000000000ull;  /* 10 .. 100 s */
	check_percentiles("10..100 s", v, N);

	/* beyond ~137 s values share the overflow bucket; max stays exact */
	struct hist *h = new_hist();
	hist_record(h, 1000);
	hist_record(h, 200000000000ull);
	hist_record(h, 900000000000ull);
	cr_assert_eq(hist_max(h), 900000000000ull);
	cr_assert_eq(hist_percentile(h, 100), 900000000000ull);
	cr_assert_eq(hist_percentile(h, 60), 900000000000ull, "overflow bucket reports max");
	cr_assert_eq(hist_percentile(h, 10), 1000);
	cr_assert_eq(h->bucket[HIST_OVERFLOW], 2);
	free(h);
	free(v);
}

Test(hist, merge_equals_recording_all)
{
	struct hist *all = new_hist(), *a = new_hist(), *b = new_hist(), *m = new_hist();
	rng_state = 7;
	for (int i = 0; i < N; i++) {
		uint64_t x = (uint64_t)pow(10, 1 + 10 * unit());
		hist_record(all, x);
		hist_record(i % 3 ? a : b, x);
	}
	hist_merge(m, a);
	hist_merge(m, b);
	cr_assert_eq(memcmp(m, all, sizeof(*m)), 0, "merged histogram differs from recording all");
	struct hist *empty = new_hist();
	hist_merge(m, empty);  /* merging an empty one changes nothing */
	cr_assert_eq(memcmp(m, all, sizeof(*m)), 0);
	free(empty);
	free(all);
	free(a);
	free(b);
	free(m);
}

/* ---- concurrency ---- */

#define THREADS 4
#define PER_THREAD 200000

struct worker {
	struct hist *h;
	uint64_t seed, sum;
};

static void *record_many(void *arg)
{
	struct worker *w = arg;
	uint64_t s = w->seed;
	for (int i = 0; i < PER_THREAD; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		uint64_t v = s % 5000000;
		w->sum += v;
		hist_record(w->h, v);
	}
	return NULL;
}

static volatile int stop_snapshots;

/* Snapshots the live histogram while it is recorded into: every snapshot
 * must decode (its invariants hold even mid-update). */
static void *snapshot_loop(void *arg)
{
	struct hist *h = arg;
	static uint8_t buf[HIST_ENCODED_MAX];
	struct hist *d = malloc(sizeof(*d));
	int n = 0;
	while (!__atomic_load_n(&stop_snapshots, __ATOMIC_RELAXED) || n == 0) {
		size_t len = hist_encode(h, buf, sizeof(buf));
		const char *why = NULL;
		if (len == 0 || hist_decode(d, buf, len, &why) != 0) {
			free(d);
			return (void *)(why ? why : "encode failed");
		}
		n++;
	}
	free(d);
	return NULL;
}

Test(hist, concurrent_recording_counts_exactly)
{
	struct hist *h = new_hist();
	pthread_t t[THREADS], snap;
	struct worker w[THREADS];
	stop_snapshots = 0;
	cr_assert_eq(pthread_create(&snap, NULL, snapshot_loop, h), 0);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ h, 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1), 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, record_many, &w[i]), 0);
	}
	uint64_t sum = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		sum += w[i].sum;
	}
	__atomic_store_n(&stop_snapshots, 1, __ATOMIC_RELAXED);
	void *snap_err;
	pthread_join(snap, &snap_err);
	cr_assert_null(snap_err, "a live snapshot did not decode: %s", (const char *)snap_err);

	cr_assert_eq(hist_count(h), (uint64_t)THREADS * PER_THREAD);
	cr_assert_eq(hist_sum(h), sum);
	uint64_t buckets = 0;
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		buckets += h->bucket[i];
	cr_assert_eq(buckets, (uint64_t)THREADS * PER_THREAD);
	free(h);
}

static struct hist *sig_hist;
static volatile sig_atomic_t sig_records;

static void on_alarm(int sig)
{
	(void)sig;
	hist_record(sig_hist, 777);
	sig_records++;
}

/* A signal handler records into the histogram the interrupted thread is
 * recording into: no lock to deadlock on, no count lost. */
Test(hist, records_from_signal_handler)
{
	sig_hist = new_hist();
	struct sigaction sa = { .sa_handler = on_alarm };
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	struct itimerval every = { { 0, 50 }, { 0, 50 } }, off = { { 0, 0 }, { 0, 0 } };
	cr_assert_eq(setitimer(ITIMER_REAL, &every, NULL), 0);
	uint64_t n = 0;
	while (sig_records < 200 && n < 200000000) {
		hist_record(sig_hist, 1000 + n % 1000);
		n++;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
	cr_assert_geq(sig_records, 1, "no signal arrived");
	cr_assert_eq(hist_count(sig_hist), n + (uint64_t)sig_records);
	cr_assert_eq(sig_hist->bucket[hist_bucket_index(777)], (uint64_t)sig_records);
	free(sig_hist);
}

Test(hist, tally_add_take)
{
	struct tally t = { 0 }, out;
	tally_add(&t, 100, 4096);
	tally_add(&t, 300, 0);
	tally_take(&t, &out);
	cr_assert_eq(out.calls, 2);
	cr_assert_eq(out.bytes, 4096);
	cr_assert_eq(out.sum_ns, 400);
	cr_assert_eq(out.max_ns, 300);
	tally_take(&t, &out);
	cr_assert_eq(out.calls, 0);
	cr_assert_eq(out.max_ns, 0);
}

/* ---- encoding ---- */

Test(hist, encode_roundtrip)
{
	static uint8_t buf[HIST_ENCODED_MAX];
	struct hist *h = new_hist(), *d = new_hist();
	const char *why = NULL;

	size_t len = hist_encode(h, buf, sizeof(buf));
	cr_assert_eq(len, 36, "empty histogram is just the head");
	cr_assert_eq(hist_decode(d, buf, len, &why), 0, "%s", why);
	cr_assert_eq(memcmp(h, d, sizeof(*h)), 0);

	rng_state = 8;
	for (int i = 0; i < N; i++)
		hist_record(h, (uint64_t)pow(10, 1 + 11 * unit()));
	hist_record(h, UINT64_MAX);  /* overflow bucket too */
	len = hist_encode(h, buf, sizeof(buf));
	cr_assert_gt(len, 36);
	cr_assert_eq(hist_decode(d, buf, len, &why), 0, "%s", why);
	cr_assert_eq(memcmp(h, d, sizeof(*h)), 0, "decoded histogram differs");
	cr_assert_eq(hist_encode(h, buf, len - 1), 0, "too small a buffer is refused");

	/* every histogram fits HIST_ENCODED_MAX, even with huge counts everywhere */
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		h->bucket[i] = UINT64_MAX / HIST_NBUCKETS;
	cr_assert_gt(hist_encode(h, buf, sizeof(buf)), 0);
	free(h);
	free(d);
}

Test(hist, decode_rejects_damage)
{
	static uint8_t buf[HIST_ENCODED_MAX], bad[HIST_ENCODED_MAX];
	struct hist *h = new_hist(), *d = new_hist();
	const char *why;
	for (uint64_t v = 100; v < 10000000; v = v * 3 / 2)
		hist_record(h, v);
	size_t len = hist_encode(h, buf, sizeof(buf));

	for (size_t cut = 0; cut < len; cut++)
		cr_assert_neq(hist_decode(d, buf, cut, &why), 0, "accepted a cut at %zu", cut);

	memcpy(bad, buf, len);
	bad[len] = 0;
	cr_assert_neq(hist_decode(d, bad, len + 1, &why), 0, "accepted a stray byte");

	memcpy(bad, buf, len);
	bad[0] ^= 1;  /* count no longer matches the buckets */
	cr_assert_neq(hist_decode(d, bad, len, &why), 0);

	memcpy(bad, buf, len);
	bad[32] = 0xff;  /* more buckets than exist */
	bad[33] = 0xff;
	cr_assert_neq(hist_decode(d, bad, len, &why), 0);

	memcpy(bad, buf, len);
	memset(bad + 16, 0xff, 8);  /* min above max */
	cr_assert_neq(hist_decode(d, bad, len, &why), 0);

	/* random single-byte damage either decodes or is refused, never crashes */
	rng_state = 9;
	for (int i = 0; i < 5000; i++) {
		memcpy(bad, buf, len);
		bad[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
		(void)hist_decode(d, bad, len, &why);
	}
	free(h);
	free(d);
}

/* The single-writer recorders the logger's app threads use must count
 * exactly what the atomic ones do. */
Test(hist, local_recording_matches_atomic)
{
	struct hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	cr_assert(a && b);
	hist_init(a);
	hist_init(b);
	struct tally ta = { 0 }, tb = { 0 };
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t ns = x % 10000000000ull >> (x & 31);
		hist_record(a, ns);
		hist_record_local(b, ns);
		tally_add(&ta, ns, i);
		tally_add_local(&tb, ns, i);
	}
	cr_assert_eq(hist_count(a), hist_count(b));
	cr_assert_eq(hist_sum(a), hist_sum(b));
	cr_assert_eq(hist_min(a), hist_min(b));
	cr_assert_eq(hist_max(a), hist_max(b));
	cr_assert_eq(memcmp(a->bucket, b->bucket, sizeof(a->bucket)), 0);
	cr_assert_eq(memcmp(&ta, &tb, sizeof(ta)), 0);
	free(a);
	free(b);
}

/* The live counters' bucket (livefmt.h) starts its walk from the value's
 * bit length: it must agree with a plain scan of the bounds at every
 * bound, either side of it, and at every power of two. */
static unsigned live_bucket_by_scan(uint64_t ns)
{
	unsigned i = 0;
	while (i < LIVE_NBOUNDS && live_bound_ns(i) < ns)
		i++;
	return i;
}

Test(live_buckets, the_walk_from_the_bit_length_agrees_with_a_scan)
{
	for (unsigned i = 0; i < LIVE_NBOUNDS; i++)
		for (int d = -1; d <= 1; d++) {
			uint64_t v = live_bound_ns(i) + (uint64_t)(int64_t)d;
			cr_assert_eq(live_bucket(v), live_bucket_by_scan(v), "value %llu", (unsigned long long)v);
		}
	for (unsigned b = 0; b < 64; b++)
		for (int d = -1; d <= 1; d++) {
			uint64_t v = (1ull << b) + (uint64_t)(int64_t)d;
			cr_assert_eq(live_bucket(v), live_bucket_by_scan(v), "value %llu", (unsigned long long)v);
		}
	cr_assert_eq(live_bucket(0), 0);
	cr_assert_eq(live_bucket(UINT64_MAX), LIVE_NBOUNDS);
}
