/*
 * crash.c - crash-test mode: the undo log (docs/CRASHTEST.md).
 *
 * Every change to a tracked file is described in DIR/undo.log before it
 * is made (a write's pre-image and the size before; a truncation's cut
 * bytes; a rename's or unlink's victim kept as a hard link in DIR), and
 * every real sync that completes is marked after it completed and before
 * the app hears of it. The log is one O_APPEND file for the whole process
 * tree, each record one writev(), so its byte order is the run's order.
 * The launcher cuts the tree with SIGKILL and rolls back from the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "logfmt.h"
#include "paths.h"
#include "policy.h"
#include "shimfd.h"
#include "trace.h"
#include "undofmt.h"

#define MAX_GLOBS 32
#define CHUNK (1u << 20)                  /* pre-image bytes per WRITE record */
#define MAX_CUT (64ull << 20)            /* a truncation keeps at most this much */

bool crash_enabled;

/* Crash-test mode's process-wide state: the undo log and the scope. */
static struct {
	int fd;                               /* undo.log, the shim's own */
	dev_t dev;
	ino_t ino;
	char dir[PATH_MAX];
	char log[PATH_MAX];
	uint64_t max;
	char globs[MAX_GLOBS][POLICY_GLOB_MAX];
	int nglobs;
	_Atomic uint32_t kept;                /* hard links made in dir so far */
} crash_mode = { .fd = -1 };

static __thread pid_t my_tid;

static pid_t tid(void)
{
	if (!my_tid)
		my_tid = (pid_t)syscall(SYS_gettid);
	return my_tid;
}

/* ---- the log ------------------------------------------------------------ */

static void stop(const char *why, int err)
{
	if (__atomic_exchange_n(&crash_enabled, false, __ATOMIC_RELAXED))
		shim_say("crash-test mode: %s: %s; recording stops", why, strerror(err));
}

static uint64_t log_end(void)
{
	off_t end = LIBC(lseek)(crash_mode.fd, 0, SEEK_END);
	return end < 0 ? 0 : (uint64_t)end;
}

static void full(void);

/* One record, one writev(). Returns the log's end after it, 0 if off. */
static uint64_t append(struct undo_rec *h, const void *p1, uint32_t n1, const void *p2, uint32_t n2)
{
	if (!crash_on())
		return 0;
	h->magic = UNDO_REC_MAGIC;
	h->pid = (uint32_t)getpid();
	h->plen = n1 + n2;
	if (!h->mono_ns) /* a record may carry an earlier time: a held write's */
		h->mono_ns = trace_now();
	h->crc = 0;
	uint32_t crc = logfmt_crc32c(0, h, sizeof(*h));
	crc = logfmt_crc32c(crc, p1, n1);
	h->crc = logfmt_crc32c(crc, p2, n2);
	struct iovec v[3] = { { h, sizeof(*h) }, { (void *)p1, n1 }, { (void *)p2, n2 } };
	size_t want = sizeof(*h) + n1 + n2;
	ssize_t r;
	do
		r = writev(crash_mode.fd, v, 3);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)want) {
		stop("cannot append to the undo log", r < 0 ? errno : ENOSPC);
		return 0;
	}
	uint64_t end = log_end();
	if (h->type != UNDO_FULL && end > crash_mode.max)
		full();
	return end;
}

static void full(void)
{
	struct undo_rec h = { .type = UNDO_FULL };
	append(&h, NULL, 0, NULL, 0);
	__atomic_store_n(&crash_enabled, false, __ATOMIC_RELAXED);
	shim_say("crash-test mode: the undo log reached its bound (%llu bytes); recording stops",
		 (unsigned long long)crash_mode.max);
}

static void limit(dev_t dev, ino_t ino, const char *what)
{
	struct undo_rec h = { .type = UNDO_LIMIT, .dev = dev, .ino = ino };
	append(&h, what, (uint32_t)strlen(what), NULL, 0);
}

/* ---- setup --------------------------------------------------------------- */

