/*
 * shim.h - state shared by the interposed calls.
 *
 * Two levels of state. An fd slot (one per descriptor number, in a table
 * mmap'd once) says what the descriptor is: not yet seen, not a regular
 * file (pass straight through), a tracked regular file, or one of the
 * shim's own descriptors. A tracked slot points at the file's shim_file,
 * shared by every descriptor of the same (dev, inode): that is where the
 * rule's knobs, the dirty byte count, sticky sync errors and the flusher
 * state live.
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
#include <sys/stat.h>
#include <sys/types.h>

#include "decide.h"
#include "policy.h"
#include "calls.h"

#define SHIM_API __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* fd slot state word: kind in the low bits, facts above. */
enum fd_kind { FD_UNKNOWN = 0, FD_PASS = 1, FD_FILE = 2, FD_SHIM = 3 /* the shim's own */ };
#define SLOT_KIND_MASK 3u
#define SLOT_APP_OSYNC (1u << 2)   /* the app asked for O_SYNC */
#define SLOT_APP_ODSYNC (1u << 3)  /* the app asked for O_DSYNC */
#define SLOT_OSYNC_DEFER (1u << 4) /* we dropped O_(D)SYNC: each write is a deferred sync */
#define SLOT_CLOSING (1u << 5)     /* the app is closing it: no new sync may use it */
#define SLOT_OSYNC_STRIP (1u << 6) /* we dropped O_(D)SYNC for nothing: each write is answered unsynced */
/* A sticky error the shim reports to every descriptor was found through
 * another open file description: the kernel will report it to this one's
 * once more, at its next real sync (a duplicate, dropped). FD_FILE and
 * OWN_FILE FD_SHIM slots. */
#define SLOT_KERNEL_OWES (1u << 7)
/* FD_SHIM slots: whose descriptor it is. */
#define SLOT_OWN_SHIFT 8
enum shim_fd_owner { OWN_NONE = 0, OWN_LOG = 1, OWN_FILE = 2, OWN_TEMP = 3, OWN_CRASH = 4 };

/* A group caller waiting for its request to be covered: the sync that
 * covers it says so here, so no history of syncs is needed to know
 * whether that sync failed (flusher.c). On the caller's stack, linked
 * under the file's fl.mu. */
struct sync_waiter {
	uint64_t target;            /* the caller's request */
	int err;                    /* the covering sync's errno, 0 ok */
	bool covered;
	struct sync_waiter *next;
};

/*
 * A file's flusher state (defer and group). Requests are numbered; a real
 * sync snapshots req_seq when it starts and, when it completes, every
 * request up to that snapshot is durable (done_seq). Only one real sync
 * per file runs at a time (in_flight): whoever finds none running leads
 * one, everyone else waits for it, which is what batches group commits.
 *
 * The sync needs a descriptor. The shim keeps none of its own while the
 * app has one open: a leader borrows an app descriptor (its own, or the
 * last one that asked for a sync) and marks it leased, and a close or
 * dup2 of that number waits for the sync to finish. Only when the app
 * closes its last descriptor while syncs are still owed does the shim dup
 * one of its own (priv_fd), closed again once nothing is owed.
 */
struct flusher {
	pthread_mutex_t mu;              /* initialised once per allocation (and in a fork child) */
	_Atomic uint32_t wake;           /* event count for waiters: bumped under mu, futex-woken */
	uint32_t waiters;                /* mu: threads asleep on wake (none: no wake call) */
	bool in_flight;                  /* mu */
	int lease_fd;                    /* mu: the descriptor the running sync uses, -1 none */
	_Atomic int req_fd;              /* an app descriptor that asked for a sync, -1 none */
	_Atomic int priv_fd;             /* the shim's own descriptor of the file, -1 none (mu) */
	_Atomic uint64_t done_seq;       /* written under mu */
	struct sync_waiter *waiting;     /* mu: group callers not yet told */
	_Atomic uint64_t req_seq;
	_Atomic uint32_t pending_calls;
	_Atomic uint32_t want_fsync;     /* some covered caller asked for fsync */
	_Atomic uint64_t synced_mark;    /* risk.written when the last real sync began */
	_Atomic uint64_t wb_mark;        /* risk.written at the last writeback kick */
	/* What pacing (policy/pace.h) learns of the file: relaxed and
	 * approximate by design (a lost update only delays learning). */
	_Atomic uint64_t last_req_ns;    /* when the last group request came */
	_Atomic uint32_t sync_ns;        /* average real sync duration */
	_Atomic uint32_t gap_ns;         /* average gap between group requests */
	_Atomic uint32_t joined_x16;     /* average requests a linger gathered, x16 */
	_Atomic uint32_t leads;          /* syncs led so far (paces the probes) */
};

