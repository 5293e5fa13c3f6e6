/*
 * fuzz_undo.c - libFuzzer target: crash-test mode's undo log reader
 * (shim/format/undo/undolog.c), its follower (undo_follow_*), and the one part of the
 * rollback that needs no files: the durable points computed from the
 * log's sync records (tools/rollback/rb_syncs.c).
 *
 * Input: one flags byte, two bytes (LE) choosing a cut point, then the
 * bytes of an undo.log. Unless flag RAW is set, the log is fixed up first
 * so that mutations get past the checksums: the file magic, and for every
 * record whose head is complete the record magic, a payload length that
 * fits what is left (unless CUT: then a length that does not fit is kept,
 * and that record is the cut tail) and its CRC32C.
 *
 * What must hold:
 * - a refusal is one line "byte N: ..." with N inside the log, and the log
 *   cut just before byte N reads (the damage starts where it is named);
 * - an accepted log re-encodes, record by record with CRCs computed here,
 *   to exactly its bytes up to `end`; every record is in order, its head
 *   valid (magic, type, flags, reserved) and its payload within the
 *   bounds its type allows; what follows `end` is a cut record's start;
 * - the same log cut anywhere (the cut point chosen by the input) still
 *   reads, as the records wholly before the cut: a power cut is never
 *   taken for damage;
 * - undo_fields splits name payloads into fields that are the payload;
 * - undo_follow, reading the same bytes from a file, counts the same
 *   records and syncs;
 * - the durable points (rb_file_point, rb_dir_point, rb_dev_point) equal
 *   those computed by brute force from the records.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "logfmt.h"
#include "rb_internal.h"
#include "undolog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { RAW = 1, CUT = 2 };

#define HEAD sizeof(struct undo_rec)
#define MAGIC_LEN 8

static void die_unless(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_undo: %s\n", what);
		abort();
	}
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rec_crc(const struct undo_rec *h, const uint8_t *payload)
{
	struct undo_rec z = *h;
	z.crc = 0;
	return logfmt_crc32c(logfmt_crc32c(0, &z, sizeof(z)), payload, h->plen);
}

/* File magic; per complete head: record magic, a plen that fits, CRC. */
static void fix_up(uint8_t *d, size_t n, unsigned flags)
{
	if (n < MAGIC_LEN)
		return;
	memcpy(d, UNDO_MAGIC, MAGIC_LEN);
	for (size_t at = MAGIC_LEN; n - at >= HEAD;) {
		uint8_t *b = d + at;
		size_t room = n - at - HEAD;
		uint32_t plen = get32(b + 12);

		put32(b, UNDO_REC_MAGIC);
		if (plen > room) {
			if (flags & CUT)
				return; /* the cut: its payload ends past the bytes */
			plen = (uint32_t)(plen % (room + 1));
			put32(b + 12, plen);
		}
		struct undo_rec h;
		memcpy(&h, b, sizeof(h));
		put32(b + 64, rec_crc(&h, b + HEAD));
		at += HEAD + plen;
	}
}

/* "byte N: what", one line, N < len (the byte named is in the log). */
static uint64_t check_error(const char *err, size_t len)
{
	char *end;
	die_unless(!strncmp(err, "byte ", 5), "error does not start with \"byte \"");
	unsigned long long b = strtoull(err + 5, &end, 10);
	die_unless(end != err + 5 && !strncmp(end, ": ", 2) && end[2], "error does not name a byte");
	die_unless(!strchr(err, '\n'), "error is more than one line");
	die_unless(b < (len ? len : 1), "error names a byte past the log");
	return b;
}

static int parse(const uint8_t *buf, size_t len, struct undo_log *log, char *err, size_t errlen)
{
	err[0] = '\0';
	int rc = undolog_parse(buf, len, log, err, errlen);
	if (rc != 0) {
		check_error(err, len);
		die_unless(log->n == 0 && log->e == NULL, "a refused log keeps records");
	}
	return rc;
}

