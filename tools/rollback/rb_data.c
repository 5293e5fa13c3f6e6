/*
 * rb_data.c - undoing the writes and size changes no completed sync
 * covered, per file, newest first: each record holds the state just
 * before its change, so undoing them in reverse walks the file back to
 * the state just before the oldest one, which is the durable state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rb_internal.h"

static int pwrite_full(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* The ranges kept O_SYNC writes wrote: durable when they returned, so
 * undoing an older record must not put older bytes over them, nor cut
 * the file below their end. */
struct prot {
	uint64_t (*r)[2];
	size_t n;
	uint64_t end;
};

static int protect(struct prot *p, uint64_t lo, uint64_t hi)
{
	uint64_t (*r)[2] = realloc(p->r, (p->n + 1) * sizeof(*r));
	if (!r)
		return -1;
	p->r = r;
	r[p->n][0] = lo;
	r[p->n++][1] = hi;
	if (hi > p->end)
		p->end = hi;
	return 0;
}

/* The pre-image, except where a kept O_SYNC write owns the bytes now. */
static int restore(int fd, const uint8_t *pre, uint64_t n, uint64_t off, const struct prot *p)
{
	uint64_t cur = off, end = off + n;
	while (cur < end) {
		uint64_t stop = end;
		bool inside = false;
		for (size_t i = 0; i < p->n && !inside; i++) {
			if (p->r[i][0] <= cur && cur < p->r[i][1])
				inside = true, stop = p->r[i][1];
			else if (p->r[i][0] > cur && p->r[i][0] < stop)
				stop = p->r[i][0];
		}
		if (!inside && pwrite_full(fd, pre + (cur - off), (size_t)((stop < end ? stop : end) - cur), cur) < 0)
			return -1;
		cur = stop;
	}
	return 0;
}

static int set_size(int fd, uint64_t size, const struct prot *p)
{
	return ftruncate(fd, (off_t)(size > p->end ? size : p->end));
}

/* Puts back the file as it was just before the record's change. */
static int undo_one(int fd, const struct undo_rec *h, const uint8_t *payload, const struct prot *p)
{
	if (h->type == UNDO_WRITE) {
		if (h->plen && restore(fd, payload, h->plen, h->off, p) < 0)
			return -1;
		/* the write grew the file (or would have): back to the old end */
		if (h->off + h->len > h->old_size && set_size(fd, h->old_size, p) < 0)
			return -1;
		return 0;
	}
	/* SIZE: the old size, then what a shrink cut off */
	if (set_size(fd, h->old_size, p) < 0)
		return -1;
	return h->plen ? restore(fd, payload, h->plen, h->off, p) : 0;
}

static bool kept_osync(const struct undo_rec *h)
{
	return h->type == UNDO_WRITE && (h->flags & UNDO_F_OSYNC);
}

static uint64_t changed_bytes(const struct undo_rec *h)
{
	if (h->type == UNDO_WRITE)
		return h->len;
	return h->off > h->old_size ? h->off - h->old_size : h->old_size - h->off;
}

static bool is_data(const struct undo_rec *h)
{
	return h->type == UNDO_WRITE || h->type == UNDO_SIZE;
}

/* The log's data records grouped by file, once: each group is one file's
 * records in log order, so every later step visits a record a bounded
 * number of times, whatever the number of files (a scan of the whole log
 * per file was files x records: minutes for 20,000 files). */
struct group {
	size_t first, n;   /* a range of order[] */
	size_t undo;       /* order[undo ..] are at or after the durable point */
	uint64_t point;
};

struct by_file {
	const struct undo_log *log;
	size_t *order;      /* indices into log->e, by (dev, ino, position) */
	size_t norder;
	struct group *g;    /* the groups with something to undo, by their first undone record */
	size_t ng;
};

unsigned long long rollback_record_visits;

static const struct undo_rec *head_at(const struct by_file *b, size_t k)
{
	rollback_record_visits++;
	return &b->log->e[b->order[k]].h;
}

static const struct undo_log *sort_log; /* qsort has no argument for its comparison */

static int cmp_by_file(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const struct undo_rec *x = &sort_log->e[a].h, *y = &sort_log->e[b].h;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (a > b) - (a < b);
}

