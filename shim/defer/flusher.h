/*
 * flusher.h - deferred and group-commit syncs.
 *
 * defer: the app's sync returns at once; a flusher thread issues the real
 * sync when the oldest pending request is max_delay_ms old, max_bytes are
 * dirty or max_calls requests pend. group: the caller waits for a real
 * sync that began after its call; concurrent callers share it. Errors of
 * background syncs are sticky per file and reported, errseq style, by the
 * next fsync, fdatasync or close on each descriptor of the file
 * (syncerr.c).
 */
#ifndef SYNCSHIM_FLUSHER_H
#define SYNCSHIM_FLUSHER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "decide.h"
#include "file_parts.h" /* struct flusher */
#include "risk.h"

struct shim_file;
struct knobs;

/* A group caller waiting for its request to be covered: the sync that
 * covers it says so here, so no history of syncs is needed to know
 * whether that sync failed (flusher.c). On the caller's stack, linked
 * under the file's fl.mu. */
struct sync_waiter {
	uint64_t target;            /* the caller's request */
	int err;                    /* the covering sync's errno, 0 ok */
	bool covered;
	struct sync_waiter *next;
};

/* A new object's mutex: once per allocation, and again in a fork child
 * (waiters sleep on a futex, fl.wake, which needs no initialising). */
void flusher_init_locks(struct shim_file *f);
/* A (recycled) object starting life as a new file. */
void flusher_reset(struct shim_file *f);
/* The file is being recycled (registry lock held): close our descriptor. */
void flusher_release_file(struct shim_file *f);

/* An app's fsync/fdatasync (fd >= 0, checked by fd_get) or msync (fd -1)
 * that the decision table made act (ACT_DEFER or ACT_GROUP), at now
 * (CLOCK_MONOTONIC ns the caller read as the call began; 0: read here).
 * Returns 0 or -1 with errno, like the call it stands for. */
int flusher_app_sync(struct shim_file *f, const struct knobs *k, enum shim_action act, int fd,
		     bool want_fsync, uint64_t now);
/* The same for a deferred fsync/fdatasync (fd >= 0), the rule's
 * thresholds read alone rather than copied whole (sync.c's fast path). */
int flusher_defer(struct shim_file *f, int fd, bool want_fsync, uint64_t now);
/* Write path, defer files only: thresholds, early writeback and O_SYNC
 * writes under osync=defer. Lock-free, no system call. */
void flusher_after_write(struct shim_file *f, int fd, uint32_t slot_state);
/* Complete the file's pending syncs now (barriers). Returns 0, or the
 * errno of a failed sync (also recorded as sticky). */
int flusher_drain(struct shim_file *f);
/* Ordered defer: the flusher threads sync f now; sleep (not busy, no
 * lock held) until request target is covered. */
void flusher_await(struct shim_file *f, uint64_t target);
/* Held changes (held.c): fn(f, fd, arg) with a writable descriptor of f under the lease (-1: no
 * way to the file), one at a time with f's real syncs. Returns fn's. */
int flusher_apply(struct shim_file *f, int (*fn)(struct shim_file *, int, void *), void *arg);
/* A real sync of f now would cover a request no completed one has. */
bool flusher_can_cover_more(struct shim_file *f);
/* f holds nothing any more: the descriptor kept for its held writes goes
 * unless syncs are still owed. */
void flusher_held_gone(struct shim_file *f);
/* Lead or wait for real syncs of f until request target is covered. */
void flusher_sync_to(struct shim_file *f, uint64_t target);
/* The number of f's latest request (a target for flusher_await). */
uint64_t flusher_requested(struct shim_file *f);
/* Complete every pending deferred sync (sync, syncfs, exec, exit). */
void flusher_flush_all(void);
/* Complete the pending syncs of the file at (dirfd, path, AT_ flags)
 * before its data is published under a new name (rename, link). Returns
 * 0, or the errno of a sync of that file that failed and nobody has been
 * told about: the new name must not be made then. */
int flusher_before_publish(int dirfd, const char *path, int at_flags);
/* The same, and *published (when the shim tracks the file) gets it with a
 * reference the caller puts, *ino (when not NULL) its inode number: so
 * the rename's log record can name it, tracked or closed already. */
int flusher_before_publish_file(int dirfd, const char *path, int at_flags, struct shim_file **published,
				uint64_t *ino);
/* The app is about to close fd (close, close_range, dup2 onto it, fclose):
 * wait for a sync that is using it, keep what the flusher still needs.
 * on_close=sync waits for the pending syncs first. */
void flusher_before_close(struct shim_file *f, int fd);
/* dup2/dup3 are about to replace our private descriptor fd. */
void flusher_vacate(struct shim_file *f, int fd);
/* Our private descriptor fd of f was closed behind our back. */
void flusher_priv_lost(struct shim_file *f, int fd);
/* EMFILE relief: complete owed syncs and close private descriptors.
 * True if there were any. */
bool flusher_release_privs(void);
/* Around fork, after the registry's lock: no private descriptor is being
 * made or closed while the table is copied. */
void flusher_atfork_prepare(void);
void flusher_atfork_parent(void);
void flusher_atfork_child(void);

/* Accounting the write path and the sync path feed. */
/* One real sync of f, the app's own (sync.c) or the flusher's: begun
 * before the call, it covers everything written so far (data at risk,
 * the max_bytes threshold, crash-test mode's mark); flusher_real_sync_ends
 * is the one place data at risk, crash-test mode and the live counters
 * hear what it did. */
struct real_sync_seen {
	struct risk_sync risk;
	uint64_t bytes; /* written since the last real sync began */
	uint64_t upto;  /* crash-test mode's mark: the changes it covers */
	uint64_t t0;
};
struct real_sync_seen flusher_real_sync_begins(struct shim_file *f);
/* The real fsync (full) or fdatasync of fd: 0 or its errno. When fd's open
 * file description still owes the kernel's report of a sticky error the
 * shim already told, that report is dropped and the sync made again. */
int flusher_real_sync_fd(int fd, bool full);
/* reached: the call was made on the file; err its result. Returns how
 * long it took (ns). */
uint64_t flusher_real_sync_ends(struct shim_file *f, const struct real_sync_seen *s, bool reached, int err);
/* fd (an app descriptor of f: a mapping's) may be borrowed if nothing
 * better is known. */
void flusher_offer_fd(struct shim_file *f, int fd);
/* Some descriptor of f is open, the app's or the shim's: a deferred sync
 * has a way to the file without reopening it by name. */
bool flusher_can_reach(struct shim_file *f);

/* For the flusher threads (workers.c). */
bool flusher_owes(struct shim_file *f);
/* Deferred requests no real sync covers yet. */
uint64_t flusher_pending(struct shim_file *f);
void flusher_sync_requested(struct shim_file *f);
void flusher_writeback(struct shim_file *f);

#endif
