/*
 * examples.h - helpers shared by the example programs.
 *
 * Header-only: each examples/NAME.c is built alone, so everything here is
 * static inline (an example that does not use a helper gets no warning).
 * Define PROG (the program name used in messages) before including; an
 * example that uses bad_arg() must define usage(FILE *).
 */
#ifndef SYNCSHIM_EXAMPLES_H
#define SYNCSHIM_EXAMPLES_H

#ifndef PROG
#error "define PROG before including examples.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_US 1000ULL
#define NS_PER_SEC 1000000000ULL

/* Latency samples: exact count/sum/max, percentiles from up to cap
 * samples (a uniform reservoir once more than cap were added). */
struct lat {
	uint64_t *v;
	size_t n, cap;
	uint64_t count, sum, max;
	uint64_t rng;
};

static inline void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(errno));
	exit(1);
}

static inline void die_path(const char *what, const char *path)
{
	int e = errno;
	fprintf(stderr, "%s: %s %s: %s\n", PROG, what, path, strerror(e));
	exit(1);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		die("clock_gettime");
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Sleep until an absolute CLOCK_MONOTONIC time; returns at once if past
 * (checked here: the kernel may still apply timer slack to a past time). */
static inline void sleep_until(uint64_t t)
{
	if (now_ns() >= t)
		return;
	struct timespec ts = { .tv_sec = (time_t)(t / NS_PER_SEC),
			       .tv_nsec = (long)(t % NS_PER_SEC) };
	int rc;
	while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
		;
	if (rc != 0) {
		errno = rc;
		die("clock_nanosleep");
	}
}

/* Byte o of the file belongs to the record at o & ~15: that offset in
 * 15 hex digits then '\n'. Depends only on the offset, so any write of any
 * size at any position produces the same file. */
static inline void record_init(char r[16], uint64_t rec)
{
	static const char hex[] = "0123456789abcdef";
	for (int d = 14; d >= 0; d--) {
		r[d] = hex[rec & 15];
		rec >>= 4;
	}
	r[15] = '\n';
}

/* Advance r to the next record (offset + 16): a hex increment of the
 * digits above the last, cheaper than formatting each record. */
static inline void record_next(char r[16])
{
	for (int d = 13; d >= 0; d--) {
		if (r[d] == 'f') {
			r[d] = '0';
			continue;
		}
		r[d] = r[d] == '9' ? 'a' : (char)(r[d] + 1);
		return;
	}
}

static inline void fill_pattern(char *buf, uint64_t off, size_t len)
{
	char r[16];
	record_init(r, off & ~15ULL);
	size_t k = (size_t)(off & 15);
	for (size_t i = 0; i < len; k = 0) {
		size_t n = 16 - k;
		if (n > len - i)
			n = len - i;
		memcpy(buf + i, r + k, n);
		i += n;
		record_next(r);
	}
}

static inline void lat_init(struct lat *l, size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->cap = cap ? cap : 1;
	l->v = malloc(l->cap * sizeof(*l->v));
	if (!l->v)
		die("malloc");
	l->rng = 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline void lat_add(struct lat *l, uint64_t ns)
{
	l->count++;
	l->sum += ns;
	if (ns > l->max)
		l->max = ns;
	if (l->n < l->cap) {
		l->v[l->n++] = ns;
		return;
	}
	/* Reservoir sampling keeps the kept samples uniform over all. */
	uint64_t j = xorshift(&l->rng) % l->count;
	if (j < l->cap)
		l->v[j] = ns;
}

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static inline void lat_sort(struct lat *l)
{
	qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
}

/* Nearest-rank percentile in microseconds; call lat_sort first. */
static inline double lat_pct_us(const struct lat *l, double p)
{
	if (l->n == 0)
		return 0;
	size_t idx = (size_t)ceil(p / 100.0 * (double)l->n);
	idx = idx ? idx - 1 : 0;
	if (idx >= l->n)
		idx = l->n - 1;
	return (double)l->v[idx] / NS_PER_US;
}

static inline double lat_mean_us(const struct lat *l)
{
	return l->count ? (double)l->sum / (double)l->count / NS_PER_US : 0;
}

static inline double lat_max_us(const struct lat *l)
{
	return (double)l->max / NS_PER_US;
}

/* write() the whole buffer, retrying short writes. */
static inline int write_full(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Each example defines its own usage text. */
static void usage(FILE *out);

static inline void bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "%s: bad value for %s: '%s'\n", PROG, opt, val);
	usage(stderr);
	exit(2);
}

/* Unsigned integer with optional k/m/g (binary) suffix. */
static inline uint64_t parse_u64(const char *s, const char *opt)
{
	char *end;
	errno = 0;
	if (*s == '-')
		bad_arg(opt, s);
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		bad_arg(opt, s);
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		bad_arg(opt, s);
	return (uint64_t)v << shift;
}

static inline double parse_pos_double(const char *s, const char *opt)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e7)
		bad_arg(opt, s);
	return v;
}

