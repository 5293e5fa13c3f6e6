/*
 * ord_steps.c - a scripted sequence of writes, syncs and renames over a
 * few files, for the ordered-defer tests (tests/system/test_order.c).
 *
 *   ord_steps DIR STEP...
 *
 * Files are DIR/NAME, opened O_RDWR|O_CREAT on first use (kept open).
 * Steps (NAME is a file name, OFF a byte offset, C a fill character):
 *   a:NAME        append 4096 bytes of the file's next fill with write()
 *   p:NAME:OFF:C  pwrite 4096 bytes of C at OFF
 *   s:NAME        fsync
 *   S:NAME        fsync whose failure is printed (err=NAME), not fatal
 *   r:NAME:NEW    rename DIR/NAME to DIR/NEW (the descriptor stays open)
 *   u:NAME        unlink DIR/NAME
 *   t:NAME:SIZE   ftruncate to SIZE
 *   f             fork: the child runs the remaining steps, the parent
 *                 waits for it and then exits
 *   w:MS          sleep MS milliseconds (only to let a deadline pass)
 *   W:NAME:C      write() 4096 bytes of C at the descriptor's position
 *   l:NAME:OFF    lseek the descriptor to OFF
 *   R:NAME        read() 4096 bytes at the position (moves it)
 *   d:NAME        dup the descriptor (kept: the second number of NAME)
 *   L:NAME:OFF    lseek NAME's second number (d) to OFF
 *   c:NAME:OFF    fork a child that lseeks NAME's descriptor to OFF and
 *                 exits; wait for it
 *   z:NAME:OFF:SPEC  pwrite at OFF the bytes SPEC spells: COUNTxC runs
 *                 joined by commas, C a fill character or 0 for zero bytes
 *                 ("100xr,3996x0": a page of records ending in zeros), at
 *                 most 64 KiB
 *   m:NAME:OFF:C  store 4096 bytes of C at OFF (page-aligned) through a
 *                 shared mapping of NAME (mapped, stored, unmapped: no
 *                 write call)
 *   o:NAME        open NAME write-only (O_WRONLY|O_CREAT): its descriptor
 *                 from then on, which cannot be read (the first use of NAME)
 *   O:NAME        open NAME read-only (O_RDONLY|O_CREAT): writes through it fail
 *   q:NAME:OFF:C  as p, its failure printed, not fatal
 *   D:NAME:OFF:C  as p, with pwritev2(RWF_DSYNC): a synchronous write, which
 *                 an osync = defer rule makes a deferred sync request
 * Reads, each returning (ret=) the byte it read at OFF, or a size:
 *   P:NAME:OFF    pread one byte          V:NAME:OFF   preadv one byte
 *   G:NAME:OFF    lseek to OFF, read()    M:NAME:OFF   through a read-only mapping
 *   Y:NAME:OFF    sendfile one byte into a pipe, read from the pipe
 *   C:NAME:OFF    copy_file_range one byte into a scratch file, pread it
 *   K:NAME:OFF    a fork child preads it (its exit status)
 *   F:NAME        fstat's size            Q:NAME       stat's size (by path)
 *   E:NAME        lseek(SEEK_END)
 *   h:NAME:OFF    io_uring (liburing): one READ of a byte, waited for
 *   k:NAME:OFF    libaio: one pread of a byte, waited for
 * Changes made around the write calls (each 4096 bytes of C at OFF):
 *   x:NAME:OFF:C  sendfile from DIR/.source (made first, not through the shim's
 *                 rules' files: a plain open outside them is up to the script's ini)
 *   j:NAME:OFF:C  splice from a pipe the bytes were written into
 *   J:NAME:OFF:C  aio_write, then waits for it (aio_suspend)
 *   b:NAME:OFF:C  libaio: io_submit of one pwrite, then io_getevents for it
 *   g:NAME:OFF:C  io_uring (liburing): one WRITE submitted, then waited for
 *   Z:NAME:OFF:C  syscall(SYS_pwrite64, ...)
 *   n:NAME:OFF:C  store through a shared mapping, then msync(MS_SYNC)
 *   1:TEXT        write TEXT and a newline to descriptor 1 (a log line)
 *   N:NAME:COUNT  COUNT files NAME.0 .. NAME.COUNT-1: each opened, one byte
 *                 written, fsynced, kept open (the descriptor limit raised)
 *   H:NAME:OFF:C  arm a SIGUSR1 handler that, the first time it runs, pwrites
 *                 4096 bytes of C at OFF of NAME (opened now; OFF "-": a
 *                 write() at the descriptor's position); "done" then
 *                 says handler=1 if it ran (the shim raises the signal at a
 *                 test point: SYNCSHIM_TEST_SIGNAL_AT)
 * The main thread gone (only as the first step):
 *   T             the steps run in a new thread; the main thread calls
 *                 pthread_exit first, and the steps start once its
 *                 descriptor table under /proc/self is gone
 * Two processes at once:
 *   &             fork: the child runs the steps up to "!" and ends there
 *                 (exit, or SIGKILL with "!:k"); the parent skips them and
 *                 goes on at once
 *   ^             wait for that child
 *   =:PATH        wait until PATH exists (at most 20 s)
 *   +:PATH        make the file PATH
 * Each step prints "step I OP NAME t0=NS t1=NS ret=R" (CLOCK_MONOTONIC,
 * entry and return), then "done pid=P".
 */
