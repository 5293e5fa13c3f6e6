/*
 * top.c - the command line of `synclat top`, and its one-shot forms:
 * --once (the screen's text, whole, no escapes) and --json.
 *
 *   synclat top [-d SECONDS] [-p PID] [-f TEXT] [-s KEY] [-g] [--dir DIR]
 *               [--once | --json]
 */
#include "tool.h"
#include "top.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>


static const char top_usage[] =
	"usage: synclat top [-d SECONDS] [-p PID] [-f TEXT] [-s KEY] [-g] [--dir DIR] [--once | --json]\n"
	"Every shimmed process that publishes live counters (live = on), refreshed like top.\n"
	"  -d, --delay SECONDS   refresh every SECONDS (default 1; 0.1 to 3600)\n"
	"  -p, --pid PID         this process only\n"
	"  -f, --filter TEXT     processes whose pid is TEXT or whose command line holds it\n"
	"  -s, --sort KEY        syncs (default), writes, risk, latency or pid\n"
	"  -g, --rules           one row per rule instead of one per file\n"
	"  --dir DIR             read DIR alone (default: $SYNCSHIM_LIVE_DIR, else\n"
	"                        $XDG_RUNTIME_DIR/syncshim and /tmp/syncshim-UID; root: every user's)\n"
	"  --once                print one snapshot as plain text and exit\n"
	"  --json                print one snapshot as JSON and exit\n"
	"keys: q quit, s w r l p sort, f or / filter, g rules, space refresh, h or ? help\n";

static int usage(FILE *err, const char *why)
{
	if (why)
		cli_err(err, "%s", why);
	fputs(top_usage, err);
	return EXIT_USAGE;
}

static bool parse_delay(const char *s, double *d)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= 0.1 && v <= 3600))
		return false;
	*d = v;
	return true;
}

static bool parse_pid(const char *s, long *pid)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v <= 0 || v > 0x7fffffffL)
		return false;
	*pid = v;
	return true;
}

/* One option; returns 0, EXIT_USAGE, or -1 for --help. */
static int top_opt(struct top_cfg *c, int ch, const char *arg, const char **dir, FILE *out, FILE *err)
{
	int k;
	switch (ch) {
	case 'd': return parse_delay(arg, &c->delay_s) ? 0 : usage(err, "-d wants seconds from 0.1 to 3600");
	case 'p': return parse_pid(arg, &c->o.pid) ? 0 : usage(err, "-p wants a process id");
	case 'f':
		if (strlen(arg) >= sizeof(c->o.filter))
			return usage(err, "--filter: too long");
		snprintf(c->o.filter, sizeof(c->o.filter), "%s", arg);
		return 0;
	case 's':
		if ((k = top_sort_parse(arg)) < 0)
			return usage(err, "--sort wants syncs, writes, risk, latency or pid");
		c->o.sort = (enum top_sort)k;
		return 0;
	case 'g': c->o.by_rule = true; return 0;
	case 'D': *dir = arg; return 0;
	case 'o': c->once = true; return 0;
	case 'j': c->json = true; return 0;
	case 'h': fputs(top_usage, out); return -1;
	default: return usage(err, "unknown or incomplete option");
	}
}

static int parse_top(int argc, char **argv, struct top_cfg *c, FILE *out, FILE *err)
{
	static const struct option longopts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "filter", required_argument, NULL, 'f' },
		{ "sort", required_argument, NULL, 's' },
		{ "rules", no_argument, NULL, 'g' },
		{ "dir", required_argument, NULL, 'D' },
		{ "once", no_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	memset(c, 0, sizeof(*c));
	c->delay_s = 1;
	const char *dir = NULL;
	optind = 0; /* restart getopt: synclat_main may run more than once */
	opterr = 0;
	int ch, rc = 0;
	while (rc == 0 && (ch = getopt_long(argc, argv, "d:p:f:s:gh", longopts, NULL)) != -1)
		rc = top_opt(c, ch, optarg, &dir, out, err);
	if (rc == 0 && optind < argc)
		rc = usage(err, "no arguments are taken, only options");
	if (rc == 0 && c->once && c->json)
		rc = usage(err, "--once and --json exclude each other");
	live_where_init(&c->where, dir);
	return rc;
}

/* --once and --json: one scan, printed whole. */
static int top_once(const struct top_cfg *c, FILE *out, FILE *err)
{
	struct live_snapshot s;
	struct top_view v;
	int rc = 0;
	memset(&v, 0, sizeof(v));
	if (live_scan(&c->where, &s) != 0 || top_view_build(&v, &s, &c->o) != 0) {
		cli_err(err, "out of memory");
		rc = EXIT_INPUT;
	} else if (c->json) {
		top_print_json(out, &s, &v, &c->o);
	} else {
		top_print_text(out, &s, &v, &c->o, 0, -1, true);
	}
	top_view_free(&v);
	live_snapshot_free(&s);
	return rc;
}

int cmd_top(int argc, char **argv, FILE *out, FILE *err)
{
	struct top_cfg c;
	int rc = parse_top(argc, argv, &c, out, err);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (c.once || c.json)
		return top_once(&c, out, err);
	return top_interactive(&c, err);
}
