/*
 * rb_syncs.c - from the log's sync records, the point before which each
 * file's, directory's and device's changes are durable.
 *
 * Each table is sorted by (dev, ino) and keeps the largest upto per key:
 * a later sync of the same file can only cover more.
 */
#include <stdlib.h>
#include <string.h>

#include "rb_internal.h"

static int cmp_upto(const void *a, const void *b)
{
	const struct rb_upto *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->ino > y->ino) - (x->ino < y->ino);
}

static int push(struct rb_upto **t, size_t *n, size_t *cap, uint64_t dev, uint64_t ino, uint64_t upto)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct rb_upto *p = realloc(*t, ncap * sizeof(*p));
		if (!p)
			return -1;
		*t = p;
		*cap = ncap;
	}
	(*t)[(*n)++] = (struct rb_upto){ dev, ino, upto };
	return 0;
}

/* Sorts and keeps one entry per key, with its largest upto. */
static void squeeze(struct rb_upto *t, size_t *n)
{
	if (*n == 0)
		return;
	qsort(t, *n, sizeof(*t), cmp_upto);
	size_t k = 0;
	for (size_t i = 1; i < *n; i++) {
		if (cmp_upto(&t[k], &t[i]) == 0) {
			if (t[i].upto > t[k].upto)
				t[k].upto = t[i].upto;
		} else {
			t[++k] = t[i];
		}
	}
	*n = k + 1;
}

int rb_syncs_collect(const struct undo_log *log, struct rb_syncs *s)
{
	memset(s, 0, sizeof(*s));
	size_t cf = 0, cd = 0, cv = 0, ca = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct undo_rec *h = &log->e[i].h;
		int bad = 0;
		switch (h->type) {
		case UNDO_DURABLE:
			bad = push(&s->file, &s->nfile, &cf, h->dev, h->ino, h->off);
			break;
		case UNDO_DIRSYNC:
			bad = push(&s->dir, &s->ndir, &cd, h->dev, h->ino, h->off);
			break;
		case UNDO_DURABLE_DEV:
			bad = push(&s->dev, &s->ndev, &cv, h->dev, 0, h->off);
			break;
		default:
			continue;
		}
		/* Any of them forces the device's journal: ext4 commits in order. */
		if (bad || push(&s->any, &s->nany, &ca, h->dev, 0, h->off) < 0) {
			rb_syncs_free(s);
			return -1;
		}
	}
	squeeze(s->file, &s->nfile);
	squeeze(s->dir, &s->ndir);
	squeeze(s->dev, &s->ndev);
	squeeze(s->any, &s->nany);
	return 0;
}

void rb_syncs_free(struct rb_syncs *s)
{
	free(s->file);
	free(s->dir);
	free(s->dev);
	free(s->any);
	memset(s, 0, sizeof(*s));
}

static uint64_t lookup(const struct rb_upto *t, size_t n, uint64_t dev, uint64_t ino)
{
	struct rb_upto key = { dev, ino, 0 };
	const struct rb_upto *hit = n ? bsearch(&key, t, n, sizeof(*t), cmp_upto) : NULL;
	return hit ? hit->upto : 0;
}

static uint64_t max2(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* sync() (dev 0) and syncfs() of the file's device. */
static uint64_t device_wide(const struct rb_syncs *s, uint64_t dev)
{
	return max2(lookup(s->dev, s->ndev, 0, 0), dev ? lookup(s->dev, s->ndev, dev, 0) : 0);
}

uint64_t rb_file_point(const struct rb_syncs *s, uint64_t dev, uint64_t ino)
{
	return max2(lookup(s->file, s->nfile, dev, ino), device_wide(s, dev));
}

uint64_t rb_dir_point(const struct rb_syncs *s, uint64_t dev, uint64_t ino)
{
	return max2(lookup(s->dir, s->ndir, dev, ino), device_wide(s, dev));
}

uint64_t rb_dev_point(const struct rb_syncs *s, uint64_t dev)
{
	/* a sync() of every device shows in `any` under dev 0 */
	return max2(lookup(s->any, s->nany, dev, 0), lookup(s->any, s->nany, 0, 0));
}
