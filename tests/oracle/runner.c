/*
 * runner.c - the durability oracle's interpreter (tests/oracle/README.md).
 *
 *   runner CASE DIR JOURNAL
 *
 * CASE is a small program written by tests/oracle/oracle.py: a header
 * (files, exit mode, signal handler) and one list of operations per thread
 * (and per forked child). The runner carries it out in DIR, the same way
 * with and without the shim, and appends to JOURNAL one line per call it
 * made, saying what the app saw: op, arguments, result, errno, the
 * descriptor's open file description, the file's inode, and the
 * CLOCK_MONOTONIC times at entry and return. The oracle compares that with
 * what the recording layer beneath the shim saw reach libc.
 *
 * The journal is written with the runner's own system call instruction on
 * a high descriptor, so neither the shim nor the recording layer sees it;
 * the formatter is async-signal-safe (signal handlers journal too).
 */
#include <aio.h>
#include <dirent.h>
#include <grp.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JOURNAL_FD 1010
#define BAD_FD 777 /* never open: dup2 from it fails EBADF */
#define MAX_OPS 4096
#define MAX_THREADS 64
#define MAX_CHILDREN 8
#define NSLOTS 16
#define NMAPS 4
#define NFILES 8
#define MAP_LEN 4096
#define MAX_ARGS 4

enum op_kind {
	OP_OPEN, OP_WRITE, OP_PWRITE, OP_WRITEV, OP_PWRITEV, OP_PWRITEV2, OP_CFR, OP_FSYNC,
	OP_FDATASYNC, OP_SFR, OP_SYNCFS, OP_SYNC, OP_MMAP, OP_MWRITE, OP_MSYNC, OP_MUNMAP, OP_DUP,
	OP_DUP2, OP_DUP3, OP_DUP2BAD, OP_CLOSE, OP_CLOSE_RANGE, OP_RENAME, OP_LINK, OP_UNLINK,
	OP_RELOAD, OP_SLEEP, OP_KILL, OP_FORK, OP_WAIT, OP_CANCEL, OP_BURST, OP_SETTLE, OP_ALARM_EXIT,
	OP_DUP2RACE, OP_FSYNCN, OP_RLIMIT, OP_MAKERS, OP_TMPOPEN, OP_TMPUNLINK, OP_SENDFILE, OP_SPLICE,
	OP_AIOW, OP_RAWPW, OP_DROPPRIVS, OP_STOPKIDS, OP_CONTKIDS, OP_KILLKIDS, OP_AWAITHELD, OP_RELEASE,
	OP_MANY, OP_SELFKILL, OP_LOGLINE, OP_SIGSYS, OP_INLINE, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"open", "write", "pwrite", "writev", "pwritev", "pwritev2", "cfr", "fsync", "fdatasync", "sfr",
	"syncfs", "sync", "mmap", "mwrite", "msync", "munmap", "dup", "dup2", "dup3", "dup2bad", "close",
	"close_range", "rename", "link", "unlink", "reload", "sleep", "kill", "fork", "wait", "cancel",
	"burst", "settle", "alarm_exit", "dup2race", "fsyncn", "rlimit", "makers", "tmpopen", "tmpunlink",
	"sendfile", "splice", "aiow", "rawpw", "dropprivs", "stopkids", "contkids", "killkids", "awaitheld",
	"release", "many", "selfkill", "logline", "sigsys", "inline",
};

struct op {
	int kind;
	long a[MAX_ARGS];
};

struct oplist {
	int n;
	int cap;
	struct op *ops;
};

/* ---- the case ------------------------------------------------------------ */

static char files[NFILES][64];
static int nfiles;
static int nthreads = 1;
static struct oplist threads[MAX_THREADS];
static struct oplist children[MAX_CHILDREN];
static struct oplist handler_ops; /* what the SIGUSR1 handler does */
static char exit_mode[64] = "return";
static int exit_code;
static int child_exit_code;
static int cancel_async;
static const char *dir;

/* ---- shared state: descriptors in slots, mappings --------------------------- */

struct slot {
	_Atomic int fd;
	_Atomic long desc; /* the open (journal line) that made its open file description */
	_Atomic int osync; /* opened with O_SYNC or O_DSYNC */
	char tmp[64];      /* the name tmpopen gave its file (tmpunlink removes it) */
};
/* Each thread has its own slots (one table per thread), so threads never
 * race on each other's numbers except where a case asks for it: the
 * shared numbers of dup2race/fsyncn (SHARED_FD0..+3). */
static struct slot slot_tables[MAX_THREADS][NSLOTS];
static __thread struct slot *slots;
#define SHARED_FD0 96
/* dup2race's calls onto each shared number, begun and ended. A look
 * before and after an fsyncn cannot see a dup2 of another file and one
 * back between them (A, B, A: the fsync reached B; seed fdrace:7896786,
 * the baseline judged uncovered): the counts can. */
static _Atomic unsigned long shared_dup2_begun[4], shared_dup2_ended[4];
static void *_Atomic maps[NMAPS];
static _Atomic long next_desc = 1;
static pthread_t tids[MAX_THREADS];
/* Every thread starts its list only once all exist: a kill or cancel of
 * thread t reads tids[t], which pthread_create fills in its own time (the
 * shim's wrapped pthread_create is slower: soak mix:8439206 and 8374701,
 * pthread_kill of a pthread_t not yet written, SIGSEGV on one side only). */
static pthread_barrier_t all_started;
static pid_t kids[MAX_CHILDREN * 4];
static _Atomic int nkids;
static int proc_tag; /* 0 the parent, 1+K a forked child running list K */

/* ---- async-signal-safe journal ---------------------------------------------- */

struct line {
	char b[1024];
	size_t n;
};

static void put_s(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->b) - 2)
		l->b[l->n++] = *s == '\n' || *s == ' ' ? '_' : *s, s++;
}

static void put_raw(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->b) - 2)
		l->b[l->n++] = *s++;
}

static void put_i(struct line *l, long long v)
{
	char t[24];
	int k = 0;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do
		t[k++] = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		t[k++] = '-';
	while (k && l->n < sizeof(l->b) - 2)
		l->b[l->n++] = t[--k];
}

static void kv(struct line *l, const char *k, long long v)
{
	put_raw(l, " ");
	put_raw(l, k);
	put_raw(l, "=");
	put_i(l, v);
}

static void kvs(struct line *l, const char *k, const char *v)
{
	put_raw(l, " ");
	put_raw(l, k);
	put_raw(l, "=");
	put_s(l, v);
}