/*
 * A file's place in the flusher threads' schedule (workers.c's alone): when
 * its oldest deferred request was made, whether it must be synced or
 * written back now, and the links of the lock-free hand-off and the
 * threads' deadline heap.
 */
struct sched {
	_Atomic uint64_t first_req_ns;   /* oldest request not yet covered, 0 none */
	_Atomic uint32_t force;          /* sync now: a threshold or a drain */
	_Atomic uint32_t writeback;      /* start writeback now */
	_Atomic uint32_t queued;         /* the threads hold it (a file ref) */
	_Atomic uint32_t poked;          /* on the poke stack: its deadline came earlier (holds a ref) */
	struct shim_file *ready_next;    /* lock-free hand-off to the threads */
	struct shim_file *poke_next;     /* lock-free: "look at my deadline again" */
	/* The threads' deadline heap (a pairing heap, sched lock): */
	struct shim_file *heap_child;    /* leftmost child */
	struct shim_file *heap_sibling;  /* next sibling to the right */
	struct shim_file *heap_prev;     /* left sibling, or the parent if leftmost */
	struct shim_file *sched_next;    /* a scratch list of the threads', sched lock */
	uint64_t heap_key;               /* the deadline it is filed under */
	bool in_heap;
};

/*
 * What the file's rule says, as the shim acts on it: the decision table's
 * answer for every call (policy/decide.h) and the flusher's knobs, copied
 * into the file, so no path ever dereferences a policy snapshot that a
 * reload may retire. A reload rewrites it under a sequence count; readers
 * copy it whole (knobs_of) and retry if a rewrite overlapped. Read and
 * written as whole words with relaxed atomics.
 */
struct knobs {
	uint64_t at_risk_ns;         /* max_at_risk_ms as it applies (policy/pace.h), 0 none */
	uint64_t max_bytes;
	uint64_t writeback_bytes;
	uint32_t max_delay_ms;
	uint32_t max_calls;
	uint32_t group_wait_us;
	int32_t rule_index;          /* -1: the [shim] default rule */
	uint8_t real_sync;           /* enum real_sync: which call the flusher makes */
	uint8_t act[CALL_COUNT];     /* enum shim_action, by enum shim_call */
	uint8_t order;               /* enum order_mode (order.h) */
	uint8_t pad[19 - CALL_COUNT];
};

/* Data at risk (risk.c's alone; see risk.h). */
struct risk {
	_Atomic uint64_t written;        /* bytes written while the rule can answer syncs unsynced */
	_Atomic uint64_t acked;          /* written, at the latest such answer */
	_Atomic uint64_t durable;        /* written, at the start of the latest completed real sync */
	_Atomic uint64_t since;          /* oldest answer no real sync has taken up, 0 none */
	_Atomic uint64_t covering;       /* oldest answer a running real sync covers, 0 none */
	_Atomic uint64_t worst_bytes[2]; /* per reader (enum risk_reader), since it last looked */
	_Atomic uint64_t worst_age[2];
};

/* What the write path does besides the write (one byte, from the knobs). */
#define WRITES_COUNTED 1u  /* add to risk.written: a sync may be answered without the device */
#define WRITES_DEFERRED 2u /* writes are deferred requests' bytes (max_bytes, writeback) */
#define WRITES_LIVE 4u     /* count them for the live counters (live.h) */
#define WRITES_CRASH 8u    /* crash-test mode: log each before it is made (crash.h) */
#define WRITES_ORDERED 16u /* a change waits for other files' acknowledged syncs (order.h) */

