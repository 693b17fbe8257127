/* The HTTP engine: one curl multi + share per process, the pump that
 * drives every transfer, the retry policy (jittered exponential backoff,
 * re-adding a transfer once its delay passed) and the trace lines. The
 * transfer itself (easy handle, callbacks, files) is in http_xfer.c. */
#include "http_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "curl_lazy.h"
#include "out.h"

#ifndef ABX_VERSION
#define ABX_VERSION "dev"
#endif

#define SLICE 0.1   /* s: the cancel hook runs at least this often */

struct engine {
    CURLM *multi;
    CURLSH *share;
    struct abx_http_xfer *head;
};

static struct engine *eng;
static unsigned eng_gen = 1;
static int curl_ready;
static int (*cancel_fn)(void);
static char ua_buf[256] = "abx-e2e/" ABX_VERSION;
static struct abx_http_cfg cfg = {
    .connect_timeout = 10,
    .low_speed_time = 60,
    .low_speed_limit = 1,
    .max_retries = 3,
    .backoff_base = 0.2,
    .backoff_max = 5,
    .trace = 0,
    .user_agent = ua_buf,
};
static unsigned long long rng;

double abx_http_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void abx_http_configure(const struct abx_http_cfg *c)
{
    if (c->connect_timeout > 0)
        cfg.connect_timeout = c->connect_timeout;
    if (c->low_speed_time > 0)
        cfg.low_speed_time = c->low_speed_time;
    if (c->low_speed_limit > 0)
        cfg.low_speed_limit = c->low_speed_limit;
    if (c->max_retries > 0)
        cfg.max_retries = c->max_retries;
    if (c->backoff_base > 0)
        cfg.backoff_base = c->backoff_base;
    if (c->backoff_max > 0)
        cfg.backoff_max = c->backoff_max;
    cfg.trace = c->trace;   /* a flag: 0 is its default and "off" */
    if (c->user_agent && c->user_agent[0])
        snprintf(ua_buf, sizeof ua_buf, "%s", c->user_agent);
}

void abx_http_set_cancel(int (*fn)(void))
{
    cancel_fn = fn;
}

static struct engine *engine(struct abx_err *err)
{
    if (eng)
        return eng;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            goto fail;
        curl_ready = 1;
    }
    eng = calloc(1, sizeof *eng);
    if (eng == NULL)
        goto fail;
    eng->multi = curl_multi_init();
    eng->share = curl_share_init();
    if (eng->multi == NULL || eng->share == NULL)
        goto fail;
    curl_share_setopt(eng->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(eng->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(eng->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    return eng;
fail:
    if (eng) {
        if (eng->multi)
            curl_multi_cleanup(eng->multi);
        if (eng->share)
            curl_share_cleanup(eng->share);
        free(eng);
        eng = NULL;
    }
    if (abx_curl_load_error())
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "cannot start the HTTP engine: %s (install "
                    "libcurl4)", abx_curl_load_error());
    else
        abx_err_set(err, ABX_E_SANDBOX, 0, "", "cannot start the HTTP engine");
    return NULL;
}

void abx_http_after_fork(void)
{
    /* The parent's sockets and TLS state stay the parent's: closing them
     * here could send a TLS close_notify on its connections. Leak. */
    eng = NULL;
    eng_gen++;
    rng = 0;
}

static void unlink_xfer(struct abx_http_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else if (eng && eng->head == x)
        eng->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
}

static int live(const struct abx_http_xfer *x)
{
    return eng != NULL && x->gen == eng_gen;
}

void abx_http_shutdown(void)
{
    if (eng == NULL)
        return;
    while (eng->head) {
        struct abx_http_xfer *x = eng->head;
        if (x->state == ABX_HTTPX_RUNNING)
            curl_multi_remove_handle(eng->multi, x->easy);
        unlink_xfer(x);
        abx_httpx_free(x, 1);
    }
    curl_multi_cleanup(eng->multi);
    curl_share_cleanup(eng->share);
    free(eng);
    eng = NULL;
    eng_gen++;
}

void abx_http_resp_init(struct abx_http_resp *r)
{
    memset(r, 0, sizeof *r);
    abx_buf_init(&r->body, ABX_BUF_DEFAULT_MAX);
    abx_buf_init(&r->headers, ABX_HTTP_HEADERS_MAX);
}

void abx_http_resp_free(struct abx_http_resp *r)
{
    abx_buf_free(&r->body);
    abx_buf_free(&r->headers);
}

static double jitter(void)
{
    if (rng == 0)
        rng = ((unsigned long long)time(NULL) << 20) ^
              (unsigned long long)getpid() ^ 0x9E3779B97F4A7C15ull;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;   /* [0, 1) */
}

/* Connection never made: nothing was sent, so any request may retry. */
static int connect_failed(const struct abx_http_xfer *x)
{
    long sent = 0;
    switch (x->result) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return 1;
    case CURLE_OPERATION_TIMEDOUT:
        /* Connect time is 0 on a reused connection too: ask whether the
         * request went out instead. */
        curl_easy_getinfo(x->easy, CURLINFO_REQUEST_SIZE, &sent);
        return sent == 0 && x->status == 0;
    default:
        return 0;
    }
}

