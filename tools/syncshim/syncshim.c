/*
 * syncshim - run a program with the shim preloaded, A/B two policies,
 * propose rules, cut power, show what runs under it.
 *
 *   syncshim run [-c FILE] [-p POLICY] [-o LOG] [-m MODE] -- CMD [ARGS]
 *   syncshim check FILE [PATH...]
 *   syncshim ab [-n ROUNDS] [-o DIR] A B -- CMD [ARGS]   (ab.c, abserve.c)
 *   syncshim profile [-o INI] [-d DIR] -- CMD [ARGS]   (profile.c)
 *   syncshim crashtest [-n TRIALS] [-p POLICY | -c FILE] [--cut ...] --scope GLOB ... -- CMD [ARGS]
 *   syncshim status [PID...]   (status.c)
 *
 * main() is the table commands[] (tool.h): one line per subcommand.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crashtest.h"
#include "decide.h"
#include "elfcheck.h"
#include "policy.h"
#include "syncshim_cli.h"
#include "tool.h"

/* What follows the synopses in `syncshim --help`. */
static void usage_more(FILE *to)
{
	char names[128];
	fprintf(to, "POLICY: one of %s\n"
		    "MODE (log detail): summary | calls\n"
		    "A, B: a policy name or an ini file\n"
		    "every subcommand answers -h: syncshim SUBCOMMAND -h\n",
		sync_policy_names(names, sizeof(names)));
}

int launcher_library_path(char *out, size_t len)
{
	const char *env = getenv("SYNCSHIM_LIB");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0';
	/* The build tree; then the installed layout relative to bin/ ($(PREFIX)/lib/syncshim/,
	 * what `make install` and the Debian package lay out, wherever the tree was put);
	 * then $(PREFIX)/lib itself, where `make install` used to put it. */
	static const char *const candidates[] = { "%s/libsyncshim.so", "%s/../lib/syncshim/libsyncshim.so",
						  "%s/../lib/libsyncshim.so" };
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		snprintf(out, len, candidates[i], self);
		if (access(out, R_OK) == 0) {
			char real[PATH_MAX];
			if (realpath(out, real))
				snprintf(out, len, "%s", real);
			return 0;
		}
	}
	return -1;
}

/* Keep whatever the user preloads; add the shim after it, once. */
static int add_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1);
	if (strstr(old, lib))
		return 0;
	size_t n = strlen(old) + strlen(lib) + 2;
	char *joined = malloc(n);
	if (!joined)
		return -1;
	snprintf(joined, n, "%s:%s", old, lib);
	int r = setenv("LD_PRELOAD", joined, 1);
	free(joined);
	return r;
}

/* As shells do: 127 when the command is not there, 126 when it is but
 * cannot be run (not executable, a directory, a bad format). */
