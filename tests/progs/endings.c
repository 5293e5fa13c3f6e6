/*
 * endings - the ways a process ends, each with deferred syncs still owed.
 *
 *   endings -d DIR -m MODE [-s STATUS] [-t THREADS]
 *
 * Every mode first appends 4 records of 4 KiB to DIR/b.def with an fsync
 * after each (under defer each returns 0 at once, the real sync is owed),
 * prints "endings: calls ok" (or "endings: a call failed"), then:
 *   return    returns STATUS from main         exit   calls exit(STATUS)
 *   quick     an at_quick_exit handler appends to DIR/c.def and fsyncs it;
 *             then quick_exit(STATUS)
 *   pthread_exit  starts THREADS threads (default 4) that each append to
 *             DIR/t.N.def and fsync it, then main calls pthread_exit; the
 *             last thread to end ends the process (status 0)
 *   sig_exit  a SIGUSR1 handler calls _exit(STATUS); then DIR/a.grp is
 *             fsynced in a loop (a test point raises SIGUSR1 inside the
 *             group sync the shim leads for it)
 *   cancel    (no other file first) a thread opens DIR/x.def with
 *             cancellation disabled, main cancels it (pending), the
 *             thread makes the process's first write, enables
 *             cancellation and calls fsync: cancelled in its first fsync;
 *             main joins it and returns STATUS
 *   threads   THREADS short-lived threads, one after another, each makes
 *             10 writes to DIR/b.def and ends; then returns STATUS
 *   closed_std  opens /dev/null until it holds 0 and 1, then DIR/data
 *             (which gets fd 2 when the process started with 0-2 closed),
 *             writes 4 KiB of the pattern to it and fsyncs it, returns
 *   dup2_std  opens DIR/data, writes and fsyncs 4 KiB, dup2s it onto 2
 *             and returns (stderr is now the app's data file)
 *   sys_exit_group  syscall(SYS_exit_group, STATUS)
 *   sys_exit  syscall(SYS_exit, STATUS): main is the only thread
 *   sys_exit_threads  starts THREADS threads that each append to
 *             DIR/t.N.def and fsync it, then end by syscall(SYS_exit, 0);
 *             main ends first, by syscall(SYS_exit, STATUS) (the
 *             process's status, as the kernel keeps the main thread's)
 *   sys_execve, sys_execveat  execs /bin/true through syscall()
 * The closed_std and dup2_std modes print nothing (stdout may be gone).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progs.h"

static const char *dir = ".";
static int status;
static _Atomic int failures;

static int append_synced(const char *name, int records)
{
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return -1;
	for (int i = 0; i < records; i++) {
		pattern(buf, sizeof(buf), (unsigned long long)i * sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static void report(void)
{
	printf("endings: %s\n", failures ? "a call failed" : "calls ok");
	fflush(stdout);
}

static void at_quick(void)
{
	int fd = append_synced("c.def", 2);
	if (fd < 0)
		atomic_fetch_add(&failures, 1);
	printf("endings: at_quick_exit handler ran%s\n", fd < 0 ? ", a call failed" : "");
	fflush(stdout);
}

static void *thread_writer(void *arg)
{
	char name[32];
	snprintf(name, sizeof(name), "t.%ld.def", (long)arg);
	if (append_synced(name, 4) < 0)
		atomic_fetch_add(&failures, 1);
	return NULL;
}

static void *raw_exiting_writer(void *arg)
{
	thread_writer(arg);
	syscall(SYS_exit, 0);
	return NULL;
}

extern char **environ;

static void raw_exec(bool at)
{
	char *argv[] = { "true", NULL };
	if (at)
		syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, environ, 0);
	else
		syscall(SYS_execve, "/bin/true", argv, environ);
	printf("endings: exec failed: %s\n", strerror(errno));
	exit(1);
}

static void on_usr1(int sig)
{
	(void)sig;
	_exit(status);
}

static _Atomic int cancel_asked;

static void *cancelled_thread(void *arg)
{
	(void)arg;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	char path[PATH_MAX], buf[512];
	snprintf(path, sizeof(path), "%s/x.def", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	memset(buf, 'x', sizeof(buf));
	atomic_store(&cancel_asked, 1);
	while (atomic_load(&cancel_asked) != 2) /* main's pthread_cancel is made */
		;
	/* The process's first write: the log is made at the next call that
	 * may make it, the fsync right after (before the logger's next look). */
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		atomic_fetch_add(&failures, 1);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	fsync(fd); /* the cancel acts at its first cancellation point */
	return (void *)1; /* not reached when cancelled */
}

