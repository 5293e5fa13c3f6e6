/*
 * mmap_track.c - which file a shared mapping belongs to, for msync.
 *
 * msync names an address, not a file, so shared file mappings made
 * through mmap are remembered as [start, end) -> shim_file. munmap (and a
 * MAP_FIXED mapping on top) trims or drops them, before the kernel call:
 * the record must never outlive the kernel's mapping, or an msync of the
 * address made meanwhile (another file mapped there, by another thread or
 * behind the shim's back) gets the old file's rule. A range forgotten
 * too early, or for a call that then fails, only makes its msync pass
 * through: a real sync, never a skipped one. A small fixed table under
 * a mutex: mappings are few and mmap is not a hot path; munmap skips the
 * lock entirely while nothing is tracked (a JVM unmaps a lot of memory).
 * Lock order: this table's lock, then the registry's (dropping a region's
 * reference may recycle its file); nothing allocates under either.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>

#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "mmap_track.h"
#include "order.h"
#include "shim.h"
#include "uring.h"

#define MAX_REGIONS 4096

struct region {
	uintptr_t start, end;
	struct shim_file *file;
};

static pthread_mutex_t regions_mu = PTHREAD_MUTEX_INITIALIZER;
static struct region regions[MAX_REGIONS];
static _Atomic int nregions;

static void regions_lock(void)
{
	pthread_mutex_lock(&regions_mu);
	TEST_POINT("regions");
}

static void regions_unlock(void)
{
	pthread_mutex_unlock(&regions_mu);
}

void mmap_track_atfork_prepare(void)
{
	pthread_mutex_lock(&regions_mu);
}

void mmap_track_atfork_parent(void)
{
	pthread_mutex_unlock(&regions_mu);
}

void mmap_track_atfork_child(void)
{
	pthread_mutex_init(&regions_mu, NULL);
}

static void region_drop(int i)
{
	int n = atomic_load_explicit(&nregions, memory_order_relaxed);
	file_put(regions[i].file);
	regions[i] = regions[n - 1];
	atomic_store_explicit(&nregions, n - 1, memory_order_release);
}

static void region_push(uintptr_t start, uintptr_t end, struct shim_file *f)
{
	int n = atomic_load_explicit(&nregions, memory_order_relaxed);
	if (n == MAX_REGIONS) {
		file_put(f); /* full: that mapping's msync just passes through */
		return;
	}
	regions[n] = (struct region){ start, end, f };
	atomic_store_explicit(&nregions, n + 1, memory_order_release);
}

/* Lock held. Cut [start, end) out of every region. */
static void regions_cut(uintptr_t start, uintptr_t end)
{
	for (int i = 0; i < atomic_load_explicit(&nregions, memory_order_relaxed);) {
		struct region *r = &regions[i];
		if (r->end <= start || r->start >= end) {
			i++;
			continue;
		}
		if (r->start < start && r->end > end) /* hole in the middle: keep the tail too */
			region_push(end, r->end, file_ref(r->file));
		if (r->start < start) {
			r->end = start;
			i++;
		} else if (r->end > end) {
			r->start = end;
			i++;
		} else {
			region_drop(i); /* swapped in an unvisited entry at i */
		}
	}
}

void mmap_track_add(void *addr, size_t len, int fd)
{
	uint32_t state;
	struct shim_file *f = fd_get(fd, &state); /* the region keeps this reference */
	if (!f)
		return;
	if (file_defers(f)) /* a later msync may have only the mapping: a descriptor to borrow */
		flusher_offer_fd(f, fd);
	order_file_mapped(f); /* its bytes may change with no call: no rewrite runs (order.c) */
	shim_enter();
	regions_lock();
	regions_cut((uintptr_t)addr, (uintptr_t)addr + len);
	region_push((uintptr_t)addr, (uintptr_t)addr + len, f);
	regions_unlock();
	shim_leave();
}

void mmap_track_remove(void *addr, size_t len)
{
	if (atomic_load_explicit(&nregions, memory_order_acquire) == 0)
		return;
	shim_enter();
	regions_lock();
	regions_cut((uintptr_t)addr, (uintptr_t)addr + len);
	regions_unlock();
	shim_leave();
}

struct shim_file *mmap_track_find(const void *addr, size_t len)
{
	if (atomic_load_explicit(&nregions, memory_order_acquire) == 0)
		return NULL;
	struct shim_file *f = NULL;
	shim_enter();
	regions_lock();
	for (int i = 0; i < atomic_load_explicit(&nregions, memory_order_relaxed); i++)
		if ((uintptr_t)addr >= regions[i].start && (uintptr_t)addr < regions[i].end &&
		    len <= regions[i].end - (uintptr_t)addr) {
			f = file_ref(regions[i].file);
			break;
		}
	regions_unlock();
	shim_leave();
	return f;
}

static void *mmap_done(void *p, size_t len, int prot, int flags, int fd)
{
	if (p == MAP_FAILED || shim_bypass())
		return p;
	int e = errno;
	if (flags & MAP_FIXED)
		TEST_HOLD("mmap_fixed_done");
	if (fd >= 0 && (flags & MAP_SHARED) && (prot & PROT_WRITE) && crash_on())
		crash_limit_fd(fd, "a shared writable mapping of a file in scope: writes through it are not logged");
	if (fd >= 0 && (flags & MAP_SHARED))
		mmap_track_add(p, len, fd);
	errno = e;
	return p;
}

/* A MAP_FIXED mapping replaces whatever was at [addr, addr + len). */
static void mmap_before(void *addr, size_t len, int flags)
{
	if ((flags & MAP_FIXED) && !shim_bypass()) {
		int e = errno;
		mmap_track_remove(addr, len);
		errno = e;
	}
}

SHIM_API void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0)
		held_before_read(fd); /* the mapping shows what the program wrote */
	mmap_before(addr, len, flags);
	void *p = LIBC(mmap)(addr, len, prot, flags, fd, off);
	uring_note_mmap(p, len, fd, off); /* an io_uring ring's SQ ring or SQEs (uring.c) */
	return mmap_done(p, len, prot, flags, fd);
}

SHIM_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	if (fd >= 0)
		held_before_read(fd);
	mmap_before(addr, len, flags);
	void *p = LIBC(mmap64)(addr, len, prot, flags, fd, off);
	uring_note_mmap(p, len, fd, off);
	return mmap_done(p, len, prot, flags, fd);
}

SHIM_API int munmap(void *addr, size_t len)
{
	uring_note_munmap(addr, len); /* before: a ring's entries are read while still mapped */
	bool seen = !shim_bypass();
	if (seen) {
		int e = errno;
		mmap_track_remove(addr, len);
		errno = e;
	}
	int r = LIBC(munmap)(addr, len);
	if (r == 0 && seen)
		TEST_HOLD("munmap_done");
	return r;
}
