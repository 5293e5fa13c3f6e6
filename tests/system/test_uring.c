/*
 * test_uring.c - syncs that go around libc's sync calls: libc's syscall()
 * and io_uring rings (shim/calls/syscall.c, shim/calls/uring.c).
 *
 * What reached the kernel is read from the kernel's own record, not the
 * shim's: tracefs, in a private instance, with io_uring:io_uring_submit_req
 * (each entry's opcode, as submitted, for this process tree only) and
 * ext4:ext4_sync_file_enter filtered on the test file's inode (every real
 * sync of it, who made it and whether it was a datasync). Tests that need
 * tracefs skip where it cannot be mounted; the test files live in /tmp
 * and the ext4 tests skip where that is not ext4. strace counts the
 * system calls of syscall(); file contents are checked by reading them.
 */
#include "harness.h"

#include <sys/mount.h>
#include <sys/vfs.h>

#define TRACEFS "/sys/kernel/tracing"
#define EXT4_MAGIC 0xEF53

static void u_setup(void)
{
	h_setup();
}

TestSuite(uring, .init = u_setup, .fini = h_teardown, .timeout = 120);

/* ---- tracefs ------------------------------------------------------------------ */

struct tr {
	char sub[PATH_MAX];  /* instance for the submissions (this process tree) */
	char sync[PATH_MAX]; /* instance for the inode's syncs (any task: io-wq workers too) */
};

struct tr_counts {
	int fsync, nop, write, writev, renameat; /* submitted entries by opcode */
	int ring_syncs, ring_datasyncs;   /* real syncs of the inode by the kernel's workers on the
					   * app's request: io_uring's (iou-wrk), aio's (kworker) */
	int other_syncs, other_datasyncs; /* by anyone else (the app's thread, the shim's flusher) */
	double first_other_sync_ts, renameat_ts;
};

static bool tr_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return false;
	bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok;
}

/* tracefs mounted with the events these tests read, or skip. */
static void tr_need(bool ext4)
{
	if (access(TRACEFS "/instances", W_OK) != 0)
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	if (access(TRACEFS "/instances", W_OK) != 0 ||
	    access(TRACEFS "/events/io_uring/io_uring_submit_req/enable", W_OK) != 0)
		cr_skip_test("tracefs (io_uring:io_uring_submit_req) not available here");
	struct statfs sf;
	if (ext4 && (statfs(h_ctx.dir, &sf) != 0 || sf.f_type != EXT4_MAGIC ||
		     access(TRACEFS "/events/ext4/ext4_sync_file_enter/enable", W_OK) != 0))
		cr_skip_test("the test directory is not on ext4 (ext4:ext4_sync_file_enter)");
}

/* Start recording: submissions of this process and its children, syncs of
 * path's inode (path must exist). */
static void tr_start(struct tr *t, const char *path)
{
	snprintf(t->sub, sizeof(t->sub), TRACEFS "/instances/syncshim-uring-%d-s", getpid());
	snprintf(t->sync, sizeof(t->sync), TRACEFS "/instances/syncshim-uring-%d-i", getpid());
	rmdir(t->sub);
	rmdir(t->sync);
	cr_assert_eq(mkdir(t->sub, 0755), 0, "%s: %s", t->sub, strerror(errno));
	cr_assert_eq(mkdir(t->sync, 0755), 0, "%s: %s", t->sync, strerror(errno));
	cr_assert(tr_write(h_fmt("%s/options/event-fork", t->sub), "1"));
	cr_assert(tr_write(h_fmt("%s/set_event_pid", t->sub), h_fmt("%d", getpid())));
	cr_assert(tr_write(h_fmt("%s/events/io_uring/io_uring_submit_req/enable", t->sub), "1"));
	if (path) {
		cr_assert(tr_write(h_fmt("%s/events/ext4/ext4_sync_file_enter/filter", t->sync),
				   h_fmt("ino == %llu", h_ino(path))));
		cr_assert(tr_write(h_fmt("%s/events/ext4/ext4_sync_file_enter/enable", t->sync), "1"));
	}
}

/* The timestamp of a trace line ("... 1234.567890: event: ..."). */
static double tr_ts(const char *line)
{
	const char *colon = strstr(line, ": ");
	if (!colon)
		return 0;
	const char *p = colon;
	while (p > line && p[-1] != ' ')
		p--;
	return atof(p);
}

