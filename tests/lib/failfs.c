/*
 * failfs.c - a FUSE file system for the tests: it mirrors a backing
 * directory and makes fsync, fdatasync, write, flush (close) or fsyncdir
 * fail on demand, so the suite can prove with REAL errors from a real file
 * system that the shim never loses a sync error. (Shrinking a loop device
 * under a mounted file system hung this machine, and the kernel has no
 * device-mapper, so the failing "device" is this program.)
 *
 *   failfs [-f] [-s] [-d] [-o OPT[,OPT...]] BACKING MOUNTPOINT
 *
 * It always mounts with fsname=failfs,subtype=failfs (the mount shows as
 * "failfs on MOUNTPOINT type fuse.failfs"), default_permissions and
 * auto_unmount: a watcher (fusermount3) unmounts as soon as failfs dies,
 * even by SIGKILL, so a killed failfs never leaves a dead mount behind.
 * SIGTERM, SIGINT and SIGHUP make it unmount and exit cleanly.
 * Useful -o options: writeback_cache (the kernel buffers writes and sends
 * them later, so a write fault turns into an error reported by a later
 * fsync or close, like a real disk's), direct_io (no page cache at all).
 * Without them every write(2) reaches failfs before it returns, and the
 * data is in the backing directory as soon as the call returns.
 *
 * Control: the file MOUNTPOINT/.failfs. Each line written to it is one
 * command; a write with an invalid line fails with EINVAL and changes
 * nothing. Reading it lists the rules in force.
 *
 *   OP ERRNO [after N] [once | times K] [path P]
 *       From now on, calls of OP fail with ERRNO without reaching the
 *       backing directory; with "after N" the first N calls still succeed
 *       (N+1 and later fail); "times K" stops failing after K failures
 *       ("once" = "times 1"). "path P" (P as seen from the mount root,
 *       "/dir/name"; the rest of the line) limits the rule to that file;
 *       a file's own rule wins over the rule for any file. A new rule
 *       replaces the one with the same OP and path, and counts afresh.
 *   OP ok [path P]   OP works again (for every file, or only P's rule goes)
 *   ok               every OP works again
 *   reset            every OP works again and the counters start from 0
 *
 *   OP     fsync (fsync, fdatasync and msync(MS_SYNC) alike), write,
 *          flush (the close(2) of a descriptor), fsyncdir
 *   ERRNO  EIO ENOSPC EDQUOT EROFS EFBIG EINTR EAGAIN EPERM EACCES
 *          ENOMEM EBADF EINVAL ENOTCONN, or a number 1..511. Never ENOSYS:
 *          the kernel would take it as "not implemented" and stop sending
 *          that request for the rest of the mount.
 *
 * Counters: the read-only file MOUNTPOINT/.failfs-stats, a snapshot taken
 * when it is opened. The first line counts the requests that reached
 * failfs (failed ones included), then one line per path:
 *
 *   total fsync=N fdatasync=N write=N bytes=N flush=N fsyncdir=N injected=N
 *   file fsync=N fdatasync=N write=N bytes=N flush=N fsyncdir=N injected=N path=/name
 *
 * fsync counts requests with datasync=0, fdatasync those with datasync=1;
 * injected counts the failures failfs made. A file's line is keyed by its
 * path at the time of the call (a renamed file gets a new line; an open
 * file that was unlinked counts as "(unlinked)"). Both special files are
 * hidden from directory listings.
 *
 * What reaches failfs (measured on this machine's kernel, 6.18):
 *   - every fsync(2) as datasync=0, even with nothing dirty; fdatasync,
 *     msync(MS_SYNC), O_DSYNC writes and RWF_DSYNC as datasync=1; O_SYNC
 *     writes as datasync=0 (one request per write);
 *   - not sync_file_range, syncfs or sync: they never become a request;
 *   - a flush on every close of a descriptor, including the implicit ones
 *     of a forked child that exits; close(2) returns the flush's error;
 *   - with writeback_cache, write(2) succeeds and the write-back fails
 *     later; the fsync that finds the error returns it without sending
 *     a request, the next fsync returns 0. A write-back that close(2)
 *     does itself fails close, and a later opener's first fsync too.
 *     Without writeback_cache the write(2) itself fails, and the next
 *     fsync has nothing to report.
 */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#define CTL_NAME "/.failfs"
