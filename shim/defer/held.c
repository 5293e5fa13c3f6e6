/*
 * held.c - ordered defer without the wait.
 *
 * Ordered defer (order.c) keeps a change of a file from reaching the
 * kernel before the syncs the program was already told are done, and that
 * the change could depend on, are durable. Waiting for them put a real
 * sync on the writer's path exactly where a database moves between files
 * (MariaDB's redo log and binlog on every commit, sqlite's WAL and
 * database at a checkpoint) or rewrites its own acknowledged tail, and
 * defer gave back the speed it exists for. A file system keeps its own
 * order without making the caller wait by holding the change back instead
 * (ext4's ordered journal, OptFS's osync): so does this.
 *
 * The design.
 *   - A held change: a write at a known offset (write and writev at a
 *     position the shim follows, pwrite, pwritev, pwritev2 without flags),
 *     copied, with what it waits for: each other file's requests as of the
 *     write (its deps, collected by order.c exactly where it used to wait)
 *     and, if it changes bytes of its own file that an acknowledged sync
 *     promised, its own file's. The writer returns the byte count at once;
 *     a write at the position took its room in the kernel's position
 *     first (order.c's take_position), so it lands where the kernel would
 *     have put it even when another write moved the position meanwhile.
 *   - A file's held changes are a FIFO: once it holds one, every later
 *     write to it is held behind it, so the kernel sees a file's writes in
 *     the order they were made.
 *   - The floor. A request (a sync the app asked for) numbered after a
 *     held change promises its bytes, which are not in the kernel yet: a
 *     real sync of the file covers no request past the floor, the file's
 *     request count when its oldest held change was made (flusher.c caps
 *     its snapshot with held_coverable).
 *   - Applying. The background thread syncshim-apply applies; a thread
 *     that needs the bytes (a read, a sync, a writer past the bounds)
 *     makes sure it runs and sleeps until they are in (apply_until), so
 *     no write, read or sync leads into the apply. A barrier (exit, exec,
 *     fork, spawn, set*id) applies for itself when the thread is not at
 *     it, and so does a caller when no thread can be had (apply_mu: one
 *     at a time); a change is held only while the thread runs. A change
 *     goes once every dep is durable; it is written through the shim's
 *     private descriptor of the file under the flusher's lease
 *     (flusher_apply), crash-test mode recording it as any write, and the
 *     floor moves to the next one. A
 *     dep not durable yet is asked for now: the applier leads that sync
 *     itself when it is the only one, else the flusher threads make them
 *     side by side. So a chain of files synced in turn (redo, binlog,
 *     redo...) costs one real sync a step, off the writer's path, and a
 *     step covers every change made meanwhile.
 *   - Its own bytes. While a file holds changes the kernel's copy is not
 *     the program's, so a write's own dependency is judged from what this
 *     process wrote: the extents written and acknowledged and not yet
 *     durable (each with the request count when written: the next request
 *     promised it), bytes written to the kernel in the current sync round
 *     (order.c's highest byte: every acknowledgement so far, to be safe),
 *     and a held write that went back (sqlite's new WAL header): the writes
 *     after it over old bytes wait for the request that promised it, as
 *     order.c's rule has them wait for its sync.
 *   - Reads see held changes: every call that reads a file's bytes or size
 *     (read, pread, the readv family, fstat and stat, lseek to the end,
 *     mmap, copy_file_range, sendfile and splice from it, aio_read) applies
 *     that file's held changes first, and fork, spawn, exec and exit apply
 *     everything. Another program reading the file may see it behind by
 *     what is held (about one real sync), never reordered.
 *   - Errors: a held change whose write fails when applied (ENOSPC, EIO, a
 *     short write) is the file's sticky error, reported by its next fsync,
 *     fdatasync or close on each descriptor, as a failed deferred sync's.
 *   - Bounds: held bytes count toward the rule's max_bytes per file and
 *     HELD_PROCESS_MAX per process; past either, or with no descriptor to
 *     apply through, the writer waits as it did before (nothing is held).
 *   - Scope: a process alone in its ordering domain. Held bytes live in
 *     this process's memory, which a fork child does not see: a process
 *     that forks applies everything first and holds nothing from then on
 *     (held_stop), and so does one that sets up io_uring (its reads are
 *     not seen). A process killed by a signal loses what it held: a suffix
 *     of its changes, as a power cut within the window would.
 *
 * Locks: apply_mu (one applier), then a file's fl.mu (flusher_apply,
 * sync_until) or held_mu. held_mu guards the lists and is held only for
 * list work: no allocation, no system call, no other lock taken under it.
 * Everything that locks runs with shim_busy raised.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "knobs.h"
#include "log.h"
#include "order.h"
#include "syncerr.h"
#include "trace.h"
#include "workers.h"

/* The most a process holds (bytes), and the most one change copies. */
#define HELD_PROCESS_MAX (64ull << 20)
#define HELD_ONE_MAX (8ull << 20)
/* How far behind the program what is held may fall: the rule's
 * max_delay_ms, or this under max_delay_ms = auto. Past it writers wait,
 * so the window still bounds what a power cut can take. */
