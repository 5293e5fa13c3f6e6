/*
 * sync.c - fsync, fdatasync, msync, sync_file_range, syncfs, sync.
 *
 * Each call looks up the file's rule and becomes what the rule says. The
 * fd is checked against the kernel first (fd_get: a descriptor closed
 * behind our back and reused must not inherit the old file's policy), and
 * the file is held by a reference for the length of the call, so another
 * thread closing its last descriptor cannot recycle it under us. Errors
 * and errno are the real call's; on success errno is left as the app had
 * it. The no-op paths stay cancellation points, as the real calls are.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "knobs.h"
#include "live.h"
#include "log.h"
#include "mmap_track.h"
#include "order.h"
#include "reload.h"
#include "risk.h"
#include "shim.h"
#include "snapshot.h"
#include "syncerr.h"
#include "trace.h"

#define SFR_VALID_FLAGS (SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)

static int real_sync_call(int fd, enum shim_op op)
{
	return op == OP_FSYNC ? LIBC(fsync)(fd) : LIBC(fdatasync)(fd);
}

/* What a skipped syncfs still owes the caller: EBADF for a bad or O_PATH
 * fd (syncfs(2) fails there too), and a cancellation point. */
static int sync_validate_fd(int fd)
{
	int fl = LIBC(fcntl)(fd, F_GETFL);
	if (fl < 0)
		return -1;
	if (fl & O_PATH) {
		errno = EBADF;
		return -1;
	}
	pthread_testcancel();
	return 0;
}

/* The app's own real sync, on the spot: the observers hear of it as of
 * the flusher's (flusher_real_sync_ends), and a report the kernel owes
 * this descriptor of an error the shim already told it is not the
 * result (flusher_real_sync_fd). */
static int synced_call(struct shim_file *f, int fd, enum shim_op op)
{
	held_apply_file(f); /* a real sync covers what the program wrote, held or not */
	struct real_sync_seen seen = flusher_real_sync_begins(f);
	int err = flusher_real_sync_fd(fd, op == OP_FSYNC);
	flusher_real_sync_ends(f, &seen, true, err);
	if (!err)
		return 0;
	errno = err;
	return -1;
}

/* now: when the call began (CLOCK_MONOTONIC ns; 0: not read). */
static int apply_sync_rule(struct shim_file *f, const struct knobs *k, int fd, enum shim_op op, uint64_t now)
{
	/* A deferred sync that failed is reported whatever the policy is now. */
	int err = syncerr_take(f, fd);
	if (err) {
		errno = err;
		return -1;
	}
	enum shim_action act = k->act[op == OP_FSYNC ? CALL_FSYNC : CALL_FDATASYNC];
	switch (act) {
	case ACT_NOOP:
		pthread_testcancel(); /* fd_get vouched for fd: fsync(2) would not fail */
		risk_acked(f, trace_now());
		return 0;
	case ACT_DATASYNC:
		return synced_call(f, fd, OP_FDATASYNC);
	case ACT_DEFER:
	case ACT_GROUP:
		return flusher_app_sync(f, k, act, fd, op == OP_FSYNC, now);
	default:
		return synced_call(f, fd, op);
	}
}

/* Crash-test mode: a synced directory makes its entries durable. */
static int untracked_sync(int fd, enum shim_op op)
{
	uint64_t upto = crash_mark_any();
	int r = real_sync_call(fd, op);
	if (r == 0)
		crash_synced_untracked(fd, upto);
	return r;
}

/*
 * Every wrapper below has one shape, as SQLite's vfstrace gives each of its
 * methods the same few lines:
 *
 *	if (shim_bypass())
 *		return the real call;
 *	app_sync_open(&s, the file the call is about);  with a reference, its rule
 *	if (the shim does not act on it)
 *		return the real call (app_sync_drop first);
 *	app_sync_begin(&s, counts);                      the clocks start
 *	return app_sync_end(&s, op, what the decision says);  the one place the
 *	                                                      observers hear of it
 *
 * The decision is read once, from the file's copy of the decision table
 * (s.k.act[call]), by one switch. What happened reaches the observers in
 * app_sync_end: the live counters (the app's sync and how long it took),
 * the latency log (trace_end), then the reference goes and errno is the
 * real call's on failure, the app's own on success. A real sync the call
 * makes on the spot (synced_call) tells data at risk, crash-test mode and
 * the live counters through the flusher's one place for every real sync
 * (flusher_real_sync_ends); a deferred one is the flusher's own.
 */