static struct tr_counts tr_stop(struct tr *t)
{
	struct tr_counts c = { 0 };
	char *sub = h_read_file(h_fmt("%s/trace", t->sub));
	char *syn = h_read_file(h_fmt("%s/trace", t->sync));
	tr_write(h_fmt("%s/events/enable", t->sub), "0");
	tr_write(h_fmt("%s/events/enable", t->sync), "0");
	rmdir(t->sub);
	rmdir(t->sync);
	for (char *line = strtok(sub ? sub : "", "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			continue;
		if (strstr(line, "opcode FSYNC,"))
			c.fsync++;
		else if (strstr(line, "opcode NOP,"))
			c.nop++;
		else if (strstr(line, "opcode WRITE,"))
			c.write++;
		else if (strstr(line, "opcode WRITEV,"))
			c.writev++;
		else if (strstr(line, "opcode RENAMEAT,")) {
			c.renameat++;
			c.renameat_ts = tr_ts(line);
		}
	}
	for (char *line = strtok(syn ? syn : "", "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#' || !strstr(line, "ext4_sync_file_enter"))
			continue;
		bool ds = strstr(line, "datasync 1") != NULL;
		while (*line == ' ')
			line++;
		if (strncmp(line, "iou-wrk-", 8) == 0 || strncmp(line, "kworker/", 8) == 0) {
			c.ring_syncs++;
			c.ring_datasyncs += ds;
		} else {
			if (!c.other_syncs)
				c.first_other_sync_ts = tr_ts(line);
			c.other_syncs++;
			c.other_datasyncs += ds;
		}
	}
	return c;
}

static char *tr_show(const struct tr_counts *c)
{
	return h_fmt("submitted: FSYNC %d NOP %d WRITE %d WRITEV %d RENAMEAT %d; real syncs of the file: "
		     "by the ring %d (%d datasync), by others %d (%d datasync)",
		     c->fsync, c->nop, c->write, c->writev, c->renameat, c->ring_syncs, c->ring_datasyncs,
		     c->other_syncs, c->other_datasyncs);
}

/* uring_ops CMD FILE ARGS... under policy, traced. */
static struct tr_counts traced_run(const char *policy, const char *file, const char *const *args,
				   struct h_result *out)
{
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, policy);
	h_arg(&c, h_prog("uring_ops"));
	for (int i = 0; args[i]; i++)
		h_arg(&c, args[i]);
	h_write_file(file, "");
	struct tr t;
	tr_start(&t, file);
	struct h_result r = h_run(&c);
	struct tr_counts n = tr_stop(&t);
	h_assert_ok(r, h_fmt("uring_ops %s under %s", args[0], policy));
	if (out)
		*out = r;
	return n;
}

#define ROUNDS 40
#define ROUNDS_S "40"

/* ---- syscall() --------------------------------------------------------------- */

/* syscall(SYS_fsync, fd) under fdatasync is an fdatasync, as fsync(fd) is:
 * strace counts the system calls. The bad descriptor's EBADF and an
 * untouched errno on success are checked by the program. */
Test(uring, syscall_fsync_follows_the_policy)
{
	char *file = h_path("sys.dat");
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "fdatasync");
	h_strace(&c, "fsync,fdatasync");
	h_args(&c, h_prog("uring_ops"), "sys", file, ROUNDS_S, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "uring_ops sys under fdatasync");
	cr_assert(h_has(r.out, "sys: ok"), "%s", r.out);
	long fs = h_strace_count(&c, "fsync"), fds = h_strace_count(&c, "fdatasync");
	cr_assert_leq(fs, 1, "fsync(2) calls: %ld (only the bad descriptor's may remain)", fs);
	cr_assert_geq(fds, ROUNDS, "fdatasync(2) calls: %ld, want >= %d", fds, ROUNDS);
	cr_assert_eq(h_size(file), ROUNDS * 4096LL);

	/* noop: no sync reaches the kernel at all (the bad fd's may). */
	h_cmd_policy(&c, H_SHIM, "noop");
	h_strace(&c, "fsync,fdatasync");
	h_args(&c, h_prog("uring_ops"), "sys", file, ROUNDS_S, NULL);
	r = h_run(&c);
	h_assert_ok(r, "uring_ops sys under noop");
	cr_assert_leq(h_strace_count(&c, "fsync") + h_strace_count(&c, "fdatasync"), 1);
}

