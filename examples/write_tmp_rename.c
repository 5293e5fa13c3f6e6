/*
 * write_tmp_rename - the atomic-replace pattern for a small state file.
 *
 * Programs that keep a small state or checkpoint file replace it safely by
 * writing DIR/state.tmp, fsyncing it, and renaming it over DIR/state;
 * the rename is atomic, and the fsync before it makes sure the new name
 * never points at a file whose data is not yet on disk (the ext4
 * "zero-length file after crash" lesson). An fsync of the directory (-D)
 * makes the rename itself durable. Each step's latency is reported.
 *
 * Data: the file is the line "iteration=N\n" repeated and cut to SIZE
 * bytes, so the survivor's content tells which iteration it came from.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "write_tmp_rename"
#include "examples.h"

#define SAMPLE_CAP (1u << 20)
#define LINE_MAX_LEN 32

struct options {
	char dir[4096];
	int own_dir;      /* we made dir (default), so we remove it */
	uint64_t count;
	size_t size;
	int dirsync;
	int keep;
};

struct stats {
	struct lat write, sync, rename, dirsync, iter;
};

/* Iteration i's content: "iteration=i\n" repeated, cut to size bytes. */
static void fill_state(char *buf, size_t size, uint64_t i)
{
	char line[LINE_MAX_LEN];
	int n = snprintf(line, sizeof(line), "iteration=%llu\n", (unsigned long long)i);
	for (size_t off = 0; off < size; off += (size_t)n)
		memcpy(buf + off, line, size - off < (size_t)n ? size - off : (size_t)n);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-d DIR] [-n COUNT] [-s SIZE] [-D] [-k]\n"
		"  COUNT times: write DIR/state.tmp, fsync it, rename it over DIR/state\n"
		"  (and with -D fsync DIR), the atomic-replace pattern.\n"
		"  -d DIR    existing directory (default: a new /tmp/write_tmp_rename.PID,\n"
		"            removed after)\n"
		"  -n COUNT  iterations (default 100)\n"
		"  -s SIZE   bytes in the state file, k/m suffix ok (default 256)\n"
		"  -D        fsync the directory after each rename\n"
		"  -k        keep DIR/state (default: remove it)\n"
		"  -h        this help\n",
		PROG);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	snprintf(o->dir, sizeof(o->dir), "/tmp/%s.%ld", PROG, (long)getpid());
	o->count = 100;
	o->size = 256;
	o->dirsync = 0;
	o->keep = 0;
	int dir_given = 0;
	const struct opt opts[] = {
		/* room left for the file names joined to it */
		{ 'd', OPT_PATH, .p = o->dir, .max = sizeof(o->dir) - 16, .seen = &dir_given },
		{ 'n', OPT_U64, .p = &o->count },
		{ 's', OPT_SIZE, .p = &o->size },
		{ 'D', OPT_FLAG, .p = &o->dirsync },
		{ 'k', OPT_FLAG, .p = &o->keep },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	o->own_dir = !dir_given;
	if (o->size == 0)
		bad_arg("-s", "0");
}

/* One replace: write+fsync the temp file, rename it over the state file,
 * optionally fsync the directory. dirfd < 0 means no directory sync. */
static void replace_once(const char *tmp, const char *state, int dirfd,
			 const char *buf, size_t size, struct stats *s)
{
	uint64_t a = now_ns();
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die_path("open", tmp);
	if (write_full(fd, buf, size) != 0)
		die_path("write", tmp);
	uint64_t b = now_ns();
	if (fsync(fd) != 0)
		die_path("fsync", tmp);
	uint64_t c = now_ns();
	if (close(fd) != 0)
		die_path("close", tmp);
	uint64_t d = now_ns();
	if (rename(tmp, state) != 0)
		die_path("rename", tmp);
	uint64_t e = now_ns();
	lat_add(&s->write, b - a);
	lat_add(&s->sync, c - b);
	lat_add(&s->rename, e - d);
	if (dirfd >= 0) {
		if (fsync(dirfd) != 0)
			die("fsync directory");
		uint64_t f = now_ns();
		lat_add(&s->dirsync, f - e);
		e = f;
	}
	lat_add(&s->iter, e - a);
}

