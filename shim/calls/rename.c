/*
 * rename.c - rename, renameat, renameat2, link, linkat.
 *
 * Publishing a name for data is an ordering point: "write tmp, fsync tmp,
 * rename" is only atomic if the fsync is durable before the rename is, and
 * git's "write object, link it into place" only if the object's sync is.
 * Under defer the source's pending syncs are completed first
 * (flusher_before_publish); both files of a RENAME_EXCHANGE are, since
 * each lands under the other's name. A source whose deferred sync failed
 * is not published: the call fails with that errno and the target is left
 * alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash.h"
#include "files.h"
#include "flusher.h"
#include "log.h"
#include "order.h"
#include "shim.h"
#include "trace.h"

/* The rename's record names the file it published: its file id when the
 * shim still tracks it, its inode number in the bytes field either way
 * (log format 1.2), so a profile tells files published by rename from
 * the rest even when they were closed first, as they usually are. */
static int publish_done(struct trace_start *t, struct shim_file *f, uint64_t ino, int r)
{
	int e = errno;
	if (t->t0)
		trace_record(OP_RENAME, f, t->t0, trace_stamp(), (int64_t)(ino & INT64_MAX), r, r == 0 ? 0 : e);
	if (f)
		file_put(f);
	errno = e;
	return r;
}

/* The test hook that breaks the rename barrier on purpose, so crash
 * tests can show what it prevents (SYNCSHIM_TEST_NO_RENAME_BARRIER=1).
 * Threads may race to look it up first: both find the same answer. */
static _Atomic int no_barrier = -1;

static bool barrier_off(void)
{
	int v = atomic_load_explicit(&no_barrier, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("SYNCSHIM_TEST_NO_RENAME_BARRIER");
		v = e && strcmp(e, "1") == 0;
		atomic_store_explicit(&no_barrier, v, memory_order_relaxed);
	}
	return v;
}

/* 0, or -1 with errno set: the sync behind (dirfd, path) failed.
 * *published (if not NULL) gets the tracked file, with a reference. */
static int publish_barrier(int dirfd, const char *path, int at_flags, struct shim_file **published,
			   uint64_t *ino)
{
	log_maybe_start();
	order_before_names(); /* a new name must not get ahead of acknowledged syncs */
	if (barrier_off())
		return 0;
	int err = flusher_before_publish_file(dirfd, path, at_flags, published, ino);
	if (err) {
		if (published && *published) {
			file_put(*published);
			*published = NULL;
		}
		errno = err;
		return -1;
	}
	return 0;
}

#define RENAME_BEGIN(dirfd, path)                                                    \
	struct trace_start t = { 0 };                                                \
	struct shim_file *moved = NULL;                                              \
	uint64_t moved_ino = 0;                                                      \
	if (!shim_bypass()) {                                                        \
		if (publish_barrier(dirfd, path, AT_SYMLINK_NOFOLLOW, &moved, &moved_ino) < 0) \
			return -1;                                                   \
		trace_begin(&t);                                                     \
	}

SHIM_API int rename(const char *from, const char *to)
{
	RENAME_BEGIN(AT_FDCWD, from)
	if (!shim_bypass())
		crash_before_rename(AT_FDCWD, from, AT_FDCWD, to);
	return publish_done(&t, moved, moved_ino, LIBC(rename)(from, to));
}

SHIM_API int renameat(int fromdir, const char *from, int todir, const char *to)
{
	RENAME_BEGIN(fromdir, from)
	if (!shim_bypass())
		crash_before_rename(fromdir, from, todir, to);
	return publish_done(&t, moved, moved_ino, LIBC(renameat)(fromdir, from, todir, to));
}

SHIM_API int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags)
{
	RENAME_BEGIN(fromdir, from)
	if (!shim_bypass() && (flags & RENAME_EXCHANGE) &&
	    publish_barrier(todir, to, AT_SYMLINK_NOFOLLOW, NULL, NULL) < 0) {
		if (moved)
			file_put(moved);
		return -1;
	}
	if (!shim_bypass() && !(flags & RENAME_EXCHANGE))
		crash_before_rename(fromdir, from, todir, to);
	else if (!shim_bypass()) /* two files trade names: not something the log can undo */
		crash_limit_path(fromdir, from, "RENAME_EXCHANGE of a file in scope: its names are not rolled back");
	return publish_done(&t, moved, moved_ino, LIBC(renameat2)(fromdir, from, todir, to, flags));
}

/* link() makes a hard link to a symlink itself, never to its target. */
SHIM_API int link(const char *from, const char *to)
{
	if (!shim_bypass() && publish_barrier(AT_FDCWD, from, AT_SYMLINK_NOFOLLOW, NULL, NULL) < 0)
		return -1;
	return LIBC(link)(from, to);
}

/* AT_EMPTY_PATH names the descriptor itself (an O_TMPFILE file being given
 * its name); AT_SYMLINK_FOLLOW follows, /proc/self/fd/N links included. */
SHIM_API int linkat(int fromdir, const char *from, int todir, const char *to, int flags)
{
	int at = (flags & AT_EMPTY_PATH) | ((flags & AT_SYMLINK_FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW);
	if (!shim_bypass() && publish_barrier(fromdir, from, at, NULL, NULL) < 0)
		return -1;
	return LIBC(linkat)(fromdir, from, todir, to, flags);
}
