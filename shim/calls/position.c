/*
 * position.c - following each descriptor's file position (position.h),
 * so ordered defer knows where a write() lands without lseek and fstat.
 *
 * A mark is only worth anything if every call that moves the position of
 * its open file description goes through a wrapper that keeps it, and
 * nobody else holds the description. So:
 *   - Made only by an open of a regular file (open.c: open_end), for
 *     files whose syncs can be answered unsynced (the only ones whose
 *     writes ordering checks): position 0, or "at the end" for O_APPEND.
 *     fopen, tmpfile and the like get none: their FILE moves the position
 *     from inside libc, out of sight. A slot bound any other way (found
 *     inherited, received, checked against the kernel) has none.
 *   - Kept by every call that moves a position: write, writev, pwritev2 at
 *     -1 (write.c), read, readv, preadv2 at -1, lseek (here): claimed before
 *     the call and settled after it.
 *   - Dropped, for good, when the description may be moved where the shim
 *     cannot see: a dup (two numbers, one position: close_dup.c), F_SETFL
 *     (O_APPEND may change), fdopen, sendfile or splice or copy_file_range
 *     using it, a descriptor sent over a unix socket (sendmsg SCM_RIGHTS),
 *     a raw syscall() of a call that moves it, and a call while the thread
 *     passes everything through (a signal handler inside the shim's work,
 *     a vfork child). Every mark goes at a fork (both sides share every
 *     description), posix_spawn, system, popen, and a vfork child's exec
 *     or exit; and for the process's life once it sets up an io_uring
 *     (whose reads and writes at -1 move positions).
 *   - Not seen, and so not covered: another process taking the descriptor
 *     with pidfd_getfd, a raw clone, system calls made without libc. Those
 *     are the shim's blind spots for everything else too (README).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "calls.h"
#include "fdtable.h"
#include "files.h"
#include "held.h"
#include "order.h"
#include "position.h"
#include "shim.h"

static _Atomic int pos_stopped;

static void forget_slot(struct fd_slot *s)
{
	if (atomic_load_explicit(&s->pos, memory_order_relaxed) != 0)
		atomic_store_explicit(&s->pos, 0, memory_order_release);
}

void pos_forget(int fd)
{
	struct fd_slot *s = fd_slot(fd);
	if (s)
		forget_slot(s);
}

void pos_forget_all(void)
{
	int top = atomic_load(&shim.fd_hi);
	for (int fd = 0; fd <= top && fd < shim.nfds && shim.fds; fd++)
		forget_slot(&shim.fds[fd]);
}

void pos_stop(void)
{
	atomic_store(&pos_stopped, 1);
	pos_forget_all();
	order_bytes_unseen(NULL); /* and writes change bytes unseen: no rewrite runs (order.c) */
}

void pos_opened(int fd, int fl)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s || atomic_load_explicit(&pos_stopped, memory_order_relaxed))
		return;
	uint32_t st;
	struct shim_file *f = fd_peek(fd, &st);
	if (!f || !(file_write_work(f) & WRITES_DEFERRED))
		return; /* only ordered defer asks where a write lands */
	uint64_t none = 0;
	atomic_compare_exchange_strong(&s->pos, &none, (fl & O_APPEND) ? POS_APPEND : POS_KNOWN);
}

/* A call about to move fd's position: its slot and where it starts (see
 * pos_enter), or NULL when there is no mark to keep. A thread that passes
 * everything through moves it out of the shim's sight: the mark goes. */
static struct fd_slot *mover_begin(int fd, int64_t *at)
{
	*at = POS_NOT_KNOWN;
	struct fd_slot *s = fd_slot(fd);
	if (!s || likely(atomic_load_explicit(&s->pos, memory_order_relaxed) == 0))
		return NULL;
	if (shim_bypass()) {
		forget_slot(s);
		return NULL;
	}
	*at = pos_enter(s);
	return s;
}

SHIM_API ssize_t read(int fd, void *buf, size_t n)
{
	held_before_read(fd);
	int64_t at;
	struct fd_slot *s = mover_begin(fd, &at);
	ssize_t r = LIBC(read)(fd, buf, n);
	if (s)
		pos_leave(s, at, pos_after(at, r));
	return r;
}

SHIM_API ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	held_before_read(fd);
	int64_t at;
	struct fd_slot *s = mover_begin(fd, &at);
	ssize_t r = LIBC(readv)(fd, iov, cnt);
	if (s)
		pos_leave(s, at, pos_after(at, r));
	return r;
}