/* A reply lost after the request went out: only idempotent requests
 * may repeat it. */
static int reply_lost(const struct abx_http_xfer *x)
{
    switch (x->result) {
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
        return x->status == 0;
    default:
        return 0;
    }
}

static int should_retry(const struct abx_http_xfer *x)
{
    if (x->failed || x->no_retry || x->sink_fed ||
        x->attempts > x->max_retries)
        return 0;
    if (x->result == CURLE_OK)
        return abx_httpx_status_retryable(x, x->status);
    return connect_failed(x) || (x->idempotent && reply_lost(x));
}

static void trace_attempt(struct abx_http_xfer *x, double delay)
{
    char url[2048], what[96];
    int ok = x->result == CURLE_OK && !x->failed;

    if (!cfg.trace && x->trace == NULL)
        return;
    abx_url_redact(x->url, url, sizeof url);
    if (ok)
        snprintf(what, sizeof what, "%ld", x->status);
    else
        snprintf(what, sizeof what, "error (%s)",
                 x->failed ? abx_errclass_name(x->err.cls)
                           : curl_easy_strerror(x->result));
    abx_httpx_trace_emit(x, url, ok ? NULL : what, delay);
    if (!cfg.trace)
        return;
    if (delay >= 0)
        abx_out_printf(ABX_OUT_STDERR,
                       "http: %s %s -> %s %.1f ms (retry %d in %.2f s)\n",
                       x->method, url, what, x->seconds * 1000,
                       x->attempts, delay);
    else
        abx_out_printf(ABX_OUT_STDERR, "http: %s %s -> %s %.1f ms\n",
                       x->method, url, what, x->seconds * 1000);
}

static void on_done(struct abx_http_xfer *x, CURLcode res)
{
    double now = abx_http_now();

    x->result = res;
    x->seconds = now - x->t_attempt;
    curl_multi_remove_handle(eng->multi, x->easy);
    if (should_retry(x)) {
        double d = cfg.backoff_base;
        for (int i = 1; i < x->attempts && d < cfg.backoff_max; i++)
            d *= 2;
        if (d > cfg.backoff_max)
            d = cfg.backoff_max;
        d = d * (0.5 + 0.5 * jitter());   /* jitter: spread the herd */
        trace_attempt(x, d);
        x->state = ABX_HTTPX_BACKOFF;
        x->retry_at = now + d;
        return;
    }
    trace_attempt(x, -1);
    abx_httpx_conclude(x, 0);
}

static int add(struct abx_http_xfer *x)
{
    abx_httpx_reset_attempt(x);
    x->attempts++;
    x->t_attempt = abx_http_now();
    if (curl_multi_add_handle(eng->multi, x->easy) != CURLM_OK) {
        abx_err_set(&x->err, ABX_E_SANDBOX, 0, "",
                    "%s: cannot start the transfer", x->what);
        x->failed = 1;
        abx_httpx_conclude(x, 0);
        return -1;
    }
    x->state = ABX_HTTPX_RUNNING;
    return 0;
}

/* Re-adds transfers whose backoff ended; returns the earliest pending
 * retry time (0 if none). */
static double readd_due(void)
{
    double now = abx_http_now(), next = 0;
    for (struct abx_http_xfer *x = eng->head; x; x = x->next) {
        if (x->state != ABX_HTTPX_BACKOFF)
            continue;
        if (x->retry_at <= now)
            add(x);
        else if (next == 0 || x->retry_at < next)
            next = x->retry_at;
    }
    return next;
}

static int perform(void)
{
    int running = 0, left, acted = 0;
    CURLMsg *m;

    curl_multi_perform(eng->multi, &running);
    while ((m = curl_multi_info_read(eng->multi, &left)) != NULL) {
        struct abx_http_xfer *x = NULL;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        if (x) {
            on_done(x, m->data.result);
            acted = 1;
        }
    }
    return acted;
}

static int pending(void)
{
    int n = 0;
    for (struct abx_http_xfer *x = eng->head; x; x = x->next)
        n += x->state != ABX_HTTPX_DONE;
    return n;
}

/* One round: progress, then wait up to max_wait (capped by the next
 * retry) for socket activity. 1 if anything happened. */
static int slice(double max_wait)
{
    int acted, fds = 0;
    double next = readd_due(), wait = max_wait;

    acted = perform();
    if (next > 0 && next - abx_http_now() < wait)
        wait = next - abx_http_now();
    if (wait > 0 && !acted && pending() > 0) {
        curl_multi_poll(eng->multi, NULL, 0, (int)(wait * 1000) + 1, &fds);
        acted = perform() || fds > 0;
    }
    readd_due();
    return acted;
}

