/*
 * big_write_fsync - a large write followed by fsync, in a loop.
 *
 * The simplest durable-write workload: each iteration writes SIZE bytes
 * (1 MiB by default) at the end of the file and fsyncs it, the way a
 * database checkpoint or a log segment flush does. Under the shim the
 * fsync latency is what a policy changes; the write latency shows how
 * long copying into the page cache takes (and whether it stalls on
 * writeback of the previous iteration).
 *
 * Data: the file is a sequence of 16-byte records, each its own offset as
 * 15 hex digits and '\n', so contents can be checked at any offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "big_write_fsync"
#define NS_PER_US 1000ULL
#define NS_PER_SEC 1000000000ULL
#define MIB 1048576.0
#define SAMPLE_CAP (1u << 20)

struct options {
	char path[4096];
	uint64_t count;
	size_t size;
	uint64_t every;   /* print every Nth iteration; 0 = choose */
	int keep;
};

/* Latency samples: exact count/sum/max, percentiles from up to cap
 * samples (a uniform reservoir once more than cap were added). */
struct lat {
	uint64_t *v;
	size_t n, cap;
	uint64_t count, sum, max;
	uint64_t rng;
};

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(errno));
	exit(1);
}

static void die_path(const char *what, const char *path)
{
	int e = errno;
	fprintf(stderr, "%s: %s %s: %s\n", PROG, what, path, strerror(e));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		die("clock_gettime");
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Byte o of the file belongs to the record at o & ~15: that offset in
 * 15 hex digits then '\n'. Depends only on the offset, so any write of any
 * size at any position produces the same file. */
static void record_init(char r[16], uint64_t rec)
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
static void record_next(char r[16])
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

static void fill_pattern(char *buf, uint64_t off, size_t len)
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

static void lat_init(struct lat *l, size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->cap = cap ? cap : 1;
	l->v = malloc(l->cap * sizeof(*l->v));
	if (!l->v)
		die("malloc");
	l->rng = 0x9e3779b97f4a7c15ULL;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void lat_add(struct lat *l, uint64_t ns)
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void lat_sort(struct lat *l)
{
	qsort(l->v, l->n, sizeof(*l->v), cmp_u64);
}

/* Nearest-rank percentile in microseconds; call lat_sort first. */
static double lat_pct_us(const struct lat *l, double p)
{
	if (l->n == 0)
		return 0;
	size_t idx = (size_t)ceil(p / 100.0 * (double)l->n);
	idx = idx ? idx - 1 : 0;
	if (idx >= l->n)
		idx = l->n - 1;
	return (double)l->v[idx] / NS_PER_US;
}

static double lat_mean_us(const struct lat *l)
{
	return l->count ? (double)l->sum / (double)l->count / NS_PER_US : 0;
}

static double lat_max_us(const struct lat *l)
{
	return (double)l->max / NS_PER_US;
}

/* write() the whole buffer, retrying short writes. */
static int write_full(int fd, const char *buf, size_t len)
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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-f FILE] [-n COUNT] [-s SIZE] [-e N] [-k]\n"
		"  COUNT times: write SIZE bytes at the end of FILE, then fsync it.\n"
		"  -f FILE   file to write (default /tmp/big_write_fsync.PID.dat)\n"
		"  -n COUNT  iterations (default 20)\n"
		"  -s SIZE   bytes per write, k/m/g suffix ok (default 1m)\n"
		"  -e N      print every Nth iteration (default: all up to 50, else ~20 lines)\n"
		"  -k        keep the file (default: remove it)\n"
		"  -h        this help\n",
		PROG);
}

static void bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "%s: bad value for %s: '%s'\n", PROG, opt, val);
	usage(stderr);
	exit(2);
}

/* Unsigned integer with optional k/m/g (binary) suffix. */
static uint64_t parse_u64(const char *s, const char *opt)
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

