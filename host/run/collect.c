/* Discovery (in the parent) and collection (in collector children, see
 * collector.c): each file is loaded once in a fresh state to learn its
 * tests (node ids, markers, timeouts); workers load it again to run it. A
 * file that fails to load, or crashes its collector, is one collection
 * ERROR; the other files still run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "chan.h"
#include "out.h"
#include "run.h"
#include "vec.h"

static struct abx_file *file_for(struct abx_collection *c, const char *path)
{
    size_t i;

    for (i = 0; i < c->n; i++)
        if (strcmp(c->files[i].path, path) == 0)
            return &c->files[i];
    if (ABX_VEC_RESERVE(c->files, c->cap, c->n + 1) != 0)
        return NULL;
    memset(&c->files[c->n], 0, sizeof c->files[0]);
    c->files[c->n].path = abx_xstrdup(path);
    abx_strlist_init(&c->files[c->n].only);
    return &c->files[c->n++];
}

static int is_test_name(const char *name)
{
    size_t n = strlen(name);

    return strncmp(name, "test_", 5) == 0 && n > 9 &&
           strcmp(name + n - 4, ".lua") == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Directories already walked, by identity: a symlink loop or two links
 * to one folder must not collect the same files again and again. */
#define MAX_VISITED 4096
struct visited {
    dev_t dev[MAX_VISITED];
    ino_t ino[MAX_VISITED];
    size_t n;
};
static struct visited g_visited;

/* 1 if dir was seen already (or cannot be recorded), else records it. */
static int seen_dir(const char *dir)
{
    struct stat st;
    size_t i;

    if (stat(dir, &st) != 0)
        return 0;  /* opendir reports it */
    for (i = 0; i < g_visited.n; i++)
        if (g_visited.dev[i] == st.st_dev && g_visited.ino[i] == st.st_ino)
            return 1;
    if (g_visited.n == MAX_VISITED)
        return 1;
    g_visited.dev[g_visited.n] = st.st_dev;
    g_visited.ino[g_visited.n++] = st.st_ino;
    return 0;
}

/* Adds test_*.lua under dir, recursively, in sorted order. */
static int walk(struct abx_collection *c, const char *dir, int depth)
{
    DIR *d;
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int rc = 0;

    if (depth > 16 || seen_dir(dir))
        return 0;
    if (!(d = opendir(dir)))
        return -1;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (ABX_VEC_RESERVE(names, cap, n + 1) != 0) {
            rc = -1;
            break;
        }
        names[n++] = abx_xstrdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    for (i = 0; i < n; i++) {
        char path[4096];
        struct stat st;

        if (strcmp(dir, ".") == 0)  /* node ids read test_x.lua, not ./ */
            snprintf(path, sizeof path, "%s", names[i]);
        else
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rc == 0 && stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                rc = walk(c, path, depth + 1);
            else if (S_ISREG(st.st_mode) && is_test_name(names[i]))
                file_for(c, path)->whole = 1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* "./a/b/" -> "a/b" */
static void normalise(const char *in, char *out, size_t len)
{
    size_t n;

    /* "./a" and ".//a" -> "a"; "./" -> "." (never "" or "/": ".//"
     * once meant walking the whole file system). */
    while (in[0] == '.' && in[1] == '/') {
        in += 2;
        while (*in == '/')
            in++;
    }
    snprintf(out, len, "%s", *in ? in : ".");
    n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
}

static int discover(const struct abx_opts *o, struct abx_collection *c,
                    char *err, size_t errlen)
{
    size_t i;

    if (o->npaths == 0) {
        struct stat st;
        if (stat("tests-lua", &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "no tests-lua/ directory here; give "
                     "PATHs to run");
            return -1;
        }
        return walk(c, "tests-lua", 0) == 0 ? 0 : -1;
    }
    for (i = 0; i < o->npaths; i++) {
        char path[4096], *sep;
        struct stat st;
        struct abx_file *f;

        normalise(o->paths[i], path, sizeof path);
        sep = strstr(path, "::");
        if (sep)
            *sep = '\0';
        if (stat(path, &st) != 0) {
            snprintf(err, errlen, "file or directory not found: %s",
                     o->paths[i]);
            return -1;
        }
        if (S_ISDIR(st.st_mode)) {
            if (sep) {
                snprintf(err, errlen, "not a test file: %s", o->paths[i]);
                return -1;
            }
            if (walk(c, path, 0) != 0) {
                snprintf(err, errlen, "cannot read directory %s", path);
                return -1;
            }
            continue;
        }
        if (!S_ISREG(st.st_mode)) {  /* a FIFO would block loading forever */
            snprintf(err, errlen, "not a regular file: %s", o->paths[i]);
            return -1;
        }
        if (!(f = file_for(c, path)))
            return -1;
        if (sep) {
            *sep = ':';
            abx_strlist_push(&f->only, path);
        } else {
            f->whole = 1;
        }
    }
    return 0;
}

static void set_collect_error(struct abx_file *f, const char *raw)
{
    struct abx_result *r = abx_result_new();
    struct abx_buf clean;
    const char *msg;

    if (!r)
        return;
    abx_buf_init(&clean, 2 * 1024 * 1024);
    abx_clean_text(&clean, raw, strlen(raw), 1024 * 1024);
    msg = abx_buf_cstr(&clean);
    abx_result_set(&r->nodeid, f->path);
    abx_result_set(&r->file, f->path);
    abx_result_set(&r->name, f->path);
    abx_result_set(&r->classname, f->path);
    r->outcome = ABX_OUTCOME_ERROR;
    r->when = ABX_PHASE_COLLECT;
    abx_result_set(&r->message, msg);
    abx_result_set(&r->longrepr, msg);
    abx_buf_free(&clean);
    abx_result_free(f->collect_error);
    f->collect_error = r;
}

static void read_strlist(const cJSON *a, struct abx_strlist *out)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, a) if (cJSON_IsString(v))
        abx_strlist_push(out, v->valuestring);
}

