/*
 * liveread.c - reading one live counters file (docs/LIVEFORMAT.md, Reading
 * and Staleness) without ever blocking or slowing its writer.
 *
 * The writer rewrites its file in place under a sequence count and never
 * waits for readers, so a reader copies the file with pread (no mapping:
 * a file cut short under a mapping would raise SIGBUS), checks the count
 * did not move, and gives up after a few attempts rather than spin. The
 * file is looked at with fstatat before it is opened, so a FIFO or device
 * planted under a .live name is never opened at all, and with fstat after,
 * so what is read is what was checked.
 */
#include "liveread.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static enum live_status say(char *why, size_t len, enum live_status st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum live_status say(char *why, size_t len, enum live_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (len)
		vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return st;
}

/* The pid a file's name gives: "1234.live" -> 1234; 0 if not that shape. */
static pid_t name_pid(const char *name)
{
	if (name[0] < '1' || name[0] > '9')
		return 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(name, &end, 10);
	if (errno || v > INT_MAX || strcmp(end, LIVE_SUFFIX) != 0)
		return 0;
	return (pid_t)v;
}

static const char *kind_name(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	return "not a regular file";
}

/* Opens NAME if it is a regular file of owner's, small enough to read. */
static enum live_status open_checked(int dirfd, const char *name, uid_t owner, int *fdp, struct stat *st,
				     char *why, size_t len)
{
	struct stat pre;
	if (fstatat(dirfd, name, &pre, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? LIVE_GONE : say(why, len, LIVE_BAD, "cannot stat: %s", strerror(errno));
	if (!S_ISREG(pre.st_mode))
		return say(why, len, LIVE_REFUSED, "refused: %s", kind_name(pre.st_mode));
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return LIVE_GONE;
		return say(why, len, errno == ELOOP ? LIVE_REFUSED : LIVE_BAD, "cannot open: %s", strerror(errno));
	}
	enum live_status rc = LIVE_OK;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) /* swapped since fstatat */
		rc = say(why, len, LIVE_REFUSED, "refused: not a regular file");
	else if (st->st_uid != owner)
		rc = say(why, len, LIVE_REFUSED, "refused: owned by uid %u, not by the directory's owner %u",
			 (unsigned)st->st_uid, (unsigned)owner);
	else if (st->st_size > 0 && st->st_size < (off_t)sizeof(struct live_header))
		rc = say(why, len, LIVE_BAD, "truncated: %lld bytes, less than a header", (long long)st->st_size);
	else if (st->st_size > (off_t)LIVE_READ_MAX)
		rc = say(why, len, LIVE_BAD, "%lld bytes: larger than any live file", (long long)st->st_size);
	if (rc != LIVE_OK)
		close(fd);
	else
		*fdp = fd;
	return rc;
}

/* The rule table, when the writer has one (nrules 0: a writer before it,
 * whose header bytes were reserved zero): after the files' room, within
 * the file, entries at least as large as this reader knows. */
static enum live_status rules_ok(const struct live_header *h, uint64_t files_end, off_t size, char *why,
				 size_t len)
{
	if (!h->nrules)
		return LIVE_OK;
	if (h->nrules > LIVE_READ_RULES)
		return say(why, len, LIVE_BAD, "nrules %u out of range", h->nrules);
	if (h->rule_size < sizeof(struct live_rule) || h->rule_size % 8 || h->rule_size > 65536)
		return say(why, len, LIVE_BAD, "rule_size %u (this reader needs %zu or more)", h->rule_size,
			   sizeof(struct live_rule));
	uint64_t end = h->rules_offset + (uint64_t)h->nrules * h->rule_size;
	if (h->rules_offset < files_end || end > (uint64_t)size)
		return say(why, len, LIVE_BAD, "rule table at %u (%u of %u bytes) outside the file's %lld bytes after its files",
			   h->rules_offset, h->nrules, h->rule_size, (long long)size);
	return LIVE_OK;
}

