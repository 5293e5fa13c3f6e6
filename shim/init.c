/*
 * init.c - loading: resolve libc, size the fd table, read the policy;
 * the fork handlers, which take every module's part in its order; exit().
 *
 * A bad configuration must never hurt the host: it gets exactly one line
 * on stderr and the shim runs as passthrough.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
#include "held.h"
#include "inline_trap.h"
#include "lifecycle.h"
#include "live.h"
#include "log.h"
#include "mmap_track.h"
#include "nextsync.h"
#include "position.h"
#include "order.h"
#include "paths.h"
#include "reload.h"
#include "risk.h"
#include "shim.h"
#include "shimfd.h"
#include "snapshot.h"

/* ---- the policy at load ---------------------------------------------------- */

/* The environment's overrides, as policy.c checks them. */
static struct policy_env env_overrides(bool with_policy)
{
	return (struct policy_env){
		.policy = with_policy ? getenv("SYNCSHIM_POLICY") : NULL,
		.log = getenv("SYNCSHIM_LOG"),
		.log_mode = getenv("SYNCSHIM_LOG_MODE"),
		.live = getenv("SYNCSHIM_LIVE"),
		.live_dir = getenv("SYNCSHIM_LIVE_DIR"),
		.inline_syscalls = getenv("SYNCSHIM_INLINE_SYSCALLS"),
	};
}

/* The one config reader (policy_load_file: never blocks, plain files
 * only) and the environment checked by the ini's rules. Anything bad:
 * -1 with one line in err, and *p the built-in defaults (passthrough). */
int shim_build_policy(const char *config, struct policy *p, char *err, size_t errlen)
{
	struct policy_env env = env_overrides(true);

	policy_init_defaults(p);
	if (config && *config && policy_load_file(config, p, err, errlen) < 0)
		return -1;
	if (policy_apply_env(p, &env, err, errlen) < 0) {
		policy_init_defaults(p);
		return -1;
	}
	return 0;
}

/* The log and live settings still apply when the rest was refused (a log
 * of the passthrough run is what the user asked for); a bad one was already
 * reported by shim_build_policy and is skipped here without a word. */
static void apply_log_env(struct policy *p)
{
	struct policy_env env = env_overrides(false);

	policy_apply_env(p, &env, NULL, 0);
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * The lock order around fork, for every lock a child could otherwise
 * inherit held: the allocator's first-use lock (no child inherits it half
 * initialised), mmap regions, then the registry, then the private
 * descriptors' (flusher.c: none is made or closed while the table is
 * copied; its holders take no other lock), then the private
 * allocator's own (taken last, by its prefork handler, called from here
 * rather than registered by it: alloc.c). Normal code takes regions before
 * registry and never holds either across an allocation, and the allocator
 * never calls into code that takes them, so whoever holds one of them can
 * always finish. Other locks (a file's flusher lock, the scheduler's, the
 * logger's) are not held across fork; the child re-initialises them and
 * rebuilds what they guard.
 *
 * A fork from inside the shim's own work (a signal handler's fork while
 * its thread held a shim lock) cannot take them: the child then stands the
 * shim aside altogether.
 */
static __thread bool atfork_skipped;

static void atfork_prepare(void)
{
	pos_forget_all(); /* and again in both after it (a descriptor opened meanwhile) */
	order_bytes_unseen(NULL); /* two processes may write one file from now on (order.c) */
	atfork_skipped = shim_bypass();
	if (atfork_skipped)
		return;
	/* The child does not share this process's memory: what is held goes
	 * to the kernel now, and nothing is held from now on (held.c). */
	held_stop();
	shim_threads_wait_started();
	alloc_atfork_lock_init();
	mmap_track_atfork_prepare();
	registry_atfork_prepare();
	flusher_atfork_prepare();
	shimfd_atfork_prepare();
	alloc_atfork_prepare();
}

static void atfork_parent(void)
{
	pos_forget_all(); /* the child shares every description */
	order_atfork_parent(); /* and the ordering domain */
	if (atfork_skipped)
		return;
	alloc_atfork_parent();
	shimfd_atfork_parent();
	flusher_atfork_parent();
	registry_atfork_parent();
	mmap_track_atfork_parent();
}

static void atfork_child(void)
{
	pos_forget_all();
	if (atfork_skipped) {
		atomic_store(&shim.ready, 0);
		return;
	}
	alloc_atfork_child();
	shimfd_atfork_child_begin(); /* before any handler below closes a descriptor */
	shim_threads_atfork_child();
	shim.pid = getpid();
	/* A parent's dup2 between its slot copy and its check has no thread
	 * here to finish it: its slot may be stale, so every binding is looked
	 * at once more instead (close_dup.c, dup_onto_done). */
	if (atomic_exchange(&shim.dups_onto, 0) != 0)
		fdtable_distrust_all();
	registry_atfork_child();
	mmap_track_atfork_child();
	policy_atfork_child();
	flusher_atfork_child();
	reload_atfork_child();
	log_atfork_child();
	live_atfork_child();
	crash_atfork_child();
	shimfd_atfork_child(); /* after the modules': what is still marked has no closer here */
	lifecycle_atfork_child();
	inline_trap_atfork_child();
}

/* ---- a file's parts ----------------------------------------------------------- */

/* The log's notice of a new file, as the registry holds it. */
static void *log_notice_new(const char *path, const char *rule_name)
{
	return log_file_notice_new(path, rule_name);
}

static void log_notice_post(void *notice, const struct shim_file *f)
{
	log_file_notice_post(notice, f);
}

static void log_notice_drop(void *notice)
{
	log_notice_free(notice);
}

