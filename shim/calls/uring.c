/*
 * uring.c - io_uring rings: their syncs and writes under the file's rule.
 *
 * A ring's entries never pass through libc, but they pass through the
 * calls that hand them to the kernel: liburing's exported submit family
 * (the entries are not even published yet) and io_uring_enter through
 * libc's syscall() or liburing's raw exports io_uring_enter and
 * io_uring_enter2 (published, not yet consumed: the kernel reads a
 * non-polled ring only inside io_uring_enter). There, each new entry, the
 * ones between the SQ ring's kernel head (or the last one looked at) and
 * the app's tail, is looked at once and made what the file's rule says:
 *
 *   FSYNC (DATASYNC or not)    the decision table of fsync/fdatasync:
 *                              fdatasync sets IORING_FSYNC_DATASYNC; noop
 *                              and defer make it a NOP (same user_data,
 *                              link flags, place in its chain: it
 *                              completes with 0), defer handing the file
 *                              to its flusher; passthrough and group
 *                              leave it bit-for-bit alone.
 *   SYNC_FILE_RANGE            noop makes it a NOP.
 *   WRITE, WRITE_FIXED, WRITEV the write path's accounting (data at risk,
 *                              max_bytes); RWF_SYNC/RWF_DSYNC and O_SYNC
 *                              descriptors as pwritev2's.
 *   CLOSE                      prepared like an implicit close (slot
 *                              cleared, the flusher's say).
 *   RENAMEAT, LINKAT           the rename barrier: the source's pending
 *                              syncs are completed first; a failed one
 *                              makes the entry fail with its errno.
 *
 * A sticky error of a deferred sync owed to the descriptor is delivered
 * through the entry: a NOP that injects the result (IORING_NOP_INJECT_
 * RESULT, Linux 6.10). On an older kernel the entry goes to the kernel
 * unchanged and the error waits for the descriptor's next libc call.
 *
 * Rings are learned from io_uring_setup (through syscall() or liburing's
 * export) and its mmaps (the SQ ring and the SQE array at their offsets
 * on the ring's descriptor), or from liburing's struct io_uring, once
 * io_uring_queue_mmap has filled it or at the first submit.
 * Registered files are kept with their (dev, inode) so an IOSQE_FIXED_FILE
 * entry maps to a descriptor only while that descriptor still names the
 * file that was registered.
 *
 * What cannot be seen is detected and said once: a ring whose kernel head
 * moved past entries the shim never looked at (io_uring_enter by inline
 * system calls, as fio and statically linked liburing do, or an SQPOLL
 * ring publishing by itself), and rings the shim cannot read
 * (IORING_SETUP_NO_MMAP, a registered ring descriptor).
 *
 * Concurrency: a ring is the app's to serialise (the kernel and liburing
 * ask that of it); the shim adds a per-ring flag so a signal handler that
 * submits on a ring the interrupted code was submitting on passes
 * through instead of rewriting the same entries twice. The table itself
 * changes under a mutex, at setup and unmap only.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "alloc.h"
#include "close_dup.h"
#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "knobs.h"
#include "live.h"
#include "order.h"
#include "risk.h"
#include "position.h"
#include "shim.h"
#include "syncerr.h"
#include "trace.h"
#include "uring.h"

/* Newer than the headers this builds with. */
#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif
#define URING_NOP_INJECT_RESULT (1U << 0) /* IORING_NOP_INJECT_RESULT, in sqe->nop_flags */

#define MAX_RINGS 64
#define MAX_FIXED_FILES 65536

struct fixed_file {
	int fd; /* -1: empty, or unknown */
	dev_t dev;
	ino_t ino;
};

struct ring {
	_Atomic int fd1;             /* ring descriptor + 1; 0: a free entry */
	_Atomic int busy;            /* someone is looking at its entries */
	unsigned setup_flags;
	struct io_sqring_offsets sq_off; /* from the setup the shim saw */
	bool have_off;
	unsigned char *sq_ring;      /* the SQ ring's mapping (raw rings) */
	size_t sq_ring_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	unsigned *khead, *ktail, *array;
	unsigned mask, entries;
	unsigned seen;               /* entries before this one were looked at */
	bool seen_set;
	unsigned done_end;           /* just past the last entry the shim made a NOP */
	bool done_set;
	unsigned done_cq;            /* liburing rings: the CQ tail when it was published */
	bool chain_open;             /* the last entry looked at links to the next one */
	bool chain_by_shim;          /* every entry of the open chain was made or emptied by the shim */
	bool chain_cancel;           /* an entry the shim made failed: the rest of the chain is cancelled */
	bool warned;
	struct fixed_file *files;    /* registered files, shim_alloc'd */
	unsigned nfiles;
	bool files_unknown;          /* registered in a way the shim did not follow */
};

_Atomic int uring_rings_known;
static struct ring rings[MAX_RINGS];
static pthread_mutex_t rings_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- liburing's functions behind ours ------------------------------------ */

enum lib_id {
#define LIB_ID(ret, name, params, fb) LIB_ID_##name,
	SHIM_LIBURING_CALLS(LIB_ID)
#undef LIB_ID
	LIB_COUNT
};
static const char *const lib_names[LIB_COUNT] = {
#define LIB_NAME(ret, name, params, fb) [LIB_ID_##name] = #name,
	SHIM_LIBURING_CALLS(LIB_NAME)
#undef LIB_NAME
};
static _Atomic(void *) lib_table[LIB_COUNT];

static void *lib_resolve(enum lib_id id)
{
	void *p = atomic_load_explicit(&lib_table[id], memory_order_acquire);
	if (p)
		return p;
	int e = errno;
	p = dlsym(RTLD_NEXT, lib_names[id]);
	if (!p)
		dlerror();
	errno = e;
	if (p) /* a miss is not stored: liburing may be loaded later */
		atomic_store_explicit(&lib_table[id], p, memory_order_release);
	return p;
}

/* Only the app calls these, and only with liburing loaded (it linked
 * against it); a miss would mean a broken process: ENOSYS, as calls.h's
 * stand-ins. */
#define LIB(name) ((__typeof__(&name))lib_resolve(LIB_ID_##name))
/* liburing's own function, or -ENOSYS where this liburing lacks it. */
#define LIB_CALL(name, ...) (LIB(name) ? LIB(name)(__VA_ARGS__) : -ENOSYS)

