/*
 * synclat_cli.c - command line of the latency-log tool:
 *
 *   synclat report  [--csv|--json] [--per-second] [--files] [--salvage] LOG...
 *   synclat compare [--csv|--json] [--svg FILE] [--html FILE] [--salvage]
 *                   A.log[,A2.log...] B.log[,B2.log...]
 *   synclat compare [...] -a LOG [-a LOG...] -b LOG [-b LOG...]
 *   synclat top [options]        (top.c: the live counters, like top)
 *   synclat metrics [options]    (metrics.c: the same for Prometheus)
 *   synclat suggest [-o INI] LOG...  (suggest.c: rules from a run's records)
 *
 * Each subcommand is a cmd_NAME in the table commands[] (tool.h).
 * Exit status: 0 ok, 2 a usage error or bad input (unreadable, truncated,
 * corrupt or foreign log; the message names the file and byte offset) or
 * an output file that cannot be written.
 *
 * Part of libsynclat.a: synclat_main() takes its output streams so the
 * test suite can run the whole CLI in-process; tools/synclat/synclat.c is only
 * the program's main().
 */
#include "synclat_cli.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logread.h"
#include "metrics.h"
#include "suggest.h"
#include "report.h"
#include "svg.h"
#include "tool.h"
#include "top.h"

/* What follows the synopses in `synclat --help`. */
static void usage_more(FILE *to)
{
	fputs("\n"
	      "report and compare read latency logs. Several logs on one side (a forked\n"
	      "family: parent and children) are merged.\n"
	      "A LOG is a regular file, or '-' for standard input (to read a pipe or FIFO).\n"
	      "  --csv, --json   machine-readable output instead of text\n"
	      "  --per-second    report: add the per-second table\n"
	      "  --files         report: add the per-file table\n"
	      "  --svg FILE      compare: write percentile and per-second plots as SVG\n"
	      "  --html FILE     compare: write one HTML page with the table and the plots\n"
	      "  --name-a NAME, --name-b NAME   compare: what to call each side in the plots\n"
	      "  --lead TEXT     compare: what leads the verdict (syncshim ab: the load's own figure)\n"
	      "  --salvage       report a damaged log up to its first bad block\n"
	      "top and metrics read the live counters of running processes:\n"
	      "their options are in `synclat top -h` and `synclat metrics -h`.\n"
	      "exit status: 0 ok, 2 a usage error or bad input\n",
	      to);
}

static const struct tool synclat_tool;

struct opts {
	enum report_format fmt;
	unsigned flags;
	bool salvage;
	const char *svg, *html;
	char **side[2];         /* -a and -b values */
	size_t nside[2];
	const char *name[2];    /* --name-a, --name-b */
	const char *lead;       /* --lead: what leads the verdict */
};

/* The logs of one run, read and merged. */
struct side {
	struct lr_log *logs;
	struct lr_log **ptrs;
	size_t n;
	struct run run;
	char label[512];
};

static int usage(FILE *err, const char *why)
{
	cli_err(err, "%s; %s -h says more", why, cli_name());
	return EXIT_USAGE;
}

static void side_free(struct side *s)
{
	run_free(&s->run);
	for (size_t i = 0; i < s->n; i++)
		lr_free(&s->logs[i]);
	free(s->logs);
	free(s->ptrs);
	memset(s, 0, sizeof(*s));
}

/* Reads every log of a side; on bad input prints the reader's one-line
 * message and returns EXIT_INPUT. */
