/*
 * topscreen.c - `synclat top`'s interactive screen: a scan every -d
 * seconds, redrawn in place, keys to sort, filter and quit.
 *
 * A frame is built in memory and written with one write() (no flicker):
 * cursor home, each line followed by clear-to-end-of-line, then
 * clear-to-end-of-screen, and the status line on the last row. A key
 * redraws from the last scan at once; only the timer scans again, so
 * typing never makes the view read the files faster than -d says.
 */
#include "top.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "term.h"
#include "tool.h"

struct screen {
	struct top_cfg *c;
	struct term t;
	struct live_snapshot s;
	struct top_view v;
	bool quit, help, editing, rescan_now;
	char edit[sizeof(((struct top_opts *)0)->filter)];
	char msg[160];             /* what the last key did, on the status line */
};

static const char *const help_lines[] = {
	"synclat top - keys",
	"",
	"  q, Ctrl-C     quit",
	"  s             sort by syncs/s (the app's fsync, fdatasync, msync calls)",
	"  w             sort by writes/s",
	"  r             sort by data at risk (acknowledged as durable, not yet synced)",
	"  l             sort by sync latency (p99 over the last interval)",
	"  p             sort by pid",
	"  f, /          filter: a pid, or text in the command line; empty shows all",
	"  g             one row per rule / one row per file",
	"  space         read the files again now",
	"  h, ?          this help; any key leaves it",
	"",
	"Rates, percentiles and worst figures cover each process's last publishing",
	"interval; AT RISK is now, OLDEST the age of its oldest byte. [unbounded]:",
	"a noop file, whose data at risk only grows. [stalled]: the process lives but",
	"has not published for 5 intervals.",
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The view again from the last scan (after a sort or filter change). */
static void rebuild(struct screen *sc)
{
	top_view_free(&sc->v);
	if (top_view_build(&sc->v, &sc->s, &sc->c->o) != 0)
		snprintf(sc->msg, sizeof(sc->msg), "out of memory");
}

static void rescan(struct screen *sc)
{
	top_view_free(&sc->v);
	live_snapshot_free(&sc->s);
	if (live_scan(&sc->c->where, &sc->s) != 0)
		snprintf(sc->msg, sizeof(sc->msg), "out of memory reading the live files");
	rebuild(sc);
}

static void status_line(FILE *f, const struct screen *sc, int dropped)
{
	int room = sc->t.cols > 1 ? sc->t.cols - 1 : 1; /* the last cell could scroll */
	char line[512];
	if (sc->editing)
		snprintf(line, sizeof(line), "filter (a pid, or text in the command line; Enter applies, Esc cancels): %s_",
			 sc->edit);
	else if (sc->msg[0])
		snprintf(line, sizeof(line), "%s  |  h help  q quit", sc->msg);
	else if (dropped)
		snprintf(line, sizeof(line), "+%d more lines: filter with f, group with g, or enlarge the window  |  h help",
			 dropped);
	else
		snprintf(line, sizeof(line), "q quit  s w r l p sort  f filter  g rules  h help  (every %.1f s)",
			 sc->c->delay_s);
	for (int i = 0; line[i] && i < room; i++)
		fputc((unsigned char)line[i] < 0x20 ? '?' : line[i], f);
}

/* The body: the view, or the help, as lines of at most cols. */
static int body(FILE *m, struct screen *sc)
{
	if (!sc->help)
		return top_print_text(m, &sc->s, &sc->v, &sc->c->o, sc->t.cols, sc->t.rows - 1, false);
	size_t n = sizeof(help_lines) / sizeof(help_lines[0]);
	for (size_t i = 0; i < n && (int)i < sc->t.rows - 1; i++)
		fprintf(m, "%.*s\n", sc->t.cols, help_lines[i]);
	return 0;
}

static bool draw(struct screen *sc)
{
	char *text = NULL, *frame = NULL;
	size_t tlen = 0, flen = 0;
	FILE *m = open_memstream(&text, &tlen);
	if (!m)
		return false;
	int dropped = body(m, sc);
	fclose(m);
	FILE *f = open_memstream(&frame, &flen);
	if (!f) {
		free(text);
		return false;
	}
	fputs("\033[H", f);
	for (char *line = text, *nl; line && (nl = strchr(line, '\n')); line = nl + 1)
		fprintf(f, "%.*s\033[K\r\n", (int)(nl - line), line);
	fprintf(f, "\033[J\033[%d;1H", sc->t.rows);
	status_line(f, sc, dropped);
	fputs("\033[K", f);
	fclose(f);
	bool ok = term_write(&sc->t, frame, flen);
	free(text);
	free(frame);
	sc->msg[0] = '\0'; /* said once */
	return ok;
}

/* Enter in the filter prompt: the text replaces -p and --filter. */
static void apply_filter(struct screen *sc)
{
	sc->editing = false;
	snprintf(sc->c->o.filter, sizeof(sc->c->o.filter), "%s", sc->edit);
	sc->c->o.pid = 0;
	rebuild(sc);
	snprintf(sc->msg, sizeof(sc->msg), sc->edit[0] ? "filter set" : "filter cleared");
}

static void key_edit(struct screen *sc, int c)
{
	size_t n = strlen(sc->edit);
	if (c == '\r' || c == '\n') {
		apply_filter(sc);
	} else if (c == 27) {
		sc->editing = false; /* Esc: the filter stays as it was */
	} else if (c == 127 || c == 8) {
		while (n > 0 && ((unsigned char)sc->edit[--n] & 0xc0) == 0x80)
			; /* a whole UTF-8 character */
		sc->edit[n] = '\0';
	} else if (c == 21) { /* Ctrl-U */
		sc->edit[0] = '\0';
	} else if (c == 3) {
		sc->quit = true;
	} else if (c >= 0x20 && n + 1 < sizeof(sc->edit)) {
		sc->edit[n] = (char)c;
		sc->edit[n + 1] = '\0';
	}
}

static void key_normal(struct screen *sc, int c)
{
	if (sc->help) { /* any key leaves the help; q still quits */
		sc->help = false;
		if (c != 'q' && c != 3)
			return;
	}
	int sort = top_sort_of_key(c);
	if (sort >= 0) {
		sc->c->o.sort = (enum top_sort)sort;
		rebuild(sc);
		snprintf(sc->msg, sizeof(sc->msg), "sorted by %s", top_sort_title(sc->c->o.sort));
		return;
	}
	switch (c) {
	case 'q':
	case 3: sc->quit = true; break;
	case 26: term_stopped = 1; break; /* Ctrl-Z: as SIGTSTP */
	case 'h':
	case '?': sc->help = true; break;
	case 'f':
	case '/':
		sc->editing = true;
		snprintf(sc->edit, sizeof(sc->edit), "%s", sc->c->o.filter);
		break;
	case 'g':
		sc->c->o.by_rule = !sc->c->o.by_rule;
		rebuild(sc);
		break;
	case ' ': sc->rescan_now = true; break;
	default: break;
	}
}

/* Keys waiting, if any; escape sequences (arrows, function keys) are
 * skipped whole so their letters are not taken for commands. */
static void read_keys(struct screen *sc)
{
	unsigned char buf[128];
	ssize_t n = read(sc->t.in, buf, sizeof(buf));
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == 27 && i + 1 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O')) {
			for (i += 2; i < n && !(buf[i] >= 0x40 && buf[i] <= 0x7e); i++)
				;
			continue;
		}
		if (sc->editing)
			key_edit(sc, buf[i]);
		else
			key_normal(sc, buf[i]);
	}
}

