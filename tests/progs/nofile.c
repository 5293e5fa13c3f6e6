/*
 * nofile - a program that runs near its descriptor limit: the shim's own
 * descriptors must never make one of its opens fail.
 *
 *   nofile -d DIR [-l LIMIT] [-n FILES]
 *
 * Sets RLIMIT_NOFILE's soft limit to LIMIT (default 64), then opens FILES
 * files (default LIMIT - 4) DIR/f.K.dat, keeping every other one open:
 * each gets 4 KiB, an fsync, and the odd ones are closed right after (so
 * under defer their syncs are still owed when they close). Prints
 * "nofile: ok opened=N" when every call succeeded; else the failing call,
 * exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "progs.h"

int main(int argc, char **argv)
{
	const char *dir = ".";
	int limit = 64, nfiles = -1;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'l', OPT_INT, .p = &limit },
		{ 'n', OPT_INT, .p = &nfiles },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	if (nfiles < 0)
		nfiles = limit - 4;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)limit;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1;
	char path[PATH_MAX], buf[4096];
	pattern(buf, sizeof(buf), 0);
	for (int k = 0; k < nfiles; k++) {
		snprintf(path, sizeof(path), "%s/f.%d.dat", dir, k);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			printf("nofile: open #%d failed: %s\n", k, strerrorname_np(errno));
			return 1;
		}
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0 ||
		    (k % 2 && close(fd) != 0)) {
			printf("nofile: file #%d: %s\n", k, strerrorname_np(errno));
			return 1;
		}
	}
	printf("nofile: ok opened=%d\n", nfiles);
	return 0;
}