struct app_sync {
	struct shim_file *f;   /* with a reference; NULL: not a tracked file */
	struct knobs k;        /* f's rule; ACT_PASS for every call when f is NULL */
	int e0;                /* the app's errno, left as it was on success */
	bool counted;          /* one of the app's syncs, in the live counters */
	uint64_t live_t0;
	struct trace_start t;
};

/* The call is about f (a reference, or NULL), found without touching
 * errno (file_of_fd, file_of_range). */
static void app_sync_open(struct app_sync *s, struct shim_file *f)
{
	*s = (struct app_sync){ .f = f, .e0 = errno };
	if (f)
		knobs_of(f, &s->k);
}

/* The file behind fd, with a reference (fd_get checks the number); errno
 * as it was. */
static struct shim_file *file_of_fd(int fd)
{
	int e0 = errno;
	uint32_t state = 0;
	struct shim_file *f = fd_get(fd, &state);
	errno = e0;
	return f;
}

/* The file mapped over [addr, addr+len), with a reference; errno as it was. */
static struct shim_file *file_of_range(void *addr, size_t len)
{
	int e0 = errno;
	struct shim_file *f = mmap_track_find(addr, len);
	errno = e0;
	return f;
}

/* A sync of a descriptor the shim does not track: the real call. A
 * directory's is logged (file id 0, LOGREC_DIRECTORY) so a profile can
 * say the program syncs directories; the fstat is paid only while a log
 * is on, beside a real sync. */
static int pass_sync(int fd, enum shim_op op)
{
	struct trace_start t;
	trace_begin(&t);
	int r = crash_on() ? untracked_sync(fd, op) : real_sync_call(fd, op);
	if (t.t0) {
		int e = errno;
		struct stat st;
		if (LIBC(fstat)(fd, &st) == 0 && S_ISDIR(st.st_mode))
			trace_end_flags(&t, op, NULL, r, r == 0 ? 0 : e, LOGREC_DIRECTORY);
		errno = e;
	}
	return r;
}

/* The slow-path chores every tracked call may do. */
static void chores(void)
{
	log_maybe_start();
	live_maybe_start();
	reload_maybe_start();
}

/* The shim acts on the call from here. counts: an app's sync of a tracked
 * file (fsync, fdatasync, msync), which runs the chores and is timed for
 * the live counters; untimed: one the rule answers with no work at all
 * (noop), counted as taking no time without reading a clock (the sync
 * path of a policy that keeps nothing costs next to nothing). */
static void app_sync_begin_as(struct app_sync *s, bool counts, bool untimed)
{
	if (counts && s->f)
		chores();
	s->counted = counts && s->f && s->f->live;
	trace_begin(&s->t);
	s->live_t0 = s->counted && !untimed ? trace_now() : 0;
}

static void app_sync_begin(struct app_sync *s, bool counts)
{
	app_sync_begin_as(s, counts, false);
}

/* The call ended with r (-1: errno says why): the observers hear of it. */
static int app_sync_end(struct app_sync *s, enum shim_op op, int r)
{
	int e = r == 0 ? s->e0 : errno;
	if (s->counted)
		live_app_synced(s->f, s->live_t0 ? trace_now() - s->live_t0 : 0);
	trace_end(&s->t, op, s->f, r, r == 0 ? 0 : e);
	file_put(s->f);
	errno = e;
	return r;
}

/* The shim leaves the call alone: the real call follows, untraced. */
static void app_sync_drop(struct app_sync *s)
{
	file_put(s->f);
}

/* fsync or fdatasync of a number the shim does not track. A number the
 * shim holds for itself (its log, the live counters' file for a moment)
 * is one the app closed: the app gets the EBADF it would get without the
 * shim, never a sync of the shim's file. */
static int untracked_sync_call(int fd, enum shim_op op)
{
	if (fd_shim_owner(fd, NULL) != OWN_NONE) {
		errno = EBADF;
		return -1;
	}
	return pass_sync(fd, op);
}

/*
 * A sync the rule answers with no work (noop), with no latency log to
 * write: the decision is one byte of the file's rule, the error a
 * deferred sync left is reported first as always, the live counters and
 * data at risk hear of it without a clock read. The policy that keeps
 * nothing costs about what libeatmydata's does. false: not such a call
 * (the general path below).
 */
