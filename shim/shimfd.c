/*
 * shimfd.c - the shim's own descriptors, kept out of the app's way.
 *
 * The shim holds a few descriptors inside the app's process: the latency
 * log, a private dup of a file whose syncs are still owed after the app
 * closed it, a short-lived read. The app never opened them, so it must
 * never be able to close, replace or receive them, and the shim must never
 * write to a number that is no longer its own (that number may be the
 * app's data file by now). Each is marked in its fd slot (FD_SHIM, with
 * its owner):
 *   - close() and close_range() of a marked number act as if it did not
 *     exist (EBADF, or skipped), once the number is checked to really be
 *     ours;
 *   - dup2()/dup3() onto one first moves ours elsewhere (vacate);
 *   - when the kernel hands a marked number to the app (fd_app_got), ours
 *     was closed behind our back (a raw syscall, a close inside libc): its
 *     owner is told and stops using it;
 *   - an app open that fails with EMFILE gets the shim's descriptors given
 *     back and is retried, so the app never runs out because of us.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "flusher.h"
#include "log.h"
#include "shim.h"

#define HIGH_BASE 100

static unsigned owner_of(uint32_t state)
{
	return (state >> SLOT_OWN_SHIFT) & 3u;
}

void shimfd_claim(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return; /* beyond the table: unprotected, like any untracked number */
	fd_note_used(fd);
	atomic_store_explicit(&s->file, f, memory_order_relaxed);
	atomic_store_explicit(&s->state, FD_SHIM | (uint32_t)owner << SLOT_OWN_SHIFT, memory_order_release);
}

static void forget(struct fd_slot *s)
{
	atomic_store_explicit(&s->state, FD_UNKNOWN, memory_order_release);
	atomic_store_explicit(&s->file, NULL, memory_order_relaxed);
}

void shimfd_forget(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (s && (atomic_load(&s->state) & SLOT_KIND_MASK) == FD_SHIM)
		forget(s);
}

/* The number is marked ours and still refers to what its owner opened. */
static bool really_ours(int fd, struct fd_slot *s, uint32_t st)
{
	dev_t dev, want_dev;
	ino_t ino, want_ino;
	if ((st & SLOT_KIND_MASK) != FD_SHIM)
		return false;
	struct shim_file *f = atomic_load(&s->file);
	switch (owner_of(st)) {
	case OWN_LOG:
		if (!log_identity(&want_dev, &want_ino))
			return false;
		break;
	case OWN_FILE:
		if (!f)
			return false;
		want_dev = f->dev;
		want_ino = f->ino;
		break;
	default:
		return true; /* a short-lived read: nothing to compare against */
	}
	return fd_identity(fd, &dev, &ino, NULL) == 0 && dev == want_dev && ino == want_ino;
}

bool shimfd_is_ours(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	return s && really_ours(fd, s, atomic_load_explicit(&s->state, memory_order_acquire));
}

void shimfd_lost(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) != FD_SHIM)
		return;
	struct shim_file *f = atomic_load(&s->file);
	forget(s);
	if (owner_of(st) == OWN_LOG)
		log_fd_lost(fd);
	else if (owner_of(st) == OWN_FILE && f)
		flusher_priv_lost(f, fd);
}

void shimfd_close(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (fd < 0)
		return;
	if (!s) {
		REAL(close)(fd);
		return;
	}
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) != FD_SHIM)
		return; /* the app has it now: never ours to close */
	forget(s);
	int e = errno;
	REAL(close)(fd);
	errno = e;
}

static int claim_or_close(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	if (fd >= 0)
		shimfd_claim(fd, owner, f);
	return fd;
}

int shimfd_open(const char *path, int flags, enum shim_fd_owner owner)
{
	return claim_or_close(REAL(open)(path, flags | O_CLOEXEC, 0600), owner, NULL);
}

int shimfd_dup(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	int base = owner == OWN_LOG ? shimfd_high_base() : 3;
	return claim_or_close(REAL(fcntl)(fd, F_DUPFD_CLOEXEC, base), owner, f);
}

int shimfd_high_base(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 4 * HIGH_BASE)
		return 3;
	return HIGH_BASE;
}

int shimfd_app_close(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return 0;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) != FD_SHIM)
		return 0;
	if (really_ours(fd, s, st))
		return 1;
	shimfd_lost(fd); /* a stale mark: the number is the app's */
	return 0;
}

void shimfd_vacate(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) != FD_SHIM)
		return;
	int e = errno;
	struct shim_file *f = atomic_load(&s->file);
	if (owner_of(st) == OWN_LOG)
		log_vacate(fd);
	else if (owner_of(st) == OWN_FILE && f)
		flusher_vacate(f, fd);
	else
		forget(s); /* a short-lived read loses its descriptor, nothing more */
	errno = e;
}

bool shimfd_relieve_emfile(void)
{
	bool any = flusher_release_privs();
	if (log_release_fd())
		any = true;
	return any;
}
