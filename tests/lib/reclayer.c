/*
 * reclayer.c - a recording and fault-injection layer for the integration
 * tests, preloaded BENEATH the shim:
 *
 *   LD_PRELOAD=build/libsyncshim.so:build/tests/lib/reclayer.so
 *
 * The shim's dlsym(RTLD_NEXT, ...) finds these definitions, so every call
 * the shim really makes (after applying its policy) is recorded here, and
 * then forwarded to libc (our own dlsym(RTLD_NEXT, ...)). Loaded alone it
 * records what the application itself calls, which gives the tests their
 * baseline. It knows nothing about the shim.
 *
 * Environment
 *   RECLAYER_LOG=FILE   append one line per call to FILE. Each line is one
 *                       write(2) on an O_APPEND descriptor, so lines from
 *                       threads and processes never interleave.
 *   RECLAYER_SLOW=INO:MS
 *                       fsync and fdatasync of the file with inode number
 *                       INO take MS milliseconds longer (a throttled or
 *                       failing device, for "a slow file must not hold up
 *                       another file's syncs"). INO 0: every file.
 *   RECLAYER_SLOW_OPEN=TEXT:MS
 *                       an open of a path containing TEXT holds its new
 *                       descriptor MS milliseconds before returning it (a
 *                       slow file system; widens any moment in which the
 *                       caller holds a number it means to give up).
 *   RECLAYER_FAIL=OP:ERRNO[:SKIP[:COUNT]]
 *                       calls of OP number SKIP+1 .. SKIP+COUNT (counted per
 *                       process, from 1) fail with ERRNO without reaching
 *                       libc. SKIP defaults to 0; COUNT defaults to 0,
 *                       meaning every call after SKIP. OP is an op name
 *                       below; "sync" means fsync, fdatasync and sync()
 *                       together (sync() cannot fail: it is only skipped).
 *                       ERRNO is a name (EIO, ENOSPC, EDQUOT, EROFS, EINTR,
 *                       EAGAIN, EBADF, EINVAL, EPERM, ENOMEM) or a number.
 *   RECLAYER_FAIL_SUFFIX=S
 *                       count and fail only calls on files whose name ends
 *                       in S (the descriptor's /proc/self/fd link, or the
 *                       path argument); calls without a file (msync, sync)
 *                       still count. A differential test needs this: the
 *                       shim above makes calls of its own (live counters,
 *                       its log) that would move the injection point.
 *                       An injected close still releases the descriptor,
 *                       as the kernel's close does whatever it returns.
 *   RECLAYER_OPS=OP[,OP...]
 *                       record only these ops (names below); the others
 *                       are forwarded without a record or an inode lookup,
 *                       so a benchmark can watch the real syncs beneath a
 *                       policy without adding system calls to every write.
 *                       Default: all. Injection (RECLAYER_FAIL) and
 *                       RECLAYER_SLOW apply either way.
 *
 * Line format (fields in this order; path last, it may hold anything but a
 * newline; fields that do not apply are left out):
 *   op=fsync fn=fsync pid=1 tid=1 fd=3 ino=12 t0=NS t1=NS ret=0 errno=0
 *   flags=0x0 addr=0x0 len=0 off=0 n=0 injected=1 path=/x path2=/y
 * op names: fsync fdatasync sync_file_range msync syncfs sync open close
 * rename link write pwrite writev pwritev mmap, and the changes made around
 * the write calls: sendfile splice copy_file_range aio_write (its
 * submission: libc's own thread makes the write, unseen) raw_write (a
 * write-family number or sendfile, splice or copy_file_range through
 * syscall(); fd is the file written). fn is the exact libc function
 * (open64, __openat_2, creat, renameat2, ...). t0/t1 are CLOCK_MONOTONIC
 * ns at entry and return. ino is from statx(STATX_INO), or fstat where
 * there is no statx, on the fd (before the call for
 * close and the syncs, on the result for opens). mmap is recorded only for
 * shared file mappings.
 *
 * Everything on the recording path is a raw syscall, a vDSO clock read or
 * plain stack formatting: no locks, no allocation, async-signal-safe, so
 * it may be called from signal handlers and across fork.
 */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* This layer's own system calls go to the kernel directly, never through
 * syscall(): the shim above it interposes syscall(), and would order (or
 * apply held writes before) the layer's log writes and descriptor checks
 * as it does an application's. x86_64's convention. */
static long rec_syscall(long n, ...)
{
	va_list ap;
	va_start(ap, n);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long), a4 = va_arg(ap, long),
	     a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	register long r10 __asm__("r10") = a4, r8 __asm__("r8") = a5, r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}
#define syscall rec_syscall

#define API __attribute__((visibility("default")))
#define LOG_FD_MIN 900
#define LINE_MAX_BYTES 2048

/* ---- state ------------------------------------------------------------ */

static int log_fd = -1;
static char log_path[4096]; /* RECLAYER_LOG, for a task that does not share our table */
static _Atomic int init_state; /* 0 not yet, 1 in progress, 2 done */
static __thread int in_init;
static __thread int in_dlsym;

