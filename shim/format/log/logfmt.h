/*
 * logfmt.h - the latency log's on-disk format: constants, the op list and
 * block encoders. docs/LOGFORMAT.md is the specification; this is its
 * writer side (shim/format/log/logread.c is the strict reader).
 *
 * Pure code for use inside other people's processes: no allocation, no
 * stdio, no locks, no system calls. Every encoder fills a caller buffer
 * with one complete block (24-byte header + payload, CRCs done) and
 * returns its length, or 0 when cap is too small; the logger thread then
 * write()s the block in one call, so a log cut short by SIGKILL ends at a
 * block boundary or with one partial block that a reader detects.
 *
 * The caller owns the sequence numbers: the HEADER block is seq 0 and each
 * following block takes the next number.
 */
#ifndef SYNCSHIM_LOGFMT_H
#define SYNCSHIM_LOGFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"

#define LOGFMT_MAGIC 0x474c5353u        /* bytes "SSLG" */
#define LOGFMT_MAJOR 1                  /* readers reject any other major */
#define LOGFMT_MINOR 2                  /* newer minors only append; 1 added RISK, 2 record flags */
#define LOGFMT_BLOCK_HDR 24
#define LOGFMT_MAX_PAYLOAD (4u << 20)   /* readers reject longer blocks */
#define LOGFMT_RECORD_SIZE 40
#define LOGFMT_IVENT_SIZE 40           /* one op of an INTERVAL */
#define LOGFMT_RISK_SIZE 48            /* one file of a RISK block */
#define LOGFMT_MAX_HIST_PARTS 4096      /* histograms in one HIST set */

/* Block types. Numbers are on disk: never reuse one. */
enum logfmt_block {
	LOGBLK_HEADER = 1,
	LOGBLK_FILE = 2,
	LOGBLK_RECORDS = 3,
	LOGBLK_INTERVAL = 4,
	LOGBLK_HIST = 5,
	LOGBLK_EVENT = 6,
	LOGBLK_DROPS = 7,
	LOGBLK_POLICY = 8,
	LOGBLK_TRAILER = 9,
	LOGBLK_RISK = 10,           /* since minor 1 */
	LOGBLK_LAST = LOGBLK_RISK
};

/*
 * Interposed calls, and the flusher's own real syncs kept apart from the
 * app's. Numbers are on disk: append new ops before LOGOP_COUNT (up to
 * 255), never renumber.
 */
enum logop {
	LOGOP_WRITE = 0,
	LOGOP_PWRITE,
	LOGOP_WRITEV,
	LOGOP_PWRITEV,
	LOGOP_FSYNC,
	LOGOP_FDATASYNC,
	LOGOP_MSYNC,
	LOGOP_SYNC_FILE_RANGE,
	LOGOP_SYNCFS,
	LOGOP_SYNC,
	LOGOP_OPEN,
	LOGOP_CLOSE,
	LOGOP_RENAME,
	LOGOP_REAL_FSYNC,           /* issued by the flusher, not the app */
	LOGOP_REAL_FDATASYNC,
	LOGOP_REAL_SYNC_FILE_RANGE,
	LOGOP_COUNT
};

const char *logop_name(unsigned op);       /* "?" if unknown */
int logop_parse(const char *name);          /* -1 if unknown */
bool logop_is_write(unsigned op);           /* bytes are data written */
bool logop_is_sync(unsigned op);            /* app sync calls */
bool logop_is_real(unsigned op);            /* flusher's real syncs */

/*
 * Event kinds. Numbers are on disk: never reuse one. 0 and 4 ("info" and
 * "warning") were defined in 1.0 but never written: retired, and still
 * accepted by readers, so no 1.0 log turns invalid.
 */
enum logfmt_event_kind {
	LOGEV_RELOAD = 1,        /* policy reloaded (a POLICY block follows) */
	LOGEV_SYNC_ERROR = 2,    /* a real sync failed: err, file_id */
	LOGEV_CONFIG_ERROR = 3,  /* ini rejected; text is the parser's message */
};
#define LOGEV_KIND_LIMIT 5   /* kinds below it are valid in a log of this minor */

const char *logev_name(unsigned kind);     /* "?" if unknown or retired */

