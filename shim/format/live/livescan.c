/*
 * livescan.c - where the live counters files are (LIVEFORMAT.md, Where)
 * and reading every one of them into a snapshot.
 *
 * A directory is trusted only if it belongs to the user whose processes
 * write there and no one else can write it: the writer makes the same
 * check before it publishes, so a directory it would not use holds
 * nothing of its, and root is never shown counters another user planted
 * under someone else's name. Directories are opened with O_NOFOLLOW and
 * files read relative to them, so no path is resolved twice.
 */
#include "liveread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NO_OWNER (-1L) /* an explicit directory: whoever owns it */

void live_where_init(struct live_where *w, const char *dir_option)
{
	memset(w, 0, sizeof(*w));
	const char *env = getenv("SYNCSHIM_LIVE_DIR");
	if (dir_option && *dir_option)
		w->dir = dir_option;
	else if (env && *env)
		w->dir = env;
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	w->xdg = xdg && *xdg == '/' ? xdg : NULL;
	w->tmp = "/tmp";
	w->run_user = "/run/user";
	w->uid = getuid();
	w->all_users = geteuid() == 0;
	w->other_namespaces = !w->dir;
	w->proc = "/proc";
}

bool live_pid_shimmed(const char *proc, pid_t pid)
{
	char path[512], line[4096];
	if (snprintf(path, sizeof(path), "%s/%d/maps", proc, (int)pid) >= (int)sizeof(path))
		return false;
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libsyncshim.so") != NULL;
	fclose(f);
	return found;
}

static void note(struct live_snapshot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct live_snapshot *s, const char *fmt, ...)
{
	if (s->nnotes >= LIVE_MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->notes[s->nnotes++], sizeof(s->notes[0]), fmt, ap);
	va_end(ap);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "1000" -> 1000; -1 unless the whole string is a user id. */
static long uid_of(const char *s)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9)
		return -1;
	return strtol(s, NULL, 10);
}

/* Opens a directory if it is one, not a symlink, owned by want (unless
 * NO_OWNER) and writable by its owner alone; -1 otherwise (a note says
 * why, except for the usual case of a directory that does not exist). */
static int open_dir(struct live_snapshot *s, const char *path, long want, uid_t *owner, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		struct stat l;
		/* (A symlink fails with ENOTDIR here, as O_DIRECTORY is checked first.) */
		if ((e == ENOTDIR || e == ELOOP) && lstat(path, &l) == 0)
			note(s, "%s: %s: ignored", path, S_ISLNK(l.st_mode) ? "a symbolic link" : "not a directory");
		/* A default place that does not exist is the usual case; a
		 * directory asked for by name is worth a word. */
		else if (want == NO_OWNER || e != ENOENT)
			note(s, "%s: %s", path, strerror(e));
		return -1;
	}
	if (fstat(fd, st) != 0) {
		close(fd);
		return -1;
	}
	const char *bad = NULL;
	if (want != NO_OWNER && st->st_uid != (uid_t)want)
		bad = "not owned by its user";
	else if (want != NO_OWNER && (st->st_mode & 022))
		bad = "writable by others";
	if (bad) {
		note(s, "%s: %s: ignored", path, bad);
		close(fd);
		return -1;
	}
	*owner = st->st_uid;
	return fd;
}

static bool push_proc(struct live_snapshot *s, const struct live_proc *p)
{
	if ((s->nprocs & (s->nprocs - 1)) == 0) { /* 0, 1, 2, 4 ...: grow */
		struct live_proc *v = realloc(s->procs, (s->nprocs ? 2 * s->nprocs : 4) * sizeof(*v));
		if (!v)
			return false;
		s->procs = v;
	}
	s->procs[s->nprocs++] = *p;
	return true;
}

/* A stale file goes only if a second look finds the same file still
 * stale, its process gone for good, and only if it is the reader's own:
 * root reads every user's directory but clears nobody else's (that
 * user's next reader does). */
static void maybe_remove(const struct live_where *w, struct live_snapshot *s, int dfd, const char *name,
			 const struct live_proc *first, uid_t owner)
{
	if (w->keep_stale || !first->removable || owner != geteuid())
		return;
	struct live_proc again;
	char why[256];
	enum live_status st = live_read_at(dfd, name, owner, s->mono_ns, &again, why, sizeof(why));
	if (st == LIVE_OK || st == LIVE_BUSY)
		live_proc_free(&again);
	else if (st == LIVE_STALE && again.removable && again.dev == first->dev && again.ino == first->ino &&
		 live_remove_exact(dfd, name, first->dev, first->ino))
		s->removed++;
}

