/*
 * test_flusher_schedule.c - when defer makes a deferred sync real
 * (shim/defer/flusher.c's requests and thresholds, shim/defer/workers.c's
 * deadline heap), in-process: the window, max_bytes, max_calls, and many
 * files each getting its own sync in deadline order.
 *
 * flusher.c and workers.c are compiled in whole (their statics are this
 * file's) over tests/unit/stand_ins.h, knobs.c and risk.c; order.c and
 * held.c are stand-ins below (nothing is ordered or held here). No
 * flusher thread is started: this thread is the flusher thread, taking
 * the files handed to it (take_ready, take_pokes) and picking the due
 * one (pick) at a time given to it, judged against the deadline the code
 * computed from its own clock when the request came. So nothing sleeps
 * and nothing is timed. A real sync is the real fdatasync of the app's
 * descriptor, seen by a counting fdatasync put in LIBC()'s table.
 * tests/system/test_flusher.c and test_sched.c hold the same schedule on
 * real programs under the shim.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <sys/syscall.h>

#include "knobs.c"
#include "risk.c"
#include "flusher.c"
#include "workers.c"
#include "stand_ins.h"

#define MS 1000000ull
#define WINDOW_MS 1000u
#define MAX_BYTES 8192u
#define MAX_CALLS 3u

static char ini[256];

/* ---- the neighbours: order, held changes, the threads' start --------------- */

void order_acked(struct shim_file *f)
{
	(void)f;
}

void order_synced(struct shim_file *f)
{
	(void)f;
}

void order_sync_begins(struct shim_file *f)
{
	(void)f;
}

void order_sync_ends(struct shim_file *f, bool happened)
{
	(void)f, (void)happened;
}

void order_reset(struct shim_file *f)
{
	(void)f;
}

void order_atfork_child(void)
{
}

void held_reset(struct shim_file *f)
{
	atomic_store(&f->hold.floor, UINT64_MAX); /* holds nothing */
}

void held_apply_all(void)
{
}

void held_apply_file(struct shim_file *f)
{
	(void)f;
}

void held_owed_since(struct shim_file *f, uint64_t since)
{
	(void)f, (void)since;
}

void held_sync_ended(void)
{
}

/* No thread: this one takes the threads' part. */
static int threads_started;

int shim_start_thread(void *(*fn)(void *), size_t stack, const char *name, pthread_t *joinable)
{
	(void)fn, (void)stack, (void)name, (void)joinable;
	threads_started++;
	return 0;
}

/* ---- the real syncs, seen from beneath ------------------------------------- */

static int synced_fd[64];
static int nsynced;

static int counting_fdatasync(int fd)
{
	if (nsynced < 64)
		synced_fd[nsynced] = fd;
	nsynced++;
	return (int)syscall(SYS_fdatasync, fd);
}

static int counting_fsync(int fd)
{
	return counting_fdatasync(fd);
}

static int syncs_of(int fd)
{
	int n = 0;
	for (int i = 0; i < nsynced && i < 64; i++)
		n += synced_fd[i] == fd;
	return n;
}

/* ---- the app and the files ---------------------------------------------------- */

static char dir[64];

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/syncshim-flusher-sched.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	shim.pid = getpid();
	atomic_store(&shim.ready, 1);
	atomic_store(&libc_table[LIBC_ID_fdatasync], (void *)counting_fdatasync);
	atomic_store(&libc_table[LIBC_ID_fsync], (void *)counting_fsync);
	snprintf(ini, sizeof(ini), "[shim]\npolicy = defer\nmax_delay_ms = %u\nmax_bytes = %u\nmax_calls = %u\n",
		 WINDOW_MS, MAX_BYTES, MAX_CALLS);
}

static void teardown(void)
{
	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(flusher_schedule, .init = setup, .fini = teardown, .timeout = 30);

/* A file under the rule text, as files.c makes one: knobs, then each
 * part reset (the flusher's resets the threads' part). */
static struct shim_file *open_deferred_with(const char *name, const char *rule, int *fd)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fd = open(path, O_RDWR | O_CREAT, 0600);
	cr_assert_geq(*fd, 0, "open %s: %s", path, strerror(errno));
	struct shim_file *f = stand_in_file(*fd, rule);
	flusher_init_locks(f);
	flusher_reset(f);
	held_reset(f);
	risk_reset(f);
	return f;
}

