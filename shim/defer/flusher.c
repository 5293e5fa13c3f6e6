/*
 * flusher.c - deferred and group-commit syncs of one file.
 *
 * Every file carries its own flusher state (struct flusher in shim.h):
 * numbered requests, the number covered by the last completed real sync,
 * and whether a real sync is running. Whoever needs a sync and finds none
 * running leads one: a group caller, a barrier (rename, close, exec, exit)
 * or a flusher thread acting on a deferred file's deadline (workers.c).
 * Everyone else waits for the running one and, if it started too early to
 * cover them, for the next. So one file never has two real syncs in
 * flight, and a slow file blocks only its own callers.
 *
 * The descriptor a sync uses. A group caller leads with its own. Anyone
 * else takes, in order: the shim's private descriptor of the file, if the
 * app closed its last one while syncs were owed; the last app descriptor
 * that asked for a sync; any app descriptor of the file (a scan of the
 * slots: a file renamed or unlinked while open is reached that way); or
 * the file opened again by name, else its file system (syncfs). Whichever it
 * is, it is leased (lease_fd) while the sync runs: close(), close_range()
 * and dup2() of that number wait for the lease, so the number cannot come
 * to mean another file mid-sync, and it is checked against the file's
 * (dev, inode) under the lease. A leader whose own descriptor turns out to
 * be gone did not sync anything: it gets EBADF, and the callers waiting
 * on it lead again with their own descriptors (never an EIO they did not
 * earn).
 *
 * Locks: fl->mu is taken with shim_busy raised and never held across an
 * allocation or a log call (errors are logged after it is released).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#ifdef SYNCSHIM_TSAN
#include <sanitizer/tsan_interface.h> /* privs_fork_mu_reset_in_child */
#endif

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "knobs.h"
#include "live.h"
#include "log.h"
#include "order.h"
#include "pace.h"
#include "risk.h"
#include "shimfd.h"
#include "syncerr.h"
#include "trace.h"
#include "workers.h"

/* ---- per-file state ------------------------------------------------------ */

void flusher_init_locks(struct shim_file *f)
{
	pthread_mutex_init(&f->fl.mu, NULL);
}

void flusher_reset(struct shim_file *f)
{
	struct flusher *fl = &f->fl;
	fl->in_flight = false;
	fl->waiters = 0;
	fl->lease_fd = -1;
	atomic_store(&fl->req_fd, -1);
	atomic_store(&fl->priv_fd, -1);
	atomic_store(&fl->done_seq, 0);
	fl->waiting = NULL;
	atomic_store(&fl->req_seq, 0);
	atomic_store(&fl->calls_mark, 0);
	atomic_store(&fl->want_fsync, 0);
	atomic_store(&fl->synced_mark, 0);
	atomic_store(&fl->wb_mark, 0);
	atomic_store(&fl->last_req_ns, 0);
	atomic_store(&fl->sync_ns, 0);
	atomic_store(&fl->gap_ns, 0);
	atomic_store(&fl->joined_x16, 0);
	atomic_store(&fl->leads, 0);
	workers_reset(f);
	order_reset(f);
}

/* Bytes written since the last real sync began; marks it as begun now. */
static uint64_t take_dirty(struct shim_file *f)
{
	uint64_t w = risk_written(&f->risk);
	atomic_store_explicit(&f->fl.wb_mark, w, memory_order_relaxed);
	uint64_t mark = atomic_exchange_explicit(&f->fl.synced_mark, w, memory_order_relaxed);
	return w > mark ? w - mark : 0;
}

static uint64_t dirty_bytes(const struct shim_file *f)
{
	uint64_t w = risk_written(&f->risk), mark = atomic_load_explicit(&f->fl.synced_mark, memory_order_relaxed);
	return w > mark ? w - mark : 0;
}

/* ---- one real sync, as the observers hear of it ----------------------------
 *
 * Every real sync of a file the shim makes, the app's own (sync.c) and
 * the flusher's (lead_sync_locked), and the rule for the one error the
 * kernel reports twice, are here, so data at risk, crash-test mode and the
 * live counters hear the same thing whoever made the sync.
 *
 * The kernel reports a write-back error once to every open file
 * description. When the shim records a sticky error it tells every
 * descriptor itself, and marks the other descriptions (fd_note_kernel_owes):
 * their next real sync fails with that same error. That report is not
 * news to anyone, but it is not a sync either: the file system returns
 * it before its own sync (file_write_and_wait_range's error ends ext4's
 * and FUSE's fsync before the journal commit, the cache flush or the
 * request), so nothing the call covered is durable. So the shim takes
 * that report first, by a wait that syncs nothing (sync_file_range's
 * SYNC_FILE_RANGE_WAIT_BEFORE checks and advances the description's
 * write-back error as fsync does, and asks the file system for nothing),
 * then makes the sync: its result is what this sync really did, and the
 * only one the caller and the observers see. Taking the sync's own
 * failure for the report instead (and syncing again) would drop a fresh
 * error of a file system that fails one call and not the next (a FUSE
 * daemon's reply to FSYNC, the fault layer beneath the shim: seed
 * mix:15753722).
 */

struct real_sync_seen flusher_real_sync_begins(struct shim_file *f)
{
	struct real_sync_seen s = { .bytes = take_dirty(f) };
	/* Held bytes are not in the kernel: a sync now does not make them
	 * durable (held.c), nor the acknowledgements after them. */
	s.risk = risk_sync_begins(f, atomic_load(&f->hold.bytes));
	s.upto = crash_mark(f);
	s.t0 = trace_now();
	return s;
}

int flusher_real_sync_fd(int fd, bool full)
{
	if (fd_take_kernel_owes(fd))
		LIBC(sync_file_range)(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE); /* the told error, once more */
	int r = full ? LIBC(fsync)(fd) : LIBC(fdatasync)(fd);
	return r < 0 ? errno : 0;
}

