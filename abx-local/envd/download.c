/* The body of GET /files: Accept-Encoding negotiation (envd >= 0.5.7,
 * infra api/encoding.go) and a response that reads the file to its end,
 * plain or gzip'd. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "daemon.h"

#define AE_MAX 32          /* codings looked at in one Accept-Encoding */
#define READ_CHUNK (64 * 1024)

struct coding {
    char name[16];         /* lowercased; longer names cannot match */
    double q;
};

/* s without surrounding blanks (cut in place). */
static char *trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* One "name;q=x" element (cut in place). As Go's ParseFloat, an
 * unparsable q leaves the default 1. */
static void parse_coding(char *e, struct coding *c)
{
    char *semi = strchr(e, ';'), *name, *p;
    size_t k = 0;

    c->q = 1.0;
    if (semi)
        *semi = '\0';
    name = trim(e);
    if (strlen(name) < sizeof c->name)
        for (; name[k]; k++)
            c->name[k] = (char)(name[k] >= 'A' && name[k] <= 'Z'
                                    ? name[k] - 'A' + 'a' : name[k]);
    else
        c->name[k++] = '?'; /* too long for any coding we know */
    c->name[k] = '\0';
    for (p = semi ? semi + 1 : NULL; p;) {
        char *next = strchr(p, ';'), *v, *stop;
        double q;

        if (next)
            *next = '\0';
        v = trim(p);
        if (strncasecmp(v, "q=", 2) == 0 && v[2] != ' ' && v[2] != '\t') {
            q = strtod(v + 2, &stop);
            if (stop != v + 2 && *stop == '\0')
                c->q = q;
        }
        p = next ? next + 1 : NULL;
    }
}

int abxl_envd_accept_encoding(const char *h, int identity_only)
{
    struct coding cs[AE_MAX];
    int n = 0, id_rejected = 0, id_accepted = 0, any_rejected = 0;

    if (!h || !*h)
        return 0;
    for (const char *p = h; n < AE_MAX; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char elem[256];

        /* Longer elements are cut: no coding we know needs more. */
        if (len >= sizeof elem)
            len = sizeof elem - 1;
        memcpy(elem, p, len);
        elem[len] = '\0';
        parse_coding(elem, &cs[n]);
        if (!comma) {
            n++;
            break;
        }
        p = comma + 1;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(cs[i].name, "identity") == 0) {
            if (cs[i].q == 0)
                id_rejected = 1;
            else
                id_accepted = 1;
        } else if (strcmp(cs[i].name, "*") == 0 && cs[i].q == 0) {
            any_rejected = 1;
        }
    }
    if (any_rejected && !id_accepted)
        id_rejected = 1;
    if (identity_only)
        return id_rejected ? -1 : 0;
    /* Highest quality first, ties in header order. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && cs[j].q > cs[j - 1].q; j--) {
            struct coding t = cs[j];

            cs[j] = cs[j - 1];
            cs[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        if (cs[i].q == 0)
            continue;
        if (strcmp(cs[i].name, "identity") == 0)
            return 0;
        if (strcmp(cs[i].name, "*") == 0)
            return id_rejected ? 1 : 0;
        if (strcmp(cs[i].name, "gzip") == 0)
            return 1;
    }
    return id_rejected ? -1 : 0;
}

struct dl {
    int fd;
    int gzip;
    z_stream z;
    int z_init, eof, done;
    unsigned char in[READ_CHUNK];
};

static ssize_t read_some(int fd, void *p, size_t n)
{
    ssize_t r;

    do
        r = read(fd, p, n);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Never returns 0 (MHD would call again at once): data, end or error. */
static ssize_t dl_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct dl *d = cls;
    ssize_t n;

    (void)pos;
    if (!d->gzip) {
        n = read_some(d->fd, buf, max);
        return n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR
               : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
    }
    if (d->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (max > (1u << 30))
        max = 1u << 30; /* zlib counts in uInt */
    d->z.next_out = (unsigned char *)buf;
    d->z.avail_out = (uInt)max;
    while (d->z.avail_out > 0 && !d->done) {
        int zr;

        if (d->z.avail_in == 0 && !d->eof) {
            n = read_some(d->fd, d->in, sizeof d->in);
            if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
            d->eof = n == 0;
            d->z.next_in = d->in;
            d->z.avail_in = (uInt)n;
        }
        zr = deflate(&d->z, d->eof ? Z_FINISH : Z_NO_FLUSH);
        if (zr == Z_STREAM_END)
            d->done = 1;
        else if (zr != Z_OK && zr != Z_BUF_ERROR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    n = (ssize_t)(max - d->z.avail_out);
    return n > 0 ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void dl_free(void *cls)
{
    struct dl *d = cls;

    if (d->z_init)
        deflateEnd(&d->z);
    close(d->fd);
    free(d);
}

struct MHD_Response *abxl_envd_download_response(int fd, const struct stat *st,
                                                int gzip)
{
    struct MHD_Response *r;
    struct dl *d;

    /* No blocks behind st_size (procfs reports 0, sysfs 4096): the size
     * says nothing, read to EOF. Otherwise MHD sends straight from fd. */
    if (!gzip && st->st_size > 0 && st->st_blocks > 0) {
        if (!(r = MHD_create_response_from_fd((uint64_t)st->st_size, fd)))
            close(fd);
        return r;
    }
    if (!(d = calloc(1, sizeof *d))) {
        close(fd);
        return NULL;
    }
    d->fd = fd;
    d->gzip = gzip;
    if (gzip) {
        if (deflateInit2(&d->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
            dl_free(d);
            return NULL;
        }
        d->z_init = 1;
    }
    r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_CHUNK, dl_read,
                                          d, dl_free);
    if (!r)
        dl_free(d);
    return r;
}
