/*
 * workers.c - the flusher threads.
 *
 * A small pool shared by all deferred files: spawned on demand up to
 * max_flushers, each takes the most overdue file, and retires after an
 * idle spell. A file with work is handed to them through a lock-free stack
 * and a futex, so the write path (O_SYNC writes under osync=defer, early
 * writeback) can request work without a lock and from a signal handler.
 * The threads run with shim_busy set: everything they call is the shim's
 * own. What a thread does to a file is flusher.c's business.
 *
 * The schedule. The threads keep the files they hold in a heap ordered by
 * deadline (an intrusive pairing heap: no allocation, O(1) to file one,
 * O(log n) amortized to take the most overdue), so thousands of open
 * deferred files cost each sync a logarithm, not a scan of all of them. A
 * file's key is its deadline when it was filed. A deadline only moves
 * later on its own (a sync disarms the clock, the next request re-arms it
 * after); a file whose key comes due early is looked at, re-filed under
 * its real deadline or dropped, which costs one more heap step. A
 * deadline that moves earlier (a threshold forces a sync, early writeback,
 * a reload with a shorter window) must be seen at once: the requester,
 * which may not take a lock, pushes the file on a second lock-free stack
 * (poke), and a thread re-files it (decrease-key) under the lock; a reload
 * re-files every file.
 *
 * Lock order: sched_mu, then the registry's (dropping the queue's
 * reference may recycle a file); nothing that holds the registry lock
 * takes sched_mu.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "flusher.h"
#include "held.h"
#include "knobs.h"
#include "pace.h"
#include "snapshot.h"
#include "trace.h"
#include "workers.h"

#define NS_PER_MS 1000000ull
#define WORKER_IDLE_NS (2000 * NS_PER_MS)

static pthread_mutex_t sched_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *heap_root;             /* sched_mu */
static const struct policy *keyed_under;        /* sched_mu: the snapshot the keys were computed in */
static _Atomic(struct shim_file *) ready_stack; /* pushes from any thread */
static _Atomic(struct shim_file *) poke_stack;  /* pushes from any thread */
static _Atomic uint32_t sched_wake;             /* futex word */
static _Atomic int nworkers;
static int nidle;                               /* sched_mu */
/* Heap steps taken (links, cuts, files looked at): a test can tell the
 * schedule's cost per file without timing anything (SYNCSHIM_TEST_SCHED_STEPS). */
static _Atomic uint64_t sched_steps, sched_filed;

void workers_reset(struct shim_file *f)
{
	struct sched *sc = &f->sched;
	atomic_store(&sc->first_req_ns, 0);
	atomic_store(&sc->force, 0);
	atomic_store(&sc->writeback, 0);
	atomic_store(&sc->queued, 0);
	atomic_store(&sc->poked, 0);
	sc->ready_next = sc->poke_next = sc->sched_next = NULL;
	sc->heap_child = sc->heap_sibling = sc->heap_prev = NULL;
	sc->heap_key = 0;
	sc->in_heap = false;
}

void workers_arm(struct shim_file *f, uint64_t now)
{
	/* Armed already (every request but the first of a round): a load. */
	if (atomic_load(&f->sched.first_req_ns) != 0)
		return;
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&f->sched.first_req_ns, &zero, now ? now : trace_now());
}

bool workers_armed(struct shim_file *f)
{
	return atomic_load(&f->sched.first_req_ns) != 0;
}

uint64_t workers_disarm(struct shim_file *f)
{
	atomic_store(&f->sched.force, 0);
	return atomic_exchange(&f->sched.first_req_ns, 0);
}

bool workers_force(struct shim_file *f)
{
	return atomic_exchange(&f->sched.force, 1) == 0;
}

void workers_writeback(struct shim_file *f)
{
	atomic_store(&f->sched.writeback, 1);
	workers_schedule(f, true);
}

/* In a fork child: the reference a queued file held belonged to the
 * parent's queue, which the child does not have. */
void workers_forget_in_child(struct shim_file *f)
{
	if (atomic_load(&f->sched.queued))
		atomic_fetch_sub(&f->refs, 1);
	if (atomic_load(&f->sched.poked))
		atomic_fetch_sub(&f->refs, 1);
}

void workers_rearm(struct shim_file *f, uint64_t since)
{
	uint64_t zero = 0;
	if (since)
		atomic_compare_exchange_strong(&f->sched.first_req_ns, &zero, since);
	workers_arm(f, 0);
	workers_schedule(f, false);
}

static bool has_pending(const struct shim_file *f)
{
	return atomic_load_explicit(&f->sched.first_req_ns, memory_order_acquire) != 0 ||
	       atomic_load_explicit(&f->sched.force, memory_order_acquire) != 0;
}