/* ---- what the kernel can do ------------------------------------------------ */

static _Atomic int inject_state; /* 0 unknown, 1 yes, 2 no */

/* NOP's injected result came with Linux 6.10. */
static bool nop_can_inject(void)
{
	int s = atomic_load_explicit(&inject_state, memory_order_relaxed);
	if (s == 0) {
		struct utsname u;
		unsigned maj = 0, min = 0;
		if (uname(&u) == 0)
			sscanf(u.release, "%u.%u", &maj, &min);
		s = (maj > 6 || (maj == 6 && min >= 10)) ? 1 : 2;
		atomic_store_explicit(&inject_state, s, memory_order_relaxed);
	}
	return s == 1;
}

/* ---- the table ------------------------------------------------------------ */

static struct ring *ring_of(int fd)
{
	if (fd < 0 || !atomic_load_explicit(&uring_rings_known, memory_order_acquire))
		return NULL;
	for (int i = 0; i < MAX_RINGS; i++)
		if (atomic_load_explicit(&rings[i].fd1, memory_order_acquire) == fd + 1)
			return &rings[i];
	return NULL;
}

/* Returns the registered-files table, for the caller to free after it
 * has let go of the table's lock (the allocator is never called under a
 * shim lock). */
static struct fixed_file *ring_clear(struct ring *r)
{
	struct fixed_file *files = r->files;
	memset((char *)r + sizeof(r->fd1) + sizeof(r->busy), 0,
	       sizeof(*r) - sizeof(r->fd1) - sizeof(r->busy));
	return files;
}

/* A new ring on fd (replacing whatever the table said about fd). */
static struct ring *ring_add(int fd, unsigned setup_flags)
{
	struct ring *r = NULL;
	struct fixed_file *old = NULL;
	shim_enter();
	pthread_mutex_lock(&rings_mu);
	for (int i = 0; i < MAX_RINGS && !r; i++)
		if (atomic_load(&rings[i].fd1) == fd + 1)
			r = &rings[i];
	for (int i = 0; i < MAX_RINGS && !r; i++)
		if (atomic_load(&rings[i].fd1) == 0)
			r = &rings[i];
	if (r) {
		atomic_store(&r->fd1, 0);
		old = ring_clear(r);
		r->setup_flags = setup_flags;
		atomic_store_explicit(&r->fd1, fd + 1, memory_order_release);
		atomic_fetch_add(&uring_rings_known, 1);
	}
	pthread_mutex_unlock(&rings_mu);
	shim_free(old);
	shim_leave();
	return r;
}

static void ring_drop(struct ring *r)
{
	struct fixed_file *old = NULL;
	shim_enter();
	pthread_mutex_lock(&rings_mu);
	if (atomic_load(&r->fd1)) {
		atomic_store(&r->fd1, 0);
		old = ring_clear(r);
	}
	pthread_mutex_unlock(&rings_mu);
	shim_free(old);
	shim_leave();
}

static bool ring_claim(struct ring *r)
{
	int z = 0;
	return atomic_compare_exchange_strong_explicit(&r->busy, &z, 1, memory_order_acquire, memory_order_relaxed);
}

static void ring_release(struct ring *r)
{
	atomic_store_explicit(&r->busy, 0, memory_order_release);
}

static void ring_warn(struct ring *r, const char *why)
{
	if (r->warned)
		return;
	r->warned = true;
	shim_say("io_uring ring (fd %d): %s: its syncs and writes follow no policy (see README, Limits)",
		 atomic_load(&r->fd1) - 1, why);
	held_stop(); /* its reads are unseen too: nothing is held from now on (held.c) */
}

/* The kernel consumed entries the shim never looked at. */
static void check_unseen(struct ring *r, unsigned head)
{
	if (r->seen_set ? (int)(head - r->seen) > 0 : head != 0)
		ring_warn(r, "entries reached the kernel without a call the shim sees "
			     "(io_uring_enter by inline system call: inline_syscalls = trap; or a polling ring)");
}

/* The raw ring's pointers, once both mappings are known. */
static void ring_raw_ready(struct ring *r)
{
	if (!r->sq_ring || !r->sqes || !r->have_off || r->khead)
		return;
	unsigned char *b = r->sq_ring;
	r->mask = *(unsigned *)(b + r->sq_off.ring_mask);
	r->entries = *(unsigned *)(b + r->sq_off.ring_entries);
	r->array = (r->setup_flags & IORING_SETUP_NO_SQARRAY) ? NULL : (unsigned *)(b + r->sq_off.array);
	r->ktail = (unsigned *)(b + r->sq_off.tail);
	/* khead last, published with release: a reader that sees it sees the rest */
	__atomic_store_n(&r->khead, (unsigned *)(b + r->sq_off.head), __ATOMIC_RELEASE);
}

void uring_mapped(void *addr, size_t len, int fd, off_t off)
{
	struct ring *r = ring_of(fd);
	if (!r || !ring_claim(r))
		return;
	if (off == (off_t)IORING_OFF_SQ_RING) {
		r->sq_ring = addr;
		r->sq_ring_len = len;
	} else if (off == (off_t)IORING_OFF_SQES) {
		r->sqes = addr;
		r->sqes_len = len;
	}
	ring_raw_ready(r);
	ring_release(r);
}

static bool overlaps(const void *p, size_t plen, const void *a, size_t alen)
{
	uintptr_t s = (uintptr_t)p, as = (uintptr_t)a;
	return p && s < as + alen && as < s + plen;
}

void uring_unmapped(void *addr, size_t len)
{
	for (int i = 0; i < MAX_RINGS; i++) {
		struct ring *r = &rings[i];
		if (!atomic_load_explicit(&r->fd1, memory_order_acquire))
			continue;
		if (overlaps(r->sq_ring, r->sq_ring_len, addr, len) || overlaps(r->sqes, r->sqes_len, addr, len)) {
			if (r->khead && r->sq_ring && overlaps(r->sq_ring, r->sq_ring_len, addr, len))
				check_unseen(r, atomic_load_explicit((_Atomic unsigned *)r->khead, memory_order_acquire));
			ring_drop(r);
		}
	}
}