#define STATS_NAME "/.failfs-stats"
#define MAX_RULES 64
#define MAX_FILES 1024
#define MAX_PATH 512
#define MAX_CTL 4096

enum op { OP_FSYNC, OP_WRITE, OP_FLUSH, OP_FSYNCDIR, N_OPS };
static const char *const op_names[N_OPS] = { "fsync", "write", "flush", "fsyncdir" };

enum ctr { C_FSYNC, C_FDATASYNC, C_WRITE, C_BYTES, C_FLUSH, C_FSYNCDIR, C_INJECTED, N_CTRS };
static const char *const ctr_names[N_CTRS] = { "fsync", "fdatasync", "write", "bytes",
					       "flush", "fsyncdir", "injected" };

static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "EIO", EIO },       { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EROFS", EROFS },
	{ "EFBIG", EFBIG },   { "EINTR", EINTR },   { "EAGAIN", EAGAIN }, { "EPERM", EPERM },
	{ "EACCES", EACCES }, { "ENOMEM", ENOMEM }, { "EBADF", EBADF },   { "EINVAL", EINVAL },
	{ "ENOTCONN", ENOTCONN },
};

struct rule {
	enum op op;
	int err;                      /* positive errno */
	unsigned long long after;     /* calls that still succeed */
	unsigned long long times;     /* failures before it stops failing, 0: no end */
	unsigned long long seen;      /* calls matched since the rule was set */
	char path[MAX_PATH];          /* "" for every file */
};

struct file_stats {
	char path[MAX_PATH];
	unsigned long long c[N_CTRS];
};

/* Everything the requests share, under one lock: requests are served by
 * several threads, and the tests read rules and counters from yet another. */
static struct {
	pthread_mutex_t lock;
	struct rule rules[MAX_RULES];
	size_t nrules;
	unsigned long long total[N_CTRS];
	struct file_stats files[MAX_FILES];
	size_t nfiles;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct {
	const char *backing;                 /* absolute path */
	int bfd;                             /* the backing directory, for the *at() calls */
	bool writeback;                      /* the kernel caches writes (-o writeback_cache) */
	struct fuse_conn_info_opts *conn_opts;
} g = { .bfd = -1 };

enum kind { K_FILE, K_CTL, K_STATS };

/* An open file: a descriptor on the backing file, or a text snapshot for
 * the special files. */
struct handle {
	enum kind kind;
	int fd;
	char *text;
	size_t len;
};

static struct handle *H(const struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

/* The backing path relative to the backing directory ("/" -> "."). */
static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static enum kind kind_of(const char *path)
{
	if (path && !strcmp(path, CTL_NAME))
		return K_CTL;
	if (path && !strcmp(path, STATS_NAME))
		return K_STATS;
	return K_FILE;
}

static bool special(const char *path)
{
	return kind_of(path) != K_FILE;
}

/* ---- counters and faults (st.lock held) --------------------------------- */

static struct file_stats *file_stats(const char *path)
{
	const char *key = path ? path : "(unlinked)";
	for (size_t i = 0; i < st.nfiles; i++)
		if (!strcmp(st.files[i].path, key))
			return &st.files[i];
	if (st.nfiles == MAX_FILES || strlen(key) >= MAX_PATH)
		return NULL; /* still counted in the total */
	struct file_stats *f = &st.files[st.nfiles++];
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", key);
	return f;
}

static struct rule *find_rule(enum op op, const char *path)
{
	for (size_t i = 0; i < st.nrules; i++)
		if (st.rules[i].op == op && !strcmp(st.rules[i].path, path))
			return &st.rules[i];
	return NULL;
}

/* The errno this call must fail with, or 0; the call counts against the
 * rule that applies to it (the file's own, else the one for every file). */
static int fault(enum op op, const char *path)
{
	struct rule *r = path ? find_rule(op, path) : NULL;
	if (!r)
		r = find_rule(op, "");
	if (!r)
		return 0;
	r->seen++;
	if (r->seen <= r->after)
		return 0;
	if (r->times && r->seen - r->after > r->times)
		return 0;
	return r->err;
}

static void count(struct file_stats *f, enum ctr c, unsigned long long n)
{
	st.total[c] += n;
	if (f)
		f->c[c] += n;
}

/* Counts a request that reached failfs and returns the injected errno, or
 * 0 when the request must go on to the backing file. */
static int account(enum op op, enum ctr c, const char *path, size_t bytes)
{
	pthread_mutex_lock(&st.lock);
	struct file_stats *f = file_stats(path);
	count(f, c, 1);
	if (c == C_WRITE)
		count(f, C_BYTES, bytes);
	int err = fault(op, path);
	if (err)
		count(f, C_INJECTED, 1);
	pthread_mutex_unlock(&st.lock);
	return err;
}

/* ---- the control file ------------------------------------------------- */

static const char *errno_name(int err)
{
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].err == err)
			return errnos[i].name;
	return NULL;
}