static int cmp_group(const void *pa, const void *pb, void *arg)
{
	const struct group *x = pa, *y = pb;
	const size_t *order = arg;
	size_t a = order[x->undo], b = order[y->undo];
	return (a > b) - (a < b);
}

static int group_files(const struct undo_log *log, const struct rb_syncs *s, struct by_file *b)
{
	memset(b, 0, sizeof(*b));
	b->log = log;
	b->order = malloc((log->n + 1) * sizeof(*b->order));
	b->g = malloc((log->n + 1) * sizeof(*b->g));
	if (!b->order || !b->g)
		return -1;
	for (size_t i = 0; i < log->n; i++)
		if (is_data(&log->e[i].h))
			b->order[b->norder++] = i;
	sort_log = log;
	qsort(b->order, b->norder, sizeof(*b->order), cmp_by_file);
	for (size_t k = 0; k < b->norder;) {
		const struct undo_rec *h = head_at(b, k);
		struct group g = { .first = k, .point = rb_file_point(s, h->dev, h->ino) };
		bool any = false;
		/* positions grow with the log: the undone records are a suffix */
		g.undo = k;
		for (; k < b->norder; k++) {
			const struct undo_entry *e = &log->e[b->order[k]];
			if (e->h.dev != h->dev || e->h.ino != h->ino)
				break;
			rollback_record_visits += k > g.first;
			if (e->at < g.point)
				g.undo = k + 1;
			else
				any |= !kept_osync(&e->h);
		}
		g.n = k - g.first;
		if (any)
			b->g[b->ng++] = g;
	}
	qsort_r(b->g, b->ng, sizeof(*b->g), cmp_group, b->order);
	return 0;
}

static void by_file_free(struct by_file *b)
{
	free(b->order);
	free(b->g);
}

/* Counts what is to be undone, before anything is changed: one entry per
 * file, in order of its first undone record. */
static int plan(const struct by_file *b, struct rb_result *r)
{
	r->files = calloc(b->ng + 1, sizeof(*r->files));
	if (!r->files)
		return -1;
	for (size_t i = 0; i < b->ng; i++) {
		const struct group *g = &b->g[i];
		struct rb_file *f = &r->files[r->nfiles++];
		const struct undo_rec *first = head_at(b, g->first);
		*f = (struct rb_file){ .dev = first->dev, .ino = first->ino, .durable = g->point };
		for (size_t k = g->undo; k < g->first + g->n; k++) {
			const struct undo_rec *h = head_at(b, k);
			if (kept_osync(h))
				continue;
			f->records++;
			f->bytes += changed_bytes(h);
			if (!f->oldest_ns || h->mono_ns < f->oldest_ns)
				f->oldest_ns = h->mono_ns;
		}
	}
	return 0;
}

static int open_file(const char *path, uint64_t dev, uint64_t ino)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)) {
		close(fd);
		errno = ESTALE; /* renamed between the index and now */
		return -1;
	}
	return fd;
}

static int short_preimage(const struct undo_entry *e, const struct rb_file *f, struct rb_result *r)
{
	uint64_t want = undo_preimage_len(&e->h);
	if (e->h.plen >= want)
		return 0;
	return rb_note(&r->problems, &r->nproblems, "%s: %s record at byte %llu holds %u of the %llu bytes it "
		       "replaced%s; the rest keep their later content", f->path, undo_type_name(e->h.type),
		       (unsigned long long)e->at, e->h.plen, (unsigned long long)want,
		       e->h.flags & UNDO_F_NO_PREIMAGE ? " (the shim could not read them)" : "");
}

/* A WRITE's pre-image back, but for the pages adversarial writeback
 * says still hold it (below the file's floor at that record). */