/* ---- io_uring ------------------------------------------------------------------ */

/* defer: every ring FSYNC became a NOP completing with 0 (the program
 * checks each completion: user_data and result), the ring's workers made
 * no sync of the file, the shim's flusher made the file durable, and the
 * data is all there. Through liburing, registered files, and the raw
 * system calls. */
Test(uring, defer_turns_ring_fsyncs_into_nops)
{
	tr_need(true);
	char *file = h_path("defer.dat");
	const char *const variants[][5] = {
		{ "chain", file, ROUNDS_S, NULL },
		{ "chain", file, ROUNDS_S, "fixed", NULL },
		{ "chain", file, ROUNDS_S, "datasync", NULL },
		{ "raw", file, ROUNDS_S, NULL },
	};
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct tr_counts n = traced_run("defer", file, variants[v], NULL);
		char *what = h_fmt("%s %s: %s", variants[v][0], variants[v][3] ? variants[v][3] : "", tr_show(&n));
		cr_assert_eq(n.fsync, 0, "%s", what);
		cr_assert_eq(n.nop, ROUNDS, "%s", what);
		cr_assert_eq(n.write, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_syncs, 0, "%s", what);
		cr_assert_geq(n.other_syncs, 1, "%s: the deferred syncs were never made", what);
		cr_assert_leq(n.other_syncs, 3, "%s: the flusher synced per request", what);
		cr_assert_eq(h_size(file), ROUNDS * 4096LL, "%s", what);
	}
	/* A polling ring driven by liburing: the entries are looked at before
	 * liburing publishes them (the poller's submissions are not this
	 * process tree's to trace: only the syncs are counted). Every submit
	 * must count the 2 entries queued: the NOPs complete within the
	 * poller's batch, before it moves its head, which liburing's count
	 * read as entries submitted again (1 run in 4 on a busy machine, more
	 * with more rounds); the shim corrects that. */
	struct tr_counts n = traced_run("defer", file, (const char *const[]){ "chain", file, "400", "sqpoll", NULL }, NULL);
	cr_assert_eq(n.ring_syncs, 0, "sqpoll: %s", tr_show(&n));
	/* 400 rounds last a few of the flusher's delays on a busy machine:
	 * some real syncs, far fewer than one per round */
	cr_assert(n.other_syncs >= 1 && n.other_syncs <= 40, "sqpoll: %s", tr_show(&n));
}

/* noop: NOPs, and no real sync of the file by anyone. */
Test(uring, noop_drops_ring_fsyncs)
{
	tr_need(true);
	char *file = h_path("noop.dat");
	struct tr_counts n = traced_run("noop", file, (const char *const[]){ "chain", file, ROUNDS_S, NULL }, NULL);
	cr_assert_eq(n.fsync, 0, "%s", tr_show(&n));
	cr_assert_eq(n.nop, ROUNDS, "%s", tr_show(&n));
	cr_assert_eq(n.ring_syncs + n.other_syncs, 0, "%s", tr_show(&n));
	cr_assert_eq(h_size(file), ROUNDS * 4096LL);
}

/* fdatasync: every ring FSYNC reaches the kernel as a datasync (the ext4
 * record says so for each), through liburing, registered files and the
 * raw calls; passthrough and group leave the app's full fsyncs alone. */
Test(uring, fdatasync_sets_the_datasync_flag_and_passthrough_leaves_it)
{
	tr_need(true);
	char *file = h_path("ds.dat");
	const char *const variants[][5] = {
		{ "chain", file, ROUNDS_S, NULL },
		{ "chain", file, ROUNDS_S, "fixed", NULL },
		{ "raw", file, ROUNDS_S, NULL },
	};
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct tr_counts n = traced_run("fdatasync", file, variants[v], NULL);
		char *what = h_fmt("fdatasync, %s %s: %s", variants[v][0], variants[v][3] ? variants[v][3] : "",
				   tr_show(&n));
		cr_assert_eq(n.fsync, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_syncs, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_datasyncs, ROUNDS, "%s", what);
		for (int p = 0; p < 2; p++) {
			const char *pol = p ? "group" : "passthrough";
			n = traced_run(pol, file, variants[v], NULL);
			what = h_fmt("%s, %s %s: %s", pol, variants[v][0], variants[v][3] ? variants[v][3] : "",
				     tr_show(&n));
			cr_assert_eq(n.fsync, ROUNDS, "%s", what);
			cr_assert_eq(n.ring_syncs, ROUNDS, "%s", what);
			cr_assert_eq(n.ring_datasyncs, 0, "%s", what);
		}
	}
}