/* The state file must be exactly the last iteration's content. */
static void verify_state(const char *state, const char *want, size_t size)
{
	char *got = malloc(size + 1);
	if (!got)
		die("malloc");
	int fd = open(state, O_RDONLY);
	if (fd < 0)
		die_path("open", state);
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, got + have, size + 1 - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die_path("read", state);
		}
		if (n == 0 || (have += (size_t)n) == size + 1)
			break;
	}
	if (close(fd) != 0)
		die_path("close", state);
	if (have != size || memcmp(got, want, size) != 0) {
		fprintf(stderr, "%s: %s does not hold the last iteration's content\n", PROG, state);
		exit(1);
	}
	free(got);
}

static void print_lat(const char *name, struct lat *l)
{
	lat_sort(l);
	printf("%-8s us: p50 %8.1f  p99 %8.1f  max %8.1f  mean %8.1f\n", name,
	       lat_pct_us(l, 50), lat_pct_us(l, 99), lat_max_us(l), lat_mean_us(l));
}

int main(int argc, char **argv)
{
	struct options o;
	struct stats s;
	parse_options(argc, argv, &o);
	size_t cap = o.count < SAMPLE_CAP ? (size_t)o.count : SAMPLE_CAP;
	lat_init(&s.write, cap);
	lat_init(&s.sync, cap);
	lat_init(&s.rename, cap);
	lat_init(&s.dirsync, cap);
	lat_init(&s.iter, cap);

	char tmp[4200], state[4200];
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", o.dir);
	snprintf(state, sizeof(state), "%s/state", o.dir);
	if (o.own_dir && mkdir(o.dir, 0755) != 0)
		die_path("mkdir", o.dir);
	int dirfd = -1;
	if (o.dirsync && (dirfd = open(o.dir, O_RDONLY | O_DIRECTORY)) < 0)
		die_path("open", o.dir);
	char *buf = malloc(o.size);
	if (!buf)
		die("malloc");

	printf("%s: %llu x (write %zu bytes to %s, fsync, rename to state%s)\n", PROG,
	       (unsigned long long)o.count, o.size, tmp, o.dirsync ? ", fsync dir" : "");
	fflush(stdout);
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < o.count; i++) {
		fill_state(buf, o.size, i);
		replace_once(tmp, state, dirfd, buf, o.size, &s);
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;

	if (o.count > 0) {
		verify_state(state, buf, o.size);
		if (!o.keep && unlink(state) != 0)
			die_path("unlink", state);
	}
	if (dirfd >= 0 && close(dirfd) != 0)
		die_path("close", o.dir);
	if (o.own_dir && !o.keep && rmdir(o.dir) != 0)
		die_path("rmdir", o.dir);

	double rate = secs > 0 ? (double)o.count / secs : 0;
	printf("%llu replaces in %.3f s: %.1f replaces/s\n", (unsigned long long)o.count,
	       secs, rate);
	print_lat("open+wr", &s.write);
	print_lat("fsync", &s.sync);
	print_lat("rename", &s.rename);
	if (o.dirsync)
		print_lat("dirfsync", &s.dirsync);
	print_lat("total", &s.iter);
	printf("result: writes=%llu seconds=%.3f writes_per_sec=%.1f"
	       " sync_p50_us=%.1f sync_p99_us=%.1f sync_max_us=%.1f"
	       " rename_p50_us=%.1f rename_p99_us=%.1f"
	       " dirsync_p50_us=%.1f dirsync_p99_us=%.1f dirsync_max_us=%.1f"
	       " iter_p50_us=%.1f iter_p99_us=%.1f iter_max_us=%.1f dirsync=%d\n",
	       (unsigned long long)o.count, secs, rate, lat_pct_us(&s.sync, 50),
	       lat_pct_us(&s.sync, 99), lat_max_us(&s.sync), lat_pct_us(&s.rename, 50),
	       lat_pct_us(&s.rename, 99), lat_pct_us(&s.dirsync, 50),
	       lat_pct_us(&s.dirsync, 99), lat_max_us(&s.dirsync), lat_pct_us(&s.iter, 50),
	       lat_pct_us(&s.iter, 99), lat_max_us(&s.iter), o.dirsync);
	free(buf);
	free(s.write.v);
	free(s.sync.v);
	free(s.rename.v);
	free(s.dirsync.v);
	free(s.iter.v);
	return 0;
}
