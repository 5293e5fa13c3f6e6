/*
 * uring_ops - syncs and writes that go around libc's sync calls: through
 * an io_uring ring (liburing, or the raw system calls through libc's
 * syscall()), and syscall(SYS_fsync...) itself.
 *
 *   uring_ops chain FILE N [datasync] [fixed] [nolink] [sqpoll] [libc]
 *       N rounds of a 4 KiB write linked to an FSYNC (IORING_FSYNC_DATASYNC
 *       with "datasync", through a registered file with "fixed"), each
 *       round submitted and its two completions reaped (with "sqpoll", on
 *       a ring the kernel polls; with "libc", pwrite and fsync calls
 *       instead of the ring, the same work for comparison); prints
 *       "chain: ok N" or the first unexpected completion.
 *   uring_ops raw FILE N [datasync]
 *       the same, the ring set up, mapped and entered by hand through
 *       libc's syscall() and mmap (no liburing).
 *   uring_ops lib FILE N [datasync] [ownmap] [enter2] [fixed]
 *       the same rounds through liburing's raw exports, which make their
 *       own inline system calls: io_uring_setup(), the ring mapped by
 *       io_uring_queue_mmap() (with "ownmap", by libc's mmap), entries
 *       published by hand and entered with io_uring_enter() (with
 *       "enter2", io_uring_enter2()); with "fixed", the file registered
 *       with io_uring_register() and named by its index.
 *   uring_ops rename DIR
 *       write DIR/tmp, FSYNC it, RENAMEAT it to DIR/final: one linked
 *       chain; prints each completion.
 *   uring_ops fsyncs FILE N [flush]
 *       a second descriptor fd2 open on FILE; N rounds: a libc write, then
 *       an FSYNC through the ring, then (with "flush") syncshim_flush(),
 *       so a deferred sync is made, and fails or not, before the next
 *       round; prints each FSYNC's result ("fsync I: RES"), then fd2's
 *       libc fsync ("fd2 fsync: R ERRNO").
 *   uring_ops race FILE N [libc]
 *       a thread submits write+FSYNC chains on FILE's descriptor while
 *       the main thread closes and reopens it ("libc": the thread makes
 *       pwrite and fsync calls instead); prints "race: ok".
 *   uring_ops sys FILE N
 *       N rounds: write, then syscall(SYS_fsync, fd); prints "sys: ok".
 *   uring_ops aio FILE N [datasync]
 *       N rounds through libaio: a 4 KiB write, reaped, then an FSYNC (an
 *       FDSYNC with "datasync"), reaped; each completion must carry its
 *       iocb, its data and the result asked for, and the iocb must read
 *       back as the program made it; prints "aio: ok N".
 *   uring_ops wal WAL ACKS N [SIZE]
 *       a ring writer for crash tests: N times, a SIZE-byte record
 *       (examples/wal.h's, default 256) written at its place in WAL
 *       through the ring, linked to an FSYNC of WAL, one submit; once both
 *       completed as asked, "acked SEQ MONO_NS" appended to ACKS with
 *       write() (examples/wal_check reads both). Prints "wal: ok N".
 *   uring_ops gettid N
 *       N calls of syscall(SYS_gettid) (the benchmark's loop): prints
 *       "result: ns_per_call=X cpu_ns_per_call=Y" (wall, and the thread's
 *       own CPU time). chain prints "result: rounds_per_sec=X".
 *
 * Exit 0 when every completion was what the app asked for, 1 otherwise,
 * 2 on a setup problem.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../examples/wal.h"

#define BLOCK 4096

static char block[BLOCK];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "uring_ops: %s: %s\n", what, strerror(err));
	exit(2);
}

static bool has(int argc, char **argv, int from, const char *word)
{
	for (int i = from; i < argc; i++)
		if (strcmp(argv[i], word) == 0)
			return true;
	return false;
}

/* Reap n completions; each must be want[user_data]. */
static int reap(struct io_uring *ring, int n, const int *want, const char *what, int round)
{
	for (int i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(ring, &cqe);
		if (r < 0)
			die("io_uring_wait_cqe", -r);
		int ud = (int)cqe->user_data, res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		if (ud < 0 || ud > 1 || res != want[ud]) {
			printf("%s: round %d: user_data %d: res %d, want %d\n", what, round, ud, res,
			       ud >= 0 && ud <= 1 ? want[ud] : 0);
			return 1;
		}
	}
	return 0;
}

