/*
 * profile.c - `syncshim profile`: run a program (or a service and its
 * load) under passthrough with one log record per call, then say what it
 * does with each file and propose the rules (synclat suggest, linked in).
 *
 *   syncshim profile [-o INI] [-d DIR] [--duration S] -- CMD [ARGS]
 *   syncshim profile [-o INI] [-d DIR] [--setup CMD] --ready PROBE --load CMD
 *                    [--timeout S] -- SERVER [ARGS]
 *
 * The program form runs CMD until it exits, or for --duration seconds and
 * then stops its process group (SIGTERM, a bounded wait, SIGKILL). The
 * service form is one round of `syncshim ab`'s (abserve.c): setup, the
 * server under the shim, the probe, the load without it, the stop. Either
 * way the shim runs every file under passthrough, so the program behaves
 * as without it, and logs in calls mode into DIR (a temp dir, removed at
 * the end, unless -d keeps it); a SIGTERM or SIGINT of syncshim profile
 * stops everything it started and removes the temp dir.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abserve.h"
#include "suggest.h"
#include "syncshim_cli.h"
#include "tool.h"

#define STOP_WAIT_S 10.0
#define MAX_LOGS 4096
/* Records per thread ring: a busy server outruns the default 16384
 * between two drains of the logger, and a profile wants every call. */
#define PROFILE_RING "262144"

static volatile sig_atomic_t prog_pgid, got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
	if (prog_pgid > 0)
		kill(-prog_pgid, SIGTERM);
}

static void nap(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000L };
	nanosleep(&ts, NULL);
}

static int usage(FILE *to, int rc)
{
	fprintf(to, "usage: syncshim %s\n"
		    "  -o, --out INI  write the proposed rules there (default: after the report)\n"
		    "  -d, --dir DIR  keep the logs and outputs in DIR (default: a temp dir, removed)\n"
		    "  --duration S   stop CMD after S seconds (default: when it exits)\n"
		    "  --setup CMD    before the server starts (sh -c, without the shim)\n"
		    "  --ready PROBE  the server is ready: tcp:HOST:PORT, unix:PATH, file:PATH, cmd:CMD,\n"
		    "                 pgsql:PSQL-ARGS (psql runs SELECT 1)\n"
		    "  --load CMD     the load, without the shim; the server is stopped after it\n"
		    "  --timeout S    for the probe (default 30)\n",
		PROFILE_SYNOPSIS);
	return rc;
}

/* The program form: CMD under the shim until it exits or the time is up;
 * 0, or -1 when it could not start or a signal stopped the profile. */
static int run_program(char **cmd, const char *config, const char *log, double duration)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		if (shim_prepare_env(config, NULL, log, "calls") < 0)
			_exit(127);
		execvp(cmd[0], cmd);
		cli_err(stderr, "cannot run %s: %s", cmd[0], strerror(errno));
		_exit(exec_failure_status(errno));
	}
	setpgid(pid, pid);
	prog_pgid = pid;
	int st = 0;
	bool done = false;
	double end = duration > 0 ? tool_mono_s() + duration : 0;
	while (!done && !got_signal && (!end || tool_mono_s() < end)) {
		pid_t w = waitpid(pid, &st, duration > 0 ? WNOHANG : 0);
		if (w == pid)
			done = true;
		else if (w < 0 && errno != EINTR)
			break;
		else if (duration > 0)
			nap();
	}
	if (!done) {
		kill(-pid, SIGTERM);
		for (double stop = tool_mono_s() + STOP_WAIT_S; !done && tool_mono_s() < stop; nap())
			done = waitpid(pid, &st, WNOHANG) == pid;
		kill(-pid, SIGKILL);
		if (!done)
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
	}
	kill(-pid, SIGKILL); /* whatever it left in its group */
	prog_pgid = 0;
	if (got_signal)
		return -1;
	if (duration <= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return -1; /* not found: it said so */
	return 0;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char p[PATH_MAX];
			if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
				continue;
			struct stat st;
			if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
				remove_tree(p);
			else
				unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* This run's logs in dir, for synclat suggest; their count. */
static int collect(const char *dir, char **args, int n, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return n;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "profile.", 8) || len < 4 || strcmp(e->d_name + len - 4, ".log"))
			continue;
		char *p = malloc(strlen(dir) + len + 2);
		if (!p)
			break;
		sprintf(p, "%s/%s", dir, e->d_name);
		args[n++] = p;
	}
	closedir(d);
	return n;
}

enum { O_SETUP = 256, O_READY, O_LOAD, O_TIMEOUT, O_DURATION };

struct profile_opts {
	struct ab_service svc;
	const char *ini, *keep;
	double duration;
	bool service;
};

