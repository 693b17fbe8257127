/* libcurl loaded on first use (curl_lazy.h). Each curl_* function the
 * client calls is defined here: it loads libcurl.so.4 once (dlopen, the
 * first call of any of them: lazylib.c), then calls the library's own. A function
 * taking "..." forwards its one argument by the type libcurl reads for
 * that option (the option number says it: curl.h's CURLOPTTYPE_*), so
 * nothing depends on how an ABI passes variadic arguments. Without the
 * library every call fails as libcurl reports a failure (NULL, an error
 * code) and abx_curl_load_error() says why. */
#define CURL_DISABLE_TYPECHECK   /* we define the functions its macros wrap */
#include <stdarg.h>
#include <stddef.h>

#include <curl/curl.h>

#include "curl_lazy.h"
#include "lazylib.h"

#define LIBCURL "libcurl.so.4"

/* Every function of libcurl the client uses: name, return type, params. */
#define CURL_FUNCTIONS(X)                                                          \
    X(curl_global_init, CURLcode, (long flags))                                    \
    X(curl_free, void, (void *p))                                                  \
    X(curl_easy_init, CURL *, (void))                                              \
    X(curl_easy_cleanup, void, (CURL *h))                                          \
    X(curl_easy_setopt, CURLcode, (CURL *h, CURLoption o, ...))                    \
    X(curl_easy_getinfo, CURLcode, (CURL *h, CURLINFO i, ...))                     \
    X(curl_easy_strerror, const char *, (CURLcode c))                              \
    X(curl_slist_append, struct curl_slist *, (struct curl_slist *l, const char *s)) \
    X(curl_slist_free_all, void, (struct curl_slist *l))                           \
    X(curl_multi_init, CURLM *, (void))                                            \
    X(curl_multi_cleanup, CURLMcode, (CURLM *m))                                   \
    X(curl_multi_add_handle, CURLMcode, (CURLM *m, CURL *h))                       \
    X(curl_multi_remove_handle, CURLMcode, (CURLM *m, CURL *h))                    \
    X(curl_multi_perform, CURLMcode, (CURLM *m, int *running))                     \
    X(curl_multi_poll, CURLMcode,                                                  \
      (CURLM *m, struct curl_waitfd *fds, unsigned n, int ms, int *ret))           \
    X(curl_multi_info_read, CURLMsg *, (CURLM *m, int *left))                      \
    X(curl_share_init, CURLSH *, (void))                                           \
    X(curl_share_cleanup, CURLSHcode, (CURLSH *s))                                 \
    X(curl_share_setopt, CURLSHcode, (CURLSH *s, CURLSHoption o, ...))             \
    X(curl_mime_init, curl_mime *, (CURL *h))                                      \
    X(curl_mime_free, void, (curl_mime *m))                                        \
    X(curl_mime_addpart, curl_mimepart *, (curl_mime *m))                          \
    X(curl_mime_name, CURLcode, (curl_mimepart *p, const char *n))                 \
    X(curl_mime_filename, CURLcode, (curl_mimepart *p, const char *n))             \
    X(curl_mime_type, CURLcode, (curl_mimepart *p, const char *t))                 \
    X(curl_mime_data, CURLcode, (curl_mimepart *p, const char *d, size_t n))       \
    X(curl_mime_data_cb, CURLcode,                                                 \
      (curl_mimepart *p, curl_off_t size, curl_read_callback r,                    \
       curl_seek_callback s, curl_free_callback f, void *arg))                     \
    X(curl_url, CURLU *, (void))                                                   \
    X(curl_url_cleanup, void, (CURLU *u))                                          \
    X(curl_url_get, CURLUcode, (CURLU *u, CURLUPart w, char **part, unsigned f)) \
    X(curl_url_set, CURLUcode, (CURLU *u, CURLUPart w, const char *part, unsigned f))

#define POINTER(name, ret, params) static ret(*p_##name) params;
CURL_FUNCTIONS(POINTER)
#undef POINTER

#define SYM(name, ret, params) {#name, &p_##name},
static const struct abx_lazysym g_syms[] = {CURL_FUNCTIONS(SYM){NULL, NULL}};
#undef SYM
static struct abx_lazylib g_curl = {.soname = LIBCURL, .syms = g_syms};

static int ready(void) { return abx_lazylib_ready(&g_curl); }

const char *abx_curl_load_error(void)
{
    return ready() ? NULL : g_curl.error;
}

CURLcode curl_global_init(long flags)
{
    return ready() ? p_curl_global_init(flags) : CURLE_FAILED_INIT;
}

void curl_free(void *p)
{
    if (p && ready())
        p_curl_free(p);
}

CURL *curl_easy_init(void) { return ready() ? p_curl_easy_init() : NULL; }

void curl_easy_cleanup(CURL *h)
{
    if (ready())
        p_curl_easy_cleanup(h);
}

