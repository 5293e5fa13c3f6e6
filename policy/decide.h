/*
 * decide.h - what each policy does to each call: the one table.
 *
 * The shim's wrappers ask policy_decide() and carry out the answer; no
 * other code interprets a sync policy, an osync mode or on_close. README's
 * policy table is this table printed (policy_decisions_markdown), and a
 * test holds the two together.
 */
#ifndef SYNCSHIM_DECIDE_H
#define SYNCSHIM_DECIDE_H

#include <stddef.h>

#include "policy.h"

/* Every call a policy can change. */
enum shim_call {
	CALL_OPEN_SYNC,       /* open asking O_SYNC/O_DSYNC; pwritev2 with RWF_SYNC/RWF_DSYNC */
	CALL_WRITE,           /* write, pwrite, writev, pwritev, pwritev2 */
	CALL_FSYNC,
	CALL_FDATASYNC,
	CALL_MSYNC,           /* msync(MS_SYNC) of a file mapping */
	CALL_SYNC_FILE_RANGE,
	CALL_SYNCFS,          /* syncfs; sync() by the [shim] default */
	CALL_CLOSE,           /* close, close_range, closefrom, fclose, dup2 over */
	CALL_PUBLISH,         /* rename, renameat, renameat2, link, linkat */
	CALL_EXEC,            /* the exec family */
	CALL_EXIT,            /* exit, _exit, _Exit, return from main */
	CALL_COUNT
};

/* What happens to it. */
enum shim_action {
	ACT_PASS,     /* the real call, unchanged */
	ACT_DATASYNC, /* fsync becomes fdatasync; O_SYNC becomes O_DSYNC */
	ACT_STRIP,    /* O_SYNC/O_DSYNC dropped */
	ACT_NOOP,     /* the descriptor checked, no I/O, 0 */
	ACT_DEFER,    /* a sync: returns at once, the flusher syncs within the window;
	               * an O_SYNC open: the flag dropped, each write such a request;
	               * a write: counted toward the window's byte threshold */
	ACT_GROUP,    /* waits for a real sync begun after the call, shared by concurrent callers */
	ACT_BARRIER,  /* pending deferred syncs complete first (the file's, or all), then the call */
	ACT_COUNT
};

enum shim_action policy_decide(enum sync_policy sync, enum osync_mode osync, enum on_close on_close,
			       enum shim_call call);
static inline enum shim_action rule_decide(const struct rule *r, enum shim_call call)
{
	return policy_decide(r->sync, r->osync, r->on_close, call);
}

/* True when the rule can acknowledge a sync before the device has it:
 * a sync call deferred or made a no-op, an O_SYNC open stripped or deferred. */
bool rule_acks_early(const struct rule *r);
/* Whether the live counters are published: `live` when it was given,
 * else on exactly when some rule (or the default) acknowledges early,
 * since that is where data can be at risk. */
bool policy_live_wanted(const struct policy *p);

const char *shim_call_name(enum shim_call c);
const char *shim_action_name(enum shim_action a);

/* The table as markdown, one row per policy with the default knobs (what
 * README shows). Returns bytes written excluding NUL, truncated to len-1. */
size_t policy_decisions_markdown(char *buf, size_t len);

#endif
