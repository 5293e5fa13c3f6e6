/*
 * wal_fake - wal_append with its own recorder: appends WAL records with
 * raw system calls (inline, not libc's syscall(), which the shim now
 * interposes: so the shim sees none of them) and writes the undo
 * records crash-test mode specifies for them into $SYNCSHIM_CRASH_DIR
 * itself. It lets the tests drive `syncshim crashtest` (cuts, rollback,
 * checks, --keep, --json) against a recorder whose every record is
 * known, apart from the shim's.
 *
 *   wal_fake -f WAL -a ACKS [-n COUNT] [-L] [-G]
 *
 * -L lies: acknowledges without syncing (what noop does to a program).
 * -G damages the log: 80 bytes that are no record, after the first one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../examples/wal.h"
#include "../../shim/format/undo/undofmt.h"

#define SIZE 128

static int undo_fd = -1;

/* A system call the shim cannot see: the instruction itself, not libc's
 * syscall() (which the shim interposes). -errno on failure. */
static long raw_call(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	if (ret < 0 && ret > -4096)
		errno = (int)-ret; /* so fail() names the kernel's error */
	return ret;
#else
	long r = syscall(nr, a, b, c, d);
	return r < 0 ? -errno : r; /* errno is set too */
#endif
}

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what)
{
	fprintf(stderr, "wal_fake: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void raw_write(int fd, const void *p, size_t n)
{
	if (raw_call(SYS_write, fd, (long)p, (long)n, 0) != (long)n)
		fail("write");
}

/* One record, one write(), as the shim appends them. */
static void record(unsigned type, const struct stat *st, uint64_t off, uint64_t len, uint64_t old,
		   const void *payload, uint32_t plen)
{
	uint8_t buf[sizeof(struct undo_rec) + 4096];
	struct undo_rec h = { .magic = UNDO_REC_MAGIC, .type = (uint16_t)type, .pid = (uint32_t)getpid(),
			      .plen = plen, .mono_ns = mono(), .dev = (uint64_t)st->st_dev,
			      .ino = (uint64_t)st->st_ino, .off = off, .len = len, .old_size = old };
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, plen);
	h.crc = wal_crc32c(0, buf, sizeof(h) + plen);
	memcpy(buf, &h, sizeof(h));
	raw_write(undo_fd, buf, sizeof(h) + plen);
}

static uint64_t log_size(void)
{
	struct stat st;
	if (fstat(undo_fd, &st) != 0)
		fail("fstat undo.log");
	return (uint64_t)st.st_size;
}

static int open_undo(void)
{
	const char *dir = getenv("SYNCSHIM_CRASH_DIR");
	char path[4200];
	if (!dir)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, UNDO_NAME);
	return (int)raw_call(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
}

int main(int argc, char **argv)
{
	const char *wal_path = NULL, *ack_path = NULL;
	unsigned long count = 100000;
	int lie = 0, garbage = 0, c;
	while ((c = getopt(argc, argv, "f:a:n:LG")) != -1) {
		if (c == 'f') wal_path = optarg;
		else if (c == 'a') ack_path = optarg;
		else if (c == 'n') count = strtoul(optarg, NULL, 10);
		else if (c == 'L') lie = 1;
		else if (c == 'G') garbage = 1;
		else return 2;
	}
	if (!wal_path || !ack_path || (undo_fd = open_undo()) < 0) {
		fprintf(stderr, "usage: wal_fake -f WAL -a ACKS [-n COUNT] [-L], with SYNCSHIM_CRASH_DIR set\n");
		return 2;
	}
	int wal = (int)raw_call(SYS_openat, AT_FDCWD, (long)wal_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644);
	int acks = (int)raw_call(SYS_openat, AT_FDCWD, (long)ack_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	struct stat st;
	if (wal < 0 || acks < 0 || fstat(wal, &st) != 0)
		fail("open");
	record(UNDO_CREATE, &st, 0, 0, 0, wal_path, (uint32_t)strlen(wal_path));
	if (garbage) {
		static const uint8_t junk[80]; /* zeros: no record magic */
		raw_write(undo_fd, junk, sizeof(junk));
	}
	uint8_t rec[SIZE];
	for (unsigned long seq = 0; seq < count; seq++) {
		uint64_t size = seq * SIZE;
		wal_make(rec, SIZE, seq, mono());
		record(UNDO_WRITE, &st, size, SIZE, size, NULL, 0);
		raw_write(wal, rec, SIZE);
		if (!lie) {
			uint64_t upto = log_size();
			if (raw_call(SYS_fdatasync, wal, 0, 0, 0) != 0)
				fail("fdatasync");
			record(UNDO_DURABLE, &st, upto, 0, 0, NULL, 0);
		}
		char line[64];
		int n = snprintf(line, sizeof(line), "acked %lu %llu\n", seq, (unsigned long long)mono());
		raw_write(acks, line, (size_t)n);
	}
	return 0;
}
