/* `abx-e2e doctor --local`: first what this host offers abx-local (its
 * own `abx-local check --json`, run before anything is started: one
 * judge of the host, abx-local's), then, when nothing blocks it,
 * abx-local started for the doctor's other sections. A host that cannot
 * run it gets its problems, each with its fix, not a failed start. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor_int.h"
#include "fsutil.h"
#include "out.h"
#include "sandbox.h"

#define CHECK_TIMEOUT 120.0 /* s: a test sandbox and an overlay as root */

/* `bin check --json`'s output and exit status; 0, or -1 with err. */
static int run_check(const char *bin, char **out, int *status, char *err, size_t errlen)
{
    char path[] = "/tmp/abx-e2e-check.XXXXXX";
    const char *const argv[] = {bin, "check", "--json", NULL};
    size_t len = 0;
    int fd = mkostemp(path, O_CLOEXEC), rc = -1;

    *out = NULL;
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
        return -1;
    }
    *status = abx_local_run(argv, 0, fd, CHECK_TIMEOUT, 1);
    if (*status < 0)
        snprintf(err, errlen, "%s check %s", bin, abx_signal_count() ? "interrupted"
                 : "gave no answer in 120 s, or was killed");
    else
        rc = abx_read_file(path, 1 << 20, out, &len, err, errlen);
    close(fd);
    unlink(path);
    return rc;
}

void abx_doctor_local(struct abx_doc *d, struct abx_config *cfg)
{
    struct abx_env *env = &cfg->env;
    cJSON *sec = abx_doc_section(d, "localHost", "local host (abx-local check)"), *doc;
    const cJSON *it, *ok;
    char bin[PATH_MAX], err[8192];
    char *text = NULL;
    int status = 0;

    if (abx_local_binary(bin, sizeof bin, err, sizeof err) != 0) {
        abx_doc_problem(d, "build it (make build-local) or set ABX_LOCAL_BIN", "%s", err);
        return;
    }
    abx_doc_str(sec, "binary", bin);
    if (run_check(bin, &text, &status, err, sizeof err) != 0) {
        abx_doc_problem(d, "run `abx-local check` yourself to see why", "%s", err);
        return;
    }
    doc = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        abx_doc_problem(d, "run `abx-local check` yourself to see why",
                        "%s check --json printed no JSON object (exit %d)", bin, status);
        return;
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "lines"))
        if (cJSON_IsString(it))
            abx_doc_line(d, "%s", it->valuestring);
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "problems")) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "problem");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(it, "fix");
        abx_doc_problem(d, cJSON_IsString(f) ? f->valuestring : "see abx-local check", "%s",
                        cJSON_IsString(p) ? p->valuestring : "?");
    }
    ok = cJSON_GetObjectItemCaseSensitive(doc, "ok");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "lines");
    cJSON_AddItemToObject(sec, "check", doc);
    if (!cJSON_IsTrue(ok)) {
        abx_doc_line(d, "abx-local not started: the problems above stop it");
        cJSON_AddBoolToObject(sec, "started", 0);
        return;
    }
    if (abx_local_start(env, &cfg->opt, err, sizeof err) != 0) {
        cJSON_AddBoolToObject(sec, "started", 0);
        abx_doc_problem(d, "its stderr is in the problem; `abx-local check` lists what the "
                        "host offers", "abx-local did not start: %s", err);
        return;
    }
    abx_config_seal(cfg);   /* again: the platform is abx-local now */
    cJSON_AddBoolToObject(sec, "started", 1);
    abx_doc_line(d, "abx-local started: %s", env->endpoint);
}
