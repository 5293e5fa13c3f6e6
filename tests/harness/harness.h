/*
 * harness.h - the system suites' harness (tests/harness/harness.c, compiled
 * once and linked into every suite that includes this header): fresh temp
 * directories, commands with an explicit environment run under the shim
 * and the recording layer, strace counts, failfs mounts. What each helper
 * does is said where it is defined, in harness.c.
 */
#ifndef SYNCSHIM_TEST_HARNESS_H
#define SYNCSHIM_TEST_HARNESS_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/prctl.h>

#define H_MAX_ARGS 128
#define H_MAX_ENV 64
#define H_DEFAULT_TIMEOUT_S 60


/* Which libraries a command runs with. */
enum {
	H_PLAIN = 0,
	H_REC = 1,       /* the recording layer */
	H_SHIM = 2,      /* the shim */
	H_SHIM_REC = 3,  /* shim first, recording layer beneath it */
	H_SANRT = 4,     /* only the sanitizer runtime the shim build needs (a fair baseline) */
};

/* The syscalls strace counts unless a test says otherwise. */
#define H_STRACE_SET "fsync,fdatasync,msync,sync_file_range,syncfs,sync,write,pwrite64,writev,pwritev,pwritev2"

struct h_ctx {
	char dir[512];         /* this test's temp directory (short: paths are built in it) */
	char build[PATH_MAX];  /* absolute build directory */
	char prefix[PATH_MAX]; /* SYNCSHIM_PRELOAD_PREFIX, "" if none */
	bool asan;
	int seq;               /* numbers each command's output files */
};

extern struct h_ctx h_ctx;

struct h_cmd {
	char *argv[H_MAX_ARGS];
	int argc;
	char *env[H_MAX_ENV];
	int envc;
	unsigned layers;
	char preload[4 * PATH_MAX]; /* "" when nothing is preloaded */
	char reclog[PATH_MAX];      /* "" unless H_REC */
	char strace_out[PATH_MAX];  /* "" unless strace wraps the command */
	char strace_set[512];
	char out_path[PATH_MAX], err_path[PATH_MAX];
	int timeout_s;
	int id;
};

struct h_result {
	int code;       /* exit status, -1 if killed by a signal */
	int sig;        /* the signal, 0 if it exited */
	bool timed_out;
	char *out;      /* stdout, NUL-terminated */
	char *err;      /* stderr */
	double secs;
};

#define h_envf(c, ...) h_env((c), h_fmt(__VA_ARGS__))
#define h_argf(c, ...) h_arg((c), h_fmt(__VA_ARGS__))

/* The command must have exited 0 within its timeout. */
/* r is evaluated once: h_assert_ok(h_run(&c), ...) runs the command once. */
#define h_assert_ok(r, what)                                                               \
	do {                                                                               \
		struct h_result ok_ = (r);                                                 \
		cr_assert(!ok_.timed_out, "%s: timed out (deadlock?)\nstdout:\n%s\nstderr:\n%s", \
			  what, ok_.out, ok_.err);                                          \
		cr_assert_eq(ok_.code, 0, "%s: exit %d signal %d\nstdout:\n%s\nstderr:\n%s", what, \
			     ok_.code, ok_.sig, ok_.out, ok_.err);                           \
	} while (0)


struct h_rec {
	char op[24];
	char fn[24];
	long pid, tid, fd;
	unsigned long long ino, t0, t1, flags, addr, len;
	long long ret, off, n;
	int err;
	bool injected, has_flags;
	char *path, *path2;
};

struct h_log {
	struct h_rec *r;
	size_t n;
};

#define H_FAILFS_MAX 8
/* A bound, not a speed: on this shared 2-core VM, under another tenant's
 * fsync-heavy I/O, fusermount3 was once seen taking over 10 s to unmount
 * after its daemon was killed. */
#define H_FAILFS_DEADLINE_S 25

struct h_failfs {
	pid_t pid;          /* 0: slot free */
	char mnt[PATH_MAX]; /* absolute */
};

/* ---- the helpers (harness.c) ---- */
char *h_strdup(const char *s);
char *h_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A note on the test's stderr that is not a failure: criterion's
 * cr_log_warn makes the whole run exit 1 even when every test passes. */
#define h_note(...) fprintf(stderr, "[note] %s\n", h_fmt(__VA_ARGS__))
char *h_path(const char *name);
char *h_prog(const char *name);
char *h_shim_lib(void);
char *h_rec_lib(void);
char *h_read_file(const char *path);
void h_write_file(const char *path, const char *text);
unsigned long long h_ino(const char *path);
long long h_size(const char *path);
int h_nlines(const char *s);
bool h_has(const char *hay, const char *needle);
long long h_num_after(const char *text, const char *key, long long def);
bool h_check_pattern(const char *path, long long expect_size);
int h_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw);
void h_setup(void);
void h_teardown(void);
void h_env(struct h_cmd *c, const char *kv);
void h_arg(struct h_cmd *c, const char *a);
void h_args(struct h_cmd *c, ...);
void h_cmd_init(struct h_cmd *c, unsigned layers);
void h_cmd_policy(struct h_cmd *c, unsigned layers, const char *policy);
void h_cmd_policy_only(struct h_cmd *c, unsigned layers, const char *policy);
void h_cmd_ini(struct h_cmd *c, unsigned layers, const char *ini);
char *h_ini(const char *name, const char *text);
void h_strace(struct h_cmd *c, const char *set);
double h_now(void);
void h_dump_stacks(pid_t group, int id);
void h_skip_forks_from_threads_under_a_sanitizer(void);
bool h_wait(pid_t pid, int timeout_s, int *st);
struct h_result h_run(struct h_cmd *c);
struct h_result h_sh(const char *script, int timeout_s);
/* Skips the test unless PostgreSQL 15 is here and the build is plain; the
 * test's directory is opened to the server's user. */
void h_need_postgres(void);
pid_t h_spawn(struct h_cmd *c);
bool h_done(pid_t pid, int *st);
struct h_result h_reap(struct h_cmd *c, pid_t pid, int timeout_s, bool have_st, int st);
void h_parse_line(char *line, struct h_rec *r);
struct h_log h_log_load(const struct h_cmd *c);
int h_count(const struct h_log *log, const char *op, unsigned long long ino);
int h_real_syncs(const struct h_log *log, unsigned long long ino);
int h_count_if(const struct h_log *log, bool (*pred)(const struct h_rec *, const void *),
		      const void *arg);
const struct h_rec *h_find(const struct h_log *log, const char *op, unsigned long long ino);
long h_strace_count(const struct h_cmd *c, const char *name);
char *h_failfs_bin(void);
bool h_failfs_mounted(const char *mnt);
struct h_failfs *h_failfs_find(const char *mnt);
void h_failfs_exec(char *const argv[], const char *log, pid_t parent);
void h_failfs_wait_mounted(pid_t pid, const char *mnt, const char *log);
void h_failfs_mount_opts(const char *backing, const char *mnt, const char *opts);
void h_failfs_mount(const char *backing, const char *mnt);
char *h_failfs_new(void);
pid_t h_failfs_pid(const char *mnt);
bool h_failfs_stop(struct h_failfs *f);
void h_failfs_umount(const char *mnt);
void h_failfs_umount_all(void);
void h_failfs_fini(void);
void h_failfs_ctl(const char *mnt, const char *cmd);
char *h_failfs_stats(const char *mnt);
long long h_failfs_field(const char *line, const char *end, const char *key);
long long h_failfs_stat(const char *mnt, const char *key);
long long h_failfs_file_stat(const char *mnt, const char *path, const char *key);

#endif
