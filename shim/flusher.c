/*
 * flusher.c - deferred and group-commit syncs, and the flusher threads.
 *
 * Every file carries its own flusher state (struct flusher in shim.h):
 * numbered requests, the number covered by the last completed real sync,
 * and whether a real sync is running. Whoever needs a sync and finds none
 * running leads one: a group caller, a barrier (rename, close, exec, exit)
 * or a flusher thread acting on a deferred file's deadline. Everyone else
 * waits for the running one and, if it started too early to cover them,
 * for the next. So one file never has two real syncs in flight, and a
 * slow file blocks only its own callers.
 *
 * Flusher threads are a small pool shared by all deferred files: spawned
 * on demand up to max_flushers, each takes the most overdue file, and
 * retires after an idle spell. A file with work is handed to them through
 * a lock-free stack and a futex, so the write path (O_SYNC writes under
 * osync=defer, early writeback) can request work without a lock and from
 * a signal handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "flusher.h"
#include "log.h"
#include "trace.h"

#define NS_PER_MS 1000000ull
#define WORKER_IDLE_NS (2000 * NS_PER_MS)
/* The lowest free number: asking for a high one would grow the kernel's fd
 * table, which in a multithreaded process waits for an RCU grace period
 * (~10 ms) inside the app's open(). close() protects our dups instead. */
#define PRIVATE_FD_MIN 3
#define DRAIN_BATCH 128

static pthread_mutex_t sched_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *sched_list;            /* sched_mu */
static _Atomic(struct shim_file *) ready_stack; /* pushes from any thread */
static _Atomic uint32_t sched_wake;             /* futex word */
static _Atomic int nworkers;
static int nidle;                               /* sched_mu */

static uint64_t now_ns(void)
{
	return trace_now();
}

/* ---- per-file state ------------------------------------------------------ */

void flusher_init_file(struct shim_file *f)
{
	struct flusher *fl = &f->fl;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&fl->mu, NULL);
	pthread_cond_init(&fl->cv, &ca);
	pthread_condattr_destroy(&ca);
	fl->fd = -1;
	fl->in_flight = false;
	atomic_store(&fl->done_seq, 0);
	fl->nerrs = 0;
	atomic_store(&fl->req_seq, 0);
	atomic_store(&fl->first_req_ns, 0);
	atomic_store(&fl->pending_calls, 0);
	atomic_store(&fl->want_fsync, 0);
	atomic_store(&fl->force, 0);
	atomic_store(&fl->writeback, 0);
	atomic_store(&fl->queued, 0);
	fl->wb_mark = 0;
	fl->ready_next = fl->sched_next = NULL;
}

/* ---- the flusher's private descriptors ------------------------------------ */

/* A descriptor whose inode is no longer the file's cannot sync it. */
static bool fd_is_file(int fd, const struct shim_file *f)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

/* A private slot points back at its file (no reference: the file owns the
 * descriptor), so a dup2 onto the number can move our dup out of the way. */
static void private_fd_adopt(struct shim_file *f, int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (s) {
		atomic_store_explicit(&s->file, f, memory_order_relaxed);
		atomic_store_explicit(&s->state, FD_PRIVATE, memory_order_release);
	}
	int top = atomic_load(&shim.private_fd_max);
	while (fd > top && !atomic_compare_exchange_weak(&shim.private_fd_max, &top, fd))
		;
	f->fl.fd = fd;
}

static void private_fd_forget(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (s) {
		atomic_store_explicit(&s->state, FD_UNKNOWN, memory_order_release);
		atomic_store_explicit(&s->file, NULL, memory_order_release);
	}
}

/* Still ours, as the kernel sees it: the number may have been taken over
 * behind our back (a raw dup2), and then it is the app's, never to close. */
static bool private_fd_owned(const struct shim_file *f, int fd)
{
	struct fd_slot *s = fd_slot(fd);
	return s && (atomic_load(&s->state) & SLOT_KIND_MASK) == FD_PRIVATE &&
	       atomic_load(&s->file) == f && fd_is_file(fd, f);
}

void flusher_release_file(struct shim_file *f)
{
	int fd = f->fl.fd;
	if (fd < 0)
		return;
	if (private_fd_owned(f, fd)) {
		private_fd_forget(fd);
		REAL(close)(fd);
	}
	f->fl.fd = -1;
}

bool flusher_is_private_fd(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	return s && (atomic_load_explicit(&s->state, memory_order_acquire) & SLOT_KIND_MASK) == FD_PRIVATE;
}