/* At offset -1 preadv2 reads at the position and moves it. */
#define PREADV2_BODY(name, off_type)                                                 \
	SHIM_INLINE ssize_t name##_body(int fd, const struct iovec *iov, int cnt, off_type off, int flags) \
	{                                                                            \
		held_before_read(fd);                                                \
		if (off != -1)                                                       \
			return LIBC(name)(fd, iov, cnt, off, flags);                 \
		int64_t at;                                                          \
		struct fd_slot *s = mover_begin(fd, &at);                            \
		ssize_t r = LIBC(name)(fd, iov, cnt, off, flags);                    \
		if (s)                                                               \
			pos_leave(s, at, pos_after(at, r));                          \
		return r;                                                            \
	}

PREADV2_BODY(preadv2, off_t)
PREADV2_BODY(preadv64v2, off64_t)

SHIM_API ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return preadv2_body(fd, iov, cnt, off, flags);
}

SHIM_API ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	return preadv64v2_body(fd, iov, cnt, off, flags);
}

#define LSEEK_BODY(name, off_type)                                                   \
	SHIM_INLINE off_type name##_body(int fd, off_type off, int whence)           \
	{                                                                            \
		if (whence != SEEK_SET && whence != SEEK_CUR)                        \
			held_before_read(fd); /* the end, data and holes it sees */  \
		int64_t at;                                                          \
		struct fd_slot *s = mover_begin(fd, &at);                            \
		off_type r = LIBC(name)(fd, off, whence);                            \
		if (s)                                                               \
			pos_leave(s, at, r < 0 ? at : (int64_t)r);                   \
		return r;                                                            \
	}

LSEEK_BODY(lseek, off_t)
LSEEK_BODY(lseek64, off64_t)

SHIM_API off_t lseek(int fd, off_t off, int whence)
{
	return lseek_body(fd, off, whence);
}

SHIM_API off64_t lseek64(int fd, off64_t off, int whence)
{
	return lseek64_body(fd, off, whence);
}

/* ---- calls that move a position out of sight: the mark goes first --------- */

SHIM_API FILE *fdopen(int fd, const char *mode)
{
	pos_forget(fd); /* the FILE reads, writes and seeks from inside libc */
	return LIBC(fdopen)(fd, mode);
}

#define SENDFILE_BODY(name, off_type)                                                \
	SHIM_INLINE ssize_t name##_body(int out, int in, off_type *off, size_t n)   \
	{                                                                            \
		pos_forget(out);                                                     \
		held_before_read(in);                                                \
		order_before_fd_change(out); /* a change of out: in its order */     \
		order_fd_bytes_unseen(out); /* bytes written unseen (order.c) */     \
		if (!off)                                                            \
			pos_forget(in);                                              \
		return LIBC(name)(out, in, off, n);                                  \
	}

SENDFILE_BODY(sendfile, off_t)
SENDFILE_BODY(sendfile64, off64_t)

SHIM_API ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	return sendfile_body(out, in, off, n);
}

SHIM_API ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
	return sendfile64_body(out, in, off, n);
}

SHIM_API ssize_t splice(int in, off64_t *off_in, int out, off64_t *off_out, size_t n, unsigned int flags)
{
	if (!off_in)
		pos_forget(in);
	if (!off_out)
		pos_forget(out);
	held_before_read(in);
	order_before_fd_change(out); /* a change of out: in its order */
	order_fd_bytes_unseen(out); /* bytes written unseen (order.c) */
	return LIBC(splice)(in, off_in, out, off_out, n, flags);
}

/* Descriptors passed over a unix socket: the receiver shares their
 * descriptions. */
static void forget_passed(const struct msghdr *m)
{
	if (!m || !m->msg_control || m->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *p = CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int fd;
			__builtin_memcpy(&fd, p + i * sizeof(int), sizeof(int));
			pos_forget(fd);
		}
	}
}

SHIM_API ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	forget_passed(m);
	return LIBC(sendmsg)(fd, m, flags);
}

SHIM_API int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	for (unsigned int i = 0; v && i < n; i++)
		forget_passed(&v[i].msg_hdr);
	return LIBC(sendmmsg)(fd, v, n, flags);
}

/* A child that shares every inheritable description, made inside libc
 * (no fork handler runs). */
SHIM_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	pos_forget_all();
	held_apply_all(); /* the child reads the files as the program wrote them */
	return LIBC(posix_spawn)(pid, path, fa, attr, argv, envp);
}

SHIM_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	pos_forget_all();
	held_apply_all();
	return LIBC(posix_spawnp)(pid, file, fa, attr, argv, envp);
}

SHIM_API int system(const char *cmd)
{
	pos_forget_all();
	held_apply_all();
	return LIBC(system)(cmd);
}

SHIM_API FILE *popen(const char *cmd, const char *mode)
{
	pos_forget_all();
	held_apply_all();
	return LIBC(popen)(cmd, mode);
}
