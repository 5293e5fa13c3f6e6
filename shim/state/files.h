/*
 * files.h - one object per file, shared by every descriptor of the same
 * (dev, inode), and the registry that finds it (files.c). Each upper part's
 * share of the object is that part's type, defined in file_parts.h.
 */
#ifndef SYNCSHIM_FILES_H
#define SYNCSHIM_FILES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "file_parts.h"
#include "knobs.h"

struct live_stats;

/* What the write path does besides the write (one byte, from the knobs). */
#define WRITES_COUNTED 1u  /* add to risk.written: a sync may be answered without the device */
#define WRITES_DEFERRED 2u /* writes are deferred requests' bytes (max_bytes, writeback) */
#define WRITES_LIVE 4u     /* count them for the live counters (live.h) */
#define WRITES_CRASH 8u    /* crash-test mode: log each before it is made (crash.h) */
#define WRITES_ORDERED 16u /* a change waits for other files' acknowledged syncs (order.h) */

struct shim_file {
	_Atomic uint32_t refs;      /* fd slots, mmap regions, queue, threads inside a call */
	_Atomic uint32_t nfds;      /* app descriptors bound to it */
	uint32_t id;                /* stable id in logs, never reused in a process */
	bool dead;                  /* registry lock: recycled, on the free list */
	bool ghost;                 /* registry lock: no refs, kept for an unreported error */
	bool unhashed;              /* registry lock: a newer file has its inode number */
	/* It has no name left: its link count was 0 when its last descriptor
	 * (the app's, or the shim's private one) was closed with an error
	 * unreported, or its last name was unlinked with no app descriptor
	 * open. It leaves no ghost (retire_locked, files.c). Cleared when a
	 * descriptor is bound. (A name replaced by rename is not seen.) */
	_Atomic bool unlinked_when_closed;
	/* The process inherited it as its standard output or error (a log
	 * redirected to a file): under order = auto its writes wait for no
	 * other file's syncs (knobs.c). */
	_Atomic bool std_stream;
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
	struct held_link hold;          /* held.c: changes held back instead of waiting */
	char *path;                     /* absolute; private allocation, registry lock */
	struct shim_file *hash_next;
	struct shim_file *free_next;
};

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
/* Some file is known: unlink asks about the file it removes only then
 * (one load otherwise). */
bool registry_has_files(void);
/* (dev, ino, birth) lost its last name: if the app has no descriptor of
 * it, its ghost is dropped, or it is marked to leave no ghost when it
 * retires (files.c, retire_locked, says why that is safe). */
void registry_forget_unlinked(dev_t dev, ino_t ino, uint64_t birth);
/* f is the standard output or error the process inherited (knobs.c). */
void file_mark_std_stream(struct shim_file *f);
/* Re-apply the live policy to every known file (reload). */
void registry_rematch(const struct policy *p);

/*
 * What each part of a file (the flusher's, the threads', order's, held
 * writes', data at risk's, the log's, crash-test mode's, the live
 * counters') hears of the file's life from the registry: one table, filled
 * from above at load (registry_set_parts, init.c), so the registry calls
 * no layer above it. The parts are told in the table's order; any hook
 * may be NULL.
 */
struct file_part {
	/* A new object, once (it is recycled, never freed): its locks, what
	 * it allocates. No lock held. */
	void (*init)(struct shim_file *f);
	/* A file takes the object, before its knobs are set (what they are
	 * computed from). Registry lock held. */
	void (*bind)(struct shim_file *f);
	/* The same, after its knobs are set: the part's state for a new file.
	 * Registry lock held. */
	void (*reset)(struct shim_file *f);
	/* Its last reference is gone (it may stay known as a ghost). Registry
	 * lock held. */
	void (*released)(struct shim_file *f);
	/* It leaves the registry for the free list. Registry lock held. */
	void (*gone)(struct shim_file *f);
	/* Its knobs changed what its writes need (knobs_set): they stop being
	 * counted, or start being deferred. Registry lock held. */
	void (*writes_uncounted)(struct shim_file *f);
	void (*starts_deferring)(struct shim_file *f);
	/* A notice of the new file, made before the registry lock (it may
	 * allocate), posted under it before any record can name the file, or
	 * freed when another thread made the file first. */
	void *(*notice_new)(const char *path, const char *rule_name);
	void (*notice_post)(void *notice, const struct shim_file *f);
	void (*notice_free)(void *notice);
};
#define FILE_PARTS_MAX 8
/* At load, before any file is made; the table stays the caller's. */
void registry_set_parts(const struct file_part *parts, int n);
/* Every part's writes_uncounted, or starts_deferring (knobs.c). */
void file_parts_writes_uncounted(struct shim_file *f);
void file_parts_starts_deferring(struct shim_file *f);

#endif
