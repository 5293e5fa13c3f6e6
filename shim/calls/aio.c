/*
 * aio.c - Linux native AIO (io_submit): its syncs and writes under the
 * file's rule.
 *
 * libaio's io_submit is libc's syscall(SYS_io_submit, ...) (libaio.so.1
 * imports syscall), so every libaio program, and every program calling
 * syscall(SYS_io_submit) itself, comes through syscall.c to here. The
 * kernel copies each iocb inside io_submit and never reads it again (the
 * completion event carries the iocb's address, aio_data and the result),
 * so an iocb can be rewritten for the call and put back as the app made
 * it before io_submit returns:
 *
 *   FSYNC, FDSYNC   the fsync/fdatasync decision table: fdatasync makes an
 *                   FSYNC an FDSYNC; noop and defer (the file handed to
 *                   its flusher) make it a zero-length read or write of
 *                   the same descriptor, which completes with result 0,
 *                   the same aio_data and the app's own iocb address, as
 *                   the sync would have; passthrough and group leave it.
 *   PWRITE, PWRITEV the write path's accounting; RWF_SYNC/RWF_DSYNC in
 *                   aio_rw_flags as pwritev2's. Ordered like a write: the
 *                   submitter waits until what it depends on is durable.
 *   PREAD, PREADV   the file's held writes applied first (held.c): the
 *                   kernel reads what the program wrote.
 * The ordering and the reads are seen to for every iocb; the rewrites for
 * the first AIO_MAX_REWRITE.
 *
 * AIO has no way to complete a request with an error of the shim's
 * choosing: a sticky error owed to the descriptor is not taken here; its
 * FSYNC goes to the kernel unchanged and the error waits for the
 * descriptor's next libc fsync, fdatasync or close.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fdtable.h"
#include "files.h"
#include "held.h"
#include "order.h"
#include "shim.h"
#include "trace.h"
#include "uring.h"

/* Requests looked at per io_submit; beyond that, they go as they are. */
#define AIO_MAX_REWRITE 64

static char zero_len_buf; /* a valid address for the zero-length stand-ins */

struct saved_iocb {
	struct iocb *where;
	struct iocb orig;
};

/* A zero-length request on fd in the direction its access mode allows:
 * completes with 0 and touches nothing (not even mtime). */
static bool make_empty(struct iocb *cb, int fd)
{
	int fl = LIBC(fcntl)(fd, F_GETFL);
	if (fl < 0)
		return false;
	cb->aio_lio_opcode = (fl & O_ACCMODE) == O_RDONLY ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
	cb->aio_buf = (__u64)(uintptr_t)&zero_len_buf;
	cb->aio_nbytes = 0;
	cb->aio_offset = 0;
	cb->aio_rw_flags = 0;
	return true;
}

/* Before the kernel sees cb: a write in its order (InnoDB flushes its
 * data pages this way, each after a redo log sync the shim may have
 * deferred: submitted only once what it depends on is durable, its bytes
 * not followed, they land later, unseen), a read after the file's held
 * writes. */
static void aio_in_order(const struct iocb *cb)
{
	int fd = (int)cb->aio_fildes;
	switch (cb->aio_lio_opcode) {
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PWRITEV: {
		uint32_t state = 0;
		struct shim_file *f = fd_get(fd, &state);
		if (!f)
			break;
		struct iovec one = { (void *)(uintptr_t)cb->aio_buf, (size_t)cb->aio_nbytes };
		bool vec = cb->aio_lio_opcode == IOCB_CMD_PWRITEV;
		around_write_order(f, fd, (off_t)cb->aio_offset, vec ? (const struct iovec *)(uintptr_t)cb->aio_buf : &one,
				   vec ? (int)cb->aio_nbytes : 1);
		file_put(f);
		break;
	}
	case IOCB_CMD_PREAD:
	case IOCB_CMD_PREADV:
		held_before_read(fd);
		break;
	default:
		break;
	}
}

/* true: *cb was changed (the caller restores it). */
static bool aio_one(struct iocb *cb)
{
	int fd = (int)cb->aio_fildes;
	uint32_t state = 0;
	switch (cb->aio_lio_opcode) {
	case IOCB_CMD_FSYNC:
	case IOCB_CMD_FDSYNC: {
		struct shim_file *f = fd_get(fd, &state);
		if (!f)
			return false;
		int err;
		bool changed = false;
		uint8_t source = trace_source;
		trace_source = LOGREC_AIO;
		enum around_sync d = around_sync_decide(f, fd, cb->aio_lio_opcode == IOCB_CMD_FDSYNC, false, &err);
		trace_source = source;
		switch (d) {
		case AROUND_DATASYNC:
			cb->aio_lio_opcode = IOCB_CMD_FDSYNC;
			changed = true;
			break;
		case AROUND_DONE:
			changed = make_empty(cb, fd);
			break;
		default:
			break;
		}
		file_put(f);
		return changed;
	}
	case IOCB_CMD_PWRITE:
	case IOCB_CMD_PWRITEV: {
		struct shim_file *f = fd_get(fd, &state);
		if (!f)
			return false;
		uint64_t n = cb->aio_lio_opcode == IOCB_CMD_PWRITEV
				     ? writev_bytes((const struct iovec *)(uintptr_t)cb->aio_buf, (unsigned)cb->aio_nbytes)
				     : cb->aio_nbytes;
		int fl = (int)cb->aio_rw_flags, before = fl;
		around_write(f, fd, state, &fl, (off_t)cb->aio_offset, n);
		cb->aio_rw_flags = fl;
		file_put(f);
		return fl != before;
	}
	default:
		return false;
	}
}

long aio_sys_submit(long ctx, long nr, long iocbpp)
{
	if (shim_bypass() || nr <= 0 || !iocbpp)
		return LIBC(syscall)(SYS_io_submit, ctx, nr, iocbpp);
	int e = errno;
	struct iocb **cbs = (struct iocb **)iocbpp;
	struct saved_iocb saved[AIO_MAX_REWRITE];
	int nsaved = 0;
	for (long i = 0; i < nr; i++) {
		struct iocb *cb = cbs[i];
		if (!cb)
			continue;
		aio_in_order(cb);
		if (i >= AIO_MAX_REWRITE)
			continue;
		struct iocb orig = *cb;
		if (aio_one(cb))
			saved[nsaved++] = (struct saved_iocb){ cb, orig };
	}
	errno = e;
	long r = LIBC(syscall)(SYS_io_submit, ctx, nr, iocbpp);
	e = errno;
	for (int i = 0; i < nsaved; i++)
		*saved[i].where = saved[i].orig; /* the app's iocbs, as it made them */
	errno = e;
	return r;
}
