/*
 * paths.h - absolute, normalised paths for rule matching (paths.c).
 */
#ifndef SYNCSHIM_PATHS_H
#define SYNCSHIM_PATHS_H

#include <stddef.h>

/* Absolute, lexically normalised path for (dirfd, path); 0 or -1. */
int path_absolute(int dirfd, const char *path, char *out, size_t len);
int path_of_fd(int fd, char *out, size_t len);

#endif
