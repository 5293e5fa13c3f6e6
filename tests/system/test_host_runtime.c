/*
 * test_host_runtime.c - the host's process machinery around the shim: fork
 * from a threaded host, vfork children that close descriptors, set*id
 * while the shim's threads run, and allocator settings the host gives
 * jemalloc.
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

TestSuite(host_runtime, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

static const char *const policies[] = { "passthrough", "fdatasync", "noop", "defer", "group" };
#define NPOLICIES 5

/* ---- fork from a threaded host ----------------------------------------- */

Test(host_runtime, fifty_forks_from_threads_never_hang)
{
	h_skip_forks_from_threads_under_a_sanitizer(); /* also in make tsan's TSAN_SKIP */
	int runs = 50;
	for (int run = 0; run < runs; run++) {
		const char *pol = policies[run % NPOLICIES];
		char *dir = h_path(h_fmt("f%d", run));
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		h_cmd_policy_only(&c, H_SHIM, pol);
		if (run % 2)
			h_envf(&c, "SYNCSHIM_LOG=%s/l.%%p.log", dir);
		/* Half the runs with the live counters forced off: under defer
		 * and noop they are on by default (live = auto), and each forked
		 * child publishing its own file makes a run ~1.5x longer. */
		if (run % 4 >= 2)
			h_env(&c, "SYNCSHIM_LIVE=0");
		c.timeout_s = 20;
		h_args(&c, h_prog("fork_threads"), "-d", dir, "-t", "4", "-f", "20", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, h_fmt("fork_threads run %d (%s)", run, pol));
	}
}

/* ---- vfork children ----------------------------------------------------- */

/* strace -f of the whole run: after the second batch's last write, a real
 * sync of the file must follow (before: the child's close_range unbound
 * the parent's O_SYNC-deferred slot and nothing ever synced it). */
Test(host_runtime, vfork_child_closing_descriptors_leaves_parent_synced)
{
	static const char *const modes[] = { "range", "close", "dup2" };
	for (int m = 0; m < 3; m++) {
		char *f = h_path(h_fmt("v.%s.dat", modes[m]));
		char *trace = h_path(h_fmt("strace.%s.txt", modes[m]));
		struct h_cmd c;
		h_cmd_init(&c, H_PLAIN);
		h_args(&c, "strace", "-f", "-qq", "-e", "trace=write,fdatasync,fsync", "-o", trace, "-E",
		       h_fmt("LD_PRELOAD=%s%s%s", h_ctx.prefix, h_ctx.prefix[0] ? ":" : "", h_shim_lib()),
		       "-E", "SYNCSHIM_POLICY=defer", h_prog("vfork_close"), "-f", f, "-m", modes[m], NULL);
		h_assert_ok(h_run(&c), h_fmt("vfork_close -m %s", modes[m]));
		cr_assert(h_check_pattern(f, 16 * 4096), "%s: data", modes[m]);
		char *text = h_read_file(trace);
		const char *last = strstr(text, "write(3, \"00000000000f000");
		cr_assert_not_null(last, "%s: the last write is not in the trace:\n%s", modes[m], text);
		cr_assert(h_has(last, "fdatasync(") || h_has(last, "fsync("),
			  "%s: no real sync after the second batch:\n%s", modes[m], last);
	}
}

/* ---- the private allocator is deaf to the host's settings ------------- */

Test(host_runtime, malloc_conf_of_the_host_does_not_reach_the_shim)
{
	const char *progs[] = { "/bin/true", h_fmt("%s/examples/sync_writes", h_ctx.build) };
	for (int i = 0; i < 2; i++) {
		struct h_cmd c;
		h_cmd_init(&c, H_SANRT);
		h_env(&c, "MALLOC_CONF=abort_conf:true,bogus:1");
		h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "run", "-p", "defer", "--", progs[i], NULL);
		if (i)
			h_args(&c, "-n", "20", "-f", h_path("w.dat"), NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, progs[i]);
		cr_assert_str_empty(r.err, "%s: stderr:\n%s", progs[i], r.err);
	}
}

/* ---- set*id with the shim's threads running ------------------------------- */

/* glibc runs setresgid in every thread and aborts when one thread's
 * result differs; a host that kept its capabilities across setresuid in
 * its own thread alone (setpriv, libcap-ng) made the shim's threads fail
 * it (they had lost theirs). With a flusher (defer), the logger and the
 * live publisher running, under defer and group, the host drops to
 * nobody and goes on writing and syncing. */
static void setid_under(const char *policy)
{
	char tmpl[] = "/tmp/syncshim-setid-XXXXXX";
	char *dir = mkdtemp(tmpl);
	cr_assert(dir && chmod(dir, 0777) == 0);
	char *file = h_fmt("%s/d.dat", dir);
	struct h_cmd c;
	h_cmd_policy_only(&c, H_SHIM, policy);
	h_env(&c, "SYNCSHIM_LIVE=1");
	char *live = h_path(h_fmt("setid.%s.live", policy));
	cr_assert_eq(mkdir(live, 0700), 0);
	h_envf(&c, "SYNCSHIM_LIVE_DIR=%s", live);
	h_envf(&c, "SYNCSHIM_LOG=%s/l.log", dir);
	h_args(&c, h_prog("setid_threads"), file, "65534", "65534", NULL);
	struct h_result r = h_run(&c);
	char buf[64] = "";
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	unlink(file);
	unlink(h_fmt("%s/l.log", dir));
	rmdir(dir);
	cr_expect(!r.timed_out && r.code == 0 && h_has(r.out, "setid_threads: ok uid=65534 gid=65534"),
		  "set*id under %s: exit %d signal %d\n%s%s", policy, r.code, r.sig, r.out, r.err);
	cr_expect_str_eq(buf, "before\nafter\n", "under %s", policy);
}

Test(host_runtime, setid_from_a_threaded_host_never_aborts)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (setresuid)");
	setid_under("defer");
	setid_under("group");
	setid_under("passthrough");
}
