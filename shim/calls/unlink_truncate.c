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
#include <unistd.h>

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "order.h"
#include "paths.h"
#include "shim.h"

SHIM_API int unlink(const char *path)
{
	if (!shim_bypass())
		order_before_names();
	if (crash_on() && !shim_bypass())
		crash_before_unlink(AT_FDCWD, path);
	return LIBC(unlink)(path);
}

SHIM_API int unlinkat(int dirfd, const char *path, int flags)
{
	if (!shim_bypass())
		order_before_names();
	if (crash_on() && !shim_bypass() && !(flags & AT_REMOVEDIR))
		crash_before_unlink(dirfd, path);
	return LIBC(unlinkat)(dirfd, path, flags);
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
	if (!shim_bypass())
		order_before_names();
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
	order_fd_change(fd);
	if (!crash_on() || shim_bypass() || fstat(fd, &st) != 0)
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
