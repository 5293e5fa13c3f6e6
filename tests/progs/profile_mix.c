/*
 * profile_mix - one of each kind of file a profile must tell apart
 * (tests/system/test_profile.c checks the rules synclat suggest proposes).
 *
 *   profile_mix DIR N
 *
 * In DIR, N times each:
 *   seg-1.log, seg-2.log  append-only logs (O_APPEND): a 100-byte record
 *                         then fsync, alternating between the two (a
 *                         numbered segment pair: one glob)
 *   journal.dat           opened O_DSYNC: a 64-byte pwrite, no sync call
 *   state                 published by rename: state.tmp written, fsynced,
 *                         renamed over state (every 10th round), then DIR
 *                         itself fsynced
 *   notes.txt             written, never synced
 * Exits 0, or 1 with a line saying which call failed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what)
{
	perror(what);
	exit(1);
}

static int open_in(const char *dir, const char *name, int flags)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		fail(path);
	return fd;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: profile_mix DIR N\n");
		return 1;
	}
	const char *dir = argv[1];
	int n = atoi(argv[2]);
	char rec[100], tmp[4096], dst[4096];
	memset(rec, 'r', sizeof(rec));
	int seg[2] = { open_in(dir, "seg-1.log", O_WRONLY | O_CREAT | O_APPEND),
		       open_in(dir, "seg-2.log", O_WRONLY | O_CREAT | O_APPEND) };
	int journal = open_in(dir, "journal.dat", O_WRONLY | O_CREAT | O_DSYNC);
	int notes = open_in(dir, "notes.txt", O_WRONLY | O_CREAT | O_TRUNC);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		fail(dir);
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", dir);
	snprintf(dst, sizeof(dst), "%s/state", dir);
	for (int i = 0; i < n; i++) {
		int s = seg[i % 2];
		if (write(s, rec, sizeof(rec)) != (ssize_t)sizeof(rec) || fsync(s) != 0)
			fail("segment");
		if (pwrite(journal, rec, 64, (off_t)(i % 16) * 64) != 64)
			fail("journal");
		if (write(notes, rec, 10) != 10)
			fail("notes");
		if (i % 10 == 0) {
			int t = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (t < 0 || write(t, rec, sizeof(rec)) != (ssize_t)sizeof(rec) || fsync(t) != 0 ||
			    close(t) != 0 || rename(tmp, dst) != 0 || fsync(dfd) != 0)
				fail("state");
		}
	}
	return 0;
}
