/*
 * fuzz_suggest.c - libFuzzer target: the rules `syncshim profile` and
 * `synclat suggest` propose, written and read back.
 *
 * The input is a list of file names separated by NUL bytes (the first
 * byte of each picks its policy); any byte may be in a name, as in a real
 * one. Each name goes the way a profiled file goes: its glob
 * (suggest_pattern), and, when suggest_ini_safe says an ini value can hold
 * it, a rule written by suggest_write_rule with the name in its reason
 * (the comment above the rule). The text is read by the shim's own parser.
 * What must hold: it loads; it holds exactly the rules written, in order,
 * each with its glob byte for byte, its policy and nothing else (no
 * osync, on_close, real_sync or knob that no rule asked for); the file
 * falls under a rule with its policy; the [shim] section is the default.
 * A name that writes a key, a section or a comment anywhere fails here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "suggest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NAMES 64 /* the shim's rule limit */

static void die_unless(int ok, const char *what)
{
	if (!ok) {
		(void)what; /* visible in the debugger; abort() makes libFuzzer save the input */
		abort();
	}
}

static const int policies[] = { SYNC_PASSTHROUGH, SYNC_DEFER, SYNC_GROUP, SYNC_FDATASYNC, SYNC_NOOP };

/* A rule holds only what suggest_write_rule wrote: every other field as
 * in a rule of the same path, sync and max_delay_ms written by hand. */
static void only_written(const struct rule *r, int policy, unsigned delay)
{
	static struct policy ref;
	char text[256], err[POLICY_ERR_MAX];
	int n = snprintf(text, sizeof(text), "[rule r]\npath = /r\nsync = %s\n%s%u\n",
			 sync_policy_name((enum sync_policy)policy), policy == SYNC_DEFER ? "max_delay_ms = " : "; ",
			 delay);
	die_unless(policy_load_mem(text, (size_t)n, "ref", &ref, err, sizeof(err)) == 0, "reference rule");
	const struct rule *d = &ref.rules[0];
	die_unless(r->sync == d->sync, "policy");
	die_unless(r->osync == d->osync && r->real_sync == d->real_sync && r->on_close == d->on_close,
		   "osync, real_sync or on_close from a name");
	die_unless(r->max_delay_ms == d->max_delay_ms && r->max_bytes == d->max_bytes &&
		   r->max_calls == d->max_calls && r->writeback_bytes == d->writeback_bytes &&
		   r->group_wait_us == d->group_wait_us && r->max_at_risk_ms == d->max_at_risk_ms,
		   "a knob from a name");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char paths[MAX_NAMES][512], globs[MAX_NAMES][512];
	static int pol[MAX_NAMES];
	static struct policy p, defaults;
	char err[POLICY_ERR_MAX], reason[700];
	int n = 0;
	char *text = NULL;
	size_t tlen = 0;
	FILE *mem = open_memstream(&text, &tlen);
	if (!mem)
		return 0;
	fputs("[shim]\npolicy = passthrough\n", mem);
	for (size_t at = 0; at < size && n < MAX_NAMES;) {
		const uint8_t *end = memchr(data + at, '\0', size - at);
		size_t len = end ? (size_t)(end - (data + at)) : size - at;
		if (len >= 2 && len < 300) {
			int policy = policies[data[at] % (sizeof(policies) / sizeof(policies[0]))];
			/* a profiled file's name is absolute */
			snprintf(paths[n], sizeof(paths[n]), "/%.*s", (int)(len - 1), (const char *)data + at + 1);
			suggest_pattern(paths[n], globs[n], sizeof(globs[n]));
			char why[256];
			if (suggest_ini_safe(globs[n]) && glob_check(globs[n], why, sizeof(why)) == 0) {
				snprintf(reason, sizeof(reason), "1 file: %s, synced often", paths[n]);
				char name[16];
				snprintf(name, sizeof(name), "r%d", n);
				suggest_write_rule(mem, name, globs[n], policy, 10 + (unsigned)n, reason);
				pol[n++] = policy;
			} else {
				/* left out: what no ini line can hold exactly (a control
				 * byte, a space at the end, too long), or no glob at all */
			}
		}
		at += len + 1;
	}
	if (fclose(mem) != 0) {
		free(text);
		return 0;
	}
	die_unless(policy_load_mem(text, tlen, "proposal", &p, err, sizeof(err)) == 0, "the proposal does not load");
	policy_init_defaults(&defaults);
	die_unless(p.nrules == n, "rule count");
	die_unless(p.deflt.sync == SYNC_PASSTHROUGH && p.deflt.osync == defaults.deflt.osync &&
		   p.deflt.on_close == defaults.deflt.on_close && p.reload == defaults.reload &&
		   p.live == defaults.live && !strcmp(p.log_path, defaults.log_path), "[shim] from a name");
	for (int i = 0; i < n; i++) {
		const struct rule *r = &p.rules[i];
		die_unless(!strcmp(r->glob, globs[i]), "glob read back");
		only_written(r, pol[i], 10 + (unsigned)i);
		die_unless(glob_match(r->glob, paths[i]), "the file does not match its own glob");
		const struct rule *m = policy_match(&p, paths[i]);
		die_unless(m != &p.deflt, "the file falls under no rule");
	}
	free(text);
	return 0;
}
