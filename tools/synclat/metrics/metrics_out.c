/*
 * metrics_out.c - the command line of `synclat metrics`, and --out:
 *
 *   synclat metrics [--out FILE | --listen HOST:PORT] [--per-file] [--dir DIR]
 *
 * --out replaces FILE atomically, as node_exporter's textfile collector
 * asks: the exposition goes to a temporary file in FILE's directory (a
 * rename across file systems would not be atomic) whose name does not end
 * in .prom (the collector never reads it half-written), is synced, made
 * 0644 (the collector may run as another user), renamed over FILE, and
 * the directory synced so the rename survives a crash too.
 */
#include "metrics.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static const char metrics_usage[] =
	"usage: synclat metrics [--out FILE | --listen HOST:PORT] [--per-file] [--dir DIR]\n"
	"The live counters of every shimmed process (live = on) in the Prometheus text format:\n"
	"one series per service (the program's name) and rule, summed over its processes and files.\n"
	"  -o, --out FILE   replace FILE atomically (mode 0644) instead of writing to standard output\n"
	"                   (for node_exporter: a FILE.prom in its textfile collector's directory)\n"
	"  -l, --listen HOST:PORT   serve GET /metrics over HTTP for Prometheus to scrape, until\n"
	"                   SIGTERM (e.g. 127.0.0.1:9464; slow or idle clients never block a scrape)\n"
	"  --per-file       one series per process and file instead (pid and path labels: many series\n"
	"                   for a server that forks per connection; for a look at one file)\n"
	"  --dir DIR        read DIR alone (default: $SYNCSHIM_LIVE_DIR, else\n"
	"                   $XDG_RUNTIME_DIR/syncshim and /tmp/syncshim-UID; root: every user's)\n";

static int usage(FILE *err, const char *why)
{
	if (why)
		cli_err(err, "%s", why);
	fputs(metrics_usage, err);
	return EXIT_USAGE;
}

/* fsync of FILE's directory, after the rename. */
static int sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* The exposition into tmp (an open temporary file), synced and closed. */
static int fill_temp(int fd, const struct live_snapshot *s, bool per_file)
{
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	int rc = metrics_write(f, s, per_file);
	if (fflush(f) != 0 || ferror(f))
		rc = -1;
	if (rc == 0 && (fchmod(fd, 0644) != 0 || fsync(fd) != 0))
		rc = -1;
	int e = errno;
	if (fclose(f) != 0)
		rc = -1;
	else
		errno = e;
	return rc;
}

static int write_atomic(const char *path, const struct live_snapshot *s, bool per_file, FILE *err)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base)
		return usage(err, "--out wants a file name, not a directory");
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp.XXXXXX", (int)(base - path), path, base) >= (int)sizeof(tmp))
		return usage(err, "--out: name too long");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		cli_err(err, "%s: cannot create a file beside it: %s", path, strerror(errno));
		return EXIT_INPUT;
	}
	if (fill_temp(fd, s, per_file) != 0 || rename(tmp, path) != 0) {
		cli_err(err, "%s: cannot write: %s", path, strerror(errno));
		unlink(tmp);
		return EXIT_INPUT;
	}
	if (sync_dir_of(path) != 0)
		cli_err(err, "warning: %s: written, but its directory could not be synced: %s",
			path, strerror(errno));
	return 0;
}

static int parse_metrics(int argc, char **argv, const char **outp, const char **dir, const char **listen_at,
			 bool *per_file, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "listen", required_argument, NULL, 'l' },
		{ "dir", required_argument, NULL, 'D' },
		{ "per-file", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	optind = 0; /* restart getopt: synclat_main may run more than once */
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "o:l:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': *outp = optarg; break;
		case 'l': *listen_at = optarg; break;
		case 'D': *dir = optarg; break;
		case 'F': *per_file = true; break;
		case 'h': fputs(metrics_usage, out); return -1;
		default: return usage(err, "unknown or incomplete option");
		}
	}
	if (*outp && *listen_at)
		return usage(err, "--out and --listen exclude each other");
	return optind < argc ? usage(err, "no arguments are taken, only options") : 0;
}

int cmd_metrics(int argc, char **argv, FILE *out, FILE *err)
{
	const char *path = NULL, *dir = NULL, *listen_at = NULL;
	bool per_file = false;
	int rc = parse_metrics(argc, argv, &path, &dir, &listen_at, &per_file, out, err);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct live_where w;
	live_where_init(&w, dir);
	if (listen_at)
		return metrics_serve(listen_at, &w, per_file, out, err);
	struct live_snapshot s;
	if (live_scan(&w, &s) != 0) {
		cli_err(err, "out of memory");
		live_snapshot_free(&s);
		return EXIT_INPUT;
	}
	if (path) {
		rc = write_atomic(path, &s, per_file, err);
	} else if (metrics_write(out, &s, per_file) != 0 || fflush(out) != 0) {
		cli_err(err, "cannot write: %s", strerror(errno));
		rc = EXIT_INPUT;
	}
	live_snapshot_free(&s);
	return rc;
}
