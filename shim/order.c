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
 *     sync has covered yet is "pending": linked on one list (the order
 *     lock) holding a reference, and counted in order_summary, one word
 *     the write path loads: (count << 32 | the one pending file's id).
 *     A file joins when its deferred sync is answered (order_acked, from
 *     defer_request, after the request is numbered) and leaves when a real
 *     sync that covers its last request ends (order_synced). The numbers
 *     are the flusher's own request numbers (req_seq, done_seq): no second
 *     sequence to keep in step.
 *   - Cross-file order. A change of file F (a write, copy_file_range,
 *     ftruncate, fallocate) with order = domain waits, when another file
 *     is pending, until that file's requests as of now are durable: it
 *     leads (or joins) the real sync itself through flusher_drain, as the
 *     rename barrier does, after asking the flusher threads to hurry the
 *     others (several pending files are synced in parallel). A change of
 *     names (rename, link, unlink, truncate by path) waits for every
 *     pending file. So the wait is one real sync and happens only when
 *     the program moves from a file with an owed sync to another one; a
 *     single-file program never waits for another file.
 *   - Same-file order. A write to F while F itself is pending waits for
 *     F's sync only if it changes bytes the file already holds: past the
 *     end it is forward (a log's next record), and over existing bytes
 *     with the same content (PostgreSQL rewriting its last partial WAL
 *     page) it changes nothing. The check costs fstat (and lseek for a
 *     write at the descriptor's position), and a pread of the overlap only
 *     when the write lands on existing bytes.
 *   - Errors. A real sync that fails still ends the wait: its error is
 *     sticky for its own file, reported by that file's next fsync or
 *     close, as every deferred sync error is; the waiting call is not
 *     failed for another file's error.
 *   - Lock order: the order lock is a leaf: under it only atomics and
 *     file_tryref. A file's reference is dropped (file_put, which may take
 *     the registry lock) after it is released. The wait itself holds no
 *     lock of this module; flusher_drain takes the file's own. Everything
 *     that locks runs with shim_busy raised, so a signal handler that
 *     interrupts it passes through, and the flusher threads (shim_busy
 *     always) and a leader's own real sync never wait for order.
 *   - fork: the child's flusher owns none of the parent's pending syncs
 *     (flusher_atfork_child), so its list starts empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flusher.h"
#include "order.h"
#include "workers.h"

_Atomic uint64_t order_summary;

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *pending_head; /* order_mu */
static uint32_t pending_n;             /* order_mu */

/* SYNCSHIM_TEST_NO_ORDER=1: defer as it was before ordering, for the
 * benchmark's baseline and the tests that show what ordering prevents. */
static _Atomic int order_off = -1;

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

void order_reset(struct shim_file *f)
{
	atomic_store(&f->ord.listed, 0);
	atomic_store(&f->ord.hi_seq, 0);
	atomic_store(&f->ord.cur_hi, 0);
	atomic_store(&f->ord.prev_hi, 0);
	f->ord.next = NULL;
}

static void store_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t old = atomic_load(p);
	while (v > old && !atomic_compare_exchange_weak(p, &old, v))
		;
}

/* The writes since the last real sync began move to the round that sync
 * covers; a reader (same_file_hi) sees them in one or the other. */
void order_sync_begins(struct shim_file *f)
{
	atomic_fetch_add(&f->ord.hi_seq, 1);
	store_max(&f->ord.prev_hi, atomic_exchange(&f->ord.cur_hi, 0));
	atomic_fetch_add(&f->ord.hi_seq, 1);
}

void order_sync_ends(struct shim_file *f, bool happened)
{
	if (happened)
		atomic_store(&f->ord.prev_hi, 0);
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

/* order_mu held. The count goes up before a file is marked listed and
 * down after it is unmarked, so it is never below the marked files. */
static void publish_locked(void)
{
	uint64_t sole = pending_n == 1 ? pending_head->id : 0;
	atomic_store(&order_summary, (uint64_t)pending_n << 32 | sole);
}

void order_acked(struct shim_file *f)
{
	/* After req_seq's increment (sequentially consistent, as this load):
	 * either this sees the file listed, or order_synced's re-check after
	 * unmarking it sees the new request and keeps it. */
	if (atomic_load(&f->ord.listed) || ordering_off())
		return;
	shim_enter();
	pthread_mutex_lock(&order_mu);
	if (!atomic_load(&f->ord.listed) && file_tryref(f)) {
		f->ord.next = pending_head;
		pending_head = f;
		pending_n++;
		publish_locked();
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
	shim_enter();
	pthread_mutex_lock(&order_mu);
	if (atomic_load(&f->ord.listed)) {
		atomic_store(&f->ord.listed, 0);
		if (flusher_owes(f)) { /* an acknowledgement raced in: still pending */
			atomic_store(&f->ord.listed, 1);
		} else {
			for (struct shim_file **pp = &pending_head; *pp; pp = &(*pp)->ord.next)
				if (*pp == f) {
					*pp = f->ord.next;
					break;
				}
			f->ord.next = NULL;
			pending_n--;
			publish_locked();
			dropped = true;
		}
	}
	pthread_mutex_unlock(&order_mu);
	if (dropped)
		file_put(f);
	shim_leave();
}

#define WAIT_BATCH 64

/* Make every pending file but self durable as of now. */
static void wait_for_others(struct shim_file *self)
{
	TEST_POINT("order"); /* a handler here waits like any write */
	for (;;) {
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
		/* Several files: let the flusher threads sync them side by
		 * side while this thread leads or joins them one by one. */
		if (n > 1)
			for (int i = 0; i < n; i++)
				if (workers_force(batch[i]))
					workers_schedule(batch[i], true);
		for (int i = 0; i < n; i++) {
			flusher_drain(batch[i]); /* an error stays the file's own */
			order_synced(batch[i]);
			file_put(batch[i]);
		}
		shim_leave();
		if (!more)
			return;
	}
}

/* Largest overlap compared byte for byte; a bigger overwrite waits. */
#define COMPARE_MAX (64 * 1024)
#define COMPARE_CHUNK 4096

/* Bytes [pos, pos + n) of buf are what the file holds there (end: its
 * size). false when they differ or cannot be read (an O_WRONLY
 * descriptor): then it is an overwrite. */
static bool same_bytes(int fd, off_t pos, const char *buf, size_t n, off_t end, size_t *budget)
{
	char have[COMPARE_CHUNK];
	while (n && pos < end) {
		size_t len = n < sizeof(have) ? n : sizeof(have);
		if ((off_t)len > end - pos)
			len = (size_t)(end - pos);
		if (len > *budget)
			return false;
		*budget -= len;
		if (pread(fd, have, len, pos) != (ssize_t)len || memcmp(have, buf, len) != 0)
			return false;
		pos += (off_t)len;
		buf += len;
		n -= len;
	}
	return true;
}

/* The write of iov at off (-1: the position) to f changes bytes an
 * acknowledged sync of f promised and has not made durable. */
static bool changes_promised_bytes(struct shim_file *f, int fd, off_t off, const struct iovec *iov, int cnt)
{
	uint64_t hi = same_file_hi(f);
	if (off >= 0 && hi != UINT64_MAX && (uint64_t)off >= hi)
		return false; /* forward: past every byte written since the file was last durable */
	struct stat st;
	if (fstat(fd, &st) != 0)
		return true;
	off_t pos = off >= 0 ? off : lseek(fd, 0, SEEK_CUR);
	if (pos < 0)
		return true;
	if (pos >= st.st_size)
		return false; /* forward: past every byte the file has */
	if (off < 0) {
		int fl = LIBC(fcntl)(fd, F_GETFL);
		if (fl >= 0 && (fl & O_APPEND))
			return false; /* lands at the end whatever the position says */
	}
	if (!iov) /* copy_file_range: the bytes are not ours to compare */
		return true;
	size_t budget = COMPARE_MAX;
	for (int i = 0; i < cnt && pos < st.st_size; i++) {
		if (!same_bytes(fd, pos, iov[i].iov_base, iov[i].iov_len, st.st_size, &budget))
			return true;
		pos += (off_t)iov[i].iov_len;
	}
	return false;
}

void order_write_slow(struct shim_file *f, int fd, uint64_t summary, off_t off, const struct iovec *iov, int cnt)
{
	bool only_self = (summary >> 32) == 1 && (uint32_t)summary == f->id;
	bool others = (file_write_work(f) & WRITES_ORDERED) && !only_self;
	if (!others && !atomic_load(&f->ord.listed))
		return;
	if (!file_tryref(f)) /* the write path holds none: a close may be recycling it */
		return;
	int e = errno;
	if (others)
		wait_for_others(f);
	if (atomic_load(&f->ord.listed) && changes_promised_bytes(f, fd, off, iov, cnt)) {
		flusher_drain(f);
		order_synced(f);
	}
	file_put(f);
	errno = e;
}

void order_before_change(struct shim_file *f)
{
	uint64_t s = atomic_load_explicit(&order_summary, memory_order_relaxed);
	if (likely(s == 0))
		return;
	int e = errno;
	if (!f || (file_write_work(f) & WRITES_ORDERED))
		wait_for_others(f);
	if (f && atomic_load(&f->ord.listed)) {
		flusher_drain(f);
		order_synced(f);
	}
	errno = e;
}

void order_before_names(void)
{
	if (likely(atomic_load_explicit(&order_summary, memory_order_relaxed) == 0))
		return;
	int e = errno;
	wait_for_others(NULL);
	errno = e;
}

/* A parent's pending file is not the child's: its references were the
 * parent's list's. Each is unmarked without walking the list, which a
 * parent thread may have been changing. */
static void forget_in_child(struct shim_file *f, void *arg)
{
	(void)arg;
	if (atomic_load(&f->ord.listed)) {
		atomic_store(&f->ord.listed, 0);
		atomic_fetch_sub(&f->refs, 1);
	}
	f->ord.next = NULL;
}

void order_atfork_child(void)
{
	pthread_mutex_init(&order_mu, NULL);
	pending_head = NULL;
	pending_n = 0;
	atomic_store(&order_summary, 0);
	registry_each(forget_in_child, NULL);
}
