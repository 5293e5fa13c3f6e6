/*
 * owntable.c - the shim's own descriptor tables, and the lock that keeps
 * fork from copying the app's table while a descriptor of the shim's is
 * on it unmarked (the marks are state/shimfd.c's).
 *
 * A shim thread that needs none of the app's descriptors (the live
 * counters' publisher) takes a descriptor table of its own
 * (shimfd_private_table), so what it opens is never on a number of the
 * app's, not even for the moment between an open and a move above the
 * app's range. In such a thread no slot is marked (shimfd_own_table): the
 * slots describe the app's table, not this one.
 *
 * A short-lived descriptor that a thread sharing the app's table needs
 * (a file reopened by name to sync it, another process's file through
 * /proc, a datagram to syslog, a /proc read, the ini read at reload) is
 * opened, used and closed inside shimfd_isolated: a child that shares the
 * process's memory and runs while its caller waits (as vfork's child
 * does), with a descriptor table of its own. Nothing of it is ever on a
 * number of the app's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef SYNCSHIM_TSAN
#include <sanitizer/tsan_interface.h> /* shimfd_atfork_child_begin */
#endif

#include "owntable.h"
#include "shim.h"

__thread bool shimfd_own_table;

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
	bool took = !shimfd_own_table && pthread_rwlock_rdlock(&nofork_mu) == 0;
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

/* The first of fork's child handlers: the lock, anew. */
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
	shimfd_own_table = true;
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
	if (!shimfd_own_table)
		return 2;
	if (seccomp_filtered())
		return -1;
	if (self < 0)
		self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	return self < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, self, 2, 0);
}

void shimfd_stderr_done(int fd)
{
	if (shimfd_own_table && fd >= 0)
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
	shimfd_own_table = true;
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
	if (shimfd_own_table) {
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
	shimfd_own_table = false; /* the child's stores went to our thread-local storage */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	LIBC(munmap)(stack, ISOLATED_STACK);
	errno = e;
	if (pid > 0 && iso.ran)
		*result = iso.result;
	return pid > 0 && iso.ran;
}