/* Applies one collector line; returns the file index it covered, -1 for
 * an interrupt, -2 for a malformed line. */
static long apply_line(struct abx_collection *c, const char *line)
{
    cJSON *j = cJSON_Parse(line);
    const cJSON *fi = cJSON_GetObjectItemCaseSensitive(j, "file");
    const cJSON *items, *it, *v;
    struct abx_file *f;
    long idx = -2;

    if (abx_msg_type(j) == ABX_MSG_INTERRUPTED) {
        idx = -1;
        goto out;
    }
    if (abx_msg_type(j) != ABX_MSG_COLLECTED || !cJSON_IsNumber(fi) || fi->valuedouble < 0 ||
        (size_t)fi->valuedouble >= c->n)
        goto out;
    idx = (long)fi->valuedouble;
    f = &c->files[idx];
    v = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(v))
        set_collect_error(f, v->valuestring);
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "usage"))
        if (cJSON_IsString(v) &&
            abx_buf_appendf(&c->usage, "%s\n", v->valuestring) != 0) {
            /* Past the 1 MiB cap or out of memory: this line is dropped;
             * the ones before it still end the run with exit 4. */
        }
    items = cJSON_GetObjectItemCaseSensitive(j, "items");
    f->items = abx_xcalloc((size_t)cJSON_GetArraySize(items), sizeof *f->items);
    cJSON_ArrayForEach(it, items) {
        struct abx_item *item = &f->items[f->n++];
        const cJSON *nid = cJSON_GetObjectItemCaseSensitive(it, "nodeid");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");

        item->nodeid = abx_xstrdup(cJSON_IsString(nid) ? nid->valuestring : "?");
        item->name = abx_xstrdup(cJSON_IsString(name) ? name->valuestring : "?");
        item->line = (int)cJSON_GetNumberValue(
            cJSON_GetObjectItemCaseSensitive(it, "line"));
        item->timeout = cJSON_GetNumberValue(
            cJSON_GetObjectItemCaseSensitive(it, "timeout"));
        if (item->timeout != item->timeout)  /* NaN: absent */
            item->timeout = 0;
        if (abx_msg_str(it, "group"))
            item->group = abx_xstrdup(abx_msg_str(it, "group"));
        abx_strlist_init(&item->groups);
        abx_strlist_init(&item->marks);
        read_strlist(cJSON_GetObjectItemCaseSensitive(it, "groups"),
                     &item->groups);
        read_strlist(cJSON_GetObjectItemCaseSensitive(it, "marks"),
                     &item->marks);
        abx_strlist_init(&item->requires);
        read_strlist(cJSON_GetObjectItemCaseSensitive(it, "requires"),
                     &item->requires);
        item->selected = 1;
    }
out:
    cJSON_Delete(j);
    return idx;
}

/* Seconds a collector may spend on one file past --timeout before it is
 * killed: the Lua hook cannot stop a file blocked in C (os.execute("sleep
 * 1e6") at top level), and collection must still end. */
#define COLLECT_GRACE 30.0