/* Each part of a file hears of the file's life from the registry
 * (files.c) through this table, in this order. */
static const struct file_part file_parts[] = {
	{ .init = flusher_init_locks, .reset = flusher_reset, .released = flusher_release_file }, /* and workers', order's */
	{ .writes_uncounted = order_writes_uncounted, .starts_deferring = order_starts_deferring },
	{ .reset = held_reset, .released = held_release_file },
	{ .reset = risk_reset },
	{ .gone = log_file_gone,
	  .notice_new = log_notice_new,
	  .notice_post = log_notice_post,
	  .notice_free = log_notice_drop },
	{ .init = crash_file_init, .bind = crash_file_reset, .gone = crash_file_gone },
	{ .init = live_file_init, .reset = live_file_reset },
};

/* ---- the log's threads ---------------------------------------------------------- */

/* The thread that took a slot of the log's hears of its end. */
static void log_watch_thread_end(void)
{
	thread_end_watch(THREAD_END_LOG);
}

/* ---- the owners of the shim's descriptors ------------------------------------ */

static void log_lost(struct shim_file *f, int fd)
{
	(void)f;
	log_fd_lost(fd);
}

static void log_vacated(struct shim_file *f, int fd)
{
	(void)f;
	log_vacate(fd);
}

/* What shimfd.c tells each owner of a descriptor of the shim's. */
static const struct shimfd_owner fd_owners[SHIMFD_OWNERS] = {
	[OWN_LOG] = { .identity = log_identity, .lost = log_lost, .vacate = log_vacated, .release = log_release_fd },
	[OWN_FILE] = { .lost = flusher_priv_lost, .vacate = flusher_vacate, .release = flusher_release_privs },
	[OWN_CRASH] = { .identity = crash_identity, .lost = crash_fd_lost },
};

/* ---- load and exit ---------------------------------------------------------- */

/* Absolute (the app may chdir) but with symlinks kept: the reload watcher
 * follows them on every look. */
static const char *config_from_env(void)
{
	const char *config = getenv("SYNCSHIM_CONFIG");
	if (!config || !*config)
		return NULL;
	char abs[PATH_MAX];
	/* memcpy after the length check: the -O1 sanitizer build's
	 * -Wformat-truncation cannot see that check through snprintf */
	if (path_absolute(AT_FDCWD, config, abs, sizeof(abs)) == 0 &&
	    strlen(abs) < sizeof(shim.config_path))
		memcpy(shim.config_path, abs, strlen(abs) + 1);
	/* Too long a name is still read; only the reload watcher goes without. */
	return shim.config_path[0] ? shim.config_path : config;
}

_Atomic uint32_t shim_config_errors;
char shim_config_error[200];

void shim_config_refused(const char *msg)
{
	snprintf(shim_config_error, sizeof(shim_config_error), "%s", msg);
	atomic_fetch_add_explicit(&shim_config_errors, 1, memory_order_release);
}

struct policy *shim_boot_policy;
static struct policy boot_policy;
extern void *shim_real_vfork;

__attribute__((constructor)) static void shim_init(void)
{
	shim_enter();
	registry_set_parts(file_parts, (int)(sizeof(file_parts) / sizeof(file_parts[0])));
	shimfd_set_owners(fd_owners);
	log_set_thread_end_watch(log_watch_thread_end);
	shim.pid = getpid();
	shim_say_remember_stderr();
	libc_resolve_all();
	shim_real_vfork = (void *)LIBC(vfork);
	fdtable_init();
	order_init(); /* before any fork: children share it */
	shim_test_points_init();
	crash_start();
	nextsync_check();
	const char *config = config_from_env();
	reload_config_about_to_be_read();
	char err[POLICY_ERR_MAX];
	if (shim_build_policy(config, &boot_policy, err, sizeof(err)) < 0) {
		shim_say("%s; running as passthrough", err);
		shim_config_refused(err);
		/* Failing open is silent to whoever watches the live counters
		 * unless they are on: a refused ini turns them on (the ini may
		 * have asked for them; SYNCSHIM_LIVE=0 still turns them off). */
		boot_policy.live = boot_policy.live_set = true;
	}
	apply_log_env(&boot_policy);
	shim_boot_policy = &boot_policy;
	atomic_store_explicit(&shim.policy, &boot_policy, memory_order_release);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	lifecycle_init();
	log_start(&boot_policy);
	live_start(&boot_policy);
	inline_trap_start(&boot_policy);
	atomic_store_explicit(&shim.ready, 1, memory_order_release);
	shim_leave();
}

/* The status the process asked exit() for (a return from main is caught
 * by lifecycle.c's wrapper of main). */
SHIM_API void exit(int status)
{
	shim_exit_status = status;
	atomic_store(&shim_exit_begun, 1);
	LIBC(exit)(status);
	__builtin_unreachable();
}

/* After atexit handlers (their syncs are covered too), before the stdio
 * flush. With unreported_errors = exit and a sync error nobody reported,
 * a process that would have exited 0 leaves here with 74, its stdio
 * flushed first. */
__attribute__((destructor)) static void shim_fini(void)
{
	if (!atomic_load(&shim.ready) || shim_vfork_child())
		return;
	int status = shim_exit_sequence(shim_exit_status);
	if (status != shim_exit_status) {
		fflush(NULL);
		LIBC(_exit)(status);
	}
}

SHIM_API const char *syncshim_version(void)
{
	return "syncshim " SYNCSHIM_VERSION;
}

SHIM_API void syncshim_flush(void)
{
	if (!shim_bypass())
		flusher_flush_all();
}
