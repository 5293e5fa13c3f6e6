/*
 * stale_slot - descriptors closed behind the shim's back.
 *
 *   stale_slot -d DIR -m reuse|range
 *
 * reuse: DIR/s.dat is opened O_SYNC (under defer each write becomes a
 *   deferred sync) and written once; its descriptor is closed with a raw
 *   syscall (the shim does not see it), and socketpair() hands the number
 *   out again. 64 writes go into that socket through the old number (a
 *   reader thread drains the other end), then
 *   s.dat is opened again and fsynced: that fsync must succeed (no error
 *   of the pipe's was blamed on s.dat). Prints "stale_slot: ... sock_ino=I
 *   fsync=R".
 * range: DIR/s.dat is written and fsynced (deferred); syncshim_flush()
 *   makes the deferred sync run now (the test makes it fail); then
 *   close_range(3, ~0U, 0) closes everything. close_range cannot report
 *   the error, so the shim must not swallow it. Prints "stale_slot:
 *   range=R".
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progs.h"

static int rd = -1;

static void *drain(void *arg)
{
	(void)arg;
	char buf[4096];
	while (read(rd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

static void flush(void)
{
	void (*f)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush");
	if (f)
		f();
}

static int reuse(const char *path)
{
	char buf[512];
	pattern(buf, sizeof(buf), 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_SYNC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return 1;
	syscall(SYS_close, fd);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || sv[0] != fd)
		return 1;
	int w = sv[0];
	rd = sv[1];
	pthread_t t;
	pthread_create(&t, NULL, drain, NULL);
	for (int i = 0; i < 64; i++)
		if (write(w, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 1;
	struct stat st;
	fstat(w, &st);
	flush();
	int again = open(path, O_WRONLY);
	int r = fsync(again);
	printf("stale_slot: old_fd=%d sock_fd=%d sock_ino=%lu fsync=%d errno=%s\n", fd, w,
	       (unsigned long)st.st_ino, r, r ? strerrorname_np(errno) : "0");
	close(w);
	pthread_join(t, NULL);
	return 0;
}

static int range(const char *path)
{
	char buf[4096];
	pattern(buf, sizeof(buf), 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0)
		return 1;
	flush();
	int r = close_range(3, ~0u, 0);
	printf("stale_slot: range=%d\n", r);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = ".", *mode = "reuse";
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'm', OPT_STR, .p = &mode },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/s.dat", dir);
	return !strcmp(mode, "range") ? range(path) : reuse(path);
}
