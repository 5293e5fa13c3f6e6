/*
 * lifecycle.h - every way a process ends (lifecycle.c).
 */
#ifndef SYNCSHIM_LIFECYCLE_H
#define SYNCSHIM_LIFECYCLE_H

#include <stdatomic.h>

/* The exit barrier (pending syncs made, errors nobody reported said, the
 * log and live counters closed) for a process leaving with status; returns
 * the status to leave with (74 under unreported_errors = exit, where the
 * status was 0 and an error reached nobody). Safe from a signal handler
 * inside a shim section: it then makes the syncs without the shim's locks
 * (lastgasp.c). */
int shim_exit_sequence(int status);
extern int shim_exit_status;      /* what exit() or main's return asked for */
extern _Atomic int shim_exit_begun; /* some thread is leaving: no thread may start another exit */
void lifecycle_init(void);        /* constructor: the thread-end key, at_quick_exit */
void lifecycle_atfork_child(void);
/* This thread's end must run fn's part (log.c's slot): bit in the key. */
#define THREAD_END_LOG 2u
void thread_end_watch(unsigned bit);
/* syscall(SYS_exit, status) is about to end the calling thread behind
 * libc, so its end is seen here instead; when it is the app's last
 * thread, the process ends through the barrier and does not return. */
void lifecycle_raw_thread_exit(int status);

#endif