/*
 * Options, table-driven: one entry per letter says what its value is and
 * where it goes, and one call parses them all:
 *
 *	const struct opt opts[] = {
 *		{ 'f', OPT_PATH, .p = o->path, .max = sizeof(o->path) },
 *		{ 'n', OPT_U64, .p = &o->count },
 *		{ 'k', OPT_FLAG, .p = &o->keep },
 *	};
 *	parse_opts(argc, argv, opts, NOPTS(opts));
 *
 * It does what every example does: -h prints usage on stdout and exits
 * 0; an unknown option, a missing or bad value (named, via bad_arg) or an
 * operand (the examples take none) prints usage on stderr and exits 2.
 * Defaults are whatever the caller stored before the call. The type at p
 * must be the kind's.
 */
enum opt_kind {
	OPT_FLAG,    /* int: set to 1; takes no value */
	OPT_U64,     /* uint64_t: parse_u64 (k/m/g suffixes) */
	OPT_SIZE,    /* size_t: parse_u64 */
	OPT_DOUBLE,  /* double: parse_pos_double (> 0) */
	OPT_PATH,    /* char[]: the value copied; max is the most it may take, NUL included */
	OPT_COUNT,   /* unsigned: parse_u64, from 1 to max */
	OPT_WORD,    /* int: the index of the value in words */
};

struct opt {
	char letter;
	enum opt_kind kind;
	void *p;                  /* where the value goes */
	size_t max;               /* OPT_PATH, OPT_COUNT */
	const char *const *words; /* OPT_WORD: the values it takes, NULL last */
	int *seen;                /* if set, becomes 1 when the option is given */
};

#define NOPTS(table) (sizeof(table) / sizeof((table)[0]))

/* Stores one option's value, or exits through bad_arg. */
static inline void opt_store(const struct opt *o, const char *v)
{
	const char name[3] = { '-', o->letter, '\0' };
	uint64_t n;
	switch (o->kind) {
	case OPT_FLAG: *(int *)o->p = 1; break;
	case OPT_U64: *(uint64_t *)o->p = parse_u64(v, name); break;
	case OPT_SIZE: *(size_t *)o->p = (size_t)parse_u64(v, name); break;
	case OPT_DOUBLE: *(double *)o->p = parse_pos_double(v, name); break;
	case OPT_PATH:
		if (strlen(v) >= o->max)
			bad_arg(name, v);
		strcpy(o->p, v);
		break;
	case OPT_COUNT:
		n = parse_u64(v, name);
		if (n == 0 || n > o->max)
			bad_arg(name, v);
		*(unsigned *)o->p = (unsigned)n;
		break;
	case OPT_WORD:
		for (n = 0; o->words[n] && strcmp(v, o->words[n]) != 0; n++)
			;
		if (!o->words[n])
			bad_arg(name, v);
		*(int *)o->p = (int)n;
		break;
	}
	if (o->seen)
		*o->seen = 1;
}

static inline void parse_opts(int argc, char **argv, const struct opt *t, size_t n)
{
	char spec[64] = "h";
	for (size_t i = 0, k = 1; i < n && k + 3 < sizeof(spec); i++) {
		spec[k++] = t[i].letter;
		if (t[i].kind != OPT_FLAG)
			spec[k++] = ':';
		spec[k] = '\0';
	}
	int c;
	while ((c = getopt(argc, argv, spec)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		size_t i = 0;
		while (i < n && t[i].letter != c)
			i++;
		if (i == n) {
			usage(stderr);
			exit(2);
		}
		opt_store(&t[i], optarg);
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", PROG, argv[optind]);
		usage(stderr);
		exit(2);
	}
}

#endif /* SYNCSHIM_EXAMPLES_H */