/* A file's place in the order of acknowledged syncs (order.c's alone). */
struct order_link {
	_Atomic uint32_t listed;    /* it has a deferred ack not yet durable (the list holds a ref) */
	uint32_t slot;              /* its slot in the domain + 1, 0 none (set before listed) */
	_Atomic uint32_t hi_seq;    /* odd while a real sync's start moves cur_hi into prev_hi */
	_Atomic uint64_t cur_hi;    /* highest end of a write since the last real sync began */
	_Atomic uint64_t prev_hi;   /* ... before it began, until it completes (UINT64_MAX: unknown) */
	_Atomic uint64_t last_end;  /* where the latest write ended (UINT64_MAX: not known) */
	struct shim_file *next;     /* the pending list, order lock */
};

/* A file's crash-test state (crash.c's alone). */
struct crash_state {
	pthread_mutex_t mu;         /* a write and its record, one at a time */
	_Atomic pid_t owner;        /* the thread inside mu, 0 none */
	int rfd;                    /* the shim's reader of the file, -1 none */
	bool tracked;               /* in scope: its changes are logged */
};

struct shim_file {
	_Atomic uint32_t refs;      /* fd slots, mmap regions, queue, threads inside a call */
	_Atomic uint32_t nfds;      /* app descriptors bound to it */
	uint32_t id;                /* stable id in logs, never reused in a process */
	bool dead;                  /* registry lock: recycled, on the free list */
	bool ghost;                 /* registry lock: no refs, kept for an unreported error */
	bool unhashed;              /* registry lock: a newer file has its inode number */
	dev_t dev;
	ino_t ino;
	/* Birth time (statx btime, ns) when the file system keeps one, else
	 * 0: an inode number freed and given to a new file is told apart from
	 * the file that had it (checked only when a descriptor is bound). */
	uint64_t birth;
	_Atomic uint32_t knob_seq;  /* odd while a reload rewrites knobs */
	struct knobs knobs;         /* read through knobs_of() */
	_Atomic uint8_t write_work; /* WRITES_*: the write path's one load */
	_Atomic uint32_t err_seq;       /* failed deferred syncs so far */
	_Atomic int err_errno;          /* errno of the latest one */
	_Atomic uint32_t err_seen_seq;  /* newest err_seq some fd has reported */
	_Atomic uint32_t err_told_seq;  /* newest err_seq said on stderr (nobody left to tell) */
	struct risk risk;               /* risk.c */
	struct live_stats *live;        /* live.c; NULL unless live = on; kept when recycled */
	struct crash_state crash;       /* crash.c */
	struct flusher fl;              /* flusher.c */
	struct sched sched;             /* workers.c */
	struct order_link ord;          /* order.c */
	char *path;                     /* absolute; private allocation, registry lock */
	struct shim_file *hash_next;
	struct shim_file *free_next;
};

struct fd_slot {
	_Atomic uint32_t state;
	_Atomic uint32_t err_seen;  /* file err_seq this fd has reported (errseq style) */
	_Atomic(struct shim_file *) file;
	_Atomic uint32_t trust;     /* shim.trust when the binding was last known true */
};

struct shim_state {
	_Atomic int ready;                 /* constructor finished */
	struct fd_slot *fds;               /* mmap'd, nfds entries */
	int nfds;
	_Atomic int fd_hi;                 /* highest slot ever given a state */
	/* Bumped when libc may have changed descriptors unseen (fcloseall,
	 * daemon): bindings older than it are checked against the kernel. */
	_Atomic uint32_t trust;
	_Atomic(const struct policy *) policy; /* read inside policy_enter/leave only */
	char config_path[POLICY_PATH_MAX]; /* "" when none; absolute, symlinks kept */
	pid_t pid;                         /* this process (set at load and in fork children) */
	_Atomic int exiting;               /* final drain begun: defer no longer defers */
};
extern struct shim_state shim;

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

/* ---- knobs.c ------------------------------------------------------------- */
void knobs_from_rule(struct knobs *k, const struct rule *r, int rule_index);
void knobs_of(const struct shim_file *f, struct knobs *out);
void knobs_set(struct shim_file *f, const struct knobs *k); /* one writer at a time */
static inline int file_rule_index(const struct shim_file *f)
{
	return __atomic_load_n(&f->knobs.rule_index, __ATOMIC_RELAXED);
}
static inline unsigned file_write_work(const struct shim_file *f)
{
	return atomic_load_explicit(&f->write_work, memory_order_relaxed);
}
static inline bool file_defers(const struct shim_file *f)
{
	return (file_write_work(f) & WRITES_DEFERRED) != 0;
}

