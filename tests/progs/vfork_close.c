/*
 * vfork_close - a vfork child that closes descriptors (as Python's
 * subprocess does before exec) must leave the parent's files as the shim
 * knew them: the parent's later writes still get their syncs.
 *
 *   vfork_close -f FILE [-m range|close|dup2]
 *
 * FILE is opened O_WRONLY|O_CREAT|O_TRUNC|O_SYNC. 8 records of 4 KiB are
 * appended (first batch) and, under the shim, made durable at once
 * (syncshim_flush), so only the second batch's syncs are still to come;
 * then vfork(): the child calls close_range(3,
 * ~0U, 0) (or close() of the file's descriptor, or dup2 of stdin over it)
 * and _exit(0)s. Then 8 more records (second batch), and the parent
 * returns. Prints "vfork_close: ok last_write_done" after the last write
 * returned; exit 1 on a failed call.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static int batch(int fd, int first)
{
	char buf[4096];
	for (int i = first; i < first + 8; i++) {
		pattern(buf, sizeof(buf), (unsigned long long)i * sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return -1;
	}
	return 0;
}

static const char *file, *mode = "range";

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = &file },
		{ 'm', OPT_STR, .p = &mode },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	int fd = file ? open(file, O_WRONLY | O_CREAT | O_TRUNC | O_SYNC, 0644) : -1;
	if (fd < 0 || batch(fd, 0) < 0)
		return 1;
	void (*flush)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (flush)
		flush();
	pid_t pid = vfork();
	if (pid == 0) {
		if (!strcmp(mode, "close"))
			close(fd);
		else if (!strcmp(mode, "dup2"))
			dup2(0, fd);
		else
			close_range(3, ~0u, 0);
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || batch(fd, 8) < 0)
		return 1;
	printf("vfork_close: ok last_write_done\n");
	return 0;
}