/* One rule of the policy snapshot; index 0 is always the default rule. */
struct logfmt_rule {
	const char *name;    /* "" for the default */
	const char *glob;    /* "" for the default */
	uint8_t sync;        /* enum sync_policy */
};

/* The rule table of a policy snapshot: out[0] is its default rule, then
 * its rules in order; strings point into p. out must have room for
 * POLICY_MAX_RULES + 1 entries. Returns the count, 1 + p->nrules. */
struct policy;
uint16_t logfmt_rules_from_policy(const struct policy *p, struct logfmt_rule *out);

struct logfmt_header {
	uint32_t pid, ppid;
	uint8_t log_mode;            /* enum log_mode */
	uint64_t start_wall_ns;      /* CLOCK_REALTIME ...      */
	uint64_t start_mono_ns;      /* ... and CLOCK_MONOTONIC at one instant */
	const char *hostname;
	const char *kernel;          /* uname release */
	const char *cmdline;         /* arguments joined by spaces */
	const struct logfmt_rule *rules;
	uint16_t nrules;             /* >= 1 */
	const char *policy_ini;      /* policy_format() text */
};

struct logfmt_file {
	uint32_t id;                 /* >= 1, never reused within a log */
	uint16_t rule;               /* index into the current rule table */
	uint64_t dev, ino;
	const char *rule_name;
	const char *fstype;          /* "ext4", "xfs", "tmpfs", ... */
	const char *path;            /* absolute */
};

/*
 * One call, exactly 40 bytes on disk (and in memory, so rings can hold
 * these and the encoder copies field by field). start_ns is
 * CLOCK_MONOTONIC at entry; result is the return value, or -errno when
 * the call failed (write sizes fit: Linux caps one write at 0x7ffff000).
 */
struct logfmt_record {
	uint64_t start_ns;
	uint64_t dur_ns;
	uint64_t bytes;              /* written if result >= 0, else requested */
	int32_t result;
	uint32_t file_id;            /* 0: no file (sync, failed open) */
	uint32_t tid;
	uint8_t op;                  /* enum logop */
	uint8_t flags;               /* 0: no flag is defined */
	uint16_t rule;
};
_Static_assert(sizeof(struct logfmt_record) == LOGFMT_RECORD_SIZE, "record layout");

/* Record flag bits a reader accepts in a log of this minor. Bit 0 ("the
 * shim answered without the real call") was defined in 1.0 but never set:
 * retired, still accepted, never reused. Since 1.2, what a profile needs
 * to know about a file beyond its calls (synclat suggest): the flags an
 * open asked for (before any policy changed them), and which syncs were
 * of a directory (those records have file id 0: the shim tracks regular
 * files only). */
#define LOGREC_RETIRED_BIT0 0x01
#define LOGREC_OPEN_OSYNC   0x02  /* open: O_SYNC asked for */
#define LOGREC_OPEN_ODSYNC  0x04  /* open: O_DSYNC (without the rest of O_SYNC) */
#define LOGREC_OPEN_APPEND  0x08  /* open: O_APPEND */
#define LOGREC_OPEN_TRUNC   0x10  /* open: O_TRUNC */
#define LOGREC_DIRECTORY    0x20  /* a sync call on a directory */
/* Also since 1.2: an app call's record says when it was submitted around
 * libc. */
#define LOGREC_RING         0x40  /* through an io_uring ring (an entry the shim looked at) */
#define LOGREC_AIO          0x80  /* through libaio's io_submit */
#define LOGREC_FLAGS_KNOWN_1_1 0x01
#define LOGREC_FLAGS_KNOWN  0xff

/* Which histogram a HIST block carries, and its place in the set. */
struct logfmt_histkey {
	uint32_t snap;               /* set number, increasing */
	uint16_t part, nparts;       /* blocks 0..nparts-1 of the set, in order */
	uint64_t time_ns;            /* CLOCK_MONOTONIC of the snapshot */
	uint8_t op;
	uint16_t rule;
	uint32_t file_id;            /* 0: all files of the rule */
};

struct logfmt_event {
	uint64_t time_ns;            /* CLOCK_MONOTONIC */
	uint32_t file_id;            /* 0 if none */
	int32_t err;                 /* errno, 0 if none */
	uint8_t kind;                /* enum logfmt_event_kind */
	const char *text;
};

