/*
 * publish - making a name for data that was just "synced" under defer:
 * link, O_TMPFILE + linkat, and RENAME_EXCHANGE.
 *
 *   publish -d DIR -m link|tmpfile|exchange
 *
 * link:     DIR/src.dat gets 8 KiB, fsync, then link(src.dat, dst.dat).
 * tmpfile:  an O_TMPFILE file in DIR gets 8 KiB, fsync, then
 *           linkat(fd, "", AT_FDCWD, DIR/dst.dat, AT_EMPTY_PATH).
 * exchange: DIR/src.dat and DIR/dst.dat each get 8 KiB and an fsync, then
 *           renameat2(src.dat, dst.dat, RENAME_EXCHANGE).
 * Prints "publish: ok"; exit 1 on a failed call.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

static int fill(int fd)
{
	char buf[8192];
	pattern(buf, sizeof(buf), 0);
	return fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) && fsync(fd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *dir = ".", *mode = "link";
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'm', OPT_STR, .p = &mode },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	char src[PATH_MAX], dst[PATH_MAX];
	snprintf(src, sizeof(src), "%s/src.dat", dir);
	snprintf(dst, sizeof(dst), "%s/dst.dat", dir);
	int r;
	if (!strcmp(mode, "tmpfile")) {
		int fd = open(dir, O_TMPFILE | O_WRONLY, 0644);
		r = fill(fd) || linkat(fd, "", AT_FDCWD, dst, AT_EMPTY_PATH);
	} else if (!strcmp(mode, "exchange")) {
		r = fill(open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ||
		    fill(open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ||
		    renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_EXCHANGE);
	} else {
		r = fill(open(src, O_WRONLY | O_CREAT | O_TRUNC, 0644)) || link(src, dst);
	}
	printf("publish: %s\n", r ? "FAILED" : "ok");
	return r ? 1 : 0;
}
