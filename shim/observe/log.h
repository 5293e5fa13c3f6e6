/*
 * log.h - the latency logger's lifecycle (the per-call hook is in trace.h).
 */
#ifndef SYNCSHIM_LOG_H
#define SYNCSHIM_LOG_H

#include <stdbool.h>
#include <sys/types.h>

#include "policy.h"

struct shim_file;

/* At load: counting starts; the file and the logger thread wait. */
void log_start(const struct policy *p);
/* Exit, _exit or exec: final blocks and the trailer (status, or -1 when
 * unknown). A process that never wrote, synced or renamed a tracked file
 * writes no log at all (a fork child that only execs, /bin/true). */
void log_stop(int exit_status);
/* From calls that may create files and threads (opens, syncs, renames):
 * the logger thread, and the log file once there is something to log. */
void log_maybe_start(void);
void log_thread_quiesced(void); /* set*id ended the logger thread: the next call starts another */
void log_atfork_child(void);
/* The thread ended (lifecycle.c): give its counting slot back. */
void log_thread_ended(void);
/* How a thread that took a counting slot asks to hear of its end
 * (lifecycle.c's key, which then calls log_thread_ended): set at load
 * (init.c), so the log calls no layer above it. */
void log_set_thread_end_watch(void (*watch)(void));

/* A new file's FILE block: made before the registry lock (allocates,
 * statfs), posted under it (fills in the id, queues; no allocation). NULL
 * when the process does not log. */
struct log_notice;
struct log_notice *log_file_notice_new(const char *path, const char *rule_name);
void log_file_notice_post(struct log_notice *n, const struct shim_file *f);
void log_notice_free(struct log_notice *n);
/* f leaves the registry (its lock held): its last data-at-risk figures
 * go into the next RISK block. Lock-free, no allocation. */
void log_file_gone(struct shim_file *f);

/* A timestamped event in the log: kind is a LOGEV_* (logfmt.h), file and
 * err may be 0. Allocates: never under the registry or regions lock. */
void log_event(int kind, const struct shim_file *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A reload swapped in p: its rule table goes into the log. */
void log_policy_changed(const struct policy *p);

/* The log's descriptor, for shimfd.c. */
bool log_identity(dev_t *dev, ino_t *ino);
void log_fd_lost(int fd);
void log_vacate(int fd);
bool log_release_fd(void);

#endif