/* liburing's raw exports make their own inline system calls (liburing
 * 2.3 on x86_64): a program that drives its ring with io_uring_setup,
 * io_uring_queue_mmap (or libc's mmap), io_uring_register and
 * io_uring_enter or io_uring_enter2 alone, and no submit call, is seen
 * through the exports. From the kernel's record: under defer every ring
 * FSYNC was submitted as a NOP and the ring's workers synced nothing
 * (the flusher did); under fdatasync every FSYNC reached the kernel and
 * each of the ring's syncs of the file was a datasync; passthrough leaves
 * the app's full syncs. */
Test(uring, liburing_raw_exports_follow_the_policy)
{
	tr_need(true);
	char *file = h_path("lib.dat");
	const char *const variants[][6] = {
		{ "lib", file, ROUNDS_S, NULL },
		{ "lib", file, ROUNDS_S, "enter2", NULL },
		{ "lib", file, ROUNDS_S, "ownmap", NULL },
		{ "lib", file, ROUNDS_S, "fixed", NULL },
	};
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		const char *how = variants[v][3] ? variants[v][3] : "";
		struct tr_counts n = traced_run("defer", file, variants[v], NULL);
		char *what = h_fmt("defer, lib %s: %s", how, tr_show(&n));
		cr_assert_eq(n.fsync, 0, "%s", what);
		cr_assert_eq(n.nop, ROUNDS, "%s", what);
		cr_assert_eq(n.write, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_syncs, 0, "%s", what);
		cr_assert(n.other_syncs >= 1 && n.other_syncs <= 3, "%s: the flusher's syncs", what);
		cr_assert_eq(h_size(file), ROUNDS * 4096LL, "%s", what);

		n = traced_run("fdatasync", file, variants[v], NULL);
		what = h_fmt("fdatasync, lib %s: %s", how, tr_show(&n));
		cr_assert_eq(n.fsync, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_syncs, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_datasyncs, ROUNDS, "%s", what);

		n = traced_run("passthrough", file, variants[v], NULL);
		what = h_fmt("passthrough, lib %s: %s", how, tr_show(&n));
		cr_assert_eq(n.fsync, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_syncs, ROUNDS, "%s", what);
		cr_assert_eq(n.ring_datasyncs, 0, "%s", what);
	}
}

/* A deferred sync that failed (injected beneath the shim) reaches the app
 * through its next ring FSYNC's completion, once; the file's other
 * descriptor reports it once through libc. */
Test(uring, sticky_error_through_the_ring_once_per_descriptor)
{
	char *file = h_path("err.dat");
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM_REC, "defer");
	h_env(&c, "RECLAYER_FAIL=fdatasync:EIO:0:1");
	h_args(&c, h_prog("uring_ops"), "fsyncs", file, "4", "flush", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "uring_ops fsyncs under defer, EIO injected");
	cr_assert(h_has(r.out, "fsync 0: 0\nfsync 1: -5\nfsync 2: 0\nfsync 3: 0\nfd2 fsync: -1 EIO\n"), "%s\n%s",
		  r.out, r.err);
}

/* write, FSYNC, RENAMEAT in one chain under defer: the rename barrier
 * made the file durable (a real sync of it, by the app's thread or the
 * flusher) before the RENAMEAT was submitted. */
