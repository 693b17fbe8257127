/* .env files and the configuration layers built on them.
 *
 * Syntax accepted (one assignment per line):
 *   # comment            blank lines
 *   KEY=value            [export ]KEY = value   (whitespace around '=' and
 *                        around an unquoted value is trimmed)
 *   KEY=                 empty value
 *   KEY='literal'        no escapes inside single quotes
 *   KEY="a\nb"           escapes \n \t \r \" \\ (other \x kept as is)
 *   KEY=value # note     '#' starts a comment only after whitespace in an
 *                        unquoted value, and anywhere after a closing quote
 * KEY is [A-Za-z_][A-Za-z0-9_.-]*. Multi-line quoted values are not
 * supported: a quote left open at end of line is an error.
 * Errors read "FILE:LINE: reason" (e.g. "tests-lua/.env:3: missing '='"). */
#ifndef ABX_DOTENV_H
#define ABX_DOTENV_H

#include <stddef.h>

struct abx_env_pair {
    char *key;
    char *value;
    int line;  /* 1-based line in the file it came from */
};

struct abx_env_list {
    struct abx_env_pair *items;
    size_t n, cap;
};

void abx_env_list_init(struct abx_env_list *l);
void abx_env_list_free(struct abx_env_list *l);
/* Value of key (the last assignment wins, as in a shell), or NULL. */
const char *abx_env_list_get(const struct abx_env_list *l, const char *key);

/* Parses text (len bytes, NUL bytes are an error) and appends its pairs to
 * out. name is used only in error messages. Returns 0, or -1 with err set
 * ("NAME:LINE: reason"); on error out keeps the pairs parsed before the bad
 * line (callers normally discard it). */
int abx_dotenv_parse(const char *name, const char *text, size_t len,
                     struct abx_env_list *out, char *err, size_t errlen);

/* Reads and parses path. Returns 0 on success, 1 if the file does not exist
 * (out untouched; not an error), -1 on a read or parse error (err set).
 * Files over 1 MiB are refused: a .env is small. */
int abx_dotenv_load(const char *path, struct abx_env_list *out, char *err,
                    size_t errlen);

/* ---- configuration layers --------------------------------------------
 * Resolution order: the process environment first, then each file in the
 * order given (DESIGN: tests-lua/.env, .env, client-sdk/.env). An empty
 * value counts as unset at every layer, so `ABX_SANDBOX_API_KEY= cmd`
 * falls through to the files. */
struct abx_layers;

/* Loads every existing file of paths[0..n). Missing files are skipped; a
 * malformed file fails the load (-1, err "FILE:LINE: reason"). */
int abx_layers_load(struct abx_layers **out, const char *const *paths,
                    size_t n, char *err, size_t errlen);
void abx_layers_free(struct abx_layers *c);

/* Value of name, or NULL. If source is not NULL it receives "environment"
 * or the path of the file the value came from (owned by c). The returned
 * string is owned by c or by the environment; copy it if you keep it
 * past abx_layers_free or a setenv. */
const char *abx_layers_get(const struct abx_layers *c, const char *name,
                           const char **source);

/* Like abx_layers_get over several names (NULL-terminated, e.g.
 * {"ABX_SANDBOX_API_KEY", "E2B_API_KEY", NULL}): layers are tried in
 * priority order and within a layer the names in order, so the environment
 * always wins over a file. *which (if not NULL) receives the name found. */
const char *abx_layers_get_any(const struct abx_layers *c,
                               const char *const *names, const char **which,
                               const char **source);

/* Integer knob (e.g. E2E_SANDBOX_TTL): def if unset; -1 with err naming
 * the variable and its source if the value is not a decimal integer in
 * [min, max]; else 0 with *out set. */
int abx_layers_get_long(const struct abx_layers *c, const char *name,
                        long def, long min, long max, long *out, char *err,
                        size_t errlen);

#endif
