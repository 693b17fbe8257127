/* URL helpers of http.h: percent-encoding and redaction for traces. */
#include "http.h"

#include <string.h>
#include <strings.h>

#include "escape.h"

int abx_url_escape(struct abx_buf *out, const char *s, size_t len)
{
    return abx_esc_pct(out, s, len, 0);
}

/* Query parameters whose value is a credential. */
static int secret_name(const char *n, size_t len)
{
    static const char sig[] = "signature", tok[] = "token";
    if (len == sizeof sig - 1 && strncasecmp(n, sig, len) == 0)
        return 1;
    return len >= sizeof tok - 1 &&
           strncasecmp(n + len - (sizeof tok - 1), tok, sizeof tok - 1) == 0;
}

struct sink {
    char *p;
    size_t len, cap;
};

static void put(struct sink *s, const char *p, size_t n)
{
    if (s->cap == 0)
        return;
    size_t room = s->cap - 1 - s->len;
    if (n > room)
        n = room;
    memcpy(s->p + s->len, p, n);
    s->len += n;
    s->p[s->len] = '\0';
}

void abx_url_redact(const char *url, char *out, size_t outlen)
{
    struct sink s = {out, 0, outlen};
    const char *q, *frag, *p, *end;

    if (outlen == 0)
        return;
    out[0] = '\0';
    if (url == NULL)
        return;
    end = url + strlen(url);
    frag = strchr(url, '#');
    if (frag == NULL)
        frag = end;
    q = memchr(url, '?', (size_t)(frag - url));
    if (q == NULL)
        q = frag;

    /* userinfo ("user:password@host") is a credential too. */
    const char *auth = strstr(url, "://");
    const char *at = NULL;
    if (auth) {
        auth += 3;
        const char *hend = auth + strcspn(auth, "/?#");
        at = memchr(auth, '@', (size_t)(hend - auth));
    }
    if (at) {
        put(&s, url, (size_t)(auth - url));
        put(&s, "[MASKED]", 8);
        put(&s, at, (size_t)(q - at));
    } else {
        put(&s, url, (size_t)(q - url));
    }
    if (q == frag)
        goto tail;
    put(&s, "?", 1);
    p = q + 1;
    while (p < frag) {
        const char *amp = memchr(p, '&', (size_t)(frag - p));
        const char *pe = amp ? amp : frag;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        if (eq && secret_name(p, (size_t)(eq - p))) {
            put(&s, p, (size_t)(eq - p) + 1);
            put(&s, "[MASKED]", 8);
        } else {
            put(&s, p, (size_t)(pe - p));
        }
        if (amp)
            put(&s, "&", 1);
        p = pe + 1;
    }
tail:
    if (frag < end)
        put(&s, frag, (size_t)(end - frag));
}
