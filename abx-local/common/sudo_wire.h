/* The sandbox's sudo: the wire between the client (abx-local/sudo, at
 * /usr/bin/sudo in a template root) and envd's service (envd/sudo.c), a
 * SOCK_SEQPACKET socket that envd, the sandbox's root, listens on.
 *
 * Request, one message carrying the client's stdin, stdout and stderr as
 * SCM_RIGHTS: NUL-terminated strings
 *   ABXL_SUDO_MAGIC, flags, user ("" = root), cwd, VAR=VALUE..., "", argv...
 * flags: E keep the environment, s run the shell, i a login shell.
 * Replies: 'E' + a message (refused; nothing ran), or 'X' + the command's
 * wait status (int, host order) once it ended. The client sends 'S' + a
 * signal number (int) for each signal it is sent; its hanging up before
 * the end ends everything the command started (docs/security.md). */
#ifndef ABXL_SUDO_WIRE_H
#define ABXL_SUDO_WIRE_H

#define ABXL_SUDO_SOCKET "/run/abx-sudo.sock"
#define ABXL_SUDO_MAGIC "abx-sudo/1"
#define ABXL_SUDO_MAX 131072   /* a request's bytes */

#endif
