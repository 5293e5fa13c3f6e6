/*
 * errno_check - the error results and errno of the sync and fd calls must
 * be exactly the kernel's, whatever the shim's policy.
 *
 *   errno_check DIR
 *
 * Every expectation that does not hold prints "FAIL: ..." on stdout; the
 * last line is "errno_check: ok N checks" or "errno_check: N of M failed".
 * Exit 0 when all hold, 1 otherwise, 2 on a setup problem.
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SENTINEL 4242 /* not a real errno: nobody sets it by accident */

static int checks, failures;

static const char *ename(int e)
{
	if (e == SENTINEL)
		return "SENTINEL";
	const char *n = strerrorname_np(e);
	return n ? n : "?";
}

/* ret must be -1 with errno want. */
static void expect_err(const char *what, long ret, int err, int want)
{
	checks++;
	if (ret == -1 && err == want)
		return;
	failures++;
	printf("FAIL: %s: ret=%ld errno=%s, want -1/%s\n", what, ret, ename(err), ename(want));
}

/* ret must be want_ret (>= 0) and errno untouched (still SENTINEL). */
static void expect_ok(const char *what, long ret, long want_ret, int err)
{
	checks++;
	if (ret == want_ret && err == SENTINEL)
		return;
	failures++;
	printf("FAIL: %s: ret=%ld errno=%s, want %ld and errno left at SENTINEL\n", what, ret, ename(err),
	       want_ret);
}

#define ERR(what, call, want)                                                        \
	do {                                                                         \
		errno = SENTINEL;                                                    \
		long r_ = (long)(call);                                              \
		expect_err(what, r_, errno, want);                                   \
	} while (0)

#define OK(what, call, want_ret)                                                     \
	do {                                                                         \
		errno = SENTINEL;                                                    \
		long r_ = (long)(call);                                              \
		expect_ok(what, r_, want_ret, errno);                                \
	} while (0)

