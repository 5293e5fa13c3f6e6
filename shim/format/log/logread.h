/*
 * logread.h - strict reader of syncshim latency logs, and the merge of a
 * forked family of logs into one run (what reports are computed from).
 *
 * The reader takes a file one block at a time (the header first, so a
 * file that is not a log is refused after 24 bytes), checks every block
 * against docs/LOGFORMAT.md and either accepts it or names the first byte
 * that is wrong. It holds one block at a time, never the file; nothing it
 * allocates is sized by a length field alone: every allocation is bounded
 * by bytes actually present in the file.
 */
#ifndef SYNCSHIM_LOGREAD_H
#define SYNCSHIM_LOGREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "logfmt.h"

enum lr_status {
	LR_OK = 0,
	LR_TRUNCATED,   /* ends inside a block */
	LR_CORRUPT,     /* a block or field is wrong */
	LR_FOREIGN,     /* not a syncshim log at all */
	LR_IOERR,       /* could not read it */
};

struct lr_error {
	enum lr_status status;
	uint64_t offset;      /* byte offset of the problem in the file */
	char msg[512];        /* one line: "FILE: corrupt at byte N: why" */
};

/* Conditions that are not errors but that reports must mention. */
#define LRW_NO_TRAILER  0x01  /* process ended abruptly? */
#define LRW_HIST_CUT    0x02  /* last HIST set cut short; the one before is used */
#define LRW_NEWER       0x04  /* newer minor version: unknown parts skipped */
#define LRW_SALVAGED    0x08  /* read only up to a bad block (lr_salvage) */

struct lr_rule {
	uint8_t sync;        /* enum sync_policy */
	char *name, *glob;
};

struct lr_file {
	uint32_t id;
	uint16_t rule;
	uint64_t dev, ino;
	char *rule_name, *fstype, *path;
};

/* One INTERVAL block: its ops are ivents[first .. first + n). */
struct lr_second {
	uint32_t second;     /* since start_mono_ns */
	size_t first, n;
};

struct lr_ivent {
	uint8_t op;
	struct tally t;
};

/* A histogram of the last complete HIST set, still encoded (it points
 * into the log's data): decode with lr_hist_load(). */
struct lr_hist {
	uint8_t op;
	uint16_t rule;
	uint32_t file_id;
	uint64_t count, max;
	uint8_t *enc;                 /* owned copy */
	size_t enclen;
};

/* One file's entry of a RISK block (minor 1). */
struct lr_risk {
	uint32_t second;     /* since start_mono_ns */
	uint32_t file_id;
	uint64_t worst_bytes, worst_age_ns, bytes, age_ns, written;
};

struct lr_event {
	uint64_t time_ns;
	uint32_t file_id;
	int32_t err;
	uint8_t kind;
	char *text;
};

struct lr_log {
	char *path;
	size_t size;                  /* bytes of the blocks read */
	size_t nblocks;
	unsigned warnings;            /* LRW_* */

	/* HEADER */
	uint16_t major, minor;        /* major == 0: no HEADER was read */
	uint32_t pid, ppid;
	uint8_t log_mode;             /* enum log_mode */
	uint64_t start_wall_ns, start_mono_ns;
	char *hostname, *kernel, *cmdline;

	/* policy snapshot: HEADER's, replaced by each POLICY block */
	struct lr_rule *rules;
	size_t nrules;
	char *policy_ini;
	size_t npolicies;             /* POLICY blocks seen (reloads) */

	struct lr_file *files;        /* in order of appearance */
	size_t nfiles;
	struct logfmt_record *recs;
	size_t nrecs;
	struct lr_second *secs;
	size_t nsecs;
	struct lr_ivent *ivents;
	size_t nivents;
	struct lr_hist *hists;        /* the last complete HIST set */
	size_t nhists;
	bool has_hists;
	uint64_t hist_time_ns;
	struct lr_event *events;
	size_t nevents;
	struct lr_risk *risks;        /* in order: seconds never go back */
	size_t nrisks;
	uint64_t drops;               /* last DROPS block */

