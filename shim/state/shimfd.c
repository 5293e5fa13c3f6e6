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
 * A shim thread that needs none of the app's descriptors (the live
 * counters' publisher) goes further: it takes a descriptor table of its
 * own (shimfd_private_table), so what it opens is never on a number of
 * the app's, not even for the moment between an open and a move above
 * the app's range. In such a thread nothing here marks a slot: the slots
 * describe the app's table, not this one.
 *
 * A short-lived descriptor that a thread sharing the app's table needs
 * (a file reopened by name to sync it, another process's file through
 * /proc, a datagram to syslog, a /proc read, the ini read at reload) is
 * opened, used and closed inside shimfd_isolated: a child that shares the
 * process's memory and runs while its caller waits (as vfork's child
 * does), with a descriptor table of its own. Nothing of it is ever on a
 * number of the app's.
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
#ifdef SYNCSHIM_TSAN
#include <sanitizer/tsan_interface.h> /* shimfd_atfork_child_begin */
#endif

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "log.h"
#include "shim.h"
#include "shimfd.h"

#define HIGH_BASE 100

static __thread bool own_table; /* this thread's descriptors are in a table of its own */

/* Held for reading around an open and its mark, an unmark and its close;
 * for writing by fork's prepare handler (after the flusher's: a holder of
 * that one may take this one; a holder of this one takes no other lock). */
static pthread_rwlock_t nofork_mu = PTHREAD_RWLOCK_INITIALIZER;

/* One bit a level, newest lowest: whether that begin took the lock (a
 * signal handler's nested begin in the forking thread's prepare handler
 * gets EDEADLK and must not unlock the fork's hold). */
static __thread uint32_t nofork_held;

void shimfd_nofork_begin(void)
{
	bool took = !own_table && pthread_rwlock_rdlock(&nofork_mu) == 0;
	nofork_held = nofork_held << 1 | took;
}

void shimfd_nofork_end(void)
{
	if (nofork_held & 1)
		pthread_rwlock_unlock(&nofork_mu);
	nofork_held >>= 1;
}

void shimfd_atfork_prepare(void)
{
	pthread_rwlock_wrlock(&nofork_mu);
}

void shimfd_atfork_parent(void)
{
	pthread_rwlock_unlock(&nofork_mu);
}

/* After the modules' own child handlers closed what they know of (the
 * private descriptors, the parent's log): a descriptor still marked
 * short-lived or the log's was a parent thread's, in the middle of its
 * work, and nobody here would ever close it. */
void shimfd_atfork_child_begin(void)
{
	/* Held for writing by the forking thread, whose id the child's thread
	 * does not have: made anew. TSan keeps a lock's owner across an init,
	 * and took every lock the child took after it for one taken while
	 * holding this (flusher.c's privs_fork_mu has the same note): the
	 * unlock is told to it alone. */
#ifdef SYNCSHIM_TSAN
	__tsan_mutex_pre_unlock(&nofork_mu, 0);
	__tsan_mutex_post_unlock(&nofork_mu, 0);
#endif
	pthread_rwlock_init(&nofork_mu, NULL);
	nofork_held = 0;
}

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

/* An empty table for the calling thread, without ever holding a reference
 * to the app's files (CLOSE_RANGE_UNSHARE over the whole range copies
 * nothing). A kernel without it (before 5.9): a copy of the app's table,
 * every descriptor of it closed at once. */
bool shimfd_private_table(void)
{
	if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) != 0) {
		if (unshare(CLONE_FILES) != 0)
			return false;
		struct rlimit rl;
		int top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (int)rl.rlim_cur : 1 << 20;
		for (int fd = 0; fd < top; fd++)
			syscall(SYS_close, fd);
	}
	own_table = true;
	return true;
}

/* Whether a seccomp filter confines this process (/proc/self/status
 * "Seccomp: 2"), read with raw calls every sandbox allows. */
static bool seccomp_filtered(void)
{
	char buf[4096];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* cannot tell: take the cautious way */
	ssize_t n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	buf[n > 0 ? n : 0] = '\0';
	const char *at = strstr(buf, "\nSeccomp:");
	return !at || strtol(at + 9, NULL, 10) == 2;
}

