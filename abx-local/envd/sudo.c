/* The sandbox's sudo service (common/sudo_wire.h; the client is
 * abx-local/sudo). A setuid sudo cannot work in a sandbox, whose processes
 * all run with no_new_privs, so envd, the sandbox's root, runs the command
 * for the client, as a Process/Start as root would run it: nothing a
 * sandbox's root could not do already (docs/security.md, "sudo").
 *
 * Who may: root and the sandbox's default user (SCM_CREDENTIALS), as E2B's
 * base lets `user` sudo without a password. The command gets the client's
 * stdin, stdout, stderr and working folder, sudo's reset environment
 * (-E: the client's), runs under a keeper of its own, and its wait status
 * goes back to the client. Signals the client is sent are passed on to
 * the command's process group; a client that goes away before the end
 * (killed, or its command's deadline) takes everything the command
 * started with it. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "sudo_wire.h"

#define MAX_SESSIONS 32
#define SECURE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define MAX_ARGS 4096

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int sessions;

struct session {
    int sock, stdio[3];
    bool counted;   /* holds one of the MAX_SESSIONS */
    uid_t peer;
    char *buf;   /* the request, NUL-terminated strings */
    size_t len;
};

static void uncount(struct session *s)
{
    if (!s->counted)
        return;
    pthread_mutex_lock(&mu);
    sessions--;
    pthread_mutex_unlock(&mu);
    s->counted = false;
}

static void session_free(struct session *s)
{
    if (s->sock >= 0)
        close(s->sock);
    for (int i = 0; i < 3; i++)
        if (s->stdio[i] >= 0)
            close(s->stdio[i]);
    uncount(s);
    free(s->buf);
    free(s);
}

static void refuse(int sock, const char *msg)
{
    char out[512];
    int n = snprintf(out, sizeof out, "E%s", msg);
    if (send(sock, out, n < (int)sizeof out ? (size_t)n : sizeof out - 1, MSG_NOSIGNAL) < 0) {
        /* the client left: nothing to tell */
    }
}

/* The next string of the request, or NULL past its end. */
static const char *next(const struct session *s, size_t *off)
{
    if (*off >= s->len)
        return NULL;
    const char *v = s->buf + *off;
    size_t n = strnlen(v, s->len - *off);
    if (*off + n >= s->len)
        return NULL;   /* unterminated */
    *off += n + 1;
    return v;
}

struct strs {
    char *v[MAX_ARGS + 1];
    int n;
    int full;
};

static void push(struct strs *a, char *owned)
{
    if (owned == NULL || a->n >= MAX_ARGS) {
        free(owned);
        a->full = 1;
        return;
    }
    a->v[a->n++] = owned;
    a->v[a->n] = NULL;
}

static char *joined(const char *k, const char *v)
{
    size_t n = strlen(k) + strlen(v) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", k, v);
    return s;
}

