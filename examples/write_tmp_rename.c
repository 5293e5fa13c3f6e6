/*
 * write_tmp_rename - the atomic-replace pattern for a small state file.
 *
 * Programs that keep a small state or checkpoint file replace it safely by
 * writing DIR/state.tmp, fsyncing it, and renaming it over DIR/state;
 * the rename is atomic, and the fsync before it makes sure the new name
 * never points at a file whose data is not yet on disk (the ext4
 * "zero-length file after crash" lesson). An fsync of the directory (-D)
 * makes the rename itself durable. Each step's latency is reported.
 *
 * Data: the file is the line "iteration=N\n" repeated and cut to SIZE
 * bytes, so the survivor's content tells which iteration it came from.
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

#define PROG "write_tmp_rename"
#define NS_PER_US 1000ULL
#define NS_PER_SEC 1000000000ULL
#define SAMPLE_CAP (1u << 20)
#define LINE_MAX_LEN 32

struct options {
	char dir[4096];
	int own_dir;      /* we made dir (default), so we remove it */
	uint64_t count;
	size_t size;
	int dirsync;
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

struct stats {
	struct lat write, sync, rename, dirsync, iter;
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

/* Iteration i's content: "iteration=i\n" repeated, cut to size bytes. */
static void fill_state(char *buf, size_t size, uint64_t i)
{
	char line[LINE_MAX_LEN];
	int n = snprintf(line, sizeof(line), "iteration=%llu\n", (unsigned long long)i);
	for (size_t off = 0; off < size; off += (size_t)n)
		memcpy(buf + off, line, size - off < (size_t)n ? size - off : (size_t)n);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-d DIR] [-n COUNT] [-s SIZE] [-D] [-k]\n"
		"  COUNT times: write DIR/state.tmp, fsync it, rename it over DIR/state\n"
		"  (and with -D fsync DIR), the atomic-replace pattern.\n"
		"  -d DIR    existing directory (default: a new /tmp/write_tmp_rename.PID,\n"
		"            removed after)\n"
		"  -n COUNT  iterations (default 100)\n"
		"  -s SIZE   bytes in the state file, k/m suffix ok (default 256)\n"
		"  -D        fsync the directory after each rename\n"
		"  -k        keep DIR/state (default: remove it)\n"
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
	snprintf(o->dir, sizeof(o->dir), "/tmp/%s.%ld", PROG, (long)getpid());
	o->own_dir = 1;
	o->count = 100;
	o->size = 256;
	o->dirsync = 0;
	o->keep = 0;
	int c;
	while ((c = getopt(argc, argv, "d:n:s:Dkh")) != -1) {
		switch (c) {
		case 'd':
			if (strlen(optarg) >= sizeof(o->dir) - 16)
				bad_arg("-d", optarg);
			strcpy(o->dir, optarg);
			o->own_dir = 0;
			break;
		case 'n': o->count = parse_u64(optarg, "-n"); break;
		case 's': o->size = (size_t)parse_u64(optarg, "-s"); break;
		case 'D': o->dirsync = 1; break;
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
}

/* One replace: write+fsync the temp file, rename it over the state file,
 * optionally fsync the directory. dirfd < 0 means no directory sync. */
static void replace_once(const char *tmp, const char *state, int dirfd,
			 const char *buf, size_t size, struct stats *s)
{
	uint64_t a = now_ns();
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die_path("open", tmp);
	if (write_full(fd, buf, size) != 0)
		die_path("write", tmp);
	uint64_t b = now_ns();
	if (fsync(fd) != 0)
		die_path("fsync", tmp);
	uint64_t c = now_ns();
	if (close(fd) != 0)
		die_path("close", tmp);
	uint64_t d = now_ns();
	if (rename(tmp, state) != 0)
		die_path("rename", tmp);
	uint64_t e = now_ns();
	lat_add(&s->write, b - a);
	lat_add(&s->sync, c - b);
	lat_add(&s->rename, e - d);
	if (dirfd >= 0) {
		if (fsync(dirfd) != 0)
			die("fsync directory");
		uint64_t f = now_ns();
		lat_add(&s->dirsync, f - e);
		e = f;
	}
	lat_add(&s->iter, e - a);
}

/* The state file must be exactly the last iteration's content. */
static void verify_state(const char *state, const char *want, size_t size)
{
	char *got = malloc(size + 1);
	if (!got)
		die("malloc");
	int fd = open(state, O_RDONLY);
	if (fd < 0)
		die_path("open", state);
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, got + have, size + 1 - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die_path("read", state);
		}
		if (n == 0 || (have += (size_t)n) == size + 1)
			break;
	}
	if (close(fd) != 0)
		die_path("close", state);
	if (have != size || memcmp(got, want, size) != 0) {
		fprintf(stderr, "%s: %s does not hold the last iteration's content\n", PROG, state);
		exit(1);
	}
	free(got);
}