/* ---- snapshot.c: the live policy ------------------------------------------ */
/* A reader section: the snapshot stays valid until policy_leave. Short,
 * never blocking; may nest and may run in a signal handler. */
const struct policy *policy_enter(unsigned *ticket);
void policy_leave(unsigned ticket);
/* Swap in next (the reload watcher, one at a time); frees the old snapshot
 * once no reader can still see it. */
void policy_publish(struct policy *next);
void policy_atfork_child(void);
extern struct policy *shim_boot_policy; /* the first snapshot, never freed */

/* ---- fdtable.c: descriptor slots ----------------------------------------- */
void fdtable_init(void);
struct fd_slot *fd_slot(int fd);   /* NULL when fd is outside the table */
void fd_note_used(int fd);         /* keeps shim.fd_hi, the top of the used range */
/* Write path: the tracked file behind fd as the slot says, without a
 * reference or a check (objects are type-stable). NULL: pass through. */
struct shim_file *fd_peek(int fd, uint32_t *state);
/* Everything else: the tracked file behind fd, with a reference; NULL for
 * bad, O_PATH, non-regular or untracked fds. A binding the shim made or
 * checked since the last distrust is vouched for without a system call:
 * every libc call that makes, replaces or closes a descriptor is seen
 * (only a raw syscall or io_uring is not). Anything else is checked
 * against the kernel (statx) and bound. */
struct shim_file *fd_get(int fd, uint32_t *state);
/* libc may have changed descriptors without a call the shim sees. */
void fdtable_distrust_all(void);
void fd_bind(int fd, struct shim_file *f, uint32_t flags); /* takes f's reference */
void fd_bind_pass(int fd);
/* Clear the slot; returns its reference and the error sequence this fd
 * had reported (for close). */
struct shim_file *fd_unbind(int fd, uint32_t *err_seen);
void fd_copy(int oldfd, int newfd);           /* dup: newfd shares oldfd's file */
/* The kernel just gave fd to the app (an open, a dup, a socket...): if the
 * shim thought the number was its own, it was closed behind its back. */
void fd_app_got(int fd);
/* Bind every regular file the process already has open (inherited, or
 * opened before we loaded): once, from the first call that may allocate
 * (an open, a sync, a close): a process that never does one never pays
 * for it (nor for the allocator's start). */
void fdtable_scan_inherited(void);
static inline void fdtable_scan_once(void)
{
	extern _Atomic int fdtable_scanned;
	if (unlikely(!atomic_load_explicit(&fdtable_scanned, memory_order_acquire)))
		fdtable_scan_inherited();
}
/* (dev, ino) of fd without touching the inode's attributes: statx asks
 * only for the inode number. 0, or -1 with errno. */
int fd_identity(int fd, dev_t *dev, ino_t *ino, mode_t *mode);
/* The same, with the birth time (0 where the file system has none). */
int fd_identity_born(int fd, dev_t *dev, ino_t *ino, mode_t *mode, uint64_t *birth);
uint64_t fd_birth(int fd);
/* Slots as the other modules see them (only fdtable.c stores into one). */
void fd_mark_shim(int fd, enum shim_fd_owner owner, struct shim_file *f);
void fd_unmark_shim(int fd);   /* if it is marked the shim's */
enum shim_fd_owner fd_shim_owner(int fd, struct shim_file **f); /* OWN_NONE: not marked */
void fd_mark_closing(int fd);  /* the app is closing it: no new lease */
bool fd_names(int fd, const struct shim_file *f, bool allow_closing);
/* fd is bound to f and the binding is vouched for (no system call). */
bool fd_vouched(int fd, const struct shim_file *f);
struct shim_file *fd_file_ref(int fd); /* the slot's file, unchecked, with a reference */
/* Some app descriptor bound to f and not closing, -1 none: a scan of the
 * used slots, for a sync that has no other way to the file. */
int fd_find_bound(const struct shim_file *f);
bool fd_is_pass(int fd);
/* A real sync through failed_fd failed and the error is now f's sticky
 * error (told to every descriptor by the shim): mark every other open file
 * description of f, to which the kernel will report it again. */
