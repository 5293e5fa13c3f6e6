/*
 * undolog.c - strict reader of the undo log (undolog.h).
 *
 * Every head is checked field by field before its payload is looked at,
 * and every payload length is bounded by what its type allows (a WRITE's
 * pre-image can be no longer than the part of the file it overwrote), so a
 * damaged length is caught as damage instead of passing for the cut.
 */
#include "undolog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logfmt.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the undo log is little-endian, read as such");

#define MAGIC_LEN 8

/* Byte offsets of the head's fields, for naming the byte that is wrong. */
#define AT_TYPE 4
#define AT_FLAGS 6
#define AT_PLEN 12
#define AT_OFF 40
#define AT_CRC 64
#define AT_RESERVED 68

static const char *const type_names[UNDO_TYPE_LIMIT] = {
	[UNDO_WRITE] = "WRITE",     [UNDO_SIZE] = "SIZE",       [UNDO_DURABLE] = "DURABLE",
	[UNDO_DURABLE_DEV] = "DURABLE_DEV", [UNDO_CREATE] = "CREATE", [UNDO_RENAME] = "RENAME",
	[UNDO_UNLINK] = "UNLINK",   [UNDO_DIRSYNC] = "DIRSYNC", [UNDO_FULL] = "FULL",
	[UNDO_LIMIT] = "LIMIT",
};

const char *undo_type_name(unsigned type)
{
	return type > 0 && type < UNDO_TYPE_LIMIT ? type_names[type] : "?";
}

static int fail(char *err, size_t errlen, uint64_t byte, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, uint64_t byte, const char *fmt, ...)
{
	int n = snprintf(err, errlen, "byte %llu: ", (unsigned long long)byte);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* UINT64_MAX when the fields themselves are impossible. */
static uint64_t preimage_max(const struct undo_rec *h)
{
	if (h->type == UNDO_WRITE) {
		if (h->off + h->len < h->off)
			return UINT64_MAX;
		uint64_t end = h->off + h->len < h->old_size ? h->off + h->len : h->old_size;
		return end > h->off ? end - h->off : 0;
	}
	return h->off < h->old_size ? h->old_size - h->off : 0; /* SIZE: off is the new size */
}

/* The most plen may be for this head; -1 (with err) if the head itself is wrong. */
static int plen_bound(const struct undo_rec *h, uint64_t at, uint64_t *max, char *err, size_t errlen)
{
	switch (h->type) {
	case UNDO_WRITE:
	case UNDO_SIZE:
		*max = preimage_max(h);
		if (*max == UINT64_MAX)
			return fail(err, errlen, at + AT_OFF, "%s record at byte %llu: off + len overflows",
				    undo_type_name(h->type), (unsigned long long)at);
		return 0;
	case UNDO_DURABLE:
	case UNDO_DURABLE_DEV:
	case UNDO_DIRSYNC:
		/* upto is the log's size when the sync began, before this record. */
		if (h->off < MAGIC_LEN || h->off > at)
			return fail(err, errlen, at + AT_OFF, "%s record at byte %llu: upto %llu is not in the log "
				    "before it", undo_type_name(h->type), (unsigned long long)at,
				    (unsigned long long)h->off);
		*max = 0;
		return 0;
	case UNDO_FULL:
		*max = 0;
		return 0;
	case UNDO_CREATE: /* the path and its NUL */
	case UNDO_LIMIT:
		*max = UNDO_FIELD_MAX;
		return 0;
	default: /* RENAME (old, new, saved), UNLINK (path, saved) */
		*max = 3 * (uint64_t)UNDO_FIELD_MAX;
		return 0;
	}
}

/* Checks a complete 72-byte head at `at`. */
static int check_head(const struct undo_rec *h, uint64_t at, char *err, size_t errlen)
{
	if (h->magic != UNDO_REC_MAGIC)
		return fail(err, errlen, at, "no record starts here (magic 0x%08x, want 0x%08x)", h->magic,
			    UNDO_REC_MAGIC);
	if (h->type == 0 || h->type >= UNDO_TYPE_LIMIT)
		return fail(err, errlen, at + AT_TYPE, "record at byte %llu has unknown type %u",
			    (unsigned long long)at, h->type);
	unsigned allowed = h->type == UNDO_WRITE ? UNDO_F_OSYNC | UNDO_F_NO_PREIMAGE
			   : h->type == UNDO_SIZE ? UNDO_F_NO_PREIMAGE : 0;
	if (h->flags & ~allowed)
		return fail(err, errlen, at + AT_FLAGS, "%s record at byte %llu: flags 0x%x, at most 0x%x",
			    undo_type_name(h->type), (unsigned long long)at, h->flags, allowed);
	if (h->reserved != 0)
		return fail(err, errlen, at + AT_RESERVED, "%s record at byte %llu: reserved 0x%x, want 0",
			    undo_type_name(h->type), (unsigned long long)at, h->reserved);
	uint64_t max = 0; /* plen_bound sets it; gcc -O1 -fsanitize=thread cannot tell */
	if (plen_bound(h, at, &max, err, errlen) < 0)
		return -1;
	if (h->plen > max || h->plen > UNDO_PLEN_MAX)
		return fail(err, errlen, at + AT_PLEN, "%s record at byte %llu: payload of %u bytes, at most %llu "
			    "for this record", undo_type_name(h->type), (unsigned long long)at, h->plen,
			    (unsigned long long)(max < UNDO_PLEN_MAX ? max : UNDO_PLEN_MAX));
	return 0;
}

static uint32_t record_crc(const struct undo_rec *h, const uint8_t *payload)
{
	struct undo_rec z = *h;
	z.crc = 0;
	return logfmt_crc32c(logfmt_crc32c(0, &z, sizeof(z)), payload, h->plen);
}

/* The bytes left at `at` are fewer than a record: the cut, if what is
 * there could begin a record. */
static int check_short_head(const uint8_t *p, size_t left, uint64_t at, char *err, size_t errlen)
{
	uint32_t magic = UNDO_REC_MAGIC;
	size_t n = left < sizeof(magic) ? left : sizeof(magic);
	if (memcmp(p, &magic, n) != 0)
		return fail(err, errlen, at, "%zu bytes at the end that do not begin a record", left);
	return 0;
}

/* Appends the complete record at `at` to the log; 1 if the bytes end
 * inside it (the cut), 0 if read, -1 on damage. */
static int read_record(struct undo_log *log, uint64_t at, size_t *cap, char *err, size_t errlen)
{
	size_t left = log->len - at;
	if (left < sizeof(struct undo_rec))
		return check_short_head(log->buf + at, left, at, err, errlen) < 0 ? -1 : 1;
	struct undo_rec h;
	memcpy(&h, log->buf + at, sizeof(h));
	if (check_head(&h, at, err, errlen) < 0)
		return -1;
	if (left - sizeof(h) < h.plen)
		return 1;
	const uint8_t *payload = log->buf + at + sizeof(h);
	if (record_crc(&h, payload) != h.crc)
		return fail(err, errlen, at + AT_CRC, "%s record at byte %llu: CRC mismatch",
			    undo_type_name(h.type), (unsigned long long)at);
	if (log->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct undo_entry *e = realloc(log->e, ncap * sizeof(*e));
		if (!e)
			return fail(err, errlen, at, "out of memory after %zu records", log->n);
		log->e = e;
		*cap = ncap;
	}
	log->e[log->n++] = (struct undo_entry){ .h = h, .at = at, .payload = payload };
	if (log->full)
		log->after_full++;
	if (h.type == UNDO_FULL)
		log->full = true;
	return 0;
}

uint64_t undo_preimage_len(const struct undo_rec *h)
{
	uint64_t n = h->type == UNDO_WRITE || h->type == UNDO_SIZE ? preimage_max(h) : 0;
	return n == UINT64_MAX ? 0 : n;
}

int undolog_parse(const void *buf, size_t len, struct undo_log *log, char *err, size_t errlen)
{
	memset(log, 0, sizeof(*log));
	log->buf = buf;
	log->len = len;
	if (len < MAGIC_LEN || memcmp(buf, UNDO_MAGIC, MAGIC_LEN) != 0)
		return fail(err, errlen, 0, "not an undo log (it begins with %s, not \"SSUNDO1\\n\")",
			    len < MAGIC_LEN ? "fewer than 8 bytes" : "other bytes");
	size_t cap = 0;
	uint64_t at = MAGIC_LEN;
	while (at < len) {
		int r = read_record(log, at, &cap, err, errlen);
		if (r < 0) {
			free(log->e);
			memset(log, 0, sizeof(*log));
			return -1;
		}
		if (r > 0)
			break;
		at += sizeof(struct undo_rec) + log->e[log->n - 1].h.plen;
	}
	log->end = at;
	log->tail = len - at;
	return 0;
}

int undolog_open(const char *path, struct undo_log *log, char *err, size_t errlen)
{
	memset(log, 0, sizeof(*log));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", path, fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	void *map = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	int e = errno;
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(e));
		return -1;
	}
	char why[512];
	if (undolog_parse(map ? map : "", len, log, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		if (map)
			munmap(map, len);
		return -1;
	}
	log->map = map;
	log->map_len = len;
	return 0;
}