static bool noop_answered(struct shim_file *f, int fd, enum shim_op op, int *ret)
{
	if (atomic_load_explicit(&trace_on, memory_order_relaxed) ||
	    __atomic_load_n(&f->knobs.act[op == OP_FSYNC ? CALL_FSYNC : CALL_FDATASYNC], __ATOMIC_RELAXED) != ACT_NOOP)
		return false;
	int e0 = errno, err = syncerr_take(f, fd);
	if (err) {
		*ret = -1;
		errno = err;
		return true;
	}
	chores();
	if (f->live)
		live_app_synced(f, 0);
	risk_acked_at_once(f);
	errno = e0;
	pthread_testcancel(); /* fd_get vouched for fd: fsync(2) would not fail */
	*ret = 0;
	return true;
}

/*
 * The same for a sync the rule defers, the policy's whole point: the
 * general path's steps with nothing to spare (one byte of the rule read,
 * not the whole copy; the flusher reads its thresholds alone; one clock
 * read each side for the live counters, the first also the request's
 * time). With a latency log on, the general path.
 */
static bool defer_answered(struct shim_file *f, int fd, enum shim_op op, int *ret)
{
	if (atomic_load_explicit(&trace_on, memory_order_relaxed) ||
	    __atomic_load_n(&f->knobs.act[op == OP_FSYNC ? CALL_FSYNC : CALL_FDATASYNC], __ATOMIC_RELAXED) != ACT_DEFER)
		return false;
	int e0 = errno;
	chores();
	uint64_t t0 = trace_now();
	int err = syncerr_take(f, fd), r = 0;
	if (err) {
		errno = err;
		r = -1;
	} else {
		r = flusher_defer(f, fd, op == OP_FSYNC, t0);
	}
	int e = r == 0 ? e0 : errno;
	if (f->live)
		live_app_synced(f, trace_now() - t0);
	errno = e;
	*ret = r;
	return true;
}

static int sync_call(int fd, enum shim_op op)
{
	if (shim_bypass())
		return real_sync_call(fd, op);
	struct shim_file *nf = file_of_fd(fd);
	int nr;
	if (nf && (noop_answered(nf, fd, op, &nr) || defer_answered(nf, fd, op, &nr))) {
		file_put(nf);
		return nr;
	}
	struct app_sync s;
	app_sync_open(&s, nf);
	if (!s.f)
		return untracked_sync_call(fd, op);
	app_sync_begin_as(&s, true, s.k.act[op == OP_FSYNC ? CALL_FSYNC : CALL_FDATASYNC] == ACT_NOOP);
	return app_sync_end(&s, op, apply_sync_rule(s.f, &s.k, fd, op, s.live_t0));
}

SHIM_API int fsync(int fd)
{
	return sync_call(fd, OP_FSYNC);
}

SHIM_API int fdatasync(int fd)
{
	return sync_call(fd, OP_FDATASYNC);
}

/* sync_file_range under noop: checked by the kernel (flags 0: it validates
 * fd and range and does no I/O), nothing written. */
static int sync_file_range_noop(int fd, off64_t off, off64_t n, unsigned int flags)
{
	if (flags & ~SFR_VALID_FLAGS) {
		errno = EINVAL;
		return -1;
	}
	return LIBC(sync_file_range)(fd, off, n, 0);
}

SHIM_API int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	if (shim_bypass())
		return LIBC(sync_file_range)(fd, off, n, flags);
	struct app_sync s;
	app_sync_open(&s, file_of_fd(fd));
	if (s.k.act[CALL_SYNC_FILE_RANGE] != ACT_NOOP) {
		if (s.f)
			held_apply_file(s.f); /* what it writes back is what the program wrote */
		app_sync_drop(&s);
		return LIBC(sync_file_range)(fd, off, n, flags);
	}
	app_sync_begin(&s, false);
	return app_sync_end(&s, OP_SYNC_FILE_RANGE, sync_file_range_noop(fd, off, n, flags));
}

/* Flags the kernel would reject go to the kernel, so the caller gets its
 * EINVAL rather than our success. */
