/*
 * workers.h - the flusher threads: a small pool shared by all deferred
 * files (see workers.c).
 */
#ifndef SYNCSHIM_WORKERS_H
#define SYNCSHIM_WORKERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "file_parts.h" /* struct sched */

struct shim_file;

/* f->sched, for a (recycled) object starting as a new file. */
void workers_reset(struct shim_file *f);
/* Start the deadline clock of f's oldest pending request, made at now
 * (0: the clock is read, only if not armed already). Lock-free. */
void workers_arm(struct shim_file *f, uint64_t now);
bool workers_armed(struct shim_file *f);
/* A real sync of f begins: nothing is waiting for a deadline any more.
 * Returns when the oldest request it covers came (0: none deferred). */
uint64_t workers_disarm(struct shim_file *f);
/* Sync f now (a threshold): true if it was not already asked to. */
bool workers_force(struct shim_file *f);
/* Start writing f back now (lock-free). */
void workers_writeback(struct shim_file *f);
void workers_forget_in_child(struct shim_file *f);
/* A sync was led for requests and never ran: arm the clock again, as of
 * since (the oldest of them, 0 for now). */
void workers_rearm(struct shim_file *f, uint64_t since);
/* Hand f to the threads (lock-free, async-signal-safe; the queue takes a
 * reference). urgent: wake one now. */
void workers_schedule(struct shim_file *f, bool urgent);
/* At least one thread (more: another while all are busy). 0, or -1 when
 * none can be started. Not for the write path. */
int workers_ensure(bool more);
/* Some thread is alive to take queued work. */
bool workers_running(void);
void workers_wake_all(void); /* every idle thread looks again (set*id's quiesce) */
void workers_resume(void);   /* a thread again if work is owed */
void workers_atfork_child(void);

#endif
