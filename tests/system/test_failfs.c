/*
 * test_failfs.c - failfs itself, without the shim: the FUSE file system
 * (tests/lib/failfs.c) that other tests mount to get real I/O errors must
 * pass data through to its backing directory, fail exactly the calls it
 * was told to fail, with the errno it was told, count what reached it,
 * and never leave a mount behind.
 *
 * Every test gets failfs mounted on h_path("mnt") over h_path("back").
 */
#include <dirent.h>
#include <sys/mman.h>

#include "harness.h"

static char *mnt, *back;

static void ff_setup(void)
{
	h_setup();
	back = h_path("back");
	mnt = h_path("mnt");
	h_failfs_mount(back, mnt);
}

TestSuite(failfs, .init = ff_setup, .fini = h_failfs_fini, .timeout = 60);

/* ---- helpers ------------------------------------------------------------ */

/* A file in the mount, opened read-write (created empty). */
static int ff_open(const char *name)
{
	char *p = h_fmt("%s/%s", mnt, name);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0, "open %s: %s", p, strerror(errno));
	return fd;
}

static void ff_write(int fd, const char *text)
{
	ssize_t n = write(fd, text, strlen(text));
	cr_assert_eq(n, (ssize_t)strlen(text), "write: %s", n < 0 ? strerror(errno) : "short");
}

/* The result of a sync call, as "0" or the errno's name: one assertion
 * message says what happened. */
static const char *outcome(int r)
{
	return r == 0 ? "0" : strerrorname_np(errno);
}

#define assert_sync(call, want)                                                                   \
	do {                                                                                      \
		errno = 0;                                                                        \
		const char *got_ = outcome(call);                                                 \
		cr_assert_str_eq(got_, (want), "%s: %s, want %s\n%s", #call, got_, (want),        \
				 h_failfs_stats(mnt));                                             \
	} while (0)

/* ---- pass-through ------------------------------------------------------- */

Test(failfs, write_fsync_reach_backing_dir)
{
	int fd = ff_open("a.log");
	ff_write(fd, "one\n");
	ff_write(fd, "two\n");
	assert_sync(fsync(fd), "0");
	assert_sync(fdatasync(fd), "0");
	cr_assert_eq(close(fd), 0, "close: %s", strerror(errno));
	cr_assert_str_eq(h_read_file(h_fmt("%s/a.log", back)), "one\ntwo\n");
	/* fdatasync arrives as datasync=1, apart from fsync. */
	cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "fsync"), 1, "%s", h_failfs_stats(mnt));
	cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "fdatasync"), 1);
	cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "write"), 2);
	cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "bytes"), 8);
	cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "flush"), 1);
	cr_assert_eq(h_failfs_stat(mnt, "injected"), 0);
	cr_assert_str_eq(h_read_file(h_fmt("%s/a.log", mnt)), "one\ntwo\n");
	cr_assert_eq(h_failfs_file_stat(mnt, "/a.log", "flush"), 2, "each close flushes");
	/* The special files stay out of listings. */
	DIR *d = opendir(mnt);
	cr_assert_not_null(d);
	int names = 0;
	for (struct dirent *e; (e = readdir(d));) {
		cr_assert(strncmp(e->d_name, ".failfs", 7), "listed: %s", e->d_name);
		names += !strcmp(e->d_name, "a.log");
	}
	closedir(d);
	cr_assert_eq(names, 1);
}

Test(failfs, ordinary_programs_work)
{
	h_write_file(h_path("src.txt"), "payload\n");
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, "sh", "-ec",
	       "cp src.txt mnt/a; mkdir mnt/d; mv mnt/a mnt/d/b; ln mnt/d/b mnt/c; "
	       "cat mnt/c mnt/d/b; rm mnt/c; ls -a mnt mnt/d",
	       NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "cp, mkdir, mv, ln, cat, rm, ls in the mount");
	cr_assert(h_has(r.out, "payload\npayload\n"), "%s", r.out);
	cr_assert_not(h_has(r.out, ".failfs"), "special files listed:\n%s", r.out);
	cr_assert_str_eq(h_read_file(h_fmt("%s/d/b", back)), "payload\n");
	cr_assert_eq(h_size(h_fmt("%s/c", back)), -1);
	cr_assert_eq(h_ino(h_fmt("%s/d/b", mnt)), h_ino(h_fmt("%s/d/b", back)), "inode numbers pass through");
}

/* ---- fsync faults ------------------------------------------------------- */

Test(failfs, fsync_eio_from_now_on_then_ok)
{
	int fd = ff_open("f");
	ff_write(fd, "x");
	h_failfs_ctl(mnt, "fsync EIO");
	assert_sync(fsync(fd), "EIO");
	assert_sync(fsync(fd), "EIO");
	assert_sync(fdatasync(fd), "EIO");
	h_failfs_ctl(mnt, "fsync ok");
	assert_sync(fsync(fd), "0");
	assert_sync(fdatasync(fd), "0");
	close(fd);
	/* Failed requests reached failfs too. */
	cr_assert_eq(h_failfs_stat(mnt, "fsync"), 3);
	cr_assert_eq(h_failfs_stat(mnt, "fdatasync"), 2);
	cr_assert_eq(h_failfs_stat(mnt, "injected"), 3);
}

