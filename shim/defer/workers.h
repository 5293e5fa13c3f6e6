/*
 * workers.h - the flusher threads: a small pool shared by all deferred
 * files (see workers.c).
 */
#ifndef SYNCSHIM_WORKERS_H
#define SYNCSHIM_WORKERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct shim_file;

/*
 * A file's place in the flusher threads' schedule (workers.c's alone): when
 * its oldest deferred request was made, whether it must be synced or
 * written back now, and the links of the lock-free hand-off and the
 * threads' deadline heap.
 */
struct sched {
	_Atomic uint64_t first_req_ns;   /* oldest request not yet covered, 0 none */
	_Atomic uint32_t force;          /* sync now: a threshold or a drain */
	_Atomic uint32_t writeback;      /* start writeback now */
	_Atomic uint32_t queued;         /* the threads hold it (a file ref) */
	_Atomic uint32_t poked;          /* on the poke stack: its deadline came earlier (holds a ref) */
	struct shim_file *ready_next;    /* lock-free hand-off to the threads */
	struct shim_file *poke_next;     /* lock-free: "look at my deadline again" */
	/* The threads' deadline heap (a pairing heap, sched lock): */
	struct shim_file *heap_child;    /* leftmost child */
	struct shim_file *heap_sibling;  /* next sibling to the right */
	struct shim_file *heap_prev;     /* left sibling, or the parent if leftmost */
	struct shim_file *sched_next;    /* a scratch list of the threads', sched lock */
	uint64_t heap_key;               /* the deadline it is filed under */
	bool in_heap;
};

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
