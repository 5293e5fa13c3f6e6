/*
 * paths.h - absolute, normalised paths for rule matching (paths.c).
 */
#ifndef SYNCSHIM_PATHS_H
#define SYNCSHIM_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* Absolute, lexically normalised path for (dirfd, path); 0 or -1. */
int path_absolute(int dirfd, const char *path, char *out, size_t len);
int path_of_fd(int fd, char *out, size_t len);
/* The /proc name of descriptor fd of the calling thread's table, for an
 * open or readlink through /proc: "/proc/thread-self/fd/N" (thread: true),
 * or "/proc/self/fd/N", the thread group leader's table, for kernels
 * without thread-self (3.17). out: at least PROC_FD_NAME_MAX bytes. A
 * thread with a descriptor table of its own (cloned without CLONE_FILES)
 * finds its descriptors only under thread-self. Async-signal-safe. */
#define PROC_FD_NAME_MAX 48
void proc_fd_name(int fd, bool thread, char *out);

#endif
