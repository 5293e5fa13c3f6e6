/*
 * svg.c - comparison plots as plain SVG 1.1 (see svg.h).
 *
 * Latency axes are log10 scales over whole decades. The percentile axis is
 * the "nines" scale x = -log10(1 - p/100), so 90, 99, 99.9 and 99.99 sit
 * one unit apart and tail behaviour gets as much room as the median.
 */
#include "svg.h"

#include <math.h>
#include <string.h>

#include "report.h"
#include "tool.h"

#define WIDTH 1000
#define PANEL_W 490
#define PANEL_H 290
#define TITLE_H 70
#define VERDICT_CHARS 150 /* a verdict line in the plot, at font size 12 */
#define NINES_MAX 4.0       /* p99.99 */
#define MAX_PANELS 6

static const char *const color[2] = { "#1f77b4", "#d62728" };

struct panel {
	double x, y, w, h;      /* plot area in SVG units */
	double x0, x1;          /* data range on x */
	double ly0, ly1;        /* log10(ns) range on y, whole decades */
};

/* Coordinates are printed with %f: a NaN or infinity would be written
 * as "nan" or "inf" and break the picture. The ranges are made finite
 * where they are fitted (fit_y, sec_panel); this is the last guard. */
static double finite_or(double v, double fallback)
{
	return isfinite(v) ? v : fallback;
}

static double px(const struct panel *p, double v)
{
	return finite_or(p->x + (v - p->x0) / (p->x1 - p->x0) * p->w, p->x);
}

static double py(const struct panel *p, double ns)
{
	double l = log10(ns < 1 ? 1 : ns);
	return finite_or(p->y + p->h - (l - p->ly0) / (p->ly1 - p->ly0) * p->h, p->y + p->h);
}

static double nines_to_pct(double x)
{
	return 100.0 * (1.0 - pow(10.0, -x));
}

/* Fits the y range to [lo, hi] ns, widened to whole decades. No data
 * (lo still +inf, hi 0: a run without a non-empty INTERVAL, such as a
 * log salvaged before its first second ended) gets one decade from 1 ns. */
static void fit_y(struct panel *p, double lo, double hi)
{
	if (!(lo >= 1) || !isfinite(lo))
		lo = 1;
	if (!(hi >= lo) || !isfinite(hi))
		hi = lo;
	p->ly0 = floor(log10(lo));
	p->ly1 = ceil(log10(hi));
	if (p->ly1 <= p->ly0)
		p->ly1 = p->ly0 + 1;
}

/* "1 ms", "200 us": ticks fall on round values of one unit. */
static void tick_label(char *buf, size_t len, double ns)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	int u = 0;
	while (u < 3 && ns >= 999.5) {
		ns /= 1000;
		u++;
	}
	snprintf(buf, len, "%g %s", round(ns), unit[u]);
}

static void y_tick(FILE *out, const struct panel *p, double ns, bool major)
{
	char t[32];
	double y = py(p, ns);
	tick_label(t, sizeof(t), ns);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
		p->x, y, p->x + p->w, y, major ? "#ddd" : "#eee");
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"end\"%s>%s</text>\n",
		p->x - 5, y + 4, major ? 11 : 9, major ? "" : " fill=\"#777\"", t);
}

static void frame(FILE *out, const struct panel *p, const char *title, const char *xlabel)
{
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" "
		"stroke=\"#888\"/>\n", p->x, p->y, p->w, p->h);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" "
		"text-anchor=\"middle\">", p->x + p->w / 2, p->y - 10);
	markup_text(out, title);
	fputs("</text>\n", out);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
		p->x + p->w / 2, p->y + p->h + 34, xlabel);
	/* few decades leave room for 2x and 5x ticks in between */
	bool minor = p->ly1 - p->ly0 <= 2;
	for (int k = (int)p->ly0; k <= (int)p->ly1; k++) {
		y_tick(out, p, pow(10, k), true);
		for (int m = 2; minor && k < (int)p->ly1 && m <= 5; m += 3)
			y_tick(out, p, m * pow(10, k), false);
	}
}

