/*
 * tool.c - the tools' dispatch table, exit codes, JSON strings and clock (tool.h).
 */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#ifndef SYNCSHIM_VERSION
#error "the Makefile defines SYNCSHIM_VERSION, the one place the version is written"
#endif

static char running[64];

const char *cli_name(void)
{
	return running;
}

void cli_err(FILE *to, const char *fmt, ...)
{
	int saved = errno; /* for a %m in fmt */
	va_list ap;
	va_start(ap, fmt);
	fprintf(to, "%s: ", running[0] ? running : "error");
	errno = saved;
	vfprintf(to, fmt, ap);
	fputc('\n', to);
	va_end(ap);
}

void tool_usage(const struct tool *t, FILE *to)
{
	for (size_t i = 0; i < t->ncmds; i++)
		fprintf(to, "%s %s %s\n", i ? "      " : "usage:", t->name, t->cmds[i].synopsis);
	fprintf(to, "       %s help [SUBCOMMAND]\n", t->name);
	fprintf(to, "       %s --version\n", t->name);
	tool_summaries(t, to);
	if (t->more)
		t->more(to);
}

void tool_summaries(const struct tool *t, FILE *to)
{
	fprintf(to, "subcommands:\n");
	for (size_t i = 0; i < t->ncmds; i++)
		fprintf(to, "  %-10s %s\n", t->cmds[i].name, t->cmds[i].summary ? t->cmds[i].summary : "");
}

int cli_bad_option(int argc, char **argv, FILE *err)
{
	const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (!strncmp(arg, "--", 2) || optopt <= 0 || optopt >= 256)
		cli_err(err, "option '%.64s' is unknown or needs a value; %s -h says more", arg, running);
	else
		cli_err(err, "option -%c is unknown or needs a value; %s -h says more", optopt, running);
	return EXIT_USAGE;
}

int cli_wants_help(int argc, char **argv)
{
	return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
}

int tool_dispatch(const struct tool *t, int argc, char **argv, FILE *out, FILE *err)
{
	snprintf(running, sizeof(running), "%s", t->name);
	if (argc < 2) {
		tool_usage(t, err);
		return EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "help") && argc >= 3 && strcmp(argv[2], "-h") && strcmp(argv[2], "--help")) {
		/* help SUB: SUB's own --help */
		for (size_t i = 0; i < t->ncmds; i++) {
			if (strcmp(argv[2], t->cmds[i].name))
				continue;
			char *help_argv[] = { argv[2], "--help", NULL };
			snprintf(running, sizeof(running), "%s %s", t->name, t->cmds[i].name);
			int rc = t->cmds[i].run(2, help_argv, out, err);
			fflush(out);
			return rc;
		}
		cli_err(err, "unknown command '%.64s'; %s help lists them", argv[2], t->name);
		return EXIT_USAGE;
	}
	if (!strcmp(sub, "help")) {
		fprintf(out, "usage: %s SUBCOMMAND [ARGS]; %s help SUBCOMMAND says more\n", t->name, t->name);
		tool_summaries(t, out);
		return 0;
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		tool_usage(t, out);
		return 0;
	}
	if (!strcmp(sub, "--version")) {
		fprintf(out, "%s %s\n", t->name, SYNCSHIM_VERSION);
		return 0;
	}
	for (size_t i = 0; i < t->ncmds; i++) {
		if (strcmp(sub, t->cmds[i].name))
			continue;
		snprintf(running, sizeof(running), "%s %s", t->name, t->cmds[i].name);
		int rc = t->cmds[i].run(argc - 1, argv + 1, out, err);
		fflush(out);
		return rc;
	}
	fprintf(err, "%s: unknown command '%.64s'; %s help lists them\n", t->name, sub, t->name);
	return EXIT_USAGE;
}

void command_label(char *buf, size_t len, const char *cmdline, size_t max)
{
	if (!len)
		return;
	if (max > len - 1)
		max = len - 1;
	size_t n = 0;
	bool cut = false;
	for (const char *c = cmdline ? cmdline : ""; *c && !cut; c++) {
		bool blank = *c == ' ' || *c == '\t';
		if (blank && (n == 0 || buf[n - 1] == ' '))
			continue;
		if (n == max)
			cut = true;
		else
			buf[n++] = blank ? ' ' : *c;
	}
	if (cut && max >= 8) {
		/* " ..." after the last word that leaves room for it, else mid-word */
		size_t keep = max - 4;
		while (keep && buf[keep] != ' ')
			keep--;
		n = keep ? keep : max - 4;
		memcpy(buf + n, " ...", 4);
		n += 4;
	}
	while (n && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

double tool_mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
