/*
 * nextsync.h - at load: whether the sync calls the shim makes reach libc
 * (nextsync.c).
 */
#ifndef SYNCSHIM_NEXTSYNC_H
#define SYNCSHIM_NEXTSYNC_H

/* One stderr line naming the library if a sync call the shim makes
 * resolves to another library than libc's (a preload after the shim), and
 * in crash-test mode a LIMIT record that makes the trial unusable. */
void nextsync_check(void);

/* Exported by a layer beneath the shim whose sync functions pass every
 * call on (tests/lib/reclayer.c): not a blind spot. */
#define NEXTSYNC_PASSES_ON "syncshim_layer_passes_syncs"

#endif