static void x_tick(FILE *out, const struct panel *p, double v, const char *label)
{
	double x = px(p, v);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x,
		p->y, x, p->y + p->h);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
		x, p->y + p->h + 15, label);
}

static void polyline_start(FILE *out, int side)
{
	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color[side]);
}

/* ---- percentile panels ---- */

static void pct_curve(FILE *out, const struct panel *p, const struct hist *h, int side)
{
	if (!h || !hist_count(h))
		return;
	polyline_start(out, side);
	for (int i = 0; i <= 200; i++) {
		double x = NINES_MAX * i / 200.0;
		double v = (double)hist_percentile(h, nines_to_pct(x));
		fprintf(out, "%.1f,%.1f ", px(p, x), py(p, v));
	}
	fputs("\"/>\n", out);
}

static void pct_panel(FILE *out, double x, double y, const struct run *a, const struct run *b,
		      unsigned op)
{
	struct panel p = { x + 70, y + 30, PANEL_W - 90, PANEL_H - 80, 0, NINES_MAX, 0, 1 };
	const struct hist *h[2] = { a->op[op], b->op[op] };
	double lo = INFINITY, hi = 0;
	for (int s = 0; s < 2; s++) {
		if (!h[s] || !hist_count(h[s]))
			continue;
		lo = fmin(lo, (double)hist_min(h[s]));
		hi = fmax(hi, (double)hist_max(h[s]));
	}
	fit_y(&p, lo, hi);

	char title[64];
	snprintf(title, sizeof(title), "%s latency by percentile", logop_name(op));
	frame(out, &p, title, "percentile");
	static const struct { double pct; const char *label; } ticks[] = {
		{ 0, "0" }, { 50, "50" }, { 90, "90" }, { 99, "99" }, { 99.9, "99.9" }, { 99.99, "99.99" },
	};
	for (size_t i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++)
		x_tick(out, &p, -log10(1 - ticks[i].pct / 100), ticks[i].label);
	for (int s = 0; s < 2; s++)
		pct_curve(out, &p, h[s], s);
}

/* ---- per-second max latency ---- */

static double sec_max(const struct run_sec *s)
{
	uint64_t m = 0;
	for (unsigned op = 0; op < LOGOP_COUNT; op++)
		if (!logop_is_real(op) && s->op[op].calls && s->op[op].max_ns > m)
			m = s->op[op].max_ns;
	return (double)m;
}

static double nice_step(double span)
{
	double raw = span / 10, mag = pow(10, floor(log10(raw > 0 ? raw : 1)));
	double f = raw / mag;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* The value a per-second panel plots (0: nothing that second). */
typedef double (*sec_value)(const struct run_sec *s);

static double sec_risk_age(const struct run_sec *s)
{
	return s->risk ? (double)s->risk_age_ns : 0;
}

/* One line per run of consecutive seconds with a value: a second with
 * nothing (no call, a gap between a server's rounds, a second no log
 * covers) breaks the line instead of being bridged by it. */
static void sec_series(FILE *out, const struct panel *p, const struct run *r, int side, sec_value value)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nsecs; i++)
		n += value(&r->secs[i]) > 0;
	if (!n)
		return;
	bool open = false;
	int64_t prev = 0;
	for (size_t i = 0; i < r->nsecs; i++) {
		double m = value(&r->secs[i]);
		if (open && (m <= 0 || r->secs[i].sec != prev + 1)) {
			fputs("\"/>\n", out);
			open = false;
		}
		if (m <= 0)
			continue;
		if (!open)
			polyline_start(out, side);
		open = true;
		prev = r->secs[i].sec;
		fprintf(out, "%.1f,%.1f ", px(p, (double)r->secs[i].sec + 0.5), py(p, m));
	}
	if (open)
		fputs("\"/>\n", out);
	if (n > 300)
		return;
	for (size_t i = 0; i < r->nsecs; i++) {
		double m = value(&r->secs[i]);
		if (m > 0)
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
				px(p, (double)r->secs[i].sec + 0.5), py(p, m), color[side]);
	}
}

