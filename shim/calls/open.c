/*
 * open.c - the open family: O_SYNC/O_DSYNC as durability requests.
 *
 * The rule is chosen from the path before the real open, because an
 * O_SYNC open may have to become O_DSYNC or plain before the kernel sees
 * it. After the open, a regular file's descriptor is bound to its
 * shim_file; anything else is marked pass-through. Whatever the number
 * held before (a file closed behind our back, one of the shim's own) is
 * forgotten first (fd_app_got). An open that fails with EMFILE while the
 * shim holds descriptors gets them back and is tried once more.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "knobs.h"
#include "live.h"
#include "log.h"
#include "open.h"
#include "paths.h"
#include "position.h"
#include "reload.h"
#include "shim.h"
#include "shimfd.h"
#include "snapshot.h"
#include "trace.h"
#include "workers.h"

struct open_req {
	bool track;
	int flags;
	uint8_t log_flags;   /* LOGREC_OPEN_*: what the app asked for */
	struct crash_open crash;
	uint32_t slot_flags;
	struct trace_start t;
	char path[PATH_MAX];
};

int open_adjust_flags(const struct knobs *k, int flags, uint32_t *slot_flags)
{
	if ((flags & O_SYNC) == O_SYNC)
		*slot_flags = SLOT_APP_OSYNC;
	else if (flags & O_DSYNC)
		*slot_flags = SLOT_APP_ODSYNC;
	else
		return flags;
	switch (k->act[CALL_OPEN_SYNC]) {
	case ACT_DATASYNC:
		return (flags & ~O_SYNC) | O_DSYNC; /* O_SYNC contains the O_DSYNC bit */
	case ACT_STRIP:
		*slot_flags |= SLOT_OSYNC_STRIP;
		return flags & ~O_SYNC;
	case ACT_DEFER:
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
	if (LIBC(fstatat)(dirfd, path, &st, at) != 0)
		return true; /* about to be created: a regular file */
	return S_ISREG(st.st_mode);
}

static void knobs_for_path(const char *abspath, struct knobs *k)
{
	unsigned ticket;
	const struct policy *p = policy_enter(&ticket);
	const struct rule *r = policy_match(p, abspath);
	knobs_from_rule(k, r, r == &p->deflt ? -1 : (int)(r - p->rules));
	policy_leave(ticket);
}

static int open_begin(struct open_req *q, int dirfd, const char *path, int flags)
{
	q->track = false;
	q->crash.in_scope = false;
	q->slot_flags = 0;
	q->t.t0 = 0;
	if (shim_bypass() || !path || (flags & O_PATH))
		return flags;
	if (flags & O_TRUNC)
		held_before_path(dirfd, path, 0); /* the file's held writes before it is cut (held.c) */
	q->log_flags = (uint8_t)(((flags & O_SYNC) == O_SYNC ? LOGREC_OPEN_OSYNC
				  : (flags & O_DSYNC) ? LOGREC_OPEN_ODSYNC : 0) |
				 ((flags & O_APPEND) ? LOGREC_OPEN_APPEND : 0) |
				 ((flags & O_TRUNC) ? LOGREC_OPEN_TRUNC : 0));
	int e0 = errno;
	if (path_absolute(dirfd, path, q->path, sizeof(q->path)) == 0) {
		q->track = true;
		if ((flags & O_DSYNC) && !names_regular_or_new(dirfd, path, flags)) {
			q->slot_flags = (flags & O_SYNC) == O_SYNC ? SLOT_APP_OSYNC : SLOT_APP_ODSYNC;
		} else {
			struct knobs k;
			knobs_for_path(q->path, &k);
			flags = open_adjust_flags(&k, flags, &q->slot_flags);
		}
		if ((flags & O_ACCMODE) != O_RDONLY && !(flags & (O_APPEND | O_DIRECT)))
			q->slot_flags |= SLOT_PLAIN_WRITER;
		trace_begin(&q->t);
		q->flags = flags;
		crash_before_open(dirfd, q->path, flags, &q->crash);
	}
	errno = e0;
	return flags;
}

void open_bind(int fd, const char *abspath, uint32_t slot_flags)
{
	dev_t dev;
	ino_t ino;
	mode_t mode;
	uint64_t birth;
	if (fd_identity_born(fd, &dev, &ino, &mode, &birth) != 0)
		return;
	if (!S_ISREG(mode)) {
		fd_bind_pass(fd);
		return;
	}
	struct shim_file *f = file_lookup_or_create(dev, ino, birth, abspath);
	if (!f)
		return;
	bool defers = file_defers(f) || (slot_flags & SLOT_OSYNC_DEFER);
	fd_bind(fd, f, slot_flags);
	if (defers)
		workers_ensure(false); /* its writes hand work to a flusher thread */
	reload_maybe_start();
	log_maybe_start();
	live_maybe_start();
}

static int open_end(struct open_req *q, int fd)
{
	if (shim_bypass())
		return fd;
	int e = errno;
	fdtable_scan_once();
	if (fd >= 0)
		fd_app_got(fd);
	if (fd >= 0 && q->track) {
		open_bind(fd, q->path, q->slot_flags);
		pos_opened(fd, q->flags); /* a new description: at 0 */
	}
	if (q->crash.in_scope)
		crash_after_open(&q->crash, q->path, fd, q->flags);
	if (q->track) {
		uint32_t st;
		struct shim_file *f = fd >= 0 ? fd_peek(fd, &st) : NULL;
		if (f || fd < 0)
			trace_end_flags(&q->t, OP_OPEN, f, fd, fd < 0 ? e : 0, q->log_flags);
	}
	errno = e;
	return fd;
}

/* The real call, and once more if the shim's own descriptors were in the
 * way of an EMFILE. */
#define OPEN_CALL(r, call)                                                           \
	do {                                                                         \
		r = call;                                                            \
		if (r < 0 && errno == EMFILE && !shim_bypass() && shimfd_relieve_emfile()) \
			r = call;                                                    \
	} while (0)

/* The mode open's variadic tail holds, read only when flags say there is
 * one (in the wrapper itself: a body cannot read its caller's tail). */
#define OPEN_MODE_ARG(mode, flags)                                                   \
	do {                                                                         \
		if (open_needs_mode(flags)) {                                        \
			va_list ap;                                                  \
			va_start(ap, flags);                                         \
			mode = (mode_t)va_arg(ap, int);                              \
			va_end(ap);                                                  \
		}                                                                    \
	} while (0)

#define OPEN_PATH_BODY(name)                                                         \
	SHIM_INLINE int name##_body(const char *path, int flags, mode_t mode)        \
	{                                                                            \
		struct open_req q;                                                   \
		int fl = open_begin(&q, AT_FDCWD, path, flags), r;                   \
		OPEN_CALL(r, LIBC(name)(path, fl, mode));                            \
		return open_end(&q, r);                                              \
	}

#define OPENAT_BODY(name)                                                            \
	SHIM_INLINE int name##_body(int dirfd, const char *path, int flags, mode_t mode) \
	{                                                                            \
		struct open_req q;                                                   \
		int fl = open_begin(&q, dirfd, path, flags), r;                      \
		OPEN_CALL(r, LIBC(name)(dirfd, path, fl, mode));                     \
		return open_end(&q, r);                                              \
	}

/* _FORTIFY_SOURCE variants: called without O_CREAT, so there is no mode. */
#define FORTIFY_PATH_BODY(name)                                                      \
	SHIM_INLINE int name##_body(const char *path, int flags)                     \
	{                                                                            \
		struct open_req q;                                                   \
		int fl = open_begin(&q, AT_FDCWD, path, flags), r;                   \
		OPEN_CALL(r, LIBC(name)(path, fl));                                  \
		return open_end(&q, r);                                              \
	}

#define FORTIFY_AT_BODY(name)                                                        \
	SHIM_INLINE int name##_body(int dirfd, const char *path, int flags)          \
	{                                                                            \
		struct open_req q;                                                   \
		int fl = open_begin(&q, dirfd, path, flags), r;                      \
		OPEN_CALL(r, LIBC(name)(dirfd, path, fl));                           \
		return open_end(&q, r);                                              \
	}

/* creat() cannot ask for O_SYNC, but its files still need binding. */
#define CREAT_BODY(name)                                                             \
	SHIM_INLINE int name##_body(const char *path, mode_t mode)                   \
	{                                                                            \
		struct open_req q;                                                   \
		int r;                                                               \
		open_begin(&q, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);        \
		OPEN_CALL(r, LIBC(name)(path, mode));                                \
		return open_end(&q, r);                                              \
	}

OPEN_PATH_BODY(open)
OPEN_PATH_BODY(open64)
OPENAT_BODY(openat)
OPENAT_BODY(openat64)
FORTIFY_PATH_BODY(__open_2)
FORTIFY_PATH_BODY(__open64_2)
FORTIFY_AT_BODY(__openat_2)
FORTIFY_AT_BODY(__openat64_2)
CREAT_BODY(creat)
CREAT_BODY(creat64)

SHIM_API int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE_ARG(mode, flags);
	return open_body(path, flags, mode);
}

SHIM_API int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE_ARG(mode, flags);
	return open64_body(path, flags, mode);
}

SHIM_API int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE_ARG(mode, flags);
	return openat_body(dirfd, path, flags, mode);
}

SHIM_API int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	OPEN_MODE_ARG(mode, flags);
	return openat64_body(dirfd, path, flags, mode);
}

SHIM_API int __open_2(const char *path, int flags)
{
	return __open_2_body(path, flags);
}

SHIM_API int __open64_2(const char *path, int flags)
{
	return __open64_2_body(path, flags);
}

SHIM_API int __openat_2(int dirfd, const char *path, int flags)
{
	return __openat_2_body(dirfd, path, flags);
}

SHIM_API int __openat64_2(int dirfd, const char *path, int flags)
{
	return __openat64_2_body(dirfd, path, flags);
}

SHIM_API int creat(const char *path, mode_t mode)
{
	return creat_body(path, mode);
}

SHIM_API int creat64(const char *path, mode_t mode)
{
	return creat64_body(path, mode);
}
