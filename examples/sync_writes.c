/*
 * sync_writes - append + sync in a loop, like KahaDB's DiskBenchmark.
 *
 * ActiveMQ's DiskBenchmark measures how many small synchronous appends a
 * disk sustains; that rate bounds a journal that syncs every message.
 * Each iteration writes SIZE bytes at the end of the file and syncs
 * (fsync, fdatasync or none), or with -o opens the file O_DSYNC so every
 * write is itself synchronous (Java's RandomAccessFile "rwd").
 *
 * With -T N, N threads share one fd and each does write+sync: a sync
 * started while another is in flight can cover both, so the writes/s
 * beyond what one thread gets measures group commit. Each write goes to
 * an offset reserved atomically (pwrite), so the file has no holes or
 * overlaps whatever the interleaving; one thread uses plain write().
 *
 * With -R FILE, the CLOCK_MONOTONIC time (ns) at which each sync call
 * returned to the program is written to FILE, one per line, in no
 * particular order across threads: with a record of the real syncs made
 * beneath a policy (tests/lib/reclayer.so), a script can tell how long
 * each acknowledged write stayed at risk.
 *
 * With -b MS, a thread of the program's own calls fdatasync on the file
 * every MS milliseconds (0: back to back) while the writers run: what
 * moving the syncs off the writers' path by hand would give, with no shim.
 * It is the honest ceiling for a deferred policy, which has to write the
 * data out too; -m none alone never does within a short run.
 *
 * Data: the file is a sequence of 16-byte records, each its own offset as
 * 15 hex digits and '\n', so contents can be checked at any offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "sync_writes"
#include "examples.h"

#define MIB 1048576.0
#define SAMPLE_CAP (1u << 20)
#define MAX_THREADS 1024

enum sync_method { M_FSYNC, M_FDATASYNC, M_NONE };

struct options {
	char path[4096];
	size_t size;
	uint64_t count;      /* UINT64_MAX when only -t bounds the run */
	double seconds;      /* 0 = no time limit */
	enum sync_method method;
	unsigned threads;
	int odsync;          /* -o: open O_DSYNC, no explicit sync */
	int keep;
	char returns[4096];  /* -R: where sync return times go ("" = nowhere) */
	int64_t bg_ms;       /* -b: background fdatasync period (-1 = none) */
};

struct shared {
	const struct options *opt;
	int fd;
	uint64_t t_end;              /* 0 = none */
	atomic_uint_fast64_t next;   /* next write index to reserve */
	atomic_int stop;             /* set by a thread whose call failed */
	atomic_int writers_done;     /* tells the -b thread to finish */
	uint64_t bg_syncs;
	int bg_err;
};

struct worker {
	struct shared *sh;
	pthread_t tid;
	struct lat wl, sl;           /* write latency, sync latency */
	uint64_t *ret_ns;            /* -R: sync return times, up to ret_cap */
	size_t ret_n, ret_cap;
	uint64_t writes;
	int err;
	const char *err_what;
};

static const char *method_name(const struct options *o)
{
	if (o->odsync)
		return "odsync";
	return o->method == M_FSYNC ? "fsync" : o->method == M_FDATASYNC ? "fdatasync" : "none";
}

/* Write the whole buffer at the fd offset (off < 0) or at off (pwrite),
 * retrying short writes. */
