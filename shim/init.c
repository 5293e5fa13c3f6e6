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
#include <unistd.h>

#include "flusher.h"
#include "log.h"
#include "reload.h"
#include "shim.h"

#define CONFIG_MAX_BYTES (1 << 20)

static struct policy boot_policy;

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
	ssize_t w = REAL(write)(2, line, (size_t)n);
	(void)w;
	errno = e;
}

/* Read the whole ini file with the real calls; NUL-terminated, private
 * allocation. */
static char *read_config(const char *path, char *err, size_t errlen)
{
	int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = shim_alloc(CONFIG_MAX_BYTES + 1);
	size_t n = 0;
	ssize_t r = 0;
	while (buf && n < CONFIG_MAX_BYTES &&
	       (r = read(fd, buf + n, CONFIG_MAX_BYTES - n)) > 0)
		n += (size_t)r;
	int e = errno;
	REAL(close)(fd);
	if (!buf || r < 0) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(buf ? e : ENOMEM));
		shim_free(buf);
		return NULL;
	}
	if (n == CONFIG_MAX_BYTES) {
		snprintf(err, errlen, "%s: file larger than %d bytes; is this the right file?",
			 path, CONFIG_MAX_BYTES);
		shim_free(buf);
		return NULL;
	}
	return buf;
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

int shim_build_policy(const char *config, struct policy *p, char *err, size_t errlen)
{
	policy_init_defaults(p);
	if (config && *config) {
		char *text = read_config(config, err, errlen);
		if (!text)
			return -1;
		int r = policy_load_string(text, config, p, err, errlen);
		shim_free(text);
		if (r < 0)
			return -1;
	}
	const char *pol = getenv("SYNCSHIM_POLICY");
	if (pol && *pol) {
		int s = sync_policy_parse(pol);
		if (s < 0) {
			snprintf(err, errlen,
				 "SYNCSHIM_POLICY=%s: unknown policy; use passthrough, fdatasync, noop, defer or group",
				 pol);
			policy_init_defaults(p);
			return -1;
		}
		p->deflt.sync = (enum sync_policy)s;
	}
	return 0;
}

static void apply_log_env(struct policy *p)
{
	const char *log = getenv("SYNCSHIM_LOG");
	if (log && *log) {
		snprintf(p->log_path, sizeof(p->log_path), "%s", log);
		if (p->log_mode == LOG_OFF)
			p->log_mode = LOG_SUMMARY;
	}
	const char *mode = getenv("SYNCSHIM_LOG_MODE");
	int m = mode && *mode ? log_mode_parse(mode) : -1;
	if (m >= 0)
		p->log_mode = (enum log_mode)m;
}

static int atfork_skipped;

static void atfork_prepare(void)
{
	atfork_skipped = shim_busy; /* fork from inside our own critical section */
	if (atfork_skipped)
		return;
	log_atfork_prepare();
	mmap_track_lock();
	registry_lock();
}

static void atfork_parent(void)
{
	if (atfork_skipped)
		return;
	registry_unlock();
	mmap_track_unlock();
	log_atfork_parent();
}

static void atfork_child(void)
{
	if (atfork_skipped)
		return;
	shim.pid = getpid();
	registry_atfork_child();
	mmap_track_atfork_child();
	flusher_atfork_child();
	reload_atfork_child();
	log_atfork_child();
}

__attribute__((constructor)) static void shim_init(void)
{
	shim_busy++;
	shim.pid = getpid();
	real_resolve_all();
	fdtable_init();
	const char *config = getenv("SYNCSHIM_CONFIG");
	/* Absolute, so the reload watcher still finds it after the app chdirs. */
	char abs[PATH_MAX];
	if (config && *config && realpath(config, abs) && strlen(abs) < sizeof(shim.config_path))
		config = abs;
	/* Too long a name is still read below; only the reload watcher, which
	 * needs it stored, goes without. */
	if (config && snprintf(shim.config_path, sizeof(shim.config_path), "%s", config) >=
			      (int)sizeof(shim.config_path))
		shim.config_path[0] = '\0';
	char err[POLICY_ERR_MAX];
	if (shim_build_policy(config, &boot_policy, err, sizeof(err)) < 0)
		shim_say("%s; running as passthrough", err);
	apply_log_env(&boot_policy);
	shim.boot_policy = &boot_policy;
	atomic_store_explicit(&shim.policy, &boot_policy, memory_order_release);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	log_start(&boot_policy);
	atomic_store_explicit(&shim.ready, 1, memory_order_release);
	shim_busy--;
}

__attribute__((destructor)) static void shim_fini(void)
{
	/* Destructors that run after this one may still sync: from here on
	 * nobody would flush a deferred request, so none is deferred. */
	atomic_store(&shim.exiting, 1);
	flusher_flush_all();
	log_stop();
}

SHIM_API const char *syncshim_version(void)
{
	return "syncshim 0.1";
}

SHIM_API void syncshim_flush(void)
{
	flusher_flush_all();
}
