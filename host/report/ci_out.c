/* Output for GitHub Actions (GITHUB_ACTIONS=true, no --no-ci-annotations):
 * the annotations (ci_annotate.c) and the job summary (ci_summary.c) of
 * the report document. */
#include <stdlib.h>
#include <string.h>

#include "ci.h"

void abx_ci_report(const struct abx_config *cfg, const struct abx_report *rep)
{
    const struct abx_opts *o = &cfg->opt;
    const char *ga = getenv("GITHUB_ACTIONS");
    const char *path = getenv("GITHUB_STEP_SUMMARY");

    if (o->no_ci_annotations || !ga || strcmp(ga, "true") != 0)
        return;
    abx_ci_annotate(rep);
    if (path && *path)
        abx_ci_summary(path, o, &cfg->env, rep);
}
