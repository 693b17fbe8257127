/* The run ledger (ledger.h; the sweeper is in sweep.c).
 *
 * Lines are written with one write() on an O_APPEND descriptor and kept
 * below PIPE_BUF, so concurrent workers never interleave; "create" lines
 * are fsync'd because they are the only record of a sandbox a hard-killed
 * run leaves behind. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "ledger.h"
#include "vec.h"

#define LEDGER_MAX ((size_t)64 * 1024 * 1024)
#define LINE_MAX_BYTES 4000  /* < PIPE_BUF (4096): one atomic append */

static int g_fd = -1;

static int valid_token(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    size_t i;

    if (n == 0 || n >= max)
        return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == 0x7f)
            return 0;
    }
    return 1;
}

/* A run id names a file: letters, digits, '.', '_', '-'; not "." or "..". */
static int valid_run_id(const char *s)
{
    size_t i, n = s ? strlen(s) : 0;

    if (n == 0 || n >= sizeof ((struct abx_ledger *)0)->run_id || s[0] == '.')
        return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int abx_ledger_path(const char *run_id, char *out, size_t outlen)
{
    int n;

    if (!valid_run_id(run_id))
        return -1;
    n = snprintf(out, outlen, "%s/%s.ledger", ABX_RUNS_DIR, run_id);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static int open_append(const char *path, int create, char *err,
                       size_t errlen)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int fd;

    if (create && slash && slash != path) {
        if ((size_t)(slash - path) >= sizeof dir) {
            snprintf(err, errlen, "ledger path too long");
            return -1;
        }
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        if (abx_mkdir_p(dir, 0700, err, errlen) != 0)
            return -1;
    }
    /* O_RDWR: end_torn_line reads the last byte. */
    fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | (create ? O_CREAT : 0),
              0600);
    if (fd < 0)
        snprintf(err, errlen, "ledger %s: %s", path, strerror(errno));
    return fd;
}

int abx_ledger_open(const char *path, char *err, size_t errlen)
{
    int fd;

    if (!path || !*path) {
        snprintf(err, errlen, "ledger: empty path");
        return -1;
    }
    fd = open_append(path, 1, err, errlen);
    if (fd < 0)
        return -1;
    /* A shared lock for as long as any process of the run (workers
     * inherit the descriptor) lives: the janitor leaves such runs alone.
     * Blocking: the janitor's exclusive probe lasts an instant. */
    if (flock(fd, LOCK_SH) != 0) {
        snprintf(err, errlen, "ledger %s: in use by another run (%s)", path,
                 strerror(errno));
        close(fd);
        return -1;
    }
    if (g_fd >= 0)
        close(g_fd);
    g_fd = fd;
    return 0;
}

void abx_ledger_after_fork(void)
{
    /* O_APPEND makes the shared file offset harmless: nothing to do. */
}

/* Builds "<event> <id>[ <time>][ <detail>]\n" with newlines and control
 * bytes of detail turned into spaces, capped below PIPE_BUF. */
static int format_line(char *line, size_t cap, const char *event,
                       const char *id, const char *detail)
{
    size_t n, i;
    int k;

    if (strcmp(event, "create") == 0)
        k = snprintf(line, cap, "create %s %ld ", id, (long)time(NULL));
    else
        k = snprintf(line, cap, "%s %s%s", event, id,
                     detail && *detail ? " " : "");
    if (k < 0 || (size_t)k >= cap - 1)
        return -1;
    n = (size_t)k;
    for (i = 0; detail && detail[i] && n < cap - 2; i++) {
        unsigned char c = (unsigned char)detail[i];
        line[n++] = c < ' ' || c == 0x7f ? ' ' : (char)c;
    }
    /* A cut may split a UTF-8 sequence: drop the partial tail. */
    if (detail && detail[i]) {
        size_t j = n;
        while (j > 0 && ((unsigned char)line[j - 1] & 0xC0) == 0x80)
            j--;
        if (j > 0 && ((unsigned char)line[j - 1] & 0x80))
            n = j - 1;
    }
    line[n++] = '\n';
    line[n] = '\0';
    return (int)n;
}

