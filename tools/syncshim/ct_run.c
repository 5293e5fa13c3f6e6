/*
 * ct_run.c - running a trial's program and cutting it, and running the
 * --setup and --check lines, each bounded in time. In the server form
 * the program is a server: the probe until it answers, then the load
 * (without the shim, in a group of its own), which is cut with it.
 *
 * The program runs in a process group of its own and the cut is one
 * SIGKILL to the whole group, so no process of it runs a line of code
 * (an exit handler, a flush) after the moment of the cut. The launcher is
 * a child subreaper: a process that left the group (setsid, a daemon) is
 * still its child once orphaned, and is killed and reaped before the
 * rollback looks at a file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abserve.h"
#include "crashtest.h"
#include "syncshim_cli.h"
#include "undolog.h"
#include "tool.h"

#define MS 1000000ull
#define KILL_GRACE_NS (10000 * MS)  /* for processes to die after SIGKILL (D state, slow exit) */

volatile int ct_interrupted;

static void on_signal(int sig)
{
	ct_interrupted = sig;
}

void ct_signals_init(void)
{
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: waits return at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

uint64_t ct_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits up to ns for pidfd (and other, the load's, if >= 0) to say its
 * process ended (or a signal). */
static void wait_on2(int pidfd, int other, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = other, .events = POLLIN } };
	ppoll(p, pidfd < 0 ? 0 : other < 0 ? 1 : 2, &ts, NULL);
}

static void wait_on(int pidfd, uint64_t ns)
{
	wait_on2(pidfd, -1, ns);
}

/* SIGKILL to every child of ours: orphans that had left the group. */
static void kill_stray_children(void)
{
	DIR *d = opendir("/proc");
	if (!d)
		return;
	pid_t me = getpid();
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], buf[512];
		int p = atoi(e->d_name), ppid = 0;
		if (p <= 1)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", p);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		char *rp = strrchr(buf, ')'); /* "pid (comm) state ppid ..." */
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == me)
			kill(p, SIGKILL);
	}
	closedir(d);
}

/* Kills the group, then reaps until no child is left; false if one
 * outlived the grace period. The leader's status goes to *st. */
