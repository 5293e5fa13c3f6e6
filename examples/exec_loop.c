/*
 * exec_loop - how long one exec of a small program takes, and what a
 * preloaded library adds to it.
 *
 * Spawns PATH (default /bin/true) COUNT times, one after another, with
 * posix_spawn, and waits for each; times every spawn-to-reaped interval.
 * With -P LIB the children (not this program) get LD_PRELOAD=LIB in their
 * environment, so two runs, with and without -P, differ only in what the
 * dynamic loader and the library's start-up do in each child. A single
 * exec is noisy (a few hundred us, disturbed by anything else on the
 * machine): look at the median over many.
 *
 * Prints "result: execs=N seconds=S execs_per_sec=R us_per_exec=MEDIAN
 * mean_us=M p90_us=P max_us=X". Exits 1 when a child cannot be spawned or
 * does not exit 0.
 */
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "exec_loop"
#include "examples.h"

extern char **environ;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s [-n COUNT] [-w WARMUP] [-x PATH] [-P LIB]\n"
		"  Spawns PATH COUNT times (posix_spawn + waitpid each) and times each.\n"
		"  -n COUNT   timed spawns (default 1000)\n"
		"  -w WARMUP  untimed spawns first, to warm the page cache (default 20)\n"
		"  -x PATH    program to run, with no arguments (default /bin/true)\n"
		"  -P LIB     children run with LD_PRELOAD=LIB (replacing any inherited one)\n"
		"  -h         this help\n",
		PROG);
}

/* The children's environment: ours, with LD_PRELOAD replaced by lib (or
 * left as it is when lib is empty). */
static char **child_env(const char *lib)
{
	if (!*lib)
		return environ;
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 2, sizeof(*env));
	size_t len = strlen("LD_PRELOAD=") + strlen(lib) + 1;
	char *pre = malloc(len);
	if (!env || !pre)
		die("malloc");
	snprintf(pre, len, "LD_PRELOAD=%s", lib);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
			env[k++] = environ[i];
	env[k++] = pre;
	env[k] = NULL;
	return env;
}

static void spawn_one(const char *path, char **env)
{
	char *argv[] = { (char *)path, NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, path, NULL, NULL, argv, env);
	if (rc != 0) {
		errno = rc;
		die_path("posix_spawn", path);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			die("waitpid");
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s: %s did not exit 0 (status 0x%x)\n", PROG, path, (unsigned)st);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	uint64_t count = 1000, warmup = 20;
	char path[4096] = "/bin/true", lib[4096] = "";
	const struct opt opts[] = {
		{ 'n', OPT_U64, .p = &count },
		{ 'w', OPT_U64, .p = &warmup },
		{ 'x', OPT_PATH, .p = path, .max = sizeof(path) },
		{ 'P', OPT_PATH, .p = lib, .max = sizeof(lib) },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (count == 0)
		bad_arg("-n", "0");
	char **env = child_env(lib);

	for (uint64_t i = 0; i < warmup; i++)
		spawn_one(path, env);

	struct lat l;
	lat_init(&l, (size_t)(count < (1u << 20) ? count : (1u << 20)));
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < count; i++) {
		uint64_t a = now_ns();
		spawn_one(path, env);
		lat_add(&l, now_ns() - a);
	}
	double secs = (double)(now_ns() - t0) / NS_PER_SEC;
	lat_sort(&l);
	printf("%llu spawns of %s%s%s in %.3f s: median %.1f us, mean %.1f us, p90 %.1f us, max %.1f us\n",
	       (unsigned long long)count, path, *lib ? " with LD_PRELOAD=" : "", lib, secs,
	       lat_pct_us(&l, 50), lat_mean_us(&l), lat_pct_us(&l, 90), lat_max_us(&l));
	printf("result: execs=%llu seconds=%.3f execs_per_sec=%.1f us_per_exec=%.1f mean_us=%.1f"
	       " p90_us=%.1f max_us=%.1f\n",
	       (unsigned long long)count, secs, secs > 0 ? (double)count / secs : 0, lat_pct_us(&l, 50),
	       lat_mean_us(&l), lat_pct_us(&l, 90), lat_max_us(&l));
	free(l.v);
	return 0;
}
