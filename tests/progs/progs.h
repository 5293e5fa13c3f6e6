/*
 * progs.h - helpers shared by the test programs.
 *
 * Header-only: each tests/progs/NAME.c is built alone, so everything here
 * is static inline (a program that does not use a helper gets no warning).
 */
#ifndef SYNCSHIM_PROGS_H
#define SYNCSHIM_PROGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The 16-byte record pattern (h_check_pattern checks it): byte o of a file is part
 * of the record at o & ~15, that offset as 15 hex digits then '\n'. Fills
 * buf with the n bytes starting at file offset off. */
static inline void pattern(char *buf, size_t n, unsigned long long off)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		unsigned long long o = off + i;
		unsigned pos = (unsigned)(o & 15);
		buf[i] = pos == 15 ? '\n' : hex[((o & ~15ull) >> (4 * (14 - pos))) & 15];
	}
}

/* Whether PATH exists within ms milliseconds, looked for every 1 ms: the
 * markers a shim test hold makes (SYNCSHIM_TEST_HOLD_FILE.reached when a
 * thread is stopped there, .left when it goes on; no hold: 0 after the
 * wait). */
static inline int hold_marker_appears(const char *path, int ms)
{
	struct stat st;
	for (int i = 0; i < ms && stat(path, &st) != 0; i++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return stat(path, &st) == 0;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Options, table-driven: one entry per letter says what its value is and
 * where it goes, and one call parses them all:
 *
 *	const struct opt opts[] = {
 *		{ 'd', OPT_STR, .p = &dir },
 *		{ 'n', OPT_INT, .p = &count },
 *		{ 'S', OPT_FLAG, .p = &do_sync },
 *	};
 *	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
 *		return 2;
 *
 * Numbers are read as atoi/atol/strtoull read them (the suite passes good
 * ones; each program checks its ranges after the call). A later use of
 * an option overrides an earlier one, except for an OPT_STR with many
 * slots. The type at p must be the kind's.
 */
enum opt_kind {
	OPT_FLAG,    /* int: set to 1; takes no value */
	OPT_STR,     /* const char *: the value itself */
	OPT_INT,     /* int: atoi */
	OPT_LONG,    /* long: atol */
	OPT_SIZE,    /* size_t: strtoull */
	OPT_ULL,     /* unsigned long long: strtoull */
};

struct opt {
	char letter;
	enum opt_kind kind;
	void *p;
	int many;    /* OPT_STR: p is an array of this many (NULL until used);
	              * each use fills the next, one more is an error */
};

#define NOPTS(table) (sizeof(table) / sizeof((table)[0]))

/* Stores one option's value; -1 if a repeatable option is full. */
static inline int opt_store(const struct opt *o, const char *v)
{
	const char **slot = o->p;
	switch (o->kind) {
	case OPT_FLAG: *(int *)o->p = 1; break;
	case OPT_STR:
		if (o->many) {
			int i = 0;
			while (i < o->many && slot[i])
				i++;
			if (i == o->many)
				return -1;
			slot += i;
		}
		*slot = v;
		break;
	case OPT_INT: *(int *)o->p = atoi(v); break;
	case OPT_LONG: *(long *)o->p = atol(v); break;
	case OPT_SIZE: *(size_t *)o->p = strtoull(v, NULL, 10); break;
	case OPT_ULL: *(unsigned long long *)o->p = strtoull(v, NULL, 10); break;
	}
	return 0;
}

/* getopt(3) by the table, from optind on (a program whose argv[1] is a
 * subcommand sets optind = 2 first). Returns 0, or -1 at the first unknown
 * option or missing value (getopt has said which on stderr) or a
 * repeatable option used once too often. Afterwards optind is the first
 * operand. */
static inline int parse_opts(int argc, char **argv, const struct opt *t, size_t n)
{
	char spec[64] = "";
	for (size_t i = 0, k = 0; i < n && k + 3 < sizeof(spec); i++) {
		spec[k++] = t[i].letter;
		if (t[i].kind != OPT_FLAG)
			spec[k++] = ':';
		spec[k] = '\0';
	}
	int c;
	while ((c = getopt(argc, argv, spec)) != -1) {
		size_t i = 0;
		while (i < n && t[i].letter != c)
			i++;
		if (i == n || opt_store(&t[i], optarg) < 0)
			return -1;
	}
	return 0;
}

/*
 * Programs of several subcommands (PROG CMD [options]), one table:
 *
 *	const struct subcmd cmds[] = {
 *		{ "group", do_group, { &file } },
 *		{ "stale", do_stale, { &dir, &logpath } },
 *	};
 *	return run_subcommand(argc, argv, opts, NOPTS(opts), cmds, NOPTS(cmds));
 *
 * A subcommand runs only with the options it needs given (each a const
 * char * an OPT_STR fills); stdout is line-buffered, so what a program
 * printed before the shim or a signal ended it is in the suite's file.
 * 2: no such subcommand, a bad option or a missing one.
 */
struct subcmd {
	const char *name;
	int (*run)(void);
	const char *const *needs[2];
};

static inline int run_subcommand(int argc, char **argv, const struct opt *opts, size_t nopts,
				 const struct subcmd *cmds, size_t ncmds)
{
	if (argc < 2)
		return 2;
	optind = 2;
	if (parse_opts(argc, argv, opts, nopts) < 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < ncmds; i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		for (size_t k = 0; k < 2; k++)
			if (cmds[i].needs[k] && !*cmds[i].needs[k])
				return 2;
		return cmds[i].run();
	}
	return 2;
}

#endif /* SYNCSHIM_PROGS_H */
