/*
 * test_java.c - a JVM under the shim: examples/java/SyncDemo.java's sync
 * paths (force(true/false), gathering writes, "rwd"/"rws" opens, mapped
 * buffers, the async channel's pool thread), checked with strace -f -c
 * and with the recording layer beneath the shim, against runs without
 * the shim.
 *
 * Skipped when java is missing or in the ASan build (SYNCSHIM_ASAN=1).
 */
#include <sys/mman.h>

#include "harness.h"

#define COUNT 200
#define SIZE 4096

static bool java_available(void)
{
	const char *path = getenv("PATH");
	char *copy = h_strdup(path ? path : "/usr/bin:/bin");
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
		if (access(h_fmt("%s/java", d), X_OK) == 0)
			return true;
	return false;
}

static void java_setup(void)
{
	h_setup();
	if (h_ctx.asan)
		cr_skip_test("ASan build: the JVM is not run under the sanitized shim");
	if (!java_available())
		cr_skip_test("java not installed");
	if (access(h_fmt("%s/java/SyncDemo.class", h_ctx.build), R_OK) != 0)
		cr_skip_test("%s/java/SyncDemo.class missing (make java)", h_ctx.build);
}

TestSuite(java, .init = java_setup, .fini = h_teardown, .timeout = 120);

struct jrun {
	struct h_cmd c;
	struct h_result r;
	struct h_log log;
	char *file;
	unsigned long long ino;
};

/* SyncDemo MODE FILE COUNT under policy (NULL: no shim), strace -f -c and
 * the recording layer. Must print "done MODE COUNT" and leave the file
 * COUNT*SIZE bytes of the expected pattern. */
static void jrun(struct jrun *J, const char *policy, const char *mode)
{
	h_cmd_policy(&J->c, policy ? H_SHIM_REC : H_REC, policy);
	J->file = h_path(h_fmt("%s.%s.dat", mode, policy ? policy : "none"));
	h_args(&J->c, "java", "-XX:-UsePerfData", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
	       h_fmt("%s/java", h_ctx.build), "SyncDemo", mode, J->file, NULL);
	h_argf(&J->c, "%d", COUNT);
	h_strace(&J->c, "fsync,fdatasync,msync,sync_file_range,syncfs,write,pwrite64,writev");
	J->r = h_run(&J->c);
	const char *what = h_fmt("SyncDemo %s under %s", mode, policy ? policy : "no shim");
	h_assert_ok(J->r, what);
	cr_assert(h_has(J->r.out, h_fmt("done %s %d", mode, COUNT)), "%s:\n%s%s", what, J->r.out, J->r.err);
	cr_expect(h_check_pattern(J->file, (long long)COUNT * SIZE), "%s: file contents", what);
	J->ino = h_ino(J->file);
	J->log = h_log_load(&J->c);
}

Test(java, force_true)
{
	struct jrun base, pt, fd, nop;
	jrun(&base, NULL, "force-true");
	cr_assert_geq(h_strace_count(&base.c, "fsync"), COUNT, "no shim: force(true) must fsync");
	cr_assert_eq(h_count(&base.log, "fsync", base.ino), COUNT);

	jrun(&pt, "passthrough", "force-true");
	cr_expect_geq(h_strace_count(&pt.c, "fsync"), COUNT, "passthrough: fsync syscalls");
	cr_expect_eq(h_count(&pt.log, "fsync", pt.ino), COUNT, "passthrough: fsyncs at libc");

	jrun(&fd, "fdatasync", "force-true");
	cr_expect_eq(h_strace_count(&fd.c, "fsync"), 0, "fdatasync: fsync syscalls");
	cr_expect_geq(h_strace_count(&fd.c, "fdatasync"), COUNT, "fdatasync: fdatasync syscalls");
	cr_expect_eq(h_count(&fd.log, "fdatasync", fd.ino), COUNT, "fdatasync: fdatasyncs at libc");

	jrun(&nop, "noop", "force-true");
	cr_expect_eq(h_strace_count(&nop.c, "fsync"), 0, "noop: fsync syscalls");
	cr_expect_eq(h_strace_count(&nop.c, "fdatasync"), 0, "noop: fdatasync syscalls");
	cr_expect_eq(h_count(&nop.log, "fsync", 0) + h_count(&nop.log, "fdatasync", 0), 0, "noop: syncs at libc");
}