Test(uring, ring_rename_waits_for_the_deferred_sync)
{
	tr_need(true);
	char *dir = h_path("rn");
	cr_assert_eq(mkdir(dir, 0755), 0);
	char *tmp = h_fmt("%s/tmp", dir);
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "defer");
	h_args(&c, h_prog("uring_ops"), "rename", dir, NULL);
	h_write_file(tmp, "");
	struct tr t;
	tr_start(&t, tmp);
	struct h_result r = h_run(&c);
	struct tr_counts n = tr_stop(&t);
	h_assert_ok(r, "uring_ops rename under defer");
	cr_assert(h_has(r.out, "rename: 2: 0"), "%s", r.out);
	cr_assert_eq(n.renameat, 1, "%s", tr_show(&n));
	cr_assert_eq(n.fsync, 0, "%s", tr_show(&n));
	cr_assert_geq(n.other_syncs, 1, "%s", tr_show(&n));
	cr_assert_leq(n.first_other_sync_ts, n.renameat_ts, "sync at %f, rename submitted at %f: %s",
		      n.first_other_sync_ts, n.renameat_ts, tr_show(&n));
	cr_assert_eq(h_size(h_fmt("%s/final", dir)), 4096);
}

/* A thread submitting write+FSYNC chains while another closes and reopens
 * the descriptor: no crash, no hang, no completion but the kernel's own. */
Test(uring, submit_while_another_thread_closes)
{
	char *file = h_path("race.dat");
	for (int p = 0; p < 2; p++) {
		struct h_cmd c;
		h_cmd_policy(&c, H_SHIM, p ? "noop" : "defer");
		h_args(&c, h_prog("uring_ops"), "race", file, "2000", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "uring_ops race");
		cr_assert(h_has(r.out, "race: ok"), "%s", r.out);
	}
	/* Under defer, every deferred sync reaches its file by a descriptor
	 * or its name: none falls back to sync(). A number closed and opened
	 * again on the same file while the shim read its name left a file
	 * object with no name (1 run in 5; 0 in 60 since): counted beneath the
	 * shim over three more runs. */
	for (int i = 0; i < 3; i++) {
		struct h_cmd c;
		h_cmd_policy(&c, H_SHIM_REC, "defer");
		h_env(&c, "RECLAYER_OPS=sync");
		h_args(&c, h_prog("uring_ops"), "race", file, "2000", NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "uring_ops race");
		struct h_log log = h_log_load(&c);
		cr_assert_eq(h_count(&log, "sync", 0), 0,
			     "a deferred sync fell back to sync(): the file had no descriptor and no name left:\n%s",
			     r.out);
	}
}

/* QEMU's io_uring backend (liburing, WRITEV + FSYNC DATASYNC) under defer:
 * its flushes are NOPs, the image reads back intact, exit 0. */
Test(uring, qemu_io_flushes_deferred)
{
	tr_need(false);
	if (access("/usr/bin/qemu-io", X_OK) != 0)
		cr_skip_test("qemu-io (qemu-utils) not installed");
	char *img = h_path("q.img");
	int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
	close(fd);
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "defer");
	h_args(&c, "qemu-io", "--aio", "io_uring", "-f", "raw", "-c", "write -P 0xab 0 64k", "-c", "flush", "-c",
	       "write -P 0xcd 64k 64k", "-c", "flush", img, NULL);
	struct tr t;
	tr_start(&t, NULL);
	struct h_result r = h_run(&c);
	struct tr_counts n = tr_stop(&t);
	h_assert_ok(r, "qemu-io under defer");
	cr_assert_eq(n.fsync, 0, "%s", tr_show(&n));
	cr_assert_geq(n.nop, 2, "%s", tr_show(&n));
	struct h_result v = h_sh(h_fmt("qemu-io -f raw -c 'read -P 0xab 0 64k' -c 'read -P 0xcd 64k 64k' %s", img), 60);
	cr_assert(h_has(v.out, "read 65536/65536 bytes at offset 0") &&
		  h_has(v.out, "read 65536/65536 bytes at offset 65536") && !h_has(v.out, "Pattern verification failed"),
		  "%s", v.out);
}

/* fio enters its ring by inline system calls: nothing the shim can see.
 * That is detected and said in one line, not silently ignored. */
Test(uring, unseen_ring_is_warned)
{
	if (access("/usr/bin/fio", X_OK) != 0)
		cr_skip_test("fio not installed");
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "defer");
	h_args(&c, "fio", "--name=u", h_fmt("--filename=%s", h_path("fio.dat")), "--size=256k", "--bs=4k",
	       "--rw=write", "--ioengine=io_uring", "--fsync=1", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "fio io_uring under defer");
	const char *w = "entries reached the kernel without a call the shim sees";
	cr_assert(h_has(r.err, w), "no warning:\n%s", r.err);
	cr_assert_not(h_has(strstr(r.err, w) + 1, w), "warned more than once:\n%s", r.err);
}