/* RECLAYER_OPS: a bit per op name in op_names; 0 = record everything. */
static const char *const op_names[] = {
	"fsync", "fdatasync", "sync_file_range", "msync", "syncfs", "sync", "open", "close",
	"rename", "link", "write", "pwrite", "writev", "pwritev", "mmap", "sendfile", "splice",
	"copy_file_range", "aio_write", "raw_write",
};
#define N_OPS (sizeof(op_names) / sizeof(op_names[0]))
static unsigned ops_mask;

static struct {
	int active;
	char op[32];
	int err;
	long skip;
	long count; /* 0: unlimited */
	_Atomic long seen;
	char suffix[64]; /* RECLAYER_FAIL_SUFFIX; empty: every file */
} fail;

/* ---- the real functions ------------------------------------------------- */

#define REAL_FUNCS(X)                                                                \
	X(fsync, int, (int))                                                         \
	X(fdatasync, int, (int))                                                     \
	X(sync_file_range, int, (int, off64_t, off64_t, unsigned int))               \
	X(msync, int, (void *, size_t, int))                                         \
	X(syncfs, int, (int))                                                        \
	X(sync, void, (void))                                                        \
	X(open, int, (const char *, int, ...))                                       \
	X(open64, int, (const char *, int, ...))                                     \
	X(openat, int, (int, const char *, int, ...))                                \
	X(openat64, int, (int, const char *, int, ...))                              \
	X(__open_2, int, (const char *, int))                                        \
	X(__open64_2, int, (const char *, int))                                      \
	X(__openat_2, int, (int, const char *, int))                                 \
	X(__openat64_2, int, (int, const char *, int))                               \
	X(creat, int, (const char *, mode_t))                                        \
	X(creat64, int, (const char *, mode_t))                                      \
	X(close, int, (int))                                                         \
	X(rename, int, (const char *, const char *))                                 \
	X(renameat, int, (int, const char *, int, const char *))                     \
	X(renameat2, int, (int, const char *, int, const char *, unsigned int))      \
	X(link, int, (const char *, const char *))                                   \
	X(linkat, int, (int, const char *, int, const char *, int))                  \
	X(write, ssize_t, (int, const void *, size_t))                               \
	X(pwrite, ssize_t, (int, const void *, size_t, off_t))                       \
	X(pwrite64, ssize_t, (int, const void *, size_t, off64_t))                   \
	X(writev, ssize_t, (int, const struct iovec *, int))                         \
	X(pwritev, ssize_t, (int, const struct iovec *, int, off_t))                 \
	X(pwritev64, ssize_t, (int, const struct iovec *, int, off64_t))             \
	X(pwritev2, ssize_t, (int, const struct iovec *, int, off_t, int))           \
	X(pwritev64v2, ssize_t, (int, const struct iovec *, int, off64_t, int))      \
	X(mmap, void *, (void *, size_t, int, int, int, off_t))                      \
	X(mmap64, void *, (void *, size_t, int, int, int, off64_t))                  \
	X(sendfile, ssize_t, (int, int, off_t *, size_t))                            \
	X(sendfile64, ssize_t, (int, int, off64_t *, size_t))                        \
	X(splice, ssize_t, (int, off64_t *, int, off64_t *, size_t, unsigned int))   \
	X(copy_file_range, ssize_t, (int, off64_t *, int, off64_t *, size_t, unsigned int)) \
	X(aio_write, int, (struct aiocb *))                                          \
	X(aio_write64, int, (struct aiocb64 *))

enum {
#define X_ID(name, ret, params) ID_##name,
	REAL_FUNCS(X_ID)
#undef X_ID
	ID_COUNT
};

static const char *const real_names[ID_COUNT] = {
#define X_NAME(name, ret, params) [ID_##name] = #name,
	REAL_FUNCS(X_NAME)
#undef X_NAME
};

#define X_TYPE(name, ret, params) typedef ret(*name##_fn) params;
REAL_FUNCS(X_TYPE)
#undef X_TYPE

static _Atomic(void *) real_ptr[ID_COUNT];

/* NULL while this thread is inside dlsym (the caller then uses a raw
 * syscall) or when libc lacks the symbol. */
static void *real_get(int id)
{
	void *p = atomic_load_explicit(&real_ptr[id], memory_order_acquire);
	if (p || in_dlsym)
		return p;
	int e = errno;
	in_dlsym = 1;
	p = dlsym(RTLD_NEXT, real_names[id]);
	in_dlsym = 0;
	errno = e;
	if (p)
		atomic_store_explicit(&real_ptr[id], p, memory_order_release);
	return p;
}

#define REAL(name) ((name##_fn)real_get(ID_##name))

/* ---- a tiny async-signal-safe formatter --------------------------------- */

struct line {
	char buf[LINE_MAX_BYTES];
	size_t n;
};

static void put_str(struct line *l, const char *s)
{
	while (s && *s && l->n < sizeof(l->buf) - 2) {
		char c = *s++;
		l->buf[l->n++] = c == '\n' ? '?' : c;
	}
}

