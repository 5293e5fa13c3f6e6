/*
 * undo_sim.h - a recorder for the unit tests: does a file operation and
 * appends the record docs/CRASHTEST.md says the shim appends for it, in
 * the same order (change records before the change, CREATE and sync
 * records after), so a test knows exactly what a rollback must restore.
 * Header-only, static: each tests/test_*.c is linked on its own.
 */
#ifndef SYNCSHIM_TEST_UNDO_SIM_H
#define SYNCSHIM_TEST_UNDO_SIM_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logfmt.h"
#include "undofmt.h"

#define SIM_FN static __attribute__((unused))

/* Each test runs in a process of its own and ends there: buffers stay
 * reachable from here until then, so LeakSanitizer (make asan) has
 * nothing to report and no test needs a free at each of its exits. */
static void *sim_reachable[64];
static unsigned sim_nreachable;

SIM_FN void *sim_keep(void *p)
{
	cr_assert_not_null(p);
	cr_assert_lt(sim_nreachable, sizeof(sim_reachable) / sizeof(sim_reachable[0]),
		     "more buffers in one test than sim_reachable holds");
	sim_reachable[sim_nreachable++] = p;
	return p;
}

struct sim {
	uint8_t *b;
	size_t n, cap;
	uint64_t clock;   /* mono_ns of the next record: 1 ms apart */
	char store[512];  /* where kept links go */
	int kept;         /* numbers them */
	unsigned slot;    /* b's place in sim_reachable */
};

SIM_FN void sim_init(struct sim *s, const char *store)
{
	memset(s, 0, sizeof(*s));
	s->cap = 1 << 16;
	s->b = sim_keep(malloc(s->cap));
	s->slot = sim_nreachable - 1;
	memcpy(s->b, UNDO_MAGIC, 8);
	s->n = 8;
	s->clock = 1000000000ull;
	snprintf(s->store, sizeof(s->store), "%s", store);
}

/* Appends a record; returns its offset. */
SIM_FN uint64_t sim_rec(struct sim *s, unsigned type, uint64_t dev, uint64_t ino, uint64_t off, uint64_t len,
			uint64_t old_size, const void *payload, size_t plen)
{
	struct undo_rec h = { .magic = UNDO_REC_MAGIC, .type = (uint16_t)type, .pid = 4242,
			      .plen = (uint32_t)plen, .mono_ns = s->clock, .dev = dev, .ino = ino,
			      .off = off, .len = len, .old_size = old_size };
	s->clock += 1000000;
	h.crc = logfmt_crc32c(logfmt_crc32c(0, &h, sizeof(h)), payload, plen);
	while (s->n + sizeof(h) + plen > s->cap) {
		s->cap *= 2;
		s->b = realloc(s->b, s->cap);
		cr_assert_not_null(s->b);
		sim_reachable[s->slot] = s->b;
	}
	uint64_t at = s->n;
	memcpy(s->b + s->n, &h, sizeof(h));
	if (plen)
		memcpy(s->b + s->n + sizeof(h), payload, plen);
	s->n += sizeof(h) + plen;
	return at;
}

SIM_FN struct stat sim_stat(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "stat %s", path);
	return st;
}

/* pwrite with its WRITE record (the pre-image read from the file first). */
SIM_FN uint64_t sim_write(struct sim *s, const char *path, uint64_t off, const char *data)
{
	size_t len = strlen(data);
	int fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0, "open %s", path);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	uint64_t old = (uint64_t)st.st_size;
	uint64_t end = off + len < old ? off + len : old;
	size_t plen = end > off ? (size_t)(end - off) : 0;
	char *pre = malloc(plen + 1);
	cr_assert_eq(pread(fd, pre, plen, (off_t)off), (ssize_t)plen);
	uint64_t at = sim_rec(s, UNDO_WRITE, st.st_dev, st.st_ino, off, len, old, pre, plen);
	cr_assert_eq(pwrite(fd, data, len, (off_t)off), (ssize_t)len);
	close(fd);
	free(pre);
	return at;
}

