/*
 * policy.h - the ini file turned into a policy snapshot.
 *
 * Pure code: no I/O beyond reading the named file, no globals, no
 * allocation (a snapshot is one fixed-size struct the caller owns). That
 * keeps it unit-testable and lets the shim build a new snapshot beside the
 * live one and swap it in atomically on reload.
 */
#ifndef SYNCSHIM_POLICY_H
#define SYNCSHIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POLICY_MAX_RULES 64
#define POLICY_NAME_MAX 64
#define POLICY_GLOB_MAX 256
#define POLICY_PATH_MAX 1024
#define POLICY_ERR_MAX 512
/* A knob set to "auto": max_delay_ms, group_wait_us (policy/pace.h). */
#define POLICY_AUTO UINT32_MAX

/* What a sync call on a matching file turns into. */
enum sync_policy {
	SYNC_PASSTHROUGH = 0, /* the real call, unchanged */
	SYNC_FDATASYNC,       /* fsync -> fdatasync, O_SYNC -> O_DSYNC */
	SYNC_NOOP,            /* return 0 after validating the fd */
	SYNC_DEFER,           /* return at once; flusher syncs within a bound */
	SYNC_GROUP,           /* wait for a shared real sync begun after the call */
	SYNC_POLICY_COUNT
};

/* What an O_SYNC/O_DSYNC open on a matching file turns into. */
enum osync_mode {
	OSYNC_AUTO = 0, /* follow the sync policy (see shim.ini) */
	OSYNC_KEEP,     /* open exactly as asked */
	OSYNC_DSYNC,    /* O_SYNC -> O_DSYNC */
	OSYNC_STRIP,    /* drop O_SYNC/O_DSYNC */
	OSYNC_DEFER,    /* drop them; each write becomes a deferred sync request */
	OSYNC_MODE_COUNT
};

/* Which real call the flusher (defer, group) issues. */
enum real_sync {
	REAL_SYNC_AUTO = 0,  /* defer: fdatasync; group: fsync if any covered caller asked fsync */
	REAL_SYNC_FDATASYNC,
	REAL_SYNC_FSYNC,
	REAL_SYNC_COUNT
};

enum on_close {
	ON_CLOSE_ASYNC = 0, /* close returns; the flusher completes pending syncs on its dup */
	ON_CLOSE_SYNC,      /* close waits for pending syncs */
	ON_CLOSE_COUNT
};

/* Whose deferred syncs a file's writes keep the order of (README "Ordered
 * defer"): every other file's in the process (domain), or only its own. */
enum order_mode {
	ORDER_DOMAIN = 0, /* a write waits for other files' acknowledged syncs */
	ORDER_FILE,       /* only for its own: other files' order is not waited for */
	/* The default: domain, but for the standard output and error the
	 * process inherited (a log redirected to a file, which nobody
	 * recovers): file. */
	ORDER_AUTO,
	ORDER_MODE_COUNT
};

/* What a sync error that no descriptor can report does at exit (it is
 * always said on stderr). */
enum unreported_errors {
	UNREPORTED_WARN = 0,  /* the line on stderr only */
	UNREPORTED_EXIT,      /* also exit 74 (EX_IOERR) instead of a successful status */
	UNREPORTED_COUNT
};

enum log_mode {
	LOG_OFF = 0,
	LOG_SUMMARY,
	LOG_CALLS,
	LOG_MODE_COUNT
};

/* Per-file behaviour. The [shim] section's keys fill the default rule that
 * applies to files no [rule ...] section matches. */
struct rule {
	char name[POLICY_NAME_MAX];   /* section name after "rule ", "" for default */
	char glob[POLICY_GLOB_MAX];   /* absolute-path glob; "" for default */
	int line;                     /* line of the section header, 0 for default */
	enum sync_policy sync;
	enum osync_mode osync;
	enum real_sync real_sync;
	enum on_close on_close;
	enum order_mode order;
	uint32_t max_delay_ms;        /* defer: oldest request waits at most this; POLICY_AUTO */
	uint64_t max_bytes;           /* defer: sync once this many bytes are dirty */
	uint32_t max_calls;           /* defer: sync once this many requests pend */
	uint64_t writeback_bytes;     /* defer: sync_file_range(WRITE) every N bytes, 0 = off */
	uint32_t group_wait_us;       /* group: linger to gather more callers; POLICY_AUTO */
	uint32_t max_at_risk_ms;      /* defer: app syncs wait once acknowledged data is older, 0 none */
};

