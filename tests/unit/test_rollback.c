/*
 * test_rollback.c - the undo log's reader and the rollback on logs made
 * here (tests/undo_sim.h does each file operation and appends the record
 * the shim would): every record type, both names models, the cut tail,
 * damage named by its byte, and the file contents a rollback leaves.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rollback.h"
#include "undo_sim.h"
#include "undolog.h"

static char dir[256], store[300], data[300];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/syncshim-rb.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(data, sizeof(data), "%s/data", dir);
	cr_assert_eq(mkdir(store, 0700), 0);
	cr_assert_eq(mkdir(data, 0755), 0);
}

static void teardown(void)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(undolog, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(rollback, .init = setup, .fini = teardown, .timeout = 30);

static char *in(const char *base, const char *name)
{
	char *p = sim_keep(malloc(640));
	snprintf(p, 640, "%s/%s", base, name);
	return p;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* The file's content, or "<none>" if it does not exist. */
static char *get(const char *path)
{
	static char buf[8][4096];
	static int k;
	char *b = buf[k++ % 8];
	FILE *f = fopen(path, "r");
	if (!f)
		return strcpy(b, "<none>");
	size_t n = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

/* Reads s's log as parsed from memory; asserts it parses. */
static void parse_ok(const struct sim *s, size_t len, struct undo_log *log)
{
	char err[512];
	int r = undolog_parse(s->b, len, log, err, sizeof(err));
	cr_assert_eq(r, 0, "parse: %s", err);
}

/* Saves the log, reads it back from the file and rolls back. */
static struct rb_result roll(const struct sim *s, enum names_model m)
{
	sim_save(s, s->n);
	char err[512], *path = in(store, UNDO_NAME);
	struct undo_log log;
	cr_assert_eq(undolog_open(path, &log, err, sizeof(err)), 0, "%s", err);
	const char *dirs[] = { data };
	struct rb_opts o = { .store = store, .dirs = dirs, .ndirs = 1, .names = m };
	struct rb_result r;
	cr_assert_eq(rollback_run(&log, &o, &r, err, sizeof(err)), 0, "%s", err);
	for (size_t i = 0; i < r.nproblems; i++)
		cr_log_info("problem: %s", r.problems[i]);
	for (size_t i = 0; i < r.nnames; i++)
		cr_log_info("name: %s", r.names[i]);
	undolog_free(&log);
	return r;
}

/* ---- the reader ---- */

/* One record of every type, read back field for field. */
static void every_type(struct sim *s, uint64_t *at)
{
	char *f = in(data, "f"), *g = in(data, "g");
	put(f, "0123456789");
	at[0] = sim_write(s, f, 5, "abcdefgh");     /* overwrites 5 bytes, appends 3 */
	at[1] = sim_truncate(s, f, 4);
	at[2] = sim_fsync(s, f);
	at[3] = sim_syncfs(s, 0);
	at[4] = sim_create(s, g);
	at[5] = sim_rename(s, g, in(data, "h"));
	at[6] = sim_unlink(s, in(data, "h"));
	at[7] = sim_dirsync(s, data);
	at[8] = sim_rec(s, UNDO_LIMIT, 1, 2, 0, 0, 0, "a shared writable mapping", 25);
	at[9] = sim_rec(s, UNDO_FULL, 0, 0, 0, 0, 0, NULL, 0);
}

Test(undolog, every_record_type_reads_back)
{
	struct sim s;
	sim_init(&s, store);
	uint64_t at[10];
	every_type(&s, at);
	struct undo_log log;
	parse_ok(&s, s.n, &log);
	cr_assert_eq(log.n, 10);
	static const unsigned types[] = { UNDO_WRITE, UNDO_SIZE, UNDO_DURABLE, UNDO_DURABLE_DEV, UNDO_CREATE,
					  UNDO_RENAME, UNDO_UNLINK, UNDO_DIRSYNC, UNDO_LIMIT, UNDO_FULL };
	for (unsigned i = 0; i < 10; i++) {
		cr_expect_eq(log.e[i].h.type, types[i], "record %u: type %u", i, log.e[i].h.type);
		cr_expect_eq(log.e[i].at, at[i]);
	}
	cr_expect_eq(log.e[0].h.plen, 5, "WRITE pre-image: the 5 bytes it overwrote");
	cr_expect(memcmp(log.e[0].payload, "56789", 5) == 0);
	cr_expect_eq(log.e[1].h.plen, 9, "SIZE pre-image: what the shrink cut off");
	cr_expect(memcmp(log.e[1].payload, "4abcdefgh", 9) == 0);
	char f[3][UNDO_FIELD_MAX];
	cr_expect_eq(undo_fields(&log.e[5], f, 3), 2, "nothing replaced: no third field");
	cr_expect(strstr(f[0], "/g") && strstr(f[1], "/h") && f[2][0] == '\0');
	cr_expect_eq(undo_fields(&log.e[6], f, 3), 2);
	cr_expect_str_eq(f[1], "kept.1");
	cr_expect(log.full);
	cr_expect_eq(log.tail, 0);
	cr_expect_eq(log.end, s.n);
	cr_expect_str_eq(undo_type_name(UNDO_DURABLE_DEV), "DURABLE_DEV");
	undolog_free(&log);
}

/* The cut may end the log anywhere inside its last record: always read. */
Test(undolog, a_cut_short_last_record_is_the_cut)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "hello world");
	sim_write(&s, f, 0, "HELLO");
	uint64_t last = sim_write(&s, f, 6, "WORLD, again");
	for (size_t len = last; len < s.n; len++) {
		struct undo_log log;
		parse_ok(&s, len, &log);
		cr_assert_eq(log.n, 1, "cut at %zu: %zu records", len, log.n);
		cr_assert_eq(log.end, last);
		cr_assert_eq(log.tail, len - last);
		undolog_free(&log);
	}
	struct undo_log log;
	parse_ok(&s, 8, &log); /* only the magic: a run that recorded nothing */
	cr_expect_eq(log.n, 0);
	undolog_free(&log);
}

