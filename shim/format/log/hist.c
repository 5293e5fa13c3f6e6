/*
 * hist.c - log-linear latency histograms (see hist.h for the geometry).
 *
 * Ordering rule that makes snapshots self-consistent: a recorder updates
 * min and max before it publishes the bucket increment (release), and a
 * reader loads the buckets (acquire) before min and max. So every value a
 * reader sees in a bucket is already reflected in the min and max it reads,
 * and clamping an estimate to [min, max] never moves it away from the truth.
 */
#include "hist.h"

#include <string.h>

_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0),
	       "hist_record must be lock-free to be async-signal-safe");
_Static_assert(HIST_NBUCKETS == 2049, "bucket geometry changed: update LOGFORMAT.md");

#define SUB_COUNT (1u << HIST_SUB_BITS)

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static uint64_t load_acq(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static void store_min(uint64_t *p, uint64_t v)
{
	uint64_t cur = load(p);
	while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, 1,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void store_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = load(p);
	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned hist_bucket_index(uint64_t ns)
{
	if (ns < HIST_LINEAR)
		return (unsigned)ns;
	unsigned k = 63 - (unsigned)__builtin_clzll(ns);  /* ns in [2^k, 2^(k+1)) */
	if (k >= HIST_TOP_BITS)
		return HIST_OVERFLOW;
	unsigned sub = (unsigned)(ns >> (k - HIST_SUB_BITS)) & (SUB_COUNT - 1);
	return HIST_LINEAR + (k - HIST_SUB_BITS - 1) * SUB_COUNT + sub;
}

uint64_t hist_bucket_low(unsigned i)
{
	if (i < HIST_LINEAR)
		return i;
	if (i >= HIST_OVERFLOW)
		return HIST_OVERFLOW_NS;
	unsigned j = i - HIST_LINEAR;
	unsigned k = HIST_SUB_BITS + 1 + j / SUB_COUNT;
	return (uint64_t)(SUB_COUNT + j % SUB_COUNT) << (k - HIST_SUB_BITS);
}

uint64_t hist_bucket_width(unsigned i)
{
	if (i < HIST_LINEAR)
		return 1;
	if (i >= HIST_OVERFLOW)
		return 0;
	unsigned k = HIST_SUB_BITS + 1 + (i - HIST_LINEAR) / SUB_COUNT;
	return UINT64_C(1) << (k - HIST_SUB_BITS);
}

void hist_record(struct hist *h, uint64_t ns)
{
	store_min(&h->min, ns);
	store_max(&h->max, ns);
	add(&h->sum, ns);
	add(&h->count, 1);
	__atomic_fetch_add(&h->bucket[hist_bucket_index(ns)], 1, __ATOMIC_RELEASE);
}

static void bump(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

void hist_record_local(struct hist *h, uint64_t ns)
{
	if (ns < __atomic_load_n(&h->min, __ATOMIC_RELAXED))
		__atomic_store_n(&h->min, ns, __ATOMIC_RELAXED);
	if (ns > __atomic_load_n(&h->max, __ATOMIC_RELAXED))
		__atomic_store_n(&h->max, ns, __ATOMIC_RELAXED);
	bump(&h->sum, ns);
	bump(&h->count, 1);
	/* release: a reader that sees the bucket also sees min/max/sum */
	unsigned i = hist_bucket_index(ns);
	__atomic_store_n(&h->bucket[i], __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

void tally_add_local(struct tally *t, uint64_t ns, uint64_t bytes)
{
	bump(&t->calls, 1);
	bump(&t->bytes, bytes);
	bump(&t->sum_ns, ns);
	if (ns > __atomic_load_n(&t->max_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&t->max_ns, ns, __ATOMIC_RELAXED);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < HIST_NBUCKETS; i++) {
		uint64_t c = load_acq(&src->bucket[i]);
		if (!c)
			continue;
		/* min/max first, as hist_record does, for dst's readers */
		store_min(&dst->min, load(&src->min));
		store_max(&dst->max, load(&src->max));
		__atomic_fetch_add(&dst->bucket[i], c, __ATOMIC_RELEASE);
		n += c;
	}
	if (n) {
		add(&dst->sum, load(&src->sum));
		add(&dst->count, n);
	}
}

uint64_t hist_count(const struct hist *h)
{
	return load(&h->count);
}

uint64_t hist_sum(const struct hist *h)
{
	return load(&h->sum);
}

uint64_t hist_min(const struct hist *h)
{
	return load(&h->count) ? load(&h->min) : 0;
}

uint64_t hist_max(const struct hist *h)
{
	return load(&h->max);
}

double hist_mean(const struct hist *h)
{
	uint64_t n = load(&h->count);
	return n ? (double)load(&h->sum) / (double)n : 0.0;
}

uint64_t hist_rank(uint64_t count, double p)
{
	if (count == 0)
		return 0;
	if (!(p > 0))       /* also NaN */
		return 1;
	if (p >= 100)
		return count;
	double x = p / 100.0 * (double)count;
	uint64_t r = (uint64_t)x;
	/* ceil(), but forgive the last-bit error of p/100 (99.99% of 10000
	 * must be rank 9999, not 10000). */
	if ((double)r < x && x - (double)r > 1e-9 * x)
		r++;
	if (r < 1)
		r = 1;
	return r > count ? count : r;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < HIST_NBUCKETS; i++)
		n += load_acq(&h->bucket[i]);
	if (n == 0)
		return 0;
	uint64_t lo = load(&h->min), hi = load(&h->max);
	uint64_t rank = hist_rank(n, p);
	if (rank <= 1 && !(p >= 100))
		return lo;
	if (rank >= n)
		return hi;

	uint64_t cum = 0;
	for (unsigned i = 0; i < HIST_NBUCKETS; i++) {
		cum += load(&h->bucket[i]);
		if (cum < rank)
			continue;
		if (i == HIST_OVERFLOW)
			return hi;
		uint64_t v = hist_bucket_low(i) + hist_bucket_width(i) / 2;
		return v < lo ? lo : v > hi ? hi : v;
	}
	return hi;  /* buckets grew while we walked them */
}

/* ---- sparse encoding ---- */

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* One pass over the live buckets, loading each once: the head's count is
 * patched in at the end so it equals exactly what was written. */
size_t hist_encode(const struct hist *h, uint8_t *buf, size_t cap)
{
	if (cap < 36)
		return 0;
	uint8_t *p = buf + 36, *end = buf + cap;
	uint64_t n = 0;
	uint32_t nz = 0;
	unsigned prev = 0;

	for (unsigned i = 0; i < HIST_NBUCKETS; i++) {
		uint64_t c = load_acq(&h->bucket[i]);
		if (!c)
			continue;
		unsigned step = nz ? i - prev : i;
		if ((size_t)(end - p) < varint_len(step) + varint_len(c))
			return 0;
		p = put_varint(p, step);
		p = put_varint(p, c);
		prev = i;
		nz++;
		n += c;
	}
	uint8_t *q = buf;
	q = put_u64(q, n);
	q = put_u64(q, n ? load(&h->sum) : 0);
	q = put_u64(q, n ? load(&h->min) : 0);
	q = put_u64(q, n ? load(&h->max) : 0);
	put_u32(q, nz);
	return (size_t)(p - buf);
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Canonical LEB128 only: at most 10 bytes, no overflow, no redundant
 * trailing zero byte, so every histogram has exactly one encoding. */
static int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	for (unsigned shift = 0; p < end && shift < 64; shift += 7) {
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (b == 0 && shift)
				return -1;
			*pp = p;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -1;
}

int hist_decode(struct hist *h, const uint8_t *buf, size_t len, const char **why)
{
	if (len < 36)
		return fail(why, "histogram shorter than its 36-byte head");
	const uint8_t *p = buf, *end = buf + len;
	uint64_t count = get_le(p, 8), sum = get_le(p + 8, 8);
	uint64_t min = get_le(p + 16, 8), max = get_le(p + 24, 8);
	uint64_t nz = get_le(p + 32, 4);
	p += 36;
	if (nz > HIST_NBUCKETS)
		return fail(why, "histogram has more buckets than exist");

	hist_init(h);
	uint64_t total = 0, idx = 0;
	unsigned first = 0, last = 0;
	for (uint64_t k = 0; k < nz; k++) {
		uint64_t step, c;
		if (get_varint(&p, end, &step) || get_varint(&p, end, &c))
			return fail(why, "histogram bucket entry cut short or malformed");
		if (k && step == 0)
			return fail(why, "histogram bucket indexes not increasing");
		if (step >= HIST_NBUCKETS || (idx += step) >= HIST_NBUCKETS)
			return fail(why, "histogram bucket index out of range");
		if (c == 0)
			return fail(why, "histogram lists an empty bucket");
		if (total + c < total)
			return fail(why, "histogram counts overflow");
		total += c;
		h->bucket[idx] = c;
		if (!k)
			first = (unsigned)idx;
		last = (unsigned)idx;
	}
	if (p != end)
		return fail(why, "histogram followed by stray bytes");
	if (total != count)
		return fail(why, "histogram count differs from its buckets' sum");
	if (count == 0) {
		if (sum || min || max)
			return fail(why, "empty histogram with non-zero sum/min/max");
		return 0;
	}
	if (min > max)
		return fail(why, "histogram min above max");
	if (first != HIST_OVERFLOW &&
	    min > hist_bucket_low(first) + hist_bucket_width(first) - 1)
		return fail(why, "histogram min above its lowest bucket");
	if (max < hist_bucket_low(last))
		return fail(why, "histogram max below its highest bucket");
	h->count = count;
	h->sum = sum;
	h->min = min;
	h->max = max;
	return 0;
}

/* ---- per-interval tallies ---- */

void tally_add(struct tally *t, uint64_t ns, uint64_t bytes)
{
	add(&t->calls, 1);
	add(&t->bytes, bytes);
	add(&t->sum_ns, ns);
	store_max(&t->max_ns, ns);
}

void tally_take(struct tally *t, struct tally *out)
{
	out->calls = __atomic_exchange_n(&t->calls, 0, __ATOMIC_RELAXED);
	out->bytes = __atomic_exchange_n(&t->bytes, 0, __ATOMIC_RELAXED);
	out->sum_ns = __atomic_exchange_n(&t->sum_ns, 0, __ATOMIC_RELAXED);
	out->max_ns = __atomic_exchange_n(&t->max_ns, 0, __ATOMIC_RELAXED);
}