static void wake_one(void)
{
	atomic_fetch_add_explicit(&sched_wake, 1, memory_order_release);
	syscall(SYS_futex, &sched_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Between the claim (queued, poked) and the push the file is promised to
 * the threads but not yet theirs to find: a claim like a lock's. It runs
 * with shim_busy raised, so a signal handler that lands there passes
 * straight to libc; as an ordinary caller its write would wait for this
 * very file's sync (ordered defer), which no thread could see until the
 * handler returned.
 */
void workers_schedule(struct shim_file *f, bool urgent)
{
	struct sched *sc = &f->sched;
	/* Queued already and nothing urgent (every request of a round but its
	 * first): nothing to claim. A thread that unqueues it right after this
	 * load re-checks has_pending after its unqueue, and finds the request
	 * armed (workers_arm came first). */
	if (!urgent && atomic_load(&sc->queued))
		return;
	shim_enter();
	if (atomic_exchange(&sc->queued, 1) == 0) {
		TEST_POINT("schedule");
		if (!file_tryref(f)) { /* dying under a racing close: its closer drains it */
			atomic_store(&sc->queued, 0);
			shim_leave();
			return;
		}
		struct shim_file *head = atomic_load(&ready_stack);
		do
			sc->ready_next = head;
		while (!atomic_compare_exchange_weak(&ready_stack, &head, f));
		shim_leave();
		wake_one();
	} else if (urgent) {
		/* Held already, maybe filed under a later deadline: have a
		 * thread look at it again. The poke takes its own reference
		 * (the threads may drop theirs meanwhile). */
		if (atomic_exchange(&sc->poked, 1) == 0) {
			if (file_tryref(f)) {
				struct shim_file *head = atomic_load(&poke_stack);
				do
					sc->poke_next = head;
				while (!atomic_compare_exchange_weak(&poke_stack, &head, f));
			} else {
				atomic_store(&sc->poked, 0);
			}
		}
		shim_leave();
		wake_one();
	} else {
		shim_leave();
	}
}

void workers_wake_all(void)
{
	atomic_fetch_add_explicit(&sched_wake, 1, memory_order_release);
	syscall(SYS_futex, &sched_wake, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* After set*id: work that came in while the threads were away gets one. */
void workers_resume(void)
{
	shim_enter();
	pthread_mutex_lock(&sched_mu);
	bool owed = heap_root != NULL || atomic_load(&ready_stack) != NULL || atomic_load(&poke_stack) != NULL;
	pthread_mutex_unlock(&sched_mu);
	shim_leave();
	if (owed)
		workers_ensure(false);
}

bool workers_running(void)
{
	return atomic_load(&nworkers) > 0;
}

static void *worker_main(void *arg);

int workers_ensure(bool more)
{
	int have = atomic_load(&nworkers);
	if (have > 0 && !more)
		return 0;
	unsigned ticket;
	uint32_t cap = policy_enter(&ticket)->max_flushers;
	policy_leave(ticket);
	int r = 0;
	shim_enter();
	pthread_mutex_lock(&sched_mu);
	have = atomic_load(&nworkers);
	if (have == 0 || (more && nidle == 0 && (uint32_t)have < cap)) {
		atomic_fetch_add(&nworkers, 1);
		if (shim_start_thread(worker_main, 64 * 1024, "syncshim-flush", NULL) < 0) {
			atomic_fetch_sub(&nworkers, 1);
			r = -1;
		}
	}
	pthread_mutex_unlock(&sched_mu);
	shim_leave();
	return atomic_load(&nworkers) > 0 ? 0 : r;
}

static uint64_t deadline_of(struct shim_file *f)
{
	if (atomic_load(&f->sched.force) || atomic_load(&f->sched.writeback))
		return 0;
	uint64_t first = atomic_load(&f->sched.first_req_ns);
	if (!first)
		return UINT64_MAX;
	struct knobs k;
	knobs_of(f, &k);
	return pace_due_ns(first, k.max_delay_ms);
}

/* ---- the deadline heap (sched_mu) ------------------------------------------ */

static void step(void)
{
	atomic_fetch_add_explicit(&sched_steps, 1, memory_order_relaxed);
}

/* Two heaps' roots; the later one becomes the earlier one's leftmost child. */
static struct shim_file *meld(struct shim_file *a, struct shim_file *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	step();
	if (b->sched.heap_key < a->sched.heap_key) {
		struct shim_file *t = a;
		a = b;
		b = t;
	}
	struct shim_file *c = a->sched.heap_child;
	b->sched.heap_prev = a;
	b->sched.heap_sibling = c;
	if (c)
		c->sched.heap_prev = b;
	a->sched.heap_child = b;
	a->sched.heap_sibling = a->sched.heap_prev = NULL;
	return a;
}

/* A root's children, melded into one heap: pairs left to right, then the
 * pairs right to left (what keeps the amortized cost logarithmic). */
static struct shim_file *merge_children(struct shim_file *first)
{
	struct shim_file *pairs = NULL; /* the melded pairs, last first, via heap_sibling */
	while (first) {
		struct shim_file *a = first, *b = a->sched.heap_sibling;
		first = b ? b->sched.heap_sibling : NULL;
		a->sched.heap_sibling = a->sched.heap_prev = NULL;
		if (b)
			b->sched.heap_sibling = b->sched.heap_prev = NULL;
		struct shim_file *m = meld(a, b);
		m->sched.heap_sibling = pairs;
		pairs = m;
	}
	struct shim_file *root = NULL;
	while (pairs) {
		struct shim_file *next = pairs->sched.heap_sibling;
		pairs->sched.heap_sibling = NULL;
		root = meld(root, pairs);
		pairs = next;
	}
	return root;
}

static void heap_file(struct shim_file *f, uint64_t key)
{
	struct sched *sc = &f->sched;
	sc->heap_key = key;
	sc->heap_child = sc->heap_sibling = sc->heap_prev = NULL;
	sc->in_heap = true;
	atomic_fetch_add_explicit(&sched_filed, 1, memory_order_relaxed);
	heap_root = meld(heap_root, f);
}

static struct shim_file *heap_pop(void)
{
	struct shim_file *f = heap_root;
	if (!f)
		return NULL;
	step();
	heap_root = merge_children(f->sched.heap_child);
	f->sched.heap_child = NULL;
	f->sched.in_heap = false;
	return f;
}

/* f (in the heap) is due earlier than its key says: cut its subtree out
 * and meld it back under the new key. */
static void heap_earlier(struct shim_file *f, uint64_t key)
{
	struct sched *sc = &f->sched;
	step();
	if (f == heap_root) {
		sc->heap_key = key;
		return;
	}
	struct shim_file *prev = sc->heap_prev, *next = sc->heap_sibling;
	if (prev->sched.heap_child == f)
		prev->sched.heap_child = next;
	else
		prev->sched.heap_sibling = next;
	if (next)
		next->sched.heap_prev = prev;
	sc->heap_sibling = sc->heap_prev = NULL;
	sc->heap_key = key;
	heap_root = meld(heap_root, f);
}

/* ---- filing files ----------------------------------------------------------- */

/* sched_mu held; f holds the queue's reference and is not in the heap. File
 * it under its deadline, or, with nothing left to do, drop it and the
 * queue's reference (here, under the lock: the moment it is dropped a
 * requester may queue it again and another thread file it). */
static void place(struct shim_file *f)
{
	uint64_t dl = deadline_of(f);
	if (dl == UINT64_MAX) {
		atomic_store(&f->sched.queued, 0);
		if (!(has_pending(f) || atomic_load(&f->sched.writeback)) ||
		    atomic_exchange(&f->sched.queued, 1) != 0) {
			file_put(f);
			return;
		}
		dl = deadline_of(f); /* re-armed under us */
		if (dl == UINT64_MAX)
			dl = 0; /* and disarmed again: look at it once more */
	}
	heap_file(f, dl);
}

static void take_ready(void)
{
	struct shim_file *f = atomic_exchange(&ready_stack, NULL);
	while (f) {
		struct shim_file *next = f->sched.ready_next;
		place(f);
		f = next;
	}
}

static void take_pokes(void)
{
	struct shim_file *f = atomic_exchange(&poke_stack, NULL);
	while (f) {
		struct shim_file *next = f->sched.poke_next;
		atomic_store(&f->sched.poked, 0); /* before the look: a later poke comes again */
		step();
		if (f->sched.in_heap) {
			uint64_t dl = deadline_of(f);
			if (dl < f->sched.heap_key)
				heap_earlier(f, dl);
		} /* else a thread is working on it, and files it anew after */
		file_put(f);
		f = next;
	}
}

/* A reload may have shortened the window: every key is re-computed. */
static void rekey_all(void)
{
	struct shim_file *all = NULL, *f;
	while ((f = heap_pop())) {
		f->sched.sched_next = all;
		all = f;
	}
	while (all) {
		f = all;
		all = f->sched.sched_next;
		f->sched.sched_next = NULL;
		place(f);
	}
}

static void rekey_if_reloaded(void)
{
	unsigned ticket;
	const struct policy *p = policy_enter(&ticket);
	policy_leave(ticket);
	if (p == keyed_under)
		return;
	if (keyed_under)
		rekey_all();
	keyed_under = p;
}

/* sched_mu held. The most overdue file (out of the heap, with the queue's
 * reference), or NULL and when the next is due. Files filed under a key
 * earlier than their deadline now are re-filed on the way. */
static struct shim_file *pick(uint64_t now, uint64_t *next)
{
	*next = UINT64_MAX;
	while (heap_root) {
		if (heap_root->sched.heap_key > now) {
			*next = heap_root->sched.heap_key;
			return NULL;
		}
		struct shim_file *f = heap_pop();
		uint64_t dl = deadline_of(f);
		if (dl <= now)
			return f;
		place(f);
	}
	return NULL;
}

static void work_on(struct shim_file *f)
{
	if (atomic_exchange(&f->sched.writeback, 0))
		flusher_writeback(f);
	if (!has_pending(f))
		return;
	if (flusher_owes(f)) {
		flusher_sync_requested(f);
		if (flusher_owes(f) && !flusher_can_cover_more(f)) {
			/* What it still owes promises held writes (held.c): its
			 * deadline comes back when they are applied, not now (this
			 * thread would find it due and spin). Looked at again after
			 * handing it over, in case they were applied meanwhile. */
			held_owed_since(f, workers_disarm(f));
			if (flusher_can_cover_more(f))
				workers_rearm(f, atomic_exchange(&f->hold.owed_since, 0));
		}
		return;
	}
	/* Armed by a request a sync had already covered (it took its number
	 * before that sync began and armed the clock after): disarm, or the
	 * deadline stays passed and this thread spins. A request racing with
	 * the disarm is seen by the re-check and re-armed. */
	workers_disarm(f);
	if (flusher_owes(f))
		workers_arm(f, 0);
}

/* sched_mu held on entry and return. One round: returns false when this
 * thread should retire. */
static bool worker_round(uint64_t *idle_since)
{
	uint32_t seen = atomic_load_explicit(&sched_wake, memory_order_acquire);
	if (atomic_load(&shim_threads_quit))
		return false; /* set*id: no thread of ours may be left (setid.c); the schedule stays */
	rekey_if_reloaded();
	take_ready();
	take_pokes();
	uint64_t now = trace_now(), next;
	struct shim_file *f = pick(now, &next);
	if (f) {
		bool more = heap_root != NULL || atomic_load(&ready_stack) != NULL;
		pthread_mutex_unlock(&sched_mu);
		if (more)
			workers_ensure(true); /* a slow file must not hold up the others */
		work_on(f);
		pthread_mutex_lock(&sched_mu);
		place(f); /* under its next deadline, or dropped when idle */
		*idle_since = trace_now();
		return true;
	}
	if (!heap_root && now - *idle_since > WORKER_IDLE_NS && !atomic_load(&ready_stack) &&
	    !atomic_load(&poke_stack))
		return false;
	/* Until the deadline itself (CLOCK_MONOTONIC, absolute): a thread
	 * preempted between reading the clock and going to sleep must not
	 * sleep its whole wait on top of that. */
	uint64_t until = next == UINT64_MAX ? now + WORKER_IDLE_NS : next;
	struct timespec ts = { (time_t)(until / 1000000000ull), (long)(until % 1000000000ull) };
	nidle++;
	pthread_mutex_unlock(&sched_mu);
	syscall(SYS_futex, &sched_wake, FUTEX_WAIT_BITSET_PRIVATE, seen, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
	pthread_mutex_lock(&sched_mu);
	nidle--;
	return true;
}

static void *worker_main(void *arg)
{
	(void)arg;
	shim_busy = 1; /* everything this thread calls is the shim's own */
	uint64_t idle_since = trace_now();
	pthread_mutex_lock(&sched_mu);
	while (worker_round(&idle_since))
		;
	atomic_fetch_sub(&nworkers, 1);
	pthread_mutex_unlock(&sched_mu);
	/* A request may have slipped in after the last look. */
	if (atomic_load(&ready_stack) && atomic_load(&nworkers) == 0 && !atomic_load(&shim_threads_quit))
		workers_ensure(false);
	return NULL;
}

void workers_atfork_child(void)
{
	pthread_mutex_init(&sched_mu, NULL);
	heap_root = NULL;
	keyed_under = NULL;
	atomic_store(&ready_stack, NULL);
	atomic_store(&poke_stack, NULL);
	atomic_store(&nworkers, 0);
	nidle = 0;
}

/* SYNCSHIM_TEST_SCHED_STEPS=FILE: at exit, append "sched_steps=S filed=F"
 * to FILE (the suite's check that the schedule's cost per file stays
 * logarithmic, counted instead of timed). */
__attribute__((destructor)) static void report_sched_steps(void)
{
	shim_test_report("SYNCSHIM_TEST_SCHED_STEPS", "sched_steps=%llu filed=%llu\n",
			 (unsigned long long)atomic_load(&sched_steps), (unsigned long long)atomic_load(&sched_filed));
}
