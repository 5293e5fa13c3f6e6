/*
 * matched.h - how many files each rule of the current policy has matched
 * (matched.c), for the live counters and `syncshim status`: a rule that
 * matched nothing is a glob written for other paths, and says so.
 */
#ifndef SYNCSHIM_MATCHED_H
#define SYNCSHIM_MATCHED_H

#include <stdbool.h>
#include <stdint.h>

/* Registry lock held (files.c): a file the shim just met got the rule
 * rule_index (-1: the [shim] default); counted once per path. */
void matched_note(int rule_index, const char *path);
/* Registry lock held: the rules changed (a reload); the registry counts
 * its files again under the new ones. */
void matched_reset(void);
/* Distinct paths rule_index matched since the current rules took effect. */
uint32_t matched_files(int rule_index);
/* More paths than the tally remembers: counts from then on may count a
 * path twice (a file opened again after the shim let it go). */
bool matched_approximate(void);

#endif
