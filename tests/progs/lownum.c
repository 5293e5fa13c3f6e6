/*
 * lownum.c - while the shim's threads open their own files, the app's
 * descriptor numbers are what they would be without the shim.
 *
 * usage: lownum DIR LIVEDIR [INI]
 * Opens DIR/d.dat and fsyncs it (the shim's threads start), then, until
 * the live counters' file LIVEDIR/PID.live exists (with INI: until INI,
 * edited first, was read again: its access time reaches its change
 * time) and 1.5 s more (at most 15 s): opens DIR/p and checks it gets the lowest free number E, closes
 * it, and checks fsync(E) fails EBADF (E is closed: nothing of the app's
 * is there). Prints "lownum: shifted=N ebadf_wrong=M rounds=R live=L".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "progs.h"

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: lownum DIR LIVEDIR [INI]\n");
		return 2;
	}
	const char *ini = argc == 4 ? argv[3] : NULL;
	char data[4096], probe[4096], live[4096];
	snprintf(data, sizeof(data), "%s/d.dat", argv[1]);
	snprintf(probe, sizeof(probe), "%s/p", argv[1]);
	snprintf(live, sizeof(live), "%s/%d.live", argv[2], (int)getpid());
	int d = open(data, O_CREAT | O_RDWR, 0644);
	if (d < 0 || write(d, "x", 1) != 1 || fsync(d) != 0) {
		perror("lownum: data");
		return 2;
	}
	int e = open(probe, O_CREAT | O_RDONLY, 0644);
	if (e < 0) {
		perror("lownum: probe");
		return 2;
	}
	close(e);
	if (ini) { /* an edit the watcher reads again (a comment: the same policy) */
		int c = open(ini, O_WRONLY | O_APPEND);
		if (c < 0 || write(c, "# edited\n", 9) != 9 || close(c) != 0) {
			perror("lownum: ini");
			return 2;
		}
	}
	long shifted = 0, ebadf_wrong = 0, rounds = 0;
	uint64_t deadline = now_ns() + 15000000000ull, seen_at = 0;
	struct stat st;
	while (now_ns() < deadline && (!seen_at || now_ns() < seen_at + 1500000000ull)) {
		int fd = open(probe, O_RDONLY);
		if (fd != e)
			shifted++;
		if (fd >= 0)
			close(fd);
		errno = 0;
		if (fsync(e) != -1 || errno != EBADF)
			ebadf_wrong++;
		rounds++;
		if (!seen_at && !ini && stat(live, &st) == 0)
			seen_at = now_ns();
		if (!seen_at && ini && stat(ini, &st) == 0 &&
		    (st.st_atim.tv_sec > st.st_mtim.tv_sec ||
		     (st.st_atim.tv_sec == st.st_mtim.tv_sec && st.st_atim.tv_nsec >= st.st_mtim.tv_nsec)))
			seen_at = now_ns();
	}
	printf("lownum: shifted=%ld ebadf_wrong=%ld rounds=%ld seen=%d\n", shifted, ebadf_wrong, rounds, seen_at != 0);
	return seen_at ? 0 : 1;
}
