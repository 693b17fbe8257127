/* .env syntax, malformed lines with FILE:LINE, config layering. */
#include "check.h"
#include "dotenv.h"
#include "fsutil.h"

#include <stdlib.h>
#include <unistd.h>

static const char good[] =
    "# a comment line\n"
    "\n"
    "   \t\n"
    "PLAIN=value\n"
    "export EXPORTED=yes\n"
    "export   SPACED_EXPORT = 1\n"
    "  SPACES  =   padded value   \n"
    "EMPTY=\n"
    "EMPTY_Q=''\n"
    "EMPTY_DQ=\"\"\n"
    "SINGLE='lit \\n $x # not comment'\n"
    "DOUBLE=\"a\\nb\\tc\\\"d\\\\e\\qf\"\n"
    "COMMENTED=val # trailing comment\n"
    "HASH=a#b\n"
    "HASHSTART=#x\n"
    "QCOMMENT='q' # after quote\n"
    "DQCOMMENT=\"q\"# right after quote\n"
    "EQ=a=b=c\n"
    "CRLF=crlf\r\n"
    "dotted.key-x=1\n"
    "_U=under\n"
    "exported=not-a-prefix\n"
    "export=also-key\n"
    "PLAIN=second wins\n"
    "LAST=no newline at end";

static void test_good(void)
{
    struct abx_env_list l;
    char err[256];

    abx_env_list_init(&l);
    CHECK_INT(abx_dotenv_parse("good.env", good, sizeof(good) - 1, &l, err,
                               sizeof(err)),
              0);
    CHECK_STR(err, "");
    CHECK_STR(abx_env_list_get(&l, "PLAIN"), "second wins");
    CHECK_STR(abx_env_list_get(&l, "EXPORTED"), "yes");
    CHECK_STR(abx_env_list_get(&l, "SPACED_EXPORT"), "1");
    CHECK_STR(abx_env_list_get(&l, "SPACES"), "padded value");
    CHECK_STR(abx_env_list_get(&l, "EMPTY"), "");
    CHECK_STR(abx_env_list_get(&l, "EMPTY_Q"), "");
    CHECK_STR(abx_env_list_get(&l, "EMPTY_DQ"), "");
    CHECK_STR(abx_env_list_get(&l, "SINGLE"), "lit \\n $x # not comment");
    CHECK_STR(abx_env_list_get(&l, "DOUBLE"), "a\nb\tc\"d\\e\\qf");
    CHECK_STR(abx_env_list_get(&l, "COMMENTED"), "val");
    CHECK_STR(abx_env_list_get(&l, "HASH"), "a#b");
    CHECK_STR(abx_env_list_get(&l, "HASHSTART"), "#x");
    CHECK_STR(abx_env_list_get(&l, "QCOMMENT"), "q");
    CHECK_STR(abx_env_list_get(&l, "DQCOMMENT"), "q");
    CHECK_STR(abx_env_list_get(&l, "EQ"), "a=b=c");
    CHECK_STR(abx_env_list_get(&l, "CRLF"), "crlf");
    CHECK_STR(abx_env_list_get(&l, "dotted.key-x"), "1");
    CHECK_STR(abx_env_list_get(&l, "_U"), "under");
    CHECK_STR(abx_env_list_get(&l, "exported"), "not-a-prefix");
    CHECK_STR(abx_env_list_get(&l, "export"), "also-key");
    CHECK_STR(abx_env_list_get(&l, "LAST"), "no newline at end");
    CHECK(abx_env_list_get(&l, "MISSING") == NULL);
    CHECK(abx_env_list_get(&l, "# a comment line") == NULL);
    CHECK_INT(l.items[0].line, 4);
    abx_env_list_free(&l);
}

/* Parses text; returns the error message ("" if it parsed). */
static const char *bad(const char *text)
{
    static char err[256];
    struct abx_env_list l;

    abx_env_list_init(&l);
    if (abx_dotenv_parse("x/.env", text, strlen(text), &l, err, sizeof(err)) ==
        0)
        err[0] = '\0';
    abx_env_list_free(&l);
    return err;
}

