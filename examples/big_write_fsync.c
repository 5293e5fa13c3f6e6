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
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "big_write_fsync"
#include "examples.h"

#define MIB 1048576.0
#define SAMPLE_CAP (1u << 20)

struct options {
	char path[4096];
	uint64_t count;
	size_t size;
	uint64_t every;   /* print every Nth iteration; 0 = choose */
	int keep;
};

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

static void parse_options(int argc, char **argv, struct options *o)
{
	snprintf(o->path, sizeof(o->path), "/tmp/%s.%ld.dat", PROG, (long)getpid());
	o->count = 20;
	o->size = 1 << 20;
	o->every = 0;
	o->keep = 0;
	const struct opt opts[] = {
		{ 'f', OPT_PATH, .p = o->path, .max = sizeof(o->path) },
		{ 'n', OPT_U64, .p = &o->count },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'e', OPT_U64, .p = &o->every },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
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
