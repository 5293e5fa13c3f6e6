/*
 * setid_threads.c - a host that drops privileges the way setpriv and
 * libcap-ng do, with the shim's threads running.
 *
 * usage: setid_threads FILE UID GID   (as root)
 * Writes and fsyncs FILE (the shim's threads start: a flusher under
 * defer, the logger, the live publisher; the host itself has one thread,
 * as setpriv does: a thread of its own would fail the same way), then
 * keeps its capabilities across setresuid (PR_SET_KEEPCAPS), raises them
 * again in this thread alone (capset: per thread), and calls setresgid and
 * setgroups: glibc runs each in every thread and aborts if one differs.
 * Then writes and fsyncs again. Prints "setid_threads: ok".
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int write_sync(const char *path, const char *what)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
	if (fd >= 0)
		(void)!fchmod(fd, 0666); /* as root, the first time: the second open is another user's */
	if (fd < 0 || write(fd, what, strlen(what)) != (ssize_t)strlen(what) || fsync(fd) != 0) {
		fprintf(stderr, "setid_threads: %s: %s\n", what, strerror(errno));
		return -1;
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	uid_t uid = (uid_t)atoi(argv[2]);
	gid_t gid = (gid_t)atoi(argv[3]);
	if (write_sync(argv[1], "before\n") < 0)
		return 1;
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setresuid(uid, uid, uid) != 0) {
		perror("setid_threads: setresuid");
		return 1;
	}
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0)
		return 1;
	d[0].effective = d[0].permitted;
	d[1].effective = d[1].permitted;
	if (syscall(SYS_capset, &h, d) != 0) { /* this thread only */
		perror("setid_threads: capset");
		return 1;
	}
	if (setresgid(gid, gid, gid) != 0 || setgroups(1, &gid) != 0) {
		perror("setid_threads: setresgid");
		return 1;
	}
	if (write_sync(argv[1], "after\n") < 0)
		return 1;
	printf("setid_threads: ok uid=%d gid=%d\n", (int)getuid(), (int)getgid());
	return 0;
}
