/*
 * fdtable.c - per-descriptor slots.
 *
 * Slots are indexed by fd in one anonymous mapping sized from
 * RLIMIT_NOFILE, so lookup is an array index and never allocates. A slot
 * says what the number is as far as the shim knows: unseen, pass-through,
 * a tracked file (holding a reference to it), or one of the shim's own
 * descriptors (shimfd.c).
 *
 * A slot can go stale when the number is closed behind the shim's back (a
 * raw syscall, a close inside libc) and handed out again. Two defences:
 * every call through which the app gets a new number (opens, dups,
 * sockets, pipes...) resets the slot first (fd_app_got), and everything
 * that acts on a file through a descriptor (a sync, a barrier) checks the
 * number against the kernel (fd_get). Only the write path trusts the slot
 * unchecked: the worst a stale slot does there is count bytes to the
 * wrong file; any action those counts trigger is checked again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>
#include <unistd.h>

#include "fdtable.h"
#include "files.h"
#include "paths.h"
#include "shim.h"
#include "shimfd.h"

#define FD_TABLE_MAX (1 << 20)
#define FD_TABLE_MIN 1024

SHIM_HOT struct shim_state shim;
__thread int shim_busy __attribute__((tls_model("initial-exec")));

void fdtable_init(void)
{
	struct rlimit rl;
	rlim_t n = FD_TABLE_MIN;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		n = rl.rlim_max == RLIM_INFINITY ? FD_TABLE_MAX : rl.rlim_max;
	if (n > FD_TABLE_MAX)
		n = FD_TABLE_MAX;
	if (n < FD_TABLE_MIN)
		n = FD_TABLE_MIN;
	/* NORESERVE: pages are touched only for fds actually used. */
	void *p = LIBC(mmap)(NULL, n * sizeof(struct fd_slot), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return; /* no table: every call passes straight through */
	shim.fds = p;
	shim.nfds = (int)n;
	atomic_store(&shim.trust, 1);
}

void fdtable_distrust_all(void)
{
	atomic_fetch_add(&shim.trust, 1);
}

int fd_identity_born(int fd, dev_t *dev, ino_t *ino, mode_t *mode, uint64_t *birth)
{
	struct statx sx;
	unsigned mask = STATX_TYPE | STATX_INO | (birth ? STATX_BTIME : 0);
	if (LIBC(statx)(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, mask, &sx) != 0)
		return -1;
	*dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	*ino = sx.stx_ino;
	if (mode)
		*mode = sx.stx_mode;
	if (birth)
		*birth = (sx.stx_mask & STATX_BTIME)
				 ? (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec
				 : 0;
	return 0;
}

int fd_identity(int fd, dev_t *dev, ino_t *ino, mode_t *mode)
{
	return fd_identity_born(fd, dev, ino, mode, NULL);
}

uint64_t fd_birth(int fd)
{
	dev_t dev;
	ino_t ino;
	uint64_t birth = 0;
	int e = errno;
	if (fd_identity_born(fd, &dev, &ino, NULL, &birth) != 0)
		birth = 0;
	errno = e;
	return birth;
}

/* Slot updates publish the file before the state word, so a reader that
 * sees FD_FILE (acquire) also sees the pointer. Returns the old file's
 * reference, if the slot held one. */
void fd_note_used(int fd)
{
	int hi = atomic_load_explicit(&shim.fd_hi, memory_order_relaxed);
	while (fd > hi && !atomic_compare_exchange_weak(&shim.fd_hi, &hi, fd))
		;
}

static struct shim_file *slot_set(struct fd_slot *s, struct shim_file *f, uint32_t state)
{
	if (state != FD_UNKNOWN)
		fd_note_used((int)(s - shim.fds));
	/* Like the kernel's errseq: a new descriptor does not re-report errors
	 * some descriptor already reported, but does see ones nobody has. */
	if (f) {
		atomic_store_explicit(&s->err_seen, atomic_load(&f->err_seen_seq), memory_order_relaxed);
		atomic_store_explicit(&s->trust, atomic_load(&shim.trust), memory_order_relaxed);
		atomic_fetch_add(&f->nfds, 1);
	}
	uint32_t old_state = atomic_exchange_explicit(&s->state, FD_UNKNOWN, memory_order_acq_rel);
	/* A new binding: nothing is known of where its position is (an open
	 * says so after binding: pos_opened). */
	atomic_store_explicit(&s->pos, 0, memory_order_release);
	struct shim_file *old = atomic_exchange_explicit(&s->file, f, memory_order_acq_rel);
	atomic_store_explicit(&s->state, state, memory_order_release);
	if ((old_state & SLOT_KIND_MASK) != FD_FILE)
		return NULL; /* a shim-owned slot's pointer holds no reference */
	if (old)
		atomic_fetch_sub(&old->nfds, 1);
	return old;
}

void fd_bind(int fd, struct shim_file *f, uint32_t flags)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s) {
		file_put(f);
		return;
	}
	file_put(slot_set(s, f, FD_FILE | flags));
}