static int parse_errno(const char *s)
{
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (!strcmp(errnos[i].name, s))
			return errnos[i].err;
	char *end;
	long n = strtol(s, &end, 10);
	/* The kernel refuses replies with errors of 512 and above. */
	if (*s && !*end && n > 0 && n < 512 && n != ENOSYS)
		return (int)n;
	return 0;
}

static bool parse_count(const char *s, unsigned long long *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !*end && errno == 0;
}

/* One parsed command line. */
struct cmd {
	enum { CMD_NONE, CMD_SET, CMD_CLEAR, CMD_ALL_OK, CMD_RESET } what;
	struct rule rule; /* CMD_SET: the rule; CMD_CLEAR: op and path ("": all of op) */
};

/* Splits off "path P" (the rest of the line) so the other words can be
 * tokenised; false if P is missing or too long. */
static bool split_path(char *line, char *path)
{
	path[0] = '\0';
	char *p = strstr(line, " path ");
	if (!p)
		return true;
	*p = '\0';
	p += strlen(" path ");
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strlen(p);
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		p[--n] = '\0';
	if (p[0] != '/' || n >= MAX_PATH)
		return false;
	memcpy(path, p, n + 1);
	return true;
}

static bool parse_op(const char *w, enum op *op)
{
	for (int i = 0; i < N_OPS; i++)
		if (w && !strcmp(w, op_names[i])) {
			*op = (enum op)i;
			return true;
		}
	return false;
}

/* "[after N] [once | times K]" */
static bool parse_modifiers(char **save, struct rule *r)
{
	for (char *w = strtok_r(NULL, " \t\r", save); w; w = strtok_r(NULL, " \t\r", save)) {
		if (!strcmp(w, "once"))
			r->times = 1;
		else if (!strcmp(w, "after")) {
			if (!parse_count(strtok_r(NULL, " \t\r", save), &r->after))
				return false;
		} else if (!strcmp(w, "times")) {
			if (!parse_count(strtok_r(NULL, " \t\r", save), &r->times) || !r->times)
				return false;
		} else
			return false;
	}
	return true;
}

/* Parses one line (modified in place); false if it is invalid. */
static bool parse_line(char *line, struct cmd *c)
{
	memset(c, 0, sizeof(*c));
	if (!split_path(line, c->rule.path))
		return false;
	char *save = NULL;
	char *w = strtok_r(line, " \t\r", &save);
	if (!w || w[0] == '#')
		return !c->rule.path[0];
	if (!strcmp(w, "ok") || !strcmp(w, "reset")) {
		c->what = !strcmp(w, "ok") ? CMD_ALL_OK : CMD_RESET;
		return !c->rule.path[0] && !strtok_r(NULL, " \t\r", &save);
	}
	if (!parse_op(w, &c->rule.op))
		return false;
	w = strtok_r(NULL, " \t\r", &save);
	if (w && !strcmp(w, "ok")) {
		c->what = CMD_CLEAR;
		return !strtok_r(NULL, " \t\r", &save);
	}
	c->what = CMD_SET;
	c->rule.err = w ? parse_errno(w) : 0;
	return c->rule.err && parse_modifiers(&save, &c->rule);
}

static void remove_rules(enum op op, const char *path)
{
	size_t k = 0;
	for (size_t i = 0; i < st.nrules; i++)
		if (st.rules[i].op != op || (path[0] && strcmp(st.rules[i].path, path)))
			st.rules[k++] = st.rules[i];
	st.nrules = k;
}

/* Applies one command (st.lock held); false if the rule table is full. */
static bool apply(const struct cmd *c)
{
	switch (c->what) {
	case CMD_NONE:
		break;
	case CMD_RESET:
		memset(st.total, 0, sizeof(st.total));
		st.nfiles = 0;
		/* fall through */
	case CMD_ALL_OK:
		st.nrules = 0;
		break;
	case CMD_CLEAR:
		remove_rules(c->rule.op, c->rule.path);
		break;
	case CMD_SET: {
		struct rule *r = find_rule(c->rule.op, c->rule.path);
		if (!r && st.nrules == MAX_RULES)
			return false;
		if (!r)
			r = &st.rules[st.nrules++];
		*r = c->rule;
		break;
	}
	}
	return true;
}

