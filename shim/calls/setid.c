/*
 * setid.c - the setuid family, in a process the shim has threads in.
 *
 * glibc makes setuid, setgid, seteuid, setegid, setreuid, setregid,
 * setresuid, setresgid and setgroups (initgroups too) process-wide by
 * running the system call in every thread (a signal, SIGSETXID) and
 * aborts the process if any thread's result differs from the caller's.
 * Credentials are per thread in the kernel: a caller that changed its
 * own alone before (capset, prctl(PR_SET_KEEPCAPS): setpriv, libcap-ng's
 * capng_change_id) keeps capabilities the shim's threads lost at its
 * previous setresuid, their setresgid fails EPERM, and glibc aborts
 * (setpriv --reuid=postgres --regid=postgres --init-groups under defer).
 *
 * So no thread of the shim's exists across such a call: the deferred
 * syncs owed are made first (nothing acknowledged is left to a thread),
 * every shim thread is asked to end and joined, the call runs, and the
 * threads start again when next needed, created by the app's thread with
 * its new credentials (work that arrived meanwhile gets a flusher at
 * once). Calls on a thread inside the shim pass straight through.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flusher.h"
#include "live.h"
#include "log.h"
#include "order.h"
#include "reload.h"
#include "shim.h"
#include "workers.h"

static pthread_mutex_t setid_mu = PTHREAD_MUTEX_INITIALIZER; /* one set*id at a time quiesces */

static void threads_end(void)
{
	flusher_flush_all(); /* what was acknowledged is durable before the flushers go */
	order_before_credentials(); /* a process the others must not trust leaves their domain */
	shim_enter();
	int cancel = shim_nocancel_begin();
	pthread_mutex_lock(&setid_mu);
	atomic_store(&shim_threads_quit, 1);
	syscall(SYS_futex, &shim_threads_quit, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	workers_wake_all();
	live_quiesce();
	shim_join_threads();
	shim_nocancel_end(cancel);
}

static void threads_resume(void)
{
	int cancel = shim_nocancel_begin();
	log_thread_quiesced();
	reload_thread_quiesced();
	atomic_store(&shim_threads_quit, 0);
	pthread_mutex_unlock(&setid_mu);
	shim_nocancel_end(cancel);
	shim_leave();
	workers_resume();
}

#define SETID_BODY(name, params, args)             \
	SHIM_INLINE int name##_body params           \
	{                                            \
		if (shim_bypass())                   \
			return LIBC(name) args;      \
		threads_end();                       \
		int rc_ = LIBC(name) args;           \
		int errno_ = errno;                  \
		threads_resume();                    \
		errno = errno_;                      \
		return rc_;                          \
	}

SETID_BODY(setuid, (uid_t u), (u))
SETID_BODY(setgid, (gid_t g), (g))
SETID_BODY(seteuid, (uid_t u), (u))
SETID_BODY(setegid, (gid_t g), (g))
SETID_BODY(setreuid, (uid_t ru, uid_t eu), (ru, eu))
SETID_BODY(setregid, (gid_t rg, gid_t eg), (rg, eg))
SETID_BODY(setresuid, (uid_t ru, uid_t eu, uid_t su), (ru, eu, su))
SETID_BODY(setresgid, (gid_t rg, gid_t eg, gid_t sg), (rg, eg, sg))
SETID_BODY(setgroups, (size_t n, const gid_t *list), (n, list))
SETID_BODY(initgroups, (const char *user, gid_t g), (user, g))

SHIM_API int setuid(uid_t u)
{
	return setuid_body(u);
}

SHIM_API int setgid(gid_t g)
{
	return setgid_body(g);
}

SHIM_API int seteuid(uid_t u)
{
	return seteuid_body(u);
}

SHIM_API int setegid(gid_t g)
{
	return setegid_body(g);
}

SHIM_API int setreuid(uid_t ru, uid_t eu)
{
	return setreuid_body(ru, eu);
}

SHIM_API int setregid(gid_t rg, gid_t eg)
{
	return setregid_body(rg, eg);
}

SHIM_API int setresuid(uid_t ru, uid_t eu, uid_t su)
{
	return setresuid_body(ru, eu, su);
}

SHIM_API int setresgid(gid_t rg, gid_t eg, gid_t sg)
{
	return setresgid_body(rg, eg, sg);
}

SHIM_API int setgroups(size_t n, const gid_t *list)
{
	return setgroups_body(n, list);
}

SHIM_API int initgroups(const char *user, gid_t g)
{
	return initgroups_body(user, g);
}
