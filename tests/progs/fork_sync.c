/*
 * fork_sync - parent and child each write + sync their own file and a
 * shared one; the shared file's descriptor is opened before the fork, so
 * the child syncs a descriptor it inherited (and the shim's fd table with
 * it).
 *
 *   fork_sync -d DIR [-n COUNT] [-m fsync|fdatasync]
 *
 * DIR/parent.dat, DIR/child.dat: COUNT 16-byte pattern records each
 * (offset as 15 hex digits, '\n'). DIR/shared (O_APPEND): COUNT lines
 * "P%014d\n" from the parent and COUNT "C%014d\n" from the child, in any
 * interleaving. Each process checks its own file; the parent waits for
 * the child, then checks the shared file: every line whole, each
 * sequence complete and in order.
 * Output "fork_sync: ok parent=PID child=PID"; exit 1 on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "progs.h"

static int count = 100;
static const char *method = "fsync";

static int do_sync(int fd)
{
	return strcmp(method, "fdatasync") == 0 ? fdatasync(fd) : fsync(fd);
}

static int work(const char *dir, const char *who, char tag, int shared)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.dat", dir, who);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "fork_sync %s: open: %s\n", who, strerror(errno));
		return 1;
	}
	for (int i = 0; i < count; i++) {
		char rec[16], line[16];
		pattern(rec, 16, (unsigned long long)i * 16);
		snprintf(line, sizeof(line), "%c%013d\n", tag, i);
		if (write(fd, rec, 16) != 16 || do_sync(fd) != 0 || write(shared, line, 15) != 15 ||
		    do_sync(shared) != 0) {
			fprintf(stderr, "fork_sync %s: write/sync #%d: %s\n", who, i + 1, strerror(errno));
			return 1;
		}
	}
	char back[16], want[16];
	for (int i = 0; i < count; i++) {
		pattern(want, 16, (unsigned long long)i * 16);
		if (pread(fd, back, 16, (off_t)i * 16) != 16 || memcmp(back, want, 16) != 0) {
			fprintf(stderr, "fork_sync %s: bad data in record %d\n", who, i);
			return 1;
		}
	}
	if (close(fd) != 0)
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_INT, .p = &count },
		{ 'm', OPT_STR, .p = &method },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		dir = NULL;
	if (!dir || count < 1) {
		fprintf(stderr, "usage: fork_sync -d DIR [-n COUNT] [-m fsync|fdatasync]\n");
		return 2;
	}
	char spath[4096];
	snprintf(spath, sizeof(spath), "%s/shared", dir);
	int shared = open(spath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (shared < 0) {
		perror(spath);
		return 1;
	}
	fflush(stdout);
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		int r = work(dir, "child", 'C', shared);
		close(shared);
		_exit(r);
	}
	int bad = work(dir, "parent", 'P', shared);
	int st;
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "fork_sync: child failed (status 0x%x)\n", st);
		bad = 1;
	}
	close(shared);
	FILE *f = fopen(spath, "r");
	int next[2] = { 0, 0 };
	char line[64];
	while (f && fgets(line, sizeof(line), f)) {
		int k = line[0] == 'P' ? 0 : line[0] == 'C' ? 1 : -1;
		if (k < 0 || strlen(line) != 15 || atoi(line + 1) != next[k]) {
			fprintf(stderr, "fork_sync: shared file: bad line '%s'\n", line);
			bad = 1;
			break;
		}
		next[k]++;
	}
	if (f)
		fclose(f);
	if (next[0] != count || next[1] != count) {
		fprintf(stderr, "fork_sync: shared file has %d parent and %d child lines, want %d each\n",
			next[0], next[1], count);
		bad = 1;
	}
	if (bad)
		return 1;
	printf("fork_sync: ok parent=%d child=%d\n", (int)getpid(), (int)child);
	return 0;
}
