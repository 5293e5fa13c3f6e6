/*
 * ghosts - many closed files whose deferred sync failed and that are then
 * unlinked (temp files, old segments), then one that stays, for the check
 * that the shim keeps a failed sync's error for a file's next opener
 * without keeping it for files no one can open again
 * (tests/system/test_churn.c). Every sync of a file named *.bad is meant
 * to fail beneath the shim (RECLAYER_FAIL_SUFFIX=.bad).
 *
 *   ghosts -d DIR -n N
 *
 * N temp files DIR/t<i>.bad, each written, fsynced and closed, then
 * unlinked (even i), or unlinked while open and then written, fsynced
 * and closed (odd i). Then DIR/keep.bad is written, fsynced and closed, sync() makes
 * every deferred sync (keep's fails), and keep.bad is renamed: the
 * rename must report the failure no descriptor of the file was told.
 * Prints "ghosts: files=N rename=R errno=E"; exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

static int write_sync(int fd)
{
	char data[64];
	pattern(data, sizeof(data), 0);
	return write(fd, data, sizeof(data)) == (ssize_t)sizeof(data) ? fsync(fd) : -1;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int n = 0;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_INT, .p = &n },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0 || !dir || n <= 0)
		return 2;
	char path[4096];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/t%d.bad", dir, i);
		int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return 1;
		if (i & 1) {
			/* unlinked while open, before the sync: the deferred sync
			 * fails after the close (through the shim's own descriptor) */
			unlink(path);
			(void)write_sync(fd);
			close(fd);
		} else {
			/* unlinked once closed: the unlink waits for the deferred
			 * sync (ordered defer), which fails with no descriptor left */
			(void)write_sync(fd);
			close(fd);
			unlink(path);
		}
	}
	snprintf(path, sizeof(path), "%s/keep.bad", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	(void)write_sync(fd);
	close(fd);
	sync(); /* every deferred sync now: keep.bad's fails with no descriptor left */
	/* The first call that can tell: a rename of the file, which must not
	 * publish data whose sync failed unreported (its next open's fsync
	 * would be a real one here, failing of itself beneath the shim). */
	char to[4096];
	snprintf(to, sizeof(to), "%s/keep.ok", dir);
	int r = rename(path, to);
	int e = r ? errno : 0;
	printf("ghosts: files=%d rename=%d errno=%d\n", n, r, e);
	return 0;
}
