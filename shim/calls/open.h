/*
 * open.h - what other wrappers need of open.c.
 */
#ifndef SYNCSHIM_OPEN_H
#define SYNCSHIM_OPEN_H

#include <stdint.h>

struct knobs;

int open_adjust_flags(const struct knobs *k, int flags, uint32_t *slot_flags);
/* Bind a descriptor the app just got for path (open, fopen): the rule, the
 * file, the slot. */
void open_bind(int fd, const char *abspath, uint32_t slot_flags);

#endif
