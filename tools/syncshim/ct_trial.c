/*
 * ct_trial.c - one crash-test trial from start to verdict, and the loop
 * over all of them (crashtest.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crashtest.h"
#include "undolog.h"
#include "tool.h"

/* splitmix64: one seed, the same cut moments on every machine. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t plan_cut(const struct ct_opts *o, uint64_t *rng)
{
	uint64_t r = next_rand(rng); /* drawn every trial, so trial N's cut depends on the seed alone */
	if (o->cut.kind == CUT_AFTER_SYNCS)
		return 0;
	return o->cut.min_ms + r % (o->cut.max_ms - o->cut.min_ms + 1);
}

static void unusable(struct ct_trial *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unusable(struct ct_trial *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	t->verdict = V_UNUSABLE;
}

/* A server that runs as another user (PostgreSQL through runuser, any
 * daemon that drops root) records from a process of that user: root
 * gives the store to the owner of the first scope directory (the
 * server's data directory, made by --setup), and lets it through the
 * work directory; nobody else gets in. -1 after one line. */
static int hand_store_over(const struct ct_scope *sc, const char *store, const char *log)
{
	struct stat st;
	if (geteuid() != 0 || stat(sc->dirs[0], &st) != 0 || st.st_uid == 0)
		return 0;
	if (chmod(sc->work, 0711) < 0 || chown(store, st.st_uid, st.st_gid) < 0 || chown(log, st.st_uid, st.st_gid) < 0) {
		cli_err(stderr, "cannot give %s to uid %u, the owner of %s: %s", store, (unsigned)st.st_uid, sc->dirs[0],
			strerror(errno));
		return -1;
	}
	return 0;
}

/* A fresh store: the directory and its undo.log holding only the magic. */
static int new_store(const struct ct_scope *sc, unsigned n, char *store, size_t len)
{
	char log[PATH_MAX + 16];
	snprintf(store, len, "%s/trial-%u", sc->work, n);
	snprintf(log, sizeof(log), "%s/%s", store, UNDO_NAME);
	ct_remove_tree(store);
	int fd = mkdir(store, 0700) < 0 ? -1 : open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, UNDO_MAGIC, 8) != 8 || close(fd) < 0) {
		cli_err(stderr, "cannot create %s: %s", log, strerror(errno));
		return -1;
	}
	return hand_store_over(sc, store, log);
}

/* The shim says on the program's stderr when it cannot record (a store
 * its user may not write): the line, into why; false if none. */
static bool recorder_refused(const char *store, char *why, size_t len)
{
	char out[PATH_MAX + 16], line[1024];
	snprintf(out, sizeof(out), "%s/cmd.out", store);
	FILE *f = fopen(out, "re");
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, "crash-test mode: cannot append to ");
		if (at) {
			at[strcspn(at, "\n")] = '\0';
			snprintf(why, len, "%s", at);
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void set_env_u64(const char *name, uint64_t v)
{
	char b[32];
	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	setenv(name, b, 1);
}

static int initial_state(const struct ct_opts *o, const struct ct_scope *sc, unsigned n)
{
	if (!o->setup)
		return ct_snapshot_restore(sc);
	set_env_u64("SYNCSHIM_CRASHTEST_TRIAL", n);
	bool timed_out;
	int st = ct_shell(o->setup, NULL, o->timeout_s, &timed_out);
	if (st == 0)
		return 0;
	if (timed_out)
		cli_err(stderr, "--setup took more than %u s (trial %u)", o->timeout_s, n);
	else
		cli_err(stderr, "--setup exited %d (trial %u)", st, n);
	return -1;
}

/* The last non-empty line the program printed (store/cmd.out), cut short. */
static void server_last_line(const char *store, char *buf, size_t len)
{
	char out[PATH_MAX + 16], line[1024];
	snprintf(out, sizeof(out), "%s/cmd.out", store);
	buf[0] = '\0';
	FILE *f = fopen(out, "re");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(buf, len, "%.*s", (int)len - 1, line);
	}
	if (f)
		fclose(f);
}