static void put_u(struct line *l, unsigned long long v)
{
	char tmp[24];
	int k = 0;
	do {
		tmp[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k && l->n < sizeof(l->buf) - 2)
		l->buf[l->n++] = tmp[--k];
}

static void put_i(struct line *l, long long v)
{
	if (v < 0) {
		put_str(l, "-");
		put_u(l, (unsigned long long)0 - (unsigned long long)v);
	} else {
		put_u(l, (unsigned long long)v);
	}
}

static void put_x(struct line *l, unsigned long long v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[20];
	int k = 0;
	do {
		tmp[k++] = hex[v & 15];
		v >>= 4;
	} while (v);
	put_str(l, "0x");
	while (k && l->n < sizeof(l->buf) - 2)
		l->buf[l->n++] = tmp[--k];
}

static void field_u(struct line *l, const char *k, unsigned long long v)
{
	put_str(l, " ");
	put_str(l, k);
	put_str(l, "=");
	put_u(l, v);
}

static void field_i(struct line *l, const char *k, long long v)
{
	put_str(l, " ");
	put_str(l, k);
	put_str(l, "=");
	put_i(l, v);
}

static void field_x(struct line *l, const char *k, unsigned long long v)
{
	put_str(l, " ");
	put_str(l, k);
	put_str(l, "=");
	put_x(l, v);
}

static void field_s(struct line *l, const char *k, const char *v)
{
	put_str(l, " ");
	put_str(l, k);
	put_str(l, "=");
	put_str(l, v ? v : "(null)");
}

/* ---- init --------------------------------------------------------------- */

static const struct {
	const char *name;
	int value;
} errno_names[] = {
	{ "EIO", EIO },       { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EROFS", EROFS },
	{ "EINTR", EINTR },   { "EAGAIN", EAGAIN }, { "EBADF", EBADF },   { "EINVAL", EINVAL },
	{ "EPERM", EPERM },   { "ENOMEM", ENOMEM }, { "EFBIG", EFBIG },   { "EACCES", EACCES },
};

static int parse_errno(const char *s)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (strcmp(s, errno_names[i].name) == 0)
			return errno_names[i].value;
	char *end;
	long v = strtol(s, &end, 10);
	return *s && !*end && v > 0 && v < 4096 ? (int)v : -1;
}

static void say(const char *msg)
{
	struct line l = { .n = 0 };
	put_str(&l, "reclayer: ");
	put_str(&l, msg);
	l.buf[l.n++] = '\n';
	syscall(SYS_write, 2, l.buf, l.n);
}

/* OP:ERRNO[:SKIP[:COUNT]] */
static void parse_fail(const char *spec)
{
	char buf[128];
	if (strlen(spec) >= sizeof(buf)) {
		say("RECLAYER_FAIL too long; ignored");
		return;
	}
	strcpy(buf, spec);
	char *parts[4] = { 0 };
	int n = 0;
	for (char *p = buf; n < 4;) {
		parts[n++] = p;
		char *c = strchr(p, ':');
		if (!c)
			break;
		*c = '\0';
		p = c + 1;
	}
	if (n < 2 || !*parts[0] || strlen(parts[0]) >= sizeof(fail.op)) {
		say("RECLAYER_FAIL: expected OP:ERRNO[:SKIP[:COUNT]]; ignored");
		return;
	}
	int err = parse_errno(parts[1]);
	if (err < 0) {
		say("RECLAYER_FAIL: unknown errno name; ignored");
		return;
	}
	strcpy(fail.op, parts[0]);
	fail.err = err;
	fail.skip = n > 2 ? strtol(parts[2], NULL, 10) : 0;
	fail.count = n > 3 ? strtol(parts[3], NULL, 10) : 0;
	fail.active = 1;
}

/* op,op,...: unknown names are said and ignored. */
static void parse_ops(const char *spec)
{
	const char *p = spec;
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i = 0;
		while (i < N_OPS && !(strlen(op_names[i]) == len && strncmp(p, op_names[i], len) == 0))
			i++;
		if (i < N_OPS)
			ops_mask |= 1u << i;
		else
			say("RECLAYER_OPS: unknown op name ignored");
		p += len;
		if (*p == ',')
			p++;
	}
}

static char slow_open_text[64]; /* RECLAYER_SLOW_OPEN */
static long slow_open_ms;
static unsigned long long slow_ino;
static long slow_ms;

static void do_init(void)
{
	for (int i = 0; i < ID_COUNT; i++)
		real_get(i);
	const char *path = getenv("RECLAYER_LOG");
	if (path && *path) {
		int e = errno;
		long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			long hi = syscall(SYS_fcntl, (int)fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);
			if (hi >= 0) {
				syscall(SYS_close, (int)fd);
				fd = hi;
			}
			log_fd = (int)fd;
			snprintf(log_path, sizeof(log_path), "%s", path);
		} else {
			say("cannot open RECLAYER_LOG");
		}
		errno = e;
	}
	const char *f = getenv("RECLAYER_FAIL");
	if (f && *f)
		parse_fail(f);
	const char *sfx = getenv("RECLAYER_FAIL_SUFFIX");
	if (sfx && strlen(sfx) < sizeof(fail.suffix))
		strcpy(fail.suffix, sfx);
	const char *ops = getenv("RECLAYER_OPS");
	if (ops && *ops)
		parse_ops(ops);
	const char *slow_open = getenv("RECLAYER_SLOW_OPEN");
	if (slow_open && *slow_open) {
		const char *colon = strrchr(slow_open, ':');
		size_t n = colon ? (size_t)(colon - slow_open) : 0;
		if (n && n < sizeof(slow_open_text)) {
			memcpy(slow_open_text, slow_open, n);
			slow_open_ms = strtol(colon + 1, NULL, 10);
		}
	}
	const char *slow = getenv("RECLAYER_SLOW");
	if (slow && *slow) {
		char *end;
		slow_ino = strtoull(slow, &end, 10);
		slow_ms = *end == ':' ? strtol(end + 1, NULL, 10) : 0;
	}
}

