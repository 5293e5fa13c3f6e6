/*
 * unseen - descriptors made, closed or replaced inside libc, where the
 * shim sees no open() or close(): each must still get the right policy.
 *
 *   unseen -d DIR -m mkstemp|fcloseall|daemon
 *
 * mkstemp:   mkstemp(DIR/tmp.XXXXXX), 4 KiB, fsync;
 *            prints "unseen: path=P" (the test's rule for tmp.* decides).
 * fcloseall: fopen(DIR/a.noop) and fsync it; fcloseall() closes it inside
 *            libc; DIR/b.dat is opened with a raw syscall on the same
 *            number, written and fsynced. Prints "unseen: b_ino=I".
 * daemon:    daemon(1, 0) puts /dev/null on 0, 1 and 2 with libc's own
 *            dup2; the daemon then calls fsync(1) and writes
 *            "fsync=R errno=E" into DIR/result (the parent exits at once).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progs.h"

static const char *dir = ".";

static int fill(int fd)
{
	char buf[4096];
	pattern(buf, sizeof(buf), 0);
	return write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) && fsync(fd) == 0 ? 0 : -1;
}

static int with_mkstemp(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/tmp.XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0 || fill(fd) != 0)
		return 1;
	printf("unseen: path=%s\n", path);
	return 0;
}

static int with_fcloseall(void)
{
	char a[PATH_MAX], b[PATH_MAX];
	snprintf(a, sizeof(a), "%s/a.noop", dir);
	snprintf(b, sizeof(b), "%s/b.dat", dir);
	FILE *fp = fopen(a, "w");
	if (!fp || fsync(fileno(fp)) != 0)
		return 1;
	int old = fileno(fp);
	fcloseall();
	int fd = (int)syscall(SYS_openat, AT_FDCWD, b, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && fd != old) { /* fcloseall freed 0-2 too: move it onto the old number, unseen */
		syscall(SYS_dup3, fd, old, 0);
		syscall(SYS_close, fd);
		fd = old;
	}
	struct stat st;
	if (fd < 0 || fill(fd) != 0 || fstat(fd, &st) != 0)
		return 1;
	printf("unseen: b_ino=%lu\n", (unsigned long)st.st_ino);
	return 0;
}

static int with_daemon(void)
{
	char res[PATH_MAX];
	snprintf(res, sizeof(res), "%s/result", dir);
	if (fsync(1) != 0) /* stdout is a tracked file before */
		return 1;
	fflush(stdout);
	if (daemon(1, 0) != 0)
		return 1;
	int r = fsync(1), e = r ? errno : 0;
	char line[64];
	int n = snprintf(line, sizeof(line), "fsync=%d errno=%s\n", r, e ? strerrorname_np(e) : "0");
	int fd = open(res, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	return fd >= 0 && write(fd, line, (size_t)n) == n && close(fd) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = "mkstemp";
	int opt;
	while ((opt = getopt(argc, argv, "d:m:")) != -1) {
		if (opt == 'd')
			dir = optarg;
		else if (opt == 'm')
			mode = optarg;
		else
			return 2;
	}
	if (!strcmp(mode, "fcloseall"))
		return with_fcloseall();
	if (!strcmp(mode, "daemon"))
		return with_daemon();
	return with_mkstemp();
}
