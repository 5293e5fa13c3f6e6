/*
 * pipes - data through pipes, a socketpair and /dev/null must arrive
 * intact, and syncs on them must fail exactly as the kernel makes them
 * fail, whatever the shim's policy (it must never touch non-regular files).
 *
 *   pipes [-n ROUNDS]
 *
 * Each round, on a pipe and on a socketpair: write, writev, then fsync and
 * fdatasync (EINVAL), sync_file_range (ESPIPE, pipe only), pwrite (ESPIPE);
 * the reader end must see exactly the bytes written. /dev/null takes
 * writes and refuses fsync with EINVAL. A pipe opened O_DSYNC through
 * pipe2 is not possible, so a FIFO is also opened O_RDWR|O_DSYNC by path
 * and must keep working the same way.
 * Output: "pipes: ok ROUNDS rounds, N fsync-family calls on non-files";
 * "FAIL: ..." lines and exit 1 otherwise; 2 setup problem.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static int failures, syncs;

static void check_err(const char *what, int ret, int want)
{
	int e = errno;
	syncs++;
	if (ret == -1 && e == want)
		return;
	failures++;
	printf("FAIL: %s: ret=%d errno=%s, want -1/%s\n", what, ret, strerrorname_np(e) ? strerrorname_np(e) : "?",
	       strerrorname_np(want));
}

static void fill(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('a' + (seed * 7 + i * 13) % 26);
}

/* Write a message on w with write and writev, sync-call w, read it all
 * back from r. */
static void exercise(const char *name, int w, int r, unsigned round, int seekable_err)
{
	char out[3000], in[3000];
	fill(out, sizeof(out), round);
	ssize_t n1 = write(w, out, 1000);
	struct iovec iov[2] = { { out + 1000, 1200 }, { out + 2200, 800 } };
	ssize_t n2 = writev(w, iov, 2);
	if (n1 != 1000 || n2 != 2000) {
		failures++;
		printf("FAIL: %s: write %zd writev %zd: %s\n", name, n1, n2, strerror(errno));
		return;
	}
	char what[128];
	snprintf(what, sizeof(what), "fsync(%s)", name);
	check_err(what, fsync(w), EINVAL);
	snprintf(what, sizeof(what), "fdatasync(%s)", name);
	check_err(what, fdatasync(w), EINVAL);
	if (seekable_err) {
		snprintf(what, sizeof(what), "sync_file_range(%s)", name);
		check_err(what, sync_file_range(w, 0, 0, SYNC_FILE_RANGE_WRITE), ESPIPE);
		snprintf(what, sizeof(what), "pwrite(%s)", name);
		check_err(what, (int)pwrite(w, out, 10, 0), ESPIPE);
		syncs--; /* pwrite is not a sync */
	}
	size_t got = 0;
	while (got < sizeof(in)) {
		ssize_t k = read(r, in + got, sizeof(in) - got);
		if (k <= 0) {
			failures++;
			printf("FAIL: %s: read after %zu bytes: %s\n", name, got, k ? strerror(errno) : "EOF");
			return;
		}
		got += (size_t)k;
	}
	if (memcmp(in, out, sizeof(in)) != 0) {
		failures++;
		printf("FAIL: %s: data changed in transit\n", name);
	}
}

int main(int argc, char **argv)
{
	int rounds = 20;
	if (argc == 3 && strcmp(argv[1], "-n") == 0)
		rounds = atoi(argv[2]);
	else if (argc != 1) {
		fprintf(stderr, "usage: pipes [-n ROUNDS] (run in a writable cwd)\n");
		return 2;
	}
	int p[2], sv[2];
	if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("pipe/socketpair");
		return 2;
	}
	int dn = open("/dev/null", O_WRONLY | O_DSYNC);
	if (dn < 0) {
		perror("/dev/null");
		return 2;
	}
	char fifo[64];
	snprintf(fifo, sizeof(fifo), "pipes.fifo.%d", (int)getpid());
	if (mkfifo(fifo, 0600) < 0) {
		perror("mkfifo");
		return 2;
	}
	int ff = open(fifo, O_RDWR | O_DSYNC);
	unlink(fifo);
	if (ff < 0) {
		perror("open fifo");
		return 2;
	}
	for (int i = 0; i < rounds; i++) {
		exercise("pipe", p[1], p[0], (unsigned)i, 1);
		exercise("socket", sv[0], sv[1], (unsigned)i + 1000, 0);
		exercise("fifo", ff, ff, (unsigned)i + 2000, 1);
		char buf[512];
		fill(buf, sizeof(buf), (unsigned)i);
		if (write(dn, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			failures++;
			printf("FAIL: write(/dev/null): %s\n", strerror(errno));
		}
		check_err("fsync(/dev/null)", fsync(dn), EINVAL);
	}
	if (failures) {
		printf("pipes: %d failures\n", failures);
		return 1;
	}
	printf("pipes: ok %d rounds, %d fsync-family calls on non-files\n", rounds, syncs);
	return 0;
}
