/* File metadata (envd >= 0.6.2): X-Metadata-<key> upload headers stored as
 * xattrs user.e2b.<lowercased key>, reported in EntryInfo.metadata. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/xattr.h>

#include "daemon.h"

#define META_PREFIX "user.e2b."
#define META_KEY_MAX 246   /* xattr names are at most 255 bytes */
#define META_TOTAL_MAX 4096
#define HDR_PREFIX "x-metadata-"

struct collect {
    cJSON *obj;
    size_t total;
    char *err;
    size_t errlen;
    int bad;
};

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

static enum MHD_Result collect_one(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value)
{
    struct collect *c = cls;
    char name[META_KEY_MAX + 1];
    size_t n;

    (void)kind;
    if (c->bad || !key || strncasecmp(key, HDR_PREFIX, strlen(HDR_PREFIX)))
        return MHD_YES;
    key += strlen(HDR_PREFIX);
    n = strlen(key);
    if (n == 0)
        return MHD_YES; /* "X-Metadata-" alone is dropped, as envd does */
    if (!value)
        value = "";
    if (n > META_KEY_MAX || !printable(key) || !printable(value)) {
        snprintf(c->err, c->errlen, "invalid metadata key or value for "
                 "'%.64s': printable ASCII only, keys up to %d bytes", key,
                 META_KEY_MAX);
        c->bad = 1;
        return MHD_NO;
    }
    for (size_t i = 0; i <= n; i++)
        name[i] = (char)tolower((unsigned char)key[i]);
    if (cJSON_GetObjectItemCaseSensitive(c->obj, name))
        return MHD_YES; /* the first value wins */
    c->total += n + strlen(value);
    if (c->total > META_TOTAL_MAX) {
        snprintf(c->err, c->errlen, "metadata is larger than %d bytes",
                 META_TOTAL_MAX);
        c->bad = 1;
        return MHD_NO;
    }
    cJSON_AddStringToObject(c->obj, name, value);
    return MHD_YES;
}

int abxl_envd_meta_from_headers(struct MHD_Connection *conn, cJSON **out,
                           char *err, size_t errlen)
{
    struct collect c = {.obj = cJSON_CreateObject(), .err = err,
                        .errlen = errlen};

    *out = NULL;
    if (!c.obj) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_one, &c);
    if (c.bad) {
        cJSON_Delete(c.obj);
        return -1;
    }
    if (cJSON_GetArraySize(c.obj) == 0) {
        cJSON_Delete(c.obj);
        return 0;
    }
    *out = c.obj;
    return 1;
}

int abxl_envd_meta_write(int fd, const cJSON *meta)
{
    char names[8192], attr[sizeof META_PREFIX + META_KEY_MAX];
    ssize_t n = flistxattr(fd, names, sizeof names);
    const cJSON *it;

    /* Each upload replaces the whole set. */
    for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1)
        if (strncmp(names + off, META_PREFIX, strlen(META_PREFIX)) == 0 &&
            fremovexattr(fd, names + off) != 0 && errno != ENODATA)
            return -1;
    cJSON_ArrayForEach(it, meta) {
        snprintf(attr, sizeof attr, "%s%s", META_PREFIX, it->string);
        if (fsetxattr(fd, attr, it->valuestring, strlen(it->valuestring), 0))
            return -1;
    }
    return 0;
}

cJSON *abxl_envd_meta_read(const char *path)
{
    char names[8192], val[META_TOTAL_MAX + 1];
    ssize_t n = llistxattr(path, names, sizeof names);
    cJSON *o = NULL;

    for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
        const char *name = names + off;
        ssize_t v;

        if (strncmp(name, META_PREFIX, strlen(META_PREFIX)) != 0)
            continue;
        v = lgetxattr(path, name, val, sizeof val - 1);
        if (v < 0)
            continue;
        val[v] = '\0';
        if (!o && !(o = cJSON_CreateObject()))
            return NULL;
        cJSON_AddStringToObject(o, name + strlen(META_PREFIX), val);
    }
    return o;
}
