/*
 * tool.c - the tools' dispatch table, exit codes, JSON strings and clock (tool.h).
 */
#include "tool.h"

#include <string.h>
#include <time.h>

#ifndef SYNCSHIM_VERSION
#error "the Makefile defines SYNCSHIM_VERSION, the one place the version is written"
#endif

void tool_usage(const struct tool *t, FILE *to)
{
	for (size_t i = 0; i < t->ncmds; i++)
		fprintf(to, "%s %s %s\n", i ? "      " : "usage:", t->name, t->cmds[i].synopsis);
	fprintf(to, "       %s --version\n", t->name);
	if (t->more)
		t->more(to);
}

int cli_wants_help(int argc, char **argv)
{
	return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
}

int tool_dispatch(const struct tool *t, int argc, char **argv, FILE *out, FILE *err)
{
	if (argc < 2) {
		tool_usage(t, err);
		return EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
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
		int rc = t->cmds[i].run(argc - 1, argv + 1, out, err);
		fflush(out);
		return rc;
	}
	fprintf(err, "%s: unknown command '%.64s'\n", t->name, sub);
	tool_usage(t, err);
	return EXIT_USAGE;
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
