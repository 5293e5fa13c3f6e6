/*
 * log.h - the latency logger's lifecycle (the per-call hook is in trace.h).
 */
#ifndef SYNCSHIM_LOG_H
#define SYNCSHIM_LOG_H

#include "policy.h"

void log_start(const struct policy *p);
void log_stop(void);
void log_atfork_prepare(void);
void log_atfork_parent(void);
void log_atfork_child(void);

#endif
