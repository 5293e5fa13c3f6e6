/*
 * workers.h - the flusher threads: a small pool shared by all deferred
 * files (see workers.c).
 */
#ifndef SYNCSHIM_WORKERS_H
#define SYNCSHIM_WORKERS_H

#include <stdbool.h>

#include "shim.h"

/* Start the deadline clock of f's oldest pending request (lock-free). */
void workers_arm(struct shim_file *f);
/* A sync was led for requests and never ran: arm the clock again. */
void workers_rearm(struct shim_file *f);
/* Hand f to the threads (lock-free, async-signal-safe; the queue takes a
 * reference). urgent: wake one now. */
void workers_schedule(struct shim_file *f, bool urgent);
/* At least one thread (more: another while all are busy). 0, or -1 when
 * none can be started. Not for the write path. */
int workers_ensure(bool more);
/* Some thread is alive to take queued work. */
bool workers_running(void);
void workers_atfork_child(void);

#endif