/* ---- one entry ------------------------------------------------------------ */

/* The descriptor an entry names, -1 when the shim cannot tell; for a
 * registered file, *want_dev/ino say which file it must still be. */
static int entry_fd(const struct ring *r, const struct io_uring_sqe *s, const struct fixed_file **fixed)
{
	*fixed = NULL;
	if (!(s->flags & IOSQE_FIXED_FILE))
		return s->fd;
	if (r->files_unknown || s->fd < 0 || (unsigned)s->fd >= r->nfiles)
		return -1;
	*fixed = &r->files[s->fd];
	return (*fixed)->fd;
}

/* The tracked file behind an entry's descriptor, with a reference. */
static struct shim_file *entry_file(const struct ring *r, const struct io_uring_sqe *s, int *fdp, uint32_t *state)
{
	const struct fixed_file *fx;
	int fd = entry_fd(r, s, &fx);
	*fdp = fd;
	if (fd < 0)
		return NULL;
	int e = errno;
	struct shim_file *f = fd_get(fd, state);
	errno = e;
	if (f && fx && (f->dev != fx->dev || f->ino != fx->ino)) {
		file_put(f); /* the number names another file now: not the registered one */
		return NULL;
	}
	return f;
}

/* The entry becomes a NOP completing with res (0, or -errno): its
 * user_data and its place in a chain kept. */
static void make_nop(struct io_uring_sqe *s, int res)
{
	__u8 keep = s->flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_IO_DRAIN | IOSQE_ASYNC |
				IOSQE_CQE_SKIP_SUCCESS);
	__u64 ud = s->user_data;
	__u16 personality = s->personality;
	memset(s, 0, sizeof(*s));
	s->opcode = IORING_OP_NOP;
	s->flags = keep;
	s->fd = -1;
	s->user_data = ud;
	s->personality = personality;
	if (res) {
		s->rw_flags = URING_NOP_INJECT_RESULT; /* nop_flags: the same word */
		s->len = (__u32)res;
	}
}

/* Crash-test mode: the file's limit, recorded once per file (per slot of
 * a small table: a duplicate after a collision is harmless, only longer). */
static void crash_limit_once(const struct shim_file *f, int fd, const char *what)
{
	static _Atomic uint32_t said[256];
	uint32_t key = f->id + 1;
	_Atomic uint32_t *slot = &said[key % 256];
	if (atomic_load_explicit(slot, memory_order_relaxed) == key)
		return;
	atomic_store_explicit(slot, key, memory_order_relaxed);
	crash_limit_fd(fd, what);
}

/*
 * A sync submitted around libc (a ring's FSYNC, an aio FSYNC/FDSYNC):
 * what the fsync/fdatasync decision table makes of it. can_fail: the
 * caller can complete the request with an error of the shim's choosing;
 * if not, an error owed to the descriptor stays owed (its next libc call
 * reports it) and a deferred sync that cannot be queued goes to the
 * kernel as it is.
 */
enum around_sync around_sync_decide(struct shim_file *f, int fd, bool datasync, bool can_fail, int *err)
{
	*err = 0;
	if (crash_on())
		crash_limit_once(f, fd, "syncs submitted through io_uring or libaio are not tracked");
	struct knobs k;
	knobs_of(f, &k);
	enum shim_action act = k.act[datasync ? CALL_FDATASYNC : CALL_FSYNC];
	if (act != ACT_NOOP && act != ACT_DEFER && act != ACT_DATASYNC)
		return AROUND_LEAVE; /* passthrough, group: the app's request, untouched */
	int e0 = errno;
	enum shim_op op = datasync ? OP_FDATASYNC : OP_FSYNC;
	struct trace_start t;
	trace_begin(&t);
	uint64_t t0 = f->live ? trace_now() : 0;
	enum around_sync out;
	if (can_fail && (*err = syncerr_take(f, fd)) != 0) {
		out = AROUND_FAIL;
	} else if (act == ACT_DATASYNC) {
		out = datasync ? AROUND_LEAVE : AROUND_DATASYNC;
	} else if (act == ACT_NOOP) {
		risk_acked(f, trace_now());
		out = AROUND_DONE;
	} else if (flusher_app_sync(f, &k, ACT_DEFER, fd, !datasync, t0) == 0) {
		out = AROUND_DONE;
	} else if (can_fail) {
		*err = errno;
		out = AROUND_FAIL;
	} else {
		out = AROUND_LEAVE; /* the kernel's own sync; the error waits for libc */
	}
	if (f->live && out != AROUND_LEAVE)
		live_app_synced(f, trace_now() - t0);
	if (out != AROUND_LEAVE)
		trace_end(&t, op, f, *err ? -1 : 0, *err);
	errno = e0;
	return out;
}

/*
 * The entries whose file matters: each handler gets the tracked file
 * behind the entry's descriptor (a reference ring_entry holds), the
 * descriptor and its slot's state.
 */
static void ring_fsync(struct io_uring_sqe *s, struct shim_file *f, int fd, uint32_t state)
{
	(void)state;
	int err;
	switch (around_sync_decide(f, fd, (s->fsync_flags & IORING_FSYNC_DATASYNC) != 0, nop_can_inject(), &err)) {
	case AROUND_DATASYNC:
		s->fsync_flags |= IORING_FSYNC_DATASYNC;
		break;
	case AROUND_DONE:
		make_nop(s, 0);
		break;
	case AROUND_FAIL:
		make_nop(s, -err);
		break;
	default:
		break;
	}
}

static void ring_sync_file_range(struct io_uring_sqe *s, struct shim_file *f, int fd, uint32_t state)
{
	(void)fd, (void)state;
	struct knobs k;
	knobs_of(f, &k);
	if (k.act[CALL_SYNC_FILE_RANGE] == ACT_NOOP &&
	    !(s->sync_range_flags & ~(SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				      SYNC_FILE_RANGE_WAIT_AFTER)))
		make_nop(s, 0);
}

/* Bytes an iovec array of the app's describes, read the safe way (a bad
 * pointer is the kernel's -EFAULT to report, not our crash). */
