/*
 * abserve.c - `syncshim ab` in front of a service: a server under the
 * shim, a load generator without it, A B A B.
 *
 * Per round and side: the setup (a fresh data directory), the server in
 * its own process group under the side's policy or ini, a readiness probe
 * (bounded), the load with LD_PRELOAD removed, then the stop: SIGTERM to
 * the group, a bounded wait, SIGKILL. Every output is kept in the run
 * directory (A-1.setup.out, A-1.server.out, A-1.load.out, the server's
 * latency logs A-1.rTAG.PID.log). The load's own figure comes from its
 * output by --metric (or is its wall time); the summary gives each side's
 * median and spread and the B/A ratio, then `synclat compare` of the
 * server logs writes its table and page.
 *
 * Any failure (setup, a server that dies, a probe that never succeeds, a
 * load that fails) is one line naming the round and side, and the run
 * stops with everything it started stopped. SIGTERM or SIGINT of syncshim
 * ab itself is forwarded to what runs, which is then stopped the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abserve.h"
#include "syncshim_cli.h"
#include "tool.h"

#define STOP_WAIT_S 10.0   /* SIGTERM to SIGKILL */
#define PROBE_EVERY_NS (50 * 1000 * 1000L)

/* The process groups running now, for the signal handler. */
static volatile sig_atomic_t server_pgid, child_pgid, got_signal;
/* The server's pid while the load runs: the load gets it in
 * SYNCSHIM_AB_SERVER_PID (say, for synclat top -p). */
static pid_t load_server_pid;

static void on_signal(int sig)
{
	got_signal = sig;
	if (child_pgid > 0)
		kill(-child_pgid, SIGTERM);
	if (server_pgid > 0)
		kill(-server_pgid, SIGTERM);
}

static void nap(void)
{
	struct timespec ts = { 0, PROBE_EVERY_NS };
	nanosleep(&ts, NULL);
}

/* In a child: the environment of a helper that must not run under the shim. */
static void unshim_env(void)
{
	unsetenv("LD_PRELOAD");
	unsetenv("SYNCSHIM_CONFIG");
	unsetenv("SYNCSHIM_POLICY");
	unsetenv("SYNCSHIM_LOG");
	unsetenv("SYNCSHIM_LOG_MODE");
}

static void round_env(const struct ab_round *r)
{
	if (!r)
		return; /* crashtest's probe: no round */
	char n[16];
	snprintf(n, sizeof(n), "%d", r->round);
	setenv("SYNCSHIM_AB_ROUND", n, 1);
	setenv("SYNCSHIM_AB_SIDE", r->side, 1);
	setenv("SYNCSHIM_AB_DIR", r->dir, 1);
	if (load_server_pid > 0) {
		snprintf(n, sizeof(n), "%d", (int)load_server_pid);
		setenv("SYNCSHIM_AB_SERVER_PID", n, 1);
	}
}

/* In a child: stdout and stderr to path, stdin from /dev/null. */
static void redirect(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || null < 0)
		_exit(127);
	dup2(null, 0);
	dup2(fd, 1);
	dup2(fd, 2);
}

/* sh -c CMD without the shim, in its own group, output to path; returns
 * its exit status (128+N for a signal), -1 if it could not start. */
static int run_helper(const struct ab_round *r, const char *cmd, const char *path)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		unshim_env();
		round_env(r);
		redirect(path);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	child_pgid = pid;
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL); /* whatever it left in its group */
	child_pgid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A connect to a local port nobody listens on, inside the ephemeral
 * range, can pick that very port as its own and connect to itself (TCP
 * simultaneous open): that is no server. */
static bool self_connected(int fd)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);
	return getsockname(fd, (struct sockaddr *)&a, &la) == 0 && getpeername(fd, (struct sockaddr *)&b, &lb) == 0 &&
	       la == lb && memcmp(&a, &b, la) == 0;
}