static void *short_writer(void *arg)
{
	int fd = *(int *)arg;
	char buf[64];
	memset(buf, 's', sizeof(buf));
	for (int i = 0; i < 10; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			atomic_fetch_add(&failures, 1);
	return NULL;
}

static void data_file(bool onto_stderr)
{
	char path[PATH_MAX], buf[4096];
	snprintf(path, sizeof(path), "%s/data", dir);
	if (!onto_stderr)
		while (fcntl(1, F_GETFD) < 0 && open("/dev/null", O_RDWR) >= 0)
			;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		_exit(3);
	pattern(buf, sizeof(buf), 0);
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) != 0)
		_exit(4);
	if (onto_stderr && dup2(fd, 2) != 2)
		_exit(5);
}

int main(int argc, char **argv)
{
	const char *mode = "return";
	int threads = 4;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'm', OPT_STR, .p = &mode },
		{ 's', OPT_INT, .p = &status },
		{ 't', OPT_INT, .p = &threads },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		return 2;
	if (!strcmp(mode, "closed_std") || !strcmp(mode, "dup2_std")) {
		data_file(!strcmp(mode, "dup2_std"));
		if (append_synced("b.def", 4) < 0)
			return 1;
		return status;
	}
	if (strcmp(mode, "cancel") && append_synced("b.def", 4) < 0)
		atomic_fetch_add(&failures, 1);
	if (!strcmp(mode, "return")) {
		report();
		return status;
	}
	if (!strcmp(mode, "exit")) {
		report();
		exit(status);
	}
	if (!strcmp(mode, "quick")) {
		at_quick_exit(at_quick);
		report();
		quick_exit(status);
	}
	if (!strcmp(mode, "pthread_exit")) {
		pthread_t th;
		for (long i = 0; i < threads; i++)
			if (pthread_create(&th, NULL, thread_writer, (void *)i) != 0 || pthread_detach(th) != 0)
				atomic_fetch_add(&failures, 1);
		report();
		pthread_exit(NULL);
	}
	if (!strcmp(mode, "sys_exit_group") || !strcmp(mode, "sys_exit")) {
		report();
		syscall(!strcmp(mode, "sys_exit") ? SYS_exit : SYS_exit_group, status);
		return 1;
	}
	if (!strcmp(mode, "sys_exit_threads")) {
		pthread_t th;
		for (long i = 0; i < threads; i++)
			if (pthread_create(&th, NULL, raw_exiting_writer, (void *)i) != 0)
				atomic_fetch_add(&failures, 1);
		report();
		syscall(SYS_exit, status);
		return 1;
	}
	if (!strcmp(mode, "sys_execve") || !strcmp(mode, "sys_execveat")) {
		report();
		raw_exec(!strcmp(mode, "sys_execveat"));
	}
	if (!strcmp(mode, "sig_exit")) {
		report();
		signal(SIGUSR1, on_usr1);
		int fd = append_synced("a.grp", 1);
		for (int i = 0; fd >= 0 && i < 1000; i++)
			fsync(fd);
		printf("endings: the handler never ran\n");
		return 1;
	}
	if (!strcmp(mode, "cancel")) {
		pthread_t th;
		void *ret = NULL;
		pthread_create(&th, NULL, cancelled_thread, NULL);
		while (atomic_load(&cancel_asked) != 1)
			;
		pthread_cancel(th);
		atomic_store(&cancel_asked, 2);
		pthread_join(th, &ret);
		printf("endings: thread %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
		report();
		return status;
	}
	if (!strcmp(mode, "threads")) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/b.def", dir);
		int fd = open(path, O_WRONLY | O_APPEND);
		for (int i = 0; i < threads; i++) {
			pthread_t th;
			if (pthread_create(&th, NULL, short_writer, &fd) != 0 || pthread_join(th, NULL) != 0)
				atomic_fetch_add(&failures, 1);
		}
		report();
		return status;
	}
	fprintf(stderr, "endings: unknown mode %s\n", mode);
	return 2;
}
