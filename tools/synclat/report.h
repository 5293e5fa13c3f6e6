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

/* ---- comparison of run A with run B ---- */

/* The op the verdict is about: the app sync op with the most calls in
 * both runs together, else the most called app op; -1 if none. */
int compare_key_op(const struct run *a, const struct run *b);

/* B/A; negative when undefined (A is 0). */
double compare_ratio(double a, double b);

/* One line, no newline: "verdict: B fsync p50 0.002x of A (500 us ->
 * 1.00 us), p99 ..., throughput 38.2x (fsync calls/s ...)". */
void compare_verdict(const struct run *a, const struct run *b, char *buf, size_t len);

void compare_print(FILE *out, const struct run *a, const struct run *b, enum report_format fmt);
/* Text into HTML or SVG, as element content or a quoted attribute: & < >
 * and " escaped, control bytes left out. The one escaper of both writers. */
void markup_text(FILE *out, const char *s);

/* Text from a log or a live file, for a terminal: control bytes (a
 * crafted or damaged file could hold escape sequences) are shown as '?'. */
void put_clean(FILE *out, const char *s);
/* A JSON string literal, quotes included: " \ and control bytes escaped. */
void json_str(FILE *out, const char *s);

/* The comparison table as an HTML <table> (for synclat compare --html). */
void compare_html_table(FILE *out, const struct run *a, const struct run *b);

/* Human units: "850 ns", "3.10 us", "245 us", "1.20 ms", "2.50 s". */
void fmt_ns(char *buf, size_t len, double ns);
/* Bytes in SI units: "850 B", "4.10 kB", "2.73 MB". */
void fmt_bytes(char *buf, size_t len, uint64_t b);
/* Ratios: "0.002x", "1.00x", "38.2x", "-" when undefined. */
void fmt_ratio(char *buf, size_t len, double ratio);

/* Names of policy enums without linking policy.c. */
const char *report_sync_name(unsigned sync);
const char *report_mode_name(unsigned mode);

#endif
