/*
 * rename.c - rename, renameat, renameat2.
 *
 * A rename is an ordering point: "write tmp, fsync tmp, rename" is only
 * atomic if the fsync is durable before the rename is. Under defer the
 * source's pending syncs are completed first (flusher_before_rename).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include "flusher.h"
#include "shim.h"
#include "trace.h"

static int rename_done(struct trace_start *t, int r)
{
	int e = errno;
	trace_end(t, OP_RENAME, NULL, r, r == 0 ? 0 : e);
	errno = e;
	return r;
}

/* A source whose deferred sync failed is not renamed: write-tmp, fsync,
 * rename must not replace the target with data that never reached disk. */
#define RENAME_BEGIN(dirfd, path)                                                    \
	struct trace_start t = { 0 };                                                \
	if (!shim_bypass()) {                                                        \
		int err_ = flusher_before_rename(dirfd, path);                       \
		if (err_) {                                                          \
			errno = err_;                                                \
			return -1;                                                   \
		}                                                                    \
		trace_begin(&t);                                                     \
	}

SHIM_API int rename(const char *from, const char *to)
{
	RENAME_BEGIN(AT_FDCWD, from)
	return rename_done(&t, REAL(rename)(from, to));
}

SHIM_API int renameat(int fromdir, const char *from, int todir, const char *to)
{
	RENAME_BEGIN(fromdir, from)
	return rename_done(&t, REAL(renameat)(fromdir, from, todir, to));
}

SHIM_API int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags)
{
	RENAME_BEGIN(fromdir, from)
	return rename_done(&t, REAL(renameat2)(fromdir, from, todir, to, flags));
}
