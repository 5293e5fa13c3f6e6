/*
 * rb_names.c - undoing the directory changes a power cut would have lost:
 * creations, renames and unlinks that no sync made durable, by the model
 * the user chose (docs/CRASHTEST.md, "Names"). Newest first, so each undo
 * finds the names as they were just after its own change.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rb_internal.h"

/* Changes logged before this offset in path's directory are durable (strict). */
static uint64_t parent_point(const struct rb_syncs *s, const char *path)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof(copy), "%s", path);
	struct stat st;
	if (stat(dirname(copy), &st) < 0)
		return 0;
	return rb_dir_point(s, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

static bool durable(const struct undo_entry *e, char (*f)[UNDO_FIELD_MAX], const struct rb_syncs *s,
		    enum names_model model)
{
	if (model == NAMES_EXT4_ORDERED)
		return rb_dev_point(s, e->h.dev) > e->at;
	if (parent_point(s, f[0]) <= e->at)
		return false;
	/* a rename is durable once both of its directories are */
	return e->h.type != UNDO_RENAME || parent_point(s, f[1]) > e->at;
}

static bool names_file(const char *path, const struct undo_rec *h)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return false;
	return h->ino == 0 || ((uint64_t)st.st_dev == h->dev && (uint64_t)st.st_ino == h->ino);
}

static int undo_create(const struct undo_entry *e, const char *path, struct rb_result *r)
{
	if (!names_file(path, &e->h))
		return 0; /* gone, or the name is another file's now: nothing of this creation is left */
	if (unlink(path) < 0)
		return rb_note(&r->problems, &r->nproblems, "%s: its creation was not durable; cannot remove "
			       "it: %s", path, strerror(errno));
	return rb_note(&r->names, &r->nnames, "removed %s (created at byte %llu, not durable)", path,
		       (unsigned long long)e->at);
}

/* Links the kept file to path, over whatever path names now. */
static int relink(const char *kept, const char *path)
{
	if (link(kept, path) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.syncshim-restore", path);
	unlink(tmp);
	if (link(kept, tmp) < 0)
		return -1;
	return rename(tmp, path);
}

static int undo_rename(const struct undo_entry *e, char (*f)[UNDO_FIELD_MAX], const char *store,
		       struct rb_result *r)
{
	const char *old = f[0], *new = f[1], *saved = f[2];
	if (rename(new, old) < 0)
		return rb_note(&r->problems, &r->nproblems, "%s: its rename from %s was not durable; cannot "
			       "rename it back: %s", new, old, strerror(errno));
	char kept[PATH_MAX];
	if (saved[0]) {
		rb_saved_path(store, saved, kept, sizeof(kept));
		if (relink(kept, new) < 0)
			return rb_note(&r->problems, &r->nproblems, "%s: cannot bring back the file the rename "
				       "replaced from %s: %s", new, kept, strerror(errno));
	}
	return rb_note(&r->names, &r->nnames, "renamed %s back to %s (renamed at byte %llu, not durable)%s",
		       new, old, (unsigned long long)e->at, saved[0] ? "; the file it replaced is back" : "");
}

static int undo_unlink(const struct undo_entry *e, char (*f)[UNDO_FIELD_MAX], const char *store,
		       struct rb_result *r)
{
	const char *path = f[0], *saved = f[1];
	char kept[PATH_MAX];
	if (!saved[0])
		return rb_note(&r->problems, &r->nproblems, "%s: its unlink was not durable but no link to it "
			       "was kept", path);
	rb_saved_path(store, saved, kept, sizeof(kept));
	if (relink(kept, path) < 0)
		return rb_note(&r->problems, &r->nproblems, "%s: its unlink was not durable; cannot bring it "
			       "back from %s: %s", path, kept, strerror(errno));
	return rb_note(&r->names, &r->nnames, "restored %s (unlinked at byte %llu, not durable)", path,
		       (unsigned long long)e->at);
}

int rb_undo_names(const struct undo_log *log, const struct rb_syncs *s, const struct rb_opts *o,
		  struct rb_result *r)
{
	static char f[3][UNDO_FIELD_MAX];
	for (size_t i = log->n; i-- > 0;) {
		const struct undo_entry *e = &log->e[i];
		unsigned t = e->h.type;
		if (t != UNDO_CREATE && t != UNDO_RENAME && t != UNDO_UNLINK)
			continue;
		int bad = 0;
		if (undo_fields(e, f, 3) < 1 || !f[0][0] || (t == UNDO_RENAME && !f[1][0]))
			bad = rb_note(&r->problems, &r->nproblems, "%s record at byte %llu names no path",
				      undo_type_name(t), (unsigned long long)e->at);
		else if (durable(e, f, s, o->names))
			continue;
		else if (t == UNDO_CREATE)
			bad = undo_create(e, f[0], r);
		else if (t == UNDO_RENAME)
			bad = undo_rename(e, f, o->store, r);
		else
			bad = undo_unlink(e, f, o->store, r);
		if (bad < 0)
			return -1;
	}
	return 0;
}