/* The probe once: 0 ready, -1 not yet. */
static int probe_once(const struct ab_round *r, const char *probe, const char *out)
{
	if (!strncmp(probe, "file:", 5))
		return access(probe + 5, F_OK) == 0 ? 0 : -1;
	if (!strncmp(probe, "cmd:", 4))
		return run_helper(r, probe + 4, out) == 0 ? 0 : -1;
	if (!strncmp(probe, "pgsql:", 6)) {
		/* A query answered, not a port open or a "starting up": psql
		 * exits 0 only once SELECT 1 has run. */
		char cmd[4096];
		snprintf(cmd, sizeof(cmd), "psql -X -A -t -q -c 'SELECT 1' %s", probe + 6);
		return run_helper(r, cmd, out) == 0 ? 0 : -1;
	}
	int fd = -1, ok = -1;
	if (!strncmp(probe, "unix:", 5)) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", probe + 5);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -1;
	} else if (!strncmp(probe, "tcp:", 4)) {
		char host[256];
		snprintf(host, sizeof(host), "%s", probe + 4);
		char *port = strrchr(host, ':');
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
		if (port && (*port++ = '\0', getaddrinfo(host, port, &hints, &ai) == 0)) {
			fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			ok = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 && !self_connected(fd) ? 0 : -1;
			freeaddrinfo(ai);
		}
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

int service_probe_once(const char *probe, const char *out)
{
	return probe_once(NULL, probe, out);
}

int ab_probe_valid(const char *probe)
{
	if (!strncmp(probe, "tcp:", 4))
		return strrchr(probe + 4, ':') != NULL && strrchr(probe + 4, ':')[1] ? 0 : -1;
	if (!strncmp(probe, "unix:", 5) || !strncmp(probe, "file:", 5))
		return probe[5] ? 0 : -1;
	if (!strncmp(probe, "cmd:", 4))
		return probe[4] ? 0 : -1;
	if (!strncmp(probe, "pgsql:", 6))
		return 0; /* psql's own arguments, or none: its defaults */
	return -1;
}

/* 0 when the server is still running; else its status, reaped. */
static int server_exited(pid_t pid, int *status)
{
	int st;
	pid_t w = waitpid(pid, &st, WNOHANG);
	if (w != pid)
		return 0;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 1;
}

/* SIGTERM to the group, a bounded wait for the leader, then SIGKILL to
 * the group (its other members too). Returns the leader's status, or -1
 * if it had to be killed. */
static int stop_server(pid_t pid, int already, int status)
{
	int rc = status;
	if (!already) {
		kill(-pid, SIGTERM);
		rc = -1;
		for (double end = tool_mono_s() + STOP_WAIT_S; tool_mono_s() < end; nap())
			if (server_exited(pid, &status)) {
				rc = status;
				break;
			}
	}
	kill(-pid, SIGKILL);
	if (rc == -1)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	server_pgid = 0;
	return rc;
}

/* The load's figure from its output: the regex's first group, else the
 * whole match, read as a number. */
static int extract_metric(const char *path, const char *regex, double *value)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	regex_t re;
	if (regcomp(&re, regex, REG_EXTENDED | REG_NEWLINE) != 0) {
		fclose(f);
		return -1;
	}
	char line[8192];
	int found = -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		regmatch_t m[2];
		if (regexec(&re, line, 2, m, 0) != 0)
			continue;
		regmatch_t *g = m[1].rm_so >= 0 ? &m[1] : &m[0];
		line[g->rm_eo] = '\0';
		char *end;
		double v = strtod(line + g->rm_so, &end);
		if (end != line + g->rm_so) {
			*value = v;
			found = 0;
		}
	}
	regfree(&re);
	fclose(f);
	return found;
}

/* SERVER under the shim, in a process group of its own. */
static pid_t start_server(const struct ab_round *r, char **server, const char *out, const char *config,
			  const char *policy, const char *log, const char *mode)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		round_env(r);
		redirect(out);
		if (shim_prepare_env(config, policy, log, mode) < 0)
			_exit(127);
		execvp(server[0], server);
		cli_err(stderr, "cannot run %s: %s", server[0], strerror(errno));
		_exit(exec_failure_status(errno));
	}
	setpgid(pid, pid);
	server_pgid = pid;
	return pid;
}

/* 1 once the probe succeeds; 0 when the time is up, a signal came or the
 * server exited (*died, its *status). */
static int await_ready(const struct ab_service *svc, const struct ab_round *r, pid_t pid, const char *probe_out,
		       int *died, int *status)
{
	for (double end = tool_mono_s() + svc->ready_timeout_s; !got_signal && tool_mono_s() < end; nap()) {
		if ((*died = server_exited(pid, status)))
			return 0;
		if (probe_once(r, svc->ready, probe_out) == 0)
			return 1;
	}
	return 0;
}

