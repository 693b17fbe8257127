/* The sweeper (abx_sweep_run) against a fake control plane on a loopback
 * port: ledger ids are killed before the first listing, tag-only ids are
 * found and killed, kept ids are skipped in both phases, 404 counts as
 * gone, a failed delete is retried in a later round, a delete that never
 * succeeds is reported as left when the budget runs out, and a failing
 * listing is an error. Kill lines land in the ledger. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api.h"
#include "check.h"
#include "http.h"
#include "ledger.h"
#include "sweep.h"

struct fsbx {
    char id[32], run[32], session[32];
    int alive, fail_deletes;
};

static struct fsbx g_sb[32];
static int g_nsb, g_list_fails;
static char g_log[16384];   /* "DELETE id\n" / "LIST run\n" in order */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void add_sb(const char *id, const char *run, int alive, int fails)
{
    struct fsbx *s = &g_sb[g_nsb++];

    snprintf(s->id, sizeof s->id, "%s", id);
    snprintf(s->run, sizeof s->run, "%s", run);
    s->alive = alive;
    s->fail_deletes = fails;
}

static struct fsbx *find_sb(const char *id)
{
    int i;

    for (i = 0; i < g_nsb; i++)
        if (strcmp(g_sb[i].id, id) == 0)
            return &g_sb[i];
    return NULL;
}

static void logf_(const char *what, const char *arg)
{
    size_t n = strlen(g_log);

    snprintf(g_log + n, sizeof g_log - n, "%s %s\n", what, arg);
}

static void reply(int fd, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n", status, strlen(body));

    if (write(fd, head, (size_t)n) != n ||
        write(fd, body, strlen(body)) != (ssize_t)strlen(body))
        return;
}

/* The value after key in s, up to '&', "%26" or the end, into out. */
static void query_value(const char *s, const char *key, char *out,
                        size_t outlen)
{
    const char *m = s ? strstr(s, key) : NULL;
    size_t k = 0;

    out[0] = '\0';
    if (!m)
        return;
    m += strlen(key);
    while (m[k] && m[k] != '&' && m[k] != ' ' && strncmp(m + k, "%26", 3) &&
           k < outlen - 1) {
        out[k] = m[k];
        k++;
    }
    out[k] = '\0';
}

/* "GET /v2/sandboxes?metadata=e2e%3DRUN[%26e2e_session%3DS]&state=..."
 * -> the alive ones tagged RUN (and S). */
static void handle_list(int fd, const char *path)
{
    char run[64], session[64], body[8192] = "[";
    size_t k;
    int i, first = 1;

    query_value(path, "metadata=e2e%3D", run, sizeof run);
    query_value(path, "e2e_session%3D", session, sizeof session);
    logf_("LIST", run);
    if (g_list_fails) {
        reply(fd, 500, "{\"code\":500,\"message\":\"list broken\"}");
        return;
    }
    for (i = 0; i < g_nsb; i++) {
        size_t n = strlen(body);
        if (!g_sb[i].alive || strcmp(g_sb[i].run, run) != 0 ||
            (session[0] && strcmp(g_sb[i].session, session) != 0))
            continue;
        snprintf(body + n, sizeof body - n,
                 "%s{\"sandboxID\":\"%s\",\"templateID\":\"base\","
                 "\"state\":\"running\",\"startedAt\":"
                 "\"2026-01-01T00:00:00Z\",\"metadata\":{\"e2e\":\"%s\"}}",
                 first ? "" : ",", g_sb[i].id, g_sb[i].run);
        first = 0;
    }
    k = strlen(body);
    snprintf(body + k, sizeof body - k, "]");
    reply(fd, 200, body);
}

static void handle_delete(int fd, const char *id)
{
    struct fsbx *s = find_sb(id);

    logf_("DELETE", id);
    if (!s || !s->alive) {
        reply(fd, 404, "{\"code\":404,\"message\":\"not found\"}");
    } else if (s->fail_deletes > 0) {
        s->fail_deletes--;
        reply(fd, 500, "{\"code\":500,\"message\":\"delete broken\"}");
    } else {
        s->alive = 0;
        reply(fd, 204, "");
    }
}

