/*
 * copy_range - copy_file_range into a file, then fsync it.
 *
 *   copy_range -d DIR [-n BYTES]
 *
 * DIR/src.dat gets BYTES (default 65536) of the 16-byte pattern; DIR/dst.dat
 * gets them by copy_file_range, then an fsync. Prints "copy_range: ok
 * copied=N"; exit 1 on a failed call.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "progs.h"

int main(int argc, char **argv)
{
	const char *dir = ".";
	long n = 65536;
	int opt;
	while ((opt = getopt(argc, argv, "d:n:")) != -1) {
		if (opt == 'd')
			dir = optarg;
		else if (opt == 'n')
			n = atol(optarg);
		else
			return 2;
	}
	char src[PATH_MAX], dst[PATH_MAX], *buf = malloc((size_t)n);
	snprintf(src, sizeof(src), "%s/src.dat", dir);
	snprintf(dst, sizeof(dst), "%s/dst.dat", dir);
	pattern(buf, (size_t)n, 0);
	int in = open(src, O_RDWR | O_CREAT | O_TRUNC, 0644), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || write(in, buf, (size_t)n) != n || lseek(in, 0, SEEK_SET) != 0)
		return 1;
	long copied = 0;
	while (copied < n) {
		ssize_t r = copy_file_range(in, NULL, out, NULL, (size_t)(n - copied), 0);
		if (r <= 0)
			return 1;
		copied += r;
	}
	if (fsync(out) != 0)
		return 1;
	printf("copy_range: ok copied=%ld\n", copied);
	return 0;
}
