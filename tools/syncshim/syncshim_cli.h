/*
 * syncshim_cli.h - pieces of the syncshim command shared by its subcommands.
 */
#ifndef SYNCSHIM_CLI_H
#define SYNCSHIM_CLI_H

#include <stddef.h>

int launcher_library_path(char *out, size_t len);
/* Set LD_PRELOAD and the SYNCSHIM_* variables for a child; -1 on error. */
int shim_prepare_env(const char *config, const char *policy, const char *log, const char *mode);
int cmd_ab(int argc, char **argv);
/* The exit status for an exec that failed with err: 127 not found, 126 not runnable. */
int exec_failure_status(int err);

#endif
