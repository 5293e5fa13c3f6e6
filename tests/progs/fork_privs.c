/*
 * fork_privs - forks while the shim's flusher threads are letting go of
 * private descriptors of closed files, for the check that no fork child
 * inherits one (tests/system/test_flusher.c).
 *
 *   fork_privs -d DIR [-n ROUNDS]
 *
 * Each round: DIR/p<i> is created, written, fsynced and closed (under a
 * deferring policy the shim keeps a descriptor of its own until the sync
 * it owes lands, and a flusher thread closes it right after), then the
 * program forks at once. The child lists /proc/self/fd and exits 1 if it
 * holds any descriptor the program did not start with: one the
 * parent's shim closed while the fork copied the table, which the child
 * would hold forever. Prints "fork_privs: rounds=N leaked=L" (rounds whose
 * child held one); exit 1 if any did.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

#define MAX_FD 4096

/* The descriptors open now, as a bitmap (those the program started with:
 * the test's own, whatever its parent left open). */
static int list_fds(unsigned char *open_now)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int own = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd != own && fd < MAX_FD)
			open_now[fd] = 1;
	}
	closedir(d);
	return 0;
}

/* In the child: descriptors the program did not start with. */
static int stray_fds(const unsigned char *at_start)
{
	static unsigned char now[MAX_FD];
	if (list_fds(now) != 0)
		return -1;
	int n = 0;
	for (int fd = 0; fd < MAX_FD; fd++)
		if (now[fd] && !at_start[fd]) {
			fprintf(stderr, "fork_privs: the child holds descriptor %d\n", fd);
			n++;
		}
	return n;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int rounds = 300;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_INT, .p = &rounds },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0 || !dir || rounds <= 0)
		return 2;
	static unsigned char at_start[MAX_FD];
	if (list_fds(at_start) != 0)
		return 1;
	int leaked = 0;
	for (int i = 0; i < rounds; i++) {
		char path[4096], data[16];
		snprintf(path, sizeof(path), "%s/p%d", dir, i);
		int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
		pattern(data, sizeof(data), 0);
		if (fd < 0 || write(fd, data, sizeof(data)) != (ssize_t)sizeof(data) || fsync(fd) != 0 ||
		    close(fd) != 0) {
			perror("fork_privs");
			return 1;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			_exit(stray_fds(at_start) == 0 ? 0 : 1);
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return 1;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			leaked++;
	}
	printf("fork_privs: rounds=%d leaked=%d\n", rounds, leaked);
	return leaked ? 1 : 0;
}
