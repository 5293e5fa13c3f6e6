/*
 * syncshim_cli.h - pieces of the syncshim command shared by its subcommands.
 */
#ifndef SYNCSHIM_CLI_H
#define SYNCSHIM_CLI_H

#include <stddef.h>
#include <stdio.h>

/* The subcommands (tool.h's signature) and their usage lines. */
#define RUN_SYNOPSIS "run [-c|--config FILE] [-p|--policy POLICY] [-o|--log LOG] [-m|--mode MODE] -- CMD [ARGS]"
#define CHECK_SYNOPSIS "check FILE [PATH...]"
#define AB_SYNOPSIS "ab [-n ROUNDS] [-o DIR] [-m MODE] A B -- CMD [ARGS]\n" \
	"       syncshim ab [-n ROUNDS] [-o DIR] [-m MODE] A B [--setup CMD] --ready PROBE --load CMD\n" \
	"                   [--metric REGEX] [--timeout SECONDS] -- SERVER [ARGS]"
#define PROFILE_SYNOPSIS "profile [-o INI] [-d DIR] [--duration SECONDS] -- CMD [ARGS]\n" \
	"       syncshim profile [-o INI] [-d DIR] [--setup CMD] --ready PROBE --load CMD\n" \
	"                        [--timeout SECONDS] -- SERVER [ARGS]"
#define CRASHTEST_SYNOPSIS "crashtest [-n TRIALS] [-p POLICY | -c FILE] [--cut CUT] --scope GLOB... -- CMD [ARGS]\n" \
	"         (syncshim crashtest -h says more)"
#define STATUS_SYNOPSIS "status [--dir DIR] [PID...]"
int cmd_ab(int argc, char **argv, FILE *out, FILE *err);
int cmd_status(int argc, char **argv, FILE *out, FILE *err);
int cmd_profile(int argc, char **argv, FILE *out, FILE *err);

int launcher_library_path(char *out, size_t len);
/* The settings a person gave (-c FILE, -p POLICY, -o LOG, -m MODE; NULL
 * for none), checked with check's parser before anything runs: 0, or -1
 * after one line on stderr. */
int shim_settings_check(const char *config, const char *policy, const char *log, const char *mode);
/* Set LD_PRELOAD and the SYNCSHIM_* variables for a child, after the same
 * check; -1 after one line. */
int shim_prepare_env(const char *config, const char *policy, const char *log, const char *mode);
/* The exit status for an exec that failed with err: 127 not found, 126 not runnable. */
int exec_failure_status(int err);

#endif
