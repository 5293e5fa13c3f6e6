/*
 * synclat.c - the synclat program: report, compare and plot latency logs,
 * watch the live counters (top) and expose them to Prometheus (metrics),
 * propose rules from a run's records (suggest).
 * The command line lives in libsynclat.a (synclat_cli.c) so the test
 * suite runs exactly what this program runs.
 */
#include "synclat_cli.h"

int main(int argc, char **argv)
{
	return synclat_main(argc, argv, stdout, stderr);
}
