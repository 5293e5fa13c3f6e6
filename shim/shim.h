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
 * The write path only reads a slot (and, for deferred files, adds to the
 * dirty count atomically): no lock, no allocation, async-signal-safe. Opens, closes, dups and
 * first sight of an unknown descriptor take the registry lock; a thread
 * already inside the shim (shim_busy) or a signal handler interrupting it
 * never waits for that lock, it passes the call straight through.
 */
#ifndef SYNCSHIM_SHIM_H
#define SYNCSHIM_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "policy.h"
#include "real.h"

#define SHIM_API __attribute__((visibility("default")))

/* fd slot state word: kind in the low bits, open-flag facts above. */
enum fd_kind { FD_UNKNOWN = 0, FD_PASS = 1, FD_FILE = 2, FD_PRIVATE = 3 /* the shim's own dup */ };
#define SLOT_KIND_MASK 3u
#define SLOT_APP_OSYNC (1u << 2)   /* the app asked for O_SYNC */
#define SLOT_APP_ODSYNC (1u << 3)  /* the app asked for O_DSYNC */
#define SLOT_OSYNC_DEFER (1u << 4) /* we dropped O_(D)SYNC: each write is a deferred sync */

/* Up to this many recent failed real syncs are remembered so every group
 * caller covered by a failed sync gets its error. */
#define FLUSH_ERR_EPOCHS 4

struct err_epoch {
	uint64_t lo, hi; /* requests (lo, hi] were covered by the failed sync */
	int err;
};

/*
 * A file's flusher state (defer and group). Requests are numbered; a real
 * sync snapshots req_seq when it starts and, when it completes, every
 * request up to that snapshot is durable (done_seq). Only one real sync
 * per file runs at a time (in_flight): whoever finds none running leads
 * one, everyone else waits for it, which is what batches group commits.
 */
struct flusher {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;                          /* private dup for background syncs, -1 none */
	bool in_flight;                  /* mu */
	_Atomic uint64_t done_seq;       /* written under mu */
	struct err_epoch errs[FLUSH_ERR_EPOCHS]; /* mu */
	unsigned nerrs;                  /* mu, total failures so far */
	_Atomic uint64_t req_seq;
	_Atomic uint64_t first_req_ns;   /* oldest request not yet covered, 0 none */
	_Atomic uint32_t pending_calls;
	_Atomic uint32_t want_fsync;     /* some covered caller asked for fsync */
	_Atomic uint32_t force;          /* sync now: a threshold or a drain */
	_Atomic uint32_t writeback;      /* start writeback now */
	_Atomic uint32_t queued;         /* on the scheduler's list (holds a file ref) */
	uint64_t wb_mark;                /* dirty bytes at the last writeback kick */
	struct shim_file *ready_next;    /* lock-free hand-off to the scheduler */
	struct shim_file *sched_next;    /* scheduler's list, sched lock */
};

struct shim_file {
	_Atomic uint32_t refs;      /* fd slots, mmap regions, pending flusher work */
	uint32_t id;                /* stable id in logs, never reused in a process */
	dev_t dev;
	ino_t ino;
	int rule_index;             /* -1: the [shim] default rule */
	struct rule rule;           /* copy: a reload rewrites it under the lock */
	_Atomic uint64_t dirty_bytes;   /* written since the last real sync began (defer files) */
	_Atomic uint32_t err_seq;       /* failed deferred syncs so far */
	_Atomic int err_errno;          /* errno of the latest one */
	_Atomic uint32_t err_seen_seq;  /* newest err_seq some fd has reported */
	struct flusher fl;
	bool ghost;                     /* no refs, kept for an unreported error (lock) */
	char *path;                     /* absolute; private allocation, lock-held */
	struct shim_file *hash_next;
	struct shim_file *free_next;
};

struct fd_slot {
	_Atomic uint32_t state;
	_Atomic uint32_t err_seen;  /* file err_seq this fd has reported (errseq style) */
	_Atomic(struct shim_file *) file;
};

struct shim_state {
	_Atomic int ready;                 /* constructor finished */
	struct fd_slot *fds;               /* mmap'd, nfds entries */
	int nfds;
	_Atomic int private_fd_max;        /* highest fd the flusher ever dup'd to */
	_Atomic(const struct policy *) policy;
	char config_path[POLICY_PATH_MAX]; /* "" when none */
	struct policy *boot_policy;        /* the first snapshot, never freed */
	pid_t pid;                         /* this process (set at load and in fork children) */
	_Atomic int exiting;               /* final drain begun: defer no longer defers */
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
 * our back and reused); NULL for bad, O_PATH, non-regular or untracked
 * fds. A non-NULL answer vouches that fd is open and can be synced. */
struct shim_file *fd_file_checked(int fd, uint32_t *state);
void fd_bind(int fd, struct shim_file *f, uint32_t flags);
void fd_bind_pass(int fd);
struct shim_file *fd_unbind(int fd);          /* returns the slot's reference */
void fd_copy(int oldfd, int newfd);           /* dup: newfd shares oldfd's file */
struct shim_file *file_lookup_or_create(const struct stat *st, const char *abspath);
struct shim_file *file_find(dev_t dev, ino_t ino);  /* with a reference, or NULL */
/* Call fn on every known file (registry lock held, fn must not block). */
void registry_each(void (*fn)(struct shim_file *, void *), void *arg);
/* An error from a deferred sync this fd has not reported yet: returns the
 * errno and marks it reported for this fd, else 0. */
int fd_take_sync_error(int fd, struct shim_file *f);
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
/* The file mapped over all of [addr, addr+len), with a reference; NULL when
 * the range is not inside one tracked mapping. */
struct shim_file *mmap_track_find(const void *addr, size_t len);
void mmap_track_atfork_child(void);
void mmap_track_lock(void);
void mmap_track_unlock(void);

/* alloc.c: the private allocator (jemalloc, hidden). */
void *shim_alloc(size_t n);   /* zeroed */
void shim_free(void *p);
char *shim_strdup(const char *s);

/* init.c */
void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Start one of the shim's own threads: detached, small stack, every
 * signal blocked (the app's signals are not ours to take), named so top -H
 * and perf tell it from the app's. 0 or -1; errno is left as it was. */
int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name);
/* Built-in defaults, then the ini file, then SYNCSHIM_POLICY. */
int shim_build_policy(const char *config, struct policy *p, char *err, size_t errlen);

#endif
