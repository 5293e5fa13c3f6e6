/*
 * synclat_cli.h - the synclat command line as a function (libsynclat.a),
 * so the program's main() and the test suite run the same code.
 */
#ifndef SYNCSHIM_SYNCLAT_CLI_H
#define SYNCSHIM_SYNCLAT_CLI_H

#include <stdio.h>

/* Runs "synclat ARGS..." (argv[0] is the program name) writing to out and
 * err; returns the exit status: 0 ok, 1 usage error, 2 bad input. Usable
 * more than once in one process (getopt is restarted). */
int synclat_main(int argc, char **argv, FILE *out, FILE *err);

#endif
