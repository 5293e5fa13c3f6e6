/*
 * order.c - ordered defer: a power cut leaves a state the program once had.
 *
 * defer answers a sync at once and makes it real later; on its own that
 * lets the kernel write a later change of another file (or an overwrite
 * of the same file) before the data the answer promised, which is how a
 * multi-file database gets corrupted rather than just shorter. The rule
 * kept here: a change reaches the kernel only after every sync the app
 * was told is done, and that the change could depend on, is durable.
 *
 * The design.
 *   - Pending list. A file with a deferred acknowledgement that no real
 *     sync has covered yet is "pending": linked on this process's list
 *     (the order lock) holding a reference, and given a slot in the
 *     domain (below), whose summary word the write path loads: (pending
 *     files << 32 | the one pending file's slot). A file joins when its
 *     deferred sync is answered (order_acked, from defer_request, after
 *     the request is numbered) and leaves when a real sync that covers its
 *     last request ends (order_synced). Within a process the numbers are
 *     the flusher's own request numbers (req_seq, done_seq).
 *   - The domain: this process and its fork children, which inherit a
 *     MAP_SHARED table made at load (PostgreSQL's backends are the
 *     postmaster's fork children). A slot holds the owner's pid, its
 *     descriptor, the file's dev/inode and a domain-wide number for the
 *     file's latest acknowledgement; another process makes the file
 *     durable itself (fdatasync through /proc/PID/fd/N, checked to be the
 *     file; else syncfs or sync()) and marks the number durable. A slot
 *     whose owner died is synced that way and freed.
 *   - Cross-file order. A change of file F (a write, copy_file_range,
 *     ftruncate, fallocate) with order = domain waits, when another file
 *     is pending, until that file's requests as of now are durable: the
 *     flusher threads are asked to sync it now and the writer sleeps
 *     (flusher_await), not busy, so a signal handler that interrupts the
 *     wait is an ordinary caller. A change of names (rename, link,
 *     unlink, truncate by path) waits for every pending file. So the wait
 *     is about one real sync and happens only when the program moves from
 *     a file with an owed sync to another one; a single-file program
 *     never waits for another file.
 *   - Same-file order. A write to F while F itself is pending waits for
 *     F's sync only if it changes bytes an acknowledged sync promised: a
 *     write whose offset is at or past the highest byte written since F's
 *     last completed real sync began is forward (a log's next record), and
 *     so is one past the file's size (fstat, and lseek for a write at the
 *     descriptor's position) or over bytes with the same content (pread),
 *     or one that keeps the bytes it covers but fills zeros after them to
 *     its end (PostgreSQL rewriting its last partial WAL page with more
 *     records: same_bytes). Only the part below the highest byte is
 *     compared. The first rule
 *     holds only while those writes went forward, each at or past the end
 *     of the one before, or rewriting the tail of the one before and going
 *     on past its end (order_after_write; the first write after an open
 *     is not known to): then the old bytes past them are what followed the
 *     log's end when it was durable, which its reader already stops at. A
 *     write that went back and ended short of the one before (sqlite's new
 *     WAL header at 0, a rewritten page)
 *     makes the highest byte unknown until a real sync covers it, so the
 *     writes after it over old bytes wait: sqlite restarts its WAL by
 *     syncing a new header and then writing frames over the old ones, and a
 *     frame on the disk before the header lets the old header read a
 *     shortened old WAL over a database already checkpointed past it
 *     (integrity_check failed so under adversarial writeback: docs/bench-log.md,
 *     the 50-cut sqlite campaign).
 *   - Across processes, one file. Another process's slot for the file a
 *     write goes to is judged by the same-file rule, not the cross-file
 *     one: the slot carries its owner's highest byte as of its latest
 *     acknowledgement (hi, stored before the number), and a write at or
 *     past it, or changing nothing below it, waits for nothing (PostgreSQL's
 *     backends appending to one WAL segment after each other's commits).
 *     What the owner promised lies below its hi, in the same page cache
 *     the writer compares against, so the judgement is the one the owner
 *     would make itself. As within one process, the marks are the owner's
 *     own writes: bytes a third process wrote without an acknowledgement
 *     of its own, which the owner's sync then promised, are not known past
 *     the owner's hi (the same-file rule has never known another
 *     process's writes). When a slot must be made durable, one fdatasync
 *     covers every process's slot for that file (their numbers as read
 *     before).
 *   - Errors. A real sync that fails still ends the wait: its error is
 *     sticky for its own file, reported by that file's next fsync or
 *     close, as every deferred sync error is; the waiting call is not
 *     failed for another file's error.
 *   - Lock order: the order lock, then the domain's (process-shared,
 *     robust); under them only atomics and file_tryref. A file's
 *     reference is dropped (file_put, which may take the registry lock)
 *     after they are released. The wait holds no lock of this module.
 *     Everything that locks runs with shim_busy raised, so a signal
 *     handler that interrupts it passes through, and the flusher threads
 *     (shim_busy always) and a leader's own real sync never wait for order.
 *   - fork: the child's flusher owns none of the parent's pending syncs
 *     (flusher_atfork_child), so its list starts empty; the parent's slots
 *     stay the parent's, and the child waits for them like any process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "order.h"
#include "risk.h"
#include "shimfd.h"
#include "syncerr.h"
#include "workers.h"

/*
 * The domain: this process and its fork children (PostgreSQL's postmaster
 * and its backends, forked without exec), which inherit this mapping:
 * MAP_SHARED, made at load. Each pending file has a slot there, so a
 * process sees another's acknowledged syncs; the summary word is computed
 * from the slots under the domain's lock (process-shared, robust: a
 * process that dies holding it does not block the others).
 */
#define DOMAIN_SLOTS 1024

/* Other processes read a slot without the lock (wait_for_other_processes)
 * while its owner may free it and another file take it: what they read
 * can mix two files, so it is only ever a hint checked against the file
 * (sync_foreign), and the fields are relaxed atomics (plain moves) rather
 * than a data race. */
struct order_slot {
	_Atomic uint32_t used;
	_Atomic uint32_t seq;           /* odd while the domain's lock gives it to a file (a seqlock for hi) */
	_Atomic pid_t pid;              /* the owner; its file pointer is its own */
	_Atomic int fd;                 /* the owner's descriptor of it, for /proc/PID/fd */
	_Atomic dev_t dev;
	_Atomic ino_t ino;
	_Atomic uint64_t acked;         /* the domain's number of its latest acknowledgement */
	_Atomic uint64_t durable;       /* made durable up to this number by another process */
	_Atomic uint64_t hi;            /* as of acked: no byte it promised is at or past this (same_file_hi) */
	_Atomic int failed;             /* a sync another process made of it failed so: the owner's to make sticky */
	/* An overflow slot (dev and ino 0): its owner's pending files that
	 * found no slot of their own, counted (domain lock); the others make
	 * them durable with sync(), once per acknowledgement number. */
	_Atomic uint32_t count;
};

/* A file's slot field: a slot index + 1, that with OVERFLOW_SLOT for its
 * process's overflow slot, or 0 for the domain's last resort count. */
#define OVERFLOW_SLOT 0x80000000u
#define SLOT_INDEX(s) (((s) & ~OVERFLOW_SLOT) - 1)
/* Slots kept free for overflow slots: a process with more pending files
 * than the table has room for still gets one slot of its own, which the
 * others free when it dies (a domain-wide count could never be given back
 * for a process killed with pending files). */
#define OVERFLOW_RESERVE 32
/* The longest any process waits for the domain's lock. A member that
 * holds it longer (stopped by a signal, a debugger, a frozen cgroup) costs
 * the others that wait, then a sync() and their own domain from then on:
 * never a hang. */
#define DOMAIN_LOCK_WAIT_NS (200 * 1000 * 1000)

struct order_domain {
	_Atomic uint64_t summary;       /* pending slots << 32 | (the only one's index + 1) */
	/* On a cache line of its own after the summary: every acknowledgement
	 * bumps it, and every write of every thread loads the summary (two
	 * threads each appending and syncing made each other's summary load
	 * miss at every sync). */
	_Atomic uint64_t ack_seq __attribute__((aligned(64))); /* numbers acknowledgements, domain-wide */
	pthread_mutex_t mu;             /* slots, summary */
	_Atomic uint32_t overflow;      /* mu: pending files that found no slot, not even an overflow slot */
	uint32_t nused;                 /* mu: slots in use */
	uint32_t xor_used;              /* mu: xor of (index + 1) of those: the one when nused is 1 */
	uint32_t hint;                  /* mu: where to look for a free slot first */
	struct order_slot slots[DOMAIN_SLOTS];
};

static uint64_t same_file_hi(struct shim_file *f);

static struct order_domain local_domain; /* if the shared mapping cannot be made */
SHIM_HOT struct order_domain *order_dom = &local_domain;

/* This process's files holding changes (held.c): in the summary, so their
 * writes reach order_write_slow. Only a process alone in its domain holds. */
static _Atomic uint32_t held_here;
/* This process shares its domain: it forked, or is a fork child. */
static _Atomic int domain_shared;
/* It is a fork child (a test point holds only there: a stopped member). */
static bool fork_child;
/* Threads of this process inside a section that uses the table beyond the
 * summary (leave_domain waits for them before it takes the table away). */
static _Atomic int domain_users;

static void domain_use(void)
{
	atomic_fetch_add(&domain_users, 1);
}

