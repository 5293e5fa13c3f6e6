/*
 * sig_write - write() and fsync() from a signal handler while the main
 * thread is inside the same calls (and opening and closing files, which
 * take the shim's registry lock). Must neither deadlock nor crash, and
 * every record must land.
 *
 *   sig_write -d DIR [-T MILLIS] [-i MICROS]
 *
 * An interval timer (SIGALRM every MICROS us, default 500) runs a handler
 * that appends a 16-byte record to DIR/handler.dat and fsyncs it; every
 * 8th run it also opens DIR/handler2.dat (O_APPEND, created by main),
 * writes, fsyncs and closes it. The main loop, for MILLIS ms (default
 * 600, measured on CLOCK_MONOTONIC), appends + fsyncs DIR/main.dat and
 * opens + closes DIR/churn.dat each iteration. errno is saved and
 * restored in the handler.
 * Output "sig_write: ok main=N handler=H handler_opens=O"; exit 1 when a
 * call fails, data is wrong, or the handler never ran.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static int hfd = -1;
static char h2path[4096];
static volatile sig_atomic_t handler_runs, handler_opens, handler_errors;

static void record(char *rec, unsigned long n, char tag)
{
	/* tag + 14 decimal digits + '\n' */
	rec[0] = tag;
	for (int i = 14; i >= 1; i--) {
		rec[i] = (char)('0' + n % 10);
		n /= 10;
	}
	rec[15] = '\n';
}

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	char rec[16];
	record(rec, (unsigned long)handler_runs, 'H');
	if (write(hfd, rec, 16) != 16 || fsync(hfd) != 0)
		handler_errors = handler_errors + 1;
	if (handler_runs % 8 == 0) {
		int fd = open(h2path, O_WRONLY | O_APPEND);
		if (fd < 0 || write(fd, rec, 16) != 16 || fsync(fd) != 0 || close(fd) != 0)
			handler_errors = handler_errors + 1;
		else
			handler_opens = handler_opens + 1;
	}
	handler_runs = handler_runs + 1;
	errno = saved;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Every record of the file: tag and its sequence number 0, 1, 2 ... */
static long check_file(const char *path, char tag, long want)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[64];
	long n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != tag || strlen(line) != 16) {
			fprintf(stderr, "sig_write: %s: bad record %ld\n", path, n);
			n = -1;
			break;
		}
		n++;
	}
	fclose(f);
	if (n >= 0 && want >= 0 && n != want) {
		fprintf(stderr, "sig_write: %s: %ld records, want %ld\n", path, n, want);
		return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	long millis = 600, micros = 500;
	const struct opt opts[] = {
		{ 'd', OPT_STR, .p = &dir },
		{ 'T', OPT_LONG, .p = &millis },
		{ 'i', OPT_LONG, .p = &micros },
	};
	if (parse_opts(argc, argv, opts, NOPTS(opts)) < 0)
		dir = NULL;
	if (!dir || millis <= 0 || micros <= 0) {
		fprintf(stderr, "usage: sig_write -d DIR [-T MILLIS] [-i MICROS]\n");
		return 2;
	}
	char mpath[4096], hpath[4096], cpath[4096];
	snprintf(mpath, sizeof(mpath), "%s/main.dat", dir);
	snprintf(hpath, sizeof(hpath), "%s/handler.dat", dir);
	snprintf(h2path, sizeof(h2path), "%s/handler2.dat", dir);
	snprintf(cpath, sizeof(cpath), "%s/churn.dat", dir);
	int mfd = open(mpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	hfd = open(hpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	int h2 = open(h2path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (mfd < 0 || hfd < 0 || h2 < 0) {
		perror("open");
		return 1;
	}
	close(h2);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, micros }, { 0, micros } };
	setitimer(ITIMER_REAL, &it, NULL);

	double end = now_ms() + (double)millis;
	long main_runs = 0;
	int bad = 0;
	while (now_ms() < end) {
		char rec[16];
		record(rec, (unsigned long)main_runs, 'M');
		if (write(mfd, rec, 16) != 16 || fsync(mfd) != 0) {
			perror("sig_write: main write/fsync");
			bad = 1;
			break;
		}
		main_runs++;
		int cfd = open(cpath, O_WRONLY | O_CREAT, 0644);
		if (cfd < 0 || close(cfd) != 0) {
			perror("sig_write: churn open/close");
			bad = 1;
			break;
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_IGN);
	close(mfd);
	close(hfd);
	long hr = handler_runs;
	if (handler_errors) {
		fprintf(stderr, "sig_write: %d handler calls failed\n", (int)handler_errors);
		bad = 1;
	}
	if (hr == 0) {
		fprintf(stderr, "sig_write: the handler never ran\n");
		bad = 1;
	}
	if (check_file(mpath, 'M', main_runs) < 0 || check_file(hpath, 'H', hr) < 0 ||
	    check_file(h2path, 'H', handler_opens) < 0)
		bad = 1;
	if (bad)
		return 1;
	printf("sig_write: ok main=%ld handler=%ld handler_opens=%d\n", main_runs, hr, (int)handler_opens);
	return 0;
}