uint64_t flusher_real_sync_ends(struct shim_file *f, const struct real_sync_seen *s, bool reached, int err)
{
	bool durable = reached && !err;
	if (durable)
		crash_durable(f, s->upto); /* before any caller hears of it */
	uint64_t now = trace_now(), took = now - s->t0;
	risk_sync_ends(f, s->risk, durable, now);
	if (reached)
		live_real_synced(f, took, err);
	return took;
}

void flusher_offer_fd(struct shim_file *f, int fd)
{
	int none = -1;
	atomic_compare_exchange_strong(&f->fl.req_fd, &none, fd);
}

bool flusher_can_reach(struct shim_file *f)
{
	return atomic_load(&f->nfds) > 0 || atomic_load(&f->fl.priv_fd) >= 0;
}

static void lock_fl(struct shim_file *f)
{
	pthread_mutex_lock(&f->fl.mu);
	TEST_POINT("fl_mu");
}

static void unlock_fl(struct shim_file *f)
{
	pthread_mutex_unlock(&f->fl.mu);
}

/*
 * Waiting for a sync (or a lease) to end. Not a condition variable: glibc's
 * broadcast waits for every waiter it wakes to leave its futex, and a
 * waiter whose thread is kept inside signal handlers (an interval timer
 * faster than the handler) would hold the waker, and with it the file's
 * lock, forever. An event count never makes a waker wait: waiters note
 * the count under mu, sleep on it unlocked, and re-check under mu.
 */
