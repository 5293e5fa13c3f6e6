/*
 * fd_life - descriptor lifecycles the shim must follow: a sync on a
 * descriptor must be treated as a sync of the file that descriptor refers
 * to NOW, however it got there.
 *
 *   fd_life -d DIR [-n COUNT]
 *
 * Each step makes a descriptor for one file of its own, writes COUNT
 * 16-byte pattern records through it, each followed by fsync, checks the
 * data and prints
 *   step NAME ino=INO path=PATH syncs=COUNT
 * Files are named *.dat or *.log so a config can give the two suffixes
 * different rules. Steps:
 *   dup       dup(), original closed
 *   dup2      dup2() to a fixed number, original closed
 *   dup3      dup3(O_CLOEXEC) to a fixed number
 *   dupfd     fcntl(F_DUPFD) and F_DUPFD_CLOEXEC, original closed
 *   fdopen    fdopen + fwrite + fflush + fsync(fileno) + fclose
 *   over_dat  a .dat file dup2()'ed over a .log file's descriptor
 *   over_log  a .log file dup2()'ed over a .dat file's descriptor
 *   lowest    a .log file closed with its syncs owed: the next two opens
 *             still get the two lowest free numbers
 *   reuse     a .log file closed behind the shim's back (raw close) and
 *             its number reused by a .dat file open()ed (seen: the raw
 *             close and a raw reopen both unseen is a stated limit)
 *   raw_log   a .log file opened with a raw syscall (the shim never saw it)
 *   creat     creat() of a .log file
 *   openat    openat() relative to a directory fd, .log file
 *   inherit   a .log file opened without O_CLOEXEC before an execve of
 *             ourselves; the new image syncs it ("--inherited FD" mode)
 * After fdopen's fclose a pipe is created (it reuses the number) and
 * fsync on it must fail with EINVAL.
 * Exit 0 when every call succeeded and the data is right, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "progs.h"

static int count = 5;
static const char *dir;
static int bad;

static void path_of(char *out, const char *name)
{
	snprintf(out, 4096, "%s/%s", dir, name);
}

static void failed(const char *step, const char *what)
{
	printf("FAIL: step %s: %s: %s\n", step, what, strerror(errno));
	bad = 1;
}

static int open_new(const char *name)
{
	char p[4096];
	path_of(p, name);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		failed(name, "open");
	return fd;
}

/* COUNT records + fsync through fd, check them, report the step. */
static void exercise(const char *step, int fd, const char *name)
{
	char p[4096];
	path_of(p, name);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		failed(step, "fstat");
		return;
	}
	char rec[16], back[16];
	for (int i = 0; i < count; i++) {
		pattern(rec, 16, (unsigned long long)i * 16);
		if (pwrite(fd, rec, 16, (off_t)i * 16) != 16) {
			failed(step, "pwrite");
			return;
		}
		if (fsync(fd) != 0) {
			failed(step, "fsync");
			return;
		}
	}
	for (int i = 0; i < count; i++) {
		pattern(rec, 16, (unsigned long long)i * 16);
		if (pread(fd, back, 16, (off_t)i * 16) != 16 || memcmp(rec, back, 16) != 0) {
			printf("FAIL: step %s: record %d wrong\n", step, i);
			bad = 1;
			return;
		}
	}
	printf("step %s ino=%lu path=%s syncs=%d\n", step, (unsigned long)st.st_ino, p, count);
}

