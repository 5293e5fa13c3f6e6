/*
 * alloc.c - the shim's private allocator.
 *
 * The shim lives inside someone else's process and must never replace or
 * perturb its malloc. It links a private copy of jemalloc
 * (libjemalloc_pic.a) whose symbols --exclude-libs and the version script
 * keep hidden, and calls it only through jemalloc's own mallocx/dallocx
 * names so no call here can be confused with the host's malloc/free.
 * Rule: memory from libc (strdup, getline, ...) is never freed here, and
 * memory from here is never handed to libc to free.
 *
 * The copy is also deaf to the host: the Makefile renames some of its
 * references (objcopy --redefine-sym) to the functions below, so it never
 * reads the host's MALLOC_CONF or /etc/malloc.conf (a host tuning or
 * breaking its own jemalloc must see no difference in ours), and it never
 * registers fork handlers of its own: init.c calls them, after taking the
 * shim's locks, so the order of every lock around fork is ours to define.
 *
 * Nor does it start with every host: its constructor is dropped (its
 * .init_array section), so it initialises at the shim's first allocation,
 * and a process that never tracks a file never pays for it. That first
 * allocation holds init_mu, which fork's prepare handler takes first of
 * all: a child never inherits jemalloc half initialised (its init lock
 * held, its fork handlers not yet known).
 *
 * An allocation runs with shim_busy raised: jemalloc's own mmap, open and
 * read reach the shim's interposers, which then pass straight through, and
 * a signal handler interrupting it never re-enters jemalloc through us.
 *
 * The ThreadSanitizer build (SYNCSHIM_TSAN) uses libc's allocator instead:
 * TSan cannot see jemalloc's internal synchronisation and would report
 * every recycled block as a race.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "shim.h"

#ifdef SYNCSHIM_TSAN
void *shim_alloc(size_t n)
{
	shim_enter();
	void *p = calloc(1, n ? n : 1);
	shim_leave();
	return p;
}

void *shim_alloc_bytes(size_t n, size_t align)
{
	shim_enter();
	void *p = NULL;
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n ? n : 1) != 0)
		p = NULL;
	shim_leave();
	return p;
}

void shim_free(void *p)
{
	shim_enter();
	free(p);
	shim_leave();
}

void alloc_atfork_lock_init(void) {}
void alloc_atfork_prepare(void) {}
void alloc_atfork_parent(void) {}
void alloc_atfork_child(void) {}
#else
void *mallocx(size_t size, int flags);
void dallocx(void *ptr, int flags);
#define MALLOCX_ZERO_FLAG 0x40 /* jemalloc's MALLOCX_ZERO */

/* One arena and no thread caches: the shim allocates a few small objects
 * per file, and should cost the host as little memory as it can. */
__attribute__((used)) const char *malloc_conf = "narenas:1,tcache:false";

static void (*je_prepare)(void), (*je_parent)(void), (*je_child)(void);
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int initialised;

static void init_once(void)
{
	pthread_mutex_lock(&init_mu);
	if (!atomic_load(&initialised)) {
		dallocx(mallocx(1, 0), 0); /* jemalloc initialises here */
		atomic_store_explicit(&initialised, 1, memory_order_release);
	}
	pthread_mutex_unlock(&init_mu);
}

/* jemalloc's pthread_atfork, renamed: remember, do not register. */
int syncshim_je_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
int syncshim_je_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
	je_prepare = prepare;
	je_parent = parent;
	je_child = child;
	return 0;
}

/* jemalloc's secure_getenv and readlink, renamed: MALLOC_CONF and the
 * /etc/malloc.conf symlink are the host's settings, not ours. */
char *syncshim_je_secure_getenv(const char *name);
char *syncshim_je_secure_getenv(const char *name)
{
	(void)name;
	return NULL;
}

ssize_t syncshim_je_readlink(const char *path, char *buf, size_t len);
ssize_t syncshim_je_readlink(const char *path, char *buf, size_t len)
{
	(void)path, (void)buf, (void)len;
	errno = ENOENT;
	return -1;
}

/* jemalloc's profiler wants libm (log, exp, round) and the unwinder: profiling
 * is never on in this copy (its settings are ours alone, above), so inert
 * stand-ins keep libm and libgcc_s out of every host the shim loads into. */
double syncshim_je_log(double x);
double syncshim_je_log(double x)
{
	return x;
}

double syncshim_je_exp(double x);
double syncshim_je_exp(double x)
{
	return x;
}

double syncshim_je_round(double x);
double syncshim_je_round(double x)
{
	return x;
}

int syncshim_je_unwind_backtrace(void *fn, void *arg);
int syncshim_je_unwind_backtrace(void *fn, void *arg)
{
	(void)fn, (void)arg;
	return 5; /* _URC_END_OF_STACK: no frames */
}

unsigned long syncshim_je_unwind_getip(void *ctx);
unsigned long syncshim_je_unwind_getip(void *ctx)
{
	(void)ctx;
	return 0;
}

void alloc_atfork_lock_init(void)
{
	pthread_mutex_lock(&init_mu);
}

void alloc_atfork_prepare(void)
{
	if (je_prepare)
		je_prepare();
}

void alloc_atfork_parent(void)
{
	if (je_parent)
		je_parent();
	pthread_mutex_unlock(&init_mu);
}

void alloc_atfork_child(void)
{
	if (je_child)
		je_child();
	pthread_mutex_init(&init_mu, NULL);
}

void *shim_alloc(size_t n)
{
	shim_enter();
	TEST_POINT("alloc");
	if (unlikely(!atomic_load_explicit(&initialised, memory_order_acquire)))
		init_once();
	void *p = mallocx(n ? n : 1, MALLOCX_ZERO_FLAG);
	shim_leave();
	return p;
}

void *shim_alloc_bytes(size_t n, size_t align)
{
	shim_enter();
	if (unlikely(!atomic_load_explicit(&initialised, memory_order_acquire)))
		init_once();
	int lg = 0;
	while (((size_t)1 << lg) < align)
		lg++;
	void *p = mallocx(n ? n : 1, lg); /* jemalloc's MALLOCX_LG_ALIGN(lg) is lg itself */
	shim_leave();
	return p;
}

void shim_free(void *p)
{
	if (!p)
		return;
	shim_enter();
	dallocx(p, 0);
	shim_leave();
}
#endif

char *shim_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = shim_alloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}