void fd_note_kernel_owes(const struct shim_file *f, int failed_fd);
/* A real sync through fd just ended: true if the kernel owed fd's
 * description a report the shim already made (cleared on every
 * descriptor of that description). */
bool fd_take_kernel_owes(int fd);
/* to is a dup of from (the shim's own, same description): the same. */
void fd_inherit_kernel_owes(int from, int to);
/* The error sequence fd had reported, now seq (the errseq exchange). */
uint32_t fd_saw_error(int fd, uint32_t seq);

/* ---- files.c: the registry of files --------------------------------------- */
/* birth: the file's (fd_birth), 0 unknown. A known file born at another
 * time is a deleted one whose inode number was reused: forgotten. */
struct shim_file *file_lookup_or_create(dev_t dev, ino_t ino, uint64_t birth, const char *abspath);
struct shim_file *file_find(dev_t dev, ino_t ino, uint64_t birth);  /* with a reference, or NULL */
struct shim_file *file_ref(struct shim_file *f);    /* caller already holds one */
bool file_tryref(struct shim_file *f);              /* refs 0 (dying): false */
void file_put(struct shim_file *f);
/* Call fn on every known file (registry lock held, fn must not block,
 * allocate or take another lock). */
void registry_each(void (*fn)(struct shim_file *, void *), void *arg);
/* Up to max files with a reference each, for work outside the lock;
 * *cursor starts at 0 and comes back 0 when the walk is done. */
int registry_collect(struct shim_file **out, int max, bool (*want)(struct shim_file *), uint64_t *cursor);
/* The id the next new file will get (files below it exist now). */
uint32_t registry_next_id(void);
void registry_atfork_prepare(void);
void registry_atfork_parent(void);
void registry_atfork_child(void);
/* Re-apply the live policy to every known file (reload). */
void registry_rematch(const struct policy *p);

/* ---- syncerr.c: errors of syncs the shim made on the app's behalf -------- */
void syncerr_reset(struct shim_file *f); /* a (recycled) object starting as a new file */
/* A deferred sync of f failed with err: sticky until every fd reported it. */
void syncerr_record(struct shim_file *f, int err);
/* The error fd has not reported yet (marked reported), else 0. */
int syncerr_take(struct shim_file *f, int fd);
/* Same, for a closing fd whose slot is already cleared. */
int syncerr_take_seen(struct shim_file *f, uint32_t *seen);
/* An error no descriptor has reported yet (a rename barrier reports it). */
int syncerr_take_unseen(struct shim_file *f);
/* Nobody is left to report f's error to (no descriptor, or exiting): one
 * line on stderr, once per error. */
void syncerr_tell_if_orphaned(struct shim_file *f);
/* At exit: say every error no descriptor reported; true if there was one. */
bool syncerr_tell_all_unreported(void);

/* ---- shimfd.c: the shim's own descriptors ---------------------------------- */
/* Mark fd as the shim's (owner, and the file for OWN_FILE). */
void shimfd_claim(int fd, enum shim_fd_owner owner, struct shim_file *f);
/* Drop the mark without closing: the number is about to be the app's. */
void shimfd_forget(int fd);
/* Forget the mark and close fd if it is still ours. */
void shimfd_close(int fd);
/* open()/dup by the shim for itself: O_CLOEXEC, marked, never on a number
 * the app is using. -1 with errno. */
int shimfd_open(const char *path, int flags, enum shim_fd_owner owner);
int shimfd_dup(int fd, enum shim_fd_owner owner, struct shim_file *f);
/* close()/close_range() by the app of a number we hold: 1 = it is ours
 * (the app gets EBADF), 0 = not (a stale mark, now cleared). */
int shimfd_app_close(int fd);
bool shimfd_is_ours(int fd);
/* The app is about to dup2 onto fd: move ours out of the way. */
void shimfd_vacate(int fd);
/* The kernel handed fd to the app: ours was closed behind our back. */
void shimfd_lost(int fd);
/* Where the shim's long-lived descriptors go: above the numbers the app
 * is likely to use, so its own numbering is what it would be without us. */
int shimfd_high_base(void);
/* The app's open/dup/socket failed with EMFILE: give back what the shim
 * can; true if the call is worth retrying. */
