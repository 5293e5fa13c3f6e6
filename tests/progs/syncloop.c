/*
 * syncloop - COUNT x (write SIZE bytes + one sync call) on one or more files.
 *
 *   syncloop -f FILE [-f FILE2 ...] [-n COUNT] [-s SIZE] [-m METHOD] [-a] [-r]
 *
 * METHOD: fsync (default) | fdatasync | msync (MAP_SHARED mapping, memcpy +
 * msync MS_SYNC) | sfr (sync_file_range WAIT_BEFORE|WRITE|WAIT_AFTER) |
 * syncfs | sync | osync (open O_SYNC, plain writes) | odsync (open O_DSYNC)
 * | none | mix (iteration i: fsync, fdatasync, sfr, syncfs in turn; writes
 * alternate write, pwrite, writev) | rwfsync, rwfdsync (each write is a
 * pwritev2 with RWF_SYNC / RWF_DSYNC, no sync call).
 * -a opens with openat() relative to an O_DIRECTORY fd of the file's
 * directory; -r reads the files back and checks the data (always done).
 *
 * Data: 16-byte records, each its own file offset as 15 hex digits and
 * '\n', like examples/. Output (stdout):
 *   syncloop: file=PATH getfl=0xFLAGS osync=0|1 odsync=0|1   (one per file,
 *             the flags the kernel really has, from fcntl(F_GETFL))
 *   syncloop: ok files=F count=N method=M
 * Exit: 0 ok; 1 a call failed ("syncloop: CALL #I on PATH: ENAME (msg)" on
 * stderr) or the data read back is wrong; 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "progs.h"

#define MAX_FILES 8

enum method {
	M_FSYNC, M_FDATASYNC, M_MSYNC, M_SFR, M_SYNCFS, M_SYNC, M_OSYNC, M_ODSYNC, M_NONE, M_MIX,
	M_RWFSYNC, M_RWFDSYNC
};
static const char *const method_names[] = { "fsync", "fdatasync", "msync", "sfr",  "syncfs",  "sync",
					     "osync", "odsync",    "none",  "mix", "rwfsync", "rwfdsync" };

struct file {
	const char *path;
	int fd;
	char *map;
};

static void fail_call(const char *call, unsigned long long i, const char *path)
{
	int e = errno;
	fprintf(stderr, "syncloop: %s #%llu on %s: %s (%s)\n", call, i + 1, path,
		strerrorname_np(e) ? strerrorname_np(e) : "?", strerror(e));
	exit(1);
}

static int open_file(const char *path, int flags, int use_at)
{
	if (!use_at)
		return open(path, flags, 0644);
	char dir[4096], base[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return -1;
	int fd = openat(dfd, basename(base), flags, 0644);
	int e = errno;
	close(dfd);
	errno = e;
	return fd;
}

static int verify(const char *path, size_t expect)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "syncloop: verify open %s: %s\n", path, strerror(errno));
		return -1;
	}
	char buf[65536], want[65536];
	size_t off = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		pattern(want, (size_t)r, off);
		if (memcmp(buf, want, (size_t)r) != 0) {
			fprintf(stderr, "syncloop: %s: wrong data near offset %zu\n", path, off);
			close(fd);
			return -1;
		}
		off += (size_t)r;
	}
	close(fd);
	if (r < 0 || off != expect) {
		fprintf(stderr, "syncloop: %s: %zu bytes, expected %zu\n", path, off, expect);
		return -1;
	}
	return 0;
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: syncloop -f FILE [-f FILE ...] [-n COUNT] [-s SIZE] "
			"[-m fsync|fdatasync|msync|sfr|syncfs|sync|osync|odsync|none|mix|rwfsync|rwfdsync] [-a]\n");
	exit(2);
}

static enum method method_of(const char *name)
{
	for (size_t k = 0; k < sizeof(method_names) / sizeof(method_names[0]); k++)
		if (strcmp(name, method_names[k]) == 0)
			return (enum method)k;
	usage();
}

int main(int argc, char **argv)
{
	const char *paths[MAX_FILES] = { NULL }, *mname = "fsync";
	int use_at = 0, readback = 1; /* -r: the files are always read back */
	unsigned long long count = 200;
	size_t size = 4096;
	const struct opt opts[] = {
		{ 'f', OPT_STR, .p = paths, .many = MAX_FILES },
		{ 'n', OPT_ULL, .p = &count },
		{ 's', OPT_SIZE, .p = &size },
		{ 'm', OPT_STR, .p = &mname },
		{ 'a', OPT_FLAG, .p = &use_at },
		{ 'r', OPT_FLAG, .p = &readback },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		usage();
	enum method m = method_of(mname);
	struct file files[MAX_FILES];
	int nfiles = 0;
	while (nfiles < MAX_FILES && paths[nfiles]) {
		files[nfiles] = (struct file){ .path = paths[nfiles], .fd = -1 };
		nfiles++;
	}
	if (!nfiles || !size || optind != argc)
		usage();

	int oflags = O_RDWR | O_CREAT | O_TRUNC;
	if (m == M_OSYNC)
		oflags |= O_SYNC;
	if (m == M_ODSYNC)
		oflags |= O_DSYNC;
	for (int k = 0; k < nfiles; k++) {
		struct file *f = &files[k];
		f->fd = open_file(f->path, oflags, use_at);
		if (f->fd < 0)
			fail_call("open", 0, f->path);
		int fl = fcntl(f->fd, F_GETFL);
		printf("syncloop: file=%s getfl=0x%x osync=%d odsync=%d\n", f->path, fl,
		       (fl & O_SYNC) == O_SYNC, (fl & O_SYNC) != O_SYNC && (fl & O_DSYNC) != 0);
		if (m == M_MSYNC) {
			if (ftruncate(f->fd, (off_t)(count * size)) < 0)
				fail_call("ftruncate", 0, f->path);
			f->map = count ? mmap(NULL, count * size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0) : NULL;
			if (f->map == MAP_FAILED)
				fail_call("mmap", 0, f->path);
		}
	}
	fflush(stdout);

	char *buf = malloc(size);
	long page = sysconf(_SC_PAGESIZE);
	if (!buf)
		return 1;
	for (unsigned long long i = 0; i < count; i++) {
		unsigned long long off = i * size;
		pattern(buf, size, off);
		for (int k = 0; k < nfiles; k++) {
			struct file *f = &files[k];
			if (m == M_MSYNC) {
				memcpy(f->map + off, buf, size);
				size_t start = off & ~(size_t)(page - 1);
				if (msync(f->map + start, off + size - start, MS_SYNC) != 0)
					fail_call("msync", i, f->path);
				continue;
			}
			ssize_t w;
			const char *wname = "write";
			if (m == M_RWFSYNC || m == M_RWFDSYNC) {
				wname = "pwritev2";
				struct iovec iov = { buf, size };
				w = pwritev2(f->fd, &iov, 1, (off_t)off, m == M_RWFSYNC ? RWF_SYNC : RWF_DSYNC);
				if (w == (ssize_t)size && lseek(f->fd, (off_t)(off + size), SEEK_SET) < 0)
					fail_call("lseek", i, f->path);
			} else if (m == M_MIX && i % 3 == 1) {
				wname = "pwrite";
				w = pwrite(f->fd, buf, size, (off_t)off);
				if (w == (ssize_t)size && lseek(f->fd, (off_t)(off + size), SEEK_SET) < 0)
					fail_call("lseek", i, f->path);
			} else if (m == M_MIX && i % 3 == 2) {
				wname = "writev";
				struct iovec iov[2] = { { buf, size / 2 }, { buf + size / 2, size - size / 2 } };
				w = writev(f->fd, iov, 2);
			} else {
				w = write(f->fd, buf, size);
			}
			if (w != (ssize_t)size) {
				if (w >= 0)
					errno = EIO;
				fail_call(wname, i, f->path);
			}
			enum method sm = m == M_MIX ? (enum method[]){ M_FSYNC, M_FDATASYNC, M_SFR, M_SYNCFS }[i % 4] : m;
			int r = 0;
			const char *sname = method_names[sm];
			switch (sm) {
			case M_FSYNC: r = fsync(f->fd); break;
			case M_FDATASYNC: r = fdatasync(f->fd); break;
			case M_SFR:
				sname = "sync_file_range";
				r = sync_file_range(f->fd, (off64_t)off, (off64_t)size,
						    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
							    SYNC_FILE_RANGE_WAIT_AFTER);
				break;
			case M_SYNCFS: r = syncfs(f->fd); break;
			case M_SYNC: sync(); break;
			default: break;
			}
			if (r != 0)
				fail_call(sname, i, f->path);
		}
	}
	int bad = 0;
	for (int k = 0; k < nfiles; k++) {
		struct file *f = &files[k];
		if (f->map && munmap(f->map, count * size) != 0)
			fail_call("munmap", 0, f->path);
		if (close(f->fd) != 0)
			fail_call("close", 0, f->path);
		if (verify(f->path, count * size) != 0)
			bad = 1;
	}
	free(buf);
	if (bad)
		return 1;
	printf("syncloop: ok files=%d count=%llu method=%s\n", nfiles, count, method_names[m]);
	return 0;
}
