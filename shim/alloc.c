/*
 * alloc.c - the shim's private allocator.
 *
 * The shim lives inside someone else's process and must never replace or
 * perturb its malloc. It links a private copy of jemalloc
 * (libjemalloc_pic.a) whose symbols --exclude-libs and the version script
 * keep hidden, and calls it only through jemalloc's own mallocx/dallocx
 * names so no call here can be confused with the host's malloc/free.
 * Rule: memory from libc (strdup, getline, ...) is never freed here, and
 * memory from here is never handed to libc to free.
 */
#include <stddef.h>
#include <string.h>

#include "shim.h"

void *mallocx(size_t size, int flags);
void dallocx(void *ptr, int flags);
#define MALLOCX_ZERO_FLAG 0x40 /* jemalloc's MALLOCX_ZERO */

void *shim_alloc(size_t n)
{
	return mallocx(n ? n : 1, MALLOCX_ZERO_FLAG);
}

void shim_free(void *p)
{
	if (p)
		dallocx(p, 0);
}

char *shim_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = shim_alloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}
