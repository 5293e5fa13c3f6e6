/*
 * ab.c - `syncshim ab`: placeholder until the A/B runner lands.
 */
#include <stdio.h>

#include "syncshim_cli.h"

int cmd_ab(int argc, char **argv)
{
	(void)argc, (void)argv;
	fprintf(stderr, "syncshim ab: not available yet\n");
	return 1;
}
