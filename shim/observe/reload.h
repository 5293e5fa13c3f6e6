/*
 * reload.h - live reload of the ini file.
 */
#ifndef SYNCSHIM_RELOAD_H
#define SYNCSHIM_RELOAD_H

/* Start the watcher once, lazily (first tracked open or sync). */
void reload_maybe_start(void);
/* At load, just before the ini is read: the watcher's first stamp. */
void reload_config_about_to_be_read(void);
void reload_atfork_child(void);
void reload_thread_quiesced(void); /* set*id ended the watcher: the next call starts another */

#endif