static struct shim_file *open_deferred(const char *name, int *fd)
{
	return open_deferred_with(name, ini, fd);
}

/* A write as the write wrappers make it: the bytes, counted, then the
 * flusher's share (shim/calls/write.c). */
static void app_write(struct shim_file *f, int fd, size_t n)
{
	static char buf[65536];
	cr_assert_leq(n, sizeof(buf));
	memset(buf, 'w', n);
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	risk_wrote(&f->risk, n);
	flusher_after_write(f, fd, 0);
}

/* The app's fdatasync under defer (shim/calls/sync.c), made at now (0:
 * the code reads its own clock): answered at once. */
static void app_fdatasync_at(struct shim_file *f, int fd, uint64_t now)
{
	struct knobs k;
	knobs_of(f, &k);
	cr_assert_eq(k.act[CALL_FDATASYNC], ACT_DEFER);
	cr_assert_eq(flusher_app_sync(f, &k, ACT_DEFER, fd, false, now), 0, "%s", strerror(errno));
}

static void app_fdatasync(struct shim_file *f, int fd)
{
	app_fdatasync_at(f, fd, 0);
}

/* The threads' round, at time now (the code's clock, ns): what was handed
 * to them is filed, and the due file (or NULL) is taken; *next: when the
 * next one is due. */
static struct shim_file *due_at(uint64_t now, uint64_t *next)
{
	pthread_mutex_lock(&sched_mu);
	take_ready();
	take_pokes();
	struct shim_file *f = pick(now, next);
	pthread_mutex_unlock(&sched_mu);
	return f;
}

/* The thread's work on the file it took, and the file filed again (or
 * dropped: nothing left to do). */
static void make_real(struct shim_file *f)
{
	work_on(f);
	pthread_mutex_lock(&sched_mu);
	place(f);
	pthread_mutex_unlock(&sched_mu);
}

/* ---- the window ------------------------------------------------------------ */

Test(flusher_schedule, a_deferred_sync_is_made_real_when_its_window_is_up)
{
	int fd;
	struct shim_file *f = open_deferred("log", &fd);
	app_write(f, fd, 4096);
	uint64_t before = trace_now();
	app_fdatasync(f, fd);
	cr_expect_eq(nsynced, 0, "the app's fdatasync was answered by a real one");
	cr_expect(flusher_owes(f));
	uint64_t asked = atomic_load(&f->sched.first_req_ns);
	cr_assert_geq(asked, before, "the request's clock started when it came");
	cr_expect_eq(threads_started, 1, "a flusher thread was asked for");

	uint64_t next = 0;
	cr_expect_null(due_at(asked + WINDOW_MS * MS - 1, &next), "due before its window is up");
	cr_expect_eq(next, asked + WINDOW_MS * MS, "due %lld ns after the request, the window is %u ms",
		     (long long)(next - asked), WINDOW_MS);
	struct shim_file *due = due_at(asked + WINDOW_MS * MS, &next);
	cr_assert_eq(due, f, "not due when its window is up");
	make_real(f);
	cr_expect_eq(syncs_of(fd), 1, "one real fdatasync of the app's descriptor");
	cr_expect(!flusher_owes(f), "the real sync covered the request");
	cr_expect_null(due_at(UINT64_MAX - 1, &next), "nothing is left to do");
	cr_expect_eq(next, UINT64_MAX);
}

/* ---- max_bytes ---------------------------------------------------------------- */

Test(flusher_schedule, dirty_bytes_reaching_max_bytes_make_the_sync_due_at_once)
{
	int fd;
	struct shim_file *f = open_deferred("data", &fd);
	app_write(f, fd, MAX_BYTES / 2);
	app_fdatasync(f, fd);
	uint64_t asked = atomic_load(&f->sched.first_req_ns), next;
	cr_expect_null(due_at(asked, &next), "half of max_bytes dirty: not due before the window");
	cr_expect_eq(next, asked + WINDOW_MS * MS);

	app_write(f, fd, MAX_BYTES / 2); /* max_bytes dirty since the last real sync began */
	cr_assert_eq(due_at(asked, &next), f, "max_bytes dirty did not make the deferred sync start early");
	make_real(f);
	cr_expect_eq(syncs_of(fd), 1);
	cr_expect(!flusher_owes(f));
}