#include <aio.h>
#include <dirent.h>
#include <pthread.h>
#include <libaio.h>
#include <liburing.h>
#include <errno.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

#define MAX_FILES 16
#define BLOCK 4096

static struct {
	char name[64];
	int fd, dup_fd;
	char fill;
} files[MAX_FILES];
static int nfiles;
static const char *dir;
static int handler_fd = -1;
static off_t handler_off;
static char handler_fill;
static volatile sig_atomic_t handler_ran;

static void on_usr1(int sig)
{
	(void)sig;
	if (handler_ran)
		return;
	handler_ran = 1;
	int e = errno;
	static char block[4096];
	memset(block, handler_fill, sizeof(block));
	ssize_t r = handler_off < 0 ? write(handler_fd, block, sizeof(block))
				    : pwrite(handler_fd, block, sizeof(block), handler_off);
	if (r != (ssize_t)sizeof(block))
		handler_ran = -1;
	errno = e;
}

static int open_flags = O_RDWR;
static pid_t child_pid = -1;

static int fd_of(const char *name)
{
	for (int i = 0; i < nfiles; i++)
		if (!strcmp(files[i].name, name))
			return files[i].fd;
	if (nfiles == MAX_FILES) {
		fprintf(stderr, "ord_steps: too many files\n");
		exit(2);
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, open_flags | O_CREAT, 0644);
	if (fd < 0) {
		fprintf(stderr, "ord_steps: open %s: %s\n", path, strerror(errno));
		exit(2);
	}
	snprintf(files[nfiles].name, sizeof(files[nfiles].name), "%s", name);
	files[nfiles].fd = fd;
	files[nfiles].dup_fd = -1;
	files[nfiles].fill = 'a';
	nfiles++;
	return fd;
}

static int *dup_of(const char *name)
{
	for (int i = 0; i < nfiles; i++)
		if (!strcmp(files[i].name, name))
			return &files[i].dup_fd;
	return NULL;
}

static char *next_fill(const char *name)
{
	for (int i = 0; i < nfiles; i++)
		if (!strcmp(files[i].name, name)) {
			char *c = &files[i].fill;
			*c = *c == 'z' ? 'a' : (char)(*c + 1);
			return c;
		}
	return NULL;
}

static int run_steps(int argc, char **argv, int first);

static int main_argc;
static char **main_argv;

/* Step T: the steps run here once the main thread is gone, and with it
 * /proc/self/fd (opendir does not go through the shim's open). Not
 * pthread_join: ThreadSanitizer's runtime cannot join the main thread. */
