/*
 * suggest.h - `synclat suggest`: what a program's calls-mode latency logs
 * say it does with each file (syncs per second, sync latency, bytes
 * between syncs, append-only or positional writes, O_SYNC/O_DSYNC opens,
 * files renamed into place, directory syncs, which threads sync), and a
 * proposed ini that groups similar files under one glob and gives each
 * group a policy with the reason. `syncshim profile` runs a program under
 * passthrough and ends here.
 */
#ifndef SYNCSHIM_SUGGEST_H
#define SYNCSHIM_SUGGEST_H

#include <stdbool.h>
#include <stdio.h>

/* "synclat suggest [-o INI] [--salvage] LOG..." (argv[0] is "suggest"):
 * the report on out, the ini on -o's file (or on out after the report);
 * 0 ok, 2 a usage error, a log that cannot be read or an ini that cannot be
 * written. */
int cmd_suggest(int argc, char **argv, FILE *out, FILE *err);

/* The glob that stands for path and its like: each run of digits, and
 * each run of 8 or more hex digits with a digit in it, becomes '*', and
 * glob characters are escaped (db-12.log -> db-*.log). */
void suggest_pattern(const char *path, char *out, size_t len);

/* Whether a glob can be written after "path = " so that the ini parser
 * reads back exactly it: no control character (a newline would end the
 * value and start a line of its own, a rule key), no space at its end
 * (trimmed), and short enough for "path = GLOB" to fit an ini line. A ';' in a name is escaped by suggest_pattern. Proposed
 * rules come only from rule syntax: a group whose glob is not safe is left
 * out, with a note. */
bool suggest_ini_safe(const char *pattern);
/* text as "; " comment lines of about 92 characters, control bytes as '?'. */
void suggest_comment(FILE *out, const char *text);
/* One proposed rule: a blank line, the reason as a comment, [rule NAME],
 * path, sync (a sync_policy), and max_delay_ms for defer. pattern must be
 * suggest_ini_safe. */
void suggest_write_rule(FILE *out, const char *name, const char *pattern, int policy, unsigned delay_ms,
			const char *reason);

#endif
