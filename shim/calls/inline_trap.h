/*
 * inline_trap.h - system calls made by the program's own `syscall`
 * instructions, trapped with syscall user dispatch (inline_trap.c).
 */
#ifndef SYNCSHIM_INLINE_TRAP_H
#define SYNCSHIM_INLINE_TRAP_H

#include <stdbool.h>

struct policy;

void inline_trap_start(const struct policy *p); /* at load, main thread */
void inline_trap_thread_start(void);           /* each new app thread */
void inline_trap_atfork_child(void);
bool inline_trap_active(void);

#endif