/* A write to the control file: every line must parse before any applies,
 * so a test that makes a typo gets EINVAL and an unchanged file system. */
static int control(const char *buf, size_t size)
{
	if (size >= MAX_CTL)
		return -EFBIG;
	char text[MAX_CTL];
	memcpy(text, buf, size);
	text[size] = '\0';
	struct cmd cmds[64];
	size_t n = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (n == sizeof(cmds) / sizeof(cmds[0]) || !parse_line(line, &cmds[n]))
			return -EINVAL;
		n++;
	}
	int ret = (int)size;
	pthread_mutex_lock(&st.lock);
	for (size_t i = 0; i < n; i++)
		if (!apply(&cmds[i]))
			ret = -ENOSPC;
	pthread_mutex_unlock(&st.lock);
	return ret;
}

/* ---- the special files' contents --------------------------------------- */

static void print_rule(FILE *f, const struct rule *r)
{
	const char *name = errno_name(r->err);
	fprintf(f, "%s ", op_names[r->op]);
	if (name)
		fprintf(f, "%s", name);
	else
		fprintf(f, "%d", r->err);
	fprintf(f, " after %llu", r->after);
	if (r->times)
		fprintf(f, " times %llu", r->times);
	fprintf(f, " seen %llu", r->seen);
	if (r->path[0])
		fprintf(f, " path %s", r->path);
	fputc('\n', f);
}

static void print_counters(FILE *f, const unsigned long long *c)
{
	for (int i = 0; i < N_CTRS; i++)
		fprintf(f, " %s=%llu", ctr_names[i], c[i]);
}

/* The text a special file shows, taken when it is opened. */
static int snapshot(enum kind k, struct handle *h)
{
	FILE *f = open_memstream(&h->text, &h->len);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&st.lock);
	if (k == K_CTL) {
		for (size_t i = 0; i < st.nrules; i++)
			print_rule(f, &st.rules[i]);
	} else {
		fputs("total", f);
		print_counters(f, st.total);
		fputc('\n', f);
		for (size_t i = 0; i < st.nfiles; i++) {
			fputs("file", f);
			print_counters(f, st.files[i].c);
			fprintf(f, " path=%s\n", st.files[i].path);
		}
	}
	pthread_mutex_unlock(&st.lock);
	return fclose(f) ? -ENOMEM : 0;
}

static void special_attr(enum kind k, struct stat *s)
{
	memset(s, 0, sizeof(*s));
	/* Inode numbers no backing file has: cp and friends compare them. */
	s->st_ino = k == K_CTL ? UINT64_MAX - 1 : UINT64_MAX - 2;
	s->st_mode = S_IFREG | (k == K_CTL ? 0600 : 0444);
	s->st_nlink = 1;
	s->st_uid = getuid();
	s->st_gid = getgid();
	/* Size 0: the files are opened with direct_io, so reads ignore it. */
}

/* ---- file system operations --------------------------------------------- */

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Inode numbers of the backing files, so a test can match a file in
	 * the mount with the shim's and the recording layer's logs. */
	cfg->use_ino = 1;
	cfg->readdir_ino = 1;
	/* Unlink at once (no .fuse_hidden files in the backing directory);
	 * open files go on working through their descriptors. */
	cfg->hard_remove = 1;
	/* No attribute or name caching: a test may look at the backing
	 * directory directly, and sizes must follow every write. */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	/* Writeback caching only when asked for (-o writeback_cache). */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	fuse_apply_conn_info_opts(g.conn_opts, conn);
	g.writeback = (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0;
	return NULL;
}