int exec_failure_status(int err)
{
	return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

static void warn_if_unreachable(const char *cmd)
{
	char path[PATH_MAX], why[256];
	if (find_in_path(cmd, path, sizeof(path)) == 0 && elf_preload_check(path, why, sizeof(why)))
		cli_err(stderr, "warning: %s is %s", path, why);
}

/* The shim takes only absolute log paths (it cannot know the directory
 * the user meant once the program has chdir'ed): -o is relative to here,
 * and checked by the same rules as SYNCSHIM_LOG. */
static int absolute_log(const char *log, char *out, size_t len)
{
	char cwd[PATH_MAX], err[POLICY_ERR_MAX];
	static struct policy p;
	if (log[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s", log);
	else if (snprintf(out, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", log) >= (int)len)
		snprintf(out, len, "%s", log); /* too long: the check below says so */
	policy_init_defaults(&p);
	if (policy_apply_env(&p, &(struct policy_env){ .log = out }, err, sizeof(err)) < 0) {
		cli_err(stderr, "%s", err);
		return -1;
	}
	return 0;
}

int shim_settings_check(const char *config, const char *policy, const char *log, const char *mode)
{
	char err[POLICY_ERR_MAX], names[128], abs_log[PATH_MAX];
	static struct policy p;
	if (config && policy_load_file(config, &p, err, sizeof(err)) < 0) {
		cli_err(stderr, "%s; nothing was run", err);
		return -1;
	}
	if (policy && sync_policy_parse(policy) < 0) {
		cli_err(stderr, "unknown policy '%s'; use one of: %s", policy, sync_policy_names(names, sizeof(names)));
		return -1;
	}
	if (mode && log_mode_parse(mode) < 0) {
		cli_err(stderr, "unknown log mode '%s'; use summary or calls", mode);
		return -1;
	}
	if (log && absolute_log(log, abs_log, sizeof(abs_log)) < 0)
		return -1;
	return 0;
}

int shim_prepare_env(const char *config, const char *policy, const char *log, const char *mode)
{
	char lib[PATH_MAX];
	if (launcher_library_path(lib, sizeof(lib)) < 0) {
		cli_err(stderr, "cannot find libsyncshim.so next to this program or in ../lib/syncshim/; "
			"set SYNCSHIM_LIB");
		return -1;
	}
	/* A person is watching: a typo stops here, before anything runs
	 * (only a bare LD_PRELOAD, in a service, falls back to passthrough). */
	if (shim_settings_check(config, policy, log, mode) < 0)
		return -1;
	unsetenv("SYNCSHIM_CONFIG");
	unsetenv("SYNCSHIM_POLICY");
	char abs[PATH_MAX];
	if (config && realpath(config, abs))
		setenv("SYNCSHIM_CONFIG", abs, 1);
	if (policy)
		setenv("SYNCSHIM_POLICY", policy, 1);
	char abs_log[PATH_MAX];
	if (log && absolute_log(log, abs_log, sizeof(abs_log)) == 0)
		setenv("SYNCSHIM_LOG", abs_log, 1);
	if (mode)
		setenv("SYNCSHIM_LOG_MODE", mode, 1);
	return add_preload(lib);
}

static int run_usage(FILE *to)
{
	char names[128];
	fprintf(to, "usage: syncshim %s\n"
		    "  runs CMD with the shim preloaded\n"
		    "  -c, --config FILE  the rules (shim.ini syntax; checked first, as syncshim check does)\n"
		    "  -p, --policy NAME  one policy for every file: %s\n"
		    "  -o, --log LOG      the latency log (%%p: the pid)\n"
		    "  -m, --mode MODE    the log's detail: summary | calls\n"
		    "  a typo in any of them is one line and exit 2, and CMD does not run\n",
		RUN_SYNOPSIS, sync_policy_names(names, sizeof(names)));
	return 0;
}

static int cmd_run(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' }, { "policy", required_argument, NULL, 'p' },
		{ "log", required_argument, NULL, 'o' },    { "mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *policy = NULL, *log = NULL, *mode = NULL;
	int c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:p:o:m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'p': policy = optarg; break;
		case 'o': log = optarg; break;
		case 'm': mode = optarg; break;
		case 'h': return run_usage(out);
		default: return cli_bad_option(argc, argv, err);
		}
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (optind >= argc) {
		cli_err(err, "no command; syncshim run -h says more");
		return EXIT_USAGE;
	}
	if (shim_prepare_env(config, policy, log, mode) < 0)
		return EXIT_USAGE;
	warn_if_unreachable(argv[optind]);
	execvp(argv[optind], argv + optind);
	int e = errno;
	cli_err(stderr, "cannot run %s: %s", argv[optind], strerror(e));
	return exec_failure_status(e);
}

/* PATH made absolute against the working directory, as the shim sees it
 * (it matches the absolute path a program opens). */
static void absolute_path(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s", path);
	else
		snprintf(out, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
}

/* Which rule PATH falls under and the decision table's row for it:
 * "what will this ini do to this file" in one command. */
static void explain_path(FILE *out, const struct policy *p, const char *path)
{
	char abs[2 * PATH_MAX];
	absolute_path(path, abs, sizeof(abs));
	const struct rule *r = policy_match(p, abs);
	if (r == &p->deflt)
		fprintf(out, "%s: no rule matches: the default, policy %s\n", abs, sync_policy_name(r->sync));
	else
		fprintf(out, "%s: rule '%s' (line %d, glob %s): policy %s\n", abs, r->name, r->line, r->glob,
			sync_policy_name(r->sync));
	fprintf(out, "  osync %s, on_close %s%s\n", osync_mode_name(r->osync), on_close_name(r->on_close),
		rule_acks_early(r) ? "; can acknowledge a sync before the device has it" : "");
	for (int c = 0; c < CALL_COUNT; c++)
		fprintf(out, "  %-16s -> %s\n", shim_call_name((enum shim_call)c),
			shim_action_name(rule_decide(r, (enum shim_call)c)));
}

static int cmd_check(int argc, char **argv, FILE *out, FILE *err)
{
	if (cli_wants_help(argc, argv)) {
		fprintf(out, "usage: syncshim %s\n"
			     "  checks the ini file; for each PATH, says which rule matches it and\n"
			     "  what each call does to it (the decision table's row)\n", CHECK_SYNOPSIS);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "--"))
		argv++, argc--;
	else if (argc >= 2 && argv[1][0] == '-' && argv[1][1])
		return cli_bad_option(argc, argv, err);
	if (argc < 2) {
		cli_err(err, "no ini file given; syncshim check -h says more");
		return EXIT_USAGE;
	}
	static struct policy p;
	char msg[POLICY_ERR_MAX];
	if (policy_load_file(argv[1], &p, msg, sizeof(msg)) < 0) {
		cli_err(err, "%s", msg);
		return EXIT_INPUT;
	}
	fprintf(out, "%s: ok, %d rule%s, default policy %s, live counters %s\n", argv[1], p.nrules,
		p.nrules == 1 ? "" : "s", sync_policy_name(p.deflt.sync), policy_live_wanted(&p) ? "on" : "off");
	for (int i = 2; i < argc; i++)
		explain_path(out, &p, argv[i]);
	return 0;
}

static const struct tool_cmd commands[] = {
	{ "run", cmd_run, RUN_SYNOPSIS, "run a program with the shim preloaded, under a policy or an ini" },
	{ "check", cmd_check, CHECK_SYNOPSIS, "check an ini; say which rule each PATH falls under and what it does" },
	{ "ab", cmd_ab, AB_SYNOPSIS, "the same workload (or service) under two policies, A B A B; one verdict" },
	{ "profile", cmd_profile, PROFILE_SYNOPSIS, "run a program or service once and propose the rules for its files" },
	{ "crashtest", cmd_crashtest, CRASHTEST_SYNOPSIS, "cut a program's power again and again; check what survives" },
	{ "status", cmd_status, STATUS_SYNOPSIS, "which running processes are under syncshim: rules, files, data at risk" },
};

static const struct tool syncshim_tool = {
	.name = "syncshim",
	.cmds = commands,
	.ncmds = sizeof(commands) / sizeof(commands[0]),
	.more = usage_more,
};

int main(int argc, char **argv)
{
	return tool_dispatch(&syncshim_tool, argc, argv, stdout, stderr);
}