/* The checks of LIVEFORMAT.md on a consistent header, and bounds on the
 * fields the views divide by or trust. */
static enum live_status layout_ok(const struct live_header *h, off_t size, char *why, size_t len)
{
	if (memcmp(h->magic, LIVE_MAGIC, sizeof(h->magic)) != 0)
		return say(why, len, LIVE_BAD, "not a live counters file (bad magic)");
	if (h->version != LIVE_VERSION)
		return say(why, len, LIVE_BAD, "version %u; this reader knows %u", h->version, LIVE_VERSION);
	if (h->header_size != sizeof(struct live_header))
		return say(why, len, LIVE_BAD, "header_size %u, not %zu", h->header_size, sizeof(struct live_header));
	/* A newer writer may grow entries; we read their known prefix. */
	if (h->file_size < sizeof(struct live_file) || h->file_size % 8 || h->file_size > 65536)
		return say(why, len, LIVE_BAD, "file_size %u (this reader needs %zu or more)", h->file_size,
			   sizeof(struct live_file));
	if (h->max_files == 0 || h->max_files > (LIVE_READ_MAX - h->header_size) / h->file_size)
		return say(why, len, LIVE_BAD, "max_files %u out of range", h->max_files);
	if (h->nfiles > h->max_files)
		return say(why, len, LIVE_BAD, "nfiles %u > max_files %u", h->nfiles, h->max_files);
	/* The rest must be plausible for a process publishing once a second. */
	if (h->ended > 1)
		return say(why, len, LIVE_BAD, "ended %u is not 0 or 1", h->ended);
	if (h->interval_ms > 3600000u || h->interval_ns > 3600 * 1000000000ull)
		return say(why, len, LIVE_BAD, "interval %u ms (%llu ns) out of range", h->interval_ms,
			   (unsigned long long)h->interval_ns);
	uint64_t need = h->header_size + (uint64_t)h->max_files * h->file_size;
	if ((uint64_t)size < need)
		return say(why, len, LIVE_BAD, "truncated: %lld bytes, the layout needs %llu", (long long)size,
			   (unsigned long long)need);
	return rules_ok(h, need, size, why, len);
}

static bool pread_full(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r;
	do
		r = pread(fd, buf, n, off);
	while (r < 0 && errno == EINTR);
	return r == (ssize_t)n;
}

static bool read_seq(int fd, uint32_t *seq)
{
	return pread_full(fd, seq, sizeof(*seq), (off_t)offsetof(struct live_header, seq));
}

/* A header of zeros: the writer has made the file and not yet written it. */
static bool unwritten(const struct live_header *h)
{
	static const char zero[sizeof(h->magic)];
	return memcmp(h->magic, zero, sizeof(zero)) == 0;
}

/* One seqlock copy: LIVE_BUSY when the count was odd or moved (retry),
 * LIVE_OK with h and the entries copied, else LIVE_BAD with why. */
static enum live_status copy_once(int fd, off_t size, struct live_header *h, uint8_t *ents, char *why,
				  size_t len)
{
	uint32_t s1, s2;
	if (!read_seq(fd, &s1) || !pread_full(fd, h, sizeof(*h), 0))
		return say(why, len, LIVE_BAD, "truncated while reading");
	if (s1 & 1)
		return LIVE_BUSY;
	enum live_status st = layout_ok(h, size, why, len);
	size_t n = st == LIVE_OK ? (size_t)h->nfiles * h->file_size : 0;
	if (n && !pread_full(fd, ents, n, (off_t)h->header_size))
		return say(why, len, LIVE_BAD, "truncated while reading its files");
	/* the rules after the files in the copy (both fit: layout_ok) */
	size_t nr = st == LIVE_OK ? (size_t)h->nrules * h->rule_size : 0;
	if (nr && !pread_full(fd, ents + n, nr, (off_t)h->rules_offset))
		return say(why, len, LIVE_BAD, "truncated while reading its rules");
	if (!read_seq(fd, &s2))
		return say(why, len, LIVE_BAD, "truncated while reading");
	if (s2 != s1 || h->seq != s1 || unwritten(h))
		return LIVE_BUSY; /* torn: even a bad-looking header may be half-written */
	return st;
}

