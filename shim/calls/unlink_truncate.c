/*
 * unlink_truncate.c - calls the shim stands in front of only for crash-test
 * mode (crash.h): unlink and unlinkat (the victim is kept, so a rollback
 * can bring it back), ftruncate, truncate and fallocate (a size change is
 * logged before it is made). Outside crash-test mode each is one load and
 * the real call.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "held.h"
#include "order.h"
#include "paths.h"
#include "shim.h"

/* A closed file the registry keeps for an unreported error (a ghost)
 * whose last name goes can never be opened again: what the name leads to
 * is looked at first (one statx, only while the shim knows some file; one
 * load otherwise), and once the unlink succeeded the ghost is dropped, or
 * a closed file still held is marked to leave none (files.c says why). */
struct unlink_victim {
	bool known;
	dev_t dev;
	ino_t ino;
	uint64_t birth;
};

static void victim_look(int dirfd, const char *path, int flags, struct unlink_victim *v)
{
	v->known = false;
	if (shim_bypass() || (flags & AT_REMOVEDIR) || !registry_has_files())
		return;
	struct statx sx;
	int e = errno;
	if (LIBC(statx)(dirfd, path, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO | STATX_NLINK | STATX_BTIME,
		  &sx) == 0 &&
	    S_ISREG(sx.stx_mode) && sx.stx_nlink == 1) {
		v->known = true;
		v->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
		v->ino = sx.stx_ino;
		v->birth = (sx.stx_mask & STATX_BTIME) ? (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec
						       : 0;
	}
	errno = e;
}

static int victim_gone(int r, const struct unlink_victim *v)
{
	if (r == 0 && v->known) {
		int e = errno;
		registry_forget_unlinked(v->dev, v->ino, v->birth);
		errno = e;
	}
	return r;
}

SHIM_API int unlink(const char *path)
{
	if (!shim_bypass())
		order_before_names();
	if (crash_on() && !shim_bypass())
		crash_before_unlink(AT_FDCWD, path);
	struct unlink_victim v;
	victim_look(AT_FDCWD, path, 0, &v);
	return victim_gone(LIBC(unlink)(path), &v);
}

SHIM_API int unlinkat(int dirfd, const char *path, int flags)
{
	if (!shim_bypass())
		order_before_names();
	if (crash_on() && !shim_bypass() && !(flags & AT_REMOVEDIR))
		crash_before_unlink(dirfd, path);
	struct unlink_victim v;
	victim_look(dirfd, path, flags, &v);
	return victim_gone(LIBC(unlinkat)(dirfd, path, flags), &v);
}

/* The size change is logged before it is made; the file's lock (held by
 * no write of ours meanwhile) is not needed: a truncation racing our own
 * write to the same file is the app's race. */
/* Ordered defer (order.h): the file's tracked object, if any. */
static void order_fd_change(int fd)
{
	if (shim_bypass())
		return;
	uint32_t state = 0;
	struct shim_file *f = fd_peek(fd, &state);
	if (f && !file_tryref(f))
		f = NULL;
	order_before_change(f);
	file_put(f);
}

static void before_ftruncate(int fd, off64_t size)
{
	order_fd_change(fd);
	if (crash_on() && !shim_bypass())
		crash_before_size(fd, NULL, (off_t)size);
}

static void before_truncate(const char *path, off64_t size)
{
	char abs[PATH_MAX];
	if (!shim_bypass()) {
		held_before_path(AT_FDCWD, path, 0); /* its held writes go first (held.c) */
		order_before_names();
	}
	if (crash_on() && !shim_bypass() && path_absolute(AT_FDCWD, path, abs, sizeof(abs)) == 0)
		crash_before_size(-1, abs, (off_t)size);
}

SHIM_API int ftruncate(int fd, off_t size)
{
	before_ftruncate(fd, size);
	return LIBC(ftruncate)(fd, size);
}

SHIM_API int ftruncate64(int fd, off64_t size)
{
	before_ftruncate(fd, size);
	return LIBC(ftruncate64)(fd, size);
}

SHIM_API int truncate(const char *path, off_t size)
{
	before_truncate(path, size);
	return LIBC(truncate)(path, size);
}

SHIM_API int truncate64(const char *path, off64_t size)
{
	before_truncate(path, size);
	return LIBC(truncate64)(path, size);
}

/* Only a growth (mode 0 past the end) changes the size a rollback must
 * restore; punching or zeroing ranges is a LIMIT of crash-test mode. */
static void before_fallocate(int fd, int mode, off64_t off, off64_t len)
{
	struct stat st;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		order_fd_bytes_unseen(fd); /* bytes moved or zeroed: no known end (order.c) */
	order_fd_change(fd);
	if (!crash_on() || shim_bypass() || LIBC(fstat)(fd, &st) != 0)
		return;
	if (mode == 0 && off + len > st.st_size)
		crash_before_size(fd, NULL, (off_t)(off + len));
	else if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_COLLAPSE_RANGE))
		crash_limit_fd(fd, "fallocate discarded bytes of a file in scope: they cannot be brought back");
}

SHIM_API int fallocate(int fd, int mode, off_t off, off_t len)
{
	before_fallocate(fd, mode, off, len);
	return LIBC(fallocate)(fd, mode, off, len);
}

SHIM_API int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	before_fallocate(fd, mode, off, len);
	return LIBC(fallocate64)(fd, mode, off, len);
}
