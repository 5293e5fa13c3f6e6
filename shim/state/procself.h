/*
 * procself.h - what /proc/self says (procself.c).
 */
#ifndef SYNCSHIM_PROCSELF_H
#define SYNCSHIM_PROCSELF_H

#include <stddef.h>
#include <stdint.h>

void proc_self_cmdline(char *out, size_t len);  /* arguments at load joined by spaces (not a title set later) */
void proc_self_comm(char *out, size_t len);     /* the program's name */
uint64_t proc_self_start_time(void);            /* /proc/self/stat field 22, 0 if unknown */

#endif
