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

/* The result's entry for (dev, ino), made on first use. */
static struct rb_file *file_of(struct rb_result *r, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < r->nfiles; i++)
		if (r->files[i].dev == dev && r->files[i].ino == ino)
			return &r->files[i];
	struct rb_file *f = realloc(r->files, (r->nfiles + 1) * sizeof(*f));
	if (!f)
		return NULL;
	r->files = f;
	f = &r->files[r->nfiles++];
	*f = (struct rb_file){ .dev = dev, .ino = ino };
	return f;
}

/* Counts what is to be undone, before anything is changed. */
static int plan(const struct undo_log *log, const struct rb_syncs *s, struct rb_result *r)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct undo_entry *e = &log->e[i];
		if (!is_data(&e->h) || kept_osync(&e->h))
			continue;
		uint64_t point = rb_file_point(s, e->h.dev, e->h.ino);
		if (e->at < point)
			continue;
		struct rb_file *f = file_of(r, e->h.dev, e->h.ino);
		if (!f)
			return -1;
		f->durable = point;
		f->records++;
		f->bytes += changed_bytes(&e->h);
		if (!f->oldest_ns || e->h.mono_ns < f->oldest_ns)
			f->oldest_ns = e->h.mono_ns;
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

/* Undoes one file's records, newest first. */
static int undo_file(const struct undo_log *log, struct rb_file *f, struct rb_result *r)
{
	int fd = open_file(f->path, f->dev, f->ino);
	if (fd < 0)
		return rb_note(&r->problems, &r->nproblems, "%s: cannot open it to roll it back: %s", f->path,
			       strerror(errno));
	struct prot p = { 0 };
	int bad = 0;
	for (size_t i = log->n; i-- > 0 && !bad;) {
		const struct undo_entry *e = &log->e[i];
		if (!is_data(&e->h) || e->h.dev != f->dev || e->h.ino != f->ino || e->at < f->durable)
			continue;
		if (kept_osync(&e->h)) {
			bad = protect(&p, e->h.off, e->h.off + e->h.len);
			continue;
		}
		bad = short_preimage(e, f, r);
		if (!bad && undo_one(fd, &e->h, e->payload, &p) < 0)
			bad = rb_note(&r->problems, &r->nproblems, "%s: undoing the %s record at byte %llu: %s",
				      f->path, undo_type_name(e->h.type), (unsigned long long)e->at, strerror(errno));
	}
	free(p.r);
	if (close(fd) < 0 && !bad)
		bad = rb_note(&r->problems, &r->nproblems, "%s: close: %s", f->path, strerror(errno));
	return bad < 0 ? -1 : 0;
}

int rb_undo_data(const struct undo_log *log, const struct rb_syncs *s, const struct rb_index *ix,
		 struct rb_result *r)
{
	if (plan(log, s, r) < 0)
		return -1;
	for (size_t i = 0; i < r->nfiles; i++) {
		struct rb_file *f = &r->files[i];
		r->records += f->records;
		r->bytes += f->bytes;
		if (!r->oldest_ns || f->oldest_ns < r->oldest_ns)
			r->oldest_ns = f->oldest_ns;
		const char *where = rb_index_find(ix, f->dev, f->ino);
		if (!where) {
			if (rb_note(&r->problems, &r->nproblems, "file dev %llu inode %llu: %u record(s) to undo but "
				    "it is nowhere under the scope's directories nor in the store",
				    (unsigned long long)f->dev, (unsigned long long)f->ino, f->records) < 0)
				return -1;
			continue;
		}
		if (!(f->path = strdup(where)) || undo_file(log, f, r) < 0)
			return -1;
	}
	return 0;
}
