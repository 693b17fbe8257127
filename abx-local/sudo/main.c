/* sudo in a sandbox: asks envd, the sandbox's root, to run a command as
 * root (or -u USER) with this process's stdin, stdout, stderr and working
 * folder, and ends as the command ended. A setuid sudo cannot work here:
 * every sandbox process runs with no_new_privs (docs/security.md, "sudo").
 * envd runs it for root and for the sandbox's default user only, as E2B's
 * base image lets its user sudo without a password.
 *
 *   sudo [-EHnS] [-u USER] [-i | -s] [--] [COMMAND [ARG]...]
 *
 * Static and small, like abx-keeper: the template's root need not have
 * this libc. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sudo_wire.h"

extern char **environ;

/* The signals passed on to the command, as sudo relays them. */
static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static int usage(const char *why)
{
    if (why)
        abxl_log(ABXL_LOG_ERROR, "%s", why);
    abxl_usage("usage: sudo [-EHnS] [-u user] [-i | -s] [--] [command [arg ...]]\n", why != NULL);
    return why ? 1 : 0;
}

struct req {
    char buf[ABXL_SUDO_MAX];
    size_t len;
    int full;
};

static void put(struct req *r, const char *s)
{
    size_t n = strlen(s) + 1;
    if (r->len + n > sizeof r->buf) {
        r->full = 1;
        return;
    }
    memcpy(r->buf + r->len, s, n);
    r->len += n;
}

/* fds 0-2 as given, /dev/null for a closed one (SCM_RIGHTS needs a file). */
static int stdio_fd(int fd)
{
    return fcntl(fd, F_GETFD) >= 0 ? fd : open("/dev/null", O_RDWR | O_CLOEXEC);
}

static int send_req(int s, const struct req *r)
{
    int fds[3] = {stdio_fd(0), stdio_fd(1), stdio_fd(2)};
    /* Who is asking, checked by the kernel: envd serves root and the
     * sandbox's default user only. */
    struct ucred me = {getpid(), getuid(), getgid()};
    union {
        char b[CMSG_SPACE(sizeof fds) + CMSG_SPACE(sizeof me)];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = {(void *)r->buf, r->len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                       .msg_controllen = sizeof ctl.b};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    c = CMSG_NXTHDR(&m, c);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof me);
    memcpy(CMSG_DATA(c), &me, sizeof me);
    ssize_t n = sendmsg(s, &m, MSG_NOSIGNAL);
    return n == (ssize_t)r->len ? 0 : -1;
}

/* Ends as the command did: its exit code, or its signal. */
static int end_as(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    signal(sig, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    kill(getpid(), sig);
    return 128 + sig;
}

/* Relays signals until the reply: the command's status, or a refusal. */
static int wait_end(int s)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof relayed / sizeof relayed[0]; i++)
        sigaddset(&set, relayed[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    for (;;) {
        struct pollfd p[2] = {{s, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (sfd >= 0 && (p[1].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                char msg[1 + sizeof(int)] = {'S'};
                int sig = (int)si.ssi_signo;
                memcpy(msg + 1, &sig, sizeof sig);
                if (send(s, msg, sizeof msg, MSG_NOSIGNAL) < 0)
                    break;
            }
        }
        if (p[0].revents) {
            char msg[1024];
            ssize_t n = recv(s, msg, sizeof msg - 1, 0);
            if (n <= 0)
                break;
            msg[n] = '\0';
            if (msg[0] == 'X' && n == 1 + (ssize_t)sizeof(int)) {
                int status;
                memcpy(&status, msg + 1, sizeof status);
                return end_as(status);
            }
            if (msg[0] == 'E') {
                abxl_log(ABXL_LOG_ERROR, "%s", msg + 1);
                return 1;
            }
        }
    }
    abxl_log(ABXL_LOG_ERROR, "the sandbox's sudo service went away");
    return 1;
}

int main(int argc, char **argv)
{
    static struct req r;
    char flags[8] = "", cwd[4096];
    const char *user = "";
    size_t nf = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        for (const char *o = argv[i] + 1; *o; o++) {
            if (*o == 'u') {
                user = o[1] ? o + 1 : i + 1 < argc ? argv[++i] : NULL;
                if (user == NULL)
                    return usage("option -u needs a user");
                break;
            }
            if ((*o == 'i' || *o == 's' || *o == 'E') && nf < sizeof flags - 1) {
                flags[nf++] = *o;
                continue;
            }
            if (*o == 'V') {
                abxl_out("abx-local sudo (the sandbox's sudo, served by envd)\n");
                return 0;
            }
            if (*o == 'h')
                return usage(NULL);
            /* No password, no timestamp, the target's home set anyway:
             * nothing to do. */
            if (strchr("HnSkKv", *o))
                continue;
            char why[64];
            snprintf(why, sizeof why, "invalid option -- '%c'", *o);
            return usage(why);
        }
    }
    int shell = strchr(flags, 'i') || strchr(flags, 's');
    if (i >= argc && !shell) {
        for (int k = 1; k < argc; k++)
            if (strcmp(argv[k], "-k") == 0 || strcmp(argv[k], "-K") == 0 ||
                strcmp(argv[k], "-v") == 0)
                return 0;
        return usage(NULL);
    }
    if (getcwd(cwd, sizeof cwd) == NULL)
        snprintf(cwd, sizeof cwd, "/");
    put(&r, ABXL_SUDO_MAGIC);
    put(&r, flags);
    put(&r, user);
    put(&r, cwd);
    for (char **e = environ; *e; e++)
        if (strchr(*e, '=') != NULL && **e != '=')
            put(&r, *e);
    put(&r, "");
    for (; i < argc; i++)
        put(&r, argv[i]);
    if (r.full) {
        abxl_log(ABXL_LOG_ERROR, "the command and its environment exceed %d bytes",
                 ABXL_SUDO_MAX);
        return 1;
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", ABXL_SUDO_SOCKET);
    int rc = s < 0 ? -1 : connect(s, (struct sockaddr *)&a, sizeof a);
    /* A full backlog: Linux makes connect wait, gVisor says EAGAIN. */
    for (int tries = 0; rc != 0 && errno == EAGAIN && tries < 200; tries++) {
        struct timespec ms = {0, 50000000};
        nanosleep(&ms, NULL);
        rc = connect(s, (struct sockaddr *)&a, sizeof a);
    }
    if (rc != 0) {
        if (errno == ENOENT || errno == ECONNREFUSED)
            abxl_log(ABXL_LOG_ERROR, "this sandbox has no sudo service (%s: %s)",
                     ABXL_SUDO_SOCKET, strerror(errno));
        else
            abxl_log(ABXL_LOG_ERROR, "cannot reach the sudo service: %s", strerror(errno));
        return 1;
    }
    if (send_req(s, &r) != 0) {
        abxl_log(ABXL_LOG_ERROR, "cannot reach the sudo service: %s", strerror(errno));
        return 1;
    }
    return wait_end(s);
}