Test(flusher_schedule, a_request_with_max_bytes_dirty_is_due_at_once)
{
	int fd;
	struct shim_file *f = open_deferred("data", &fd);
	app_write(f, fd, MAX_BYTES);
	app_fdatasync(f, fd);
	uint64_t asked = atomic_load(&f->sched.first_req_ns), next;
	cr_assert_eq(due_at(asked, &next), f, "a request over max_bytes dirty waited for its window");
	make_real(f);
	cr_expect_eq(syncs_of(fd), 1);
}

/* ---- max_calls ---------------------------------------------------------------- */

Test(flusher_schedule, max_calls_requests_make_the_sync_due_at_once)
{
	int fd;
	struct shim_file *f = open_deferred("queue", &fd);
	uint64_t asked = 0, next;
	for (unsigned i = 1; i < MAX_CALLS; i++) {
		app_write(f, fd, 100);
		app_fdatasync(f, fd);
		if (!asked)
			asked = atomic_load(&f->sched.first_req_ns);
		cr_expect_null(due_at(asked, &next), "due at once after %u of max_calls = %u requests", i, MAX_CALLS);
	}
	app_write(f, fd, 100);
	app_fdatasync(f, fd);
	cr_assert_eq(due_at(asked, &next), f, "max_calls requests did not make the deferred sync start early");
	make_real(f);
	cr_expect_eq(syncs_of(fd), 1, "one real sync for the %u requests", MAX_CALLS);
	cr_expect(!flusher_owes(f));
}

/* ---- many files --------------------------------------------------------------- */

#define FILES 48

/* Files whose windows shrink as their requests come (the last asked is due
 * first; the requests are made a microsecond apart on the code's clock, so
 * the order does not hang on how fast this machine makes them): each is
 * due at its own deadline, taken in deadline order, and made durable by a
 * real sync of its own descriptor. */
Test(flusher_schedule, many_files_each_get_their_own_sync_in_deadline_order)
{
	struct shim_file *f[FILES];
	int fd[FILES];
	uint64_t due[FILES], base = trace_now();
	for (int i = 0; i < FILES; i++) {
		char name[32], rule[256];
		snprintf(name, sizeof(name), "file%02d", i);
		snprintf(rule, sizeof(rule), "[shim]\npolicy = defer\nmax_delay_ms = %u\nmax_bytes = 1G\nmax_calls = 1000\n",
			 (unsigned)(10 * (FILES - i)));
		f[i] = open_deferred_with(name, rule, &fd[i]);
		app_write(f[i], fd[i], 512);
		app_fdatasync_at(f[i], fd[i], base + (uint64_t)i * 1000);
		due[i] = atomic_load(&f[i]->sched.first_req_ns) + 10ull * (FILES - i) * MS;
	}
	for (int i = 1; i < FILES; i++)
		cr_assert_lt(due[i], due[i - 1], "the windows shrink faster than the requests come");
	for (int j = FILES - 1; j >= 0; j--) {
		uint64_t next;
		cr_assert_null(due_at(due[j] - 1, &next), "a file was due before file%02d's deadline", j);
		cr_assert_eq(next, due[j], "file%02d is not the next due", j);
		struct shim_file *g = due_at(due[j], &next);
		cr_assert_eq(g, f[j], "file%02d was not the one due at its deadline (file%02d was)", j,
			     g ? (int)g->id - 1 : -1);
		make_real(g);
		cr_expect_eq(syncs_of(fd[j]), 1, "file%02d: %d real syncs of its descriptor", j, syncs_of(fd[j]));
		cr_expect(!flusher_owes(f[j]));
	}
	cr_expect_eq(nsynced, FILES, "one real sync per file");
}