int flusher_close_private(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s || (atomic_load(&s->state) & SLOT_KIND_MASK) != FD_PRIVATE)
		return 0;
	struct shim_file *f = atomic_load(&s->file);
	if (f && private_fd_owned(f, fd))
		return 1;
	private_fd_forget(fd); /* stale: the number is the app's now */
	if (f && f->fl.fd == fd)
		f->fl.fd = -1;
	return 0;
}

void flusher_vacate(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s || (atomic_load(&s->state) & SLOT_KIND_MASK) != FD_PRIVATE)
		return;
	struct shim_file *f = atomic_load(&s->file);
	int e = errno;
	if (f) {
		pthread_mutex_lock(&f->fl.mu);
		if (f->fl.fd == fd) {
			int d = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, PRIVATE_FD_MIN);
			private_fd_forget(fd);
			if (d >= 0)
				private_fd_adopt(f, d);
			else
				f->fl.fd = -1; /* lost: the reopen path takes over */
		}
		pthread_mutex_unlock(&f->fl.mu);
	} else {
		private_fd_forget(fd);
	}
	errno = e;
}

/* The flusher's own descriptor: a background sync must not depend on the
 * app keeping its descriptor open. Marked private so the app's close()
 * (a daemon closing "all" fds) cannot take it away. */
static int ensure_private_fd(struct shim_file *f, int appfd)
{
	struct flusher *fl = &f->fl;
	if (fl->fd >= 0)
		return 0;
	if (appfd < 0)
		return -1;
	pthread_mutex_lock(&fl->mu);
	if (fl->fd < 0) {
		int d = REAL(fcntl)(appfd, F_DUPFD_CLOEXEC, PRIVATE_FD_MIN);
		if (d >= 0)
			private_fd_adopt(f, d);
	}
	pthread_mutex_unlock(&fl->mu);
	return fl->fd >= 0 ? 0 : -1;
}

/* Armed: a deferred request waits for its deadline (the scheduler's view). */
static bool has_pending(const struct shim_file *f)
{
	return atomic_load_explicit(&f->fl.first_req_ns, memory_order_acquire) != 0 ||
	       atomic_load_explicit(&f->fl.force, memory_order_acquire) != 0;
}

/* Owed: some request is not yet covered by a completed real sync, armed
 * or already in flight (the barriers' view). */
static bool owes_sync(struct shim_file *f)
{
	return atomic_load(&f->fl.req_seq) > atomic_load(&f->fl.done_seq);
}

/* ---- leading one real sync ------------------------------------------------ */

static void remember_error(struct shim_file *f, uint64_t lo, uint64_t hi, int err, bool sticky)
{
	struct flusher *fl = &f->fl;
	fl->errs[fl->nerrs++ % FLUSH_ERR_EPOCHS] = (struct err_epoch){ lo, hi, err };
	if (!sticky)
		return;
	atomic_store_explicit(&f->err_errno, err, memory_order_relaxed);
	atomic_fetch_add_explicit(&f->err_seq, 1, memory_order_release);
	log_event(LOGEV_SYNC_ERROR, f, err, "deferred sync of %s failed: %s", f->path ? f->path : "?",
		  strerror(err));
}

/* The error of the failed sync that covered request seq, else 0. */
static int error_for(const struct flusher *fl, uint64_t seq)
{
	unsigned n = fl->nerrs < FLUSH_ERR_EPOCHS ? fl->nerrs : FLUSH_ERR_EPOCHS;
	for (unsigned i = 0; i < n; i++)
		if (seq > fl->errs[i].lo && seq <= fl->errs[i].hi)
			return fl->errs[i].err;
	return 0;
}

static bool use_fsync(const struct shim_file *f, bool asked)
{
	switch (f->rule.real_sync) {
	case REAL_SYNC_FSYNC:
		return true;
	case REAL_SYNC_FDATASYNC:
		return false;
	default: /* auto: group keeps what callers asked; defer settles for data */
		return f->rule.sync == SYNC_GROUP && asked;
	}
}


/* The app replaced our private descriptor (dup2 onto it): open the file
 * again by name, if the name still leads to the same inode. */