static void read_scope(const char *scope)
{
	while (scope && *scope && crash_mode.nglobs < MAX_GLOBS) {
		const char *nl = strchr(scope, '\n');
		size_t n = nl ? (size_t)(nl - scope) : strlen(scope);
		char why[128];
		if (n && n < POLICY_GLOB_MAX) {
			memcpy(crash_mode.globs[crash_mode.nglobs], scope, n);
			crash_mode.globs[crash_mode.nglobs][n] = '\0';
			if (glob_check(crash_mode.globs[crash_mode.nglobs], why, sizeof(why)) == 0)
				crash_mode.nglobs++;
			else
				shim_say("crash-test mode: bad scope glob '%s': %s; left out", crash_mode.globs[crash_mode.nglobs], why);
		}
		scope = nl ? nl + 1 : NULL;
	}
}

void crash_start(void)
{
	const char *dir = getenv("SYNCSHIM_CRASH_DIR");
	if (!dir || !*dir)
		return;
	const char *max = getenv("SYNCSHIM_CRASH_MAX");
	crash_mode.max = max && *max ? strtoull(max, NULL, 10) : 0;
	if (!crash_mode.max)
		crash_mode.max = 1ull << 30;
	snprintf(crash_mode.dir, sizeof(crash_mode.dir), "%s", dir);
	snprintf(crash_mode.log, sizeof(crash_mode.log), "%s/%s", dir, UNDO_NAME);
	read_scope(getenv("SYNCSHIM_CRASH_SCOPE"));
	int fd = shimfd_open(crash_mode.log, O_WRONLY | O_APPEND | O_NOFOLLOW, OWN_TEMP);
	struct stat st;
	if (fd < 0 || LIBC(fstat)(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		shim_say("crash-test mode: cannot append to %s: %s; nothing is recorded", crash_mode.log,
			 strerror(fd < 0 ? errno : EINVAL));
		shimfd_close(fd);
		return;
	}
	crash_mode.fd = shimfd_dup(fd, OWN_CRASH, NULL); /* high, out of the app's way */
	shimfd_close(fd);
	crash_mode.dev = st.st_dev;
	crash_mode.ino = st.st_ino;
	__atomic_store_n(&crash_enabled, crash_mode.fd >= 0, __ATOMIC_RELAXED);
}

bool crash_in_scope(const char *abspath)
{
	if (!crash_on() || !abspath)
		return false;
	for (int i = 0; i < crash_mode.nglobs; i++)
		if (glob_match(crash_mode.globs[i], abspath))
			return true;
	return false;
}

bool crash_identity(dev_t *dev, ino_t *ino)
{
	*dev = crash_mode.dev;
	*ino = crash_mode.ino;
	return crash_mode.fd >= 0;
}

/* The app took our number behind our back (raw close, dup2): reopen. */
void crash_fd_lost(struct shim_file *f, int fd)
{
	if (f) {
		if (f->crash.rfd == fd)
			f->crash.rfd = -1;
		return;
	}
	int nfd = shimfd_open(crash_mode.log, O_WRONLY | O_APPEND | O_NOFOLLOW, OWN_TEMP);
	int high = nfd >= 0 ? shimfd_dup(nfd, OWN_CRASH, NULL) : -1;
	shimfd_close(nfd);
	crash_mode.fd = high;
	if (high < 0)
		stop("lost the undo log's descriptor", EBADF);
}

/* ---- per file -------------------------------------------------------------- */

void crash_file_init(struct shim_file *f)
{
	pthread_mutex_init(&f->crash.mu, NULL);
	f->crash.rfd = -1;
}

void crash_file_reset(struct shim_file *f)
{
	f->crash.tracked = crash_in_scope(f->path);
	atomic_store(&f->crash.owner, 0);
}

void crash_file_gone(struct shim_file *f)
{
	if (f->crash.rfd >= 0)
		shimfd_close(f->crash.rfd);
	f->crash.rfd = -1;
	f->crash.tracked = false;
}

static void reinit(struct shim_file *f, void *arg)
{
	(void)arg;
	pthread_mutex_init(&f->crash.mu, NULL); /* a parent thread may have held it */
	atomic_store(&f->crash.owner, 0);
}

void crash_atfork_child(void)
{
	my_tid = 0;
	if (crash_mode.fd >= 0)
		registry_each(reinit, NULL);
}

/* ---- writes ------------------------------------------------------------------ */

/* A descriptor the shim can read the file through (the app's may be
 * write-only): the file opened again through /proc, kept with the file. */
static int read_fd(struct shim_file *f, int fd)
{
	if (f->crash.rfd < 0) {
		int r = shimfd_reopen(fd, O_RDONLY, OWN_TEMP);
		f->crash.rfd = r >= 0 ? shimfd_dup(r, OWN_CRASH, f) : -1;
		shimfd_close(r);
	}
	return f->crash.rfd;
}

static bool read_all(int fd, uint8_t *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t r = LIBC(pread)(fd, buf, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		buf += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return true;
}

static void write_rec(struct shim_file *f, uint64_t off, uint64_t len, uint64_t old_size, uint16_t flags,
		      uint64_t at_ns, const uint8_t *pre, uint32_t n)
{
	struct undo_rec h = { .type = UNDO_WRITE, .flags = flags, .dev = f->dev, .ino = f->ino,
			      .off = off, .len = len, .old_size = old_size, .mono_ns = at_ns };
	append(&h, pre, n, NULL, 0);
}

/* WRITE records for [off, off+len) of a file old_size long: the pre-image
 * (the part below old_size) in chunks of at most CHUNK bytes, the last
 * record also covering whatever the write appends. */
static void record_write(struct shim_file *f, int rfd, uint64_t off, uint64_t len, uint64_t old_size,
			 uint16_t flags, uint64_t at_ns)
{
	uint64_t pre = off < old_size ? (len < old_size - off ? len : old_size - off) : 0;
	if (!pre) {
		write_rec(f, off, len, old_size, flags, at_ns, NULL, 0);
		return;
	}
	uint8_t *buf = shim_alloc(pre < CHUNK ? pre : CHUNK);
	for (uint64_t done = 0; done < pre && crash_on();) {
		uint64_t n = pre - done < CHUNK ? pre - done : CHUNK;
		if (!buf || rfd < 0 || !read_all(rfd, buf, n, off + done)) {
			limit(f->dev, f->ino, "the bytes a write overwrote could not be read: it cannot be undone");
			write_rec(f, off + done, len - done, old_size, flags | UNDO_F_NO_PREIMAGE, at_ns, NULL, 0);
			break;
		}
		write_rec(f, off + done, done + n == pre ? len - done : n, old_size, flags, at_ns, buf, (uint32_t)n);
		done += n;
	}
	shim_free(buf);
}

static uint64_t iov_bytes(const struct iovec *iov, int cnt)
{
	uint64_t n = 0;
	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

void crash_write_begin(struct shim_file *f, int fd, off_t off, const struct iovec *iov, int cnt,
		       bool synced, struct crash_write *w)
{
	w->f = f;
	w->locked = false;
	if (!crash_on() || !f->crash.tracked)
		return;
	int e = errno;
	if (atomic_load(&f->crash.owner) == tid()) {
		/* a signal handler writing inside this thread's write of the file */
		limit(f->dev, f->ino, "a write from a signal handler inside another write was not recorded");
		errno = e;
		return;
	}
	/* The lock is held across the record's append and the app's write,
	 * both cancellation points: a cancel there would leave it held. */
	w->cancel = shim_nocancel_begin();
	pthread_mutex_lock(&f->crash.mu);
	atomic_store(&f->crash.owner, tid());
	w->locked = true;
	struct stat st;
	if (LIBC(fstat)(fd, &st) == 0) {
		if (off < 0)
			off = (LIBC(fcntl)(fd, F_GETFL) & O_APPEND) ? st.st_size : LIBC(lseek)(fd, 0, SEEK_CUR);
		if (off >= 0)
			record_write(f, read_fd(f, fd), (uint64_t)off, iov_bytes(iov, cnt), (uint64_t)st.st_size,
				     synced ? UNDO_F_OSYNC : 0, w->written_ns);
	}
	errno = e;
}

void crash_write_end(struct crash_write *w)
{
	if (!w->locked)
		return;
	atomic_store(&w->f->crash.owner, 0);
	pthread_mutex_unlock(&w->f->crash.mu);
	shim_nocancel_end(w->cancel);
}

/* ---- durable marks --------------------------------------------------------------- */

/* Under the file's lock: no write of ours to it is between its record and
 * the write itself, so the mark covers exactly what reached the kernel. */
uint64_t crash_mark(struct shim_file *f)
{
	if (!crash_on() || !f->crash.tracked)
		return 0;
	int e = errno;
	bool mine = atomic_load(&f->crash.owner) == tid();
	if (!mine)
		pthread_mutex_lock(&f->crash.mu);
	uint64_t end = log_end();
	if (!mine)
		pthread_mutex_unlock(&f->crash.mu);
	errno = e;
	return end;
}

void crash_durable(struct shim_file *f, uint64_t upto)
{
	if (!upto || !crash_on())
		return;
	int e = errno;
	struct undo_rec h = { .type = UNDO_DURABLE, .dev = f->dev, .ino = f->ino, .off = upto };
	append(&h, NULL, 0, NULL, 0);
	errno = e;
}

uint64_t crash_mark_any(void)
{
	if (!crash_on())
		return 0;
	int e = errno;
	uint64_t end = log_end();
	errno = e;
	return end;
}

void crash_durable_dev(dev_t dev, uint64_t upto)
{
	if (!upto || !crash_on())
		return;
	int e = errno;
	struct undo_rec h = { .type = UNDO_DURABLE_DEV, .dev = dev, .off = upto };
	append(&h, NULL, 0, NULL, 0);
	errno = e;
}

void crash_synced_untracked(int fd, uint64_t upto)
{
	struct stat st;
	if (!upto || !crash_on())
		return;
	int e = errno;
	if (LIBC(fstat)(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		struct undo_rec h = { .type = UNDO_DIRSYNC, .dev = st.st_dev, .ino = st.st_ino, .off = upto };
		append(&h, NULL, 0, NULL, 0);
	}
	errno = e;
}

/* ---- sizes ---------------------------------------------------------------------- */

/* SIZE record for a file about to go from old to new_size bytes; rfd
 * reads what a shrink cuts off. */
static void record_size(dev_t dev, ino_t ino, int rfd, uint64_t old, uint64_t new_size)
{
	uint64_t cut = new_size < old ? old - new_size : 0;
	uint16_t flags = 0;
	uint8_t *buf = cut && cut <= MAX_CUT ? shim_alloc(cut) : NULL;
	if (cut && (!buf || rfd < 0 || !read_all(rfd, buf, cut, new_size))) {
		limit(dev, ino, "the bytes a truncation cut off could not be kept: it cannot be undone");
		flags = UNDO_F_NO_PREIMAGE;
		cut = 0;
	}
	struct undo_rec h = { .type = UNDO_SIZE, .flags = flags, .dev = dev, .ino = ino, .off = new_size,
			      .old_size = old };
	append(&h, buf, (uint32_t)cut, NULL, 0);
	shim_free(buf);
}

void crash_before_size(int fd, const char *abspath, off_t new_size)
{
	if (!crash_on() || new_size < 0)
		return;
	int e = errno;
	struct stat st;
	int rfd = fd >= 0 ? -1 : shimfd_open(abspath, O_RDONLY | O_NOFOLLOW, OWN_TEMP);
	int at = fd >= 0 ? fd : rfd;
	if (at >= 0 && LIBC(fstat)(at, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)new_size != (uint64_t)st.st_size) {
		uint32_t state;
		struct shim_file *f = fd >= 0 ? fd_peek(fd, &state) : NULL;
		bool tracked = f ? f->crash.tracked : crash_in_scope(abspath);
		if (tracked && rfd < 0 && (uint64_t)new_size < (uint64_t)st.st_size)
			rfd = shimfd_reopen(fd, O_RDONLY, OWN_TEMP);
		if (tracked)
			record_size(st.st_dev, st.st_ino, rfd, (uint64_t)st.st_size, (uint64_t)new_size);
	}
	shimfd_close(rfd);
	errno = e;
}

/* ---- names ---------------------------------------------------------------------- */

/* A hard link in the store that keeps a file a rename replaces or an
 * unlink removes; "" if it could not be made. */
static void keep(const char *abspath, char *saved, size_t len)
{
	snprintf(saved, len, "%s/kept.%d.%u", crash_mode.dir, (int)getpid(), atomic_fetch_add(&crash_mode.kept, 1));
	if (LIBC(link)(abspath, saved) != 0)
		saved[0] = '\0';
}

static bool regular(const char *abspath, struct stat *st)
{
	return LIBC(lstat)(abspath, st) == 0 && S_ISREG(st->st_mode);
}

void crash_before_open(int dirfd, const char *abspath, int flags, struct crash_open *o)
{
	o->in_scope = false;
	if (!crash_on() || !(flags & (O_CREAT | O_TRUNC)) || !crash_in_scope(abspath))
		return;
	(void)dirfd;
	int e = errno;
	struct stat st;
	o->in_scope = true;
	o->existed = regular(abspath, &st);
	if (o->existed && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && st.st_size > 0)
		crash_before_size(-1, abspath, 0);
	errno = e;
}

void crash_after_open(const struct crash_open *o, const char *abspath, int fd, int flags)
{
	if (!o->in_scope || fd < 0 || !crash_on())
		return;
	int e = errno;
	struct stat st;
	if ((flags & O_CREAT) && !o->existed && LIBC(fstat)(fd, &st) == 0) {
		struct undo_rec h = { .type = UNDO_CREATE, .dev = st.st_dev, .ino = st.st_ino };
		append(&h, abspath, (uint32_t)strlen(abspath) + 1, NULL, 0);
	}
	if ((flags & O_DIRECT) && LIBC(fstat)(fd, &st) == 0)
		limit(st.st_dev, st.st_ino, "a file in scope was opened O_DIRECT");
	errno = e;
}

void crash_before_rename(int fromdir, const char *from, int todir, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX], saved[PATH_MAX + 64] = "";
	struct stat st, tst;
	if (!crash_on() || path_absolute(fromdir, from, a, sizeof(a)) != 0 ||
	    path_absolute(todir, to, b, sizeof(b)) != 0 || !(crash_in_scope(a) || crash_in_scope(b)))
		return;
	int e = errno;
	if (regular(a, &st)) {
		if (regular(b, &tst))
			keep(b, saved, sizeof(saved));
		char payload[2 * PATH_MAX + 2];
		size_t na = strlen(a) + 1, nb = strlen(b) + 1;
		memcpy(payload, a, na);
		memcpy(payload + na, b, nb);
		struct undo_rec h = { .type = UNDO_RENAME, .dev = st.st_dev, .ino = st.st_ino };
		append(&h, payload, (uint32_t)(na + nb), saved, (uint32_t)strlen(saved) + 1);
	}
	errno = e;
}

void crash_before_unlink(int dirfd, const char *path)
{
	char a[PATH_MAX], saved[PATH_MAX + 64];
	struct stat st;
	if (!crash_on() || path_absolute(dirfd, path, a, sizeof(a)) != 0 || !crash_in_scope(a))
		return;
	int e = errno;
	if (regular(a, &st)) {
		keep(a, saved, sizeof(saved));
		struct undo_rec h = { .type = UNDO_UNLINK, .dev = st.st_dev, .ino = st.st_ino };
		append(&h, a, (uint32_t)strlen(a) + 1, saved, (uint32_t)strlen(saved) + 1);
	}
	errno = e;
}

void crash_blind(const char *what)
{
	if (!crash_on())
		return;
	int e = errno;
	struct undo_rec h = { .type = UNDO_LIMIT, .flags = UNDO_F_BLIND };
	append(&h, what, (uint32_t)strlen(what), NULL, 0);
	errno = e;
}

void crash_limit_path(int dirfd, const char *path, const char *what)
{
	char a[PATH_MAX];
	struct stat st;
	int e = errno;
	if (crash_on() && path_absolute(dirfd, path, a, sizeof(a)) == 0 && crash_in_scope(a) && LIBC(lstat)(a, &st) == 0)
		limit(st.st_dev, st.st_ino, what);
	errno = e;
}

void crash_limit_fd(int fd, const char *what)
{
	uint32_t state;
	struct shim_file *f = crash_on() ? fd_peek(fd, &state) : NULL;
	int e = errno;
	if (f && f->crash.tracked)
		limit(f->dev, f->ino, what);
	errno = e;
}