/* Rolls back from the trial's log, unless the launcher cannot vouch for it. */
static void roll(const struct ct_opts *o, const struct ct_scope *sc, struct ct_trial *t, const char *store,
		 const struct rb_inode *before, size_t nbefore, bool changed)
{
	char path[PATH_MAX + 16], err[900];
	snprintf(path, sizeof(path), "%s/%s", store, UNDO_NAME);
	struct undo_log log;
	if (t->run.stray) {
		unusable(t, "a process of the trial was still running after the kill");
		return;
	}
	if (t->run.not_ready) {
		char last[300];
		server_last_line(store, last, sizeof(last));
		unusable(t, "the server did not answer --ready %s within %u s%s%s", o->ready, o->timeout_s,
			 last[0] ? "; its last line: " : " (it printed nothing)", last);
		return;
	}
	if (!t->run.cut && (t->run.status == 126 || t->run.status == 127)) {
		unusable(t, "%s could not be run (exit %d)", o->cmd[0], t->run.status);
		return;
	}
	if (undolog_open(path, &log, err, sizeof(err)) < 0) {
		unusable(t, "the undo log is damaged: %s", err);
		return;
	}
	t->log_records = log.n;
	t->log_bytes = log.len;
	for (size_t i = 0; i < log.n; i++) {
		const struct undo_entry *e = &log.e[i];
		if (e->h.type == UNDO_LIMIT && (e->h.flags & UNDO_F_BLIND)) {
			unusable(t, "%.*s (pid %u)", (int)e->h.plen, (const char *)e->payload, e->h.pid);
			undolog_free(&log);
			return;
		}
	}
	if (log.n == 0 && changed) {
		undolog_free(&log);
		unusable(t, "files in scope changed but the shim recorded nothing (is %s reached by LD_PRELOAD? "
			 "does the shim have crash-test mode?)", o->cmd[0]);
		return;
	}
	struct rb_opts ro = { .store = store, .dirs = (const char *const *)sc->dirs, .ndirs = sc->ndirs,
			      .names = o->names, .globs = (const char *const *)o->globs, .nglobs = o->nglobs,
			      .before = before, .nbefore = nbefore, .survive = o->survive,
			      .seed = t->writeback_seed };
	if (rollback_run(&log, &ro, &t->rb, err, sizeof(err)) < 0)
		unusable(t, "%s", err);
	else
		t->rolled = true;
	if (t->rolled && t->rb.nproblems)
		unusable(t, "the rollback could not restore everything (problems below)");
	undolog_free(&log);
}

static char *read_bounded(const char *path)
{
	char *buf = calloc(1, CT_OUTPUT_MAX + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0)
		return buf;
	size_t n = 0;
	ssize_t k;
	while (n < CT_OUTPUT_MAX && (k = read(fd, buf + n, CT_OUTPUT_MAX - n)) > 0)
		n += (size_t)k;
	close(fd);
	return buf;
}

static void run_check(const struct ct_opts *o, struct ct_trial *t, const char *store)
{
	t->verdict = V_PASS;
	if (!o->check)
		return;
	char out[PATH_MAX + 16], w[32];
	snprintf(out, sizeof(out), "%s/check.out", store);
	set_env_u64("SYNCSHIM_CRASHTEST_TRIAL", t->n);
	set_env_u64("SYNCSHIM_CRASHTEST_CUT", t->run.cut);
	set_env_u64("SYNCSHIM_CRASHTEST_CUT_NS", t->run.end_ns);
	/* the same moment on the wall clock, for checks written in a shell
	 * (bash's $EPOCHREALTIME stamps their acknowledgements) */
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	double cut_real = (double)rt.tv_sec + (double)rt.tv_nsec / 1e9 - (double)(ct_now_ns() - t->run.end_ns) / 1e9;
	snprintf(w, sizeof(w), "%.6f", cut_real);
	setenv("SYNCSHIM_CRASHTEST_CUT_REALTIME", w, 1);
	double win = ct_window_ms(t, t->rb.oldest_ns);
	snprintf(w, sizeof(w), "%.3f", win < 0 ? 0 : win);
	setenv("SYNCSHIM_CRASHTEST_WINDOW_MS", w, 1);
	setenv("SYNCSHIM_CRASHTEST_STORE", store, 1);
	t->check_status = ct_shell(o->check, out, o->timeout_s, &t->check_timed_out);
	t->check_out = read_bounded(out);
	if (t->check_timed_out) {
		t->verdict = V_FAIL;
		snprintf(t->why, sizeof(t->why), "timed out after %u s", o->timeout_s);
	} else if (t->check_status != 0) {
		t->verdict = V_FAIL;
		snprintf(t->why, sizeof(t->why), "exit %d", t->check_status);
	}
}

/* A trial that did not pass: the scope as the rollback left it, the
 * store (undo.log, kept links, the program's and the check's output). */
