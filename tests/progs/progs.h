/*
 * progs.h - helpers shared by the test programs.
 *
 * Header-only: each tests/progs/NAME.c is built alone, so everything here
 * is static inline (a program that does not use a helper gets no warning).
 */
#ifndef SYNCSHIM_PROGS_H
#define SYNCSHIM_PROGS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The 16-byte record pattern of tests/harness.h: byte o of a file is part
 * of the record at o & ~15, that offset as 15 hex digits then '\n'. Fills
 * buf with the n bytes starting at file offset off. */
static inline void pattern(char *buf, size_t n, unsigned long long off)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		unsigned long long o = off + i;
		unsigned pos = (unsigned)(o & 15);
		buf[i] = pos == 15 ? '\n' : hex[((o & ~15ull) >> (4 * (14 - pos))) & 15];
	}
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* SYNCSHIM_PROGS_H */
