/* The runtimes by name (runtime.h): the one list of them. */
#include <string.h>

#include "base.h"
#include "sandbox.h"

static const struct abxl_runtime *const runtimes[] = {&abxl_runtime_bwrap,
                                                      &abxl_runtime_gvisor};

const struct abxl_runtime *abxl_runtime_named(const char *name)
{
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (strcmp(runtimes[i]->name, name) == 0)
            return runtimes[i];
    return NULL;
}

const struct abxl_runtime *abxl_runtime(void)
{
    /* main.c refused any other name: bubblewrap is only the fallback of
     * a program that never parsed the options. */
    const struct abxl_runtime *r = abxl_runtime_named(abxl_cfg.runtime);
    return r ? r : &abxl_runtime_bwrap;
}