uint64_t writev_bytes(const struct iovec *remote_iov, unsigned cnt)
{
	struct iovec local[32];
	uint64_t total = 0;
	for (unsigned done = 0; done < cnt;) {
		unsigned n = cnt - done < 32 ? cnt - done : 32;
		struct iovec l = { local, n * sizeof(struct iovec) };
		struct iovec rv = { (void *)(remote_iov + done), n * sizeof(struct iovec) };
		ssize_t got = process_vm_readv(getpid(), &l, 1, &rv, 1, 0);
		if (got != (ssize_t)(n * sizeof(struct iovec)))
			break;
		for (unsigned i = 0; i < n; i++)
			total += local[i].iov_len;
		done += n;
	}
	return total;
}

/*
 * A write submitted around libc, of n bytes (counted when submitted: the
 * completion is not the shim's to see): RWF_SYNC/RWF_DSYNC in *rw_flags
 * as pwritev2's, then the write path's accounting (data at risk, the
 * flusher's thresholds, the live counters). Crash-test mode cannot log it
 * here (a ring's write it can log is made by crash_made instead).
 */
void around_write_order(struct shim_file *f, int fd, off_t off, const struct iovec *iov, int cnt)
{
	int e0 = errno;
	order_before_write(f, fd, off, iov, cnt, false, NULL);
	if (off < 0)
		order_fd_bytes_unseen(fd); /* where it lands is the kernel's: not followed */
	else
		order_bytes_unseen(f); /* it lands later, unseen by a rewrite run's copy */
	errno = e0;
}

void around_write(struct shim_file *f, int fd, uint32_t state, int *rw_flags, off_t off, uint64_t n)
{
	int e0 = errno;
	if (*rw_flags & (RWF_SYNC | RWF_DSYNC)) {
		struct knobs k;
		knobs_of(f, &k);
		switch (k.act[CALL_OPEN_SYNC]) {
		case ACT_DATASYNC:
			*rw_flags = (*rw_flags & ~RWF_SYNC) | RWF_DSYNC;
			break;
		case ACT_STRIP:
			state |= SLOT_OSYNC_STRIP;
			*rw_flags &= ~(RWF_SYNC | RWF_DSYNC);
			break;
		case ACT_DEFER:
			state |= SLOT_OSYNC_DEFER | ((*rw_flags & RWF_SYNC) ? SLOT_APP_OSYNC : 0);
			*rw_flags &= ~(RWF_SYNC | RWF_DSYNC);
			break;
		default:
			break;
		}
	}
	unsigned work = file_write_work(f);
	if (work & WRITES_CRASH)
		crash_limit_once(f, fd, "writes submitted through io_uring or libaio are not logged");
	bool counted = (work & WRITES_COUNTED) || (state & (SLOT_OSYNC_DEFER | SLOT_OSYNC_STRIP));
	if (work & WRITES_LIVE)
		live_wrote(f, (ssize_t)n);
	if (counted) {
		if ((work & WRITES_DEFERRED) || (state & SLOT_OSYNC_DEFER))
			order_after_write(&f->ord, off, (ssize_t)n, atomic_load(&f->fl.req_seq));
		risk_wrote(&f->risk, n);
		if (state & SLOT_OSYNC_STRIP)
			risk_acked(f, trace_now());
		if ((work & WRITES_DEFERRED) || (state & SLOT_OSYNC_DEFER))
			flusher_after_write(f, fd, state);
	}
	errno = e0;
}

static void ring_write(struct io_uring_sqe *s, struct shim_file *f, int fd, uint32_t state)
{
	unsigned work = file_write_work(f);
	uint64_t n = 0;
	if ((work & (WRITES_COUNTED | WRITES_LIVE)) || (state & (SLOT_OSYNC_DEFER | SLOT_OSYNC_STRIP)) ||
	    (s->rw_flags & (RWF_SYNC | RWF_DSYNC)))
		n = s->opcode == IORING_OP_WRITEV ? writev_bytes((const struct iovec *)(uintptr_t)s->addr, s->len)
						  : s->len;
	/* In its order as a write: the submitter waits until what it depends
	 * on is durable (InnoDB's data pages, each after a redo log sync the
	 * shim may have deferred). */
	off_t off = s->off == (__u64)-1 ? -1 : (off_t)s->off;
	struct iovec one = { (void *)(uintptr_t)s->addr, s->len };
	bool vec = s->opcode == IORING_OP_WRITEV;
	around_write_order(f, fd, off, vec ? (const struct iovec *)(uintptr_t)s->addr : &one, vec ? (int)s->len : 1);
	int fl = (int)s->rw_flags;
	around_write(f, fd, state, &fl, off, n);
	s->rw_flags = (__u32)fl;
}

/* A read: the file's held writes first (held.c), so the kernel reads what
 * the program wrote. */
static void ring_read(struct io_uring_sqe *s, struct shim_file *f, int fd, uint32_t state)
{
	(void)s, (void)f, (void)state;
	held_before_read(fd);
}

static void ring_close(struct io_uring_sqe *s)
{
	if ((s->flags & IOSQE_FIXED_FILE) || s->file_index || s->fd < 0)
		return; /* a registered slot: no descriptor of the app's ends */
	fdops_before_implicit_close(s->fd);
}

/* RENAMEAT/LINKAT publish the source under a new name: its pending
 * syncs first, and a failed one fails the entry as rename would. */