int abx_http_pump(double max_wait)
{
    double until = abx_http_now() + max_wait;

    if (eng == NULL)
        return 0;
    for (;;) {
        double left = until - abx_http_now();
        if (slice(left < SLICE ? (left > 0 ? left : 0) : SLICE) ||
            left <= 0 || pending() == 0)
            break;
        if (cancel_fn && cancel_fn())
            break;
    }
    return pending();
}

struct abx_http_xfer *abx_http_start(const struct abx_http_req *req,
                                     struct abx_err *err)
{
    struct abx_http_xfer *x;

    if (engine(err) == NULL)
        return NULL;
    x = abx_httpx_new(req, &cfg, eng->share, err);
    if (x == NULL)
        return NULL;
    x->gen = eng_gen;
    x->next = eng->head;
    if (eng->head)
        eng->head->prev = x;
    eng->head = x;
    add(x);
    return x;
}

int abx_http_done(const struct abx_http_xfer *x)
{
    return x->state == ABX_HTTPX_DONE;
}

long abx_http_status(const struct abx_http_xfer *x)
{
    return x->status;
}

void abx_http_xfer_fail(struct abx_http_xfer *x, const struct abx_err *err)
{
    if (x->failed)
        return;
    x->err = *err;
    x->failed = 1;
}

int abx_http_check_cancel(struct abx_err *err)
{
    int c = cancel_fn ? cancel_fn() : 0;
    if (c == 2)
        abx_err_set(err, ABX_E_TIMEOUT, 0, "", "test deadline reached");
    else if (c)
        abx_err_set(err, ABX_E_CANCELED, 0, "", "interrupted");
    return c != 0;
}

int abx_http_wait(struct abx_http_xfer *x, double until, struct abx_err *err)
{
    for (;;) {
        if (x->state == ABX_HTTPX_DONE)
            return 1;
        if (!live(x)) {
            abx_err_set(err, ABX_E_CANCELED, 0, "",
                        "%s: transfer belongs to another process", x->what);
            return -1;
        }
        if (abx_http_check_cancel(err))
            return -1;
        double now = abx_http_now(), w = SLICE;
        if (until > 0) {
            if (now >= until)
                return 0;
            if (until - now < w)
                w = until - now;
        }
        slice(w);
    }
}

int abx_http_finish(struct abx_http_xfer *x, struct abx_http_resp *resp,
                    struct abx_err *err)
{
    int rc;

    if (x == NULL)
        return -1;
    if (!live(x)) {
        abx_httpx_free(x, 0);
        abx_err_set(err, ABX_E_CANCELED, 0, "",
                    "transfer belongs to another process");
        return -1;
    }
    if (x->state == ABX_HTTPX_RUNNING)
        curl_multi_remove_handle(eng->multi, x->easy);
    if (x->state != ABX_HTTPX_DONE)
        abx_httpx_conclude(x, 1);
    unlink_xfer(x);
    rc = x->rc;
    if (resp) {
        abx_buf_free(&resp->body);
        resp->body = x->resp_body;
        abx_buf_init(&x->resp_body, 0);
        resp->status = x->status;
        memcpy(resp->content_type, x->content_type, sizeof resp->content_type);
        memcpy(resp->next_token, x->next_token, sizeof resp->next_token);
        abx_buf_free(&resp->headers);
        resp->headers = x->headers;
        abx_buf_init(&x->headers, ABX_HTTP_HEADERS_MAX);
        resp->seconds = x->seconds;
        resp->attempts = x->attempts;
    }
    if (rc != 0 && err)
        *err = x->err;
    abx_httpx_free(x, 1);
    return rc;
}

int abx_http_do(const struct abx_http_req *req, struct abx_http_resp *resp,
                struct abx_err *err)
{
    return abx_http_complete(abx_http_start(req, err), resp, err);
}

int abx_http_complete(struct abx_http_xfer *x, struct abx_http_resp *resp,
                      struct abx_err *err)
{
    struct abx_err ignored;

    if (x == NULL)
        return -1;
    if (abx_http_wait(x, 0, err) < 0) {
        abx_http_finish(x, resp, &ignored);
        return -1;
    }
    return abx_http_finish(x, resp, err);
}

int abx_http_sleep(double s, struct abx_err *err)
{
    double until = abx_http_now() + s;

    for (;;) {
        if (abx_http_check_cancel(err))
            return -1;
        double left = until - abx_http_now();
        if (left <= 0)
            return 0;
        if (left > SLICE)
            left = SLICE;
        if (eng != NULL && pending() > 0) {
            slice(left);
        } else {
            struct timespec ts = {0, (long)(left * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
}
