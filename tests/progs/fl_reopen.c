/*
 * fl_reopen - an error of a deferred sync that fails after the app closed
 * its last descriptor must reach the next opener, as the kernel reports a
 * write-back error nobody has seen to a new open file (tests/system/test_flusher.c).
 *
 *   fl_reopen -f FILE
 *
 * open, write 4096, s1 fsync, s2 close, syncshim_flush() (the deferred
 * real sync runs: the test injects its failure), reopen, s3 fsync, s4 fsync,
 * s5 close. Each result printed as "sN CALL ret=R errno=NAME".
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void report(const char *step, const char *call, int r, int e)
{
	const char *name = r == 0 ? "0" : strerrorname_np(e);
	printf("%s %s ret=%d errno=%s\n", step, call, r, name ? name : "?");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "-f")) {
		fprintf(stderr, "usage: fl_reopen -f FILE\n");
		return 2;
	}
	const char *file = argv[2];
	char buf[4096];
	memset(buf, 'r', sizeof(buf));
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		fprintf(stderr, "fl_reopen: %s: %s\n", file, strerror(errno));
		return 1;
	}
	errno = 0;
	int r = fsync(fd);
	report("s1", "fsync", r, errno);
	r = close(fd);
	report("s2", "close", r, errno);
	void (*flush)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (flush)
		flush();
	fd = open(file, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "fl_reopen: reopen %s: %s\n", file, strerror(errno));
		return 1;
	}
	errno = 0;
	r = fsync(fd);
	report("s3", "fsync(reopened)", r, errno);
	errno = 0;
	r = fsync(fd);
	report("s4", "fsync(reopened)", r, errno);
	r = close(fd);
	report("s5", "close", r, errno);
	return 0;
}