static int write_at(int fd, const char *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = off < 0 ? write(fd, buf, len) : pwrite(fd, buf, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

static int do_sync(int fd, enum sync_method m)
{
	switch (m) {
	case M_FSYNC: return fsync(fd);
	case M_FDATASYNC: return fdatasync(fd);
	default: return 0;
	}
}

static void worker_fail(struct worker *w, const char *what)
{
	w->err = errno;
	w->err_what = what;
	atomic_store(&w->sh->stop, 1);
}

/* One writer: reserve the next index, write it, sync; until the count is
 * used up, time runs out, or another worker failed. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct options *o = w->sh->opt;
	/* One thread appends with write(); several pwrite reserved slots. */
	int positional = o->threads > 1;
	int explicit_sync = !o->odsync && o->method != M_NONE;
	char *buf = malloc(o->size);
	if (!buf) {
		worker_fail(w, "malloc");
		return NULL;
	}
	while (!atomic_load(&w->sh->stop)) {
		if (w->sh->t_end && now_ns() >= w->sh->t_end)
			break;
		uint64_t idx = atomic_fetch_add(&w->sh->next, 1);
		if (idx >= o->count)
			break;
		uint64_t off = idx * o->size;
		fill_pattern(buf, off, o->size);
		uint64_t a = now_ns();
		if (write_at(w->sh->fd, buf, o->size, positional ? (off_t)off : -1) != 0) {
			worker_fail(w, positional ? "pwrite" : "write");
			break;
		}
		uint64_t b = now_ns();
		lat_add(&w->wl, b - a);
		w->writes++;
		if (o->odsync) {
			/* The O_DSYNC write is the sync. */
			lat_add(&w->sl, b - a);
			if (w->ret_n < w->ret_cap)
				w->ret_ns[w->ret_n++] = b;
		} else if (explicit_sync) {
			if (do_sync(w->sh->fd, o->method) != 0) {
				worker_fail(w, method_name(o));
				break;
			}
			uint64_t c = now_ns();
			lat_add(&w->sl, c - b);
			if (w->ret_n < w->ret_cap)
				w->ret_ns[w->ret_n++] = c;
		}
	}
	free(buf);
	return NULL;
}

/* -b: fdatasync every bg_ms until the writers are done; its sync errors
 * end the run as a writer's would. */
static void *bg_sync_main(void *arg)
{
	struct shared *sh = arg;
	struct timespec gap = { (time_t)(sh->opt->bg_ms / 1000), (long)(sh->opt->bg_ms % 1000) * 1000000L };
	/* At least one sync, even if the writers were done before this
	 * thread ran: a loop that promised durability ends with one. */
	do {
		if (fdatasync(sh->fd) != 0) {
			sh->bg_err = errno;
			atomic_store(&sh->stop, 1);
			break;
		}
		sh->bg_syncs++;
		if (sh->opt->bg_ms > 0 && !atomic_load(&sh->writers_done))
			nanosleep(&gap, NULL);
	} while (!atomic_load(&sh->writers_done) && !atomic_load(&sh->stop));
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-f FILE] [-s SIZE] [-n COUNT] [-t SECONDS] [-m fsync|fdatasync|none]\n"
		"          [-T THREADS] [-o] [-k] [-R FILE] [-b MS]\n"
		"  Appends SIZE bytes then syncs, COUNT times (KahaDB DiskBenchmark style).\n"
		"  -f FILE     file to write (default /tmp/sync_writes.PID.dat)\n"
		"  -s SIZE     bytes per write, k/m suffix ok (default 4096)\n"
		"  -n COUNT    total writes (default 2000; with -t, only if given)\n"
		"  -t SECONDS  run for this long instead (fractions ok)\n"
		"  -m METHOD   sync after each write: fsync (default), fdatasync, none\n"
		"  -T THREADS  writers sharing one fd, each write+sync (default 1)\n"
		"  -o          open with O_DSYNC and never sync explicitly (like \"rwd\")\n"
		"  -k          keep the file (default: remove it)\n"
		"  -R FILE     write each sync's return time (CLOCK_MONOTONIC ns) to FILE\n"
		"  -b MS       a thread of its own fdatasyncs the file every MS ms (0: back to back)\n"
		"  -h          this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	snprintf(o->path, sizeof(o->path), "/tmp/%s.%ld.dat", PROG, (long)getpid());
	o->size = 4096;
	o->count = 2000;
	o->seconds = 0;
	o->threads = 1;
	o->odsync = 0;
	o->keep = 0;
	o->returns[0] = '\0';
	o->bg_ms = -1;
	int count_given = 0, method = M_FSYNC, bg_given = 0;
	uint64_t bg_ms = 0;
	/* the -m values, in enum sync_method order */
	static const char *const methods[] = { "fsync", "fdatasync", "none", NULL };
	const struct opt opts[] = {
		{ 'f', OPT_PATH, .p = o->path, .max = sizeof(o->path) },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'n', OPT_U64, .p = &o->count, .seen = &count_given },
		{ 't', OPT_DOUBLE, .p = &o->seconds },
		{ 'm', OPT_WORD, .p = &method, .words = methods },
		{ 'T', OPT_COUNT, .p = &o->threads, .max = MAX_THREADS },
		{ 'o', OPT_FLAG, .p = &o->odsync },
		{ 'k', OPT_FLAG, .p = &o->keep },
		{ 'R', OPT_PATH, .p = o->returns, .max = sizeof(o->returns) },
		{ 'b', OPT_U64, .p = &bg_ms, .seen = &bg_given },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	o->method = (enum sync_method)method;
	if (bg_given) {
		if (bg_ms > 3600000)
			bad_arg("-b", "(more than an hour)");
		o->bg_ms = (int64_t)bg_ms;
	}
	if (o->size == 0)
		bad_arg("-s", "0");
	if (o->seconds > 0 && !count_given)
		o->count = UINT64_MAX;
	if (o->count != UINT64_MAX && o->count > UINT64_MAX / o->size)
		bad_arg("-n", "(count * size overflows)");
}

