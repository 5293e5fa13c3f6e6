/*
 * log.c - the latency logger inside the host.
 *
 * App threads only ever touch memory, and mostly their own. A finished
 * call is stamped twice (TSC when invariant), and counted into histograms
 * and per-second tallies that belong to the calling thread: plain stores,
 * no locked instruction, no cache line shared with another core. In calls
 * mode the thread also pushes one fixed-size record into its own
 * single-producer ring. No lock, no allocation, no system call.
 *
 * The logger thread does the rest: once a second it adds up every thread's
 * histograms and tallies into an INTERVAL and a HIST set; in calls mode it
 * drains the rings every 1-10 ms (faster while they fill) and writes the
 * records. A full ring drops the record and counts it; the histograms still
 * count the call. A thread beyond the pool, or with more (op, rule) pairs
 * than it has private histograms, counts into shared ones with atomics.
 * Every block is written with one write(), so a log cut by SIGKILL ends at
 * a block boundary.
 *
 * Files are announced (FILE blocks) through a queue filled when the shim
 * first meets a file, under the registry lock (the notice itself is made
 * before the lock is taken: nothing allocates under it); the logger
 * drains the queue before the rings, so every record it writes names a
 * file already announced.
 *
 * The log's descriptor is the shim's own (shimfd.c): placed above the
 * app's numbers, invisible to the app's close/close_range/dup2, and
 * checked against the log's (dev, inode) before each tick's writes. If the
 * app took the number behind our back, the log is reopened by name, or
 * logging stops with one line on stderr: never a block into the app's file.
 *
 * A forked child's log starts lazily: the fork handler only resets
 * counters (no allocation, no file, no thread inside it), calls keep being
 * counted in memory, and the child's own log is created at its first
 * write, sync or rename seen from a call that may do so. A child that only
 * closes descriptors and execs writes none.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "fdtable.h"
#include "files.h"
#include "knobs.h"
#include "log.h"
#include "logfmt.h"
#include "procself.h"
#include "risk.h"
#include "shim.h"
#include "shimfd.h"
#include "snapshot.h"
#include "trace.h"
#include <sys/stat.h>

_Static_assert((int)OP_COUNT == (int)LOGOP_COUNT, "trace ops and log ops must match");

#define MAX_THREADS 128        /* threads with private counters (and a ring) */
#define THREAD_HISTS 8         /* (op, rule) pairs a thread counts privately */
#define RULE_SLOTS (POLICY_MAX_RULES + 1) /* 0: default rule */
#define BUF_BYTES (1u << 20)
#define TICK_MAX_NS 10000000L
#define TICK_MIN_NS 1000000L
#define NS_PER_S 1000000000ull
#define LOG_NAME_TRIES 100

SHIM_HOT _Atomic int trace_on;
SHIM_HOT int trace_use_tsc;

/* Producer and consumer fields live on separate cache lines, and the
 * producer re-reads tail only when its cached copy says "full", so the
 * app thread's push normally touches no line the logger writes. */
struct ring {
	_Atomic uint64_t head __attribute__((aligned(64))); /* producer */
	uint64_t tail_seen;                                  /* producer's copy of tail */
	_Atomic uint64_t tail __attribute__((aligned(64)));  /* logger */
	_Atomic uint64_t drops __attribute__((aligned(64)));
	struct logfmt_record *recs; /* start_ns/dur_ns hold stamps until drained */
};

/* One second of a thread's tallies; tag is second + 1, 0 when unused. */
struct thread_second {
	_Atomic uint64_t tag;
	struct tally t[LOGOP_COUNT];
};

/* What one thread counts on its own. Page-aligned so a dead thread's
 * counters can be handed back to the kernel in one madvise. */
struct thread_log {
	_Atomic uint32_t owner;             /* tid, 0 when free, SLOT_RETIRING while the logger zeroes it */
	_Atomic uint32_t used;              /* ever claimed since last zeroed: the logger sums it */
	_Atomic uint32_t nhists;            /* published with release */
	struct { uint16_t op, rule; } key[THREAD_HISTS];
	struct thread_second sec[2];        /* by second parity */
	struct hist h[THREAD_HISTS];
} __attribute__((aligned(4096)));

/* A FILE, EVENT or POLICY block waiting for the logger, in arrival order. */
enum notice_kind { NOTICE_FILE, NOTICE_EVENT, NOTICE_POLICY };

struct notice {
	struct notice *next;
	enum notice_kind kind;
	struct logfmt_file file;
	struct logfmt_event event;
	char text[] __attribute__((aligned(8))); /* strings, or a struct policy */
};

/* The logger's process-wide state; a field's note names the lock that guards it, if any. */
static struct {
	int fd;
	enum log_mode mode;
	uint32_t seq;
	uint64_t start_mono;
	uint32_t hist_snap;
	struct hist *shared;          /* [LOGOP_COUNT][RULE_SLOTS]: atomics, for overflow */
	struct tally shared_tally[LOGOP_COUNT];
	struct thread_log *threads;   /* [MAX_THREADS], mmap'd NORESERVE */
	struct ring rings[MAX_THREADS]; /* calls mode, ring i for thread i */
	uint32_t ring_cap;            /* power of two */
	_Atomic uint64_t ringless_drops;
	uint64_t next_second;         /* the next INTERVAL to write */
	/* stamps -> ns: mono = mono0 + (stamp - tsc0) * q32 / 2^32 */
	uint64_t tsc0, mono0;
	_Atomic uint64_t ns_per_tick_q32;
	uint8_t *buf;                 /* block staging, BUF_BYTES */
	struct hist *scratch;         /* one histogram being summed */
	struct logfmt_record *staged; /* calls mode: records drained from rings */
	uint32_t staged_cap, nstaged;
	_Atomic long tick_ns;         /* calls mode drain period; the logger reads it unlocked */
	pthread_mutex_t mu;           /* one writer of blocks at a time (not held across fork) */
	pthread_mutex_t queue_mu;
	struct notice *queue_head, *queue_tail;
	_Atomic int stop;
	bool open;
	bool configured;              /* this process logs (its file may not exist yet) */
	bool thread_started;          /* mu */
	bool gave_up;                 /* mu: the file could not be made; logging is off */
	_Atomic int running;          /* file open and logger thread started: nothing to do */
	_Atomic int activity;         /* a write, sync or rename was counted */
	uint32_t first_id;            /* files below this id are announced at open (fork child) */
	uint64_t *announced;          /* mu: bit per file id with a FILE block in this log */
	uint32_t announced_words;
	_Atomic int fd_lost;          /* the app got our number: reopen before writing */
	_Atomic uint64_t ident_dev, ident_ino; /* the log file, for checks of log_state.fd */
	_Atomic int ident_ok;
	char tmpl[POLICY_PATH_MAX];   /* the configured name, %p unexpanded */
	char path[PATH_MAX];
} log_state = { .fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .queue_mu = PTHREAD_MUTEX_INITIALIZER };

