/*
 * rb_index.c - finding files by inode: the log names a file by (dev, ino)
 * because a rename or an unlink may have moved it since; the rollback
 * looks for it under the scope's directories and among the links the
 * shim kept in the undo store.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "rb_internal.h"

/* nftw has no argument for its callback: the index being built. */
static struct rb_index *building;
static bool building_store;
static struct stat store_st;

static int add(const char *path, const struct stat *st, bool in_store)
{
	struct rb_index *ix = building;
	if (ix->n == ix->cap) {
		size_t ncap = ix->cap ? ix->cap * 2 : 256;
		struct rb_entry *e = realloc(ix->e, ncap * sizeof(*e));
		if (!e)
			return -1;
		ix->e = e;
		ix->cap = ncap;
	}
	char *copy = strdup(path);
	if (!copy)
		return -1;
	ix->e[ix->n++] = (struct rb_entry){ (uint64_t)st->st_dev, (uint64_t)st->st_ino, copy, in_store };
	return 0;
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	/* The store inside a scope directory: its links are indexed as the store's, once. */
	if (flag == FTW_D && !building_store && st->st_dev == store_st.st_dev && st->st_ino == store_st.st_ino)
		return FTW_SKIP_SUBTREE;
	if (flag != FTW_F || !S_ISREG(st->st_mode))
		return FTW_CONTINUE;
	/* the log itself is no file of the program's */
	if (building_store && strcmp(path + ftw->base, UNDO_NAME) == 0)
		return FTW_CONTINUE;
	return add(path, st, building_store) < 0 ? FTW_STOP : FTW_CONTINUE;
}

static int cmp_key(const void *a, const void *b)
{
	const struct rb_upto *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct rb_entry *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (int)x->in_store - (int)y->in_store; /* a scope path first */
}

int rb_index_build(struct rb_index *ix, const struct rb_opts *o)
{
	memset(ix, 0, sizeof(*ix));
	building = ix;
	memset(&store_st, 0, sizeof(store_st));
	if (o->store)
		stat(o->store, &store_st);
	int bad = 0;
	for (size_t i = 0; i < o->ndirs && !bad; i++) {
		building_store = false;
		/* a directory that is not there holds nothing to find */
		bad = nftw(o->dirs[i], visit, 32, FTW_PHYS | FTW_ACTIONRETVAL) == FTW_STOP;
	}
	if (o->store && !bad) {
		building_store = true;
		bad = nftw(o->store, visit, 8, FTW_PHYS | FTW_ACTIONRETVAL) == FTW_STOP;
	}
	building = NULL;
	if (bad) {
		rb_index_free(ix);
		return -1;
	}
	if (ix->n)
		qsort(ix->e, ix->n, sizeof(*ix->e), cmp_entry);
	return 0;
}

/* The first entry of (dev, ino), scope paths sorting before store links. */
static const struct rb_entry *first_of(const struct rb_index *ix, uint64_t dev, uint64_t ino)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rb_entry *m = &ix->e[mid];
		if (m->dev < dev || (m->dev == dev && m->ino < ino))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ix->n && ix->e[lo].dev == dev && ix->e[lo].ino == ino ? &ix->e[lo] : NULL;
}

const char *rb_index_find(const struct rb_index *ix, uint64_t dev, uint64_t ino)
{
	const struct rb_entry *e = first_of(ix, dev, ino);
	return e ? e->path : NULL;
}

void rb_index_free(struct rb_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->e[i].path);
	free(ix->e);
	memset(ix, 0, sizeof(*ix));
}

/* The inodes the rollback may not remove: every one the log names, and
 * every one in scope before the trial; sorted, for bsearch. */
static struct rb_upto *known_set(const struct undo_log *log, const struct rb_opts *o, size_t *n)
{
	struct rb_upto *k = malloc((log->n + o->nbefore + 1) * sizeof(*k));
	if (!k)
		return NULL;
	*n = 0;
	for (size_t i = 0; i < log->n; i++)
		if (log->e[i].h.type != UNDO_DURABLE_DEV)
			k[(*n)++] = (struct rb_upto){ log->e[i].h.dev, log->e[i].h.ino, 0 };
	for (size_t i = 0; i < o->nbefore; i++)
		k[(*n)++] = (struct rb_upto){ o->before[i].dev, o->before[i].ino, 0 };
	qsort(k, *n, sizeof(*k), cmp_key);
	return k;
}

static bool in_scope(const struct rb_opts *o, const char *path)
{
	for (size_t i = 0; i < o->nglobs; i++)
		if (glob_match(o->globs[i], path))
			return true;
	return false;
}

int rb_remove_unrecorded(const struct rb_index *ix, const struct undo_log *log, const struct rb_opts *o,
			 struct rb_result *r)
{
	if (!o->globs || !o->nglobs)
		return 0;
	size_t nk;
	struct rb_upto *known = known_set(log, o, &nk);
	if (!known)
		return -1;
	int bad = 0;
	for (size_t i = 0; i < ix->n && !bad; i++) {
		const struct rb_entry *e = &ix->e[i];
		struct rb_upto key = { e->dev, e->ino, 0 };
		if (e->in_store || !in_scope(o, e->path) || (nk && bsearch(&key, known, nk, sizeof(key), cmp_key)))
			continue;
		bad = unlink(e->path) < 0
			? rb_note(&r->problems, &r->nproblems, "%s: created at the cut and not recorded; cannot "
				  "remove it: %s", e->path, strerror(errno))
			: rb_note(&r->names, &r->nnames, "removed %s (created at the cut, before the shim could "
				  "record it)", e->path);
	}
	free(known);
	return bad < 0 ? -1 : 0;
}
