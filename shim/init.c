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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "alloc.h"
#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "flusher.h"
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
#include "shim.h"
#include "shimfd.h"
#include "snapshot.h"

/* ---- the shim's messages --------------------------------------------------- */

/*
 * Where a message goes. The user chose the process's stderr by what fd 2
 * was when it started; the app may later close it and get the number
 * again for a data file (a daemon started with 0-2 closed, or that
 * dup2s its own files onto them). A message written to fd 2 then would go
 * into the app's data. So fd 2's identity is taken at load, and each
 * message (a rare path: one fstat) goes to fd 2 only while fd 2 is still
 * that file; otherwise, or when fd 2 was closed at load, to syslog
 * (/dev/log, one datagram, user.warning, "syncshim[PID]: ..."), and
 * nowhere if there is none.
 */
static struct {
	bool open;
	dev_t dev;
	ino_t ino;
	mode_t type;
} stderr_at_load;

static void stderr_remember(void)
{
	struct stat st;
	if (LIBC(fstat)(2, &st) == 0)
		stderr_at_load = (typeof(stderr_at_load)){ true, st.st_dev, st.st_ino, st.st_mode & S_IFMT };
}

static bool stderr_is_still_ours(int fd)
{
	struct stat st;
	return stderr_at_load.open && fd >= 0 && LIBC(fstat)(fd, &st) == 0 && st.st_dev == stderr_at_load.dev &&
	       st.st_ino == stderr_at_load.ino && (st.st_mode & S_IFMT) == stderr_at_load.type;
}

struct syslog_msg {
	const char *text;
	size_t n;
	pid_t pid; /* ours: the child's getpid() is its own */
};

/* One datagram to the local syslog; its descriptor lives for the call
 * (libc's openlog/syslog keep state of their own the app may be using). */
static int say_to_syslog_here(void *arg)
{
	const struct syslog_msg *m = arg;
	int s = LIBC(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return 0;
	char msg[POLICY_ERR_MAX + 192];
	int len = snprintf(msg, sizeof(msg), "<%d>syncshim[%d]: %.*s", LOG_USER | LOG_WARNING, (int)m->pid,
			   (int)m->n, m->text);
	struct sockaddr_un a = { .sun_family = AF_UNIX, .sun_path = "/dev/log" };
	if (len > 0)
		sendto(s, msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL,
		       (struct sockaddr *)&a, sizeof(a));
	LIBC(close)(s);
	return 0;
}

/* The socket is made in a child with a table of its own, so it is never
 * on a number of the app's (here where that cannot be). */
static void say_to_syslog(const char *text, size_t n)
{
	struct syslog_msg m = { text, n, getpid() };
	int r;
	if (!shimfd_isolated(say_to_syslog_here, &m, &r)) {
		shimfd_nofork_begin(); /* its socket is on a number of the app's for the moment */
		say_to_syslog_here(&m);
		shimfd_nofork_end();
	}
}

/* Control characters (a newline in an environment value or a path could
 * forge a line of its own) are shown escaped: \n, \t, \xHH. */
static size_t escape_controls(const char *in, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c >= 0x20 && c != 0x7f) {
			out[o++] = (char)c;
		} else if (c == '\n' || c == '\t') {
			out[o++] = '\\';
			out[o++] = c == '\n' ? 'n' : 't';
		} else {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		}
	}
	return o;
}

void shim_say(const char *fmt, ...)
{
	int e = errno;
	char text[POLICY_ERR_MAX + 128], line[sizeof(text) + 16];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n >= (int)sizeof(text))
		n = (int)sizeof(text) - 1;
	char shown[sizeof(text)];
	size_t len = escape_controls(text, (size_t)n, shown, sizeof(shown));
	int err_fd = shimfd_stderr(); /* 2, or a copy of it in a thread with a table of its own */
	if (stderr_is_still_ours(err_fd)) {
		int m = snprintf(line, sizeof(line), "syncshim: %.*s\n", (int)len, shown);
		if (m > (int)sizeof(line) - 1)
			m = (int)sizeof(line) - 1;
		ssize_t w = LIBC(write)(err_fd, line, (size_t)m);
		(void)w;
	} else {
		say_to_syslog(shown, len);
	}
	shimfd_stderr_done(err_fd);
	errno = e;
}

/*
 * The shim's threads, joinable, so that set*id (shim/calls/setid.c) can
 * know when none is left: glibc's setuid family runs the call in every
 * thread and aborts the process when one thread's result differs from the
 * caller's, which it does for a thread of ours whenever the caller changed
 * its own credentials alone before (capset, PR_SET_KEEPCAPS: setpriv,
 * libcap-ng). A slot is free, running, or ended (the function returned;
 * joined by the next start or quiesce). A caller that joins its own thread
 * (the live publisher) keeps it out of the table.
 */