/* The app's descriptor 2 as the calling thread can write it: 2 itself, or
 * in a thread with a table of its own a copy made through a pidfd of
 * our own process (same thread group: no permission needed), closed by
 * shimfd_stderr_done. -1: none (the caller says it to syslog instead).
 * Not under a seccomp filter: pidfd_getfd is no call a sandbox expects
 * (systemd's @system-service leaves it out, and Debian's redis-server
 * unit kills the process at it); a unit's syslog is its journal, where its
 * stderr would have gone. */
int shimfd_stderr(void)
{
	static __thread int self = -1;
	if (!own_table)
		return 2;
	if (seccomp_filtered())
		return -1;
	if (self < 0)
		self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	return self < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, self, 2, 0);
}

void shimfd_stderr_done(int fd)
{
	if (own_table && fd >= 0)
		LIBC(close)(fd);
}

#define ISOLATED_STACK (256 * 1024)

struct isolated {
	int (*fn)(void *);
	void *arg;
	int result;
	bool ran;
};

/* The child: the caller's memory, thread-local storage included (the
 * caller is stopped until it exits), an empty table of its own. */
static int isolated_child(void *p)
{
	struct isolated *iso = p;
	if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) != 0)
		return 0; /* no table of its own to be had: the caller does it itself */
	own_table = true;
	iso->result = iso->fn(iso->arg);
	iso->ran = true;
	return 0;
}

bool shimfd_isolated(int (*fn)(void *), void *arg, int *result)
{
#ifdef SYNCSHIM_TSAN
	/* The child runs on the caller's thread-local storage, which is where
	 * TSan keeps the thread's clocks and held locks: what the child does
	 * there makes TSan lose the caller's happens-before, and every lock
	 * the shim takes afterwards is reported as a race. Under TSan the
	 * caller does the work itself (the fallback every caller has). */
	(void)fn;
	(void)arg;
	(void)result;
	return false;
#endif
	if (own_table) {
		*result = fn(arg);
		return true;
	}
	int e = errno;
	char *stack = LIBC(mmap)(NULL, ISOLATED_STACK, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		errno = e;
		return false;
	}
	struct isolated iso = { fn, arg, 0, false };
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old); /* no handler of the app's ever runs in the child */
	/* No exit signal: the app hears of no child, and its wait(-1) cannot
	 * reap this one (a clone child: __WCLONE). */
	pid_t pid = clone(isolated_child, stack + ISOLATED_STACK, CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_FS,
			  &iso);
	if (pid > 0)
		while (waitpid(pid, NULL, __WCLONE) < 0 && errno == EINTR)
			;
	own_table = false; /* the child's stores went to our thread-local storage */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	LIBC(munmap)(stack, ISOLATED_STACK);
	errno = e;
	if (pid > 0 && iso.ran)
		*result = iso.result;
	return pid > 0 && iso.ran;
}

void shimfd_claim(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	if (!own_table)
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
		if (!log_identity(&want_dev, &want_ino))
			return false;
		break;
	case OWN_FILE:
	case OWN_CRASH:
		if (!f && fd_shim_owner(fd, NULL) == OWN_CRASH) {
			if (!crash_identity(&want_dev, &want_ino))
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
	if (owner == OWN_LOG)
		log_fd_lost(fd);
	else if (owner == OWN_FILE && f)
		flusher_priv_lost(f, fd);
	else if (owner == OWN_CRASH)
		crash_fd_lost(f, fd);
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
	if (own_table || !fd_slot(fd)) {
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

int shimfd_dup(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	int base = !own_table && (owner == OWN_LOG || owner == OWN_CRASH) ? shimfd_high_base() : 3;
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
	if (owner == OWN_LOG)
		log_vacate(fd);
	else if (owner == OWN_FILE && f)
		flusher_vacate(f, fd);
	else if (owner == OWN_CRASH)
		shimfd_lost(fd); /* the app's dup2 closes it: reopened elsewhere */
	else
		fd_unmark_shim(fd); /* a short-lived read loses its descriptor, nothing more */
	errno = e;
}

bool shimfd_relieve_emfile(void)
{
	bool any = flusher_release_privs();
	if (log_release_fd())
		any = true;
	return any;
}
