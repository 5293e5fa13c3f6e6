/*
 * twolog - two logs that move together, shaped like MariaDB's commit.
 *
 * For each transaction N: append record N to log A (DIR/a.log), fsync A,
 * append the same record to log B (DIR/b.log), fsync B, and only then
 * acknowledge N: a line "acked N MONO_NS WRITTEN_NS" appended to ACKS
 * (keep it outside a crash test's scope). A database's redo log and its
 * binary log, or a broker's journal and its index, move this way: the
 * second log must never hold what the first lacks, and a record written
 * to A after B's sync of the one before was acknowledged must not
 * survive a cut that B's record did not. twolog_check judges a cut's
 * leftovers by exactly that. Records are wal.h's (checksummed, numbered
 * from 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "twolog"
#include "examples.h"
#include "wal.h"

enum sync_method { M_FSYNC, M_FDATASYNC };
static const char *const methods[] = { "fsync", "fdatasync", NULL };

struct options {
	char dir[4000], acks[4096];
	uint64_t count;
	double seconds;
	size_t size;
	int method, keep;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-d DIR] [-a ACKS] [-n COUNT] [-t SECONDS] [-s SIZE] [-m METHOD] [-k]\n"
		"  COUNT times: append a SIZE-byte checksummed record to DIR/a.log, sync it, append\n"
		"  the same record to DIR/b.log, sync it, then append \"acked SEQ MONO_NS WRITTEN_NS\"\n"
		"  to ACKS (keep ACKS outside a crash test's scope). twolog_check judges the logs.\n"
		"  -d DIR      where a.log and b.log go, both truncated first (default /tmp/twolog.PID)\n"
		"  -a ACKS     the acknowledgements (default DIR/acks)\n"
		"  -n COUNT    transactions (default 1000)\n"
		"  -t SECONDS  stop after this long, whatever COUNT (default: no limit)\n"
		"  -s SIZE     bytes per record, 32 to 1m (default 128)\n"
		"  -m METHOD   fsync (default) or fdatasync\n"
		"  -k          keep the logs and ACKS (default: remove them)\n"
		"  -h          this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->dir, sizeof(o->dir), "/tmp/%s.%ld", PROG, (long)getpid());
	o->count = 1000;
	o->size = 128;
	int acks_given = 0;
	const struct opt opts[] = {
		{ 'd', OPT_PATH, .p = o->dir, .max = sizeof(o->dir) },
		{ 'a', OPT_PATH, .p = o->acks, .max = sizeof(o->acks), .seen = &acks_given },
		{ 'n', OPT_U64, .p = &o->count },
		{ 't', OPT_DOUBLE, .p = &o->seconds },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'm', OPT_WORD, .p = &o->method, .words = methods },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (o->size < WAL_MIN_SIZE || o->size > WAL_MAX_SIZE)
		bad_arg("-s", "out of range");
	if (!acks_given)
		snprintf(o->acks, sizeof(o->acks), "%s/acks", o->dir);
}

static int open_log(const char *dir, const char *name, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0)
		die_path("open", path);
	return fd;
}

/* Appends rec to the log and syncs it: one commit's step on one log. */
static void append_sync(int fd, const uint8_t *rec, size_t size, int method, const char *path)
{
	if (write_full(fd, (const char *)rec, size) != 0)
		die_path("write", path);
	if ((method == M_FSYNC ? fsync(fd) : fdatasync(fd)) != 0)
		die_path(methods[method], path);
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);
	if (mkdir(o.dir, 0755) != 0 && errno != EEXIST)
		die_path("mkdir", o.dir);
	char pa[4096], pb[4096];
	int a = open_log(o.dir, "a.log", pa, sizeof(pa)), b = open_log(o.dir, "b.log", pb, sizeof(pb));
	int acks = open(o.acks, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (acks < 0)
		die_path("open", o.acks);
	uint8_t *rec = malloc(o.size);
	if (!rec)
		die("malloc");
	uint64_t t0 = now_ns(), stop = o.seconds > 0 ? t0 + (uint64_t)(o.seconds * 1e9) : UINT64_MAX, seq;
	for (seq = 0; seq < o.count && now_ns() < stop; seq++) {
		uint64_t written = now_ns();
		wal_make(rec, (uint32_t)o.size, seq, written);
		append_sync(a, rec, o.size, o.method, pa);
		append_sync(b, rec, o.size, o.method, pb);
		char line[80];
		int n = snprintf(line, sizeof(line), "acked %llu %llu %llu\n", (unsigned long long)seq,
				 (unsigned long long)now_ns(), (unsigned long long)written);
		if (write_full(acks, line, (size_t)n) != 0)
			die_path("write", o.acks);
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	if (close(a) != 0 || close(b) != 0 || close(acks) != 0)
		die("close");
	if (!o.keep && (unlink(pa) != 0 || unlink(pb) != 0 || unlink(o.acks) != 0))
		die("unlink");
	if (!o.keep)
		rmdir(o.dir); /* only if empty: it may have been there before */
	printf("%llu transactions of two %zu-byte records (log A, %s, log B, %s) in %.3f s\n",
	       (unsigned long long)seq, o.size, methods[o.method], methods[o.method], secs);
	printf("result: transactions=%llu seconds=%.3f transactions_per_sec=%.1f\n", (unsigned long long)seq, secs,
	       secs > 0 ? (double)seq / secs : 0);
	free(rec);
	return 0;
}
