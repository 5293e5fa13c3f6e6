/*
 * lastgasp.h - the exit barrier without a lock (lastgasp.c).
 */
#ifndef SYNCSHIM_LASTGASP_H
#define SYNCSHIM_LASTGASP_H

#include <stdbool.h>

/* The exit barrier without a lock: every descriptor of a file that owes a
 * sync is synced, every error nobody reported is said. True if one was. */
bool lastgasp_barrier(void);

#endif
