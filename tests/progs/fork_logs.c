/*
 * fork_logs - which processes of a forking program leave a latency log.
 *
 *   fork_logs -d DIR
 *
 * The parent writes + fsyncs DIR/p.dat. Child A (fork) closes every
 * descriptor above 2 and execs /bin/true (which does no file I/O). Child
 * B (fork) writes + fsyncs DIR/b.dat and exits. Child C (fork) just
 * _exit(0)s. The parent waits for all three and prints
 * "fork_logs: ok parent=P a=A b=B c=C" with the pids.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

static const char *dir = ".";

static int write_sync(const char *name)
{
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	pattern(buf, sizeof(buf), 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	return fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) && fsync(fd) == 0 &&
			       close(fd) == 0 ? 0 : -1;
}

static pid_t spawn(char which)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	if (which == 'a') {
		close_range(3, ~0u, 0);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (which == 'b')
		exit(write_sync("b.dat") ? 1 : 0);
	_exit(0);
}

int main(int argc, char **argv)
{
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	if (write_sync("p.dat"))
		return 1;
	pid_t a = spawn('a'), b = spawn('b'), c = spawn('c');
	int bad = 0, st;
	for (pid_t p = 0; (p = wait(&st)) > 0;)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	printf("fork_logs: %s parent=%d a=%d b=%d c=%d\n", bad ? "FAILED" : "ok", (int)getpid(), (int)a,
	       (int)b, (int)c);
	return bad;
}
