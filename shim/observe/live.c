/*
 * live.c - the live counters: per-file statistics, and the thread that
 * publishes them about once a second in DIR/PID.live (docs/LIVEFORMAT.md).
 *
 * App threads only add to their file's counters (live.h). The publisher
 * thread does the rest off the app's path: it makes the directory and the
 * file (its first round), takes differences from the last round for the
 * interval figures, picks the busiest files, and rewrites the file with
 * pwrite under a sequence count so readers never see half a round and
 * never make it wait. At exit or exec the file is marked ended and
 * removed; a forked child publishes its own file.
 *
 * Why pwrite and not a shared mapping: a store into a mapped page the
 * file system cannot back (a full disk, a file truncated behind our back)
 * is a SIGBUS in the host; a pwrite that cannot is an error we skip.
 *
 * The publisher needs none of the app's descriptors, so it runs in a
 * descriptor table of its own (shimfd_private_table): the file stays open
 * there for the thread's life, and nothing it opens (the directory, the
 * file, /proc) ever takes a number the app could be handed, use after a
 * close, see in a fork child or meet in a close-everything loop. Each
 * round checks the name still leads to our file (a reader may have taken
 * it for a dead process's and removed it). Whoever ends the process or
 * execs, and set*id (setid.c), asks the thread to write the last round,
 * remove the file and end, and joins it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "decide.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "live.h"
#include "matched.h"
#include "procself.h"
#include "risk.h"
#include "shimfd.h"
#include "snapshot.h"
#include "trace.h"

#define INTERVAL_MS 1000
#define NS_PER_MS 1000000ull

/* The live counters' process-wide state: where the file goes and the publisher's. */
static struct {
	bool configured;            /* live = on at load */
	char dir[POLICY_PATH_MAX + 16];  /* where the file goes (LIVEFORMAT.md) */
	char config[POLICY_PATH_MAX];
	char default_policy[16];
	pthread_mutex_t mu;         /* the publisher's state below */
	bool thread_started, gave_up;
	bool finished;              /* live_stop: never again */
	pthread_t thread;           /* joined by whoever stops it (thread_started) */
	_Atomic uint32_t stop;      /* futex word: the thread's last round, then it ends */
	_Atomic int running;        /* thread started: nothing for live_maybe_start to do */
	bool made;                  /* our file exists under path, open as fd */
	int fd;                     /* in the publisher's own table, never the app's */
	struct live_header h;       /* its header, as last written */
	char path[POLICY_PATH_MAX + 64];   /* DIR/PID.live */
	ino_t ino;                  /* ours: a file someone put in its place is not */
	uint64_t last_mono;
	struct live_file *stage;    /* [LIVE_MAX_FILES]: a round's busiest files, busiest first */
	struct live_rule rules[LIVE_MAX_RULES]; /* a round's rule table */
} live_state = { .mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* ---- statistics (app threads) ----------------------------------------------- */

struct live_stats *live_stats_new(void)
{
	return live_state.configured ? shim_alloc(sizeof(struct live_stats)) : NULL;
}

void live_stats_reset(struct live_stats *s)
{
	if (s)
		memset(s, 0, sizeof(*s));
}

void live_file_init(struct shim_file *f)
{
	f->live = live_stats_new();
}

void live_file_reset(struct shim_file *f)
{
	live_stats_reset(f->live);
}

static void add_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	while (v > old && !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed,
								  memory_order_relaxed))
		;
}

