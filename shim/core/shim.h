/*
 * shim.h - what every layer of the shim needs: the process-wide state,
 * the guard that sends the shim's own calls (and a signal handler's
 * inside them) straight to libc, the list of calls (calls.h) and the decision table
 * (decide.h). Each module's types and entry points are in the module's
 * own header beside it: descriptor slots in state/fdtable.h, the file
 * object in state/files.h (which embeds the flusher's, the threads',
 * data at risk's, ordered defer's and crash-test mode's parts, each from
 * its module's header), and so on.
 *
 * Rules of the house (docs/ARCHITECTURE.md has the whole picture):
 *   - The write path only reads a slot and, for deferred files, adds to
 *     counters atomically: no lock, no allocation, no system call.
 *   - Every section that takes a lock or allocates runs with shim_busy
 *     raised, so a signal handler that interrupts it, or an allocator
 *     calling back into libc, passes straight through instead of waiting
 *     for a lock its own thread holds.
 *   - No shim lock is held across a call into the private allocator, and
 *     the allocator never calls into the shim's locked paths; that is what
 *     makes the fork handlers' lock order (init.c) deadlock-free.
 *   - A thread that may block on a file (a sync, a barrier) holds a
 *     reference to it; file objects are recycled, never freed, so a stale
 *     lock-free reader touches a valid object.
 */
#ifndef SYNCSHIM_SHIM_H
#define SYNCSHIM_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "decide.h"
#include "policy.h"
#include "calls.h"

#define SHIM_API __attribute__((visibility("default")))
/* The body a family of wrappers shares (an X_BODY macro's), compiled into
 * each wrapper, a named function that calls it: no call of its own. */
#define SHIM_INLINE static inline __attribute__((always_inline))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct fd_slot;

struct shim_state {
	_Atomic int ready;                 /* constructor finished */
	struct fd_slot *fds;               /* mmap'd, nfds entries */
	int nfds;
	_Atomic int fd_hi;                 /* highest slot ever given a state */
	/* Bumped when libc may have changed descriptors unseen (fcloseall,
	 * daemon): bindings older than it are checked against the kernel. */
	_Atomic uint32_t trust;
	/* dup2/dup3 onto a number between their slot copy and its check
	 * (close_dup.c): while non-zero, no slot is vouched for unlooked. */
	_Atomic int dups_onto;
	_Atomic(const struct policy *) policy; /* read inside policy_enter/leave only */
	char config_path[POLICY_PATH_MAX]; /* "" when none; absolute, symlinks kept */
	pid_t pid;                         /* this process (set at load and in fork children) */
	_Atomic int exiting;               /* final drain begun: defer no longer defers */
};
extern struct shim_state shim;

/* Inis refused so far (at load the process runs as passthrough, on a
 * reload it keeps the rules it had), and the latest refusal's message:
 * the live counters show both (config_errors), since the one line on
 * stderr may go where nobody reads. Written by the constructor and the
 * reload watcher only; the count is stored after the text (release). */
extern _Atomic uint32_t shim_config_errors;
extern char shim_config_error[200];
void shim_config_refused(const char *msg);

/*
 * Depth of shim-internal work on this thread: while nonzero, interposed
 * calls (our own, the allocator's, a signal handler's) go straight to libc.
 * SHIM_IN_VFORK marks a thread that called vfork(): the child runs on the
 * same thread memory, and must leave the parent's state alone.
 */
extern __thread int shim_busy;
#define SHIM_IN_VFORK (1 << 30)
bool shim_vfork_child(void);

static inline bool shim_bypass(void)
{
	int b = shim_busy;
	if (likely(b == 0))
		return !atomic_load_explicit(&shim.ready, memory_order_acquire);
	return (b & ~SHIM_IN_VFORK) != 0 || shim_vfork_child();
}

static inline void shim_enter(void)
{
	shim_busy++;
}

static inline void shim_leave(void)
{
	shim_busy--;
}