/* Reads one .live file of the directory open as dfd. */
static int scan_one(const struct live_where *w, struct live_snapshot *s, int dfd, const char *dir,
		    const char *name, uid_t owner)
{
	struct live_proc p;
	char why[256];
	enum live_status st = live_read_at(dfd, name, owner, s->mono_ns, &p, why, sizeof(why));
	snprintf(p.path, sizeof(p.path), "%s/%s", dir, name);
	switch (st) {
	case LIVE_OK:
	case LIVE_BUSY:
		if (!push_proc(s, &p)) {
			live_proc_free(&p);
			return -1;
		}
		return 0;
	case LIVE_STALE:
		s->skipped[st]++;
		maybe_remove(w, s, dfd, name, &p, owner);
		return 0;
	case LIVE_GONE:
		return 0;
	default:
		s->skipped[st]++;
		note(s, "%s/%s: %s", dir, name, why);
		return 0;
	}
}

static bool has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);
	return n > k && strcmp(name + n - k, suffix) == 0;
}

static int scan_dir(const struct live_where *w, struct live_snapshot *s, int dfd, const char *dir, uid_t owner)
{
	int lfd = dup(dfd); /* closedir closes it; dfd stays ours */
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		if (lfd >= 0)
			close(lfd);
		note(s, "%s: cannot list: %s", dir, strerror(errno));
		return 0;
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)))
		if (has_suffix(e->d_name, LIVE_SUFFIX))
			rc = scan_one(w, s, dfd, dir, e->d_name, owner);
	closedir(d);
	return rc;
}

/* Directories already read, by device and inode (XDG_RUNTIME_DIR is
 * usually /run/user/UID, which root's walk finds again). */
struct seen {
	dev_t dev[64];
	ino_t ino[64];
	size_t n;
};

static bool seen_before(struct seen *v, const struct stat *st)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->dev[i] == st->st_dev && v->ino[i] == st->st_ino)
			return true;
	if (v->n < 64) {
		v->dev[v->n] = st->st_dev;
		v->ino[v->n++] = st->st_ino;
	}
	return false;
}

static int add_dir(const struct live_where *w, struct live_snapshot *s, struct seen *seen, const char *path,
		   long want)
{
	uid_t owner;
	struct stat st;
	int dfd = open_dir(s, path, want, &owner, &st);
	if (dfd < 0)
		return 0;
	int rc = 0;
	if (!seen_before(seen, &st)) {
		char **v = realloc(s->dirs, (s->ndirs + 1) * sizeof(*v));
		char *copy = strdup(path);
		if (v)
			s->dirs = v;
		if (!v || !copy) {
			free(copy);
			rc = -1;
		} else {
			s->dirs[s->ndirs++] = copy;
			rc = scan_dir(w, s, dfd, path, owner);
		}
	}
	close(dfd);
	return rc;
}

/* Root: every TMP/syncshim-N and RUN_USER/N/syncshim whose owner is N. */
static int add_all_users(const struct live_where *w, struct live_snapshot *s, struct seen *seen)
{
	static const char prefix[] = "syncshim-";
	char path[4096];
	int rc = 0;
	DIR *d = opendir(w->tmp);
	for (struct dirent *e; rc == 0 && d && (e = readdir(d));) {
		long uid = strncmp(e->d_name, prefix, sizeof(prefix) - 1) ? -1 : uid_of(e->d_name + sizeof(prefix) - 1);
		if (uid >= 0 && snprintf(path, sizeof(path), "%s/%s", w->tmp, e->d_name) < (int)sizeof(path))
			rc = add_dir(w, s, seen, path, uid);
	}
	if (d)
		closedir(d);
	d = rc == 0 ? opendir(w->run_user) : NULL;
	for (struct dirent *e; rc == 0 && d && (e = readdir(d));) {
		long uid = uid_of(e->d_name);
		if (uid >= 0 && snprintf(path, sizeof(path), "%s/%s/syncshim", w->run_user, e->d_name) < (int)sizeof(path))
			rc = add_dir(w, s, seen, path, uid);
	}
	if (d)
		closedir(d);
	return rc;
}

/* VAR's value in PROC/PID/environ into out; false if unset or unreadable. */
static bool environ_of(const char *proc, const char *pid, const char *var, char *out, size_t len)
{
	char path[512], buf[65536];
	if (snprintf(path, sizeof(path), "%s/%s/environ", proc, pid) >= (int)sizeof(path))
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	size_t vlen = strlen(var);
	for (char *e = buf; e < buf + n; e += strlen(e) + 1)
		if (!strncmp(e, var, vlen) && e[vlen] == '=' && e[vlen + 1] == '/') {
			snprintf(out, len, "%s", e + vlen + 1);
			return true;
		}
	return false;
}