/* Until a key, a signal or the next refresh. */
static void wait_input(struct screen *sc, uint64_t ms)
{
	struct pollfd p = { .fd = sc->t.in, .events = POLLIN };
	int r = term_wait(&sc->t, &p, ms > 60000 ? 60000 : (int)ms);
	if (r > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
		sc->quit = true; /* the terminal is gone */
	else if (r > 0)
		read_keys(sc);
}

int top_interactive(struct top_cfg *c, FILE *err)
{
	struct screen sc;
	memset(&sc, 0, sizeof(sc));
	sc.c = c;
	if (term_enter(&sc.t, STDIN_FILENO, STDOUT_FILENO) != 0) {
		cli_err(err, "%s: the interactive view needs a terminal; use --once or --json",
			strerror(errno));
		return EXIT_USAGE;
	}
	uint64_t delay = (uint64_t)(c->delay_s * 1000), next = 0;
	int rc = 0;
	while (!sc.quit && !term_quit_signal) {
		if (term_stopped)
			term_suspend(&sc.t);
		if (term_resized) {
			term_resized = 0;
			term_update_size(&sc.t);
		}
		uint64_t now = mono_ms();
		if (now >= next || sc.rescan_now) {
			rescan(&sc);
			sc.rescan_now = false;
			next = now + delay;
		}
		if (!draw(&sc)) {
			rc = term_quit_signal ? 0 : 2;
			break;
		}
		wait_input(&sc, next > now ? next - now : 0);
	}
	term_leave(&sc.t);
	top_view_free(&sc.v);
	live_snapshot_free(&sc.s);
	if (rc)
		cli_err(err, "cannot write to the terminal");
	term_reraise();
	return rc;
}