/*
 * The runner's own bookkeeping (the journal, installing a config, the test
 * hold's files) through a system call instruction of its own, which
 * neither the shim nor the recording layer sees. Through libc's syscall()
 * the shim would take a journal line for a change of a passthrough file
 * and order it behind the deferred syncs just acknowledged: each one would
 * be made at once, and no defer window would ever be tested. (Under
 * inline_syscalls = trap the shim does see these: the journal has a noop
 * rule, which keeps no order; oracle.py.)
 */
static long raw(long n, long a1, long a2, long a3, long a4)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = a4;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10)
			 : "rcx", "r11", "memory");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	return syscall(n, a1, a2, a3, a4);
#endif
}

static void emit(struct line *l)
{
	l->b[l->n++] = '\n';
	raw(SYS_write, JOURNAL_FD, (long)l->b, (long)l->n, 0);
}

/* The vDSO's clock, as the recording layer reads it (no system call). */
static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long gettid_(void)
{
	return syscall(SYS_gettid);
}

/* The inode and birth time of fd (raw statx: neither layer sees it), so
 * the oracle can tell a file from a later one that reuses its number. */
static void ident(int fd, unsigned long long *ino, long long *birth)
{
	struct statx sx;
	*ino = 0;
	*birth = 0;
	if (fd >= 0 && syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) == 0) {
		*ino = sx.stx_ino;
		if (sx.stx_mask & STATX_BTIME)
			*birth = (long long)sx.stx_btime.tv_sec * 1000000000ll + sx.stx_btime.tv_nsec;
	}
}

/* do_op looked at the slot's descriptor before the call (pre_ino, 0 when
 * nothing was there): a number empty before and a file after was taken by
 * another thread's open meanwhile, and what the call reached is unknowable
 * (seed mix:15690372: an fdatasync of a just-closed number that a slow
 * sync let another thread's open take, judged as that file's). */
static __thread bool pre_looked;
/* An fsyncn's shared number (else -1) and the dup2race counts read just
 * before its look: any dup2 onto it in flight then or made by the time of
 * the look after the call makes the line racy. */
static __thread int shared_looked = -1;
static __thread unsigned long shared_begun0, shared_ended0;

/* One journal line for a finished call. */
static void journal(int th, int idx, const struct op *o, const char *name, int slot, int fd,
		    unsigned long long pre_ino, long desc, long long ret, int err, uint64_t t0, uint64_t t1,
		    const char *extra)
{
	struct line l = { .n = 0 };
	put_raw(&l, "op=");
	put_raw(&l, name);
	kv(&l, "pid", syscall(SYS_getpid));
	kv(&l, "proc", proc_tag);
	kv(&l, "th", th);
	kv(&l, "i", idx);
	kv(&l, "tid", gettid_());
	if (slot >= 0)
		kv(&l, "slot", slot);
	kv(&l, "fd", fd);
	kv(&l, "desc", desc);
	/* The file the call was about: as it was before the call (pre_ino),
	 * or for an open as it is after; "racy" when another thread renumbered
	 * the descriptor meanwhile. */
	unsigned long long ino = 0;
	long long birth = 0;
	if (fd >= 0 && (ret >= 0 || pre_ino))
		ident(fd, &ino, &birth);
	if (pre_ino) {
		if (ino && ino != pre_ino)
			kv(&l, "racy", 1);
		ino = pre_ino;
	} else if (pre_looked && ino) {
		kv(&l, "racy", 1);
	}
	if (shared_looked >= 0) {
		unsigned long b = atomic_load(&shared_dup2_begun[shared_looked]);
		if (shared_begun0 != shared_ended0 || b != shared_begun0 ||
		    atomic_load(&shared_dup2_ended[shared_looked]) != shared_ended0)
			kv(&l, "racy", 1);
		shared_looked = -1;
	}
	kv(&l, "ino", (long long)ino);
	kv(&l, "birth", birth);
	kv(&l, "ret", ret);
	kv(&l, "errno", err);
	kv(&l, "t0", (long long)t0);
	kv(&l, "t1", (long long)t1);
	if (o) {
		kv(&l, "a0", o->a[0]);
		kv(&l, "a1", o->a[1]);
		kv(&l, "a2", o->a[2]);
	}
	if (extra)
		put_raw(&l, extra);
	emit(&l);
}

/* ---- the operations --------------------------------------------------------- */

static void path_of(char *buf, size_t n, long file)
{
	snprintf(buf, n, "%s/%s", dir, files[(file % nfiles + nfiles) % nfiles]);
}

/* Bytes the app writes: letters only, so anything else in a data file
 * came from someone else. */
static void fill(char *buf, size_t n, int th, int idx)
{
	char c = (char)('a' + (unsigned)(th * 7 + idx + 1000) % 26);
	memset(buf, c, n);
}

static int slot_fd(long s)
{
	return atomic_load(&slots[(s % NSLOTS + NSLOTS) % NSLOTS].fd);
}

static void slot_set(long s, int fd, long desc, int osync)
{
	struct slot *sl = &slots[(s % NSLOTS + NSLOTS) % NSLOTS];
	atomic_store(&sl->desc, desc);
	atomic_store(&sl->osync, osync);
	atomic_store(&sl->fd, fd);
}

/* After a successful dup2/dup3 onto number fd or a close_range: every
 * other slot naming that number now means the new file (or nothing). */
static void slots_renumber(int fd, int except, long desc, int osync, int closed)
{
	for (int s = 0; s < NSLOTS; s++)
		if (s != except && atomic_load(&slots[s].fd) == fd) {
			if (closed)
				atomic_store(&slots[s].fd, -1);
			else
				atomic_store(&slots[s].desc, desc), atomic_store(&slots[s].osync, osync);
		}
}

static void run_list(int th, const struct oplist *L);

struct burst_arg {
	int th;
	int slot;
	struct slot *table;
};

static void *burst_main(void *p)
{
	struct burst_arg *b = p;
	slots = b->table;
	char buf[64];
	fill(buf, sizeof(buf), b->th, 0);
	int fd = slot_fd(b->slot);
	/* Which file each call is about, looked at before it as do_op does:
	 * a failed call is not looked at afterwards, and a burst's failed
	 * fsync went unattributed, so the error it did deliver counted as
	 * told to no one (seed threads:3355504). */
	unsigned long long pre_ino;
	long long pre_birth;
	ident(fd, &pre_ino, &pre_birth);
	pre_looked = true;
	uint64_t t0 = now();
	ssize_t r = write(fd, buf, sizeof(buf));
	int e = r < 0 ? errno : 0;
	journal(b->th, 0, NULL, "write", b->slot, fd, pre_ino, atomic_load(&slots[b->slot].desc), r, e, t0, now(),
		" n=64");
	ident(fd, &pre_ino, &pre_birth);
	t0 = now();
	int rs = fsync(fd);
	e = rs < 0 ? errno : 0;
	journal(b->th, 1, NULL, "fsync", b->slot, fd, pre_ino, atomic_load(&slots[b->slot].desc), rs, e, t0, now(),
		NULL);
	return NULL;
}

