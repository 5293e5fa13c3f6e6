/*
 * log.h - the latency logger's lifecycle (the per-call hook is in trace.h).
 */
#ifndef SYNCSHIM_LOG_H
#define SYNCSHIM_LOG_H

#include "policy.h"

void log_start(const struct policy *p);
void log_stop(void);
/* The image is about to be replaced: finish the log as at exit. */
void log_before_exec(void);
void log_atfork_prepare(void);
void log_atfork_parent(void);
void log_atfork_child(void);
/* A timestamped event in the log: kind is a LOGEV_* (logfmt.h), file and
 * err may be 0. */
struct shim_file;
void log_event(int kind, const struct shim_file *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A reload swapped in p: its rule table goes into the log. */
void log_policy_changed(const struct policy *p);
/* The shim met a new file (registry lock held): announce it in the log. */
void log_file_created(const struct shim_file *f);

#endif
