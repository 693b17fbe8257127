/* EndEvent of a process from its wait status, worded like envd's (Go's
 * ProcessState): "exit status N" or "signal: killed", exit code -1 for a
 * signal. Without compat goExitText, other words and 128+N (a shell's). */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "daemon.h"

/* Go's Signal.String() wording, which envd's status strings carry. */
static const char *signame(int sig)
{
    switch (sig) {
    case SIGHUP: return "hangup";
    case SIGINT: return "interrupt";
    case SIGQUIT: return "quit";
    case SIGILL: return "illegal instruction";
    case SIGTRAP: return "trace/breakpoint trap";
    case SIGABRT: return "aborted";
    case SIGBUS: return "bus error";
    case SIGFPE: return "floating point exception";
    case SIGKILL: return "killed";
    case SIGUSR1: return "user defined signal 1";
    case SIGSEGV: return "segmentation fault";
    case SIGUSR2: return "user defined signal 2";
    case SIGPIPE: return "broken pipe";
    case SIGALRM: return "alarm clock";
    case SIGTERM: return "terminated";
    default: return NULL;
    }
}

cJSON *abxl_envd_end_event(int status)
{
    cJSON *end = cJSON_CreateObject();
    char st[96];

    if (!end)
        return NULL;
    if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);

        snprintf(st, sizeof st, abxl_envd_compat.go_exit_text ? "exit status %d"
                                                              : "exited with code %d", code);
        if (code) /* proto3 JSON omits zero values */
            cJSON_AddNumberToObject(end, "exitCode", code);
        cJSON_AddTrueToObject(end, "exited");
        cJSON_AddStringToObject(end, "status", st);
        if (code)
            cJSON_AddStringToObject(end, "error", st);
    } else {
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        const char *n = signame(sig);

        if (!abxl_envd_compat.go_exit_text)
            snprintf(st, sizeof st, "terminated by signal %d", sig);
        else if (n)
            snprintf(st, sizeof st, "signal: %s%s", n,
                     WCOREDUMP(status) ? " (core dumped)" : "");
        else
            snprintf(st, sizeof st, "signal: signal %d", sig);
        cJSON_AddNumberToObject(end, "exitCode", abxl_envd_compat.go_exit_text ? -1 : 128 + sig);
        cJSON_AddStringToObject(end, "status", st);
        cJSON_AddStringToObject(end, "error", st);
    }
    return end;
}