static void rl_init(void)
{
	int s = atomic_load_explicit(&init_state, memory_order_acquire);
	if (s == 2 || in_init)
		return;
	if (s == 0 && atomic_compare_exchange_strong(&init_state, &s, 1)) {
		in_init = 1;
		do_init();
		in_init = 0;
		atomic_store_explicit(&init_state, 2, memory_order_release);
		return;
	}
	while (atomic_load_explicit(&init_state, memory_order_acquire) != 2)
		sched_yield();
}

__attribute__((constructor)) static void rl_ctor(void)
{
	rl_init();
}

/* ---- recording ---------------------------------------------------------- */

enum {
	F_FD = 1 << 0,
	F_INO = 1 << 1,
	F_FLAGS = 1 << 2,
	F_ADDR = 1 << 3,
	F_OFF = 1 << 4,
	F_N = 1 << 5,
	F_PATH = 1 << 6,
	F_PATH2 = 1 << 7,
};

struct rec {
	const char *op, *fn;
	unsigned fields;
	int fd;
	unsigned long long ino;
	uint64_t t0, t1;
	long long ret;
	int err;
	unsigned long long flags, addr, len;
	long long off, n;
	int injected;
	int skip; /* not in RECLAYER_OPS: no inode lookup, no record */
	const char *path, *path2;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The inode number through a raw statx asking for nothing else (on ext4
 * a full fstat between a write and a sync of the file costs sync
 * throughput; statx(STATX_INO) does not), or fstat where the kernel has
 * no statx; errno untouched. 0 when fd is bad or the op is not recorded. */
static unsigned long long ino_of(const struct rec *r, int fd)
{
	if (fd < 0 || r->skip)
		return 0;
	int e = errno;
	unsigned long long ino = 0;
#ifdef SYS_statx
	struct statx sx;
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_INO, &sx) == 0 && (sx.stx_mask & STATX_INO))
		ino = sx.stx_ino;
	else if (errno == ENOSYS)
#endif
	{
		struct stat st;
		if (syscall(SYS_fstat, fd, &st) == 0)
			ino = (unsigned long long)st.st_ino;
	}
	errno = e;
	return ino;
}

static int op_recorded(const char *op)
{
	if (!ops_mask)
		return 1;
	for (size_t i = 0; i < N_OPS; i++)
		if (strcmp(op, op_names[i]) == 0)
			return (ops_mask >> i) & 1;
	return 0;
}

static void rec_begin(struct rec *r, const char *op, const char *fn, unsigned fields)
{
	rl_init();
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->fn = fn;
	r->fields = fields;
	r->skip = !op_recorded(op);
	r->t0 = now_ns();
}

/* Emit the record; errno is preserved for the caller. */
static void rec_emit(struct rec *r)
{
	if (log_fd < 0 || r->skip)
		return;
	int e = errno;
	struct line l = { .n = 0 };
	put_str(&l, "op=");
	put_str(&l, r->op);
	field_s(&l, "fn", r->fn);
	field_u(&l, "pid", (unsigned long long)syscall(SYS_getpid));
	field_u(&l, "tid", (unsigned long long)syscall(SYS_gettid));
	if (r->fields & F_FD)
		field_i(&l, "fd", r->fd);
	if (r->fields & F_INO)
		field_u(&l, "ino", r->ino);
	field_u(&l, "t0", r->t0);
	field_u(&l, "t1", r->t1);
	field_i(&l, "ret", r->ret);
	field_i(&l, "errno", r->err);
	if (r->fields & F_FLAGS)
		field_x(&l, "flags", r->flags);
	if (r->fields & F_ADDR) {
		field_x(&l, "addr", r->addr);
		field_u(&l, "len", r->len);
	}
	if (r->fields & F_OFF)
		field_i(&l, "off", r->off);
	if (r->fields & F_N)
		field_i(&l, "n", r->n);
	if (r->injected)
		field_u(&l, "injected", 1);
	if (r->fields & F_PATH)
		field_s(&l, "path", r->path);
	if (r->fields & F_PATH2)
		field_s(&l, "path2", r->path2);
	l.buf[l.n++] = '\n'; /* put_str keeps a byte free for this */
	if (syscall(SYS_write, log_fd, l.buf, l.n) < 0 && errno == EBADF && log_path[0]) {
		/* A task with a descriptor table of its own (the shim's isolated
		 * children and private-table threads): the log by name, for this line. */
		long fd = syscall(SYS_openat, AT_FDCWD, log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			syscall(SYS_write, (int)fd, l.buf, l.n);
			syscall(SYS_close, (int)fd);
		}
	}
	errno = e;
}

/* The result of the call, then the record. ret < 0 means failure with the
 * current errno. */