/* A server that changed its user (runuser, su, its own setuid) may not be
 * able to write its latency log into the run directory: the shim says so
 * once on its stderr and logs nothing. Then the round fails, naming the
 * path and why, rather than the comparison later blaming a killed process:
 * -1 after one line, else 0. */
static int server_log_failed(const struct ab_round *r, const char *server_out, const char *log)
{
	FILE *f = fopen(server_out, "r");
	if (!f)
		return 0;
	char line[1024], *why = NULL;
	const char *prefix = strrchr(log, '/');
	size_t plen = prefix ? (size_t)(prefix - log) : 0;
	while (!why && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, "cannot create log ");
		if (at && plen && !strncmp(at + 18, log, plen))
			why = at + 18;
	}
	fclose(f);
	if (!why)
		return 0;
	why[strcspn(why, "\n")] = '\0';
	struct stat st;
	char owner[96] = "";
	if (stat(r->dir, &st) == 0)
		snprintf(owner, sizeof(owner), " (%s is uid %u's, mode %04o)", r->dir, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
	cli_err(stderr, "round %d %s: the server could not write its latency log: %s%s; a server that runs as "
		"another user needs a run directory it can write: chown it to that user, or give -o a "
		"directory it owns", r->round, r->side, why, owner);
	return -1;
}

static void out_path(char *buf, size_t len, const struct ab_round *r, const char *what)
{
	snprintf(buf, len, "%s/%s-%d.%s.out", r->dir, r->side, r->round, what);
}

int ab_service_round(const struct ab_service *svc, const struct ab_round *r, char **server,
		     const char *config, const char *policy, const char *log, const char *mode, double *figure)
{
	char setup_out[4096], server_out[4096], load_out[4096], probe_out[4096];
	out_path(setup_out, sizeof(setup_out), r, "setup");
	out_path(server_out, sizeof(server_out), r, "server");
	out_path(load_out, sizeof(load_out), r, "load");
	out_path(probe_out, sizeof(probe_out), r, "probe");
	const char *where = r->side;
	if (svc->setup) {
		int rc = run_helper(r, svc->setup, setup_out);
		if (got_signal)
			return -1;
		if (rc != 0) {
			cli_err(stderr, "round %d %s: the setup failed (exit %d); its output: %s",
				r->round, where, rc, setup_out);
			return -1;
		}
	}
	pid_t pid = start_server(r, server, server_out, config, policy, log, mode);
	if (pid < 0)
		return -1;
	int status = 0, died = 0;
	if (!await_ready(svc, r, pid, probe_out, &died, &status)) {
		stop_server(pid, died, status);
		if (got_signal)
			return -1;
		if (died)
			cli_err(stderr, "round %d %s: the server exited (status %d) before %s "
				"succeeded; its output: %s", r->round, where, status, svc->ready, server_out);
		else
			cli_err(stderr, "round %d %s: the readiness probe %s did not succeed in %.0f s; "
				"the server's output: %s", r->round, where, svc->ready, svc->ready_timeout_s,
				server_out);
		return -1;
	}
	double t0 = tool_mono_s();
	load_server_pid = pid;
	int lrc = run_helper(r, svc->load, load_out);
	load_server_pid = 0;
	double secs = tool_mono_s() - t0;
	died = server_exited(pid, &status);
	stop_server(pid, died, status);
	if (got_signal)
		return -1;
	if (lrc != 0) {
		cli_err(stderr, "round %d %s: the load failed (exit %d); its output: %s", r->round,
			where, lrc, load_out);
		return -1;
	}
	if (died) {
		cli_err(stderr, "round %d %s: the server exited (status %d) during the load; "
			"its output: %s", r->round, where, status, server_out);
		return -1;
	}
	if (log && server_log_failed(r, server_out, log) < 0)
		return -1;
	*figure = secs;
	if (svc->metric && extract_metric(load_out, svc->metric, figure) < 0) {
		cli_err(stderr, "round %d %s: --metric '%s' matched no number in %s", r->round,
			where, svc->metric, load_out);
		return -1;
	}
	return 0;
}

void ab_service_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int ab_service_signalled(void)
{
	return got_signal;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double ab_median(const double *v, int n, double *lo, double *hi)
{
	double s[n > 0 ? n : 1];
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	*lo = s[0];
	*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