#define SHIM_THREADS_MAX 128
enum { SLOT_FREE, SLOT_RUNNING, SLOT_ENDED };
static struct {
	pthread_t id;
	void *(*fn)(void *);
	_Atomic int state;
} threads_tab[SHIM_THREADS_MAX];
static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic uint32_t shim_threads_quit;

/*
 * Threads of ours created and not yet running their function. A fork
 * waits for them (atfork_prepare, bounded): between pthread_create and
 * its function a new thread may be inside a sanitizer's thread start,
 * which allocates with the sanitizer's allocator; this machine's libasan
 * (gcc 12) was seen not to lock that allocator around fork, so the
 * child's first allocation (its own thread of ours, pthread_create's)
 * waited forever for a lock held by a thread it does not have (make asan:
 * test_shim concurrency/fork_child_follows_policy, 1 run in 9; the
 * child's live thread in ASan's calloc, the parent's created just before
 * the fork). Nothing else of a thread's start is ours to wait for.
 */
static _Atomic int threads_starting;

static void thread_running(void)
{
	atomic_fetch_sub(&threads_starting, 1);
}

static void threads_wait_started(void)
{
	for (int i = 0; i < 1000 && atomic_load(&threads_starting) > 0; i++) {
		struct timespec ts = { 0, 100 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* A joinable thread of ours (no table slot): arg is its function. */
static void *joinable_trampoline(void *arg)
{
	void *(*fn)(void *) = (void *(*)(void *))arg;
	thread_running();
	return fn(NULL);
}

static void *thread_trampoline(void *arg)
{
	int i = (int)(intptr_t)arg;
	thread_running();
	void *r = threads_tab[i].fn(NULL);
	atomic_store(&threads_tab[i].state, SLOT_ENDED); /* its last act: joining it now waits for nothing */
	return r;
}

/* threads_mu held: join the ones that ended (all, with every), free their slots. */
static void join_slots(bool every)
{
	for (int i = 0; i < SHIM_THREADS_MAX; i++) {
		int st = atomic_load(&threads_tab[i].state);
		if (st == SLOT_ENDED || (every && st == SLOT_RUNNING)) {
			pthread_join(threads_tab[i].id, NULL);
			atomic_store(&threads_tab[i].state, SLOT_FREE);
		}
	}
}

static int start_one(void *(*fn)(void *), pthread_attr_t *at, pthread_t *t)
{
	if (atomic_load(&shim_threads_quit))
		return -1; /* a set*id is waiting for our threads to be gone */
	pthread_mutex_lock(&threads_mu);
	join_slots(false);
	int slot = -1;
	for (int i = 0; i < SHIM_THREADS_MAX && slot < 0; i++)
		if (atomic_load(&threads_tab[i].state) == SLOT_FREE)
			slot = i;
	int r = -1;
	if (slot >= 0) {
		threads_tab[slot].fn = fn;
		threads_tab[slot].id = 0;
		atomic_store(&threads_tab[slot].state, SLOT_RUNNING);
		atomic_fetch_add(&threads_starting, 1);
		r = pthread_create(t, at, thread_trampoline, (void *)(intptr_t)slot) == 0 ? 0 : -1;
		if (r != 0)
			thread_running(); /* it never will */
		if (r == 0)
			threads_tab[slot].id = *t;
		else
			atomic_store(&threads_tab[slot].state, SLOT_FREE);
	}
	pthread_mutex_unlock(&threads_mu);
	return r;
}

int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name, pthread_t *joinable)
{
	int e = errno;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, stack);
	pthread_t t;
	/* Through the global pthread_create (a sanitizer's interceptor may be
	 * first) with shim_busy raised: lifecycle.c's wrapper then passes it
	 * straight to libc, uncounted (the shim's threads are not the app's). */
	shim_enter();
	int r;
	if (joinable) {
		r = -1;
		if (!atomic_load(&shim_threads_quit)) {
			atomic_fetch_add(&threads_starting, 1);
			r = pthread_create(&t, &at, joinable_trampoline, (void *)fn) == 0 ? 0 : -1;
			if (r != 0)
				thread_running();
		}
	} else
		r = start_one(fn, &at, &t);
	shim_leave();
	if (r == 0)
		pthread_setname_np(t, name);
	if (r == 0 && joinable)
		*joinable = t;
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return r;
}

void shim_join_threads(void)
{
	pthread_mutex_lock(&threads_mu);
	join_slots(true);
	pthread_mutex_unlock(&threads_mu);
}

/* A parent's joinable thread, in a fork child where it does not exist.
 * glibc has already reclaimed its stack, so nothing is to be done, except
 * under TSan: its registry keeps a joinable thread's id after the fork,
 * and the child's next thread, given the same cached stack and so the
 * same pthread_t, would abort it ("dup thread with used id"). Detaching
 * it there lets TSan drop the id (glibc only marks the descriptor). */
void shim_thread_gone_in_child(pthread_t t)
{
#ifdef SYNCSHIM_TSAN
	if (t) /* 0: the fork came between a slot's taking and its thread's start */
		pthread_detach(t);
#else
	(void)t;
#endif
}

static void threads_atfork_child(void)
{
	pthread_mutex_init(&threads_mu, NULL);
	atomic_store(&threads_starting, 0); /* none of the parent's starts goes on here */
	for (int i = 0; i < SHIM_THREADS_MAX; i++) {
		if (atomic_load(&threads_tab[i].state) != SLOT_FREE)
			shim_thread_gone_in_child(threads_tab[i].id);
		atomic_store(&threads_tab[i].state, SLOT_FREE); /* the parent's threads are not in the child */
		threads_tab[i].id = 0;
	}
	atomic_store(&shim_threads_quit, 0);
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

/* ---- test points ------------------------------------------------------- */

/* SYNCSHIM_TEST_SIGNAL_AT=all or a comma-separated list of point names
 * (alloc, registry, regions, fl_mu, lead, log_queue, policy, write, order,
 * domain):
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

/* SYNCSHIM_TEST_HOLD_AT: one point, or a comma-separated chain of up to
 * HOLD_POINTS. The first holds the first thread to reach it; each later
 * one holds that same thread again, once, when it gets there (a race
 * needs one thread stopped at two steps while others run). Hold k waits
 * on SYNCSHIM_TEST_HOLD_FILE (k = 0) or SYNCSHIM_TEST_HOLD_FILE.k. */
#define HOLD_POINTS 4
int shim_test_holds;
static char hold_at[HOLD_POINTS][40], hold_file[256];
static int hold_points;
static __thread int hold_next; /* the chain's next point for this thread; 0: the first, if nobody took it */

void shim_test_hold_hit(const char *where)
{
	static _Atomic int held;
	int k = hold_next;
	if (k >= hold_points || strcmp(where, hold_at[k]) != 0 || (k == 0 && atomic_exchange(&held, 1)))
		return;
	hold_next = k + 1;
	int e = errno;
	char wait_for[sizeof(hold_file) + 16], reached[sizeof(wait_for) + 16];
	if (k == 0)
		snprintf(wait_for, sizeof(wait_for), "%s", hold_file);
	else
		snprintf(wait_for, sizeof(wait_for), "%s.%d", hold_file, k);
	snprintf(reached, sizeof(reached), "%s.reached", wait_for);
	syscall(SYS_mkdirat, AT_FDCWD, reached, 0700); /* no descriptor: the point may be a fork's business */
	for (int i = 0; i < 10000 && syscall(SYS_faccessat, AT_FDCWD, wait_for, F_OK, 0) != 0; i++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	snprintf(reached, sizeof(reached), "%s.left", wait_for);
	syscall(SYS_mkdirat, AT_FDCWD, reached, 0700); /* the point is passed: a test can wait for what follows */
	errno = e;
}

static void test_holds_init(void)
{
	const char *hat = getenv("SYNCSHIM_TEST_HOLD_AT"), *hfile = getenv("SYNCSHIM_TEST_HOLD_FILE");
	if (!hat || !*hat || !hfile || !*hfile || strlen(hfile) >= sizeof(hold_file))
		return;
	int n = 0;
	for (const char *p = hat; *p && n < HOLD_POINTS;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(hold_at[0]))
			return; /* a malformed chain holds nowhere */
		memcpy(hold_at[n], p, len);
		hold_at[n++][len] = '\0';
		p += len + (p[len] == ',');
	}
	memcpy(hold_file, hfile, strlen(hfile) + 1);
	hold_points = n;
	shim_test_holds = 1;
}

static void test_points_init(void)
{
	test_holds_init();
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

void shim_test_report(const char *var, const char *fmt, ...)
{
	const char *path = getenv(var);
	if (!path || !*path)
		return;
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (n > 0)
		(void)!syscall(SYS_write, fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	syscall(SYS_close, fd);
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
	threads_wait_started();
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
	threads_atfork_child();
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
	shim.pid = getpid();
	stderr_remember();
	libc_resolve_all();
	shim_real_vfork = (void *)LIBC(vfork);
	fdtable_init();
	order_init(); /* before any fork: children share it */
	test_points_init();
	crash_start();
	nextsync_check();
	const char *config = config_from_env();
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
