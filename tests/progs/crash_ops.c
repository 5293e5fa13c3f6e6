/*
 * crash_ops - one of each change crash-test mode must log, in a known
 * order, for tests/system/test_crash.c.
 *
 *   crash_ops DIR
 *
 * In DIR: a.dat created with 8 bytes "AAAAAAAA" and fsynced; overwrite of
 * bytes 2..5 with "bbbb" (not synced); append "cc"; ftruncate to 6;
 * b.dat opened O_DSYNC and written "dd"; c.dat created "old", then
 * rewritten through O_TRUNC as "new", then renamed over b.dat; a.dat
 * unlinked; a forked child appends "ee" to d.dat and fsyncs it; fsync of
 * DIR itself; e.dat written "ff" through a shared writable mapping.
 * Prints "crash_ops: ok pid=P child=C" at the end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;

static char *at(const char *name)
{
	static char buf[4][4096];
	static int k;
	char *p = buf[k++ % 4];
	snprintf(p, 4096, "%s/%s", dir, name);
	return p;
}

static void must(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

static void put(const char *name, int flags, const char *s, off_t off)
{
	int fd = open(at(name), flags, 0644);
	must(fd >= 0, name);
	ssize_t n = off < 0 ? write(fd, s, strlen(s)) : pwrite(fd, s, strlen(s), off);
	must(n == (ssize_t)strlen(s), "write");
	close(fd);
}

int main(int argc, char **argv)
{
	must(argc == 2, "usage: crash_ops DIR");
	dir = argv[1];
	int fd = open(at("a.dat"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	must(fd >= 0 && write(fd, "AAAAAAAA", 8) == 8 && fsync(fd) == 0, "a.dat");
	must(pwrite(fd, "bbbb", 4, 2) == 4, "overwrite");
	must(lseek(fd, 0, SEEK_END) == 8 && write(fd, "cc", 2) == 2, "append");
	must(ftruncate(fd, 6) == 0, "ftruncate");
	close(fd);
	put("b.dat", O_WRONLY | O_CREAT | O_DSYNC, "dd", -1);
	put("c.dat", O_WRONLY | O_CREAT, "old", -1);
	put("c.dat", O_WRONLY | O_TRUNC, "new", -1);
	must(rename(at("c.dat"), at("b.dat")) == 0, "rename");
	must(unlink(at("a.dat")) == 0, "unlink");
	pid_t child = fork();
	must(child >= 0, "fork");
	if (child == 0) {
		int d = open(at("d.dat"), O_WRONLY | O_CREAT | O_APPEND, 0644);
		_exit(d >= 0 && write(d, "ee", 2) == 2 && fsync(d) == 0 ? 0 : 1);
	}
	int st;
	must(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0, "child");
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	must(dfd >= 0 && fsync(dfd) == 0, "fsync dir");
	int efd = open(at("e.dat"), O_RDWR | O_CREAT, 0644);
	must(efd >= 0 && ftruncate(efd, 4096) == 0, "e.dat");
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, efd, 0);
	must(m != MAP_FAILED, "mmap");
	memcpy(m, "ff", 2);
	must(msync(m, 4096, MS_SYNC) == 0, "msync");
	printf("crash_ops: ok pid=%d child=%d\n", (int)getpid(), (int)child);
	return 0;
}