static void keep_trial(const struct ct_opts *o, const struct ct_scope *sc, struct ct_trial *t, const char *store)
{
	if (!o->keep || t->verdict == V_PASS)
		return;
	char dst[PATH_MAX], sub[PATH_MAX + 16];
	snprintf(dst, sizeof(dst), "%s/trial-%u", o->keep, t->n);
	ct_remove_tree(dst);
	snprintf(sub, sizeof(sub), "%s/files", dst);
	int bad = ct_copy_scope(sc, sub);
	snprintf(sub, sizeof(sub), "%s/store", dst);
	bad |= ct_copy_dir(store, sub);
	snprintf(t->kept, sizeof(t->kept), "%s", dst);
	snprintf(sub, sizeof(sub), "%s/report.txt", dst);
	ct_report_trial_to(sub, o, t);
	if (bad)
		cli_err(stderr, "trial %u kept in %s, but not all of it", t->n, dst);
}

static struct rb_inode *inodes_of(const struct ct_file *f, size_t n)
{
	struct rb_inode *r = calloc(n + 1, sizeof(*r));
	for (size_t i = 0; r && i < n; i++)
		r[i] = (struct rb_inode){ f[i].dev, f[i].ino };
	return r;
}

/* One trial; -1 if the launcher cannot go on (no initial state, no store). */
static int one_trial(const struct ct_opts *o, const struct ct_scope *sc, uint64_t *rng, struct ct_trial *t)
{
	char store[PATH_MAX];
	struct ct_file *before = NULL, *after = NULL;
	size_t nb = 0, na = 0;
	if (initial_state(o, sc, t->n) < 0 || ct_inventory(sc, &before, &nb) < 0 ||
	    new_store(sc, t->n, store, sizeof(store)) < 0)
		return -1;
	t->planned_ms = plan_cut(o, rng);
	/* not drawn from rng: the cut moments of a seed stay what they were */
	uint64_t ws = o->seed ^ ((uint64_t)t->n << 32);
	t->writeback_seed = next_rand(&ws);
	struct rb_inode *inodes = inodes_of(before, nb);
	int r = -1;
	char refused[1024];
	bool ran = inodes && ct_run_trial(o, store, t->planned_ms, &t->run) == 0;
	if (ran && recorder_refused(store, refused, sizeof(refused))) {
		/* every trial would record nothing: stop, saying exactly why */
		cli_err(stderr, "trial %u: the program could not record: %s; a server that runs as another user "
			"needs the store to be its own: run crashtest as root with the server's data directory "
			"(the first --scope directory) owned by that user", t->n, refused);
	} else if (ran && ct_inventory(sc, &after, &na) == 0) {
		roll(o, sc, t, store, inodes, nb, ct_inventory_changed(before, nb, after, na));
		if (t->verdict != V_UNUSABLE)
			run_check(o, t, store);
		keep_trial(o, sc, t, store);
		r = 0;
	}
	free(inodes);
	ct_inventory_free(before, nb);
	ct_inventory_free(after, na);
	ct_remove_tree(store);
	return r;
}

static void trial_free(struct ct_trial *t)
{
	if (t->rolled)
		rollback_free(&t->rb);
	free(t->check_out);
}

static void note_kept(char *note, size_t len, const struct ct_opts *o, const struct ct_trial *t)
{
	size_t n = strlen(note);
	if (!t->kept[0] || n + 32 >= len)
		return;
	if (!n)
		n = (size_t)snprintf(note, len, "trials that did not pass are kept in %s:", o->keep);
	snprintf(note + n, len - n, " trial-%u", t->n);
}

int ct_trials(const struct ct_opts *o)
{
	ct_signals_init();
	struct ct_scope sc;
	if (ct_scope_init(&sc, o) < 0)
		return 2;
	bool snapped = !o->setup && ct_snapshot_take(&sc) == 0;
	int fatal = !o->setup && !snapped;
	uint64_t rng = o->seed;
	struct ct_totals tot = { 0 };
	char note[1024] = "";
	if (o->json)
		ct_json_begin(o);
	for (unsigned n = 1; n <= o->trials && !fatal && !ct_interrupted; n++) {
		struct ct_trial t = { .n = n, .check_status = -1 };
		fatal = one_trial(o, &sc, &rng, &t) < 0;
		if (!fatal && o->json)
			ct_json_trial(&t, n == 1);
		else if (!fatal)
			ct_report_trial(o, &t);
		if (!fatal)
			ct_totals_add(&tot, &t);
		note_kept(note, sizeof(note), o, &t);
		trial_free(&t);
	}
	if (o->json)
		ct_json_end(&tot);
	else
		ct_report_total(o, &tot, note);
	if (snapped && ct_snapshot_restore(&sc) < 0) /* the user's files as they were */
		fatal = 1;
	ct_scope_done(&sc);
	if (ct_interrupted)
		return 130;
	return fatal ? 2 : tot.failed || tot.unusable ? 1 : 0;
}
