/* Sockets inside a sandbox's network namespace.
 *
 * The sandbox has only loopback, so the server reaches its ports by
 * creating the socket in that namespace: setns() is per thread, so the
 * calling thread enters the namespace, creates the socket and goes back. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "sandbox.h"

static int host_netns = -1;

int abxl_nsnet_init(void)
{
    host_netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    return host_netns >= 0 ? 0 : -1;
}

int abxl_nsnet_enter(int netns_fd)
{
    return setns(netns_fd, CLONE_NEWNET);
}

void abxl_nsnet_leave(void)
{
    int saved = errno;
    if (setns(host_netns, CLONE_NEWNET) != 0) {
        /* A thread stuck in a sandbox's namespace would leak traffic
         * between sandboxes: better to stop. */
        abxl_log(ABXL_LOG_FATAL, "cannot return to the host network namespace");
        abort();
    }
    errno = saved;
}

static curl_socket_t open_in_ns(void *clientp, curlsocktype purpose,
                                struct curl_sockaddr *a)
{
    (void)purpose;
    if (abxl_nsnet_enter((int)(intptr_t)clientp) != 0)
        return CURL_SOCKET_BAD;
    int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    abxl_nsnet_leave();
    return fd < 0 ? CURL_SOCKET_BAD : fd;
}

void abxl_nsnet_setup(void *curl, int netns_fd)
{
    curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_in_ns);
    curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, (void *)(intptr_t)netns_fd);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
}

static size_t sink(char *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

int abxl_nsnet_probe(int netns_fd, int port, const char *path, long timeout_ms)
{
    CURL *c = curl_easy_init();
    if (c == NULL)
        return -1;
    char url[700];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path[0] == '/' ? path : "/");
    abxl_nsnet_setup(c, netns_fd);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    int status = -1;
    if (curl_easy_perform(c) == CURLE_OK) {
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        status = (int)code;
    }
    curl_easy_cleanup(c);
    return status;
}