__thread uint8_t trace_source;
static __thread struct thread_log *my_log;
static __thread uint32_t my_tid;
static __thread uint64_t my_second, my_second_end; /* current second, its end as a stamp */

/* ---- clocks ---------------------------------------------------------------- */

/* Only an invariant TSC ticks at one rate in every state on every core. */
static bool tsc_is_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)); /* invariant TSC */
#else
	return false;
#endif
}

static void calibrate(void)
{
	uint64_t t = trace_stamp(), m = trace_now();
	if (t > log_state.tsc0 && m > log_state.mono0)
		atomic_store(&log_state.ns_per_tick_q32,
			     (uint64_t)(((unsigned __int128)(m - log_state.mono0) << 32) / (t - log_state.tsc0)));
}

/* The first timed call before the logger thread has measured the rate:
 * measure it now, over the span since load (one vDSO clock read, no
 * system call; the logger refines it on every tick). */
static void calibrate_first(void)
{
	uint64_t t = trace_stamp(), m = trace_now(), zero = 0;
	if (t > log_state.tsc0 && m > log_state.mono0)
		atomic_compare_exchange_strong(&log_state.ns_per_tick_q32, &zero,
					       (uint64_t)(((unsigned __int128)(m - log_state.mono0) << 32) / (t - log_state.tsc0)));
}

/* Two stamps now; the rate between them is measured by the logger thread
 * on every tick, over a growing span. Until its first tick, calls count
 * into second 0. */
static void clock_start(void)
{
	trace_use_tsc = tsc_is_invariant();
	log_state.tsc0 = trace_stamp();
	log_state.mono0 = trace_now();
}

static uint64_t ticks_to_ns(uint64_t ticks)
{
	if (!trace_use_tsc)
		return ticks;
	return (uint64_t)(((unsigned __int128)ticks * atomic_load(&log_state.ns_per_tick_q32)) >> 32);
}

static uint64_t stamp_to_ns(uint64_t stamp)
{
	if (!trace_use_tsc)
		return stamp;
	return stamp >= log_state.tsc0 ? log_state.mono0 + ticks_to_ns(stamp - log_state.tsc0)
			       : log_state.mono0 - ticks_to_ns(log_state.tsc0 - stamp);
}

/* ns since the log started -> a stamp, for the app's "is this still the
 * same second" test without a division per call. */
static uint64_t ns_to_stamp(uint64_t mono_ns)
{
	if (!trace_use_tsc)
		return mono_ns;
	uint64_t q = atomic_load(&log_state.ns_per_tick_q32);
	return q ? log_state.tsc0 + (uint64_t)(((unsigned __int128)(mono_ns - log_state.mono0) << 32) / q) : 0;
}

/* ---- the app side: no locks, no allocation, no system calls ------------- */

#define SLOT_RETIRING UINT32_MAX

static void (*watch_thread_end)(void);

void log_set_thread_end_watch(void (*watch)(void))
{
	watch_thread_end = watch;
}

/* A slot is the thread's until it ends: its end (lifecycle.c's key,
 * asked for through watch_thread_end) hands the slot back at once, counts
 * and ring as they are, and the next thread to claim it goes on counting
 * into them and producing into the ring (one producer at a time: the
 * handing back is a release store, the claim an acquiring CAS). The logger sums every slot ever used, so
 * nothing the ended thread counted or recorded is lost. */
static struct thread_log *claim_thread(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid); /* once per thread */
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		uint32_t free_owner = 0;
		if (atomic_compare_exchange_strong_explicit(&log_state.threads[i].owner, &free_owner, my_tid,
							    memory_order_acquire, memory_order_relaxed)) {
			if (!atomic_load_explicit(&log_state.threads[i].used, memory_order_relaxed))
				atomic_store_explicit(&log_state.threads[i].used, 1, memory_order_release);
			if (watch_thread_end)
				watch_thread_end();
			return my_log = &log_state.threads[i];
		}
	}
	return NULL;
}

void log_thread_ended(void)
{
	struct thread_log *t = my_log;
	if (!t)
		return;
	my_log = NULL;
	my_second_end = 0;
	atomic_store_explicit(&t->owner, 0, memory_order_release);
}

static struct hist *shared_hist(unsigned op, unsigned rule)
{
	return &log_state.shared[op * RULE_SLOTS + rule];
}

/* This thread's histogram for (op, rule), or NULL when its slots are full. */
static struct hist *thread_hist(struct thread_log *t, unsigned op, unsigned rule)
{
	uint32_t n = atomic_load_explicit(&t->nhists, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++)
		if (t->key[i].op == op && t->key[i].rule == rule)
			return &t->h[i];
	if (n == THREAD_HISTS)
		return NULL;
	t->key[n].op = (uint16_t)op;
	t->key[n].rule = (uint16_t)rule;
	t->h[n].min = UINT64_MAX;
	atomic_store_explicit(&t->nhists, n + 1, memory_order_release);
	return &t->h[n];
}

/* This thread's tallies for the second stamp s0 falls in. */
static struct tally *thread_tally(struct thread_log *t, uint64_t s0)
{
	if (s0 >= my_second_end || !my_second_end) {
		uint64_t ns = stamp_to_ns(s0);
		my_second = ns > log_state.start_mono ? (ns - log_state.start_mono) / NS_PER_S : 0;
		my_second_end = ns_to_stamp(log_state.start_mono + (my_second + 1) * NS_PER_S);
	}
	struct thread_second *ts = &t->sec[my_second & 1];
	if (atomic_load_explicit(&ts->tag, memory_order_relaxed) != my_second + 1) {
		atomic_store_explicit(&ts->tag, 0, memory_order_release);
		memset(ts->t, 0, sizeof(ts->t));
		atomic_store_explicit(&ts->tag, my_second + 1, memory_order_release);
	}
	return ts->t;
}

static bool ring_push(struct ring *g, const struct logfmt_record *r)
{
	uint64_t h = atomic_load_explicit(&g->head, memory_order_relaxed);
	if (h - g->tail_seen >= log_state.ring_cap) {
		g->tail_seen = atomic_load_explicit(&g->tail, memory_order_acquire);
		if (h - g->tail_seen >= log_state.ring_cap)
			return false;
	}
	g->recs[h & (log_state.ring_cap - 1)] = *r;
	atomic_store_explicit(&g->head, h + 1, memory_order_release);
	return true;
}