static void rec_end(struct rec *r, long long ret)
{
	r->t1 = now_ns();
	r->ret = ret;
	r->err = ret < 0 ? errno : 0;
	rec_emit(r);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Is the call's file one RECLAYER_FAIL_SUFFIX names? */
static int fail_target(const struct rec *r)
{
	if (!fail.suffix[0])
		return 1;
	if (r->path)
		return ends_with(r->path, fail.suffix);
	if (!(r->fields & F_FD))
		return 1;
	char link[32], target[512];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", r->fd);
	int e = errno;
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	errno = e;
	if (n <= 0)
		return 0;
	target[n] = 0;
	char *del = strstr(target, " (deleted)");
	if (del && del[10] == 0)
		*del = 0;
	return ends_with(target, fail.suffix);
}

/* Should this call fail? Counts every call of a matching op (on a matching
 * file, with RECLAYER_FAIL_SUFFIX). */
static int injected(struct rec *r, const char *op)
{
	if (!fail.active)
		return 0;
	if (strcmp(fail.op, op) != 0 &&
	    !(strcmp(fail.op, "sync") == 0 && (strcmp(op, "fsync") == 0 || strcmp(op, "fdatasync") == 0)))
		return 0;
	if (!fail_target(r))
		return 0;
	long k = atomic_fetch_add_explicit(&fail.seen, 1, memory_order_relaxed);
	if (k < fail.skip || (fail.count > 0 && k >= fail.skip + fail.count))
		return 0;
	r->injected = 1;
	errno = fail.err;
	return 1;
}

/* ---- syncs -------------------------------------------------------------- */

static int sync_fd_call(const char *op, int fd, int (*real)(int), long sysno)
{
	struct rec r;
	rec_begin(&r, op, op, F_FD | F_INO);
	r.fd = fd;
	r.ino = ino_of(&r, fd);
	long ret;
	if (slow_ms > 0 && (slow_ino == 0 || r.ino == slow_ino) && strcmp(op, "syncfs") != 0) {
		int e = errno;
		struct timespec ts = { slow_ms / 1000, (slow_ms % 1000) * 1000000L };
		while (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, &ts) != 0 && errno == EINTR)
			;
		errno = e;
	}
	if (injected(&r, op))
		ret = -1;
	else
		ret = real ? real(fd) : syscall(sysno, fd);
	rec_end(&r, ret);
	return (int)ret;
}

/* Tells the shim above that these sync functions pass every call on to
 * libc (but for RECLAYER_FAIL's injections): it must not take this layer
 * for a sync-eating preload (shim/calls/nextsync.c). */
API const int syncshim_layer_passes_syncs = 1;

API int fsync(int fd)
{
	return sync_fd_call("fsync", fd, REAL(fsync), SYS_fsync);
}

API int fdatasync(int fd)
{
	return sync_fd_call("fdatasync", fd, REAL(fdatasync), SYS_fdatasync);
}

API int syncfs(int fd)
{
	return sync_fd_call("syncfs", fd, REAL(syncfs), SYS_syncfs);
}

API int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	struct rec r;
	rec_begin(&r, "sync_file_range", "sync_file_range", F_FD | F_INO | F_FLAGS | F_OFF | F_N);
	r.fd = fd;
	r.ino = ino_of(&r, fd);
	r.flags = flags;
	r.off = off;
	r.n = n;
	long ret;
	sync_file_range_fn real = REAL(sync_file_range);
	if (injected(&r, "sync_file_range"))
		ret = -1;
	else
		ret = real ? real(fd, off, n, flags) : syscall(SYS_sync_file_range, fd, off, n, flags);
	rec_end(&r, ret);
	return (int)ret;
}

API int msync(void *addr, size_t len, int flags)
{
	struct rec r;
	rec_begin(&r, "msync", "msync", F_FLAGS | F_ADDR);
	r.flags = (unsigned)flags;
	r.addr = (uintptr_t)addr;
	r.len = len;
	long ret;
	msync_fn real = REAL(msync);
	if (injected(&r, "msync"))
		ret = -1;
	else
		ret = real ? real(addr, len, flags) : syscall(SYS_msync, addr, len, flags);
	rec_end(&r, ret);
	return (int)ret;
}

API void sync(void)
{
	struct rec r;
	rec_begin(&r, "sync", "sync", 0);
	sync_fn real = REAL(sync);
	long ret = 0;
	int e = errno; /* sync() has no error return: an injected failure is only logged */
	if (injected(&r, "sync"))
		ret = -1;
	else if (real)
		real();
	else
		syscall(SYS_sync);
	rec_end(&r, ret);
	errno = e;
}

/* ---- opens -------------------------------------------------------------- */