static bool kill_tree(pid_t pgid, pid_t leader, int *st)
{
	kill(-pgid, SIGKILL);
	uint64_t deadline = ct_now_ns() + KILL_GRACE_NS;
	for (unsigned round = 0;; round++) {
		int s;
		pid_t p = waitpid(-1, &s, WNOHANG);
		if (p == leader)
			*st = s;
		if (p > 0)
			continue;
		if (p < 0 && errno == ECHILD)
			return true;
		if (ct_now_ns() > deadline)
			return false;
		if (round % 64 == 63)
			kill_stray_children();
		kill(-pgid, SIGKILL);
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
}

/* The child side: its own group, stdin from /dev/null, out to out_path. */
static void child_io(const char *out_path)
{
	setpgid(0, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	int in = open("/dev/null", O_RDONLY);
	int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : dup(2);
	if (in < 0 || out < 0)
		_exit(126);
	dup2(in, 0);
	dup2(out, 1);
	dup2(out, 2);
	if (in > 2)
		close(in);
	if (out > 2)
		close(out);
}

static void child_exec_trial(const struct ct_opts *o, const char *store)
{
	char out[PATH_MAX], scope[CT_MAX_GLOBS * 256] = "";
	snprintf(out, sizeof(out), "%s/cmd.out", store);
	child_io(out);
	for (size_t i = 0, n = 0; i < o->nglobs; i++)
		n += (size_t)snprintf(scope + n, n < sizeof(scope) ? sizeof(scope) - n : 0, "%s%s", i ? "\n" : "",
				      o->globs[i]);
	if (shim_prepare_env(o->config, o->policy, NULL, NULL) < 0)
		_exit(127);
	setenv("SYNCSHIM_CRASH_DIR", store, 1);
	setenv("SYNCSHIM_CRASH_SCOPE", scope, 1);
	execvp(o->cmd[0], o->cmd);
	int e = errno;
	cli_err(stderr, "cannot run %s: %s", o->cmd[0], strerror(e));
	_exit(exec_failure_status(e));
}

/* Whether the cut is due now. A drawn moment (random:, after-ms:) counts
 * from the program's first record in scope, not from the fork: a JVM, or
 * any program on a loaded machine (or under a sanitizer), may take longer
 * to reach its first write than the cut's whole range, and a cut before
 * the program did anything tests nothing. So the log is polled until that
 * first record appears (then the moment is fixed), and for after-syncs
 * throughout. */
static bool cut_due(const struct ct_opts *o, struct undo_follow *f, uint64_t now, uint64_t cut_ms, struct ct_run *r)
{
	if (o->cut.kind == CUT_AFTER_SYNCS) {
		undo_follow_poll(f);
		if (!r->origin_ns && f->records)
			r->origin_ns = now;
		return f->syncs >= o->cut.syncs;
	}
	if (!r->origin_ns) {
		undo_follow_poll(f);
		if (!f->records)
			return false;
		r->origin_ns = now;
	}
	return now >= r->origin_ns + cut_ms * MS;
}

/* The load's exit, if it has ended (reaped; its status in r). */
static bool load_ended(pid_t load, struct ct_run *r)
{
	int st;
	if (load <= 0 || waitpid(load, &st, WNOHANG) != load)
		return false;
	r->load_ended = true;
	r->load_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return true;
}

/* Waits for the cut, the program's exit or the timeout; true if it exited.
 * In the server form the load's end is the cut too. */
static bool await_cut(const struct ct_opts *o, pid_t pid, int pidfd, const char *store, uint64_t cut_ms,
		      pid_t load, struct ct_run *r)
{
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s/%s", store, UNDO_NAME);
	struct undo_follow f;
	undo_follow_init(&f, open(log, O_RDONLY | O_CLOEXEC));
	uint64_t deadline = r->start_ns + (uint64_t)o->timeout_s * 1000 * MS;
	bool exited = false;
	int loadfd = load > 0 ? (int)syscall(SYS_pidfd_open, load, 0) : -1;
	for (;;) {
		siginfo_t si = { 0 };
		exited = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
		uint64_t now = ct_now_ns();
		bool due = !exited && (load_ended(load, r) || cut_due(o, &f, now, cut_ms, r));
		if (exited || ct_interrupted || due || now >= deadline) {
			r->end_ns = now;
			r->timed_out = !exited && !ct_interrupted && !due;
			break;
		}
		bool polling = o->cut.kind == CUT_AFTER_SYNCS || !r->origin_ns;
		uint64_t next = polling ? MS : r->origin_ns + cut_ms * MS - now;
		wait_on2(pidfd, r->load_ended ? -1 : loadfd, next < 50 * MS ? next : 50 * MS);
	}
	if (f.fd >= 0)
		close(f.fd);
	if (loadfd >= 0)
		close(loadfd);
	return exited;
}

/* A /proc file's first line, "" if it cannot be read. */
static void read_line(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* Whether a flusher thread was at work, from its state in
 * /proc/PID/task/TID/stat (after the name's closing parenthesis) and the
 * system call it was in (TID/syscall: the number, then the arguments in
 * hex): running or waiting for a CPU (R), for the disk (D), inside a real
 * sync, or blocked in a futex wait with no timeout (a lock, or another
 * thread's sync it waits for: held up by someone else). Asleep: a timed
 * wait, the flusher's own wait for its next deadline. */
static bool flusher_at_work(char state, const char *syscall_line, bool *syncing)
{
	unsigned long v[5] = { 0 };
	long nr = syscall_line[0] >= '0' && syscall_line[0] <= '9' ? strtol(syscall_line, NULL, 10) : -1;
	*syncing = nr == SYS_fsync || nr == SYS_fdatasync;
	bool untimed_futex = nr == SYS_futex && sscanf(syscall_line, "%*d %lx %lx %lx %lx", &v[0], &v[1], &v[2], &v[3]) == 4 &&
			     v[3] == 0;
	return *syncing || state == 'R' || state == 'D' || untimed_futex;
}

/* What pid's flusher threads were doing (struct ct_run). No freeze: a
 * thread may move on while the next is read, which only ever moves one
 * from asleep to at work on its way to a sync, or back once it synced. */
static void note_flushers(pid_t pid, struct ct_run *r)
{
	char dir[64], path[64 + 256 + 16], line[512];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		read_line(path, line, sizeof(line));
		if (strncmp(line, "syncshim-flush", 14) != 0)
			continue;
		r->flushers++;
		snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
		read_line(path, line, sizeof(line));
		const char *paren = strrchr(line, ')');
		char state = paren && paren[1] == ' ' ? paren[2] : '?';
		snprintf(path, sizeof(path), "%s/%s/syscall", dir, e->d_name);
		read_line(path, line, sizeof(line));
		bool syncing;
		r->flushers_busy += flusher_at_work(state, line, &syncing);
		r->flushers_syncing += syncing;
	}
	if (d)
		closedir(d);
}

/* The server form: the probe until it answers (the server alive, within
 * the timeout), then the load, without the shim, in a group of its own.
 * The load's pid, or 0 with r->not_ready. */
static pid_t serve(const struct ct_opts *o, pid_t server, const char *store, struct ct_run *r)
{
	char probe_out[PATH_MAX], load_out[PATH_MAX];
	snprintf(probe_out, sizeof(probe_out), "%s/probe.out", store);
	snprintf(load_out, sizeof(load_out), "%s/load.out", store);
	uint64_t deadline = r->start_ns + (uint64_t)o->timeout_s * 1000 * MS;
	for (;;) {
		siginfo_t si = { 0 };
		bool gone = waitid(P_PID, (id_t)server, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == server;
		if (gone || ct_interrupted || ct_now_ns() >= deadline) {
			r->not_ready = true;
			return 0;
		}
		if (service_probe_once(o->ready, probe_out) == 0)
			break;
		struct timespec nap = { 0, 20 * (long)MS };
		nanosleep(&nap, NULL);
	}
	r->ready_ns = ct_now_ns();
	fflush(NULL);
	pid_t load = fork();
	if (load < 0) {
		r->not_ready = true;
		return 0;
	}
	if (load == 0) {
		child_io(load_out);
		execl("/bin/sh", "sh", "-c", o->load, (char *)NULL);
		_exit(127);
	}
	setpgid(load, load);
	r->load_ns = r->origin_ns = ct_now_ns(); /* a drawn cut counts from here */
	return load;
}

int ct_run_trial(const struct ct_opts *o, const char *store, uint64_t cut_ms, struct ct_run *r)
{
	memset(r, 0, sizeof(*r));
	r->status = -1;
	fflush(NULL);
	r->start_ns = ct_now_ns();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		child_exec_trial(o, store);
	setpgid(pid, pid);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	pid_t load = o->ready ? serve(o, pid, store, r) : 0;
	bool exited = false;
	if (!r->not_ready)
		exited = await_cut(o, pid, pidfd, store, cut_ms, load, r);
	else
		r->end_ns = ct_now_ns();
	r->cut = !exited && !r->not_ready;
	if (r->cut)
		note_flushers(pid, r);
	int st = 0;
	if (load > 0)
		kill(-load, SIGKILL); /* the load stops with the server; kill_tree reaps it */
	r->stray = !kill_tree(pid, pid, &st); /* the cut: the whole group at once */
	if (pidfd >= 0)
		close(pidfd);
	if (exited && WIFEXITED(st))
		r->status = WEXITSTATUS(st);
	else if (exited && WIFSIGNALED(st))
		r->signal = WTERMSIG(st);
	return 0;
}

int ct_shell(const char *line, const char *out_path, unsigned timeout_s, bool *timed_out)
{
	*timed_out = false;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		child_io(out_path);
		execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t deadline = ct_now_ns() + (uint64_t)timeout_s * 1000 * MS;
	for (;;) {
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			break;
		uint64_t now = ct_now_ns();
		if (now >= deadline || ct_interrupted) {
			*timed_out = !ct_interrupted;
			break;
		}
		wait_on(pidfd, deadline - now < 50 * MS ? deadline - now : 50 * MS);
	}
	int st = 0;
	kill_tree(pid, pid, &st); /* what it left running in its group goes too */
	if (pidfd >= 0)
		close(pidfd);
	if (*timed_out)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