static int cmd_chain_libc(int fd, int rounds, bool datasync)
{
	double t0 = now_s();
	for (int i = 0; i < rounds; i++) {
		if (pwrite(fd, block, BLOCK, (off_t)i * BLOCK) != BLOCK)
			die("pwrite", errno);
		if ((datasync ? fdatasync(fd) : fsync(fd)) != 0)
			die("fsync", errno);
	}
	double secs = now_s() - t0;
	close(fd);
	printf("chain: ok %d\n", rounds);
	printf("result: rounds_per_sec=%.0f\n", secs > 0 ? rounds / secs : 0);
	return 0;
}

static int cmd_chain(const char *path, int rounds, bool datasync, bool fixed, bool link, bool sqpoll, bool libc)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path, errno);
	if (libc)
		return cmd_chain_libc(fd, rounds, datasync);
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	if (sqpoll) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 100;
	}
	int r = io_uring_queue_init_params(8, &ring, &p);
	if (r < 0)
		die("io_uring_queue_init", -r);
	if (fixed && (r = io_uring_register_files(&ring, &fd, 1)) < 0)
		die("io_uring_register_files", -r);
	int target = fixed ? 0 : fd;
	double t0 = now_s();
	for (int i = 0; i < rounds; i++) {
		struct io_uring_sqe *w = io_uring_get_sqe(&ring);
		io_uring_prep_write(w, target, block, BLOCK, (unsigned long long)i * BLOCK);
		w->user_data = 0;
		if (link)
			w->flags |= IOSQE_IO_LINK;
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_fsync(s, target, datasync ? IORING_FSYNC_DATASYNC : 0);
		s->user_data = 1;
		if (fixed) {
			w->flags |= IOSQE_FIXED_FILE;
			s->flags |= IOSQE_FIXED_FILE;
		}
		if ((r = io_uring_submit(&ring)) != 2) {
			if (r < 0)
				die("io_uring_submit", -r);
			fprintf(stderr, "uring_ops: io_uring_submit: round %d: %d submitted, 2 queued (kernel head %u, tail %u)\n",
				i, r, *ring.sq.khead, *ring.sq.ktail);
			exit(2);
		}
		if (reap(&ring, 2, (int[]){ BLOCK, 0 }, "chain", i))
			return 1;
	}
	double secs = now_s() - t0;
	io_uring_queue_exit(&ring);
	close(fd);
	printf("chain: ok %d\n", rounds);
	printf("result: rounds_per_sec=%.0f\n", secs > 0 ? rounds / secs : 0);
	return 0;
}

