/*
 * order.h - ordered defer: a change of a file never reaches the kernel
 * ahead of a sync the app was already told is done (order.c has the
 * design; docs/ARCHITECTURE.md "Ordered defer").
 *
 * The write path's share is one relaxed load of order_summary: zero while
 * no deferred acknowledgement is waiting for the device, which is the
 * common case of every policy but defer, and of defer between its real
 * syncs once they are caught up.
 */
#ifndef SYNCSHIM_ORDER_H
#define SYNCSHIM_ORDER_H

#include <sys/types.h>
#include <sys/uio.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "file_parts.h" /* struct order_link */
#include "shim.h"

struct shim_file;

#define ORDER_END_LOST UINT64_MAX
/* A hole is [lo, lo + len) with lo below 2^44 and len below 2^20 (larger
 * ones are not kept: the plain check decides); 0 is none. */
#define ORDER_HOLE_LO_BITS 44
#define ORDER_HOLE_LEN_MAX ((1ull << (64 - ORDER_HOLE_LO_BITS)) - 1)

/* The ordering domain (order.c): this process and its fork children.
 * Its first word is the summary: (files with an acknowledged deferred
 * sync not yet durable, in every process of the domain) << 32 | (that
 * file's slot when there is exactly one, else 0). Written under the
 * domain's lock, read lock-free. */
struct order_domain;
extern struct order_domain *order_dom;
#define ORDER_SUMMARY(d) ((_Atomic uint64_t *)(void *)(d))

/* At load: the shared mapping fork children inherit. */
void order_init(void);

/* A (recycled) object starting as a new file. */
void order_reset(struct shim_file *f);
/* A deferred sync of f was acknowledged (its request numbered before
 * this): f now orders every later change. Lock-free when f is already
 * pending; async-signal-safe in the shim's sense (shim_busy). */
void order_acked(struct shim_file *f);
/* A real sync of f ended (no lock of f held): drop f from the pending
 * list if nothing it acknowledged is still owed. */
void order_synced(struct shim_file *f);

bool order_write_slow(struct shim_file *f, int fd, uint64_t summary, off_t off, const struct iovec *iov,
		      int cnt, bool holdable, off_t *moved_to);

/* A write's offset when it lands at the end of the file whatever the
 * position says (O_APPEND, RWF_APPEND): forward of every promised byte. */
#define ORDER_AT_END ((off_t)-2)

/*
 * Before a write of cnt buffers at off (-1: the descriptor's position, not
 * known; ORDER_AT_END) to
 * f through fd: wait until the deferred syncs of other files acknowledged
 * before it are durable (not for order = file or noop files), and, if the
 * write changes bytes an acknowledged sync of f itself promised, until
 * that sync is. Rewriting identical bytes and writing past them do not
 * wait. holdable (a plain write at a known offset off): instead of
 * waiting, the write may be held (held.c): then true is returned, and
 * the caller does not make it (it returns the full count). errno is kept.
 *
 * moved_to (not NULL: a write at the descriptor's position, off the
 * slot's mark, which the caller has claimed): a write about to be held
 * first takes its bytes' room in the kernel's position (lseek by its
 * length from where the position is: atomic against every other mover
 * of the description), and *moved_to says where they start. That is
 * where they land, held or not: another thread, or a signal handler,
 * that wrote at the position meanwhile moved it, and a mark cannot see
 * that in time. When *moved_to >= 0 and false is returned, the caller
 * writes at *moved_to (pwrite), not at the position.
 */
static inline bool order_before_write(struct shim_file *f, int fd, off_t off, const struct iovec *iov, int cnt,
				      bool holdable, off_t *moved_to)
{
	uint64_t s = atomic_load_explicit(ORDER_SUMMARY(order_dom), memory_order_relaxed);
	if (likely(s == 0))
		return false;
	return order_write_slow(f, fd, s, off, iov, cnt, holdable, moved_to);
}

/* After a write of r bytes at off (-1: the position, not known) to f
 * (ord is &f->ord), made when f's request count was wreq: the highest
 * byte written so far this sync round
 * (order.c: what is "forward"), unknown (UINT64_MAX) for the rest of the
 * round if this write went back and ended below the end of the write
 * before it.
 * Only for files whose syncs can be answered unsynced. */
void order_end_filled(struct order_link *ord, uint64_t off, uint64_t end);
void order_end_skipped(struct order_link *ord, uint64_t lo, uint64_t hi, uint64_t fills0);

/* After a write of [off, end) (off -1: not known): the known end moves up
 * to its end. One that began past the end left a hole (recorded if the
 * size is known); one that began below it may have written into one.
 * The order of the steps is what keeps a hole true under concurrent
 * writers (order.c, "Past the known end"): all of them sequentially
 * consistent. */
