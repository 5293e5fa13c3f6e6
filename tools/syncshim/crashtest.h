/*
 * crashtest.h - `syncshim crashtest`: power-cut trials of an unmodified
 * program (docs/CRASHTEST.md). Its parts: the command line (crashtest.c),
 * one trial from start to verdict and the loop over all of them
 * (ct_trial.c), the scope's files (ct_scope.c), the copies of the scope
 * (ct_copy.c), running and cutting processes (ct_run.c), the report
 * (ct_report.c).
 */
#ifndef SYNCSHIM_CRASHTEST_H
#define SYNCSHIM_CRASHTEST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "rollback.h"

#define CT_MAX_GLOBS 64
#define CT_OUTPUT_MAX (64 * 1024)  /* of a check's output, kept in the report */

enum ct_cut_kind { CUT_RANDOM, CUT_AFTER_SYNCS, CUT_AFTER_MS };

struct ct_cut {
	enum ct_cut_kind kind;
	uint64_t min_ms, max_ms;   /* random: the range; after-ms: both T */
	unsigned syncs;            /* after-syncs */
};

struct ct_opts {
	unsigned trials;
	const char *policy, *config;
	struct ct_cut cut;
	const char *cut_text;                 /* as given, for the report */
	char *globs[CT_MAX_GLOBS];            /* absolute */
	size_t nglobs;
	const char *setup, *check, *keep;
	/* The server shape (as syncshim ab's): CMD is a server, --ready PROBE
	 * says when it answers, --load runs against it (without the shim),
	 * and a drawn cut counts from the load's start. */
	const char *ready, *load;
	enum names_model names;
	double survive;                       /* --writeback adversarial:P; 0: plain */
	const char *writeback_text;           /* as given, for the report */
	uint64_t seed;
	bool json;
	unsigned timeout_s;                   /* a run with no cut, a setup, a check */
	char **cmd;
};

/* ---- the scope (ct_scope.c) ---- */

struct ct_file {
	char *path;
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

struct ct_scope {
	const struct ct_opts *o;
	char *dirs[CT_MAX_GLOBS];    /* where the globs can match: the part before the first wildcard */
	size_t ndirs;
	char work[PATH_MAX / 2];      /* the launcher's own directory: snapshot, stores */
	uint64_t work_dev, work_ino;
	struct ct_file *snap;         /* the initial state's files, when the launcher copied them (no --setup) */
	size_t nsnap;
};

int ct_scope_init(struct ct_scope *s, const struct ct_opts *o);
void ct_scope_done(struct ct_scope *s);
bool ct_in_scope(const struct ct_scope *s, const char *path);
/* The regular files in scope now. */
int ct_inventory(const struct ct_scope *s, struct ct_file **files, size_t *n);
void ct_inventory_free(struct ct_file *files, size_t n);
/* Whether anything in scope differs between two inventories. */
bool ct_inventory_changed(const struct ct_file *a, size_t na, const struct ct_file *b, size_t nb);
/* Copies the scope's files to the snapshot / puts the snapshot back. */
int ct_snapshot_take(struct ct_scope *s);
int ct_snapshot_restore(const struct ct_scope *s);
/* Copies the scope's files under dst (mirroring their absolute paths). */
int ct_copy_scope(const struct ct_scope *s, const char *dst);
/* Copies one directory's regular files into another (made). */
int ct_copy_dir(const char *src, const char *dst);
int ct_remove_tree(const char *path);

/* ---- processes (ct_run.c) ---- */

struct ct_run {
	uint64_t start_ns, end_ns;   /* CLOCK_MONOTONIC; end = the cut or the exit */
	uint64_t origin_ns;          /* the program's first record in scope (0: none seen) */
	bool cut;                    /* killed at the cut (or the timeout) */
	bool timed_out;              /* the cut was the timeout: the cut condition never came */
	int status;                  /* exit status if it ran to completion, else -1 */
	int signal;                  /* the signal that ended it, if not the cut's */
	bool stray;                  /* a process of it outlived the kill (still running) */
	/* The shim's flusher threads (syncshim-flush) of the program's first
	 * process at the cut, as /proc had them just before the kill: how
	 * many, how many were at work (running or waiting for a CPU or the
	 * disk, in fsync or fdatasync, or blocked behind a lock or another
	 * thread's sync; ct_run.c), how many inside fsync or fdatasync. A
	 * window is judged against these: an acknowledged sync overdue at the
	 * cut with every flusher asleep in its own timed wait is the shim's
	 * lateness, not the machine's. */
	int flushers, flushers_busy, flushers_syncing;
	/* the server shape */
	bool not_ready;              /* --ready never succeeded (or the server exited first) */
	uint64_t ready_ns, load_ns;  /* when the probe succeeded, when the load started */
	bool load_ended;             /* the load ended before the cut's moment: cut then */
	int load_status;             /* its exit status then (128+N: signal N) */
};

/* Runs cmd under the shim in crash-test mode with the store, cut as asked. */
int ct_run_trial(const struct ct_opts *o, const char *store, uint64_t cut_ms, struct ct_run *r);
/* /bin/sh -c line, output to out_path (if set), within timeout_s; its exit
 * status, 128+signal, or -1 (with *timed_out) if it was killed at the timeout. */
int ct_shell(const char *line, const char *out_path, unsigned timeout_s, bool *timed_out);
/* Set when SIGINT or SIGTERM asked the launcher to stop. */
extern volatile int ct_interrupted;
void ct_signals_init(void);
uint64_t ct_now_ns(void);

/* ---- one trial's outcome, and the report (ct_report.c) ---- */

enum ct_verdict { V_PASS, V_FAIL, V_UNUSABLE };

struct ct_trial {
	unsigned n;
	uint64_t planned_ms;         /* the drawn cut moment (random, after-ms) */
	uint64_t writeback_seed;     /* adversarial writeback's draws, from --seed and n */
	struct ct_run run;
	struct rb_result rb;
	bool rolled;                 /* rb is valid */
	size_t log_records;
	uint64_t log_bytes;
	enum ct_verdict verdict;
	char why[1024];              /* unusable: why; fail: the check's status */
	int check_status;
	bool check_timed_out;
	char *check_out;             /* the check's output (at most CT_OUTPUT_MAX) */
	char kept[PATH_MAX];         /* where --keep put its files, "" if not */
};

struct ct_totals {
	unsigned trials, passed, failed, unusable, cut, completed, inexact;
	uint64_t records, bytes, kept_bytes;
	double max_window_ms;
};

void ct_report_trial(const struct ct_opts *o, const struct ct_trial *t);
void ct_report_total(const struct ct_opts *o, const struct ct_totals *tot, const char *keep_note);
void ct_totals_add(struct ct_totals *tot, const struct ct_trial *t);
/* The window lost: from the oldest rolled-back record to the cut, ms; < 0 if none. */
double ct_window_ms(const struct ct_trial *t, uint64_t oldest_ns);
/* --json: one object with every trial and the total, on stdout. */
void ct_json_begin(const struct ct_opts *o);
void ct_json_trial(const struct ct_trial *t, bool first);
void ct_json_end(const struct ct_totals *tot);
/* The trial's text report into a file (kept with a failing trial). */
void ct_report_trial_to(const char *path, const struct ct_opts *o, const struct ct_trial *t);

/* Every trial, reported; the command's exit status (ct_trial.c). */
int ct_trials(const struct ct_opts *o);
int cmd_crashtest(int argc, char **argv, FILE *out, FILE *err);

#endif
