/*
 * fortify_open - opens compiled with _FORTIFY_SOURCE, which glibc routes
 * through __open_2 / __openat_2 (flags not known at compile time, no mode).
 *
 *   fortify_open FILE osync|odsync
 *
 * FILE must exist. Opens it O_RDWR plus O_SYNC or O_DSYNC with open() and
 * with openat(AT_FDCWD, ...), writes 16 bytes through each, and prints
 * the flags the kernel reports:
 *   fortify_open: open osync=0|1 odsync=0|1
 *   fortify_open: openat osync=0|1 odsync=0|1
 * Exit 1 when a call fails.
 */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void report(const char *how, int fd)
{
	int fl = fcntl(fd, F_GETFL);
	printf("fortify_open: %s osync=%d odsync=%d\n", how, (fl & O_SYNC) == O_SYNC,
	       (fl & O_SYNC) != O_SYNC && (fl & O_DSYNC) != 0);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "osync") && strcmp(argv[2], "odsync"))) {
		fprintf(stderr, "usage: fortify_open FILE osync|odsync\n");
		return 2;
	}
	volatile int extra = strcmp(argv[2], "osync") == 0 ? O_SYNC : O_DSYNC;
	int flags = O_RDWR | extra; /* not a compile-time constant: __open_2 */
	int a = open(argv[1], flags);
	int b = openat(AT_FDCWD, argv[1], flags);
	if (a < 0 || b < 0) {
		perror(argv[1]);
		return 1;
	}
	report("open", a);
	report("openat", b);
	if (write(a, "0123456789abcde\n", 16) != 16 || pwrite(b, "0123456789abcde\n", 16, 16) != 16) {
		perror("write");
		return 1;
	}
	close(a);
	close(b);
	return 0;
}
