/*
 * syscall.c - libc's syscall(), the way around the libc wrappers.
 *
 * A program that calls syscall(SYS_fsync, fd) gets what fsync(fd) would
 * give it under its rule: the sync numbers go through the same wrappers,
 * with syscall()'s conventions (-1 and errno), which are the wrappers'
 * own. io_uring's three calls go to uring.c, which looks at the ring's
 * new entries before the kernel does, and io_submit (libaio's way in) to
 * aio.c. Every other number costs one
 * switch: no lock, no allocation, errno untouched, the six argument
 * words handed on as they came.
 *
 * Forwarding (x86_64, and every LP64 ABI with register arguments): a
 * system call's arguments are all integer-class words (pointers, ints,
 * longs); syscall() takes them as longs and hands all six to the kernel
 * whatever the call uses, as glibc's own does. Reading six with va_arg
 * reads the register save area and, for the sixth, the caller's stack
 * slot, exactly what glibc's syscall() reads; the words are passed on
 * unchanged (an int argument's upper half included), so the kernel sees
 * what it would have seen. Only where the shim itself interprets an
 * argument is it narrowed to the type the call's C wrapper takes.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"
#include "uring.h"

SHIM_API long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_fsync:
		return fsync((int)a1);
	case SYS_fdatasync:
		return fdatasync((int)a1);
	case SYS_sync_file_range:
		return sync_file_range((int)a1, (off64_t)a2, (off64_t)a3, (unsigned int)a4);
	case SYS_msync:
		return msync((void *)a1, (size_t)a2, (int)a3);
	case SYS_syncfs:
		return syncfs((int)a1);
	case SYS_sync:
		sync();
		return 0;
	case SYS_io_uring_setup:
		return uring_sys_setup(a1, a2);
	case SYS_io_uring_enter:
		return uring_sys_enter(a1, a2, a3, a4, a5, a6);
	case SYS_io_uring_register:
		return uring_sys_register(a1, a2, a3, a4);
	case SYS_io_submit:
		return aio_sys_submit(a1, a2, a3);
	default:
		return LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
	}
}
