/*
 * reads.c - calls that read a file's bytes or its size without moving a
 * descriptor's position: pread and preadv (and glibc's fortified forms),
 * fstat, stat, lstat, fstatat, statx, and glibc's older __xstat names that
 * binaries built before glibc 2.33 call.
 *
 * Their one job: the program reads what it wrote, its held writes
 * (shim/defer/held.c) included. A positioned read lays them over the
 * kernel's bytes (held_preadv), fstat's size counts them; a call by path
 * has them applied first. While nothing is held that is one relaxed load.
 * The shim's own reads call libc's directly (LIBC()), never these.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "calls.h"
#include "held.h"
#include "shim.h"

static inline bool anything_held(void)
{
	return unlikely(atomic_load_explicit(&held_files, memory_order_relaxed) != 0);
}

static ssize_t kernel_preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return LIBC(preadv)(fd, iov, cnt, off);
}

SHIM_API ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	if (anything_held())
		return held_preadv(fd, &(struct iovec){ buf, n }, 1, off, kernel_preadv);
	return LIBC(pread)(fd, buf, n, off);
}

SHIM_API ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	if (anything_held())
		return held_preadv(fd, &(struct iovec){ buf, n }, 1, off, kernel_preadv);
	return LIBC(pread64)(fd, buf, n, off);
}

SHIM_API ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	if (anything_held())
		return held_preadv(fd, iov, cnt, off, kernel_preadv);
	return LIBC(preadv)(fd, iov, cnt, off);
}

SHIM_API ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	if (anything_held())
		return held_preadv(fd, iov, cnt, off, kernel_preadv);
	return LIBC(preadv64)(fd, iov, cnt, off);
}

/* _FORTIFY_SOURCE's read and pread: libc's check (it aborts when the
 * buffer is smaller than the count), then the read. */
SHIM_API ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	held_before_read(fd);
	return LIBC(__read_chk)(fd, buf, n, buflen);
}

SHIM_API ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (anything_held() && n <= buflen)
		return held_preadv(fd, &(struct iovec){ buf, n }, 1, off, kernel_preadv);
	return LIBC(__pread_chk)(fd, buf, n, off, buflen);
}

SHIM_API ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
	if (anything_held() && n <= buflen)
		return held_preadv(fd, &(struct iovec){ buf, n }, 1, off, kernel_preadv);
	return LIBC(__pread64_chk)(fd, buf, n, off, buflen);
}

/* A descriptor's size counts its file's held writes. */
#define SIZED(fd, r, size)                                                           \
	do {                                                                         \
		if ((r) == 0 && anything_held())                                     \
			(size) = (off_t)held_size((fd), (uint64_t)(size));            \
	} while (0)

SHIM_API int fstat(int fd, struct stat *st)
{
	int r = LIBC(fstat)(fd, st);
	SIZED(fd, r, st->st_size);
	return r;
}

SHIM_API int fstat64(int fd, struct stat64 *st)
{
	int r = LIBC(fstat64)(fd, st);
	SIZED(fd, r, st->st_size);
	return r;
}

SHIM_API int stat(const char *path, struct stat *st)
{
	held_before_path(AT_FDCWD, path, 0);
	return LIBC(stat)(path, st);
}

SHIM_API int stat64(const char *path, struct stat64 *st)
{
	held_before_path(AT_FDCWD, path, 0);
	return LIBC(stat64)(path, st);
}

SHIM_API int lstat(const char *path, struct stat *st)
{
	held_before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
	return LIBC(lstat)(path, st);
}

SHIM_API int lstat64(const char *path, struct stat64 *st)
{
	held_before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
	return LIBC(lstat64)(path, st);
}

/* The *at forms: with AT_EMPTY_PATH and an empty path, dirfd's own file
 * (its size counted as fstat's); else a path. */
static bool of_fd(const char *path, int flags)
{
	return (flags & AT_EMPTY_PATH) && path && !path[0];
}

SHIM_API int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	if (of_fd(path, flags)) {
		int r = LIBC(fstatat)(dirfd, path, st, flags);
		SIZED(dirfd, r, st->st_size);
		return r;
	}
	held_before_path(dirfd, path, flags & AT_SYMLINK_NOFOLLOW);
	return LIBC(fstatat)(dirfd, path, st, flags);
}

SHIM_API int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	if (of_fd(path, flags)) {
		int r = LIBC(fstatat64)(dirfd, path, st, flags);
		SIZED(dirfd, r, st->st_size);
		return r;
	}
	held_before_path(dirfd, path, flags & AT_SYMLINK_NOFOLLOW);
	return LIBC(fstatat64)(dirfd, path, st, flags);
}

SHIM_API int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *sx)
{
	if (of_fd(path, flags)) {
		int r = LIBC(statx)(dirfd, path, flags, mask, sx);
		if (r == 0 && anything_held() && (sx->stx_mask & STATX_SIZE))
			sx->stx_size = held_size(dirfd, sx->stx_size);
		return r;
	}
	held_before_path(dirfd, path, flags & AT_SYMLINK_NOFOLLOW);
	return LIBC(statx)(dirfd, path, flags, mask, sx);
}

SHIM_API int __fxstat(int ver, int fd, struct stat *st)
{
	int r = LIBC(__fxstat)(ver, fd, st);
	SIZED(fd, r, st->st_size);
	return r;
}

SHIM_API int __fxstat64(int ver, int fd, struct stat64 *st)
{
	int r = LIBC(__fxstat64)(ver, fd, st);
	SIZED(fd, r, st->st_size);
	return r;
}

SHIM_API int __xstat(int ver, const char *path, struct stat *st)
{
	held_before_path(AT_FDCWD, path, 0);
	return LIBC(__xstat)(ver, path, st);
}

SHIM_API int __xstat64(int ver, const char *path, struct stat64 *st)
{
	held_before_path(AT_FDCWD, path, 0);
	return LIBC(__xstat64)(ver, path, st);
}

SHIM_API int __lxstat(int ver, const char *path, struct stat *st)
{
	held_before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
	return LIBC(__lxstat)(ver, path, st);
}

SHIM_API int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	held_before_path(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
	return LIBC(__lxstat64)(ver, path, st);
}

SHIM_API int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	if (of_fd(path, flags)) {
		int r = LIBC(__fxstatat)(ver, dirfd, path, st, flags);
		SIZED(dirfd, r, st->st_size);
		return r;
	}
	held_before_path(dirfd, path, flags & AT_SYMLINK_NOFOLLOW);
	return LIBC(__fxstatat)(ver, dirfd, path, st, flags);
}

SHIM_API int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	if (of_fd(path, flags)) {
		int r = LIBC(__fxstatat64)(ver, dirfd, path, st, flags);
		SIZED(dirfd, r, st->st_size);
		return r;
	}
	held_before_path(dirfd, path, flags & AT_SYMLINK_NOFOLLOW);
	return LIBC(__fxstatat64)(ver, dirfd, path, st, flags);
}
