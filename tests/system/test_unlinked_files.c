/*
 * test_unlinked_files.c - files that lose their name while the shim owes
 * them syncs: unlinked while open (temporary files), renamed or unlinked
 * under a mapping, left with no name and no descriptor, given a name again
 * (O_TMPFILE linked, RENAME_EXCHANGE), or followed by a new file on the
 * same inode number: each gets its syncs, and no error the disk did not
 * give.
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

TestSuite(unlinked_files, .init = h_setup, .fini = h_failfs_fini, .timeout = 240);

/* The last record of op on ino (NULL: none). */
static const struct h_rec *last_of(const struct h_log *log, const char *op, unsigned long long ino)
{
	const struct h_rec *r = NULL;
	for (size_t i = 0; i < log->n; i++)
		if (!strcmp(log->r[i].op, op) && (!ino || log->r[i].ino == ino))
			r = &log->r[i];
	return r;
}

/* ---- a file unlinked while open is synced through a descriptor ---------- */

/* Four threads each open a file, unlink it, write, fsync (deferred) and
 * close, over and over, on a healthy disk: no call may fail. */
Test(unlinked_files, unlinked_open_files_get_no_spurious_eio)
{
	char *d = h_path("u");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = h_ini("u.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*\nsync = defer\n"
					  "max_delay_ms = auto\n", d));
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM, ini);
	h_args(&c, h_prog("unlinked_files"), "unlinked", "-d", d, "-t", "4", "-n", h_ctx.asan ? "500" : "2500", NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "unlinked_files unlinked");
	cr_assert_gt(h_num_after(r.out, "calls=", 0), 0, "%s", r.out);
	cr_assert_eq(h_num_after(r.out, "failed=", -1), 0, "fsync/close of files unlinked while open failed on a "
		     "healthy disk: %s\nstderr:\n%s", r.out, r.err);
	cr_assert_str_empty(r.err, "stderr:\n%s", r.err);
}

/* Issue 28, 1: no invented errors. A failing call beneath the shim (the
 * recording layer: the syncs and closes the kernel really answered). */
static bool real_call_failed(const struct h_rec *r, const void *arg)
{
	(void)arg;
	bool sync_or_close = !strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync") || !strcmp(r->op, "syncfs") ||
			     !strcmp(r->op, "close");
	return sync_or_close && r->ret < 0;
}

static bool real_sync_made(const struct h_rec *r, const void *arg)
{
	(void)arg;
	return (!strcmp(r->op, "fsync") || !strcmp(r->op, "fdatasync") || !strcmp(r->op, "syncfs")) && r->ret == 0;
}

/* Temporary files as sqlite and MariaDB make them: four threads each
 * open a file, unlink it, write 4 KiB and fsync four times, close. A
 * deferred sync led while the app closes the file (its descriptor marked
 * closing, the closer waiting for a sync that borrowed it) once found no
 * descriptor and tried the name, which an unlinked file no longer has:
 * an EIO for a fsync or close, or a "deferred sync ... failed" line, on a
 * healthy disk. The rule: every error the app is given, or told of on
 * stderr, is one the kernel gave beneath the shim. */
Test(unlinked_files, temp_files_get_no_error_the_disk_did_not_give)
{
	char *d = h_path("tmp");
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=defer");
	h_env(&c, "RECLAYER_OPS=fsync,fdatasync,syncfs,close");
	h_args(&c, h_prog("unlinked_files"), "unlinked", "-d", d, "-t", "4", "-k", "4", "-n", h_ctx.asan ? "500" : "2000",
	       NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "unlinked_files unlinked");
	struct h_log log = h_log_load(&c);
	int beneath = h_count_if(&log, real_call_failed, NULL);
	int told = 0;
	for (const char *p = r.err; (p = strstr(p, "deferred sync of")); p++)
		told++;
	long long app = h_num_after(r.out, "failed=", -1);
	cr_assert_gt(h_num_after(r.out, "calls=", 0), 0, "%s", r.out);
	cr_assert_gt(h_count_if(&log, real_sync_made, NULL), 0, "the recording layer saw no real sync");
	cr_assert_leq(app + told, beneath,
		      "the app got %lld failed fsync/close and stderr told %d failed deferred syncs, but beneath the "
		      "shim %d sync or close failed: %s\nstderr (first lines):\n%.2000s",
		      app, told, beneath, r.out, r.err);
	/* and each was synced through a descriptor of its own: the file
	 * system's sync is for a file no descriptor or name leads to */
	cr_assert_eq(h_count(&log, "syncfs", 0), 0,
		     "a temporary file's deferred sync went to its whole file system: no descriptor of it was found "
		     "while its closer waited");
}

/* A closed file whose deferred sync is owed loses every way to it behind
 * the shim's back: its directory renamed (or the file unlinked) and the
 * shim's own descriptor closed, by raw system calls as another process
 * would. The sync owed is still made, on the file system that holds it
 * (a syncfs beneath the shim), and no error is made up: before, the
 * flusher's reopen by name failed and stderr said the deferred sync had
 * failed with EIO. */
