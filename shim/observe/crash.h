/*
 * crash.h - crash-test mode (docs/CRASHTEST.md): the undo log a shimmed
 * process tree keeps so `syncshim crashtest` can roll every file in scope
 * back to what was durable at a cut.
 *
 * Off unless SYNCSHIM_CRASH_DIR is set: every hook below starts with
 * crash_on(), one load, and the write path reaches none of them unless the
 * file's WRITES_CRASH bit is set. In crash-test mode writes to a tracked
 * file are serialised per file (the pre-image and the write must not be
 * split by another thread's write) and cost a few system calls: it is a
 * test mode, not one for production.
 */
#ifndef SYNCSHIM_CRASH_H
#define SYNCSHIM_CRASH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "file_parts.h" /* struct crash_state */

struct shim_file;

extern bool crash_enabled;
static inline bool crash_on(void)
{
	return __atomic_load_n(&crash_enabled, __ATOMIC_RELAXED);
}

/* At load, from the environment; one stderr line if it cannot be done. */
void crash_start(void);
/* Whether a file the shim meets at abspath is tracked. */
bool crash_in_scope(const char *abspath);
void crash_file_init(struct shim_file *f);   /* once per object */
void crash_file_reset(struct shim_file *f);  /* a (recycled) object as a new file */
void crash_file_gone(struct shim_file *f);   /* registry lock held: no allocation */
void crash_atfork_child(void);

/* Around a write into a tracked file: the WRITE record, then the write,
 * under the file's lock. off < 0: at the descriptor's position (or its end
 * with O_APPEND). synced: the write itself is durable when it returns. */
struct crash_write {
	struct shim_file *f;
	bool locked;
	int cancel; /* the cancel state to restore: the write runs with it disabled while locked */
	/* When the program made the write (trace_now), for a held write the
	 * shim applies later: a loss is counted from the program's write, not
	 * from the shim's. 0: now. */
	uint64_t written_ns;
};
void crash_write_begin(struct shim_file *f, int fd, off_t off, const struct iovec *iov, int cnt,
		       bool synced, struct crash_write *w);
void crash_write_end(struct crash_write *w);
static inline void crash_write_done(struct crash_write *w)
{
	if (__builtin_expect(w->locked, 0))
		crash_write_end(w);
}

/* Durable marks: take the mark when a real sync begins, say it after the
 * sync succeeded (before the app learns). */
uint64_t crash_mark(struct shim_file *f);
void crash_durable(struct shim_file *f, uint64_t upto);
uint64_t crash_mark_any(void);
void crash_durable_dev(dev_t dev, uint64_t upto); /* dev 0: every device */
/* After fsync(fd) of something the shim does not track succeeded: a
 * directory's entries are durable. */
void crash_synced_untracked(int fd, uint64_t upto);

/* Sizes and names. */
void crash_before_size(int fd, const char *abspath, off_t new_size);
struct crash_open {
	bool in_scope, existed;
};
void crash_before_open(int dirfd, const char *abspath, int flags, struct crash_open *o);
void crash_after_open(const struct crash_open *o, const char *abspath, int fd, int flags);
void crash_before_rename(int fromdir, const char *from, int todir, const char *to);
void crash_before_unlink(int dirfd, const char *path);
/* Nothing of the run can be judged (the real syncs do not reach the
 * kernel): a LIMIT record flagged UNDO_F_BLIND. */
void crash_blind(const char *what);
/* Something happened to fd's file that a rollback cannot undo. */
void crash_limit_fd(int fd, const char *what);
void crash_limit_path(int dirfd, const char *path, const char *what);
/* The undo log's identity, for shimfd.c's checks of its descriptor. */
bool crash_identity(dev_t *dev, ino_t *ino);
/* The app took one of our descriptors (f: a file's reader, NULL: the log). */
void crash_fd_lost(struct shim_file *f, int fd);

#endif