#define HELD_AGE_AUTO_NS (100ull * 1000 * 1000)
/* The most files holding changes at once: each keeps its object, and a
 * descriptor of the shim's once the program closes it. A program that
 * moves through files one after another (rotated logs, temporary files)
 * gains nothing from more: each waits for the one before it anyway. */
#define HELD_FILES_MAX 64
/* Changes of one file applied per pass, files looked at per pass. */
#define APPLY_BATCH 64
#define APPLY_FILES 64

struct held_change {
	struct held_change *next;  /* the file's FIFO */
	uint64_t off;
	size_t len;
	uint64_t req_floor;        /* the file's request count when it was held */
	uint64_t t_ns;             /* when (trace_now) */
	int ndeps;
	struct held_dep deps[HELD_DEPS_MAX];
	char *data;
};

_Atomic uint32_t held_files;

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t apply_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *held_list;       /* held_mu: files holding changes */
static _Atomic uint64_t held_total;       /* bytes held */
static _Atomic int stopped;               /* nothing is held from now on */
/* An event count: a change held, changes applied, a real sync ended.
 * Waiters note it, look, and sleep on it (a futex word). */
static _Atomic uint32_t progress;
static _Atomic uint32_t progress_waiters;
static _Atomic int applier_running;
static __thread bool am_applier;

static _Atomic uint64_t st_held, st_held_bytes, st_rounds, st_read_waits, st_bound_waits;

/* ---- the event count ----------------------------------------------------- */

