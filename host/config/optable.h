/* The command line's one option table (optable.c), read by the parser
 * (cli.c) and the --help of every sub-command it serves: an option's
 * names, value, sub-commands, help and how its value is stored are
 * written once. Beside config.h (which has abx_cli_parse): the parser,
 * the help, the doctor's config section, and the sub-commands that find a
 * usage error in their operands later (merge, diff-records, cleanup). */
#ifndef ABX_HOST_OPTABLE_H
#define ABX_HOST_OPTABLE_H

#include <stddef.h>

#include "config.h"

/* The sub-commands; each takes its options from the table. */
enum {
    ABX_CMD_RUN = 1u << 0,
    ABX_CMD_EXEC = 1u << 1,
    ABX_CMD_REPL = 1u << 2,
    ABX_CMD_DOCTOR = 1u << 3,
    ABX_CMD_CLEANUP = 1u << 4,
    ABX_CMD_MERGE = 1u << 5,
    ABX_CMD_DIFF = 1u << 6,     /* diff-records */
};
#define ABX_CMD_PLATFORM (ABX_CMD_RUN | ABX_CMD_EXEC | ABX_CMD_REPL | ABX_CMD_DOCTOR)
#define ABX_CMD_ANY (ABX_CMD_PLATFORM | ABX_CMD_CLEANUP | ABX_CMD_MERGE | ABX_CMD_DIFF)

/* How a value is stored (at off in struct abx_opts). */
enum abx_optkind {
    ABX_OPT_FLAG,    /* int = 1 */
    ABX_OPT_COUNT,   /* int += 1 a letter (-vv) */
    ABX_OPT_STR,     /* const char * (non-empty for FILE, DIR, TOPIC) */
    ABX_OPT_LONG,    /* long in [min, max] */
    ABX_OPT_DOUBLE,  /* double in [min, max] */
    ABX_OPT_FN,      /* fn */
    ABX_OPT_HELP,    /* the sub-command's --help, exit 0 */
    ABX_OPT_VERSION, /* the version, exit 0 */
};

/* The help sections of the run command (the variables: its last). */
enum abx_optsection { ABX_SEC_SELECTION, ABX_SEC_EXECUTION, ABX_SEC_SANDBOXES,
                      ABX_SEC_REPORTING, ABX_SEC_ENVIRONMENT, ABX_SEC_COUNT };

struct abx_optdef {
    const char *names;     /* "-x, --exitfirst": each name, ", " between */
    const char *meta;      /* its value ("N", "FILE"), NULL: none */
    unsigned cmds;         /* ABX_CMD_* that take it */
    enum abx_optsection section;
    enum abx_optkind kind;
    size_t off;
    double min, max;
    /* ABX_OPT_FN: 0, or -1 with what was wrong in err. v is NULL for an
     * option without a value. */
    int (*fn)(struct abx_opts *o, const char *v, char *err, size_t errlen);
    const char *expects;   /* for an error: "--maxfail expects <this>, got 'x'" */
    const char *help;      /* lines, '\n' between */
    /* The variable (the environment, then the .env files) that sets it
     * when no flag does: its name, then any older names; {NULL}: none.
     * A row with env[0] and no names is a variable only. */
    const char *env[3];
    const char *def;       /* the default, as a user would write it (its
                              --help shows it); NULL: none or in code */
    int secret;            /* its value is a credential: masked, never shown */
};

extern const struct abx_optdef abx_optdefs[];
extern const size_t abx_noptdefs;

/* A usage error on stderr: cmd's usage line, then "abx-e2e[ CMD]: error:
 * ...". Returns -1. */
int abx_cli_usage(unsigned cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cmd's --help, its options from the table; returns 1. */
int abx_cli_help(unsigned cmd);
/* The word of cmd ("run", "exec", ...), and the command of a word (0:
 * none): the one list of sub-commands is cli_help.c's. */
const char *abx_cli_cmd_name(unsigned cmd);
unsigned abx_cli_cmd_of(const char *word);

#endif
