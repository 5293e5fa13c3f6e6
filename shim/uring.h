/*
 * uring.h - io_uring rings (uring.c): the hooks the rest of the shim calls.
 */
#ifndef SYNCSHIM_URING_H
#define SYNCSHIM_URING_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

/* libc's syscall() with one of io_uring's numbers (syscall.c). */
long uring_sys_setup(long entries, long params);
long uring_sys_enter(long fd, long to_submit, long min_complete, long flags, long arg, long argsz);
long uring_sys_register(long fd, long opcode, long arg, long nr);

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
