/*
 * lastgasp.c - the exit barrier for a thread that may hold the shim's locks.
 *
 * A signal handler that calls _exit (or quick_exit, or exit) can land
 * while its thread is inside the shim's own work: leading a group sync,
 * holding the registry, a file's flusher lock, the logger's. The normal
 * barrier would wait for those, and for a sync this very thread leads:
 * it would never return. Skipping it would leave other files' deferred
 * syncs unmade and their errors untold.
 *
 * So this barrier takes no lock and waits for nobody: it walks the
 * descriptor table (a flat array read with atomics; file objects are
 * type-stable, never freed), and for every file that still owes a sync
 * makes one real fsync on one of its descriptors (the app's, or the
 * shim's private one), checked first to still be that file. A failure is
 * recorded like a deferred sync's, and every error no descriptor has
 * reported is said on stderr, once. The process is leaving: nothing of
 * the flusher's state needs to be kept consistent after this. What it
 * cannot do: finish the log (no trailer; the log ends at its last block,
 * as after SIGKILL) or the live counters' last round.
 */
#include <errno.h>
#include <unistd.h>

#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "knobs.h"
#include "lastgasp.h"
#include "shim.h"
#include "syncerr.h"

/* The file behind fd, as its slot says: an app descriptor or the shim's
 * private one of a closed file; NULL for anything else. */
static struct shim_file *slot_file(int fd)
{
	uint32_t st;
	struct shim_file *f = fd_peek(fd, &st);
	if (f)
		return f;
	if (fd_shim_owner(fd, &f) == OWN_FILE)
		return f;
	return NULL;
}

static uint8_t knobs_act(const struct shim_file *f, enum shim_call c)
{
	struct knobs k;
	knobs_of(f, &k);
	return k.act[c];
}

static bool still_names(int fd, const struct shim_file *f)
{
	dev_t dev;
	ino_t ino;
	return fd_identity(fd, &dev, &ino, NULL) == 0 && dev == f->dev && ino == f->ino;
}

bool lastgasp_barrier(void)
{
	int hi = atomic_load(&shim.fd_hi);
	int e = errno;
	/* First every sync (a later descriptor of the same file finds it
	 * no longer owed only if ours succeeded: flusher state is not
	 * updated here, so a file with two descriptors is synced twice). */
	for (int fd = 0; fd <= hi; fd++) {
		struct shim_file *f = slot_file(fd);
		/* A group request still owed is one the app never had an
		 * answer for (its caller is the one leaving): only syncs the app
		 * was told were made are the barrier's business. */
		if (!f || !flusher_owes(f) || !still_names(fd, f) ||
		    (knobs_act(f, CALL_FSYNC) == ACT_GROUP && !file_defers(f)))
			continue;
		/* The call the flusher would make (fsync only when the rule or
		 * a covered caller asked for it). */
		struct knobs k;
		knobs_of(f, &k);
		bool full = k.real_sync == REAL_SYNC_FSYNC ||
			    (k.real_sync == REAL_SYNC_AUTO && k.act[CALL_FSYNC] == ACT_GROUP &&
			     atomic_load(&f->fl.want_fsync));
		int r = full ? LIBC(fsync)(fd) : LIBC(fdatasync)(fd);
		if (r != 0 && errno != EBADF && errno != EINVAL && errno != EROFS)
			syncerr_record(f, errno);
	}
	/* Then every error nobody reported (once per error: syncerr's tell). */
	bool lost = false;
	for (int fd = 0; fd <= hi; fd++) {
		struct shim_file *f = slot_file(fd);
		if (!f || atomic_load(&f->err_seq) == atomic_load(&f->err_seen_seq))
			continue;
		lost = true;
		syncerr_tell_if_orphaned(f); /* shim.exiting is set: it says it */
	}
	errno = e;
	return lost || syncerr_any_dropped();
}
