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

#include <stdio.h>

/* "synclat suggest [-o INI] [--salvage] LOG..." (argv[0] is "suggest"):
 * the report on out, the ini on -o's file (or on out after the report);
 * 0 ok, 1 usage, 2 a log that cannot be read or an ini that cannot be
 * written. */
int suggest_main(int argc, char **argv, FILE *out, FILE *err);

/* The glob that stands for path and its like: each run of digits, and
 * each run of 8 or more hex digits with a digit in it, becomes '*', and
 * glob characters are escaped (db-12.log -> db-*.log). */
void suggest_pattern(const char *path, char *out, size_t len);

#endif