static int reopen_private(struct shim_file *f)
{
	int fd = f->path ? REAL(open)(f->path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return -1;
	if (!fd_is_file(fd, f)) {
		REAL(close)(fd);
		return -1;
	}
	private_fd_adopt(f, fd);
	return fd;
}

/*
 * fl->mu held on entry and on return; dropped around the real call. The
 * snapshot of req_seq is taken after the counters are reset, so a request
 * racing with the start is either covered or re-arms first_req_ns.
 */
static void lead_sync_locked(struct shim_file *f, int fd, bool sticky)
{
	struct flusher *fl = &f->fl;
	fl->in_flight = true;
	pthread_mutex_unlock(&fl->mu);

	if (f->rule.sync == SYNC_GROUP && f->rule.group_wait_us) {
		struct timespec ts = { 0, (long)f->rule.group_wait_us * 1000 };
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
	}
	atomic_store(&fl->force, 0);
	atomic_store(&fl->first_req_ns, 0);
	atomic_store(&fl->pending_calls, 0);
	uint64_t started = atomic_load(&fl->req_seq);
	bool full = use_fsync(f, atomic_exchange(&fl->want_fsync, 0));
	uint64_t bytes = atomic_exchange(&f->dirty_bytes, 0);
	fl->wb_mark = 0;

	int r, err = 0;
	uint64_t t0 = trace_stamp();
	if (!fd_is_file(fd, f) && fd == fl->fd)
		fd = reopen_private(f);
	if (!fd_is_file(fd, f)) {
		r = -1;
		err = EIO; /* our descriptor was taken away: we cannot vouch for the data */
	} else {
		r = full ? REAL(fsync)(fd) : REAL(fdatasync)(fd);
		err = r < 0 ? errno : 0;
	}
	trace_real_sync(full ? OP_REAL_FSYNC : OP_REAL_FDATASYNC, f, t0, trace_stamp(), (int64_t)bytes, r, err);

	pthread_mutex_lock(&fl->mu);
	uint64_t lo = atomic_load(&fl->done_seq);
	if (started > lo)
		atomic_store(&fl->done_seq, started);
	if (r < 0)
		remember_error(f, lo, started, err, sticky);
	fl->in_flight = false;
	pthread_cond_broadcast(&fl->cv);
}

/* Wait (leading syncs as needed) until request target is covered. */
static int sync_until(struct shim_file *f, int fd, uint64_t target, bool sticky)
{
	struct flusher *fl = &f->fl;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old); /* never leave in_flight set */
	pthread_mutex_lock(&fl->mu);
	while (atomic_load(&fl->done_seq) < target) {
		if (!fl->in_flight)
			lead_sync_locked(f, fd, sticky);
		else
			pthread_cond_wait(&fl->cv, &fl->mu);
	}
	int err = sticky ? 0 : error_for(fl, target);
	pthread_mutex_unlock(&fl->mu);
	pthread_setcancelstate(old, NULL);
	return err;
}

/* ---- requests -------------------------------------------------------------- */

/* Lock-free and async-signal-safe: number one sync request. */
static uint64_t next_request(struct flusher *fl, bool want_fsync)
{
	if (want_fsync)
		atomic_store_explicit(&fl->want_fsync, 1, memory_order_relaxed);
	return atomic_fetch_add(&fl->req_seq, 1) + 1;
}

/* A deferred request also starts the deadline clock, after taking its
 * number; see lead_sync_locked for why that order. Group requests do not:
 * their caller leads or waits, the flusher threads have no part in them. */
static void arm_deadline(struct flusher *fl)
{
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&fl->first_req_ns, &zero, now_ns());
}