/* Run the workers; returns the wall time in seconds. */
static double run_workers(struct shared *sh, struct worker *w, unsigned n)
{
	int rc;
	pthread_t bg;
	uint64_t t0 = now_ns();
	if (sh->opt->seconds > 0)
		sh->t_end = t0 + (uint64_t)(sh->opt->seconds * NS_PER_SEC);
	if (sh->opt->bg_ms >= 0 && (rc = pthread_create(&bg, NULL, bg_sync_main, sh)) != 0) {
		errno = rc;
		die("pthread_create");
	}
	for (unsigned i = 0; i < n; i++) {
		w[i].sh = sh;
		if ((rc = pthread_create(&w[i].tid, NULL, worker_main, &w[i])) != 0) {
			errno = rc;
			die("pthread_create");
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if ((rc = pthread_join(w[i].tid, NULL)) != 0) {
			errno = rc;
			die("pthread_join");
		}
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	atomic_store(&sh->writers_done, 1);
	if (sh->opt->bg_ms >= 0 && (rc = pthread_join(bg, NULL)) != 0) {
		errno = rc;
		die("pthread_join");
	}
	if (sh->bg_err) {
		errno = sh->bg_err;
		die("fdatasync (-b)");
	}
	for (unsigned i = 0; i < n; i++) {
		if (w[i].err) {
			errno = w[i].err;
			die(w[i].err_what);
		}
	}
	return secs;
}

/* Pool the workers' samples (each kept an equal share of the cap). */
static void merge(struct lat *all, const struct lat *part)
{
	memcpy(all->v + all->n, part->v, part->n * sizeof(*part->v));
	all->n += part->n;
	all->count += part->count;
	all->sum += part->sum;
	if (part->max > all->max)
		all->max = part->max;
}

/* The file must hold exactly the writes done, no more, no holes. */
static void verify_size(const struct options *o, int fd, uint64_t writes)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		die_path("fstat", o->path);
	if ((uint64_t)st.st_size != writes * o->size) {
		fprintf(stderr, "%s: %s is %lld bytes, expected %llu (%llu writes of %zu)\n",
			PROG, o->path, (long long)st.st_size,
			(unsigned long long)(writes * o->size), (unsigned long long)writes,
			o->size);
		exit(1);
	}
}

/* -R: the sync return times, one per line (after the run: no I/O of
 * this kind while it is timed). Only the first SAMPLE_CAP / threads of
 * each thread are kept; a line "# dropped N" at the end says how many
 * more there were. */
static void write_returns(const struct options *o, const struct worker *w, unsigned n)
{
	FILE *f = fopen(o->returns, "w");
	if (!f)
		die_path("fopen", o->returns);
	uint64_t dropped = 0;
	for (unsigned i = 0; i < n; i++) {
		for (size_t k = 0; k < w[i].ret_n; k++)
			fprintf(f, "%llu\n", (unsigned long long)w[i].ret_ns[k]);
		dropped += w[i].sl.count - w[i].ret_n;
	}
	if (dropped)
		fprintf(f, "# dropped %llu\n", (unsigned long long)dropped);
	if (fclose(f) != 0)
		die_path("write", o->returns);
}

static void report(const struct options *o, const struct shared *sh, struct lat *wl, struct lat *sl,
		   double secs)
{
	uint64_t writes = wl->count;
	double wps = secs > 0 ? (double)writes / secs : 0;
	double mbps = secs > 0 ? (double)writes * (double)o->size / MIB / secs : 0;
	lat_sort(wl);
	lat_sort(sl);
	printf("%llu writes of %zu bytes in %.3f s: %.1f writes/s, %.2f MB/s\n",
	       (unsigned long long)writes, o->size, secs, wps, mbps);
	printf("sync us (%s%s): p50 %.1f  p99 %.1f  max %.1f  mean %.1f\n", method_name(o),
	       o->odsync ? ", the write itself" : "", lat_pct_us(sl, 50), lat_pct_us(sl, 99),
	       lat_max_us(sl), lat_mean_us(sl));
	printf("write us: p50 %.1f  p99 %.1f  max %.1f  mean %.1f\n", lat_pct_us(wl, 50),
	       lat_pct_us(wl, 99), lat_max_us(wl), lat_mean_us(wl));
	if (wl->n < wl->count)
		printf("(percentiles from a uniform sample of %zu writes)\n", wl->n);
	printf("result: writes=%llu seconds=%.3f writes_per_sec=%.1f mb_per_sec=%.2f"
	       " sync_p50_us=%.1f sync_p99_us=%.1f sync_max_us=%.1f sync_mean_us=%.1f"
	       " write_p50_us=%.1f write_p99_us=%.1f write_max_us=%.1f"
	       " size=%zu threads=%u mode=%s bg_syncs=%llu\n",
	       (unsigned long long)writes, secs, wps, mbps, lat_pct_us(sl, 50),
	       lat_pct_us(sl, 99), lat_max_us(sl), lat_mean_us(sl), lat_pct_us(wl, 50),
	       lat_pct_us(wl, 99), lat_max_us(wl), o->size, o->threads, method_name(o),
	       (unsigned long long)sh->bg_syncs);
}

int main(int argc, char **argv)
{
	struct options o;
	parse_options(argc, argv, &o);

	struct shared sh;
	memset(&sh, 0, sizeof(sh));
	sh.opt = &o;
	atomic_init(&sh.next, 0);
	atomic_init(&sh.stop, 0);
	atomic_init(&sh.writers_done, 0);
	int flags = O_WRONLY | O_CREAT | O_TRUNC | (o.odsync ? O_DSYNC : 0);
	sh.fd = open(o.path, flags, 0644);
	if (sh.fd < 0)
		die_path("open", o.path);

	/* Each worker keeps an equal share of the sample cap; one worker may
	 * do any number of the writes, so a share never needs more than count. */
	uint64_t per = SAMPLE_CAP / o.threads;
	if (o.count < per)
		per = o.count;
	struct worker *w = calloc(o.threads, sizeof(*w));
	if (!w)
		die("calloc");
	for (unsigned i = 0; i < o.threads; i++) {
		lat_init(&w[i].wl, (size_t)per);
		lat_init(&w[i].sl, (size_t)per);
		if (o.returns[0]) {
			w[i].ret_cap = (size_t)per;
			w[i].ret_ns = malloc(w[i].ret_cap * sizeof(*w[i].ret_ns));
			if (!w[i].ret_ns)
				die("malloc");
		}
	}

	if (o.seconds > 0)
		printf("%s: %zu-byte appends + %s for %.1f s", PROG, o.size, method_name(&o), o.seconds);
	else
		printf("%s: %llu x %zu-byte appends + %s", PROG, (unsigned long long)o.count,
		       o.size, method_name(&o));
	printf(", %u thread%s, file %s\n", o.threads, o.threads == 1 ? "" : "s", o.path);
	fflush(stdout);

	double secs = run_workers(&sh, w, o.threads);

	if (o.returns[0])
		write_returns(&o, w, o.threads);

	struct lat wl, sl;
	lat_init(&wl, (size_t)per * o.threads);
	lat_init(&sl, (size_t)per * o.threads);
	for (unsigned i = 0; i < o.threads; i++) {
		merge(&wl, &w[i].wl);
		merge(&sl, &w[i].sl);
		free(w[i].wl.v);
		free(w[i].sl.v);
		free(w[i].ret_ns);
	}
	free(w);

	if (o.count != 0)
		verify_size(&o, sh.fd, wl.count);
	if (close(sh.fd) != 0)
		die_path("close", o.path);
	if (!o.keep && unlink(o.path) != 0)
		die_path("unlink", o.path);
	report(&o, &sh, &wl, &sl, secs);
	free(wl.v);
	free(sl.v);
	return 0;
}