struct sec_plot {
	sec_value value;
	const char *title, *empty;
	const char *none;     /* said of a side with nothing to plot, or NULL */
};

/* At (x, y), full width (half false) or beside a percentile panel. */
static void sec_panel(FILE *out, double x, double y, bool half, const struct run *a, const struct run *b,
		      const struct sec_plot *sp)
{
	struct panel p = { x + (half ? 70 : 80), y + 30, half ? PANEL_W - 90 : WIDTH - 110, PANEL_H - 80, 0, 1, 0, 1 };
	const struct run *r[2] = { a, b };
	double lo = INFINITY, hi = 0, last = 0;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < r[s]->nsecs; i++) {
			double m = sp->value(&r[s]->secs[i]);
			last = fmax(last, (double)r[s]->secs[i].sec + 1);
			if (m > 0) {
				lo = fmin(lo, m);
				hi = fmax(hi, m);
			}
		}
	p.x1 = last > 0 ? last : 1;
	fit_y(&p, lo, hi);
	frame(out, &p, sp->title, "seconds since start");
	double step = nice_step(p.x1);
	for (double t = 0; t <= p.x1 + 1e-9; t += step) {
		char label[32];
		snprintf(label, sizeof(label), "%g", t);
		x_tick(out, &p, t, label);
	}
	if (hi == 0)
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">"
			"%s</text>\n", p.x + p.w / 2, p.y + p.h / 2, sp->empty);
	for (int s = 0; s < 2; s++) {
		sec_series(out, &p, r[s], s, sp->value);
		bool any = false;
		for (size_t i = 0; i < r[s]->nsecs && !any; i++)
			any = sp->value(&r[s]->secs[i]) > 0;
		if (!any && hi > 0 && sp->none)
			fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"%s\">%s: %s</text>\n",
				p.x + 8, p.y + 16 + 14 * s, color[s], s ? "B" : "A", sp->none);
	}
}

/* ---- the whole picture ---- */

static uint64_t both_count(const struct run *a, const struct run *b, unsigned op)
{
	return (a->op[op] ? hist_count(a->op[op]) : 0) + (b->op[op] ? hist_count(b->op[op]) : 0);
}

size_t svg_plot_ops(const struct run *a, const struct run *b, unsigned *ops, size_t max)
{
	size_t n = 0;
	int write = -1;
	for (unsigned op = 0; op < LOGOP_COUNT; op++) {
		if (!both_count(a, b, op))
			continue;
		if (logop_is_write(op) && (write < 0 || both_count(a, b, op) > both_count(a, b, (unsigned)write)))
			write = (int)op;
		if (logop_is_sync(op) && n < max)
			ops[n++] = op;
	}
	if (write >= 0 && n < max)
		ops[n++] = (unsigned)write;
	for (unsigned op = 0; op < LOGOP_COUNT && n < max; op++)
		if (logop_is_real(op) && both_count(a, b, op))
			ops[n++] = op;
	return n;
}

static void legend(FILE *out, const char *la, const char *lb)
{
	const char *label[2] = { la, lb };
	for (int s = 0; s < 2; s++) {
		double x = 20 + s * 480;
		fprintf(out, "<line x1=\"%.0f\" y1=\"52\" x2=\"%.0f\" y2=\"52\" stroke=\"%s\" "
			"stroke-width=\"3\"/>\n", x, x + 30, color[s]);
		fprintf(out, "<text x=\"%.0f\" y=\"56\" font-size=\"12\">%s: ", x + 36, s ? "B" : "A");
		markup_text(out, label[s]);
		fputs("</text>\n", out);
	}
}

static const struct sec_plot lat_plot = { sec_max, "per-second max latency, all app calls",
					   "no INTERVAL blocks in either run", NULL };
