/* .env parsing on arbitrary text: on success every key has the documented
 * shape and lines are in order; on failure the message is
 * "NAME:LINE: <fixed reason>", so the bad line's text (which may hold a
 * credential) is never echoed. */
#include <ctype.h>
#include <string.h>

#include "dotenv.h"
#include "fuzz.h"

static const char *const reasons[] = {
    "missing '=' (expected KEY=VALUE)",
    "invalid key (must match [A-Za-z_][A-Za-z0-9_.-]*)",
    "unterminated single quote",
    "unexpected text after closing quote",
    "unterminated double quote",
    "NUL byte in line",
    "out of memory",
};

static int key_ok(const char *k)
{
    if (!(isalpha((unsigned char)*k) || *k == '_'))
        return 0;
    for (k++; *k; k++)
        if (!(isalnum((unsigned char)*k) || *k == '_' || *k == '.' ||
              *k == '-'))
            return 0;
    return 1;
}

static int count_lines(const char *s, size_t n)
{
    int lines = 0;
    size_t i;

    for (i = 0; i < n; i++)
        if (s[i] == '\n')
            lines++;
    return lines + (n && s[n - 1] != '\n');
}

static void check_error(const char *err, int nlines)
{
    const char *p = err + strlen("fuzz.env:");
    long line;
    char *end;
    size_t i;

    FUZZ_CHECK(!strncmp(err, "fuzz.env:", 9));
    line = strtol(p, &end, 10);
    FUZZ_CHECK(end != p && line >= 1 && line <= nlines);
    FUZZ_CHECK(!strncmp(end, ": ", 2));
    for (i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (!strcmp(end + 2, reasons[i]))
            return;
    FUZZ_CHECK(!"error reason is one of the fixed texts");
}

static void check_list(const struct abx_env_list *l, int nlines)
{
    size_t i, j, last;
    int prev = 0;

    for (i = 0; i < l->n; i++) {
        FUZZ_CHECK(key_ok(l->items[i].key));
        FUZZ_CHECK(l->items[i].line > prev && l->items[i].line <= nlines);
        prev = l->items[i].line;
        FUZZ_CHECK(l->items[i].value != NULL);
        /* Last assignment wins: the value of the key's last pair. */
        for (j = last = i; j < l->n; j++)
            if (!strcmp(l->items[j].key, l->items[i].key))
                last = j;
        FUZZ_CHECK(abx_env_list_get(l, l->items[i].key) ==
                   l->items[last].value);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct abx_env_list l;
    char err[256], small[8];
    const char *text = (const char *)data;
    int nlines = count_lines(text, size), rc;

    abx_env_list_init(&l);
    rc = abx_dotenv_parse("fuzz.env", text, size, &l, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1);
    if (rc == 0)
        FUZZ_CHECK(err[0] == '\0');
    else
        check_error(err, nlines);
    /* Pairs parsed before a bad line are kept and well formed. */
    check_list(&l, nlines);
    abx_env_list_free(&l);

    /* A short error buffer truncates cleanly. */
    abx_env_list_init(&l);
    rc = abx_dotenv_parse(NULL, text, size, &l, small, sizeof small);
    FUZZ_CHECK(memchr(small, '\0', sizeof small) != NULL);
    abx_env_list_free(&l);
    return 0;
}