struct policy {
	struct rule deflt;            /* [shim] policy and its defer/group knobs */
	struct rule rules[POLICY_MAX_RULES];
	int nrules;
	char log_path[POLICY_PATH_MAX];  /* "" = no log; %p expands to the pid */
	enum log_mode log_mode;
	uint32_t max_flushers;
	uint32_t ring_records;        /* calls mode: per-thread ring capacity */
	bool reload;                  /* watch the ini file and apply changes */
	enum unreported_errors unreported_errors;
	bool live;                    /* live = on: publish live counters (docs/LIVEFORMAT.md) */
	bool live_set;                /* live given (ini or SYNCSHIM_LIVE); else "auto":
	                               * policy_live_wanted() decides */
	char live_dir[POLICY_PATH_MAX]; /* where, "" = the default place */
	bool inline_trap;             /* inline_syscalls = trap: see shim/calls/inline_trap.c */
	char source[POLICY_PATH_MAX]; /* file it came from, "" if built-in */
};

/* Built-in defaults: passthrough for everything, no log. */
void policy_init_defaults(struct policy *p);

/*
 * Parse an ini file (path) or an in-memory text (name is used in messages).
 * On success returns 0 and fills *p. On failure returns -1, leaves *p as
 * built-in defaults, and writes one line "FILE:LINE: what is wrong; how to
 * fix it" (no trailing newline) into err.
 *
 * policy_load_file is the one reader of config files, for the shim and the
 * tools alike. It never blocks and reads nothing but a regular file: a
 * FIFO, directory, device or socket, and files on /proc, /sys and other
 * pseudo file systems are refused ("FILE: is a FIFO ..."), before they are
 * opened when stat can tell. At most 1 MiB (exactly 1 MiB is accepted), no
 * NUL byte. It leaves errno as it found it.
 * policy_load_string stops at the first NUL; policy_load_mem takes a
 * length and rejects a NUL inside it, as a file would.
 */
int policy_load_file(const char *path, struct policy *p, char *err, size_t errlen);
int policy_load_string(const char *text, const char *name, struct policy *p,
		       char *err, size_t errlen);
int policy_load_mem(const char *text, size_t len, const char *name, struct policy *p,
		    char *err, size_t errlen);

/* The environment's overrides (NULL or "" = not set). */
struct policy_env {
	const char *policy;    /* SYNCSHIM_POLICY: replaces [shim] policy */
	const char *log;       /* SYNCSHIM_LOG: replaces [shim] log (and turns log_mode off into summary) */
	const char *log_mode;  /* SYNCSHIM_LOG_MODE: replaces [shim] log_mode */
	const char *live;      /* SYNCSHIM_LIVE: replaces [shim] live */
	const char *live_dir;  /* SYNCSHIM_LIVE_DIR: replaces [shim] live_dir */
	const char *inline_syscalls; /* SYNCSHIM_INLINE_SYSCALLS: replaces [shim] inline_syscalls */
};

/*
 * Applies the overrides that are valid, checked with the ini's rules and
 * messages (a relative SYNCSHIM_LOG is refused like a relative log = ...).
 * Returns 0, or -1 and one line "VAR=VALUE: what is wrong; how to fix it"
 * about the first bad one. The caller decides what a bad one means (the
 * shim: passthrough, as for a bad ini file).
 */
int policy_apply_env(struct policy *p, const struct policy_env *env, char *err, size_t errlen);

/* First rule whose glob matches abspath, else &p->deflt. Never NULL. */
const struct rule *policy_match(const struct policy *p, const char *abspath);

/* Name <-> enum; parse returns -1 for an unknown name. */
int sync_policy_parse(const char *name);
const char *sync_policy_name(enum sync_policy s);
/* "passthrough, fdatasync, ...": every policy's name, for messages. */
const char *sync_policy_names(char *buf, size_t len);
int osync_mode_parse(const char *name);
const char *osync_mode_name(enum osync_mode m);
int log_mode_parse(const char *name);
const char *log_mode_name(enum log_mode m);
int real_sync_parse(const char *name);
const char *real_sync_name(enum real_sync r);
int on_close_parse(const char *name);
const char *on_close_name(enum on_close c);
const char *order_mode_name(enum order_mode o);
const char *unreported_errors_name(enum unreported_errors u);

/* The O_SYNC handling a rule resolves to once OSYNC_AUTO is applied. */
enum osync_mode rule_osync(const struct rule *r);

/*
 * Globs over absolute paths: '*' and '?' stay within one path component,
 * a double star spans components (see shim.ini for examples), [abc] [a-z]
 * [!a] classes, a backslash escapes the next character. glob_check returns 0 for a
 * valid pattern, else -1 and a reason in why.
 */
int glob_check(const char *pattern, char *why, size_t whylen);
bool glob_match(const char *pattern, const char *path);

/* Write the snapshot as ini text (for the log header). Returns bytes
 * written excluding NUL, truncated to len-1. */
size_t policy_format(const struct policy *p, char *buf, size_t len);

#endif
