/*
 * mmap_track.h - the app's shared mappings of tracked files (mmap_track.c).
 */
#ifndef SYNCSHIM_MMAP_TRACK_H
#define SYNCSHIM_MMAP_TRACK_H

#include <stddef.h>

struct shim_file;

void mmap_track_add(void *addr, size_t len, int fd);
void mmap_track_remove(void *addr, size_t len);
/* The file mapped over all of [addr, addr+len), with a reference; NULL when
 * the range is not inside one tracked mapping. */
struct shim_file *mmap_track_find(const void *addr, size_t len);
void mmap_track_atfork_prepare(void);
void mmap_track_atfork_parent(void);
void mmap_track_atfork_child(void);

#endif
