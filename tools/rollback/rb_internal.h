/*
 * rb_internal.h - the rollback's parts (rollback.c, rb_syncs.c,
 * rb_index.c, rb_data.c, rb_names.c) and what they share.
 */
#ifndef SYNCSHIM_RB_INTERNAL_H
#define SYNCSHIM_RB_INTERNAL_H

#include <stdarg.h>

#include "rollback.h"

/* ---- what was synced, and from where on (rb_syncs.c) ---- */

struct rb_upto {
	uint64_t dev, ino;
	uint64_t upto; /* the largest upto of its sync records */
};

struct rb_syncs {
	struct rb_upto *file;   /* DURABLE, per (dev, ino) */
	size_t nfile;
	struct rb_upto *dir;    /* DIRSYNC, per directory (dev, ino) */
	size_t ndir;
	struct rb_upto *dev;    /* DURABLE_DEV per dev (ino 0); dev 0 = every device */
	size_t ndev;
	struct rb_upto *any;    /* any real sync on a device (ino 0), for ext4-ordered names */
	size_t nany;
};

int rb_syncs_collect(const struct undo_log *log, struct rb_syncs *s);
void rb_syncs_free(struct rb_syncs *s);
/* Changes logged before the returned offset are durable. */
uint64_t rb_file_point(const struct rb_syncs *s, uint64_t dev, uint64_t ino);
uint64_t rb_dir_point(const struct rb_syncs *s, uint64_t dev, uint64_t ino);
uint64_t rb_dev_point(const struct rb_syncs *s, uint64_t dev);

/* ---- files by inode (rb_index.c) ---- */

struct rb_entry {
	uint64_t dev, ino;
	char *path;
	bool in_store;  /* a link the shim kept in the undo store */
};

struct rb_index {
	struct rb_entry *e;
	size_t n, cap;
};

/* Every regular file under the directories and the store. */
int rb_index_build(struct rb_index *ix, const struct rb_opts *o);
/* A path of (dev, ino), preferring one outside the store; NULL if none. */
const char *rb_index_find(const struct rb_index *ix, uint64_t dev, uint64_t ino);
void rb_index_free(struct rb_index *ix);
/* Removes files in scope that neither the log nor o->before knows. */
int rb_remove_unrecorded(const struct rb_index *ix, const struct undo_log *log, const struct rb_opts *o,
			 struct rb_result *r);

/* ---- the two halves ---- */

int rb_undo_data(const struct undo_log *log, const struct rb_syncs *s, const struct rb_index *ix,
		 struct rb_result *r);
int rb_undo_names(const struct undo_log *log, const struct rb_syncs *s, const struct rb_opts *o,
		  struct rb_result *r);

/* ---- the result's lines (rollback.c) ---- */

int rb_note(char ***lines, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The path of a kept link: store/saved, or saved when absolute. */
void rb_saved_path(const char *store, const char *saved, char *out, size_t len);

#endif
