/*
 * file_parts.h - the data each upper part keeps per file, embedded in
 * struct shim_file (files.h): data at risk's, crash-test mode's, the
 * flusher's and its threads', ordered defer's and held writes'. Only the
 * types: each part's functions stay in its own header (risk.h, crash.h,
 * flusher.h, workers.h, order.h, held.h), which includes this one, so the
 * registry below them includes nothing above it.
 */
#ifndef SYNCSHIM_FILE_PARTS_H
#define SYNCSHIM_FILE_PARTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct shim_file;
struct sync_waiter; /* flusher.h */
struct held_change; /* held.c */

/* Data at risk's share (risk.h; only risk.c reads it but for risk.h's
 * two inlines). */
struct risk {
	_Atomic uint64_t written;        /* bytes written while the rule can answer syncs unsynced */
	_Atomic uint64_t acked;          /* written, at the latest such answer */
	_Atomic uint64_t durable;        /* written, at the start of the latest completed real sync */
	_Atomic uint64_t since;          /* oldest answer no real sync has taken up, 0 none */
	_Atomic uint64_t covering;       /* oldest answer a running real sync covers, 0 none */
	_Atomic uint64_t worst_bytes[2]; /* per reader (enum risk_reader), since it last looked */
	_Atomic uint64_t worst_age[2];
};

/* Crash-test mode's part (crash.h; crash.c's alone). */
struct crash_state {
	pthread_mutex_t mu;         /* a write and its record, one at a time */
	_Atomic pid_t owner;        /* the thread inside mu, 0 none */
	int rfd;                    /* the shim's reader of the file, -1 none */
	bool tracked;               /* in scope: its changes are logged */
};

/*
 * The flusher's part (flusher.h), for defer and group. Requests are numbered; a real
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
	_Atomic uint64_t calls_mark;     /* req_seq as the last real sync began: the requests past it are pending (max_calls) */
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
 * Its place in the flusher threads' schedule (workers.h; workers.c's alone): when
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

/* Its place in the order of acknowledged syncs (order.h; order.c's alone,
 * but for order.h's order_after_write). ORDER_END_LOST and ORDER_HOLE_*
 * are order.h's. */
struct order_link {
	_Atomic uint32_t listed;    /* it has a deferred ack not yet durable (the list holds a ref) */
	_Atomic uint32_t acking;    /* threads in order_acked's lock-free path: the slot is not freed */
	_Atomic uint32_t slot;      /* its slot in the domain + 1, 0 none (set before listed; read lock-free, relaxed) */
	_Atomic uint32_t hi_seq;    /* odd while a real sync's start moves cur_hi into prev_hi */
	_Atomic uint64_t cur_hi;    /* highest end of a write since the last real sync began */
	_Atomic uint64_t prev_hi;   /* ... before it began, until it completes (UINT64_MAX: unknown) */
	_Atomic uint64_t last_end;  /* where the latest write ended (UINT64_MAX: not known) */
	/* Where the writes a real sync covers ended, as it began (until it
	 * completes), and as of the last completed one (durable_end): the end
	 * of the durable log, UINT64_MAX when the writes it covered did not
	 * all go forward or are not known (order.c, "Tail rewrites"). */
	_Atomic uint64_t prev_end;
	_Atomic uint64_t durable_end;
	/* The file's request count when its latest write reached the kernel:
	 * every byte written this round is promised by request wreq + 1 at
	 * the latest (held.c judges a held write against them with it). */
	_Atomic uint64_t wreq;
	_Atomic uint32_t mapped;    /* a shared mapping of it was made: bytes may change unseen */
	_Atomic uint64_t run_gen;   /* bumped when a rewrite run's copy of its bytes may be stale */
	_Atomic uint64_t rewrite_end; /* where the latest write found identical ended (0: none) */
	/* The file's known end (order.c, "Past the known end"): no byte at or
	 * past known_end holds anything but zeros, once sized says the size an
	 * fstat saw is in it; ORDER_END_LOST: a write or change the shim could
	 * not place. hole: one range below it that this process's writes
	 * skipped over when they extended the file, never written since
	 * (packed: ORDER_HOLE_*). fills: writes that began below known_end. */
	_Atomic uint64_t known_end;
	_Atomic uint32_t sized;
	_Atomic uint64_t hole;
	_Atomic uint64_t fills;
	struct shim_file *next;     /* the pending list, order lock */
};

/* Bytes of the file this process wrote and acknowledged and that are not
 * durable yet, as held changes see them (held.c, "Its own bytes"). */
#define HELD_EXTENTS 8
struct held_extent {
	uint64_t lo, hi;  /* [lo, hi) */
	uint64_t w_req;   /* the file's request count when written: promised by request w_req + 1 */
};

/* Held writes' part (held.h; held.c's alone). */
struct held_link {
	struct held_change *head, *tail; /* held_mu: oldest first */
	struct shim_file *next;          /* held_mu: the list of files holding changes */
	_Atomic uint32_t count;          /* changes held and not applied yet (read lock-free) */
	_Atomic uint32_t gen;            /* bumped (held_mu) before applied changes leave the FIFO */
	/* While changes are held, a real sync covers no request numbered
	 * after the oldest of them was made: its bytes are not in the kernel
	 * yet. UINT64_MAX when none is held. */
	_Atomic uint64_t floor;
	_Atomic uint64_t bytes;          /* held, not applied */
	_Atomic uint64_t end;            /* the highest end of a change held since the file last held none */
	uint64_t last_end;               /* held_mu: where the latest held change ended */
	uint64_t back_w_req;             /* held_mu: a held change went back, made at this request count (UINT64_MAX none) */
	struct held_extent ext[HELD_EXTENTS]; /* held_mu */
	/* Requests a real sync could not cover (their bytes were held), as old
	 * as this (trace_now): their deadline comes back when the held
	 * writes are applied. 0: none. */
	_Atomic uint64_t owed_since;
};

#endif