Test(failfs, fsync_enospc_and_msync)
{
	int fd = ff_open("f");
	cr_assert_eq(ftruncate(fd, 4096), 0);
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(m, MAP_FAILED, "mmap: %s", strerror(errno));
	h_failfs_ctl(mnt, "fsync ENOSPC");
	assert_sync(fsync(fd), "ENOSPC");
	assert_sync(fdatasync(fd), "ENOSPC");
	m[0] = 'm';
	/* msync(MS_SYNC) is a data sync of the range: it fails the same way. */
	assert_sync(msync(m, 4096, MS_SYNC), "ENOSPC");
	cr_assert_eq(h_failfs_stat(mnt, "fdatasync"), 2, "%s", h_failfs_stats(mnt));
	h_failfs_ctl(mnt, "ok");
	assert_sync(msync(m, 4096, MS_SYNC), "0");
	munmap(m, 4096);
	close(fd);
	cr_assert_eq(h_read_file(h_fmt("%s/f", back))[0], 'm');
}

Test(failfs, fsync_once_fails_exactly_one)
{
	int fd = ff_open("f");
	h_failfs_ctl(mnt, "fsync EIO once");
	assert_sync(fdatasync(fd), "EIO");
	for (int i = 0; i < 3; i++) {
		assert_sync(fsync(fd), "0");
		assert_sync(fdatasync(fd), "0");
	}
	close(fd);
	cr_assert_eq(h_failfs_stat(mnt, "injected"), 1);
}

Test(failfs, fsync_after_n_successes)
{
	int fd = ff_open("f");
	h_failfs_ctl(mnt, "fsync EIO after 3");
	assert_sync(fsync(fd), "0");
	assert_sync(fdatasync(fd), "0");
	assert_sync(fsync(fd), "0");
	for (int i = 0; i < 3; i++)
		assert_sync(fsync(fd), "EIO");
	close(fd);
}

Test(failfs, fsync_after_n_times_k)
{
	int fd = ff_open("f");
	h_failfs_ctl(mnt, "fsync EDQUOT after 1 times 2");
	assert_sync(fsync(fd), "0");
	assert_sync(fsync(fd), "EDQUOT");
	assert_sync(fdatasync(fd), "EDQUOT");
	assert_sync(fsync(fd), "0");
	close(fd);
}

Test(failfs, fsync_fault_of_one_path)
{
	int a = ff_open("a"), b = ff_open("b");
	h_failfs_ctl(mnt, "fsync EIO path /a");
	assert_sync(fsync(b), "0");
	assert_sync(fsync(a), "EIO");
	assert_sync(fdatasync(b), "0");
	assert_sync(fdatasync(a), "EIO");
	/* A file's own rule wins over the rule for every file. */
	h_failfs_ctl(mnt, "fsync ENOSPC");
	assert_sync(fsync(a), "EIO");
	assert_sync(fsync(b), "ENOSPC");
	h_failfs_ctl(mnt, "fsync ok path /a");
	assert_sync(fsync(a), "ENOSPC");
	close(a);
	close(b);
	cr_assert_eq(h_failfs_file_stat(mnt, "/a", "injected"), 4);
	cr_assert_eq(h_failfs_file_stat(mnt, "/b", "injected"), 1);
}

Test(failfs, fsyncdir_fault)
{
	int d = open(mnt, O_RDONLY | O_DIRECTORY);
	cr_assert(d >= 0, "%s", strerror(errno));
	assert_sync(fsync(d), "0");
	h_failfs_ctl(mnt, "fsyncdir EIO once");
	assert_sync(fsync(d), "EIO");
	assert_sync(fsync(d), "0");
	close(d);
	cr_assert_eq(h_failfs_stat(mnt, "fsyncdir"), 3);
}

/* ---- write and close faults --------------------------------------------- */

Test(failfs, write_enospc)
{
	int fd = ff_open("w");
	ff_write(fd, "kept\n");
	h_failfs_ctl(mnt, "write ENOSPC");
	errno = 0;
	cr_assert_eq(write(fd, "lost\n", 5), -1);
	cr_assert_eq(errno, ENOSPC, "write: %s", strerror(errno));
	cr_assert_eq(pwrite(fd, "lost\n", 5, 0), -1);
	cr_assert_eq(errno, ENOSPC);
	assert_sync(fsync(fd), "0"); /* only writes were told to fail */
	cr_assert_str_eq(h_read_file(h_fmt("%s/w", back)), "kept\n");
	h_failfs_ctl(mnt, "write ok");
	ff_write(fd, "more\n");
	close(fd);
	cr_assert_str_eq(h_read_file(h_fmt("%s/w", back)), "kept\nmore\n");
	cr_assert_eq(h_failfs_file_stat(mnt, "/w", "write"), 4);
	cr_assert_eq(h_failfs_file_stat(mnt, "/w", "injected"), 2);
}