static void *steps_after_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++) {
		DIR *d = opendir("/proc/self/fd");
		if (!d)
			break;
		closedir(d);
		usleep(1000);
	}
	exit(run_steps(main_argc, main_argv, 3));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ord_steps DIR STEP...\n");
		return 2;
	}
	dir = argv[1];
	if (argc > 2 && !strcmp(argv[2], "T")) {
		main_argc = argc;
		main_argv = argv;
		pthread_t t;
		if (pthread_create(&t, NULL, steps_after_main, NULL) != 0)
			return 2;
		pthread_exit(NULL);
	}
	return run_steps(argc, argv, 2);
}

static int run_steps(int argc, char **argv, int first)
{
	static char buf[BLOCK];
	for (int i = first; i < argc; i++) {
		char step[512];
		snprintf(step, sizeof(step), "%s", argv[i]);
		char *op = strtok(step, ":"), *name = strtok(NULL, ":"), *a1 = strtok(NULL, ":"),
		     *a2 = strtok(NULL, ":");
		if (!op) {
			fprintf(stderr, "ord_steps: empty step\n");
			return 2;
		}
		if (*op == '&') {
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0) {
				perror("ord_steps: fork");
				return 2;
			}
			if (pid == 0) {
				printf("child pid=%d\n", (int)getpid());
				continue;
			}
			child_pid = pid;
			while (i + 1 < argc && argv[i + 1][0] != '!')
				i++;
			i++; /* the "!" */
			continue;
		}
		if (*op == '!') {
			printf("child done pid=%d\n", (int)getpid());
			fflush(stdout);
			if (name && *name == 'k')
				raise(SIGKILL);
			_exit(0);
		}
		if (*op == '^') {
			int st;
			long long ret = child_pid > 0 && waitpid(child_pid, &st, 0) == child_pid ? 0 : -1;
			printf("step %d ^ - ret=%lld\n", i - 2, ret);
			continue;
		}
		if (*op == '=' || *op == '+') {
			uint64_t t0 = now_ns();
			int ok = 0;
			if (*op == '+') {
				int fd = name ? open(name, O_WRONLY | O_CREAT, 0644) : -1;
				ok = fd >= 0;
				if (fd >= 0)
					close(fd);
			} else {
				for (int k = 0; k < 20000 && !ok; k++) {
					ok = name && access(name, F_OK) == 0;
					if (!ok) {
						struct timespec ts = { 0, 1000000 };
						nanosleep(&ts, NULL);
					}
				}
			}
			printf("step %d %s - t0=%llu t1=%llu ret=%d\n", i - 2, op, (unsigned long long)t0,
			       (unsigned long long)now_ns(), ok ? 0 : -1);
			continue;
		}
		if (*op == '1') {
			char line[512];
			int n = snprintf(line, sizeof(line), "%s\n", name ? name : "");
			uint64_t t0 = now_ns();
			long long ret = write(1, line, (size_t)n);
			fprintf(stderr, "step %d 1 - t0=%llu t1=%llu ret=%lld\n", i - 2, (unsigned long long)t0,
				(unsigned long long)now_ns(), ret);
			continue;
		}
		if (*op == 'N') {
			struct rlimit rl;
			if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
				rl.rlim_cur = rl.rlim_max;
				setrlimit(RLIMIT_NOFILE, &rl);
			}
			uint64_t t0 = now_ns();
			long count = a1 ? atol(a1) : 0, made = 0;
			for (long k = 0; name && k < count; k++) {
				char path[4096];
				snprintf(path, sizeof(path), "%s/%s.%ld", dir, name, k);
				int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
				if (fd >= 0 && write(fd, "n", 1) == 1 && fsync(fd) == 0)
					made++;
			}
			printf("step %d N %s t0=%llu t1=%llu ret=%ld\n", i - 2, name, (unsigned long long)t0,
			       (unsigned long long)now_ns(), made);
			continue;
		}
		if (*op == 'f') {
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0) {
				perror("ord_steps: fork");
				return 2;
			}
			if (pid > 0) {
				int st;
				waitpid(pid, &st, 0);
				printf("done pid=%d child=%d\n", (int)getpid(), WIFEXITED(st) ? WEXITSTATUS(st) : 128);
				return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
			}
			printf("child pid=%d\n", (int)getpid());
			continue;
		}
		if (*op == 'w') {
			long ms = name ? atol(name) : 0;
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
			continue;
		}
		if (!name) {
			fprintf(stderr, "ord_steps: step %s needs a file\n", argv[i]);
			return 2;
		}
		if (*op == 'o')
			open_flags = O_WRONLY;
		if (*op == 'O')
			open_flags = O_RDONLY;
		int fd = fd_of(name);
		open_flags = O_RDWR;
		long long ret = 0;
		uint64_t t0 = now_ns();
		switch (*op) {
		case 'o':
		case 'O':
			ret = fd;
			break;
		case 'a':
			memset(buf, *next_fill(name), sizeof(buf));
			ret = write(fd, buf, sizeof(buf));
			break;
		case 'p':
		case 'q':
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			ret = pwrite(fd, buf, sizeof(buf), a1 ? atoll(a1) : 0);
			break;
		case 'D': {
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			struct iovec v = { buf, sizeof(buf) };
			ret = pwritev2(fd, &v, 1, a1 ? atoll(a1) : 0, RWF_DSYNC);
			break;
		}
		case 's':
		case 'S':
			ret = fsync(fd);
			break;
		case 'r': {
			char from[4096], to[4096];
			snprintf(from, sizeof(from), "%s/%s", dir, name);
			snprintf(to, sizeof(to), "%s/%s", dir, a1 ? a1 : "renamed");
			ret = rename(from, to);
			break;
		}
		case 'u': {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			ret = unlink(path);
			break;
		}
		case 't':
			ret = ftruncate(fd, a1 ? atoll(a1) : 0);
			break;
		case 'W':
			memset(buf, a1 ? *a1 : 'x', sizeof(buf));
			ret = write(fd, buf, sizeof(buf));
			break;
		case 'l':
			ret = lseek(fd, a1 ? atoll(a1) : 0, SEEK_SET);
			break;
		case 'R':
			ret = read(fd, buf, sizeof(buf));
			break;
		case 'd':
			ret = *dup_of(name) = dup(fd);
			break;
		case 'L':
			ret = lseek(*dup_of(name), a1 ? atoll(a1) : 0, SEEK_SET);
			break;
		case 'z': {
			static char big[65536];
			size_t len = 0;
			for (char *run = a2 ? strtok(a2, ",") : NULL; run; run = strtok(NULL, ",")) {
				char *x = strchr(run, 'x');
				size_t count = strtoul(run, NULL, 10);
				if (!x || len + count > sizeof(big)) {
					fprintf(stderr, "ord_steps: bad spec in %s\n", argv[i]);
					return 2;
				}
				memset(big + len, x[1] == '0' ? 0 : x[1], count);
				len += count;
			}
			ret = pwrite(fd, big, len, a1 ? atoll(a1) : 0);
			break;
		}
		case 'm': {
			off_t at = a1 ? atoll(a1) : 0;
			char *p = mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
			if (p == MAP_FAILED) {
				ret = -1;
				break;
			}
			memset(p, a2 ? *a2 : 'x', BLOCK);
			ret = munmap(p, BLOCK);
			break;
		}
		case 'c': {
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0) {
				ret = -1;
				break;
			}
			if (pid == 0)
				_exit(lseek(fd, a1 ? atoll(a1) : 0, SEEK_SET) < 0 ? 1 : 0);
			int st;
			ret = waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
			break;
		}
		case 'P': {
			unsigned char b = 0;
			ret = pread(fd, &b, 1, a1 ? atoll(a1) : 0) == 1 ? b : -1;
			break;
		}
		case 'V': {
			unsigned char b = 0;
			struct iovec v = { &b, 1 };
			ret = preadv(fd, &v, 1, a1 ? atoll(a1) : 0) == 1 ? b : -1;
			break;
		}
		case 'G': {
			unsigned char b = 0;
			ret = lseek(fd, a1 ? atoll(a1) : 0, SEEK_SET) < 0 || read(fd, &b, 1) != 1 ? -1 : b;
			break;
		}
		case 'M': {
			off_t at = a1 ? atoll(a1) : 0;
			unsigned char *p = mmap(NULL, BLOCK, PROT_READ, MAP_SHARED, fd, at & ~(off_t)(BLOCK - 1));
			ret = p == MAP_FAILED ? -1 : p[at & (BLOCK - 1)];
			if (p != MAP_FAILED)
				munmap(p, BLOCK);
			break;
		}
		case 'Y': {
			int pp[2];
			unsigned char b = 0;
			off_t at = a1 ? atoll(a1) : 0;
			ret = -1;
			if (pipe(pp) == 0) {
				if (sendfile(pp[1], fd, &at, 1) == 1 && read(pp[0], &b, 1) == 1)
					ret = b;
				close(pp[0]);
				close(pp[1]);
			}
			break;
		}
		case 'C': {
			char path[4096];
			unsigned char b = 0;
			snprintf(path, sizeof(path), "%s/.scratch", dir);
			int s2 = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
			off64_t at = a1 ? atoll(a1) : 0, to = 0;
			ret = s2 >= 0 && copy_file_range(fd, &at, s2, &to, 1, 0) == 1 && pread(s2, &b, 1, 0) == 1 ? b : -1;
			if (s2 >= 0)
				close(s2);
			break;
		}
		case 'K': {
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0) {
				ret = -1;
				break;
			}
			if (pid == 0) {
				unsigned char b = 0;
				_exit(pread(fd, &b, 1, a1 ? atoll(a1) : 0) == 1 ? b : 0);
			}
			int st;
			ret = waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			break;
		}
		case 'F': {
			struct stat st;
			ret = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
			break;
		}
		case 'Q': {
			char path[4096];
			struct stat st;
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			ret = stat(path, &st) == 0 ? (long long)st.st_size : -1;
			break;
		}
		case 'E':
			ret = lseek(fd, 0, SEEK_END);
			break;
		case 'x': {
			char path[4096];
			snprintf(path, sizeof(path), "%s/.source", dir);
			int src = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			off_t from = 0;
			if (src < 0 || pwrite(src, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
				ret = -1;
			} else {
				t0 = now_ns(); /* the change itself, not the making of its source */
				off_t at = a1 ? atoll(a1) : 0;
				ret = lseek(fd, at, SEEK_SET) < 0 ? -1 : sendfile(fd, src, &from, sizeof(buf));
			}
			if (src >= 0)
				close(src);
			break;
		}
		case 'j': {
			int pp[2];
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			ret = -1;
			if (pipe(pp) == 0) {
				if (write(pp[1], buf, sizeof(buf)) == (ssize_t)sizeof(buf)) {
					t0 = now_ns();
					loff_t at = a1 ? atoll(a1) : 0;
					ret = splice(pp[0], NULL, fd, &at, sizeof(buf), 0);
				}
				close(pp[0]);
				close(pp[1]);
			}
			break;
		}
		case 'J': {
			struct aiocb cb;
			memset(&cb, 0, sizeof(cb));
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			cb.aio_fildes = fd;
			cb.aio_buf = buf;
			cb.aio_nbytes = sizeof(buf);
			cb.aio_offset = a1 ? atoll(a1) : 0;
			ret = aio_write(&cb);
			if (ret == 0) {
				const struct aiocb *list[1] = { &cb };
				while (aio_error(&cb) == EINPROGRESS)
					aio_suspend(list, 1, NULL);
				ret = aio_return(&cb);
			}
			break;
		}
		case 'b': {
			io_context_t ctx = 0;
			struct iocb cb, *list[1] = { &cb };
			struct io_event ev;
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			ret = io_setup(1, &ctx);
			if (ret == 0) {
				io_prep_pwrite(&cb, fd, buf, sizeof(buf), a1 ? atoll(a1) : 0);
				ret = io_submit(ctx, 1, list);
				if (ret == 1)
					ret = io_getevents(ctx, 1, 1, &ev, NULL) == 1 ? (int)ev.res : -1;
				io_destroy(ctx);
			}
			break;
		}
		case 'k': {
			io_context_t ctx = 0;
			struct iocb cb, *list[1] = { &cb };
			struct io_event ev;
			unsigned char one = 0;
			ret = io_setup(1, &ctx);
			if (ret == 0) {
				io_prep_pread(&cb, fd, &one, 1, a1 ? atoll(a1) : 0);
				ret = io_submit(ctx, 1, list);
				if (ret == 1)
					ret = io_getevents(ctx, 1, 1, &ev, NULL) == 1 && ev.res == 1 ? one : -1;
				io_destroy(ctx);
			}
			break;
		}
		case 'g':
		case 'h': {
			struct io_uring ring;
			ret = io_uring_queue_init(4, &ring, 0);
			if (ret < 0)
				break;
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned char one = 0;
			if (*op == 'g') {
				memset(buf, a2 ? *a2 : 'x', sizeof(buf));
				io_uring_prep_write(sqe, fd, buf, sizeof(buf), a1 ? atoll(a1) : 0);
			} else {
				io_uring_prep_read(sqe, fd, &one, 1, a1 ? atoll(a1) : 0);
			}
			struct io_uring_cqe *cqe;
			ret = io_uring_submit(&ring);
			if (ret == 1 && io_uring_wait_cqe(&ring, &cqe) == 0) {
				ret = cqe->res;
				if (*op == 'h' && ret == 1)
					ret = one;
				io_uring_cqe_seen(&ring, cqe);
			}
			io_uring_queue_exit(&ring);
			break;
		}
		case 'n': {
			off_t at = a1 ? atoll(a1) : 0;
			struct stat st;
			if (fstat(fd, &st) == 0 && st.st_size < at + BLOCK && ftruncate(fd, at + BLOCK) != 0) {
				ret = -1;
				break;
			}
			char *p = mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, at);
			if (p == MAP_FAILED) {
				ret = -1;
				break;
			}
			memset(p, a2 ? *a2 : 'x', BLOCK);
			ret = msync(p, BLOCK, MS_SYNC);
			munmap(p, BLOCK);
			break;
		}
		case 'H': {
			handler_fd = fd;
			handler_off = a1 && *a1 == '-' ? -1 : a1 ? atoll(a1) : 0;
			handler_fill = a2 ? *a2 : 'x';
			struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
			sigemptyset(&sa.sa_mask);
			ret = sigaction(SIGUSR1, &sa, NULL);
			break;
		}
		case 'Z':
			memset(buf, a2 ? *a2 : 'x', sizeof(buf));
			ret = syscall(SYS_pwrite64, fd, buf, sizeof(buf), (off_t)(a1 ? atoll(a1) : 0));
			break;
		default:
			fprintf(stderr, "ord_steps: unknown step %s\n", argv[i]);
			return 2;
		}
		int err = ret < 0 ? errno : 0;
		uint64_t t1 = now_ns();
		printf("step %d %s %s t0=%llu t1=%llu ret=%lld err=%s\n", i - 2, op, name, (unsigned long long)t0,
		       (unsigned long long)t1, ret, err ? strerrorname_np(err) : "0");
		if (ret < 0 && (*op == 'S' || *op == 'q'))
			continue;
		if (ret < 0) {
			errno = err;
			fprintf(stderr, "ord_steps: step %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
	}
	if (handler_fd >= 0)
		printf("done pid=%d handler=%d\n", (int)getpid(), (int)handler_ran);
	else
		printf("done pid=%d\n", (int)getpid());
	return 0;
}
