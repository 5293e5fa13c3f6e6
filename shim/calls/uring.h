/*
 * uring.h - io_uring rings (uring.c): the hooks the rest of the shim calls.
 */
#ifndef SYNCSHIM_URING_H
#define SYNCSHIM_URING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* libc's syscall() with one of io_uring's numbers (syscall.c). */
long uring_sys_setup(long entries, long params);
long uring_sys_enter(long fd, long to_submit, long min_complete, long flags, long arg, long argsz);
long uring_sys_register(long fd, long opcode, long arg, long nr);

/* Requests submitted around libc (io_uring here, libaio in aio.c). */
struct shim_file;
struct iovec;
enum around_sync {
	AROUND_LEAVE,    /* send it as the app made it */
	AROUND_DATASYNC, /* make it a datasync */
	AROUND_DONE,     /* complete it at once with success */
	AROUND_FAIL,     /* complete it at once with -err */
};
enum around_sync around_sync_decide(struct shim_file *f, int fd, bool datasync, bool can_fail, int *err);
/* A write submitted through a ring or libaio (cnt buffers at off, -1: the
 * descriptor's position), before the kernel takes it: in its order as a
 * write, the submitter waiting until what it depends on is durable. */
void around_write_order(struct shim_file *f, int fd, off_t off, const struct iovec *iov, int cnt);
/* The same write as the write path would count it (n bytes). */
void around_write(struct shim_file *f, int fd, uint32_t state, int *rw_flags, off_t off, uint64_t n);
uint64_t writev_bytes(const struct iovec *remote_iov, unsigned cnt);

/* libc's syscall() with io_submit (aio.c). */
long aio_sys_submit(long ctx, long nr, long iocbpp);

/* Rings the shim has learned, 0 none: mmap and munmap look no further. */
extern _Atomic int uring_rings_known;
void uring_mapped(void *addr, size_t len, int fd, off_t off);
void uring_unmapped(void *addr, size_t len);

static inline void uring_note_mmap(void *addr, size_t len, int fd, off_t off)
{
	if (__builtin_expect(atomic_load_explicit(&uring_rings_known, memory_order_relaxed) != 0, 0) &&
	    addr != (void *)-1 && fd >= 0)
		uring_mapped(addr, len, fd, off);
}

static inline void uring_note_munmap(void *addr, size_t len)
{
	if (__builtin_expect(atomic_load_explicit(&uring_rings_known, memory_order_relaxed) != 0, 0))
		uring_unmapped(addr, len);
}

#endif