CURLcode curl_easy_setopt(CURL *h, CURLoption o, ...)
{
    CURLcode rc = CURLE_FAILED_INIT;
    va_list ap;

    va_start(ap, o);
    if (!ready())
        ;
    else if (o < CURLOPTTYPE_OBJECTPOINT)
        rc = p_curl_easy_setopt(h, o, va_arg(ap, long));
    else if (o < CURLOPTTYPE_FUNCTIONPOINT)
        rc = p_curl_easy_setopt(h, o, va_arg(ap, void *));
    else if (o < CURLOPTTYPE_OFF_T)
        rc = p_curl_easy_setopt(h, o, va_arg(ap, void (*)(void)));
    else if (o < CURLOPTTYPE_BLOB)
        rc = p_curl_easy_setopt(h, o, va_arg(ap, curl_off_t));
    else
        rc = p_curl_easy_setopt(h, o, va_arg(ap, void *));   /* struct curl_blob * */
    va_end(ap);
    return rc;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO i, ...)
{
    CURLcode rc = CURLE_FAILED_INIT;
    va_list ap;

    va_start(ap, i);
    if (ready())   /* every kind of info is written through a pointer */
        rc = p_curl_easy_getinfo(h, i, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

const char *curl_easy_strerror(CURLcode c)
{
    return ready() ? p_curl_easy_strerror(c) : g_curl.error;
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    return ready() ? p_curl_slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
    if (l && ready())
        p_curl_slist_free_all(l);
}

CURLM *curl_multi_init(void) { return ready() ? p_curl_multi_init() : NULL; }

CURLMcode curl_multi_cleanup(CURLM *m)
{
    return ready() ? p_curl_multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
    return ready() ? p_curl_multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
    return ready() ? p_curl_multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
    return ready() ? p_curl_multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd *fds, unsigned n, int ms, int *ret)
{
    return ready() ? p_curl_multi_poll(m, fds, n, ms, ret) : CURLM_INTERNAL_ERROR;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
    return ready() ? p_curl_multi_info_read(m, left) : NULL;
}

CURLSH *curl_share_init(void) { return ready() ? p_curl_share_init() : NULL; }

CURLSHcode curl_share_cleanup(CURLSH *s)
{
    return ready() ? p_curl_share_cleanup(s) : CURLSHE_NOT_BUILT_IN;
}

CURLSHcode curl_share_setopt(CURLSH *s, CURLSHoption o, ...)
{
    CURLSHcode rc = CURLSHE_NOT_BUILT_IN;
    va_list ap;

    va_start(ap, o);
    if (!ready())
        ;
    else if (o == CURLSHOPT_SHARE || o == CURLSHOPT_UNSHARE)
        rc = p_curl_share_setopt(s, o, va_arg(ap, int));   /* a curl_lock_data */
    else if (o == CURLSHOPT_LOCKFUNC || o == CURLSHOPT_UNLOCKFUNC)
        rc = p_curl_share_setopt(s, o, va_arg(ap, void (*)(void)));
    else
        rc = p_curl_share_setopt(s, o, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

curl_mime *curl_mime_init(CURL *h) { return ready() ? p_curl_mime_init(h) : NULL; }

void curl_mime_free(curl_mime *m)
{
    if (m && ready())
        p_curl_mime_free(m);
}

curl_mimepart *curl_mime_addpart(curl_mime *m)
{
    return ready() ? p_curl_mime_addpart(m) : NULL;
}

CURLcode curl_mime_name(curl_mimepart *p, const char *n)
{
    return ready() ? p_curl_mime_name(p, n) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_filename(curl_mimepart *p, const char *n)
{
    return ready() ? p_curl_mime_filename(p, n) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_type(curl_mimepart *p, const char *t)
{
    return ready() ? p_curl_mime_type(p, t) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_data(curl_mimepart *p, const char *d, size_t n)
{
    return ready() ? p_curl_mime_data(p, d, n) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_data_cb(curl_mimepart *p, curl_off_t size, curl_read_callback r,
                           curl_seek_callback s, curl_free_callback f, void *arg)
{
    return ready() ? p_curl_mime_data_cb(p, size, r, s, f, arg) : CURLE_FAILED_INIT;
}

CURLU *curl_url(void) { return ready() ? p_curl_url() : NULL; }

void curl_url_cleanup(CURLU *u)
{
    if (u && ready())
        p_curl_url_cleanup(u);
}

CURLUcode curl_url_get(CURLU *u, CURLUPart w, char **part, unsigned f)
{
    return ready() ? p_curl_url_get(u, w, part, f) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart w, const char *part, unsigned f)
{
    return ready() ? p_curl_url_set(u, w, part, f) : CURLUE_OUT_OF_MEMORY;
}