static int mode_needed(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* dirfd AT_FDCWD for the path-only variants. */
static int open_common(const char *fn, int id, int dirfd, const char *path, int flags, mode_t mode,
		       int variant)
{
	struct rec r;
	rec_begin(&r, "open", fn, F_FD | F_INO | F_FLAGS | F_PATH);
	r.flags = (unsigned)flags;
	r.path = path;
	long ret;
	void *real = real_get(id);
	if (injected(&r, "open")) {
		ret = -1;
	} else if (!real) {
		ret = syscall(SYS_openat, dirfd, path, flags, mode);
	} else {
		switch (variant) {
		case 0: ret = ((open_fn)real)(path, flags, mode); break;
		case 1: ret = ((openat_fn)real)(dirfd, path, flags, mode); break;
		case 2: ret = ((__open_2_fn)real)(path, flags); break;
		case 3: ret = ((__openat_2_fn)real)(dirfd, path, flags); break;
		default: ret = ((creat_fn)real)(path, mode); break;
		}
	}
	if (ret >= 0 && slow_open_ms > 0 && path && strstr(path, slow_open_text)) {
		struct timespec ts = { slow_open_ms / 1000, (slow_open_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	r.fd = (int)ret;
	r.ino = ret >= 0 ? ino_of(&r, (int)ret) : 0;
	rec_end(&r, ret);
	return (int)ret;
}

#define OPEN_HOOK(name)                                                              \
	API int name(const char *path, int flags, ...)                               \
	{                                                                            \
		mode_t mode = 0;                                                     \
		if (mode_needed(flags)) {                                            \
			va_list ap;                                                  \
			va_start(ap, flags);                                         \
			mode = (mode_t)va_arg(ap, int);                              \
			va_end(ap);                                                  \
		}                                                                    \
		return open_common(#name, ID_##name, AT_FDCWD, path, flags, mode, 0); \
	}

#define OPENAT_HOOK(name)                                                            \
	API int name(int dirfd, const char *path, int flags, ...)                    \
	{                                                                            \
		mode_t mode = 0;                                                     \
		if (mode_needed(flags)) {                                            \
			va_list ap;                                                  \
			va_start(ap, flags);                                         \
			mode = (mode_t)va_arg(ap, int);                              \
			va_end(ap);                                                  \
		}                                                                    \
		return open_common(#name, ID_##name, dirfd, path, flags, mode, 1);   \
	}

OPEN_HOOK(open)
OPEN_HOOK(open64)
OPENAT_HOOK(openat)
OPENAT_HOOK(openat64)

/* The fortified opens: glibc declares them only when _FORTIFY_SOURCE
 * makes it call them. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

API int __open_2(const char *path, int flags)
{
	return open_common("__open_2", ID___open_2, AT_FDCWD, path, flags, 0, 2);
}

API int __open64_2(const char *path, int flags)
{
	return open_common("__open64_2", ID___open64_2, AT_FDCWD, path, flags, 0, 2);
}

API int __openat_2(int dirfd, const char *path, int flags)
{
	return open_common("__openat_2", ID___openat_2, dirfd, path, flags, 0, 3);
}

API int __openat64_2(int dirfd, const char *path, int flags)
{
	return open_common("__openat64_2", ID___openat64_2, dirfd, path, flags, 0, 3);
}

API int creat(const char *path, mode_t mode)
{
	return open_common("creat", ID_creat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 4);
}

API int creat64(const char *path, mode_t mode)
{
	return open_common("creat64", ID_creat64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 4);
}

/* ---- close, rename ------------------------------------------------------ */

API int close(int fd)
{
	struct rec r;
	rec_begin(&r, "close", "close", F_FD | F_INO);
	r.fd = fd;
	r.ino = ino_of(&r, fd);
	close_fn real = REAL(close);
	long ret;
	if (injected(&r, "close")) {
		/* Linux frees the number even when close reports an error (an
		 * NFS write-back failure, say): model that, or the app and the
		 * shim above would see a descriptor no kernel leaves open. */
		int e = errno;
		if (real)
			real(fd);
		else
			syscall(SYS_close, fd);
		errno = e;
		ret = -1;
	} else {
		ret = real ? real(fd) : syscall(SYS_close, fd);
	}
	rec_end(&r, ret);
	return (int)ret;
}

static int rename_common(const char *fn, int variant, int da, const char *a, int db, const char *b,
			 unsigned int flags)
{
	struct rec r;
	rec_begin(&r, "rename", fn, F_FLAGS | F_PATH | F_PATH2);
	r.path = a;
	r.path2 = b;
	r.flags = flags;
	long ret;
	if (injected(&r, "rename")) {
		ret = -1;
	} else if (variant == 0 && REAL(rename)) {
		ret = REAL(rename)(a, b);
	} else if (variant == 1 && REAL(renameat)) {
		ret = REAL(renameat)(da, a, db, b);
	} else if (variant == 2 && REAL(renameat2)) {
		ret = REAL(renameat2)(da, a, db, b, flags);
	} else {
		ret = syscall(SYS_renameat2, da, a, db, b, flags);
	}
	rec_end(&r, ret);
	return (int)ret;
}

API int rename(const char *a, const char *b)
{
	return rename_common("rename", 0, AT_FDCWD, a, AT_FDCWD, b, 0);
}

API int renameat(int da, const char *a, int db, const char *b)
{
	return rename_common("renameat", 1, da, a, db, b, 0);
}

API int renameat2(int da, const char *a, int db, const char *b, unsigned int flags)
{
	return rename_common("renameat2", 2, da, a, db, b, flags);
}

/* link and linkat: op=link, path = the existing name (or "" with
 * AT_EMPTY_PATH), path2 = the new one, flags = linkat's flags. */
static int link_common(const char *fn, int da, const char *a, int db, const char *b, int flags)
{
	struct rec r;
	rec_begin(&r, "link", fn, F_FLAGS | F_PATH | F_PATH2);
	r.path = a;
	r.path2 = b;
	r.flags = (unsigned)flags;
	long ret;
	if (injected(&r, "link"))
		ret = -1;
	else if (!strcmp(fn, "link") && REAL(link))
		ret = REAL(link)(a, b);
	else if (REAL(linkat))
		ret = REAL(linkat)(da, a, db, b, flags);
	else
		ret = syscall(SYS_linkat, da, a, db, b, flags);
	rec_end(&r, ret);
	return (int)ret;
}

API int link(const char *a, const char *b)
{
	return link_common("link", AT_FDCWD, a, AT_FDCWD, b, 0);
}

API int linkat(int da, const char *a, int db, const char *b, int flags)
{
	return link_common("linkat", da, a, db, b, flags);
}

/* ---- writes ------------------------------------------------------------- */

static void write_begin(struct rec *r, const char *op, const char *fn, int fd, size_t n,
			long long off, int has_off)
{
	rec_begin(r, op, fn, F_FD | F_INO | F_N | (has_off ? F_OFF : 0));
	r->fd = fd;
	r->ino = ino_of(r, fd);
	r->n = (long long)n;
	r->off = off;
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; iov && i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

API ssize_t write(int fd, const void *buf, size_t n)
{
	struct rec r;
	write_begin(&r, "write", "write", fd, n, 0, 0);
	write_fn real = REAL(write);
	ssize_t ret;
	if (injected(&r, "write"))
		ret = -1;
	else
		ret = real ? real(fd, buf, n) : syscall(SYS_write, fd, buf, n);
	rec_end(&r, ret);
	return ret;
}

#define PWRITE_HOOK(name, offtype)                                                   \
	API ssize_t name(int fd, const void *buf, size_t n, offtype off)             \
	{                                                                            \
		struct rec r;                                                        \
		write_begin(&r, "pwrite", #name, fd, n, off, 1);                     \
		name##_fn real = REAL(name);                                         \
		ssize_t ret;                                                         \
		if (injected(&r, "pwrite"))                                          \
			ret = -1;                                                    \
		else                                                                 \
			ret = real ? real(fd, buf, n, off)                           \
				   : syscall(SYS_pwrite64, fd, buf, n, off);         \
		rec_end(&r, ret);                                                    \
		return ret;                                                          \
	}

PWRITE_HOOK(pwrite, off_t)
PWRITE_HOOK(pwrite64, off64_t)

API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct rec r;
	write_begin(&r, "writev", "writev", fd, iov_total(iov, cnt), 0, 0);
	writev_fn real = REAL(writev);
	ssize_t ret;
	if (injected(&r, "writev"))
		ret = -1;
	else
		ret = real ? real(fd, iov, cnt) : syscall(SYS_writev, fd, iov, cnt);
	rec_end(&r, ret);
	return ret;
}

#define PWRITEV_HOOK(name, offtype)                                                  \
	API ssize_t name(int fd, const struct iovec *iov, int cnt, offtype off)      \
	{                                                                            \
		struct rec r;                                                        \
		write_begin(&r, "pwritev", #name, fd, iov_total(iov, cnt), off, 1);  \
		name##_fn real = REAL(name);                                         \
		ssize_t ret;                                                         \
		if (injected(&r, "pwritev"))                                         \
			ret = -1;                                                    \
		else                                                                 \
			ret = real ? real(fd, iov, cnt, off)                         \
				   : syscall(SYS_pwritev, fd, iov, cnt, off, 0);     \
		rec_end(&r, ret);                                                    \
		return ret;                                                          \
	}

PWRITEV_HOOK(pwritev, off_t)
PWRITEV_HOOK(pwritev64, off64_t)

#define PWRITEV2_HOOK(name, offtype)                                                 \
	API ssize_t name(int fd, const struct iovec *iov, int cnt, offtype off, int fl) \
	{                                                                            \
		struct rec r;                                                        \
		write_begin(&r, "pwritev", #name, fd, iov_total(iov, cnt), off, 1);  \
		r.fields |= F_FLAGS;                                                 \
		r.flags = (unsigned)fl;                                              \
		name##_fn real = REAL(name);                                         \
		ssize_t ret;                                                         \
		if (injected(&r, "pwritev"))                                         \
			ret = -1;                                                    \
		else                                                                 \
			ret = real ? real(fd, iov, cnt, off, fl)                     \
				   : syscall(SYS_pwritev2, fd, iov, cnt, off, 0, fl); \
		rec_end(&r, ret);                                                    \
		return ret;                                                          \
	}

PWRITEV2_HOOK(pwritev2, off_t)
PWRITEV2_HOOK(pwritev64v2, off64_t)

/* ---- shared file mappings (so msync addresses can be tied to a file) ---- */

#define MMAP_HOOK(name, offtype)                                                     \
	API void *name(void *addr, size_t len, int prot, int flags, int fd, offtype off) \
	{                                                                            \
		name##_fn real = REAL(name);                                         \
		int rec_it = fd >= 0 && (flags & MAP_SHARED);                        \
		struct rec r;                                                        \
		if (rec_it) {                                                        \
			rec_begin(&r, "mmap", #name, F_FD | F_INO | F_FLAGS | F_ADDR | F_OFF); \
			r.fd = fd;                                                   \
			r.ino = ino_of(&r, fd);                                          \
			r.flags = (unsigned)flags;                                   \
			r.len = len;                                                 \
			r.off = off;                                                 \
			if (injected(&r, "mmap")) {                                  \
				rec_end(&r, -1);                                     \
				return MAP_FAILED;                                   \
			}                                                            \
		}                                                                    \
		void *p = real ? real(addr, len, prot, flags, fd, off)               \
			       : (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off); \
		if (rec_it) {                                                        \
			r.addr = p == MAP_FAILED ? 0 : (uintptr_t)p;                 \
			rec_end(&r, p == MAP_FAILED ? -1 : 0);                       \
		}                                                                    \
		return p;                                                            \
	}

MMAP_HOOK(mmap, off_t)
MMAP_HOOK(mmap64, off64_t)

/* ---- changes made around the write calls -------------------------------- */

/* One record of a change of out's file; off < 0: at its position. */
static void change_begin(struct rec *r, const char *op, const char *fn, int out, size_t n, long long off)
{
	write_begin(r, op, fn, out, n, off, off >= 0);
}

#define SENDFILE_HOOK(name, offtype)                                                 \
	API ssize_t name(int out, int in, offtype *off, size_t n)                   \
	{                                                                            \
		struct rec r;                                                        \
		change_begin(&r, "sendfile", #name, out, n, -1);                     \
		name##_fn real = REAL(name);                                         \
		ssize_t ret = real ? real(out, in, off, n) : syscall(SYS_sendfile, out, in, off, n); \
		rec_end(&r, ret);                                                    \
		return ret;                                                          \
	}

SENDFILE_HOOK(sendfile, off_t)
SENDFILE_HOOK(sendfile64, off64_t)

API ssize_t splice(int in, off64_t *off_in, int out, off64_t *off_out, size_t n, unsigned int flags)
{
	struct rec r;
	change_begin(&r, "splice", "splice", out, n, off_out ? (long long)*off_out : -1);
	splice_fn real = REAL(splice);
	ssize_t ret = real ? real(in, off_in, out, off_out, n, flags)
			   : syscall(SYS_splice, in, off_in, out, off_out, n, flags);
	rec_end(&r, ret);
	return ret;
}

API ssize_t copy_file_range(int in, off64_t *off_in, int out, off64_t *off_out, size_t n, unsigned int flags)
{
	struct rec r;
	change_begin(&r, "copy_file_range", "copy_file_range", out, n, off_out ? (long long)*off_out : -1);
	copy_file_range_fn real = REAL(copy_file_range);
	ssize_t ret = real ? real(in, off_in, out, off_out, n, flags)
			   : syscall(SYS_copy_file_range, in, off_in, out, off_out, n, flags);
	rec_end(&r, ret);
	return ret;
}

/* glibc's POSIX AIO: the submission is what the process's thread does (a
 * helper thread of libc's makes the write with internal calls no preload
 * sees), so the record is the submission: the change begins after t0. */
#define AIO_WRITE_HOOK(name, cbtype)                                                 \
	API int name(cbtype *cb)                                                     \
	{                                                                            \
		struct rec r;                                                        \
		change_begin(&r, "aio_write", #name, cb->aio_fildes, cb->aio_nbytes, \
			     (long long)cb->aio_offset);                             \
		name##_fn real = REAL(name);                                         \
		int ret = real ? real(cb) : (errno = ENOSYS, -1);                    \
		rec_end(&r, ret);                                                    \
		return ret;                                                          \
	}

AIO_WRITE_HOOK(aio_write, struct aiocb)
AIO_WRITE_HOOK(aio_write64, struct aiocb64)

/*
 * libc's syscall(): the numbers that change a file's bytes are recorded
 * (op=raw_write, fd the file written); every other number passes on
 * unrecorded. Six argument words are read and handed on as they came, as
 * glibc's own syscall() does (the shim above does the same). The C name
 * differs: this file calls its own raw rec_syscall under that name.
 */
typedef long (*syscall_fn)(long, ...);
static _Atomic(void *) real_syscall_ptr;

API long rec_libc_syscall(long nr, ...) __asm__("syscall");
API long rec_libc_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	int out = -1;
	long long off = -1;
	switch (nr) {
	case SYS_write:
	case SYS_writev:
	case SYS_sendfile:
		out = (int)a1;
		break;
	case SYS_pwrite64:
	case SYS_pwritev:
	case SYS_pwritev2:
		out = (int)a1;
		off = a4;
		break;
	case SYS_splice:
	case SYS_copy_file_range:
		out = (int)a3;
		break;
	default:
		break;
	}
	void *p = atomic_load_explicit(&real_syscall_ptr, memory_order_acquire);
	if (!p && !in_dlsym) {
		int e = errno;
		in_dlsym = 1;
		p = dlsym(RTLD_NEXT, "syscall");
		in_dlsym = 0;
		errno = e;
		if (p)
			atomic_store_explicit(&real_syscall_ptr, p, memory_order_release);
	}
	struct rec r;
	if (out >= 0)
		change_begin(&r, "raw_write", "syscall", out, nr == SYS_write || nr == SYS_pwrite64 ? (size_t)a3 : 0,
			     off);
	long ret = p ? ((syscall_fn)p)(nr, a1, a2, a3, a4, a5, a6) : syscall(nr, a1, a2, a3, a4, a5, a6);
	if (out >= 0)
		rec_end(&r, ret);
	return ret;
}