static void domain_unuse(void)
{
	atomic_fetch_sub(&domain_users, 1);
}

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *pending_head; /* order_mu: this process's pending files */

/* SYNCSHIM_TEST_NO_ORDER=1: defer as it was before ordering, for the
 * benchmark's baseline and the tests that show what ordering prevents. */
static _Atomic int order_off = -1;

/* What the order cost this process (SYNCSHIM_TEST_ORDER_STATS, at exit):
 * writes and changes that waited for other files' syncs, writes that
 * waited for their own file's, the real syncs another process's slots
 * took from here; and the system calls the same-file check made (fstat,
 * lseek, pread). Only the slow path counts. */
static _Atomic uint64_t stat_waits_other, stat_waits_self, stat_foreign_syncs, stat_checks_asked;
/* Writes held instead of waiting (held.c): with something to wait for,
 * and only behind their file's held writes. */
static _Atomic uint64_t stat_held_ordered, stat_held_behind;
/* Writes over promised bytes that went on at once as tail rewrites. */
static _Atomic uint64_t stat_tail_rewrites;
/* Writes at the position about to be held that found it moved since the
 * mark was read (take_position). */
static _Atomic uint64_t stat_position_moved;

static bool ordering_off(void)
{
	int v = atomic_load_explicit(&order_off, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("SYNCSHIM_TEST_NO_ORDER");
		v = e && strcmp(e, "1") == 0;
		atomic_store_explicit(&order_off, v, memory_order_relaxed);
	}
	return v;
}

static void domain_mutex_init(pthread_mutex_t *mu, bool shared)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	if (shared) {
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	}
	pthread_mutex_init(mu, &a);
	pthread_mutexattr_destroy(&a);
}

