/*
 * ab.c - `syncshim ab`: the same workload under two policies, side by side.
 *
 * Rounds alternate A B A B ... so drift on a shared, noisy machine (page
 * cache, other tenants, thermal) hits both sides alike. Every run logs to
 * its own file (%p: a forked child logs beside its parent), all logs are
 * kept, and the merged A runs are compared with the merged B runs by
 * `synclat compare`, which also draws the plot.
 *
 * Only this invocation's logs are compared: their names carry a run tag
 * (A-1.rTAG.PID.log), so logs an earlier run left in -o DIR stay there
 * untouched and out of the comparison. A command the shim cannot reach
 * (static, Go, setuid ...) is refused before any round: its A/B would
 * compare nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abserve.h"
#include "elfcheck.h"
#include "policy.h"
#include "report.h"
#include "syncshim_cli.h"
#include "tool.h"

#define MAX_LOGS 4096

struct side {
	char tag;            /* 'A' or 'B' */
	const char *spec;    /* what the user wrote */
	const char *policy;  /* a policy name, or NULL */
	const char *config;  /* an ini file, or NULL */
	double total_s;
	int failures;
};

static void ab_usage(FILE *to)
{
	char names[128];
	fprintf(to, "usage: syncshim " AB_SYNOPSIS "\n"
		    "  -n, --rounds N (default 3); -o, --out DIR (kept); -m, --mode summary|calls\n"
		    "  A, B: a policy (%s) or an ini file\n"
		    "  the service form: per round, A B A B: --setup (sh -c), SERVER under the side's\n"
		    "  policy in its own process group, --ready PROBE until it succeeds (tcp:HOST:PORT,\n"
		    "  unix:PATH, file:PATH, cmd:COMMAND, pgsql:PSQL-ARGS\n"
		    "  (psql runs SELECT 1); at most --timeout SECONDS, default 30), --load\n"
		    "  (sh -c, without the shim), then SIGTERM, SIGKILL after 10 s; --metric REGEX: the\n"
		    "  load's figure from its output (its first group), else the load's wall time.\n"
		    "  Helpers see SYNCSHIM_AB_ROUND, SYNCSHIM_AB_SIDE, SYNCSHIM_AB_DIR.\n",
		sync_policy_names(names, sizeof(names)));
}

/* A side is a policy name or an ini that check's parser accepts: a typo
 * stops ab before any round, rather than comparing passthrough with
 * passthrough under a confident verdict. */
static int side_parse(struct side *s, char tag, const char *spec)
{
	s->tag = tag;
	s->spec = spec;
	if (sync_policy_parse(spec) >= 0) {
		s->policy = spec;
		return 0;
	}
	struct stat st;
	if (stat(spec, &st) < 0) {
		char names[128];
		cli_err(stderr, "side %c: '%s' is neither a policy (%s) nor an ini file; nothing was run", tag, spec,
			sync_policy_names(names, sizeof(names)));
		return -1;
	}
	s->config = spec;
	return shim_settings_check(s->config, NULL, NULL, NULL);
}

/* ".rTAG." in every log name of this invocation: seconds and pid. */
static char run_tag[64];

static void make_run_tag(void)
{
	snprintf(run_tag, sizeof(run_tag), ".r%lld-%d.", (long long)time(NULL), (int)getpid());
}