/* The head alone, as check_head in undolog.c ought to see it. */
static void check_head(const struct undo_entry *e)
{
	const struct undo_rec *h = &e->h;
	die_unless(h->magic == UNDO_REC_MAGIC, "record magic");
	die_unless(h->type > 0 && h->type < UNDO_TYPE_LIMIT, "record type");
	die_unless(strcmp(undo_type_name(h->type), "?") != 0, "a known type without a name");
	unsigned allowed = h->type == UNDO_WRITE ? UNDO_F_OSYNC | UNDO_F_NO_PREIMAGE
			   : h->type == UNDO_SIZE ? UNDO_F_NO_PREIMAGE : h->type == UNDO_LIMIT ? UNDO_F_BLIND : 0;
	die_unless(!(h->flags & ~allowed), "record flags");
	die_unless(h->reserved == 0, "record reserved");
	die_unless(h->plen <= UNDO_PLEN_MAX, "plen over UNDO_PLEN_MAX");
	switch (h->type) {
	case UNDO_WRITE:
		die_unless(h->off + h->len >= h->off, "WRITE off + len overflows");
		die_unless(h->plen <= undo_preimage_len(h) && undo_preimage_len(h) <= h->len, "WRITE plen bound");
		break;
	case UNDO_SIZE:
		die_unless(h->plen <= undo_preimage_len(h), "SIZE plen bound");
		die_unless(undo_preimage_len(h) == (h->off < h->old_size ? h->old_size - h->off : 0), "SIZE pre-image");
		break;
	case UNDO_DURABLE:
	case UNDO_DURABLE_DEV:
	case UNDO_DIRSYNC:
		die_unless(h->plen == 0, "sync record with a payload");
		die_unless(h->off >= MAGIC_LEN && h->off <= e->at, "upto not in the log before its record");
		break;
	case UNDO_FULL:
		die_unless(h->plen == 0, "FULL with a payload");
		break;
	case UNDO_CREATE:
	case UNDO_LIMIT:
		die_unless(h->plen <= UNDO_FIELD_MAX, "CREATE/LIMIT plen bound");
		break;
	default:
		die_unless(h->plen <= 3 * UNDO_FIELD_MAX, "RENAME/UNLINK plen bound");
	}
	if (h->type != UNDO_WRITE && h->type != UNDO_SIZE)
		die_unless(undo_preimage_len(h) == 0, "a pre-image for a record that holds none");
}

/* Order, bounds, and the bytes again: magic, then each head with the CRC
 * computed here, then its payload, must be the log up to `end`. */
static void check_log(const struct undo_log *log, const uint8_t *buf, size_t len)
{
	uint8_t *out = malloc(log->end ? log->end : 1);
	uint64_t at = MAGIC_LEN;
	size_t after_full = 0;
	bool full = false;

	die_unless(out != NULL, "out of memory");
	die_unless(log->buf == buf && log->len == len, "buffer");
	memcpy(out, UNDO_MAGIC, MAGIC_LEN);
	for (size_t i = 0; i < log->n; i++) {
		const struct undo_entry *e = &log->e[i];
		die_unless(e->at == at, "records not back to back");
		die_unless(e->at + HEAD + e->h.plen <= len, "record ends past the buffer");
		die_unless(e->payload == buf + e->at + HEAD, "payload not after its head");
		check_head(e);
		struct undo_rec h = e->h;
		die_unless(rec_crc(&h, e->payload) == h.crc, "accepted a record with a bad CRC");
		memcpy(out + at, &h, HEAD);
		memcpy(out + at + HEAD, e->payload, h.plen);
		at += HEAD + h.plen;
		after_full += full;
		full |= h.type == UNDO_FULL;
	}
	die_unless(log->end == at && log->end <= len, "end");
	die_unless(log->tail == len - log->end, "tail");
	die_unless(log->full == full && log->after_full == after_full, "full / after_full");
	die_unless(memcmp(out, buf, log->end) == 0, "does not re-encode to its bytes");
	free(out);
	if (log->tail) { /* the cut: what is there could begin a record */
		uint32_t magic = UNDO_REC_MAGIC;
		size_t k = log->tail < 4 ? log->tail : 4;
		die_unless(memcmp(buf + log->end, &magic, k) == 0, "tail that does not begin a record");
		if (log->tail >= HEAD)
			die_unless(get32(buf + log->end + 12) > log->tail - HEAD, "a complete last record left as tail");
	}
}

