/*
 * livefmt.h - the live counters file a shimmed process publishes about
 * once a second for `synclat top` and `synclat metrics`.
 * docs/LIVEFORMAT.md is the specification; shim/observe/live.c writes it,
 * shim/format/live/liveread.c reads it.
 *
 * One file per process, DIR/PID.live, mode 0600, in native byte order
 * (it never leaves the machine). The writer maps it shared and rewrites it
 * in place under a sequence count (odd while it writes); a reader copies
 * the file, and retries if the count was odd or changed: it never takes a
 * lock the writer could wait on.
 *
 * Pure definitions and small pure helpers: no allocation, no system call.
 */
#ifndef SYNCSHIM_LIVEFMT_H
#define SYNCSHIM_LIVEFMT_H

#include <stdint.h>

#define LIVE_MAGIC "SSLIVE1"          /* 8 bytes with its NUL */
#define LIVE_VERSION 1
#define LIVE_MAX_FILES 256            /* busiest first; the rest are counted in omitted */
#define LIVE_PATH_MAX 256
#define LIVE_NAME_MAX 64
#define LIVE_CMD_MAX 256
#define LIVE_SUFFIX ".live"
#define LIVE_MAX_RULES 65             /* the [shim] default and up to 64 rules (policy.h) */
#define LIVE_ERROR_MAX 200

/*
 * Latency buckets, in ns: ten per decade from 100 ns to 10 s (upper bounds
 * 100, 125, 160, 200, 250, 320, 400, 500, 630, 800, 1000, 1250, ... ns),
 * so a value is placed within 12% and the 1-2-5 bounds Prometheus users
 * expect are exact bucket bounds. Bucket 0 holds values up to 100 ns,
 * bucket i (1..80) (bound(i-1), bound(i)], bucket 81 values above 10 s:
 * upper bounds included, as Prometheus's `le` means.
 */
#define LIVE_NBOUNDS 81
#define LIVE_NBUCKETS (LIVE_NBOUNDS + 1)

/* Upper bound of bucket i in ns, i < LIVE_NBOUNDS. */
static inline uint64_t live_bound_ns(unsigned i)
{
	/* Written out, not computed: every app sync's bucket is found with a
	 * search over these, on the sync's path. 1, 1.25, 1.6, 2, 2.5, 3.2, 4,
	 * 5, 6.3, 8 per decade, from 100 ns. */
	static const uint64_t bound[LIVE_NBOUNDS] = {
		100u, 125u, 160u, 200u, 250u, 320u, 400u, 500u, 630u, 800u,
		1000u, 1250u, 1600u, 2000u, 2500u, 3200u, 4000u, 5000u, 6300u, 8000u,
		10000u, 12500u, 16000u, 20000u, 25000u, 32000u, 40000u, 50000u, 63000u, 80000u,
		100000u, 125000u, 160000u, 200000u, 250000u, 320000u, 400000u, 500000u, 630000u, 800000u,
		1000000u, 1250000u, 1600000u, 2000000u, 2500000u, 3200000u, 4000000u, 5000000u, 6300000u, 8000000u,
		10000000u, 12500000u, 16000000u, 20000000u, 25000000u, 32000000u, 40000000u, 50000000u, 63000000u, 80000000u,
		100000000u, 125000000u, 160000000u, 200000000u, 250000000u, 320000000u, 400000000u, 500000000u, 630000000u, 800000000u,
		1000000000u, 1250000000u, 1600000000u, 2000000000u, 2500000000u, 3200000000u, 4000000000u, 5000000000ull, 6300000000ull, 8000000000ull,
		10000000000ull,
	};
	return bound[i];
}

/* Bucket of a value in ns: the first bound not below it. A value of b
 * bits is at least 2^(b-1), and with about three bounds to a doubling
 * (ten to a decade) bound 3(b-8)+2 is the first that can hold it: a
 * walk of at most four steps from there, with no search's unpredictable
 * branches (every app sync's bucket is found on the sync's path). */
static inline unsigned live_bucket(uint64_t ns)
{
	unsigned bits = ns ? 64u - (unsigned)__builtin_clzll(ns) : 0;
	unsigned i = bits < 8 ? 0 : 3 * (bits - 8) + 2;
	if (i > LIVE_NBOUNDS)
		i = LIVE_NBOUNDS;
	while (i < LIVE_NBOUNDS && live_bound_ns(i) < ns)
		i++;
	return i;
}

enum live_file_flags {
	LIVEF_UNBOUNDED = 1,   /* the rule answers syncs and never makes one (noop) */
};

enum live_rule_flags {
	LIVER_APPROXIMATE = 1, /* files may count a path twice (the writer's table of paths was full) */
};

/* 1024 bytes, then the files. All counts since the process started
 * unless marked "interval": those cover the interval_ns before updated. */
