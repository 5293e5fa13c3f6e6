/*
 * ct_scope.c - the files a crash test is about: where the scope's globs
 * can match, what is there, and the copy of the initial state each trial
 * starts from when there is no --setup.
 *
 * The launcher's own directory (the snapshot and the undo stores) sits
 * beside the first scope directory, on the same file system, because the
 * shim keeps a replaced or unlinked file as a hard link in the store and
 * a link cannot cross file systems. Every walk skips it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crashtest.h"
#include "policy.h"
#include "tool.h"

/* The directory part of a glob before its first wildcard. */
static void glob_dir(const char *glob, char *out, size_t len)
{
	size_t meta = strcspn(glob, "*?[\\");
	snprintf(out, len, "%.*s", (int)meta, glob);
	char *slash = strrchr(out, '/'); /* a plain path: its directory */
	if (slash == out)
		slash[1] = '\0'; /* "/" */
	else if (slash)
		*slash = '\0';
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0' || (n == 1 && dir[0] == '/'));
}

/* One directory per glob, none inside another (a walk of the outer finds its files). */
static int scope_dirs(struct ct_scope *s)
{
	for (size_t i = 0; i < s->o->nglobs; i++) {
		char d[PATH_MAX];
		glob_dir(s->o->globs[i], d, sizeof(d));
		bool covered = false;
		for (size_t k = 0; k < s->ndirs && !covered; k++)
			covered = under(d, s->dirs[k]);
		if (covered)
			continue;
		for (size_t k = 0; k < s->ndirs;) /* d holds some already chosen: drop them */
			if (under(s->dirs[k], d)) {
				free(s->dirs[k]);
				s->dirs[k] = s->dirs[--s->ndirs];
			} else {
				k++;
			}
		if (!(s->dirs[s->ndirs++] = strdup(d)))
			return -1;
	}
	return 0;
}

/* Beside the first scope directory if it can, else in $TMPDIR or /tmp. */
static int make_work(struct ct_scope *s)
{
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", s->dirs[0]);
	const char *tmp = getenv("TMPDIR");
	const char *cands[] = { dirname(parent), tmp && *tmp ? tmp : "/tmp" };
	struct stat want, got;
	bool have_want = stat(s->dirs[0], &want) == 0;
	for (size_t i = 0; i < 2; i++) {
		snprintf(s->work, sizeof(s->work), "%s/.syncshim-crashtest.XXXXXX", strcmp(cands[i], "/") ? cands[i] : "");
		if (!mkdtemp(s->work) || stat(s->work, &got) < 0)
			continue;
		s->work_dev = (uint64_t)got.st_dev;
		s->work_ino = (uint64_t)got.st_ino;
		if (have_want && got.st_dev != want.st_dev)
			cli_err(stderr, "warning: %s is on another file system than %s: files the "
				"program replaces or unlinks cannot be kept for the rollback", s->work, s->dirs[0]);
		return 0;
	}
	cli_err(stderr, "cannot create a work directory beside %s or in %s: %s",
		s->dirs[0], cands[1], strerror(errno));
	return -1;
}

int ct_scope_init(struct ct_scope *s, const struct ct_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	if (scope_dirs(s) < 0)
		return -1;
	return make_work(s);
}

void ct_scope_done(struct ct_scope *s)
{
	if (s->work[0])
		ct_remove_tree(s->work);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i]);
	ct_inventory_free(s->snap, s->nsnap);
	memset(s, 0, sizeof(*s));
}

bool ct_in_scope(const struct ct_scope *s, const char *path)
{
	for (size_t i = 0; i < s->o->nglobs; i++)
		if (glob_match(s->o->globs[i], path))
			return true;
	return false;
}

/* ---- walking the scope (nftw has no argument: the walk in progress) ---- */

static const struct ct_scope *walking;
static struct ct_file *found;
static size_t nfound, capfound;

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D && (uint64_t)st->st_dev == walking->work_dev && (uint64_t)st->st_ino == walking->work_ino)
		return FTW_SKIP_SUBTREE;
	if (flag != FTW_F || !S_ISREG(st->st_mode) || !ct_in_scope(walking, path))
		return FTW_CONTINUE;
	if (nfound == capfound) {
		size_t ncap = capfound ? capfound * 2 : 64;
		struct ct_file *f = realloc(found, ncap * sizeof(*f));
		if (!f)
			return FTW_STOP;
		found = f;
		capfound = ncap;
	}
	char *copy = strdup(path);
	if (!copy)
		return FTW_STOP;
	found[nfound++] = (struct ct_file){ copy, (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
					    (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec };
	return FTW_CONTINUE;
}

int ct_inventory(const struct ct_scope *s, struct ct_file **files, size_t *n)
{
	walking = s;
	found = NULL;
	nfound = capfound = 0;
	int bad = 0;
	for (size_t i = 0; i < s->ndirs && !bad; i++)
		bad = nftw(s->dirs[i], visit, 32, FTW_PHYS | FTW_ACTIONRETVAL) == FTW_STOP;
	*files = found;
	*n = nfound;
	if (bad) {
		ct_inventory_free(found, nfound);
		*files = NULL;
		*n = 0;
		cli_err(stderr, "out of memory listing the scope");
		return -1;
	}
	return 0;
}

void ct_inventory_free(struct ct_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(files[i].path);
	free(files);
}

bool ct_inventory_changed(const struct ct_file *a, size_t na, const struct ct_file *b, size_t nb)
{
	if (na != nb)
		return true;
	for (size_t i = 0; i < na; i++) {
		/* two walks of an unchanged tree list it in the same order: look
		 * there first, so 20,000 files are not 20,000^2 comparisons */
		size_t k = strcmp(a[i].path, b[i].path) == 0 ? i : 0;
		while (k < nb && strcmp(a[i].path, b[k].path) != 0)
			k++;
		if (k == nb || a[i].ino != b[k].ino || a[i].size != b[k].size || a[i].mtime_ns != b[k].mtime_ns)
			return true;
	}
	return false;
}