static bool msync_flags_valid(int flags)
{
	return !(flags & ~(MS_SYNC | MS_ASYNC | MS_INVALIDATE)) &&
	       (flags & (MS_SYNC | MS_ASYNC)) != (MS_SYNC | MS_ASYNC);
}

/* msync under defer: validated with MS_ASYNC (no I/O), then a deferred
 * request, if the flusher will have a way to the file; else the real one.
 * An error no descriptor has reported yet is reported here. */
static int msync_defer(struct shim_file *f, const struct knobs *k, void *addr, size_t len, int flags)
{
	if (!flusher_can_reach(f))
		return LIBC(msync)(addr, len, flags);
	int r = LIBC(msync)(addr, len, (flags & ~MS_SYNC) | MS_ASYNC);
	if (r != 0)
		return r;
	order_unordered_path(f, "stores through shared mappings"); /* made before this, unseen */
	int err = syncerr_take_unseen(f);
	if (err) {
		errno = err;
		return -1;
	}
	return flusher_app_sync(f, k, ACT_DEFER, -1, false, 0);
}

static int apply_msync_rule(struct shim_file *f, const struct knobs *k, void *addr, size_t len, int flags)
{
	switch (k->act[CALL_MSYNC]) {
	case ACT_NOOP: {
		int r = LIBC(msync)(addr, len, (flags & ~MS_SYNC) | MS_ASYNC);
		if (r == 0)
			risk_acked(f, trace_now());
		return r;
	}
	case ACT_DEFER:
		return msync_defer(f, k, addr, len, flags);
	default:
		return LIBC(msync)(addr, len, flags);
	}
}

/* On Linux msync(MS_SYNC) already writes data only (it is an fdatasync
 * of the range), so the fdatasync policy leaves it alone. */
SHIM_API int msync(void *addr, size_t len, int flags)
{
	if (shim_bypass() || !(flags & MS_SYNC) || !msync_flags_valid(flags))
		return LIBC(msync)(addr, len, flags);
	struct app_sync s;
	app_sync_open(&s, file_of_range(addr, len));
	if (!s.f)
		return LIBC(msync)(addr, len, flags);
	app_sync_begin(&s, true);
	return app_sync_end(&s, OP_MSYNC, apply_msync_rule(s.f, &s.k, addr, len, flags));
}

/* What the [shim] default rule does to a call that is not about a file. */
static enum shim_action default_action(enum shim_call call)
{
	unsigned ticket;
	enum shim_action a = rule_decide(&policy_enter(&ticket)->deflt, call);
	policy_leave(ticket);
	return a;
}

/* A syncfs the rule lets through: pending deferred syncs first, so
 * "everything before syncfs() is durable" still holds. */
static int syncfs_flushed(int fd)
{
	flusher_flush_all();
	uint64_t upto = crash_mark_any();
	int r = LIBC(syncfs)(fd);
	struct stat st;
	if (r == 0 && upto && LIBC(fstat)(fd, &st) == 0)
		crash_durable_dev(st.st_dev, upto);
	return r;
}

/* syncfs and sync are not about one file: the file's rule (syncfs on a
 * tracked file) or the [shim] default decides. Pending deferred syncs are
 * flushed first so "everything before sync() is durable" still holds. */
SHIM_API int syncfs(int fd)
{
	if (shim_bypass())
		return LIBC(syncfs)(fd);
	if (fd_shim_owner(fd, NULL) != OWN_NONE) { /* the app's closed number, the shim's now: as fsync */
		errno = EBADF;
		return -1;
	}
	struct app_sync s;
	app_sync_open(&s, file_of_fd(fd));
	enum shim_action act = s.f ? s.k.act[CALL_SYNCFS] : default_action(CALL_SYNCFS);
	app_sync_begin(&s, false);
	return app_sync_end(&s, OP_SYNCFS, act == ACT_NOOP ? sync_validate_fd(fd) : syncfs_flushed(fd));
}

SHIM_API void sync(void)
{
	if (shim_bypass()) {
		LIBC(sync)();
		return;
	}
	struct app_sync s;
	app_sync_open(&s, NULL);
	app_sync_begin(&s, false);
	if (default_action(CALL_SYNCFS) != ACT_NOOP) {
		flusher_flush_all();
		uint64_t upto = crash_mark_any();
		LIBC(sync)();
		crash_durable_dev(0, upto);
	}
	app_sync_end(&s, OP_SYNC, 0);
}
