/*
 * fdtable.h - descriptor slots: what each descriptor number is (fdtable.c,
 * the only module that stores into one).
 *
 * Two levels of state. An fd slot (one per descriptor number, in a table
 * mmap'd once) says what the descriptor is: not yet seen, not a regular
 * file (pass straight through), a tracked regular file, or one of the
 * shim's own descriptors. A tracked slot points at the file's shim_file,
 * shared by every descriptor of the same (dev, inode): that is where the
 * rule's knobs, the dirty byte count, sticky sync errors and the flusher
 * state live.
 */
#ifndef SYNCSHIM_FDTABLE_H
#define SYNCSHIM_FDTABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim.h"

struct shim_file;

/* fd slot state word: kind in the low bits, facts above. */
enum fd_kind { FD_UNKNOWN = 0, FD_PASS = 1, FD_FILE = 2, FD_SHIM = 3 /* the shim's own */ };
#define SLOT_KIND_MASK 3u
#define SLOT_APP_OSYNC (1u << 2)   /* the app asked for O_SYNC */
#define SLOT_APP_ODSYNC (1u << 3)  /* the app asked for O_DSYNC */
#define SLOT_OSYNC_DEFER (1u << 4) /* we dropped O_(D)SYNC: each write is a deferred sync */
#define SLOT_CLOSING (1u << 5)     /* the app is closing it: no new sync may use it */
#define SLOT_OSYNC_STRIP (1u << 6) /* we dropped O_(D)SYNC for nothing: each write is answered unsynced */
/* A sticky error the shim reports to every descriptor was found through
 * another open file description: the kernel will report it to this one's
 * once more, at its next real sync (a duplicate, dropped). FD_FILE and
 * OWN_FILE FD_SHIM slots. */
#define SLOT_KERNEL_OWES (1u << 7)
/* FD_SHIM slots: whose descriptor it is. */
#define SLOT_OWN_SHIFT 8
/* FD_FILE slots: opened writable, without O_APPEND, O_DIRECT or O_PATH
 * (a pwrite lands at its offset), and no F_SETFL since: a write held
 * (held.c) need not ask the kernel about the description. */
#define SLOT_PLAIN_WRITER (1u << 12)
enum shim_fd_owner { OWN_NONE = 0, OWN_LOG = 1, OWN_FILE = 2, OWN_TEMP = 3, OWN_CRASH = 4 };

struct fd_slot {
	_Atomic uint32_t state;
	_Atomic uint32_t err_seen;  /* file err_seq this fd has reported (errseq style) */
	_Atomic(struct shim_file *) file;
	_Atomic uint32_t trust;     /* shim.trust when the binding was last known true */
	_Atomic uint64_t pos;       /* where the description's position is (position.h); 0: not known */
};

void fdtable_init(void);
/* NULL when fd is outside the table. Inline, as fd_peek: every write
 * pays for these, and a call into another unit would cost more than
 * they do. */
static inline struct fd_slot *fd_slot(int fd)
{
	if (fd < 0 || fd >= shim.nfds || !shim.fds)
		return NULL;
	return &shim.fds[fd];
}
void fd_note_used(int fd);         /* keeps shim.fd_hi, the top of the used range */
/* Write path: the tracked file behind fd as the slot says, without a
 * reference or a check (objects are type-stable). NULL: pass through. */
static inline struct shim_file *fd_peek(int fd, uint32_t *state)
{
	struct fd_slot *s = fd_slot(fd);
	if (!s)
		return NULL;
	uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
	if ((st & SLOT_KIND_MASK) != FD_FILE)
		return NULL;
	*state = st;
	return atomic_load_explicit(&s->file, memory_order_acquire);
}
/* Everything else: the tracked file behind fd, with a reference; NULL for
 * bad, O_PATH, non-regular or untracked fds. A binding the shim made or
 * checked since the last distrust is vouched for without a system call:
 * every libc call that makes, replaces or closes a descriptor is seen
 * (only a raw syscall or io_uring is not). Anything else is checked
 * against the kernel (statx) and bound. */
struct shim_file *fd_get(int fd, uint32_t *state);
/* libc may have changed descriptors without a call the shim sees. */
void fdtable_distrust_all(void);
void fd_bind(int fd, struct shim_file *f, uint32_t flags); /* takes f's reference */
void fd_bind_pass(int fd);
/* Clear the slot; returns its reference and the error sequence this fd
 * had reported (for close). */
struct shim_file *fd_unbind(int fd, uint32_t *err_seen);
void fd_copy(int oldfd, int newfd);           /* dup: newfd shares oldfd's file */
/* The kernel just gave fd to the app (an open, a dup, a socket...): if the
 * shim thought the number was its own, it was closed behind its back. */
void fd_app_got(int fd);
/* Bind every regular file the process already has open (inherited, or
 * opened before we loaded): once, from the first call that may allocate
 * (an open, a sync, a close): a process that never does one never pays
 * for it (nor for the allocator's start). */
void fdtable_scan_inherited(void);
static inline void fdtable_scan_once(void)
{
	extern _Atomic int fdtable_scanned;
	if (unlikely(!atomic_load_explicit(&fdtable_scanned, memory_order_acquire)))
		fdtable_scan_inherited();
}
/* (dev, ino) of fd without touching the inode's attributes: statx asks
 * only for the inode number. 0, or -1 with errno. */
int fd_identity(int fd, dev_t *dev, ino_t *ino, mode_t *mode);
/* The same, with the birth time (0 where the file system has none). */
int fd_identity_born(int fd, dev_t *dev, ino_t *ino, mode_t *mode, uint64_t *birth);
uint64_t fd_birth(int fd);
/* Slots as the other modules see them (only fdtable.c stores into one). */
void fd_mark_shim(int fd, enum shim_fd_owner owner, struct shim_file *f);
void fd_unmark_shim(int fd);   /* if it is marked the shim's */
enum shim_fd_owner fd_shim_owner(int fd, struct shim_file **f); /* OWN_NONE: not marked */
void fd_mark_closing(int fd);  /* the app is closing it: no new lease */
void fd_state_clear(int fd, uint32_t bits); /* a fact of fd's slot no longer holds */
bool fd_names(int fd, const struct shim_file *f, bool allow_closing);
/* fd is bound to f and the binding is vouched for (no system call). */
bool fd_vouched(int fd, const struct shim_file *f);
struct shim_file *fd_file_ref(int fd); /* the slot's file, unchecked, with a reference */
/* Some app descriptor bound to f and not closing, -1 none: a scan of the
 * used slots, for a sync that has no other way to the file. */
int fd_find_bound(const struct shim_file *f);
bool fd_is_pass(int fd);
/* A real sync through failed_fd failed and the error is now f's sticky
 * error (told to every descriptor by the shim): mark every other open file
 * description of f, to which the kernel will report it again. */
void fd_note_kernel_owes(const struct shim_file *f, int failed_fd);
/* A real sync through fd just ended: true if the kernel owed fd's
 * description a report the shim already made (cleared on every
 * descriptor of that description). */
bool fd_take_kernel_owes(int fd);
/* to is a dup of from (the shim's own, same description): the same. */
void fd_inherit_kernel_owes(int from, int to);
/* The error sequence fd had reported, now seq (the errseq exchange). */
uint32_t fd_saw_error(int fd, uint32_t seq);

#endif
