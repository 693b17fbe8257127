/* Egress as FC filters it (--vary egress=fc), for a sandbox created with
 * internet access off.
 *
 * FC filters by domain on ports 80 and 443 only, and documents that a
 * denied TCP connection may still appear connected. abx-local gives a
 * sandbox no way out at all, so this happens inside its own network
 * namespace, which keeps only loopback:
 *   - a default route through lo, from 127.0.0.1, so a connect to any
 *     address reaches netfilter instead of failing with "network
 *     unreachable" in the route lookup;
 *   - nftables (libnftables): TCP to 80 or 443 of an address outside
 *     127.0.0.0/8 is redirected to a listener abx-local holds there;
 *     everything else outside 127.0.0.0/8 is rejected (a TCP reset, so a
 *     refused connect);
 *   - the listener never accepts: the kernel completes at most its backlog
 *     of handshakes, whose peers then read nothing, each with a small
 *     receive buffer, so a sandbox cannot make it hold more.
 * No interface but lo exists, so no packet can leave the namespace.
 * Sandbox processes cannot bind the listener's port: it is below 1024 and
 * they have no CAP_NET_BIND_SERVICE (docs/security.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "sandbox.h"

#define EGRESS_PORT 1023
#define EGRESS_BACKLOG 8
#define EGRESS_RCVBUF 4096

/* libnftables keeps process-wide state in its context set-up. */
static pthread_mutex_t nft_lock = PTHREAD_MUTEX_INITIALIZER;

#define STR2(x) #x
#define STR(x) STR2(x)
static const char rules[] =
    "table ip abx_egress {\n"
    "  chain to_listener {\n"
    "    type nat hook output priority -100; policy accept;\n"
    "    ip daddr != 127.0.0.0/8 tcp dport { 80, 443 } redirect to :" STR(EGRESS_PORT) "\n"
    "  }\n"
    "  chain refused {\n"
    "    type filter hook output priority 0; policy accept;\n"
    "    ip daddr != 127.0.0.0/8 meta l4proto tcp reject with tcp reset\n"
    "    ip daddr != 127.0.0.0/8 reject\n"
    "  }\n"
    "}\n";

/* RTM_NEWROUTE: default dev lo src 127.0.0.1. */
static int add_route(char *err, size_t errlen)
{
    char buf[8192];   /* MNL_SOCKET_BUFFER_SIZE is a page, at most 8 KiB */
    int rc = -1;
    unsigned lo = if_nametoindex("lo");
    struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
    if (lo == 0 || nl == NULL || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        snprintf(err, errlen, "egress: no loopback or netlink socket: %s", strerror(errno));
        goto out;
    }
    unsigned seq = (unsigned)time(NULL);
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWROUTE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
    nlh->nlmsg_seq = seq;
    struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof *rtm);
    rtm->rtm_family = AF_INET;
    rtm->rtm_table = RT_TABLE_MAIN;
    rtm->rtm_protocol = RTPROT_STATIC;
    rtm->rtm_scope = RT_SCOPE_LINK;
    rtm->rtm_type = RTN_UNICAST;
    struct in_addr src = {htonl(INADDR_LOOPBACK)};
    mnl_attr_put_u32(nlh, RTA_OIF, lo);
    mnl_attr_put(nlh, RTA_PREFSRC, sizeof src, &src);
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
        goto fail;
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0 || mnl_cb_run(buf, (size_t)n, seq, mnl_socket_get_portid(nl), NULL, NULL) < 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    snprintf(err, errlen, "egress: cannot add the namespace's route: %s", strerror(errno));
out:
    if (nl)
        mnl_socket_close(nl);
    return rc;
}

static int add_rules(char *err, size_t errlen)
{
    pthread_mutex_lock(&nft_lock);
    int rc = -1;
    struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
    if (nft == NULL) {
        snprintf(err, errlen, "egress: cannot start libnftables");
        goto out;
    }
    nft_ctx_buffer_output(nft);
    nft_ctx_buffer_error(nft);
    if (nft_run_cmd_from_buffer(nft, rules) != 0) {
        const char *why = nft_ctx_get_error_buffer(nft);
        if (why == NULL || why[0] == '\0')
            why = "no reason given\n";
        snprintf(err, errlen, "egress: nftables refused the rules (is nf_tables in this "
                 "kernel?): %.*s", (int)strcspn(why, "\n"), why);
        goto out;
    }
    rc = 0;
out:
    if (nft)
        nft_ctx_free(nft);
    pthread_mutex_unlock(&nft_lock);
    return rc;
}

static int add_listener(int *out, char *err, size_t errlen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1, rcvbuf = EGRESS_RCVBUF;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(EGRESS_PORT),
                            .sin_addr = {htonl(INADDR_LOOPBACK)}};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, EGRESS_BACKLOG) != 0) {
        snprintf(err, errlen, "egress: cannot listen on 127.0.0.1:%d: %s", EGRESS_PORT,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *out = fd;
    return 0;
}

int abxl_egress_boot(struct abxl_sbx *s, char *err, size_t errlen)
{
    /* A boot's namespace is new: the last boot's listener is in the old. */
    if (s->egress_fd >= 0) {
        close(s->egress_fd);
        s->egress_fd = -1;
    }
    if (s->allow_internet || abxl_vary(ABXL_V_EGRESS) == 0)
        return 0;
    if (abxl_nsnet_enter(s->netns_fd) != 0) {
        snprintf(err, errlen, "egress: cannot enter the sandbox's network namespace: %s",
                 strerror(errno));
        return -1;
    }
    int rc = -1;
    if (add_route(err, errlen) == 0 && add_rules(err, errlen) == 0 &&
        add_listener(&s->egress_fd, err, errlen) == 0)
        rc = 0;
    abxl_nsnet_leave();
    return rc;
}
