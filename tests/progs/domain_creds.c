/*
 * domain_creds.c - a fork child that takes on another uid must leave its
 * ordering domain (tests/system/test_order.c).
 *
 *   domain_creds DIR
 *
 * The parent writes and fsyncs DIR/p (an acknowledged sync, under defer)
 * and forks. The child notes its shared anonymous mappings (the domain's
 * table is one), prints "before: shared=1" if it has any, calls
 * setuid(65534), and prints "after: shared=1" if any of those addresses is
 * still a shared mapping, else "after: shared=0". The parent waits, writes
 * and syncs again and prints "parent: acked ok". Root only.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

#define MAX_MAPS 64

static int shared_maps(unsigned long *starts, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[3] == 's' && strstr(line, "/dev/zero") &&
		    n < max)
			starts[n++] = lo;
	}
	if (f)
		fclose(f);
	return n;
}

static void write_sync(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) != 0) {
		perror("domain_creds: write and sync");
		exit(1);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: domain_creds DIR\n");
		return 2;
	}
	write_sync(argv[1], "p");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		unsigned long before[MAX_MAPS], after[MAX_MAPS];
		int nb = shared_maps(before, MAX_MAPS);
		printf("before: shared=%d\n", nb > 0);
		if (setuid(65534) != 0) {
			perror("domain_creds: setuid");
			_exit(1);
		}
		int na = shared_maps(after, MAX_MAPS), still = 0;
		for (int i = 0; i < nb; i++)
			for (int j = 0; j < na; j++)
				still |= before[i] == after[j];
		printf("after: shared=%d\n", still);
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	write_sync(argv[1], "p");
	printf("parent: acked ok\n");
	return 0;
}
