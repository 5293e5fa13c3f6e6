/*
 * threads.c - the shim's own threads: started with every signal blocked,
 * kept in a table so set*id can stop and join them all.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "shim.h"

/*
 * The shim's threads, joinable, so that set*id (shim/calls/setid.c) can
 * know when none is left: glibc's setuid family runs the call in every
 * thread and aborts the process when one thread's result differs from the
 * caller's, which it does for a thread of ours whenever the caller changed
 * its own credentials alone before (capset, PR_SET_KEEPCAPS: setpriv,
 * libcap-ng). A slot is free, running, or ended (the function returned;
 * joined by the next start or quiesce). A caller that joins its own thread
 * (the live publisher) keeps it out of the table.
 */
#define SHIM_THREADS_MAX 128
enum { SLOT_FREE, SLOT_RUNNING, SLOT_ENDED };
static struct {
	pthread_t id;
	void *(*fn)(void *);
	_Atomic int state;
} threads_tab[SHIM_THREADS_MAX];
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic uint32_t shim_threads_quit;

/*
 * Threads of ours created and not yet running their function. A fork
 * waits for them (init.c's atfork_prepare, bounded): between pthread_create and
 * its function a new thread may be inside a sanitizer's thread start,
 * which allocates with the sanitizer's allocator; this machine's libasan
 * (gcc 12) was seen not to lock that allocator around fork, so the
 * child's first allocation (its own thread of ours, pthread_create's)
 * waited forever for a lock held by a thread it does not have (make asan:
 * test_shim concurrency/fork_child_follows_policy, 1 run in 9; the
 * child's live thread in ASan's calloc, the parent's created just before
 * the fork). Nothing else of a thread's start is ours to wait for.
 */
static _Atomic int threads_starting;

static void thread_running(void)
{
	atomic_fetch_sub(&threads_starting, 1);
}

void shim_threads_wait_started(void)
{
	for (int i = 0; i < 1000 && atomic_load(&threads_starting) > 0; i++) {
		struct timespec ts = { 0, 100 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* A joinable thread of ours (no table slot): arg is its function. */
static void *joinable_trampoline(void *arg)
{
	void *(*fn)(void *) = (void *(*)(void *))arg;
	thread_running();
	return fn(NULL);
}

static void *thread_trampoline(void *arg)
{
	int i = (int)(intptr_t)arg;
	thread_running();
	void *r = threads_tab[i].fn(NULL);
	atomic_store(&threads_tab[i].state, SLOT_ENDED); /* its last act: joining it now waits for nothing */
	return r;
}

/* threads_mu held: join the ones that ended (all, with every), free their slots. */
static void join_slots(bool every)
{
	for (int i = 0; i < SHIM_THREADS_MAX; i++) {
		int st = atomic_load(&threads_tab[i].state);
		if (st == SLOT_ENDED || (every && st == SLOT_RUNNING)) {
			pthread_join(threads_tab[i].id, NULL);
			atomic_store(&threads_tab[i].state, SLOT_FREE);
		}
	}
}

static int start_one(void *(*fn)(void *), pthread_attr_t *at, pthread_t *t)
{
	if (atomic_load(&shim_threads_quit))
		return -1; /* a set*id is waiting for our threads to be gone */
	pthread_mutex_lock(&threads_mu);
	join_slots(false);
	int slot = -1;
	for (int i = 0; i < SHIM_THREADS_MAX && slot < 0; i++)
		if (atomic_load(&threads_tab[i].state) == SLOT_FREE)
			slot = i;
	int r = -1;
	if (slot >= 0) {
		threads_tab[slot].fn = fn;
		threads_tab[slot].id = 0;
		atomic_store(&threads_tab[slot].state, SLOT_RUNNING);
		atomic_fetch_add(&threads_starting, 1);
		r = pthread_create(t, at, thread_trampoline, (void *)(intptr_t)slot) == 0 ? 0 : -1;
		if (r != 0)
			thread_running(); /* it never will */
		if (r == 0)
			threads_tab[slot].id = *t;
		else
			atomic_store(&threads_tab[slot].state, SLOT_FREE);
	}
	pthread_mutex_unlock(&threads_mu);
	return r;
}

int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name, pthread_t *joinable)
{
	int e = errno;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, stack);
	pthread_t t;
	/* Through the global pthread_create (a sanitizer's interceptor may be
	 * first) with shim_busy raised: lifecycle.c's wrapper then passes it
	 * straight to libc, uncounted (the shim's threads are not the app's). */
	shim_enter();
	int r;
	if (joinable) {
		r = -1;
		if (!atomic_load(&shim_threads_quit)) {
			atomic_fetch_add(&threads_starting, 1);
			r = pthread_create(&t, &at, joinable_trampoline, (void *)fn) == 0 ? 0 : -1;
			if (r != 0)
				thread_running();
		}
	} else
		r = start_one(fn, &at, &t);
	shim_leave();
	if (r == 0)
		pthread_setname_np(t, name);
	if (r == 0 && joinable)
		*joinable = t;
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

void shim_join_threads(void)
{
	pthread_mutex_lock(&threads_mu);
	join_slots(true);
	pthread_mutex_unlock(&threads_mu);
}

/* A parent's joinable thread, in a fork child where it does not exist.
 * glibc has already reclaimed its stack, so nothing is to be done, except
 * under TSan: its registry keeps a joinable thread's id after the fork,
 * and the child's next thread, given the same cached stack and so the
 * same pthread_t, would abort it ("dup thread with used id"). Detaching
 * it there lets TSan drop the id (glibc only marks the descriptor). */
void shim_thread_gone_in_child(pthread_t t)
{
#ifdef SYNCSHIM_TSAN
	if (t) /* 0: the fork came between a slot's taking and its thread's start */
		pthread_detach(t);
#else
	(void)t;
#endif
}

void shim_threads_atfork_child(void)
{
	pthread_mutex_init(&threads_mu, NULL);
	atomic_store(&threads_starting, 0); /* none of the parent's starts goes on here */
	for (int i = 0; i < SHIM_THREADS_MAX; i++) {
		if (atomic_load(&threads_tab[i].state) != SLOT_FREE)
			shim_thread_gone_in_child(threads_tab[i].id);
		atomic_store(&threads_tab[i].state, SLOT_FREE); /* the parent's threads are not in the child */
		threads_tab[i].id = 0;
	}
	atomic_store(&shim_threads_quit, 0);
}
