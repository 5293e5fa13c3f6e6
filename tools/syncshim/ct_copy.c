/*
 * ct_copy.c - copies of the scope: the initial state every trial starts
 * from (when there is no --setup), and what --keep keeps of a failing
 * trial. Plain copies, never links: the next trial changes the files.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "crashtest.h"
#include "tool.h"

static int mkdir_p(const char *dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int copy_fd(int in, int out)
{
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -1;
			done += w;
		}
	}
}

/* src to dst (its directory made), with src's mode and times. */
static int copy_file(const char *src, const char *dst)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", dst);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir_p(dir) < 0)
			return -1;
	}
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0) {
		if (in >= 0)
			close(in);
		return -1;
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, st.st_mode & 07777);
	int r = out < 0 ? -1 : copy_fd(in, out);
	if (out >= 0) {
		struct timespec times[2] = { st.st_atim, st.st_mtim };
		futimens(out, times);
		fchmod(out, st.st_mode & 07777);
		if (close(out) < 0)
			r = -1;
	}
	close(in);
	return r;
}

static int report(const char *what, const char *path)
{
	cli_err(stderr, "%s %s: %s", what, path, strerror(errno));
	return -1;
}

int ct_snapshot_take(struct ct_scope *s)
{
	if (ct_inventory(s, &s->snap, &s->nsnap) < 0)
		return -1;
	for (size_t i = 0; i < s->nsnap; i++) {
		char dst[PATH_MAX * 2];
		snprintf(dst, sizeof(dst), "%s/snapshot%s", s->work, s->snap[i].path);
		if (copy_file(s->snap[i].path, dst) < 0)
			return report("cannot copy", s->snap[i].path);
	}
	return 0;
}

/* Every file in scope goes; the snapshot's come back. Directories the
 * program made stay (empty of scope files). */
int ct_snapshot_restore(const struct ct_scope *s)
{
	struct ct_file *now;
	size_t n;
	if (ct_inventory(s, &now, &n) < 0)
		return -1;
	int bad = 0;
	for (size_t i = 0; i < n && !bad; i++)
		if (unlink(now[i].path) < 0 && errno != ENOENT)
			bad = report("cannot remove", now[i].path);
	ct_inventory_free(now, n);
	for (size_t i = 0; i < s->nsnap && !bad; i++) {
		char src[PATH_MAX * 2];
		snprintf(src, sizeof(src), "%s/snapshot%s", s->work, s->snap[i].path);
		if (copy_file(src, s->snap[i].path) < 0)
			bad = report("cannot restore", s->snap[i].path);
	}
	return bad;
}

int ct_copy_scope(const struct ct_scope *s, const char *dst)
{
	struct ct_file *now;
	size_t n;
	if (ct_inventory(s, &now, &n) < 0)
		return -1;
	int bad = mkdir_p(dst) < 0 ? report("cannot create", dst) : 0;
	for (size_t i = 0; i < n && !bad; i++) {
		char to[PATH_MAX * 2];
		snprintf(to, sizeof(to), "%s%s", dst, now[i].path);
		if (copy_file(now[i].path, to) < 0)
			bad = report("cannot copy", now[i].path);
	}
	ct_inventory_free(now, n);
	return bad;
}

/* ---- whole directories ---- */

static const char *copy_from, *copy_to;

static int copy_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	if (flag != FTW_F || ftw->level == 0)
		return 0;
	char to[PATH_MAX * 2];
	snprintf(to, sizeof(to), "%s%s", copy_to, path + strlen(copy_from));
	return copy_file(path, to) < 0 ? report("cannot copy", path) : 0;
}

int ct_copy_dir(const char *src, const char *dst)
{
	copy_from = src;
	copy_to = dst;
	if (mkdir_p(dst) < 0)
		return report("cannot create", dst);
	return nftw(src, copy_visit, 16, FTW_PHYS) == 0 ? 0 : -1;
}

static int rm_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path) < 0 && errno != ENOENT ? report("cannot remove", path) : 0;
}

int ct_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	return nftw(path, rm_visit, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}