/* Write, FSYNC linked, ack: the acknowledgement only after both completed. */
static int cmd_wal(const char *wal_path, const char *acks_path, int count, unsigned size)
{
	if (size < WAL_MIN_SIZE || size > WAL_MAX_SIZE)
		die("record size", EINVAL);
	int wal = open(wal_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int acks = open(acks_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (wal < 0 || acks < 0)
		die(wal < 0 ? wal_path : acks_path, errno);
	uint8_t *rec = malloc(size);
	if (!rec)
		die("malloc", ENOMEM);
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		die("io_uring_queue_init", -r);
	for (int seq = 0; seq < count; seq++) {
		wal_make(rec, size, (uint64_t)seq, (uint64_t)(now_s() * 1e9));
		struct io_uring_sqe *w = io_uring_get_sqe(&ring);
		io_uring_prep_write(w, wal, rec, size, (unsigned long long)seq * size);
		w->flags |= IOSQE_IO_LINK;
		w->user_data = 0;
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_fsync(s, wal, 0);
		s->user_data = 1;
		if ((r = io_uring_submit(&ring)) != 2)
			die("io_uring_submit", r < 0 ? -r : EIO);
		if (reap(&ring, 2, (int[]){ (int)size, 0 }, "wal", seq))
			return 1;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		char line[64];
		int n = snprintf(line, sizeof(line), "acked %d %llu\n", seq,
				 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
		if (write(acks, line, (size_t)n) != n)
			die(acks_path, errno);
	}
	io_uring_queue_exit(&ring);
	close(wal);
	close(acks);
	free(rec);
	printf("wal: ok %d\n", count);
	return 0;
}

/* ---- the raw ring: syscall() and mmap, as a program without liburing ---- */

struct raw_ring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

/* The ring's pointers, mapped with libc's mmap from p's offsets. */
static void raw_map(struct raw_ring *rr, const struct io_uring_params *p)
{
	size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	unsigned char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rr->fd,
				 IORING_OFF_SQ_RING);
	unsigned char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, rr->fd,
				 IORING_OFF_CQ_RING);
	rr->sqes = mmap(NULL, p->sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, rr->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || rr->sqes == MAP_FAILED)
		die("mmap ring", errno);
	rr->sq_head = (unsigned *)(sq + p->sq_off.head);
	rr->sq_tail = (unsigned *)(sq + p->sq_off.tail);
	rr->sq_mask = (unsigned *)(sq + p->sq_off.ring_mask);
	rr->sq_array = (unsigned *)(sq + p->sq_off.array);
	rr->cq_head = (unsigned *)(cq + p->cq_off.head);
	rr->cq_tail = (unsigned *)(cq + p->cq_off.tail);
	rr->cq_mask = (unsigned *)(cq + p->cq_off.ring_mask);
	rr->cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
}

static void raw_setup(struct raw_ring *rr)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	rr->fd = (int)syscall(SYS_io_uring_setup, 8, &p);
	if (rr->fd < 0)
		die("io_uring_setup", errno);
	raw_map(rr, &p);
}

/* The ring's pointers, from the struct io_uring_queue_mmap filled. */
static void raw_from_liburing(struct raw_ring *rr, const struct io_uring *ring)
{
	rr->fd = ring->ring_fd;
	rr->sq_head = ring->sq.khead;
	rr->sq_tail = ring->sq.ktail;
	rr->sq_mask = ring->sq.kring_mask;
	rr->sq_array = ring->sq.array;
	rr->sqes = ring->sq.sqes;
	rr->cq_head = ring->cq.khead;
	rr->cq_tail = ring->cq.ktail;
	rr->cq_mask = ring->cq.kring_mask;
	rr->cqes = ring->cq.cqes;
}

/* How a round's entries are handed to the kernel. */
enum raw_enter { ENTER_SYSCALL, ENTER_LIB, ENTER_LIB2 };

static struct io_uring_sqe *raw_push(struct raw_ring *rr, unsigned *tail)
{
	unsigned idx = *tail & *rr->sq_mask;
	struct io_uring_sqe *s = &rr->sqes[idx];
	memset(s, 0, sizeof(*s));
	rr->sq_array[idx] = idx;
	(*tail)++;
	return s;
}

/* rounds of WRITE linked to FSYNC on a mapped ring, entered as how says;
 * target is the descriptor, or the registered index with fixed. */
static int raw_rounds(const struct raw_ring *ring, const char *what, enum raw_enter how, int target, bool fixed,
		      int rounds, bool datasync)
{
	struct raw_ring rr = *ring;
	for (int i = 0; i < rounds; i++) {
		unsigned tail = *rr.sq_tail;
		struct io_uring_sqe *w = raw_push(&rr, &tail);
		w->opcode = IORING_OP_WRITE;
		w->fd = target;
		w->addr = (unsigned long)block;
		w->len = BLOCK;
		w->off = (unsigned long long)i * BLOCK;
		w->flags = IOSQE_IO_LINK | (fixed ? IOSQE_FIXED_FILE : 0);
		w->user_data = 0;
		struct io_uring_sqe *s = raw_push(&rr, &tail);
		s->opcode = IORING_OP_FSYNC;
		s->fd = target;
		s->flags = fixed ? IOSQE_FIXED_FILE : 0;
		s->fsync_flags = datasync ? IORING_FSYNC_DATASYNC : 0;
		s->user_data = 1;
		__atomic_store_n(rr.sq_tail, tail, __ATOMIC_RELEASE);
		long r;
		switch (how) { /* liburing's raw calls return -errno, syscall() -1 and errno */
		case ENTER_LIB:
			r = io_uring_enter((unsigned)rr.fd, 2, 2, IORING_ENTER_GETEVENTS, NULL);
			break;
		case ENTER_LIB2:
			r = io_uring_enter2((unsigned)rr.fd, 2, 2, IORING_ENTER_GETEVENTS, NULL, 8);
			break;
		default:
			r = syscall(SYS_io_uring_enter, rr.fd, 2, 2, IORING_ENTER_GETEVENTS, NULL, 0);
			if (r < 0)
				r = -errno;
			break;
		}
		if (r != 2)
			die("io_uring_enter", r < 0 ? (int)-r : EIO);
		unsigned head = *rr.cq_head;
		for (int n = 0; n < 2; n++, head++) {
			if (head == __atomic_load_n(rr.cq_tail, __ATOMIC_ACQUIRE))
				die("completions", EIO);
			struct io_uring_cqe *c = &rr.cqes[head & *rr.cq_mask];
			int want = c->user_data == 0 ? BLOCK : 0;
			if (c->res != want) {
				printf("%s: round %d: user_data %llu: res %d, want %d\n", what, i,
				       (unsigned long long)c->user_data, c->res, want);
				return 1;
			}
		}
		__atomic_store_n(rr.cq_head, head, __ATOMIC_RELEASE);
	}
	printf("%s: ok %d\n", what, rounds);
	return 0;
}