static void alarm_handler(int sig)
{
	(void)sig;
	struct line l = { .n = 0 };
	put_raw(&l, "op=exit");
	kv(&l, "pid", syscall(SYS_getpid));
	kv(&l, "proc", proc_tag);
	kvs(&l, "mode", "_exit_in_handler");
	kv(&l, "code", exit_code);
	kv(&l, "t0", (long long)now());
	emit(&l);
	_exit(exit_code);
}

static void usr1_handler(int sig)
{
	(void)sig;
	int e = errno;
	run_list(-1, &handler_ops);
	errno = e;
}

/* The shared mappings of anonymous memory (/dev/zero) this process has,
 * their ranges into lo/hi (at most max); how many, or -1. */
#define MAX_SHARED 32
static int shared_maps(unsigned long *lo, unsigned long *hi, int max)
{
	char mapsbuf[65536];
	int fd = (int)raw(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	long n = 0, k;
	while (n < (long)sizeof(mapsbuf) - 1 && (k = raw(SYS_read, fd, (long)mapsbuf + n, sizeof(mapsbuf) - 1 - n, 0)) > 0)
		n += k;
	raw(SYS_close, fd, 0, 0, 0);
	mapsbuf[n] = '\0';
	int found = 0;
	for (char *ln = mapsbuf; ln && *ln;) {
		char *nl = strchr(ln, '\n');
		if (nl)
			*nl = '\0';
		char perms[8];
		if (found < max && sscanf(ln, "%lx-%lx %7s", &lo[found], &hi[found], perms) == 3 && perms[1] == 'w' &&
		    perms[3] == 's' && strstr(ln, "/dev/zero"))
			found++;
		ln = nl ? nl + 1 : NULL;
	}
	return found;
}

/* After a change of credentials: how many of the shared regions the
 * process had before it (the runner makes none: any was handed to it at
 * fork) it still has. scribble: write over each (a child that took on
 * other credentials and is hostile: what it can reach, it can change;
 * every word says EIO and names a live process that never lets go). */
static int still_shared(const unsigned long *lo0, int n0, bool scribble)
{
	unsigned long lo[MAX_SHARED], hi[MAX_SHARED];
	int n = shared_maps(lo, hi, MAX_SHARED), kept = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n0; k++)
			if (lo[i] == lo0[k]) {
				kept++;
				for (uint32_t *p = (uint32_t *)lo[i]; scribble && p < (uint32_t *)hi[i]; p++)
					*p = 5;
			}
	return kept;
}

/* Until DIR/hold.reached exists (the shim's test hold made it: a child is
 * held there), at most ms; 1 reached, 0 not, -2 where no shim is loaded
 * (nothing would hold). */
static long await_hold(long ms)
{
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !strstr(pre, "libsyncshim"))
		return -2;
	char path[600];
	snprintf(path, sizeof(path), "%s/hold.reached", dir);
	for (long i = 0; i < ms; i++) {
		if (raw(SYS_faccessat, AT_FDCWD, (long)path, F_OK, 0) == 0)
			return 1;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* count files DIR/NAME.many, each opened, one byte written, fsynced, kept
 * open (the descriptor limit raised for them); one journal line per call,
 * told apart by k=. Returns how many were made. */
static long many_files(int th, int idx, long count)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)count + 256) {
		rl.rlim_cur = (rlim_t)count + 256 < rl.rlim_max ? (rlim_t)count + 256 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	long made = 0;
	for (long k = 0; k < count; k++) {
		char path[600], name[64], extra[128], b = (char)('a' + k % 26);
		snprintf(name, sizeof(name), "p%d_%ld.many", proc_tag, k);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		uint64_t t0 = now();
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		int err = fd < 0 ? errno : 0;
		long desc = atomic_fetch_add(&next_desc, 1);
		snprintf(extra, sizeof(extra), " osync=0 path=%s k=%ld", name, k);
		journal(th, idx, NULL, "open", -1, fd, 0, desc, fd, err, t0, now(), extra);
		if (fd < 0)
			break;
		snprintf(extra, sizeof(extra), " n=1 osync=0 k=%ld", k);
		t0 = now();
		long r = write(fd, &b, 1);
		err = r < 0 ? errno : 0;
		journal(th, idx, NULL, "write", -1, fd, 0, desc, r, err, t0, now(), extra);
		snprintf(extra, sizeof(extra), " k=%ld", k);
		t0 = now();
		r = fsync(fd);
		err = r < 0 ? errno : 0;
		journal(th, idx, NULL, "fsync", -1, fd, 0, desc, r, err, t0, now(), extra);
		made++;
	}
	return made;
}

/* kind: one way SIGSYS is blocked or ignored. */
static long sigsys_away(int kind)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	switch (kind % 5) {
	case 0:
		return signal(SIGSYS, SIG_IGN) == SIG_ERR ? -1 : 0;
	case 1: /* the System V way: obsolete, still in glibc */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
		return sigset(SIGSYS, SIG_HOLD) == SIG_ERR ? -1 : 0;
#pragma GCC diagnostic pop
	case 2:
		return pthread_sigmask(SIG_BLOCK, &set, NULL) ? -1 : 0;
	case 3: {
		struct sigaction sa = { .sa_handler = SIG_IGN };
		return sigaction(SIGSYS, &sa, NULL);
	}
	default:
		sigfillset(&set);
		sigdelset(&set, SIGUSR1); /* kill's handler list still runs */
		return pthread_sigmask(SIG_BLOCK, &set, NULL) ? -1 : 0;
	}
}

struct inline_call {
	int fd;
	long ret;
	int err;
	uint64_t t0;
};

static void *inline_main(void *p)
{
	struct inline_call *ic = p;
	ic->t0 = now();
	ic->ret = raw(SYS_fsync, ic->fd, 0, 0, 0);
	ic->err = ic->ret < 0 ? errno : 0;
	return NULL;
}