static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[8192];
    size_t len = 0;

    for (;;) {
        char *end, method[16], path[4096];
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        while ((end = strstr(buf, "\r\n\r\n"))) {
            size_t used = (size_t)(end + 4 - buf);
            if (sscanf(buf, "%15s %4095s", method, path) == 2) {
                pthread_mutex_lock(&g_mu);
                if (strcmp(method, "GET") == 0 &&
                    strncmp(path, "/v2/sandboxes", 13) == 0)
                    handle_list(fd, path);
                else if (strcmp(method, "DELETE") == 0 &&
                         strncmp(path, "/sandboxes/", 11) == 0)
                    handle_delete(fd, path + 11);
                else
                    reply(fd, 400, "{\"code\":400,\"message\":\"?\"}");
                pthread_mutex_unlock(&g_mu);
            }
            memmove(buf, buf + used, len - used);
            len -= used;
            buf[len] = '\0';
        }
    }
    close(fd);
    return NULL;
}

static void *accept_main(void *arg)
{
    int lfd = (int)(intptr_t)arg;

    for (;;) {
        pthread_t t;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        if (pthread_create(&t, NULL, conn_main, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
    return NULL;
}

static int start_server(void)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    pthread_t t;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0 ||
        pthread_create(&t, NULL, accept_main, (void *)(intptr_t)fd) != 0)
        return -1;
    pthread_detach(t);
    return ntohs(a.sin_port);
}

static int alive(const char *id)
{
    struct fsbx *s;
    int v;

    pthread_mutex_lock(&g_mu);
    s = find_sb(id);
    v = s && s->alive;
    pthread_mutex_unlock(&g_mu);
    return v;
}

static int count_lines(const char *path, const char *line)
{
    FILE *f = fopen(path, "r");
    char buf[512];
    int n = 0;

    if (!f)
        return -1;
    while (fgets(buf, sizeof buf, f))
        n += strcmp(buf, line) == 0;
    fclose(f);
    return n;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    struct abx_platform p;
    struct abx_sweep_report r;
    char url[64], err[512], dir[] = "/tmp/abx-sweep-XXXXXX", ledger[128];
    const char *first_list;
    int port = start_server();

    CHECK(port > 0);
    if (port <= 0 || !mkdtemp(dir))
        return CHECK_DONE();
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    CHECK_INT(abx_platform_init(&p, "test-key-123456", url, "localhost",
                                NULL, err, sizeof err), 0);
    p.request_timeout = 5;

    /* 1. ledger + tag, kept ids, 404s, one failing delete */
    add_sb("sa", "R", 1, 0);   /* ledger, alive */
    add_sb("sb", "R", 1, 0);   /* ledger, kept */
    add_sb("sc", "R", 0, 0);   /* ledger, killed before */
    add_sb("sf", "R", 1, 1);   /* ledger, first delete fails */
    add_sb("se", "R", 1, 0);   /* tag only */
    add_sb("sk", "R", 1, 0);   /* tag, kept by a ledger keep line */
    add_sb("sx", "OTHER", 1, 0);  /* another run: untouched */
    snprintf(ledger, sizeof ledger, "%s/R.ledger", dir);
    write_file(ledger, "create sa 1 t::a\ncreate sb 1 t::b\nkeep sb\n"
                       "create sc 1 t::c\nkill sc\ncreate sd 1 t::d\n"
                       "create sf 1 t::f\ncreate sk 1 t::k\nkeep sk\n"
                       "create torn");
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "R", NULL, ledger, 20, &r), 0);
    CHECK_INT(r.from_ledger, 3);  /* sa sd sf */
    CHECK_INT(r.from_tag, 1);     /* se */
    CHECK_INT(r.killed, 3);       /* sa sf se */
    CHECK_INT(r.gone, 1);         /* sd */
    CHECK_INT(r.kept, 2);         /* sb sk */
    CHECK_INT(r.errors, 0);
    CHECK_INT(r.left, 0);
    if (r.log.len)
        fprintf(stderr, "log: %s", abx_buf_cstr(&r.log));
    abx_sweep_report_free(&r);
    CHECK(!alive("sa") && !alive("sf") && !alive("se"));
    CHECK(alive("sb") && alive("sk") && alive("sx"));
    /* ledger ids go before the first listing; kept ones never */
    first_list = strstr(g_log, "LIST R\n");
    CHECK(first_list != NULL);
    CHECK(strstr(g_log, "DELETE sa\n") < first_list);
    CHECK(strstr(g_log, "DELETE sd\n") < first_list);
    CHECK(strstr(g_log, "DELETE se\n") > first_list);
    CHECK(strstr(g_log, "DELETE sb\n") == NULL);
    CHECK(strstr(g_log, "DELETE sk\n") == NULL);
    CHECK(strstr(g_log, "DELETE sx\n") == NULL);
    CHECK(strstr(g_log, "DELETE sc\n") == NULL);  /* killed before */
    CHECK_INT(count_lines(ledger, "kill sa sweep\n"), 1);
    CHECK_INT(count_lines(ledger, "kill sd sweep\n"), 1);
    CHECK_INT(count_lines(ledger, "kill sf sweep\n"), 1);
    CHECK_INT(count_lines(ledger, "kill se sweep\n"), 1);
    CHECK_INT(count_lines(ledger, "kill sb sweep\n"), 0);
    CHECK_INT(count_lines(ledger, "create torn\n"), 1);  /* torn: ended */

    /* 2. a delete that never succeeds: left when the budget runs out */
    add_sb("sg", "G", 1, 1000000);
    snprintf(ledger, sizeof ledger, "%s/G.ledger", dir);
    write_file(ledger, "create sg 1 t::g\n");
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "G", NULL, ledger, 1.5, &r), -1);
    CHECK_INT(r.left, 1);
    CHECK(r.errors >= 1);
    CHECK(strstr(abx_buf_cstr(&r.log), "sg: ") != NULL);
    abx_sweep_report_free(&r);
    CHECK(alive("sg"));

    /* 3. the listing fails: an error naming it, even with nothing to kill */
    g_list_fails = 1;
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "L", NULL, NULL, 1, &r), -1);
    CHECK(strstr(abx_buf_cstr(&r.log), "list e2e=L") != NULL);
    abx_sweep_report_free(&r);
    g_list_fails = 0;

    /* 4. tag only (no ledger), and a bad run id */
    add_sb("st", "T", 1, 0);
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "T", NULL, NULL, 10, &r), 0);
    CHECK_INT(r.from_tag, 1);
    CHECK_INT(r.killed, 1);
    abx_sweep_report_free(&r);
    CHECK(!alive("st"));
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "../x", NULL, NULL, 1, &r), -1);
    CHECK(strstr(abx_buf_cstr(&r.log), "invalid run id") != NULL);
    abx_sweep_report_free(&r);

    /* 5. a session's sweep leaves the run's other sessions alone (shards
     * of one pipeline share a run id; each sweeps only its own) */
    add_sb("s1", "S", 1, 0);
    add_sb("s2", "S", 1, 0);
    snprintf(g_sb[g_nsb - 2].session, sizeof g_sb[0].session, "one");
    snprintf(g_sb[g_nsb - 1].session, sizeof g_sb[0].session, "two");
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "S", "one", NULL, 10, &r), 0);
    CHECK_INT(r.from_tag, 1);
    abx_sweep_report_free(&r);
    CHECK(!alive("s1") && alive("s2"));
    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(&p, "S", NULL, NULL, 10, &r), 0);  /* janitor */
    abx_sweep_report_free(&r);
    CHECK(!alive("s2"));

    abx_http_shutdown();
    snprintf(url, sizeof url, "rm -rf %s", dir);
    if (system(url) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return CHECK_DONE();
}
