/*
 * rollback.h - put every file in scope back to what was durable at the
 * cut, from the undo log (docs/CRASHTEST.md, "Rollback").
 *
 * Data is undone per file (dev, inode), wherever the file is now: the
 * rollback finds it by inode under the scope's directories, or among the
 * links the shim kept in the undo store. Names are undone by the chosen
 * model of the file system. What cannot be undone is said, never guessed:
 * a trial with problems, LIMIT or FULL records is not exact.
 */
#ifndef SYNCSHIM_ROLLBACK_H
#define SYNCSHIM_ROLLBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "undolog.h"

enum names_model {
	NAMES_EXT4_ORDERED = 0, /* a name change is durable once any real sync on its device followed it */
	NAMES_STRICT,           /* ... only once its directory (or the device, by sync/syncfs) was synced */
	NAMES_MODEL_COUNT
};

int names_model_parse(const char *name);
const char *names_model_name(enum names_model m);

/* A file as the launcher saw it before the trial ran. */
struct rb_inode {
	uint64_t dev, ino;
};

struct rb_opts {
	const char *store;          /* the undo store: its kept links, and where undo.log is */
	const char *const *dirs;    /* the scope's directories, searched for files by inode */
	size_t ndirs;
	enum names_model names;
	/* Optional: the scope's globs and the files in scope before the trial.
	 * A file in scope that is in neither that list nor the log was created
	 * at the cut, before its CREATE record could be written: it is removed. */
	const char *const *globs;
	size_t nglobs;
	const struct rb_inode *before;
	size_t nbefore;
};

struct rb_file {
	uint64_t dev, ino;
	char *path;           /* where it was found; NULL if nowhere */
	uint64_t durable;     /* its durable point: records at or after it were undone */
	unsigned records;     /* WRITE and SIZE records undone */
	uint64_t bytes;       /* bytes those records had written (or resized) */
	uint64_t oldest_ns;   /* CLOCK_MONOTONIC of the oldest undone record */
};

struct rb_result {
	struct rb_file *files;   /* every file with something undone, in order of first record */
	size_t nfiles;
	char **names;            /* each name change undone, one line */
	size_t nnames;
	char **limits;           /* each LIMIT record, one line */
	size_t nlimits;
	char **problems;         /* what could not be undone, one line each */
	size_t nproblems;
	bool full;               /* the log holds FULL: later changes were not recorded */
	unsigned records;        /* totals over files */
	uint64_t bytes;
	uint64_t oldest_ns;      /* the oldest undone record of all; 0 if none */
};

/*
 * Undoes what was not durable. Returns 0 (problems, if any, are in *r), or
 * -1 with one line in err if it could not start (out of memory).
 */
int rollback_run(const struct undo_log *log, const struct rb_opts *o, struct rb_result *r, char *err,
		 size_t errlen);
/* Whether the rollback is exact: no problems, no LIMIT, no FULL. */
bool rollback_exact(const struct rb_result *r);
void rollback_free(struct rb_result *r);

#endif
