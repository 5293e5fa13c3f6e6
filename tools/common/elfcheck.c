/*
 * elfcheck.c - warn before running a program the shim cannot see into.
 *
 * LD_PRELOAD only works through the dynamic loader, and only calls that go
 * through libc's exported functions can be interposed. A static binary
 * (no PT_INTERP), one that does not link libc.so, or a Go binary (which
 * makes system calls itself even when dynamically linked) would run
 * untouched, and the user should hear that rather than trust numbers that
 * measured nothing. So would a program whose exec gains privileges: the
 * loader runs it in secure mode (AT_SECURE) and ignores LD_PRELOAD.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "elfcheck.h"

#define MAX_ELF_BYTES (512u << 20)

int find_in_path(const char *cmd, char *out, size_t len)
{
	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, X_OK);
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", cmd);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		path += n + (end ? 1 : 0);
	}
	errno = ENOENT;
	return -1;
}

struct image {
	const unsigned char *p;
	size_t n;
};

static const void *at(const struct image *im, uint64_t off, uint64_t size)
{
	return off <= im->n && size <= im->n - off ? im->p + off : NULL;
}

/* File offset of a virtual address, through the PT_LOAD segments. */
static int vaddr_to_off(const struct image *im, const Elf64_Ehdr *eh, uint64_t va, uint64_t *off)
{
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = at(im, eh->e_phoff + (uint64_t)i * sizeof(*ph), sizeof(*ph));
		if (ph && ph->p_type == PT_LOAD && va >= ph->p_vaddr && va < ph->p_vaddr + ph->p_filesz) {
			*off = va - ph->p_vaddr + ph->p_offset;
			return 0;
		}
	}
	return -1;
}

static int needs_libc(const struct image *im, const Elf64_Ehdr *eh, const Elf64_Phdr *dyn)
{
	size_t count = dyn->p_filesz / sizeof(Elf64_Dyn);
	const Elf64_Dyn *d = at(im, dyn->p_offset, count * sizeof(Elf64_Dyn));
	uint64_t strtab = 0, stroff;
	if (!d)
		return 0;
	for (size_t i = 0; i < count && d[i].d_tag != DT_NULL; i++)
		if (d[i].d_tag == DT_STRTAB)
			strtab = d[i].d_un.d_ptr;
	if (!strtab || vaddr_to_off(im, eh, strtab, &stroff) < 0)
		return 0;
	for (size_t i = 0; i < count && d[i].d_tag != DT_NULL; i++) {
		if (d[i].d_tag != DT_NEEDED)
			continue;
		const char *name = at(im, stroff + d[i].d_un.d_val, 1);
		if (name && strncmp(name, "libc.so", 7) == 0)
			return 1;
	}
	return 0;
}

static int has_section(const struct image *im, const Elf64_Ehdr *eh, const char *want)
{
	const Elf64_Shdr *strsec = at(im, eh->e_shoff + (uint64_t)eh->e_shstrndx * sizeof(Elf64_Shdr),
				      sizeof(Elf64_Shdr));
	if (!strsec || eh->e_shnum == 0)
		return 0;
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = at(im, eh->e_shoff + (uint64_t)i * sizeof(*sh), sizeof(*sh));
		const char *name = sh ? at(im, strsec->sh_offset + sh->sh_name, 1) : NULL;
		if (name && strnlen(name, im->n - (size_t)(name - (const char *)im->p)) < im->n &&
		    strcmp(name, want) == 0)
			return 1;
	}
	return 0;
}

static int check_elf(const struct image *im, char *why, size_t whylen)
{
	const Elf64_Ehdr *eh = at(im, 0, sizeof(*eh));
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return snprintf(why, whylen, "not an ELF executable"), PRELOAD_DOUBT;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64)
		return snprintf(why, whylen, "a 32-bit program: the 64-bit shim cannot load into it"), PRELOAD_NEVER;
	const Elf64_Phdr *interp = NULL, *dyn = NULL;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = at(im, eh->e_phoff + (uint64_t)i * sizeof(*ph), sizeof(*ph));
		if (ph && ph->p_type == PT_INTERP)
			interp = ph;
		if (ph && ph->p_type == PT_DYNAMIC)
			dyn = ph;
	}
	if (!interp)
		return snprintf(why, whylen, "statically linked: LD_PRELOAD cannot load into it, nothing will be intercepted"), PRELOAD_NEVER;
	if (has_section(im, eh, ".note.go.buildid") || has_section(im, eh, ".go.buildinfo"))
		return snprintf(why, whylen, "a Go program: Go makes its system calls directly, so file writes and syncs bypass the shim"), PRELOAD_NEVER;
	if (!dyn || !needs_libc(im, eh, dyn))
		return snprintf(why, whylen, "does not load libc dynamically: its system calls cannot be intercepted"), PRELOAD_NEVER;
	return 0;
}

/* Would exec'ing path change our credentials? Then the kernel sets
 * AT_SECURE and the loader drops LD_PRELOAD. (Set-id bits are ignored on
 * a nosuid mount; setgid needs the group execute bit.) */
static int check_secure(const char *path, char *why, size_t whylen)
{
	struct stat st;
	struct statvfs vfs;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)))
		return PRELOAD_OK;
	static const char drop[] = "the loader ignores LD_PRELOAD for it, nothing will be intercepted";
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
		return snprintf(why, whylen, "setuid (runs as uid %u): %s", (unsigned)st.st_uid, drop),
		       PRELOAD_NEVER;
	if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid())
		return snprintf(why, whylen, "setgid (runs as gid %u): %s", (unsigned)st.st_gid, drop),
		       PRELOAD_NEVER;
	if (getxattr(path, "security.capability", NULL, 0) > 0 && getuid() != 0)
		return snprintf(why, whylen, "given file capabilities: %s", drop), PRELOAD_NEVER;
	return PRELOAD_OK;
}

static int check_file(const char *path, char *why, size_t whylen, int depth);

int elf_preload_check(const char *path, char *why, size_t whylen)
{
	return check_file(path, why, whylen, 0);
}

static int check_file(const char *path, char *why, size_t whylen, int depth)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > MAX_ELF_BYTES) {
		if (fd >= 0)
			close(fd);
		/* an execute-only setuid binary cannot be read, but its bits say enough */
		return check_secure(path, why, whylen);
	}
	struct image im = { .n = (size_t)st.st_size };
	unsigned char *buf = malloc(im.n);
	size_t got = 0;
	ssize_t r;
	while (buf && got < im.n && (r = read(fd, buf + got, im.n - got)) > 0)
		got += (size_t)r;
	close(fd);
	if (!buf || got != im.n) {
		free(buf);
		return 0;
	}
	im.p = buf;
	int verdict;
	if (im.n > 2 && buf[0] == '#' && buf[1] == '!') {
		char interp[4096];
		size_t i = 2, k = 0;
		while (i < im.n && (buf[i] == ' ' || buf[i] == '\t'))
			i++;
		while (i < im.n && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' && k < sizeof(interp) - 1)
			interp[k++] = (char)buf[i++];
		interp[k] = '\0';
		verdict = k && depth < 4 ? check_file(interp, why, whylen, depth + 1) : 0;
	} else {  /* set-id bits count on binaries only: the kernel ignores them on scripts */
		verdict = check_secure(path, why, whylen);
		if (verdict == PRELOAD_OK)
			verdict = check_elf(&im, why, whylen);
	}
	free(buf);
	return verdict;
}