static const struct sec_plot age_plot = { sec_risk_age, "data at risk: age of the oldest unsynced byte",
					   "nothing at risk in either run", "nothing at risk" };

/* The panels, gain and price first: the verdict's op beside the data at
 * risk (when a run had any), then the other ops two by two, then the
 * per-second latency. Returns the height of the panels. */
static double panels(FILE *out, double top, const struct run *a, const struct run *b)
{
	unsigned ops[MAX_PANELS];
	size_t n = svg_plot_ops(a, b, ops, MAX_PANELS), slot = 0;
	int key = compare_key_op(a, b);
	bool risk = a->has_risk || b->has_risk;
	if (risk && n) {
		size_t k = 0;
		while (k < n && (int)ops[k] != key)
			k++;
		if (k == n)
			k = 0; /* the verdict's op has no panel: the first one leads */
		unsigned first = ops[k];
		memmove(ops + 1, ops, k * sizeof(ops[0]));
		ops[0] = first;
		pct_panel(out, 0, top, a, b, ops[0]);
		sec_panel(out, PANEL_W + 10, top, true, a, b, &age_plot);
		slot = 2;
	}
	for (size_t i = slot ? 1 : 0; i < n; i++, slot++)
		pct_panel(out, (double)(slot % 2) * (PANEL_W + 10), top + (double)(slot / 2) * PANEL_H, a, b, ops[i]);
	double y = top + (double)((slot + 1) / 2) * PANEL_H;
	if (!n) {
		fprintf(out, "<text x=\"500\" y=\"%.0f\" font-size=\"14\" text-anchor=\"middle\">"
			"no calls in either run</text>\n", top + 50);
		y = top + 100;
		if (risk) {
			sec_panel(out, 0, y, false, a, b, &age_plot);
			y += PANEL_H;
		}
	}
	sec_panel(out, 0, y, false, a, b, &lat_plot);
	return y + PANEL_H - top;
}

/* The panels' height, without drawing them (panels() with no output). */
static double panels_height(const struct run *a, const struct run *b)
{
	unsigned ops[MAX_PANELS];
	size_t n = svg_plot_ops(a, b, ops, MAX_PANELS);
	bool risk = a->has_risk || b->has_risk;
	if (!n)
		return 100 + PANEL_H + (risk ? PANEL_H : 0);
	size_t slots = n + (risk ? 1 : 0);
	return (double)((slots + 1) / 2) * PANEL_H + PANEL_H;
}

void svg_compare(FILE *out, const struct run *a, const struct run *b, const char *la,
		 const char *lb, bool standalone)
{
	/* Standalone, the plot carries the verdict (the page has it above):
	 * lines of at most VERDICT_CHARS under the legend, before the panels. */
	char verdict[1024];
	size_t vlines = 0;
	if (standalone) {
		compare_verdict(a, b, verdict, sizeof(verdict));
		vlines = (strlen(verdict) + VERDICT_CHARS - 1) / VERDICT_CHARS;
	}
	double top = TITLE_H + (vlines ? 6 + 16 * (double)vlines : 0);
	double height = top + panels_height(a, b);

	if (standalone)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"sans-serif\">\n", WIDTH, height,
		WIDTH, height);
	fprintf(out, "<rect width=\"%d\" height=\"%.0f\" fill=\"#fafafa\"/>\n", WIDTH, height);
	fputs("<text x=\"20\" y=\"28\" font-size=\"18\" font-weight=\"bold\">synclat compare: "
	      "A vs B</text>\n", out);
	legend(out, la, lb);
	for (size_t l = 0; l < vlines; l++) {
		char part[VERDICT_CHARS + 1];
		snprintf(part, sizeof(part), "%.*s", VERDICT_CHARS, verdict + l * VERDICT_CHARS);
		fprintf(out, "<text x=\"20\" y=\"%.0f\" font-size=\"12\" font-weight=\"bold\">", TITLE_H + 16 * (double)l);
		markup_text(out, part);
		fputs("</text>\n", out);
	}
	panels(out, top, a, b);
	fputs("</svg>\n", out);
}

