/*
 * live_fork - a parent and a forked child, each with its own file, both
 * alive at once, for the live counters' fork test (tests/system/test_livepub.c).
 *
 *   live_fork -d DIR -S STOPFILE
 *
 * The parent writes + fsyncs DIR/parent.dat twice, forks; the child writes
 * + fsyncs DIR/child.dat once. Each then creates STOPFILE.NAME.idle and
 * idles until STOPFILE exists (looked for every 10 ms, at most 20 s); the
 * child exits, the parent waits for it and prints
 * "live_fork: ok parent=P child=C".
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static int write_sync(const char *dir, const char *name, int times)
{
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; fd >= 0 && i < times; i++) {
		pattern(buf, sizeof(buf), (long long)i * (long long)sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0)
			return -1;
	}
	return fd; /* kept open: the file stays tracked while we idle */
}

static void idle(const char *stop, const char *who)
{
	char mark[PATH_MAX];
	snprintf(mark, sizeof(mark), "%s.%s.idle", stop, who);
	close(open(mark, O_WRONLY | O_CREAT, 0644));
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	for (int i = 0; i < 2000 && access(stop, F_OK) != 0; i++)
		nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *stop = NULL;
	const struct opt opts[] = { { 'd', OPT_STR, .p = &dir }, { 'S', OPT_STR, .p = &stop } };
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0 || !dir || !stop) {
		fprintf(stderr, "usage: live_fork -d DIR -S STOPFILE\n");
		return 2;
	}
	if (write_sync(dir, "parent.dat", 2) < 0)
		return 1;
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		if (write_sync(dir, "child.dat", 1) < 0)
			_exit(1);
		idle(stop, "child");
		exit(0);
	}
	idle(stop, "parent");
	int st;
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	printf("live_fork: ok parent=%d child=%d\n", (int)getpid(), (int)child);
	return 0;
}