void trace_record(enum shim_op op, const struct shim_file *f, uint64_t s0, uint64_t s1,
		  int64_t bytes, int64_t r, int err)
{
	trace_record_flags(op, f, s0, s1, bytes, r, err, 0);
}

void trace_record_flags(enum shim_op op, const struct shim_file *f, uint64_t s0, uint64_t s1,
			int64_t bytes, int64_t r, int err, uint8_t flags)
{
	if (!atomic_load_explicit(&trace_on, memory_order_acquire))
		return;
	int ri = f ? file_rule_index(f) : -1;
	unsigned rule = ri >= 0 && ri < POLICY_MAX_RULES ? (unsigned)ri + 1 : 0;
	if (unlikely(trace_use_tsc && !atomic_load_explicit(&log_state.ns_per_tick_q32, memory_order_relaxed)))
		calibrate_first();
	uint64_t ns = ticks_to_ns(s1 > s0 ? s1 - s0 : 0);
	uint64_t b = bytes > 0 ? (uint64_t)bytes : 0;
	uint64_t tb = op == OP_RENAME ? 0 : b; /* a rename's bytes field is an inode number */
	if (op != OP_OPEN && op != OP_CLOSE &&
	    unlikely(!atomic_load_explicit(&log_state.activity, memory_order_relaxed)))
		atomic_store_explicit(&log_state.activity, 1, memory_order_relaxed);
	struct thread_log *t = my_log ? my_log : claim_thread();
	if (!t) { /* more threads than the pool: shared counters, no record */
		hist_record(shared_hist(op, rule), ns);
		tally_add(&log_state.shared_tally[op], ns, tb);
		if (log_state.mode == LOG_CALLS)
			atomic_fetch_add_explicit(&log_state.ringless_drops, 1, memory_order_relaxed);
		return;
	}
	struct hist *h = thread_hist(t, op, rule);
	if (h)
		hist_record_local(h, ns);
	else
		hist_record(shared_hist(op, rule), ns);
	tally_add_local(&thread_tally(t, s0)[op], ns, tb);
	if (log_state.mode != LOG_CALLS)
		return;
	struct logfmt_record rec = {
		.start_ns = s0,
		.dur_ns = s1 > s0 ? s1 - s0 : 0,
		.bytes = b,
		.result = r < 0 ? -err : (r > INT32_MAX ? INT32_MAX : (int32_t)r),
		.file_id = f ? f->id : 0,
		.tid = my_tid,
		.op = (uint8_t)op,
		.flags = flags | (op < OP_REAL_FSYNC ? trace_source : 0), /* the shim's own syncs have no source */
		.rule = (uint16_t)rule,
	};
	struct ring *g = &log_state.rings[t - log_state.threads];
	if (!ring_push(g, &rec))
		atomic_fetch_add_explicit(&g->drops, 1, memory_order_relaxed);
}

/* ---- the queue of FILE and EVENT notices --------------------------------- */

static void enqueue(struct notice *n)
{
	shim_enter();
	pthread_mutex_lock(&log_state.queue_mu);
	TEST_POINT("log_queue");
	if (log_state.queue_tail)
		log_state.queue_tail->next = n;
	else
		log_state.queue_head = n;
	log_state.queue_tail = n;
	pthread_mutex_unlock(&log_state.queue_mu);
	shim_leave();
}

static const char *fstype_name(const char *path)
{
	struct statfs sf;
	if (!path[0] || statfs(path, &sf) != 0)
		return "unknown";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x01021994: return "tmpfs";
	case 0x9123683E: return "btrfs";
	case 0x6969: return "nfs";
	case 0x794c7630: return "overlay";
	case 0x2fc12fc1: return "zfs";
	case 0xF2F52010: return "f2fs";
	case 0x65735546: return "fuse";
	default: return "other";
	}
}

struct log_notice *log_file_notice_new(const char *path, const char *rule_name)
{
	if (!log_state.configured)
		return NULL;
	size_t plen = strlen(path) + 1, rlen = strlen(rule_name) + 1;
	struct notice *n = shim_alloc(sizeof(*n) + plen + rlen);
	if (!n)
		return NULL;
	memcpy(n->text, path, plen);
	memcpy(n->text + plen, rule_name, rlen);
	/* The fs type now: the file may be gone by the time the logger looks. */
	n->file = (struct logfmt_file){ .fstype = fstype_name(path), .rule_name = n->text + plen,
					.path = n->text };
	n->kind = NOTICE_FILE;
	return (struct log_notice *)n;
}

void log_file_notice_post(struct log_notice *ln, const struct shim_file *f)
{
	struct notice *n = (struct notice *)ln;
	if (!n)
		return;
	struct knobs k;
	knobs_of(f, &k);
	n->file.id = f->id;
	n->file.rule = (uint16_t)(k.rule_index + 1);
	n->file.dev = f->dev;
	n->file.ino = f->ino;
	enqueue(n);
}

void log_notice_free(struct log_notice *n)
{
	shim_free(n);
}

void log_event(int kind, const struct shim_file *f, int err, const char *fmt, ...)
{
	if (!log_state.open)
		return;
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	size_t len = strlen(text) + 1;
	struct notice *n = shim_alloc(sizeof(*n) + len);
	if (!n)
		return;
	memcpy(n->text, text, len);
	n->kind = NOTICE_EVENT;
	n->event = (struct logfmt_event){ .time_ns = trace_now(), .file_id = f ? f->id : 0, .err = err,
					  .kind = (uint8_t)kind, .text = n->text };
	enqueue(n);
}

void log_policy_changed(const struct policy *p)
{
	if (!log_state.open)
		return;
	/* A copy: the snapshot may be retired before the logger gets here. */
	struct notice *n = shim_alloc(sizeof(*n) + sizeof(struct policy));
	if (!n)
		return;
	memcpy(n->text, p, sizeof(*p));
	n->kind = NOTICE_POLICY;
	n->event.time_ns = trace_now();
	enqueue(n);
}

/* ---- the logger side --------------------------------------------------- */

static bool log_fd_usable(void);

