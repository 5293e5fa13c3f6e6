/*
 * tool.h - what syncshim and synclat share on their command lines: the exit
 * codes, one dispatch table per tool (as git's commands[]), and the JSON
 * string escaper of every --json output.
 *
 * Adding a subcommand: a file with `int cmd_NAME(int argc, char **argv,
 * FILE *out, FILE *err)` (argv[0] is the subcommand's name; it answers -h
 * and --help itself) and one line in the tool's table.
 */
#ifndef SYNCSHIM_TOOL_H
#define SYNCSHIM_TOOL_H

#include <stddef.h>
#include <stdio.h>

/* One status for everything a person must fix before anything runs, as
 * grep and diff do: a usage error, a typo in a policy or an ini, a file
 * that cannot be read or written. */
#define EXIT_USAGE 2  /* a usage error */
#define EXIT_INPUT 2  /* bad input: unreadable, corrupt, invalid; an output that cannot be written */

struct tool_cmd {
	const char *name;
	int (*run)(int argc, char **argv, FILE *out, FILE *err);
	/* The usage line(s) after "TOOL ", for the tool's own --help;
	 * continuation lines start with a newline and spaces. */
	const char *synopsis;
	/* What it is for, in one line (`TOOL help`). */
	const char *summary;
};

struct tool {
	const char *name;              /* "syncshim" */
	const struct tool_cmd *cmds;
	size_t ncmds;
	void (*more)(FILE *to);        /* prints what follows the synopses in --help, or NULL */
};

/* Prints the tool's usage: one synopsis per subcommand, then the trailer. */
void tool_usage(const struct tool *t, FILE *to);
/* Prints one line per subcommand: its name and what it is for. */
void tool_summaries(const struct tool *t, FILE *to);
/* Runs "TOOL SUB ARGS" from the table; answers -h, --help, help [SUB] and
 * --version; an unknown subcommand is one line and EXIT_USAGE. */
int tool_dispatch(const struct tool *t, int argc, char **argv, FILE *out, FILE *err);
/* "TOOL SUB" of the subcommand running now ("TOOL" outside one): every
 * message of a subcommand starts "TOOL SUB: ". */
const char *cli_name(void);
/* One message on to, "TOOL SUB: " first, a newline added. */
void cli_err(FILE *to, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt's last option was unknown or lacked its value (opterr = 0): one
 * line naming it, EXIT_USAGE. */
int cli_bad_option(int argc, char **argv, FILE *err);

/* True when argv[1] (the first argument after the subcommand) asks for help. */
int cli_wants_help(int argc, char **argv);

/* Seconds on CLOCK_MONOTONIC: for intervals and deadlines (ab, profile). */
double tool_mono_s(void);

/* A command line as a label: blanks (spaces, tabs) squeezed to one
 * space, none at either end, and at most max bytes, cut after a word with
 * " ..." (a server that pads its title with spaces, or a JVM's hundred
 * options, fits a legend). Bytes are kept: the caller escapes them. */
void command_label(char *buf, size_t len, const char *cmdline, size_t max);

/* s as a JSON string, quotes included (NULL is ""). */
void json_str(FILE *out, const char *s);

#endif
