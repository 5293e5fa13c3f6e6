/*
 * fsync_thread - does an fsync in one thread stall appends in another?
 *
 * Reproduces the Kafka observation that a flusher thread calling fsync on
 * a log file can block the thread appending to the same file: on many
 * filesystems (ext4 with data=ordered in particular) the appender waits on
 * the inode or the journal while the sync is in flight.
 *
 * One thread appends SIZE bytes every -w microseconds with write(); a
 * second thread, holding its own fd on the same file, calls fsync every -i
 * microseconds. Both run for -t seconds. The per-second table shows write
 * latency next to sync latency, so a stall lines up with a sync.
 *
 * Data: the file is a sequence of 16-byte records, each its own offset as
 * 15 hex digits and '\n', so contents can be checked at any offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "fsync_thread"
#include "examples.h"

/* Overall samples kept for percentiles; past this a uniform reservoir. */
#define OVERALL_CAP (1u << 20)
/* Per-second samples kept for the per-second p99. */
#define SECOND_CAP_MAX (1u << 16)

struct options {
	char path[4096];
	size_t size;
	uint64_t write_every_us;
	uint64_t sync_every_us;
	double seconds;
	int keep;
};

struct run {
	const struct options *opt;
	int wfd, sfd;
	uint64_t t0, t_end;
	unsigned nsec;               /* rows of the per-second table */
	struct lat wall, sall;       /* overall write / sync latency */
	struct lat *wsec, *ssec;     /* per second */
	uint64_t bytes;
	atomic_int writer_done;
	/* A failed call per thread (0 writer, 1 syncer): errno, 0 if none. */
	int err[2];
	const char *err_what[2];
};

static unsigned second_of(const struct run *r, uint64_t t)
{
	uint64_t s = (t - r->t0) / NS_PER_SEC;
	return s < r->nsec ? (unsigned)s : r->nsec - 1;
}

/* Record a thread's failure for main to report after the join, rather
 * than exit() while the other thread is in the middle of a call. */
static void fail(struct run *r, int who, const char *what)
{
	r->err[who] = errno;
	r->err_what[who] = what;
}

/*
 * Appender: one write every write_every_us on a fixed schedule. When a
 * write stalls past its next slot the missed slots are skipped, not
 * replayed in a burst, so each second's write count shows the stall.
 */
static void *writer_main(void *arg)
{
	struct run *r = arg;
	size_t size = r->opt->size;
	uint64_t step = r->opt->write_every_us * NS_PER_US;
	char *buf = malloc(size);
	if (!buf) {
		fail(r, 0, "malloc");
		goto out;
	}
	for (uint64_t next = r->t0;;) {
		sleep_until(next);
		fill_pattern(buf, r->bytes, size);
		uint64_t a = now_ns();
		if (a >= r->t_end)
			break;
		if (write_full(r->wfd, buf, size) != 0) {
			fail(r, 0, "write");
			break;
		}
		uint64_t b = now_ns();
		lat_add(&r->wall, b - a);
		lat_add(&r->wsec[second_of(r, a)], b - a);
		r->bytes += size;
		next += step;
		if (next < b)
			next = b;
	}
out:
	free(buf);
	atomic_store(&r->writer_done, 1);
	return NULL;
}

