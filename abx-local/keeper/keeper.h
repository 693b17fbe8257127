/* The keeper of a command (docs/security.md, "A timeout ends
 * everything"): a child subreaper between envd and the command, which
 * everything the command leaves behind is reparented to. envd forks it;
 * it forks the command, then becomes abx-keeper (main.c: a small static
 * program, so a keeper costs a few pages whatever envd's size), or, where
 * there is none, runs the same loop in the fork of envd (loop.c). */
#ifndef ABXL_KEEPER_H
#define ABXL_KEEPER_H

#include <signal.h>
#include <sys/types.h>

/* envd to keeper: kill everything the command started, then end. */
#define ABXL_KEEPER_KILL SIGUSR1
/* The control pipe's descriptor in abx-keeper. */
#define ABXL_KEEPER_CTL_FD 3

/* Writes cmd's pid on ctl, then its wait status when it ends; reaps every
 * child; kills them all on ABXL_KEEPER_KILL; exits when none is left.
 * SIGCHLD and ABXL_KEEPER_KILL must be blocked. */
_Noreturn void abxl_keeper_run(pid_t cmd, int ctl);

/* fn(dirfd, name, n, arg) for each entry of dir whose name is a number
 * (pids in /proc, fds in /proc/self/fd); raw getdents64, no malloc. */
void abxl_keeper_each_number(const char *dir, void (*fn)(int dirfd, const char *name,
                                                      long n, void *arg), void *arg);

#endif