static void ring_publish(struct io_uring_sqe *s)
{
	bool link = s->opcode == IORING_OP_LINKAT;
	int at_flags = link && (s->hardlink_flags & AT_SYMLINK_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW;
	int err = flusher_before_publish(s->fd, (const char *)(uintptr_t)s->addr, at_flags);
	if (!err && !link && (s->rename_flags & RENAME_EXCHANGE)) /* each lands under the other's name */
		err = flusher_before_publish((int)s->len, (const char *)(uintptr_t)s->addr2, AT_SYMLINK_NOFOLLOW);
	if (err && nop_can_inject())
		make_nop(s, -err);
}

static void ring_entry(const struct ring *r, struct io_uring_sqe *s)
{
	void (*on_file)(struct io_uring_sqe *, struct shim_file *, int, uint32_t);
	switch (s->opcode) {
	case IORING_OP_FSYNC:
		on_file = ring_fsync;
		break;
	case IORING_OP_SYNC_FILE_RANGE:
		on_file = ring_sync_file_range;
		break;
	case IORING_OP_WRITE:
	case IORING_OP_WRITE_FIXED:
	case IORING_OP_WRITEV:
		on_file = ring_write;
		break;
	case IORING_OP_READ:
	case IORING_OP_READ_FIXED:
	case IORING_OP_READV:
		on_file = ring_read;
		break;
	case IORING_OP_CLOSE:
		ring_close(s);
		return;
	case IORING_OP_RENAMEAT:
	case IORING_OP_LINKAT:
		ring_publish(s);
		return;
	default:
		return;
	}
	int fd;
	uint32_t state = 0;
	struct shim_file *f = entry_file(r, s, &fd, &state);
	if (!f)
		return;
	on_file(s, f, fd, state);
	file_put(f);
}

/* ---- crash-test mode: the ring's writes and syncs of tracked files ------------ */

/*
 * The undo log's model (docs/CRASHTEST.md) is that a change is recorded,
 * with the bytes it overwrites, just before it is made, under the file's
 * lock, and that a sync's DURABLE record is written after the sync and
 * before the app learns of it. A ring breaks both: its write reaches the
 * file whenever the kernel gets to it, after the shim has let go (another
 * write, of the app's or the ring's, may land between a pre-image read at
 * submission and the write), and its FSYNC's completion is read by the app
 * from shared memory, with no call of the shim's in between.
 *
 * So in crash-test mode the shim makes a tracked file's ring WRITE,
 * WRITE_FIXED, WRITEV and FSYNC itself, at submission, in the ring's
 * order, through its own pwritev2 and fsync/fdatasync (the libc paths:
 * the record and pre-image taken under the file's lock just before the
 * write, the policy applied to the sync, DURABLE recorded before the call
 * returns), and the entry becomes a NOP that completes with the call's
 * result (same user_data, flags and place in its chain). The pre-image
 * is then read at the moment the write is made, which is what the model
 * says. A test mode: the submitting thread waits for the writes and syncs.
 *
 * Linked chains keep their meaning: an entry is made by the shim only if
 * every entry before it in its chain was (made, or emptied to a NOP), so
 * nothing the kernel has still to run comes before it; when one it made
 * fails (an error, or a short write, which breaks an IOSQE_IO_LINK but not
 * an IOSQE_IO_HARDLINK), the rest of the chain completes with -ECANCELED,
 * as the kernel would do. What it cannot make stays a recorded limit (the
 * LIMIT records ring_write and around_sync_decide write): an entry behind
 * one the kernel runs in its chain, an IOSQE_IO_DRAIN entry (it waits for
 * entries in flight), a polling ring's entries liburing had published
 * before the shim saw them, and every entry on a kernel whose NOP cannot
 * carry a result (before Linux 6.10).
 */
static bool crash_made(const struct ring *r, struct io_uring_sqe *s, bool *broke)
{
	*broke = false;
	bool sync = s->opcode == IORING_OP_FSYNC;
	if (!crash_on() ||
	    (!sync && s->opcode != IORING_OP_WRITE && s->opcode != IORING_OP_WRITE_FIXED && s->opcode != IORING_OP_WRITEV))
		return false;
	int fd;
	uint32_t state = 0;
	struct shim_file *f = entry_file(r, s, &fd, &state);
	if (!f)
		return false;
	bool tracked = f->crash.tracked;
	file_put(f);
	if (!tracked || !nop_can_inject() || (s->flags & IOSQE_IO_DRAIN) || (r->chain_open && !r->chain_by_shim))
		return false;
	long res;
	uint64_t want = 0;
	if (sync) {
		int rc = (s->fsync_flags & IORING_FSYNC_DATASYNC) ? fdatasync(fd) : fsync(fd);
		res = rc < 0 ? -errno : 0;
	} else {
		off_t off = s->off == (__u64)-1 ? -1 : (off_t)s->off; /* -1: the file position, as the ring's */
		if (s->opcode == IORING_OP_WRITEV) {
			const struct iovec *iov = (const struct iovec *)(uintptr_t)s->addr;
			want = writev_bytes(iov, s->len);
			res = pwritev2(fd, iov, (int)s->len, off, (int)s->rw_flags);
		} else {
			struct iovec one = { (void *)(uintptr_t)s->addr, s->len };
			want = s->len;
			res = pwritev2(fd, &one, 1, off, (int)s->rw_flags);
		}
		if (res < 0)
			res = -errno;
	}
	bool failed = res < 0 || (!sync && (uint64_t)res < want);
	*broke = failed && (s->flags & IOSQE_IO_LINK) && !(s->flags & IOSQE_IO_HARDLINK);
	make_nop(s, res > INT32_MAX ? INT32_MAX : (int)res);
	return true;
}

/* One entry, its chain's state carried in r: made by the shim, emptied,
 * cancelled, or left for the kernel. */
static void ring_entry_in_chain(struct ring *r, struct io_uring_sqe *s)
{
	__u8 links = s->flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK);
	if (!r->chain_open) {
		r->chain_by_shim = true;
		r->chain_cancel = false;
	}
	bool broke = false;
	if (r->chain_open && r->chain_cancel) {
		make_nop(s, -ECANCELED); /* a NOP of the shim's failed before it */
	} else if (crash_made(r, s, &broke)) {
		r->chain_cancel = broke;
	} else {
		ring_entry(r, s);
		if (s->opcode != IORING_OP_NOP)
			r->chain_by_shim = false; /* the kernel runs this one */
	}
	r->chain_open = links != 0;
}

/*
 * Look at entries [from, to): those below published (the kernel's tail)
 * through the SQ array, those above (liburing's, not published yet) in
 * order. may_rewrite_published: the kernel cannot be reading them now
 * (not a polling ring).
 */