/* At most this many log names on a side's line: a server's run leaves
 * dozens, and the first screen is for the verdict. */
#define HTML_LOGS_NAMED 2
/* The command on a side's line: its first words. */
#define HTML_COMMAND_SHOWN 100

static void html_side(FILE *out, const char *side, const char *label, const struct run *r)
{
	fprintf(out, "<p class=\"side\"><b>%s</b> ", side);
	markup_text(out, label);
	fprintf(out, ": <code>");
	char command[HTML_COMMAND_SHOWN + 8];
	command_label(command, sizeof(command), r->logs[0]->cmdline, HTML_COMMAND_SHOWN);
	markup_text(out, command);
	fprintf(out, "</code>, ran %.3f s; log%s ", r->duration_s, r->nlogs == 1 ? "" : "s");
	for (size_t l = 0; l < r->nlogs && l < HTML_LOGS_NAMED; l++) {
		fputs(l ? ", " : "", out);
		const char *slash = strrchr(r->logs[l]->path, '/');
		markup_text(out, slash ? slash + 1 : r->logs[l]->path); /* the directory is the same for all */
	}
	if (r->nlogs > HTML_LOGS_NAMED)
		fprintf(out, " and %zu more", r->nlogs - HTML_LOGS_NAMED);
	fprintf(out, "%s%s</p>\n", r->drops ? ", dropped records" : "",
		(r->warnings & LRW_NO_TRAILER) ? ", no trailer (process ended abruptly?)" : "");
	/* a rule that matched nothing makes the side a comparison of something else */
	static struct rule_match m[REPORT_MAX_RULES];
	size_t n = run_rule_matches(r, m, REPORT_MAX_RULES);
	for (size_t i = 0; i < n; i++) {
		if (!m[i].name[0] || m[i].files)
			continue;
		fputs("<p class=\"warn\">warning: rule ", out);
		markup_text(out, m[i].name);
		fprintf(out, " (%s, path = ", report_sync_name(m[i].sync));
		markup_text(out, m[i].glob);
		fputs(") matched no file in this run</p>\n", out);
	}
}

/* The page: the verdict and the price first (what a reader takes in ten
 * seconds), the sides, then the plots with the verdict's op beside the
 * data at risk, then the whole table. */
void html_compare(FILE *out, const struct run *a, const struct run *b, const char *la,
		  const char *lb)
{
	char verdict[1024];
	compare_verdict(a, b, verdict, sizeof(verdict));
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>synclat compare</title>\n<style>\n"
	      "body { font-family: sans-serif; margin: 20px; color: #222; max-width: 1040px; }\n"
	      "h1 { font-size: 22px; margin: 0 0 8px 0; }\n"
	      "table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }\n"
	      "th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #ddd; }\n"
	      "td:first-child, td:nth-child(2), th:first-child { text-align: left; }\n"
	      "tr.a td { color: #1f77b4; } tr.b td { color: #d62728; }\n"
	      "tr.ratio td { font-weight: bold; }\n"
	      ".verdict { font-size: 15px; font-weight: bold; margin: 6px 0; }\n"
	      ".side { font-size: 13px; margin: 2px 0; }\n"
	      ".warn { font-size: 13px; margin: 2px 0; color: #b00; font-weight: bold; }\n"
	      "</style>\n</head>\n<body>\n<h1>synclat compare</h1>\n", out);
	fputs("<p class=\"verdict\">", out);
	markup_text(out, verdict);
	fputs("</p>\n", out);
	compare_html_risk(out, a, b);
	html_side(out, "A", la, a);
	html_side(out, "B", lb, b);
	svg_compare(out, a, b, la, lb, false);
	compare_html_table(out, a, b);
	fputs("</body>\n</html>\n", out);
}