/* Data at risk of one file over one second (shim/defer/risk.h). */
struct logfmt_risk {
	uint32_t file_id;
	uint64_t worst_bytes;        /* most bytes at risk at any moment of the second */
	uint64_t worst_age_ns;       /* oldest acknowledged byte not yet durable, at worst */
	uint64_t bytes;              /* at risk at the end of the second */
	uint64_t age_ns;             /* its oldest byte's age then, 0 none */
	uint64_t written;            /* bytes written to the file so far */
};

struct logfmt_trailer {
	uint64_t end_wall_ns, end_mono_ns;
	int32_t exit_status;         /* -1 if unknown */
};

/* ---- encoders: one block into buf; length, or 0 if cap is too small ---- */

size_t logfmt_encode_header(uint8_t *buf, size_t cap, const struct logfmt_header *h);
size_t logfmt_encode_policy(uint8_t *buf, size_t cap, uint32_t seq, uint64_t time_ns,
			    const struct logfmt_rule *rules, uint16_t nrules, const char *ini);
size_t logfmt_encode_file(uint8_t *buf, size_t cap, uint32_t seq, const struct logfmt_file *f);
size_t logfmt_encode_records(uint8_t *buf, size_t cap, uint32_t seq,
			     const struct logfmt_record *recs, uint32_t n);
/* Ops whose tally is all zero are left out; an all-zero second still
 * yields a (small) valid block. */
size_t logfmt_encode_interval(uint8_t *buf, size_t cap, uint32_t seq, uint32_t second,
			      const struct tally t[LOGOP_COUNT]);
/* Worst case LOGFMT_HIST_BLOCK_MAX; reads h atomically (it may be live). */
size_t logfmt_encode_hist(uint8_t *buf, size_t cap, uint32_t seq,
			  const struct logfmt_histkey *k, const struct hist *h);
size_t logfmt_encode_event(uint8_t *buf, size_t cap, uint32_t seq, const struct logfmt_event *e);
size_t logfmt_encode_drops(uint8_t *buf, size_t cap, uint32_t seq, uint64_t time_ns,
			   uint64_t dropped_total);
size_t logfmt_encode_trailer(uint8_t *buf, size_t cap, uint32_t seq,
			     const struct logfmt_trailer *t);
/* Entries in increasing file id order; n >= 1. */
size_t logfmt_encode_risk(uint8_t *buf, size_t cap, uint32_t seq, uint32_t second,
			  const struct logfmt_risk *r, uint16_t n);

#define LOGFMT_HIST_BLOCK_MAX (LOGFMT_BLOCK_HDR + 28 + HIST_ENCODED_MAX)

/*
 * Streaming RECORDS, to drain rings straight into the block buffer:
 * logfmt_record_put() record i at buf + LOGFMT_RECORDS_AT(i), then
 * logfmt_records_seal(buf, seq, n) writes the heads and returns the block
 * length. logfmt_records_fit(cap) is how many records a buffer holds.
 */
#define LOGFMT_RECORDS_AT(i) (LOGFMT_BLOCK_HDR + 8 + (size_t)(i) * LOGFMT_RECORD_SIZE)
void logfmt_record_put(uint8_t *dst, const struct logfmt_record *r);
size_t logfmt_records_seal(uint8_t *buf, uint32_t seq, uint32_t n);
uint32_t logfmt_records_fit(size_t cap);

/* ---- shared with readers ---- */

struct logfmt_blockhdr {
	uint32_t magic;
	uint16_t type, flags;
	uint32_t seq, len;
	uint32_t payload_crc, header_crc;
};

/* Parses the 24 header bytes. Returns 0 if magic, header CRC, flags and
 * length limit are right, else -1 and a static reason in *why. */
int logfmt_block_header(const uint8_t *p, struct logfmt_blockhdr *b, const char **why);
bool logfmt_block_payload_ok(const struct logfmt_blockhdr *b, const uint8_t *payload);
const char *logfmt_block_name(unsigned type);     /* "?" if unknown */
void logfmt_record_get(struct logfmt_record *r, const uint8_t *src);

/* CRC32C (Castagnoli). Start with crc = 0; feed the result back in to
 * continue over more bytes. */
uint32_t logfmt_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