static void test_bad(void)
{
    CHECK_STR(bad("A=1\nJUSTTEXT\n"),
              "x/.env:2: missing '=' (expected KEY=VALUE)");
    CHECK_STR(bad("A=1\n\n=value\n"),
              "x/.env:3: invalid key (must match [A-Za-z_][A-Za-z0-9_.-]*)");
    CHECK_STR(bad("1ABC=x"),
              "x/.env:1: invalid key (must match [A-Za-z_][A-Za-z0-9_.-]*)");
    CHECK_STR(bad("MY KEY=x"),
              "x/.env:1: invalid key (must match [A-Za-z_][A-Za-z0-9_.-]*)");
    CHECK_STR(bad("K='abc\n"), "x/.env:1: unterminated single quote");
    CHECK_STR(bad("# c\nK=\"abc\\\"\n"), "x/.env:2: unterminated double quote");
    CHECK_STR(bad("K='a'b"), "x/.env:1: unexpected text after closing quote");
    CHECK_STR(bad("K=\"a\" b"),
              "x/.env:1: unexpected text after closing quote");
    CHECK_STR(bad("export\n"), "x/.env:1: missing '=' (expected KEY=VALUE)");
    {
        static const char nul[] = "A=1\nB=x\0y\n";
        struct abx_env_list l;
        char err[128];

        abx_env_list_init(&l);
        CHECK_INT(abx_dotenv_parse("n.env", nul, sizeof(nul) - 1, &l, err,
                                   sizeof(err)),
                  -1);
        CHECK_STR(err, "n.env:2: NUL byte in line");
        abx_env_list_free(&l);
    }
    /* the bad line's text (maybe a secret) never appears in the error */
    CHECK(strstr(bad("ABX_SANDBOX_API_KEY e2b_secretvalue"), "e2b_") == NULL);
    /* tiny error buffers are not overrun */
    {
        struct abx_env_list l;
        char err[8];

        abx_env_list_init(&l);
        CHECK_INT(abx_dotenv_parse("long/name.env", "X", 1, &l, err,
                                   sizeof(err)),
                  -1);
        CHECK_INT((int)strlen(err), 7);
        abx_env_list_free(&l);
    }
}

