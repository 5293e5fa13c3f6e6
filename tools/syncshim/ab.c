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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elfcheck.h"
#include "policy.h"
#include "syncshim_cli.h"

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
	fprintf(to, "usage: syncshim ab [-n ROUNDS] [-o DIR] [-m summary|calls] A B -- CMD [ARGS]\n"
		    "  A, B: a policy (%s) or an ini file\n", sync_policy_names(names, sizeof(names)));
}

static int side_parse(struct side *s, char tag, const char *spec)
{
	s->tag = tag;
	s->spec = spec;
	if (sync_policy_parse(spec) >= 0) {
		s->policy = spec;
		return 0;
	}
	if (access(spec, R_OK) == 0) {
		s->config = spec;
		return 0;
	}
	fprintf(stderr, "syncshim ab: '%s' is neither a policy nor a readable ini file\n", spec);
	return -1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (shim_prepare_env(s->config, s->policy, log, mode ? mode : "summary") < 0)
			_exit(127);
		execvp(cmd[0], cmd);
		int e = errno;
		fprintf(stderr, "syncshim ab: cannot run %s: %s\n", cmd[0], strerror(e));
		_exit(exec_failure_status(e));
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*secs = now_s() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int make_dir(char *dir, size_t len, const char *want)
{
	if (want) {
		snprintf(dir, len, "%s", want);
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			fprintf(stderr, "syncshim ab: cannot create %s: %s\n", dir, strerror(errno));
			return -1;
		}
		return 0;
	}
	snprintf(dir, len, "syncshim-ab.XXXXXX");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "syncshim ab: cannot create a directory here: %s\n", strerror(errno));
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
	int older = 0;
	n = collect_logs(dir, args, n, (int)(sizeof(args) / sizeof(args[0])) - 1, &older);
	args[n] = NULL;
	printf("\nA = %s, B = %s; logs and plots in %s\n", a->spec, b->spec, dir);
	if (older)
		printf("(%d log%s of earlier runs in %s left out: only this run's *%s* logs are compared)\n",
		       older, older == 1 ? "" : "s", dir, run_tag);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(args[0], args);
		fprintf(stderr, "syncshim ab: cannot run %s: %s\n", args[0], strerror(errno));
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
		fprintf(stderr, "syncshim ab: cannot run %s: %s\n", cmd, strerror(e));
		return exec_failure_status(e);
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "syncshim ab: cannot run %s: not a regular file\n", path);
		return 126;
	}
	int verdict = elf_preload_check(path, why, sizeof(why));
	if (verdict == PRELOAD_NEVER) {
		fprintf(stderr, "syncshim ab: %s is %s; both sides would run the same, so there is "
			"nothing to compare\n", path, why);
		return 1;
	}
	if (verdict == PRELOAD_DOUBT)
		fprintf(stderr, "syncshim ab: warning: %s is %s\n", path, why);
	return 0;
}

int cmd_ab(int argc, char **argv)
{
	int rounds = 3, c;
	const char *outdir = NULL, *mode = NULL;
	while ((c = getopt(argc, argv, "+n:o:m:h")) != -1) {
		switch (c) {
		case 'n': rounds = atoi(optarg); break;
		case 'o': outdir = optarg; break;
		case 'm': mode = optarg; break;
		case 'h': ab_usage(stdout); return 0;
		default: ab_usage(stderr); return 1;
		}
	}
	if (rounds < 1 || rounds > 1000 || argc - optind < 3 || (mode && log_mode_parse(mode) <= 0)) {
		ab_usage(stderr);
		return 1;
	}
	struct side sides[2] = { 0 };
	if (side_parse(&sides[0], 'A', argv[optind]) < 0 || side_parse(&sides[1], 'B', argv[optind + 1]) < 0)
		return 1;
	int cmd_at = optind + 2;
	if (strcmp(argv[cmd_at], "--") == 0)
		cmd_at++;
	if (cmd_at >= argc) {
		ab_usage(stderr);
		return 1;
	}
	int bad = check_command(argv[cmd_at]);
	if (bad)
		return bad;
	char dir[PATH_MAX];
	if (make_dir(dir, sizeof(dir), outdir) < 0)
		return 1;
	make_run_tag();
	for (int r = 1; r <= rounds; r++) {
		for (int i = 0; i < 2; i++) {
			struct side *s = &sides[i];
			double secs = 0;
			int rc = run_once(s, r, dir, mode, argv + cmd_at, &secs);
			s->total_s += secs;
			s->failures += rc != 0;
			printf("round %d %c (%s): %.3f s, exit %d\n", r, s->tag, s->spec, secs, rc);
			fflush(stdout);
		}
	}
	printf("wall time: A %.3f s, B %.3f s over %d rounds (B/A %.3f)\n", sides[0].total_s,
	       sides[1].total_s, rounds, sides[0].total_s > 0 ? sides[1].total_s / sides[0].total_s : 0);
	int rc = compare(dir, &sides[0], &sides[1]);
	if (sides[0].failures || sides[1].failures) {
		fprintf(stderr, "syncshim ab: %d A run(s) and %d B run(s) exited non-zero\n",
			sides[0].failures, sides[1].failures);
		return 1;
	}
	return rc;
}