static void ring_scan(struct ring *r, unsigned to, unsigned published, bool may_rewrite_published)
{
	unsigned head = atomic_load_explicit((_Atomic unsigned *)r->khead, memory_order_acquire);
	check_unseen(r, head);
	unsigned from = r->seen_set && (int)(r->seen - head) > 0 ? r->seen : head;
	if ((unsigned)(to - from) > r->entries) { /* not a sane window: look at nothing, start afresh */
		r->seen = to;
		r->seen_set = true;
		return;
	}
	if (!atomic_load_explicit(&shim.ready, memory_order_acquire))
		return;
	unsigned stride = (r->setup_flags & IORING_SETUP_SQE128) ? 2 : 1;
	for (unsigned i = from; i != to; i++) {
		bool is_published = (int)(published - i) > 0;
		if (is_published && !may_rewrite_published) {
			r->chain_open = r->chain_by_shim = false; /* the kernel may be running it: not ours */
			continue;
		}
		unsigned idx = is_published && r->array ? r->array[i & r->mask] : (i & r->mask);
		if (idx >= r->entries)
			continue; /* the kernel drops it */
		struct io_uring_sqe *s = &r->sqes[idx * stride];
		bool was_nop = s->opcode == IORING_OP_NOP;
		uint8_t source = trace_source;
		trace_source = LOGREC_RING; /* the records of the calls this entry becomes */
		ring_entry_in_chain(r, s);
		trace_source = source;
		if (!was_nop && s->opcode == IORING_OP_NOP) {
			r->done_end = i + 1;
			r->done_set = true;
		}
	}
	r->seen = to;
	r->seen_set = true;
}

/* ---- the raw calls: libc's syscall() and liburing's raw exports ------------- */

/*
 * A ring was set up on fd (fd >= 0) with params p: the shim learns it, to
 * find its entries once it is mapped (libc's mmap at the ring's offsets,
 * or io_uring_queue_mmap). sqpoll_warn: say at once that a polling ring's
 * entries will not be seen (the caller is a raw program; one that may yet
 * drive the ring through liburing's submit is judged by check_unseen
 * instead).
 */
static void ring_set_up(int fd, const struct io_uring_params *p, bool sqpoll_warn)
{
	pos_stop(); /* its reads and writes at -1 move positions unseen */
	if (shim_bypass() || !p)
		return;
	int e = errno;
	if (p->flags & IORING_SETUP_NO_MMAP) {
		shim_say("io_uring ring (fd %d) set up with IORING_SETUP_NO_MMAP: the shim cannot read its "
			 "entries; its syncs and writes follow no policy",
			 fd);
		held_stop(); /* nor its reads: nothing is held from now on (held.c) */
	} else {
		struct ring *r = ring_add(fd, p->flags);
		if (r) {
			r->sq_off = p->sq_off;
			r->have_off = true;
			if (sqpoll_warn && (p->flags & IORING_SETUP_SQPOLL))
				ring_warn(r, "a polling ring (IORING_SETUP_SQPOLL) driven without liburing: "
					     "the kernel takes its entries as they are published");
		}
	}
	errno = e;
}

/* io_uring_enter is about to hand fd's published entries to the kernel:
 * the new ones are looked at first (the kernel reads a non-polled ring's
 * entries only inside the call). */
static void ring_before_enter(int fd, long to_submit, unsigned flags)
{
	if (shim_bypass() || to_submit <= 0 || (flags & IORING_ENTER_REGISTERED_RING))
		return;
	struct ring *r = ring_of(fd);
	if (!r || !__atomic_load_n(&r->khead, __ATOMIC_ACQUIRE) || !ring_claim(r))
		return;
	int e = errno;
	if (!(r->setup_flags & IORING_SETUP_SQPOLL)) {
		unsigned tail = atomic_load_explicit((_Atomic unsigned *)r->ktail, memory_order_acquire);
		ring_scan(r, tail, tail, true);
	}
	ring_release(r);
	errno = e;
}

long uring_sys_setup(long entries, long params)
{
	long fd = LIBC(syscall)(SYS_io_uring_setup, entries, params);
	if (fd >= 0)
		ring_set_up((int)fd, (const struct io_uring_params *)params, true);
	return fd;
}

long uring_sys_enter(long fd, long to_submit, long min_complete, long flags, long arg, long argsz)
{
	ring_before_enter((int)fd, to_submit, (unsigned)flags);
	return LIBC(syscall)(SYS_io_uring_enter, fd, to_submit, min_complete, flags, arg, argsz);
}

/* Registered files: the table the kernel now holds for the ring. */
static void files_set(struct ring *r, unsigned off, const int *fds, unsigned nr, bool replace)
{
	if (!ring_claim(r)) {
		r->files_unknown = true;
		return;
	}
	if (replace) {
		shim_free(r->files);
		r->files = NULL;
		r->nfiles = 0;
		r->files_unknown = false;
		if (nr > MAX_FIXED_FILES || !(r->files = shim_alloc(nr * sizeof(*r->files)))) {
			r->files_unknown = nr > 0;
			ring_release(r);
			return;
		}
		r->nfiles = nr;
		for (unsigned i = 0; i < nr; i++)
			r->files[i].fd = -1;
	}
	if (r->files_unknown || off > r->nfiles || nr > r->nfiles - off) {
		r->files_unknown = true;
		ring_release(r);
		return;
	}
	int e = errno;
	for (unsigned i = 0; fds && i < nr; i++) {
		struct fixed_file *x = &r->files[off + i];
		if (fds[i] == IORING_REGISTER_FILES_SKIP)
			continue;
		mode_t mode = 0;
		x->fd = -1;
		if (fds[i] >= 0 && fd_identity(fds[i], &x->dev, &x->ino, &mode) == 0 && S_ISREG(mode))
			x->fd = fds[i];
	}
	errno = e;
	ring_release(r);
}

static void files_unknown(struct ring *r)
{
	if (r)
		r->files_unknown = true;
}

/* io_uring_register on fd succeeded with ret: the registered files it
 * changed, told to the ring's table. */
static void ring_registered(int fd, unsigned opcode, const void *arg, unsigned nr, long ret)
{
	if (ret < 0 || shim_bypass())
		return;
	struct ring *r = ring_of(fd);
	if (!r)
		return;
	int e = errno;
	switch (opcode) {
	case IORING_REGISTER_FILES:
		files_set(r, 0, (const int *)arg, nr, true);
		break;
	case IORING_UNREGISTER_FILES:
		files_set(r, 0, NULL, 0, true);
		break;
	case IORING_REGISTER_FILES_UPDATE: {
		const struct io_uring_files_update *u = arg;
		files_set(r, u->offset, (const int *)(uintptr_t)u->fds, (unsigned)ret, false);
		break;
	}
	case IORING_REGISTER_FILES2:
	case IORING_REGISTER_FILES_UPDATE2:
		files_unknown(r);
		break;
	default:
		break;
	}
	errno = e;
}

