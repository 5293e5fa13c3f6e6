/*
 * fdtable.c - per-descriptor slots and the per-file registry.
 *
 * Slots are indexed by fd in one anonymous mapping sized from
 * RLIMIT_NOFILE, so lookup is an array index and never allocates.
 * shim_file objects are type-stable: once allocated they are recycled
 * through a free list but never returned to the allocator, so a racing
 * lock-free reader holding a stale pointer (an app using an fd while
 * another thread closes it) touches a valid object, at worst the wrong
 * file's counters, never freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "flusher.h"
#include "log.h"
#include "shim.h"

#define FD_TABLE_MAX (1 << 20)
#define FD_TABLE_MIN 1024
#define HASH_BUCKETS 4096

struct shim_state shim;
__thread int shim_busy;

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shim_file *buckets[HASH_BUCKETS];
static struct shim_file *free_files;
#define MAX_GHOSTS 256
static int nghosts;
static uint32_t next_file_id = 1;

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
	void *p = REAL(mmap)(NULL, n * sizeof(struct fd_slot), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return; /* no table: every call passes straight through */
	shim.fds = p;
	shim.nfds = (int)n;
}

struct fd_slot *fd_slot(int fd)
{
	if (fd < 0 || fd >= shim.nfds || !shim.fds)
		return NULL;
	return &shim.fds[fd];
}

void registry_lock(void)
{
	pthread_mutex_lock(&registry_mu);
}

void registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mu);
}

void registry_atfork_child(void)
{
	pthread_mutex_init(&registry_mu, NULL);
}

static unsigned hash_of(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;
	return (unsigned)(h >> 40) % HASH_BUCKETS;
}

struct shim_file *file_ref(struct shim_file *f)
{
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	return f;
}

static void rule_for(struct shim_file *f, const struct policy *p)
{
	const struct rule *r = policy_match(p, f->path ? f->path : "");
	f->rule = *r;
	f->rule_index = r == &p->deflt ? -1 : (int)(r - p->rules);
}

/* Registry lock held. */
static struct shim_file *file_new_locked(const struct stat *st, const char *abspath)
{
	struct shim_file *f = free_files;
	if (f)
		free_files = f->free_next;
	else if (!(f = shim_alloc(sizeof(*f))))
		return NULL;
	f->id = next_file_id++;
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->path = shim_strdup(abspath);
	atomic_store(&f->dirty_bytes, 0);
	atomic_store(&f->err_seq, 0);
	atomic_store(&f->err_errno, 0);
	atomic_store(&f->err_seen_seq, 0);
	flusher_init_file(f);
	f->ghost = false;
	f->free_next = NULL;
	rule_for(f, shim_policy());
	log_file_created(f);
	unsigned b = hash_of(f->dev, f->ino);
	f->hash_next = buckets[b];
	buckets[b] = f;
	atomic_store_explicit(&f->refs, 1, memory_order_release);
	return f;
}

static struct shim_file *file_find_locked(dev_t dev, ino_t ino)
{
	for (struct shim_file *f = buckets[hash_of(dev, ino)]; f; f = f->hash_next)
		if (f->dev == dev && f->ino == ino)
			return f;
	return NULL;
}

static struct shim_file *file_get_locked(const struct stat *st, const char *abspath)
{
	struct shim_file *f = file_find_locked(st->st_dev, st->st_ino);
	if (f && f->ghost) {
		f->ghost = false;
		nghosts--;
	}
	if (f)
		return file_ref(f);
	return file_new_locked(st, abspath);
}

struct shim_file *file_lookup_or_create(const struct stat *st, const char *abspath)
{
	shim_busy++;
	registry_lock();
	struct shim_file *f = file_get_locked(st, abspath);
	registry_unlock();
	shim_busy--;
	return f;
}

/* Registry lock held. The last reference unhooks the file and recycles it,
 * unless a deferred sync of it failed and no descriptor has reported that
 * yet: like the kernel, which keeps a write-back error on the inode for the
 * next opener, the file stays known (a ghost) until someone is told. */
static void file_put_locked(struct shim_file *f)
{
	if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (atomic_load(&f->err_seq) != atomic_load(&f->err_seen_seq) && !f->ghost &&
	    nghosts < MAX_GHOSTS) {
		flusher_release_file(f);
		f->ghost = true;
		nghosts++;
		return;
	}
	if (f->ghost) {
		f->ghost = false;
		nghosts--;
	}
	struct shim_file **pp = &buckets[hash_of(f->dev, f->ino)];
	while (*pp && *pp != f)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = f->hash_next;
	flusher_release_file(f);
	shim_free(f->path);
	f->path = NULL;
	f->free_next = free_files;
	free_files = f;
}

void file_put(struct shim_file *f)
{
	if (!f)
		return;
	shim_busy++;
	registry_lock();
	file_put_locked(f);
	registry_unlock();
	shim_busy--;
}

/* Slot updates publish the file before the state word, so a reader that
 * sees FD_FILE (acquire) also sees the pointer. */