static inline void order_known_end_after(struct order_link *ord, off_t off, uint64_t end)
{
	if (off < 0) {
		if (atomic_load(&ord->known_end) != ORDER_END_LOST) /* lost for good: no store per write */
			atomic_store(&ord->known_end, ORDER_END_LOST);
		return;
	}
	uint64_t ke = atomic_load(&ord->known_end);
	while (ke != ORDER_END_LOST) {
		if ((uint64_t)off < ke) {
			order_end_filled(ord, (uint64_t)off, end);
			return;
		}
		uint64_t fills0 = atomic_load(&ord->fills);
		uint32_t sized = atomic_load(&ord->sized);
		if (atomic_compare_exchange_weak(&ord->known_end, &ke, end)) {
			if ((uint64_t)off > ke && sized)
				order_end_skipped(ord, ke, (uint64_t)off, fills0);
			return;
		}
	}
}

static inline void order_after_write(struct order_link *ord, off_t off, ssize_t r, uint64_t wreq)
{
	if (wreq > atomic_load_explicit(&ord->wreq, memory_order_relaxed))
		atomic_store_explicit(&ord->wreq, wreq, memory_order_relaxed);
	uint64_t end = off < 0 ? UINT64_MAX : (uint64_t)off + (uint64_t)r;
	order_known_end_after(ord, off, end);
	/* An append at an end not known (O_APPEND) ends where the last did, at
	 * "not known": then there is nothing to swap. */
	uint64_t before = atomic_load_explicit(&ord->last_end, memory_order_relaxed);
	if (before != end)
		before = atomic_exchange_explicit(&ord->last_end, end, memory_order_relaxed);
	/* Back, and ending short of where the write before it ended (sqlite's
	 * new WAL header): the bytes past it are not what followed a log's end.
	 * One that rewrites the tail of the write before it and goes on past
	 * it (PostgreSQL's last WAL page and the next ones: its overlap was
	 * compared before it) leaves everything past it untouched this round:
	 * as forward as one starting where that one ended. */
	if (off < 0 || ((uint64_t)off < before && end < before))
		end = UINT64_MAX;
	uint64_t old = atomic_load_explicit(&ord->cur_hi, memory_order_relaxed);
	while (end > old && !atomic_compare_exchange_weak_explicit(&ord->cur_hi, &old, end, memory_order_relaxed,
								   memory_order_relaxed))
		;
}

/* A real sync of f led by the flusher begins / ended (f's flusher lock
 * held; happened: it ran). */
void order_sync_begins(struct shim_file *f);
void order_sync_ends(struct shim_file *f, bool happened);

/* Before a change to f that is not a write (ftruncate, fallocate): as a
 * write over its promised bytes. f NULL: an untracked file. */
void order_before_change(struct shim_file *f);
/* The same for the file open on fd, if the shim tracks it (sendfile and
 * splice into it: bytes the shim does not see written). */
void order_before_fd_change(int fd);
/* Before a change of names (rename, link, unlink, truncate by name):
 * every file's acknowledged syncs first. */
void order_before_names(void);

void order_atfork_child(void);
void order_atfork_parent(void); /* the process shares its domain from now on */
/* Before a change of credentials (set*id, capset): a process that shares
 * its domain leaves it, so nothing it runs afterwards can reach the
 * others' table. */
void order_before_credentials(void);

/* Held changes (held.c): the highest byte of f's writes since its last
 * real sync began while it has an acknowledgement pending (0: none
 * promised; UINT64_MAX: not known), and the count of files holding
 * changes moving by delta (the summary counts them: their writes must
 * reach order_write_slow). */
uint64_t order_promised_hi(struct shim_file *f);
/* The request of f itself that bytes f's writes put in the kernel are
 * promised by at the latest (0: none is promised yet). */
uint64_t order_self_target(struct shim_file *f);
void order_held_files(int delta);

/* f's bytes may change without a write call the shim sees: a shared
 * mapping of it (mmap_track), a sendfile or splice into it, io_uring
 * (all: f NULL). Rewrite runs' copies of its bytes are not trusted. */
void order_bytes_unseen(struct shim_file *f);
/* A shared mapping of f was made: for the rest of its life. */
void order_file_mapped(struct shim_file *f);
/* A change through a path ordered defer does not order (shared mappings,
 * io_uring, libaio) met f: said once per path. */
void order_unordered_path(struct shim_file *f, const char *what);
/* The same, for the file open on fd (if the shim tracks it); and where
 * they went is not known: the file's known end is lost. */
void order_fd_bytes_unseen(int fd);
/* f's writes are no longer all counted (a rule that answers no sync
 * unsynced): its known end is lost. */
void order_writes_uncounted(struct shim_file *f);
/* f's rule starts deferring its syncs (a reload, or a new object): its
 * writes were not followed until now. */
void order_starts_deferring(struct shim_file *f);

#endif