/* The options: 0, else the exit status (after -h, or one line). */
static int parse(int argc, char **argv, struct profile_opts *o, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "setup", required_argument, NULL, O_SETUP },	   { "ready", required_argument, NULL, O_READY },
		{ "load", required_argument, NULL, O_LOAD },	   { "timeout", required_argument, NULL, O_TIMEOUT },
		{ "duration", required_argument, NULL, O_DURATION }, { "help", no_argument, NULL, 'h' },
		{ "out", required_argument, NULL, 'o' },	   { "dir", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o->ini = optarg; break;
		case 'd': o->keep = optarg; break;
		case O_SETUP: o->svc.setup = optarg; break;
		case O_READY: o->svc.ready = optarg; break;
		case O_LOAD: o->svc.load = optarg; break;
		case O_TIMEOUT: o->svc.ready_timeout_s = atof(optarg); break;
		case O_DURATION: o->duration = atof(optarg); break;
		case 'h': usage(out, 0); return -1;
		default: return cli_bad_option(argc, argv, err);
		}
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (optind >= argc) {
		cli_err(err, "no command; syncshim profile -h says more");
		return EXIT_USAGE;
	}
	o->service = o->svc.ready || o->svc.load || o->svc.setup;
	if (o->service && (!o->svc.ready || !o->svc.load)) {
		cli_err(err, "a service needs both --ready PROBE and --load CMD");
		return EXIT_USAGE;
	}
	if (o->service && o->duration > 0) {
		cli_err(err, "--duration is for a program; a service runs for its --load");
		return EXIT_USAGE;
	}
	if ((o->svc.ready && ab_probe_valid(o->svc.ready) < 0) || o->svc.ready_timeout_s <= 0 || o->duration < 0) {
		cli_err(err, "bad --ready, --timeout or --duration");
		return EXIT_USAGE;
	}
	return 0;
}

/* The run's directory (absolute, in absdir) and its settings file: 0, or
 * EXIT_INPUT after one line. Passthrough everywhere, every call logged,
 * no live counters, no reload: nothing but the log changes. */
static int make_run_dir(const char *keep, char *absdir, char *config, size_t len, FILE *err)
{
	char dir[PATH_MAX];
	if (keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			cli_err(err, "cannot create %s: %s", dir, strerror(errno));
			return EXIT_INPUT;
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/syncshim-profile.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir)) {
			cli_err(err, "cannot create a temp dir: %s", strerror(errno));
			return EXIT_INPUT;
		}
	}
	if (!realpath(dir, absdir)) {
		cli_err(err, "%s: %s", dir, strerror(errno));
		return EXIT_INPUT;
	}
	snprintf(config, len, "%s/profile.ini", absdir);
	FILE *f = fopen(config, "w");
	bool ok = f && fprintf(f, "; written by syncshim profile\n[shim]\npolicy = passthrough\nlog_mode = calls\n"
				  "ring_records = %s\nlive = false\nreload = false\n", PROFILE_RING) > 0;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok) {
		cli_err(err, "cannot write %s", config);
		if (!keep)
			remove_tree(absdir);
		return EXIT_INPUT;
	}
	return 0;
}

/* synclat suggest over the run's logs. */
static int suggest_logs(const char *absdir, const char *ini, FILE *out, FILE *err)
{
	static char *args[MAX_LOGS + 8];
	int n = 0;
	args[n++] = "suggest";
	args[n++] = "--salvage"; /* a server killed at the end leaves a log without its trailer */
	if (ini) {
		args[n++] = "-o";
		args[n++] = (char *)ini;
	}
	int first = n, rc;
	n = collect(absdir, args, n, MAX_LOGS + 4);
	args[n] = NULL;
	if (n == first) {
		cli_err(err, "no latency log in %s: the program touched no file the shim "
			     "tracks, or could not be run under it", absdir);
		rc = EXIT_INPUT;
	} else {
		fflush(out);
		rc = cmd_suggest(n, args, out, err);
	}
	for (int i = first; i < n; i++)
		free(args[i]);
	return rc;
}

int cmd_profile(int argc, char **argv, FILE *out, FILE *err)
{
	struct profile_opts o = { .svc = { .ready_timeout_s = 30 } };
	int rc = parse(argc, argv, &o, out, err);
	if (rc)
		return rc < 0 ? 0 : rc;
	char absdir[PATH_MAX], config[PATH_MAX + 32], log[PATH_MAX + 32];
	if ((rc = make_run_dir(o.keep, absdir, config, sizeof(config), err)))
		return rc;
	snprintf(log, sizeof(log), "%s/profile.%%p.log", absdir);
	if (o.service) {
		ab_service_signals();
		struct ab_round round = { .round = 1, .side = "profile", .dir = absdir };
		double figure;
		if (ab_service_round(&o.svc, &round, argv + optind, config, NULL, log, "calls", &figure) < 0)
			rc = 1;
		got_signal = ab_service_signalled();
	} else {
		struct sigaction sa = { .sa_handler = on_signal };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		if (run_program(argv + optind, config, log, o.duration) < 0)
			rc = 1;
	}
	if (got_signal) {
		cli_err(err, "stopped by signal %d; everything it started is stopped", got_signal);
		rc = 128 + got_signal;
	}
	if (!rc)
		rc = suggest_logs(absdir, o.ini, out, err);
	if (o.keep)
		fprintf(out, "logs and outputs kept in %s\n", absdir);
	else if (rc && !got_signal)
		cli_err(err, "outputs kept in %s", absdir); /* to see what went wrong */
	else
		remove_tree(absdir);
	return rc;
}
