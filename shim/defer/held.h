/*
 * held.h - ordered defer without the wait: a write that would have to wait
 * for an acknowledged sync to become durable is held by the shim instead,
 * and applied to the kernel later, in order, once what it depends on is
 * durable (held.c has the design). The writer returns at once.
 *
 * The read paths' share is one relaxed load of held_files: zero unless
 * some file has a change held right now.
 */
#ifndef SYNCSHIM_HELD_H
#define SYNCSHIM_HELD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "file_parts.h" /* struct held_link, struct held_extent, HELD_EXTENTS */
#include "shim.h"

struct shim_file;
struct held_change;

/* What a held change waits for: g's requests up to target durable
 * (g->fl.done_seq >= target). The change owns a reference to g. */
struct held_dep {
	struct shim_file *g;
	uint64_t target;
};
#define HELD_DEPS_MAX 8

/* Files holding changes now: the read paths' one load. */
extern _Atomic uint32_t held_files;

void held_reset(struct shim_file *f);        /* a (recycled) object as a new file */
void held_release_file(struct shim_file *f); /* it is being recycled: nothing is held (closes wfd) */

/* Whether this process may hold changes now: alone in its ordering
 * domain (it never forked and is no fork child), not exiting, no io_uring. */
bool held_allowed(void);
/* From now on nothing is held (a fork, a ring): what is held is applied
 * first. */
void held_stop(void);

/* Changes f holds now (h is &f->hold). */
static inline uint32_t held_count(const struct held_link *h)
{
	return atomic_load(&h->count);
}

/*
 * Hold a write of total bytes (iov, cnt) at pos to f, made through fd,
 * that may reach the kernel only once deps[] (references, given to the
 * change on success) are durable; first_self: the request of f itself it
 * must wait for when f holds nothing yet (0 none; with changes held, f's
 * own bytes decide, held.c). true: held (the caller returns total); false:
 * not (bounds, memory, no descriptor): the caller waits as before, and
 * still owns deps' references.
 */
bool held_hold(struct shim_file *f, int fd, uint64_t pos, const struct iovec *iov, int cnt, size_t total,
	       struct held_dep *deps, int ndeps, uint64_t first_self);

/* Until f holds nothing (its changes are in the kernel: a read, a sync,
 * a non-write change): the applier thread applies them, the caller
 * sleeps. */
void held_apply_file(struct shim_file *f);
/* Until nothing is held: a barrier (exit, exec, fork, spawn, set*id),
 * which applies for itself when the applier thread is not at it. */
void held_apply_all(void);

/* pread/preadv of the file open on fd at off: the kernel's bytes with
 * the file's held writes laid over them (the program reads what it
 * wrote, without waiting for them to be applied). -1 with errno, like the
 * call. */
ssize_t held_preadv(int fd, const struct iovec *iov, int cnt, off_t off, ssize_t (*kernel)(int, const struct iovec *, int, off_t));
/* An fstat's or statx's size of the file open on fd: its held writes may
 * reach past the kernel's end. */
uint64_t held_size(int fd, uint64_t kernel_size);
/* A read of (or anything that sees the bytes of) the file open on fd: its
 * held changes are applied first. */
void held_before_read_slow(int fd);
static inline void held_before_read(int fd)
{
	if (unlikely(atomic_load_explicit(&held_files, memory_order_relaxed)))
		held_before_read_slow(fd);
}
/* The same for a file named by path (stat, open with O_TRUNC, truncate). */
void held_before_path_slow(int dirfd, const char *path, int at_flags);
static inline void held_before_path(int dirfd, const char *path, int at_flags)
{
	if (unlikely(atomic_load_explicit(&held_files, memory_order_relaxed)))
		held_before_path_slow(dirfd, path, at_flags);
}

/* The requests a real sync of f may cover now: req as read, capped by the
 * floor while f holds changes (h is &f->hold). */
static inline uint64_t held_coverable(const struct held_link *h, uint64_t req)
{
	uint64_t floor = atomic_load(&h->floor);
	return req < floor ? req : floor;
}

/* A real sync of f covered requests up to its floor; the rest, first
 * asked at since, wait for f's held writes. */
void held_owed_since(struct shim_file *f, uint64_t since);
/* A real sync of some file ended: held changes waiting for it may go. */
void held_sync_ended(void);

void held_atfork_child(void);

/* What holding cost this process (the order statistics line). */
struct held_stats {
	uint64_t held, held_bytes, applied_rounds, read_waits, bound_waits;
};
void held_stats_read(struct held_stats *s);

#endif