static int restore_write(int fd, const struct undo_entry *e, size_t k, const struct rb_writeback *w,
			 const struct prot *p, struct rb_file *f)
{
	uint64_t off = e->h.off, end = off + e->h.plen;
	if (!w->nkeep)
		return restore(fd, e->payload, e->h.plen, off, p);
	for (uint64_t a = off; a < end;) {
		uint64_t b = (a / RB_PAGE + 1) * RB_PAGE;
		if (b > end)
			b = end;
		uint64_t keep_to = a;
		if (rb_writeback_kept(w, k, a / RB_PAGE))
			keep_to = b < w->floor[k] ? b : w->floor[k] > a ? w->floor[k] : a;
		if (keep_to > a) {
			f->kept_bytes += keep_to - a;
			f->kept_pages++;
		}
		if (b > keep_to && restore(fd, e->payload + (keep_to - off), b - keep_to, keep_to, p) < 0)
			return -1;
		a = b;
	}
	return 0;
}

/* Undoes one file's records, newest first. */
static int undo_file(const struct by_file *b, const struct group *g, const struct rb_opts *o, struct rb_file *f,
		     struct rb_result *r)
{
	size_t n = g->first + g->n - g->undo;
	const struct undo_entry **rec = malloc((n + 1) * sizeof(*rec));
	struct rb_writeback w;
	if (!rec)
		return -1;
	for (size_t k = 0; k < n; k++)
		rec[k] = &b->log->e[b->order[g->undo + k]];
	if (rb_writeback_plan(rec, n, o, &w) < 0) {
		rb_writeback_free(&w);
		free(rec);
		return -1;
	}
	int fd = open_file(f->path, f->dev, f->ino);
	int bad = 0;
	if (fd < 0)
		bad = rb_note(&r->problems, &r->nproblems, "%s: cannot open it to roll it back: %s", f->path,
			      strerror(errno));
	struct prot p = { 0 };
	for (size_t k = n; fd >= 0 && k-- > 0 && !bad;) {
		head_at(b, g->undo + k);
		const struct undo_entry *e = rec[k];
		if (kept_osync(&e->h)) {
			bad = protect(&p, e->h.off, e->h.off + e->h.len);
			continue;
		}
		bad = short_preimage(e, f, r);
		int u = 0;
		if (!bad && e->h.type == UNDO_WRITE) {
			u = e->h.plen ? restore_write(fd, e, k, &w, &p, f) : 0;
			/* the write grew the file (or would have): back to the old end */
			if (u == 0 && e->h.off + e->h.len > e->h.old_size)
				u = set_size(fd, e->h.old_size, &p);
		} else if (!bad) {
			u = undo_one(fd, &e->h, e->payload, &p);
		}
		if (u < 0)
			bad = rb_note(&r->problems, &r->nproblems, "%s: undoing the %s record at byte %llu: %s",
				      f->path, undo_type_name(e->h.type), (unsigned long long)e->at, strerror(errno));
	}
	free(p.r);
	free(rec);
	rb_writeback_free(&w);
	if (fd >= 0 && close(fd) < 0 && !bad)
		bad = rb_note(&r->problems, &r->nproblems, "%s: close: %s", f->path, strerror(errno));
	r->kept_bytes += f->kept_bytes;
	r->kept_pages += f->kept_pages;
	return bad < 0 ? -1 : 0;
}

int rb_undo_data(const struct undo_log *log, const struct rb_syncs *s, const struct rb_index *ix,
		 const struct rb_opts *o, struct rb_result *r)
{
	struct by_file b;
	int bad = group_files(log, s, &b) < 0 || plan(&b, r) < 0 ? -1 : 0;
	for (size_t i = 0; i < r->nfiles && !bad; i++) {
		struct rb_file *f = &r->files[i];
		r->records += f->records;
		r->bytes += f->bytes;
		if (!r->oldest_ns || f->oldest_ns < r->oldest_ns)
			r->oldest_ns = f->oldest_ns;
		const char *where = rb_index_find(ix, f->dev, f->ino);
		if (!where) {
			bad = rb_note(&r->problems, &r->nproblems, "file dev %llu inode %llu: %u record(s) to undo but "
				      "it is nowhere under the scope's directories nor in the store",
				      (unsigned long long)f->dev, (unsigned long long)f->ino, f->records);
			continue;
		}
		if (!(f->path = strdup(where)) || undo_file(&b, &b.g[i], o, f, r) < 0)
			bad = -1;
	}
	by_file_free(&b);
	return bad;
}
