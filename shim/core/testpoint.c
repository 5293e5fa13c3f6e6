/*
 * testpoint.c - the test suite's hooks inside the shim: a signal raised at
 * a named point (TEST_POINT), a thread held at one (TEST_HOLD), a module's
 * counters reported at exit (shim_test_report). Each is off unless its
 * environment variable is set at load.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

/* SYNCSHIM_TEST_SIGNAL_AT=all or a comma-separated list of point names
 * (alloc, registry, regions, fl_mu, lead, log_queue, policy, write, order,
 * domain, held_wait, held_position):
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

void shim_test_points_init(void)
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