static int ff_getattr(const char *path, struct stat *s, struct fuse_file_info *fi)
{
	if (special(path)) {
		special_attr(kind_of(path), s);
		return 0;
	}
	if (fi && H(fi) && H(fi)->kind == K_FILE)
		return fstat(H(fi)->fd, s) ? -errno : 0;
	if (!path)
		return -ENOENT;
	return fstatat(g.bfd, rel(path), s, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int ff_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(g.bfd, rel(path), buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	int fd = openat(g.bfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		return -e;
	}
	bool root = !strcmp(path, "/");
	struct dirent *e;
	while ((e = readdir(d))) {
		if (root && (!strcmp(e->d_name, CTL_NAME + 1) || !strcmp(e->d_name, STATS_NAME + 1)))
			continue;
		struct stat s = { .st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type) };
		if (fill(buf, e->d_name, &s, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int ff_mkdir(const char *path, mode_t mode)
{
	if (special(path))
		return -EEXIST;
	return mkdirat(g.bfd, rel(path), mode) ? -errno : 0;
}

static int ff_unlink(const char *path)
{
	if (special(path))
		return -EPERM;
	return unlinkat(g.bfd, rel(path), 0) ? -errno : 0;
}

static int ff_rmdir(const char *path)
{
	return unlinkat(g.bfd, rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int ff_symlink(const char *target, const char *path)
{
	if (special(path))
		return -EEXIST;
	return symlinkat(target, g.bfd, rel(path)) ? -errno : 0;
}

static int ff_rename(const char *from, const char *to, unsigned int flags)
{
	if (special(from) || special(to))
		return -EPERM;
	return renameat2(g.bfd, rel(from), g.bfd, rel(to), flags) ? -errno : 0;
}

static int ff_link(const char *from, const char *to)
{
	if (special(from) || special(to))
		return -EPERM;
	return linkat(g.bfd, rel(from), g.bfd, rel(to), 0) ? -errno : 0;
}

static int ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (special(path))
		return -EPERM;
	if (fi && H(fi))
		return fchmod(H(fi)->fd, mode) ? -errno : 0;
	return fchmodat(g.bfd, rel(path), mode, 0) ? -errno : 0;
}

static int ff_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	if (special(path))
		return -EPERM;
	if (fi && H(fi))
		return fchown(H(fi)->fd, uid, gid) ? -errno : 0;
	return fchownat(g.bfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (special(path)) /* `echo CMD > .failfs` truncates first */
		return 0;
	if (fi && H(fi))
		return ftruncate(H(fi)->fd, size) ? -errno : 0;
	int fd = openat(g.bfd, rel(path), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = ftruncate(fd, size) ? -errno : 0;
	close(fd);
	return r;
}

static int ff_utimens(const char *path, const struct timespec ts[2], struct fuse_file_info *fi)
{
	if (special(path))
		return 0;
	if (fi && H(fi))
		return futimens(H(fi)->fd, ts) ? -errno : 0;
	return utimensat(g.bfd, rel(path), ts, AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

/* With writeback caching the kernel reads pages of files opened write-only
 * and computes append offsets itself, so the backing file must be readable
 * and must not append on its own. */
static int backing_flags(int flags)
{
	if (g.writeback) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	return flags | O_CLOEXEC;
}

static int new_handle(struct fuse_file_info *fi, enum kind k, int fd)
{
	struct handle *h = calloc(1, sizeof(*h));
	if (!h) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	h->kind = k;
	h->fd = fd;
	if (k != K_FILE) {
		/* Their text is made here, not in the page cache: every read
		 * and write of a special file must reach failfs. */
		fi->direct_io = 1;
		int r = snapshot(k, h);
		if (r) {
			free(h);
			return r;
		}
	}
	fi->fh = (uintptr_t)h;
	return 0;
}

static int ff_open(const char *path, struct fuse_file_info *fi)
{
	enum kind k = kind_of(path);
	if (k == K_STATS && (fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES; /* root would get past the mode bits */
	if (k != K_FILE)
		return new_handle(fi, k, -1);
	int fd = openat(g.bfd, rel(path), backing_flags(fi->flags));
	if (fd < 0)
		return -errno;
	return new_handle(fi, K_FILE, fd);
}

static int ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (special(path)) /* O_CREAT on an existing name; O_EXCL is checked by the kernel */
		return ff_open(path, fi);
	int fd = openat(g.bfd, rel(path), backing_flags(fi->flags) | O_CREAT, mode);
	if (fd < 0)
		return -errno;
	return new_handle(fi, K_FILE, fd);
}

static int ff_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	struct handle *h = H(fi);
	if (h->kind != K_FILE) {
		if ((size_t)off >= h->len)
			return 0;
		size_t n = h->len - (size_t)off < size ? h->len - (size_t)off : size;
		memcpy(buf, h->text + off, n);
		return (int)n;
	}
	ssize_t n = pread(h->fd, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct handle *h = H(fi);
	if (h->kind == K_CTL)
		return control(buf, size);
	if (h->kind == K_STATS)
		return -EACCES;
	int err = account(OP_WRITE, C_WRITE, path, size);
	if (err)
		return -err;
	ssize_t n = pwrite(h->fd, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int ff_statfs(const char *path, struct statvfs *s)
{
	(void)path;
	return fstatvfs(g.bfd, s) ? -errno : 0;
}

/* Every close(2) of a descriptor. Closing a duplicate of the backing
 * descriptor passes on what the backing file system says at close. */
static int ff_flush(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = H(fi);
	if (h->kind != K_FILE)
		return 0;
	int err = account(OP_FLUSH, C_FLUSH, path, 0);
	if (err)
		return -err;
	int fd = dup(h->fd);
	if (fd < 0)
		return -errno;
	return close(fd) ? -errno : 0;
}

static int ff_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	struct handle *h = H(fi);
	if (h->fd >= 0)
		close(h->fd);
	free(h->text);
	free(h);
	return 0;
}

static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct handle *h = H(fi);
	if (h->kind != K_FILE)
		return 0;
	int err = account(OP_FSYNC, datasync ? C_FDATASYNC : C_FSYNC, path, 0);
	if (err)
		return -err;
	return (datasync ? fdatasync(h->fd) : fsync(h->fd)) ? -errno : 0;
}

static int ff_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)fi;
	int err = account(OP_FSYNCDIR, C_FSYNCDIR, path, 0);
	if (err)
		return -err;
	int fd = openat(g.bfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = (datasync ? fdatasync(fd) : fsync(fd)) ? -errno : 0;
	close(fd);
	return r;
}

static int ff_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)path;
	struct handle *h = H(fi);
	if (h->kind != K_FILE)
		return -EOPNOTSUPP;
	return fallocate(h->fd, mode, off, len) ? -errno : 0;
}

static const struct fuse_operations ops = {
	.init = ff_init,
	.getattr = ff_getattr,
	.readlink = ff_readlink,
	.readdir = ff_readdir,
	.mkdir = ff_mkdir,
	.unlink = ff_unlink,
	.rmdir = ff_rmdir,
	.symlink = ff_symlink,
	.rename = ff_rename,
	.link = ff_link,
	.chmod = ff_chmod,
	.chown = ff_chown,
	.truncate = ff_truncate,
	.utimens = ff_utimens,
	.open = ff_open,
	.create = ff_create,
	.read = ff_read,
	.write = ff_write,
	.statfs = ff_statfs,
	.flush = ff_flush,
	.release = ff_release,
	.fsync = ff_fsync,
	.fsyncdir = ff_fsyncdir,
	.fallocate = ff_fallocate,
};

/* ---- main ------------------------------------------------------------- */

/* The first word that is not an option is the backing directory; it is
 * taken out so fuse_main sees only the mount point. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	(void)data, (void)out;
	if (key != FUSE_OPT_KEY_NONOPT || g.backing)
		return 1;
	g.backing = realpath(arg, NULL);
	if (!g.backing) {
		fprintf(stderr, "failfs: %s: %s\n", arg, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	if (fuse_opt_parse(&args, NULL, NULL, opt_proc) == -1)
		return 1;
	if (!g.backing) {
		fprintf(stderr, "usage: failfs [-f] [-s] [-o OPT,...] BACKING MOUNTPOINT\n"
				"  control: write commands to MOUNTPOINT%s (see the top of failfs.c)\n",
			CTL_NAME);
		return 2;
	}
	/* Opened before the mount: BACKING may even be the mount point. */
	g.bfd = open(g.backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g.bfd < 0) {
		fprintf(stderr, "failfs: %s: %s\n", g.backing, strerror(errno));
		return 1;
	}
	/* max_idle_threads: libfuse 3.14's fuse_main warns about its own
	 * default otherwise. */
	if (fuse_opt_add_arg(&args, "-ofsname=failfs,subtype=failfs,default_permissions,auto_unmount,"
				    "max_idle_threads=10"))
		return 1;
	g.conn_opts = fuse_parse_conn_info_opts(&args);
	if (!g.conn_opts)
		return 1;
	int r = fuse_main(args.argc, args.argv, &ops, NULL);
	fuse_opt_free_args(&args);
	return r;
}