static void do_op(int th, int idx, const struct op *o)
{
	char path[512], path2[512], buf[8192], extra[128];
	int fd = -1, s = (int)((o->a[0] % NSLOTS + NSLOTS) % NSLOTS);
	long desc = 0;
	long long ret = 0;
	int err = 0;
	unsigned long long pre_ino = 0;
	long long pre_birth;
	/* calls on a slot's descriptor: which file it is, before the call */
	pre_looked = false;
	if (o->kind != OP_OPEN && (o->kind <= OP_SYNCFS || o->kind == OP_DUP2BAD || o->kind == OP_CLOSE ||
				   o->kind == OP_SENDFILE || o->kind == OP_SPLICE || o->kind == OP_AIOW ||
				   o->kind == OP_RAWPW || o->kind == OP_INLINE)) {
		ident(slot_fd(s), &pre_ino, &pre_birth);
		pre_looked = true;
	}
	if (o->kind == OP_FSYNCN) {
		shared_looked = (int)(o->a[0] % 4);
		shared_ended0 = atomic_load(&shared_dup2_ended[shared_looked]);
		shared_begun0 = atomic_load(&shared_dup2_begun[shared_looked]);
		ident(SHARED_FD0 + shared_looked, &pre_ino, &pre_birth);
		pre_looked = true;
	}
	uint64_t t0 = now();
	extra[0] = '\0';
	const char *name = op_names[o->kind];
	switch (o->kind) {
	case OP_OPEN: { /* slot file flags(bit0 O_SYNC, bit1 O_DSYNC, bit2 O_TRUNC, bit3 O_APPEND) */
		path_of(path, sizeof(path), o->a[1]);
		int fl = O_RDWR | O_CREAT | O_CLOEXEC;
		if (o->a[2] & 1)
			fl |= O_SYNC;
		if (o->a[2] & 2)
			fl |= O_DSYNC;
		/* (bit 2, O_TRUNC, is not used: a mapping beyond the new end
		 * would fault the app, with or without the shim) */
		if (o->a[2] & 8)
			fl |= O_APPEND;
		ret = fd = open(path, fl, 0644);
		err = ret < 0 ? errno : 0;
		desc = atomic_fetch_add(&next_desc, 1);
		if (fd >= 0)
			slot_set(s, fd, desc, (o->a[2] & 3) != 0);
		snprintf(extra, sizeof(extra), " osync=%d path=%s", (int)((o->a[2] & 3) != 0), files[(o->a[1] % nfiles + nfiles) % nfiles]);
		break;
	}
	case OP_WRITE: case OP_PWRITE: case OP_WRITEV: case OP_PWRITEV: case OP_PWRITEV2: {
		size_t n = (size_t)(o->a[1] % (long)sizeof(buf));
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		fill(buf, n, th, idx);
		struct iovec iov[2] = { { buf, n / 2 }, { buf + n / 2, n - n / 2 } };
		off_t off = (off_t)o->a[2];
		int fl = o->a[3] == 1 ? RWF_SYNC : o->a[3] == 2 ? RWF_DSYNC : 0;
		if (o->kind == OP_WRITE)
			ret = write(fd, buf, n);
		else if (o->kind == OP_PWRITE)
			ret = pwrite(fd, buf, n, off);
		else if (o->kind == OP_WRITEV)
			ret = writev(fd, iov, 2);
		else if (o->kind == OP_PWRITEV)
			ret = pwritev(fd, iov, 2, off);
		else
			ret = pwritev2(fd, iov, 2, off, fl);
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " n=%zu osync=%d", n,
			 atomic_load(&slots[s].osync) || fl != 0);
		break;
	}
	case OP_CFR: { /* slot len: copy from the source file (letters) */
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		snprintf(path, sizeof(path), "%s/src.bin", dir);
		int src = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		loff_t in = 0;
		ret = copy_file_range(src, &in, fd, NULL, (size_t)o->a[1], 0);
		err = ret < 0 ? errno : 0;
		syscall(SYS_close, src);
		snprintf(extra, sizeof(extra), " n=%ld osync=%d", o->a[1], atomic_load(&slots[s].osync));
		break;
	}
	case OP_FSYNC: case OP_FDATASYNC: case OP_SFR: case OP_SYNCFS: {
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		if (o->kind == OP_FSYNC)
			ret = fsync(fd);
		else if (o->kind == OP_FDATASYNC)
			ret = fdatasync(fd);
		else if (o->kind == OP_SFR)
			ret = sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		else
			ret = syncfs(fd);
		err = ret < 0 ? errno : 0;
		break;
	}
	case OP_SYNC:
		sync();
		break;
	case OP_MMAP: { /* map slot: MAP_SHARED over the first page of slot a1's file */
		int m = (int)(o->a[0] % NMAPS);
		s = (int)(o->a[1] % NSLOTS);
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		struct stat st;
		if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size < MAP_LEN)
			syscall(SYS_ftruncate, fd, MAP_LEN);
		void *p = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ret = p == MAP_FAILED ? -1 : 0;
		err = ret < 0 ? errno : 0;
		/* the old mapping stays: another thread may be writing it */
		if (p != MAP_FAILED)
			atomic_store(&maps[m], p);
		/* the address names the mapping a later msync used: the map
		 * index is shared by every thread, so which mmap an msync saw
		 * is known only by what it loaded */
		snprintf(extra, sizeof(extra), " addr=%p", p == MAP_FAILED ? NULL : p);
		break;
	}
	case OP_MWRITE: case OP_MSYNC: case OP_MUNMAP: {
		int m = (int)(o->a[0] % NMAPS);
		/* munmap only where nothing else can be writing the mapping */
		int solo = nthreads == 1 && handler_ops.n == 0;
		if (o->kind == OP_MUNMAP && !solo) {
			ret = -2;
			break;
		}
		void *p = o->kind == OP_MUNMAP ? atomic_exchange(&maps[m], NULL) : atomic_load(&maps[m]);
		s = -1;
		if (!p) {
			ret = -2; /* nothing mapped: not called */
			break;
		}
		if (o->kind == OP_MWRITE)
			fill(p, MAP_LEN / 2, th, idx);
		else if (o->kind == OP_MSYNC)
			ret = msync(p, MAP_LEN, MS_SYNC);
		else
			ret = munmap(p, MAP_LEN);
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " map=%d addr=%p", m, p);
		break;
	}
	case OP_DUP: case OP_DUP2: case OP_DUP3: { /* from to [cloexec] */
		int from = slot_fd(s), d = (int)(o->a[1] % NSLOTS);
		int to = slot_fd(d);
		if (to < 0)
			to = 30 + 16 * ((th < 0 ? 0 : th) % 4) + d;
		desc = atomic_load(&slots[s].desc);
		int os = atomic_load(&slots[s].osync);
		if (o->kind == OP_DUP)
			ret = dup(from);
		else if (o->kind == OP_DUP2)
			ret = dup2(from, to);
		else
			ret = dup3(from, to, o->a[2] ? O_CLOEXEC : 0);
		err = ret < 0 ? errno : 0;
		fd = (int)ret;
		if (ret >= 0) {
			if (o->kind != OP_DUP)
				slots_renumber((int)ret, d, desc, os, 0);
			slot_set(d, (int)ret, desc, os);
		}
		snprintf(extra, sizeof(extra), " from=%d to=%d", from, to);
		s = d;
		break;
	}
	case OP_DUP2RACE: /* slot n: dup2 onto shared number n, which other threads dup2 onto too */
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		atomic_fetch_add(&shared_dup2_begun[o->a[1] % 4], 1);
		ret = dup2(fd, SHARED_FD0 + (int)(o->a[1] % 4));
		err = ret < 0 ? errno : 0;
		atomic_fetch_add(&shared_dup2_ended[o->a[1] % 4], 1);
		break;
	case OP_FSYNCN: /* n: fsync the shared number n */
		fd = SHARED_FD0 + (int)(o->a[0] % 4);
		s = -1;
		ret = fsync(fd);
		err = ret < 0 ? errno : 0;
		name = "fsync";
		break;
	case OP_RLIMIT: { /* n: RLIMIT_NOFILE's soft limit */
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = (rlim_t)o->a[0];
		ret = setrlimit(RLIMIT_NOFILE, &rl);
		err = ret < 0 ? errno : 0;
		s = -1;
		break;
	}
	case OP_MAKERS: { /* kind: make descriptors that way until one fails; ret = how many */
		DIR *dirs[64];
		int fds[64], k = 0, kind = (int)(o->a[0] % 6);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		for (; k < 64; k++) {
			int f = -1;
			dirs[k] = NULL;
			if (kind == 0) {
				dirs[k] = opendir(dir);
				f = dirs[k] ? dirfd(dirs[k]) : -1;
			} else if (kind == 1)
				f = epoll_create1(EPOLL_CLOEXEC);
			else if (kind == 2)
				f = inotify_init1(IN_CLOEXEC);
			else if (kind == 3)
				f = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
			else if (kind == 4)
				f = signalfd(-1, &set, SFD_CLOEXEC);
			else
				f = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (f < 0) {
				err = errno;
				break;
			}
			fds[k] = f;
		}
		ret = k;
		for (int m = 0; m < k; m++)
			if (dirs[m])
				closedir(dirs[m]);
			else
				close(fds[m]);
		s = -1;
		break;
	}
	case OP_DUP2BAD: { /* dup2 from a closed number onto the slot's: fails, changes nothing */
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		ret = dup2(BAD_FD, fd);
		err = ret < 0 ? errno : 0;
		fd = slot_fd(s);
		break;
	}
	case OP_CLOSE:
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		ret = close(fd);
		err = ret < 0 ? errno : 0;
		/* Linux frees the number whatever close returns but EBADF: a
		 * deferred sync's EIO reported here closed it too (seed
		 * fork:8374518, whose stale slot then wrote to the fork child's
		 * next open of that number as if O_SYNC). */
		if (ret == 0 || err != EBADF)
			slots_renumber(fd, -1, 0, 0, 1);
		break;
	case OP_CLOSE_RANGE: { /* the numbers between two slots' descriptors */
		int x = slot_fd(s), y = slot_fd(o->a[1]);
		if (x < 3 || y < 3 || nthreads > 1) { /* it would close other threads' numbers */
			ret = -2;
			break;
		}
		unsigned lo = (unsigned)(x < y ? x : y), hi = (unsigned)(x < y ? y : x);
		ret = close_range(lo, hi, 0);
		err = ret < 0 ? errno : 0;
		if (ret == 0)
			for (unsigned k = lo; k <= hi; k++)
				slots_renumber((int)k, -1, 0, 0, 1);
		snprintf(extra, sizeof(extra), " lo=%u hi=%u", lo, hi);
		s = -1;
		break;
	}
	case OP_RENAME: case OP_LINK:
		path_of(path, sizeof(path), o->a[0]);
		path_of(path2, sizeof(path2), o->a[1]);
		ret = o->kind == OP_RENAME ? rename(path, path2) : link(path, path2);
		err = ret < 0 ? errno : 0;
		s = -1;
		snprintf(extra, sizeof(extra), " path=%s path2=%s", files[(o->a[0] % nfiles + nfiles) % nfiles], files[(o->a[1] % nfiles + nfiles) % nfiles]);
		break;
	case OP_UNLINK:
		path_of(path, sizeof(path), o->a[0]);
		ret = unlink(path);
		err = ret < 0 ? errno : 0;
		s = -1;
		snprintf(extra, sizeof(extra), " path=%s", files[(o->a[0] % nfiles + nfiles) % nfiles]);
		break;
	case OP_RELOAD: { /* variant [wait_ms]: install cfgK.ini as the live config (raw calls) */
		snprintf(path, sizeof(path), "%s/cfg%ld.ini", dir, o->a[0]);
		snprintf(path2, sizeof(path2), "%s/live.ini.tmp", dir);
		int in = (int)raw(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
		int out = (int)raw(SYS_openat, AT_FDCWD, (long)path2, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		long k;
		while (in >= 0 && out >= 0 && (k = raw(SYS_read, in, (long)buf, sizeof(buf), 0)) > 0)
			raw(SYS_write, out, (long)buf, k, 0);
		raw(SYS_close, in, 0, 0, 0);
		raw(SYS_close, out, 0, 0, 0);
		snprintf(path, sizeof(path), "%s/live.ini", dir);
		ret = raw(SYS_rename, (long)path2, (long)path, 0, 0);
		s = -1;
		if (o->a[1] > 0) {
			struct timespec ts = { o->a[1] / 1000, (o->a[1] % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		break;
	}
	case OP_SLEEP: case OP_SETTLE: {
		struct timespec ts = { o->a[0] / 1000, (o->a[0] % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		s = -1;
		if (o->kind == OP_SETTLE) { /* then: which low descriptors are open */
			char *p = extra;
			p += snprintf(p, 16, " fds=");
			for (int k = 0; k < 64 && p < extra + sizeof(extra) - 4; k++)
				if (syscall(SYS_fcntl, k, F_GETFD) >= 0)
					p += snprintf(p, (size_t)(extra + sizeof(extra) - p), "%d,", k);
		}
		break;
	}
	case OP_KILL: { /* thread: SIGUSR1, whose handler runs the handler list */
		int t = (int)(o->a[0] % nthreads);
		ret = pthread_kill(t == 0 ? tids[0] : tids[t], SIGUSR1);
		s = -1;
		break;
	}
	case OP_FORK: { /* child list */
		pid_t p = fork();
		ret = p;
		err = p < 0 ? errno : 0;
		if (p == 0) {
			proc_tag = 1 + (int)(o->a[0] % MAX_CHILDREN);
			nkids = 0;
			run_list(0, &children[o->a[0] % MAX_CHILDREN]);
			struct line l = { .n = 0 };
			put_raw(&l, "op=exit");
			kv(&l, "pid", syscall(SYS_getpid));
			kv(&l, "proc", proc_tag);
			kvs(&l, "mode", "exit");
			kv(&l, "code", child_exit_code);
			kv(&l, "t0", (long long)now());
			emit(&l);
			exit(child_exit_code);
		}
		if (p > 0) {
			int k = atomic_fetch_add(&nkids, 1);
			if (k < (int)(sizeof(kids) / sizeof(kids[0])))
				kids[k] = p;
		}
		s = -1;
		break;
	}
	case OP_WAIT: {
		int n = atomic_exchange(&nkids, 0);
		for (int k = 0; k < n && k < (int)(sizeof(kids) / sizeof(kids[0])); k++) {
			int st = 0;
			pid_t r;
			while ((r = waitpid(kids[k], &st, 0)) < 0 && errno == EINTR)
				;
			snprintf(extra, sizeof(extra), " status=%d", r < 0 ? -1 : st);
		}
		s = -1;
		break;
	}
	case OP_CANCEL: {
		int t = (int)(o->a[0] % nthreads);
		ret = t > 0 ? pthread_cancel(tids[t]) : -2;
		s = -1;
		break;
	}
	case OP_BURST: { /* n slot: n short-lived threads, each one write and one fsync */
		int n = (int)o->a[0];
		struct burst_arg ba = { 100 + th, (int)(o->a[1] % NSLOTS), slots };
		for (int k = 0; k < n; k++) {
			pthread_t t;
			if (pthread_create(&t, NULL, burst_main, &ba) == 0)
				pthread_join(t, NULL);
		}
		s = -1;
		break;
	}
	case OP_ALARM_EXIT: { /* ms: SIGALRM then, whose handler calls _exit */
		struct sigaction sa = { .sa_handler = alarm_handler };
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = { { 0, 0 }, { o->a[0] / 1000, (o->a[0] % 1000) * 1000 } };
		setitimer(ITIMER_REAL, &it, NULL);
		s = -1;
		break;
	}
	case OP_TMPOPEN: { /* slot: a new file of its own name (the case's xrule "*.tmp" rules it) */
		static __thread int tmp_seq; /* a handler list runs its ops more than once */
		snprintf(slots[s].tmp, sizeof(slots[s].tmp), "t%d_%d_%d_%d.tmp", proc_tag, th < 0 ? 99 : th, idx,
			 tmp_seq++);
		snprintf(path, sizeof(path), "%s/%s", dir, slots[s].tmp);
		ret = fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		err = ret < 0 ? errno : 0;
		desc = atomic_fetch_add(&next_desc, 1);
		if (fd >= 0)
			slot_set(s, fd, desc, 0);
		snprintf(extra, sizeof(extra), " osync=0 path=%s", slots[s].tmp);
		name = "open";
		break;
	}
	case OP_TMPUNLINK: /* slot: unlink the name tmpopen gave it (the descriptor stays) */
		if (!slots[s].tmp[0]) {
			ret = -2;
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, slots[s].tmp);
		ret = unlink(path);
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " path=%s", slots[s].tmp);
		s = -1;
		name = "unlink";
		break;
	case OP_SENDFILE: { /* slot len: sendfile from the source file (letters) at the position */
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		snprintf(path, sizeof(path), "%s/src.bin", dir);
		int src = (int)raw(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
		off_t in = 0;
		ret = sendfile(fd, src, &in, (size_t)(o->a[1] % 4097));
		err = ret < 0 ? errno : 0;
		raw(SYS_close, src, 0, 0, 0);
		snprintf(extra, sizeof(extra), " n=%ld osync=%d", o->a[1] % 4097, atomic_load(&slots[s].osync));
		break;
	}
	case OP_SPLICE: { /* slot len off: bytes through a pipe into the file (off < 0: at the position) */
		size_t n = (size_t)(o->a[1] % 4097);
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		int pp[2];
		ret = -1;
		if (pipe2(pp, O_CLOEXEC) == 0) {
			fill(buf, n, th, idx);
			if (write(pp[1], buf, n) == (ssize_t)n) {
				loff_t at = o->a[2];
				ret = splice(pp[0], NULL, fd, o->a[2] >= 0 ? &at : NULL, n, 0);
			}
			err = ret < 0 ? errno : 0;
			close(pp[0]);
			close(pp[1]);
		} else {
			err = errno;
		}
		snprintf(extra, sizeof(extra), " n=%zu osync=%d", n, atomic_load(&slots[s].osync));
		break;
	}
	case OP_AIOW: { /* slot len off: POSIX aio_write, waited for */
		size_t n = (size_t)(o->a[1] % 4097);
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		fill(buf, n, th, idx);
		struct aiocb cb;
		memset(&cb, 0, sizeof(cb));
		cb.aio_fildes = fd;
		cb.aio_buf = buf;
		cb.aio_nbytes = n;
		cb.aio_offset = (off_t)o->a[2];
		ret = aio_write(&cb);
		if (ret == 0) {
			const struct aiocb *list[1] = { &cb };
			while (aio_error(&cb) == EINPROGRESS)
				aio_suspend(list, 1, NULL);
			int e = aio_error(&cb);
			ret = aio_return(&cb);
			if (ret < 0)
				errno = e;
		}
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " n=%zu osync=%d", n, atomic_load(&slots[s].osync));
		break;
	}
	case OP_RAWPW: { /* slot len off: syscall(SYS_pwrite64), libc's way around its wrapper */
		size_t n = (size_t)(o->a[1] % 4097);
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		fill(buf, n, th, idx);
		ret = syscall(SYS_pwrite64, fd, buf, n, (off_t)o->a[2]);
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " n=%zu osync=%d", n, atomic_load(&slots[s].osync));
		break;
	}
	case OP_DROPPRIVS: { /* scribble: take on nobody's credentials (root only), then look */
		s = -1;
		if (getuid() != 0) {
			ret = -2; /* not called: only root can become nobody */
			break;
		}
		unsigned long lo0[MAX_SHARED], hi0[MAX_SHARED];
		int n0 = shared_maps(lo0, hi0, MAX_SHARED);
		ret = setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0 ? 0 : -1;
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " before=%d shared=%d", n0, still_shared(lo0, n0, o->a[0] != 0));
		break;
	}
	case OP_STOPKIDS: case OP_CONTKIDS: case OP_KILLKIDS: { /* SIGSTOP, SIGCONT or SIGKILL to every child */
		int n = atomic_load(&nkids);
		int sig = o->kind == OP_STOPKIDS ? SIGSTOP : o->kind == OP_CONTKIDS ? SIGCONT : SIGKILL;
		for (int k = 0; k < n && k < (int)(sizeof(kids) / sizeof(kids[0])); k++)
			ret |= kill(kids[k], sig);
		err = ret < 0 ? errno : 0;
		s = -1;
		break;
	}
	case OP_AWAITHELD: /* ms: until the shim's test hold has a child (oracle.py's "hold"), at most ms */
		ret = await_hold(o->a[0]);
		s = -1;
		break;
	case OP_RELEASE: { /* let the held child go; expired=1: its hold had already ended by its own bound */
		snprintf(path, sizeof(path), "%s/hold.left", dir);
		int expired = raw(SYS_faccessat, AT_FDCWD, (long)path, F_OK, 0) == 0;
		snprintf(path, sizeof(path), "%s/hold", dir);
		ret = raw(SYS_mkdirat, AT_FDCWD, (long)path, 0700, 0);
		snprintf(extra, sizeof(extra), " expired=%d", expired);
		s = -1;
		break;
	}
	case OP_MANY: /* count: that many files (*.many), each written, synced and kept open */
		ret = many_files(th, idx, o->a[0]);
		s = -1;
		break;
	case OP_SELFKILL: { /* this process dies of SIGKILL (journaled as its end) */
		struct line l = { .n = 0 };
		put_raw(&l, "op=exit");
		kv(&l, "pid", syscall(SYS_getpid));
		kv(&l, "proc", proc_tag);
		kvs(&l, "mode", "killed");
		kv(&l, "code", -9);
		kv(&l, "t0", (long long)now());
		emit(&l);
		kill(getpid(), SIGKILL);
		return;
	}
	case OP_LOGLINE: { /* n: a line to descriptor 1 (the log the process inherited) */
		int k = snprintf(buf, sizeof(buf), "commit th%d op%d n%ld\n", th, idx, o->a[0]);
		fd = 1;
		unsigned long long ino;
		long long birth;
		ident(1, &ino, &birth);
		t0 = now();
		ret = write(1, buf, (size_t)k);
		err = ret < 0 ? errno : 0;
		snprintf(extra, sizeof(extra), " logino=%llu", ino);
		s = -1;
		break;
	}
	case OP_SIGSYS: /* kind: block or ignore SIGSYS, each a way the shim must see (inline_syscalls = trap) */
		ret = sigsys_away((int)o->a[0]);
		err = ret < 0 ? errno : 0;
		s = -1;
		break;
	case OP_INLINE: { /* slot how: fsync by a system call instruction of the runner's own
			   * (how 1: on a new thread started with every signal blocked) */
		fd = slot_fd(s);
		desc = atomic_load(&slots[s].desc);
		struct inline_call ic = { .fd = fd };
		if (o->a[1] == 1) {
			pthread_attr_t at;
			sigset_t all;
			sigfillset(&all);
			pthread_t t;
			pthread_attr_init(&at);
			pthread_attr_setsigmask_np(&at, &all);
			if (pthread_create(&t, &at, inline_main, &ic) == 0)
				pthread_join(t, NULL);
			else
				ic.ret = -1, ic.err = EAGAIN;
			pthread_attr_destroy(&at);
		} else {
			inline_main(&ic);
		}
		t0 = ic.t0 ? ic.t0 : t0;
		ret = ic.ret;
		err = ic.err;
		name = "ifsync";
		break;
	}
	default:
		return;
	}
	journal(th, idx, o, name, s, fd, pre_ino, desc, ret, err, t0, now(), extra);
	pre_looked = false;
}

static void run_list(int th, const struct oplist *L)
{
	for (int i = 0; i < L->n; i++)
		do_op(th, i, &L->ops[i]);
}

static void crash_stack(int th);

static void *thread_main(void *p)
{
	int th = (int)(intptr_t)p;
	slots = slot_tables[th];
	crash_stack(th);
	/* Born with SIGUSR1 blocked (main): its handler runs the handler list
	 * on this thread's slots, which exist only from here on. */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	pthread_barrier_wait(&all_started);
	if (cancel_async)
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	run_list(th, &threads[th]);
	return NULL;
}

/* ---- reading the case ---------------------------------------------------------- */

static void push(struct oplist *L, const struct op *o)
{
	if (L->n == L->cap) {
		L->cap = L->cap ? 2 * L->cap : 16;
		L->ops = realloc(L->ops, sizeof(*o) * (size_t)L->cap);
		if (!L->ops)
			abort();
	}
	L->ops[L->n++] = *o;
}

static int read_case(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char ln[512];
	while (fgets(ln, sizeof(ln), f)) {
		char w[5][64] = { { 0 } };
		int n = sscanf(ln, "%63s %63s %63s %63s %63s", w[0], w[1], w[2], w[3], w[4]);
		if (n <= 0 || w[0][0] == '#')
			continue;
		if (!strcmp(w[0], "file") && n >= 3 && nfiles < NFILES)
			snprintf(files[nfiles++], sizeof(files[0]), "%s", w[2]);
		else if (!strcmp(w[0], "threads"))
			nthreads = atoi(w[1]) < 1 ? 1 : atoi(w[1]) > MAX_THREADS ? MAX_THREADS : atoi(w[1]);
		else if (!strcmp(w[0], "exit") && n >= 3)
			snprintf(exit_mode, sizeof(exit_mode), "%s", w[1]), exit_code = atoi(w[2]);
		else if (!strcmp(w[0], "child_exit"))
			child_exit_code = atoi(w[1]);
		else if (!strcmp(w[0], "cancel_async"))
			cancel_async = atoi(w[1]);
		else if ((w[0][0] == 'T' || w[0][0] == 'C' || w[0][0] == 'H') && w[0][1] >= '0' && w[0][1] <= '9') {
			/* T<n> op args..., C<k> ..., H0 ... */
			int k = atoi(w[0] + 1);
			struct oplist *L = w[0][0] == 'T' ? (k < MAX_THREADS ? &threads[k] : NULL)
					 : w[0][0] == 'C' ? (k < MAX_CHILDREN ? &children[k] : NULL)
							  : &handler_ops;
			struct op o = { .kind = -1 };
			for (int j = 0; j < OP_COUNT; j++)
				if (!strcmp(w[1], op_names[j]))
					o.kind = j;
			if (!L || o.kind < 0) {
				fprintf(stderr, "runner: bad case line: %s", ln);
				fclose(f);
				return -1;
			}
			char *p = ln;
			for (int j = 0; j < 2; j++) { /* skip the label and the op name */
				p += strspn(p, " \t");
				p += strcspn(p, " \t\n");
			}
			for (int j = 0; j < MAX_ARGS; j++) {
				char *end;
				o.a[j] = strtol(p, &end, 10);
				if (end == p)
					break;
				p = end;
			}
			push(L, &o);
		}
	}
	fclose(f);
	return 0;
}

/* A crash's stack into DIR/crash.bt, then the same death: a crash under
 * the shim that does not replay (a soak's mix:8439206, SIGSEGV with the
 * shim, SIGTERM without) still says where it was. */
static char crash_path[600];

static void crash_handler(int sig)
{
	void *frames[64];
	int n = backtrace(frames, 64);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, crash_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		char line[48];
		int k = snprintf(line, sizeof(line), "signal %d in thread %ld\n", sig, (long)syscall(SYS_gettid));
		syscall(SYS_write, fd, line, (size_t)k);
		backtrace_symbols_fd(frames, n, fd);
		syscall(SYS_close, fd);
	}
	raise(sig); /* SA_RESETHAND: the default action now */
}

/* An alternate stack is per thread: each thread takes its own, so that
 * a thread's stack overflow too leaves its crash.bt. One already there
 * stays (a sanitizer's: ASan unmaps the one it finds when the thread
 * ends, and fails on ours). */
static void crash_stack(int th)
{
	static char altstacks[MAX_THREADS][64 * 1024];
	stack_t old, ss = { .ss_sp = altstacks[th], .ss_size = sizeof(altstacks[th]) };
	if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
		return;
	sigaltstack(&ss, NULL);
}

static void crash_watch(void)
{
	void *warm[1];
	backtrace(warm, 1); /* its first call loads libgcc: not in a handler */
	snprintf(crash_path, sizeof(crash_path), "%s/crash.bt", dir);
	crash_stack(0);
	struct sigaction sa = { .sa_handler = crash_handler, .sa_flags = SA_RESETHAND | SA_ONSTACK | SA_NODEFER };
	const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--exit")) /* sys_execve's program */
		return atoi(argv[2]);
	if (argc != 4) {
		fprintf(stderr, "usage: runner CASE DIR JOURNAL\n");
		return 2;
	}
	dir = argv[2];
	/* The journal first, on a number no case touches (0-2 may be closed). */
	int j = (int)syscall(SYS_openat, AT_FDCWD, argv[3], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (j < 0 || syscall(SYS_dup3, j, JOURNAL_FD, O_CLOEXEC) < 0)
		return 2;
	syscall(SYS_close, j);
	if (read_case(argv[1]) < 0 || nfiles == 0)
		return 2;
	for (int t = 0; t < MAX_THREADS; t++)
		for (int s = 0; s < NSLOTS; s++)
			atomic_store(&slot_tables[t][s].fd, -1);
	slots = slot_tables[0];
	char path[512], buf[4096];
	snprintf(path, sizeof(path), "%s/src.bin", dir);
	int src = (int)raw(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	memset(buf, 'z', sizeof(buf));
	raw(SYS_write, src, (long)buf, sizeof(buf), 0);
	raw(SYS_close, src, 0, 0, 0);
	struct sigaction sa = { .sa_handler = usr1_handler };
	sigaction(SIGUSR1, &sa, NULL);
	crash_watch();

	tids[0] = pthread_self();
	sigset_t usr1, before;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &before);
	pthread_barrier_init(&all_started, NULL, (unsigned)nthreads);
	for (int t = 1; t < nthreads; t++)
		if (pthread_create(&tids[t], NULL, thread_main, (void *)(intptr_t)t) != 0)
			return 2; /* the barrier would never open */
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	pthread_barrier_wait(&all_started);
	run_list(0, &threads[0]);

	struct line l = { .n = 0 };
	put_raw(&l, "op=exit");
	kv(&l, "pid", syscall(SYS_getpid));
	kv(&l, "proc", 0);
	kvs(&l, "mode", exit_mode);
	kv(&l, "code", exit_code);
	if (!strcmp(exit_mode, "pthread_exit")) { /* the others end on their own */
		kv(&l, "t0", (long long)now());
		emit(&l);
		pthread_exit(NULL);
	}
	for (int t = 1; t < nthreads; t++)
		pthread_join(tids[t], NULL);
	int n = atomic_exchange(&nkids, 0);
	for (int k = 0; k < n && k < (int)(sizeof(kids) / sizeof(kids[0])); k++)
		while (waitpid(kids[k], NULL, 0) < 0 && errno == EINTR)
			;
	kv(&l, "t0", (long long)now());
	emit(&l);
	if (!strcmp(exit_mode, "exit"))
		exit(exit_code);
	if (!strcmp(exit_mode, "_exit"))
		_exit(exit_code);
	if (!strcmp(exit_mode, "quick_exit"))
		quick_exit(exit_code);
	if (!strcmp(exit_mode, "signal")) { /* death by SIGTERM's default action */
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
	}
	/* the ends made through libc's syscall(): the process's, the last
	 * thread's (the app's only one now), and an exec of a program that
	 * ends at once with the code */
	if (!strcmp(exit_mode, "sys_exit_group"))
		syscall(SYS_exit_group, exit_code);
	if (!strcmp(exit_mode, "sys_exit"))
		syscall(SYS_exit, exit_code);
	if (!strcmp(exit_mode, "sys_execve")) {
		char code[16];
		snprintf(code, sizeof(code), "%d", exit_code);
		char *const args[] = { (char *)"runner", (char *)"--exit", code, NULL };
		syscall(SYS_execve, "/proc/self/exe", args, environ);
		_exit(127);
	}
	return exit_code;
}
