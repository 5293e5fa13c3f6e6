/*
 * fuzz_ini.c - libFuzzer target: the ini parser and rule loader.
 *
 * Any bytes are a config. A config that loads must format to ini text
 * (policy_format) that loads again to the same policy, and every rule it
 * holds must be usable by policy_match. The first three lines of the input
 * also go through the environment's overrides, which share the checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die_unless(int ok, const char *what)
{
	if (!ok) {
		(void)what; /* visible in the debugger; abort() makes libFuzzer save the input */
		abort();
	}
}

static void same_rule(const struct rule *a, const struct rule *b)
{
	die_unless(!strcmp(a->name, b->name) && !strcmp(a->glob, b->glob), "rule name/glob");
	die_unless(a->sync == b->sync && a->osync == b->osync && a->real_sync == b->real_sync &&
		   a->on_close == b->on_close, "rule enums");
	die_unless(a->max_delay_ms == b->max_delay_ms && a->max_bytes == b->max_bytes &&
		   a->max_calls == b->max_calls && a->writeback_bytes == b->writeback_bytes &&
		   a->group_wait_us == b->group_wait_us && a->max_at_risk_ms == b->max_at_risk_ms,
		   "rule numbers");
}

static void round_trip(const struct policy *p)
{
	static char text[64 * 1024];
	static struct policy q;
	char err[POLICY_ERR_MAX];
	size_t n = policy_format(p, text, sizeof(text));

	die_unless(n < sizeof(text) - 1, "format truncated");
	die_unless(policy_load_mem(text, n, "formatted", &q, err, sizeof(err)) == 0, "reload failed");
	same_rule(&p->deflt, &q.deflt);
	die_unless(p->nrules == q.nrules, "rule count");
	for (int i = 0; i < p->nrules; i++)
		same_rule(&p->rules[i], &q.rules[i]);
	die_unless(!strcmp(p->log_path, q.log_path) && p->log_mode == q.log_mode &&
		   p->max_flushers == q.max_flushers && p->ring_records == q.ring_records &&
		   p->reload == q.reload && p->unreported_errors == q.unreported_errors &&
		   p->live == q.live && !strcmp(p->live_dir, q.live_dir), "globals");
	for (int i = 0; i < p->nrules; i++)
		die_unless(policy_match(p, p->rules[i].glob) != NULL, "match");
}

/* Lines 1-5 of the input as SYNCSHIM_POLICY, _LOG, _LOG_MODE, _LIVE and
 * _LIVE_DIR. */
static void env_lines(const uint8_t *data, size_t size)
{
	static char buf[5][256];
	const char *v[5] = { NULL, NULL, NULL, NULL, NULL };
	size_t at = 0;
	struct policy p;
	char err[POLICY_ERR_MAX];

	for (int i = 0; i < 5 && at < size; i++) {
		size_t n = 0;
		while (at < size && data[at] != '\n' && n < sizeof(buf[i]) - 1)
			buf[i][n++] = (char)data[at++];
		buf[i][n] = '\0';
		v[i] = buf[i];
		at++;
	}
	policy_init_defaults(&p);
	if (policy_apply_env(&p, &(struct policy_env){ v[0], v[1], v[2], v[3], v[4], NULL }, err, sizeof(err)) < 0)
		die_unless(err[0] && !strchr(err, '\n'), "env error message");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy p;
	char err[POLICY_ERR_MAX];

	if (policy_load_mem((const char *)data, size, "fuzz.ini", &p, err, sizeof(err)) == 0)
		round_trip(&p);
	else
		die_unless(!strncmp(err, "fuzz.ini", 8) && !strchr(err, '\n'), "error message");
	env_lines(data, size);
	return 0;
}
