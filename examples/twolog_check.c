/*
 * twolog_check - after a power cut: are twolog's two logs a state the
 * program could have left, and which acknowledged transactions are gone?
 *
 * twolog appends each transaction's record to log A, syncs A, appends it
 * to log B, syncs B, then acknowledges it. Whatever a cut leaves, on a
 * disk that keeps the order of the program's acknowledged syncs:
 *
 *   - each log is a prefix of whole records (wal.h: numbered from 0,
 *     checksummed), with nothing after the last whole one;
 *   - the records both logs hold are the same bytes;
 *   - B never holds a record A lacks (B's record N was written after A's
 *     sync of N returned);
 *   - A is at most one record ahead of B (A's record N+1 was written after
 *     B's sync of N returned, so if N+1 survived, B's N must have);
 *   - every acknowledged transaction is in both logs, or with -w, every
 *     one acknowledged more than WINDOW_MS before the cut (-c, or
 *     $SYNCSHIM_CRASHTEST_CUT_NS as syncshim crashtest sets it).
 *
 * Exits 1 if any of these fails, and says which; the result line's
 * "integrity=failed" means one of the first four (a state no order of the
 * program's own could produce), lost_beyond_window the last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "twolog_check"
#include "examples.h"
#include "wal.h"

struct options {
	char dir[4000], acks[4096];
	uint64_t cut_ns;
	double window_ms;
	int window_given;
};

struct log {
	uint8_t *buf;
	size_t len;
	uint32_t size;    /* the record size (the first record's) */
	uint64_t records; /* whole records from the start */
	size_t torn;      /* bytes after them */
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s -d DIR [-a ACKS] [-c CUT_NS] [-w WINDOW_MS]\n"
		"  Judges DIR/a.log and DIR/b.log as twolog left them after a cut: each a\n"
		"  prefix of whole records, B never ahead of A, A at most one ahead of B, and\n"
		"  no acknowledged transaction lost (with -w: none acknowledged more than\n"
		"  WINDOW_MS before the cut). Exits 1 if any fails, 0 if none.\n"
		"  -d DIR        twolog's directory\n"
		"  -a ACKS       its acknowledgements (default DIR/acks)\n"
		"  -c CUT_NS     CLOCK_MONOTONIC of the cut (default $SYNCSHIM_CRASHTEST_CUT_NS)\n"
		"  -w WINDOW_MS  acknowledged transactions this recent may be lost\n"
		"  -h            this help\n",
		PROG);
}

/* The whole file, or NULL (and *len 0) if it does not exist. */
static uint8_t *read_whole(const char *path, size_t *len)
{
	*len = 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0 && errno == ENOENT)
		return NULL;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		die_path("open", path);
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		die("malloc");
	size_t n = 0;
	ssize_t k;
	while (n < (size_t)st.st_size && (k = read(fd, buf + n, (size_t)st.st_size - n)) > 0)
		n += (size_t)k;
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void read_log(const char *dir, const char *name, struct log *l)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	memset(l, 0, sizeof(*l));
	l->buf = read_whole(path, &l->len);
	if (l->len >= WAL_HEAD)
		memcpy(&l->size, l->buf + 4, 4);
	if (l->size < WAL_MIN_SIZE || l->size > WAL_MAX_SIZE)
		l->size = 0;
	size_t off = 0;
	while (l->size && off + l->size <= l->len && wal_valid(l->buf + off, l->size, l->records)) {
		off += l->size;
		l->records++;
	}
	l->torn = l->len - off;
}

struct losses {
	uint64_t acked, lost, beyond, first;
	double oldest_ms;
};

/* Acknowledged transactions that are not in both logs (seq >= in_both). */
static void read_acks(const char *path, uint64_t in_both, const struct options *o, struct losses *v)
{
	size_t len;
	char *text = (char *)read_whole(path, &len);
	if (!text)
		return; /* cut before the first acknowledgement */
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long seq, ns;
		if (sscanf(line, "acked %llu %llu", &seq, &ns) != 2)
			continue;
		v->acked++;
		if (seq < in_both)
			continue;
		double age = o->cut_ns > ns ? (double)(o->cut_ns - ns) / 1e6 : 0;
		if (!v->lost++)
			v->first = seq;
		if (age > v->oldest_ms)
			v->oldest_ms = age;
		if (!o->window_given || age > o->window_ms)
			v->beyond++;
	}
	free(text);
}