/* Damage before the tail: refused, naming the byte. */
static void expect_damage(struct sim *s, size_t byte, uint8_t value, const char *words, uint64_t named)
{
	uint8_t keep = s->b[byte];
	s->b[byte] = value;
	struct undo_log log;
	char err[512], want[64];
	int r = undolog_parse(s->b, s->n, &log, err, sizeof(err));
	s->b[byte] = keep;
	cr_assert_eq(r, -1, "byte %zu = 0x%02x accepted", byte, value);
	snprintf(want, sizeof(want), "byte %llu:", (unsigned long long)named);
	cr_expect(strstr(err, want) && strstr(err, words), "byte %zu: want \"%s\" and \"%s\" in: %s", byte, want,
		  words, err);
	cr_expect_eq(log.n, 0);
}

Test(undolog, damage_is_named_by_its_byte)
{
	struct sim s;
	sim_init(&s, store);
	uint64_t at[10];
	every_type(&s, at);
	uint64_t w = at[0], d = at[2];
	expect_damage(&s, 0, 'X', "not an undo log", 0);
	expect_damage(&s, w + 1, 0x00, "no record starts here", w);
	expect_damage(&s, w + 4, 77, "unknown type 77", w + 4);
	expect_damage(&s, w + 6, 4, "flags", w + 6);      /* a flag WRITE does not have */
	expect_damage(&s, d + 6, 1, "flags", d + 6);      /* DURABLE has none */
	expect_damage(&s, w + 68, 1, "reserved", w + 68);
	expect_damage(&s, w + 12, 6, "payload of 6 bytes, at most 5", w + 12); /* plen beyond its pre-image */
	expect_damage(&s, w + 72, 'Z', "CRC mismatch", w + 64);                 /* a payload byte */
	expect_damage(&s, w + 16, 0x99, "CRC mismatch", w + 64);                /* a head byte the CRC covers */
	expect_damage(&s, d + 47, 0x7f, "upto", d + 40);                       /* upto after its own record */
	/* A whole record's worth of zeros is not a cut. */
	size_t n = s.n;
	memset(s.b + s.n, 0, 80);
	s.n += 80;
	expect_damage(&s, n + 1, 0, "no record starts here", n);
	s.n = n + 3; /* 3 stray bytes that cannot begin a record */
	expect_damage(&s, n, 0x11, "do not begin a record", n);
}

