/*
 * test_signal_handlers.c - signal handlers that write and sync while their
 * own thread is inside the shim (every critical section, the order
 * domain's lock, a hand off to the flusher, a group sync it leads): the
 * handler's call is answered, never deadlocked.
 *
 * Effects are checked beneath the shim where they can be: the recording
 * layer (tests/lib/reclayer.so), failfs (tests/lib/failfs.c), strace,
 * /proc/self/fd of the process, file contents, stderr.
 */
#include <sys/mman.h>

#include "harness.h"
#include "logfmt.h"
#include "logread.h"
#include "undofmt.h"

TestSuite(signal_handlers, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

static const char *const policies[] = { "passthrough", "fdatasync", "noop", "defer", "group" };
#define NPOLICIES 5

/* ---- signal handlers that write and sync ------------------------------ */

/* The shim raises SIGUSR1 at each of its test points, so the handler's
 * write + fsync + open run inside every critical section it has. */
Test(signal_handlers, handlers_sync_inside_every_critical_section)
{
	for (int p = 0; p < NPOLICIES; p++) {
		char *dir = h_path(policies[p]);
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		h_cmd_policy_only(&c, H_SHIM, policies[p]);
		h_env(&c, "SYNCSHIM_TEST_SIGNAL_AT=all");
		h_envf(&c, "SYNCSHIM_LOG=%s/l.log", dir);
		h_env(&c, "SYNCSHIM_LOG_MODE=calls");
		c.timeout_s = 60;
		h_args(&c, h_prog("sig_sync"), "-d", dir, "-n", "30", "-t", "2", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, h_fmt("sig_sync under %s", policies[p]));
		cr_assert(h_has(r.out, "sig_sync: ok"), "%s", r.out);
		cr_assert_gt(h_num_after(r.out, "handler=", 0), 30, "%s: the handlers hardly ran:\n%s",
			     policies[p], r.out);
	}
}

/* sig_sync under defer with the shim raising its signal at one test point
 * (SYNCSHIM_TEST_SIGNAL_AT): every handler's write and fsync must complete,
 * and enough of them must have run for the point to have been met. */
static void handlers_at(const char *point, const char *iters, const char *what)
{
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM, "defer");
	h_envf(&c, "SYNCSHIM_TEST_SIGNAL_AT=%s", point);
	c.timeout_s = 30;
	h_args(&c, h_prog("sig_sync"), "-d", h_ctx.dir, "-n", iters, "-t", "2", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, what);
	cr_assert(h_has(r.out, "sig_sync: ok"), "%s", r.out);
	cr_assert_gt(h_num_after(r.out, "handler=", 0), 5, "the handlers hardly ran:\n%s", r.out);
}

/* The domain's lock (one for every process of a service) held, and a
 * handler that writes: under defer its write waits for other files like
 * any write, which takes the same lock. Every section holding it is one
 * of the shim's, where the handler's calls go straight to libc. */
Test(signal_handlers, handler_inside_the_order_domain_lock)
{
	handlers_at("domain", "30", "sig_sync with handlers inside the domain lock");
}

/* A handler inside the moment a file is being handed to the flusher
 * threads (claimed, not yet where they look): under defer its write must
 * wait for that file's acknowledged sync, which no thread could find
 * until the handler returned. It passes straight to libc there, as in
 * every section of the shim's own. */
Test(signal_handlers, handler_while_its_thread_hands_a_file_to_the_flusher)
{
	handlers_at("schedule", "40", "sig_sync with handlers while a file is scheduled");
}

/* Without test points: under group a real sync (made 3 ms slow) is being
 * led most of the time, and a 10 ms timer's handler syncs the same file
 * from whichever thread it lands in, often the leader's. It must not wait
 * for itself. (The timer is slower than the handler: a faster one would
 * keep a thread inside handlers for good, shim or not.) */
Test(signal_handlers, group_handler_sync_while_its_thread_leads)
{
	char *d = h_path("d.dat");
	h_write_file(d, "");
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM_REC, "group");
	h_envf(&c, "RECLAYER_SLOW=%llu:3", h_ino(d));
	c.timeout_s = 30;
	h_args(&c, h_prog("sig_sync"), "-d", h_ctx.dir, "-n", "80", "-t", "3", "-i", "10000", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "sig_sync with a 10 ms timer under group");
	cr_assert_gt(h_num_after(r.out, "handler=", 0), 5, "%s", r.out);
}
