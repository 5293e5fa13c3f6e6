/*
 * lifecycle.c - every way a process ends goes through the exit barrier.
 *
 * The barrier (shim_exit_sequence: pending deferred syncs made, errors no
 * call reported said on stderr, the log's trailer, the live counters'
 * last round) must run however the process leaves:
 *   - exit(), and a return from main: the shim's destructor (init.c).
 *     libc calls exit() for main's return out of the shim's sight, so main
 *     is wrapped (__libc_start_main) to learn the status it returned:
 *     unreported_errors = exit turns only a 0 into 74.
 *   - _exit and _Exit (exec.c).
 *   - quick_exit: the barrier is an at_quick_exit handler registered at
 *     load, so it runs after every handler the app registers (they run in
 *     reverse order), and their syncs are covered too.
 *   - syscall(SYS_exit_group) and syscall(SYS_exit) of the app's last
 *     thread (syscall.c, lifecycle_raw_thread_exit): the kernel alone
 *     would end the process then, but the shim's own threads keep it (see
 *     below), so the barrier runs and the process ends with the status the
 *     kernel would have given it.
 *   - the last app thread ending after main called pthread_exit. glibc
 *     ends the process with exit(0) when its count of threads reaches 0,
 *     but the shim's own threads (log, live counters, config watcher,
 *     flushers) are in that count, block every signal and never end on
 *     their own: the process would hang, deaf even to SIGTERM. So the shim
 *     counts the app's threads (pthread_create is wrapped to mark each at
 *     its start) and, when the last one ends, calls exit(0) as glibc would.
 *   - any of these from a signal handler that interrupted the shim's own
 *     work: the interrupted code's locks cannot be waited for, so the
 *     barrier is made without them (lastgasp.c).
 *
 * A thread's end is seen through a pthread key whose destructor runs when
 * the thread returns, calls pthread_exit or is cancelled (and for main,
 * when it calls pthread_exit), after the thread's cleanup handlers. The
 * same key hands a thread's latency-log slot back (log.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc.h"
#include "flusher.h"
#include "inline_trap.h"
#include "lastgasp.h"
#include "lifecycle.h"
#include "live.h"
#include "log.h"
#include "shim.h"
#include "snapshot.h"
#include "syncerr.h"

int shim_exit_status;
_Atomic int shim_exit_begun;

int shim_exit_sequence(int status)
{
	if (!atomic_load_explicit(&shim.ready, memory_order_acquire) || shim_vfork_child())
		return status;
	atomic_store(&shim_exit_begun, 1);
	/* The barrier's syncs and the log's writes are cancellation points:
	 * a thread cancelled inside would unwind out of exit() itself. */
	int cancel = shim_nocancel_begin();
	atomic_store(&shim.exiting, 1);
	bool lost;
	if (shim_busy & ~SHIM_IN_VFORK) {
		lost = lastgasp_barrier(); /* inside the shim's own work: no lock may be waited for */
	} else {
		flusher_flush_all();
		lost = syncerr_tell_all_unreported();
		log_stop(status);
		live_stop();
	}
	unsigned ticket;
	bool strict = policy_enter(&ticket)->unreported_errors == UNREPORTED_EXIT;
	policy_leave(ticket);
	shim_nocancel_end(cancel);
	/* 74 only where the process would have exited 0: any other status is
	 * the app's own answer and stays. */
	return lost && strict && status == 0 ? 74 : status;
}

/* ---- main's return value ------------------------------------------------------ */

typedef int (*main_fn)(int, char **, char **);
static main_fn app_main;

static int main_returns(int argc, char **argv, char **envp)
{
	int r = app_main(argc, argv, envp);
	shim_exit_status = r; /* libc now calls exit(r), unseen */
	atomic_store(&shim_exit_begun, 1);
	return r;
}

SHIM_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
			       void (*rtld_fini)(void), void *stack_end)
{
	app_main = main;
	return LIBC(__libc_start_main)(main_returns, argc, argv, init, fini, rtld_fini, stack_end);
}

/* ---- quick_exit ------------------------------------------------------------ */

static int quick_status;

SHIM_API void quick_exit(int status)
{
	quick_status = status;
	atomic_store(&shim_exit_begun, 1);
	LIBC(quick_exit)(status); /* the app's at_quick_exit handlers, then ours */
	__builtin_unreachable();
}

/* No stdio flush on this path: quick_exit does not flush, and the app
 * chose it. */
static void quick_exit_barrier(void)
{
	int st = shim_exit_sequence(quick_status);
	if (st != quick_status)
		LIBC(_exit)(st);
}

