/*
 * stand_ins.h - the shim's lower layers, as small as a unit suite that
 * compiles a shim module in (test_order_rules.c: order.c;
 * test_flusher_schedule.c: flusher.c and workers.c) needs them.
 *
 * The module under test is the real source, included whole by the suite
 * (so its static decisions are reachable without a line changed in it);
 * what it calls below it is here: the process-wide state, the guard, the
 * test points, libc's functions (LIBC), file references and the
 * registry (over the suite's own files), the shim's descriptors as plain
 * ones, and no-ops for the observers (log, live counters, crash-test
 * mode). Each suite defines the stand-ins of its neighbours in defer/
 * itself. Include once per suite, after the module.
 */
#ifndef SYNCSHIM_TEST_STAND_INS_H
#define SYNCSHIM_TEST_STAND_INS_H

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calls.h"
#include "crash.h"
#include "fdtable.h"
#include "files.h"
#include "live.h"
#include "log.h"
#include "owntable.h"
#include "paths.h"
#include "shim.h"
#include "shimfd.h"
#include "snapshot.h"
#include "syncerr.h"
#include "trace.h"

/* ---- core: the process, the guard, messages, test points, libc ------------ */

struct shim_state shim;
__thread int shim_busy;
_Atomic uint32_t shim_threads_quit;
int shim_test_points, shim_test_holds;
_Atomic int trace_on;
int trace_use_tsc;

/* What the module said (shim_say), the latest line. */
static char stand_in_said[512];
static int stand_in_says;

void shim_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(stand_in_said, sizeof(stand_in_said), fmt, ap);
	va_end(ap);
	stand_in_says++;
}

bool shim_vfork_child(void)
{
	return false;
}

void shim_test_point_hit(const char *where)
{
	(void)where;
}

void shim_test_hold_hit(const char *where)
{
	(void)where;
}

void shim_test_report(const char *var, const char *fmt, ...)
{
	(void)var, (void)fmt;
}

/* LIBC(name): libc's own (the suite links no wrapper, so the default
 * lookup finds libc's); a suite may put its own in libc_table first (a
 * counting fdatasync). */
_Atomic(void *) libc_table[LIBC_COUNT];

void *libc_resolve(enum libc_id id)
{
	static const char *const names[LIBC_COUNT] = {
#define STAND_IN_NAME(ret, name, params, fb) [LIBC_ID_##name] = #name,
		SHIM_CALLS(STAND_IN_NAME)
#undef STAND_IN_NAME
	};
	void *p = dlsym(RTLD_DEFAULT, names[id]);
	atomic_store(&libc_table[id], p);
	return p;
}

/* ---- state: files and the registry (the suite's files) -------------------- */

#define STAND_IN_FILES 256
static struct shim_file *stand_in_registry[STAND_IN_FILES];
static int stand_in_nfiles;

bool file_tryref(struct shim_file *f)
{
	uint32_t r = atomic_load(&f->refs);
	while (r && !atomic_compare_exchange_weak(&f->refs, &r, r + 1))
		;
	return r != 0;
}

void file_put(struct shim_file *f)
{
	atomic_fetch_sub(&f->refs, 1);
}

struct shim_file *file_find(dev_t dev, ino_t ino, uint64_t birth)
{
	(void)birth;
	for (int i = 0; i < stand_in_nfiles; i++)
		if (stand_in_registry[i]->dev == dev && stand_in_registry[i]->ino == ino && file_tryref(stand_in_registry[i]))
			return stand_in_registry[i];
	return NULL;
}

void registry_each(void (*fn)(struct shim_file *, void *), void *arg)
{
	for (int i = 0; i < stand_in_nfiles; i++)
		fn(stand_in_registry[i], arg);
}

int registry_collect(struct shim_file **out, int max, bool (*want)(struct shim_file *), uint64_t *cursor)
{
	int n = 0;
	uint64_t i = *cursor;
	for (; i < (uint64_t)stand_in_nfiles && n < max; i++)
		if (want(stand_in_registry[i]) && file_tryref(stand_in_registry[i]))
			out[n++] = stand_in_registry[i];
	*cursor = i < (uint64_t)stand_in_nfiles ? i : 0;
	return n;
}

void file_parts_writes_uncounted(struct shim_file *f)
{
	(void)f;
}

void file_parts_starts_deferring(struct shim_file *f)
{
	(void)f; /* a new file: its parts are reset after its knobs are set (files.c) */
}

/* The live snapshot: built-in defaults but the flusher threads' cap. */
const struct policy *policy_enter(unsigned *ticket)
{
	static struct policy p;
	static bool made;
	if (!made) {
		policy_init_defaults(&p);
		made = true;
	}
	*ticket = 0;
	return &p;
}

