/*
 * test_order_rules.c - ordered defer's decisions (shim/defer/order.c),
 * in-process: which write goes straight on, which waits for a real sync
 * (of its own file, or of another), and which is held instead.
 *
 * order.c is compiled in whole (its statics are this file's), over the
 * stand-ins of tests/unit/stand_ins.h and, for its neighbours in defer/,
 * the ones below: the flusher is the suite's (flusher_await records the
 * wait, then does what a real sync does to the order: begins, covers the
 * requests, ends), and held.c's hold records what would be held. The app
 * is the suite too: app_write makes a write the way the write wrappers
 * do (order_before_write, the real pwrite on a real file, then
 * order_after_write), app_deferred_sync answers a sync as defer_request
 * does (the request numbered, then order_acked). No thread, no sleep: a
 * wait is a call to flusher_await with a request not yet durable.
 * tests/system/test_order.c and test_held.c hold the same rules on real
 * programs under the shim.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>

#include "knobs.c"
#include "order.c"
#include "stand_ins.h"

/* defer with ordering, as the shim's [shim] section would say it. */
#define DEFER_INI "[shim]\npolicy = defer\nmax_delay_ms = 1000\n"

/* ---- the neighbours: the flusher, the threads, held changes ------------------ */

struct waited {
	struct shim_file *f;
	uint64_t target;
};
static struct waited waits[32];
static int nwaits;

uint64_t flusher_requested(struct shim_file *f)
{
	return atomic_load(&f->fl.req_seq);
}

bool flusher_owes(struct shim_file *f)
{
	return atomic_load(&f->fl.req_seq) > atomic_load(&f->fl.done_seq);
}

/* A real sync of f made now, as the flusher's leader does it to the
 * order (lead_sync_locked): it begins, covers every request so far, ends. */
static void real_sync_covers_all(struct shim_file *f)
{
	uint64_t req = atomic_load(&f->fl.req_seq);
	order_sync_begins(f);
	atomic_store(&f->fl.done_seq, req);
	order_sync_ends(f, true);
}

void flusher_await(struct shim_file *f, uint64_t target)
{
	if (atomic_load(&f->fl.done_seq) >= target)
		return; /* durable already: no wait */
	cr_assert_lt(nwaits, 32);
	waits[nwaits++] = (struct waited){ f, target };
	real_sync_covers_all(f);
}

static int flush_alls;

void flusher_flush_all(void)
{
	flush_alls++;
}

bool workers_force(struct shim_file *f)
{
	(void)f;
	return true;
}

void workers_schedule(struct shim_file *f, bool urgent)
{
	(void)f, (void)urgent;
}

static bool holding_allowed;
static bool hold_refused; /* held_hold says no, as a bound would */

struct held_write {
	struct shim_file *f;
	uint64_t pos, len;
	int ndeps;
	struct held_dep dep; /* the first */
	uint64_t self;
};
static struct held_write helds[16];
static int nhelds;

bool held_allowed(void)
{
	return holding_allowed;
}

bool held_hold(struct shim_file *f, int fd, uint64_t pos, const struct iovec *iov, int cnt, size_t total,
	       struct held_dep *deps, int ndeps, uint64_t first_self)
{
	(void)fd, (void)iov, (void)cnt;
	if (hold_refused)
		return false; /* the caller keeps its references */
	cr_assert_lt(nhelds, 16);
	helds[nhelds++] = (struct held_write){ f, pos, total, ndeps, ndeps ? deps[0] : (struct held_dep){ 0 }, first_self };
	for (int i = 0; i < ndeps; i++)
		file_put(deps[i].g); /* the change owned them */
	return true;
}

void held_apply_file(struct shim_file *f)
{
	(void)f;
}

void held_stats_read(struct held_stats *s)
{
	memset(s, 0, sizeof(*s));
}

/* ---- the app ------------------------------------------------------------------ */

static char dir[64];

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/syncshim-order-rules.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	shim.pid = getpid();
	atomic_store(&shim.ready, 1);
	order_init();
}