static int cmd_raw(const char *path, int rounds, bool datasync)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path, errno);
	struct raw_ring rr;
	raw_setup(&rr);
	int bad = raw_rounds(&rr, "raw", ENTER_SYSCALL, fd, false, rounds, datasync);
	close(fd);
	return bad;
}

/* liburing's raw exports only: no submit call of liburing's is made. */
static int cmd_lib(const char *path, int rounds, bool datasync, bool ownmap, bool enter2, bool fixed)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path, errno);
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int rfd = io_uring_setup(8, &p);
	if (rfd < 0)
		die("io_uring_setup", -rfd);
	struct raw_ring rr;
	struct io_uring ring;
	if (ownmap) {
		rr.fd = rfd;
		raw_map(&rr, &p);
	} else {
		memset(&ring, 0, sizeof(ring));
		int r = io_uring_queue_mmap(rfd, &p, &ring);
		if (r < 0)
			die("io_uring_queue_mmap", -r);
		raw_from_liburing(&rr, &ring);
	}
	if (fixed) {
		int r = io_uring_register((unsigned)rfd, IORING_REGISTER_FILES, &fd, 1);
		if (r < 0)
			die("io_uring_register", -r);
	}
	int bad = raw_rounds(&rr, "lib", enter2 ? ENTER_LIB2 : ENTER_LIB, fixed ? 0 : fd, fixed, rounds, datasync);
	close(fd);
	return bad;
}

