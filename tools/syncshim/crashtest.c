/*
 * crashtest.c - `syncshim crashtest`: the command line; the trials run
 * in ct_trial.c.
 *
 * Each trial: back to the initial state (--setup, or the launcher's copy
 * of the scope), a fresh undo store, the program under the shim in
 * crash-test mode, the cut, the rollback to what was durable, the check.
 * The verdict comes from the check alone, run on files the rollback left;
 * the report adds what was lost and how old it was. A trial the launcher
 * cannot vouch for (damaged log, nothing recorded though files changed, a
 * rollback that could not finish) is "unusable", never a pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abserve.h"
#include "crashtest.h"
#include "elfcheck.h"
#include "policy.h"
#include "syncshim_cli.h"
#include "tool.h"

static void ct_usage(FILE *to)
{
	char names[128];
	fprintf(to,
		"usage: syncshim crashtest [-n|--trials TRIALS] [-p|--policy POLICY | -c|--config FILE] [--cut CUT] --scope GLOB [--scope GLOB]...\n"
		"           [--setup CMD] [--check CMD] [--keep DIR] [--names strict|ext4-ordered]\n"
		"           [--writeback plain|adversarial[:P]] [--seed N]\n"
		"           [--timeout SECONDS] [--json] -- CMD [ARGS]\n"
		"       syncshim crashtest [options] [--setup CMD] --ready PROBE --load CMD [--check CMD] -- SERVER [ARGS]\n"
		"  Runs CMD TRIALS times (default 10) under the shim, cuts its power at CUT (a SIGKILL to its\n"
		"  process group), rolls every file in scope back to what was durable, then runs --check.\n"
		"  CUT: random:MIN-MAX (ms after the program's first record in scope, drawn from --seed;\n"
		"       default random:50-500),\n"
		"       after-syncs:N (once N syncs completed), after-ms:T\n"
		"  GLOB: the files to track (absolute, or relative to here; shim.ini glob syntax)\n"
		"  CMD (--setup, --check): a /bin/sh -c line; --setup makes the initial state (else the\n"
		"       scope is copied before trial 1); a --check that exits non-zero fails the trial\n"
		"  the server form: SERVER under the shim, --ready PROBE until it answers (tcp:HOST:PORT,\n"
		"       unix:PATH, file:PATH, cmd:COMMAND, pgsql:PSQL-ARGS), then --load (sh -c, without the\n"
		"       shim); a drawn cut counts from the load's start, a load that ends first is cut at its end\n"
		"  --setup, --load and --check run without the shim; --check runs after the rollback, e.g. the\n"
		"       service's own integrity check (redis-check-aof, pg_amcheck after a start that recovers)\n"
		"  a server that runs as another user (runuser, su) records into a store given to the owner of\n"
		"       the first --scope directory; one that cannot is named, and crashtest exits 2\n"
		"  --writeback adversarial[:P]: each page of the unsynced writes keeps its newest write with\n"
		"       probability P (default 0.5), as the kernel's writeback may have; plain (the default)\n"
		"       undoes every unsynced write\n"
		"  POLICY: one of %s\n",
		sync_policy_names(names, sizeof(names)));
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_cut(const char *spec, struct ct_cut *c)
{
	uint64_t a, b;
	const char *colon = strchr(spec, ':');
	if (!colon)
		return -1;
	const char *v = colon + 1;
	if (strncmp(spec, "random:", 7) == 0) {
		char lo[32];
		const char *dash = strchr(v, '-');
		if (!dash || (size_t)(dash - v) >= sizeof(lo))
			return -1;
		snprintf(lo, sizeof(lo), "%.*s", (int)(dash - v), v);
		if (parse_u64(lo, 86400000, &a) < 0 || parse_u64(dash + 1, 86400000, &b) < 0 || a > b)
			return -1;
		*c = (struct ct_cut){ CUT_RANDOM, a, b, 0 };
	} else if (strncmp(spec, "after-syncs:", 12) == 0) {
		if (parse_u64(v, 1000000000, &a) < 0 || a == 0)
			return -1;
		*c = (struct ct_cut){ CUT_AFTER_SYNCS, 0, 0, (unsigned)a };
	} else if (strncmp(spec, "after-ms:", 9) == 0) {
		if (parse_u64(v, 86400000, &a) < 0)
			return -1;
		*c = (struct ct_cut){ CUT_AFTER_MS, a, a, 0 };
	} else {
		return -1;
	}
	return 0;
}

/* A scope glob, made absolute from here; checked as shim.ini's are. */
static int add_glob(struct ct_opts *o, const char *g)
{
	char cwd[PATH_MAX], why[256], *abs;
	if (o->nglobs == CT_MAX_GLOBS) {
		cli_err(stderr, "at most %d --scope globs", CT_MAX_GLOBS);
		return -1;
	}
	if (g[0] == '/')
		abs = strdup(g);
	else if (!getcwd(cwd, sizeof(cwd)) || asprintf(&abs, "%s/%s", strcmp(cwd, "/") ? cwd : "", g) < 0)
		abs = NULL;
	if (!abs)
		return -1;
	if (glob_check(abs, why, sizeof(why)) < 0 || strlen(abs) >= POLICY_GLOB_MAX) {
		cli_err(stderr, "--scope %s: %s", g, strlen(abs) >= POLICY_GLOB_MAX ?
			"too long" : why);
		free(abs);
		return -1;
	}
	o->globs[o->nglobs++] = abs;
	return 0;
}