long uring_sys_register(long fd, long opcode, long arg, long nr)
{
	long ret = LIBC(syscall)(SYS_io_uring_register, fd, opcode, arg, nr);
	ring_registered((int)fd, (unsigned)opcode, (const void *)arg, (unsigned)nr, ret);
	return ret;
}

/* ---- liburing --------------------------------------------------------------- */

/* The ring behind liburing's struct, learned at first sight (fresh: it
 * was just set up, whatever the table remembers of its descriptor). */
static struct ring *lib_ring_learn(struct io_uring *ring, bool fresh)
{
	if (shim_bypass() || !ring || ring->ring_fd < 0 || !ring->sq.khead || !ring->sq.sqes)
		return NULL;
	struct ring *r = ring_of(ring->ring_fd);
	if (fresh || !r || r->khead != ring->sq.khead) {
		pos_stop();
		r = ring_add(ring->ring_fd, ring->flags);
		if (!r)
			return NULL;
		r->sqes = ring->sq.sqes;
		r->array = (ring->flags & IORING_SETUP_NO_SQARRAY) ? NULL : ring->sq.array;
		r->ktail = ring->sq.ktail;
		r->mask = *ring->sq.kring_mask;
		r->entries = *ring->sq.kring_entries;
		__atomic_store_n(&r->khead, ring->sq.khead, __ATOMIC_RELEASE); /* last: publishes the rest */
	}
	return r;
}

static struct ring *lib_ring(struct io_uring *ring)
{
	return lib_ring_learn(ring, false);
}

/*
 * A polling ring's submit count, as the app would see it without the shim.
 *
 * On an SQPOLL ring liburing's submit returns its tail minus the kernel's
 * head as it reads it just after publishing, so an entry the kernel has
 * taken but whose head it has not yet stored is counted again. The kernel
 * posts a batch's completions before it stores the head past the batch.
 * A real FSYNC completes later, from a worker, long after the head moved;
 * the NOP the shim makes of it completes inline, within the batch, so the
 * app can reap it, queue its next entries and read a head that still lags
 * behind them: io_uring_submit returned 4 for 2 queued (the defer test's
 * polling run, about 1 run in 4 on a busy machine). The entries counted
 * again are an earlier call's, which that call already counted: the count
 * leaves out those up to the last NOP of the shim's published before this
 * call, and only once completions were posted since (the kernel is taking
 * entries: a disabled ring's or a sleeping poller's untaken entries are
 * counted as liburing counts them). Entries the app made itself keep
 * liburing's own accounting, its own race included.
 */
struct submit_mark {
	bool check;         /* a polling ring with a NOP of the shim's published */
	unsigned done_end;  /* the kernel's head cannot lag below this for the app */
	unsigned entries;
};

/* Before liburing publishes and enters: its new entries. */
static void lib_before_submit(struct io_uring *ring, struct submit_mark *m)
{
	m->check = false;
	struct ring *r = lib_ring(ring);
	if (!r || !ring_claim(r))
		return;
	int e = errno;
	unsigned published = atomic_load_explicit((_Atomic unsigned *)r->ktail, memory_order_acquire);
	unsigned cq_tail = ring->cq.ktail ? atomic_load_explicit((_Atomic unsigned *)ring->cq.ktail, memory_order_acquire) : 0;
	if ((r->setup_flags & IORING_SETUP_SQPOLL) && r->done_set && cq_tail != r->done_cq) {
		/* Only the NOPs the kernel could already have completed: published ones. */
		m->check = true;
		m->done_end = (int)(published - r->done_end) >= 0 ? r->done_end : published;
		m->entries = r->entries;
	}
	unsigned done_before = r->done_end;
	bool done_was_set = r->done_set;
	ring_scan(r, ring->sq.sqe_tail, published, !(r->setup_flags & IORING_SETUP_SQPOLL));
	if (r->done_set && (!done_was_set || r->done_end != done_before))
		r->done_cq = cq_tail; /* a NOP of this call's: completions after this are for it or later */
	ring_release(r);
	errno = e;
}

static int lib_submitted(const struct io_uring *ring, const struct submit_mark *m, int ret)
{
	if (!m->check || ret <= 0)
		return ret;
	unsigned tail = ring->sq.sqe_tail, head_read = tail - (unsigned)ret; /* what liburing read */
	int again = (int)(m->done_end - head_read);
	if (again > 0 && again <= ret && (unsigned)again <= m->entries)
		ret -= again;
	return ret;
}

/* liburing made a ring (ret 0): the shim learns it from its struct. */
static int lib_ring_made(struct io_uring *ring, int ret)
{
	if (ret == 0) {
		pos_stop();
		int e = errno;
		lib_ring_learn(ring, true);
		errno = e;
	}
	return ret;
}

/*
 * liburing's raw exports (liburing 2.3 and later): each makes its own
 * system call, inline, where the shim cannot see it, so they are wrapped
 * as syscall()'s io_uring numbers are (same conventions as liburing's:
 * -errno, errno untouched). io_uring_queue_mmap maps a ring set up by
 * the app with liburing's own inline mmaps and fills its struct io_uring,
 * from which the shim learns the ring (liburing's io_uring_queue_init*
 * call it too).
 */
SHIM_API int io_uring_setup(unsigned entries, struct io_uring_params *p)
{
	int fd = LIB_CALL(io_uring_setup, entries, p);
	if (fd >= 0)
		ring_set_up(fd, p, false); /* may yet be driven by liburing's submit (io_uring_queue_mmap) */
	return fd;
}

SHIM_API int io_uring_enter(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags, sigset_t *sig)
{
	ring_before_enter((int)fd, to_submit, flags);
	return LIB_CALL(io_uring_enter, fd, to_submit, min_complete, flags, sig);
}

SHIM_API int io_uring_enter2(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags, sigset_t *sig,
			     size_t sz)
{
	ring_before_enter((int)fd, to_submit, flags);
	return LIB_CALL(io_uring_enter2, fd, to_submit, min_complete, flags, sig, sz);
}

