/*
 * decide.c - what each policy does to each call: the one table.
 *
 * Rows are sync policies, columns are calls. Two columns are decided by
 * a rule's other knobs instead: an O_SYNC/O_DSYNC open by its osync mode
 * (auto follows the policy), a close by on_close.
 */
#include <stdarg.h>
#include <stdio.h>

#include "decide.h"

#define P ACT_PASS
#define B ACT_BARRIER

static const unsigned char by_sync[SYNC_POLICY_COUNT][CALL_COUNT] = {
	[SYNC_PASSTHROUGH] = { [CALL_WRITE] = P, [CALL_FSYNC] = P, [CALL_FDATASYNC] = P, [CALL_MSYNC] = P,
			       [CALL_SYNC_FILE_RANGE] = P, [CALL_SYNCFS] = B, [CALL_PUBLISH] = B,
			       [CALL_EXEC] = B, [CALL_EXIT] = B },
	/* msync(MS_SYNC) is already data-only on Linux */
	[SYNC_FDATASYNC] = { [CALL_WRITE] = P, [CALL_FSYNC] = ACT_DATASYNC, [CALL_FDATASYNC] = P,
			     [CALL_MSYNC] = P, [CALL_SYNC_FILE_RANGE] = P, [CALL_SYNCFS] = B,
			     [CALL_PUBLISH] = B, [CALL_EXEC] = B, [CALL_EXIT] = B },
	[SYNC_NOOP] = { [CALL_WRITE] = P, [CALL_FSYNC] = ACT_NOOP, [CALL_FDATASYNC] = ACT_NOOP,
			[CALL_MSYNC] = ACT_NOOP, [CALL_SYNC_FILE_RANGE] = ACT_NOOP, [CALL_SYNCFS] = ACT_NOOP,
			[CALL_PUBLISH] = B, [CALL_EXEC] = B, [CALL_EXIT] = B },
	[SYNC_DEFER] = { [CALL_WRITE] = ACT_DEFER, [CALL_FSYNC] = ACT_DEFER, [CALL_FDATASYNC] = ACT_DEFER,
			 [CALL_MSYNC] = ACT_DEFER, [CALL_SYNC_FILE_RANGE] = P, [CALL_SYNCFS] = B,
			 [CALL_PUBLISH] = B, [CALL_EXEC] = B, [CALL_EXIT] = B },
	/* one mapping's msync is not batched; the same durability as passthrough */
	[SYNC_GROUP] = { [CALL_WRITE] = P, [CALL_FSYNC] = ACT_GROUP, [CALL_FDATASYNC] = ACT_GROUP,
			 [CALL_MSYNC] = P, [CALL_SYNC_FILE_RANGE] = P, [CALL_SYNCFS] = B, [CALL_PUBLISH] = B,
			 [CALL_EXEC] = B, [CALL_EXIT] = B },
};

#undef P
#undef B

static enum shim_action open_sync_action(enum osync_mode m)
{
	switch (m) {
	case OSYNC_DSYNC:
		return ACT_DATASYNC;
	case OSYNC_STRIP:
		return ACT_STRIP;
	case OSYNC_DEFER:
		return ACT_DEFER;
	default:
		return ACT_PASS;
	}
}

enum shim_action policy_decide(enum sync_policy sync, enum osync_mode osync, enum on_close on_close,
			       enum shim_call call)
{
	if ((unsigned)sync >= SYNC_POLICY_COUNT || (unsigned)call >= CALL_COUNT)
		return ACT_PASS;
	if (call == CALL_OPEN_SYNC) {
		struct rule r = { .sync = sync, .osync = osync };
		return open_sync_action(rule_osync(&r));
	}
	if (call == CALL_CLOSE)
		return on_close == ON_CLOSE_SYNC ? ACT_BARRIER : ACT_PASS;
	return (enum shim_action)by_sync[sync][call];
}

static const char *const call_names[CALL_COUNT] = {
	"O_SYNC open", "write", "fsync", "fdatasync", "msync", "sync_file_range", "syncfs, sync",
	"close", "rename, link", "exec", "exit",
};

static const char *const action_names[ACT_COUNT] = {
	"pass", "fdatasync", "strip", "no-op", "defer", "group", "barrier",
};

bool rule_acks_early(const struct rule *r)
{
	static const enum shim_call syncs[] = { CALL_OPEN_SYNC, CALL_FSYNC, CALL_FDATASYNC, CALL_MSYNC,
						CALL_SYNC_FILE_RANGE, CALL_SYNCFS };
	for (size_t i = 0; i < sizeof(syncs) / sizeof(syncs[0]); i++) {
		enum shim_action a = rule_decide(r, syncs[i]);
		if (a == ACT_NOOP || a == ACT_DEFER || a == ACT_STRIP)
			return true;
	}
	return false;
}

bool policy_live_wanted(const struct policy *p)
{
	if (p->live_set)
		return p->live;
	if (rule_acks_early(&p->deflt))
		return true;
	for (int i = 0; i < p->nrules && i < POLICY_MAX_RULES; i++)
		if (rule_acks_early(&p->rules[i]))
			return true;
	return false;
}

const char *shim_call_name(enum shim_call c)
{
	return (unsigned)c < CALL_COUNT ? call_names[c] : "?";
}

const char *shim_action_name(enum shim_action a)
{
	return (unsigned)a < ACT_COUNT ? action_names[a] : "?";
}

struct md {
	char *buf;
	size_t len, used;
};

__attribute__((format(printf, 2, 3))) static void md_put(struct md *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->used < o->len ? o->len - o->used : 0;
	va_start(ap, fmt);
	int n = vsnprintf(room ? o->buf + o->used : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used += (size_t)n;
}

size_t policy_decisions_markdown(char *buf, size_t len)
{
	struct md o = { buf, len, 0 };
	md_put(&o, "| policy |");
	for (int c = 0; c < CALL_COUNT; c++)
		md_put(&o, " %s |", call_names[c]);
	md_put(&o, "\n|---|");
	for (int c = 0; c < CALL_COUNT; c++)
		md_put(&o, "---|");
	md_put(&o, "\n");
	for (int s = 0; s < SYNC_POLICY_COUNT; s++) {
		md_put(&o, "| `%s` |", sync_policy_name((enum sync_policy)s));
		for (int c = 0; c < CALL_COUNT; c++)
			md_put(&o, " %s |", action_names[policy_decide((enum sync_policy)s, OSYNC_AUTO,
									ON_CLOSE_ASYNC, (enum shim_call)c)]);
		md_put(&o, "\n");
	}
	if (!len)
		return 0;
	return o.used < len ? o.used : len - 1;
}