/* The same fio with `inline_syscalls = trap`: its ring is seen after all.
 * Under defer every ring FSYNC reaches the kernel as a NOP and no kernel
 * worker syncs the file; the warning is gone; fio's own verify pass reads
 * every block back. The untrapped run in the same test is the control. */
Test(uring, fio_ring_is_seen_with_inline_trap)
{
	tr_need(true);
	if (access("/usr/bin/fio", X_OK) != 0)
		cr_skip_test("fio not installed");
	char *file = h_path("fiot.dat");
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	close(fd);
	for (int trap = 0; trap <= 1; trap++) {
		struct h_cmd c;
		h_cmd_policy(&c, H_SHIM, "defer");
		if (trap)
			h_env(&c, "SYNCSHIM_INLINE_SYSCALLS=trap");
		h_args(&c, "fio", "--name=u", h_fmt("--filename=%s", file), "--size=256k", "--bs=4k", "--rw=write",
		       "--ioengine=io_uring", "--fsync=1", "--verify=crc32c", "--do_verify=1", NULL);
		struct tr t;
		tr_start(&t, file);
		struct h_result r = h_run(&c);
		struct tr_counts n = tr_stop(&t);
		h_assert_ok(r, h_fmt("fio io_uring under defer, trap %d", trap));
		if (trap && h_has(r.err, "this kernel cannot"))
			cr_skip_test("no inclusive syscall user dispatch in this kernel (Linux 6.16+)");
		if (!trap) {
			cr_assert_geq(n.fsync, 63, "control: %s", tr_show(&n));
			continue;
		}
		cr_assert_not(h_has(r.err, "entries reached the kernel without a call the shim sees"), "%s", r.err);
		cr_assert_eq(n.fsync, 0, "%s", tr_show(&n));
		cr_assert_geq(n.nop, 63, "%s", tr_show(&n));
		cr_assert_eq(n.ring_syncs, 0, "%s", tr_show(&n));
		cr_assert_eq(h_size(file), 256 * 1024LL);
	}
}

/* libaio (io_submit through libc's syscall()): under defer and noop an
 * FSYNC completes with 0, its own iocb and data, and no kernel worker
 * syncs the file (defer: the flusher does, once); under fdatasync every
 * aio sync is a datasync; under passthrough the app's full syncs. The
 * program also checks each iocb reads back as it made it. */
Test(uring, libaio_syncs_follow_the_policy)
{
	tr_need(true);
	char *file = h_path("aio.dat");
	const char *const args[] = { "aio", file, ROUNDS_S, NULL };
	struct tr_counts n = traced_run("defer", file, args, NULL);
	cr_assert_eq(n.ring_syncs, 0, "defer: %s", tr_show(&n));
	cr_assert(n.other_syncs >= 1 && n.other_syncs <= 3, "defer: %s", tr_show(&n));
	cr_assert_eq(h_size(file), ROUNDS * 4096LL);
	n = traced_run("noop", file, args, NULL);
	cr_assert_eq(n.ring_syncs + n.other_syncs, 0, "noop: %s", tr_show(&n));
	n = traced_run("fdatasync", file, args, NULL);
	cr_assert_eq(n.ring_syncs, ROUNDS, "fdatasync: %s", tr_show(&n));
	cr_assert_eq(n.ring_datasyncs, ROUNDS, "fdatasync: %s", tr_show(&n));
	n = traced_run("passthrough", file, args, NULL);
	cr_assert_eq(n.ring_syncs, ROUNDS, "passthrough: %s", tr_show(&n));
	cr_assert_eq(n.ring_datasyncs, 0, "passthrough: %s", tr_show(&n));
}

/* ---- crash-test mode on a ring writer --------------------------------------------- */

/* syncshim crashtest --json on uring_ops wal (a record written through
 * the ring, an FSYNC linked to it, one submit, then an ack appended to a
 * file outside the scope): 10 trials under how/what (-p POLICY or -c
 * FILE), cut 300 to 700 ms after the start, judged by examples/wal_check
 * on what the rollback left. Each trial starts with no WAL and an empty
 * ack file (--setup), so a trial cut before the program got going (a
 * loaded machine, a sanitizer build) has nothing acknowledged to judge. */