/* The first broken rule, as a sentence in why; 0 if the logs keep them all. */
static int judge_logs(const struct log *a, const struct log *b, char *why, size_t cap)
{
	if (a->torn || b->torn) {
		snprintf(why, cap, "%s has %zu bytes after its last whole record (%llu): not a prefix of whole records",
			 a->torn ? "A" : "B", a->torn ? a->torn : b->torn,
			 (unsigned long long)(a->torn ? a->records : b->records));
		return 1;
	}
	if (a->records && b->records && a->size != b->size) {
		snprintf(why, cap, "the logs' records differ in size (A %u, B %u bytes)", a->size, b->size);
		return 1;
	}
	uint64_t both = a->records < b->records ? a->records : b->records;
	if (both && memcmp(a->buf, b->buf, (size_t)both * a->size) != 0) {
		snprintf(why, cap, "a record both logs hold differs between them");
		return 1;
	}
	if (b->records > a->records) {
		snprintf(why, cap, "B holds records %llu..%llu that A lacks: B's write reached the disk before A's acknowledged sync",
			 (unsigned long long)a->records, (unsigned long long)b->records - 1);
		return 1;
	}
	if (a->records > b->records + 1) {
		snprintf(why, cap, "A holds record %llu, written after B's sync of record %llu was acknowledged, but B lost record %llu",
			 (unsigned long long)b->records + 1, (unsigned long long)b->records,
			 (unsigned long long)b->records);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .dir = "" };
	const char *env = getenv("SYNCSHIM_CRASHTEST_CUT_NS");
	if (env && *env)
		o.cut_ns = strtoull(env, NULL, 10);
	const struct opt opts[] = {
		{ 'd', OPT_PATH, .p = o.dir, .max = sizeof(o.dir) },
		{ 'a', OPT_PATH, .p = o.acks, .max = sizeof(o.acks) },
		{ 'c', OPT_U64, .p = &o.cut_ns },
		{ 'w', OPT_DOUBLE, .p = &o.window_ms, .seen = &o.window_given },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (!o.dir[0]) {
		usage(stderr);
		return 2;
	}
	if (!o.acks[0])
		snprintf(o.acks, sizeof(o.acks), "%s/acks", o.dir);
	struct log a, b;
	read_log(o.dir, "a.log", &a);
	read_log(o.dir, "b.log", &b);
	char why[256] = "";
	int broken = judge_logs(&a, &b, why, sizeof(why));
	struct losses v = { 0 };
	read_acks(o.acks, a.records < b.records ? a.records : b.records, &o, &v);
	printf("%s: A %llu whole records, B %llu; %llu acknowledged", PROG, (unsigned long long)a.records,
	       (unsigned long long)b.records, (unsigned long long)v.acked);
	if (broken)
		printf("; BROKEN: %s", why);
	if (v.lost)
		printf("; LOST %llu acknowledged from %llu on", (unsigned long long)v.lost, (unsigned long long)v.first);
	if (v.lost && o.cut_ns)
		printf(", the oldest %.3f ms before the cut%s", v.oldest_ms,
		       o.window_given ? (v.beyond ? ", beyond the window" : ", all inside the window") : "");
	printf("\nresult: integrity=%s a_records=%llu b_records=%llu acked=%llu lost=%llu lost_oldest_ms=%.3f "
	       "lost_beyond_window=%llu\n",
	       broken ? "failed" : "ok", (unsigned long long)a.records, (unsigned long long)b.records,
	       (unsigned long long)v.acked, (unsigned long long)v.lost, v.oldest_ms, (unsigned long long)v.beyond);
	free(a.buf);
	free(b.buf);
	return broken || v.beyond ? 1 : 0;
}