/* after-syncs counts DURABLE and DURABLE_DEV heads as the log grows. */
Test(undolog, follow_counts_syncs_as_they_appear)
{
	struct sim s;
	sim_init(&s, store);
	uint64_t at[10];
	every_type(&s, at);
	char *path = in(store, "grow.log");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	struct undo_follow fo;
	undo_follow_init(&fo, fd);
	size_t steps[] = { 8, at[2] + 10, at[3], at[4], s.n };
	unsigned want[] = { 0, 0, 1, 2, 2 };
	size_t done = 0;
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(pwrite(fd, s.b + done, steps[i] - done, (off_t)done), (ssize_t)(steps[i] - done));
		done = steps[i];
		undo_follow_poll(&fo);
		cr_expect_eq(fo.syncs, want[i], "after %zu bytes: %u syncs", done, fo.syncs);
	}
	cr_expect_eq(fo.records, 10);
	close(fd);
}

/* ---- the rollback: data ---- */

/* Overwrite, append and shrink after the fsync: back to the synced state. */
Test(rollback, undoes_data_after_the_durable_point_newest_first)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "");
	sim_write(&s, f, 0, "durable:");
	sim_fsync(&s, f);
	uint64_t t_first = s.clock;
	sim_write(&s, f, 0, "DURA");            /* overwrite */
	sim_write(&s, f, 8, " lost tail");       /* append */
	sim_truncate(&s, f, 3);                  /* shrink */
	sim_write(&s, f, 20, "beyond a hole");   /* grows with a hole */
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(f), "durable:");
	cr_assert_eq(r.nfiles, 1);
	cr_expect_eq(r.files[0].records, 4);
	cr_expect_eq(r.files[0].bytes, 4 + 10 + 15 + 13);
	cr_expect_eq(r.files[0].oldest_ns, t_first);
	cr_expect_eq(r.oldest_ns, t_first);
	cr_expect_str_eq(r.files[0].path, f);
	cr_expect(rollback_exact(&r));
	rollback_free(&r);
}

/* A file synced after its last change loses nothing; sync() and syncfs()
 * of its device cover it as its own fsync does. */
Test(rollback, durable_covers_only_what_was_logged_before_the_sync_began)
{
	struct sim s;
	sim_init(&s, store);
	char *a = in(data, "a"), *b = in(data, "b"), *c = in(data, "c");
	put(a, "");
	put(b, "");
	put(c, "");
	sim_write(&s, a, 0, "a1");
	sim_write(&s, b, 0, "b1");
	sim_fsync(&s, a);
	sim_syncfs(&s, sim_stat(c).st_dev);  /* covers b's b1 (and a's) */
	sim_write(&s, c, 0, "c1");
	sim_syncfs(&s, 0);                   /* sync(): every device */
	sim_write(&s, a, 2, "a2");
	sim_write(&s, b, 2, "b2");
	sim_fsync(&s, b);
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(a), "a1");
	cr_expect_str_eq(get(b), "b1b2");
	cr_expect_str_eq(get(c), "c1");
	cr_expect_eq(r.records, 1);
	cr_expect_eq(r.bytes, 2);
	rollback_free(&r);
}

/* A sync record whose upto precedes a change does not cover it even
 * though the record comes after it (the sync began first). */
