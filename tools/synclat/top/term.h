/*
 * term.h - the terminal for synclat top without curses: raw keys with
 * termios, the alternate screen and ANSI escapes, the window's size
 * (TIOCGWINSZ, SIGWINCH), and the terminal put back as it was on every
 * way out: a key, SIGINT/SIGTERM/SIGHUP, an error, exit().
 */
#ifndef SYNCSHIM_TERM_H
#define SYNCSHIM_TERM_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

struct term {
	int in, out;
	struct termios saved;  /* as we found it */
	bool raw;              /* saved must be put back */
	bool screen;           /* the alternate screen is on */
	int rows, cols;
};

/* Set by the handlers term_enter installs; the caller's loop reads and
 * clears them. term_quit_signal: SIGINT, SIGTERM, SIGHUP or SIGQUIT. */
extern volatile sig_atomic_t term_quit_signal, term_resized, term_stopped;

/* Raw mode, alternate screen, cursor hidden, handlers. -1 (errno ENOTTY
 * or the failing call's) if in or out is not a terminal. */
int term_enter(struct term *t, int in, int out);
/* Puts everything back; safe to call twice and from exit(). */
void term_leave(struct term *t);
/* Re-reads the size (after SIGWINCH). */
void term_update_size(struct term *t);
/* SIGTSTP or Ctrl-Z: put the terminal back, stop, and take it again
 * when continued. */
void term_suspend(struct term *t);
/* Writes all of buf; false on an error, or when a quit signal came. */
bool term_write(struct term *t, const char *buf, size_t len);
/* poll() on the terminal's input for ms, or until one of the handled
 * signals: they are blocked while the flags are checked and let through
 * only inside ppoll, so one that comes just before the wait still ends
 * it. Returns poll's result, 0 at once if a flag is already set. */
int term_wait(struct term *t, struct pollfd *p, int ms);
/* After term_leave: die of the quit signal that ended the loop, as an
 * interrupted program should (its parent sees the signal). */
void term_reraise(void);

#endif
