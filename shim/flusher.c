/*
 * flusher.c - placeholder until the per-file flusher lands: defer and
 * group behave as passthrough, which is always safe.
 */
#include "flusher.h"

int flusher_app_sync(struct shim_file *f, int fd, bool want_fsync)
{
	atomic_store_explicit(&f->dirty_bytes, 0, memory_order_relaxed);
	return want_fsync ? REAL(fsync)(fd) : REAL(fdatasync)(fd);
}

void flusher_flush_all(void)
{
}

void shim_osync_write(struct shim_file *f)
{
	(void)f;
}

void flusher_before_rename(int dirfd, const char *path)
{
	(void)dirfd, (void)path;
}