Test(rollback, a_sync_begun_before_a_change_does_not_cover_it)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "");
	uint64_t began = s.n;
	sim_write(&s, f, 0, "raced");
	struct stat st = sim_stat(f);
	sim_rec(&s, UNDO_DURABLE, st.st_dev, st.st_ino, began, 0, 0, NULL, 0);
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(f), "");
	cr_expect_eq(r.records, 1);
	rollback_free(&r);
}

/* Data follows the inode: a file renamed (durably) after its writes, and
 * one unlinked with its link kept in the store. */
Test(rollback, finds_files_by_inode_wherever_they_went)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f"), *moved = in(data, "sub/moved"), *u = in(data, "u");
	cr_assert_eq(mkdir(in(data, "sub"), 0755), 0);
	put(f, "old");
	put(u, "keep");
	sim_write(&s, f, 0, "NEW");
	sim_write(&s, u, 0, "LOST");
	sim_rename(&s, f, moved);
	sim_unlink(&s, u);
	sim_syncfs(&s, 0); /* every name change durable, no data change (upto covers all records) */
	/* then the data changes the rollback must undo */
	sim_write(&s, moved, 0, "xyz");
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(moved), "NEW");
	cr_expect_str_eq(get(f), "<none>");
	cr_expect_str_eq(get(u), "<none>");
	cr_expect_eq(r.nnames, 0);
	cr_expect(rollback_exact(&r));
	rollback_free(&r);
}

Test(rollback, a_file_nowhere_to_be_found_is_a_problem)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "x");
	sim_write(&s, f, 0, "y");
	cr_assert_eq(unlink(f), 0); /* gone behind the recorder's back */
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_eq(r.nproblems, 1);
	cr_expect(r.nproblems && strstr(r.problems[0], "nowhere"), "%s", r.nproblems ? r.problems[0] : "");
	cr_expect(!rollback_exact(&r));
	rollback_free(&r);
}

/* LIMIT and FULL are reported, and make the trial inexact. */
Test(rollback, limit_and_full_are_reported)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "x");
	struct stat st = sim_stat(f);
	sim_rec(&s, UNDO_LIMIT, st.st_dev, st.st_ino, 0, 0, 0, "O_DIRECT open", 13);
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_assert_eq(r.nlimits, 1);
	cr_expect(strstr(r.limits[0], f) && strstr(r.limits[0], "O_DIRECT open"), "%s", r.limits[0]);
	cr_expect(!r.full);
	cr_expect(!rollback_exact(&r));
	rollback_free(&r);
	sim_rec(&s, UNDO_FULL, 0, 0, 0, 0, 0, NULL, 0);
	r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect(r.full);
	rollback_free(&r);
}

/* A pre-image shorter than what the write overwrote: said, not guessed. */
Test(rollback, a_short_pre_image_is_a_problem)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "abcdef");
	struct stat st = sim_stat(f);
	sim_rec(&s, UNDO_WRITE, st.st_dev, st.st_ino, 0, 4, 6, "ab", 2);
	put(f, "WXYZef");
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(f), "abYZef");
	cr_expect_eq(r.nproblems, 1);
	cr_expect(r.nproblems && strstr(r.problems[0], "2 of the 4 bytes"), "%s", r.nproblems ? r.problems[0] : "");
	rollback_free(&r);
}

/* ---- the rollback: names ---- */

/* A new file fsynced, its directory never: ext4's journal made the name
 * durable with the fsync; the strict model loses it. */
Test(rollback, created_file_durable_with_its_fsync_under_ext4_ordered_only)
{
	for (int m = 0; m < NAMES_MODEL_COUNT; m++) {
		struct sim s;
		sim_init(&s, store);
		char *f = in(data, m ? "strict" : "ordered");
		sim_create(&s, f);
		sim_write(&s, f, 0, "acked");
		sim_fsync(&s, f);
		struct rb_result r = roll(&s, (enum names_model)m);
		cr_expect_str_eq(get(f), m == NAMES_STRICT ? "<none>" : "acked", "%s", names_model_name(m));
		cr_expect_eq(r.nnames, m == NAMES_STRICT, "%s: %zu names undone", names_model_name(m), r.nnames);
		rollback_free(&r);
	}
}