/* The log cut at `cut` reads as the records wholly before it. */
static void check_cut(const struct undo_log *log, const uint8_t *buf, size_t cut)
{
	struct undo_log c;
	char err[512];
	size_t k = 0;

	while (k < log->n && log->e[k].at + HEAD + log->e[k].h.plen <= cut)
		k++;
	die_unless(parse(buf, cut, &c, err, sizeof(err)) == 0, "a cut log taken for damage");
	die_unless(c.n == k, "a cut log lost or gained records");
	for (size_t i = 0; i < k; i++)
		die_unless(c.e[i].at == log->e[i].at && !memcmp(&c.e[i].h, &log->e[i].h, HEAD), "cut log records");
	undolog_free(&c);
}

/* Name payloads: the fields undo_fields returns are the payload's. */
static void check_fields(const struct undo_log *log)
{
	static char f[3][UNDO_FIELD_MAX];

	for (size_t i = 0; i < log->n; i++) {
		const struct undo_entry *e = &log->e[i];
		unsigned t = e->h.type;
		if (t != UNDO_CREATE && t != UNDO_RENAME && t != UNDO_UNLINK && t != UNDO_LIMIT)
			continue;
		int n = undo_fields(e, f, 3);
		die_unless(n >= -1 && n <= 3, "undo_fields count");
		const char *p = (const char *)e->payload, *end = p + e->h.plen;
		for (int k = 0; k < n; k++) {
			size_t fl = strnlen(f[k], UNDO_FIELD_MAX);
			die_unless(fl < UNDO_FIELD_MAX, "field not terminated");
			die_unless(fl <= (size_t)(end - p) && !memcmp(f[k], p, fl), "field not the payload's");
			p += fl;
			die_unless(p == end || *p == '\0', "field cut short of its NUL");
			p += p < end;
		}
		if (n >= 0 && n < 3)
			die_unless(p == end, "payload left over with room for more fields");
	}
}

/* undo_follow over a file holding the same bytes. */
static void check_follow(const uint8_t *buf, size_t len, const struct undo_log *log)
{
	static int fd = -1;
	struct undo_follow f;

	if (fd < 0)
		fd = memfd_create("fuzz_undo", MFD_CLOEXEC);
	die_unless(fd >= 0 && ftruncate(fd, 0) == 0, "memfd");
	die_unless(pwrite(fd, buf, len, 0) == (ssize_t)len, "memfd write");
	undo_follow_init(&f, fd);
	undo_follow_poll(&f);
	struct undo_follow again = f;
	undo_follow_poll(&again);
	die_unless(again.pos == f.pos && again.records == f.records, "a second poll of the same bytes moved");
	if (!log)
		return;
	unsigned syncs = 0;
	for (size_t i = 0; i < log->n; i++)
		syncs += log->e[i].h.type == UNDO_DURABLE || log->e[i].h.type == UNDO_DURABLE_DEV;
	die_unless(f.syncs == syncs, "follow counts other syncs");
	if (log->tail >= HEAD) { /* a complete head whose payload is cut */
		die_unless(f.records == log->n + 1, "follow skipped the cut record's head");
		die_unless(f.pos == log->end + HEAD + get32(buf + log->end + 12), "follow pos past the cut");
	} else {
		die_unless(f.records == log->n && f.pos == (log->n ? log->end : MAGIC_LEN), "follow records / pos");
	}
}

