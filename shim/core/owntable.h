/*
 * owntable.h - the shim's own descriptor tables and the fork lock around
 * the shim's descriptors on the app's (owntable.c).
 */
#ifndef SYNCSHIM_OWNTABLE_H
#define SYNCSHIM_OWNTABLE_H

#include <stdbool.h>

/* The calling thread's descriptors are in a table of its own: nothing it
 * opens is on a number of the app's, and no slot is marked for it. */
extern __thread bool shimfd_own_table;

/* The calling shim thread's own descriptor table (false: none could be made). */
bool shimfd_private_table(void);
int shimfd_stderr(void); /* the app's fd 2 as this thread may write it, or -1 */
void shimfd_stderr_done(int fd);
/* fn(arg) in a child sharing our memory, with a descriptor table of its
 * own (its result in *result); false: it could not run there, and the
 * caller does the work itself. fn takes no lock and calls LIBC()'s. */
bool shimfd_isolated(int (*fn)(void *), void *arg, int *result);
/* No fork copies the app's table between these two (a descriptor of the
 * shim's on the app's table that is not marked yet, or no longer); nothing
 * between them takes a lock. No-ops in a thread with a table of its own. */
void shimfd_nofork_begin(void);
void shimfd_nofork_end(void);
/* fork's handlers (init.c): the lock above, for writing, across the
 * fork; in the child, first of all, made anew. */
void shimfd_atfork_prepare(void);
void shimfd_atfork_parent(void);
void shimfd_atfork_child_begin(void);

#endif