/* A descriptor number that is certainly closed: open then close it. */
static int closed_fd(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	close(fd);
	return fd;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: errno_check DIR\n");
		return 2;
	}
	const char *dir = argv[1];
	char a[4096], b[4096], c[4096];
	snprintf(a, sizeof(a), "%s/errno_a.dat", dir);
	snprintf(b, sizeof(b), "%s/errno_b.dat", dir);
	snprintf(c, sizeof(c), "%s/errno_c.dat", dir);
	char rec[16] = "000000000000000\n";
	const unsigned sfr_all =
		SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;

	/* EBADF: -1, a closed descriptor, a huge number. */
	ERR("fsync(-1)", fsync(-1), EBADF);
	ERR("fdatasync(-1)", fdatasync(-1), EBADF);
	ERR("syncfs(-1)", syncfs(-1), EBADF);
	ERR("sync_file_range(-1)", sync_file_range(-1, 0, 0, sfr_all), EBADF);
	ERR("write(-1)", write(-1, rec, sizeof(rec)), EBADF);
	int cfd = closed_fd(a);
	ERR("fsync(closed)", fsync(cfd), EBADF);
	ERR("fdatasync(closed)", fdatasync(cfd), EBADF);
	ERR("syncfs(closed)", syncfs(cfd), EBADF);
	ERR("sync_file_range(closed)", sync_file_range(cfd, 0, 0, sfr_all), EBADF);
	ERR("write(closed)", write(cfd, rec, sizeof(rec)), EBADF);
	ERR("close(closed)", close(cfd), EBADF);
	ERR("fsync(1000000)", fsync(1000000), EBADF);
	ERR("fdatasync(1<<30)", fdatasync(1 << 30), EBADF);

	/* A tracked file, written and synced, closed, then synced again: the
	 * shim's slot must not outlive the close. */
	int fd = open(a, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(a);
	OK("write(file)", write(fd, rec, sizeof(rec)), (long)sizeof(rec));
	OK("fsync(file)", fsync(fd), 0);
	OK("fdatasync(file)", fdatasync(fd), 0);
	OK("syncfs(file)", syncfs(fd), 0);
	OK("sync_file_range(file)", sync_file_range(fd, 0, 16, sfr_all), 0);
	OK("sync_file_range(file, flags 0)", sync_file_range(fd, 0, 0, 0), 0);
	ERR("sync_file_range(file, bad flags)", sync_file_range(fd, 0, 16, 0x80), EINVAL);
	ERR("sync_file_range(file, negative offset)", sync_file_range(fd, -1, 16, sfr_all), EINVAL);
	OK("pwrite(file)", pwrite(fd, rec, sizeof(rec), 16), (long)sizeof(rec));
	struct iovec iov[2] = { { rec, 8 }, { rec + 8, 8 } };
	OK("writev(file)", writev(fd, iov, 2), 16L);
	errno = SENTINEL;
	sync();
	expect_ok("sync()", 0, 0, errno);
	OK("close(file)", close(fd), 0);
	ERR("fsync(file after close)", fsync(fd), EBADF);
	ERR("fdatasync(file after close)", fdatasync(fd), EBADF);

	/* Read-only descriptor of a regular file: fsync is allowed. */
	errno = SENTINEL;
	fd = open(a, O_RDONLY);
	expect_ok("open(O_RDONLY)", fd >= 0 ? 0 : -1, 0, errno);
	OK("fsync(O_RDONLY)", fsync(fd), 0);
	OK("fdatasync(O_RDONLY)", fdatasync(fd), 0);
	ERR("write(O_RDONLY)", write(fd, rec, sizeof(rec)), EBADF);
	OK("close(O_RDONLY)", close(fd), 0);

	/* O_PATH descriptor: the kernel refuses every sync with EBADF. */
	fd = open(a, O_PATH);
	if (fd < 0)
		die("open O_PATH");
	ERR("fsync(O_PATH)", fsync(fd), EBADF);
	ERR("fdatasync(O_PATH)", fdatasync(fd), EBADF);
	ERR("sync_file_range(O_PATH)", sync_file_range(fd, 0, 0, sfr_all), EBADF);
	/* BUG (shim, noop policy): syncfs() on an O_PATH fd returns 0 because
	 * the noop path validates with fcntl(F_GETFD), which accepts O_PATH;
	 * the kernel (and passthrough) say EBADF. See the test report. */
	ERR("syncfs(O_PATH)", syncfs(fd), EBADF);
	ERR("write(O_PATH)", write(fd, rec, sizeof(rec)), EBADF);
	close(fd);

	/* A file whose FIRST sync is on an O_PATH descriptor, then used through
	 * a real one: the O_PATH sync fails, later syncs and the close succeed
	 * (sync() in between completes anything a policy left pending). */
	char opath[4096];
	snprintf(opath, sizeof(opath), "%s/errno_opath.dat", dir);
	fd = open(opath, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(opath);
	close(fd);
	int pfd = open(opath, O_PATH);
	if (pfd < 0)
		die("open O_PATH");
	/* BUG (shim, defer): returns 0, and the shim keeps a dup of this
	 * O_PATH fd as the file's private descriptor, so every background
	 * sync then fails with EBADF and that sticky error is reported by the
	 * app's later fsync/close on a good descriptor (and the data is never
	 * synced). See the test report. */
	ERR("fsync(O_PATH, first sight of the file)", fsync(pfd), EBADF);
	fd = open(opath, O_RDWR);
	if (fd < 0)
		die(opath);
	for (int i = 0; i < 3; i++) {
		OK("write(file after O_PATH sync)", write(fd, rec, sizeof(rec)), (long)sizeof(rec));
		OK("fsync(file after O_PATH sync)", fsync(fd), 0);
		sync();
	}
	OK("fdatasync(file after O_PATH sync)", fdatasync(fd), 0);
	OK("close(file after O_PATH sync)", close(fd), 0);
	close(pfd);

	/* Pipes, sockets, /dev/null: never touched, so EINVAL/ESPIPE as always. */
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	ERR("fsync(pipe)", fsync(p[1]), EINVAL);
	ERR("fdatasync(pipe)", fdatasync(p[1]), EINVAL);
	ERR("fsync(pipe read end)", fsync(p[0]), EINVAL);
	ERR("sync_file_range(pipe)", sync_file_range(p[1], 0, 0, sfr_all), ESPIPE);
	ERR("pwrite(pipe)", pwrite(p[1], rec, sizeof(rec), 0), ESPIPE);
	OK("write(pipe)", write(p[1], rec, sizeof(rec)), (long)sizeof(rec));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("socketpair");
	ERR("fsync(socket)", fsync(sv[0]), EINVAL);
	ERR("fdatasync(socket)", fdatasync(sv[0]), EINVAL);
	int dn = open("/dev/null", O_WRONLY);
	if (dn < 0)
		die("/dev/null");
	ERR("fsync(/dev/null)", fsync(dn), EINVAL);
	ERR("fdatasync(/dev/null)", fdatasync(dn), EINVAL);
	OK("write(/dev/null)", write(dn, rec, sizeof(rec)), (long)sizeof(rec));

	/* A pipe dup2'ed over a tracked file's number: the number is a pipe now. */
	fd = open(b, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(b);
	OK("fsync(file before dup2)", fsync(fd), 0);
	OK("dup2(pipe over file)", dup2(p[1], fd), fd);
	ERR("fsync(pipe dup2'ed over file)", fsync(fd), EINVAL);
	ERR("fdatasync(pipe dup2'ed over file)", fdatasync(fd), EINVAL);
	OK("close(dup2'ed pipe)", close(fd), 0);

	/* A tracked file closed behind the shim's back (raw syscall), its number
	 * reused by a pipe libc makes: the shim sees the pipe created. (Had the
	 * pipe been made by a raw syscall too, the shim would not know: a stated
	 * limit, README.) */
	fd = open(b, O_RDWR, 0644);
	if (fd < 0)
		die(b);
	OK("fsync(file before raw close)", fsync(fd), 0);
	syscall(SYS_close, fd);
	int q[2];
	if (pipe2(q, 0) < 0)
		die("pipe2");
	if (q[0] != fd && q[1] != fd) /* move one end onto the old number */
		dup3(q[1], fd, 0);
	ERR("fsync(pipe reusing a file's fd number)", fsync(fd), EINVAL);
	ERR("fdatasync(pipe reusing a file's fd number)", fdatasync(fd), EINVAL);
	syscall(SYS_close, fd);

	/* Successful calls leave errno alone. */
	errno = SENTINEL;
	fd = open(c, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	expect_ok("open(O_CREAT|O_DSYNC)", fd >= 0 ? 0 : -1, 0, errno);
	OK("write(O_DSYNC file)", write(fd, rec, sizeof(rec)), (long)sizeof(rec));
	errno = SENTINEL;
	int d = dup(fd);
	expect_ok("dup", d >= 0 ? 0 : -1, 0, errno);
	OK("fsync(dup)", fsync(d), 0);
	errno = SENTINEL;
	int d2 = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	expect_ok("fcntl(F_DUPFD_CLOEXEC)", d2 >= 100 ? 0 : -1, 0, errno);
	OK("fdatasync(F_DUPFD)", fdatasync(d2), 0);
	OK("close(dup)", close(d), 0);
	OK("close(F_DUPFD)", close(d2), 0);
	OK("ftruncate", ftruncate(fd, 8192), 0);

	/* msync: tracked shared mapping. */
	errno = SENTINEL;
	char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	expect_ok("mmap(MAP_SHARED)", map != MAP_FAILED ? 0 : -1, 0, errno);
	if (map != MAP_FAILED) {
		memcpy(map, rec, sizeof(rec));
		OK("msync(MS_SYNC)", msync(map, 8192, MS_SYNC), 0);
		OK("msync(MS_ASYNC)", msync(map, 8192, MS_ASYNC), 0);
		OK("msync(MS_SYNC|MS_INVALIDATE)", msync(map, 4096, MS_SYNC | MS_INVALIDATE), 0);
		ERR("msync(unaligned, MS_SYNC)", msync(map + 1, 100, MS_SYNC), EINVAL);
		ERR("msync(unaligned, MS_ASYNC)", msync(map + 1, 100, MS_ASYNC), EINVAL);
		/* BUG (shim, noop policy): MS_SYNC|MS_ASYNC is EINVAL in the kernel,
		 * but the noop path rewrites the flags to MS_ASYNC first and
		 * returns 0. See the test report. */
		ERR("msync(MS_SYNC|MS_ASYNC)", msync(map, 4096, MS_SYNC | MS_ASYNC), EINVAL);
		ERR("msync(MS_SYNC | bogus flag)", msync(map, 4096, MS_SYNC | 0x100), EINVAL);
		OK("munmap", munmap(map, 8192), 0);
		ERR("msync(MS_SYNC) after munmap", msync(map, 4096, MS_SYNC), ENOMEM);
	}
	char anon_buf[1];
	(void)anon_buf;
	ERR("msync(unaligned stack address)", msync((void *)((uintptr_t)anon_buf | 1), 1, MS_SYNC), EINVAL);
	errno = SENTINEL;
	OK("rename", rename(c, b), 0);
	OK("fsync(after rename)", fsync(fd), 0);
	OK("close(renamed)", close(fd), 0);
	errno = SENTINEL;
	fd = creat(c, 0644);
	expect_ok("creat", fd >= 0 ? 0 : -1, 0, errno);
	OK("fsync(creat)", fsync(fd), 0);
	OK("close(creat)", close(fd), 0);
	ERR("open(missing)", open("/nonexistent/errno_check", O_RDONLY), ENOENT);
	ERR("open(missing, O_SYNC)", open("/nonexistent/errno_check", O_RDWR | O_SYNC), ENOENT);

	/* stdio: fclose goes through the shim's fclose. */
	errno = SENTINEL;
	FILE *fp = fopen(a, "w");
	expect_ok("fopen", fp ? 0 : -1, 0, errno);
	if (fp) {
		fputs("hello\n", fp);
		OK("fflush", fflush(fp), 0);
		OK("fsync(fileno)", fsync(fileno(fp)), 0);
		int n = fileno(fp);
		OK("fclose", fclose(fp), 0);
		ERR("fsync(after fclose)", fsync(n), EBADF);
	}

	if (failures) {
		printf("errno_check: %d of %d failed\n", failures, checks);
		return 1;
	}
	printf("errno_check: ok %d checks\n", checks);
	return 0;
}