static struct h_result ring_wal_trials(const char *how, const char *what)
{
	char *data = h_path("ct"), *wal = h_fmt("%s/wal", data), *acks = h_path("acks");
	mkdir(data, 0755);
	struct h_cmd c;
	h_cmd_init(&c, H_PLAIN);
	if (h_ctx.prefix[0]) /* a sanitizer build: its runtime first, as syncshim run appends the shim */
		h_envf(&c, "LD_PRELOAD=%s", h_ctx.prefix);
	c.timeout_s = 100;
	h_args(&c, h_fmt("%s/syncshim", h_ctx.build), "crashtest", "--json", "-n", "10", how, what, "--cut",
	       "random:300-700", "--scope", h_fmt("%s/**", data), "--seed", "19", "--setup",
	       h_fmt("rm -f %s && : > %s", wal, acks), "--check",
	       h_fmt("%s/examples/wal_check -f %s -a %s", h_ctx.build, wal, acks), "--", h_prog("uring_ops"), "wal",
	       wal, acks, "100000000", NULL);
	struct h_result r = h_run(&c);
	cr_assert(!r.timed_out && h_has(r.out, "\"total\":"), "crashtest: exit %d\n%s\n%s", r.code, r.out, r.err);
	/* The ring's writes and syncs are the shim's to log now: no limit names them. */
	cr_assert_not(h_has(r.out, "io_uring"), "a limit names the ring:\n%s", r.out);
	return r;
}

/* Each trial's JSON in turn: *p at the next one, NULL after the last. */
static char *next_trial(char **p)
{
	char *t = *p ? strstr(*p, "{\"trial\":") : NULL;
	if (!t)
		return NULL;
	char *next = strstr(t + 1, "{\"trial\":");
	*p = next;
	return h_fmt("%.*s", (int)(next ? next - t : (long)strlen(t)), t);
}

/* A trial in which the writer acknowledged something before the cut
 * (wal_check's "acked=N"), and the cut's verdict could be given. */
static bool judged(const char *t)
{
	return !h_has(t, "\"verdict\":\"unusable\"") && h_num_after(t, "acked=", 0) > 0;
}

/* passthrough: the ring's FSYNC reached the kernel before each ack, so a
 * power cut loses no acknowledged record, and the rollback is exact (no
 * limit: every ring write was logged with its pre-image). Before the ring
 * writes were logged and their syncs marked durable, every trial lost
 * every acknowledged record (the WAL was not durable as far as the log
 * could tell). */
Test(uring, crashtest_ring_writer_passthrough_loses_no_acknowledged_record)
{
	struct h_result r = ring_wal_trials("-p", "passthrough");
	int n = 0;
	char *p = r.out, *t;
	while ((t = next_trial(&p))) {
		cr_expect(!h_has(t, "\"verdict\":\"fail\""), "%s", t);
		if (!judged(t))
			continue;
		n++;
		cr_expect(h_has(t, "lost=0 torn_bytes=0") && h_has(t, "\"exact\":true"), "%s", t);
	}
	cr_assert_geq(n, 5, "%d of 10 trials acknowledged anything:\n%s", n, r.out);
}

/* defer: what is lost was acknowledged within max_delay_ms before the
 * cut, or, once overdue, while a flusher thread was at work on it
 * (running, waiting for a CPU or the disk, or in the real sync: the
 * launcher looks at /proc just before the kill). How long a loaded
 * machine makes that take is the machine's, so it is judged against when
 * the flusher could run, not against the clock; a flusher asleep past
 * the deadline is the shim's. The slack is the timer's wake-up.
 * Something survives, something is lost (the window is exercised). */