static void test_config(void)
{
    char dir[] = "/tmp/abx-dotenv-XXXXXX";
    char p1[128], p2[128], p3[128], p4[128], err[256];
    const char *paths[4], *src, *which, *v;
    const char *keys[] = {"ABX_T_KEY", "E2B_T_KEY", NULL};
    struct abx_layers *c;
    long n;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(p1, sizeof(p1), "%s/tests-lua/.env", dir);
    snprintf(p2, sizeof(p2), "%s/.env", dir);
    snprintf(p3, sizeof(p3), "%s/missing/.env", dir);
    snprintf(p4, sizeof(p4), "%s/client-sdk/.env", dir);
#define PUT(p, s)                                                         \
    CHECK_INT(abx_write_file_atomic(p, s, strlen(s), err, sizeof(err)), 0)
    PUT(p1, "ONLY1=one\nBOTH=from1\nE2B_T_KEY=e2b-in-1\nEMPTY1=\n");
    PUT(p2, "BOTH=from2\nONLY2=two\nEMPTY1=two\nABX_T_KEY=abx-in-2\n"
            "TTL=77\nBADNUM=12x\n");
    PUT(p4, "ONLY4=four\n");
    paths[0] = p1;
    paths[1] = p2;
    paths[2] = p3;
    paths[3] = p4;
    unsetenv("ABX_T_KEY");
    unsetenv("E2B_T_KEY");
    unsetenv("BOTH");
    CHECK_INT(abx_layers_load(&c, paths, 4, err, sizeof(err)), 0);
    CHECK_STR(abx_layers_get(c, "ONLY1", &src), "one");
    CHECK_STR(src, p1);
    CHECK_STR(abx_layers_get(c, "BOTH", &src), "from1");
    CHECK_STR(abx_layers_get(c, "ONLY2", NULL), "two");
    CHECK_STR(abx_layers_get(c, "ONLY4", &src), "four");
    CHECK_STR(src, p4);
    CHECK_STR(abx_layers_get(c, "EMPTY1", NULL), "two");  /* empty = unset */
    CHECK(abx_layers_get(c, "NOPE", &src) == NULL && src == NULL);
    /* fallback names: the higher layer wins over the preferred name */
    CHECK_STR(abx_layers_get_any(c, keys, &which, &src), "e2b-in-1");
    CHECK_STR(which, "E2B_T_KEY");
    /* the environment wins over every file */
    setenv("BOTH", "from-env", 1);
    CHECK_STR(abx_layers_get(c, "BOTH", &src), "from-env");
    CHECK_STR(src, "environment");
    setenv("BOTH", "", 1);
    CHECK_STR(abx_layers_get(c, "BOTH", NULL), "from1");
    setenv("ABX_T_KEY", "abx-env", 1);
    v = abx_layers_get_any(c, keys, &which, &src);
    CHECK_STR(v, "abx-env");
    CHECK_STR(which, "ABX_T_KEY");
    setenv("E2B_T_KEY", "e2b-env", 1);
    CHECK_STR(abx_layers_get_any(c, keys, &which, NULL), "abx-env");
    unsetenv("ABX_T_KEY");
    CHECK_STR(abx_layers_get_any(c, keys, &which, NULL), "e2b-env");
    unsetenv("E2B_T_KEY");
    unsetenv("BOTH");
    CHECK_INT(abx_layers_get_long(c, "TTL", 300, 1, 86400, &n, err,
                                  sizeof(err)),
              0);
    CHECK_INT(n, 77);
    CHECK_INT(abx_layers_get_long(c, "NOTSET", 300, 1, 86400, &n, err,
                                  sizeof(err)),
              0);
    CHECK_INT(n, 300);
    CHECK_INT(abx_layers_get_long(c, "BADNUM", 300, 1, 86400, &n, err,
                                  sizeof(err)),
              -1);
    CHECK(strstr(err, "BADNUM") && strstr(err, p2));
    CHECK_INT(abx_layers_get_long(c, "TTL", 300, 1, 50, &n, err, sizeof(err)),
              -1);
    abx_layers_free(c);

    /* a malformed file fails the load with FILE:LINE */
    PUT(p2, "OK=1\nbroken line\n");
    CHECK_INT(abx_layers_load(&c, paths, 4, err, sizeof(err)), -1);
    CHECK(c == NULL);
    {
        char want[200];

        snprintf(want, sizeof(want), "%s:2: missing '='", p2);
        CHECK(strncmp(err, want, strlen(want)) == 0);
    }
    /* no files at all is fine */
    CHECK_INT(abx_layers_load(&c, paths + 2, 1, err, sizeof(err)), 0);
    CHECK(abx_layers_get(c, "ONLY1", NULL) == NULL);
    abx_layers_free(c);
    CHECK_INT(abx_dotenv_load(p3, NULL, err, sizeof(err)), 1);

    unlink(p1);
    unlink(p2);
    unlink(p4);
    snprintf(p1, sizeof(p1), "%s/tests-lua", dir);
    rmdir(p1);
    snprintf(p1, sizeof(p1), "%s/client-sdk", dir);
    rmdir(p1);
    rmdir(dir);
}

/* Random lines from a small alphabet: parse or fail with FILE:LINE,
 * never crash (ASan in CI). */
static void test_fuzz(void)
{
    static const char alpha[] = "AB_=#'\" \t\\\nx\rexport ";
    struct abx_env_list l;
    char text[64], err[128];
    unsigned x = 4242;
    int i, j, ok = 0, failed = 0;

    for (i = 0; i < 20000; i++) {
        for (j = 0; j < 40; j++) {
            x = x * 1103515245u + 12345u;
            text[j] = alpha[(x >> 16) % (sizeof(alpha) - 1)];
        }
        abx_env_list_init(&l);
        if (abx_dotenv_parse("f", text, 40, &l, err, sizeof(err)) == 0) {
            ok++;
        } else {
            failed++;
            CHECK(strncmp(err, "f:", 2) == 0);
        }
        abx_env_list_free(&l);
    }
    CHECK(ok > 0 && failed > 0);
}

int main(void)
{
    test_good();
    test_bad();
    test_config();
    test_fuzz();
    return CHECK_DONE();
}