static void wait_locked(struct shim_file *f)
{
	uint32_t seen = atomic_load(&f->fl.wake);
	f->fl.waiters++;
	unlock_fl(f);
	syscall(SYS_futex, &f->fl.wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
	lock_fl(f);
	f->fl.waiters--;
}

/* The count always moves (a waiter about to note it under mu sees the
 * change); the wake-up system call is made only if someone sleeps: a lone
 * group caller's every sync would otherwise pay one for nobody. */
static void wake_all_locked(struct shim_file *f)
{
	atomic_fetch_add(&f->fl.wake, 1);
	if (f->fl.waiters)
		syscall(SYS_futex, &f->fl.wake, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Owed: some request is not yet covered by a completed real sync. */
uint64_t flusher_pending(struct shim_file *f)
{
	uint64_t req = atomic_load(&f->fl.req_seq), done = atomic_load(&f->fl.done_seq);
	return req > done ? req - done : 0;
}

bool flusher_owes(struct shim_file *f)
{
	return atomic_load(&f->fl.req_seq) > atomic_load(&f->fl.done_seq);
}

static bool is_file(int fd, const struct shim_file *f)
{
	dev_t dev;
	ino_t ino;
	return fd >= 0 && fd_identity(fd, &dev, &ino, NULL) == 0 && dev == f->dev && ino == f->ino;
}

/*
 * Private descriptors of closed files, over all files: bounded, so a
 * program that writes, syncs and closes files in turn (100,000 of them) is
 * not left with one descriptor per file it closed. Past half the bound a
 * closed file's sync is made at once in the background (its descriptor
 * goes as soon as it lands); at the bound the closer makes it itself.
 * The bound: PRIVS_MAX, at most a quarter of the descriptor limit.
 */
#define PRIVS_MAX 1024
static _Atomic int privs_held;
static _Atomic int privs_cap_cached;

static int privs_cap(void)
{
	int cap = atomic_load_explicit(&privs_cap_cached, memory_order_relaxed);
	if (cap)
		return cap;
	struct rlimit rl;
	cap = PRIVS_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < PRIVS_MAX)
		cap = rl.rlim_cur / 4 > 0 ? (int)(rl.rlim_cur / 4) : 1;
	atomic_store_explicit(&privs_cap_cached, cap, memory_order_relaxed);
	return cap;
}

/*
 * A fork must copy the table while every private descriptor is either
 * open and named by its file's priv_fd (the child's reset closes it) or
 * closed: a fork between a flusher thread's taking priv_fd and its close,
 * or between a closer's dup and its store, gave the child a descriptor no
 * one would ever close (one fork in ten right after a close under
 * max_delay_ms = auto; test_flusher's
 * barrier/fork_child_inherits_no_private_descriptor holds it). Every such
 * change holds this lock for reading, fork's prepare handler for writing
 * (after the registry's: flusher_release_file takes it under that one;
 * nothing holding it takes another lock or allocates).
 */
static pthread_rwlock_t privs_fork_mu = PTHREAD_RWLOCK_INITIALIZER;

static void privs_change_begin(void)
{
	pthread_rwlock_rdlock(&privs_fork_mu);
}

static void privs_change_end(void)
{
	pthread_rwlock_unlock(&privs_fork_mu);
}

void flusher_atfork_prepare(void)
{
	pthread_rwlock_wrlock(&privs_fork_mu);
}

void flusher_atfork_parent(void)
{
	pthread_rwlock_unlock(&privs_fork_mu);
}

/* Our private descriptor of f is gone (closed, lost or replaced by none). */
static int priv_take(struct shim_file *f)
{
	int p = atomic_exchange(&f->fl.priv_fd, -1);
	if (p >= 0)
		atomic_fetch_sub(&privs_held, 1);
	return p;
}

/* mu held: close our private descriptor once nothing is owed. */
static void drop_priv_if_idle(struct shim_file *f)
{
	int p = atomic_load(&f->fl.priv_fd);
	if (p < 0 || flusher_owes(f) || held_count(&f->hold) || (f->fl.in_flight && f->fl.lease_fd == p))
		return;
	privs_change_begin();
	p = priv_take(f);
	if (p >= 0 && atomic_load(&f->nfds) == 0)
		syncerr_last_descriptor(f, p);
	if (p >= 0)
		shimfd_close(p);
	privs_change_end();
}

void flusher_release_file(struct shim_file *f)
{
	privs_change_begin();
	int p = priv_take(f);
	if (p >= 0 && atomic_load(&f->nfds) == 0)
		syncerr_last_descriptor(f, p);
	if (p >= 0)
		shimfd_close(p);
	privs_change_end();
}

/* ---- the descriptor a sync uses ------------------------------------------ */

enum sfd_kind { SFD_NONE, SFD_APP, SFD_PRIV, SFD_NAME };

struct sync_fd {
	int fd;
	enum sfd_kind kind;
};


/* mu held. own >= 0: the caller's own descriptor (a group caller, a
 * closer draining its own); else the best the file has. Leases it. */
static struct sync_fd pick_locked(struct shim_file *f, int own, bool own_closing)
{
	struct flusher *fl = &f->fl;
	struct sync_fd s = { -1, SFD_NONE };
	int p = atomic_load(&fl->priv_fd), r = atomic_load(&fl->req_fd);
	if (own >= 0) {
		if (fd_names(own, f, own_closing))
			s = (struct sync_fd){ own, SFD_APP };
	} else if (p >= 0) {
		s = (struct sync_fd){ p, SFD_PRIV };
	} else if (r >= 0 && fd_names(r, f, false)) {
		s = (struct sync_fd){ r, SFD_APP };
	} else if (atomic_load(&f->nfds) > 0) {
		/* No descriptor was offered (an msync has none) or the one
		 * offered is gone, but the app holds one: borrow it rather
		 * than the file's name, which may be renamed or unlinked. */
		int any = fd_find_bound(f);
		if (any >= 0)
			s = (struct sync_fd){ any, SFD_APP };
	}
	fl->lease_fd = s.fd;
	return s;
}

/* The file again, by name, when no descriptor of it is left to borrow:
 * SFD_NAME, synced by name (sync_call). */
static struct sync_fd reopen(struct shim_file *f)
{
	return (struct sync_fd){ -1, f->path && f->path[0] ? SFD_NAME : SFD_NONE };
}

/* Under the lease: the borrowed number must still be the file. When it is
 * not, the caller's own descriptor is gone (nothing gets synced: its
 * EBADF), and anyone else falls back to the file's name. An app
 * descriptor whose binding the shim vouches for needs no system call to
 * know (as for a passthrough sync: only a raw close behind libc could
 * have changed it, the stated limit); the shim's own are checked. */
static struct sync_fd confirm(struct shim_file *f, struct sync_fd s, int own)
{
	if (s.kind == SFD_APP && fd_vouched(s.fd, f))
		return s;
	if (s.kind != SFD_NONE && is_file(s.fd, f))
		return s;
	if (s.kind == SFD_APP && own < 0) {
		int r = s.fd;
		atomic_compare_exchange_strong(&f->fl.req_fd, &r, -1);
	}
	if (s.kind == SFD_PRIV)
		shimfd_lost(s.fd); /* taken behind our back: never ours to close now */
	if (own >= 0)
		return (struct sync_fd){ -1, SFD_NONE };
	return reopen(f);
}

/* ---- leading one real sync ------------------------------------------------ */

struct lead {
	bool happened;  /* a real sync ran (or failed for a reason that is the file's) */
	int err;        /* its errno, or the leader's own EBADF when !happened */
	bool sticky;    /* err was recorded as the file's sticky error */
};

static bool use_fsync(const struct knobs *k, bool asked)
{
	switch (k->real_sync) {
	case REAL_SYNC_FSYNC:
		return true;
	case REAL_SYNC_FDATASYNC:
		return false;
	default: /* auto: group keeps what callers asked; defer settles for data */
		return k->act[CALL_FSYNC] == ACT_GROUP && asked;
	}
}

/* ---- pacing (the arithmetic is policy/pace.c's) ------------------------------ */

static void learn(_Atomic uint32_t *avg, uint64_t sample)
{
	uint32_t old = atomic_load_explicit(avg, memory_order_relaxed);
	atomic_store_explicit(avg, pace_average(old, sample), memory_order_relaxed);
}

/* A group caller's request: how far apart they come. */
static void note_group_request(struct shim_file *f, const struct knobs *k)
{
	if (k->group_wait_us != POLICY_AUTO)
		return;
	uint64_t now = trace_now();
	uint64_t prev = atomic_exchange_explicit(&f->fl.last_req_ns, now, memory_order_relaxed);
	if (prev && now > prev)
		learn(&f->fl.gap_ns, now - prev);
}

static uint64_t linger_ns(struct shim_file *f, const struct knobs *k)
{
	if (k->act[CALL_FSYNC] != ACT_GROUP || !k->group_wait_us)
		return 0;
	if (k->group_wait_us != POLICY_AUTO)
		return (uint64_t)k->group_wait_us * 1000;
	struct pace_seen seen = {
		.sync_ns = atomic_load_explicit(&f->fl.sync_ns, memory_order_relaxed),
		.gap_ns = atomic_load_explicit(&f->fl.gap_ns, memory_order_relaxed),
		.joined_x16 = atomic_load_explicit(&f->fl.joined_x16, memory_order_relaxed),
	};
	bool probe = (atomic_fetch_add_explicit(&f->fl.leads, 1, memory_order_relaxed) & 31) == 0;
	return pace_linger_ns(&seen, probe);
}

/* A group leader waits a little for more callers to join its sync. */
static void linger(struct shim_file *f, const struct knobs *k)
{
	uint64_t ns = linger_ns(f, k);
	if (!ns)
		return;
	uint64_t before = atomic_load(&f->fl.req_seq);
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	if (k->group_wait_us == POLICY_AUTO) {
		uint32_t old = atomic_load_explicit(&f->fl.joined_x16, memory_order_relaxed);
		atomic_store_explicit(&f->fl.joined_x16,
				      pace_joined(old, atomic_load(&f->fl.req_seq) - before),
				      memory_order_relaxed);
	}
}


/* The real call; -errno on failure. A descriptor that vanished under a
 * caller's own sync means nothing was synced: NOT_DONE. */
#define NOT_DONE 1
struct by_name {
	const struct shim_file *f;
	bool full;
};

static int open_here(const char *path, int flags, bool isolated)
{
	return isolated ? LIBC(open)(path, flags | O_NOCTTY | O_CLOEXEC) : shimfd_open(path, flags | O_NOCTTY, OWN_TEMP);
}

static void close_here(int fd, bool isolated)
{
	if (isolated && fd >= 0)
		LIBC(close)(fd);
	else
		shimfd_close(fd);
}

/*
 * No descriptor and no name leads to the file any more (renamed or
 * unlinked behind the shim's back once its last descriptor was gone):
 * the file system that holds it is synced instead, through the nearest
 * directory of its old name that is on its device. That is a real sync
 * of what the app was told is durable (of nothing, if the file is gone),
 * and its result is the disk's: the shim never makes up an error for a
 * file it can no longer name. -1 when no such directory is left.
 */
static int sync_file_system_here(const struct shim_file *f, bool isolated)
{
	char dir[PATH_MAX];
	size_t len = strlen(f->path);
	if (len >= sizeof(dir))
		return -1;
	memcpy(dir, f->path, len + 1);
	for (char *slash; (slash = strrchr(dir, '/'));) {
		slash[slash == dir] = '\0'; /* the root keeps its slash */
		int fd = open_here(dir, O_RDONLY | O_DIRECTORY, isolated), err = -1;
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == f->dev)
			err = LIBC(syncfs)(fd) < 0 ? errno : 0;
		close_here(fd, isolated);
		if (err >= 0 || slash == dir)
			return err;
	}
	return -1;
}

/* Open by name, check it is the file, sync, close: the sync's errno or 0;
 * when the name no longer leads to the file, its file system's sync. -1:
 * not even that could be made. */
static int sync_by_name_here(const struct shim_file *f, bool full, bool isolated)
{
	int fd = open_here(f->path, O_RDONLY, isolated);
	int err = -1;
	if (fd >= 0 && is_file(fd, f)) {
		int r = full ? LIBC(fsync)(fd) : LIBC(fdatasync)(fd);
		err = r < 0 ? errno : 0;
	}
	close_here(fd, isolated);
	return err >= 0 ? err : sync_file_system_here(f, isolated);
}

static int sync_by_name_child(void *arg)
{
	const struct by_name *b = arg;
	return sync_by_name_here(b->f, b->full, true);
}

/* The real call: 0, its errno, or -1 (by name: the name is not the file). */
static int sync_call(struct shim_file *f, struct sync_fd s, bool full)
{
	if (s.kind == SFD_NAME) {
		/* in a child with a table of its own: the reopened file is
		 * never on a number of the app's; where that cannot be, here */
		struct by_name b = { f, full };
		int r;
		return shimfd_isolated(sync_by_name_child, &b, &r) ? r : sync_by_name_here(f, full, false);
	}
	return flusher_real_sync_fd(s.fd, full);
}

/* A deferred sync owed to a file the shim can no longer reach (no
 * descriptor, no name: a file that has none, as without /proc; a file
 * bound while its number was closed and opened again on it used to be
 * one, until fd_resolve learnt to read the name again): every file
 * system's, which covers it. Never an error the disk
 * did not give (it was EIO once: the ring's next FSYNC failed with it);
 * sync() reports none, so a write-back error there goes untold. */
static int sync_everything(bool *reached)
{
	LIBC(sync)();
	*reached = true;
	return 0;
}

/* The real sync a leader makes, told to the observers; 0, its errno, or
 * NOT_DONE. */
static int real_sync(struct shim_file *f, struct sync_fd s, int own, bool full)
{
	int err;
	uint64_t t0 = trace_stamp();
	struct real_sync_seen seen = flusher_real_sync_begins(f);
	bool reached = false;
	if (s.fd < 0 && s.kind != SFD_NAME) {
		err = own >= 0 ? NOT_DONE : sync_everything(&reached);
	} else {
		TEST_POINT("lead");
		err = sync_call(f, s, full);
		reached = err >= 0;
		if (err < 0) /* neither its name nor its file system */
			err = own >= 0 ? NOT_DONE : sync_everything(&reached);
		if (err == EBADF && own >= 0)
			err = NOT_DONE;
	}
	reached = reached && err != NOT_DONE;
	uint64_t took = flusher_real_sync_ends(f, &seen, reached, err);
	if (reached)
		learn(&f->fl.sync_ns, took);
	if (err != NOT_DONE)
		trace_real_sync(full ? OP_REAL_FSYNC : OP_REAL_FDATASYNC, f, t0, trace_stamp(),
				(int64_t)seen.bytes, err ? -1 : 0, err);
	return err;
}

/* mu held: a sync covering requests (lo, hi] ended with err; every
 * waiting group caller it covered learns so before the next sync can
 * start, however long it takes that caller to wake. */
static void tell_waiters(struct shim_file *f, uint64_t lo, uint64_t hi, int err)
{
	for (struct sync_waiter *w = f->fl.waiting; w; w = w->next)
		if (!w->covered && w->target > lo && w->target <= hi) {
			w->covered = true;
			w->err = err;
		}
}

/*
 * fl->mu held on entry and on return; dropped around the real call. The
 * snapshot of req_seq is taken after the counters are reset, so a request
 * racing with the start is either covered or re-arms first_req_ns.
 */
static struct lead lead_sync_locked(struct shim_file *f, int own, bool own_closing, bool sticky)
{
	struct flusher *fl = &f->fl;
	struct knobs k;
	knobs_of(f, &k);
	fl->in_flight = true;
	order_sync_begins(f); /* what it covers is no longer "forward" */
	struct sync_fd s = pick_locked(f, own, own_closing);
	unlock_fl(f);

	linger(f, &k);
	uint64_t since = workers_disarm(f);
	atomic_store(&fl->calls_mark, atomic_load(&fl->req_seq));
	/* While changes are held, no request made after the oldest of them:
	 * its bytes are not in the kernel yet (held.c, the floor). */
	uint64_t asked = atomic_load(&fl->req_seq);
	uint64_t started = held_coverable(&f->hold, asked);
	bool full = use_fsync(&k, atomic_exchange(&fl->want_fsync, 0));
	s = confirm(f, s, own);
	int err = real_sync(f, s, own, full);
	bool borrowed = s.kind == SFD_APP || s.kind == SFD_PRIV;
	if (borrowed && err && err != NOT_DONE && sticky)
		fd_note_kernel_owes(f, s.fd);

	lock_fl(f);
	fl->lease_fd = -1;
	struct lead res = { err != NOT_DONE, err == NOT_DONE ? EBADF : err, false };
	uint64_t lo = atomic_load(&fl->done_seq);
	if (res.happened && started > lo)
		atomic_store(&fl->done_seq, started);
	if (res.happened)
		tell_waiters(f, lo, started, err);
	if (res.happened && err && sticky) {
		syncerr_record(f, err);
		res.sticky = true;
	}
	if (!res.happened && flusher_owes(f))
		workers_rearm(f, since); /* the counters were reset for a sync that never ran */
	else if (started < asked && flusher_owes(f))
		held_owed_since(f, since); /* the rest promise held writes: due once they are applied */
	order_sync_ends(f, res.happened);
	fl->in_flight = false;
	drop_priv_if_idle(f);
	wake_all_locked(f);
	held_sync_ended();
	return res;
}

/* After the locks are gone: a sticky error goes into the log, and onto
 * stderr if no descriptor is left to report it. */
static void after_sticky(struct shim_file *f, int err)
{
	log_event(LOGEV_SYNC_ERROR, f, err, "deferred sync of %s failed: %s", f->path ? f->path : "?",
		  strerror(err));
	syncerr_tell_if_orphaned(f);
}

static uint64_t next_request(struct flusher *fl, bool want_fsync);

static int sync_until_w(struct shim_file *f, int own, bool own_closing, uint64_t target, bool sticky,
			struct sync_waiter *w, bool want_fsync);

/* Everyone but a group caller: request target, errors sticky or not. */
static int sync_until(struct shim_file *f, int own, bool own_closing, uint64_t target, bool sticky)
{
	return sync_until_w(f, own, own_closing, target, sticky, NULL, false);
}

static void unlink_waiter(struct shim_file *f, struct sync_waiter *w)
{
	for (struct sync_waiter **p = &f->fl.waiting; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			return;
		}
}

/*
 * Wait (leading syncs as needed) until request target is covered. own:
 * the caller's descriptor (group) or -1. w (a group caller): its request
 * is numbered here, under mu, and registered, so the sync that covers it
 * tells it its outcome (target is ignored). Returns 0, the error of the
 * sync that covered the group caller, or the caller's own EBADF.
 */
static int sync_until_w(struct shim_file *f, int own, bool own_closing, uint64_t target, bool sticky,
			struct sync_waiter *w, bool want_fsync)
{
	struct flusher *fl = &f->fl;
	int old, err = 0, sticky_err = 0;
	shim_enter();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old); /* never leave in_flight set */
	lock_fl(f);
	if (w) {
		*w = (struct sync_waiter){ next_request(fl, want_fsync), 0, false, fl->waiting };
		fl->waiting = w;
		target = w->target;
	}
	while (atomic_load(&fl->done_seq) < target) {
		if (fl->in_flight) {
			wait_locked(f);
			continue;
		}
		if (target > held_coverable(&f->hold, UINT64_MAX)) {
			/* Requests that promise held bytes: those are applied
			 * first (helping the applier), then synced. */
			unlock_fl(f);
			held_apply_file(f);
			lock_fl(f);
			if (target > held_coverable(&f->hold, UINT64_MAX))
				break; /* the applier itself: it asks only for what it can cover */
			continue;
		}
		struct lead r = lead_sync_locked(f, own, own_closing, sticky);
		if (r.sticky)
			sticky_err = r.err;
		if (!r.happened) {
			err = r.err;
			break;
		}
	}
	if (w) {
		unlink_waiter(f, w);
		if (!err && w->covered)
			err = w->err;
	}
	unlock_fl(f);
	order_synced(f); /* no longer pending if that covered its last ack */
	pthread_setcancelstate(old, NULL);
	if (sticky_err)
		after_sticky(f, sticky_err);
	shim_leave();
	return err;
}

