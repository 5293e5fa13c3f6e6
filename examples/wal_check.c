/*
 * wal_check - after a power cut: which acknowledged records did the
 * write-ahead log lose, and is any record torn?
 *
 * Reads the log wal_append wrote (as a crash test's rollback left it)
 * record by record, and its acknowledgements. A record the ack file says
 * was acknowledged but the log no longer holds intact is lost; bytes
 * after the last intact record that do not make a whole one are torn.
 * With the cut's moment (-c, or $SYNCSHIM_CRASHTEST_CUT_NS as syncshim
 * crashtest sets it), it says how long before the cut the lost records
 * were acknowledged: under defer that is the window the policy allows;
 * and how long before it the first lost one was written, which is what a
 * rollback's own window measures (the record's write, not its ack).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "wal_check"
#include "examples.h"
#include "wal.h"

struct options {
	char wal[4096], acks[4096];
	uint64_t cut_ns;
};

struct verdict {
	uint64_t records, acked, lost, torn_bytes;
	uint64_t lost_first, lost_last;      /* seq range of the lost */
	double lost_oldest_ms, lost_newest_ms;
	double lost_oldest_written_ms; /* the first lost record's write (-1: the acks do not say) */
	int have_wal;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s -f WAL -a ACKS [-c CUT_NS]\n"
		"  Says which acknowledged records WAL lost and whether a record is torn;\n"
		"  exits 1 if any, 0 if none.\n"
		"  -f WAL     the log wal_append wrote\n"
		"  -a ACKS    its acknowledgements\n"
		"  -c CUT_NS  CLOCK_MONOTONIC of the cut (default $SYNCSHIM_CRASHTEST_CUT_NS)\n"
		"  -h         this help\n",
		PROG);
}

/* The whole file, or NULL (and *len 0) if it does not exist. */
static uint8_t *slurp(const char *path, size_t *len)
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

/* Intact records from the start; what follows them is torn. */
static void read_wal(const char *path, struct verdict *v)
{
	size_t len;
	uint8_t *buf = slurp(path, &len);
	v->have_wal = buf != NULL;
	uint32_t size = 0;
	if (len >= WAL_HEAD)
		memcpy(&size, buf + 4, 4);
	if (size < WAL_MIN_SIZE || size > WAL_MAX_SIZE)
		size = 0;
	size_t off = 0;
	while (size && off + size <= len && wal_valid(buf + off, size, v->records)) {
		off += size;
		v->records++;
	}
	v->torn_bytes = len - off;
	free(buf);
}

static void read_acks(const char *path, uint64_t cut_ns, struct verdict *v)
{
	size_t len;
	char *text = (char *)slurp(path, &len);
	if (!text)
		die_path("open", path);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long seq, ns, written;
		int got = sscanf(line, "acked %llu %llu %llu", &seq, &ns, &written);
		if (got < 2)
			continue;
		v->acked++;
		if (seq < v->records)
			continue;
		double age = cut_ns > ns ? (double)(cut_ns - ns) / 1e6 : 0;
		if (!v->lost++) {
			v->lost_first = seq;
			v->lost_oldest_ms = age;
			v->lost_oldest_written_ms = got < 3 ? -1 : cut_ns > written ? (double)(cut_ns - written) / 1e6 : 0;
		}
		v->lost_last = seq;
		v->lost_newest_ms = age;
	}
	free(text);
}

int main(int argc, char **argv)
{
	struct options o = { "", "", 0 };
	const char *env = getenv("SYNCSHIM_CRASHTEST_CUT_NS");
	if (env && *env)
		o.cut_ns = strtoull(env, NULL, 10);
	const struct opt opts[] = {
		{ 'f', OPT_PATH, .p = o.wal, .max = sizeof(o.wal) },
		{ 'a', OPT_PATH, .p = o.acks, .max = sizeof(o.acks) },
		{ 'c', OPT_U64, .p = &o.cut_ns },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (!o.wal[0] || !o.acks[0]) {
		usage(stderr);
		return 2;
	}
	struct verdict v = { .lost_oldest_written_ms = -1 };
	read_wal(o.wal, &v);
	read_acks(o.acks, o.cut_ns, &v);
	printf("%s: %llu intact records%s, %llu acknowledged", PROG, (unsigned long long)v.records,
	       v.have_wal ? "" : " (no log file at all)", (unsigned long long)v.acked);
	if (v.torn_bytes)
		printf("; TORN: %llu bytes after record %llu are not a whole record", (unsigned long long)v.torn_bytes,
		       (unsigned long long)v.records);
	if (v.lost && o.cut_ns)
		printf("; LOST %llu acknowledged (seq %llu..%llu), acknowledged %.3f to %.3f ms before the cut",
		       (unsigned long long)v.lost, (unsigned long long)v.lost_first, (unsigned long long)v.lost_last,
		       v.lost_newest_ms, v.lost_oldest_ms);
	else if (v.lost)
		printf("; LOST %llu acknowledged (seq %llu..%llu)", (unsigned long long)v.lost,
		       (unsigned long long)v.lost_first, (unsigned long long)v.lost_last);
	printf("\nresult: records=%llu acked=%llu lost=%llu torn_bytes=%llu lost_oldest_ms=%.3f lost_newest_ms=%.3f "
	       "lost_oldest_written_ms=%.3f\n",
	       (unsigned long long)v.records, (unsigned long long)v.acked, (unsigned long long)v.lost,
	       (unsigned long long)v.torn_bytes, v.lost_oldest_ms, v.lost_newest_ms, v.lost_oldest_written_ms);
	return v.lost || v.torn_bytes ? 1 : 0;
}