static void strs_free(struct strs *a)
{
    for (int i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

/* sudo -s/-i: the command as one word for the shell's -c, each character
 * but letters, digits, '_', '-' and '$' escaped (as sudo does). */
static char *shell_words(const struct session *s, size_t off)
{
    size_t cap = 2 * s->len + 1, n = 0;
    char *out = malloc(cap);
    const char *w;
    while (out && (w = next(s, &off)) != NULL) {
        if (n)
            out[n++] = ' ';
        for (; *w; w++) {
            if (!((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z') ||
                  (*w >= '0' && *w <= '9') || *w == '_' || *w == '-' || *w == '$'))
                out[n++] = '\\';
            out[n++] = *w;
        }
    }
    if (out)
        out[n] = '\0';
    return out;
}

/* The variables sudo sets itself: -E keeps the caller's others only. */
static const char *const own_vars[] = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "SUDO_"};

static bool sudo_sets(const char *kv)
{
    for (size_t i = 0; i < sizeof own_vars / sizeof own_vars[0]; i++) {
        size_t n = strlen(own_vars[i]);
        if (strncmp(kv, own_vars[i], n) == 0 && (own_vars[i][n - 1] == '_' || kv[n] == '='))
            return true;
    }
    return false;
}

/* Builds the command's argv and environment from the request; "" or why
 * it is refused. */
static const char *parse(struct session *s, struct abxl_envd_user *u, char *shell,
                         size_t shell_len, struct strs *argv, struct strs *env,
                         const char **cwd, char *err, size_t errlen)
{
    size_t off = 0;
    const char *magic = next(s, &off), *flags = next(s, &off), *user = next(s, &off);
    *cwd = next(s, &off);
    if (!magic || strcmp(magic, ABXL_SUDO_MAGIC) != 0 || !flags || !user || !*cwd)
        return "a request this envd does not understand";
    struct passwd pw, *res = NULL;
    char pbuf[4096], me[64];
    if (getpwuid_r(s->peer, &pw, pbuf, sizeof pbuf, &res) != 0 || res == NULL ||
        snprintf(me, sizeof me, "%s", pw.pw_name) >= (int)sizeof me)
        return "you do not exist in the passwd database";
    gid_t my_gid = pw.pw_gid;
    if (s->peer != 0 && strcmp(me, abxl_envd_cfg.default_user) != 0) {
        snprintf(err, errlen, "%s is not in the sudoers file (only root and %s may sudo "
                 "here)", me, abxl_envd_cfg.default_user);
        return err;
    }
    if (abxl_envd_user_lookup(*user ? user : "root", u, err, errlen) != 0)
        return err;
    if (getpwnam_r(u->name, &pw, pbuf, sizeof pbuf, &res) != 0 || res == NULL)
        return "the target user vanished";
    snprintf(shell, shell_len, "%s", pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
    bool keep = strchr(flags, 'E') != NULL;
    bool login = strchr(flags, 'i') != NULL, sh = login || strchr(flags, 's') != NULL;
    const char *v, *term = NULL;
    while ((v = next(s, &off)) != NULL && *v) {
        if (strncmp(v, "TERM=", 5) == 0)
            term = v + 5;
        if (keep && !sudo_sets(v))
            push(env, strdup(v));
    }
    if (v == NULL)
        return "a request this envd does not understand";
    char num[32];
    static const char *const set[] = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "SUDO_USER"};
    const char *val[] = {SECURE_PATH, u->home, u->name, u->name, shell, me};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        push(env, joined(set[i], val[i]));
    snprintf(num, sizeof num, "%u", (unsigned)s->peer);
    push(env, joined("SUDO_UID", num));
    snprintf(num, sizeof num, "%u", (unsigned)my_gid);
    push(env, joined("SUDO_GID", num));
    if (term && !keep)
        push(env, joined("TERM", term));
    size_t cmd_off = off;
    const char *first = next(s, &off);
    if (sh) {
        push(argv, strdup(shell));
        if (login)
            push(argv, strdup("-l"));
        if (first) {
            push(argv, strdup("-c"));
            push(argv, shell_words(s, cmd_off));
        }
        if (login)
            *cwd = u->home;
    } else {
        for (off = cmd_off; (v = next(s, &off)) != NULL;)
            push(argv, strdup(v));
    }
    if (argv->n == 0)
        return "no command";
    push(env, joined("SUDO_COMMAND", argv->v[0]));
    if (argv->full || env->full)
        return "out of memory, or more than 4096 arguments or variables";
    return "";
}

/* Runs the command and relays until it ends; the client gets its status. */
static void serve(struct session *s)
{
    struct abxl_envd_user u;
    struct abxl_envd_spawn sp;
    struct abxl_envd_child ch;
    struct strs argv = {.n = 0}, env = {.n = 0};
    char shell[256], err[512];
    const char *cwd;
    cJSON *args = NULL;
    const char *why = parse(s, &u, shell, sizeof shell, &argv, &env, &cwd, err, sizeof err);
    if (*why) {
        refuse(s->sock, why);
        goto out;
    }
    args = cJSON_CreateArray();
    for (int i = 1; args && i < argv.n; i++)
        if (!cJSON_AddItemToArray(args, cJSON_CreateString(argv.v[i]))) {
            cJSON_Delete(args);
            args = NULL;
        }
    if (args == NULL) {
        refuse(s->sock, "out of memory");
        goto out;
    }
    memset(&sp, 0, sizeof sp);
    sp.cmd = argv.v[0];
    sp.args = args;
    sp.cwd = cwd;
    sp.user = &u;
    sp.stdio = s->stdio;
    sp.env = env.v;
    if (abxl_envd_spawn(&sp, &ch, err, sizeof err) != 0) {
        /* sudo's words for a command that is not there */
        if (strncmp(err, "exec: ", 6) == 0 && strstr(err, "not found"))
            snprintf(err, sizeof err, "%s: command not found", argv.v[0]);
        refuse(s->sock, err);
        goto out;
    }
    for (int i = 0; i < 3; i++) {   /* the command has them now */
        close(s->stdio[i]);
        s->stdio[i] = -1;
    }
    int status = SIGKILL, ended = 0, gone = 0;
    while (!ended) {
        struct pollfd p[2] = {{ch.ctl_fd, POLLIN, 0}, {gone ? -1 : s->sock, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents) {
            int got = abxl_envd_keeper_read(ch.ctl_fd, &status, 0);
            ended = got != 0;
            if (got < 0)
                status = SIGKILL;
        }
        if (!ended && !gone && p[1].revents) {
            char m[1 + sizeof(int)];
            ssize_t n = recv(s->sock, m, sizeof m, MSG_DONTWAIT);
            int sig;
            if (n == (ssize_t)sizeof m && m[0] == 'S' &&
                (memcpy(&sig, m + 1, sizeof sig), sig > 0 && sig < NSIG)) {
                kill(-ch.pid, sig);
            } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                /* The client is gone: so is everything it asked for. */
                abxl_envd_keeper_end(ch.keeper);
                gone = 1;
            }
        }
    }
    char m[1 + sizeof(int)] = {'X'};
    memcpy(m + 1, &status, sizeof status);
    if (!gone && send(s->sock, m, sizeof m, MSG_NOSIGNAL) < 0) {
        /* the client left as the command ended */
    }
    close(s->sock);
    s->sock = -1;
    /* What the command left running lives on, as after a Process/Start,
     * and no longer counts against the sudo commands running. */
    uncount(s);
    abxl_envd_keeper_release(ch.keeper, ch.ctl_fd, 0);
out:
    cJSON_Delete(args);
    strs_free(&argv);
    strs_free(&env);
}

/* Reads the request and the client's descriptors off a new connection. */
static int receive(struct session *s)
{
    union {
        char b[CMSG_SPACE(3 * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } ctl;
    int creds = 0;
    struct iovec iov = {s->buf, ABXL_SUDO_MAX};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                       .msg_controllen = sizeof ctl.b};
    ssize_t n = recvmsg(s->sock, &m, MSG_CMSG_CLOEXEC);
    int nfd = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
            struct ucred uc;
            memcpy(&uc, CMSG_DATA(c), sizeof uc);
            s->peer = uc.uid;
            creds = 1;
        }
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfd < 3)
                    s->stdio[nfd++] = fd;
                else
                    close(fd);
            }
        }
    }
    if (n <= 0 || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || nfd != 3 || !creds)
        return -1;
    s->len = (size_t)n;
    return 0;
}