	bool has_trailer;
	struct logfmt_trailer trailer;
	uint64_t last_mono_ns;        /* latest time any block vouches for */

	/* private to logread.c */
	struct lr_parse *ps;
};

/*
 * Reads and checks a log. Returns 0, or -1 with *err filled. On a
 * truncated or corrupt log, *log still holds every block before the bad
 * one (see lr_salvage). Always lr_free() the log afterwards.
 */
int lr_read_file(const char *path, struct lr_log *log, struct lr_error *err);
/* path "-" reads standard input (a pipe given on purpose); any other path
 * must be a regular file: a FIFO, device, directory or socket is refused
 * before it is opened (LR_IOERR), so nothing blocks or reads forever. */
/* Same on bytes in memory (not kept); name is used in messages. */
int lr_read_mem(const void *buf, size_t len, const char *name, struct lr_log *log,
		struct lr_error *err);
/* After a TRUNCATED or CORRUPT error: true if the valid prefix holds a
 * HEADER and so can be reported (marks the log LRW_SALVAGED). */
bool lr_salvage(struct lr_log *log, const struct lr_error *err);
void lr_free(struct lr_log *log);

/* Index into log->files of a file id, or -1. */
long lr_file_index(const struct lr_log *log, uint32_t id);
/* Decodes one histogram of the set into h. */
void lr_hist_load(const struct lr_hist *lh, struct hist *h);
/* Wall clock end of the log: trailer's, else start + last time seen. */
uint64_t lr_end_wall_ns(const struct lr_log *log);

/* ---- a run: one or more logs (a forked family) merged ---- */

/* Files merged by path across logs. */
struct run_file {
	const char *path, *fstype, *rule_name;
	uint64_t calls[LOGOP_COUNT];
	uint64_t bytes;               /* written by successful write ops */
	uint64_t errors;              /* calls that failed */
	struct hist *sync;            /* app sync latency, NULL if none */
	struct hist *real;            /* flusher's real syncs, NULL if none */
	/* Data at risk (RISK blocks): the worst of any second, any log. */
	bool risk;                    /* the file ever had any */
	uint64_t risk_bytes, risk_age_ns;
	uint8_t sync_policy;          /* the rule's policy (enum sync_policy), per its log */
};

/* One wall-clock second, relative to the run's first second; only seconds
 * some log wrote an INTERVAL for are present. */
struct run_sec {
	int64_t sec;
	struct tally op[LOGOP_COUNT];
	bool risk;                    /* some log wrote a RISK entry for it */
	uint64_t risk_bytes;          /* sum over files of each one's worst */
	uint64_t risk_age_ns;         /* the oldest at-risk byte of any file */
};

enum pct_source {
	PCT_NONE = 0,     /* no calls at all */
	PCT_HIST,         /* every log had a HIST set */
	PCT_RECORDS,      /* none had one: built from call records */
	PCT_MIXED,        /* some of each */
};

struct run {
	struct lr_log **logs;         /* borrowed; must outlive the run */
	size_t nlogs;
	struct hist *op[LOGOP_COUNT]; /* NULL: no calls of that op */
	uint64_t bytes[LOGOP_COUNT];
	enum pct_source pct_source;
	struct run_file *files;
	size_t nfiles;
	struct run_sec *secs;         /* sorted by sec */
	size_t nsecs;
	uint64_t start_wall_ns, end_wall_ns;
	double duration_s;            /* 0 if unknown */
	uint64_t drops;
	unsigned warnings;            /* OR of the logs' LRW_* */
	bool has_risk;                /* some log has RISK blocks (minor >= 1) */
};

/* Returns 0 (a tool stops on out-of-memory). */
int run_build(struct run *r, struct lr_log **logs, size_t nlogs);
void run_free(struct run *r);

#endif
