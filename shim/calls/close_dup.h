/*
 * close_dup.h - what other wrappers need of close_dup.c.
 */
#ifndef SYNCSHIM_CLOSE_DUP_H
#define SYNCSHIM_CLOSE_DUP_H


/* A close the app's call makes implicitly (dup2 over fd, freopen, one of
 * close_range's): prepared like a close, its error left for the orphan
 * check (it has no return value to go to). */
void fdops_before_implicit_close(int fd);

#endif