static void print_lat(const char *name, struct lat *l)
{
	lat_sort(l);
	printf("%-8s us: p50 %8.1f  p99 %8.1f  max %8.1f  mean %8.1f\n", name,
	       lat_pct_us(l, 50), lat_pct_us(l, 99), lat_max_us(l), lat_mean_us(l));
}

int main(int argc, char **argv)
{
	struct options o;
	struct stats s;
	parse_options(argc, argv, &o);
	size_t cap = o.count < SAMPLE_CAP ? (size_t)o.count : SAMPLE_CAP;
	lat_init(&s.write, cap);
	lat_init(&s.sync, cap);
	lat_init(&s.rename, cap);
	lat_init(&s.dirsync, cap);
	lat_init(&s.iter, cap);

	char tmp[4200], state[4200];
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", o.dir);
	snprintf(state, sizeof(state), "%s/state", o.dir);
	if (o.own_dir && mkdir(o.dir, 0755) != 0)
		die_path("mkdir", o.dir);
	int dirfd = -1;
	if (o.dirsync && (dirfd = open(o.dir, O_RDONLY | O_DIRECTORY)) < 0)
		die_path("open", o.dir);
	char *buf = malloc(o.size);
	if (!buf)
		die("malloc");

	printf("%s: %llu x (write %zu bytes to %s, fsync, rename to state%s)\n", PROG,
	       (unsigned long long)o.count, o.size, tmp, o.dirsync ? ", fsync dir" : "");
	fflush(stdout);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < o.count; i++) {
		fill_state(buf, o.size, i);
		replace_once(tmp, state, dirfd, buf, o.size, &s);
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;

	if (o.count > 0) {
		verify_state(state, buf, o.size);
		if (!o.keep && unlink(state) != 0)
			die_path("unlink", state);
	}
	if (dirfd >= 0 && close(dirfd) != 0)
		die_path("close", o.dir);
	if (o.own_dir && !o.keep && rmdir(o.dir) != 0)
		die_path("rmdir", o.dir);

	double rate = secs > 0 ? (double)o.count / secs : 0;
	printf("%llu replaces in %.3f s: %.1f replaces/s\n", (unsigned long long)o.count,
	       secs, rate);
	print_lat("open+wr", &s.write);
	print_lat("fsync", &s.sync);
	print_lat("rename", &s.rename);
	if (o.dirsync)
		print_lat("dirfsync", &s.dirsync);
	print_lat("total", &s.iter);
	printf("result: writes=%llu seconds=%.3f writes_per_sec=%.1f"
	       " sync_p50_us=%.1f sync_p99_us=%.1f sync_max_us=%.1f"
	       " rename_p50_us=%.1f rename_p99_us=%.1f"
	       " dirsync_p50_us=%.1f dirsync_p99_us=%.1f dirsync_max_us=%.1f"
	       " iter_p50_us=%.1f iter_p99_us=%.1f iter_max_us=%.1f dirsync=%d\n",
	       (unsigned long long)o.count, secs, rate, lat_pct_us(&s.sync, 50),
	       lat_pct_us(&s.sync, 99), lat_max_us(&s.sync), lat_pct_us(&s.rename, 50),
	       lat_pct_us(&s.rename, 99), lat_pct_us(&s.dirsync, 50),
	       lat_pct_us(&s.dirsync, 99), lat_max_us(&s.dirsync), lat_pct_us(&s.iter, 50),
	       lat_pct_us(&s.iter, 99), lat_max_us(&s.iter), o.dirsync);
	free(buf);
	free(s.write.v);
	free(s.sync.v);
	free(s.rename.v);
	free(s.dirsync.v);
	free(s.iter.v);
	return 0;
}