SIM_FN uint64_t sim_truncate(struct sim *s, const char *path, uint64_t size)
{
	struct stat st = sim_stat(path);
	uint64_t old = (uint64_t)st.st_size;
	size_t plen = size < old ? (size_t)(old - size) : 0;
	char *pre = malloc(plen + 1);
	int fd = open(path, O_RDWR);
	cr_assert_eq(pread(fd, pre, plen, (off_t)size), (ssize_t)plen);
	uint64_t at = sim_rec(s, UNDO_SIZE, st.st_dev, st.st_ino, size, 0, old, pre, plen);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	free(pre);
	return at;
}

/* A completed fsync: DURABLE with upto = the log's size when it began. */
SIM_FN uint64_t sim_fsync(struct sim *s, const char *path)
{
	struct stat st = sim_stat(path);
	return sim_rec(s, UNDO_DURABLE, st.st_dev, st.st_ino, s->n, 0, 0, NULL, 0);
}

SIM_FN uint64_t sim_syncfs(struct sim *s, uint64_t dev)
{
	return sim_rec(s, UNDO_DURABLE_DEV, dev, 0, s->n, 0, 0, NULL, 0);
}

SIM_FN uint64_t sim_dirsync(struct sim *s, const char *dir)
{
	struct stat st = sim_stat(dir);
	return sim_rec(s, UNDO_DIRSYNC, st.st_dev, st.st_ino, s->n, 0, 0, NULL, 0);
}

SIM_FN uint64_t sim_create(struct sim *s, const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	cr_assert_geq(fd, 0, "create %s", path);
	close(fd);
	struct stat st = sim_stat(path);
	return sim_rec(s, UNDO_CREATE, st.st_dev, st.st_ino, 0, 0, 0, path, strlen(path));
}

/* "a\0b\0c" without a trailing NUL; returns its length. */
SIM_FN size_t sim_join(char *out, size_t cap, const char *a, const char *b, const char *c)
{
	int n = snprintf(out, cap, "%s%c%s%c%s", a, 0, b, 0, c ? c : "");
	cr_assert(n > 0 && (size_t)n < cap);
	return (size_t)n;
}

SIM_FN uint64_t sim_rename(struct sim *s, const char *from, const char *to)
{
	struct stat st = sim_stat(from), tst;
	char saved[64] = "", kept[640], pay[2048];
	if (stat(to, &tst) == 0) {
		snprintf(saved, sizeof(saved), "kept.%d", ++s->kept);
		snprintf(kept, sizeof(kept), "%s/%s", s->store, saved);
		cr_assert_eq(link(to, kept), 0, "link %s %s", to, kept);
	}
	size_t plen = sim_join(pay, sizeof(pay), from, to, saved);
	uint64_t at = sim_rec(s, UNDO_RENAME, st.st_dev, st.st_ino, 0, 0, 0, pay, plen);
	cr_assert_eq(rename(from, to), 0);
	return at;
}

SIM_FN uint64_t sim_unlink(struct sim *s, const char *path)
{
	struct stat st = sim_stat(path);
	char saved[64], kept[640], pay[2048];
	snprintf(saved, sizeof(saved), "kept.%d", ++s->kept);
	snprintf(kept, sizeof(kept), "%s/%s", s->store, saved);
	cr_assert_eq(link(path, kept), 0);
	size_t plen = sim_join(pay, sizeof(pay), path, saved, NULL);
	/* UNLINK's payload has two fields: drop the third's separator */
	uint64_t at = sim_rec(s, UNDO_UNLINK, st.st_dev, st.st_ino, 0, 0, 0, pay, plen - 1);
	cr_assert_eq(unlink(path), 0);
	return at;
}

/* Writes the log to store/undo.log. */
SIM_FN void sim_save(const struct sim *s, size_t len)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", s->store, UNDO_NAME);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(s->b, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

#endif
