/*
 * roundrobin_stall - why do write calls sometimes block?
 *
 * Reproduces Jay Kreps' experiment: a process appends small (4 KiB) chunks
 * round-robin over ten files at a modest fixed rate, never calling any
 * sync. Writes should only copy into the page cache, yet every so often
 * one blocks for tens or hundreds of milliseconds: background writeback
 * of the dirty pages (or the journal) holds up a page the write needs.
 * The per-second table makes the stalls stand out.
 *
 * Pacing: time is cut into 10 ms slices; at the start of each slice the
 * writer writes everything due by the slice's end, then sleeps until the
 * next slice. A writer that fell behind (a stalled write) catches up
 * without sleeping, so the long-run rate stays the asked one.
 *
 * Data: each file is a sequence of 16-byte records, each its own offset
 * as 15 hex digits and '\n', so contents can be checked at any offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "roundrobin_stall"
#include "examples.h"

#define NS_PER_MS 1000000ULL
#define MIB 1048576.0
#define SLICE_NS (10 * NS_PER_MS)
#define SAMPLE_CAP (1u << 20)
#define MAX_FILES 100000

struct options {
	char dir[4096];
	int own_dir;      /* we made dir (default), so we remove it */
	unsigned nfiles;
	size_t size;
	double rate_mbps; /* MiB per second */
	double seconds;
	int keep;
};

/* One row of the per-second table. */
struct second {
	uint64_t calls, bytes, sum_ns, max_ns;
};

struct file {
	char path[4200];
	int fd;
	uint64_t off;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-d DIR] [-n FILES] [-s SIZE] [-r MB_PER_SEC] [-t SECONDS] [-k]\n"
		"  Appends SIZE-byte chunks round-robin over FILES files at a fixed rate,\n"
		"  with no sync at all, and reports per-second write latency (stalls).\n"
		"  -d DIR          existing directory for the files\n"
		"                  (default: a new /tmp/roundrobin_stall.PID, removed after)\n"
		"  -n FILES        number of files (default 10)\n"
		"  -s SIZE         bytes per write, k/m suffix ok (default 4096)\n"
		"  -r MB_PER_SEC   total rate in MiB/s, fractions ok (default 20)\n"
		"  -t SECONDS      run time, fractions ok (default 5)\n"
		"  -k              keep the files (default: remove them)\n"
		"  -h              this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	snprintf(o->dir, sizeof(o->dir), "/tmp/%s.%ld", PROG, (long)getpid());
	o->nfiles = 10;
	o->size = 4096;
	o->rate_mbps = 20;
	o->seconds = 5;
	o->keep = 0;
	int dir_given = 0;
	const struct opt opts[] = {
		{ 'd', OPT_PATH, .p = o->dir, .max = sizeof(o->dir), .seen = &dir_given },
		{ 'n', OPT_COUNT, .p = &o->nfiles, .max = MAX_FILES },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'r', OPT_DOUBLE, .p = &o->rate_mbps },
		{ 't', OPT_DOUBLE, .p = &o->seconds },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	o->own_dir = !dir_given;
	if (o->size == 0)
		bad_arg("-s", "0");
}

