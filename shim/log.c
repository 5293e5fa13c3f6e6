/*
 * log.c - placeholder until the latency logger lands: logging stays off.
 */
#include "log.h"
#include "trace.h"

_Atomic int trace_on;

void trace_record(enum shim_op op, const struct shim_file *f, uint64_t t0, uint64_t t1,
		  int64_t bytes, int64_t r, int err)
{
	(void)op, (void)f, (void)t0, (void)t1, (void)bytes, (void)r, (void)err;
}

void log_start(const struct policy *p)
{
	(void)p;
}

void log_stop(void)
{
}

void log_before_exec(void)
{
}

void log_atfork_prepare(void)
{
}

void log_atfork_parent(void)
{
}

void log_atfork_child(void)
{
}

void log_event(const char *fmt, ...)
{
	(void)fmt;
}
