/*
 * procself.c - what /proc/self says about this process: its command line
 * (for the log's header and the live file) and its start time (which,
 * with the pid, tells a live file's process from a later one that got the
 * same pid). Read through the shim's own descriptors, no stdio.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fdtable.h"
#include "procself.h"
#include "shim.h"
#include "shimfd.h"

static ssize_t read_proc(const char *name, char *out, size_t len)
{
	out[0] = '\0';
	int fd = shimfd_open(name, O_RDONLY, OWN_TEMP);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, out, len - 1);
	shimfd_close(fd);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return n;
}

void proc_self_comm(char *out, size_t len)
{
	ssize_t n = read_proc("/proc/self/comm", out, len);
	if (n > 0 && out[n - 1] == '\n')
		out[n - 1] = '\0';
}

void proc_self_cmdline(char *out, size_t len)
{
	ssize_t n = read_proc("/proc/self/cmdline", out, len);
	for (ssize_t i = 0; i < n - 1; i++)
		if (out[i] == '\0')
			out[i] = ' ';
}

/* Field 22 of /proc/self/stat, counted after the command name, which is
 * in parentheses and may itself hold spaces and parentheses. */
uint64_t proc_self_start_time(void)
{
	char buf[1024];
	if (read_proc("/proc/self/stat", buf, sizeof(buf)) < 0)
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