/* ---- the durable points, by brute force ---- */

static uint64_t ref_point(const struct undo_log *log, unsigned type, uint64_t dev, uint64_t ino)
{
	uint64_t best = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct undo_rec *h = &log->e[i].h;
		bool hit = (h->type == type && h->dev == dev && h->ino == ino) ||
			   (h->type == UNDO_DURABLE_DEV && (h->dev == 0 || h->dev == dev));
		if (hit && h->off > best)
			best = h->off;
	}
	return best;
}

static uint64_t ref_dev_point(const struct undo_log *log, uint64_t dev)
{
	uint64_t best = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct undo_rec *h = &log->e[i].h;
		bool sync = h->type == UNDO_DURABLE || h->type == UNDO_DURABLE_DEV || h->type == UNDO_DIRSYNC;
		if (sync && (h->dev == dev || h->dev == 0) && h->off > best)
			best = h->off;
	}
	return best;
}

static void sorted_unique(const struct rb_upto *t, size_t n)
{
	for (size_t i = 1; i < n; i++)
		die_unless(t[i - 1].dev < t[i].dev || (t[i - 1].dev == t[i].dev && t[i - 1].ino < t[i].ino),
			   "sync table not sorted or not unique");
}

static void check_syncs(const struct undo_log *log)
{
	struct rb_syncs s;

	die_unless(rb_syncs_collect(log, &s) == 0, "rb_syncs_collect");
	sorted_unique(s.file, s.nfile);
	sorted_unique(s.dir, s.ndir);
	sorted_unique(s.dev, s.ndev);
	sorted_unique(s.any, s.nany);
	for (size_t i = 0; i <= log->n; i++) {
		/* every (dev, ino) of the log, and (0, 0) */
		uint64_t dev = i < log->n ? log->e[i].h.dev : 0, ino = i < log->n ? log->e[i].h.ino : 0;
		uint64_t fp = rb_file_point(&s, dev, ino), dp = rb_dir_point(&s, dev, ino), vp = rb_dev_point(&s, dev);
		die_unless(fp == ref_point(log, UNDO_DURABLE, dev, ino), "rb_file_point");
		die_unless(dp == ref_point(log, UNDO_DIRSYNC, dev, ino), "rb_dir_point");
		die_unless(vp == ref_dev_point(log, dev), "rb_dev_point");
		die_unless(vp >= fp && vp >= dp, "a device point below a file's or directory's");
		die_unless(fp <= log->end && dp <= log->end && vp <= log->end, "a durable point past the log");
		die_unless(rb_file_point(&s, dev, ino + 1) <= vp, "a file point above its device's");
	}
	rb_syncs_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	unsigned flags = data[0];
	size_t sel = (size_t)(data[1] | data[2] << 8);
	data += 3;
	size -= 3;
	/* the exact size, so ASan sees a read one past the log */
	uint8_t *buf = malloc(size ? size : 1);
	die_unless(buf != NULL, "out of memory");
	memcpy(buf, data, size);
	if (!(flags & RAW))
		fix_up(buf, size, flags);

	struct undo_log log;
	char err[512];
	if (parse(buf, size, &log, err, sizeof(err)) != 0) {
		uint64_t b = check_error(err, size);
		if (b >= MAGIC_LEN) { /* the bytes before the damage are a (cut) log */
			struct undo_log c;
			die_unless(parse(buf, (size_t)b, &c, err, sizeof(err)) == 0, "the log before the damage is refused");
			undolog_free(&c);
		}
		check_follow(buf, size, NULL);
		free(buf);
		return 0;
	}
	check_log(&log, buf, size);
	check_cut(&log, buf, MAGIC_LEN + sel % (size - MAGIC_LEN + 1));
	check_fields(&log);
	check_follow(buf, size, &log);
	check_syncs(&log);
	undolog_free(&log);
	free(buf);
	return 0;
}
