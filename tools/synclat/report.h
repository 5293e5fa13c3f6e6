/*
 * report.h - what synclat computes from runs (struct run, logread.h) and
 * prints: the report of one run and the comparison of two, as text, CSV
 * or JSON. Computations are separate from printing so tests can check the
 * numbers without parsing text.
 */
#ifndef SYNCSHIM_REPORT_H
#define SYNCSHIM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "logread.h"
#include "tool.h"

/* The percentiles every table shows (fio's set). */
#define REPORT_NPCT 5
extern const double report_pct[REPORT_NPCT];         /* 50 90 99 99.9 99.99 */
extern const char *const report_pct_name[REPORT_NPCT]; /* "p50" ... "p99.99" */

struct op_stats {
	unsigned op;
	uint64_t count, bytes;
	double mean_ns;
	uint64_t min_ns, max_ns;
	uint64_t pct_ns[REPORT_NPCT];
	double calls_per_s;          /* over the run's duration; 0 if unknown */
	double mb_per_s;             /* write ops: bytes / 1e6 / duration; else 0 */
};

/* False (and *s zeroed) when the run has no call of op. */
bool report_op_stats(const struct run *r, unsigned op, struct op_stats *s);

enum report_format { FMT_TEXT, FMT_CSV, FMT_JSON };

#define REPORT_PER_SECOND 0x1
#define REPORT_FILES 0x2

void report_print(FILE *out, const struct run *r, enum report_format fmt, unsigned flags);

/* One line per warning the run carries (no trailer, salvaged, ...), each
 * prefixed by the log's path; printed by synclat on stderr. */
void report_warnings(FILE *out, const struct run *r);

/* A rule of the run (the union of its logs' rule tables, the default
 * first) and the files it matched: the distinct paths whose FILE block
 * names it. */
struct rule_match {
	const char *name;    /* "" for the default */
	const char *glob;
	uint8_t sync;        /* enum sync_policy */
	size_t files;
};
#define REPORT_MAX_RULES 256
/* Fills out (room for max) and returns how many rules. */
size_t run_rule_matches(const struct run *r, struct rule_match *out, size_t max);
/* One warning line per rule (not the default) that matched no file,
 * "side" (e.g. "B (redis.ini)") first when given; returns how many. */
int report_rule_warnings(FILE *out, const struct run *r, const char *side);

/* ---- comparison of run A with run B ---- */

/* The op the verdict is about: the app sync op with the most calls in
 * both runs together, else the most called app op; -1 if none. */
int compare_key_op(const struct run *a, const struct run *b);

/* B/A; negative when undefined (A is 0). */
double compare_ratio(double a, double b);

/* One line, no newline, the gain and the price: "verdict: [LEAD;] B's
 * fsync p50 500x faster (500 us -> 1.00 us), p99 ...; fsync calls/s 38.2x,
 * write MB/s ...; B at risk max 178 kB, oldest 76.0 ms; A nothing at risk".
 * The same line ends the text, heads the HTML page and the SVG. */
void compare_verdict(const struct run *a, const struct run *b, char *buf, size_t len);
/* What leads the verdict (syncshim ab: the load's own figure and its
 * warnings); "" or NULL for nothing. */
void compare_set_lead(const char *lead);

void compare_print(FILE *out, const struct run *a, const struct run *b, enum report_format fmt);
/* Text into HTML or SVG, as element content or a quoted attribute: & < >
 * and " escaped, control bytes left out. The one escaper of both writers. */
void markup_text(FILE *out, const char *s);

/* Text from a log or a live file, for a terminal: control bytes (a
 * crafted or damaged file could hold escape sequences) are shown as '?'. */
void put_clean(FILE *out, const char *s);
/* A JSON string literal, quotes included: " \ and control bytes escaped. */

/* The comparison table as an HTML <table> (for synclat compare --html). */
void compare_html_table(FILE *out, const struct run *a, const struct run *b);
/* Each side's data at risk as an HTML <table>: max, oldest, files. */
void compare_html_risk(FILE *out, const struct run *a, const struct run *b);

/* Human units: "850 ns", "3.10 us", "245 us", "1.20 ms", "2.50 s". */
void fmt_ns(char *buf, size_t len, double ns);
/* Bytes in SI units: "850 B", "4.10 kB", "2.73 MB". */
void fmt_bytes(char *buf, size_t len, uint64_t b);
/* Ratios: "1/500" (below 0.1), "0.25x", "1.00x", "38.2x", "10,700x", "-"
 * when undefined: never an exponent. */
void fmt_ratio(char *buf, size_t len, double ratio);
/* A load's own figure in plain digits: "42,918", "451", "12.5", "0.264"
 * (never an exponent). */
void fmt_figure(char *buf, size_t len, double v);
/* B's latency against A's, in words: "10,700x faster", "2.10x slower",
 * "about the same"; "-" when either is unknown. */
void fmt_speedup(char *buf, size_t len, double a_ns, double b_ns);

/* Names of policy enums without linking policy.c. */
const char *report_sync_name(unsigned sync);
const char *report_mode_name(unsigned mode);

#endif