void fd_bind_pass(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (s)
		file_put(slot_set(s, NULL, FD_PASS));
}

struct shim_file *fd_unbind(int fd, uint32_t *err_seen)
{
	struct fd_slot *s = fd_slot(fd);
	if (err_seen)
		*err_seen = 0;
	if (!s || (atomic_load(&s->state) & SLOT_KIND_MASK) == FD_SHIM)
		return NULL;
	if (err_seen)
		*err_seen = atomic_load(&s->err_seen);
	return slot_set(s, NULL, FD_UNKNOWN);
}

void fd_app_got(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) == FD_SHIM)
		shimfd_lost(fd);
	else if (st != FD_UNKNOWN)
		file_put(slot_set(s, NULL, FD_UNKNOWN));
}

void fd_copy(int oldfd, int newfd)
{
	struct fd_slot *from = fd_slot(oldfd), *to = fd_slot(newfd);
	if (!to)
		return;
	fd_app_got(newfd);
	struct shim_file *f = NULL;
	uint32_t st = FD_UNKNOWN;
	if (from) {
		st = atomic_load_explicit(&from->state, memory_order_acquire);
		f = atomic_load_explicit(&from->file, memory_order_acquire);
	}
	if ((st & SLOT_KIND_MASK) == FD_FILE && f && file_tryref(f))
		fd_bind(newfd, f, st & ~(SLOT_KIND_MASK | SLOT_CLOSING));
	else if ((st & SLOT_KIND_MASK) == FD_PASS)
		fd_bind_pass(newfd);
}

/* The slot flags for an fd's open flags; -1 for an O_PATH fd, which can
 * neither write nor sync and so passes through like a non-file. */
static int64_t flags_of_fd(int fd)
{
	int fl = LIBC(fcntl)(fd, F_GETFL);
	if (fl < 0)
		return -1;
	if (fl & O_PATH)
		return -1;
	if ((fl & O_SYNC) == O_SYNC)
		return SLOT_APP_OSYNC;
	return (fl & O_DSYNC) ? SLOT_APP_ODSYNC : 0;
}

/* Whether fd is (still) the file dev/ino; errno as it was. */
static bool same_file(int fd, dev_t dev, ino_t ino, uint64_t *birth)
{
	dev_t d;
	ino_t i;
	int e = errno;
	bool same = fd_identity_born(fd, &d, &i, NULL, birth) == 0 && d == dev && i == ino;
	errno = e;
	return same;
}

/* A regular file's descriptor the shim did not see opened: bind it.
 * dev and ino are the caller's look at the number; another thread's dup2
 * onto it (or a close and an open) may land whole before the bind, which
 * would then overwrite that call's binding with the file it replaced, for
 * good. So the number is looked at again after its flags and path are
 * read (a mismatch: NULL, the call goes to the kernel untracked) and once
 * more after the bind: a bind later than the other call's own is undone,
 * for the next use to bind from the kernel. One statx more per look-up,
 * made only for numbers the shim did not bind itself. */