static double collect_limit(const struct abx_config *cfg)
{
    if (cfg->opt.timeout <= 0)
        return 0;
    /* the self-tests shorten it */
    return cfg->opt.timeout + (cfg->watchdog_extra >= 0 ? cfg->watchdog_extra : COLLECT_GRACE);
}

/* Waits for fd to be readable until deadline (0 = none): 1 ready, 0
 * deadline passed. */
static int wait_readable(int fd, double deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        double left = deadline - abx_clock();
        int ms = deadline <= 0 ? 1000 : left <= 0 ? 0
                 : left > 1 ? 1000 : (int)(left * 1000) + 1;
        int rc = poll(&p, 1, ms);

        if (rc > 0)
            return 1;
        if (deadline > 0 && abx_clock() >= deadline)
            return 0;
    }
}

/* Runs one collector child from file `start`; returns the index of the
 * next file to collect (c->n when done), or -1 if interrupted. */
static long run_collector(const struct abx_config *cfg, struct abx_collection *c,
                          size_t start, double limit)
{
    int fds[2], status = 0, pid_list[1], killed = 0;
    struct abx_chan ch;
    long next = (long)start, r;
    pid_t pid;
    char *line;
    double deadline = limit > 0 ? abx_clock() + limit : 0;

    if (pipe(fds) != 0)
        return -2;
    pid = abx_fork_child();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -2;
    }
    if (pid == 0) {
        close(fds[0]);
        fcntl(fds[1], F_SETFD, FD_CLOEXEC);
        abx_stdin_null();
        abx_collector_main(fds[1], cfg, c, start);
    }
    close(fds[1]);
    pid_list[0] = pid;
    abx_signals_set_children(pid_list, 1);
    abx_chan_init(&ch, fds[0], 0);
    for (;;) {
        if (!wait_readable(fds[0], deadline)) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
        if (abx_chan_fill(&ch) < 0)
            break;  /* end of input, or a line past the cap */
        while (abx_chan_line(&ch, &line, NULL)) {
            r = apply_line(c, line);
            free(line);
            if (r == -1)
                next = -1;
            else if (r >= 0 && next >= 0)
                next = r + 1;
            if (limit > 0)  /* a file is done: the next one gets it all */
                deadline = abx_clock() + limit;
        }
    }
    close(fds[0]);
    abx_chan_free(&ch);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    abx_signals_set_children(NULL, 0);
    if (next >= 0 && (size_t)next < c->n &&
        (WIFSIGNALED(status) || WEXITSTATUS(status) != 0)) {
        char msg[4400];
        if (killed)
            snprintf(msg, sizeof msg, "collector killed by the watchdog: "
                     "loading %s took longer than %g s (blocked outside "
                     "Lua, where --timeout cannot reach?)",
                     c->files[next].path, limit);
        else if (WIFSIGNALED(status))
            snprintf(msg, sizeof msg, "collector crashed: signal %d (%s) "
                     "while loading %s", WTERMSIG(status),
                     strsignal(WTERMSIG(status)), c->files[next].path);
        else
            snprintf(msg, sizeof msg, "collector exited with status %d "
                     "while loading %s", WEXITSTATUS(status),
                     c->files[next].path);
        set_collect_error(&c->files[next], msg);
        next++;
    }
    if (abx_signal_count())
        next = -1;
    return next;
}

int abx_collect(const struct abx_config *cfg, struct abx_collection *c,
                char *err, size_t errlen)
{
    long next = 0;

    memset(c, 0, sizeof *c);
    abx_buf_init(&c->usage, 1024 * 1024);
    if (discover(&cfg->opt, c, err, errlen) != 0)
        return -1;
    while (next >= 0 && (size_t)next < c->n) {
        next = run_collector(cfg, c, (size_t)next, collect_limit(cfg));
        if (next == -2) {
            snprintf(err, errlen, "cannot start the collector: %s",
                     strerror(errno));
            return -3;
        }
    }
    return next < 0 ? -2 : 0;
}

void abx_collection_free(struct abx_collection *c)
{
    size_t i, k;

    for (i = 0; i < c->n; i++) {
        struct abx_file *f = &c->files[i];
        for (k = 0; k < f->n; k++) {
            free(f->items[k].nodeid);
            free(f->items[k].name);
            free(f->items[k].group);
            abx_strlist_free(&f->items[k].groups);
            abx_strlist_free(&f->items[k].marks);
            abx_strlist_free(&f->items[k].requires);
        }
        free(f->items);
        free(f->path);
        abx_strlist_free(&f->only);
        abx_result_free(f->collect_error);
    }
    free(c->files);
    abx_buf_free(&c->usage);
    memset(c, 0, sizeof *c);
}