static int write_all(const uint8_t *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = LIBC(write)(log_state.fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* Each block goes to a descriptor checked just before (the app may have
 * taken the number with a raw close and an open since the last block); one
 * that vanished under the write is written again after the reopen, so no
 * FILE block a later record relies on is lost. Disk full and the like lose
 * the block: the log is best effort. */
static void write_block(size_t len)
{
	for (int attempt = 0; len && attempt < 2; attempt++) {
		if (!log_fd_usable())
			return;
		if (write_all(log_state.buf, len) == 0) {
			log_state.seq++;
			return;
		}
		if (errno != EBADF)
			return;
	}
}


static void write_policy(const struct policy *p, uint64_t time_ns)
{
	static char ini[65536];
	struct logfmt_rule rules[POLICY_MAX_RULES + 1];
	policy_format(p, ini, sizeof(ini));
	uint16_t n = logfmt_rules_from_policy(p, rules);
	write_block(logfmt_encode_policy(log_state.buf, BUF_BYTES, log_state.seq, time_ns, rules, n, ini));
}

/* ---- which files this log has named ----------------------------------------- */

/* A RISK block may only name files whose FILE block came first; a notice
 * lost to a failed allocation (or not yet drained) leaves its file out. */
static bool announced(uint32_t id)
{
	return id / 64 < log_state.announced_words && (log_state.announced[id / 64] >> (id % 64) & 1);
}

static void set_announced(uint32_t id)
{
	if (id / 64 >= log_state.announced_words) {
		uint32_t words = log_state.announced_words ? log_state.announced_words : 64;
		while (words <= id / 64)
			words *= 2;
		uint64_t *bits = shim_alloc(words * sizeof(uint64_t));
		if (!bits)
			return;
		if (log_state.announced)
			memcpy(bits, log_state.announced, log_state.announced_words * sizeof(uint64_t));
		shim_free(log_state.announced);
		log_state.announced = bits;
		log_state.announced_words = words;
	}
	log_state.announced[id / 64] |= 1ull << (id % 64);
}

static void drain_queue(void)
{
	pthread_mutex_lock(&log_state.queue_mu);
	struct notice *n = log_state.queue_head;
	log_state.queue_head = log_state.queue_tail = NULL;
	pthread_mutex_unlock(&log_state.queue_mu);
	while (n) {
		struct notice *next = n->next;
		switch (n->kind) {
		case NOTICE_EVENT:
			write_block(logfmt_encode_event(log_state.buf, BUF_BYTES, log_state.seq, &n->event));
			break;
		case NOTICE_FILE:
			write_block(logfmt_encode_file(log_state.buf, BUF_BYTES, log_state.seq, &n->file));
			set_announced(n->file.id);
			break;
		case NOTICE_POLICY:
			write_policy((const struct policy *)(void *)n->text, n->event.time_ns);
			break;
		}
		shim_free(n);
		n = next;
	}
}

static void tally_sum(struct tally *dst, const struct tally *src)
{
	dst->calls += __atomic_load_n(&src->calls, __ATOMIC_RELAXED);
	dst->bytes += __atomic_load_n(&src->bytes, __ATOMIC_RELAXED);
	dst->sum_ns += __atomic_load_n(&src->sum_ns, __ATOMIC_RELAXED);
	uint64_t m = __atomic_load_n(&src->max_ns, __ATOMIC_RELAXED);
	if (m > dst->max_ns)
		dst->max_ns = m;
}

/* Into the shared tallies, which app threads may be adding to. src is a
 * dead thread's, read atomically all the same: its death is seen through
 * its tid, not a join, so nothing orders its last stores before us. */
static void tally_give(struct tally *dst, const struct tally *src)
{
	struct tally s = { 0 };
	tally_sum(&s, src);
	__atomic_fetch_add(&dst->calls, s.calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&dst->bytes, s.bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&dst->sum_ns, s.sum_ns, __ATOMIC_RELAXED);
	uint64_t m = __atomic_load_n(&dst->max_ns, __ATOMIC_RELAXED);
	while (s.max_ns > m &&
	       !__atomic_compare_exchange_n(&dst->max_ns, &m, s.max_ns, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static bool thread_gone(uint32_t tid)
{
	return syscall(SYS_tgkill, getpid(), tid, 0) < 0 && errno == ESRCH;
}

/* A thread that has exited hands its counts to the shared counters and its
 * slot (and ring, once drained) back to the pool. */
static void retire_thread(unsigned i, uint32_t owner)
{
	struct thread_log *t = &log_state.threads[i];
	struct ring *g = &log_state.rings[i];
	if (log_state.mode == LOG_CALLS && atomic_load(&g->head) != atomic_load(&g->tail))
		return;
	/* Nobody may claim it while it is zeroed (a slot handed back by its
	 * thread's end is claimed again without the logger). */
	if (!atomic_compare_exchange_strong(&t->owner, &owner, SLOT_RETIRING))
		return;
	uint32_t n = atomic_load(&t->nhists);
	for (uint32_t k = 0; k < n; k++)
		hist_merge(shared_hist(t->key[k].op, t->key[k].rule), &t->h[k]);
	for (int p = 0; p < 2; p++) {
		uint64_t tag = atomic_load(&t->sec[p].tag);
		if (!tag || tag - 1 < log_state.next_second)
			continue; /* already written */
		for (unsigned op = 0; op < LOGOP_COUNT; op++)
			tally_give(&log_state.shared_tally[op], &t->sec[p].t[op]);
	}
	atomic_fetch_add(&log_state.ringless_drops, atomic_exchange(&g->drops, 0));
	atomic_store(&g->head, 0);
	atomic_store(&g->tail, 0);
	g->tail_seen = 0;
	madvise(t, sizeof(*t), MADV_DONTNEED); /* zero again, and the memory back */
	atomic_store(&t->owner, 0);
}

static void retire_dead_threads(void)
{
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		uint32_t owner = atomic_load(&log_state.threads[i].owner);
		if (owner && owner != SLOT_RETIRING && thread_gone(owner))
			retire_thread(i, owner);
	}
}

static void write_interval(uint64_t second)
{
	struct tally sum[LOGOP_COUNT];
	memset(sum, 0, sizeof(sum));
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		struct thread_log *t = &log_state.threads[i];
		if (!atomic_load_explicit(&t->used, memory_order_acquire))
			continue;
		for (int p = 0; p < 2; p++)
			if (atomic_load_explicit(&t->sec[p].tag, memory_order_acquire) == second + 1)
				for (unsigned op = 0; op < LOGOP_COUNT; op++)
					tally_sum(&sum[op], &t->sec[p].t[op]);
	}
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		struct tally d;
		tally_take(&log_state.shared_tally[op], &d);
		tally_sum(&sum[op], &d);
	}
	write_block(logfmt_encode_interval(log_state.buf, BUF_BYTES, log_state.seq, (uint32_t)second, sum));
}

static void mark_used(uint8_t *used)
{
	memset(used, 0, LOGOP_COUNT * RULE_SLOTS);
	for (unsigned i = 0; i < LOGOP_COUNT * RULE_SLOTS; i++)
		used[i] = hist_count(&log_state.shared[i]) > 0;
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		struct thread_log *t = &log_state.threads[i];
		if (!atomic_load_explicit(&t->used, memory_order_acquire))
			continue;
		uint32_t n = atomic_load_explicit(&t->nhists, memory_order_acquire);
		for (uint32_t k = 0; k < n; k++)
			used[t->key[k].op * RULE_SLOTS + t->key[k].rule] |= hist_count(&t->h[k]) > 0;
	}
}

/* The shared histogram of (op, rule) plus every thread's, in log_state.scratch. */
static void sum_hist(unsigned op, unsigned rule)
{
	hist_init(log_state.scratch);
	hist_merge(log_state.scratch, shared_hist(op, rule));
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		struct thread_log *t = &log_state.threads[i];
		if (!atomic_load_explicit(&t->used, memory_order_acquire))
			continue;
		uint32_t n = atomic_load_explicit(&t->nhists, memory_order_acquire);
		for (uint32_t k = 0; k < n; k++)
			if (t->key[k].op == op && t->key[k].rule == rule)
				hist_merge(log_state.scratch, &t->h[k]);
	}
}