/* ---- the app's threads --------------------------------------------------------- */

#define THREAD_END_APP 1u  /* an app thread: counted in app_threads */
#define THREAD_END_LAST 4u /* the last app thread: exit once the other keys' destructors ran */

struct app_start {
	void *(*fn)(void *);
	void *arg;
};

static pthread_key_t end_key;
static bool end_key_ok;
static _Atomic long app_threads = 1; /* main */
static __thread struct app_start *my_start; /* freed at the thread's end */

static void thread_end(void *v)
{
	uintptr_t bits = (uintptr_t)v;
	if (my_start) {
		shim_free(my_start);
		my_start = NULL;
	}
	if (bits & THREAD_END_LAST) {
		exit(0); /* glibc's own answer when its last thread ends */
	}
	if (bits & THREAD_END_LOG)
		log_thread_ended();
	if ((bits & THREAD_END_APP) && atomic_fetch_sub(&app_threads, 1) == 1 &&
	    atomic_load_explicit(&shim.ready, memory_order_acquire) && !atomic_load(&shim_exit_begun)) {
		/* One more destructor round: every other key's destructor of this
		 * thread runs first, as it would before glibc's exit(0). */
		pthread_setspecific(end_key, (void *)(uintptr_t)THREAD_END_LAST);
	}
}

/* The status a process whose threads all ended by SYS_exit leaves with:
 * its main thread's (0 when it left through pthread_exit). */
static _Atomic int main_thread_status;

/*
 * A thread's raw SYS_exit skips its key destructors: what thread_end
 * does is done here (its start block, its latency-log slot, its count).
 * When it is the app's last thread, the kernel would now end the process
 * (the shim's threads do not count for the app): the barrier, then
 * exit_group, through _exit.
 */
void lifecycle_raw_thread_exit(int status)
{
	if (gettid() == getpid())
		atomic_store(&main_thread_status, status);
	uintptr_t bits = end_key_ok ? (uintptr_t)pthread_getspecific(end_key) : 0;
	if (end_key_ok)
		pthread_setspecific(end_key, NULL);
	if (my_start) {
		shim_free(my_start);
		my_start = NULL;
	}
	if (bits & THREAD_END_LOG)
		log_thread_ended();
	if ((bits & THREAD_END_APP) && atomic_fetch_sub(&app_threads, 1) == 1 &&
	    atomic_load_explicit(&shim.ready, memory_order_acquire) && !atomic_load(&shim_exit_begun))
		_exit(atomic_load(&main_thread_status));
}

void thread_end_watch(unsigned bit)
{
	if (!end_key_ok)
		return;
	uintptr_t bits = (uintptr_t)pthread_getspecific(end_key);
	if (!(bits & bit))
		pthread_setspecific(end_key, (void *)(bits | bit));
}

/* The new thread's first code: nothing here may need a sanitizer's
 * per-thread state, which a ThreadSanitizer build's fn (its interceptor's
 * start routine) only sets up: plain loads, a TLS store, libc's
 * pthread_setspecific. The block is freed at the thread's end. */
__attribute__((no_sanitize("address", "thread"))) static void *app_thread_start(void *p)
{
	struct app_start *s = p;
	my_start = s;
	pthread_setspecific(end_key, (void *)(uintptr_t)THREAD_END_APP);
	inline_trap_thread_start(); /* dispatch is per thread */
	return s->fn(s->arg);
}

SHIM_API int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (!end_key_ok || shim_bypass())
		return LIBC(pthread_create)(t, attr, fn, arg);
	struct app_start *s = shim_alloc(sizeof(*s));
	if (!s) /* uncounted: the process may then end before it does (README) */
		return LIBC(pthread_create)(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	atomic_fetch_add(&app_threads, 1);
	int r = LIBC(pthread_create)(t, attr, app_thread_start, s);
	if (r != 0) {
		atomic_fetch_sub(&app_threads, 1);
		shim_free(s);
	}
	return r;
}

void lifecycle_init(void)
{
	/* A key past the first 32 would make pthread_setspecific allocate
	 * (libc's malloc) on a thread's first traced call: go without. */
	if (pthread_key_create(&end_key, thread_end) == 0) {
		if (end_key < 32)
			end_key_ok = true;
		else
			pthread_key_delete(end_key);
	}
	thread_end_watch(THREAD_END_APP); /* main */
	at_quick_exit(quick_exit_barrier);
}

/* Only the forking thread lives on in the child. */
void lifecycle_atfork_child(void)
{
	atomic_store(&app_threads, 1);
}