Test(java, force_false_noop)
{
	struct jrun base, nop;
	jrun(&base, NULL, "force-false");
	cr_assert_geq(h_strace_count(&base.c, "fdatasync"), COUNT, "no shim: force(false) must fdatasync");
	jrun(&nop, "noop", "force-false");
	cr_expect_eq(h_strace_count(&nop.c, "fdatasync"), 0, "noop: fdatasync syscalls");
	cr_expect_eq(h_strace_count(&nop.c, "fsync"), 0, "noop: fsync syscalls");
	cr_expect_eq(h_count(&nop.log, "fdatasync", nop.ino), 0);
}

/* "rwd"/"rws" and StandardOpenOption.DSYNC opens: the flags the open really carries. */
Test(java, rwd_rws_open_flags)
{
	const unsigned long long sync_bit = O_SYNC & ~O_DSYNC;
	struct jrun base, nop, rws;
	jrun(&base, NULL, "rwd");
	const struct h_rec *o = h_find(&base.log, "open", base.ino);
	cr_assert_not_null(o, "no open of %s recorded", base.file);
	cr_assert(o->flags & O_DSYNC, "no shim: rwd opens with flags 0x%llx, no O_DSYNC?", o->flags);

	jrun(&nop, "noop", "rwd");
	o = h_find(&nop.log, "open", nop.ino);
	cr_assert_not_null(o, "no open of %s recorded", nop.file);
	cr_expect_eq(o->flags & (O_DSYNC | sync_bit), 0, "noop: rwd open reached libc with flags 0x%llx", o->flags);

	struct jrun dso;
	jrun(&dso, "noop", "dsync-open");
	o = h_find(&dso.log, "open", dso.ino);
	cr_assert_not_null(o, "no open of %s recorded", dso.file);
	cr_expect_eq(o->flags & (O_DSYNC | sync_bit), 0, "noop: DSYNC open reached libc with flags 0x%llx", o->flags);

	jrun(&rws, "fdatasync", "rws");
	o = h_find(&rws.log, "open", rws.ino);
	cr_assert_not_null(o, "no open of %s recorded", rws.file);
	cr_expect(o->flags & O_DSYNC, "fdatasync: rws open flags 0x%llx: O_DSYNC must stay", o->flags);
	cr_expect_eq(o->flags & sync_bit, 0, "fdatasync: rws open flags 0x%llx: O_SYNC must become O_DSYNC",
		     o->flags);
}

/* Gathering writes (writev) + force(true), and the async channel whose
 * writes and force run on a pool thread, under fdatasync. */
Test(java, gather_and_async_fdatasync)
{
	static const char *const modes[] = { "gather", "async" };
	for (int i = 0; i < 2; i++) {
		struct jrun J;
		jrun(&J, "fdatasync", modes[i]);
		cr_expect_eq(h_strace_count(&J.c, "fsync"), 0, "%s: fsync syscalls", modes[i]);
		cr_expect_geq(h_strace_count(&J.c, "fdatasync"), COUNT, "%s: fdatasync syscalls", modes[i]);
		cr_expect_eq(h_count(&J.log, "fdatasync", J.ino), COUNT, "%s: fdatasyncs at libc", modes[i]);
		if (i == 0)
			cr_expect_geq(h_count(&J.log, "writev", J.ino), COUNT, "gather: writev calls at libc");
		else
			cr_expect_geq(h_count(&J.log, "pwrite", J.ino), COUNT, "async: pwrite calls at libc");
	}
}

struct range {
	unsigned long long start, end;
};

static bool msync_sync_in(const struct h_rec *r, const void *arg)
{
	const struct range *m = arg;
	return !strcmp(r->op, "msync") && (r->flags & MS_SYNC) && r->addr >= m->start && r->addr < m->end;
}

static struct range mapping_of(const struct h_log *log, unsigned long long ino)
{
	const struct h_rec *m = h_find(log, "mmap", ino);
	cr_assert_not_null(m, "no shared mapping of inode %llu recorded", ino);
	return (struct range){ m->addr, m->addr + m->len };
}

/* MappedByteBuffer.force() is msync(MS_SYNC) of the file's mapping. */
Test(java, mapped_force_noop)
{
	struct jrun base, nop;
	jrun(&base, NULL, "mapped");
	struct range rb = mapping_of(&base.log, base.ino);
	cr_assert_geq(h_count_if(&base.log, msync_sync_in, &rb), COUNT, "no shim: force() must msync(MS_SYNC)");
	jrun(&nop, "noop", "mapped");
	struct range rn = mapping_of(&nop.log, nop.ino);
	cr_expect_eq(h_count_if(&nop.log, msync_sync_in, &rn), 0, "noop: msync(MS_SYNC) of the mapping at libc");
}
