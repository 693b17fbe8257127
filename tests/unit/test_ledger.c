/* Run ledger: path building, append/load, torn last line, kill/keep
 * lines, and concurrent appends from forked children. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "ledger.h"
#include "sweep.h"

static char g_dir[256];

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", g_dir, name);
}

static void test_path(void)
{
    char p[512];

    CHECK_INT(abx_ledger_path("e2e-20260101-ab12", p, sizeof p), 0);
    CHECK_STR(p, ".abx-e2e/runs/e2e-20260101-ab12.ledger");
    CHECK_INT(abx_ledger_path("", p, sizeof p), -1);
    CHECK_INT(abx_ledger_path(NULL, p, sizeof p), -1);
    CHECK_INT(abx_ledger_path("../etc/x", p, sizeof p), -1);
    CHECK_INT(abx_ledger_path("..", p, sizeof p), -1);
    CHECK_INT(abx_ledger_path("a b", p, sizeof p), -1);
    CHECK_INT(abx_ledger_path("run", p, 10), -1);  /* does not fit */
}

static void test_append_load(void)
{
    char p[512], err[256];
    struct abx_ledger l;
    long now = (long)time(NULL);

    path_in(p, sizeof p, "sub/dir/r1.ledger");  /* dirs are created */
    CHECK_INT(abx_ledger_open(p, err, sizeof err), 0);
    CHECK_INT(abx_ledger_append("create", "sbx-a", "f.lua::g::a test",
                                err, sizeof err), 0);
    CHECK_INT(abx_ledger_append("create", "sbx-b", "t\nwith newline",
                                err, sizeof err), 0);
    CHECK_INT(abx_ledger_append("create", "sbx-c", "c", err, sizeof err), 0);
    CHECK_INT(abx_ledger_append("kill", "sbx-a", NULL, err, sizeof err), 0);
    CHECK_INT(abx_ledger_append("keep", "sbx-c", "", err, sizeof err), 0);
    CHECK_INT(abx_ledger_append("kill", "unknown", NULL, err, sizeof err), 0);
    /* Misuse is refused, not written. */
    CHECK_INT(abx_ledger_append("bogus", "x", NULL, err, sizeof err), -1);
    CHECK(strstr(err, "unknown event") != NULL);
    CHECK_INT(abx_ledger_append("kill", "two words", NULL, err, sizeof err),
              -1);
    CHECK_INT(abx_ledger_append("kill", "", NULL, err, sizeof err), -1);

    CHECK_INT(abx_ledger_load(p, &l, err, sizeof err), 0);
    CHECK_STR(l.run_id, "r1");
    CHECK_INT(l.n, 3);
    if (l.n == 3) {
        CHECK_STR(l.e[0].id, "sbx-a");
        CHECK_STR(l.e[0].test, "f.lua::g::a test");
        CHECK(l.e[0].created >= now && l.e[0].created <= now + 5);
        CHECK_INT(l.e[0].killed, 1);
        CHECK_INT(l.e[0].kept, 0);
        CHECK_STR(l.e[1].test, "t with newline");
        CHECK_INT(l.e[1].killed, 0);
        CHECK_INT(l.e[2].kept, 1);
        CHECK_INT(l.e[2].killed, 0);
    }
    abx_ledger_free(&l);
    path_in(p, sizeof p, "missing.ledger");
    CHECK_INT(abx_ledger_load(p, &l, err, sizeof err), 1);
}

static void test_torn(void)
{
    char p[512], err[256];
    struct abx_ledger l;
    const char *text = "create sbx-1 100 t1\nkill sbx-1\n"
                       "create sbx-2 200 t2\ncreate sbx-3 3";
    FILE *f;

    path_in(p, sizeof p, "torn.ledger");
    f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fputs("\ngarbage-line\n\ncreate\nkill sbx-2 torn", f);
    fclose(f);
    CHECK_INT(abx_ledger_load(p, &l, err, sizeof err), 0);
    /* sbx-3's line is complete here (the newline came with "garbage"),
     * the final "kill sbx-2 torn" has no newline: sbx-2 is still alive. */
    CHECK_INT(l.n, 3);
    if (l.n == 3) {
        CHECK_INT(l.e[0].killed, 1);
        CHECK_INT(l.e[0].created, 100);
        CHECK_INT(l.e[1].killed, 0);
        CHECK_STR(l.e[1].test, "t2");
        CHECK_STR(l.e[2].id, "sbx-3");
        CHECK_INT(l.e[2].created, 3);
    }
    abx_ledger_free(&l);
}

/* Counts lines of the raw file, -1 if any is not one whole line as
 * written ("create ID TIME DETAIL" or "kill ID"). */