static void wake_flusher(void)
{
	atomic_fetch_add_explicit(&sched_wake, 1, memory_order_release);
	syscall(SYS_futex, &sched_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Hand the file to the flusher threads (once; the queue holds a ref). */
static void schedule(struct shim_file *f, bool urgent)
{
	struct flusher *fl = &f->fl;
	if (atomic_exchange(&fl->queued, 1) == 0) {
		file_ref(f);
		struct shim_file *head = atomic_load(&ready_stack);
		do
			fl->ready_next = head;
		while (!atomic_compare_exchange_weak(&ready_stack, &head, f));
		wake_flusher();
	} else if (urgent) {
		wake_flusher();
	}
}

static bool over_threshold(struct shim_file *f)
{
	return atomic_load(&f->fl.pending_calls) >= f->rule.max_calls ||
	       atomic_load(&f->dirty_bytes) >= f->rule.max_bytes;
}

static void defer_request(struct shim_file *f, bool want_fsync)
{
	next_request(&f->fl, want_fsync);
	arm_deadline(&f->fl);
	atomic_fetch_add(&f->fl.pending_calls, 1);
	/* Wake the flusher once per crossing, not once per request after it. */
	bool urgent = over_threshold(f) && atomic_exchange(&f->fl.force, 1) == 0;
	schedule(f, urgent);
}

static void *worker_main(void *arg);

/* At least one flusher thread, and another while all are busy and work
 * waits, up to max_flushers. Not for the write path (pthread_create). */
static int ensure_worker(bool more)
{
	int have = atomic_load(&nworkers);
	if (have > 0 && !more)
		return 0;
	uint32_t cap = shim_policy()->max_flushers;
	int r = 0;
	pthread_mutex_lock(&sched_mu);
	have = atomic_load(&nworkers);
	if (have == 0 || (more && nidle == 0 && (uint32_t)have < cap)) {
		atomic_fetch_add(&nworkers, 1);
		if (shim_start_thread(worker_main, 64 * 1024, "syncshim-flush") < 0) {
			atomic_fetch_sub(&nworkers, 1);
			r = -1;
		}
	}
	pthread_mutex_unlock(&sched_mu);
	return atomic_load(&nworkers) > 0 ? 0 : r;
}

void flusher_prepare(struct shim_file *f, int fd, uint32_t slot_flags)
{
	if (f->rule.sync != SYNC_DEFER && !(slot_flags & SLOT_OSYNC_DEFER))
		return;
	int e = errno;
	if (ensure_private_fd(f, fd) == 0)
		ensure_worker(false);
	errno = e;
}

static int defer_sync(struct shim_file *f, int fd, bool want_fsync)
{
	if (atomic_load(&shim.exiting) && fd >= 0)
		return want_fsync ? REAL(fsync)(fd) : REAL(fdatasync)(fd);
	if (ensure_private_fd(f, fd) < 0)
		return fd < 0 ? -1 : (want_fsync ? REAL(fsync)(fd) : REAL(fdatasync)(fd));
	defer_request(f, want_fsync);
	/* After queueing, so a thread retiring right now cannot miss it. */
	if (ensure_worker(false) < 0) {
		sync_until(f, f->fl.fd, atomic_load(&f->fl.req_seq), true);
		int err = fd >= 0 ? fd_take_sync_error(fd, f) : 0;
		if (err) {
			errno = err;
			return -1;
		}
	}
	pthread_testcancel();
	return 0;
}

int flusher_app_sync(struct shim_file *f, int fd, bool want_fsync)
{
	if (fd >= 0) { /* fd_file_checked vouched for fd: never an O_PATH fd */
		int err = fd_take_sync_error(fd, f);
		if (err) {
			errno = err;
			return -1;
		}
	}
	if (f->rule.sync == SYNC_GROUP && fd >= 0) {
		pthread_testcancel();
		uint64_t seq = next_request(&f->fl, want_fsync);
		int err = sync_until(f, fd, seq, false);
		if (err) {
			errno = err;
			return -1;
		}
		return 0;
	}
	return defer_sync(f, fd, want_fsync);
}

/* A write to an O_SYNC/O_DSYNC file under osync=defer: each write is a
 * sync request. Runs on the write path: no lock, no allocation. With no
 * flusher thread to hand it to, the write is made durable right here. */
static void osync_inline(struct shim_file *f, int fd)
{
	if (REAL(fdatasync)(fd) < 0) {
		atomic_store(&f->err_errno, errno);
		atomic_fetch_add(&f->err_seq, 1);
	}
}

void shim_osync_write(struct shim_file *f, int fd, uint32_t slot_state)
{
	if (f->fl.fd < 0 || atomic_load(&shim.exiting)) {
		osync_inline(f, fd);
		return;
	}
	defer_request(f, (slot_state & SLOT_APP_OSYNC) != 0);
	/* Checked after queueing: a retiring thread either sees our request
	 * or has already left, and then we cannot spawn one from here. */
	if (atomic_load(&nworkers) == 0)
		osync_inline(f, fd);
}

void flusher_after_write(struct shim_file *f, int fd, uint32_t slot_state)
{
	if (slot_state & SLOT_OSYNC_DEFER)
		shim_osync_write(f, fd, slot_state);
	if (f->fl.fd < 0)
		return;
	uint64_t dirty = atomic_load_explicit(&f->dirty_bytes, memory_order_relaxed);
	uint64_t wb = f->rule.writeback_bytes;
	if (wb && dirty >= f->fl.wb_mark + wb) {
		f->fl.wb_mark = dirty; /* racy by design: at worst one extra kick */
		atomic_store(&f->fl.writeback, 1);
		schedule(f, true);
	}
	if (dirty >= f->rule.max_bytes && atomic_load(&f->fl.first_req_ns) &&
	    atomic_exchange(&f->fl.force, 1) == 0)
		schedule(f, true);
}

/* ---- the flusher threads -------------------------------------------------- */

static uint64_t deadline_of(struct shim_file *f)
{
	if (atomic_load(&f->fl.force) || atomic_load(&f->fl.writeback))
		return 0;
	uint64_t first = atomic_load(&f->fl.first_req_ns);
	return first ? first + (uint64_t)f->rule.max_delay_ms * NS_PER_MS : UINT64_MAX;
}

static void take_ready(void)
{
	struct shim_file *f = atomic_exchange(&ready_stack, NULL);
	while (f) {
		struct shim_file *next = f->fl.ready_next;
		f->fl.sched_next = sched_list;
		sched_list = f;
		f = next;
	}
}

/* sched_mu held. Drop files with nothing left to do; return the most
 * overdue one (unlinked from the list) or NULL and the next deadline. */
static struct shim_file *pick(uint64_t now, uint64_t *next, struct shim_file **done)
{
	struct shim_file *best = NULL, **bestp = NULL;
	uint64_t best_dl = UINT64_MAX;
	*next = UINT64_MAX;
	for (struct shim_file **pp = &sched_list; *pp;) {
		struct shim_file *f = *pp;
		uint64_t dl = deadline_of(f);
		if (dl == UINT64_MAX) {
			atomic_store(&f->fl.queued, 0);
			if (has_pending(f) || atomic_load(&f->fl.writeback)) {
				if (atomic_exchange(&f->fl.queued, 1) == 0) { /* re-armed under us */
					pp = &f->fl.sched_next;
					continue;
				}
			}
			*pp = f->fl.sched_next;
			f->fl.sched_next = *done; /* reference dropped outside the lock */
			*done = f;
			continue;
		}
		if (dl <= now && dl < best_dl) {
			best = f;
			bestp = pp;
			best_dl = dl;
		} else if (dl > now && dl < *next) {
			*next = dl;
		}
		pp = &f->fl.sched_next;
	}
	if (best)
		*bestp = best->fl.sched_next;
	return best;
}

static void writeback(struct shim_file *f)
{
	uint64_t t0 = trace_stamp();
	int r = REAL(sync_file_range)(f->fl.fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	trace_real_sync(OP_REAL_SYNC_FILE_RANGE, f, t0, trace_stamp(), 0, r, r < 0 ? errno : 0);
}

static void work_on(struct shim_file *f)
{
	if (atomic_exchange(&f->fl.writeback, 0) && f->fl.fd >= 0)
		writeback(f);
	if (!has_pending(f))
		return;
	if (owes_sync(f)) {
		sync_until(f, f->fl.fd, atomic_load(&f->fl.req_seq), true); /* reopens a lost fd */
		return;
	}
	/* Armed by a request a sync had already covered (it took its number
	 * before that sync began and armed the clock after): disarm, or the
	 * deadline stays passed and this thread spins. A request racing with
	 * the disarm is seen by the re-check and re-armed. */
	atomic_store(&f->fl.force, 0);
	atomic_store(&f->fl.first_req_ns, 0);
	if (owes_sync(f))
		arm_deadline(&f->fl);
}

static void put_all(struct shim_file *list)
{
	while (list) {
		struct shim_file *next = list->fl.sched_next;
		file_put(list);
		list = next;
	}
}

static void *worker_main(void *arg)
{
	(void)arg;
	shim_busy = 1; /* everything this thread calls is the shim's own */
	uint64_t idle_since = now_ns();
	pthread_mutex_lock(&sched_mu);
	for (;;) {
		uint32_t seen = atomic_load_explicit(&sched_wake, memory_order_acquire);
		take_ready();
		uint64_t now = now_ns(), next;
		struct shim_file *done = NULL;
		struct shim_file *f = pick(now, &next, &done);
		if (done) {
			pthread_mutex_unlock(&sched_mu);
			put_all(done);
			pthread_mutex_lock(&sched_mu);
		}
		if (f) {
			bool more = sched_list != NULL || atomic_load(&ready_stack) != NULL;
			pthread_mutex_unlock(&sched_mu);
			if (more)
				ensure_worker(true); /* a slow file must not hold up the others */
			work_on(f);
			pthread_mutex_lock(&sched_mu);
			f->fl.sched_next = sched_list; /* back on the list; pick() drops it when idle */
			sched_list = f;
			idle_since = now_ns();
			continue;
		}
		if (!sched_list && now - idle_since > WORKER_IDLE_NS && !atomic_load(&ready_stack))
			break;
		uint64_t wait = next == UINT64_MAX ? WORKER_IDLE_NS : next - now;
		struct timespec ts = { (time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull) };
		nidle++;
		pthread_mutex_unlock(&sched_mu);
		syscall(SYS_futex, &sched_wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
		pthread_mutex_lock(&sched_mu);
		nidle--;
	}
	atomic_fetch_sub(&nworkers, 1);
	pthread_mutex_unlock(&sched_mu);
	/* A request may have slipped in after the last look. */
	if (atomic_load(&ready_stack) && atomic_load(&nworkers) == 0)
		ensure_worker(false);
	return NULL;
}

/* ---- barriers -------------------------------------------------------------- */

void flusher_drain(struct shim_file *f)
{
	uint64_t target = atomic_load(&f->fl.req_seq);
	if (atomic_load(&f->fl.done_seq) < target)
		sync_until(f, f->fl.fd, target, true);
}

struct pending_batch {
	struct shim_file *files[DRAIN_BATCH];
	int n;
};

static void collect_pending(struct shim_file *f, void *arg)
{
	struct pending_batch *b = arg;
	if (b->n < DRAIN_BATCH && f->fl.fd >= 0 && owes_sync(f))
		b->files[b->n++] = file_ref(f);
}

void flusher_flush_all(void)
{
	if (!atomic_load(&shim.ready))
		return;
	struct pending_batch b;
	do {
		b.n = 0;
		registry_each(collect_pending, &b);
		for (int i = 0; i < b.n; i++) {
			flusher_drain(b.files[i]);
			file_put(b.files[i]);
		}
	} while (b.n == DRAIN_BATCH);
}

/* An error no descriptor has reported yet, now reported (by a rename). */
static int take_unseen_error(struct shim_file *f)
{
	uint32_t seq = atomic_load(&f->err_seq), seen = atomic_load(&f->err_seen_seq);
	while (seen < seq) {
		if (atomic_compare_exchange_weak(&f->err_seen_seq, &seen, seq))
			return atomic_load(&f->err_errno);
	}
	return 0;
}

int flusher_before_rename(int dirfd, const char *path)
{
	struct stat st;
	int e = errno, err = 0;
	if (path && fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		struct shim_file *f = file_find(st.st_dev, st.st_ino);
		if (f) {
			if (f->fl.fd >= 0 && owes_sync(f))
				flusher_drain(f);
			err = take_unseen_error(f);
			file_put(f);
		}
	}
	errno = e;
	return err;
}

int flusher_before_close(struct shim_file *f, int fd)
{
	if (f->rule.on_close == ON_CLOSE_SYNC && f->fl.fd >= 0 && owes_sync(f))
		flusher_drain(f);
	return fd_take_sync_error(fd, f);
}

static void drop_private_in_range(struct shim_file *f, void *arg)
{
	const unsigned *r = arg;
	if (f->fl.fd >= 0 && (unsigned)f->fl.fd >= r[0] && (unsigned)f->fl.fd <= r[1]) {
		private_fd_forget(f->fl.fd);
		f->fl.fd = -1; /* the kernel is about to close it */
	}
}

void flusher_before_close_range(unsigned first, unsigned last)
{
	flusher_flush_all();
	unsigned range[2] = { first, last };
	registry_each(drop_private_in_range, range);
}

/* ---- fork -------------------------------------------------------------- */

static void reset_in_child(struct shim_file *f, void *arg)
{
	(void)arg;
	struct flusher *fl = &f->fl;
	int fd = fl->fd;
	uint64_t seq = atomic_load(&fl->req_seq);
	bool was_queued = atomic_load(&fl->queued);
	flusher_init_file(f); /* the parent's flusher owns the parent's pending syncs */
	fl->fd = fd;
	atomic_store(&fl->req_seq, seq);
	atomic_store(&fl->done_seq, seq);
	if (was_queued)
		atomic_fetch_sub(&f->refs, 1); /* that reference belonged to the parent's queue */
}

void flusher_atfork_child(void)
{
	pthread_mutex_init(&sched_mu, NULL);
	sched_list = NULL;
	atomic_store(&ready_stack, NULL);
	atomic_store(&nworkers, 0);
	nidle = 0;
	registry_each(reset_in_child, NULL);
}
