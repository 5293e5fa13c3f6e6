/*
 * posix_aio.c - POSIX asynchronous I/O (aio_read, aio_write, aio_fsync,
 * lio_listio), glibc's: a helper thread of libc's makes each request with
 * libc's internal calls, which no wrapper sees. So the order is kept at
 * submission, where the program's thread is still the shim's to make
 * wait: a write's file first gets what it depends on durable and its held
 * writes applied (order_before_fd_change), and a read's or a sync's file
 * its held writes applied (held.c), exactly as for sendfile. A write made
 * this way is not followed (its bytes change the file unseen). (libc
 * declares the control blocks non-null: a null one crashes in libc, as it
 * would without the shim.)
 */
#include <aio.h>

#include "calls.h"
#include "held.h"
#include "order.h"
#include "shim.h"

static void before_write(int fd)
{
	if (shim_bypass())
		return;
	order_before_fd_change(fd);
	order_fd_bytes_unseen(fd);
}

SHIM_API int aio_read(struct aiocb *cb)
{
	held_before_read(cb->aio_fildes);
	return LIBC(aio_read)(cb);
}

SHIM_API int aio_read64(struct aiocb64 *cb)
{
	held_before_read(cb->aio_fildes);
	return LIBC(aio_read64)(cb);
}

SHIM_API int aio_write(struct aiocb *cb)
{
	before_write(cb->aio_fildes);
	return LIBC(aio_write)(cb);
}

SHIM_API int aio_write64(struct aiocb64 *cb)
{
	before_write(cb->aio_fildes);
	return LIBC(aio_write64)(cb);
}

/* A sync made by libc's thread: a real one, of what the program wrote,
 * held writes included. */
SHIM_API int aio_fsync(int op, struct aiocb *cb)
{
	held_before_read(cb->aio_fildes);
	return LIBC(aio_fsync)(op, cb);
}

SHIM_API int aio_fsync64(int op, struct aiocb64 *cb)
{
	held_before_read(cb->aio_fildes);
	return LIBC(aio_fsync64)(op, cb);
}

SHIM_API int lio_listio(int mode, struct aiocb *const list[], int n, struct sigevent *sig)
{
	for (int i = 0; i < n; i++) {
		if (!list[i])
			continue;
		if (list[i]->aio_lio_opcode == LIO_WRITE)
			before_write(list[i]->aio_fildes);
		else if (list[i]->aio_lio_opcode == LIO_READ)
			held_before_read(list[i]->aio_fildes);
	}
	return LIBC(lio_listio)(mode, list, n, sig);
}

SHIM_API int lio_listio64(int mode, struct aiocb64 *const list[], int n, struct sigevent *sig)
{
	for (int i = 0; i < n; i++) {
		if (!list[i])
			continue;
		if (list[i]->aio_lio_opcode == LIO_WRITE)
			before_write(list[i]->aio_fildes);
		else if (list[i]->aio_lio_opcode == LIO_READ)
			held_before_read(list[i]->aio_fildes);
	}
	return LIBC(lio_listio64)(mode, list, n, sig);
}