bool shimfd_relieve_emfile(void);

/* ---- procself.c ---------------------------------------------------------- */
void proc_self_cmdline(char *out, size_t len);  /* arguments joined by spaces */
void proc_self_comm(char *out, size_t len);     /* the program's name */
uint64_t proc_self_start_time(void);            /* /proc/self/stat field 22, 0 if unknown */

/* ---- paths.c ------------------------------------------------------------- */
/* Absolute, lexically normalised path for (dirfd, path); 0 or -1. */
int path_absolute(int dirfd, const char *path, char *out, size_t len);
int path_of_fd(int fd, char *out, size_t len);

/* ---- fdops.c ------------------------------------------------------------- */
/* A close the app's call makes implicitly (dup2 over fd, freopen, one of
 * close_range's): prepared like a close, its error left for the orphan
 * check (it has no return value to go to). */
void fdops_before_implicit_close(int fd);

/* ---- open.c -------------------------------------------------------------- */
int open_adjust_flags(const struct knobs *k, int flags, uint32_t *slot_flags);
/* Bind a descriptor the app just got for path (open, fopen): the rule, the
 * file, the slot. */
void open_bind(int fd, const char *abspath, uint32_t slot_flags);

/* ---- mmap_track.c -------------------------------------------------------- */
void mmap_track_add(void *addr, size_t len, int fd);
void mmap_track_remove(void *addr, size_t len);
/* The file mapped over all of [addr, addr+len), with a reference; NULL when
 * the range is not inside one tracked mapping. */
struct shim_file *mmap_track_find(const void *addr, size_t len);
void mmap_track_atfork_prepare(void);
void mmap_track_atfork_parent(void);
void mmap_track_atfork_child(void);

/* ---- alloc.c: the private allocator (jemalloc, hidden) --------------------- */
void *shim_alloc(size_t n);   /* zeroed */
void shim_free(void *p);
char *shim_strdup(const char *s);
void alloc_atfork_lock_init(void); /* fork's first lock: no half-initialised allocator */
void alloc_atfork_prepare(void);      /* fork's last locks: the allocator's own */
void alloc_atfork_parent(void);
void alloc_atfork_child(void);

/* ---- lifecycle.c: every way a process ends ---------------------------------- */
/* The exit barrier (pending syncs made, errors nobody reported said, the
 * log and live counters closed) for a process leaving with status; returns
 * the status to leave with (74 under unreported_errors = exit, where the
 * status was 0 and an error reached nobody). Safe from a signal handler
 * inside a shim section: it then makes the syncs without the shim's locks
 * (lastgasp.c). */
int shim_exit_sequence(int status);
extern int shim_exit_status;      /* what exit() or main's return asked for */
extern _Atomic int shim_exit_begun; /* some thread is leaving: no thread may start another exit */
void lifecycle_init(void);        /* constructor: the thread-end key, at_quick_exit */
void lifecycle_atfork_child(void);
/* This thread's end must run fn's part (log.c's slot): bit in the key. */
#define THREAD_END_LOG 2u
void thread_end_watch(unsigned bit);
void log_thread_ended(void);      /* log.c: give the thread's slot back */

/* ---- lastgasp.c ----------------------------------------------------------- */
/* The exit barrier without a lock: every descriptor of a file that owes a
 * sync is synced, every error nobody reported is said. True if one was. */
bool lastgasp_barrier(void);

/* ---- init.c -------------------------------------------------------------- */
void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Start one of the shim's own threads: detached, small stack, every
 * signal blocked (the app's signals are not ours to take), named so top -H
 * and perf tell it from the app's. 0 or -1; errno is left as it was. */
int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name);
/* Built-in defaults, then the ini file, then the environment. */
int shim_build_policy(const char *config, struct policy *p, char *err, size_t errlen);
/* Test hook: raise the configured signal at a named critical point
 * (SYNCSHIM_TEST_SIGNAL_AT), so tests can run handlers exactly there. */
extern int shim_test_points;
void shim_test_point_hit(const char *where);
#define TEST_POINT(where)                                                            \
	do {                                                                         \
		if (unlikely(shim_test_points))                                      \
			shim_test_point_hit(where);                                  \
	} while (0)

#endif