/* Copies until consistent, a bounded number of times (LIVEFORMAT.md: "a
 * few times, then reports the process as busy"). ents has room for the
 * whole file. */
static enum live_status copy_consistent(int fd, off_t size, struct live_header *h, uint8_t *ents, char *why,
					size_t len)
{
	for (int i = 0; i < LIVE_TRIES; i++) {
		enum live_status st = copy_once(fd, size, h, ents, why, len);
		if (st != LIVE_BUSY)
			return st;
		/* Short and growing: the writer's rewrite takes microseconds,
		 * unless it was descheduled in the middle. ~1.6 ms in all. */
		struct timespec ts = { 0, 50000L << i };
		if (i + 1 < LIVE_TRIES)
			nanosleep(&ts, NULL);
	}
	return LIVE_BUSY;
}

/* The header and the known prefix of each entry, strings terminated. */
static bool fill_proc(struct live_proc *p, const struct live_header *h, const uint8_t *ents)
{
	p->h = *h;
	p->h.cmdline[sizeof(p->h.cmdline) - 1] = '\0';
	p->h.config[sizeof(p->h.config) - 1] = '\0';
	p->h.default_policy[sizeof(p->h.default_policy) - 1] = '\0';
	p->h.comm[sizeof(p->h.comm) - 1] = '\0';
	p->h.config_error[sizeof(p->h.config_error) - 1] = '\0';
	p->files = calloc(h->nfiles ? h->nfiles : 1, sizeof(*p->files));
	p->rules = calloc(h->nrules ? h->nrules : 1, sizeof(*p->rules));
	if (!p->files || !p->rules) {
		live_proc_free(p);
		return false;
	}
	for (uint32_t i = 0; i < h->nfiles; i++) {
		struct live_file *f = &p->files[i];
		memcpy(f, ents + (size_t)i * h->file_size, sizeof(*f));
		f->rule_name[sizeof(f->rule_name) - 1] = '\0';
		f->path[sizeof(f->path) - 1] = '\0';
	}
	const uint8_t *rules = ents + (size_t)h->nfiles * h->file_size;
	for (uint32_t i = 0; i < h->nrules; i++) {
		struct live_rule *r = &p->rules[i];
		memcpy(r, rules + (size_t)i * h->rule_size, sizeof(*r));
		r->name[sizeof(r->name) - 1] = '\0';
		r->glob[sizeof(r->glob) - 1] = '\0';
	}
	return true;
}

bool live_stat_start(const char *text, uint64_t *start)
{
	const char *p = strrchr(text, ')');
	if (!p)
		return false;
	p++;
	/* Fields 3, 4, ... follow the command's ')', one space apart. */
	for (int field = 3; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			return false;
		if (field == 22) {
			if (!isdigit((unsigned char)*p))
				return false;
			char *end;
			errno = 0;
			unsigned long long v = strtoull(p, &end, 10);
			if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
				return false;
			*start = v;
			return true;
		}
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	return false;
}

bool live_proc_start(pid_t pid, uint64_t *start)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return live_stat_start(buf, start);
}

/* LIVEFORMAT.md, Staleness. Sets p->removable when the file's process is
 * gone for good (no process, or its pid reused); an ended process that
 * still runs removes its own file. */
static enum live_status check_alive(struct live_proc *p, pid_t pid, char *why, size_t len)
{
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		p->removable = true;
		return say(why, len, LIVE_STALE, "no process %d", (int)pid);
	}
	uint64_t start;
	if (!p->busy && live_proc_start(pid, &start) && start != p->h.proc_start) {
		p->removable = true;
		return say(why, len, LIVE_STALE, "pid %d was reused (start %llu, file says %llu)", (int)pid,
			   (unsigned long long)start, (unsigned long long)p->h.proc_start);
	}
	if (!p->busy && p->h.ended)
		return say(why, len, LIVE_STALE, "process %d has ended", (int)pid);
	return LIVE_OK;
}