void undolog_free(struct undo_log *log)
{
	free(log->e);
	if (log->map)
		munmap(log->map, log->map_len);
	memset(log, 0, sizeof(*log));
}

int undo_fields(const struct undo_entry *e, char (*f)[UNDO_FIELD_MAX], int max)
{
	const char *p = (const char *)e->payload, *end = p + e->h.plen;
	int n = 0;
	for (int i = 0; i < max; i++)
		f[i][0] = '\0';
	while (p < end && n < max) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t flen = nul ? (size_t)(nul - p) : (size_t)(end - p);
		if (flen >= UNDO_FIELD_MAX)
			return -1;
		memcpy(f[n], p, flen);
		f[n++][flen] = '\0';
		p += flen + (nul != NULL);
	}
	return n;
}

void undo_follow_init(struct undo_follow *f, int fd)
{
	*f = (struct undo_follow){ .fd = fd, .pos = MAGIC_LEN };
}

void undo_follow_poll(struct undo_follow *f)
{
	for (;;) {
		struct undo_rec h;
		if (pread(f->fd, &h, sizeof(h), (off_t)f->pos) != (ssize_t)sizeof(h))
			return;
		char err[256];
		if (check_head(&h, f->pos, err, sizeof(err)) < 0)
			return;
		f->pos += sizeof(h) + h.plen; /* a payload still being written: the next head is not there yet */
		f->records++;
		if (h.type == UNDO_DURABLE || h.type == UNDO_DURABLE_DEV)
			f->syncs++;
	}
}
