/*
 * sync.c - fsync, fdatasync, msync, sync_file_range, syncfs, sync.
 *
 * Each call looks up the file's rule and becomes what the rule says. The
 * fd is always checked with fstat first (a sync is rare next to writes,
 * and the check costs far less than the sync): a descriptor closed behind
 * our back and reused must not inherit the old file's policy. Errors and
 * errno are the real call's; on success errno is left as the app had it.
 * The no-op paths stay cancellation points, as the real calls are.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>

#include "flusher.h"
#include "reload.h"
#include "shim.h"
#include "trace.h"

#define SFR_VALID_FLAGS (SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)

static int real_sync_call(int fd, enum shim_op op)
{
	return op == OP_FSYNC ? REAL(fsync)(fd) : REAL(fdatasync)(fd);
}

/* What a skipped syncfs still owes the caller: EBADF for a bad or O_PATH
 * fd (syncfs(2) fails there too), and a cancellation point. */
static int sync_validate_fd(int fd)
{
	int fl = REAL(fcntl)(fd, F_GETFL);
	if (fl < 0)
		return -1;
	if (fl & O_PATH) {
		errno = EBADF;
		return -1;
	}
	pthread_testcancel();
	return 0;
}

/* A real sync about to start covers everything written so far. */
static int synced_call(struct shim_file *f, int fd, enum shim_op op)
{
	atomic_store_explicit(&f->dirty_bytes, 0, memory_order_relaxed);
	return real_sync_call(fd, op);
}

static int apply_sync_rule(struct shim_file *f, int fd, enum shim_op op)
{
	/* A deferred sync that failed is reported whatever the policy is now. */
	int err = fd_take_sync_error(fd, f);
	if (err) {
		errno = err;
		return -1;
	}
	switch (f->rule.sync) {
	case SYNC_NOOP:
		pthread_testcancel(); /* fd_file_checked vouched for fd: fsync(2) would not fail */
		return 0;
	case SYNC_FDATASYNC:
		return synced_call(f, fd, OP_FDATASYNC);
	case SYNC_DEFER:
	case SYNC_GROUP:
		return flusher_app_sync(f, fd, op == OP_FSYNC);
	default:
		return synced_call(f, fd, op);
	}
}

static int sync_call(int fd, enum shim_op op)
{
	if (shim_bypass())
		return real_sync_call(fd, op);
	int e0 = errno;
	uint32_t state = 0;
	struct shim_file *f = fd_file_checked(fd, &state);
	errno = e0;
	if (!f)
		return real_sync_call(fd, op);
	reload_maybe_start();
	struct trace_start t;
	trace_begin(&t);
	int r = apply_sync_rule(f, fd, op);
	int e = r == 0 ? e0 : errno;
	trace_end(&t, op, f, r, r == 0 ? 0 : e);
	errno = e;
	return r;
}

SHIM_API int fsync(int fd)
{
	return sync_call(fd, OP_FSYNC);
}

SHIM_API int fdatasync(int fd)
{
	return sync_call(fd, OP_FDATASYNC);
}

SHIM_API int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	if (shim_bypass())
		return REAL(sync_file_range)(fd, off, n, flags);
	int e0 = errno;
	uint32_t state = 0;
	struct shim_file *f = fd_file_checked(fd, &state);
	errno = e0;
	if (!f || f->rule.sync != SYNC_NOOP)
		return REAL(sync_file_range)(fd, off, n, flags);
	struct trace_start t;
	trace_begin(&t);
	int r;
	if (flags & ~SFR_VALID_FLAGS) {
		errno = EINVAL;
		r = -1;
	} else {
		/* flags 0: the kernel validates fd and range and does no I/O */
		r = REAL(sync_file_range)(fd, off, n, 0);
	}
	int e = r == 0 ? e0 : errno;
	trace_end(&t, OP_SYNC_FILE_RANGE, f, r, r == 0 ? 0 : e);
	errno = e;
	return r;
}

/* On Linux msync(MS_SYNC) already writes data only (it is an fdatasync
 * of the range), so the fdatasync policy leaves it alone. */
/* Flags the kernel would reject go to the kernel, so the caller gets its
 * EINVAL rather than our success. */
static bool msync_flags_valid(int flags)
{
	return !(flags & ~(MS_SYNC | MS_ASYNC | MS_INVALIDATE)) &&
	       (flags & (MS_SYNC | MS_ASYNC)) != (MS_SYNC | MS_ASYNC);
}

SHIM_API int msync(void *addr, size_t len, int flags)
{
	if (shim_bypass() || !(flags & MS_SYNC) || !msync_flags_valid(flags))
		return REAL(msync)(addr, len, flags);
	int e0 = errno;
	struct shim_file *f = mmap_track_find(addr, len);
	errno = e0;
	if (!f)
		return REAL(msync)(addr, len, flags);
	struct trace_start t;
	trace_begin(&t);
	int r;
	int async_flags = (flags & ~MS_SYNC) | MS_ASYNC; /* validates, no I/O */
	switch (f->rule.sync) {
	case SYNC_NOOP:
		r = REAL(msync)(addr, len, async_flags);
		break;
	case SYNC_DEFER:
		/* deferred to the file's private descriptor when it has one */
		if (f->fl.fd < 0) {
			r = REAL(msync)(addr, len, flags);
			break;
		}
		r = REAL(msync)(addr, len, async_flags);
		if (r == 0)
			r = flusher_app_sync(f, -1, false);
		break;
	default: /* group: one mapping's msync is not batched; same durability */
		r = REAL(msync)(addr, len, flags);
	}
	int e = r == 0 ? e0 : errno;
	trace_end(&t, OP_MSYNC, f, r, r == 0 ? 0 : e);
	file_put(f);
	errno = e;
	return r;
}

/* syncfs and sync are not about one file: the file's rule (syncfs on a
 * tracked file) or the [shim] default decides. Pending deferred syncs are
 * flushed first so "everything before sync() is durable" still holds. */
SHIM_API int syncfs(int fd)
{
	if (shim_bypass())
		return REAL(syncfs)(fd);
	int e0 = errno;
	uint32_t state = 0;
	struct shim_file *f = fd_file_checked(fd, &state);
	const struct rule *r = f ? &f->rule : &shim_policy()->deflt;
	errno = e0;
	struct trace_start t;
	trace_begin(&t);
	int ret;
	if (r->sync == SYNC_NOOP) {
		ret = sync_validate_fd(fd);
	} else {
		flusher_flush_all();
		ret = REAL(syncfs)(fd);
	}
	int e = ret == 0 ? e0 : errno;
	trace_end(&t, OP_SYNCFS, f, ret, ret == 0 ? 0 : e);
	errno = e;
	return ret;
}

SHIM_API void sync(void)
{
	if (shim_bypass()) {
		REAL(sync)();
		return;
	}
	int e0 = errno;
	struct trace_start t;
	trace_begin(&t);
	if (shim_policy()->deflt.sync != SYNC_NOOP) {
		flusher_flush_all();
		REAL(sync)();
	}
	trace_end(&t, OP_SYNC, NULL, 0, 0);
	errno = e0;
}