static bool is_stalled(const struct live_header *h, uint64_t now_mono_ns)
{
	uint64_t iv = (h->interval_ms ? h->interval_ms : 1000) * 1000000ull;
	return now_mono_ns > h->updated_mono_ns && now_mono_ns - h->updated_mono_ns > LIVE_STALL_INTERVALS * iv;
}

/* Copies and checks an open file; p is filled on LIVE_OK and LIVE_BUSY. */
static enum live_status read_open(int fd, off_t size, pid_t pid, uint64_t now_mono_ns, struct live_proc *p,
				  char *why, size_t len)
{
	struct live_header h;
	uint8_t *ents = malloc(size ? (size_t)size : 1);
	if (!ents)
		return say(why, len, LIVE_BAD, "out of memory");
	/* Empty: just created, not yet written. Busy, like a rewrite; if its
	 * writer died there, the pid check below finds the file stale. */
	enum live_status st = size ? copy_consistent(fd, size, &h, ents, why, len) : LIVE_BUSY;
	if (st == LIVE_OK && h.pid != (uint32_t)pid)
		st = say(why, len, LIVE_BAD, "names pid %u, not the %d of its file name", h.pid, (int)pid);
	if (st == LIVE_OK && !fill_proc(p, &h, ents))
		st = say(why, len, LIVE_BAD, "out of memory");
	free(ents);
	if (st == LIVE_BUSY) { /* nothing consistent to show but who it is */
		memset(&p->h, 0, sizeof(p->h));
		p->h.pid = (uint32_t)pid;
		p->busy = true;
	}
	if (st != LIVE_OK && st != LIVE_BUSY)
		return st;
	enum live_status alive = check_alive(p, pid, why, len);
	if (alive != LIVE_OK) {
		live_proc_free(p);
		return alive;
	}
	p->stalled = !p->busy && is_stalled(&p->h, now_mono_ns);
	return st;
}

enum live_status live_read_at(int dirfd, const char *name, uid_t owner, uint64_t now_mono_ns,
			      struct live_proc *p, char *why, size_t len)
{
	memset(p, 0, sizeof(*p));
	if (len)
		why[0] = '\0';
	int fd = -1;
	struct stat st;
	enum live_status rc = open_checked(dirfd, name, owner, &fd, &st, why, len);
	if (rc != LIVE_OK)
		return rc;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	pid_t pid = name_pid(name);
	if (!pid)
		rc = say(why, len, LIVE_BAD, "not named PID%s", LIVE_SUFFIX);
	else
		rc = read_open(fd, st.st_size, pid, now_mono_ns, p, why, len);
	close(fd);
	return rc;
}

void live_proc_free(struct live_proc *p)
{
	free(p->files);
	free(p->rules);
	p->files = NULL;
	p->rules = NULL;
	p->h.nfiles = 0;
	p->h.nrules = 0;
}

bool live_remove_exact(int dirfd, const char *name, dev_t dev, ino_t ino)
{
	/* Not ending in .live: no reader looks at it while it is aside. */
	char aside[NAME_MAX + 1];
	if (snprintf(aside, sizeof(aside), ".%.200s.stale-%d", name, (int)getpid()) >= (int)sizeof(aside))
		return false;
	if (renameat2(dirfd, name, dirfd, aside, RENAME_NOREPLACE) != 0)
		return false; /* not ours to remove, or gone already */
	struct stat st;
	if (fstatat(dirfd, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev && st.st_ino == ino)
		return unlinkat(dirfd, aside, 0) == 0;
	/* A new process with that pid made its file between our look and the
	 * rename: give it back its name. */
	renameat2(dirfd, aside, dirfd, name, RENAME_NOREPLACE);
	return false;
}
