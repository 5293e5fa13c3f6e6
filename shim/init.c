/*
 * init.c - loading: resolve libc, size the fd table, read the policy.
 *
 * A bad configuration must never hurt the host: it gets exactly one line
 * on stderr and the shim runs as passthrough.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "crash.h"
#include "flusher.h"
#include "live.h"
#include "log.h"
#include "reload.h"
#include "shim.h"

void shim_say(const char *fmt, ...)
{
	char line[POLICY_ERR_MAX + 128];
	int n = snprintf(line, sizeof(line), "syncshim: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	int e = errno;
	ssize_t w = LIBC(write)(2, line, (size_t)n);
	(void)w;
	errno = e;
}

int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name)
{
	int e = errno;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, stack);
	pthread_t t;
	int r = pthread_create(&t, &at, fn, NULL) == 0 ? 0 : -1;
	if (r == 0)
		pthread_setname_np(t, name);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

/* The environment's overrides, as policy.c checks them. */
static struct policy_env env_overrides(bool with_policy)
{
	return (struct policy_env){
		.policy = with_policy ? getenv("SYNCSHIM_POLICY") : NULL,
		.log = getenv("SYNCSHIM_LOG"),
		.log_mode = getenv("SYNCSHIM_LOG_MODE"),
		.live = getenv("SYNCSHIM_LIVE"),
		.live_dir = getenv("SYNCSHIM_LIVE_DIR"),
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

/* ---- test points ------------------------------------------------------- */

/* SYNCSHIM_TEST_SIGNAL_AT=all or a comma-separated list of point names
 * (alloc, registry, regions, fl_mu, lead, log_queue, policy, write):
 * the calling thread sends itself SYNCSHIM_TEST_SIGNAL (default SIGUSR1)
 * there, so a test's handler runs exactly inside that critical section.
 * At most SYNCSHIM_TEST_SIGNAL_MAX (default 200) signals per thread: a
 * handler whose own calls pass a point would otherwise re-arm itself
 * forever. */
int shim_test_points;
static char test_points[256];
static int test_signal = SIGUSR1;
static int test_budget = 200;
static __thread int test_sent;

static void test_points_init(void)
{
	const char *at = getenv("SYNCSHIM_TEST_SIGNAL_AT");
	if (!at || !*at)
		return;
	snprintf(test_points, sizeof(test_points), ",%s,", at);
	const char *sig = getenv("SYNCSHIM_TEST_SIGNAL");
	if (sig && atoi(sig) > 0)
		test_signal = atoi(sig);
	const char *max = getenv("SYNCSHIM_TEST_SIGNAL_MAX");
	if (max && atoi(max) > 0)
		test_budget = atoi(max);
	shim_test_points = 1;
}

void shim_test_point_hit(const char *where)
{
	char key[40];
	snprintf(key, sizeof(key), ",%s,", where);
	if (!atomic_load(&shim.ready) || test_sent >= test_budget ||
	    (!strstr(test_points, ",all,") && !strstr(test_points, key)))
		return; /* the app can have no handler before it runs */
	test_sent++;
	int e = errno;
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), test_signal);
	errno = e;
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * The lock order around fork, for every lock a child could otherwise
 * inherit held: the allocator's first-use lock (no child inherits it half
 * initialised), mmap regions, then the registry, then the private
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
	atfork_skipped = shim_bypass();
	if (atfork_skipped)
		return;
	alloc_atfork_lock_init();
	mmap_track_atfork_prepare();
	registry_atfork_prepare();
	alloc_atfork_prepare();
}

static void atfork_parent(void)
{
	if (atfork_skipped)
		return;
	alloc_atfork_parent();
	registry_atfork_parent();
	mmap_track_atfork_parent();
}

static void atfork_child(void)
{
	if (atfork_skipped) {
		atomic_store(&shim.ready, 0);
		return;
	}
	alloc_atfork_child();
	shim.pid = getpid();
	registry_atfork_child();
	mmap_track_atfork_child();
	policy_atfork_child();
	flusher_atfork_child();
	reload_atfork_child();
	log_atfork_child();
	live_atfork_child();
	crash_atfork_child();
}

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

struct policy *shim_boot_policy;
static struct policy boot_policy;
extern void *shim_real_vfork;

__attribute__((constructor)) static void shim_init(void)
{
	shim_enter();
	shim.pid = getpid();
	libc_resolve_all();
	shim_real_vfork = (void *)LIBC(vfork);
	fdtable_init();
	test_points_init();
	crash_start();
	const char *config = config_from_env();
	char err[POLICY_ERR_MAX];
	if (shim_build_policy(config, &boot_policy, err, sizeof(err)) < 0)
		shim_say("%s; running as passthrough", err);
	apply_log_env(&boot_policy);
	shim_boot_policy = &boot_policy;
	atomic_store_explicit(&shim.policy, &boot_policy, memory_order_release);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	log_start(&boot_policy);
	live_start(&boot_policy);
	atomic_store_explicit(&shim.ready, 1, memory_order_release);
	shim_leave();
}

/* The status the process asked exit() for; a return from main reaches
 * exit inside libc, unseen, and counts as 0. */
static int exit_status;

SHIM_API void exit(int status)
{
	exit_status = status;
	LIBC(exit)(status);
	__builtin_unreachable();
}

/* After atexit handlers (their syncs are covered too), before the stdio
 * flush. With unreported_errors = exit and a sync error nobody reported,
 * the process leaves here with 74, its stdio flushed first. */
__attribute__((destructor)) static void shim_fini(void)
{
	if (shim_bypass())
		return;
	atomic_store(&shim.exiting, 1);
	flusher_flush_all();
	bool lost = syncerr_tell_all_unreported();
	log_stop(exit_status);
	live_stop();
	unsigned ticket;
	bool strict = policy_enter(&ticket)->unreported_errors == UNREPORTED_EXIT;
	policy_leave(ticket);
	if (lost && strict && exit_status == 0) {
		fflush(NULL);
		LIBC(_exit)(74);
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
