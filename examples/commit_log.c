/*
 * commit_log - a journal synced per commit, and one human log line per
 * commit on standard output.
 *
 * What a service does for each request it commits: append a record to
 * its journal, fsync it, then log a line ("commit N") to stdout, which a
 * service manager or a shell has redirected to a regular file. The log
 * is never synced; the journal always is. Run with stdout redirected to
 * a file, the program shows what the log line costs a policy that keeps
 * an order between files (issue 28, item 7: every log write waiting for
 * the journal's real sync made defer slower than passthrough). The
 * report and the result line go to stderr, since stdout is the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "commit_log"
#include "examples.h"

enum sync_method { M_FSYNC, M_FDATASYNC };
static const char *const methods[] = { "fsync", "fdatasync", NULL };

struct options {
	char journal[4096];
	uint64_t count;
	double seconds;
	size_t size;
	int method, keep, count_given;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-f JOURNAL] [-n COUNT] [-t SECONDS] [-s SIZE] [-m METHOD] [-k] >LOG\n"
		"  Per commit: append SIZE bytes to JOURNAL, sync it, then write \"commit N ...\\n\"\n"
		"  to stdout (one write). The report goes to stderr.\n"
		"  -f JOURNAL  the journal (default /tmp/commit_log.PID.journal), truncated first\n"
		"  -n COUNT    commits (default 10000, or no limit with -t)\n"
		"  -t SECONDS  stop after this long, whatever COUNT\n"
		"  -s SIZE     bytes per journal record (default 128)\n"
		"  -m METHOD   fsync (default) or fdatasync\n"
		"  -k          keep JOURNAL (default: remove it)\n"
		"  -h          this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->journal, sizeof(o->journal), "/tmp/%s.%ld.journal", PROG, (long)getpid());
	o->count = 10000;
	o->size = 128;
	int seconds_given = 0;
	const struct opt opts[] = {
		{ 'f', OPT_PATH, .p = o->journal, .max = sizeof(o->journal) },
		{ 'n', OPT_U64, .p = &o->count, .seen = &o->count_given },
		{ 't', OPT_DOUBLE, .p = &o->seconds, .seen = &seconds_given },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'm', OPT_WORD, .p = &o->method, .words = methods },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (o->size == 0 || o->size > (64u << 20))
		bad_arg("-s", "out of range");
	if (seconds_given && !o->count_given)
		o->count = UINT64_MAX;
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);
	int journal = open(o.journal, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (journal < 0)
		die_path("open", o.journal);
	char *rec = malloc(o.size);
	if (!rec)
		die("malloc");
	uint64_t t0 = now_ns(), stop = o.seconds > 0 ? t0 + (uint64_t)(o.seconds * 1e9) : UINT64_MAX, n, off = 0;
	for (n = 0; n < o.count && now_ns() < stop; n++) {
		fill_pattern(rec, off, o.size);
		if (write_full(journal, rec, o.size) != 0)
			die_path("write", o.journal);
		off += o.size;
		if ((o.method == M_FSYNC ? fsync(journal) : fdatasync(journal)) != 0)
			die_path(methods[o.method], o.journal);
		char line[96];
		int len = snprintf(line, sizeof(line), "commit %llu journal_bytes=%llu\n", (unsigned long long)n,
				   (unsigned long long)off);
		if (write_full(STDOUT_FILENO, line, (size_t)len) != 0)
			die("write stdout");
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	if (close(journal) != 0)
		die_path("close", o.journal);
	if (!o.keep && unlink(o.journal) != 0)
		die_path("unlink", o.journal);
	fprintf(stderr, "%llu commits (%zu-byte journal record, %s, one stdout line each) in %.3f s\n",
		(unsigned long long)n, o.size, methods[o.method], secs);
	fprintf(stderr, "result: commits=%llu seconds=%.3f commits_per_sec=%.1f\n", (unsigned long long)n, secs,
		secs > 0 ? (double)n / secs : 0);
	free(rec);
	return 0;
}
