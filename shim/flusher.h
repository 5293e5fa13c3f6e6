/*
 * flusher.h - deferred and group-commit syncs.
 *
 * defer: the app's sync returns at once; a flusher thread issues the real
 * sync when the oldest pending request is max_delay_ms old, max_bytes are
 * dirty or max_calls requests pend. group: the caller waits for a real
 * sync that began after its call; concurrent callers share it. Errors of
 * background syncs are sticky per file and reported, errseq style, by the
 * next fsync, fdatasync or close on each descriptor of the file.
 */
#ifndef SYNCSHIM_FLUSHER_H
#define SYNCSHIM_FLUSHER_H

#include <stdbool.h>

#include "shim.h"

void flusher_init_file(struct shim_file *f);
void flusher_release_file(struct shim_file *f);   /* registry lock held */

/* An app's fsync/fdatasync (fd >= 0) or msync (fd -1) on a defer or
 * group file. Returns 0 or -1 with errno, like the call it stands for. */
int flusher_app_sync(struct shim_file *f, int fd, bool want_fsync);
/* Make fd's file ready for background work (defer files, at open and
 * mmap): the flusher's private descriptor and a thread. */
void flusher_prepare(struct shim_file *f, int fd, uint32_t slot_flags);
/* Write path, defer files only: thresholds and early writeback. Lock-free. */
void flusher_after_write(struct shim_file *f, int fd, uint32_t slot_state);
/* Complete the file's pending syncs now (barriers). */
void flusher_drain(struct shim_file *f);
/* Complete every pending deferred sync (sync, syncfs, exec, exit). */
void flusher_flush_all(void);
/* Complete the pending syncs of the file at (dirfd, path) before a rename.
 * Returns 0, or the errno of a sync of that file that failed and nobody
 * has been told about: the rename must not replace its target then. */
int flusher_before_rename(int dirfd, const char *path);
/* close(): the error to report for fd, after on_close=sync waited. */
int flusher_before_close(struct shim_file *f, int fd);
/* Descriptors in [first, last] are about to be closed by close_range. */
void flusher_before_close_range(unsigned first, unsigned last);
void flusher_atfork_child(void);
bool flusher_is_private_fd(int fd);
/* close() of a private number: 1 if it is really ours (the app gets EBADF),
 * 0 if not (a stale mark is cleared and the app's close goes ahead). */
int flusher_close_private(int fd);
/* dup2/dup3 are about to put an app descriptor at fd: move ours away. */
void flusher_vacate(int fd);

#endif
