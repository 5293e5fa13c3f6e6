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
 * Lock order: sched_mu, then the registry's (dropping the queue's
 * reference may recycle a file); nothing that holds the registry lock
 * takes sched_mu.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "flusher.h"
#include "pace.h"
#include "trace.h"
#include "workers.h"

#define NS_PER_MS 1000000ull
#define WORKER_IDLE_NS (2000 * NS_PER_MS)

static pthread_mutex_t sched_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *sched_list;            /* sched_mu */
static _Atomic(struct shim_file *) ready_stack; /* pushes from any thread */
static _Atomic uint32_t sched_wake;             /* futex word */
static _Atomic int nworkers;
static int nidle;                               /* sched_mu */

void workers_reset(struct shim_file *f)
{
	struct sched *sc = &f->sched;
	atomic_store(&sc->first_req_ns, 0);
	atomic_store(&sc->force, 0);
	atomic_store(&sc->writeback, 0);
	atomic_store(&sc->queued, 0);
	sc->ready_next = sc->sched_next = NULL;
}

void workers_arm(struct shim_file *f)
{
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&f->sched.first_req_ns, &zero, trace_now());
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

uint64_t workers_first_request(struct shim_file *f)
{
	return atomic_load_explicit(&f->sched.first_req_ns, memory_order_relaxed);
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
}

void workers_rearm(struct shim_file *f, uint64_t since)
{
	uint64_t zero = 0;
	if (since)
		atomic_compare_exchange_strong(&f->sched.first_req_ns, &zero, since);
	workers_arm(f);
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

void workers_schedule(struct shim_file *f, bool urgent)
{
	struct sched *sc = &f->sched;
	if (atomic_exchange(&sc->queued, 1) == 0) {
		if (!file_tryref(f)) { /* dying under a racing close: its closer drains it */
			atomic_store(&sc->queued, 0);
			return;
		}
		struct shim_file *head = atomic_load(&ready_stack);
		do
			sc->ready_next = head;
		while (!atomic_compare_exchange_weak(&ready_stack, &head, f));
		wake_one();
	} else if (urgent) {
		wake_one();
	}
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
		if (shim_start_thread(worker_main, 64 * 1024, "syncshim-flush") < 0) {
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

static void take_ready(void)
{
	struct shim_file *f = atomic_exchange(&ready_stack, NULL);
	while (f) {
		struct shim_file *next = f->sched.ready_next;
		f->sched.sched_next = sched_list;
		sched_list = f;
		f = next;
	}
}

/* sched_mu held. Drop files with nothing left to do (and the queue's
 * reference: here, under the lock, because the moment one is off the list
 * a requester may queue it again and another thread relink it); return the
 * most overdue one (unlinked from the list) or NULL and the next deadline. */
static struct shim_file *pick(uint64_t now, uint64_t *next)
{
	struct shim_file *best = NULL, **bestp = NULL;
	uint64_t best_dl = UINT64_MAX;
	*next = UINT64_MAX;
	for (struct shim_file **pp = &sched_list; *pp;) {
		struct shim_file *f = *pp;
		uint64_t dl = deadline_of(f);
		if (dl == UINT64_MAX) {
			atomic_store(&f->sched.queued, 0);
			if ((has_pending(f) || atomic_load(&f->sched.writeback)) &&
			    atomic_exchange(&f->sched.queued, 1) == 0) { /* re-armed under us */
				pp = &f->sched.sched_next;
				continue;
			}
			*pp = f->sched.sched_next;
			file_put(f);
			continue;
		}
		if (dl <= now && dl < best_dl) {
			best = f;
			bestp = pp;
			best_dl = dl;
		} else if (dl > now && dl < *next) {
			*next = dl;
		}
		pp = &f->sched.sched_next;
	}
	if (best)
		*bestp = best->sched.sched_next;
	return best;
}

static void work_on(struct shim_file *f)
{
	if (atomic_exchange(&f->sched.writeback, 0))
		flusher_writeback(f);
	if (!has_pending(f))
		return;
	if (flusher_owes(f)) {
		flusher_sync_requested(f);
		return;
	}
	/* Armed by a request a sync had already covered (it took its number
	 * before that sync began and armed the clock after): disarm, or the
	 * deadline stays passed and this thread spins. A request racing with
	 * the disarm is seen by the re-check and re-armed. */
	workers_disarm(f);
	if (flusher_owes(f))
		workers_arm(f);
}

/* sched_mu held on entry and return. One round: returns false when this
 * thread should retire. */
static bool worker_round(uint64_t *idle_since)
{
	uint32_t seen = atomic_load_explicit(&sched_wake, memory_order_acquire);
	take_ready();
	uint64_t now = trace_now(), next;
	struct shim_file *f = pick(now, &next);
	if (f) {
		bool more = sched_list != NULL || atomic_load(&ready_stack) != NULL;
		pthread_mutex_unlock(&sched_mu);
		if (more)
			workers_ensure(true); /* a slow file must not hold up the others */
		work_on(f);
		pthread_mutex_lock(&sched_mu);
		f->sched.sched_next = sched_list; /* back on the list; pick() drops it when idle */
		sched_list = f;
		*idle_since = trace_now();
		return true;
	}
	if (!sched_list && now - *idle_since > WORKER_IDLE_NS && !atomic_load(&ready_stack))
		return false;
	uint64_t wait = next == UINT64_MAX ? WORKER_IDLE_NS : next - now;
	struct timespec ts = { (time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull) };
	nidle++;
	pthread_mutex_unlock(&sched_mu);
	syscall(SYS_futex, &sched_wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
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
	if (atomic_load(&ready_stack) && atomic_load(&nworkers) == 0)
		workers_ensure(false);
	return NULL;
}

void workers_atfork_child(void)
{
	pthread_mutex_init(&sched_mu, NULL);
	sched_list = NULL;
	atomic_store(&ready_stack, NULL);
	atomic_store(&nworkers, 0);
	nidle = 0;
}