static void parse_options(int argc, char **argv, struct options *o)
{
	snprintf(o->path, sizeof(o->path), "/tmp/%s.%ld.dat", PROG, (long)getpid());
	o->count = 20;
	o->size = 1 << 20;
	o->every = 0;
	o->keep = 0;
	int c;
	while ((c = getopt(argc, argv, "f:n:s:e:kh")) != -1) {
		switch (c) {
		case 'f':
			if (strlen(optarg) >= sizeof(o->path))
				bad_arg("-f", optarg);
			strcpy(o->path, optarg);
			break;
		case 'n': o->count = parse_u64(optarg, "-n"); break;
		case 's': o->size = (size_t)parse_u64(optarg, "-s"); break;
		case 'e': o->every = parse_u64(optarg, "-e"); break;
		case 'k': o->keep = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", PROG, argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (o->size == 0)
		bad_arg("-s", "0");
	if (o->every == 0)
		o->every = o->count <= 50 ? 1 : (o->count + 19) / 20;
}

/* The file must hold exactly what was written. */
static void verify_size(int fd, const char *path, uint64_t bytes)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		die("fstat");
	if ((uint64_t)st.st_size != bytes) {
		fprintf(stderr, "%s: %s is %lld bytes, expected %llu\n", PROG, path,
			(long long)st.st_size, (unsigned long long)bytes);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct options o;
	struct lat wl, sl;
	parse_options(argc, argv, &o);
	size_t cap = o.count < SAMPLE_CAP ? (size_t)o.count : SAMPLE_CAP;
	lat_init(&wl, cap);
	lat_init(&sl, cap);
	char *buf = malloc(o.size);
	if (!buf)
		die("malloc");
	int fd = open(o.path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die_path("open", o.path);

	printf("%s: %llu x (write %zu bytes + fsync), file %s\n", PROG,
	       (unsigned long long)o.count, o.size, o.path);
	printf("%6s %12s %12s\n", "iter", "write_ms", "fsync_ms");
	fflush(stdout);

	uint64_t bytes = 0, io_ns = 0, t0 = now_ns();
	for (uint64_t i = 0; i < o.count; i++) {
		/* Filling is outside the timed calls (about 0.2 ms per MiB). */
		fill_pattern(buf, bytes, o.size);
		uint64_t a = now_ns();
		if (write_full(fd, buf, o.size) != 0)
			die("write");
		uint64_t b = now_ns();
		if (fsync(fd) != 0)
			die("fsync");
		uint64_t c = now_ns();
		bytes += o.size;
		io_ns += c - a;
		lat_add(&wl, b - a);
		lat_add(&sl, c - b);
		if (i % o.every == 0 || i + 1 == o.count)
			printf("%6llu %12.3f %12.3f\n", (unsigned long long)i,
			       (double)(b - a) / 1e6, (double)(c - b) / 1e6);
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	double io_secs = (double)io_ns / NS_PER_SEC;

	verify_size(fd, o.path, bytes);
	if (close(fd) != 0)
		die("close");
	if (!o.keep && unlink(o.path) != 0)
		die_path("unlink", o.path);

	lat_sort(&wl);
	lat_sort(&sl);
	/* MB/s over the time spent in write+fsync, so filling the buffer
	 * (not part of the workload being measured) does not count. */
	double mbps = io_secs > 0 ? (double)bytes / MIB / io_secs : 0;
	printf("\n%llu writes of %zu bytes (%.1f MB) in %.3f s (%.3f s in write+fsync): %.2f MB/s\n",
	       (unsigned long long)o.count, o.size, (double)bytes / MIB, secs, io_secs, mbps);
	printf("write ms: mean %.3f  p50 %.3f  p99 %.3f  max %.3f\n", lat_mean_us(&wl) / 1e3,
	       lat_pct_us(&wl, 50) / 1e3, lat_pct_us(&wl, 99) / 1e3, lat_max_us(&wl) / 1e3);
	printf("fsync ms: mean %.3f  p50 %.3f  p99 %.3f  max %.3f\n", lat_mean_us(&sl) / 1e3,
	       lat_pct_us(&sl, 50) / 1e3, lat_pct_us(&sl, 99) / 1e3, lat_max_us(&sl) / 1e3);
	printf("result: writes=%llu bytes=%llu seconds=%.3f io_seconds=%.3f mb_per_sec=%.2f"
	       " write_mean_us=%.1f write_p50_us=%.1f write_p99_us=%.1f write_max_us=%.1f"
	       " sync_mean_us=%.1f sync_p50_us=%.1f sync_p99_us=%.1f sync_max_us=%.1f\n",
	       (unsigned long long)o.count, (unsigned long long)bytes, secs, io_secs, mbps,
	       lat_mean_us(&wl), lat_pct_us(&wl, 50), lat_pct_us(&wl, 99), lat_max_us(&wl),
	       lat_mean_us(&sl), lat_pct_us(&sl, 50), lat_pct_us(&sl, 99), lat_max_us(&sl));
	free(buf);
	free(wl.v);
	free(sl.v);
	return 0;
}