Test(uring, crashtest_ring_writer_defer_loses_only_its_window)
{
	char *ini = h_path("defer.ini");
	h_write_file(ini, h_fmt("[shim]\npolicy = defer\nmax_delay_ms = 50\nmax_calls = 1000000\nmax_bytes = 1G\n"
				"[rule acks]\npath = %s\nsync = defer\norder = file\n",
				h_path("acks")));
	struct h_result r = ring_wal_trials("-c", ini);
	int n = 0, lost = 0, survived = 0;
	char *p = r.out, *t;
	while ((t = next_trial(&p))) {
		if (!judged(t))
			continue;
		n++;
		survived += h_num_after(t, "records=", 0) > 0;
		if (h_num_after(t, "lost=", 0) == 0)
			continue;
		lost++;
		const char *o = strstr(t, "lost_oldest_ms="), *at = strstr(t, "\"flushers_at_cut\":");
		double oldest = o ? atof(o + strlen("lost_oldest_ms=")) : -1;
		const char *busy = at ? strstr(at, "\"busy\":") : NULL;
		cr_expect(oldest >= 0, "no age for the lost records: %s", t);
		cr_expect(oldest <= 50 + 5 || (busy && atoi(busy + strlen("\"busy\":")) > 0),
			  "lost a record acknowledged %.1f ms before the cut (deadline 50 ms) while no flusher thread "
			  "was at work: %s",
			  oldest, t);
		cr_expect(h_has(t, "torn_bytes=0"), "%s", t);
	}
	cr_assert_geq(n, 5, "%d of 10 trials acknowledged anything:\n%s", n, r.out);
	cr_expect_geq(survived, 1, "no acknowledged record survived any cut:\n%s", r.out);
	cr_expect_geq(lost, 1, "defer lost nothing in %d trials: no window was exercised\n%s", n, r.out);
}

/* noop: the ring's FSYNCs never reach the kernel, so every cut after an
 * acknowledgement finds acknowledged records gone and fails its check. */
Test(uring, crashtest_ring_writer_noop_is_caught)
{
	struct h_result r = ring_wal_trials("-p", "noop");
	int n = 0;
	char *p = r.out, *t;
	while ((t = next_trial(&p))) {
		if (!judged(t))
			continue;
		n++;
		cr_expect(h_has(t, "\"verdict\":\"fail\"") && h_num_after(t, "lost=", 0) > 0, "not caught: %s", t);
	}
	cr_assert_geq(n, 5, "%d of 10 trials acknowledged anything:\n%s", n, r.out);
}

/* The latency log sees the ring's syncs (as the app's fsyncs) and its
 * writes (data at risk: 40 writes of 4 KiB acknowledged by deferred ring
 * FSYNCs): synclat report says so. */
Test(uring, the_log_sees_ring_syncs_and_writes)
{
	char *file = h_path("log.dat"), *log = h_path("ring.log");
	struct h_cmd c;
	h_cmd_policy(&c, H_SHIM, "defer");
	h_envf(&c, "SYNCSHIM_LOG=%s", log);
	h_args(&c, h_prog("uring_ops"), "chain", file, ROUNDS_S, NULL);
	h_assert_ok(h_run(&c), "uring_ops chain under defer, logged");
	struct h_result r = h_sh(h_fmt("%s/synclat report %s", h_ctx.build, log), 60);
	h_assert_ok(r, "synclat report");
	cr_assert(h_has(r.out, "fsync                        " ROUNDS_S " "), "%s", r.out);
	cr_assert(h_has(r.out, "at risk: max 163.84 kB"), "%s", r.out);
	cr_assert_not(h_has(r.out, "around libc"), "summary mode has no records: %s", r.out);

	/* calls mode: each ring FSYNC's record carries the ring's mark, and
	 * the libc round's fsyncs (the same program, "libc") carry none. */
	for (int libc = 0; libc < 2; libc++) {
		h_cmd_policy(&c, H_SHIM, "defer");
		log = h_path(libc ? "libc-calls.log" : "ring-calls.log");
		h_envf(&c, "SYNCSHIM_LOG=%s", log);
		h_env(&c, "SYNCSHIM_LOG_MODE=calls");
		h_args(&c, h_prog("uring_ops"), "chain", file, ROUNDS_S, libc ? "libc" : NULL, NULL);
		h_assert_ok(h_run(&c), "uring_ops chain under defer, calls logged");
		r = h_sh(h_fmt("%s/synclat report %s", h_ctx.build, log), 60);
		h_assert_ok(r, "synclat report");
		if (libc)
			cr_assert_not(h_has(r.out, "around libc"), "%s", r.out);
		else
			cr_assert(h_has(r.out, "around libc: " ROUNDS_S " call records through io_uring rings, 0 through libaio"),
				  "%s", r.out);
	}
}