struct live_header {
	char magic[8];             /* LIVE_MAGIC */
	uint32_t version;          /* LIVE_VERSION */
	uint32_t header_size;      /* sizeof(struct live_header) */
	uint32_t file_size;        /* sizeof(struct live_file) */
	uint32_t max_files;        /* LIVE_MAX_FILES: room in the file */
	uint32_t seq;              /* odd while the writer rewrites the file */
	uint32_t nfiles;           /* entries in use */
	uint32_t omitted;          /* files with activity that did not fit */
	uint32_t pid, ppid, uid;
	uint32_t interval_ms;      /* how often the writer publishes */
	uint32_t ended;            /* 1: the process is exiting; the file goes next */
	uint64_t proc_start;       /* /proc/PID/stat starttime: a reused pid differs */
	uint64_t start_wall_ns;    /* CLOCK_REALTIME when the shim started */
	uint64_t updated_wall_ns;  /* CLOCK_REALTIME of the last publish */
	uint64_t updated_mono_ns;  /* CLOCK_MONOTONIC of the same */
	uint64_t interval_ns;      /* length of the last interval */
	char cmdline[LIVE_CMD_MAX];
	char config[LIVE_PATH_MAX];        /* the ini file, "" if none */
	char default_policy[16];           /* the [shim] policy */
	char comm[16];                     /* /proc/PID/comm: the program's name, "" if unknown */
	/* Since the rule table (a writer before it left these bytes zero). */
	uint32_t config_errors;    /* inis refused (at load: running as passthrough; a reload: kept the old) */
	uint32_t nrules;           /* entries of the rule table; 0: none (an older writer) */
	uint32_t rule_size;        /* sizeof(struct live_rule) */
	uint32_t rules_offset;     /* where the rule table starts, after the files' room */
	char config_error[LIVE_ERROR_MAX]; /* the latest refusal's message, "" if none */
	uint8_t reserved[1024 - 96 - LIVE_CMD_MAX - LIVE_PATH_MAX - 16 - 16 - 16 - LIVE_ERROR_MAX];
};

struct live_file {
	uint32_t id;               /* the shim's file id (as in its log) */
	uint16_t rule;             /* 0: the [shim] default, i: [rule] number i */
	uint8_t policy;            /* enum sync_policy of the rule */
	uint8_t flags;             /* enum live_file_flags */
	char rule_name[LIVE_NAME_MAX];     /* "" for the default rule */
	char path[LIVE_PATH_MAX];          /* absolute; cut short if longer */
	/* since the file was first met */
	uint64_t writes, bytes;    /* the app's writes */
	uint64_t syncs;            /* the app's fsync, fdatasync, msync(MS_SYNC) calls */
	uint64_t real_syncs;       /* real syncs of the file: the app's own that passed, and the flusher's */
	uint64_t errors;           /* real syncs of the file that failed, whoever made them */
	/* now */
	uint64_t pending;          /* deferred requests no real sync covers yet */
	uint64_t risk_bytes;       /* acknowledged as durable, not yet synced (shim/defer/risk.h) */
	uint64_t risk_age_ns;      /* the oldest of them, 0 none */
	/* interval */
	uint64_t risk_worst_bytes, risk_worst_age_ns;
	uint64_t iv_writes, iv_bytes, iv_syncs, iv_real_syncs, iv_errors;
	uint64_t sync_p50_ns, sync_p99_ns, sync_max_ns;   /* the app's syncs; 0 if none */
	uint64_t real_p50_ns, real_p99_ns, real_max_ns;   /* real syncs */
	/* since the file was first met: histograms (live_bucket) and sums */
	uint64_t sync_sum_ns, real_sum_ns;
	uint64_t sync_buckets[LIVE_NBUCKETS];
	uint64_t real_buckets[LIVE_NBUCKETS];
};

/* The rule table: the rules in force, each with the files it matched, so
 * a rule that matched nothing is seen (a glob written for other paths). */
struct live_rule {
	uint16_t rule;             /* 0: the [shim] default, i: [rule] number i */
	uint8_t policy;            /* enum sync_policy */
	uint8_t flags;             /* enum live_rule_flags */
	uint32_t files;            /* distinct paths it matched since the rules took effect */
	char name[LIVE_NAME_MAX];  /* "" for the default */
	char glob[LIVE_PATH_MAX];  /* its path = glob, cut short if longer; "" for the default */
};

_Static_assert(sizeof(struct live_header) == 1024, "live header layout");
_Static_assert(sizeof(struct live_rule) % 8 == 0, "live rule entries are whole words");
_Static_assert(sizeof(struct live_file) % 8 == 0, "live file entries are whole words");
_Static_assert((8 + LIVE_NAME_MAX + LIVE_PATH_MAX) % 8 == 0, "the counters start on a word");

#define LIVE_RULES_OFFSET (sizeof(struct live_header) + LIVE_MAX_FILES * sizeof(struct live_file))
#define LIVE_FILE_BYTES (LIVE_RULES_OFFSET + LIVE_MAX_RULES * sizeof(struct live_rule))

#endif
