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
 *
 * The shim's own descriptor tables (a thread's private one, the
 * isolated child) and the fork lock are core/owntable.c's.
 *
 * A fork copies the app's table with every descriptor the shim holds on
 * it, and the child has none of the parent's threads that would close the
 * short-lived ones (the log's first number before it moves above the
 * app's range, a read or a reopen made here where no isolated child could
 * be had). So a fork waits while one of them is between its open and its
 * mark or its unmark and its close (shimfd_nofork_begin: the table never
 * holds a shim descriptor that is not marked), and the child closes every
 * such one it inherited (shimfd_atfork_child), as the flusher's child
 * closes the private descriptors (seed fork:15690304: a child with one
 * descriptor more than without the shim).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdtable.h"
#include "files.h"
#include "paths.h"
#include "shim.h"
#include "shimfd.h"

#define HIGH_BASE 100

/* The owners of the shim's descriptors, told what happens to theirs
 * (shimfd.h). */
static const struct shimfd_owner *owners;
static const struct shimfd_owner no_owner;

void shimfd_set_owners(const struct shimfd_owner *table)
{
	owners = table;
}

static const struct shimfd_owner *owner_hooks(enum shim_fd_owner owner)
{
	return owners ? &owners[owner] : &no_owner;
}

static bool owner_identity(enum shim_fd_owner owner, dev_t *dev, ino_t *ino)
{
	const struct shimfd_owner *o = owner_hooks(owner);
	return o->identity && o->identity(dev, ino);
}

/* After the modules' own child handlers closed what they know of (the
 * private descriptors, the parent's log): a descriptor still marked
 * short-lived or the log's was a parent thread's, in the middle of its
 * work, and nobody here would ever close it. */
void shimfd_atfork_child(void)
{
	int top = atomic_load(&shim.fd_hi);
	for (int fd = 0; fd <= top; fd++) {
		enum shim_fd_owner owner = fd_shim_owner(fd, NULL);
		if (owner == OWN_TEMP || owner == OWN_LOG) {
			fd_unmark_shim(fd);
			LIBC(close)(fd);
		}
	}
}

void shimfd_claim(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	if (!shimfd_own_table)
		fd_mark_shim(fd, owner, f);
}

/* The number is marked ours and still refers to what its owner opened. */
bool shimfd_is_ours(int fd)
{
	dev_t dev, want_dev;
	ino_t ino, want_ino;
	struct shim_file *f = NULL;
	switch (fd_shim_owner(fd, &f)) {
	case OWN_NONE:
		return false;
	case OWN_LOG:
		if (!owner_identity(OWN_LOG, &want_dev, &want_ino))
			return false;
		break;
	case OWN_FILE:
	case OWN_CRASH:
		if (!f && fd_shim_owner(fd, NULL) == OWN_CRASH) {
			if (!owner_identity(OWN_CRASH, &want_dev, &want_ino))
				return false;
			break;
		}
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

void shimfd_lost(int fd)
{
	struct shim_file *f = NULL;
	enum shim_fd_owner owner = fd_shim_owner(fd, &f);
	if (owner == OWN_NONE)
		return;
	fd_unmark_shim(fd);
	const struct shimfd_owner *o = owner_hooks(owner);
	if (o->lost && (owner != OWN_FILE || f)) /* a private descriptor is told with its file */
		o->lost(f, fd);
}

void shimfd_close(int fd)
{
	if (fd < 0)
		return;
	/* The shim's own open and close are never cancellation points: a
	 * caller may hold one of its locks (a thread cancelled there would
	 * leave it held), and an open cancelled after the kernel made the
	 * descriptor would leak it unmarked. */
	int cancel = shim_nocancel_begin();
	if (shimfd_own_table || !fd_slot(fd)) {
		LIBC(close)(fd);
	} else if (fd_shim_owner(fd, NULL) != OWN_NONE) { /* else the app has it now: never ours to close */
		shimfd_nofork_begin();
		fd_unmark_shim(fd);
		int e = errno;
		LIBC(close)(fd);
		errno = e;
		shimfd_nofork_end();
	}
	shim_nocancel_end(cancel);
}

static int claim_or_close(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	if (fd >= 0)
		shimfd_claim(fd, owner, f);
	return fd;
}

int shimfd_open(const char *path, int flags, enum shim_fd_owner owner)
{
	int cancel = shim_nocancel_begin(); /* see shimfd_close */
	shimfd_nofork_begin();
	int fd = claim_or_close(LIBC(open)(path, flags | O_CLOEXEC, 0600), owner, NULL);
	shimfd_nofork_end();
	shim_nocancel_end(cancel);
	return fd;
}

int shimfd_reopen(int fd, int flags, enum shim_fd_owner owner)
{
	int d = -1;
	for (int thread = 1; thread >= 0 && d < 0; thread--) {
		char p[PROC_FD_NAME_MAX];
		proc_fd_name(fd, thread, p);
		d = shimfd_open(p, flags, owner);
	}
	return d;
}

/* Above the app's numbers, whoever keeps it: open() hands out the lowest
 * free number, and a program may count on which one it gets (fd_life's
 * "lowest" step). A private descriptor of a closed file on a low number
 * shifted the app's next opens by one, and its close, whenever the flusher
 * got to it, shifted them back. */
int shimfd_dup(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	int base = shimfd_own_table ? 3 : shimfd_high_base();
	shimfd_nofork_begin();
	int d = claim_or_close(LIBC(fcntl)(fd, F_DUPFD_CLOEXEC, base), owner, f);
	shimfd_nofork_end();
	return d;
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
	if (fd_shim_owner(fd, NULL) == OWN_NONE)
		return 0;
	if (shimfd_is_ours(fd))
		return 1;
	shimfd_lost(fd); /* a stale mark: the number is the app's */
	return 0;
}

void shimfd_vacate(int fd)
{
	struct shim_file *f = NULL;
	enum shim_fd_owner owner = fd_shim_owner(fd, &f);
	if (owner == OWN_NONE)
		return;
	int e = errno;
	const struct shimfd_owner *o = owner_hooks(owner);
	if (owner == OWN_LOG || (owner == OWN_FILE && f)) {
		if (o->vacate)
			o->vacate(f, fd);
	} else if (owner == OWN_CRASH)
		shimfd_lost(fd); /* the app's dup2 closes it: reopened elsewhere */
	else
		fd_unmark_shim(fd); /* a short-lived read loses its descriptor, nothing more */
	errno = e;
}

bool shimfd_relieve_emfile(void)
{
	/* The flusher's private descriptors first, then the log's. */
	static const enum shim_fd_owner order[] = { OWN_FILE, OWN_LOG };
	bool any = false;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (owner_hooks(order[i])->release && owner_hooks(order[i])->release())
			any = true;
	return any;
}