Test(unlinked_files, file_with_no_descriptor_or_name_left_gets_no_made_up_error)
{
	for (int unlinked = 0; unlinked < 2; unlinked++) {
		char *d = h_path(unlinked ? "gone" : "moved");
		cr_assert_eq(mkdir(d, 0755), 0);
		char *ini = h_ini(unlinked ? "gone.ini" : "moved.ini",
				   h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/**\nsync = defer\n"
					 "max_delay_ms = 60000\n", d));
		struct h_cmd c;
		h_cmd_ini(&c, H_SHIM_REC, ini);
		h_args(&c, h_prog("unlinked_files"), "privlost", "-d", d, unlinked ? "-S" : NULL, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "unlinked_files privlost");
		cr_assert(h_has(r.out, "privlost: closed=1"), "the shim kept no descriptor of its own to lose: %s", r.out);
		cr_assert(!strstr(r.err, "deferred sync of"),
			  "%s: a deferred sync reported failed that no call beneath the shim failed:\n%s",
			  unlinked ? "unlinked" : "moved", r.err);
		struct h_log log = h_log_load(&c);
		cr_assert_eq(h_count_if(&log, real_call_failed, NULL), 0, "a real sync failed on a healthy disk");
		cr_assert_geq(h_count(&log, "syncfs", 0), 1, "%s: the owed sync was never made (no syncfs beneath)",
			      unlinked ? "unlinked" : "moved");
	}
}

/* ---- msync of a mapping whose file was renamed or unlinked ------------- */

Test(unlinked_files, msync_of_moved_file_is_synced_through_its_descriptor)
{
	char *d = h_path("m");
	cr_assert_eq(mkdir(d, 0755), 0);
	struct h_cmd c;
	h_cmd_ini(&c, H_SHIM_REC, NULL);
	h_env(&c, "SYNCSHIM_POLICY=defer");
	h_args(&c, h_prog("unlinked_files"), "msyncmoved", "-d", d, NULL);
	struct h_result r = h_run(&c);
	h_assert_ok(r, "unlinked_files msyncmoved");
	cr_assert(h_has(r.out, "msync=0,0 fsync=0"), "a deferred msync of a renamed/unlinked file failed "
		  "(without the shim all succeed): %s\nstderr:\n%s", r.out, r.err);
	cr_assert_str_empty(r.err, "stderr:\n%s", r.err);
	struct h_log log = h_log_load(&c);
	int n = 0;
	for (size_t i = 0; i < log.n; i++)
		n += (!strcmp(log.r[i].op, "fsync") || !strcmp(log.r[i].op, "fdatasync")) && log.r[i].ret == 0;
	cr_assert_geq(n, 2, "the two msyncs were not made durable by real syncs (%d)", n);
}

/* ---- a new file never inherits a deleted file's error or rule ------------ */

/* a.def (defer) gets a deferred sync that fails beneath the shim after
 * its last close, so the error waits for the next opener; it is deleted,
 * and a new file b.N.pass (passthrough) reuses its inode number. b's
 * fsyncs are its own: real, and not failed with a's error. */
Test(unlinked_files, new_file_on_a_reused_inode_number_is_a_new_file)
{
	char *d = h_path("i");
	cr_assert_eq(mkdir(d, 0755), 0);
	char *ini = h_ini("i.ini", h_fmt("[shim]\npolicy = passthrough\n[rule r]\npath = %s/*/*.def\nsync = defer\n"
					  "max_delay_ms = 10000\n", d));
	int reused = 0;
	for (int run = 0; run < 3; run++) {
		char *dr = h_fmt("%s/%d", d, run);
		cr_assert_eq(mkdir(dr, 0755), 0);
		struct h_cmd c;
		h_cmd_ini(&c, H_SHIM_REC, ini);
		h_env(&c, "RECLAYER_FAIL=sync:EIO:0:1");
		h_args(&c, h_prog("unlinked_files"), "reuse", "-d", dr, NULL);
		struct h_result r = h_run(&c);
		h_assert_ok(r, "unlinked_files reuse");
		long long a = h_num_after(r.out, "a=", 0), b = h_num_after(r.out, "b=", 0);
		if (a != b) {
			h_note("run %d: no new file reused the inode number: %s", run, r.out);
			continue;
		}
		reused++;
		cr_assert(h_has(r.out, "fsync=0,0,0"), "the new file's fsyncs failed with the deleted file's error: "
			  "%s\nstderr:\n%s", r.out, r.err);
		struct h_log log = h_log_load(&c);
		cr_assert_eq(h_real_syncs(&log, (unsigned long long)b), 1 + 3, "the new passthrough file's 3 fsyncs "
			     "did not all reach it (the deleted file's rule?): %s", r.out);
	}
	cr_assert_gt(reused, 0, "ext4 never reused the inode number here");
}

/* ---- publishing a name is a barrier ------------------------------------ */

Test(unlinked_files, link_tmpfile_and_exchange_wait_for_pending_syncs)
{
	static const char *const modes[] = { "link", "tmpfile", "exchange" };
	for (int m = 0; m < 3; m++) {
		char *dir = h_path(modes[m]);
		cr_assert_eq(mkdir(dir, 0755), 0);
		struct h_cmd c;
		h_cmd_policy_only(&c, H_SHIM_REC, "defer");
		h_args(&c, h_prog("publish"), "-d", dir, "-m", modes[m], NULL);
		h_assert_ok(h_run(&c), h_fmt("publish -m %s", modes[m]));
		struct h_log log = h_log_load(&c);
		const char *op = m == 2 ? "rename" : "link";
		const struct h_rec *pub = last_of(&log, op, 0);
		cr_assert_not_null(pub, "%s: no %s recorded", modes[m], op);
		unsigned long long published = h_ino(h_fmt("%s/dst.dat", dir));
		unsigned long long other = m == 2 ? h_ino(h_fmt("%s/src.dat", dir)) : 0;
		for (int k = 0; k < (m == 2 ? 2 : 1); k++) {
			unsigned long long ino = k ? other : published;
			bool before = false;
			for (size_t i = 0; i < log.n; i++)
				if ((!strcmp(log.r[i].op, "fdatasync") || !strcmp(log.r[i].op, "fsync")) &&
				    log.r[i].ino == ino && log.r[i].t1 <= pub->t0)
					before = true;
			cr_assert(before, "%s: the data published was not synced before the %s", modes[m], op);
		}
	}
}
