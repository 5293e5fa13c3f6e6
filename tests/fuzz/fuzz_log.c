/*
 * fuzz_log.c - libFuzzer target: the log reader, run merging, report,
 * compare and the SVG/HTML writers.
 *
 * Input: one flags byte, two bytes (LE) where log A ends and log B begins,
 * then the bytes of the two logs (B empty: A is compared with itself).
 * Unless flag RAW is set, each log is fixed up before parsing so that
 * mutations get past the checksums: every block gets the magic, the
 * sequence number it is due and correct CRCs, and a length that fits what
 * is left of the input.
 *
 * Whatever the reader accepts (or salvages) is reported in every format
 * and compared; the SVG and HTML must never show a non-finite number. The
 * log's own strings are upper-cased in 'n' and 'i' first, so any "nan" or
 * "inf" left in the output came from printing a number.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logfmt.h"
#include "logread.h"
#include "report.h"
#include "svg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { RAW = 1, SALVAGE = 2, PER_SECOND = 4, FILES = 8 };

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Magic, seq, a length that fits, both CRCs: block by block. */
static void fix_up(uint8_t *d, size_t n)
{
	size_t off = 0;

	for (uint32_t seq = 0; n - off >= LOGFMT_BLOCK_HDR; seq++) {
		uint8_t *b = d + off;
		size_t room = n - off - LOGFMT_BLOCK_HDR;
		uint32_t len = get32(b + 12);

		if (len > room)
			len = (uint32_t)(len % (room + 1));
		put32(b, LOGFMT_MAGIC);
		put32(b + 8, seq);
		put32(b + 12, len);
		put32(b + 16, logfmt_crc32c(0, b + LOGFMT_BLOCK_HDR, len));
		put32(b + 20, logfmt_crc32c(0, b, 20));
		off += LOGFMT_BLOCK_HDR + len;
	}
}

static void shout(char *s)
{
	for (; s && *s; s++)
		if (*s == 'n' || *s == 'i')
			*s = (char)(*s - 'a' + 'A');
}

static void shout_log(struct lr_log *L)
{
	shout(L->hostname);
	shout(L->kernel);
	shout(L->cmdline);
	shout(L->policy_ini);
	for (size_t i = 0; i < L->nrules; i++) {
		shout(L->rules[i].name);
		shout(L->rules[i].glob);
	}
	for (size_t i = 0; i < L->nfiles; i++) {
		shout(L->files[i].rule_name);
		shout(L->files[i].fstype);
		shout(L->files[i].path);
	}
	for (size_t i = 0; i < L->nevents; i++)
		shout(L->events[i].text);
}

/* 0 when the log can be reported (read, or salvaged if asked). */
static int load(const uint8_t *p, size_t n, unsigned flags, const char *name, struct lr_log *L)
{
	struct lr_error e;
	uint8_t *copy = malloc(n ? n : 1);
	int rc;

	if (!copy)
		abort();
	memcpy(copy, p, n);
	if (!(flags & RAW))
		fix_up(copy, n);
	rc = lr_read_mem(copy, n, name, L, &e);
	free(copy);
	if (rc == 0)
		return 0;
	if (!e.msg[0] || strchr(e.msg, '\n'))
		abort(); /* every refusal is one line */
	if ((flags & SALVAGE) && lr_salvage(L, &e))
		return 0;
	lr_free(L);
	return -1;
}

static void no_nonfinite(const char *text, size_t len)
{
	static const char *const bad[] = { "nan", "inf" };

	for (size_t i = 0; i < 2; i++)
		if (memmem(text, len, bad[i], 3))
			abort();
}

static void plots(const struct run *a, const struct run *b)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	svg_compare(f, a, b, "A", "B", true);
	html_compare(f, a, b, "A", "B");
	fclose(f);
	no_nonfinite(text, len);
	free(text);
}

static void outputs(const struct run *a, const struct run *b, unsigned flags)
{
	static FILE *sink;
	unsigned rf = (flags & PER_SECOND ? REPORT_PER_SECOND : 0) | (flags & FILES ? REPORT_FILES : 0);

	if (!sink)
		sink = fopen("/dev/null", "w");
	for (int fmt = FMT_TEXT; fmt <= FMT_JSON; fmt++) {
		report_print(sink, a, (enum report_format)fmt, rf);
		compare_print(sink, a, b, (enum report_format)fmt);
	}
	report_warnings(sink, a);
	plots(a, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lr_log la, lb;
	struct lr_log *pa = &la, *pb = &lb;
	struct run ra, rb;

	if (size < 3)
		return 0;
	unsigned flags = data[0];
	size_t split = (size_t)(data[1] | data[2] << 8);
	data += 3;
	size -= 3;
	if (split > size)
		split = size;
	if (load(data, split, flags, "a.log", &la))
		return 0;
	if (split == size || load(data + split, size - split, flags, "b.log", &lb))
		pb = NULL;
	shout_log(pa);
	if (pb)
		shout_log(pb);
	run_build(&ra, &pa, 1);
	run_build(&rb, pb ? &pb : &pa, 1);
	outputs(&ra, &rb, flags);
	run_free(&ra);
	run_free(&rb);
	lr_free(&la);
	if (pb)
		lr_free(&lb);
	return 0;
}