static int append_fd(int fd, const char *event, const char *id,
                     const char *detail, char *err, size_t errlen)
{
    char line[LINE_MAX_BYTES];
    ssize_t w;
    int n;

    if (strcmp(event, "create") != 0 && strcmp(event, "kill") != 0 &&
        strcmp(event, "keep") != 0) {
        snprintf(err, errlen, "ledger: unknown event '%.32s'", event);
        return -1;
    }
    if (!valid_token(id, sizeof ((struct abx_ledger_entry *)0)->id)) {
        snprintf(err, errlen, "ledger: invalid sandbox id");
        return -1;
    }
    n = format_line(line, sizeof line, event, id, detail);
    if (n < 0) {
        snprintf(err, errlen, "ledger: line too long");
        return -1;
    }
    do
        w = write(fd, line, (size_t)n);
    while (w < 0 && errno == EINTR);
    if (w != n) {
        snprintf(err, errlen, "ledger: write: %s",
                 w < 0 ? strerror(errno) : "short write");
        return -1;
    }
    if (strcmp(event, "create") == 0 && fsync(fd) != 0 && errno != EINVAL) {
        snprintf(err, errlen, "ledger: fsync: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int abx_ledger_append(const char *event, const char *sandbox_id,
                      const char *detail, char *err, size_t errlen)
{
    if (g_fd < 0) {
        snprintf(err, errlen, "ledger: not open");
        return -1;
    }
    return append_fd(g_fd, event ? event : "", sandbox_id, detail, err,
                     errlen);
}

/* A run killed mid-write leaves a torn last line: end it, so that what
 * the guardian or the janitor appends is a line of its own. */
static void end_torn_line(int fd)
{
    struct stat st;
    char c;

    if (fstat(fd, &st) == 0 && st.st_size > 0 &&
        pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n' &&
        write(fd, "\n", 1) != 1)
        return;  /* best effort: a glued line only costs a retried kill */
}

int abx_ledger_append_to(const char *path, const char *event,
                         const char *sandbox_id, const char *detail,
                         char *err, size_t errlen)
{
    int fd = open_append(path, 0, err, errlen), rc;

    if (fd < 0)
        return -1;
    end_torn_line(fd);
    rc = append_fd(fd, event ? event : "", sandbox_id, detail, err, errlen);
    close(fd);
    return rc;
}

int abx_ledger_in_use(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

    if (fd < 0)
        return 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        rc = errno == EWOULDBLOCK;
    close(fd);
    return rc;
}

/* ---- loading ---------------------------------------------------------- */
static struct abx_ledger_entry *find_entry(struct abx_ledger *l,
                                           const char *id)
{
    size_t i;

    for (i = l->n; i-- > 0;)  /* recent ids are looked up most */
        if (strcmp(l->e[i].id, id) == 0)
            return &l->e[i];
    return NULL;
}

static int parse_line(struct abx_ledger *l, size_t *cap, char *line)
{
    char *save = NULL, *ev = strtok_r(line, " ", &save);
    char *id = ev ? strtok_r(NULL, " ", &save) : NULL;
    struct abx_ledger_entry *e;

    if (!id || strlen(id) >= sizeof l->e[0].id)
        return 0;  /* not ours: ignored */
    e = find_entry(l, id);
    if (strcmp(ev, "create") == 0) {
        char *ts = strtok_r(NULL, " ", &save), *end = NULL;
        if (!e) {
            if (abx_vec_reserve(&l->e, cap, l->n + 1, sizeof *l->e) != 0)
                return -1;
            e = &l->e[l->n++];
            memset(e, 0, sizeof *e);
            memcpy(e->id, id, strlen(id) + 1);
        }
        if (ts) {
            errno = 0;
            e->created = strtol(ts, &end, 10);
            if (errno || *end)
                e->created = 0;
        }
        snprintf(e->test, sizeof e->test, "%s", save ? save : "");
    } else if (strcmp(ev, "kill") == 0 && e) {
        e->killed = 1;
    } else if (strcmp(ev, "keep") == 0 && e) {
        e->kept = 1;
    }
    return 0;
}

static void run_id_from_path(const char *path, char *out, size_t outlen)
{
    const char *base = strrchr(path, '/');
    size_t n;

    base = base ? base + 1 : path;
    n = strlen(base);
    if (n > 7 && strcmp(base + n - 7, ".ledger") == 0)
        n -= 7;
    snprintf(out, outlen, "%.*s", (int)n, base);
}

int abx_ledger_load(const char *path, struct abx_ledger *out, char *err,
                    size_t errlen)
{
    char *data = NULL, *p, *nl;
    size_t len = 0, cap = 0;
    int rc;

    memset(out, 0, sizeof *out);
    rc = abx_read_file(path, LEDGER_MAX, &data, &len, err, errlen);
    if (rc != 0)
        return rc;
    run_id_from_path(path, out->run_id, sizeof out->run_id);
    /* Only complete lines count: a torn last line (killed mid-write)
     * has no '\n'. */
    for (p = data; (nl = memchr(p, '\n', len - (size_t)(p - data)));
         p = nl + 1) {
        *nl = '\0';
        if (parse_line(out, &cap, p) != 0) {
            snprintf(err, errlen, "ledger %s: out of memory", path);
            abx_ledger_free(out);
            free(data);
            return -1;
        }
    }
    free(data);
    return 0;
}

void abx_ledger_free(struct abx_ledger *l)
{
    free(l->e);
    l->e = NULL;
    l->n = 0;
}
