/*
 * rb_writeback.c - adversarial writeback: which unsynced writes the
 * kernel may already have written back when the power went.
 *
 * The plain rollback undoes every write no sync covered, which never
 * shows a state in which a later write reached the disk and an earlier
 * one did not; the kernel writes dirty pages back in any order, at any
 * time. Here each page of a file is on its own: the page holds its
 * content as of some moment since the file's durable point, i.e. after
 * some prefix of the unsynced writes that touched it. Going from its
 * newest write to its oldest, the page stops at each with probability
 * P (it was written back after that write and before the next one), and
 * keeps that write and every older one; a page that stops at none is as
 * it was at the durable point. Pages of one write decide apart, so a
 * write can be torn at a page boundary, as on a real disk.
 *
 * Sizes and names stay as the plain rollback has them: they are
 * metadata, made durable by the journal in order (the names model), and
 * a page beyond the size the file has been cut to since its durable point
 * is not its old block any more. So only bytes below the least size the
 * file had since its durable point ("floor") may survive.
 *
 * Each draw is a hash of the seed and (dev, inode, page, the record's
 * place in the log): the same seed gives the same state, whatever the
 * order files are visited in.
 */
#include <stdlib.h>
#include <string.h>

#include "rb_internal.h"

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool draw(const struct rb_opts *o, const struct undo_entry *e, uint64_t page)
{
	uint64_t h = mix(o->seed ^ mix(e->h.dev ^ mix(e->h.ino ^ mix(page ^ mix(e->at)))));
	return (double)(h >> 11) * 0x1.0p-53 < o->survive;
}

static int cmp_keep(const void *a, const void *b)
{
	const struct rb_page_keep *x = a, *y = b;
	if (x->page != y->page)
		return x->page < y->page ? -1 : 1;
	return (x->k < y->k) - (x->k > y->k); /* newest first within a page */
}

static bool osync(const struct undo_rec *h)
{
	return h->type == UNDO_WRITE && (h->flags & UNDO_F_OSYNC);
}

int rb_writeback_plan(const struct undo_entry *const *rec, size_t n, const struct rb_opts *o,
		      struct rb_writeback *w)
{
	memset(w, 0, sizeof(*w));
	if (!o || o->survive <= 0 || !n)
		return 0;
	w->floor = malloc(n * sizeof(*w->floor));
	if (!w->floor)
		return -1;
	/* the size at the durable point: what the first undone record found */
	uint64_t floor = UINT64_MAX, slices = 0;
	for (size_t k = 0; k < n; k++) {
		const struct undo_rec *h = &rec[k]->h;
		if (osync(h)) {
			w->floor[k] = 0;
			continue;
		}
		if (floor == UINT64_MAX)
			floor = h->old_size;
		if (h->type == UNDO_SIZE && h->off < floor)
			floor = h->off;
		w->floor[k] = floor;
		uint64_t end = h->type == UNDO_WRITE ? h->off + h->len : 0;
		if (end > floor)
			end = floor;
		if (h->type == UNDO_WRITE && end > h->off)
			slices += (end - 1) / RB_PAGE - h->off / RB_PAGE + 1;
	}
	struct rb_page_keep *all = malloc((slices + 1) * sizeof(*all));
	if (!all)
		return -1;
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		const struct undo_rec *h = &rec[k]->h;
		uint64_t end = h->off + h->len < w->floor[k] ? h->off + h->len : w->floor[k];
		if (h->type != UNDO_WRITE || osync(h) || end <= h->off)
			continue;
		for (uint64_t pg = h->off / RB_PAGE; pg <= (end - 1) / RB_PAGE; pg++)
			all[m++] = (struct rb_page_keep){ pg, k };
	}
	qsort(all, m, sizeof(*all), cmp_keep);
	/* per page, newest write first: the first one drawn is where it stopped */
	for (size_t i = 0; i < m;) {
		size_t j = i;
		bool kept = false;
		for (; j < m && all[j].page == all[i].page; j++)
			if (!kept && draw(o, rec[all[j].k], all[j].page)) {
				all[w->nkeep++] = all[j];
				kept = true;
			}
		i = j;
	}
	w->keep = all;
	return 0;
}

bool rb_writeback_kept(const struct rb_writeback *w, size_t k, uint64_t page)
{
	size_t lo = 0, hi = w->nkeep;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->keep[mid].page < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nkeep && w->keep[lo].page == page && w->keep[lo].k >= k;
}

void rb_writeback_free(struct rb_writeback *w)
{
	free(w->floor);
	free(w->keep);
	memset(w, 0, sizeof(*w));
}
