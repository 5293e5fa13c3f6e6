/*
 * ghosts - many closed files whose deferred sync failed and that are then
 * unlinked (temp files, old segments), then one that stays, for the check
 * that the shim keeps a failed sync's error for a file's next opener
 * without keeping it for files no one can open again
 * (tests/system/test_churn.c). Every sync of a file named *.bad is meant
 * to fail beneath the shim (RECLAYER_FAIL_SUFFIX=.bad).
 *
 *   ghosts -d DIR -n N
 *   ghosts -d DIR -H HOLD
 *
 * N temp files DIR/t<i>.bad, each written, fsynced and closed, then
 * unlinked (even i), or unlinked while open and then written, fsynced
 * and closed (odd i). Then DIR/keep.bad is written, fsynced and closed, sync() makes
 * every deferred sync (keep's fails), and keep.bad is renamed: the
 * rename must report the failure no descriptor of the file was told.
 * Prints "ghosts: files=N rename=R errno=E"; exits 0.
 *
 * With -H: one file DIR/h.bad written, fsynced and closed; its deferred
 * sync fails in the flusher, which holds where it looks at the link count
 * of its last descriptor (the shim's test hold, making HOLD.reached); the
 * file is unlinked meanwhile, then HOLD made (the flusher goes on, and
 * makes HOLD.left, waited for: its file retires right after). Prints "ghosts: held reached=R unlink=U".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

static int write_sync(int fd)
{
	char data[64];
	pattern(data, sizeof(data), 0);
	return write(fd, data, sizeof(data)) == (ssize_t)sizeof(data) ? fsync(fd) : -1;
}

/* The unlink lands between the flusher's look at the link count and its
 * note of what it saw (an unlink then found the file still held and
 * marked it gone; the late note must not unmark it). */
static int held_unlink(const char *dir, const char *hold)
{
	char path[4096], reached[4200];
	snprintf(path, sizeof(path), "%s/h.bad", dir);
	snprintf(reached, sizeof(reached), "%s.reached", hold);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	(void)write_sync(fd);
	close(fd);
	int ok = hold_marker_appears(reached, 10000);
	int u = unlink(path);
	int h = open(hold, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (h >= 0)
		close(h);
	snprintf(reached, sizeof(reached), "%s.left", hold);
	(void)hold_marker_appears(reached, 10000);
	sync();
	printf("ghosts: held reached=%d unlink=%d\n", ok, u);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *hold = NULL;
	int n = 0;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'n', OPT_INT, .p = &n },
		{ 'H', OPT_STR, .p = &hold },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0 || !dir || (n <= 0 && !hold))
		return 2;
	if (hold)
		return held_unlink(dir, hold);
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
