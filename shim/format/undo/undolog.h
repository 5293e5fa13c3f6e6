/*
 * undolog.h - strict reader of crash-test mode's undo log
 * (docs/CRASHTEST.md, shim/format/undo/undofmt.h).
 *
 * A cut leaves the log's last record possibly short: that tail is expected
 * and ignored (its change may or may not have happened; rule 1 of the
 * format makes either harmless). Anything wrong before the tail is damage,
 * and the reader refuses the whole log naming the byte: a rollback from a
 * log it cannot trust would report a verdict it cannot back.
 */
#ifndef SYNCSHIM_UNDOLOG_H
#define SYNCSHIM_UNDOLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "undofmt.h"

/* The most one write(2) moves on Linux: no record can be longer. */
#define UNDO_PLEN_MAX 0x7ffff000u
/* Paths in name records, and LIMIT's text, are bounded like paths; a
 * kept link's name is the store's path and a little more. */
#define UNDO_PATH_MAX 4096u
#define UNDO_FIELD_MAX (UNDO_PATH_MAX + 64u)

struct undo_entry {
	struct undo_rec h;        /* the head as written */
	uint64_t at;              /* byte offset of the head in the log */
	const uint8_t *payload;   /* h.plen bytes, inside the log's buffer */
};

struct undo_log {
	const uint8_t *buf;       /* the log's bytes (mapped by undolog_open, or the caller's) */
	size_t len;
	struct undo_entry *e;     /* the complete records, in log order */
	size_t n;
	uint64_t end;             /* where the last complete record ends */
	uint64_t tail;            /* bytes of a cut-short last record after end (0: none) */
	bool full;                /* a FULL record: the log stopped recording there */
	size_t after_full;        /* records after FULL (other processes' races) */
	void *map;                /* what undolog_open mapped, to unmap */
	size_t map_len;
};

/*
 * Reads a log from memory (the buffer must outlive the log). 0, or -1 and
 * one line "byte N: what is wrong" in err; *log is then empty.
 */
int undolog_parse(const void *buf, size_t len, struct undo_log *log, char *err, size_t errlen);
/* The same from a file (mapped read-only); the message starts "PATH: ". */
int undolog_open(const char *path, struct undo_log *log, char *err, size_t errlen);
void undolog_free(struct undo_log *log);

/* The pre-image a WRITE or SIZE carries: the bytes of the file it
 * overwrites or cuts off (0 for other records). A shorter payload is its
 * prefix: the shim could not read the rest (and says so in a LIMIT). */
uint64_t undo_preimage_len(const struct undo_rec *h);

/* "WRITE", "DURABLE" ...; "?" for an unknown type. */
const char *undo_type_name(unsigned type);

/*
 * The NUL-separated fields of a name record's payload (CREATE: path;
 * RENAME: old, new, saved; UNLINK: path, saved), copied into f[i] of
 * UNDO_FIELD_MAX bytes each; a missing field is "". Returns the number of
 * fields present, or -1 if one does not fit.
 */
int undo_fields(const struct undo_entry *e, char (*f)[UNDO_FIELD_MAX], int max);

/*
 * Following a log while it grows (syncshim crashtest's after-syncs cut):
 * reads record heads from pos on, skipping payloads, and counts the
 * DURABLE and DURABLE_DEV records among them. Stops at a record not yet
 * complete or not valid (the rollback's strict read says which).
 */
struct undo_follow {
	int fd;
	uint64_t pos;             /* the next head's offset */
	unsigned syncs;           /* DURABLE + DURABLE_DEV seen so far */
	unsigned records;
};

void undo_follow_init(struct undo_follow *f, int fd);
void undo_follow_poll(struct undo_follow *f);

#endif