static struct shim_file *fd_resolve(int fd, dev_t dev, ino_t ino, uint32_t *state)
{
	int64_t flags = flags_of_fd(fd);
	if (flags < 0) {
		fd_bind_pass(fd);
		return NULL;
	}
	char path[PATH_MAX];
	bool named = path_of_fd(fd, path, sizeof(path)) == 0;
	uint64_t birth = 0;
	if (!same_file(fd, dev, ino, &birth)) /* flags, path and birth may be another file's */
		return NULL;
	/* No name, yet the same file there now: the number was closed and
	 * opened again on it while the name was read (a program that closes
	 * and reopens a file in a loop while another thread syncs it). Read it
	 * again while the same file is there: a file object made with no name
	 * matches no rule's path and, once no descriptor of it is left, can be
	 * synced by no name either. Only a file that has none (no /proc) is
	 * bound without one. */
	for (int tries = 0; !named && tries < 3; tries++) {
		named = path_of_fd(fd, path, sizeof(path)) == 0;
		if (!named && !same_file(fd, dev, ino, NULL))
			return NULL; /* another file, or none: the call goes to the kernel untracked */
	}
	if (!named)
		path[0] = '\0';
	struct shim_file *f = file_lookup_or_create(dev, ino, birth, path);
	if (!f)
		return NULL;
	fd_bind(fd, file_ref(f), (uint32_t)flags);
	if (!same_file(fd, dev, ino, NULL)) {
		if (fd_names(fd, f, true))
			file_put(fd_unbind(fd, NULL));
		file_put(f);
		return NULL;
	}
	*state = FD_FILE | (uint32_t)flags;
	return f;
}

/* No dup2/dup3 onto a number is between its slot copy and its check,
 * which is when a slot can name a file the kernel no longer has there
 * (close_dup.c, dup_onto_done). Called between two loads of the slot's
 * file that agree: if the first saw such a copy, this sees the count
 * raised (the copy's stores come after the increment); if this sees it
 * back at zero, the second load sees that check's unbind. One load of a
 * word nobody writes but a dup2 onto a number: a sync's whole cost. */
static inline bool no_dup_onto_unchecked(void)
{
	return atomic_load_explicit(&shim.dups_onto, memory_order_seq_cst) == 0;
}

/* The slot's file, if its binding is vouched for: made or checked since
 * the last distrust, and no dup onto a number unchecked. With a reference. */
static struct shim_file *vouched(struct fd_slot *s, uint32_t *state)
{
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) != FD_FILE ||
	    atomic_load_explicit(&s->trust, memory_order_relaxed) != atomic_load(&shim.trust))
		return NULL;
	struct shim_file *f = atomic_load_explicit(&s->file, memory_order_acquire);
	if (!f || !file_tryref(f))
		return NULL;
	if (!no_dup_onto_unchecked() || /* looked up from the kernel instead (fd_get) */
	    atomic_load_explicit(&s->file, memory_order_acquire) != f) { /* rebound meanwhile */
		file_put(f);
		return NULL;
	}
	*state = st;
	return f;
}

bool fd_vouched(int fd, const struct shim_file *f)
{
	struct fd_slot *s = fd_slot(fd);
	return s && (atomic_load_explicit(&s->state, memory_order_acquire) & SLOT_KIND_MASK) == FD_FILE &&
	       atomic_load_explicit(&s->file, memory_order_acquire) == f &&
	       atomic_load_explicit(&s->trust, memory_order_relaxed) == atomic_load(&shim.trust) &&
	       no_dup_onto_unchecked() && atomic_load_explicit(&s->file, memory_order_acquire) == f;
}