static void progress_bump(void)
{
	atomic_fetch_add(&progress, 1);
	if (atomic_load(&progress_waiters))
		syscall(SYS_futex, &progress, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void progress_wait(uint32_t seen, long ns)
{
	struct timespec ts = { 0, ns };
	atomic_fetch_add(&progress_waiters, 1);
	syscall(SYS_futex, &progress, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	atomic_fetch_sub(&progress_waiters, 1);
}

void held_owed_since(struct shim_file *f, uint64_t since)
{
	uint64_t old = atomic_load(&f->hold.owed_since), s = since ? since : trace_now();
	while ((!old || s < old) && !atomic_compare_exchange_weak(&f->hold.owed_since, &old, s))
		;
}

void held_sync_ended(void)
{
	if (atomic_load_explicit(&held_files, memory_order_relaxed))
		progress_bump();
}

/* ---- per file ------------------------------------------------------------- */

void held_reset(struct shim_file *f)
{
	struct held_link *h = &f->hold;
	h->head = h->tail = NULL;
	h->next = NULL;
	atomic_store(&h->count, 0);
	atomic_store(&h->floor, UINT64_MAX);
	atomic_store(&h->bytes, 0);
	atomic_store(&h->end, 0);
	h->last_end = 0;
	h->back_w_req = UINT64_MAX;
	memset(h->ext, 0, sizeof(h->ext));
	atomic_store(&h->owed_since, 0);
}

void held_release_file(struct shim_file *f)
{
	/* refs are zero: every held change holds one, so none is left */
	held_reset(f);
}

/* SYNCSHIM_TEST_NO_HOLD=1: ordered defer that waits, as before held
 * changes (the tests of the wait, which bounds and non-holdable writes
 * still take, and the benchmark's comparison). */
static _Atomic int hold_off = -1;

static bool holding_off(void)
{
	int v = atomic_load_explicit(&hold_off, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("SYNCSHIM_TEST_NO_HOLD");
		v = e && strcmp(e, "1") == 0;
		atomic_store_explicit(&hold_off, v, memory_order_relaxed);
	}
	return v;
}

bool held_allowed(void)
{
	return !atomic_load_explicit(&stopped, memory_order_relaxed) && !atomic_load(&shim.exiting) && !holding_off();
}

void held_stats_read(struct held_stats *s)
{
	s->held = atomic_load(&st_held);
	s->held_bytes = atomic_load(&st_held_bytes);
	s->applied_rounds = atomic_load(&st_rounds);
	s->read_waits = atomic_load(&st_read_waits);
	s->bound_waits = atomic_load(&st_bound_waits);
}

/* ---- its own bytes --------------------------------------------------------- */

/* held_mu held: extents the file's syncs have made durable go. */
static void prune_locked(struct shim_file *f)
{
	struct held_link *h = &f->hold;
	uint64_t done = atomic_load(&f->fl.done_seq);
	for (int i = 0; i < HELD_EXTENTS; i++)
		if (h->ext[i].hi && done >= h->ext[i].w_req + 1)
			h->ext[i].lo = h->ext[i].hi = 0;
	if (h->back_w_req != UINT64_MAX && done >= h->back_w_req + 1)
		h->back_w_req = UINT64_MAX;
}

/* held_mu held: [lo, hi) written at request count w_req. Adjacent or
 * overlapping extents of the same count are one; with no place left the
 * two nearest merge (their union, the later count: never less safe). */
static void extent_add_locked(struct shim_file *f, uint64_t lo, uint64_t hi, uint64_t w_req)
{
	struct held_extent *e = f->hold.ext;
	for (int i = 0; i < HELD_EXTENTS; i++)
		if (e[i].hi && e[i].w_req == w_req && lo <= e[i].hi && hi >= e[i].lo) {
			e[i].lo = lo < e[i].lo ? lo : e[i].lo;
			e[i].hi = hi > e[i].hi ? hi : e[i].hi;
			return;
		}
	for (int i = 0; i < HELD_EXTENTS; i++)
		if (!e[i].hi) {
			e[i] = (struct held_extent){ lo, hi, w_req };
			return;
		}
	/* Full: fold the new one into the nearest. */
	int best = 0;
	uint64_t gap = UINT64_MAX;
	for (int i = 0; i < HELD_EXTENTS; i++) {
		uint64_t g = e[i].hi < lo ? lo - e[i].hi : hi < e[i].lo ? e[i].lo - hi : 0;
		if (g < gap) {
			gap = g;
			best = i;
		}
	}
	e[best].lo = lo < e[best].lo ? lo : e[best].lo;
	e[best].hi = hi > e[best].hi ? hi : e[best].hi;
	e[best].w_req = w_req > e[best].w_req ? w_req : e[best].w_req;
}

/*
 * held_mu held, f holding changes: the request of f itself that a write of
 * [lo, hi) must wait for (0 none), req being f's request count now. Bytes
 * written since the file was last durable and then acknowledged (an
 * extent, or anything below order.c's highest byte of the kernel's round)
 * must be durable before they are changed; and after a held write that
 * went back, so must it before a write over old bytes (below the file's
 * end as this process knows it).
 */
static uint64_t own_target_locked(struct shim_file *f, uint64_t lo, uint64_t hi, uint64_t req)
{
	struct held_link *h = &f->hold;
	uint64_t target = 0;
	uint64_t round_hi = order_promised_hi(f);
	if (round_hi && lo < round_hi) {
		/* The kernel's bytes of this round: promised by the request
		 * after the latest of them at the latest. */
		uint64_t wr = atomic_load(&f->ord.wreq);
		target = wr < req ? wr + 1 : req;
	}
	for (int i = 0; i < HELD_EXTENTS; i++)
		if (h->ext[i].hi && lo < h->ext[i].hi && hi > h->ext[i].lo && h->ext[i].w_req < req &&
		    h->ext[i].w_req + 1 > target)
			target = h->ext[i].w_req + 1;
	if (h->back_w_req != UINT64_MAX && h->back_w_req < req && h->back_w_req + 1 > target) {
		uint64_t ke = atomic_load(&f->ord.known_end), he = atomic_load(&h->end);
		bool over_old = ke == ORDER_END_LOST || lo < (ke > he ? ke : he);
		if (over_old)
			target = h->back_w_req + 1;
	}
	return target;
}

/* ---- holding ---------------------------------------------------------------- */

static bool start_applier(void);

static void change_free(struct held_change *c)
{
	for (int i = 0; i < c->ndeps; i++)
		file_put(c->deps[i].g);
	shim_free(c->data);
	shim_free(c);
}

/* What the write would have done through fd: at its offset (not through
 * O_APPEND, where Linux appends whatever the offset says), on a
 * description that can be written. Known from its open, else asked. */
static bool writes_at_its_offset(int fd)
{
	uint32_t state = 0;
	fd_peek(fd, &state);
	if (state & SLOT_PLAIN_WRITER)
		return true;
	/* O_DIRECT: the program does its own buffering (InnoDB's redo log),
	 * and a held change would need a descriptor of the shim's own for
	 * every round that applies it (held ones need not be aligned): it
	 * waits instead, as it did before changes were held. */
	int fl = LIBC(fcntl)(fd, F_GETFL);
	return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && !(fl & (O_APPEND | O_PATH | O_DIRECT));
}

/* The change, its bytes copied (no lock held: the allocator's). */
static struct held_change *change_new(uint64_t pos, const struct iovec *iov, int cnt, size_t total)
{
	struct held_change *c = shim_alloc(sizeof(*c));
	char *data = c ? shim_alloc_bytes(total, 16) : NULL;
	if (!data) {
		shim_free(c);
		return NULL;
	}
	size_t at = 0;
	for (int i = 0; i < cnt; i++) {
		memcpy(data + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	c->data = data;
	c->off = pos;
	c->len = total;
	return c;
}

/* held_mu held: room for one more change of f now. Only while the
 * applier thread runs (it leaves under held_mu, with nothing held: a
 * change held now is always applied); not past the files bound, and not
 * while the oldest held change is older than the window: then the
 * program waits until what that one depends on catches up. */
static bool room_locked(struct shim_file *f, const struct knobs *k, uint64_t now)
{
	if (atomic_load(&stopped) || !atomic_load(&applier_running) ||
	    (!f->hold.head && atomic_load(&held_files) >= HELD_FILES_MAX))
		return false;
	uint64_t age_max = k->max_delay_ms == POLICY_AUTO ? HELD_AGE_AUTO_NS : (uint64_t)k->max_delay_ms * 1000000u;
	for (struct shim_file *g = held_list; g; g = g->hold.next)
		if (g->hold.head && now > g->hold.head->t_ns && now - g->hold.head->t_ns > age_max)
			return false;
	return true;
}

/* held_mu held: c joins f's FIFO with what it waits for. true when f held
 * nothing before (it joins the list of files holding changes). */
static bool enqueue_locked(struct shim_file *f, struct held_change *c, struct held_dep *deps, int ndeps,
			   uint64_t first_self, uint64_t now)
{
	struct held_link *h = &f->hold;
	uint64_t req = atomic_load(&f->fl.req_seq), pos = c->off, end = c->off + c->len;
	uint64_t self = first_self;
	if (h->head) {
		prune_locked(f);
		self = own_target_locked(f, pos, end, req);
		if (pos < h->last_end && end < h->last_end)
			h->back_w_req = req; /* went back, ending short of the write before it */
	}
	for (int i = 0; i < ndeps; i++)
		c->deps[i] = deps[i];
	c->ndeps = ndeps;
	if (self && self <= req)
		c->deps[c->ndeps++] = (struct held_dep){ file_ref(f), self };
	c->req_floor = req;
	c->t_ns = now;
	c->next = NULL;
	extent_add_locked(f, pos, end, req);
	bool first = !h->head;
	if (first) {
		h->head = h->tail = c;
		atomic_store(&h->floor, req);
		h->next = held_list;
		held_list = file_ref(f); /* the list's reference */
	} else {
		h->tail->next = c;
		h->tail = c;
	}
	h->last_end = end;
	if (end > atomic_load(&h->end))
		atomic_store(&h->end, end);
	atomic_fetch_add(&h->bytes, c->len);
	atomic_fetch_add(&held_total, c->len);
	atomic_fetch_add(&h->count, 1);
	return first;
}

bool held_hold(struct shim_file *f, int fd, uint64_t pos, const struct iovec *iov, int cnt, size_t total,
	       struct held_dep *deps, int ndeps, uint64_t first_self)
{
	if (!held_allowed() || total == 0 || total > HELD_ONE_MAX || ndeps >= HELD_DEPS_MAX ||
	    atomic_load(&f->ord.mapped) || pos > (uint64_t)INT64_MAX - total)
		return false;
	struct knobs k;
	knobs_of(f, &k);
	if (atomic_load(&f->hold.bytes) + total > k.max_bytes ||
	    atomic_load(&held_total) + total > HELD_PROCESS_MAX) {
		atomic_fetch_add_explicit(&st_bound_waits, 1, memory_order_relaxed);
		return false;
	}
	if (!writes_at_its_offset(fd) || !start_applier())
		return false;
	int none = -1;
	atomic_compare_exchange_strong(&f->fl.req_fd, &none, fd); /* a descriptor to apply it through */
	struct held_change *c = change_new(pos, iov, cnt, total);
	if (!c)
		return false;
	shim_enter();
	pthread_mutex_lock(&held_mu);
	uint64_t now = trace_now();
	bool room = room_locked(f, &k, now), first = room && enqueue_locked(f, c, deps, ndeps, first_self, now);
	pthread_mutex_unlock(&held_mu);
	if (first) {
		atomic_fetch_add(&held_files, 1);
		order_held_files(1);
	}
	shim_leave();
	if (!room) {
		shim_free(c->data);
		shim_free(c);
		atomic_fetch_add_explicit(&st_bound_waits, 1, memory_order_relaxed);
		return false;
	}
	atomic_fetch_add_explicit(&st_held, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_held_bytes, total, memory_order_relaxed);
	if (first) {
		/* New work for the applier; a change behind others of its file
		 * goes in the same pass as they do (no wake-up per write). */
		progress_bump();
	}
	return true;
}

/* ---- applying ---------------------------------------------------------------- */

static bool dep_met(const struct held_dep *d)
{
	return atomic_load(&d->g->fl.done_seq) >= d->target;
}

static bool change_ready(const struct held_change *c)
{
	for (int i = 0; i < c->ndeps; i++)
		if (!dep_met(&c->deps[i]))
			return false;
	return true;
}

struct apply_batch {
	struct held_change *first;
	int n;
	int applied;  /* how many were written (the rest: an error or no way to the file) */
	int err;
};

/* Through fd (a descriptor of f the flusher leased, or -1: none), under
 * the lease: the batch's writes, each recorded by crash-test mode. */
static int write_batch(struct shim_file *f, int fd, void *arg)
{
	struct apply_batch *b = arg;
	struct held_change *c = NULL;
	for (int i = 0; i < b->n; i++) {
		/* Never the last one's next: a writer may be linking to it (held_mu) */
		c = i ? c->next : b->first;
		if (fd < 0) {
			b->err = EIO; /* no way to the file left: the data cannot be vouched for */
			break;
		}
		struct iovec one = { c->data, c->len };
		struct crash_write cw = { .locked = false, .written_ns = c->t_ns };
		if (unlikely(file_write_work(f) & WRITES_CRASH))
			crash_write_begin(f, fd, (off_t)c->off, &one, 1, false, &cw);
		size_t done = 0;
		int err = 0;
		while (done < c->len) {
			ssize_t r = LIBC(pwrite)(fd, c->data + done, c->len - done, (off_t)(c->off + done));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				err = r < 0 ? errno : ENOSPC; /* a write that makes no progress: the device is full */
				break;
			}
			done += (size_t)r;
		}
		crash_write_done(&cw);
		if (done)
			order_after_write(&f->ord, (off_t)c->off, (ssize_t)done, c->req_floor);
		if (err) {
			b->err = err;
			b->applied = i + 1; /* it is gone either way: its error is the file's */
			return 0;
		}
		b->applied = i + 1;
	}
	if (b->err)
		b->applied = b->n;
	return 0;
}

/* After a batch of f was applied (or failed): off the FIFO, the floor to
 * the next one's, the file off the list when it holds nothing. */
static void batch_done(struct shim_file *f, struct apply_batch *b)
{
	struct held_change *gone = NULL, **tailp = &gone;
	bool emptied = false;
	uint64_t bytes = 0;
	shim_enter();
	pthread_mutex_lock(&held_mu);
	struct held_link *h = &f->hold;
	atomic_fetch_add(&h->gen, 1); /* a reader laying them over the kernel's bytes looks again */
	for (int i = 0; i < b->applied && h->head; i++) {
		struct held_change *c = h->head;
		h->head = c->next;
		if (!h->head)
			h->tail = NULL;
		c->next = NULL;
		*tailp = c;
		tailp = &c->next;
		bytes += c->len;
	}
	atomic_fetch_sub(&h->count, (uint32_t)b->applied);
	atomic_fetch_sub(&h->bytes, bytes);
	atomic_fetch_sub(&held_total, bytes);
	if (h->head) {
		atomic_store(&h->floor, h->head->req_floor);
	} else {
		atomic_store(&h->floor, UINT64_MAX);
		atomic_store(&h->end, 0);
		for (struct shim_file **pp = &held_list; *pp; pp = &(*pp)->hold.next)
			if (*pp == f) {
				*pp = h->next;
				break;
			}
		h->next = NULL;
		emptied = true;
	}
	pthread_mutex_unlock(&held_mu);
	if (emptied) {
		atomic_fetch_sub(&held_files, 1);
		order_held_files(-1);
	}
	shim_leave();
	if (b->err) {
		syncerr_record(f, b->err);
		log_event(LOGEV_SYNC_ERROR, f, b->err, "a held write to %s failed when applied: %s",
			  f->path ? f->path : "?", strerror(b->err));
		syncerr_tell_if_orphaned(f);
	}
	while (gone) {
		struct held_change *c = gone;
		gone = c->next;
		change_free(c);
	}
	/* Requests that waited for these bytes can be covered now: their
	 * deadline, as old as they are. */
	uint64_t since = atomic_exchange(&f->hold.owed_since, 0);
	if (since)
		workers_rearm(f, since);
	if (emptied) {
		flusher_held_gone(f);
		file_put(f); /* the list's */
	}
}

struct want {
	struct shim_file *g;
	uint64_t target;
};

static void want_add(struct want *w, int *n, struct shim_file *g, uint64_t target)
{
	for (int i = 0; i < *n; i++)
		if (w[i].g == g) {
			if (target > w[i].target)
				w[i].target = target;
			return;
		}
	if (*n < APPLY_FILES && file_tryref(g))
		w[(*n)++] = (struct want){ g, target };
}

/*
 * apply_mu held: one pass. Every file's changes whose deps are durable are
 * applied; the syncs the first blocked change of each file waits for are
 * asked for. true if anything moved.
 */
static bool apply_pass(void)
{
	struct shim_file *files[APPLY_FILES];
	struct apply_batch batches[APPLY_FILES];
	struct want wants[APPLY_FILES];
	int nfiles = 0, nwants = 0;
	shim_enter();
	pthread_mutex_lock(&held_mu);
	for (struct shim_file *f = held_list; f && nfiles < APPLY_FILES; f = f->hold.next) {
		struct held_change *c = f->hold.head;
		int n = 0;
		while (c && n < APPLY_BATCH && change_ready(c)) {
			n++;
			c = c->next;
		}
		if (n) {
			files[nfiles] = file_ref(f);
			batches[nfiles++] = (struct apply_batch){ f->hold.head, n, 0, 0 };
		} else if (c) {
			for (int i = 0; i < c->ndeps; i++) {
				struct held_dep *d = &c->deps[i];
				/* Only a request a sync can cover now: one past its
				 * floor waits for its own held changes, here too. */
				if (!dep_met(d) && d->target <= held_coverable(&d->g->hold, UINT64_MAX))
					want_add(wants, &nwants, d->g, d->target);
			}
		}
	}
	pthread_mutex_unlock(&held_mu);
	shim_leave();

	for (int i = 0; i < nfiles; i++) {
		flusher_apply(files[i], write_batch, &batches[i]);
		batch_done(files[i], &batches[i]);
		file_put(files[i]);
	}
	if (nfiles) {
		atomic_fetch_add_explicit(&st_rounds, 1, memory_order_relaxed);
		progress_bump();
	}
	/* The syncs that stand in the way: the flusher threads make them side
	 * by side (none of them waits for what this applies: they sync what
	 * they can cover, flusher_sync_requested), and every sync that ends
	 * wakes the applier. With no flusher thread to be had, here, one after
	 * another. */
	bool synced = false;
	if (nwants && workers_ensure(nwants > 1) < 0) {
		for (int i = 0; i < nwants; i++)
			flusher_sync_to(wants[i].g, wants[i].target);
		synced = true;
	} else {
		for (int i = 0; i < nwants; i++)
			if (workers_force(wants[i].g))
				workers_schedule(wants[i].g, true);
	}
	for (int i = 0; i < nwants; i++)
		file_put(wants[i].g);
	return nfiles > 0 || synced;
}

/*
 * Until done(arg) holds. The applier thread applies: the caller makes
 * sure it runs and sleeps on the event count, so nothing of the apply
 * (the lease, a descriptor reopened, a failure made the file's error)
 * runs on a reader's or a writer's path. A barrier (exit, exec, fork,
 * spawn, set*id, a ring) applies for itself whenever the thread is not at
 * it: the process may be past the point where that thread runs (test_held
 * exit_applies_what_is_held_without_the_applier_thread); so does anyone
 * when the thread cannot be had. Only the pass is a shim section: the
 * wait holds nothing, so a signal handler that lands in it is an
 * ordinary caller whose writes keep the order (a section's handler gets
 * the real call, unordered, and a wait here lasts as long as another
 * file's real sync: test_held's
 * a_handler_while_its_thread_waits_for_held_writes_keeps_the_order).
 */
static void apply_until(bool (*done)(void *), void *arg, bool barrier)
{
	if (am_applier)
		return; /* the applier's own sync: it never waits for itself */
	while (!done(arg)) {
		uint32_t seen = atomic_load(&progress);
		bool moved = false;
		if (barrier || !start_applier()) {
			shim_enter();
			if (pthread_mutex_trylock(&apply_mu) == 0) {
				am_applier = true;
				moved = apply_pass();
				am_applier = false;
				pthread_mutex_unlock(&apply_mu);
			}
			shim_leave();
		}
		if (moved)
			continue;
		if (!done(arg)) {
			TEST_POINT("held_wait");
			progress_wait(seen, 20 * 1000 * 1000);
		}
	}
}

static bool file_empty(void *arg)
{
	return held_count(&((struct shim_file *)arg)->hold) == 0;
}

static bool all_empty(void *arg)
{
	(void)arg;
	return atomic_load(&held_files) == 0;
}

void held_apply_file(struct shim_file *f)
{
	if (held_count(&f->hold) == 0)
		return;
	int e = errno;
	apply_until(file_empty, f, false);
	errno = e;
}

void held_apply_all(void)
{
	if (atomic_load(&held_files) == 0)
		return;
	int e = errno;
	apply_until(all_empty, NULL, true);
	errno = e;
}

/*
 * The background applier: applies as soon as the deps allow, so what is
 * held stays about one real sync behind the program. It leaves after 2 s
 * with nothing held, deciding so under held_mu: a change is held only
 * while the thread runs (enqueue_locked), so none is ever left with no
 * one to apply it. It also leaves when set*id asks every thread of the
 * shim's to (the set*id applied everything first); what is held after
 * that goes to the next thread started, or to a caller that cannot start
 * one (apply_until).
 */
static bool applier_may_leave(void)
{
	shim_enter();
	pthread_mutex_lock(&held_mu);
	bool idle = held_list == NULL;
	if (idle)
		atomic_store(&applier_running, 0);
	pthread_mutex_unlock(&held_mu);
	shim_leave();
	return idle;
}

static void *applier_main(void *arg)
{
	(void)arg;
	shim_busy = 1;
	uint64_t idle_since = trace_now();
	for (;;) {
		if (atomic_load(&shim_threads_quit)) {
			atomic_store(&applier_running, 0);
			break;
		}
		uint32_t seen = atomic_load(&progress);
		bool moved = false;
		if (atomic_load(&held_files)) {
			idle_since = trace_now();
			TEST_HOLD("applier_pass"); /* the exit applies what is held without this thread */
			pthread_mutex_lock(&apply_mu);
			am_applier = true;
			moved = apply_pass();
			am_applier = false;
			pthread_mutex_unlock(&apply_mu);
		} else if (trace_now() - idle_since > 2000000000ull && applier_may_leave()) {
			break;
		}
		if (!moved)
			progress_wait(seen, 50 * 1000 * 1000);
	}
	return NULL;
}

/* The applier thread runs (true), or cannot be had now (set*id under
 * way, no thread to start). */
static bool start_applier(void)
{
	if (atomic_load(&applier_running))
		return true;
	if (atomic_load(&shim_threads_quit))
		return false;
	int no = 0;
	if (!atomic_compare_exchange_strong(&applier_running, &no, 1))
		return true;
	if (shim_start_thread(applier_main, 64 * 1024, "syncshim-apply", NULL) < 0) {
		atomic_store(&applier_running, 0);
		return false;
	}
	return true;
}

void held_stop(void)
{
	if (atomic_load_explicit(&stopped, memory_order_relaxed) && !atomic_load(&held_files))
		return;
	atomic_store(&stopped, 1);
	held_apply_all();
}

/* ---- readers -------------------------------------------------------------------- */

void held_before_read_slow(int fd)
{
	if (shim_bypass())
		return;
	uint32_t st;
	struct shim_file *f = fd_peek(fd, &st);
	if (!f || held_count(&f->hold) == 0 || !file_tryref(f))
		return;
	atomic_fetch_add_explicit(&st_read_waits, 1, memory_order_relaxed);
	held_apply_file(f);
	file_put(f);
}

void held_before_path_slow(int dirfd, const char *path, int at_flags)
{
	if (shim_bypass() || !path)
		return;
	int e = errno;
	struct statx sx;
	if (LIBC(statx)(dirfd, path, at_flags | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_BTIME, &sx) == 0 &&
	    S_ISREG(sx.stx_mode)) {
		uint64_t birth = (sx.stx_mask & STATX_BTIME)
					 ? (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec
					 : 0;
		struct shim_file *f = file_find(makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, birth);
		if (f) {
			if (held_count(&f->hold)) {
				atomic_fetch_add_explicit(&st_read_waits, 1, memory_order_relaxed);
				held_apply_file(f);
			}
			file_put(f);
		}
	}
	errno = e;
}

/* Copy src (n bytes) into the iov at logical offset at of the read. */
static void iov_put(const struct iovec *iov, int cnt, size_t at, const char *src, size_t n)
{
	for (int i = 0; i < cnt && n; i++) {
		size_t len = iov[i].iov_len;
		if (at >= len) {
			at -= len;
			continue;
		}
		size_t k = len - at < n ? len - at : n;
		memcpy((char *)iov[i].iov_base + at, src, k);
		src += k;
		n -= k;
		at = 0;
	}
}

static void iov_zero(const struct iovec *iov, int cnt, size_t at, size_t n)
{
	for (int i = 0; i < cnt && n; i++) {
		size_t len = iov[i].iov_len;
		if (at >= len) {
			at -= len;
			continue;
		}
		size_t k = len - at < n ? len - at : n;
		memset((char *)iov[i].iov_base + at, 0, k);
		n -= k;
		at = 0;
	}
}

/*
 * The kernel's bytes, then f's held writes over them, oldest first, all
 * under held_mu: a change leaves the FIFO (held_mu) only after its bytes
 * are in the kernel, and bumps gen first; if gen moved between before the
 * kernel read and after the overlay, a change may have been applied after
 * the read and left before the overlay, and the read is made again. Past
 * the kernel's end (a short read), held writes that extend the file are
 * its bytes, with zeros between, as a sparse file reads.
 */
ssize_t held_preadv(int fd, const struct iovec *iov, int cnt, off_t off,
		    ssize_t (*kernel)(int, const struct iovec *, int, off_t))
{
	uint32_t st;
	struct shim_file *f = shim_bypass() ? NULL : fd_peek(fd, &st);
	if (!f || held_count(&f->hold) == 0 || off < 0 || !file_tryref(f))
		return kernel(fd, iov, cnt, off);
	size_t total = 0;
	for (int i = 0; i < cnt; i++)
		total += iov[i].iov_len;
	ssize_t r = -1;
	for (int tries = 0; tries < 8; tries++) {
		uint32_t g0 = atomic_load(&f->hold.gen);
		r = kernel(fd, iov, cnt, off);
		if (r < 0)
			break;
		shim_enter();
		pthread_mutex_lock(&held_mu);
		struct held_link *h = &f->hold;
		uint64_t lo = (uint64_t)off, end = lo + (uint64_t)r, want = lo + total;
		for (struct held_change *c = h->head; c; c = c->next)
			if (c->off < want && c->off + c->len > end)
				end = c->off + c->len < want ? c->off + c->len : want;
		if (end > lo + (uint64_t)r)
			iov_zero(iov, cnt, (size_t)r, (size_t)(end - lo - (uint64_t)r));
		for (struct held_change *c = h->head; c; c = c->next) {
			uint64_t a = c->off > lo ? c->off : lo, b = c->off + c->len < end ? c->off + c->len : end;
			if (a < b)
				iov_put(iov, cnt, (size_t)(a - lo), c->data + (a - c->off), (size_t)(b - a));
		}
		bool same = atomic_load(&h->gen) == g0;
		pthread_mutex_unlock(&held_mu);
		shim_leave();
		if (same) {
			r = (ssize_t)(end - lo);
			goto out;
		}
	}
	/* Applied under us over and over: the bytes once they are in the kernel. */
	atomic_fetch_add_explicit(&st_read_waits, 1, memory_order_relaxed);
	held_apply_file(f);
	r = kernel(fd, iov, cnt, off);
out:
	file_put(f);
	return r;
}

uint64_t held_size(int fd, uint64_t kernel_size)
{
	uint32_t st;
	struct shim_file *f = shim_bypass() ? NULL : fd_peek(fd, &st);
	if (!f || held_count(&f->hold) == 0)
		return kernel_size;
	uint64_t e = atomic_load(&f->hold.end);
	return e > kernel_size ? e : kernel_size;
}

/* ---- fork ------------------------------------------------------------------------- */

/* The parent applied everything before the fork (held_stop, from the
 * prepare handler); whatever a fork from inside the shim left is the
 * parent's. */
void held_atfork_child(void)
{
	pthread_mutex_init(&held_mu, NULL);
	pthread_mutex_init(&apply_mu, NULL);
	held_list = NULL; /* each file's part: flusher_atfork_child */
	atomic_store(&held_total, 0);
	atomic_store(&held_files, 0);
	atomic_store(&stopped, 1);
	atomic_store(&applier_running, 0);
	atomic_store(&progress_waiters, 0);
	am_applier = false;
	atomic_store(&st_held, 0);
	atomic_store(&st_held_bytes, 0);
	atomic_store(&st_rounds, 0);
	atomic_store(&st_read_waits, 0);
	atomic_store(&st_bound_waits, 0);
}
