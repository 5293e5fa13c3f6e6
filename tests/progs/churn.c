/*
 * churn - a service that churns through files: each of 4*N distinct files
 * is created, written, fsynced and closed in turn, and every other one is
 * unlinked after its close (rotated logs, temp files), for the check that
 * the shim's memory follows the files it knows at once, not the files it
 * has ever seen (tests/system/test_churn.c).
 *
 *   churn -d DIR -n N
 *
 * Files DIR/k0 .. DIR/k(4N-1). Prints one line:
 *   rss_n_kb=A rss_4n_kb=B
 * the process's VmRSS after N files and after 4N (read with open/read:
 * nothing here allocates, so the growth is the shim's).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

static long rss_kb(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, "VmRSS:");
	return p ? atol(p + 6) : -1;
}

static int one_file(const char *dir, long i)
{
	char path[4096], data[64];
	snprintf(path, sizeof(path), "%s/k%ld", dir, i);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	pattern(data, sizeof(data), 0);
	int bad = write(fd, data, sizeof(data)) != (ssize_t)sizeof(data) || fsync(fd) != 0;
	if (close(fd) != 0 || bad)
		return -1;
	return (i & 1) ? unlink(path) : 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	long n = 0;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_LONG, .p = &n },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0 || !dir || n <= 0)
		return 2;
	long at_n = -1;
	for (long i = 0; i < 4 * n; i++) {
		if (one_file(dir, i) != 0) {
			perror("churn");
			return 1;
		}
		if (i + 1 == n)
			at_n = rss_kb();
	}
	printf("rss_n_kb=%ld rss_4n_kb=%ld\n", at_n, rss_kb());
	return 0;
}