struct shim_file *fd_get(int fd, uint32_t *state)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return NULL;
	fdtable_scan_once();
	struct shim_file *f = vouched(s, state);
	if (f)
		return f;
	dev_t dev;
	ino_t ino;
	mode_t mode;
	if (fd_identity(fd, &dev, &ino, &mode) != 0)
		return NULL;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) == FD_SHIM)
		return NULL;
	f = atomic_load_explicit(&s->file, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) == FD_FILE && f && file_tryref(f)) {
		if (f->dev == dev && f->ino == ino) {
			atomic_store_explicit(&s->trust, atomic_load(&shim.trust), memory_order_relaxed);
			*state = st;
			return f;
		}
		file_put(f);
	}
	if (!S_ISREG(mode)) {
		fd_bind_pass(fd);
		return NULL;
	}
	TEST_HOLD("fd_get_resolve"); /* looked at, not yet bound */
	shim_enter();
	f = fd_resolve(fd, dev, ino, state);
	shim_leave();
	return f;
}

/* ---- slots as the other modules see them -------------------------------- */

void fd_mark_shim(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return; /* beyond the table: unprotected, like any untracked number */
	fd_note_used(fd);
	atomic_store_explicit(&s->pos, 0, memory_order_relaxed);
	atomic_store_explicit(&s->file, f, memory_order_relaxed);
	atomic_store_explicit(&s->state, FD_SHIM | (uint32_t)owner << SLOT_OWN_SHIFT, memory_order_release);
}

void fd_unmark_shim(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s || (atomic_load(&s->state) & SLOT_KIND_MASK) != FD_SHIM)
		return;
	atomic_store_explicit(&s->state, FD_UNKNOWN, memory_order_release);
	atomic_store_explicit(&s->file, NULL, memory_order_relaxed);
}

enum shim_fd_owner fd_shim_owner(int fd, struct shim_file **f)
{
	struct fd_slot *s = fd_slot(fd);
	uint32_t st = s ? atomic_load_explicit(&s->state, memory_order_acquire) : 0;
	if ((st & SLOT_KIND_MASK) != FD_SHIM)
		return OWN_NONE;
	if (f)
		*f = atomic_load(&s->file);
	return (enum shim_fd_owner)((st >> SLOT_OWN_SHIFT) & 3u);
}

void fd_state_clear(int fd, uint32_t bits)
{
	struct fd_slot *s = fd_slot(fd);
	if (s)
		atomic_fetch_and(&s->state, ~bits);
}

void fd_mark_closing(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (s && (atomic_load(&s->state) & SLOT_KIND_MASK) == FD_FILE)
		atomic_fetch_or(&s->state, SLOT_CLOSING);
}

bool fd_names(int fd, const struct shim_file *f, bool allow_closing)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return fd >= 0;
	uint32_t st = atomic_load(&s->state);
	return (st & SLOT_KIND_MASK) == FD_FILE && atomic_load(&s->file) == f &&
	       (allow_closing || !(st & SLOT_CLOSING));
}

int fd_find_bound(const struct shim_file *f)
{
	int top = atomic_load(&shim.fd_hi);
	for (int fd = 0; fd <= top && fd < shim.nfds && shim.fds; fd++)
		if (fd_names(fd, f, false))
			return fd;
	return -1;
}

/* kcmp(KCMP_FILE): 0 same open file description, -1 unknown (no kcmp). */
static int description_cmp(int a, int b)
{
	pid_t pid = getpid();
	long r = syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b);
	return r < 0 ? -1 : (int)r;
}

/* The slot's file if it is f's descriptor (the app's, or the shim's own
 * dup of it). */
static bool slot_of_file(struct fd_slot *s, const struct shim_file *f, uint32_t *st)
{
	*st = atomic_load_explicit(&s->state, memory_order_acquire);
	uint32_t kind = *st & SLOT_KIND_MASK;
	bool priv = kind == FD_SHIM && ((*st >> SLOT_OWN_SHIFT) & 3u) == OWN_FILE;
	return (kind == FD_FILE || priv) && atomic_load_explicit(&s->file, memory_order_acquire) == f;
}