static void write_hist_set(uint64_t now)
{
	static uint8_t used[LOGOP_COUNT * RULE_SLOTS];
	mark_used(used);
	uint16_t nparts = 0, part = 0;
	for (unsigned i = 0; i < LOGOP_COUNT * RULE_SLOTS; i++)
		nparts += used[i];
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		for (unsigned rule = 0; rule < RULE_SLOTS; rule++) {
			if (!used[op * RULE_SLOTS + rule])
				continue;
			sum_hist(op, rule);
			struct logfmt_histkey k = { .snap = log_state.hist_snap, .part = part++, .nparts = nparts,
						    .time_ns = now, .op = (uint8_t)op, .rule = (uint16_t)rule };
			write_block(logfmt_encode_hist(log_state.buf, BUF_BYTES, log_state.seq, &k, log_state.scratch));
		}
	log_state.hist_snap++;
}

/* ---- data at risk ----------------------------------------------------------- */

/* Files that left the registry with data at risk on record: their last
 * figures wait here for the next RISK block, so a closed file's series
 * ends where it really ended. One producer at a time (the registry lock
 * is held), the logger consumes; when full, the file's last logged second
 * stands. */
#define GONE_RING 256
static struct {
	_Atomic uint32_t head, tail;
	struct logfmt_risk e[GONE_RING];
} gone;

static struct logfmt_risk risk_entry(struct shim_file *f, uint64_t now)
{
	struct risk_now rn;
	risk_read(f, RISK_LOG, now, &rn);
	return (struct logfmt_risk){ f->id, rn.worst_bytes, rn.worst_age_ns, rn.bytes, rn.age_ns, rn.written };
}

void log_file_gone(struct shim_file *f)
{
	if (!log_state.configured || !risk_seen(f))
		return;
	uint32_t h = atomic_load_explicit(&gone.head, memory_order_relaxed);
	if (h - atomic_load_explicit(&gone.tail, memory_order_acquire) >= GONE_RING)
		return;
	gone.e[h % GONE_RING] = risk_entry(f, trace_now());
	atomic_store_explicit(&gone.head, h + 1, memory_order_release);
}

/* log_state.mu: one tick's entries, grown in the logger thread. */
static struct {
	struct logfmt_risk *e;
	uint32_t n, cap;
} batch;

static void batch_add(const struct logfmt_risk *e)
{
	if (!announced(e->file_id))
		return;
	if (batch.n == batch.cap) {
		uint32_t cap = batch.cap ? batch.cap * 2 : 256;
		struct logfmt_risk *v = shim_alloc(cap * sizeof(*v));
		if (!v)
			return;
		if (batch.e)
			memcpy(v, batch.e, batch.n * sizeof(*v));
		shim_free(batch.e);
		batch.e = v;
		batch.cap = cap;
	}
	batch.e[batch.n++] = *e;
}

/* Shell sort by file id (no libc qsort: it may call the host's malloc). */
static void batch_sort(void)
{
	for (uint32_t gap = batch.n / 2; gap > 0; gap /= 2)
		for (uint32_t i = gap; i < batch.n; i++) {
			struct logfmt_risk x = batch.e[i];
			uint32_t j = i;
			for (; j >= gap && batch.e[j - gap].file_id > x.file_id; j -= gap)
				batch.e[j] = batch.e[j - gap];
			batch.e[j] = x;
		}
}

static bool has_risk(struct shim_file *f)
{
	return risk_seen(f);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* A registry walk may meet a file twice, and only the first read got the
 * worst figures: one entry per file id, the larger of each. */
static uint32_t batch_unique(void)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < batch.n; i++) {
		struct logfmt_risk *p = k ? &batch.e[k - 1] : NULL, *e = &batch.e[i];
		if (!p || p->file_id != e->file_id) {
			batch.e[k++] = *e;
			continue;
		}
		p->worst_bytes = max64(p->worst_bytes, e->worst_bytes);
		p->worst_age_ns = max64(p->worst_age_ns, e->worst_age_ns);
		p->bytes = max64(p->bytes, e->bytes);
		p->age_ns = max64(p->age_ns, e->age_ns);
		p->written = max64(p->written, e->written);
	}
	return k;
}

/* The RISK blocks of one second: files that left since the last one, then
 * every file in the registry that ever had data at risk. */
static void write_risk(uint64_t second, uint64_t now)
{
	enum { WALK = 128, PER_BLOCK = 16384 };
	batch.n = 0;
	uint32_t t = atomic_load_explicit(&gone.tail, memory_order_relaxed);
	for (uint32_t h = atomic_load_explicit(&gone.head, memory_order_acquire); t != h; t++)
		batch_add(&gone.e[t % GONE_RING]);
	atomic_store_explicit(&gone.tail, t, memory_order_release);
	struct shim_file *files[WALK];
	uint64_t cursor = 0;
	do {
		int n = registry_collect(files, WALK, has_risk, &cursor);
		for (int i = 0; i < n; i++) {
			struct logfmt_risk e = risk_entry(files[i], now);
			batch_add(&e);
			file_put(files[i]);
		}
	} while (cursor);
	batch_sort();
	uint32_t n = batch_unique();
	for (uint32_t i = 0; i < n; i += PER_BLOCK) {
		uint16_t k = (uint16_t)(n - i < PER_BLOCK ? n - i : PER_BLOCK);
		write_block(logfmt_encode_risk(log_state.buf, BUF_BYTES, log_state.seq, (uint32_t)second, batch.e + i, k));
	}
}