/* Flusher: fsync its own fd on the file every sync_every_us. */
static void *syncer_main(void *arg)
{
	struct run *r = arg;
	uint64_t step = r->opt->sync_every_us * NS_PER_US;
	for (uint64_t next = r->t0 + step;;) {
		sleep_until(next);
		uint64_t a = now_ns();
		if (a >= r->t_end || atomic_load(&r->writer_done))
			break;
		if (fsync(r->sfd) != 0) {
			fail(r, 1, "fsync");
			break;
		}
		uint64_t b = now_ns();
		lat_add(&r->sall, b - a);
		lat_add(&r->ssec[second_of(r, a)], b - a);
		next += step;
		if (next < b)
			next = b;
	}
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-f FILE] [-s SIZE] [-w US] [-i US] [-t SECONDS] [-k]\n"
		"  One thread appends SIZE bytes every -w us while another fsyncs the\n"
		"  same file (its own fd) every -i us; shows whether syncs stall appends.\n"
		"  -f FILE     file to write (default /tmp/fsync_thread.PID.dat)\n"
		"  -s SIZE     bytes per append, k/m suffix ok (default 1024)\n"
		"  -w US       microseconds between appends (default 100)\n"
		"  -i US       microseconds between fsyncs (default 500)\n"
		"  -t SECONDS  run time, fractions ok (default 3)\n"
		"  -k          keep the file (default: remove it)\n"
		"  -h          this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	snprintf(o->path, sizeof(o->path), "/tmp/%s.%ld.dat", PROG, (long)getpid());
	o->size = 1024;
	o->write_every_us = 100;
	o->sync_every_us = 500;
	o->seconds = 3;
	o->keep = 0;
	const struct opt opts[] = {
		{ 'f', OPT_PATH, .p = o->path, .max = sizeof(o->path) },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'w', OPT_U64, .p = &o->write_every_us },
		{ 'i', OPT_U64, .p = &o->sync_every_us },
		{ 't', OPT_DOUBLE, .p = &o->seconds },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (o->size == 0)
		bad_arg("-s", "0");
	if (o->sync_every_us == 0)
		bad_arg("-i", "0");
}

/* Per-second reservoir size: about twice the expected count, bounded. */
static size_t per_second_cap(uint64_t every_us)
{
	uint64_t expect = every_us ? 1000000 / every_us : SECOND_CAP_MAX;
	uint64_t cap = expect * 2 + 16;
	return cap > SECOND_CAP_MAX ? SECOND_CAP_MAX : (size_t)cap;
}

/* Whole-run sample array: the expected count with room to spare, bounded. */
static size_t overall_cap(uint64_t every_us, double seconds)
{
	double expect = every_us ? seconds * 1e6 / (double)every_us : OVERALL_CAP;
	double cap = expect * 1.5 + 1024;
	return cap > OVERALL_CAP ? OVERALL_CAP : (size_t)cap;
}