/* tag: 'A' or 'B' for compare's sides, 0 for report. */
static int side_load(struct side *s, char tag, char *const *paths, size_t n, const char *name,
		     const struct opts *o, FILE *err)
{
	memset(s, 0, sizeof(*s));
	s->logs = calloc(n, sizeof(*s->logs));
	s->ptrs = calloc(n, sizeof(*s->ptrs));
	if (!s->logs || !s->ptrs) {
		cli_err(err, "out of memory");
		return EXIT_INPUT;
	}
	for (size_t i = 0; i < n; i++) {
		struct lr_error e;
		s->ptrs[i] = &s->logs[i];
		s->n = i + 1;
		if (lr_read_file(paths[i], &s->logs[i], &e) == 0)
			continue;
		if (o->salvage && lr_salvage(&s->logs[i], &e)) {
			cli_err(err, "warning: %s; reporting the blocks before it", e.msg);
			continue;
		}
		cli_err(err, "%s", e.msg);
		return EXIT_INPUT;
	}
	/* A label that fits a plot legend: the name given, else the log. */
	if (name)
		snprintf(s->label, sizeof(s->label), "%s (%zu log%s)", name, n, n == 1 ? "" : "s");
	else if (n == 1)
		snprintf(s->label, sizeof(s->label), "%s", paths[0]);
	else
		snprintf(s->label, sizeof(s->label), "%s and %zu more", paths[0], n - 1);
	run_build(&s->run, s->ptrs, n);
	report_warnings(err, &s->run);
	char which[600] = "";
	if (tag)
		snprintf(which, sizeof(which), "side %c (%.500s)", tag, name ? name : s->label);
	report_rule_warnings(err, &s->run, tag ? which : NULL);
	return 0;
}

/* Splits "a.log,b.log" in place into paths (at most max). */
static size_t split_commas(char *arg, char **paths, size_t max)
{
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(arg, ",", &save); t && n < max;
	     t = strtok_r(NULL, ",", &save))
		paths[n++] = t;
	return n;
}

static int write_file(const char *path, const struct side *a, const struct side *b, bool html,
		      FILE *err)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		cli_err(err, "%s: cannot write: %m", path);
		return EXIT_INPUT;
	}
	if (html)
		html_compare(f, &a->run, &b->run, a->label, b->label);
	else
		svg_compare(f, &a->run, &b->run, a->label, b->label, true);
	if (fclose(f) != 0) {
		cli_err(err, "%s: cannot write: %m", path);
		return EXIT_INPUT;
	}
	return 0;
}

static int print_report(char **paths, size_t n, const struct opts *o, FILE *out, FILE *err)
{
	if (n == 0)
		return usage(err, "no LOG given");
	struct side s;
	int rc = side_load(&s, 0, paths, n, NULL, o, err);
	if (rc == 0)
		report_print(out, &s.run, o->fmt, o->flags);
	side_free(&s);
	return rc;
}

static int print_compare(char **args, size_t nargs, struct opts *o, FILE *out, FILE *err)
{
	char **paths[2] = { o->side[0], o->side[1] };
	size_t n[2] = { o->nside[0], o->nside[1] };
	char **split = NULL;
	int rc = 0;

	if (nargs && (n[0] || n[1]))
		return usage(err, "give the runs either as two arguments or with -a/-b");
	if (nargs) {
		if (nargs != 2)
			return usage(err, "need exactly two runs, A and B");
		size_t max = strlen(args[0]) + strlen(args[1]) + 2;
		split = calloc(max, sizeof(*split));
		if (!split)
			return EXIT_INPUT;
		paths[0] = split;
		n[0] = split_commas(args[0], split, max);
		paths[1] = split + n[0];
		n[1] = split_commas(args[1], paths[1], max - n[0]);
	}
	if (!n[0] || !n[1]) {
		free(split);
		return usage(err, "both A and B need at least one log");
	}

	struct side a, b;
	memset(&b, 0, sizeof(b));
	rc = side_load(&a, 'A', paths[0], n[0], o->name[0], o, err);
	if (!rc)
		rc = side_load(&b, 'B', paths[1], n[1], o->name[1], o, err);
	if (!rc) {
		compare_print(out, &a.run, &b.run, o->fmt);
		if (o->svg)
			rc = write_file(o->svg, &a, &b, false, err);
		if (!rc && o->html)
			rc = write_file(o->html, &a, &b, true, err);
	}
	side_free(&a);
	side_free(&b);
	free(split);
	return rc;
}