Test(rollback, strict_keeps_a_name_once_its_directory_was_synced)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	sim_create(&s, f);
	sim_dirsync(&s, data);
	sim_write(&s, f, 0, "lost");
	struct rb_result r = roll(&s, NAMES_STRICT);
	cr_expect_str_eq(get(f), "", "the name stays, its unsynced data goes");
	cr_expect_eq(r.nnames, 0);
	rollback_free(&r);
}

/* write-tmp, fsync, rename over the state file, and no sync after: the
 * rename is undone and the replaced file comes back from its kept link. */
Test(rollback, rename_not_durable_is_reversed_and_the_target_restored)
{
	for (int m = 0; m < NAMES_MODEL_COUNT; m++) {
		char *state = in(data, "state"), *tmp = in(data, "state.tmp");
		put(state, "old state");
		struct sim s;
		sim_init(&s, store);
		sim_create(&s, tmp);
		sim_write(&s, tmp, 0, "new state");
		sim_fsync(&s, tmp);
		sim_rename(&s, tmp, state);
		struct rb_result r = roll(&s, (enum names_model)m);
		cr_expect_str_eq(get(state), "old state", "%s", names_model_name(m));
		cr_expect_str_eq(get(tmp), m == NAMES_STRICT ? "<none>" : "new state", "%s", names_model_name(m));
		cr_expect(r.nnames >= 1 && strstr(r.names[0], "back to"), "%s", r.nnames ? r.names[0] : "");
		rollback_free(&r);
		unlink(state);
		unlink(tmp);
		unlink(in(store, "kept.1"));
	}
}

/* A later sync on the device makes the rename durable under ext4-ordered
 * (the journal commits in order); strict wants the directory synced. */
Test(rollback, a_later_sync_makes_the_rename_durable_under_ext4_ordered)
{
	for (int m = 0; m < NAMES_MODEL_COUNT; m++) {
		char *state = in(data, "state"), *tmp = in(data, "state.tmp"), *other = in(data, "other");
		put(state, "old state");
		put(other, "");
		struct sim s;
		sim_init(&s, store);
		sim_write(&s, other, 0, "o");
		sim_create(&s, tmp);
		sim_write(&s, tmp, 0, "new state");
		sim_fsync(&s, tmp);
		sim_rename(&s, tmp, state);
		sim_fsync(&s, other);
		struct rb_result r = roll(&s, (enum names_model)m);
		cr_expect_str_eq(get(state), m == NAMES_STRICT ? "old state" : "new state", "%s", names_model_name(m));
		rollback_free(&r);
		unlink(state);
		unlink(tmp);
		unlink(other);
		unlink(in(store, "kept.1"));
	}
}

Test(rollback, unlink_not_durable_is_restored_from_the_kept_link)
{
	char *f = in(data, "f");
	put(f, "precious");
	struct sim s;
	sim_init(&s, store);
	sim_unlink(&s, f);
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(f), "precious");
	cr_expect(r.nnames == 1 && strstr(r.names[0], "restored"), "%s", r.nnames ? r.names[0] : "");
	rollback_free(&r);
	/* ... and once a sync followed it, it stays gone */
	sim_syncfs(&s, 0);
	r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(f), "precious", "restored by the first rollback, which the second leaves alone");
	cr_expect_eq(r.nnames, 0);
	rollback_free(&r);
}

/* A file in scope that appeared during the trial but the log never names
 * (created just before the cut): removed. Older files and files out of
 * scope stay. */
