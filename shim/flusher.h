/*
 * flusher.h - deferred and group-commit syncs (per-file flusher threads).
 */
#ifndef SYNCSHIM_FLUSHER_H
#define SYNCSHIM_FLUSHER_H

#include <stdbool.h>

#include "shim.h"

/* An app's fsync/fdatasync on a defer or group file. */
int flusher_app_sync(struct shim_file *f, int fd, bool want_fsync);
/* Complete every pending deferred sync (sync, syncfs, exec, exit). */
void flusher_flush_all(void);
/* Complete the pending syncs of the file at (dirfd, path) before it is renamed. */
void flusher_before_rename(int dirfd, const char *path);

#endif
