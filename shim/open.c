/*
 * open.c - the open family: O_SYNC/O_DSYNC as durability requests.
 *
 * The rule is chosen from the path before the real open, because an
 * O_SYNC open may have to become O_DSYNC or plain before the kernel sees
 * it. After the open, a regular file's descriptor is bound to its
 * shim_file; anything else is marked pass-through with the one fstat.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

#include "flusher.h"
#include "reload.h"
#include "shim.h"
#include "trace.h"

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

struct open_req {
	bool track;
	uint32_t slot_flags;
	struct trace_start t;
	char path[PATH_MAX];
};

int open_adjust_flags(const struct rule *r, int flags, uint32_t *slot_flags)
{
	if ((flags & O_SYNC) == O_SYNC)
		*slot_flags = SLOT_APP_OSYNC;
	else if (flags & O_DSYNC)
		*slot_flags = SLOT_APP_ODSYNC;
	else
		return flags;
	switch (rule_osync(r)) {
	case OSYNC_DSYNC:
		return (flags & ~O_SYNC) | O_DSYNC; /* O_SYNC contains the O_DSYNC bit */
	case OSYNC_STRIP:
		return flags & ~O_SYNC;
	case OSYNC_DEFER:
		*slot_flags |= SLOT_OSYNC_DEFER;
		return flags & ~O_SYNC;
	default:
		return flags;
	}
}

static bool open_needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* Policies are for regular files: a device or FIFO that a rule's glob
 * happens to match keeps the O_SYNC/O_DSYNC it was opened with. Only
 * checked for O_(D)SYNC opens, which are rare. */
static bool names_regular_or_new(int dirfd, const char *path, int flags)
{
	struct stat st;
	int at = (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0;
	if (fstatat(dirfd, path, &st, at) != 0)
		return true; /* about to be created: a regular file */
	return S_ISREG(st.st_mode);
}

static int open_begin(struct open_req *q, int dirfd, const char *path, int flags)
{
	q->track = false;
	q->slot_flags = 0;
	if (shim_bypass() || !path || (flags & O_PATH))
		return flags;
	int e0 = errno;
	if (path_absolute(dirfd, path, q->path, sizeof(q->path)) == 0) {
		q->track = true;
		if ((flags & O_DSYNC) && !names_regular_or_new(dirfd, path, flags))
			q->slot_flags = (flags & O_SYNC) == O_SYNC ? SLOT_APP_OSYNC : SLOT_APP_ODSYNC;
		else
			flags = open_adjust_flags(policy_match(shim_policy(), q->path), flags, &q->slot_flags);
		trace_begin(&q->t);
	}
	errno = e0;
	return flags;
}

static int open_end(struct open_req *q, int fd)
{
	if (!q->track) {
		if (fd >= 0 && !shim_bypass()) /* O_PATH: forget whatever held this number */
			file_put(fd_unbind(fd));
		return fd;
	}
	int e = errno;
	struct shim_file *f = NULL;
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			fd_bind_pass(fd);
		else if ((f = file_lookup_or_create(&st, q->path))) {
			reload_maybe_start();
			fd_bind(fd, f, q->slot_flags);
			flusher_prepare(f, fd, q->slot_flags);
		}
		else
			file_put(fd_unbind(fd));
	}
	if (f || fd < 0)
		trace_end(&q->t, OP_OPEN, f, fd, fd < 0 ? e : 0);
	errno = e;
	return fd;
}

#define OPEN_PATH_WRAPPER(name)                                                      \
	SHIM_API int name(const char *path, int flags, ...)                          \
	{                                                                            \
		mode_t mode = 0;                                                     \
		if (open_needs_mode(flags)) {                                        \
			va_list ap;                                                  \
			va_start(ap, flags);                                         \
			mode = (mode_t)va_arg(ap, int);                              \
			va_end(ap);                                                  \
		}                                                                    \
		struct open_req q;                                                   \
		int fl = open_begin(&q, AT_FDCWD, path, flags);                      \
		return open_end(&q, REAL(name)(path, fl, mode));                     \
	}

#define OPENAT_WRAPPER(name)                                                         \
	SHIM_API int name(int dirfd, const char *path, int flags, ...)               \
	{                                                                            \
		mode_t mode = 0;                                                     \
		if (open_needs_mode(flags)) {                                        \
			va_list ap;                                                  \
			va_start(ap, flags);                                         \
			mode = (mode_t)va_arg(ap, int);                              \
			va_end(ap);                                                  \
		}                                                                    \
		struct open_req q;                                                   \
		int fl = open_begin(&q, dirfd, path, flags);                         \
		return open_end(&q, REAL(name)(dirfd, path, fl, mode));              \
	}

/* _FORTIFY_SOURCE variants: called without O_CREAT, so there is no mode. */
#define FORTIFY_PATH_WRAPPER(name)                                                   \
	SHIM_API int name(const char *path, int flags)                               \
	{                                                                            \
		struct open_req q;                                                   \
		int fl = open_begin(&q, AT_FDCWD, path, flags);                      \
		return open_end(&q, REAL(name)(path, fl));                           \
	}

#define FORTIFY_AT_WRAPPER(name)                                                     \
	SHIM_API int name(int dirfd, const char *path, int flags)                    \
	{                                                                            \
		struct open_req q;                                                   \
		int fl = open_begin(&q, dirfd, path, flags);                         \
		return open_end(&q, REAL(name)(dirfd, path, fl));                    \
	}

/* creat() cannot ask for O_SYNC, but its files still need binding. */
#define CREAT_WRAPPER(name)                                                          \
	SHIM_API int name(const char *path, mode_t mode)                             \
	{                                                                            \
		struct open_req q;                                                   \
		open_begin(&q, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);        \
		return open_end(&q, REAL(name)(path, mode));                         \
	}

OPEN_PATH_WRAPPER(open)
OPEN_PATH_WRAPPER(open64)
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)
FORTIFY_PATH_WRAPPER(__open_2)
FORTIFY_PATH_WRAPPER(__open64_2)
FORTIFY_AT_WRAPPER(__openat_2)
FORTIFY_AT_WRAPPER(__openat64_2)
CREAT_WRAPPER(creat)
CREAT_WRAPPER(creat64)
