/*
 * syncerr.h - errors of syncs the shim made on the app's behalf (syncerr.c).
 */
#ifndef SYNCSHIM_SYNCERR_H
#define SYNCSHIM_SYNCERR_H

#include <stdbool.h>
#include <stdint.h>

struct shim_file;

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
/* At exit: say every error no descriptor reported; true if there was one
 * (or one was dropped with its file, syncerr_note_dropped). */
bool syncerr_tell_all_unreported(void);
/* f leaves the registry: an error no descriptor reported goes with it
 * (said on stderr already: no descriptor was left), counted for the exit
 * status. */
void syncerr_note_dropped(const struct shim_file *f);
bool syncerr_any_dropped(void);
/* fd, about to be closed, is the last descriptor of f (the app's last, or
 * the shim's private one): with an error unreported, note whether the
 * file is unlinked (one fstat; nothing otherwise). */
void syncerr_last_descriptor(struct shim_file *f, int fd);

#endif