static void teardown(void)
{
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(order_rules, .init = setup, .fini = teardown, .timeout = 30);

static char *path_of(const char *name)
{
	static char p[4][128];
	static int next;
	char *s = p[next++ % 4];
	snprintf(s, 128, "%s/%s", dir, name);
	return s;
}

/* The file name, opened (flags) and followed under defer, as a new file
 * object (files.c: knobs, then each part reset). */
static struct shim_file *open_deferred(const char *name, int flags, int *fd)
{
	*fd = open(path_of(name), flags | O_CREAT, 0600);
	cr_assert_geq(*fd, 0, "open %s: %s", name, strerror(errno));
	struct shim_file *f = stand_in_file(*fd, DEFER_INI);
	cr_assert(file_write_work(f) & WRITES_ORDERED, "the defer rule orders its files");
	atomic_store(&f->fl.req_fd, -1);
	atomic_store(&f->hold.floor, UINT64_MAX); /* holds nothing */
	order_reset(f);
	return f;
}

/* A second descriptor of f's file. */
static int open_again(const char *name, int flags)
{
	int fd = open(path_of(name), flags);
	cr_assert_geq(fd, 0, "open %s: %s", name, strerror(errno));
	return fd;
}

/* A write of n bytes of c at off, as the write wrappers make it
 * (shim/calls/write.c). true: held (not made). */
static bool app_write_at(struct shim_file *f, int fd, off_t off, char c, size_t n, bool holdable)
{
	static char buf[65536];
	cr_assert_leq(n, sizeof(buf));
	memset(buf, c, n);
	struct iovec iov = { buf, n };
	if (order_before_write(f, fd, off, &iov, 1, holdable, NULL))
		return true;
	ssize_t r = pwrite(fd, buf, n, off);
	cr_assert_eq(r, (ssize_t)n, "pwrite: %s", strerror(errno));
	order_after_write(&f->ord, off, r, atomic_load(&f->fl.req_seq));
	risk_wrote(&f->risk, (uint64_t)r);
	return false;
}

static void app_write(struct shim_file *f, int fd, off_t off, char c, size_t n)
{
	cr_assert(!app_write_at(f, fd, off, c, n, false));
}

/* An fsync answered at once (defer_request): numbered, then acknowledged. */
static void app_deferred_sync(struct shim_file *f)
{
	atomic_fetch_add(&f->fl.req_seq, 1);
	order_acked(f);
}

/* The flusher made f's syncs real (sync_until: the sync, then order_synced). */
static void flusher_made_real(struct shim_file *f)
{
	real_sync_covers_all(f);
	order_synced(f);
}

static uint64_t summary(void)
{
	return atomic_load(ORDER_SUMMARY(order_dom));
}

static char byte_at(int fd, off_t off)
{
	char c = 0;
	cr_assert_eq(pread(fd, &c, 1, off), 1);
	return c;
}

/* ---- forward -------------------------------------------------------------- */

/* A log's next record, past the highest byte written since the file was
 * last durable, over old bytes of a recycled file (PostgreSQL's reused WAL
 * segment): forward, by the highest byte alone (the bytes differ, and the
 * file is longer). */
Test(order_rules, a_forward_append_waits_for_nothing_and_holds_nothing)
{
	int fd;
	struct shim_file *f = open_deferred("log", O_RDWR, &fd);
	static char old[65536];
	memset(old, 'o', sizeof(old));
	cr_assert_eq(pwrite(fd, old, sizeof(old), 0), (ssize_t)sizeof(old)); /* before the shim followed it */
	app_write(f, fd, 0, 'a', 4096);
	app_deferred_sync(f);
	flusher_made_real(f); /* the first round after an open is not known to go forward */
	app_write(f, fd, 4096, 'b', 4096);
	app_deferred_sync(f);
	cr_assert_neq(summary(), 0, "f's acknowledged sync is pending: its writes take the slow path");

	app_write(f, fd, 8192, 'c', 4096);
	holding_allowed = true;
	cr_expect(!app_write_at(f, fd, 12288, 'd', 4096, true), "a forward append is not held");
	cr_expect_eq(nwaits, 0, "a forward append waited for its file's sync (request %llu)",
		     nwaits ? (unsigned long long)waits[0].target : 0ull);
	cr_expect_eq(nhelds, 0);
	cr_expect_eq(byte_at(fd, 8192), 'c');
	cr_expect_eq(byte_at(fd, 12288), 'd');
	cr_expect_eq(byte_at(fd, 16384), 'o', "old bytes past the writes are still there");
}

/* ---- overwrite of its own acknowledged bytes --------------------------------- */

Test(order_rules, an_overwrite_of_acknowledged_bytes_waits_for_its_own_sync)
{
	int fd;
	struct shim_file *f = open_deferred("data", O_RDWR, &fd);
	app_write(f, fd, 0, 'a', 8192);
	app_deferred_sync(f);
	app_write(f, fd, 0, 'a', 4096); /* the same bytes again: changes nothing promised */
	cr_expect_eq(nwaits, 0, "an identical rewrite waited");

	app_write(f, fd, 4096, 'z', 4096);
	cr_assert_eq(nwaits, 1, "an overwrite of promised bytes went on before its file's sync");
	cr_expect_eq(waits[0].f, f);
	cr_expect_eq(waits[0].target, 1, "it waits for request 1 (the acknowledged one)");
	cr_expect_eq(byte_at(fd, 4096), 'z');
	cr_expect_eq(summary(), 0, "the sync it waited for covered the file's only acknowledgement");
}

Test(order_rules, an_overwrite_of_acknowledged_bytes_is_held_behind_its_own_sync)
{
	int fd;
	struct shim_file *f = open_deferred("data", O_RDWR, &fd);
	app_write(f, fd, 0, 'a', 8192);
	app_deferred_sync(f);
	holding_allowed = true;
	cr_assert(app_write_at(f, fd, 4096, 'z', 4096, true), "an overwrite of promised bytes is held");
	cr_expect_eq(nwaits, 0, "held, not waited for");
	cr_assert_eq(nhelds, 1);
	cr_expect_eq(helds[0].f, f);
	cr_expect_eq(helds[0].pos, 4096);
	cr_expect_eq(helds[0].ndeps, 0, "no other file to wait for");
	cr_expect_eq(helds[0].self, 1, "behind its own request 1");
	cr_expect_eq(byte_at(fd, 4096), 'a', "the held write is not in the kernel");
}

/* ---- past the known end --------------------------------------------------------- */

/* A write past the file's known end leaves a gap of zeros; filling it
 * later is forward as well, even through a descriptor that cannot read
 * (no compare possible), while a write over written bytes there waits. */
Test(order_rules, a_write_past_the_known_end_and_the_gap_it_left_are_forward)
{
	int rw;
	struct shim_file *f = open_deferred("journal", O_RDWR, &rw);
	int wo = open_again("journal", O_WRONLY);
	app_write(f, rw, 0, 'a', 4096); /* the first after the open: the highest byte not known */
	app_deferred_sync(f);
	app_write(f, rw, 0, 'a', 4096); /* identical: sizes the file once (fstat) */
	cr_assert_eq(nwaits, 0);

	app_write(f, wo, 8192, 'c', 4096); /* past the known end (4096): leaves [4096, 8192) */
	cr_expect_eq(nwaits, 0, "a write past the known end waited");
	app_write(f, wo, 4096, 'b', 4096); /* into the gap, write-only: nothing to compare with */
	cr_expect_eq(nwaits, 0, "filling the gap a write left past the known end waited");

	app_write(f, wo, 0, 'z', 4096);
	cr_expect_eq(nwaits, 1, "a write-only overwrite of written bytes below the gap went on unchecked");
	cr_expect_eq(byte_at(rw, 4096), 'b');
	cr_expect_eq(byte_at(rw, 8192), 'c');
	close(wo);
}

/* ---- tail rewrites ------------------------------------------------------------ */

#define MARKER 5 /* KahaDB's end-of-file marker: each batch starts over the last one's */

/* Rounds that went forward, the last one durable: a batch that begins
 * over the last acknowledged batch's end marker and goes on past it does
 * not wait; one that ends short of the highest promised byte, or reaches
 * into the durable log, does. */
static struct shim_file *kahadb_journal(int *fd)
{
	struct shim_file *f = open_deferred("db-1.log", O_RDWR, fd);
	app_write(f, *fd, 0, 'a', 4096);
	app_deferred_sync(f);
	flusher_made_real(f); /* the round after the open: its end not known */
	app_write(f, *fd, 4096 - MARKER, 'b', 4096 + MARKER);
	app_deferred_sync(f);
	flusher_made_real(f); /* a forward round: the durable log ends at 8192 */
	app_write(f, *fd, 8192 - MARKER, 'c', 4096 + MARKER);
	app_deferred_sync(f); /* promised up to 12288, not durable */
	cr_assert_eq(nwaits, 0, "forward batches over each other's markers waited");
	return f;
}

Test(order_rules, a_batch_over_the_acknowledged_end_marker_goes_on)
{
	int fd;
	struct shim_file *f = kahadb_journal(&fd);
	app_write(f, fd, 12288 - MARKER, 'd', 4096 + MARKER);
	cr_expect_eq(nwaits, 0, "a tail rewrite waited for its file's sync");
	cr_expect_eq(byte_at(fd, 12288 - MARKER), 'd');
}

Test(order_rules, a_rewrite_short_of_the_highest_promised_byte_waits)
{
	int fd;
	struct shim_file *f = kahadb_journal(&fd);
	app_write(f, fd, 12288 - MARKER, 'd', MARKER - 1);
	cr_expect_eq(nwaits, 1, "a rewrite that claims less than the promised tail went on");
}

Test(order_rules, a_rewrite_reaching_into_the_durable_log_waits)
{
	int fd;
	struct shim_file *f = kahadb_journal(&fd);
	app_write(f, fd, 8192 - MARKER, 'd', 8192);
	cr_expect_eq(nwaits, 1, "a rewrite of durable bytes went on before the promised batch after them");
}

/* ---- across files ------------------------------------------------------------- */

Test(order_rules, a_write_to_another_file_waits_for_the_acknowledged_sync)
{
	int fa, fb;
	struct shim_file *a = open_deferred("wal", O_RDWR, &fa);
	struct shim_file *b = open_deferred("table", O_RDWR, &fb);
	app_write(a, fa, 0, 'a', 4096);
	app_deferred_sync(a);
	app_write(b, fb, 0, 'b', 4096);
	cr_assert_eq(nwaits, 1, "B's write went on before A's acknowledged sync was durable");
	cr_expect_eq(waits[0].f, a);
	cr_expect_eq(waits[0].target, 1);
	cr_expect_eq(summary(), 0, "A's sync, made real for the wait, took it off the pending list");
	cr_expect_eq(byte_at(fb, 0), 'b');
}

Test(order_rules, a_write_to_another_file_is_held_behind_the_acknowledged_sync)
{
	int fa, fb;
	struct shim_file *a = open_deferred("wal", O_RDWR, &fa);
	struct shim_file *b = open_deferred("table", O_RDWR, &fb);
	app_write(a, fa, 0, 'a', 4096);
	app_deferred_sync(a);
	holding_allowed = true;
	cr_assert(app_write_at(b, fb, 0, 'b', 4096, true), "B's write after A's acknowledged sync is held");
	cr_expect_eq(nwaits, 0);
	cr_assert_eq(nhelds, 1);
	cr_expect_eq(helds[0].f, b);
	cr_assert_eq(helds[0].ndeps, 1);
	cr_expect_eq(helds[0].dep.g, a, "held behind A");
	cr_expect_eq(helds[0].dep.target, 1, "behind A's request 1");
	cr_expect_eq(helds[0].self, 0, "B promised nothing itself");
}

Test(order_rules, once_the_other_files_sync_is_real_nothing_waits_or_is_held)
{
	int fa, fb;
	struct shim_file *a = open_deferred("wal", O_RDWR, &fa);
	struct shim_file *b = open_deferred("table", O_RDWR, &fb);
	app_write(a, fa, 0, 'a', 4096);
	app_deferred_sync(a);
	cr_assert_neq(summary(), 0);
	flusher_made_real(a);
	cr_expect_eq(summary(), 0, "A's acknowledged sync is durable: nothing is pending");
	app_write(b, fb, 0, 'b', 4096);
	holding_allowed = true;
	cr_expect(!app_write_at(b, fb, 4096, 'c', 4096, true), "held behind a sync already durable");
	app_write(a, fa, 4096, 'd', 4096);
	cr_expect_eq(nwaits, 0, "a write waited for a sync already durable (file %s, request %llu)",
		     nwaits ? (waits[0].f == a ? "A" : "B") : "-", nwaits ? (unsigned long long)waits[0].target : 0ull);
	cr_expect_eq(nhelds, 0);
	cr_expect_eq(byte_at(fb, 4096), 'c');
}

/* ---- a write at the position ------------------------------------------------ */

/* A write at the descriptor's position (the write wrappers pass the slot's
 * mark as off, and moved_to): held, it takes its bytes' room in the
 * kernel's position first. */
static bool app_write_at_position(struct shim_file *f, int fd, off_t mark, char c, size_t n, off_t *moved_to)
{
	static char buf[4096];
	cr_assert_leq(n, sizeof(buf));
	memset(buf, c, n);
	struct iovec iov = { buf, n };
	*moved_to = -1;
	return order_before_write(f, fd, mark, &iov, 1, true, moved_to);
}

/* B's file opened behind A's acknowledged sync (A: the WAL, B: the
 * table): a write of B now has A's request 1 to follow. *fb: B's
 * descriptor, at position 0. */
static struct shim_file *table_behind_acked_wal(struct shim_file **a, int *fb)
{
	int fa;
	*a = open_deferred("wal", O_RDWR, &fa);
	struct shim_file *b = open_deferred("table", O_RDWR, fb);
	app_write(*a, fa, 0, 'a', 4096);
	app_deferred_sync(*a);
	return b;
}

Test(order_rules, a_held_write_at_the_position_takes_its_room_from_the_kernel)
{
	int fb;
	struct shim_file *a, *b = table_behind_acked_wal(&a, &fb);
	holding_allowed = true;
	off_t moved;
	cr_assert(app_write_at_position(b, fb, 0, 'b', 4096, &moved), "B's write is held behind A");
	cr_expect_eq(moved, 0, "its room starts where the mark said");
	cr_expect_eq(lseek(fb, 0, SEEK_CUR), 4096, "the kernel's position is past it");
	cr_assert_eq(nhelds, 1);
	cr_expect_eq(helds[0].pos, 0);
	cr_expect_eq(atomic_load(&stat_position_moved), 0);
}

/* Another writer moved the position after the mark was read (a thread, a
 * handler): the held write lands where the kernel says, not over it. */
Test(order_rules, a_held_write_whose_position_moved_lands_where_the_kernel_says)
{
	int fb;
	struct shim_file *a, *b = table_behind_acked_wal(&a, &fb);
	cr_assert_eq(write(fb, "x", 1), 1); /* the other writer: the position is 1 now */
	holding_allowed = true;
	off_t moved;
	cr_assert(app_write_at_position(b, fb, 0, 'b', 4096, &moved), "B's write is held behind A");
	cr_expect_eq(moved, 1, "its room starts where the kernel's position was");
	cr_expect_eq(lseek(fb, 0, SEEK_CUR), 4097);
	cr_assert_eq(nhelds, 1);
	cr_expect_eq(helds[0].pos, 1, "held at %llu, over the other writer's byte", (unsigned long long)helds[0].pos);
	cr_expect_eq(atomic_load(&stat_position_moved), 1);
	cr_expect_eq(byte_at(fb, 0), 'x');
}

/* Refused by a bound after it took its room: not held, it waits as a
 * write does, and the caller writes at the room (moved_to), since the
 * position is already past it. */
Test(order_rules, a_write_at_the_position_refused_after_taking_its_room_is_written_there)
{
	int fb;
	struct shim_file *a, *b = table_behind_acked_wal(&a, &fb);
	holding_allowed = true;
	hold_refused = true;
	off_t moved;
	cr_assert(!app_write_at_position(b, fb, 0, 'b', 4096, &moved), "refused: not held");
	cr_expect_eq(moved, 0, "the caller is told where its room is");
	cr_expect_eq(lseek(fb, 0, SEEK_CUR), 4096);
	cr_expect_eq(nhelds, 0);
	cr_assert_eq(nwaits, 1, "it waited for A's acknowledged sync instead");
	cr_expect_eq(waits[0].f, a);
}