static void write_records_staged(void)
{
	drain_queue(); /* announces every file the staged records name */
	if (!log_state.nstaged)
		return;
	for (uint32_t i = 0; i < log_state.nstaged; i++)
		logfmt_record_put(log_state.buf + LOGFMT_RECORDS_AT(i), &log_state.staged[i]);
	write_block(logfmt_records_seal(log_state.buf, log_state.seq, log_state.nstaged));
	log_state.nstaged = 0;
}

/* Calls mode: move every ring's records out, stamps made nanoseconds.
 * Returns the fullest ring's fill before draining. */
static uint64_t drain_rings(void)
{
	uint64_t fullest = 0;
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		if (!atomic_load_explicit(&log_state.threads[i].used, memory_order_acquire))
			continue;
		struct ring *g = &log_state.rings[i];
		uint64_t t = atomic_load_explicit(&g->tail, memory_order_relaxed);
		uint64_t h = atomic_load_explicit(&g->head, memory_order_acquire);
		if (h - t > fullest)
			fullest = h - t;
		for (; t < h; t++) {
			if (log_state.nstaged == log_state.staged_cap)
				write_records_staged();
			struct logfmt_record *r = &log_state.staged[log_state.nstaged++];
			*r = g->recs[t & (log_state.ring_cap - 1)];
			r->start_ns = stamp_to_ns(r->start_ns);
			r->dur_ns = ticks_to_ns(r->dur_ns);
		}
		atomic_store_explicit(&g->tail, t, memory_order_release);
	}
	return fullest;
}

static uint64_t total_drops(void)
{
	uint64_t d = atomic_load(&log_state.ringless_drops);
	for (unsigned i = 0; i < MAX_THREADS; i++)
		d += atomic_load(&log_state.rings[i].drops);
	return d;
}

static uint64_t second_of(uint64_t mono_ns)
{
	return mono_ns > log_state.start_mono ? (mono_ns - log_state.start_mono) / NS_PER_S : 0;
}

/* log_state.mu held. In calls mode, adapts the drain period to how fast the
 * rings fill. */
static void tick(bool final)
{
	if (!log_fd_usable())
		return;
	if (trace_use_tsc)
		calibrate();
	if (log_state.mode == LOG_CALLS) {
		uint64_t fullest = drain_rings();
		write_records_staged();
		long t = atomic_load(&log_state.tick_ns);
		if (fullest > log_state.ring_cap / 4 && t > TICK_MIN_NS)
			atomic_store(&log_state.tick_ns, t / 2);
		else if (fullest < log_state.ring_cap / 16 && t < TICK_MAX_NS)
			atomic_store(&log_state.tick_ns, t * 2);
	} else {
		drain_queue();
	}
	uint64_t now = trace_now();
	uint64_t second = second_of(now);
	if (second > log_state.next_second || final) {
		while (log_state.next_second < second)
			write_interval(log_state.next_second++);
		if (final)
			write_interval(log_state.next_second++);
		write_hist_set(now);
		write_risk(log_state.next_second - 1, now);
		write_block(logfmt_encode_drops(log_state.buf, BUF_BYTES, log_state.seq, now, total_drops()));
		retire_dead_threads();
	}
}

static void open_log_now(void);

static void *logger_main(void *arg)
{
	(void)arg;
	shim_busy = 1;
	if (trace_use_tsc)
		calibrate();
	while (!atomic_load(&log_state.stop) && !atomic_load(&shim_threads_quit)) {
		struct timespec ts = { 0, log_state.mode == LOG_CALLS ? atomic_load(&log_state.tick_ns) : 4 * TICK_MAX_NS };
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
			;
		pthread_mutex_lock(&log_state.mu);
		if (!log_state.open && atomic_load(&log_state.activity) && !log_state.gave_up && !atomic_load(&log_state.stop))
			open_log_now();
		if (log_state.open && !atomic_load(&log_state.stop))
			tick(false);
		pthread_mutex_unlock(&log_state.mu);
	}
	return NULL;
}

/* ---- opening ----------------------------------------------------------- */

/* %p -> pid, %% -> %. */
static void expand_path(const char *tmpl, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(out + o, len - o, "%d", (int)getpid());
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			out[o++] = '%';
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o < len ? o : len - 1] = '\0';
}

/* Never follow a planted symlink and never truncate an existing file: an
 * existing name gets a numbered sibling instead, and the user is told
 * which file to read. A name that exists as something other than a file
 * or a symlink (/dev/null, a FIFO, a directory) is refused: a numbered
 * sibling of /dev/null is not what anyone meant. -1 with errno, or -2
 * when the refusal was already said. */