void fd_note_kernel_owes(const struct shim_file *f, int failed_fd)
{
	int e = errno;
	int top = atomic_load(&shim.fd_hi);
	for (int fd = 0; fd <= top && fd < shim.nfds && shim.fds; fd++) {
		struct fd_slot *s = &shim.fds[fd];
		uint32_t st;
		if (fd == failed_fd || !slot_of_file(s, f, &st) || (st & SLOT_KERNEL_OWES))
			continue;
		int c = description_cmp(fd, failed_fd);
		if (c < 0 && errno != EBADF)
			break; /* no kcmp here: every report the kernel makes stands */
		if (c > 0) /* CAS: a slot rebound meanwhile keeps its new state */
			atomic_compare_exchange_strong(&s->state, &st, st | SLOT_KERNEL_OWES);
	}
	errno = e;
}

void fd_inherit_kernel_owes(int from, int to)
{
	struct fd_slot *a = fd_slot(from), *b = fd_slot(to);
	if (a && b && (atomic_load(&a->state) & SLOT_KERNEL_OWES))
		atomic_fetch_or(&b->state, SLOT_KERNEL_OWES);
}

bool fd_take_kernel_owes(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s || !(atomic_load_explicit(&s->state, memory_order_relaxed) & SLOT_KERNEL_OWES))
		return false;
	int e = errno;
	const struct shim_file *f = atomic_load(&s->file);
	atomic_fetch_and(&s->state, ~SLOT_KERNEL_OWES);
	int top = atomic_load(&shim.fd_hi);
	for (int o = 0; o <= top && o < shim.nfds; o++) {
		struct fd_slot *t = &shim.fds[o];
		uint32_t st;
		if (o != fd && slot_of_file(t, f, &st) && (st & SLOT_KERNEL_OWES) && description_cmp(o, fd) == 0)
			atomic_fetch_and(&t->state, ~SLOT_KERNEL_OWES);
	}
	errno = e;
	return true;
}

struct shim_file *fd_file_ref(int fd)
{
	uint32_t st;
	struct shim_file *f = fd_peek(fd, &st);
	return f && file_tryref(f) ? f : NULL;
}

uint32_t fd_saw_error(int fd, uint32_t seq)
{
	struct fd_slot *s = fd_slot(fd);
	return s ? atomic_exchange_explicit(&s->err_seen, seq, memory_order_acq_rel) : 0;
}

bool fd_is_pass(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	return s && (atomic_load(&s->state) & SLOT_KIND_MASK) == FD_PASS;
}

/* Raw getdents64 on the descriptor table's /proc directory: no stdio, no
 * allocation. */
struct dirent64_raw {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static void scan_one(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	dev_t dev;
	ino_t ino;
	mode_t mode;
	if (!s || atomic_load(&s->state) != FD_UNKNOWN || fd_identity(fd, &dev, &ino, &mode) != 0)
		return;
	uint32_t state;
	if (!S_ISREG(mode)) {
		fd_bind_pass(fd);
		return;
	}
	struct shim_file *f = fd_resolve(fd, dev, ino, &state);
	if (f && (fd == STDOUT_FILENO || fd == STDERR_FILENO))
		file_mark_std_stream(f);
	file_put(f);
}

_Atomic int fdtable_scanned;

void fdtable_scan_inherited(void)
{
	if (atomic_exchange(&fdtable_scanned, 1))
		return;
	shim_enter();
	/* marked, like every shim descriptor on the app's table: a fork meanwhile
	 * gives the child a descriptor it closes (shimfd_atfork_child) */
	/* The calling thread's view: /proc/self is the leader's, gone once
	 * the main thread has called pthread_exit, and the first call that
	 * scans may come after that (test_order's
	 * descriptors_inherited_by_a_process_whose_main_thread_exited_are_seen).
	 * /proc/self for kernels before 3.17, which have no thread-self. */
	int dir = shimfd_open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY, OWN_TEMP);
	if (dir < 0)
		dir = shimfd_open("/proc/self/fd", O_RDONLY | O_DIRECTORY, OWN_TEMP);
	char buf[4096];
	long n;
	while (dir >= 0 && (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64_raw *d = (struct dirent64_raw *)(void *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			int fd = 0;
			for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
				fd = fd * 10 + (*c - '0');
			if (fd != dir)
				scan_one(fd);
		}
	}
	shimfd_close(dir);
	shim_leave();
}
