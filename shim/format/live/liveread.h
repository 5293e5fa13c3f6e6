/*
 * liveread.h - the reader side of the live counters (docs/LIVEFORMAT.md,
 * shim/format/live/livefmt.h): where the files are, reading one without ever blocking
 * or slowing its writer, telling stale files from live ones, and summing
 * entries. `synclat top` (top.c) and `synclat metrics` (metrics.c) build
 * on this and on nothing else of the format.
 *
 * Part of libsynclat.a, so the tests call the same code.
 */
#ifndef SYNCSHIM_LIVEREAD_H
#define SYNCSHIM_LIVEREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "livefmt.h"

/* A file is read only up to this size: the layout allows more, but a
 * larger file is not one a version-1 writer made (LIVE_MAX_FILES entries
 * of a few KiB), and a reader must stay cheap. */
#define LIVE_READ_MAX (16u << 20)
/* At most this many rules are read (a writer has LIVE_MAX_RULES; a newer
 * one may have more, not thousands). */
#define LIVE_READ_RULES 4096
/* Seqlock attempts before a file counts as busy (LIVEFORMAT.md, Reading). */
#define LIVE_TRIES 6
/* A live process whose last publish is older than this many intervals
 * is shown as stalled. */
#define LIVE_STALL_INTERVALS 5

/* What reading one file found. */
enum live_status {
	LIVE_OK,       /* a consistent copy of a live process's counters */
	LIVE_BUSY,     /* the sequence count never settled: retried, gave up */
	LIVE_STALE,    /* its process is gone, reused its pid, or has ended */
	LIVE_BAD,      /* not a valid version-1 file (truncated, foreign, inconsistent) */
	LIVE_REFUSED,  /* not a regular file of the directory's owner (FIFO, symlink ...) */
	LIVE_GONE,     /* vanished between listing and opening: not worth a word */
	LIVE_NSTATUS
};

/* One process, as read. */
struct live_proc {
	struct live_header h;       /* validated, strings NUL-terminated; busy: zero but h.pid */
	struct live_file *files;    /* h.nfiles entries: the known prefix of each */
	struct live_rule *rules;    /* h.nrules entries (0 from a writer before the rule table) */
	char path[512];             /* DIR/PID.live, for messages */
	bool stalled;               /* alive, but not published for LIVE_STALL_INTERVALS */
	bool busy;                  /* LIVE_BUSY: no consistent copy, only the pid is known */
	bool removable;             /* LIVE_STALE: its process is gone (not merely ending) */
	dev_t dev;                  /* the file read (to remove that one only) */
	ino_t ino;
};

#define LIVE_MAX_NOTES 16

/* Everything the readers found in one scan of every directory. */
struct live_snapshot {
	struct live_proc *procs;
	size_t nprocs;
	unsigned skipped[LIVE_NSTATUS]; /* files not shown, by status (STALE, BAD, REFUSED) */
	unsigned removed;               /* stale files removed */
	char **dirs;                    /* the directories looked in (that exist and are trusted) */
	size_t ndirs;
	char notes[LIVE_MAX_NOTES][320]; /* why files or directories were refused */
	unsigned nnotes;
	uint64_t mono_ns, wall_ns;      /* when the scan began */
};

/* Where to look (LIVEFORMAT.md, Where). live_where_init fills it from the
 * environment; the tests point tmp and run_user elsewhere. */
struct live_where {
	const char *dir;       /* --dir or $SYNCSHIM_LIVE_DIR: this one alone */
	const char *xdg;       /* $XDG_RUNTIME_DIR, NULL if unset */
	const char *tmp;       /* "/tmp": TMP/syncshim-UID */
	const char *run_user;  /* "/run/user": RUN_USER/UID/syncshim */
	uid_t uid;             /* the reader's real user id */
	bool all_users;        /* root: every TMP/syncshim-N and RUN_USER/N/syncshim owned by N */
	bool keep_stale;       /* never remove stale files */
	/* Also every process with the shim loaded (PROC/PID/maps) whose TMP is
	 * not ours, in a mount namespace of its own (systemd's PrivateTmp):
	 * its directories read through PROC/PID/root. On unless dir is set. */
	bool other_namespaces;
	const char *proc;      /* "/proc" */
};

void live_where_init(struct live_where *w, const char *dir_option);

/* Whether process pid has the shim mapped (PROC/PID/maps names
 * libsyncshim.so); false when it cannot be read (gone, another user's). */
bool live_pid_shimmed(const char *proc, pid_t pid);

/* Reads every *.live file of every directory. Never blocks: FIFOs,
 * devices and symlinks are refused, each copy is retried a bounded number
 * of times. Returns 0, or -1 (errno ENOMEM) when out of memory. */
int live_scan(const struct live_where *w, struct live_snapshot *s);
void live_snapshot_free(struct live_snapshot *s);

/* Reads one file, NAME in the directory open as dirfd, which must belong
 * to owner. On LIVE_OK and LIVE_BUSY p is filled (p->files allocated);
 * otherwise why says what was wrong, and on LIVE_STALE p->removable,
 * p->dev and p->ino say whether and which file may go. Removes nothing. */
enum live_status live_read_at(int dirfd, const char *name, uid_t owner, uint64_t now_mono_ns,
			      struct live_proc *p, char *why, size_t len);
void live_proc_free(struct live_proc *p);

/* /proc/PID/stat's field 22 (start time in clock ticks since boot) from
 * the file's text: after the LAST ')', since the command name may hold
 * spaces and parentheses. False if the text has no such field. */
bool live_stat_start(const char *stat_text, uint64_t *start);
/* The same for a running process; false if it cannot be read. */
bool live_proc_start(pid_t pid, uint64_t *start);

/* Removes DIR/NAME only if it is still the file (dev, ino) that was found
 * stale: renamed aside first, checked, then unlinked (a new process with
 * the same pid may have just made its own). True if removed. */
bool live_remove_exact(int dirfd, const char *name, dev_t dev, ino_t ino);

/* ---- summing entries ---- */

/* Adds f into sum: counts and histograms are summed, the worst figures
 * (ages, worst-of-interval, percentiles, maxima) take the larger. */
void live_file_add(struct live_file *sum, const struct live_file *f);

/* A process's files summed per rule (same rule number and policy), in
 * order of first appearance; nfiles[i] counts the files in sum i.
 * out and nfiles have room for p->h.nfiles entries. Returns how many. */
size_t live_by_rule(const struct live_proc *p, struct live_file *out, unsigned *nfiles);

/* Per second over the publishing interval; 0 if the interval is unknown. */
double live_rate(const struct live_proc *p, uint64_t iv_count);

/* The policy's name ("defer"), "?" for a number this reader does not know. */
const char *live_policy_name(unsigned policy);
/* The program name: the first word of the command line, without its
 * directory ("java"), into buf. */
const char *live_command(const struct live_proc *p, char *buf, size_t len);

#endif