static int run_once(const struct side *s, int round, const char *dir, const char *mode,
		    char **cmd, double *secs)
{
	char log[PATH_MAX];
	if (snprintf(log, sizeof(log), "%s/%c-%d%s%%p.log", dir, s->tag, round, run_tag) >= (int)sizeof(log))
		return -1;
	double t0 = tool_mono_s();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (shim_prepare_env(s->config, s->policy, log, mode ? mode : "summary") < 0)
			_exit(127);
		execvp(cmd[0], cmd);
		int e = errno;
		cli_err(stderr, "cannot run %s: %s", cmd[0], strerror(e));
		_exit(exec_failure_status(e));
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*secs = tool_mono_s() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int make_dir(char *dir, size_t len, const char *want)
{
	if (want) {
		snprintf(dir, len, "%s", want);
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			cli_err(stderr, "cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
		return 0;
	}
	snprintf(dir, len, "syncshim-ab.XXXXXX");
	if (!mkdtemp(dir)) {
		cli_err(stderr, "cannot create a directory here: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* argv for synclat compare: this run's logs "A-*" and "B-*"; older ones
 * are counted in *older. */
static int collect_logs(const char *dir, char **args, int n, int max, int *older)
{
	DIR *d = opendir(dir);
	if (!d)
		return n;
	struct dirent *e;
	while ((e = readdir(d)) && n + 2 < max) {
		char tag = e->d_name[0];
		if ((tag != 'A' && tag != 'B') || e->d_name[1] != '-' || !strstr(e->d_name, ".log"))
			continue;
		if (!strstr(e->d_name, run_tag)) {
			++*older;
			continue;
		}
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		char *path = malloc(len);
		if (!path)
			break;
		snprintf(path, len, "%s/%s", dir, e->d_name);
		args[n++] = tag == 'A' ? "-a" : "-b";
		args[n++] = path;
	}
	closedir(d);
	return n;
}

/* synclat beside this syncshim (a build tree, /usr/bin), else beside the
 * library, else on PATH. */
static int synclat_path(char *out, size_t len)
{
	char self[PATH_MAX], lib[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *cut = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
	if (cut) {
		*cut = '\0';
		if (snprintf(out, len, "%s/synclat", self) < (int)len && access(out, X_OK) == 0)
			return 0;
	}
	if (launcher_library_path(lib, sizeof(lib)) == 0) {
		char *slash = strrchr(lib, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(out, len, "%s/synclat", lib) < (int)len && access(out, X_OK) == 0)
				return 0;
			if (snprintf(out, len, "%s/../bin/synclat", lib) < (int)len && access(out, X_OK) == 0)
				return 0;
		}
	}
	snprintf(out, len, "synclat");
	return 0;
}

/* The load's own figure, first in the verdict: its B/A, each side's
 * median and spread, and a warning where the rounds cannot carry a ratio
 * (too few, or the two sides' ranges overlap). The spread is half the
 * range, as a share of the median. */
static void load_lead(char *buf, size_t len, const char *what, const double *fa, const double *fb, int n)
{
	double med[2], lo[2], hi[2];
	med[0] = ab_median(fa, n, &lo[0], &hi[0]);
	med[1] = ab_median(fb, n, &lo[1], &hi[1]);
	double spread[2];
	for (int i = 0; i < 2; i++)
		spread[i] = med[i] != 0 ? 50.0 * (hi[i] - lo[i]) / fabs(med[i]) : 0;
	char ratio[32], fig[2][32];
	fmt_ratio(ratio, sizeof(ratio), compare_ratio(med[0], med[1]));
	fmt_figure(fig[0], sizeof(fig[0]), med[0]);
	fmt_figure(fig[1], sizeof(fig[1]), med[1]);
	int used = snprintf(buf, len, "%s B/A %s (A %s +-%.0f%%, B %s +-%.0f%%, medians of %d round%s)", what, ratio, fig[0],
			    spread[0], fig[1], spread[1], n, n == 1 ? "" : "s");
	if (used < 0 || (size_t)used >= len)
		return;
	if (n < 3)
		snprintf(buf + used, len - (size_t)used, "; warning: %d round%s, too few to trust a ratio (use -n 5)", n,
			 n == 1 ? "" : "s");
	else if (lo[0] <= hi[1] && lo[1] <= hi[0])
		snprintf(buf + used, len - (size_t)used, "; warning: A's and B's ranges overlap, the difference may be "
			 "noise (more rounds, or a quieter machine)");
}

static char verdict_lead[768];

static int compare(const char *dir, const struct side *a, const struct side *b)
{
	static char *args[2 * MAX_LOGS + 16];
	char synclat[PATH_MAX], svg[PATH_MAX], html[PATH_MAX];
	synclat_path(synclat, sizeof(synclat));
	if (snprintf(svg, sizeof(svg), "%s/compare.svg", dir) >= (int)sizeof(svg) ||
	    snprintf(html, sizeof(html), "%s/compare.html", dir) >= (int)sizeof(html))
		return 1;
	int n = 0;
	args[n++] = synclat;
	args[n++] = "compare";
	args[n++] = "--svg";
	args[n++] = svg;
	args[n++] = "--html";
	args[n++] = html;
	args[n++] = "--name-a";
	args[n++] = (char *)a->spec; /* the legend says "A: passthrough (3 logs)" */
	args[n++] = "--name-b";
	args[n++] = (char *)b->spec;
	if (verdict_lead[0]) {
		args[n++] = "--lead";
		args[n++] = verdict_lead;
	}
	int older = 0, first = n;
	n = collect_logs(dir, args, n, (int)(sizeof(args) / sizeof(args[0])) - 1, &older);
	args[n] = NULL;
	int per_side[2] = { 0, 0 };
	for (int i = first; i < n; i += 2)
		per_side[args[i][1] == 'b']++;
	if (!per_side[0] || !per_side[1]) {
		/* A server SIGKILLed, or one that dies of SIGTERM without its
		 * exit handlers, writes no summary log. */
		printf("\nno latency log from side %s's runs in %s: nothing for synclat compare "
		       "(a process killed before its exit handlers ran writes none)\n",
		       per_side[0] ? "B" : "A", dir);
		return 1;
	}
	printf("\nA = %s, B = %s; logs and plots in %s\n", a->spec, b->spec, dir);
	if (older)
		printf("(%d log%s of earlier runs in %s left out: only this run's *%s* logs are compared)\n",
		       older, older == 1 ? "" : "s", dir, run_tag);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(args[0], args);
		cli_err(stderr, "cannot run %s: %s", args[0], strerror(errno));
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return 1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		printf("plot: %s (page: %s)\n", svg, html);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* 0 if cmd can be run and the shim can reach into it; else the exit
 * status, after one line saying why. */
static int check_command(const char *cmd)
{
	char path[PATH_MAX], why[256];
	struct stat st;
	if (find_in_path(cmd, path, sizeof(path)) < 0 || stat(path, &st) < 0) {
		int e = errno;
		cli_err(stderr, "cannot run %s: %s", cmd, strerror(e));
		return exec_failure_status(e);
	}
	if (!S_ISREG(st.st_mode)) {
		cli_err(stderr, "cannot run %s: not a regular file", path);
		return 126;
	}
	int verdict = elf_preload_check(path, why, sizeof(why));
	if (verdict == PRELOAD_NEVER) {
		cli_err(stderr, "%s is %s; both sides would run the same, so there is "
			"nothing to compare", path, why);
		return 1;
	}
	if (verdict == PRELOAD_DOUBT)
		cli_err(stderr, "warning: %s is %s", path, why);
	return 0;
}

enum { O_SETUP = 256, O_READY, O_LOAD, O_METRIC, O_TIMEOUT };
static const struct option ab_long[] = {
	{ "setup", required_argument, NULL, O_SETUP }, { "ready", required_argument, NULL, O_READY },
	{ "load", required_argument, NULL, O_LOAD },   { "metric", required_argument, NULL, O_METRIC },
	{ "timeout", required_argument, NULL, O_TIMEOUT }, { "help", no_argument, NULL, 'h' },
	{ "rounds", required_argument, NULL, 'n' },   { "out", required_argument, NULL, 'o' },
	{ "mode", required_argument, NULL, 'm' },     { NULL, 0, NULL, 0 },
};

struct ab_opts {
	int rounds;
	const char *outdir, *mode;
	struct ab_service svc;
};

/* Options, before A B or after them: 0 go on, 1 after -h, -1 after one
 * line for a usage error. */
static int ab_parse(int argc, char **argv, struct ab_opts *o)
{
	optind = 0;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+n:o:m:h", ab_long, NULL)) != -1) {
		switch (c) {
		case 'n': o->rounds = atoi(optarg); break;
		case 'o': o->outdir = optarg; break;
		case 'm': o->mode = optarg; break;
		case O_SETUP: o->svc.setup = optarg; break;
		case O_READY: o->svc.ready = optarg; break;
		case O_LOAD: o->svc.load = optarg; break;
		case O_METRIC: o->svc.metric = optarg; break;
		case O_TIMEOUT: o->svc.ready_timeout_s = atof(optarg); break;
		case 'h': return 1;
		default: cli_bad_option(argc, argv, stderr); return -1;
		}
	}
	return 0;
}

/* The service form: per round and side, setup, server, probe, load, stop. */
static int ab_service(const struct ab_opts *o, struct side sides[2], char **server, const char *dir)
{
	double *fig[2] = { calloc((size_t)o->rounds, sizeof(double)), calloc((size_t)o->rounds, sizeof(double)) };
	if (!fig[0] || !fig[1])
		return 1;
	ab_service_signals();
	int rc = 0;
	for (int r = 1; r <= o->rounds && !rc; r++) {
		for (int i = 0; i < 2 && !rc; i++) {
			struct side *s = &sides[i];
			char log[PATH_MAX], side[2] = { s->tag, '\0' };
			if (snprintf(log, sizeof(log), "%s/%c-%d%s%%p.log", dir, s->tag, r, run_tag) >= (int)sizeof(log)) {
				rc = 1;
				break;
			}
			struct ab_round round = { .round = r, .side = side, .dir = dir };
			if (ab_service_round(&o->svc, &round, server, s->config, s->policy, log,
					     o->mode ? o->mode : "summary", &fig[i][r - 1]) < 0) {
				rc = 1;
				break;
			}
			printf("round %d %c (%s): %s %.6g\n", r, s->tag, s->spec, o->svc.metric ? "metric" : "load wall s",
			       fig[i][r - 1]);
			fflush(stdout);
		}
	}
	int sig = ab_service_signalled();
	if (sig) {
		cli_err(stderr, "stopped by signal %d; every server and load stopped, outputs in %s",
			sig, dir);
		rc = 128 + sig;
	}
	if (!rc) {
		double med[2], lo[2], hi[2];
		const char *what = o->svc.metric ? "the load's figure (--metric)" : "the load's wall time (s)";
		printf("\n%s over %d rounds:\n", what, o->rounds);
		for (int i = 0; i < 2; i++) {
			med[i] = ab_median(fig[i], o->rounds, &lo[i], &hi[i]);
			printf("  %c (%s): median %.6g, min %.6g, max %.6g, spread %.1f%%\n", sides[i].tag, sides[i].spec,
			       med[i], lo[i], hi[i], med[i] != 0 ? 100.0 * (hi[i] - lo[i]) / fabs(med[i]) : 0.0);
		}
		printf("  B/A %.3f\n", med[0] != 0 ? med[1] / med[0] : 0.0);
		load_lead(verdict_lead, sizeof(verdict_lead), o->svc.metric ? "load" : "load wall time", fig[0], fig[1],
			  o->rounds);
		/* The load's figures stand without the server's logs. */
		compare(dir, &sides[0], &sides[1]);
	} else {
		cli_err(stderr, "outputs kept in %s", dir);
	}
	free(fig[0]);
	free(fig[1]);
	return rc;
}

/* -1 after one line (or the usage) when the options do not fit together. */
static int ab_check_opts(const struct ab_opts *o, int service, FILE *err)
{
	if (o->rounds < 1 || o->rounds > 1000) {
		cli_err(err, "-n ROUNDS: want 1 to 1000");
		return -1;
	}
	if (o->mode && log_mode_parse(o->mode) <= 0) {
		cli_err(err, "-m '%s': want summary or calls", o->mode);
		return -1;
	}
	if (service && (!o->svc.ready || !o->svc.load)) {
		cli_err(err, "a service needs both --ready PROBE and --load CMD");
		return -1;
	}
	if (o->svc.ready_timeout_s <= 0) {
		cli_err(err, "--timeout: want a number of seconds above 0");
		return -1;
	}
	if (o->svc.ready && ab_probe_valid(o->svc.ready) < 0) {
		cli_err(err, "bad --ready '%s'; use tcp:HOST:PORT, unix:PATH, file:PATH, cmd:COMMAND or pgsql:PSQL-ARGS",
			o->svc.ready);
		return -1;
	}
	if (o->svc.metric) {
		regex_t re;
		if (regcomp(&re, o->svc.metric, REG_EXTENDED) != 0) {
			cli_err(err, "bad --metric '%s': not an extended regular expression", o->svc.metric);
			return -1;
		}
		regfree(&re);
	}
	return 0;
}

/* The one-command form: CMD per round and side, its wall time. */
static int ab_command(const struct ab_opts *o, struct side sides[2], char **cmd, const char *dir, FILE *err)
{
	double wall[2][1000];
	for (int r = 1; r <= o->rounds; r++) {
		for (int i = 0; i < 2; i++) {
			struct side *s = &sides[i];
			double secs = 0;
			int rc = run_once(s, r, dir, o->mode, cmd, &secs);
			wall[i][r - 1] = secs;
			s->total_s += secs;
			s->failures += rc != 0;
			printf("round %d %c (%s): %.3f s, exit %d\n", r, s->tag, s->spec, secs, rc);
			fflush(stdout);
		}
	}
	printf("wall time: A %.3f s, B %.3f s over %d rounds (B/A %.3f)\n", sides[0].total_s,
	       sides[1].total_s, o->rounds, sides[0].total_s > 0 ? sides[1].total_s / sides[0].total_s : 0);
	load_lead(verdict_lead, sizeof(verdict_lead), "wall time", wall[0], wall[1], o->rounds);
	int rc = compare(dir, &sides[0], &sides[1]);
	if (sides[0].failures || sides[1].failures) {
		cli_err(err, "%d A run(s) and %d B run(s) exited non-zero", sides[0].failures,
			sides[1].failures);
		return 1;
	}
	return rc;
}

int cmd_ab(int argc, char **argv, FILE *out, FILE *err)
{
	struct ab_opts o = { .rounds = 3, .svc = { .ready_timeout_s = 30 } };
	int c = ab_parse(argc, argv, &o);
	if (c) {
		if (c > 0)
			ab_usage(out);
		return c > 0 ? 0 : EXIT_USAGE;
	}
	int at = optind;
	if (argc - at < 2) {
		cli_err(err, "want two sides, A and B, then -- CMD; syncshim ab -h says more");
		return EXIT_USAGE;
	}
	/* Options after A B (before --) too: the service form reads better so. */
	int rest_at = at + 1; /* argv[rest_at] is B, the "program name" of the second pass */
	c = ab_parse(argc - rest_at, argv + rest_at, &o);
	if (c) {
		if (c > 0)
			ab_usage(out);
		return c > 0 ? 0 : EXIT_USAGE;
	}
	int cmd_at = rest_at + optind;
	int service = o.svc.ready || o.svc.load || o.svc.setup || o.svc.metric;
	if (ab_check_opts(&o, service, err) < 0)
		return EXIT_USAGE;
	struct side sides[2] = { 0 };
	if (side_parse(&sides[0], 'A', argv[at]) < 0 || side_parse(&sides[1], 'B', argv[at + 1]) < 0)
		return EXIT_USAGE;
	if (cmd_at < argc && strcmp(argv[cmd_at], "--") == 0)
		cmd_at++;
	if (cmd_at >= argc) {
		cli_err(err, "no command after A B; syncshim ab -h says more");
		return EXIT_USAGE;
	}
	int bad = check_command(argv[cmd_at]);
	if (bad)
		return bad;
	char dir[PATH_MAX];
	if (make_dir(dir, sizeof(dir), o.outdir) < 0)
		return 1;
	make_run_tag();
	if (service)
		return ab_service(&o, sides, argv + cmd_at, dir);
	return ab_command(&o, sides, argv + cmd_at, dir, err);
}
