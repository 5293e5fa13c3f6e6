/*
 * shim.h - state shared by the interposed calls.
 *
 * Two levels of state. An fd slot (one per descriptor number, in a table
 * mmap'd once) says what the descriptor is: not yet seen, not a regular
 * file (pass straight through), or a tracked regular file. A tracked slot
 * points at the file's shim_file, shared by every descriptor of the same
 * (dev, inode): that is where the rule, the dirty byte count, sticky sync
 * errors and the flusher live.
 *
 * The write path only reads a slot and does relaxed atomic adds on the
 * file: no lock, no allocation, async-signal-safe. Opens, closes, dups and
 * first sight of an unknown descriptor take the registry lock; a thread
 * already inside the shim (shim_busy) or a signal handler interrupting it
 * never waits for that lock, it passes the call straight through.
 */
#ifndef SYNCSHIM_SHIM_H
#define SYNCSHIM_SHIM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "policy.h"
#include "real.h"

#define SHIM_API __attribute__((visibility("default")))

/* fd slot state word: kind in the low bits, open-flag facts above. */
enum fd_kind { FD_UNKNOWN = 0, FD_PASS = 1, FD_FILE = 2 };
#define SLOT_KIND_MASK 3u
#define SLOT_APP_OSYNC (1u << 2)   /* the app asked for O_SYNC */
#define SLOT_APP_ODSYNC (1u << 3)  /* the app asked for O_DSYNC */
#define SLOT_OSYNC_DEFER (1u << 4) /* we dropped O_(D)SYNC: each write is a deferred sync */

struct flusher;

struct shim_file {
	_Atomic uint32_t refs;      /* fd slots, mmap regions, pending flusher work */
	uint32_t id;                /* stable id in logs, never reused in a process */
	dev_t dev;
	ino_t ino;
	int rule_index;             /* -1: the [shim] default rule */
	struct rule rule;           /* copy: a reload rewrites it under the lock */
	_Atomic uint64_t dirty_bytes;   /* written since the last real sync began */
	_Atomic int sticky_errno;       /* a deferred sync's error, returned once */
	struct flusher *flusher;        /* defer/group state, NULL until needed */
	char *path;                     /* absolute; private allocation, lock-held */
	struct shim_file *hash_next;
	struct shim_file *free_next;
};

struct fd_slot {
	_Atomic uint32_t state;
	_Atomic(struct shim_file *) file;
};

struct shim_state {
	_Atomic int ready;                 /* constructor finished */
	struct fd_slot *fds;               /* mmap'd, nfds entries */
	int nfds;
	_Atomic(const struct policy *) policy;
	char config_path[POLICY_PATH_MAX]; /* "" when none */
};
extern struct shim_state shim;

/* Depth of shim-internal work on this thread: while set, interposed calls
 * (our own, jemalloc's, a signal handler's) go straight to libc. */
extern __thread int shim_busy;

static inline bool shim_bypass(void)
{
	return shim_busy || !atomic_load_explicit(&shim.ready, memory_order_acquire);
}

static inline const struct policy *shim_policy(void)
{
	return atomic_load_explicit(&shim.policy, memory_order_acquire);
}

/* fdtable.c */
void fdtable_init(void);
struct fd_slot *fd_slot(int fd);   /* NULL when fd is outside the table */
/* Write path: the tracked file behind fd, resolving an unseen fd without
 * blocking; NULL means pass straight through. Sets *state to the slot word. */
struct shim_file *fd_file_for_write(int fd, uint32_t *state);
/* Sync path: verified against fstat (the fd may have been closed behind
 * our back and reused); NULL for untracked or non-regular fds. */
struct shim_file *fd_file_checked(int fd, uint32_t *state);
void fd_bind(int fd, struct shim_file *f, uint32_t flags);
void fd_bind_pass(int fd);
struct shim_file *fd_unbind(int fd);          /* returns the slot's reference */
void fd_copy(int oldfd, int newfd);           /* dup: newfd shares oldfd's file */
struct shim_file *file_lookup_or_create(const struct stat *st, const char *abspath);
struct shim_file *file_ref(struct shim_file *f);
void file_put(struct shim_file *f);
void registry_lock(void);
void registry_unlock(void);
void registry_atfork_child(void);
/* Re-apply the live policy to every known file (reload). */
void registry_rematch(void);

/* paths.c */
/* Absolute, lexically normalised path for (dirfd, path); 0 or -1. */
int path_absolute(int dirfd, const char *path, char *out, size_t len);
int path_of_fd(int fd, char *out, size_t len);

/* open.c */
int open_adjust_flags(const struct rule *r, int flags, uint32_t *slot_flags);

/* mmap_track.c */
void mmap_track_add(void *addr, size_t len, int fd);
void mmap_track_remove(void *addr, size_t len);
struct shim_file *mmap_track_find(const void *addr);  /* with a reference */
void mmap_track_atfork_child(void);
void mmap_track_lock(void);
void mmap_track_unlock(void);

/* alloc.c: the private allocator (jemalloc, hidden). */
void *shim_alloc(size_t n);   /* zeroed */
void shim_free(void *p);
char *shim_strdup(const char *s);

/* init.c */
void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