/* Around a section that holds one of the shim's locks across a call that
 * is a cancellation point (open, write, close...): a thread the app
 * cancels there would leave the lock held for good. The section runs
 * with cancellation disabled; a pending cancel acts at the app's next
 * cancellation point. (pthread_setcancelstate is a few atomics: no system
 * call.) */
static inline int shim_nocancel_begin(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void shim_nocancel_end(int old)
{
	pthread_setcancelstate(old, NULL);
}

/*
 * What a write's fast half (shim/calls/write.c) reads on every call, kept
 * on one page: after each system call every page touched is a TLB miss
 * where the kernel empties the TLB at each entry (page table isolation
 * without PCID, as on this project's VMs: about 6 ns a page against a
 * 4 KiB pwrite's 1.7 us, measured in docs/bench-log.md). One section,
 * placed whole; the first in link order (libc.c's table) starts it on a
 * page of its own.
 */
#define SHIM_HOT __attribute__((section("syncshim_hot")))
#define SHIM_HOT_FIRST __attribute__((section("syncshim_hot"), aligned(4096)))

/* ---- say.c: the shim's messages ------------------------------------------ */
void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_say_remember_stderr(void); /* at load: what fd 2 is, so a later message goes there only while it still is */

/* ---- threads.c: the shim's own threads ------------------------------------- */
/* Start one of the shim's own threads: detached, small stack, every
 * signal blocked (the app's signals are not ours to take), named so top -H
 * and perf tell it from the app's. 0 or -1; errno is left as it was. */
/* joinable: NULL for a detached thread, else where its id goes (the
 * caller joins it: set*id must know when it is gone, setid.c). */
int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name, pthread_t *joinable);
/* In a fork child: a thread of the parent's that this process does not have. */
void shim_thread_gone_in_child(pthread_t t);
/* Set while set*id waits for the shim's threads to end (a futex word:
 * woken when set); each thread's loop ends when it sees it. */
extern _Atomic uint32_t shim_threads_quit;
void shim_join_threads(void); /* every thread of the table, once it ended */
/* fork's handlers (init.c): the prepare handler waits (bounded) for
 * threads created and not yet running; the child has none of the
 * parent's threads. */
void shim_threads_wait_started(void);
void shim_threads_atfork_child(void);

/* ---- init.c ------------------------------------------------------------------ */
/* Built-in defaults, then the ini file, then the environment. */
int shim_build_policy(const char *config, struct policy *p, char *err, size_t errlen);

/* ---- testpoint.c: the test suite's hooks ------------------------------------ */
void shim_test_points_init(void); /* at load, from the environment */
/* Test hook: raise the configured signal at a named critical point
 * (SYNCSHIM_TEST_SIGNAL_AT), so tests can run handlers exactly there. */
extern int shim_test_points;
void shim_test_point_hit(const char *where);
#define TEST_POINT(where)                                                            \
	do {                                                                         \
		if (unlikely(shim_test_points))                                      \
			shim_test_point_hit(where);                                  \
	} while (0)
/* Test hook: the first thread to reach the named point
 * (SYNCSHIM_TEST_HOLD_AT) makes the directory SYNCSHIM_TEST_HOLD_FILE.reached
 * (no descriptor) and waits, up to 10 s, until SYNCSHIM_TEST_HOLD_FILE
 * exists: a test does something exactly while the shim is there; then it
 * makes SYNCSHIM_TEST_HOLD_FILE.left and goes on. A chain "a,b" holds that
 * thread again at b (SYNCSHIM_TEST_HOLD_FILE.1, .1.left; testpoint.c). */
extern int shim_test_holds;
void shim_test_hold_hit(const char *where);
#define TEST_HOLD(where)                                                             \
	do {                                                                         \
		if (unlikely(shim_test_holds))                                       \
			shim_test_hold_hit(where);                                   \
	} while (0)
/* Test hook: a module's counters at exit (a destructor's), one line
 * appended to the file the environment variable var names, when it is
 * set. Raw system calls: it runs late. */
void shim_test_report(const char *var, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