Test(failfs, flush_fault_fails_close)
{
	int a = ff_open("a");
	int dup_a = dup(a);
	h_failfs_ctl(mnt, "flush EIO once");
	errno = 0;
	cr_assert_eq(close(dup_a), -1, "close of a duplicate flushes too");
	cr_assert_eq(errno, EIO);
	cr_assert_eq(close(a), 0, "%s", strerror(errno));
	cr_assert_eq(h_failfs_file_stat(mnt, "/a", "flush"), 2);
}

/* With the kernel's writeback cache, write(2) only fills the page cache:
 * the failure of the later write-back is what the next fsync reports, as
 * on a disk file system. */
Test(failfs, writeback_cache_error_reported_by_fsync)
{
	char *wb = h_path("wb");
	h_failfs_mount_opts(back, wb, "writeback_cache");
	int fd = open(h_fmt("%s/f", wb), O_RDWR | O_CREAT, 0644);
	cr_assert(fd >= 0, "%s", strerror(errno));
	h_failfs_ctl(wb, "write EIO");
	ff_write(fd, "cached\n");
	errno = 0;
	cr_assert_eq(fsync(fd), -1, "the write-back error is lost\n%s", h_failfs_stats(wb));
	cr_assert_eq(errno, EIO, "%s", strerror(errno));
	cr_assert_geq(h_failfs_stat(wb, "injected"), 1);
	h_failfs_ctl(wb, "write ok");
	close(fd);
	h_failfs_umount(wb);
}

/* ---- control file and counters ------------------------------------------ */

static int raw_ctl(const char *text)
{
	int fd = open(h_fmt("%s/.failfs", mnt), O_WRONLY);
	cr_assert(fd >= 0, "%s", strerror(errno));
	errno = 0;
	ssize_t n = write(fd, text, strlen(text));
	int err = n < 0 ? errno : 0;
	close(fd);
	return err;
}

Test(failfs, bad_commands_change_nothing)
{
	const char *bad[] = {
		"fsync EBOGUS\n", "fsync ENOSYS\n", "fsync 38\n", "fsync 600\n", "frob EIO\n",
		"fsync EIO after\n", "fsync EIO times 0\n", "fsync EIO path a\n", "ok now\n",
		"fsync EIO\nwrite ENOSPC sometimes\n", /* the good first line is not applied */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(raw_ctl(bad[i]), EINVAL, "accepted: %s", bad[i]);
	cr_assert_str_eq(h_read_file(h_fmt("%s/.failfs", mnt)), "", "rules after bad commands");
	cr_assert_eq(raw_ctl("fsync EIO\n# comment\n\nwrite 28 once\n"), 0);
	cr_assert_str_eq(h_read_file(h_fmt("%s/.failfs", mnt)),
			 "fsync EIO after 0 seen 0\nwrite ENOSPC after 0 times 1 seen 0\n");
	cr_assert_eq(open(h_fmt("%s/.failfs-stats", mnt), O_WRONLY), -1, "stats are read-only");
	cr_assert_eq(errno, EACCES);
}

Test(failfs, shell_echo_and_reset)
{
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	h_args(&c, "sh", "-ec", "echo 'fsync EIO' > mnt/.failfs; echo hi > mnt/x; cat mnt/.failfs", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "echo to the control file");
	cr_assert(h_has(r.out, "fsync EIO"), "%s", r.out);
	int fd = open(h_fmt("%s/x", mnt), O_RDWR);
	assert_sync(fsync(fd), "EIO");
	cr_assert_eq(h_failfs_stat(mnt, "write"), 1);
	h_failfs_ctl(mnt, "reset");
	assert_sync(fsync(fd), "0");
	close(fd);
	cr_assert_eq(h_failfs_stat(mnt, "write"), 0);
	cr_assert_eq(h_failfs_stat(mnt, "fsync"), 1);
	cr_assert_eq(h_failfs_stat(mnt, "injected"), 0);
}

/* ---- no mount left behind ----------------------------------------------- */

Test(failfs, killed_failfs_leaves_no_mount)
{
	char *abs = realpath(mnt, NULL);
	cr_assert(h_failfs_mounted(abs));
	cr_assert_eq(kill(h_failfs_pid(mnt), SIGKILL), 0);
	double deadline = h_now() + H_FAILFS_DEADLINE_S;
	while (h_failfs_mounted(abs) && h_now() < deadline) {
		struct timespec tick = { 0, 2 * 1000 * 1000 };
		nanosleep(&tick, NULL);
	}
	cr_assert_not(h_failfs_mounted(abs), "auto_unmount did not unmount %s", abs);
}

Test(failfs, umount_busy_mount_in_fini)
{
	/* A test that fails with a descriptor open: fini must still unmount. */
	int fd = ff_open("held");
	(void)fd;
	char *abs = realpath(mnt, NULL);
	h_failfs_umount_all();
	cr_assert_not(h_failfs_mounted(abs));
	errno = 0;
	cr_assert_eq(fsync(fd), -1, "the detached mount's daemon is gone");
}
