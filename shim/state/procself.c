/*
 * procself.c - what /proc/self says about this process: its command line
 * as it was started (for the log's header and the live file) and its start time (which,
 * with the pid, tells a live file's process from a later one that got the
 * same pid). Read in a child with a descriptor table of its own
 * (shimfd_isolated), no stdio streams.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fdtable.h"
#include "procself.h"
#include "shim.h"
#include "shimfd.h"

struct proc_read {
	char path[48];
	char *out;
	size_t len;
	bool isolated;
};

static int read_proc_here(void *arg)
{
	struct proc_read *pr = arg;
	int fd = pr->isolated ? LIBC(open)(pr->path, O_RDONLY | O_CLOEXEC) : shimfd_open(pr->path, O_RDONLY, OWN_TEMP);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, pr->out, pr->len - 1);
	if (pr->isolated)
		LIBC(close)(fd);
	else
		shimfd_close(fd);
	return (int)n;
}

/* /proc/PID/name (the child that reads it is a process of its own: not
 * /proc/self), read in a child with a table of its own so the read's
 * descriptor is never on a number of the app's; here where that cannot be. */
static ssize_t read_proc(const char *name, char *out, size_t len)
{
	out[0] = '\0';
	struct proc_read pr = { .out = out, .len = len, .isolated = true };
	snprintf(pr.path, sizeof(pr.path), "/proc/%d/%s", (int)getpid(), name);
	int n;
	if (!shimfd_isolated(read_proc_here, &pr, &n)) {
		pr.isolated = false;
		n = read_proc_here(&pr);
	}
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return n;
}

void proc_self_comm(char *out, size_t len)
{
	ssize_t n = read_proc("comm", out, len);
	if (n > 0 && out[n - 1] == '\n')
		out[n - 1] = '\0';
}

/* The command line as the process was started, before main ran: many
 * servers rewrite theirs into a title (redis-server's "127.0.0.1:6379"
 * padded with spaces, PostgreSQL's "postgres: walwriter"), and a label
 * should name the program that was run. glibc calls the entries of
 * .init_array with main's argc and argv (for a dlopen too), so this
 * costs no system call. A fork child keeps its parent's: the same image. */
static char cmdline_at_load[4096];

__attribute__((constructor)) static void remember_cmdline(int argc, char **argv)
{
	size_t used = 0;
	for (int i = 0; argv && i < argc && argv[i]; i++) {
		size_t n = strlen(argv[i]);
		if (used + (i > 0) + n >= sizeof(cmdline_at_load))
			n = sizeof(cmdline_at_load) - 1 - used - (i > 0);
		if (i > 0 && used + 1 < sizeof(cmdline_at_load))
			cmdline_at_load[used++] = ' ';
		memcpy(cmdline_at_load + used, argv[i], n);
		used += n;
		if (used + 1 >= sizeof(cmdline_at_load))
			break;
	}
	cmdline_at_load[used] = '\0';
}

void proc_self_cmdline(char *out, size_t len)
{
	if (cmdline_at_load[0]) {
		size_t n = strnlen(cmdline_at_load, len - 1);
		memcpy(out, cmdline_at_load, n);
		out[n] = '\0';
		return;
	}
	ssize_t n = read_proc("cmdline", out, len);
	for (ssize_t i = 0; i < n - 1; i++)
		if (out[i] == '\0')
			out[i] = ' ';
}

/* Field 22 of /proc/self/stat, counted after the command name, which is
 * in parentheses and may itself hold spaces and parentheses. */
uint64_t proc_self_start_time(void)
{
	char buf[1024];
	if (read_proc("stat", buf, sizeof(buf)) < 0)
		return 0;
	const char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	for (int field = 2; field < 22 && *p; p++) /* fields 3.. follow the ')' */
		if (*p == ' ')
			field++;
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}