static void setup(struct run *r, const struct options *o)
{
	memset(r, 0, sizeof(*r));
	r->opt = o;
	r->nsec = (unsigned)ceil(o->seconds);
	lat_init(&r->wall, overall_cap(o->write_every_us, o->seconds));
	lat_init(&r->sall, overall_cap(o->sync_every_us, o->seconds));
	r->wsec = calloc(r->nsec, sizeof(*r->wsec));
	r->ssec = calloc(r->nsec, sizeof(*r->ssec));
	if (!r->wsec || !r->ssec)
		die("calloc");
	for (unsigned s = 0; s < r->nsec; s++) {
		lat_init(&r->wsec[s], per_second_cap(o->write_every_us));
		lat_init(&r->ssec[s], per_second_cap(o->sync_every_us));
	}
	r->wfd = open(o->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (r->wfd < 0)
		die_path("open", o->path);
	/* The flusher's own fd, as a separate flusher component would have. */
	r->sfd = open(o->path, O_WRONLY);
	if (r->sfd < 0)
		die_path("open", o->path);
}

static void run_threads(struct run *r)
{
	pthread_t wt, st;
	int rc;
	r->t0 = now_ns();
	r->t_end = r->t0 + (uint64_t)(r->opt->seconds * NS_PER_SEC);
	if ((rc = pthread_create(&wt, NULL, writer_main, r)) != 0 ||
	    (rc = pthread_create(&st, NULL, syncer_main, r)) != 0) {
		errno = rc;
		die("pthread_create");
	}
	if ((rc = pthread_join(wt, NULL)) != 0 || (rc = pthread_join(st, NULL)) != 0) {
		errno = rc;
		die("pthread_join");
	}
	for (int who = 0; who < 2; who++) {
		if (r->err[who]) {
			errno = r->err[who];
			die(r->err_what[who]);
		}
	}
}

/* The file must hold exactly what the appender wrote. */
static void verify_size(const struct run *r)
{
	struct stat st;
	if (fstat(r->wfd, &st) != 0)
		die("fstat");
	if ((uint64_t)st.st_size != r->bytes) {
		fprintf(stderr, "%s: %s is %lld bytes, expected %llu\n", PROG,
			r->opt->path, (long long)st.st_size, (unsigned long long)r->bytes);
		exit(1);
	}
}

static void print_table(struct run *r)
{
	printf("%4s %8s %10s %10s %10s %6s %10s %10s\n", "sec", "writes",
	       "w_mean_us", "w_p99_us", "w_max_us", "syncs", "s_mean_us", "s_max_us");
	for (unsigned s = 0; s < r->nsec; s++) {
		struct lat *w = &r->wsec[s], *y = &r->ssec[s];
		lat_sort(w);
		printf("%4u %8llu %10.1f %10.1f %10.1f %6llu %10.1f %10.1f\n", s,
		       (unsigned long long)w->count, lat_mean_us(w), lat_pct_us(w, 99),
		       lat_max_us(w), (unsigned long long)y->count, lat_mean_us(y),
		       lat_max_us(y));
	}
}

static void print_summary(struct run *r, double secs)
{
	struct lat *w = &r->wall, *y = &r->sall;
	lat_sort(w);
	lat_sort(y);
	uint64_t slow = 0;
	for (size_t i = 0; i < w->n; i++)
		slow += w->v[i] >= 1000 * NS_PER_US;
	/* Scale the >=1 ms count if percentiles came from a reservoir. */
	if (w->n < w->count && w->n)
		slow = (uint64_t)((double)slow * (double)w->count / (double)w->n);

	printf("\n%llu appends of %zu bytes (%.2f MB) and %llu fsyncs in %.3f s\n",
	       (unsigned long long)w->count, r->opt->size,
	       (double)r->bytes / 1048576.0, (unsigned long long)y->count, secs);
	printf("write us: mean %.1f  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (>=1ms: %llu)\n",
	       lat_mean_us(w), lat_pct_us(w, 50), lat_pct_us(w, 99), lat_pct_us(w, 99.9),
	       lat_max_us(w), (unsigned long long)slow);
	printf("fsync us: mean %.1f  p50 %.1f  p99 %.1f  max %.1f\n", lat_mean_us(y),
	       lat_pct_us(y, 50), lat_pct_us(y, 99), lat_max_us(y));
	if (w->n < w->count || y->n < y->count)
		printf("(percentiles from a uniform sample of %zu writes / %zu syncs)\n",
		       w->n, y->n);
	printf("result: writes=%llu syncs=%llu bytes=%llu seconds=%.3f"
	       " write_mean_us=%.1f write_p50_us=%.1f write_p99_us=%.1f"
	       " write_p999_us=%.1f write_max_us=%.1f writes_over_1ms=%llu"
	       " sync_mean_us=%.1f sync_p50_us=%.1f sync_p99_us=%.1f sync_max_us=%.1f\n",
	       (unsigned long long)w->count, (unsigned long long)y->count,
	       (unsigned long long)r->bytes, secs, lat_mean_us(w), lat_pct_us(w, 50),
	       lat_pct_us(w, 99), lat_pct_us(w, 99.9), lat_max_us(w),
	       (unsigned long long)slow, lat_mean_us(y), lat_pct_us(y, 50),
	       lat_pct_us(y, 99), lat_max_us(y));
}

static void teardown(struct run *r)
{
	for (unsigned s = 0; s < r->nsec; s++) {
		free(r->wsec[s].v);
		free(r->ssec[s].v);
	}
	free(r->wsec);
	free(r->ssec);
	free(r->wall.v);
	free(r->sall.v);
}

int main(int argc, char **argv)
{
	struct options o;
	struct run r;
	parse_options(argc, argv, &o);
	setup(&r, &o);
	printf("%s: %zu-byte appends every %llu us, fsync every %llu us, %.1f s, file %s\n",
	       PROG, o.size, (unsigned long long)o.write_every_us,
	       (unsigned long long)o.sync_every_us, o.seconds, o.path);
	fflush(stdout);
	run_threads(&r);
	double secs = (double)(now_ns() - r.t0) / NS_PER_SEC;
	verify_size(&r);
	if (close(r.wfd) != 0 || close(r.sfd) != 0)
		die("close");
	if (!o.keep && unlink(o.path) != 0)
		die_path("unlink", o.path);
	print_table(&r);
	print_summary(&r, secs);
	teardown(&r);
	return 0;
}
