/*
 * wal_append - a write-ahead log: append a record, sync, acknowledge.
 *
 * What a broker's journal or a database's WAL does for each commit: one
 * fixed-size, checksummed record appended with write(), fsync (or
 * fdatasync), and only once the sync returned, an acknowledgement to the
 * client, here a line "acked SEQ MONO_NS WRITTEN_NS" (when the sync
 * returned, when the record was made) appended to an ack file that
 * lives outside the crash test's scope (a client's memory survives the
 * server's power cut). After a cut and rollback, every acknowledged
 * record must still be in the log: wal_check says which are not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "wal_append"
#include "examples.h"
#include "wal.h"

enum sync_method { M_FSYNC, M_FDATASYNC, M_NONE };
static const char *const methods[] = { "fsync", "fdatasync", "none", NULL };

struct options {
	char wal[4096], acks[4096];
	uint64_t count, interval_us;
	double seconds;
	size_t size;
	int method, keep, wal_given, acks_given;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-f WAL] [-a ACKS] [-n COUNT] [-t SECONDS] [-s SIZE] [-i US] [-m METHOD] [-k]\n"
		"  COUNT times: append a SIZE-byte checksummed record to WAL, sync it, then\n"
		"  append \"acked SEQ MONO_NS WRITTEN_NS\" to ACKS (keep ACKS outside a crash test's scope).\n"
		"  -f WAL      the log (default /tmp/wal_append.PID.wal), truncated first\n"
		"  -a ACKS     the acknowledgements (default /tmp/wal_append.PID.acks)\n"
		"  -n COUNT    records (default 1000)\n"
		"  -t SECONDS  stop after this long, whatever COUNT (default: no limit)\n"
		"  -s SIZE     bytes per record, 32 to 1m (default 128)\n"
		"  -i US       pause between records (default 0)\n"
		"  -m METHOD   fsync (default), fdatasync, or none (acknowledge without syncing)\n"
		"  -k          keep WAL and ACKS (default: remove them)\n"
		"  -h          this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->wal, sizeof(o->wal), "/tmp/%s.%ld.wal", PROG, (long)getpid());
	snprintf(o->acks, sizeof(o->acks), "/tmp/%s.%ld.acks", PROG, (long)getpid());
	o->count = 1000;
	o->size = 128;
	int seconds_given = 0;
	const struct opt opts[] = {
		{ 'f', OPT_PATH, .p = o->wal, .max = sizeof(o->wal), .seen = &o->wal_given },
		{ 'a', OPT_PATH, .p = o->acks, .max = sizeof(o->acks), .seen = &o->acks_given },
		{ 'n', OPT_U64, .p = &o->count },
		{ 't', OPT_DOUBLE, .p = &o->seconds, .seen = &seconds_given },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'i', OPT_U64, .p = &o->interval_us },
		{ 'm', OPT_WORD, .p = &o->method, .words = methods },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (o->size < WAL_MIN_SIZE || o->size > WAL_MAX_SIZE)
		bad_arg("-s", "out of range");
	if (!seconds_given)
		o->seconds = 0;
}

static void sync_wal(int fd, int method, const char *path)
{
	if (method == M_FSYNC && fsync(fd) != 0)
		die_path("fsync", path);
	if (method == M_FDATASYNC && fdatasync(fd) != 0)
		die_path("fdatasync", path);
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);
	int wal = open(o.wal, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (wal < 0)
		die_path("open", o.wal);
	int acks = open(o.acks, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (acks < 0)
		die_path("open", o.acks);
	uint8_t *rec = malloc(o.size);
	struct lat sync_lat;
	lat_init(&sync_lat, o.count < (1u << 20) ? (size_t)o.count : (1u << 20));
	if (!rec)
		die("malloc");
	uint64_t t0 = now_ns(), stop = o.seconds > 0 ? t0 + (uint64_t)(o.seconds * 1e9) : UINT64_MAX, seq;
	for (seq = 0; seq < o.count && now_ns() < stop; seq++) {
		uint64_t written = now_ns();
		wal_make(rec, (uint32_t)o.size, seq, written);
		if (write_full(wal, (const char *)rec, o.size) != 0)
			die_path("write", o.wal);
		uint64_t a = now_ns();
		sync_wal(wal, o.method, o.wal);
		uint64_t b = now_ns();
		lat_add(&sync_lat, b - a);
		char line[64];
		int n = snprintf(line, sizeof(line), "acked %llu %llu %llu\n", (unsigned long long)seq,
				 (unsigned long long)b, (unsigned long long)written);
		if (write_full(acks, line, (size_t)n) != 0)
			die_path("write", o.acks);
		if (o.interval_us)
			sleep_until(now_ns() + o.interval_us * NS_PER_US);
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	if (close(wal) != 0 || close(acks) != 0)
		die("close");
	if (!o.keep && (unlink(o.wal) != 0 || unlink(o.acks) != 0))
		die("unlink");
	lat_sort(&sync_lat);
	printf("%llu records of %zu bytes appended and acknowledged in %.3f s (%s each)\n",
	       (unsigned long long)seq, o.size, secs, methods[o.method]);
	printf("result: records=%llu seconds=%.3f records_per_sec=%.1f sync_p50_us=%.1f sync_p99_us=%.1f\n",
	       (unsigned long long)seq, secs, secs > 0 ? (double)seq / secs : 0, lat_pct_us(&sync_lat, 50),
	       lat_pct_us(&sync_lat, 99));
	free(rec);
	free(sync_lat.v);
	return 0;
}
