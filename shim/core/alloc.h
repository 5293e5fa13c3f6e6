/*
 * alloc.h - the shim's private allocator: jemalloc, hidden (alloc.c).
 */
#ifndef SYNCSHIM_ALLOC_H
#define SYNCSHIM_ALLOC_H

#include <stddef.h>

void *shim_alloc(size_t n);   /* zeroed */
/* n bytes aligned to align (a power of two), not zeroed: a held write's copy. */
void *shim_alloc_bytes(size_t n, size_t align);
void shim_free(void *p);
char *shim_strdup(const char *s);
void alloc_atfork_lock_init(void); /* fork's first lock: no half-initialised allocator */
void alloc_atfork_prepare(void);      /* fork's last locks: the allocator's own */
void alloc_atfork_parent(void);
void alloc_atfork_child(void);

#endif