int flusher_drain(struct shim_file *f)
{
	uint64_t target = atomic_load(&f->fl.req_seq);
	if (atomic_load(&f->fl.done_seq) >= target)
		return 0;
	uint32_t seq0 = atomic_load(&f->err_seq);
	sync_until(f, -1, false, target, true);
	return atomic_load(&f->err_seq) != seq0 ? atomic_load(&f->err_errno) : 0;
}

/*
 * Ordered defer's wait (order.c): the flusher threads are asked to sync f
 * now, and the caller sleeps until request target is covered, holding no
 * lock and not marked busy while asleep, so a signal handler that
 * interrupts it is an ordinary caller (its own deferred syncs stay
 * deferred, its writes wait in turn) instead of one passed straight to
 * the device for as long as the wait lasts. Without a flusher thread the
 * caller leads the sync itself.
 */
void flusher_await(struct shim_file *f, uint64_t target)
{
	if (atomic_load(&f->fl.done_seq) >= target)
		return;
	if (target > held_coverable(&f->hold, UINT64_MAX))
		held_apply_file(f); /* its held bytes go first: then a sync can cover target */
	if (workers_ensure(false) < 0) {
		sync_until(f, -1, false, target, true);
		return;
	}
	for (;;) {
		workers_force(f);
		workers_schedule(f, true);
		shim_enter();
		lock_fl(f);
		if (atomic_load(&f->fl.done_seq) >= target) {
			unlock_fl(f);
			shim_leave();
			return;
		}
		uint32_t seen = atomic_load(&f->fl.wake);
		f->fl.waiters++;
		unlock_fl(f);
		shim_leave();
		/* A bound, in case the hurried sync was taken by a round that
		 * began too early to cover target: ask again. */
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		syscall(SYS_futex, &f->fl.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
		shim_enter();
		lock_fl(f);
		f->fl.waiters--;
		unlock_fl(f);
		shim_leave();
	}
}

uint64_t flusher_requested(struct shim_file *f)
{
	return atomic_load(&f->fl.req_seq);
}

/* ---- requests -------------------------------------------------------------- */

/* Lock-free and async-signal-safe: number one sync request. */
static uint64_t next_request(struct flusher *fl, bool want_fsync)
{
	if (want_fsync)
		atomic_store_explicit(&fl->want_fsync, 1, memory_order_relaxed);
	return atomic_fetch_add(&fl->req_seq, 1) + 1;
}

/* seq: the request just numbered. Requests past the mark are pending: the
 * count costs no counter of its own on every request. */
static bool over_threshold(struct shim_file *f, const struct knobs *k, uint64_t seq)
{
	return seq - atomic_load_explicit(&f->fl.calls_mark, memory_order_relaxed) >= k->max_calls ||
	       dirty_bytes(f) >= k->max_bytes;
}

/* A deferred request at now (0: not read yet): numbered, the deadline
 * armed, the flusher told. Lock-free. fd is an app descriptor the flusher
 * may borrow. */
static uint64_t defer_request(struct shim_file *f, const struct knobs *k, int fd, bool want_fsync, uint64_t now)
{
	if (fd >= 0 && atomic_load_explicit(&f->fl.req_fd, memory_order_relaxed) != fd)
		atomic_store(&f->fl.req_fd, fd); /* an msync has none: keep the one offered before */
	uint64_t seq = next_request(&f->fl, want_fsync);
	order_acked(f); /* after the number: later changes wait for it */
	if (!now)
		now = trace_now();
	risk_acked(f, now);
	workers_arm(f, now);
	/* Wake the flusher once per crossing, not once per request after it. */
	bool urgent = over_threshold(f, k, seq) && workers_force(f);
	workers_schedule(f, urgent);
	return seq;
}

/* Past max_at_risk_ms the app's sync is no longer deferred: it waits, like
 * a group caller, until a real sync covers it, and gets that sync's error
 * or one the file's earlier deferred syncs left. */
static int wait_for_device(struct shim_file *f, int fd, uint64_t seq)
{
	int err = sync_until(f, fd, false, seq, true);
	return err ? err : syncerr_take(f, fd);
}

static int defer_sync(struct shim_file *f, const struct knobs *k, int fd, bool want_fsync, uint64_t now)
{
	if (atomic_load(&shim.exiting) && fd >= 0)
		return want_fsync ? LIBC(fsync)(fd) : LIBC(fdatasync)(fd);
	if (!now)
		now = trace_now();
	uint64_t seq = defer_request(f, k, fd, want_fsync, now);
	int err = 0;
	/* After queueing, so a thread retiring right now cannot miss it. */
	if (workers_ensure(false) < 0) {
		err = flusher_drain(f);
		if (fd >= 0)
			err = syncerr_take(f, fd);
	} else if (fd >= 0 && k->at_risk_ns && pace_over_ceiling(risk_oldest(f), trace_now(), k->at_risk_ns)) {
		err = wait_for_device(f, fd, seq);
	}
	if (err) {
		errno = err;
		return -1;
	}
	pthread_testcancel();
	return 0;
}

int flusher_app_sync(struct shim_file *f, const struct knobs *k, enum shim_action act, int fd,
		     bool want_fsync, uint64_t now)
{
	if (act == ACT_GROUP && fd >= 0) {
		pthread_testcancel();
		note_group_request(f, k);
		struct sync_waiter w;
		int err = sync_until_w(f, fd, false, 0, false, &w, want_fsync);
		if (err) {
			errno = err;
			return -1;
		}
		return 0;
	}
	return defer_sync(f, k, fd, want_fsync, now);
}

int flusher_defer(struct shim_file *f, int fd, bool want_fsync, uint64_t now)
{
	/* What defer_sync reads of the rule, and nothing else: each word alone. */
	struct knobs k = { .max_bytes = KNOB_ONE(f, max_bytes),
			   .max_calls = KNOB_ONE(f, max_calls),
			   .at_risk_ns = KNOB_ONE(f, at_risk_ns) };
	return defer_sync(f, &k, fd, want_fsync, now);
}

/* A write to an O_SYNC/O_DSYNC file under osync=defer with no flusher to
 * hand it to: made durable right here, on the checked descriptor (the
 * slot may be stale: a socket now holds the number). */
static void osync_inline(struct shim_file *f, int fd)
{
	if (!is_file(fd, f))
		return;
	struct real_sync_seen seen = flusher_real_sync_begins(f);
	int err = flusher_real_sync_fd(fd, false);
	flusher_real_sync_ends(f, &seen, true, err);
	if (!err)
		return;
	syncerr_record(f, err);
	fd_note_kernel_owes(f, fd);
}

void flusher_after_write(struct shim_file *f, int fd, uint32_t slot_state)
{
	if (slot_state & SLOT_OSYNC_DEFER) {
		if (atomic_load(&shim.exiting) || !workers_running()) {
			osync_inline(f, fd);
		} else {
			struct knobs k;
			knobs_of(f, &k);
			defer_request(f, &k, fd, (slot_state & SLOT_APP_OSYNC) != 0, 0);
			/* Checked after queueing: a retiring thread either sees
			 * our request or has left, and we cannot spawn one here. */
			if (!workers_running())
				osync_inline(f, fd);
		}
	}
	/* Two thresholds, each read alone (KNOB_ONE): every write pays this. */
	uint64_t wb = KNOB_ONE(f, writeback_bytes);
	if (wb) {
		uint64_t written = risk_written(&f->risk);
		uint64_t mark = atomic_load_explicit(&f->fl.wb_mark, memory_order_relaxed);
		if (written >= mark + wb && atomic_compare_exchange_strong(&f->fl.wb_mark, &mark, written)) {
			atomic_store(&f->fl.req_fd, fd);
			workers_writeback(f);
		}
	}
	if (dirty_bytes(f) >= KNOB_ONE(f, max_bytes) && workers_armed(f) && workers_force(f))
		workers_schedule(f, true);
}

/* The flusher thread's early writeback, on a leased descriptor. */
void flusher_writeback(struct shim_file *f)
{
	shim_enter();
	lock_fl(f);
	if (f->fl.in_flight) { /* a sync is writing it all anyway */
		unlock_fl(f);
		shim_leave();
		return;
	}
	f->fl.in_flight = true;
	struct sync_fd s = pick_locked(f, -1, false);
	unlock_fl(f);
	if (s.kind != SFD_NONE && is_file(s.fd, f)) {
		uint64_t t0 = trace_stamp();
		int r = LIBC(sync_file_range)(s.fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		trace_real_sync(OP_REAL_SYNC_FILE_RANGE, f, t0, trace_stamp(), 0, r, r < 0 ? errno : 0);
	}
	lock_fl(f);
	f->fl.lease_fd = -1;
	f->fl.in_flight = false;
	wake_all_locked(f);
	unlock_fl(f);
	shim_leave();
}

/* The flusher thread's deferred sync of everything requested so far. */
void flusher_sync_requested(struct shim_file *f)
{
	/* What a sync can cover now: requests past the floor wait for held
	 * writes the applier makes, which may need this very thread to sync
	 * something else first (held.c). It syncs them when they are applied. */
	sync_until(f, -1, false, held_coverable(&f->hold, atomic_load(&f->fl.req_seq)), true);
}

/* ---- held changes (held.c) -------------------------------------------------- */

/* The file again, writable, as a description of the shim's own: no
 * O_APPEND (Linux's pwrite appends on one whatever the offset) and no
 * O_DIRECT (a held copy need not be aligned). Through /proc for a
 * descriptor (the file may have no name), else by name, checked. */
static int reopen_writable(struct shim_file *f, int fd)
{
	/* The calling thread's own descriptor, then the file's name: a held
	 * write with no way to the file fails, so every way there is is tried. */
	int d = fd >= 0 ? shimfd_reopen(fd, O_WRONLY | O_NOCTTY, OWN_TEMP) : -1;
	if (d >= 0 && !is_file(d, f)) {
		shimfd_close(d);
		d = -1;
	}
	if (d < 0 && f->path && f->path[0])
		d = shimfd_open(f->path, O_WRONLY | O_NOCTTY, OWN_TEMP);
	if (d >= 0 && !is_file(d, f)) {
		shimfd_close(d);
		d = -1;
	}
	return d;
}

int flusher_apply(struct shim_file *f, int (*fn)(struct shim_file *, int, void *), void *arg)
{
	struct flusher *fl = &f->fl;
	int old;
	shim_enter();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	lock_fl(f);
	while (fl->in_flight)
		wait_locked(f);
	fl->in_flight = true; /* one at a time with the file's syncs */
	struct sync_fd s = pick_locked(f, -1, false);
	unlock_fl(f);
	s = confirm(f, s, -1);
	int fd = -1, own = -1;
	if (s.kind == SFD_APP || s.kind == SFD_PRIV) {
		int fflags = LIBC(fcntl)(s.fd, F_GETFL);
		if (fflags >= 0 && (fflags & O_ACCMODE) != O_RDONLY && !(fflags & (O_APPEND | O_DIRECT)))
			fd = s.fd;
		else
			fd = own = reopen_writable(f, s.fd);
	} else if (s.kind == SFD_NAME) {
		fd = own = reopen_writable(f, -1);
	}
	int r = fn(f, fd, arg);
	if (own >= 0)
		shimfd_close(own);
	lock_fl(f);
	fl->lease_fd = -1;
	fl->in_flight = false;
	wake_all_locked(f);
	unlock_fl(f);
	pthread_setcancelstate(old, NULL);
	shim_leave();
	return r;
}

bool flusher_can_cover_more(struct shim_file *f)
{
	return held_coverable(&f->hold, atomic_load(&f->fl.req_seq)) > atomic_load(&f->fl.done_seq);
}

void flusher_held_gone(struct shim_file *f)
{
	shim_enter();
	lock_fl(f);
	drop_priv_if_idle(f);
	unlock_fl(f);
	shim_leave();
}

void flusher_sync_to(struct shim_file *f, uint64_t target)
{
	sync_until(f, -1, false, target, true);
}

/* ---- barriers -------------------------------------------------------------- */

struct drain_batch {
	struct shim_file *files[128];
};

static bool owes_any(struct shim_file *f)
{
	return flusher_owes(f);
}

void flusher_flush_all(void)
{
	if (!atomic_load(&shim.ready))
		return;
	held_apply_all(); /* held changes reach the kernel first, in order */
	struct drain_batch b;
	uint64_t cursor = 0;
	do {
		int n = registry_collect(b.files, 128, owes_any, &cursor);
		for (int i = 0; i < n; i++) {
			flusher_drain(b.files[i]);
			file_put(b.files[i]);
		}
	} while (cursor);
}

int flusher_before_publish(int dirfd, const char *path, int at_flags)
{
	return flusher_before_publish_file(dirfd, path, at_flags, NULL, NULL);
}

int flusher_before_publish_file(int dirfd, const char *path, int at_flags, struct shim_file **published,
				uint64_t *ino)
{
	struct statx sx;
	int e = errno, err = 0;
	if (path && LIBC(statx)(dirfd, path, at_flags | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_BTIME, &sx) == 0 &&
	    S_ISREG(sx.stx_mode)) {
		if (ino)
			*ino = sx.stx_ino;
		uint64_t birth = (sx.stx_mask & STATX_BTIME)
					 ? (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec
					 : 0;
		struct shim_file *f = file_find(makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino, birth);
		if (f) {
			if (flusher_owes(f))
				flusher_drain(f);
			err = syncerr_take_unseen(f);
			if (published)
				*published = f;
			else
				file_put(f);
		}
	}
	errno = e;
	return err;
}

/* Syncs still owed, or held writes still to apply (held.c): the file
 * needs a descriptor once the app's are gone. */
static bool needs_descriptor(struct shim_file *f)
{
	return flusher_owes(f) || held_count(&f->hold);
}

/* mu held, fd the app's descriptor of f it is closing: while it needs one
 * the file keeps a descriptor of the shim's own. False when none can be
 * made (at the bound or out of descriptors): the closer syncs it itself.
 * *early: past half the bound, its sync is hurried. */
static bool keep_private_locked(struct shim_file *f, int fd, bool *early)
{
	if (!needs_descriptor(f) || atomic_load(&f->fl.priv_fd) >= 0)
		return true;
	int cap = privs_cap(), held = atomic_fetch_add(&privs_held, 1); /* a place reserved */
	privs_change_begin();
	int d = held < cap ? shimfd_dup(fd, OWN_FILE, f) : -1;
	if (d >= 0) {
		fd_inherit_kernel_owes(fd, d);
		atomic_store(&f->fl.priv_fd, d);
		*early = (held >= cap / 2 && workers_force(f)) || *early;
	} else {
		atomic_fetch_sub(&privs_held, 1);
	}
	privs_change_end();
	return d >= 0;
}

/*
 * The private descriptor is made before fd is marked closing: from then
 * on no sync may borrow fd, and one led while this closer waits for a
 * lease on it must still find a way to the file other than its name (an
 * unlinked temporary file has none, and a name that is not the file is
 * an error the disk never gave). Where none can be made, fd is not
 * marked until the closer has synced through it itself.
 */
void flusher_before_close(struct shim_file *f, int fd)
{
	struct knobs k;
	knobs_of(f, &k);
	if (k.act[CALL_CLOSE] == ACT_BARRIER && flusher_owes(f))
		sync_until(f, fd, true, atomic_load(&f->fl.req_seq), true);
	bool early = false;
	shim_enter();
	lock_fl(f);
	if (!keep_private_locked(f, fd, &early)) {
		unlock_fl(f);
		shim_leave();
		/* at the bound or out of descriptors: make it durable now */
		sync_until(f, fd, false, atomic_load(&f->fl.req_seq), true);
		shim_enter();
		lock_fl(f);
	}
	fd_mark_closing(fd); /* no new lease on it */
	while (f->fl.in_flight && f->fl.lease_fd == fd)
		wait_locked(f);
	int r = fd;
	atomic_compare_exchange_strong(&f->fl.req_fd, &r, -1);
	bool kept = keep_private_locked(f, fd, &early); /* owed again while this closer waited */
	unlock_fl(f);
	shim_leave();
	if (early)
		workers_schedule(f, true);
	if (!kept)
		sync_until(f, fd, true, atomic_load(&f->fl.req_seq), true);
}

void flusher_vacate(struct shim_file *f, int fd)
{
	shim_enter();
	lock_fl(f);
	while (f->fl.in_flight && f->fl.lease_fd == fd)
		wait_locked(f);
	if (atomic_load(&f->fl.priv_fd) == fd) {
		privs_change_begin();
		int d = needs_descriptor(f) ? shimfd_dup(fd, OWN_FILE, f) : -1;
		priv_take(f);
		if (d >= 0) {
			fd_inherit_kernel_owes(fd, d);
			atomic_fetch_add(&privs_held, 1);
			atomic_store(&f->fl.priv_fd, d);
		}
		privs_change_end();
	}
	fd_unmark_shim(fd); /* the app's dup2 closes it */
	unlock_fl(f);
	shim_leave();
}

void flusher_priv_lost(struct shim_file *f, int fd)
{
	int p = fd;
	if (atomic_compare_exchange_strong(&f->fl.priv_fd, &p, -1))
		atomic_fetch_sub(&privs_held, 1);
}

static bool has_priv(struct shim_file *f)
{
	return atomic_load(&f->fl.priv_fd) >= 0;
}

bool flusher_release_privs(void)
{
	struct shim_file *files[128];
	uint64_t cursor = 0;
	bool any = false;
	do {
		int n = registry_collect(files, 128, has_priv, &cursor);
		for (int i = 0; i < n; i++) {
			any = true;
			flusher_drain(files[i]);
			shim_enter();
			lock_fl(files[i]);
			drop_priv_if_idle(files[i]);
			unlock_fl(files[i]);
			shim_leave();
			file_put(files[i]);
		}
	} while (cursor);
	return any;
}

/* ---- fork -------------------------------------------------------------- */

static void reset_in_child(struct shim_file *f, void *arg)
{
	(void)arg;
	struct flusher *fl = &f->fl;
	int priv = atomic_load(&fl->priv_fd), req = atomic_load(&fl->req_fd);
	uint64_t seq = atomic_load(&fl->req_seq);
	/* The private descriptor served the parent's owed syncs, which stay
	 * the parent's: the child would hold it forever (it is close-on-exec
	 * only across an exec). */
	if (priv >= 0)
		shimfd_close(priv);
	workers_forget_in_child(f); /* before the reset: it knows whether f was queued */
	flusher_init_locks(f); /* a parent thread may have held them */
	flusher_reset(f);      /* the parent's flusher owns the parent's pending syncs */
	held_reset(f);         /* and its held changes, applied before the fork */
	risk_reset(f);         /* and the parent's data at risk */
	atomic_store(&fl->req_fd, req);
	atomic_store(&fl->req_seq, seq);
	atomic_store(&fl->done_seq, seq);
}

/* The child's count of private descriptors is what it kept of them. */
static void count_priv(struct shim_file *f, void *arg)
{
	(void)arg;
	if (atomic_load(&f->fl.priv_fd) >= 0)
		atomic_fetch_add(&privs_held, 1);
}

/* The forking thread holds privs_fork_mu for writing (the prepare
 * handler). It cannot unlock it here: glibc's rwlock names its writer by
 * thread id, and the child's thread has a new one. So it is made anew.
 * Under TSan only: TSan keeps the lock's owner across an init (only a
 * destroy resets it) and took the child's first read lock for a read lock
 * of a write-locked mutex; the unlock is told to it alone. */
static void privs_fork_mu_reset_in_child(void)
{
#ifdef SYNCSHIM_TSAN
	__tsan_mutex_pre_unlock(&privs_fork_mu, 0);
	__tsan_mutex_post_unlock(&privs_fork_mu, 0);
#endif
	pthread_rwlock_init(&privs_fork_mu, NULL);
}

void flusher_atfork_child(void)
{
	privs_fork_mu_reset_in_child();
	order_atfork_child(); /* before the reset below unmarks the files */
	workers_atfork_child();
	registry_each(reset_in_child, NULL);
	atomic_store(&privs_held, 0);
	registry_each(count_priv, NULL);
}
