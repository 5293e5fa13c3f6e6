/*
 * reload.c - apply edits to the ini file to a running process.
 *
 * A watcher thread stats the file four times a second (so a change lands
 * within a second) and, when it changed, builds a new snapshot beside the
 * live one and publishes it (snapshot.c frees the old one once no reader
 * can see it). Files are matched against it again and pending deferred
 * syncs are completed, so a file that leaves defer owes nothing. A broken
 * edit keeps the old policy and says why, once per edit.
 *
 * The path is watched as the user named it, made absolute but with its
 * symlinks unresolved, and stat() follows them on every look: a config
 * reached through a symlink that is swapped (a Kubernetes ConfigMap's
 * ..data) is seen as changed at each swap.
 */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "alloc.h"
#include "files.h"
#include "flusher.h"
#include "log.h"
#include "logfmt.h"
#include "reload.h"
#include "shim.h"
#include "shimfd.h"
#include "snapshot.h"
#include "workers.h"

#define POLL_NS 250000000L

static _Atomic int watcher_started;
static bool stamp_known; /* the watcher's last look, kept across a restart after set*id */

struct file_stamp {
	bool exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

static struct file_stamp stamp_of(const char *path)
{
	struct stat st;
	struct file_stamp s = { 0 };
	if (LIBC(stat)(path, &st) == 0)
		s = (struct file_stamp){ true, st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim };
	return s;
}

/* The watcher's last look (stamp_known), kept across a restart after
 * set*id: an edit in between is still seen. */
static struct file_stamp last;

void reload_config_about_to_be_read(void)
{
	/* Taken before the load reads the file: an edit made after it, even
	 * before the watcher's thread first runs, differs from this stamp
	 * (taken when the thread started, such an edit was never applied). */
	if (shim.config_path[0]) {
		last = stamp_of(shim.config_path);
		stamp_known = true;
	}
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool same_stamp(const struct file_stamp *a, const struct file_stamp *b)
{
	return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       same_time(a->mtime, b->mtime) && same_time(a->ctime, b->ctime);
}

struct build {
	const char *path;
	struct policy *next;
	char *err;
	size_t errlen;
};

static int build_here(void *arg)
{
	struct build *b = arg;
	return shim_build_policy(b->path, b->next, b->err, b->errlen);
}

static bool defers(struct shim_file *f)
{
	return file_defers(f);
}

/* The watcher thread is the only publisher, so it may read the live
 * snapshot without a reader section. The ini is read in a child with a
 * descriptor table of its own (the watcher shares the app's: it completes
 * pending syncs through the app's descriptors), so its descriptor is never
 * on a number of the app's. */
static void apply(const char *path)
{
	const struct policy *live = atomic_load(&shim.policy);
	struct policy *next = shim_alloc(sizeof(*next));
	if (!next)
		return;
	char err[POLICY_ERR_MAX];
	struct build b = { path, next, err, sizeof(err) };
	int built;
	if (!shimfd_isolated(build_here, &b, &built))
		built = build_here(&b);
	if (built < 0) {
		shim_say("%s; keeping the previous policy", err);
		shim_config_refused(err);
		log_event(LOGEV_CONFIG_ERROR, NULL, 0, "reload of %s failed, previous policy kept: %s", path, err);
		shim_free(next);
		return;
	}
	/* The log stays where it is for the life of the process. */
	memcpy(next->log_path, live->log_path, sizeof(next->log_path));
	next->log_mode = live->log_mode;
	policy_publish(next);
	registry_rematch(next);
	/* An open file the new rules defer hands its syncs, and its
	 * synchronous writes, to a flusher thread: started here, as an open
	 * under such a rule starts it, because the write path starts none
	 * (flusher_after_write) and a synchronous write with none running
	 * makes its sync on the spot (oracle case daemon:6878301). */
	struct shim_file *one = NULL;
	uint64_t cursor = 0;
	if (registry_collect(&one, 1, defers, &cursor) > 0) {
		workers_ensure(false);
		file_put(one);
	}
	flusher_flush_all();
	log_policy_changed(next);
	log_event(LOGEV_RELOAD, NULL, 0, "policy reloaded from %s: default %s, %d rule(s)", path,
		  sync_policy_name(next->deflt.sync), next->nrules);
}

static void *watcher_main(void *arg)
{
	(void)arg;
	shim_busy = 1;
	const char *path = shim.config_path;
	TEST_HOLD("reload_watcher_starts"); /* test_order_reload: an edit before the first look */
	if (!stamp_known) /* a fork child's first watcher */
		last = stamp_of(path);
	stamp_known = true;
	while (!atomic_load(&shim_threads_quit)) {
		/* set*id wakes it (setid.c) */
		struct timespec ts = { 0, POLL_NS };
		syscall(SYS_futex, &shim_threads_quit, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (atomic_load(&shim_threads_quit))
			break;
		struct file_stamp now = stamp_of(path);
		if (same_stamp(&now, &last))
			continue;
		last = now;
		if (now.exists)
			apply(path);
	}
	return NULL;
}

void reload_maybe_start(void)
{
	if (atomic_load_explicit(&watcher_started, memory_order_relaxed) || !shim.config_path[0])
		return;
	unsigned ticket;
	bool wanted = policy_enter(&ticket)->reload;
	policy_leave(ticket);
	if (!wanted || atomic_exchange(&watcher_started, 1))
		return;
	if (shim_start_thread(watcher_main, 64 * 1024, "syncshim-watch", NULL) < 0)
		atomic_store(&watcher_started, 0);
}

void reload_atfork_child(void)
{
	atomic_store(&watcher_started, 0);
	stamp_known = false;
}

void reload_thread_quiesced(void)
{
	atomic_store(&watcher_started, 0);
}