static int cmd_rename(const char *dir)
{
	char tmp[4096], final[4096];
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	snprintf(final, sizeof(final), "%s/final", dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(tmp, errno);
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		die("io_uring_queue_init", -r);
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_write(s, fd, block, BLOCK, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 0;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_fsync(s, fd, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 1;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_renameat(s, AT_FDCWD, tmp, AT_FDCWD, final, 0);
	s->user_data = 2;
	if ((r = io_uring_submit(&ring)) != 3)
		die("io_uring_submit", r < 0 ? -r : EIO);
	int bad = 0;
	for (int i = 0; i < 3; i++) {
		struct io_uring_cqe *cqe;
		if ((r = io_uring_wait_cqe(&ring, &cqe)) < 0)
			die("io_uring_wait_cqe", -r);
		printf("rename: %llu: %d\n", (unsigned long long)cqe->user_data, cqe->res);
		bad |= cqe->res != (cqe->user_data == 0 ? BLOCK : 0);
		io_uring_cqe_seen(&ring, cqe);
	}
	io_uring_queue_exit(&ring);
	close(fd);
	return bad;
}

static int cmd_fsyncs(const char *path, int rounds, bool flush)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int fd2 = open(path, O_WRONLY);
	if (fd < 0 || fd2 < 0)
		die(path, errno);
	void (*shim_flush)(void) = flush ? (void (*)(void))dlsym(RTLD_DEFAULT, "syncshim_flush") : NULL;
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		die("io_uring_queue_init", -r);
	for (int i = 0; i < rounds; i++) {
		if (pwrite(fd, block, BLOCK, (off_t)i * BLOCK) != BLOCK)
			printf("write %d: %s\n", i, strerror(errno));
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_fsync(s, fd, 0);
		io_uring_submit(&ring);
		struct io_uring_cqe *cqe;
		if ((r = io_uring_wait_cqe(&ring, &cqe)) < 0)
			die("io_uring_wait_cqe", -r);
		printf("fsync %d: %d\n", i, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
		fflush(stdout);
		if (shim_flush)
			shim_flush();
	}
	int r2 = fsync(fd2);
	printf("fd2 fsync: %d %s\n", r2, r2 ? strerrorname_np(errno) : "0");
	close(fd2);
	int c = close(fd);
	printf("close: %d %s\n", c, c ? strerror(errno) : "");
	return 0;
}

/* ---- a submitter racing a closer ------------------------------------------- */

static _Atomic int race_fd = -1;
static _Atomic int race_stop;
static int race_rounds;
static int race_bad;

static struct io_uring race_ring;
static bool race_libc;

static void *race_submitter(void *arg)
{
	(void)arg;
	struct io_uring ring = race_ring;
	for (int i = 0; i < race_rounds; i++) {
		int fd = atomic_load(&race_fd);
		if (race_libc) { /* the same race through libc, for comparison */
			if (pwrite(fd, block, BLOCK, 0) < 0 && errno != EBADF)
				race_bad = -errno;
			if (fsync(fd) < 0 && errno != EBADF)
				race_bad = -errno;
			continue;
		}
		struct io_uring_sqe *w = io_uring_get_sqe(&ring);
		io_uring_prep_write(w, fd, block, BLOCK, 0);
		w->flags |= IOSQE_IO_LINK;
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_fsync(s, fd, 0);
		io_uring_submit(&ring);
		for (int n = 0; n < 2; n++) {
			struct io_uring_cqe *cqe;
			if (io_uring_wait_cqe(&ring, &cqe) < 0)
				die("io_uring_wait_cqe", EIO);
			/* A closed number fails (EBADF, or the chain cancelled): never anything else. */
			if (cqe->res < 0 && cqe->res != -EBADF && cqe->res != -ECANCELED)
				race_bad = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	atomic_store(&race_stop, 1);
	io_uring_queue_exit(&ring);
	return NULL;
}

static int cmd_race(const char *path, int rounds, bool libc)
{
	race_rounds = rounds;
	race_libc = libc;
	/* The ring first: its descriptor never takes a number the file had. */
	if (io_uring_queue_init(8, &race_ring, 0) < 0)
		die("io_uring_queue_init", EIO);
	atomic_store(&race_fd, open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	if (atomic_load(&race_fd) < 0)
		die(path, errno);
	pthread_t t;
	pthread_create(&t, NULL, race_submitter, NULL);
	while (!atomic_load(&race_stop)) {
		close(atomic_load(&race_fd));
		int fd = open(path, O_WRONLY);
		if (fd < 0)
			die(path, errno);
		atomic_store(&race_fd, fd);
	}
	pthread_join(t, NULL);
	if (race_bad) {
		printf("race: unexpected result %d\n", race_bad);
		return 1;
	}
	printf("race: ok\n");
	return 0;
}

static int cmd_sys(const char *path, int rounds)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path, errno);
	for (int i = 0; i < rounds; i++) {
		if (write(fd, block, BLOCK) != BLOCK)
			die("write", errno);
		if (syscall(SYS_fsync, fd) != 0)
			die("syscall(SYS_fsync)", errno);
	}
	errno = 0;
	long r = syscall(SYS_fsync, 999); /* not open: -1 and EBADF, as the kernel says */
	if (r != -1 || errno != EBADF) {
		printf("sys: bad fd: %ld %s\n", r, strerror(errno));
		return 1;
	}
	errno = 4242;
	if (syscall(SYS_fdatasync, fd) != 0 || errno != 4242) {
		printf("sys: errno touched on success: %d\n", errno);
		return 1;
	}
	close(fd);
	printf("sys: ok\n");
	return 0;
}

static int aio_one(io_context_t ctx, struct iocb *cb, long want, int round)
{
	struct iocb copy = *cb;
	struct iocb *list[1] = { cb };
	int r = io_submit(ctx, 1, list);
	if (r != 1)
		die("io_submit", r < 0 ? -r : EIO);
	if (memcmp(&copy, cb, sizeof(copy)) != 0) {
		printf("aio: round %d: the iocb was left changed\n", round);
		return 1;
	}
	struct io_event ev;
	if ((r = io_getevents(ctx, 1, 1, &ev, NULL)) != 1)
		die("io_getevents", r < 0 ? -r : EIO);
	if (ev.obj != cb || ev.data != cb->data || (long)ev.res != want || ev.res2 != 0) {
		printf("aio: round %d: opcode %d: res %ld res2 %ld (want %ld), obj %s, data %s\n", round,
		       cb->aio_lio_opcode, (long)ev.res, (long)ev.res2, want, ev.obj == cb ? "ok" : "WRONG",
		       ev.data == cb->data ? "ok" : "WRONG");
		return 1;
	}
	return 0;
}

static int cmd_aio(const char *path, int rounds, bool datasync)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path, errno);
	io_context_t ctx = 0;
	int r = io_setup(8, &ctx);
	if (r < 0)
		die("io_setup", -r);
	for (int i = 0; i < rounds; i++) {
		struct iocb w, s;
		io_prep_pwrite(&w, fd, block, BLOCK, (long long)i * BLOCK);
		w.data = &w;
		if (aio_one(ctx, &w, BLOCK, i))
			return 1;
		if (datasync)
			io_prep_fdsync(&s, fd);
		else
			io_prep_fsync(&s, fd);
		s.data = (void *)(uintptr_t)(1000 + i);
		if (aio_one(ctx, &s, 0, i))
			return 1;
	}
	io_destroy(ctx);
	close(fd);
	printf("aio: ok %d\n", rounds);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: uring_ops chain|raw|lib|aio|rename|fsyncs|race|sys|wal|gettid ARGS\n");
		return 2;
	}
	memset(block, 'u', sizeof(block));
	const char *cmd = argv[1];
	int n = argc > 3 ? atoi(argv[3]) : 1;
	if (strcmp(cmd, "chain") == 0)
		return cmd_chain(argv[2], n, has(argc, argv, 4, "datasync"), has(argc, argv, 4, "fixed"),
				 !has(argc, argv, 4, "nolink"), has(argc, argv, 4, "sqpoll"), has(argc, argv, 4, "libc"));
	if (strcmp(cmd, "wal") == 0)
		return argc < 5 ? 2
				: cmd_wal(argv[2], argv[3], atoi(argv[4]), argc > 5 ? (unsigned)atoi(argv[5]) : 256);
	if (strcmp(cmd, "raw") == 0)
		return cmd_raw(argv[2], n, has(argc, argv, 4, "datasync"));
	if (strcmp(cmd, "lib") == 0)
		return cmd_lib(argv[2], n, has(argc, argv, 4, "datasync"), has(argc, argv, 4, "ownmap"),
			       has(argc, argv, 4, "enter2"), has(argc, argv, 4, "fixed"));
	if (strcmp(cmd, "aio") == 0)
		return cmd_aio(argv[2], n, has(argc, argv, 4, "datasync"));
	if (strcmp(cmd, "rename") == 0)
		return cmd_rename(argv[2]);
	if (strcmp(cmd, "fsyncs") == 0)
		return cmd_fsyncs(argv[2], n, has(argc, argv, 4, "flush"));
	if (strcmp(cmd, "race") == 0)
		return cmd_race(argv[2], n, has(argc, argv, 4, "libc"));
	if (strcmp(cmd, "sys") == 0)
		return cmd_sys(argv[2], n);
	if (strcmp(cmd, "gettid") == 0) {
		long sum = 0, loops = atol(argv[2]);
		struct timespec c0, c1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		double t0 = now_s();
		for (long i = 0; i < loops; i++)
			sum += syscall(SYS_gettid);
		double wall = now_s() - t0;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		double cpu = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
		double per = (double)(loops > 0 ? loops : 1);
		printf("result: ns_per_call=%.1f cpu_ns_per_call=%.1f\n", wall * 1e9 / per, cpu / per);
		return sum == 0;
	}
	fprintf(stderr, "uring_ops: unknown command %s\n", cmd);
	return 2;
}