/* One process with the shim in a mount namespace of its own: the places
 * it publishes in (LIVEFORMAT.md, Where) seen through PROC/PID/root. */
static int add_namespace_of(const struct live_where *w, struct live_snapshot *s, struct seen *seen,
			    const char *pid, uid_t uid)
{
	char root[512], path[4096], val[2048];
	if (snprintf(root, sizeof(root), "%s/%s/root", w->proc, pid) >= (int)sizeof(root))
		return 0;
	int rc = 0;
	if (environ_of(w->proc, pid, "SYNCSHIM_LIVE_DIR", val, sizeof(val)) &&
	    snprintf(path, sizeof(path), "%s%s", root, val) < (int)sizeof(path))
		rc = add_dir(w, s, seen, path, (long)uid);
	if (rc == 0 && environ_of(w->proc, pid, "XDG_RUNTIME_DIR", val, sizeof(val)) &&
	    snprintf(path, sizeof(path), "%s%s/syncshim", root, val) < (int)sizeof(path))
		rc = add_dir(w, s, seen, path, (long)uid);
	if (rc == 0 && snprintf(path, sizeof(path), "%s%s/syncshim-%u", root, w->tmp, (unsigned)uid) < (int)sizeof(path))
		rc = add_dir(w, s, seen, path, (long)uid);
	if (rc == 0 && snprintf(path, sizeof(path), "%s%s/%u/syncshim", root, w->run_user, (unsigned)uid) <
			       (int)sizeof(path))
		rc = add_dir(w, s, seen, path, (long)uid);
	return rc;
}

/* Every process with the shim loaded whose TMP is not ours. */
static int add_other_namespaces(const struct live_where *w, struct live_snapshot *s, struct seen *seen)
{
	struct stat ours, theirs, owner;
	if (stat(w->tmp, &ours) != 0)
		return 0;
	DIR *d = opendir(w->proc);
	if (!d)
		return 0;
	int rc = 0;
	char path[4096];
	for (struct dirent *e; rc == 0 && (e = readdir(d));) {
		long pid = uid_of(e->d_name); /* digits only */
		if (pid <= 0 || snprintf(path, sizeof(path), "%s/%s/root%s", w->proc, e->d_name, w->tmp) >= (int)sizeof(path))
			continue;
		if (stat(path, &theirs) != 0 || (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino))
			continue;
		snprintf(path, sizeof(path), "%s/%s", w->proc, e->d_name);
		if (stat(path, &owner) != 0 || (!w->all_users && owner.st_uid != w->uid) ||
		    !live_pid_shimmed(w->proc, (pid_t)pid))
			continue;
		rc = add_namespace_of(w, s, seen, e->d_name, owner.st_uid);
	}
	closedir(d);
	return rc;
}

static int by_pid(const void *a, const void *b)
{
	const struct live_proc *x = a, *y = b;
	return x->h.pid < y->h.pid ? -1 : x->h.pid > y->h.pid;
}

int live_scan(const struct live_where *w, struct live_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->mono_ns = now_ns(CLOCK_MONOTONIC);
	s->wall_ns = now_ns(CLOCK_REALTIME);
	struct seen seen = { .n = 0 };
	char path[4096];
	int rc = 0;
	if (w->dir) {
		rc = add_dir(w, s, &seen, w->dir, NO_OWNER);
	} else {
		if (w->xdg && snprintf(path, sizeof(path), "%s/syncshim", w->xdg) < (int)sizeof(path))
			rc = add_dir(w, s, &seen, path, (long)w->uid);
		snprintf(path, sizeof(path), "%s/syncshim-%u", w->tmp, (unsigned)w->uid);
		if (rc == 0)
			rc = add_dir(w, s, &seen, path, (long)w->uid);
		if (rc == 0 && w->all_users)
			rc = add_all_users(w, s, &seen);
		if (rc == 0 && w->other_namespaces && w->proc)
			rc = add_other_namespaces(w, s, &seen);
	}
	if (s->nprocs)
		qsort(s->procs, s->nprocs, sizeof(*s->procs), by_pid);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

void live_snapshot_free(struct live_snapshot *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		live_proc_free(&s->procs[i]);
	free(s->procs);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i]);
	free(s->dirs);
	memset(s, 0, sizeof(*s));
}
