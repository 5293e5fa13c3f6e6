/*
 * seccomp_run - a unit's SystemCallFilter= by hand, where no systemd runs
 * services: runs CMD with only the system calls named in ALLOWLIST (one
 * name a line, as `systemd-analyze syscall-filter` expands the unit's
 * groups) and kills the process at any other, as systemd's allow-list
 * does without SystemCallErrorNumber= (SIGSYS). NoNewPrivileges comes
 * with it, as in Debian's redis-server.service.
 *
 *   seccomp_run ALLOWLIST -- CMD [ARGS]
 *
 * Names this libseccomp does not know are skipped (a newer systemd's).
 * Exit 2 if the filter cannot be made; otherwise CMD's exec.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: seccomp_run ALLOWLIST -- CMD [ARGS]\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		fprintf(stderr, "seccomp_run: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx) {
		fprintf(stderr, "seccomp_run: seccomp_init failed\n");
		return 2;
	}
	char name[128];
	int allowed = 0;
	while (fscanf(f, "%127s", name) == 1) {
		int nr = seccomp_syscall_resolve_name(name);
		if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) == 0)
			allowed++;
	}
	fclose(f);
	if (!allowed || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || seccomp_load(ctx) != 0) {
		fprintf(stderr, "seccomp_run: no filter loaded (%d calls allowed)\n", allowed);
		return 2;
	}
	execvp(argv[3], argv + 3);
	return 127; /* execve itself is in every allow-list; this is a missing CMD */
}