enum { O_CUT = 256, O_SCOPE, O_SETUP, O_CHECK, O_KEEP, O_NAMES, O_SEED, O_JSON, O_TIMEOUT, O_WRITEBACK, O_READY,
       O_LOAD };

static const struct option long_opts[] = {
	{ "cut", required_argument, NULL, O_CUT },         { "scope", required_argument, NULL, O_SCOPE },
	{ "setup", required_argument, NULL, O_SETUP },     { "check", required_argument, NULL, O_CHECK },
	{ "keep", required_argument, NULL, O_KEEP },       { "names", required_argument, NULL, O_NAMES },
	{ "seed", required_argument, NULL, O_SEED },       { "json", no_argument, NULL, O_JSON },
	{ "timeout", required_argument, NULL, O_TIMEOUT }, { "writeback", required_argument, NULL, O_WRITEBACK },
	{ "ready", required_argument, NULL, O_READY },     { "load", required_argument, NULL, O_LOAD },
	{ "help", no_argument, NULL, 'h' },
	{ "trials", required_argument, NULL, 'n' },        { "policy", required_argument, NULL, 'p' },
	{ "config", required_argument, NULL, 'c' },
	{ NULL, 0, NULL, 0 },
};

/* One option; 0, 1 for -h, -1 (with a message) for a bad value. */
static int take_opt(struct ct_opts *o, int c, const char *v)
{
	uint64_t n;
	int m;
	switch (c) {
	case 'n': if (parse_u64(v, 100000, &n) < 0 || !n) goto bad; o->trials = (unsigned)n; return 0;
	case 'p': o->policy = v; return 0;
	case 'c': o->config = v; return 0;
	case O_CUT: if (parse_cut(v, &o->cut) < 0) goto bad; o->cut_text = v; return 0;
	case O_SCOPE: return add_glob(o, v);
	case O_SETUP: o->setup = v; return 0;
	case O_CHECK: o->check = v; return 0;
	case O_READY: if (ab_probe_valid(v) < 0) goto bad_probe; o->ready = v; return 0;
	case O_LOAD: o->load = v; return 0;
	case O_KEEP: o->keep = v; return 0;
	case O_NAMES: if ((m = names_model_parse(v)) < 0) goto bad; o->names = (enum names_model)m; return 0;
	case O_WRITEBACK: if (writeback_parse(v, &o->survive) < 0) goto bad; o->writeback_text = v; return 0;
	case O_SEED: if (parse_u64(v, UINT64_MAX, &o->seed) < 0) goto bad; return 0;
	case O_JSON: o->json = true; return 0;
	case O_TIMEOUT: if (parse_u64(v, 86400, &n) < 0 || !n) goto bad; o->timeout_s = (unsigned)n; return 0;
	case 'h': return 1;
	default: return -2; /* getopt's: the caller names it */
	}
bad:
	cli_err(stderr, "bad value '%s'", v);
	return -1;
bad_probe:
	cli_err(stderr, "bad --ready '%s'; use tcp:HOST:PORT, unix:PATH, file:PATH, cmd:COMMAND or pgsql:PSQL-ARGS", v);
	return -1;
}

/* The policy or config, and CMD, checked before any trial: a trial that
 * silently ran as passthrough, or recorded nothing, would prove nothing. */
static int check_setup(const struct ct_opts *o)
{
	char path[PATH_MAX], why[256];
	if (o->policy && o->config) {
		cli_err(stderr, "-p and -c: give one");
		return -1;
	}
	if (!o->ready != !o->load) {
		cli_err(stderr, "a server needs both --ready PROBE and --load CMD");
		return -1;
	}
	if (shim_settings_check(o->config, o->policy, NULL, NULL) < 0)
		return -1;
	if (find_in_path(o->cmd[0], path, sizeof(path)) < 0) {
		cli_err(stderr, "cannot run %s: %s", o->cmd[0], strerror(errno));
		return -1;
	}
	if (elf_preload_check(path, why, sizeof(why)) == PRELOAD_NEVER) {
		cli_err(stderr, "%s is %s; the shim could record nothing in it", path, why);
		return -1;
	}
	return 0;
}

/* 0 to go on, 1 after -h, -1 after one line for a usage error. */
static int parse_args(int argc, char **argv, struct ct_opts *o)
{
	*o = (struct ct_opts){ .trials = 10, .cut_text = "random:50-500", .timeout_s = 60, .writeback_text = "plain",
			       .seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) };
	parse_cut(o->cut_text, &o->cut);
	optind = 1;
	opterr = 0;
	int c, r;
	while ((c = getopt_long(argc, argv, "+n:p:c:h", long_opts, NULL)) != -1)
		if ((r = take_opt(o, c, optarg)) != 0) {
			if (r == -2)
				cli_bad_option(argc, argv, stderr);
			return r < 0 ? -1 : r;
		}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc || !o->nglobs) {
		cli_err(stderr, "%s; syncshim crashtest -h says more", optind >= argc ? "no command" : "no --scope");
		return -1;
	}
	o->cmd = argv + optind;
	return check_setup(o);
}

int cmd_crashtest(int argc, char **argv, FILE *out, FILE *err)
{
	(void)err;
	static struct ct_opts o;
	int r = parse_args(argc, argv, &o);
	if (r != 0) {
		if (r > 0)
			ct_usage(out);
		return r > 0 ? 0 : EXIT_USAGE;
	}
	r = ct_trials(&o);
	for (size_t i = 0; i < o.nglobs; i++)
		free(o.globs[i]);
	return r;
}