void order_init(void)
{
	domain_mutex_init(&local_domain.mu, false);
	void *p = mmap(NULL, sizeof(struct order_domain), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return; /* this process alone, then */
	struct order_domain *d = p;
	domain_mutex_init(&d->mu, true);
	order_dom = d;
}

/* Domain lock held, after a process died holding it: the counts again
 * from the slots. */
static void recount_locked(void)
{
	struct order_domain *d = order_dom;
	d->nused = d->xor_used = 0;
	for (uint32_t i = 0; i < DOMAIN_SLOTS; i++)
		if (atomic_load_explicit(&d->slots[i].used, memory_order_relaxed)) {
			d->nused++;
			d->xor_used ^= i + 1;
		}
}

static void leave_domain(const char *why, bool order_mu_held);

/* A shim section (shim_enter): a signal handler that lands while this
 * thread holds the lock, and writes, must not come back here for it (a
 * timer's handler appending while the writer's write checked the domain
 * for overflow hung so; test_signal_handlers'
 * handler_inside_the_order_domain_lock holds it). false: the lock could not be
 * had within DOMAIN_LOCK_WAIT_NS; this process has left the domain
 * (leave_domain) and the caller does without it. */
static bool lock_domain_once(bool order_mu_held)
{
	shim_enter();
	domain_use();
	struct order_domain *d = order_dom;
	/* The bound on the monotonic clock: a wall clock set back would
	 * stretch it. ThreadSanitizer (GCC 12's) intercepts timedlock but not
	 * clocklock, and a lock it never saw taken reads as unlocked twice:
	 * the sanitizer build waits on the wall clock instead. */
#ifdef __SANITIZE_THREAD__
	const clockid_t clock = CLOCK_REALTIME;
#else
	const clockid_t clock = CLOCK_MONOTONIC;
#endif
	struct timespec dl;
	clock_gettime(clock, &dl);
	dl.tv_nsec += DOMAIN_LOCK_WAIT_NS;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
#ifdef __SANITIZE_THREAD__
	int r = pthread_mutex_timedlock(&d->mu, &dl);
#else
	int r = pthread_mutex_clocklock(&d->mu, clock, &dl);
#endif
	if (r == EOWNERDEAD) {
		pthread_mutex_consistent(&d->mu);
		recount_locked();
		r = 0;
	}
	if (r != 0) {
		domain_unuse();
		shim_leave();
		leave_domain("another process of the domain held its lock too long (stopped?)", order_mu_held);
		return false;
	}
	TEST_POINT("domain");
	TEST_HOLD("domain");
	if (fork_child)
		TEST_HOLD("domain_in_child"); /* a member stopped with the lock held (test_order) */
	return true;
}

/* The domain's lock, of the domain this process is in when it returns:
 * after a bounded wait that left the domain, the new one's (its own,
 * uncontended). */
static void lock_domain_mu(bool order_mu_held)
{
	while (!lock_domain_once(order_mu_held))
		;
}

static void lock_domain(void)
{
	lock_domain_mu(false);
}

static void unlock_domain(void)
{
	pthread_mutex_unlock(&order_dom->mu);
	domain_unuse();
	shim_leave();
}

/* Domain lock held: the summary word. O(1): these sections are short, so
 * a signal handler seldom finds its thread inside one. The count goes up
 * before a file is marked listed and down after it is unmarked. */
static void publish_locked(void)
{
	struct order_domain *d = order_dom;
	uint32_t over = atomic_load(&d->overflow), held = atomic_load(&held_here);
	uint32_t n = d->nused + over + held;
	atomic_store(&d->summary, (uint64_t)n << 32 | (n == 1 && !over && !held ? d->xor_used : 0));
}

/* Domain lock held: a free slot made this process's, or -1. */
static int claim_free_locked(void)
{
	struct order_domain *d = order_dom;
	for (uint32_t k = 0; k < DOMAIN_SLOTS; k++) {
		uint32_t i = (d->hint + k) % DOMAIN_SLOTS;
		if (!atomic_load_explicit(&d->slots[i].used, memory_order_relaxed))
			return (int)i;
	}
	return -1;
}

static void slot_in_use_locked(uint32_t i)
{
	struct order_domain *d = order_dom;
	atomic_store(&d->slots[i].used, 1);
	atomic_fetch_add(&d->slots[i].seq, 1);
	d->nused++;
	d->xor_used ^= i + 1;
	d->hint = (i + 1) % DOMAIN_SLOTS;
}

/* Domain lock held: a slot for f (index + 1); past the reserve, this
 * process's overflow slot (OVERFLOW_SLOT | index + 1); 0 if there is not
 * even that (the domain's last resort count: every other process syncs
 * everything while it is not zero). */
static uint32_t take_slot_locked(struct shim_file *f)
{
	struct order_domain *d = order_dom;
	uint64_t number = atomic_fetch_add(&d->ack_seq, 1) + 1;
	if (DOMAIN_SLOTS - d->nused > OVERFLOW_RESERVE) {
		int i = claim_free_locked();
		if (i >= 0) {
			struct order_slot *sl = &d->slots[i];
			atomic_fetch_add(&sl->seq, 1);
			atomic_store_explicit(&sl->pid, shim.pid, memory_order_relaxed);
			atomic_store_explicit(&sl->fd, atomic_load(&f->fl.req_fd), memory_order_relaxed);
			atomic_store_explicit(&sl->dev, f->dev, memory_order_relaxed);
			atomic_store_explicit(&sl->ino, f->ino, memory_order_relaxed);
			atomic_store(&sl->durable, 0);
			atomic_store(&sl->failed, 0);
			atomic_store(&sl->count, 0);
			atomic_store(&sl->hi, same_file_hi(f)); /* before acked: whoever sees the number sees it */
			atomic_store(&sl->acked, number);
			slot_in_use_locked((uint32_t)i);
			return (uint32_t)i + 1;
		}
	}
	for (uint32_t i = 0; i < DOMAIN_SLOTS; i++) {
		struct order_slot *sl = &d->slots[i];
		if (atomic_load_explicit(&sl->used, memory_order_relaxed) &&
		    atomic_load_explicit(&sl->pid, memory_order_relaxed) == shim.pid &&
		    atomic_load_explicit(&sl->ino, memory_order_relaxed) == 0 &&
		    atomic_load_explicit(&sl->dev, memory_order_relaxed) == 0) {
			atomic_fetch_add(&sl->count, 1);
			atomic_store(&sl->acked, number);
			return OVERFLOW_SLOT | (i + 1);
		}
	}
	int i = claim_free_locked();
	if (i >= 0) {
		struct order_slot *sl = &d->slots[i];
		atomic_fetch_add(&sl->seq, 1);
		atomic_store_explicit(&sl->pid, shim.pid, memory_order_relaxed);
		atomic_store_explicit(&sl->fd, -1, memory_order_relaxed);
		atomic_store_explicit(&sl->dev, 0, memory_order_relaxed);
		atomic_store_explicit(&sl->ino, 0, memory_order_relaxed);
		atomic_store(&sl->durable, 0);
		atomic_store(&sl->failed, 0);
		atomic_store(&sl->count, 1);
		atomic_store(&sl->hi, UINT64_MAX);
		atomic_store(&sl->acked, number);
		slot_in_use_locked((uint32_t)i);
		return OVERFLOW_SLOT | ((uint32_t)i + 1);
	}
	atomic_fetch_add(&d->overflow, 1);
	return 0;
}

static void free_slot_locked(uint32_t i)
{
	struct order_domain *d = order_dom;
	atomic_store(&d->slots[i].used, 0);
	d->nused--;
	d->xor_used ^= i + 1;
	d->hint = i;
}

static void drop_slot_locked(uint32_t slot)
{
	struct order_domain *d = order_dom;
	if (slot & OVERFLOW_SLOT) {
		struct order_slot *sl = &d->slots[SLOT_INDEX(slot)];
		if (atomic_load(&sl->used) && atomic_fetch_sub(&sl->count, 1) == 1)
			free_slot_locked(SLOT_INDEX(slot));
	} else if (slot && atomic_load(&d->slots[slot - 1].used)) {
		free_slot_locked(slot - 1);
	} else if (!slot && atomic_load(&d->overflow)) {
		atomic_fetch_sub(&d->overflow, 1);
	}
}

/*
 * Leaving the domain: this process orders its changes by itself (and its
 * fork children from then on) in a new table. What it could see of the
 * others' acknowledged syncs is made durable first (sync(): once), so no
 * change of its own can overtake one; its own pending files, whose slots
 * the others may still see and sync until it ends, count in the new table
 * as overflow (it is alone there). take_away: the old table is replaced
 * in this process by private zeros, once no thread of its uses it (a
 * thread that read the old pointer just before then sees an empty domain),
 * so nothing this process runs can reach the others' table again: for a
 * process that is about to take on credentials the others must not trust.
 */
static void leave_domain_as(const char *why, bool order_mu_held, bool take_away)
{
	struct order_domain *old = order_dom;
	if (old == &local_domain)
		return;
	shim_enter();
	LIBC(sync)();
	void *p = mmap(NULL, sizeof(struct order_domain), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct order_domain *nd = p == MAP_FAILED ? &local_domain : p;
	if (nd != &local_domain)
		domain_mutex_init(&nd->mu, true);
	if (!order_mu_held)
		pthread_mutex_lock(&order_mu);
	uint32_t n = 0;
	for (struct shim_file *g = pending_head; g; g = g->ord.next, n++)
		atomic_store_explicit(&g->ord.slot, 0, memory_order_relaxed);
	atomic_store(&nd->overflow, n);
	uint32_t held = atomic_load(&held_here), total = n + held;
	atomic_store(&nd->summary, (uint64_t)total << 32);
	__atomic_store_n(&order_dom, nd, __ATOMIC_SEQ_CST);
	if (!order_mu_held)
		pthread_mutex_unlock(&order_mu);
	atomic_store(&domain_shared, 0);
	if (take_away && old != &local_domain) {
		for (int i = 0; i < 100000 && atomic_load(&domain_users) > 0; i++)
			sched_yield();
		if (atomic_load(&domain_users) == 0)
			mmap(old, sizeof(struct order_domain), PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	}
	shim_say("ordering domain: %s; this process keeps the order of its own files from now on (the others' "
		 "acknowledged syncs were made durable first)",
		 why);
	shim_leave();
}

static void leave_domain(const char *why, bool order_mu_held)
{
	leave_domain_as(why, order_mu_held, false);
}

void order_before_credentials(void)
{
	if (atomic_load(&domain_shared))
		leave_domain_as("it takes on other credentials", false, true);
}

void order_atfork_parent(void)
{
	atomic_store(&domain_shared, 1);
}

static void runs_forget(struct shim_file *f);

void order_reset(struct shim_file *f)
{
	atomic_store(&f->ord.listed, 0);
	atomic_store(&f->ord.acking, 0);
	atomic_store_explicit(&f->ord.slot, 0, memory_order_relaxed);
	atomic_store(&f->ord.hi_seq, 0);
	atomic_store(&f->ord.cur_hi, 0);
	atomic_store(&f->ord.prev_hi, 0);
	atomic_store(&f->ord.last_end, UINT64_MAX); /* where the last write before the open ended: not known */
	atomic_store(&f->ord.prev_end, UINT64_MAX);
	atomic_store(&f->ord.durable_end, UINT64_MAX);
	atomic_store(&f->ord.wreq, 0);
	atomic_store(&f->ord.mapped, 0);
	runs_forget(f);
	atomic_store(&f->ord.rewrite_end, 0);
	/* A file whose writes are not all counted (a policy that answers no
	 * sync unsynced: order_after_write is not called) has no known end;
	 * nor has it once that changes (order_writes_uncounted). */
	atomic_store(&f->ord.known_end, (file_write_work(f) & WRITES_COUNTED) ? 0 : ORDER_END_LOST);
	atomic_store(&f->ord.sized, 0);
	atomic_store(&f->ord.hole, 0);
	atomic_store(&f->ord.fills, 0);
	f->ord.next = NULL;
}

void order_writes_uncounted(struct shim_file *f)
{
	atomic_store(&f->ord.known_end, ORDER_END_LOST);
}

void order_starts_deferring(struct shim_file *f)
{
	atomic_store(&f->ord.known_end, ORDER_END_LOST);
	atomic_store(&f->ord.cur_hi, UINT64_MAX); /* bytes written meanwhile: not known as forward */
	atomic_store(&f->ord.last_end, UINT64_MAX);
	atomic_store(&f->ord.prev_end, UINT64_MAX); /* nor where they went */
	atomic_store(&f->ord.durable_end, UINT64_MAX);
}

static void store_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t old = atomic_load(p);
	while (v > old && !atomic_compare_exchange_weak(p, &old, v))
		;
}

/* The same, leaving ORDER_END_LOST as it is. */
static void store_max_below_lost(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t old = atomic_load(p);
	while (v > old && old != ORDER_END_LOST && !atomic_compare_exchange_weak(p, &old, v))
		;
}

/* The writes since the last real sync began move to the round that sync
 * covers; a reader (same_file_hi) sees them in one or the other. */
void order_sync_begins(struct shim_file *f)
{
	atomic_fetch_add(&f->ord.hi_seq, 1);
	uint64_t end = atomic_load(&f->ord.last_end);
	store_max(&f->ord.prev_hi, atomic_exchange(&f->ord.cur_hi, 0));
	/* The round it covers went forward (or is empty): where its last
	 * write ended is the end of the log it makes durable. */
	atomic_store(&f->ord.prev_end, atomic_load(&f->ord.prev_hi) == UINT64_MAX ? UINT64_MAX : end);
	atomic_fetch_add(&f->ord.hi_seq, 1);
}

void order_sync_ends(struct shim_file *f, bool happened)
{
	if (happened) {
		/* Moved before the round's bytes stop counting as promised: a
		 * reader that finds them durable (prev_hi 0) finds their end. */
		atomic_store(&f->ord.durable_end, atomic_load(&f->ord.prev_end));
		atomic_store(&f->ord.prev_hi, 0);
	}
}

/* The highest byte written since the last completed real sync began:
 * nothing at or past it is promised and not yet durable. */
static uint64_t same_file_hi(struct shim_file *f)
{
	for (;;) {
		uint32_t s = atomic_load(&f->ord.hi_seq);
		uint64_t cur = atomic_load(&f->ord.cur_hi), prev = atomic_load(&f->ord.prev_hi);
		if (!(s & 1) && atomic_load(&f->ord.hi_seq) == s)
			return cur > prev ? cur : prev;
		__builtin_ia32_pause();
	}
}

uint64_t order_promised_hi(struct shim_file *f)
{
	return atomic_load(&f->ord.listed) ? same_file_hi(f) : 0;
}

uint64_t order_self_target(struct shim_file *f)
{
	uint64_t req = flusher_requested(f), wr = atomic_load(&f->ord.wreq);
	return wr < req ? wr + 1 : req;
}

void order_held_files(int delta)
{
	lock_domain();
	atomic_fetch_add(&held_here, (uint32_t)delta);
	publish_locked();
	unlock_domain();
}

void order_acked(struct shim_file *f)
{
	/* After req_seq's increment (sequentially consistent, as this load):
	 * either this sees the file listed, or order_synced's re-check after
	 * unmarking it sees the new request and keeps it.
	 * The slot is used only while acking is raised: a real sync covering
	 * this request can end meanwhile, and its order_synced would otherwise
	 * free the slot under this thread's feet, and another file's slot
	 * (this process's or a fork child's) would get this file's descriptor
	 * and acknowledgement. order_synced keeps the file listed instead
	 * while acking is raised (raised before listed is loaded, as it
	 * clears listed before loading acking: one of the two sees the other). */
	atomic_fetch_add(&f->ord.acking, 1);
	if (atomic_load(&f->ord.listed)) {
		/* set before listed, kept while listed and acking */
		uint32_t slot = atomic_load_explicit(&f->ord.slot, memory_order_relaxed);
		if (slot) { /* other processes wait for this one too: its number */
			domain_use();
			struct order_domain *d = order_dom;
			struct order_slot *sl = &d->slots[SLOT_INDEX(slot)];
			if (!(slot & OVERFLOW_SLOT)) {
				atomic_store_explicit(&sl->fd, atomic_load(&f->fl.req_fd), memory_order_relaxed);
				/* the same hi every time for an append log whose end is
				 * not known (UINT64_MAX): no store, ack_seq's below fences */
				uint64_t hi = same_file_hi(f);
				if (atomic_load_explicit(&sl->hi, memory_order_relaxed) != hi)
					atomic_store(&sl->hi, hi);
			}
			atomic_store(&sl->acked, atomic_fetch_add(&d->ack_seq, 1) + 1);
			domain_unuse();
		}
		atomic_fetch_sub_explicit(&f->ord.acking, 1, memory_order_release);
		return;
	}
	atomic_fetch_sub_explicit(&f->ord.acking, 1, memory_order_release);
	if (ordering_off())
		return;
	shim_enter();
	pthread_mutex_lock(&order_mu);
	if (!atomic_load(&f->ord.listed) && file_tryref(f)) {
		f->ord.next = pending_head;
		pending_head = f;
		lock_domain_mu(true);
		atomic_store_explicit(&f->ord.slot, take_slot_locked(f), memory_order_relaxed);
		publish_locked();
		unlock_domain();
		runs_forget(f); /* its bytes were not watched while it was not listed */
		atomic_store(&f->ord.listed, 1);
	}
	pthread_mutex_unlock(&order_mu);
	shim_leave();
}

void order_synced(struct shim_file *f)
{
	if (!atomic_load(&f->ord.listed) || flusher_owes(f))
		return;
	bool dropped = false;
	int failed = 0;
	shim_enter();
	pthread_mutex_lock(&order_mu);
	if (atomic_load(&f->ord.listed)) {
		atomic_store(&f->ord.listed, 0);
		/* An acknowledgement raced in: still pending. Or one is using the
		 * slot right now (order_acked): it stays until the next real sync
		 * ends; waiting for it could be waiting for a signal handler. */
		if (flusher_owes(f) || atomic_load(&f->ord.acking)) {
			atomic_store(&f->ord.listed, 1);
		} else {
			for (struct shim_file **pp = &pending_head; *pp; pp = &(*pp)->ord.next)
				if (*pp == f) {
					*pp = f->ord.next;
					break;
				}
			f->ord.next = NULL;
			lock_domain_mu(true);
			uint32_t slot = atomic_load_explicit(&f->ord.slot, memory_order_relaxed);
			if (slot && !(slot & OVERFLOW_SLOT)) /* the slot is f's while listed: a failure recorded there is f's */
				failed = atomic_exchange(&order_dom->slots[slot - 1].failed, 0);
			if (failed <= 0 || failed >= 4096)
				failed = 0; /* not an errno: another process's scribble, never an error of f's */
			drop_slot_locked(slot);
			atomic_store_explicit(&f->ord.slot, 0, memory_order_relaxed);
			publish_locked();
			unlock_domain();
			runs_forget(f);
			dropped = true;
		}
	}
	pthread_mutex_unlock(&order_mu);
	if (failed) {
		/* Another process of the domain made f durable for its own
		 * order and that sync failed: f's error, like any deferred
		 * sync's (oracle seed mix:15753632) */
		syncerr_record(f, failed);
		syncerr_tell_if_orphaned(f);
	}
	if (dropped)
		file_put(f);
	shim_leave();
}

/* ---- another process's acknowledged syncs ------------------------------------ */

/* A write being ordered, as the checks see it: where it lands and what it
 * writes, and what was found out about it so far (compared once, whoever
 * asks: the same-file checks of this process's file and of another
 * process's slot for the same file). */
struct write_view {
	struct shim_file *f;
	int fd;
	off_t off;                 /* as given: -1 the position, not known; ORDER_AT_END */
	const struct iovec *iov;   /* NULL: copy_file_range */
	int cnt;
	off_t pos;                 /* -2: not resolved yet; -1: not known */
	int changes;               /* -1: not compared yet; 1: it changes bytes the file holds; 0: it does not */
	uint64_t changes_below;    /* ... below this offset (the part at or past it is forward) */
};

static bool view_changes_below(struct write_view *w, uint64_t hi);

static bool process_gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* Make the file of another process's slot durable from here: its
 * descriptor through /proc (fdatasync of any descriptor of a file writes
 * all of its dirty data), checked to be the same file; failing that a
 * syncfs of the file system through own_fd if it is on it, else sync().
 * An error is the kernel's to report to the owner's descriptors. */
struct foreign {
	const char *path;
	dev_t dev;
	ino_t ino;
	bool isolated;
	int err; /* the sync's errno when it failed (set by the isolated child: shared memory) */
};

/* 1: synced, 0: its sync failed (the owner's descriptors hear of it),
 * -1: not reached (gone, or not the same file). */
static int sync_foreign_here(struct foreign *fo)
{
	int flags = O_RDONLY | O_NOCTTY | O_NONBLOCK;
	int d = fo->isolated ? LIBC(open)(fo->path, flags | O_CLOEXEC) : shimfd_open(fo->path, flags, OWN_TEMP);
	if (d < 0)
		return -1;
	struct stat st;
	bool same = LIBC(fstat)(d, &st) == 0 && st.st_dev == fo->dev && st.st_ino == fo->ino;
	int r = same ? LIBC(fdatasync)(d) : -1;
	if (same && r != 0)
		fo->err = errno;
	if (fo->isolated)
		LIBC(close)(d);
	else
		shimfd_close(d);
	return same ? r == 0 : -1;
}

static int sync_foreign_child(void *arg)
{
	return sync_foreign_here(arg);
}

/* 0, or the errno of the file's own sync that failed (its owner's to hear
 * of: tell_owner). */
static int sync_foreign(pid_t pid, int fd, dev_t dev, ino_t ino, int own_fd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	/* opened in a child with a table of its own: never on a number of the app's */
	struct foreign fo = { path, dev, ino, true, 0 };
	int done = -1;
	if (fd >= 0 && !shimfd_isolated(sync_foreign_child, &fo, &done)) {
		fo.isolated = false;
		done = sync_foreign_here(&fo);
	}
	if (done == 0)
		return fo.err ? fo.err : EIO;
	if (done > 0)
		return 0;
	struct stat st;
	if (own_fd >= 0 && LIBC(fstat)(own_fd, &st) == 0 && st.st_dev == dev)
		LIBC(syncfs)(own_fd);
	else
		LIBC(sync)();
	return 0;
}

/*
 * A sync made from here of another process's file failed: the failure is
 * the owner's (nothing else hands it over: the kernel reports a write-back
 * error to the owner's descriptions too, but a file system that fails the
 * one call, FUSE, NFS, the fault layer beneath the shim, tells only this
 * caller). Recorded in its slot while the slot is still that process's
 * for that file; the owner takes it when the slot is freed (order_synced)
 * and makes it sticky, reported by the file's next fsync or close or at
 * exit. A slot freed meanwhile (the owner's own sync covered it): said
 * here on stderr, the only place left.
 */
static void tell_owner(struct order_slot *sl, pid_t pid, dev_t dev, ino_t ino, int err)
{
	bool kept = false;
	lock_domain();
	bool ours = sl >= order_dom->slots && sl < order_dom->slots + DOMAIN_SLOTS; /* not a domain since left */
	if (ours && atomic_load(&sl->used) && atomic_load_explicit(&sl->pid, memory_order_relaxed) == pid &&
	    atomic_load_explicit(&sl->dev, memory_order_relaxed) == dev &&
	    atomic_load_explicit(&sl->ino, memory_order_relaxed) == ino) {
		atomic_store(&sl->failed, err);
		kept = true;
	}
	unlock_domain();
	if (!kept)
		shim_say("a sync of pid %d's file (inode %lu) made for the order of its domain failed (%s: %s); "
			 "data it was told is durable may be lost",
			 (int)pid, (unsigned long)ino, strerrorname_np(err) ? strerrorname_np(err) : "?", strerror(err));
}

/* Another process's slot for the same file as j's (an index > i): made
 * durable by the real sync about to be made for i, as of its number now. */
#define COVER_MAX 32

/* Every other process's pending slot acknowledged so far is durable.
 * true if it had to sync one. w: the write this is for (NULL: a change
 * that is not a write): another process's slot for the file it writes is
 * the same-file rule's, not the cross-file one's. PostgreSQL's backends
 * all write the one WAL segment: a backend's WAL write after another's
 * acknowledged WAL sync is a write forward of that one's promised bytes
 * (its records go after them, or rewrite the last page with the same
 * records and more where it held zeros), which costs no sync within one
 * process either; it cost each one a real sync made from here (78 a
 * second under pgbench; 99% of this wait's syncs were of the same file;
 * test_order's a_fork_childs_write_forward_of_its_parents_promised_bytes_does_not_wait). */
static bool wait_for_other_processes(int own_fd, struct write_view *w)
{
	domain_use();
	struct order_domain *d = order_dom;
	if (d == &local_domain) {
		domain_unuse();
		return false;
	}
	bool overflow = false, waited = false;
	for (uint32_t i = 0; i < DOMAIN_SLOTS; i++) {
		struct order_slot *sl = &d->slots[i];
		if (!atomic_load(&sl->used))
			continue;
		uint32_t seq0 = atomic_load(&sl->seq);
		pid_t pid = atomic_load_explicit(&sl->pid, memory_order_relaxed);
		if (pid == shim.pid || pid <= 0)
			continue; /* ours: the pending list's (or no owner at all: nothing to act on) */
		uint64_t acked = atomic_load(&sl->acked);
		if (atomic_load(&sl->durable) >= acked)
			continue;
		int fd = atomic_load_explicit(&sl->fd, memory_order_relaxed);
		dev_t dev = atomic_load_explicit(&sl->dev, memory_order_relaxed);
		ino_t ino = atomic_load_explicit(&sl->ino, memory_order_relaxed);
		bool gone = process_gone(pid);
		if (dev == 0 && ino == 0) {
			/* Another process's overflow slot: files of its that found no
			 * slot, made durable the only way there is from here, once
			 * per number; freed when its owner is gone. */
			LIBC(sync)();
			uint64_t old = atomic_load(&sl->durable);
			while (old < acked && !atomic_compare_exchange_weak(&sl->durable, &old, acked))
				;
			waited = true;
			if (gone) {
				lock_domain();
				if (order_dom == d && atomic_load(&sl->used) &&
				    atomic_load_explicit(&sl->pid, memory_order_relaxed) == pid)
					free_slot_locked(i);
				publish_locked();
				unlock_domain();
			}
			continue;
		}
		/* The slot may be given to another file meanwhile: its hi is used
		 * only if the seqlock shows none of the fields read changed hands
		 * (else the whole write is compared). The owner's own updates of
		 * hi (at each acknowledgement) need none: its hi at any moment
		 * bounds every byte it promised that is not yet durable. */
		if (w && !gone && dev == w->f->dev && ino == w->f->ino) {
			uint64_t hi = atomic_load(&sl->hi);
			bool same_slot = !(seq0 & 1) && atomic_load(&sl->seq) == seq0;
			if (!view_changes_below(w, same_slot ? hi : UINT64_MAX))
				continue; /* forward of what it promised: as within one process */
		}
		/* One real sync of a file covers every process's slot for it. */
		uint32_t cover[COVER_MAX];
		uint64_t cover_acked[COVER_MAX];
		int ncover = 0;
		for (uint32_t j = i + 1; j < DOMAIN_SLOTS && ncover < COVER_MAX; j++) {
			struct order_slot *o = &d->slots[j];
			if (!atomic_load(&o->used) || atomic_load_explicit(&o->pid, memory_order_relaxed) == shim.pid)
				continue;
			uint64_t oa = atomic_load(&o->acked);
			if (atomic_load_explicit(&o->dev, memory_order_relaxed) == dev &&
			    atomic_load_explicit(&o->ino, memory_order_relaxed) == ino && atomic_load(&o->durable) < oa) {
				cover[ncover] = j;
				cover_acked[ncover++] = oa;
			}
		}
		shim_enter(); /* its system calls, and a layer's beneath them, are the shim's own */
		int failed = sync_foreign(pid, gone || fd < 0 ? -1 : fd, dev, ino, own_fd);
		shim_leave();
		if (failed && !gone)
			tell_owner(sl, pid, dev, ino, failed);
		/* Its numbers as read before the sync began: those writes were in
		 * the page cache, which fdatasync of any descriptor writes. A slot
		 * reused meanwhile has a larger number, still pending; one whose
		 * file was another (a mix of two) is checked again below: its
		 * number is compared as stored by the CAS, never beyond. */
		for (int k = 0; k < ncover; k++) {
			struct order_slot *o = &d->slots[cover[k]];
			if (atomic_load_explicit(&o->dev, memory_order_relaxed) != dev ||
			    atomic_load_explicit(&o->ino, memory_order_relaxed) != ino)
				continue;
			uint64_t od = atomic_load(&o->durable);
			while (od < cover_acked[k] && !atomic_compare_exchange_weak(&o->durable, &od, cover_acked[k]))
				;
			pid_t opid = atomic_load_explicit(&o->pid, memory_order_relaxed);
			if (failed && opid > 0 && !process_gone(opid))
				tell_owner(o, opid, dev, ino, failed); /* its promise was that sync's too */
		}
		atomic_fetch_add_explicit(&stat_foreign_syncs, 1, memory_order_relaxed);
		waited = true;
		/* Numbers are domain-wide and only grow: a slot reused meanwhile
		 * has a larger one, still pending. */
		uint64_t old = atomic_load(&sl->durable);
		while (old < acked && !atomic_compare_exchange_weak(&sl->durable, &old, acked))
			;
		if (gone) { /* its owner will never release it */
			lock_domain();
			if (order_dom == d && atomic_load(&sl->used) &&
			    atomic_load_explicit(&sl->pid, memory_order_relaxed) == pid)
				free_slot_locked(i);
			publish_locked();
			unlock_domain();
		}
	}
	overflow = atomic_load(&d->overflow) > 0;
	domain_unuse();
	if (overflow)
		LIBC(sync)(); /* a pending file somewhere found no slot, not even an overflow slot */
	return waited || overflow;
}

#define WAIT_BATCH 64

/* Make every pending file but self durable as of now: this process's
 * through their flushers, the domain's other processes' from here. */
static void wait_for_others(struct shim_file *self, int own_fd, struct write_view *w)
{
	TEST_POINT("order"); /* a handler here waits like any write */
	bool waited = wait_for_other_processes(own_fd, w);
	{
		struct shim_file *batch[WAIT_BATCH];
		int n = 0;
		bool more = false;
		shim_enter();
		pthread_mutex_lock(&order_mu);
		for (struct shim_file *g = pending_head; g; g = g->ord.next) {
			if (g == self)
				continue;
			if (n == WAIT_BATCH) {
				more = true;
				break;
			}
			if (file_tryref(g))
				batch[n++] = g;
		}
		pthread_mutex_unlock(&order_mu);
		shim_leave();
		/* Each file's requests as of now; the flusher threads sync them
		 * side by side while this thread sleeps. */
		uint64_t target[WAIT_BATCH];
		for (int i = 0; i < n; i++) {
			target[i] = flusher_requested(batch[i]);
			if (workers_force(batch[i]))
				workers_schedule(batch[i], true);
		}
		for (int i = 0; i < n; i++) {
			flusher_await(batch[i], target[i]); /* an error stays the file's own */
			order_synced(batch[i]);
			file_put(batch[i]);
		}
		if (more) /* more pending files than a batch: all of them, as sync() does */
			flusher_flush_all();
		if (waited || n > 0 || more)
			atomic_fetch_add_explicit(&stat_waits_other, 1, memory_order_relaxed);
		return;
	}
}

/* Largest overlap compared byte for byte; a bigger overwrite waits. */
#define COMPARE_MAX (64 * 1024)
#define COMPARE_CHUNK 4096

static bool all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Bytes [pos, pos + n) of buf are what the file holds there, or lie past
 * its end (a short read: forward), or, from the first byte that differs
 * (*filling: met before) to the end of the write, fill bytes the file
 * holds as zeros: 1; they differ otherwise: 0; the descriptor cannot be
 * read (O_WRONLY): -1. *end: set once the end of the file is met. One
 * pread per 4 KiB, no fstat.
 *
 * Filling zeros is forward for the same reason a write past the highest
 * byte is: a log's last page rewritten with the same records and more
 * where it ended in zeros (PostgreSQL's partial WAL page, on every flush:
 * 366 such waits in 775 pgbench transactions while it waited; test_order's
 * a_last_page_rewritten_with_more_records_where_it_held_zeros_does_not_wait) changes no record
 * its reader could have read; on the disk before the records promised
 * ahead of it, it is past the end the reader stops at. Every byte of the
 * file from the first difference to the write's end must be zero, so a
 * write that changes a byte of data anywhere (a page header, a counter
 * followed by data) is an overwrite, as before. */
static int same_bytes(int fd, off_t pos, const char *buf, size_t n, bool *end, size_t *budget, size_t *matched,
		      bool *filling)
{
	char have[COMPARE_CHUNK];
	while (n && !*end) {
		size_t len = n < sizeof(have) ? n : sizeof(have);
		if (len > *budget)
			return 0;
		*budget -= len;
		atomic_fetch_add_explicit(&stat_checks_asked, 1, memory_order_relaxed);
		ssize_t got = LIBC(pread)(fd, have, len, pos);
		if (got < 0)
			return -1;
		if (*filling) {
			if (!all_zero(have, (size_t)got))
				return 0;
		} else if (memcmp(have, buf, (size_t)got) != 0) {
			size_t d = 0;
			while (have[d] == buf[d])
				d++;
			if (!all_zero(have + d, (size_t)got - d))
				return 0;
			*filling = true;
		}
		if ((size_t)got < len) /* the end of the file: the rest is forward */
			*end = true;
		*matched += (size_t)got;
		pos += got;
		buf += got;
		n -= (size_t)got;
	}
	return 1;
}

/* Without reading: the write at pos starts past the file's end. */
static bool past_the_end(int fd, off_t pos)
{
	struct stat st;
	atomic_fetch_add_explicit(&stat_checks_asked, 1, memory_order_relaxed);
	return LIBC(fstat)(fd, &st) == 0 && pos >= st.st_size;
}

/*
 * Rewrite runs. A file rewritten in place in order (KahaDB's
 * DiskBenchmark: seek, 4 KiB write, force, over and over from the start of
 * a preallocated file) goes back at each wrap, so until a real sync that
 * began after it completes, every write is below the file's highest byte
 * and is compared (up to max_delay_ms of writes, plus that sync's own
 * time): one pread each, on this VM as much as the write itself (test_order's
 * an_identical_rewrite_run_reads_the_file_once_a_span holds the runs). So
 * once a write found identical is followed by one starting exactly where
 * it ended, the next RUN_SPAN bytes are read in one pread into a run
 * buffer, and the run's next writes are compared against that copy.
 *
 * The copy stands for the file's bytes only while nothing can have
 * changed them since it was read, which is what the checks below keep:
 *   - every write of this process to the file while it is listed passes
 *     through order_write_slow (its summary is not zero), and every write
 *     counts its bytes (risk_written) after it returns: the copy is used
 *     only while that count is what it was after the run's last write,
 *     and only for the write starting where that one ended;
 *   - ftruncate and fallocate (order_before_change), a change of listing
 *     (while not listed its writes skip this module), a sendfile or splice
 *     into it, io_uring, and a shared mapping of it (bytes changed with no
 *     call at all) bump run_gen or stop runs: the copy is dropped;
 *   - only in a process that has not forked and is no fork child (alone
 *     in its domain: the PostgreSQL shape, where several processes write
 *     one file, never uses a run), and only while this file is the one
 *     pending file.
 * A write judged identical from the copy is then judged exactly as the
 * pread check judges it, against the same bytes: the copy is the file as
 * of the run's last write, which that write did not change. What neither
 * sees is another program (outside the domain, which the promise does not
 * cover) writing the same bytes between the read and the write: the pread
 * check has that window for one write, a run for the writes of one span.
 * A buffer is taken with a try-lock; a contended one means the plain
 * check. Async-signal-safe: no allocation, no lock waited for.
 */
#define RUN_SPAN (64 * 1024)
#define RUN_BUFFERS 2

struct rewrite_run {
	_Atomic int busy;
	struct shim_file *f;    /* busy held: the file the copy is of (never dereferenced) */
	uint64_t gen;           /* its run_gen when read */
	uint64_t written;       /* its bytes written as they must be at the next use */
	uint64_t start, len;    /* the copy holds [start, start + len) */
	uint64_t next;          /* where the run's next write must start */
	char buf[RUN_SPAN];
};

static struct rewrite_run runs[RUN_BUFFERS];
static _Atomic int runs_stopped;
static _Atomic uint64_t run_epoch; /* run_gen values, never reused by another file object */

static void runs_forget(struct shim_file *f)
{
	/* A value no copy holds: a file object recycled for another file
	 * never matches its predecessor's copy. */
	atomic_store(&f->ord.run_gen, atomic_fetch_add(&run_epoch, 1) + 1);
}

void order_bytes_unseen(struct shim_file *f)
{
	if (f)
		runs_forget(f);
	else
		atomic_store(&runs_stopped, 1);
}

/*
 * Past the known end. While the file's size is not known (the first
 * round after an open: where the last write before it ended is not
 * known) or a write went back (two threads' reserved pwrites landing out
 * of order: the sync_writes -T 2 loop), every write is compared with a
 * pread, and on a write-only descriptor the pread fails and a write below
 * the size waits for a real sync. Most of those
 * writes only extend the file, which the compare would find out the long
 * way: it reads nothing past the end (a short read is forward), and zeros
 * where a write skipped over bytes (filling zeros is forward). So:
 *   - known_end: the highest end of this process's writes to the file and
 *     its size as an fstat saw it once (sized): no byte at or past it is
 *     anything but zeros. A write at or past it is forward, with no system
 *     call. It is raised by every write (order_after_write, before the
 *     write returns, so before any sync that promises its bytes can be
 *     answered) and never lowered; lost for good (ORDER_END_LOST) when a
 *     write lands where the shim cannot say (a position not followed,
 *     O_APPEND, a ring), bytes change unseen (sendfile, splice, a raw
 *     system call, a write the shim passes by while busy), fallocate
 *     moves bytes, or the file's writes stop being counted. Truncation
 *     needs nothing: a shrunk file or one grown with zeros keeps the rule
 *     true. Not used after a fork, with a shared mapping, or once bytes
 *     changed unseen anywhere (runs_stopped): the same conditions as
 *     rewrite runs.
 *   - hole: a write that began past known_end skipped [known_end, off),
 *     zeros. A later write inside it is forward (one thread's reserved
 *     block landing after the next one's), and shrinks it: what it wrote
 *     is no longer zeros. Under concurrent writers a hole must never
 *     cover bytes a write has already put there: the extending write E
 *     reads fills, raises known_end, installs the hole, then reads fills
 *     again and takes the hole back if it moved; a write W that began
 *     below known_end raises known_end to its own end first, then bumps
 *     fills, then shrinks the hole if it overlaps. If W's raise came
 *     before E's, E's hole starts past W's end; otherwise W's fills bump
 *     comes after E read fills, so either E sees it (and takes the hole
 *     back) or W sees E's hole (and shrinks it). In between the hole may
 *     cover W's bytes, but W has not returned: no sync promises them yet.
 * The scope is the same as the highest-byte rule's: this process's writes
 * through calls the shim sees.
 */
void order_end_filled(struct order_link *ord, uint64_t off, uint64_t end)
{
	uint64_t ke = atomic_load(&ord->known_end);
	while (end > ke && ke != ORDER_END_LOST && !atomic_compare_exchange_weak(&ord->known_end, &ke, end))
		;
	atomic_fetch_add(&ord->fills, 1);
	uint64_t h = atomic_load(&ord->hole);
	for (;;) {
		if (!h)
			return;
		uint64_t lo = h & ((1ull << ORDER_HOLE_LO_BITS) - 1), hi = lo + (h >> ORDER_HOLE_LO_BITS), nh;
		if (end <= lo || off >= hi)
			return; /* not in it */
		if (off <= lo)
			nh = end >= hi ? 0 : (hi - end) << ORDER_HOLE_LO_BITS | end;
		else /* what is left below it (above it is let go) */
			nh = (off - lo) << ORDER_HOLE_LO_BITS | lo;
		if (atomic_compare_exchange_weak(&ord->hole, &h, nh))
			return;
	}
}

void order_end_skipped(struct order_link *ord, uint64_t lo, uint64_t hi, uint64_t fills0)
{
	if (hi - lo > ORDER_HOLE_LEN_MAX || hi >= 1ull << ORDER_HOLE_LO_BITS)
		return; /* not kept; an older hole stays true */
	uint64_t h = atomic_load(&ord->hole), nh = (hi - lo) << ORDER_HOLE_LO_BITS | lo;
	if (!atomic_compare_exchange_strong(&ord->hole, &h, nh))
		return; /* another writer is at it: no hole (the plain check decides) */
	if (atomic_load(&ord->fills) != fills0)
		atomic_compare_exchange_strong(&ord->hole, &nh, 0); /* a write below may be in it */
}

/* The write [pos, pos + n) lands where the file holds nothing but zeros
 * by the known end (above): forward, as the compare would find. The
 * first time, the file's size from an fstat. */
static bool lands_past_known_end(struct write_view *w, uint64_t pos, uint64_t n)
{
	struct order_link *o = &w->f->ord;
	if (atomic_load(&runs_stopped) || atomic_load(&o->mapped))
		return false;
	if (!atomic_load(&o->sized)) {
		struct stat st;
		atomic_fetch_add_explicit(&stat_checks_asked, 1, memory_order_relaxed);
		if (LIBC(fstat)(w->fd, &st) != 0)
			return false;
		store_max_below_lost(&o->known_end, (uint64_t)st.st_size);
		atomic_store(&o->sized, 1); /* after the raise: a hole's writer that sees it sees that */
	}
	uint64_t ke = atomic_load(&o->known_end);
	if (ke == ORDER_END_LOST)
		return false;
	if (pos >= ke)
		return true;
	uint64_t h = atomic_load(&o->hole);
	uint64_t lo = h & ((1ull << ORDER_HOLE_LO_BITS) - 1), len = h >> ORDER_HOLE_LO_BITS;
	return n && len && pos >= lo && pos + n <= lo + len;
}

void order_file_mapped(struct shim_file *f)
{
	atomic_store(&f->ord.mapped, 1);
}

/* Once per kind of path, when it changes a file whose changes keep an
 * order while another file's acknowledged sync is not durable yet (the
 * change may then reach the disk ahead of it): the path is a stated limit
 * (GUARANTEES "Not ordered"), and a user reads it in the run's own
 * messages, not only there. */
void order_unordered_path(struct shim_file *f, const char *what)
{
	static _Atomic(const char *) said[4];
	uint64_t s = atomic_load_explicit(&order_dom->summary, memory_order_relaxed);
	uint32_t slot = atomic_load_explicit(&f->ord.slot, memory_order_relaxed);
	bool only_self = (s >> 32) == 1 && slot && (uint32_t)s == slot;
	if (!s || only_self || ordering_off() || !(file_write_work(f) & WRITES_ORDERED))
		return;
	for (int i = 0; i < 4; i++) {
		const char *s = atomic_load(&said[i]);
		if (s == what)
			return;
		if (!s && atomic_compare_exchange_strong(&said[i], &s, what)) {
			shim_say("ordered defer: %s are not ordered (first seen on %s); what they change may reach the "
				 "disk ahead of syncs the program was told are done",
				 what, f->path ? f->path : "?");
			return;
		}
		if (s == what)
			return;
	}
}

void order_fd_bytes_unseen(int fd)
{
	uint32_t st;
	struct shim_file *f = fd_peek(fd, &st);
	if (f) {
		order_bytes_unseen(f);
		atomic_store(&f->ord.known_end, ORDER_END_LOST); /* where they went is not known */
		atomic_store(&f->ord.prev_end, UINT64_MAX);
		atomic_store(&f->ord.durable_end, UINT64_MAX);
	}
}

/* The write of n bytes (iov) at pos to f, through fd, compared against f's
 * run buffer: 1 identical (or past the end), 0 it differs, -1 no run here
 * (the plain check decides). */
static int run_compare(struct shim_file *f, int fd, uint64_t pos, const struct iovec *iov, int cnt, size_t n)
{
	if (n == 0 || n > RUN_SPAN / 4 || atomic_load(&runs_stopped) || atomic_load(&f->ord.mapped) ||
	    atomic_load_explicit(&f->ord.rewrite_end, memory_order_relaxed) != pos)
		return -1;
	struct rewrite_run *r = &runs[((uintptr_t)f >> 8) % RUN_BUFFERS];
	if (atomic_exchange_explicit(&r->busy, 1, memory_order_acquire))
		return -1;
	uint64_t gen = atomic_load(&f->ord.run_gen), written = risk_written(&f->risk);
	if (r->f != f || r->gen != gen || r->written != written || r->next != pos || pos < r->start ||
	    pos + n > r->start + r->len) {
		/* (Re)read the run's next RUN_SPAN bytes; a short read is the end of
		 * the file, past which a write is forward. */
		atomic_fetch_add_explicit(&stat_checks_asked, 1, memory_order_relaxed);
		ssize_t got = LIBC(pread)(fd, r->buf, RUN_SPAN, (off_t)pos);
		if (got < 0) {
			r->f = NULL;
			atomic_store_explicit(&r->busy, 0, memory_order_release);
			return -1;
		}
		r->f = f;
		r->gen = gen;
		r->start = pos;
		r->len = (uint64_t)got;
	}
	int same = 1;
	uint64_t at = pos - r->start;
	for (int i = 0; i < cnt && same; i++) {
		size_t len = iov[i].iov_len;
		size_t have = at >= r->len ? 0 : (size_t)(r->len - at);
		if (memcmp(r->buf + at, iov[i].iov_base, len < have ? len : have) != 0)
			same = 0;
		at += len;
	}
	if (same) {
		r->next = pos + n;
		r->written = written + n; /* this write's own bytes, counted when it returns */
	} else {
		r->f = NULL;
	}
	atomic_store_explicit(&r->busy, 0, memory_order_release);
	return same;
}

/* The view's position: resolved once (the kernel asked when the slot's
 * mark does not know it). -1: not known. */
static off_t view_pos(struct write_view *w)
{
	if (w->pos == -2) {
		w->pos = w->off;
		if (w->pos < 0) { /* the position, from the kernel (position.h: not known here) */
			atomic_fetch_add_explicit(&stat_checks_asked, 1, memory_order_relaxed);
			w->pos = LIBC(lseek)(w->fd, 0, SEEK_CUR);
			if (w->pos < 0)
				w->pos = -1;
		}
	}
	return w->pos;
}

/* The view's bytes below limit (UINT64_MAX: all of them) change what the
 * file holds (compared once for a limit). */
static bool view_changes_bytes(struct write_view *w, uint64_t limit)
{
	if (w->changes >= 0 && w->changes_below == limit)
		return w->changes;
	off_t pos = view_pos(w);
	bool changes = true;
	if (pos < 0) {
		changes = true;
	} else if (!w->iov) { /* copy_file_range: the bytes are not ours to compare; only past the end is forward */
		changes = !past_the_end(w->fd, pos);
	} else {
		size_t budget = COMPARE_MAX, matched = 0;
		bool end = false, filling = false;
		off_t at = pos;
		changes = false;
		for (int i = 0; i < w->cnt && !end && (uint64_t)at < limit; i++) {
			size_t len = w->iov[i].iov_len;
			if ((uint64_t)at + len > limit) /* the rest is past every promised byte: forward */
				len = (size_t)(limit - (uint64_t)at);
			int one = same_bytes(w->fd, at, w->iov[i].iov_base, len, &end, &budget, &matched, &filling);
			if (one < 0 && i == 0 && !matched && past_the_end(w->fd, at))
				break; /* unreadable (O_WRONLY), but past every byte the file has */
			if (one <= 0) {
				changes = true;
				if (w->off < 0) {
					int fl = LIBC(fcntl)(w->fd, F_GETFL);
					if (fl >= 0 && (fl & O_APPEND))
						changes = false; /* lands at the end whatever the position says */
				}
				break;
			}
			at += (off_t)w->iov[i].iov_len;
		}
	}
	w->changes = changes;
	w->changes_below = limit;
	return changes;
}

/* The view may change bytes below hi (no byte at or past it was promised:
 * same_file_hi, or another process's slot's). */
static bool view_changes_below(struct write_view *w, uint64_t hi)
{
	if (w->off == ORDER_AT_END)
		return false; /* forward: past every byte the file has */
	if (w->off >= 0 && hi != UINT64_MAX && (uint64_t)w->off >= hi)
		return false; /* forward: past every byte written since the file was last durable */
	off_t pos = view_pos(w);
	if (pos < 0)
		return true;
	if (hi != UINT64_MAX && (uint64_t)pos >= hi)
		return false;
	return view_changes_bytes(w, hi);
}

/*
 * Tail rewrites. A log that ends each record with an end marker rewrites
 * the marker with the next record and goes on past it (KahaDB's journal:
 * every batch starts 5 bytes before the end of the one before, over its
 * end-of-file marker). The marker is promised by the acknowledged sync,
 * so without this rule every batch waits for its own file's real sync:
 * one per message, as without the shim. The write is as safe as a
 * forward one when
 *   - the file's writes went forward since it was last durable (the
 *     highest byte is known: same_file_hi) and so did the ones the last
 *     completed real sync covered, and it begins at or past where those
 *     ended (durable_end): it changes nothing of the durable log, only
 *     bytes written since, over what followed the log's end when it was
 *     durable (the forward rule's premise), and
 *   - it reaches the highest byte promised: every promised byte it does
 *     not rewrite lies below it.
 * A cut may then find it on the disk while promised bytes below it are
 * not; a reader going forward stops at those first, as at a log's torn
 * tail, before the rewrite; with them all there, the disk holds the
 * promised records and then the rewrite, torn or whole: a crash during
 * the rewrite without the shim. A write that ends short of the highest
 * byte (a flag set in an earlier record while later ones are promised)
 * is judged as before: it would claim what is not durable.
 */
static bool rewrites_the_tail(struct write_view *w, uint64_t hi, uint64_t pos, uint64_t n)
{
	struct order_link *o = &w->f->ord;
	if (!w->iov || atomic_load(&runs_stopped) || atomic_load(&o->mapped))
		return false;
	uint64_t end = atomic_load(&o->durable_end);
	/* An end or a highest byte not known (UINT64_MAX) is never reached. */
	return pos >= end && pos + n >= hi;
}

/* The write changes bytes an acknowledged sync of its file promised and
 * has not made durable. run: f is the domain's only pending file (rewrite
 * runs). */
static bool changes_promised_bytes(struct write_view *w, bool run)
{
	struct shim_file *f = w->f;
	uint64_t hi = same_file_hi(f);
	if (w->off == ORDER_AT_END || (w->off >= 0 && hi != UINT64_MAX && (uint64_t)w->off >= hi))
		return false;
	off_t pos = view_pos(w);
	if (pos < 0)
		return true;
	if (hi != UINT64_MAX && (uint64_t)pos >= hi)
		return false;
	size_t total = 0;
	for (int i = 0; w->iov && i < w->cnt; i++)
		total += w->iov[i].iov_len;
	if (lands_past_known_end(w, (uint64_t)pos, total))
		return false; /* extends the file or fills a hole it left: forward */
	if (rewrites_the_tail(w, hi, (uint64_t)pos, total)) {
		atomic_fetch_add_explicit(&stat_tail_rewrites, 1, memory_order_relaxed);
		return false;
	}
	/* A run judges identical bytes only; anything else, the plain check. */
	if (!(run && w->iov && w->changes < 0 && run_compare(f, w->fd, (uint64_t)pos, w->iov, w->cnt, total) == 1) &&
	    view_changes_bytes(w, hi))
		return true;
	/* Identical bytes, zeros filled, or past the end: costs no sync, not
	 * even an early one (PostgreSQL's rewritten WAL page; test_order's
	 * same_file_overwrite_waits_identical_rewrite_does_not). */
	if (w->iov)
		atomic_store_explicit(&f->ord.rewrite_end, (uint64_t)pos + total, memory_order_relaxed);
	return false;
}

/* This process's pending files but f, each with a reference and its
 * requests as of now (what a change of f depends on): how many, or -1
 * when there are more than max (the change waits instead). */
static int collect_others(struct shim_file *f, struct held_dep *deps, int max)
{
	int n = 0;
	bool more = false;
	shim_enter();
	pthread_mutex_lock(&order_mu);
	for (struct shim_file *g = pending_head; g; g = g->ord.next) {
		if (g == f)
			continue;
		uint64_t target = flusher_requested(g);
		if (atomic_load(&g->fl.done_seq) >= target)
			continue; /* durable already */
		if (n == max) {
			more = true;
			break;
		}
		if (file_tryref(g))
			deps[n++] = (struct held_dep){ g, target };
	}
	pthread_mutex_unlock(&order_mu);
	shim_leave();
	if (more) {
		for (int i = 0; i < n; i++)
			file_put(deps[i].g);
		return -1;
	}
	return n;
}

/* A write at the position about to be held: its bytes' room in the
 * kernel's position first (order_before_write's moved_to). The mark said
 * w->off; the kernel says where the bytes go: another caller that wrote
 * or moved the position since the mark was read (a thread, a handler run
 * here) moved it. Then they land there, and f's own bytes are followed
 * as for any write over promised ones. false: the position cannot be
 * asked (nothing moved; the write is not held). */
static bool take_position(struct write_view *w, size_t total, uint64_t *self, bool fheld, off_t *moved_to)
{
	TEST_POINT("held_position");
	off_t end = LIBC(lseek)(w->fd, (off_t)total, SEEK_CUR);
	if (end < 0 || (uint64_t)end < total)
		return false;
	*moved_to = end - (off_t)total;
	if (*moved_to == w->off)
		return true;
	atomic_fetch_add_explicit(&stat_position_moved, 1, memory_order_relaxed);
	w->off = w->pos = *moved_to;
	w->changes = -1;
	if (!fheld && atomic_load(&w->f->ord.listed))
		*self = order_self_target(w->f); /* judged for other bytes: the safe side */
	return true;
}

/* Instead of waiting: the write is held (held.c) with what it would have
 * waited for. true: held. */
static bool try_hold(struct write_view *w, bool others, bool only_self, off_t *moved_to)
{
	struct shim_file *f = w->f;
	if (w->off < 0)
		return false; /* where it lands is not known for sure */
	size_t total = 0;
	for (int i = 0; i < w->cnt; i++)
		total += w->iov[i].iov_len;
	/* At most one other file to wait for. Holding moves the wait from
	 * the writer to whoever later needs this file's syncs (they cover
	 * nothing past a held write until it is applied): that pays for a
	 * program moving between two files (a redo log and a binlog, a WAL
	 * and its database), whose next steps go on meanwhile; a write that
	 * must follow several files at once (threads each with files of
	 * their own) would chain them all behind one another, where waiting
	 * syncs them side by side. */
	struct held_dep deps[HELD_DEPS_MAX];
	int nd = others ? collect_others(f, deps, 1) : 0;
	if (nd < 0)
		return false;
	/* Once f holds a change, every later write of it is held behind it
	 * (a file's writes reach the kernel in the order made); the applier
	 * thread alone applies them, never this write's path. */
	bool fheld = held_count(&f->hold) > 0;
	uint64_t self = 0;
	if (!fheld && atomic_load(&f->ord.listed) && changes_promised_bytes(w, only_self))
		self = order_self_target(f);
	if (!nd && !self && !fheld)
		return false; /* nothing to wait for: the write goes straight on */
	if (moved_to && !take_position(w, total, &self, fheld, moved_to)) {
		for (int i = 0; i < nd; i++)
			file_put(deps[i].g);
		return false;
	}
	if (held_hold(f, w->fd, (uint64_t)w->off, w->iov, w->cnt, total, deps, nd, self)) {
		atomic_fetch_add_explicit(nd || self ? &stat_held_ordered : &stat_held_behind, 1, memory_order_relaxed);
		return true;
	}
	for (int i = 0; i < nd; i++)
		file_put(deps[i].g);
	return false;
}

/* The write has something to follow: it waits, or is held (true). Out of
 * line, so the cheap answers of order_write_slow pay for no frame. */
static __attribute__((noinline)) bool wait_or_hold(struct shim_file *f, int fd, off_t off, const struct iovec *iov,
						   int cnt, bool holdable, bool others, bool only_self,
						   off_t *moved_to)
{
	if (!file_tryref(f)) /* the write path holds none: a close may be recycling it */
		return false;
	int e = errno;
	struct write_view w = { f, fd, off, iov, cnt, -2, -1, 0 };
	bool held = holdable && iov && !ordering_off() && held_allowed() && try_hold(&w, others, only_self, moved_to);
	if (!held) {
		if (held_count(&f->hold))
			held_apply_file(f); /* its held writes reach the kernel first */
		if (others)
			wait_for_others(f, fd, &w);
		if (atomic_load(&f->ord.listed) && changes_promised_bytes(&w, only_self)) {
			atomic_fetch_add_explicit(&stat_waits_self, 1, memory_order_relaxed);
			flusher_await(f, flusher_requested(f));
			order_synced(f);
		}
	}
	file_put(f);
	errno = e;
	return held;
}

bool order_write_slow(struct shim_file *f, int fd, uint64_t summary, off_t off, const struct iovec *iov, int cnt,
		      bool holdable, off_t *moved_to)
{
	/* A hint, confirmed by listed: the slot may be changing meanwhile. */
	uint32_t slot = atomic_load_explicit(&f->ord.slot, memory_order_relaxed);
	bool only_self = (summary >> 32) == 1 && slot && (uint32_t)summary == slot && atomic_load(&f->ord.listed);
	bool others = (file_write_work(f) & WRITES_ORDERED) && !only_self;
	bool fheld = held_count(&f->hold) > 0;
	if (!others && !fheld) {
		if (!atomic_load(&f->ord.listed))
			return false;
		/* An append with only its own file to follow and nothing of it
		 * held: forward of every byte promised (changes_promised_bytes),
		 * so it neither waits nor is held. A journal's every write, with
		 * its own sync pending. */
		if (off == ORDER_AT_END)
			return false;
	}
	return wait_or_hold(f, fd, off, iov, cnt, holdable, others, only_self, moved_to);
}

void order_before_change(struct shim_file *f)
{
	uint64_t s = atomic_load_explicit(&order_dom->summary, memory_order_relaxed);
	if (likely(s == 0))
		return;
	int e = errno;
	if (f) /* ftruncate, fallocate: not a write a rewrite run could see */
		order_bytes_unseen(f);
	if (f && held_count(&f->hold))
		held_apply_file(f); /* after its held writes, as the program made them */
	if (!f || (file_write_work(f) & WRITES_ORDERED))
		wait_for_others(f, -1, NULL);
	if (f && atomic_load(&f->ord.listed)) {
		atomic_fetch_add_explicit(&stat_waits_self, 1, memory_order_relaxed);
		flusher_await(f, flusher_requested(f));
		order_synced(f);
	}
	errno = e;
}

void order_before_fd_change(int fd)
{
	if (likely(atomic_load_explicit(&order_dom->summary, memory_order_relaxed) == 0) || shim_bypass())
		return; /* nothing to wait for, or the shim's own call (a preload beneath it writing its log) */
	uint32_t st;
	struct shim_file *f = fd_peek(fd, &st);
	if (!f || !file_tryref(f))
		return; /* not a file the shim tracks (a socket, a pipe): nothing to order */
	order_before_change(f);
	file_put(f);
}

void order_before_names(void)
{
	if (likely(atomic_load_explicit(&order_dom->summary, memory_order_relaxed) == 0))
		return;
	int e = errno;
	wait_for_others(NULL, -1, NULL);
	errno = e;
}

/* A parent's pending file is not the child's: its references were the
 * parent's list's, and its slot stays the parent's (the domain is shared:
 * the child waits for the parent's acknowledged syncs like any other
 * process's). Each is unmarked without walking the list, which a parent
 * thread may have been changing. */
static void forget_in_child(struct shim_file *f, void *arg)
{
	(void)arg;
	if (atomic_load(&f->ord.listed)) {
		atomic_store(&f->ord.listed, 0);
		atomic_fetch_sub(&f->refs, 1);
	}
	atomic_store_explicit(&f->ord.slot, 0, memory_order_relaxed);
	f->ord.next = NULL;
}

void order_atfork_child(void)
{
	atomic_store(&stat_waits_other, 0); /* the parent's are the parent's to report */
	atomic_store(&stat_waits_self, 0);
	atomic_store(&stat_foreign_syncs, 0);
	atomic_store(&stat_checks_asked, 0);
	atomic_store(&stat_held_ordered, 0);
	atomic_store(&stat_held_behind, 0);
	atomic_store(&stat_tail_rewrites, 0);
	atomic_store(&stat_position_moved, 0);
	atomic_store(&held_here, 0);
	atomic_store(&domain_users, 0);
	fork_child = true;
	atomic_store(&domain_shared, order_dom != &local_domain);
	pthread_mutex_init(&order_mu, NULL);
	pending_head = NULL;
	if (order_dom == &local_domain) {
		domain_mutex_init(&local_domain.mu, false);
		memset(local_domain.slots, 0, sizeof(local_domain.slots));
		atomic_store(&local_domain.overflow, 0);
		local_domain.nused = local_domain.xor_used = local_domain.hint = 0;
		atomic_store(&local_domain.summary, 0);
	}
	registry_each(forget_in_child, NULL);
}

/* SYNCSHIM_TEST_ORDER_STATS=FILE: at exit, append one line of this
 * process's counts to FILE (the benchmark's waits per second). */
__attribute__((destructor)) static void report_order_stats(void)
{
	struct held_stats hs;
	held_stats_read(&hs);
	shim_test_report("SYNCSHIM_TEST_ORDER_STATS",
			 "order: pid=%d waits_other=%llu waits_self=%llu foreign_syncs=%llu checks_asked=%llu "
			 "held=%llu held_behind=%llu held_bytes=%llu apply_rounds=%llu read_waits=%llu bound_waits=%llu "
			 "tail_rewrites=%llu position_moved=%llu\n",
			 (int)getpid(), (unsigned long long)atomic_load(&stat_waits_other),
			 (unsigned long long)atomic_load(&stat_waits_self),
			 (unsigned long long)atomic_load(&stat_foreign_syncs),
			 (unsigned long long)atomic_load(&stat_checks_asked),
			 (unsigned long long)atomic_load(&stat_held_ordered),
			 (unsigned long long)atomic_load(&stat_held_behind), (unsigned long long)hs.held_bytes,
			 (unsigned long long)hs.applied_rounds, (unsigned long long)hs.read_waits,
			 (unsigned long long)hs.bound_waits, (unsigned long long)atomic_load(&stat_tail_rewrites),
			 (unsigned long long)atomic_load(&stat_position_moved));
}
