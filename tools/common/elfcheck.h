/*
 * elfcheck.h - can LD_PRELOAD reach this program's libc calls at all?
 */
#ifndef SYNCSHIM_ELFCHECK_H
#define SYNCSHIM_ELFCHECK_H

#include <stddef.h>

/* Resolve cmd through PATH like execvp; 0 and the path in out, or -1. */
int find_in_path(const char *cmd, char *out, size_t len);

enum preload_verdict {
	PRELOAD_OK = 0,     /* the shim can work in it (or we cannot tell) */
	PRELOAD_NEVER = 1,  /* nothing would be intercepted: static, no libc, Go,
			       32-bit, setuid/setgid or file capabilities */
	PRELOAD_DOUBT = 2,  /* not an ELF file we know: it may still work */
};

/*
 * Inspect an executable. Returns PRELOAD_OK, or another verdict and a
 * one-line reason in why ("statically linked: ..."). Scripts are judged
 * by their #! interpreter. A program that gains privileges on exec
 * (setuid or setgid to someone else, file capabilities) runs in the
 * loader's secure mode, which drops LD_PRELOAD.
 */
int elf_preload_check(const char *path, char *why, size_t whylen);

#endif