Test(rollback, files_created_unrecorded_at_the_cut_are_removed)
{
	char *old = in(data, "old.log"), *fresh = in(data, "fresh.log"), *other = in(data, "other.txt");
	put(old, "there before");
	struct stat st = sim_stat(old);
	struct rb_inode before[] = { { st.st_dev, st.st_ino } };
	put(fresh, "new");
	put(other, "out of scope");
	struct sim s;
	sim_init(&s, store);
	sim_save(&s, s.n);
	char err[512];
	struct undo_log log;
	cr_assert_eq(undolog_parse(s.b, s.n, &log, err, sizeof(err)), 0);
	const char *dirs[] = { data };
	char *glob = in(data, "*.log");
	const char *globs[] = { glob };
	struct rb_opts o = { .store = store, .dirs = dirs, .ndirs = 1, .globs = globs, .nglobs = 1,
			     .before = before, .nbefore = 1 };
	struct rb_result r;
	cr_assert_eq(rollback_run(&log, &o, &r, err, sizeof(err)), 0);
	cr_expect_str_eq(get(fresh), "<none>");
	cr_expect_str_eq(get(old), "there before");
	cr_expect_str_eq(get(other), "out of scope");
	cr_expect(r.nnames == 1 && strstr(r.names[0], "before the shim could record it"), "%s",
		  r.nnames ? r.names[0] : "");
	rollback_free(&r);
	undolog_free(&log);
}

Test(rollback, names_models_parse)
{
	cr_expect_eq(names_model_parse("strict"), NAMES_STRICT);
	cr_expect_eq(names_model_parse("ext4-ordered"), NAMES_EXT4_ORDERED);
	cr_expect_eq(names_model_parse("ext3"), -1);
}

/* A WRITE on an O_SYNC descriptor is durable once it returned: never
 * undone, and an older write undone around it leaves its bytes alone. */
Test(rollback, osync_writes_are_kept_and_older_undos_spare_their_bytes)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "0123456789");
	sim_write(&s, f, 2, "abcdef");             /* not durable: [2, 8) */
	struct stat st = sim_stat(f);
	int fd = open(f, O_RDWR);
	char pre[4];
	cr_assert_eq(pread(fd, pre, 4, 4), 4);
	sim_rec(&s, UNDO_WRITE, st.st_dev, st.st_ino, 4, 10, 10, pre, 4); /* O_SYNC [4, 14) */
	s.b[s.n - 72 - 4 + 6] = UNDO_F_OSYNC;      /* the flag, then the CRC again */
	struct undo_rec h;
	memcpy(&h, s.b + s.n - 72 - 4, sizeof(h));
	h.crc = 0;
	h.crc = logfmt_crc32c(logfmt_crc32c(0, &h, sizeof(h)), pre, 4);
	memcpy(s.b + s.n - 72 - 4, &h, sizeof(h));
	cr_assert_eq(pwrite(fd, "OSYNCWRITE", 10, 4), 10);
	close(fd);
	sim_write(&s, f, 12, "zz");                /* not durable, over the O_SYNC bytes */
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect_str_eq(get(f), "01" "23" "OSYNCWRITE", "the O_SYNC write stays, what was before it around it");
	cr_expect_eq(r.records, 2);
	rollback_free(&r);
}

/* What the shim says when it could not read a pre-image. */
Test(rollback, no_preimage_is_said)
{
	struct sim s;
	sim_init(&s, store);
	char *f = in(data, "f");
	put(f, "abcdef");
	struct stat st = sim_stat(f);
	sim_rec(&s, UNDO_WRITE, st.st_dev, st.st_ino, 0, 3, 6, NULL, 0);
	s.b[s.n - 72 + 6] = UNDO_F_NO_PREIMAGE;
	struct undo_rec h;
	memcpy(&h, s.b + s.n - 72, sizeof(h));
	h.crc = 0;
	h.crc = logfmt_crc32c(0, &h, sizeof(h));
	memcpy(s.b + s.n - 72, &h, sizeof(h));
	struct rb_result r = roll(&s, NAMES_EXT4_ORDERED);
	cr_expect(r.nproblems == 1 && strstr(r.problems[0], "could not read"), "%s",
		  r.nproblems ? r.problems[0] : "");
	rollback_free(&r);
}