static struct shim_file *slot_set(struct fd_slot *s, struct shim_file *f, uint32_t state)
{
	/* Like the kernel's errseq: a new descriptor does not re-report errors
	 * some descriptor already reported, but does see ones nobody has. */
	if (f)
		atomic_store_explicit(&s->err_seen, atomic_load(&f->err_seen_seq), memory_order_relaxed);
	struct shim_file *old = atomic_exchange_explicit(&s->file, f, memory_order_acq_rel);
	atomic_store_explicit(&s->state, state, memory_order_release);
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

struct shim_file *fd_unbind(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return NULL;
	atomic_store_explicit(&s->state, FD_UNKNOWN, memory_order_release);
	return atomic_exchange_explicit(&s->file, NULL, memory_order_acq_rel);
}

int fd_take_sync_error(int fd, struct shim_file *f)
{
	struct fd_slot *s = fd_slot(fd);
	uint32_t seq = atomic_load_explicit(&f->err_seq, memory_order_acquire);
	if (seq == 0)
		return 0;
	if (s) {
		if (atomic_exchange_explicit(&s->err_seen, seq, memory_order_acq_rel) == seq)
			return 0;
	}
	uint32_t seen = atomic_load(&f->err_seen_seq);
	while (seen < seq && !atomic_compare_exchange_weak(&f->err_seen_seq, &seen, seq))
		;
	return atomic_load_explicit(&f->err_errno, memory_order_relaxed);
}

struct shim_file *file_find(dev_t dev, ino_t ino)
{
	shim_busy++;
	registry_lock();
	struct shim_file *f = file_find_locked(dev, ino);
	if (f)
		file_ref(f);
	registry_unlock();
	shim_busy--;
	return f;
}

void registry_each(void (*fn)(struct shim_file *, void *), void *arg)
{
	shim_busy++;
	registry_lock();
	for (int b = 0; b < HASH_BUCKETS; b++)
		for (struct shim_file *f = buckets[b]; f; f = f->hash_next)
			fn(f, arg);
	registry_unlock();
	shim_busy--;
}

void fd_copy(int oldfd, int newfd)
{
	struct fd_slot *from = fd_slot(oldfd), *to = fd_slot(newfd);
	if (!to)
		return;
	uint32_t st = from ? atomic_load_explicit(&from->state, memory_order_acquire) : FD_UNKNOWN;
	struct shim_file *f = from ? atomic_load_explicit(&from->file, memory_order_acquire) : NULL;
	if ((st & SLOT_KIND_MASK) == FD_FILE && f)
		fd_bind(newfd, file_ref(f), st & ~SLOT_KIND_MASK);
	else if ((st & SLOT_KIND_MASK) == FD_PASS)
		fd_bind_pass(newfd);
	else
		file_put(fd_unbind(newfd));
}

/* The slot flags for an fd's open flags; -1 for an O_PATH fd, which can
 * neither write nor sync and so passes through like a non-file. */
static int64_t flags_of_fd(int fd)
{
	int fl = REAL(fcntl)(fd, F_GETFL);
	if (fl < 0)
		return 0;
	if (fl & O_PATH)
		return -1;
	if ((fl & O_SYNC) == O_SYNC)
		return SLOT_APP_OSYNC;
	return (fl & O_DSYNC) ? SLOT_APP_ODSYNC : 0;
}

/*
 * First sight of a descriptor the shim did not see opened (inherited,
 * opened before the shim loaded, or through a path we do not intercept).
 * Non-blocking callers give up rather than wait for the registry lock.
 */
static struct shim_file *fd_resolve(int fd, const struct stat *st, bool may_block, uint32_t *state)
{
	int64_t flags = S_ISREG(st->st_mode) ? flags_of_fd(fd) : -1;
	if (flags < 0) {
		fd_bind_pass(fd);
		return NULL;
	}
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return NULL;
	shim_busy++;
	if (may_block)
		registry_lock();
	else if (pthread_mutex_trylock(&registry_mu) != 0) {
		shim_busy--;
		return NULL;
	}
	char path[PATH_MAX];
	if (path_of_fd(fd, path, sizeof(path)) < 0)
		path[0] = '\0';
	struct shim_file *f = file_get_locked(st, path);
	if (f) {
		struct shim_file *old = slot_set(s, f, FD_FILE | (uint32_t)flags);
		if (old)
			file_put_locked(old);
	}
	registry_unlock();
	shim_busy--;
	*state = FD_FILE | (uint32_t)flags;
	return f;
}

struct shim_file *fd_file_for_write(int fd, uint32_t *state)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return NULL;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	switch (st & SLOT_KIND_MASK) {
	case FD_FILE:
		*state = st;
		return atomic_load_explicit(&s->file, memory_order_acquire);
	case FD_PASS:
	case FD_PRIVATE:
		return NULL;
	}
	struct stat sb;
	int saved = errno;
	struct shim_file *f = NULL;
	if (fstat(fd, &sb) == 0)
		f = fd_resolve(fd, &sb, false, state);
	errno = saved;
	return f;
}

struct shim_file *fd_file_checked(int fd, uint32_t *state)
{
	struct fd_slot *s = fd_slot(fd);
	struct stat sb;
	if (!s || fstat(fd, &sb) != 0)
		return NULL;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) == FD_PRIVATE)
		return NULL;
	struct shim_file *f = atomic_load_explicit(&s->file, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) == FD_FILE && f && f->dev == sb.st_dev && f->ino == sb.st_ino) {
		*state = st;
		return f;
	}
	return fd_resolve(fd, &sb, true, state);
}

void registry_rematch(void)
{
	shim_busy++;
	registry_lock();
	const struct policy *p = shim_policy();
	for (int b = 0; b < HASH_BUCKETS; b++)
		for (struct shim_file *f = buckets[b]; f; f = f->hash_next)
			rule_for(f, p);
	registry_unlock();
	shim_busy--;
}