static int parse_opts(int argc, char **argv, bool compare, struct opts *o, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "per-second", no_argument, NULL, 's' },
		{ "files", no_argument, NULL, 'f' },
		{ "salvage", no_argument, NULL, 'S' },
		{ "svg", required_argument, NULL, 'g' },
		{ "html", required_argument, NULL, 'H' },
		{ "name-a", required_argument, NULL, 'A' },
		{ "name-b", required_argument, NULL, 'B' },
		{ "lead", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	optind = 0;  /* restart getopt: synclat_main may run more than once */
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, compare ? "a:b:h" : "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
		case 'j':
			if (o->fmt != FMT_TEXT)
				return usage(err, "--csv and --json exclude each other");
			o->fmt = c == 'c' ? FMT_CSV : FMT_JSON;
			break;
		case 's': o->flags |= REPORT_PER_SECOND; break;
		case 'f': o->flags |= REPORT_FILES; break;
		case 'S': o->salvage = true; break;
		case 'g':
		case 'H':
			if (!compare)
				return usage(err, "--svg and --html belong to compare");
			*(c == 'g' ? &o->svg : &o->html) = optarg;
			break;
		case 'a':
		case 'b':
			o->side[c == 'b'][o->nside[c == 'b']++] = optarg;
			break;
		case 'A':
		case 'B':
			if (!compare)
				return usage(err, "--name-a and --name-b belong to compare");
			o->name[c == 'B'] = optarg;
			break;
		case 'L':
			if (!compare)
				return usage(err, "--lead belongs to compare");
			o->lead = optarg;
			break;
		case 'h':
			tool_usage(&synclat_tool, out);
			return -1;
		default: {
			char why[128];
			snprintf(why, sizeof(why), "unknown or incomplete option '%s'", argv[optind - 1]);
			return usage(err, why);
		}
		}
	}
	return 0;
}

/* report and compare share their options. */
static int report_or_compare(int argc, char **argv, bool compare, FILE *out, FILE *err)
{
	struct opts o;
	memset(&o, 0, sizeof(o));
	o.side[0] = calloc((size_t)argc + 1, sizeof(char *));
	o.side[1] = calloc((size_t)argc + 1, sizeof(char *));
	int rc = 0;
	if (!o.side[0] || !o.side[1]) {
		rc = EXIT_INPUT;
	} else {
		rc = parse_opts(argc, argv, compare, &o, out, err);
		if (rc < 0) {
			rc = 0;  /* --help */
		} else if (rc == 0) {
			char **rest = argv + optind;
			size_t nrest = (size_t)(argc - optind);
			compare_set_lead(o.lead);
			rc = compare ? print_compare(rest, nrest, &o, out, err)
				     : print_report(rest, nrest, &o, out, err);
		}
	}
	free(o.side[0]);
	free(o.side[1]);
	return rc;
}

static int cmd_report(int argc, char **argv, FILE *out, FILE *err)
{
	return report_or_compare(argc, argv, false, out, err);
}

static int cmd_compare(int argc, char **argv, FILE *out, FILE *err)
{
	return report_or_compare(argc, argv, true, out, err);
}

static const struct tool_cmd commands[] = {
	{ "report", cmd_report, "report [--csv|--json] [--per-second] [--files] [--salvage] LOG...",
	  "one run's latency logs: percentiles per call, data at risk, rules that matched nothing" },
	{ "compare", cmd_compare, "compare [--csv|--json] [--svg FILE] [--html FILE] [--lead TEXT] [--salvage]\n"
				       "                       A.log[,A2.log...] B.log[,B2.log...]\n"
				       "       synclat compare [options] -a LOG [-a LOG...] -b LOG [-b LOG...]",
	  "two runs side by side: gain and price (data at risk), tables and plots" },
	{ "top", cmd_top, "top [-d SECONDS] [-p PID] [-f TEXT] [-s KEY] [-g] [--dir DIR] [--once | --json]",
	  "the running processes under the shim, live, like top" },
	{ "metrics", cmd_metrics, "metrics [--out FILE | --listen HOST:PORT] [--per-file] [--dir DIR]",
	  "the live counters for Prometheus: a file, or an HTTP endpoint" },
	{ "suggest", cmd_suggest, "suggest [-o INI] [--salvage] LOG...",
	  "propose rules from a run's call records (what syncshim profile uses)" },
};

static const struct tool synclat_tool = {
	.name = "synclat",
	.cmds = commands,
	.ncmds = sizeof(commands) / sizeof(commands[0]),
	.more = usage_more,
};

int synclat_main(int argc, char **argv, FILE *out, FILE *err)
{
	return tool_dispatch(&synclat_tool, argc, argv, out, err);
}