void policy_leave(unsigned ticket)
{
	(void)ticket;
}

/* ---- state: descriptors (the app's and the shim's, as plain ones) --------- */

int fd_identity(int fd, dev_t *dev, ino_t *ino, mode_t *mode)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	if (mode)
		*mode = st.st_mode;
	return 0;
}

bool fd_names(int fd, const struct shim_file *f, bool allow_closing)
{
	(void)allow_closing;
	dev_t dev;
	ino_t ino;
	return fd >= 0 && fd_identity(fd, &dev, &ino, NULL) == 0 && dev == f->dev && ino == f->ino;
}

bool fd_vouched(int fd, const struct shim_file *f)
{
	(void)fd, (void)f;
	return false; /* every borrowed descriptor is checked (is_file) */
}

int fd_find_bound(const struct shim_file *f)
{
	(void)f;
	return -1;
}

void fd_mark_closing(int fd)
{
	(void)fd;
}

void fd_unmark_shim(int fd)
{
	(void)fd;
}

void fd_note_kernel_owes(const struct shim_file *f, int failed_fd)
{
	(void)f, (void)failed_fd;
}

bool fd_take_kernel_owes(int fd)
{
	(void)fd;
	return false;
}

void fd_inherit_kernel_owes(int from, int to)
{
	(void)from, (void)to;
}

int shimfd_open(const char *path, int flags, enum shim_fd_owner owner)
{
	(void)owner;
	return open(path, flags | O_CLOEXEC);
}

/* shimfd.c: the file on fd opened again (flusher.c's reopen_writable). */
int shimfd_reopen(int fd, int flags, enum shim_fd_owner owner)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/thread-self/fd/%d", fd);
	return shimfd_open(p, flags, owner);
}

void shimfd_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int shimfd_dup(int fd, enum shim_fd_owner owner, struct shim_file *f)
{
	(void)owner, (void)f;
	return fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

void shimfd_lost(int fd)
{
	(void)fd;
}

bool shimfd_isolated(int (*fn)(void *), void *arg, int *result)
{
	(void)fn, (void)arg, (void)result;
	return false; /* the caller does the work itself */
}

/* ---- state: sync errors (counted; the suites make none) ------------------- */

static int stand_in_errors_recorded;

void syncerr_record(struct shim_file *f, int err)
{
	(void)f, (void)err;
	stand_in_errors_recorded++;
}

void syncerr_tell_if_orphaned(struct shim_file *f)
{
	(void)f;
}

void syncerr_last_descriptor(struct shim_file *f, int fd)
{
	(void)f, (void)fd;
}

int syncerr_take(struct shim_file *f, int fd)
{
	(void)f, (void)fd;
	return 0;
}

int syncerr_take_unseen(struct shim_file *f)
{
	(void)f;
	return 0;
}

/* ---- observe: nobody watching ------------------------------------------- */

uint64_t crash_mark(struct shim_file *f)
{
	(void)f;
	return 0;
}

void crash_durable(struct shim_file *f, uint64_t upto)
{
	(void)f, (void)upto;
}

void live_real_synced(struct shim_file *f, uint64_t ns, int err)
{
	(void)f, (void)ns, (void)err;
}

void trace_record(enum shim_op op, const struct shim_file *f, uint64_t s0, uint64_t s1, int64_t bytes, int64_t r,
		  int err)
{
	(void)op, (void)f, (void)s0, (void)s1, (void)bytes, (void)r, (void)err;
}

void log_event(int kind, const struct shim_file *f, int err, const char *fmt, ...)
{
	(void)kind, (void)f, (void)err, (void)fmt;
}

/* ---- the suite's files ------------------------------------------------------ */

/* A file object for the file open on fd, with the rule of ini (the
 * [shim] section's), as files.c makes one: knobs first, then the caller
 * resets each part (the suite's own parts). On the registry, with one
 * reference (the app's descriptor). */
static struct shim_file *stand_in_file(int fd, const char *ini)
{
	struct policy p;
	char err[256] = "";
	if (policy_load_string(ini, "stand_in.ini", &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "stand_in_file: %s\n", err);
		abort();
	}
	struct shim_file *f = calloc(1, sizeof(*f));
	struct stat st;
	if (!f || fstat(fd, &st) != 0 || stand_in_nfiles == STAND_IN_FILES)
		abort();
	f->id = (uint32_t)stand_in_nfiles + 1;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	atomic_store(&f->nfds, 1);
	struct knobs k;
	knobs_from_rule(&k, &p.deflt, -1);
	knobs_set(f, &k);
	atomic_store(&f->refs, 1);
	stand_in_registry[stand_in_nfiles++] = f;
	return f;
}

#endif
