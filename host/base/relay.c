/* Process-wide masking of stray output. At start-up fd 1 and 2 become
 * pipes; abx_out keeps writing to private copies of the real stdout and
 * stderr, and a relay thread feeds whatever else lands on fd 1/2 (a child
 * of os.execute, a C library, a Lua state's print in exec mode) through
 * abx_out, hence through the masker. Nothing reaches the terminal raw. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "out.h"

static int g_real[3] = {-1, -1, -1};   /* private copies of fd 1, 2 */
static int g_read[3] = {-1, -1, -1};   /* read ends of the fd 1/2 pipes */
static int g_tty[3];
static pthread_t g_thread;
static int g_running;
/* Held by the relay thread while it masks and writes (malloc, the masker's
 * and abx_out's locks). fork() takes it first, so a child never inherits
 * one of those locks held by a thread that does not exist there. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static sem_t g_ready;  /* the thread is past its start-up allocations */

static void before_fork(void) { pthread_mutex_lock(&g_mu); }
static void after_fork(void) { pthread_mutex_unlock(&g_mu); }

int abx_stdout_isatty(void) { return g_running ? g_tty[1] : isatty(1); }

/* While relaying, fd 1 is our pipe: ask the real stdout for its size. */
int abx_stdout_columns(void)
{
    struct winsize ws;
    int fd = g_running && g_real[1] >= 0 ? g_real[1] : 1;

    if (ioctl(fd, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

static void *relay(void *arg)
{
    struct pollfd p[2];
    char buf[16384];
    int open = 2;

    (void)arg;
    sem_post(&g_ready);
    p[0].fd = g_read[1];
    p[1].fd = g_read[2];
    p[0].events = p[1].events = POLLIN;
    while (open > 0) {
        int i;

        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (i = 0; i < 2; i++) {
            ssize_t n;

            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(p[i].fd, buf, sizeof buf);
            if (n > 0) {
                pthread_mutex_lock(&g_mu);
                abx_out_write(i + 1, buf, (size_t)n);
                pthread_mutex_unlock(&g_mu);
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                p[i].fd = -1;  /* poll ignores negative fds */
                open--;
            }
        }
    }
    return NULL;
}

int abx_relay_start(void)
{
    int i, w[3] = {-1, -1, -1}, rc = -1;

    /* Everything that can fail happens before fd 1/2 are touched. */
    for (i = 1; i <= 2; i++) {
        int fds[2];

        g_tty[i] = isatty(i);
        g_real[i] = fcntl(i, F_DUPFD_CLOEXEC, 3);
        if (g_real[i] < 0 || pipe2(fds, O_CLOEXEC) != 0)
            goto out;
        g_read[i] = fds[0];
        w[i] = fds[1];
    }
    if (sem_init(&g_ready, 0, 0) != 0 ||
        pthread_atfork(before_fork, after_fork, after_fork) != 0 ||
        pthread_create(&g_thread, NULL, relay, NULL) != 0)
        goto out;
    while (sem_wait(&g_ready) != 0 && errno == EINTR)
        ;
    for (i = 1; i <= 2; i++) {
        abx_out_set_fd(i, g_real[i]);
        dup2(w[i], i);  /* fd 1/2 now feed the relay (not CLOEXEC) */
    }
    g_running = 1;
    rc = 0;
out:
    for (i = 1; i <= 2; i++) {
        if (w[i] >= 0)
            close(w[i]);
        if (rc != 0) {
            if (g_real[i] >= 0)
                close(g_real[i]);
            if (g_read[i] >= 0)
                close(g_read[i]);  /* the thread, if any, sees EOF */
            g_real[i] = g_read[i] = -1;
        }
    }
    return rc;
}

void abx_relay_stop(void)
{
    struct timespec deadline;
    int i;
    void *ret;

    if (!g_running)
        return;
    /* Point fd 1/2 back at the real files: our write ends close, and the
     * relay sees EOF unless a stray grandchild still holds one. The join
     * returns as soon as the thread ends (no polling), at most 1 s. */
    for (i = 1; i <= 2; i++)
        dup2(g_real[i], i);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    if (pthread_timedjoin_np(g_thread, &ret, &deadline) == 0)
        g_running = 0;
    abx_out_flush();
}

/* In a forked child: stdout/stderr are about to be replaced; drop the
 * parent's private copies so only the parent writes to the terminal. */
void abx_relay_child(void)
{
    int i;

    for (i = 1; i <= 2; i++) {
        abx_out_set_fd(i, -1);
        if (g_real[i] >= 0)
            close(g_real[i]);
        if (g_read[i] >= 0)
            close(g_read[i]);
        g_real[i] = g_read[i] = -1;
    }
    g_running = 0;
}

/* The real stdout/stderr behind the relay (the fd itself when not
 * relaying): for a child that must write past the relay (the guardian). */
int abx_relay_real_fd(int chan)
{
    return g_running && (chan == 1 || chan == 2) && g_real[chan] >= 0
               ? g_real[chan]
               : chan;
}