static int create_log(const char *path, char *used, size_t len)
{
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND;
	struct stat st;
	if (LIBC(lstat)(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		shim_say("log %s exists and is not a regular file; logging off", path);
		return -2;
	}
	snprintf(used, len, "%s", path);
	for (int i = 1; i <= LOG_NAME_TRIES; i++) {
		int fd = shimfd_open(used, flags, OWN_LOG);
		if (fd >= 0) {
			if (i > 1)
				shim_say("log %s exists; logging to %s", path, used);
			return fd;
		}
		if (errno != EEXIST)
			return -1;
		if (snprintf(used, len, "%s.%d", path, i) >= (int)len) {
			errno = ENAMETOOLONG;
			return -1;
		}
	}
	errno = EEXIST;
	return -1;
}

/* Above the app's numbers (shimfd_high_base), and remembered by identity. */
static int adopt_log_fd(int fd)
{
	TEST_HOLD("log_low"); /* a fork here gets the first number too (shimfd_atfork_child) */
	int high = shimfd_dup(fd, OWN_LOG, NULL);
	if (high >= 0) {
		shimfd_close(fd);
		fd = high;
	}
	dev_t dev;
	ino_t ino;
	if (fd_identity(fd, &dev, &ino, NULL) == 0) {
		atomic_store(&log_state.ident_dev, (uint64_t)dev);
		atomic_store(&log_state.ident_ino, (uint64_t)ino);
		atomic_store(&log_state.ident_ok, 1);
	}
	return fd;
}

bool log_identity(dev_t *dev, ino_t *ino)
{
	if (!atomic_load(&log_state.ident_ok))
		return false;
	*dev = (dev_t)atomic_load(&log_state.ident_dev);
	*ino = (ino_t)atomic_load(&log_state.ident_ino);
	return true;
}

static void stop_logging(const char *why)
{
	shim_say("log %s: %s; logging stopped", log_state.path, why);
	atomic_store(&trace_on, 0);
	atomic_store(&log_state.stop, 1);
	log_state.open = false;
	log_state.gave_up = true;
	atomic_store(&log_state.ident_ok, 0);
}

/* log_state.mu held, before any write of a tick: the descriptor must still be the
 * log. If the app took the number (a raw close, then an open), reopen the
 * log by name; at the descriptor limit, wait for the next tick; else stop. */
static bool log_fd_usable(void)
{
	if (!log_state.open)
		return false;
	if (log_state.fd >= 0 && shimfd_is_ours(log_state.fd))
		return true;
	fd_unmark_shim(log_state.fd); /* if it was taken, it is someone else's now */
	log_state.fd = -1;
	int fd = shimfd_open(log_state.path, O_WRONLY | O_APPEND | O_NOFOLLOW, OWN_LOG);
	dev_t dev, want_dev;
	ino_t ino, want_ino;
	if (fd >= 0 && log_identity(&want_dev, &want_ino) && fd_identity(fd, &dev, &ino, NULL) == 0 &&
	    dev == want_dev && ino == want_ino) {
		log_state.fd = fd;
		return true;
	}
	int e = errno;
	shimfd_close(fd);
	if (fd < 0 && (e == EMFILE || e == ENFILE))
		return false; /* the app is at its limit: the counts wait in memory */
	stop_logging("its descriptor was taken behind the shim's back and the file cannot be reopened");
	return false;
}

void log_fd_lost(int fd)
{
	(void)fd; /* the mark is gone; the next tick's check reopens the log */
}

void log_vacate(int fd)
{
	shim_enter();
	int cancel = shim_nocancel_begin(); /* log_state.mu is held across open and write */
	pthread_mutex_lock(&log_state.mu);
	if (log_state.fd == fd)
		log_state.fd = shimfd_dup(fd, OWN_LOG, NULL); /* -1: reopened at the next tick */
	fd_unmark_shim(fd);
	pthread_mutex_unlock(&log_state.mu);
	shim_nocancel_end(cancel);
	shim_leave();
}

bool log_release_fd(void)
{
	if (!log_state.open)
		return false;
	shim_enter();
	int cancel = shim_nocancel_begin(); /* log_state.mu is held across open and write */
	pthread_mutex_lock(&log_state.mu);
	bool had = log_state.fd >= 0;
	if (had)
		shimfd_close(log_state.fd);
	log_state.fd = -1;
	pthread_mutex_unlock(&log_state.mu);
	shim_nocancel_end(cancel);
	shim_leave();
	return had;
}

static void *map_zeroed(size_t len)
{
	void *p = LIBC(mmap)(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			     -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void init_shared_hists(void)
{
	for (unsigned i = 0; i < LOGOP_COUNT * RULE_SLOTS; i++)
		log_state.shared[i].min = UINT64_MAX; /* hist_init's empty state, without touching buckets */
}

/* NORESERVE everywhere: counters and rings cost memory only as far as
 * threads actually use them. */
static int alloc_state(const struct policy *p)
{
	log_state.shared = map_zeroed(sizeof(struct hist) * LOGOP_COUNT * RULE_SLOTS);
	log_state.threads = map_zeroed(sizeof(struct thread_log) * MAX_THREADS);
	log_state.scratch = map_zeroed(sizeof(struct hist));
	log_state.buf = map_zeroed(BUF_BYTES);
	if (!log_state.shared || !log_state.threads || !log_state.scratch || !log_state.buf)
		return -1;
	init_shared_hists();
	if (p->log_mode != LOG_CALLS)
		return 0;
	log_state.ring_cap = p->ring_records;
	struct logfmt_record *mem = map_zeroed((size_t)MAX_THREADS * log_state.ring_cap * sizeof(*mem));
	log_state.staged_cap = logfmt_records_fit(BUF_BYTES);
	log_state.staged = map_zeroed(log_state.staged_cap * sizeof(struct logfmt_record));
	if (!mem || !log_state.staged)
		return -1;
	for (unsigned i = 0; i < MAX_THREADS; i++)
		log_state.rings[i].recs = mem + (size_t)i * log_state.ring_cap;
	return 0;
}

static void write_header(const struct policy *p)
{
	static char cmdline[4096], ini[65536];
	struct utsname u;
	uname(&u);
	proc_self_cmdline(cmdline, sizeof(cmdline));
	policy_format(p, ini, sizeof(ini));
	struct logfmt_rule rules[POLICY_MAX_RULES + 1];
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	struct logfmt_header h = {
		.pid = (uint32_t)getpid(),
		.ppid = (uint32_t)getppid(),
		.log_mode = (uint8_t)log_state.mode,
		.start_wall_ns = (uint64_t)wall.tv_sec * NS_PER_S + (uint64_t)wall.tv_nsec,
		.start_mono_ns = log_state.start_mono,
		.hostname = u.nodename,
		.kernel = u.release,
		.cmdline = cmdline,
		.rules = rules,
		.nrules = logfmt_rules_from_policy(p, rules),
		.policy_ini = ini,
	};
	write_block(logfmt_encode_header(log_state.buf, BUF_BYTES, &h));
}

/* log_state.mu held. */
static void start_thread(void)
{
	log_state.thread_started = true;
	if (shim_start_thread(logger_main, 128 * 1024, "syncshim-log", NULL) == 0)
		return;
	if (atomic_load(&shim_threads_quit))
		log_state.thread_started = false; /* a set*id in progress (setid.c): the next call tries again */
	else
		shim_say("cannot start the logger thread; logging only at exit");
}

static bool inherited(struct shim_file *f)
{
	return f->id < log_state.first_id;
}

/* The files this log must name that have no notice queued: in a fork
 * child, the ones it inherited. */
static void announce_inherited(const struct policy *p)
{
	struct shim_file *files[64];
	uint64_t cursor = 0;
	if (log_state.first_id <= 1)
		return;
	do {
		int n = registry_collect(files, 64, inherited, &cursor);
		for (int i = 0; i < n; i++) {
			int ri = file_rule_index(files[i]);
			const char *rule = ri >= 0 && ri < p->nrules ? p->rules[ri].name : "";
			struct log_notice *note = log_file_notice_new(files[i]->path ? files[i]->path : "", rule);
			log_file_notice_post(note, files[i]);
			file_put(files[i]);
		}
	} while (cursor);
}

/* log_state.mu held: create this process's log and write its header. On failure
 * logging stops for good, with one line. */
static void open_log_now(void)
{
	static struct policy snap; /* log_state.mu: a copy, so no reader section spans file creation */
	unsigned ticket;
	snap = *policy_enter(&ticket);
	policy_leave(ticket);
	char path[PATH_MAX];
	expand_path(log_state.tmpl, path, sizeof(path));
	int fd = create_log(path, log_state.path, sizeof(log_state.path));
	if (fd < 0) {
		if (fd == -1)
			shim_say("cannot create log %s: %s; logging off", path, strerror(errno));
		log_state.gave_up = true;
		atomic_store(&trace_on, 0);
		return;
	}
	log_state.fd = adopt_log_fd(fd);
	log_state.seq = 0;
	atomic_store(&log_state.tick_ns, TICK_MAX_NS);
	log_state.open = true;
	write_header(&snap);
	announce_inherited(&snap);
	atomic_store(&log_state.running, log_state.thread_started);
}

/* At load: everything but the file and the thread, which wait until the
 * process does something worth a log (log_maybe_start). */
void log_start(const struct policy *p)
{
	if (p->log_mode == LOG_OFF || !p->log_path[0])
		return;
	snprintf(log_state.tmpl, sizeof(log_state.tmpl), "%s", p->log_path);
	log_state.mode = p->log_mode;
	if (alloc_state(p) < 0) {
		shim_say("cannot allocate the log buffers; logging off");
		return;
	}
	clock_start();
	log_state.start_mono = log_state.mono0;
	log_state.next_second = 0;
	log_state.first_id = 1;
	log_state.configured = true;
	atomic_store_explicit(&trace_on, 1, memory_order_release);
}

/* The logger thread ended for set*id (setid.c): the next call starts
 * another; until then the counts wait in memory. */
void log_thread_quiesced(void)
{
	if (!log_state.configured)
		return;
	shim_enter();
	int cancel = shim_nocancel_begin();
	pthread_mutex_lock(&log_state.mu);
	log_state.thread_started = false;
	atomic_store(&log_state.running, 0);
	pthread_mutex_unlock(&log_state.mu);
	shim_nocancel_end(cancel);
	shim_leave();
}

void log_maybe_start(void)
{
	if (likely(atomic_load_explicit(&log_state.running, memory_order_relaxed)) || !log_state.configured)
		return;
	shim_enter();
	int cancel = shim_nocancel_begin(); /* log_state.mu is held across open and write */
	pthread_mutex_lock(&log_state.mu);
	if (!log_state.thread_started && !log_state.gave_up && !atomic_load(&log_state.stop))
		start_thread();
	if (!log_state.open && atomic_load(&log_state.activity) && !log_state.gave_up && !atomic_load(&log_state.stop))
		open_log_now();
	atomic_store(&log_state.running, log_state.open && log_state.thread_started);
	pthread_mutex_unlock(&log_state.mu);
	shim_nocancel_end(cancel);
	shim_leave();
}

/* Final drain, snapshot and trailer; safe to call twice. A process that
 * never did anything worth logging leaves no log at all. */
void log_stop(int exit_status)
{
	if (!log_state.configured)
		return;
	shim_enter();
	int cancel = shim_nocancel_begin(); /* log_state.mu is held across open and write */
	atomic_store(&log_state.stop, 1);
	pthread_mutex_lock(&log_state.mu);
	if (!log_state.open && atomic_load(&log_state.activity) && !log_state.gave_up)
		open_log_now();
	if (log_state.open) {
		tick(true);
		struct timespec wall;
		clock_gettime(CLOCK_REALTIME, &wall);
		struct logfmt_trailer t = { .end_wall_ns = (uint64_t)wall.tv_sec * NS_PER_S + (uint64_t)wall.tv_nsec,
					    .end_mono_ns = trace_now(), .exit_status = exit_status };
		atomic_store(&trace_on, 0);
		write_block(logfmt_encode_trailer(log_state.buf, BUF_BYTES, log_state.seq, &t));
		shimfd_close(log_state.fd);
		log_state.fd = -1;
		log_state.open = false;
		atomic_store(&log_state.running, 0);
		atomic_store(&log_state.ident_ok, 0);
	}
	log_state.gave_up = true; /* finished: nothing may create it again (a late tick, a second stop) */
	pthread_mutex_unlock(&log_state.mu);
	shim_nocancel_end(cancel);
	shim_leave();
}

/* ---- fork: the child writes a log of its own, lazily --------------------- */

static void reset_for_child(void)
{
	/* Fresh zero pages in place: the parent's counts are the parent's. */
	madvise(log_state.shared, sizeof(struct hist) * LOGOP_COUNT * RULE_SLOTS, MADV_DONTNEED);
	madvise(log_state.threads, sizeof(struct thread_log) * MAX_THREADS, MADV_DONTNEED);
	init_shared_hists();
	memset(log_state.shared_tally, 0, sizeof(log_state.shared_tally));
	log_state.nstaged = 0;
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		atomic_store(&log_state.rings[i].head, 0);
		atomic_store(&log_state.rings[i].tail, 0);
		log_state.rings[i].tail_seen = 0;
		atomic_store(&log_state.rings[i].drops, 0);
	}
	atomic_store(&log_state.ringless_drops, 0);
	log_state.queue_head = log_state.queue_tail = NULL; /* may be mid-update: leak, never walk */
	atomic_store(&gone.head, 0);
	atomic_store(&gone.tail, 0);
	if (log_state.announced) /* the parent's log named them, not the child's */
		memset(log_state.announced, 0, log_state.announced_words * sizeof(uint64_t));
}

/* Inside the fork handler: system calls only, no allocation, no file, no
 * thread. Calls go on being counted in memory; the child's own log is
 * made like any process's, at its first write or sync. */
void log_atfork_child(void)
{
	pthread_mutex_init(&log_state.mu, NULL);
	pthread_mutex_init(&log_state.queue_mu, NULL);
	my_log = NULL;
	my_tid = 0;
	my_second_end = 0;
	if (!log_state.configured || log_state.gave_up)
		return;
	if (log_state.open)
		shimfd_close(log_state.fd); /* the parent's log is the parent's */
	else
		fd_unmark_shim(log_state.fd);
	log_state.fd = -1;
	log_state.open = false;
	log_state.thread_started = false;
	atomic_store(&log_state.running, 0);
	atomic_store(&log_state.ident_ok, 0);
	reset_for_child();
	atomic_store(&log_state.activity, 0);
	log_state.first_id = registry_next_id();
	log_state.start_mono = trace_now();
	log_state.next_second = 0;
	atomic_store(&log_state.stop, 0);
	atomic_store_explicit(&trace_on, 1, memory_order_release);
}
