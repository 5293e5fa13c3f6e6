/*
 * shimfd.h - the shim's own descriptors (shimfd.c).
 */
#ifndef SYNCSHIM_SHIMFD_H
#define SYNCSHIM_SHIMFD_H

#include <stdbool.h>

#include "fdtable.h"
#include "owntable.h"

struct shim_file;

/* Marking a number the shim's, and dropping the mark without closing it:
 * fd_mark_shim, fd_unmark_shim (fdtable.h). */
/* Forget the mark and close fd if it is still ours. */
void shimfd_close(int fd);
/* open()/dup by the shim for itself: O_CLOEXEC, marked, never on a number
 * the app is using. -1 with errno. */
int shimfd_open(const char *path, int flags, enum shim_fd_owner owner);
/* The file open on the calling thread's descriptor fd, opened again
 * through /proc (a description of its own, flags as open's): under
 * /proc/thread-self, the only table a thread cloned without CLONE_FILES,
 * or one whose group leader has exited, has there; under /proc/self on
 * kernels before 3.17, which have no thread-self. -1 with errno. */
int shimfd_reopen(int fd, int flags, enum shim_fd_owner owner);
/* Mark fd as the shim's in the app's slot table, unless the calling thread
 * has a table of its own (then no number of the app's is involved). */
void shimfd_claim(int fd, enum shim_fd_owner owner, struct shim_file *f);
int shimfd_dup(int fd, enum shim_fd_owner owner, struct shim_file *f);
/* close()/close_range() by the app of a number we hold: 1 = it is ours
 * (the app gets EBADF), 0 = not (a stale mark, now cleared). */
int shimfd_app_close(int fd);
/* fd is marked ours and still refers to what its owner opened. */
bool shimfd_is_ours(int fd);
/* The app is about to dup2 onto fd: move ours out of the way. */
void shimfd_vacate(int fd);
/* The kernel handed fd to the app: ours was closed behind our back. */
void shimfd_lost(int fd);
/* Where the shim's long-lived descriptors go: above the numbers the app
 * is likely to use, so its own numbering is what it would be without us. */
int shimfd_high_base(void);
/* fork's child handler (init.c): the child closes the parent's
 * short-lived descriptors and its log's first number, still marked (after
 * the modules' own child handlers). */
void shimfd_atfork_child(void);
/* The app's open/dup/socket failed with EMFILE: give back what the shim
 * can; true if the call is worth retrying. */
bool shimfd_relieve_emfile(void);

/*
 * What the owners of the shim's long-lived descriptors (the log's, the
 * flusher's private ones, crash-test mode's) hear from shimfd: one table
 * indexed by enum shim_fd_owner, filled from above at load
 * (shimfd_set_owners, init.c), so shimfd calls no layer above it. Any
 * hook may be NULL (that owner has nothing to say).
 */
struct shimfd_owner {
	/* The file the owner's own descriptor refers to (one not tied to a
	 * file object); false when it has none. */
	bool (*identity)(dev_t *dev, ino_t *ino);
	/* The kernel handed fd to the app: the owner's was closed behind its
	 * back (f: the file it was for, or NULL). */
	void (*lost)(struct shim_file *f, int fd);
	/* The app is about to dup2 onto fd: the owner moves it elsewhere. */
	void (*vacate)(struct shim_file *f, int fd);
	/* The app ran out of descriptors: give back what it can; true if it
	 * gave any. */
	bool (*release)(void);
};
#define SHIMFD_OWNERS (OWN_CRASH + 1)
/* At load, before the shim opens a descriptor; the table (SHIMFD_OWNERS
 * entries) stays the caller's. */
void shimfd_set_owners(const struct shimfd_owner *owners);

#endif
