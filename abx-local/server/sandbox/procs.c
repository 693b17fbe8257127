/* The processes of a sandbox: every process whose PID namespace is the
 * sandbox's (found through /proc/<pid>/ns/pid). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

/* Start time and state of pid from /proc/PID/stat: 0 if it does not exist. */
static unsigned long long stat_of(pid_t pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');   /* comm may contain spaces */
    if (p == NULL || p[1] != ' ')
        return 0;
    *state = p[2];
    p++;
    /* After ")": state is field 3; starttime is field 22. */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    if (p == NULL)
        return 0;
    return strtoull(p + 1, NULL, 10);
}

unsigned long long abxl_proc_starttime(pid_t pid)
{
    char state;
    return stat_of(pid, &state);
}

bool abxl_proc_alive(pid_t pid, unsigned long long start)
{
    char state = '?';
    /* A zombie (Z) or one being reaped (X) is dead: under a pid 1 that
     * never reaps, a killed server stays a zombie. */
    return start != 0 && stat_of(pid, &state) == start && state != 'Z' && state != 'X';
}

typedef void (*proc_fn)(pid_t pid, void *arg);

static int for_each(const struct abxl_sbx *s, proc_fn fn, void *arg)
{
    if (s->pidns_ino == 0)
        return 0;
    DIR *d = opendir("/proc");
    if (d == NULL)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
        if (stat(path, &st) != 0 || st.st_ino != s->pidns_ino)
            continue;
        count++;
        if (fn)
            fn((pid_t)pid, arg);
    }
    closedir(d);
    return count;
}

static void send_sig(pid_t pid, void *arg)
{
    kill(pid, *(int *)arg);
}

void abxl_procs_signal(const struct abxl_sbx *s, int sig)
{
    /* Two sweeps: a process forked during the first is caught by the
     * second (its parent is stopped by then). */
    for_each(s, send_sig, &sig);
    for_each(s, send_sig, &sig);
}

int abxl_procs_count(const struct abxl_sbx *s)
{
    return for_each(s, NULL, NULL);
}

struct usage {
    long long rss;
    double cpu;
};

static void add_usage(pid_t pid, void *arg)
{
    struct usage *u = arg;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return;
    unsigned long long ut = 0, st = 0;
    long long rss = 0;
    /* fields after ')': 3 state ... 14 utime 15 stime ... 24 rss */
    int field = 2;
    char *save = NULL;
    for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 14)
            ut = strtoull(tok, NULL, 10);
        else if (field == 15)
            st = strtoull(tok, NULL, 10);
        else if (field == 24) {
            rss = strtoll(tok, NULL, 10);
            break;
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    u->cpu += (double)(ut + st) / (double)(hz > 0 ? hz : 100);
    u->rss += rss * sysconf(_SC_PAGESIZE);
}

void abxl_procs_usage(const struct abxl_sbx *s, long long *rss, double *cpu_s)
{
    struct usage u = {0, 0};
    for_each(s, add_usage, &u);
    *rss = u.rss;
    *cpu_s = u.cpu;
}
