/*
 * paths.c - absolute paths for rule matching.
 *
 * Rules match the path the app opened, made absolute and lexically
 * normalised ("a/./b/../c" -> "a/c"); symlinks are not resolved because
 * the rule must be known before the file exists (O_CREAT with O_SYNC).
 * Descriptors the shim never saw opened fall back to the kernel's name
 * for them in /proc/self/fd. Everything here is async-signal-safe: no
 * stdio, no allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "shim.h"

static size_t put_uint(char *out, unsigned v)
{
	char tmp[12];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

void proc_fd_name(int fd, bool thread, char *out)
{
	const char *base = thread ? "/proc/thread-self/fd/" : "/proc/self/fd/";
	size_t n = strlen(base);
	memcpy(out, base, n);
	out[n + put_uint(out + n, (unsigned)fd)] = '\0';
}

static int proc_fd_link(int fd, char *out, size_t len)
{
	char link[PROC_FD_NAME_MAX];
	ssize_t r = -1;
	for (int thread = 1; thread >= 0 && r <= 0; thread--) {
		proc_fd_name(fd, thread, link);
		r = readlink(link, out, len - 1);
	}
	if (r <= 0)
		return -1;
	out[r] = '\0';
	return 0;
}

/* Collapse "//", "/./" and "/x/../" in place; keeps a leading '/'. */
static void normalise(char *p)
{
	char *out = p;
	const char *in = p;
	while (*in) {
		while (*in == '/')
			in++;
		const char *seg = in;
		while (*in && *in != '/')
			in++;
		size_t n = (size_t)(in - seg);
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

int path_absolute(int dirfd, const char *path, char *out, size_t len)
{
	size_t plen = strlen(path);
	size_t base = 0;
	if (path[0] != '/') {
		if (dirfd == AT_FDCWD) {
			if (!getcwd(out, len))
				return -1;
		} else if (proc_fd_link(dirfd, out, len) < 0) {
			return -1;
		}
		base = strlen(out);
		if (out[0] != '/')
			return -1; /* "(unreachable)" cwd or an anonymous dirfd */
	}
	if (base + 1 + plen + 1 > len)
		return -1;
	out[base] = '/';
	memcpy(out + base + 1, path, plen + 1);
	normalise(out);
	return 0;
}

int path_of_fd(int fd, char *out, size_t len)
{
	static const char deleted[] = " (deleted)";
	if (proc_fd_link(fd, out, len) < 0 || out[0] != '/')
		return -1;
	size_t n = strlen(out), d = sizeof(deleted) - 1;
	if (n > d && strcmp(out + n - d, deleted) == 0)
		out[n - d] = '\0';
	return 0;
}