SHIM_API int io_uring_register(unsigned fd, unsigned opcode, const void *arg, unsigned nr_args)
{
	int ret = LIB_CALL(io_uring_register, fd, opcode, arg, nr_args);
	ring_registered((int)fd, opcode, arg, nr_args, ret);
	return ret;
}

SHIM_API int io_uring_queue_mmap(int fd, struct io_uring_params *p, struct io_uring *ring)
{
	int ret = LIB_CALL(io_uring_queue_mmap, fd, p, ring);
	return lib_ring_made(ring, ret);
}

SHIM_API int io_uring_queue_init_params(unsigned entries, struct io_uring *ring, struct io_uring_params *p)
{
	int ret = LIB_CALL(io_uring_queue_init_params, entries, ring, p);
	return lib_ring_made(ring, ret);
}

SHIM_API int io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags)
{
	int ret = LIB_CALL(io_uring_queue_init, entries, ring, flags);
	return lib_ring_made(ring, ret);
}

SHIM_API void io_uring_queue_exit(struct io_uring *ring)
{
	if (!shim_bypass() && ring) {
		struct ring *r = ring_of(ring->ring_fd);
		if (r && r->khead == ring->sq.khead) {
			check_unseen(r, atomic_load_explicit((_Atomic unsigned *)r->khead, memory_order_acquire));
			ring_drop(r);
		}
	}
	if (LIB(io_uring_queue_exit))
		LIB(io_uring_queue_exit)(ring);
}

/* call: "submit" for the calls that return how many entries were
 * submitted (their count corrected as lib_submitted says), "other" for
 * those that return 0 or -errno. */
#define LIB_SUBMIT_submit(ring, m, ret) lib_submitted(ring, m, ret)
#define LIB_SUBMIT_other(ring, m, ret) ((void)(m), (ret))
#define LIB_SUBMIT(call, name, ...)                                                  \
	do {                                                                         \
		struct submit_mark m_;                                               \
		lib_before_submit(ring, &m_);                                        \
		int ret_ = LIB_CALL(name, __VA_ARGS__);                               \
		return LIB_SUBMIT_##call(ring, &m_, ret_);                           \
	} while (0)

SHIM_API int io_uring_submit(struct io_uring *ring)
{
	LIB_SUBMIT(submit, io_uring_submit, ring);
}

SHIM_API int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	LIB_SUBMIT(submit, io_uring_submit_and_wait, ring, wait_nr);
}

SHIM_API int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
					      unsigned wait_nr, struct __kernel_timespec *ts, sigset_t *sigmask)
{
	LIB_SUBMIT(submit, io_uring_submit_and_wait_timeout, ring, cqe_ptr, wait_nr, ts, sigmask);
}

SHIM_API int io_uring_submit_and_get_events(struct io_uring *ring)
{
	LIB_SUBMIT(submit, io_uring_submit_and_get_events, ring);
}

SHIM_API int io_uring_get_events(struct io_uring *ring)
{
	LIB_SUBMIT(other, io_uring_get_events, ring);
}

SHIM_API int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned submit,
				unsigned wait_nr, sigset_t *sigmask)
{
	LIB_SUBMIT(other, __io_uring_get_cqe, ring, cqe_ptr, submit, wait_nr, sigmask);
}

SHIM_API int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
				struct __kernel_timespec *ts, sigset_t *sigmask)
{
	LIB_SUBMIT(other, io_uring_wait_cqes, ring, cqe_ptr, wait_nr, ts, sigmask);
}

SHIM_API int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
				       struct __kernel_timespec *ts)
{
	LIB_SUBMIT(other, io_uring_wait_cqe_timeout, ring, cqe_ptr, ts);
}

/*
 * liburing's calls that change a ring's fixed files, each told to the
 * ring's table once it succeeded (a replace: register, tags, sparse,
 * unregister, where 0 is success; an update from off: update, update_tag,
 * which return how many entries they changed). A fixed entry's FSYNC is
 * then found by its file like any other.
 */
static void lib_files_changed(struct io_uring *ring, bool ok, unsigned off, const int *fds, unsigned nr, bool replace)
{
	struct ring *r = ok ? lib_ring(ring) : NULL;
	if (r) {
		int e = errno;
		files_set(r, off, fds, nr, replace);
		errno = e;
	}
}

SHIM_API int io_uring_register_files(struct io_uring *ring, const int *files, unsigned nr_files)
{
	int ret = LIB_CALL(io_uring_register_files, ring, files, nr_files);
	lib_files_changed(ring, ret == 0, 0, files, nr_files, true);
	return ret;
}

SHIM_API int io_uring_register_files_update(struct io_uring *ring, unsigned off, const int *files,
					    unsigned nr_files)
{
	int ret = LIB_CALL(io_uring_register_files_update, ring, off, files, nr_files);
	lib_files_changed(ring, ret >= 0, off, files, (unsigned)ret, false);
	return ret;
}

SHIM_API int io_uring_register_files_tags(struct io_uring *ring, const int *files, const __u64 *tags, unsigned nr)
{
	int ret = LIB_CALL(io_uring_register_files_tags, ring, files, tags, nr);
	lib_files_changed(ring, ret == 0, 0, files, nr, true);
	return ret;
}

SHIM_API int io_uring_register_files_sparse(struct io_uring *ring, unsigned nr)
{
	int ret = LIB_CALL(io_uring_register_files_sparse, ring, nr);
	lib_files_changed(ring, ret == 0, 0, NULL, nr, true);
	return ret;
}

SHIM_API int io_uring_register_files_update_tag(struct io_uring *ring, unsigned off, const int *files,
						const __u64 *tags, unsigned nr_files)
{
	int ret = LIB_CALL(io_uring_register_files_update_tag, ring, off, files, tags, nr_files);
	lib_files_changed(ring, ret >= 0, off, files, (unsigned)ret, false);
	return ret;
}

SHIM_API int io_uring_unregister_files(struct io_uring *ring)
{
	int ret = LIB_CALL(io_uring_unregister_files, ring);
	lib_files_changed(ring, ret == 0, 0, NULL, 0, true);
	return ret;
}
