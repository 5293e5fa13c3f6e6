/*
 * snapshot.h - the live policy (snapshot.c).
 */
#ifndef SYNCSHIM_SNAPSHOT_H
#define SYNCSHIM_SNAPSHOT_H

struct policy;

/* A reader section: the snapshot stays valid until policy_leave. Short,
 * never blocking; may nest and may run in a signal handler. */
const struct policy *policy_enter(unsigned *ticket);
void policy_leave(unsigned ticket);
/* Swap in next (the reload watcher, one at a time); frees the old snapshot
 * once no reader can still see it. */
void policy_publish(struct policy *next);
void policy_atfork_child(void);
extern struct policy *shim_boot_policy; /* the first snapshot, never freed */

#endif