/* Reads and drops a request (its descriptors closed), so that the
 * refusal that follows reaches the client: a socket closed with a
 * request unread resets the connection, and the answer with it. */
static void drain(int c)
{
    char buf[512];
    union {
        char b[CMSG_SPACE(8 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {buf, sizeof buf};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                       .msg_controllen = sizeof ctl.b};
    struct pollfd p = {c, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0 || recvmsg(c, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) < 0)
        return;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
                close(fd);
            }
}

static void *session_main(void *arg)
{
    struct session *s = arg;
    if (receive(s) != 0)
        refuse(s->sock, "a request this envd does not understand (or no descriptors)");
    else
        serve(s);
    session_free(s);
    return NULL;
}

static void *accept_main(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
                errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                usleep(10000);
                continue;
            }
            abxl_log(ABXL_LOG_ERROR, "sudo service: accept: %s", strerror(errno));
            return NULL;
        }
        struct session *s = calloc(1, sizeof *s);
        int on = 1;
        /* Who is asking: SCM_CREDENTIALS, which the kernel checks against
         * the sender's ids (gVisor's SO_PEERCRED names the listener). A
         * client that connects and says nothing is let go after 10 s. */
        struct timeval tv = {10, 0};
        setsockopt(c, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        pthread_mutex_lock(&mu);
        bool room = s != NULL && sessions < MAX_SESSIONS;
        sessions += room;
        pthread_mutex_unlock(&mu);
        if (!room) {
            drain(c);
            refuse(c, s ? "too many sudo commands at once (32)" : "out of memory");
            close(c);
            free(s);
            continue;
        }
        s->counted = true;
        s->sock = c;
        s->stdio[0] = s->stdio[1] = s->stdio[2] = -1;
        s->buf = malloc(ABXL_SUDO_MAX);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* A client's request is read on its own thread: a slow one holds
         * nobody else up. */
        if (s->buf == NULL || pthread_create(&t, &attr, session_main, s) != 0) {
            refuse(c, "cannot serve the request now");
            session_free(s);
        }
        pthread_attr_destroy(&attr);
    }
}

int abxl_envd_sudo_start(char *err, size_t errlen)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", ABXL_SUDO_SOCKET);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    unlink(ABXL_SUDO_SOCKET);   /* a previous boot's */
    /* Anyone may connect; SO_PEERCRED decides who is served. */
    mode_t old = umask(0111);
    int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&a, sizeof a);
    umask(old);
    pthread_t t;
    int on = 1;
    if (rc != 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 ||
        listen(fd, SOMAXCONN) != 0 ||
        pthread_create(&t, NULL, accept_main, (void *)(intptr_t)fd) != 0) {
        snprintf(err, errlen, "sudo service on %s: %s", ABXL_SUDO_SOCKET, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    pthread_detach(t);
    return 0;
}