static struct file *open_files(const struct options *o)
{
	if (o->own_dir && mkdir(o->dir, 0755) != 0)
		die_path("mkdir", o->dir);
	struct file *f = calloc(o->nfiles, sizeof(*f));
	if (!f)
		die("calloc");
	for (unsigned i = 0; i < o->nfiles; i++) {
		snprintf(f[i].path, sizeof(f[i].path), "%s/rr.%u.dat", o->dir, i);
		f[i].fd = open(f[i].path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (f[i].fd < 0)
			die_path("open", f[i].path);
	}
	return f;
}

/* Check each file holds what was written to it, close it, and remove it
 * (and our own directory) unless asked to keep them. */
static void close_files(const struct options *o, struct file *f)
{
	for (unsigned i = 0; i < o->nfiles; i++) {
		struct stat st;
		if (fstat(f[i].fd, &st) != 0)
			die_path("fstat", f[i].path);
		if ((uint64_t)st.st_size != f[i].off) {
			fprintf(stderr, "%s: %s is %lld bytes, expected %llu\n", PROG,
				f[i].path, (long long)st.st_size,
				(unsigned long long)f[i].off);
			exit(1);
		}
		if (close(f[i].fd) != 0)
			die_path("close", f[i].path);
		if (!o->keep && unlink(f[i].path) != 0)
			die_path("unlink", f[i].path);
	}
	if (o->own_dir && !o->keep && rmdir(o->dir) != 0)
		die_path("rmdir", o->dir);
	free(f);
}

struct stats {
	struct lat all;
	struct second *sec;
	unsigned nsec;
	uint64_t bytes, max_behind_ns;
};

/*
 * The paced write loop. Write k is due at t0 + k * size / rate; each
 * slice writes everything due by the slice's end. Latency and bytes are
 * charged to the second in which the write started.
 */
static void run(const struct options *o, struct file *f, struct stats *s)
{
	double bytes_per_ns = o->rate_mbps * MIB / NS_PER_SEC;
	char *buf = malloc(o->size);
	if (!buf)
		die("malloc");
	uint64_t t0 = now_ns(), t_end = t0 + (uint64_t)(o->seconds * NS_PER_SEC);
	uint64_t k = 0;
	for (;;) {
		uint64_t now = now_ns();
		if (now >= t_end)
			break;
		uint64_t slice_end = t0 + ((now - t0) / SLICE_NS + 1) * SLICE_NS;
		uint64_t due_bytes = (uint64_t)((double)(slice_end - t0) * bytes_per_ns);
		while (s->bytes + o->size <= due_bytes) {
			struct file *cur = &f[k % o->nfiles];
			fill_pattern(buf, cur->off, o->size);
			uint64_t a = now_ns();
			if (a >= t_end)
				break;
			if (write_full(cur->fd, buf, o->size) != 0)
				die_path("write", cur->path);
			uint64_t b = now_ns();
			uint64_t due = t0 + (uint64_t)((double)s->bytes / bytes_per_ns);
			if (a > due && a - due > s->max_behind_ns)
				s->max_behind_ns = a - due;
			struct second *sec = &s->sec[(a - t0) / NS_PER_SEC < s->nsec
						     ? (a - t0) / NS_PER_SEC : s->nsec - 1];
			sec->calls++;
			sec->bytes += o->size;
			sec->sum_ns += b - a;
			if (b - a > sec->max_ns)
				sec->max_ns = b - a;
			lat_add(&s->all, b - a);
			cur->off += o->size;
			s->bytes += o->size;
			k++;
		}
		sleep_until(slice_end);
	}
	free(buf);
}

/* Per-second rows; returns the index of the second with the worst max.
 * The last row may cover a fraction of a second (-t 2.5): its MB/s is
 * over that fraction. */
static unsigned print_table(const struct stats *s, double seconds)
{
	unsigned worst = 0;
	printf("%4s %8s %8s %10s %10s\n", "sec", "MB/s", "calls", "mean_ms", "max_ms");
	for (unsigned i = 0; i < s->nsec; i++) {
		const struct second *r = &s->sec[i];
		double len = seconds - i < 1 ? seconds - i : 1;
		printf("%4u %8.2f %8llu %10.3f %10.3f\n", i, (double)r->bytes / MIB / len,
		       (unsigned long long)r->calls,
		       r->calls ? (double)r->sum_ns / (double)r->calls / NS_PER_MS : 0.0,
		       (double)r->max_ns / NS_PER_MS);
		if (r->max_ns > s->sec[worst].max_ns)
			worst = i;
	}
	return worst;
}

int main(int argc, char **argv)
{
	struct options o;
	struct stats s;
	parse_options(argc, argv, &o);
	memset(&s, 0, sizeof(s));
	s.nsec = (unsigned)ceil(o.seconds);
	s.sec = calloc(s.nsec, sizeof(*s.sec));
	if (!s.sec)
		die("calloc");
	double expect = o.rate_mbps * MIB * o.seconds / (double)o.size + 16;
	lat_init(&s.all, expect < SAMPLE_CAP ? (size_t)expect : SAMPLE_CAP);
	struct file *f = open_files(&o);

	printf("%s: %zu-byte writes round-robin over %u files in %s at %.2f MB/s for %.1f s, no sync\n",
	       PROG, o.size, o.nfiles, o.dir, o.rate_mbps, o.seconds);
	fflush(stdout);
	uint64_t t0 = now_ns();
	run(&o, f, &s);
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	close_files(&o, f);

	unsigned worst = print_table(&s, o.seconds);
	lat_sort(&s.all);
	double mbps = (double)s.bytes / MIB / secs;
	printf("\n%llu writes, %.2f MB in %.3f s: %.2f MB/s (asked %.2f), at most %.3f ms behind schedule\n",
	       (unsigned long long)s.all.count, (double)s.bytes / MIB, secs, mbps,
	       o.rate_mbps, (double)s.max_behind_ns / NS_PER_MS);
	printf("write ms: mean %.3f  p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f (second %u)\n",
	       lat_mean_us(&s.all) / 1e3, lat_pct_us(&s.all, 50) / 1e3,
	       lat_pct_us(&s.all, 99) / 1e3, lat_pct_us(&s.all, 99.9) / 1e3,
	       lat_max_us(&s.all) / 1e3, worst);
	if (s.all.n < s.all.count)
		printf("(percentiles from a uniform sample of %zu writes)\n", s.all.n);
	printf("result: writes=%llu bytes=%llu seconds=%.3f mb_per_sec=%.2f"
	       " write_mean_us=%.1f write_p50_us=%.1f write_p99_us=%.1f write_max_us=%.1f"
	       " worst_second=%u worst_second_max_ms=%.3f max_behind_ms=%.3f\n",
	       (unsigned long long)s.all.count, (unsigned long long)s.bytes, secs, mbps,
	       lat_mean_us(&s.all), lat_pct_us(&s.all, 50), lat_pct_us(&s.all, 99),
	       lat_max_us(&s.all), worst, (double)s.sec[worst].max_ns / NS_PER_MS,
	       (double)s.max_behind_ns / NS_PER_MS);
	free(s.all.v);
	free(s.sec);
	return 0;
}