static int whole_lines(const char *path, size_t dlen)
{
    FILE *f = fopen(path, "r");
    static char line[8192];
    int n = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        char *sp;
        if (len == 0 || line[len - 1] != '\n')
            n = -1000000;
        line[--len] = '\0';
        if (strncmp(line, "kill k", 6) == 0 && !strchr(line + 5, ' ')) {
            n++;
            continue;
        }
        sp = strrchr(line, ' ');
        if (strncmp(line, "create k", 8) != 0 || !sp ||
            strlen(sp + 1) != dlen || strspn(sp + 1, "x") != dlen)
            n = -1000000;
        n++;
    }
    fclose(f);
    return n;
}

/* Children share the parent's descriptor (as workers do): every line
 * must arrive whole, however the writes race. */
static void test_concurrent(void)
{
    enum { KIDS = 6, LINES = 300 };
    char p[512], err[256], detail[2000];
    struct abx_ledger l;
    int k, status, ok = 1;
    size_t i;

    path_in(p, sizeof p, "conc.ledger");
    CHECK_INT(abx_ledger_open(p, err, sizeof err), 0);
    memset(detail, 'x', sizeof detail - 1);
    detail[sizeof detail - 1] = '\0';
    for (k = 0; k < KIDS; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            int j;
            abx_ledger_after_fork();
            for (j = 0; j < LINES; j++) {
                char id[64];
                snprintf(id, sizeof id, "k%d-%d", k, j);
                if (abx_ledger_append("create", id, detail, err,
                                      sizeof err) != 0)
                    _exit(1);
                if (j % 2 == 0 &&
                    abx_ledger_append("kill", id, NULL, err, sizeof err))
                    _exit(1);
            }
            _exit(0);
        }
        CHECK(pid > 0);
    }
    for (k = 0; k < KIDS; k++) {
        CHECK(wait(&status) > 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK_INT(abx_ledger_load(p, &l, err, sizeof err), 0);
    CHECK_INT(l.n, KIDS * LINES);
    for (i = 0; i < l.n; i++) {
        int kk, j;
        char rest;
        if (sscanf(l.e[i].id, "k%d-%d%c", &kk, &j, &rest) != 2 ||
            strlen(l.e[i].test) != sizeof l.e[i].test - 1 ||
            strncmp(l.e[i].test, detail, sizeof l.e[i].test - 1) != 0 ||
            l.e[i].killed != (j % 2 == 0))
            ok = 0;
    }
    CHECK(ok);
    abx_ledger_free(&l);
    CHECK_INT(whole_lines(p, strlen(detail)), KIDS * LINES * 3 / 2);
    /* The open ledger is "in use"; one nobody opened is not. */
    CHECK_INT(abx_ledger_in_use(p), 1);
    path_in(p, sizeof p, "torn.ledger");
    CHECK_INT(abx_ledger_in_use(p), 0);
    CHECK_INT(abx_ledger_append_to(p, "kill", "sbx-2", NULL, err,
                                   sizeof err), 0);
    CHECK_INT(abx_ledger_append_to(p, "kill", "sbx-3", NULL, err,
                                   sizeof err), 0);
    CHECK_INT(abx_ledger_load(p, &l, err, sizeof err), 0);
    CHECK_INT(l.n, 3);  /* the torn line ended: both kills are whole */
    if (l.n == 3)
        CHECK(l.e[1].killed && l.e[2].killed);
    abx_ledger_free(&l);
    path_in(p, sizeof p, "nope.ledger");
    CHECK_INT(abx_ledger_append_to(p, "kill", "x", NULL, err, sizeof err),
              -1);
}

static void test_long_detail(void)
{
    char p[512], err[256], big[10000];
    struct abx_ledger l;

    path_in(p, sizeof p, "long.ledger");
    CHECK_INT(abx_ledger_open(p, err, sizeof err), 0);
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    big[3990] = (char)0xC3;  /* a 2-byte UTF-8 sequence at the cut */
    big[3991] = (char)0xA9;
    CHECK_INT(abx_ledger_append("create", "sbx-long", big, err, sizeof err),
              0);
    CHECK_INT(abx_ledger_append("kill", "sbx-long", NULL, err, sizeof err),
              0);
    CHECK_INT(abx_ledger_load(p, &l, err, sizeof err), 0);
    CHECK_INT(l.n, 1);
    if (l.n == 1)
        CHECK_INT(l.e[0].killed, 1);
    abx_ledger_free(&l);
}

static void test_sweep_args(void)
{
    struct abx_sweep_report r;

    abx_sweep_report_init(&r);
    CHECK_INT(abx_sweep_run(NULL, "run", NULL, NULL, 1, &r), -1);
    CHECK_INT(r.errors, 1);
    CHECK(strstr(abx_buf_cstr(&r.log), "no platform") != NULL);
    abx_sweep_report_free(&r);
}

int main(void)
{
    char cmd[300];

    snprintf(g_dir, sizeof g_dir, "/tmp/abx-ledger-XXXXXX");
    if (!mkdtemp(g_dir))
        return 1;
    test_path();
    test_append_load();
    test_torn();
    test_concurrent();
    test_long_detail();
    test_sweep_args();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return CHECK_DONE();
}
