/*
 * say.c - the shim's one line to the user: shim_say, on the process's
 * stderr while fd 2 is still what it was at load, else to syslog.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "owntable.h"
#include "shim.h"

/*
 * Where a message goes. The user chose the process's stderr by what fd 2
 * was when it started; the app may later close it and get the number
 * again for a data file (a daemon started with 0-2 closed, or that
 * dup2s its own files onto them). A message written to fd 2 then would go
 * into the app's data. So fd 2's identity is taken at load, and each
 * message (a rare path: one fstat) goes to fd 2 only while fd 2 is still
 * that file; otherwise, or when fd 2 was closed at load, to syslog
 * (/dev/log, one datagram, user.warning, "syncshim[PID]: ..."), and
 * nowhere if there is none.
 */
static struct {
	bool open;
	dev_t dev;
	ino_t ino;
	mode_t type;
} stderr_at_load;

void shim_say_remember_stderr(void)
{
	struct stat st;
	if (LIBC(fstat)(2, &st) == 0)
		stderr_at_load = (typeof(stderr_at_load)){ true, st.st_dev, st.st_ino, st.st_mode & S_IFMT };
}

static bool stderr_is_still_ours(int fd)
{
	struct stat st;
	return stderr_at_load.open && fd >= 0 && LIBC(fstat)(fd, &st) == 0 && st.st_dev == stderr_at_load.dev &&
	       st.st_ino == stderr_at_load.ino && (st.st_mode & S_IFMT) == stderr_at_load.type;
}

struct syslog_msg {
	const char *text;
	size_t n;
	pid_t pid; /* ours: the child's getpid() is its own */
};

/* One datagram to the local syslog; its descriptor lives for the call
 * (libc's openlog/syslog keep state of their own the app may be using). */
static int say_to_syslog_here(void *arg)
{
	const struct syslog_msg *m = arg;
	int s = LIBC(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return 0;
	char msg[POLICY_ERR_MAX + 192];
	int len = snprintf(msg, sizeof(msg), "<%d>syncshim[%d]: %.*s", LOG_USER | LOG_WARNING, (int)m->pid,
			   (int)m->n, m->text);
	struct sockaddr_un a = { .sun_family = AF_UNIX, .sun_path = "/dev/log" };
	if (len > 0)
		sendto(s, msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL,
		       (struct sockaddr *)&a, sizeof(a));
	LIBC(close)(s);
	return 0;
}

/* The socket is made in a child with a table of its own, so it is never
 * on a number of the app's (here where that cannot be). */
static void say_to_syslog(const char *text, size_t n)
{
	struct syslog_msg m = { text, n, getpid() };
	int r;
	if (!shimfd_isolated(say_to_syslog_here, &m, &r)) {
		shimfd_nofork_begin(); /* its socket is on a number of the app's for the moment */
		say_to_syslog_here(&m);
		shimfd_nofork_end();
	}
}

/* Control characters (a newline in an environment value or a path could
 * forge a line of its own) are shown escaped: \n, \t, \xHH. */
static size_t escape_controls(const char *in, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c >= 0x20 && c != 0x7f) {
			out[o++] = (char)c;
		} else if (c == '\n' || c == '\t') {
			out[o++] = '\\';
			out[o++] = c == '\n' ? 'n' : 't';
		} else {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		}
	}
	return o;
}

void shim_say(const char *fmt, ...)
{
	int e = errno;
	char text[POLICY_ERR_MAX + 128], line[sizeof(text) + 16];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n >= (int)sizeof(text))
		n = (int)sizeof(text) - 1;
	char shown[sizeof(text)];
	size_t len = escape_controls(text, (size_t)n, shown, sizeof(shown));
	int err_fd = shimfd_stderr(); /* 2, or a copy of it in a thread with a table of its own */
	if (stderr_is_still_ours(err_fd)) {
		int m = snprintf(line, sizeof(line), "syncshim: %.*s\n", (int)len, shown);
		if (m > (int)sizeof(line) - 1)
			m = (int)sizeof(line) - 1;
		ssize_t w = LIBC(write)(err_fd, line, (size_t)m);
		(void)w;
	} else {
		say_to_syslog(shown, len);
	}
	shimfd_stderr_done(err_fd);
	errno = e;
}
