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
/* A timestamped text event in the log (reloads, sync errors). */
void log_event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
