/*
 * inline_trap.h - system calls made by the program's own `syscall`
 * instructions, trapped with syscall user dispatch (inline_trap.c).
 */
#ifndef SYNCSHIM_INLINE_TRAP_H
#define SYNCSHIM_INLINE_TRAP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct policy;

void inline_trap_start(const struct policy *p); /* at load, main thread */
void inline_trap_thread_start(void);           /* each new app thread */
void inline_trap_atfork_child(void);
bool inline_trap_active(void);
/* The app's own SIGSYS disposition, kept aside while trapping is on:
 * *old gets it (if old), act replaces it (if act). */
void inline_trap_app_action(const struct sigaction *act, struct sigaction *old);

/* A raw signal call (syscall() or an inline one) while trapping is on
 * (inline_sigsys.c): a mask it would install loses SIGSYS (a[] is made to
 * point at copies in *s, which must outlive the call), and
 * rt_sigaction(SIGSYS) is carried out on the kept disposition (true, *ret
 * its result, -1 with errno). */
struct sigsys_scratch {
	uint64_t set;
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} act;
	struct {
		const void *set;
		size_t len;
	} pselect_arg;
};
bool inline_trap_signal_call(long nr, long a[6], struct sigsys_scratch *s, long *ret);

#endif
