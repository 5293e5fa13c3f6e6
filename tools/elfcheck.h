/*
 * elfcheck.h - can LD_PRELOAD reach this program's libc calls at all?
 */
#ifndef SYNCSHIM_ELFCHECK_H
#define SYNCSHIM_ELFCHECK_H

#include <stddef.h>

/* Resolve cmd through PATH like execvp; 0 and the path in out, or -1. */
int find_in_path(const char *cmd, char *out, size_t len);

/*
 * Inspect an executable. Returns 0 when the shim can work in it, or 1 and
 * a one-line reason in why (statically linked, no libc, Go, 32-bit ...).
 * Scripts are judged by their #! interpreter.
 */
int elf_preload_check(const char *path, char *why, size_t whylen);

#endif
