/*
 * term.c - raw terminal handling for synclat top (see term.h).
 *
 * ISIG is turned off with the rest of raw mode, so Ctrl-C and Ctrl-Z
 * arrive as keys the loop handles; the same signals sent with kill(1)
 * only set a flag here, and the loop puts the terminal back before it
 * acts on them. Handlers are installed without SA_RESTART so a signal
 * ends a poll or a blocked write at once.
 */
#include "term.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define ALT_ON "\033[?1049h\033[?25l"  /* alternate screen, cursor hidden */
#define ALT_OFF "\033[?25h\033[?1049l" /* cursor shown, main screen back */

volatile sig_atomic_t term_quit_signal, term_resized, term_stopped;

static struct term *active; /* for exit(): atexit has no argument */

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		term_resized = 1;
	else if (sig == SIGTSTP)
		term_stopped = 1;
	else
		term_quit_signal = sig;
}

static const int handled[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP };

static void handlers(bool install)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = install ? on_signal : SIG_DFL;
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaction(handled[i], &sa, NULL);
}

static void at_exit(void)
{
	if (active)
		term_leave(active);
}

void term_update_size(struct term *t)
{
	struct winsize ws;
	if (ioctl(t->out, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		t->rows = ws.ws_row;
		t->cols = ws.ws_col;
	} else {
		t->rows = 24;
		t->cols = 80;
	}
}

static int raw_on(struct term *t)
{
	struct termios raw = t->saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
	raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(t->in, TCSAFLUSH, &raw) != 0)
		return -1;
	t->raw = true;
	t->screen = true;
	return term_write(t, ALT_ON, sizeof(ALT_ON) - 1) ? 0 : -1;
}

int term_enter(struct term *t, int in, int out)
{
	memset(t, 0, sizeof(*t));
	t->in = in;
	t->out = out;
	if (!isatty(in) || !isatty(out)) {
		errno = ENOTTY;
		return -1;
	}
	if (tcgetattr(in, &t->saved) != 0)
		return -1;
	term_quit_signal = term_resized = term_stopped = 0;
	active = t;
	static bool registered;
	if (!registered)
		registered = atexit(at_exit) == 0;
	handlers(true);
	term_update_size(t);
	if (raw_on(t) != 0) {
		int e = errno;
		term_leave(t);
		errno = e;
		return -1;
	}
	return 0;
}

void term_leave(struct term *t)
{
	if (t->screen) {
		t->screen = false;
		/* Whatever a signal says now, this must reach the terminal. */
		for (size_t off = 0, n = sizeof(ALT_OFF) - 1; off < n;) {
			ssize_t w = write(t->out, &ALT_OFF[off], n - off);
			if (w < 0 && errno != EINTR)
				break;
			off += w > 0 ? (size_t)w : 0;
		}
	}
	if (t->raw) {
		t->raw = false;
		tcsetattr(t->in, TCSADRAIN, &t->saved);
	}
	if (active == t) {
		active = NULL;
		handlers(false);
	}
}

void term_suspend(struct term *t)
{
	term_leave(t);
	raise(SIGTSTP); /* default action now: stopped until SIGCONT */
	term_stopped = 0;
	tcgetattr(t->in, &t->saved); /* the shell may have changed it meanwhile */
	active = t;
	handlers(true);
	term_update_size(t);
	raw_on(t);
}

int term_wait(struct term *t, struct pollfd *p, int ms)
{
	(void)t;
	sigset_t block, old;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&block, handled[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	int r = 0;
	if (!term_quit_signal && !term_resized && !term_stopped) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
		r = ppoll(p, 1, &ts, &old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

bool term_write(struct term *t, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(t->out, buf, len);
		if (w < 0) {
			if (errno == EINTR && !term_quit_signal)
				continue;
			return false;
		}
		buf += w;
		len -= (size_t)w;
	}
	return true;
}

void term_reraise(void)
{
	int sig = term_quit_signal;
	if (!sig)
		return;
	signal(sig, SIG_DFL);
	raise(sig);
}
