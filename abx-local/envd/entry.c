/* EntryInfo (filesystem.proto) from lstat, shaped like envd's: mode =
 * permission bits, permissions = Go FileMode.String(), a live symlink has
 * its target's type and the resolved target in symlinkTarget. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "jsonutil.h"

static void perm_string(mode_t m, char *out)
{
    static const char rwx[] = "rwxrwxrwx";
    size_t o = 0;

    if (S_ISDIR(m))
        out[o++] = 'd';
    if (S_ISLNK(m))
        out[o++] = 'L';
    if (S_ISBLK(m) || S_ISCHR(m))
        out[o++] = 'D';
    if (S_ISFIFO(m))
        out[o++] = 'p';
    if (S_ISSOCK(m))
        out[o++] = 'S';
    if (m & S_ISUID)
        out[o++] = 'u';
    if (m & S_ISGID)
        out[o++] = 'g';
    if (S_ISCHR(m))
        out[o++] = 'c';
    if (m & S_ISVTX)
        out[o++] = 't';
    if (o == 0)
        out[o++] = '-';
    for (int i = 0; i < 9; i++)
        out[o++] = (m & (1u << (8 - i))) ? rwx[i] : '-';
    out[o] = '\0';
}

/* RFC 3339 UTC with 0/3/6/9 fractional digits, as protojson prints. */
static void timestamp(const struct timespec *ts, char *out, size_t len)
{
    struct tm tm;
    char base[48];
    long ns = ts->tv_nsec % 1000000000L;

    gmtime_r(&ts->tv_sec, &tm);
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    if (ns == 0)
        snprintf(out, len, "%sZ", base);
    else if (ns % 1000000 == 0)
        snprintf(out, len, "%s.%03ldZ", base, ns / 1000000);
    else if (ns % 1000 == 0)
        snprintf(out, len, "%s.%06ldZ", base, ns / 1000);
    else
        snprintf(out, len, "%s.%09ldZ", base, ns);
}

/* The user (group != 0: group) name of id, or the number when it has
 * none, as Go's os/user falls back to. */
static void id_name(int group, unsigned id, char *out, size_t len)
{
    char buf[4096];
    const char *name = NULL;

    if (group) {
        struct group gr, *r = NULL;

        if (getgrgid_r((gid_t)id, &gr, buf, sizeof buf, &r) == 0 && r)
            name = gr.gr_name;
    } else {
        struct passwd pw, *r = NULL;

        if (getpwuid_r((uid_t)id, &pw, buf, sizeof buf, &r) == 0 && r)
            name = pw.pw_name;
    }
    if (name)
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "%u", id);
}

static const char *type_name(mode_t m)
{
    if (S_ISDIR(m))
        return "FILE_TYPE_DIRECTORY";
    if (S_ISREG(m))
        return "FILE_TYPE_FILE";
    return NULL; /* UNSPECIFIED: omitted */
}

cJSON *abxl_envd_entry_info(const char *path)
{
    struct stat st, tst;
    char perms[24], ts[96], owner[64], group[64];
    const char *name, *type;
    char *target = NULL;
    cJSON *o, *meta;

    if (lstat(path, &st) != 0)
        return NULL;
    name = strrchr(path, '/');
    name = name && name[1] ? name + 1 : path;
    type = type_name(st.st_mode);
    if (S_ISLNK(st.st_mode)) {
        target = realpath(path, NULL);
        type = target && stat(target, &tst) == 0 ? type_name(tst.st_mode)
                                                 : NULL;
        if (!target) {
            /* Dangling: report the link text, type stays unspecified. */
            char buf[PATH_MAX];
            ssize_t n = readlink(path, buf, sizeof buf - 1);

            if (n >= 0) {
                buf[n] = '\0';
                target = strdup(buf);
            }
        }
    }
    perm_string(st.st_mode, perms);
    timestamp(&st.st_mtim, ts, sizeof ts);
    id_name(0, (unsigned)st.st_uid, owner, sizeof owner);
    id_name(1, (unsigned)st.st_gid, group, sizeof group);
    if (!(o = cJSON_CreateObject())) {
        free(target);
        errno = ENOMEM;
        return NULL;
    }
    cJSON_AddStringToObject(o, "name", name);
    if (type)
        cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "path", path);
    if (st.st_size)
        abx_json_add_int64(o, "size", (int64_t)st.st_size);
    if (st.st_mode & 0777)
        cJSON_AddNumberToObject(o, "mode", st.st_mode & 0777);
    cJSON_AddStringToObject(o, "permissions", perms);
    cJSON_AddStringToObject(o, "owner", owner);
    cJSON_AddStringToObject(o, "group", group);
    cJSON_AddStringToObject(o, "modifiedTime", ts);
    if (S_ISLNK(st.st_mode))
        cJSON_AddStringToObject(o, "symlinkTarget", target ? target : "");
    /* An envd before 0.6.2 had no metadata field. */
    if (abxl_envd_compat.file_metadata && !S_ISLNK(st.st_mode) &&
        (meta = abxl_envd_meta_read(path)))
        cJSON_AddItemToObject(o, "metadata", meta);
    free(target);
    return o;
}
