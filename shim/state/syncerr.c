/*
 * syncerr.c - errors of syncs the shim made on the app's behalf.
 *
 * A deferred sync runs after the app's fsync already returned 0, so its
 * failure cannot be returned there. Like the kernel's own write-back
 * errors (errseq), it is kept on the file and reported once to every
 * descriptor by the next fsync, fdatasync or close on it; a descriptor
 * opened later sees errors no descriptor has reported yet.
 *
 * Never lost: when no descriptor is left to report to (the app closed its
 * last one, or the process is exiting), the error is said on stderr, one
 * line per failure, naming the file and the errno; and with
 * `unreported_errors = exit` a process that would have exited 0 exits 74
 * (EX_IOERR) instead.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fdtable.h"
#include "files.h"
#include "shim.h"
#include "syncerr.h"

void syncerr_reset(struct shim_file *f)
{
	atomic_store(&f->err_seq, 0);
	atomic_store(&f->err_errno, 0);
	atomic_store(&f->err_seen_seq, 0);
	atomic_store(&f->err_told_seq, 0);
}

void syncerr_record(struct shim_file *f, int err)
{
	atomic_store_explicit(&f->err_errno, err, memory_order_relaxed);
	atomic_fetch_add_explicit(&f->err_seq, 1, memory_order_release);
}

static void mark_seen(struct shim_file *f, uint32_t seq)
{
	uint32_t seen = atomic_load(&f->err_seen_seq);
	while (seen < seq && !atomic_compare_exchange_weak(&f->err_seen_seq, &seen, seq))
		;
}

int syncerr_take_seen(struct shim_file *f, uint32_t *seen)
{
	uint32_t seq = atomic_load_explicit(&f->err_seq, memory_order_acquire);
	if (seq == 0 || *seen == seq)
		return 0;
	*seen = seq;
	mark_seen(f, seq);
	return atomic_load_explicit(&f->err_errno, memory_order_relaxed);
}

int syncerr_take(struct shim_file *f, int fd)
{
	uint32_t seq = atomic_load_explicit(&f->err_seq, memory_order_acquire);
	if (seq == 0 || fd_saw_error(fd, seq) == seq)
		return 0;
	mark_seen(f, seq);
	return atomic_load_explicit(&f->err_errno, memory_order_relaxed);
}

int syncerr_take_unseen(struct shim_file *f)
{
	uint32_t seq = atomic_load(&f->err_seq), seen = atomic_load(&f->err_seen_seq);
	while (seen < seq) {
		if (atomic_compare_exchange_weak(&f->err_seen_seq, &seen, seq))
			return atomic_load(&f->err_errno);
	}
	return 0;
}

static bool unreported(const struct shim_file *f)
{
	return atomic_load(&f->err_seq) != atomic_load(&f->err_seen_seq);
}

static _Atomic uint32_t dropped_unreported;

void syncerr_note_dropped(const struct shim_file *f)
{
	if (unreported(f))
		atomic_fetch_add(&dropped_unreported, 1);
}

bool syncerr_any_dropped(void)
{
	return atomic_load(&dropped_unreported) != 0;
}

/* Only ever sets the mark: an unlink that lands between the fstat and the
 * store has marked the file itself (registry_forget_unlinked, finding it
 * still held), and a store of the stale "still linked" would undo that and
 * keep a ghost nobody can open. The mark is cleared where a descriptor is
 * bound (files.c). */
void syncerr_last_descriptor(struct shim_file *f, int fd)
{
	struct stat st;
	if (unreported(f) && LIBC(fstat)(fd, &st) == 0) {
		TEST_HOLD("last_descriptor");
		if (st.st_nlink == 0)
			atomic_store(&f->unlinked_when_closed, true);
	}
}

/* Once per failure: the first caller to move err_told_seq says it. */
static void tell(struct shim_file *f)
{
	uint32_t seq = atomic_load(&f->err_seq), told = atomic_load(&f->err_told_seq);
	do {
		if (told >= seq)
			return;
	} while (!atomic_compare_exchange_weak(&f->err_told_seq, &told, seq));
	int err = atomic_load(&f->err_errno);
	const char *name = strerrorname_np(err);
	shim_say("deferred sync of %s failed (%s: %s) with no call left to report it to the app; "
		 "data it was told is durable may be lost",
		 f->path && f->path[0] ? f->path : "(unknown file)", name ? name : "?", strerror(err));
}

void syncerr_tell_if_orphaned(struct shim_file *f)
{
	if (unreported(f) && (atomic_load(&f->nfds) == 0 || atomic_load(&shim.exiting)))
		tell(f);
}

static bool unreported_pred(struct shim_file *f)
{
	return unreported(f);
}

bool syncerr_tell_all_unreported(void)
{
	struct shim_file *files[64];
	uint64_t cursor = 0;
	bool any = false;
	do {
		int n = registry_collect(files, 64, unreported_pred, &cursor);
		for (int i = 0; i < n; i++) {
			any = true;
			tell(files[i]);
			file_put(files[i]);
		}
	} while (cursor);
	return any || syncerr_any_dropped();
}