static void expect_einval(const char *step, int fd)
{
	errno = 0;
	if (fsync(fd) != -1 || errno != EINVAL) {
		printf("FAIL: step %s: fsync on a pipe: errno %d, want EINVAL\n", step, errno);
		bad = 1;
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--inherited") == 0) {
		/* The re-executed image: sync the descriptor we were handed. */
		int fd = atoi(argv[2]);
		dir = getenv("FD_LIFE_DIR");
		count = atoi(getenv("FD_LIFE_COUNT"));
		exercise("inherit", fd, "inherit.log");
		close(fd);
		return bad;
	}
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_INT, .p = &count },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		dir = NULL;
	if (!dir || count < 1) {
		fprintf(stderr, "usage: fd_life -d DIR [-n COUNT]\n");
		return 2;
	}

	int fd = open_new("dup.dat");
	int d = dup(fd);
	close(fd);
	exercise("dup", d, "dup.dat");
	close(d);

	fd = open_new("dup2.dat");
	if (dup2(fd, 50) != 50)
		failed("dup2", "dup2");
	close(fd);
	exercise("dup2", 50, "dup2.dat");
	close(50);

	fd = open_new("dup3.log");
	if (dup3(fd, 51, O_CLOEXEC) != 51)
		failed("dup3", "dup3");
	close(fd);
	exercise("dup3", 51, "dup3.log");
	close(51);

	fd = open_new("dupfd.dat");
	d = fcntl(fd, F_DUPFD, 60);
	int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 70);
	close(fd);
	exercise("dupfd", d, "dupfd.dat");
	exercise("dupfd_cloexec", d2, "dupfd.dat");
	close(d);
	close(d2);

	fd = open_new("fdopen.log");
	FILE *f = fdopen(fd, "w");
	int n = f ? fileno(f) : -1;
	if (!f)
		failed("fdopen", "fdopen");
	else {
		char rec[16];
		for (int i = 0; i < count; i++) {
			pattern(rec, 16, (unsigned long long)i * 16);
			if (fwrite(rec, 16, 1, f) != 1 || fflush(f) != 0 || fsync(n) != 0)
				failed("fdopen", "fwrite/fflush/fsync");
		}
		struct stat st;
		fstat(n, &st);
		if (fclose(f) != 0)
			failed("fdopen", "fclose");
		char p[4096];
		path_of(p, "fdopen.log");
		if (stat(p, &st) != 0 || st.st_size != count * 16)
			failed("fdopen", "size after fclose");
		printf("step fdopen ino=%lu path=%s syncs=%d\n", (unsigned long)st.st_ino, p, count);
		int pp[2];
		if (pipe(pp) == 0) {
			expect_einval("fdopen", pp[0] == n ? pp[0] : pp[1]);
			close(pp[0]);
			close(pp[1]);
		}
	}

	int lg = open_new("over_dat.log"), dt = open_new("over_dat.dat");
	if (dup2(dt, lg) != lg)
		failed("over_dat", "dup2");
	close(dt);
	exercise("over_dat", lg, "over_dat.dat");
	close(lg);

	dt = open_new("over_log.dat");
	lg = open_new("over_log.log");
	if (dup2(lg, dt) != dt)
		failed("over_log", "dup2");
	close(lg);
	exercise("over_log", dt, "over_log.log");
	close(dt);

	/* The two lowest free numbers, then a file closed with its syncs
	 * still owed (the shim keeps a descriptor of its own for it): the
	 * next two opens must still get those two numbers. */
	int lo = open("/dev/null", O_RDONLY), hi = open("/dev/null", O_RDONLY);
	close(hi);
	close(lo);
	fd = open_new("lowest.log");
	exercise("lowest", fd, "lowest.log");
	close(fd);
	int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
	if (a != lo || b != hi) {
		printf("FAIL: step lowest: the opens got fds %d and %d, not %d and %d\n", a, b, lo, hi);
		bad = 1;
	}
	close(a);
	close(b);

	char p[4096];
	fd = open_new("reuse.log");
	if (fsync(fd) != 0) /* the shim now tracks fd as reuse.log */
		failed("reuse", "first fsync");
	syscall(SYS_close, fd);
	path_of(p, "reuse.dat");
	int r = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (r != fd) {
		printf("FAIL: step reuse: the open got fd %d, not %d\n", r, fd);
		bad = 1;
	}
	exercise("reuse", r, "reuse.dat");
	close(r);

	path_of(p, "raw_log.log");
	r = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	exercise("raw_log", r, "raw_log.log");
	close(r);

	path_of(p, "creat.log");
	fd = creat(p, 0644);
	if (fd < 0)
		failed("creat", "creat");
	else {
		/* creat() is write-only: exercise() reads back, so reopen O_RDWR
		 * through a second descriptor for the check, sync through both. */
		int rw = open(p, O_RDWR);
		char rec[16];
		for (int i = 0; i < count; i++) {
			pattern(rec, 16, (unsigned long long)i * 16);
			if (write(fd, rec, 16) != 16 || fsync(fd) != 0)
				failed("creat", "write/fsync");
		}
		struct stat st;
		fstat(fd, &st);
		if (st.st_size != count * 16)
			failed("creat", "size");
		printf("step creat ino=%lu path=%s syncs=%d\n", (unsigned long)st.st_ino, p, count);
		close(rw);
		close(fd);
	}

	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	fd = openat(dfd, "openat.log", O_RDWR | O_CREAT | O_TRUNC, 0644);
	close(dfd);
	exercise("openat", fd, "openat.log");
	close(fd);

	/* Last: exec ourselves with an inherited descriptor. */
	fd = open_new("inherit.log");
	if (bad)
		return 1;
	char fds[16], cnt[16];
	snprintf(fds, sizeof(fds), "%d", fd);
	snprintf(cnt, sizeof(cnt), "%d", count);
	setenv("FD_LIFE_DIR", dir, 1);
	setenv("FD_LIFE_COUNT", cnt, 1);
	fflush(stdout);
	execl("/proc/self/exe", argv[0], "--inherited", fds, (char *)NULL);
	perror("fd_life: exec");
	return 1;
}