void live_app_synced(struct shim_file *f, uint64_t ns)
{
	struct live_stats *s = f->live;
	if (ns == 0) { /* answered with no work (noop): the first bucket, nothing to sum or compare */
		atomic_fetch_add_explicit(&s->syncs, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->sync_b[0], 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&s->syncs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->sync_sum, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->sync_b[live_bucket(ns)], 1, memory_order_relaxed);
	add_max(&s->sync_max, ns);
}

void live_real_synced(struct shim_file *f, uint64_t ns, int err)
{
	struct live_stats *s = f->live;
	if (!s)
		return;
	atomic_fetch_add_explicit(&s->real_syncs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->real_sum, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->real_b[live_bucket(ns)], 1, memory_order_relaxed);
	add_max(&s->real_max, ns);
	if (err)
		atomic_fetch_add_explicit(&s->errors, 1, memory_order_relaxed);
}

/* ---- one file's entry (publisher) ------------------------------------------- */

/* The middle of bucket b (no libm in the shim: the arithmetic middle of
 * a bucket at most 27% wide is within 12% of any value in it), within the
 * interval's max. */
static uint64_t bucket_value(unsigned b, uint64_t max)
{
	uint64_t lo = b ? live_bound_ns(b - 1) : 0, hi = b < LIVE_NBOUNDS ? live_bound_ns(b) : max;
	uint64_t v = b < LIVE_NBOUNDS ? lo + (hi - lo) / 2 : max;
	return v > max ? max : v;
}

static uint64_t percentile(const uint64_t *d, uint64_t n, double p, uint64_t max)
{
	uint64_t rank = (uint64_t)(p * (double)n + 0.999999), seen = 0;
	if (rank < 1)
		rank = 1;
	for (unsigned b = 0; b < LIVE_NBUCKETS; b++) {
		seen += d[b];
		if (seen >= rank)
			return bucket_value(b, max);
	}
	return max;
}

/* Cumulative buckets into out, the interval's p50/p99/max into lat[3];
 * returns the interval's count. */
static uint64_t take_hist(_Atomic uint64_t *cur, uint64_t *last, uint64_t *out, _Atomic uint64_t *maxp,
			  uint64_t lat[3])
{
	uint64_t d[LIVE_NBUCKETS], n = 0;
	for (unsigned b = 0; b < LIVE_NBUCKETS; b++) {
		out[b] = atomic_load_explicit(&cur[b], memory_order_relaxed);
		d[b] = out[b] - last[b];
		last[b] = out[b];
		n += d[b];
	}
	uint64_t max = atomic_exchange_explicit(maxp, 0, memory_order_relaxed);
	lat[0] = n ? percentile(d, n, 0.50, max) : 0;
	lat[1] = n ? percentile(d, n, 0.99, max) : 0;
	lat[2] = n ? max : 0;
	return n;
}

static uint64_t take_delta(_Atomic uint64_t *cur, uint64_t *last)
{
	uint64_t v = atomic_load_explicit(cur, memory_order_relaxed), d = v - *last;
	*last = v;
	return d;
}

static void take_counts(struct live_stats *s, struct live_file *e)
{
	uint64_t packed = atomic_load_explicit(&s->writes_packed, memory_order_relaxed);
	uint64_t d = packed - s->last_packed;
	s->last_packed = packed;
	e->iv_writes = d >> LIVE_BYTES_BITS;
	e->iv_bytes = d & LIVE_BYTES_MASK;
	s->writes += e->iv_writes;
	s->bytes += e->iv_bytes;
	e->writes = s->writes;
	e->bytes = s->bytes;
	e->iv_syncs = take_delta(&s->syncs, &s->last_syncs);
	e->iv_real_syncs = take_delta(&s->real_syncs, &s->last_real);
	e->iv_errors = take_delta(&s->errors, &s->last_errors);
	e->syncs = s->last_syncs;
	e->real_syncs = s->last_real;
	e->errors = s->last_errors;
	e->sync_sum_ns = atomic_load_explicit(&s->sync_sum, memory_order_relaxed);
	e->real_sum_ns = atomic_load_explicit(&s->real_sum, memory_order_relaxed);
}

static void name_rule(struct shim_file *f, struct live_file *e)
{
	int ri = file_rule_index(f);
	unsigned ticket;
	const struct policy *p = policy_enter(&ticket);
	const struct rule *r = ri >= 0 && ri < p->nrules ? &p->rules[ri] : &p->deflt;
	e->rule = (uint16_t)(ri + 1);
	e->policy = (uint8_t)r->sync;
	snprintf(e->rule_name, sizeof(e->rule_name), "%s", r->name);
	policy_leave(ticket);
	e->flags = e->policy == SYNC_NOOP ? LIVEF_UNBOUNDED : 0;
	snprintf(e->path, sizeof(e->path), "%s", f->path ? f->path : "");
}

static void entry_of(struct shim_file *f, uint64_t now, struct live_file *e)
{
	struct live_stats *s = f->live;
	memset(e, 0, sizeof(*e));
	e->id = f->id;
	name_rule(f, e);
	take_counts(s, e);
	uint64_t lat[3];
	take_hist(s->sync_b, s->last_sync_b, e->sync_buckets, &s->sync_max, lat);
	e->sync_p50_ns = lat[0], e->sync_p99_ns = lat[1], e->sync_max_ns = lat[2];
	take_hist(s->real_b, s->last_real_b, e->real_buckets, &s->real_max, lat);
	e->real_p50_ns = lat[0], e->real_p99_ns = lat[1], e->real_max_ns = lat[2];
	struct risk_now rn;
	risk_read(f, RISK_LIVE, now, &rn);
	e->risk_bytes = rn.bytes;
	e->risk_age_ns = rn.age_ns;
	e->risk_worst_bytes = rn.worst_bytes;
	e->risk_worst_age_ns = rn.worst_age_ns;
	e->pending = flusher_pending(f);
}

/* ---- a round (publisher, live_state.mu) ---------------------------------------------- */

static bool has_stats(struct shim_file *f)
{
	return f->live != NULL;
}

static bool busier(const struct live_file *a, const struct live_file *b)
{
	if (a->iv_syncs != b->iv_syncs)
		return a->iv_syncs > b->iv_syncs;
	if (a->iv_writes != b->iv_writes)
		return a->iv_writes > b->iv_writes;
	return a->id < b->id;
}

/* The busiest LIVE_MAX_FILES, busiest first, by insertion (no libc qsort:
 * it may call the host's malloc). */
static void stage_offer(uint32_t kept, const struct live_file *e)
{
	uint32_t i = kept < LIVE_MAX_FILES ? kept : LIVE_MAX_FILES - 1;
	if (kept >= LIVE_MAX_FILES && !busier(e, &live_state.stage[i]))
		return;
	for (; i > 0 && busier(e, &live_state.stage[i - 1]); i--)
		live_state.stage[i] = live_state.stage[i - 1];
	live_state.stage[i] = *e;
}

static bool active(const struct live_file *e)
{
	return e->writes || e->syncs || e->real_syncs || e->risk_worst_bytes || e->risk_worst_age_ns;
}

/* Every file's entry of this round; returns how many were active (the
 * stage holds the busiest of them). */
static uint32_t gather(uint64_t now)
{
	static struct live_file e; /* live_state.mu; too big for the thread's small stack */
	struct shim_file *files[64];
	uint64_t cursor = 0;
	uint32_t n = 0;
	do {
		int k = registry_collect(files, 64, has_stats, &cursor);
		for (int i = 0; i < k; i++) {
			entry_of(files[i], now, &e);
			if (active(&e))
				stage_offer(n++, &e);
			file_put(files[i]);
		}
	} while (cursor);
	return n;
}

/* Strings the format cuts short at their field's size. */
static void copy_cut(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void rule_entry(struct live_rule *e, const struct rule *r, int ri)
{
	memset(e, 0, sizeof(*e));
	e->rule = (uint16_t)(ri + 1);
	e->policy = (uint8_t)r->sync;
	e->flags = matched_approximate() ? LIVER_APPROXIMATE : 0;
	e->files = matched_files(ri);
	if (ri >= 0) {
		copy_cut(e->name, sizeof(e->name), r->name);
		copy_cut(e->glob, sizeof(e->glob), r->glob);
	}
}

/* The rules in force, each with the files it matched; returns how many. */
static uint32_t gather_rules(void)
{
	unsigned ticket;
	const struct policy *p = policy_enter(&ticket);
	uint32_t n = 0;
	rule_entry(&live_state.rules[n++], &p->deflt, -1);
	for (int i = 0; i < p->nrules && n < LIVE_MAX_RULES; i++)
		rule_entry(&live_state.rules[n++], &p->rules[i], i);
	policy_leave(ticket);
	return n;
}

/* The latest refused ini, for the views (shim_config_error). */
static void note_config_errors(struct live_header *h)
{
	h->config_errors = atomic_load_explicit(&shim_config_errors, memory_order_acquire);
	if (h->config_errors)
		copy_cut(h->config_error, sizeof(h->config_error), shim_config_error);
}

static bool put(int fd, const void *buf, size_t n, off_t off)
{
	while (n) {
		ssize_t r = pwrite(fd, buf, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		buf = (const char *)buf + r;
		n -= (size_t)r;
		off += r;
	}
	return true;
}

/* The sequence count goes odd on disk before any entry changes and even
 * after they all did: each pwrite is in the page cache when it returns, so
 * a reader's two looks at the count bracket a consistent copy. */
static bool write_round(int fd, uint32_t shown)
{
	live_state.h.seq++;
	bool ok = put(fd, &live_state.h.seq, sizeof(live_state.h.seq), offsetof(struct live_header, seq));
	live_state.h.seq++;
	ok = ok && put(fd, live_state.stage, shown * sizeof(struct live_file), sizeof(live_state.h));
	ok = ok && put(fd, live_state.rules, live_state.h.nrules * sizeof(struct live_rule), LIVE_RULES_OFFSET);
	return ok && put(fd, &live_state.h, sizeof(live_state.h), 0);
}

static void close_file(void)
{
	shimfd_close(live_state.fd);
	live_state.fd = -1;
	live_state.made = false;
}

/* Our file is still the one the name leads to (a reader may have taken it
 * for a dead process's and removed it, a hostile one replaced it). */
static bool still_ours(void)
{
	struct stat mine, named;
	if (live_state.fd < 0 || LIBC(fstat)(live_state.fd, &mine) != 0 || LIBC(lstat)(live_state.path, &named) != 0)
		return false;
	if (!S_ISREG(named.st_mode) || named.st_ino != mine.st_ino || named.st_dev != mine.st_dev)
		return false;
	/* cut short behind our back: readers want the whole size again */
	if (mine.st_size < (off_t)LIVE_FILE_BYTES)
		(void)!ftruncate(live_state.fd, (off_t)LIVE_FILE_BYTES);
	return true;
}

static void publish(bool ended)
{
	uint64_t now = trace_now();
	uint32_t n = gather(now);
	uint32_t shown = n < LIVE_MAX_FILES ? n : LIVE_MAX_FILES;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	live_state.h.nfiles = shown;
	live_state.h.omitted = n - shown;
	live_state.h.nrules = gather_rules();
	note_config_errors(&live_state.h);
	live_state.h.ended = ended;
	live_state.h.updated_wall_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	live_state.h.updated_mono_ns = now;
	live_state.h.interval_ns = live_state.last_mono ? now - live_state.last_mono : 0;
	live_state.last_mono = now;
	if (!still_ours()) {
		close_file(); /* gone: made again next round */
		return;
	}
	write_round(live_state.fd, shown); /* a full disk loses a round, nothing more */
}

/* ---- the file -------------------------------------------------------------- */

static void say_once(const char *fmt, const char *what, int err)
{
	if (!live_state.gave_up)
		shim_say(fmt, what, strerror(err));
	live_state.gave_up = true;
}

/* The directory the spec names; made 0700 if missing, and used only if it
 * is ours and nobody else can write in it. An fd, or -1 (said once). */
static int open_dir(void)
{
	const char *dir = live_state.dir;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		say_once("cannot make the live directory %s: %s; live counters off", dir, errno);
		return -1;
	}
	int fd = shimfd_open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, OWN_TEMP);
	struct stat st;
	if (fd < 0 || LIBC(fstat)(fd, &st) < 0) {
		say_once("cannot open the live directory %s: %s; live counters off", dir, errno);
		shimfd_close(fd);
		return -1;
	}
	if (st.st_uid != getuid() || (st.st_mode & 022)) {
		say_once("the live directory %s is not ours alone (%s); live counters off", dir, EPERM);
		shimfd_close(fd);
		return -1;
	}
	return fd;
}

static void fill_header(struct live_header *h)
{
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	memcpy(h->magic, LIVE_MAGIC, sizeof(h->magic));
	h->version = LIVE_VERSION;
	h->header_size = sizeof(struct live_header);
	h->file_size = sizeof(struct live_file);
	h->max_files = LIVE_MAX_FILES;
	h->pid = (uint32_t)getpid();
	h->ppid = (uint32_t)getppid();
	h->uid = (uint32_t)getuid();
	h->interval_ms = INTERVAL_MS;
	h->rule_size = sizeof(struct live_rule);
	h->rules_offset = (uint32_t)LIVE_RULES_OFFSET;
	h->proc_start = proc_self_start_time();
	h->start_wall_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	proc_self_cmdline(h->cmdline, sizeof(h->cmdline));
	proc_self_comm(h->comm, sizeof(h->comm));
	copy_cut(h->config, sizeof(h->config), live_state.config);
	snprintf(h->default_policy, sizeof(h->default_policy), "%s", live_state.default_policy);
}

/* Made under a temporary name (a stale one of an earlier process with our
 * pid is removed first; a name that is not a plain file is left alone),
 * its header written, and renamed into place: a reader never finds a
 * PID.live that is not yet a live file. */
static int create_tmp(int dirfd, const char *tmp)
{
	int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dirfd, tmp, flags, 0600);
	struct stat st;
	if (fd < 0 && errno == EEXIST && LIBC(fstatat)(dirfd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && unlinkat(dirfd, tmp, 0) == 0)
		fd = openat(dirfd, tmp, flags, 0600);
	return fd; /* the publisher's own table: no number of the app's */
}

static bool write_new(int dirfd, const char *tmp, const char *name)
{
	int fd = create_tmp(dirfd, tmp);
	struct stat st;
	bool ok = fd >= 0 && ftruncate(fd, (off_t)LIVE_FILE_BYTES) == 0 && put(fd, &live_state.h, sizeof(live_state.h), 0) &&
		  LIBC(fstat)(fd, &st) == 0 && renameat(dirfd, tmp, dirfd, name) == 0;
	int e = errno;
	if (ok) {
		live_state.ino = st.st_ino;
		live_state.fd = fd; /* kept for the thread's life */
	} else {
		shimfd_close(fd);
		if (fd >= 0)
			unlinkat(dirfd, tmp, 0);
	}
	errno = e;
	return ok;
}

static bool make_file(void)
{
	if (!live_state.stage && !(live_state.stage = shim_alloc(LIVE_MAX_FILES * sizeof(struct live_file))))
		return false;
	int dirfd = open_dir();
	if (dirfd < 0)
		return false;
	char name[32], tmp[48];
	snprintf(name, sizeof(name), "%d" LIVE_SUFFIX, (int)getpid());
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	snprintf(live_state.path, sizeof(live_state.path), "%s/%s", live_state.dir, name);
	memset(&live_state.h, 0, sizeof(live_state.h));
	fill_header(&live_state.h);
	bool ok = write_new(dirfd, tmp, name);
	int e = errno;
	shimfd_close(dirfd);
	if (!ok)
		say_once("cannot create the live file %s: %s; live counters off", live_state.path, e);
	return live_state.made = ok;
}

static void drop_file(void)
{
	if (still_ours())
		unlink(live_state.path); /* only ours: a file put in its place is left alone */
	close_file();
}

/* ---- the thread and the process's life ---------------------------------------- */

static void *live_main(void *arg)
{
	(void)arg;
	shim_busy = 1; /* everything this thread calls is the shim's own */
	bool own = shimfd_private_table();
	pthread_mutex_lock(&live_state.mu);
	if (!own)
		say_once("the live counters' publisher %s has no descriptor table of its own (%s); live counters off",
			 "thread", errno);
	pthread_mutex_unlock(&live_state.mu);
	while (own && !atomic_load(&live_state.stop)) {
		pthread_mutex_lock(&live_state.mu);
		if (!atomic_load(&live_state.stop) && !live_state.gave_up && (live_state.made || make_file()))
			publish(false);
		pthread_mutex_unlock(&live_state.mu);
		struct timespec ts = { INTERVAL_MS / 1000, (INTERVAL_MS % 1000) * (long)NS_PER_MS };
		syscall(SYS_futex, &live_state.stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0); /* a stop wakes it */
	}
	/* The last round says "ended", then the file goes: a reader that opened
	 * it in between sees a process on its way out, not a stalled one. */
	pthread_mutex_lock(&live_state.mu);
	if (live_state.made) {
		publish(true);
		drop_file();
	}
	close_file();
	pthread_mutex_unlock(&live_state.mu);
	return NULL;
}

void live_start(const struct policy *p)
{
	if (!policy_live_wanted(p))
		return;
	live_state.configured = true;
	/* Read at load, in the constructor: getenv in the publisher thread
	 * could race with the app's setenv. */
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (p->live_dir[0])
		snprintf(live_state.dir, sizeof(live_state.dir), "%s", p->live_dir);
	else if (xdg && xdg[0] == '/')
		snprintf(live_state.dir, sizeof(live_state.dir), "%s/syncshim", xdg);
	else
		snprintf(live_state.dir, sizeof(live_state.dir), "/tmp/syncshim-%u", (unsigned)getuid());
	/* A refused ini is still the one the process was given: named, with
	 * config_errors beside it. */
	snprintf(live_state.config, sizeof(live_state.config), "%s", p->source[0] ? p->source : shim.config_path);
	snprintf(live_state.default_policy, sizeof(live_state.default_policy), "%s", sync_policy_name(p->deflt.sync));
}

void live_maybe_start(void)
{
	if (likely(atomic_load_explicit(&live_state.running, memory_order_relaxed)) || !live_state.configured)
		return;
	shim_enter();
	int cancel = shim_nocancel_begin(); /* live_state.mu is held across open, write, close */
	pthread_mutex_lock(&live_state.mu);
	if (!live_state.thread_started && !live_state.finished) {
		live_state.thread_started = true;
		atomic_store(&live_state.stop, 0);
		if (shim_start_thread(live_main, 64 * 1024, "syncshim-live", &live_state.thread) < 0) {
			live_state.thread_started = false;
			live_state.gave_up = !atomic_load(&shim_threads_quit); /* a set*id in progress: later */
		}
	}
	atomic_store(&live_state.running, live_state.thread_started || live_state.gave_up || live_state.finished);
	pthread_mutex_unlock(&live_state.mu);
	shim_nocancel_end(cancel);
	shim_leave();
}

/* The thread writes its last round, removes the file and ends; we wait
 * for it (a round is a few pwrites). Afterwards live_maybe_start starts
 * a new one unless for_good. */
static void end_thread(bool for_good)
{
	if (!live_state.configured)
		return;
	shim_enter();
	int cancel = shim_nocancel_begin();
	pthread_mutex_lock(&live_state.mu);
	if (for_good)
		live_state.finished = true;
	bool started = live_state.thread_started;
	pthread_t t = live_state.thread;
	live_state.thread_started = false; /* ours to join: nobody else will */
	if (started) {
		atomic_store(&live_state.stop, 1);
		syscall(SYS_futex, &live_state.stop, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	pthread_mutex_unlock(&live_state.mu);
	if (started)
		pthread_join(t, NULL);
	atomic_store(&live_state.running, for_good);
	shim_nocancel_end(cancel);
	shim_leave();
}

void live_stop(void)
{
	end_thread(true);
}

void live_quiesce(void)
{
	end_thread(false);
}

/* Inside the fork handler: no allocation, no file, no thread. The
 * parent's mapping is the parent's; the child makes its own file. */
static void reset_in_child(struct shim_file *f, void *arg)
{
	(void)arg;
	live_stats_reset(f->live); /* the parent's counts are the parent's */
}

void live_atfork_child(void)
{
	pthread_mutex_init(&live_state.mu, NULL);
	if (live_state.configured)
		registry_each(reset_in_child, NULL);
	live_state.made = false; /* the parent's file is the parent's: ours is made lazily */
	live_state.fd = -1;      /* it was in the parent's publisher's table, which is not in this process */
	if (live_state.thread_started)
		shim_thread_gone_in_child(live_state.thread);
	live_state.thread_started = false;
	live_state.last_mono = 0;
	atomic_store(&live_state.running, 0);
	atomic_store(&live_state.stop, 0);
}
