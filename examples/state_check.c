/*
 * state_check - after a power cut: is the state file write_tmp_rename
 * replaces whole?
 *
 * The atomic-replace pattern promises that DIR/state is always one
 * iteration's complete content, old or new, never a mix, never empty. A
 * rename made durable before the data behind it (what a missing fsync,
 * or a rename barrier turned off, allows) leaves an empty or torn target
 * after the cut: this says which.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "state_check"
#include "examples.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s -d DIR [-s SIZE]\n"
		"  Checks that DIR/state is one iteration's whole content as write_tmp_rename\n"
		"  writes it (\"iteration=N\\n\" repeated, cut to SIZE bytes); exits 1 if it is\n"
		"  missing, empty, the wrong size or a mix (torn), 0 if whole.\n"
		"  -d DIR   the directory write_tmp_rename -d DIR used\n"
		"  -s SIZE  its -s (default 256)\n"
		"  -h       this help\n",
		PROG);
}

/* 0 and the iteration if buf is whole; -1 if not. */
static int whole(const char *buf, size_t len, size_t size, unsigned long long *iter)
{
	if (len != size || sscanf(buf, "iteration=%llu\n", iter) != 1)
		return -1;
	char line[32];
	int n = snprintf(line, sizeof(line), "iteration=%llu\n", *iter);
	for (size_t off = 0; off < size; off += (size_t)n) {
		size_t k = size - off < (size_t)n ? size - off : (size_t)n;
		if (memcmp(buf + off, line, k) != 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char dir[4000] = "", path[4100];
	size_t size = 256;
	const struct opt opts[] = {
		{ 'd', OPT_PATH, .p = dir, .max = sizeof(dir) },
		{ 's', OPT_SIZE, .p = &size },
	};
	parse_opts(argc, argv, opts, NOPTS(opts));
	if (!dir[0] || !size) {
		usage(stderr);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("%s: %s: MISSING (%s)\nresult: state=missing\n", PROG, path, strerror(errno));
		return 1;
	}
	char *buf = malloc(size + 2);
	if (!buf)
		die("malloc");
	size_t len = 0;
	ssize_t k;
	while (len < size + 1 && (k = read(fd, buf + len, size + 1 - len)) > 0)
		len += (size_t)k;
	close(fd);
	buf[len] = '\0';
	unsigned long long iter = 0;
	int rc = 0;
	if (len == 0) {
		printf("%s: %s: EMPTY\nresult: state=empty\n", PROG, path);
		rc = 1;
	} else if (whole(buf, len, size, &iter) < 0) {
		printf("%s: %s: TORN (%zu bytes, not one iteration's %zu)\nresult: state=torn\n", PROG, path, len, size);
		rc = 1;
	} else {
		printf("%s: %s: whole, iteration %llu\nresult: state=whole iteration=%llu\n", PROG, path, iter, iter);
	}
	free(buf);
	return rc;
}
