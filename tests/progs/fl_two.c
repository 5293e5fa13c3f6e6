/*
 * fl_two - one deferred sync on each of two files, then a drain
 * (tests/system/test_flusher.c: a slow file must not hold up another's syncs).
 *
 *   fl_two SLOW_FILE FAST_FILE
 *
 * Appends 4 KiB to each, fsyncs the slow one and then the fast one (both
 * return at once under defer), idles 200 ms - the thing under test, not
 * synchronisation: it gives the flusher threads the time to act on their
 * own - then calls syncshim_flush() and exits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int append(const char *path)
{
	char buf[4096];
	memset(buf, 'x', sizeof(buf));
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		fprintf(stderr, "fl_two: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fl_two SLOW_FILE FAST_FILE\n");
		return 2;
	}
	int slow = append(argv[1]), fast = append(argv[2]);
	if (slow < 0 || fast < 0 || fsync(slow) != 0 || fsync(fast) != 0)
		return 1;
	struct timespec idle = { 0, 200 * 1000000L };
	while (nanosleep(&idle, &idle) != 0 && errno == EINTR)
		;
	void (*flush)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (flush)
		flush();
	close(slow);
	close(fast);
	printf("fl_two: done\n");
	return 0;
}
