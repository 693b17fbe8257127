/* Shared libraries loaded on first use (lazylib.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "lazylib.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void load(struct abx_lazylib *l)
{
    void *lib = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    const struct abx_lazysym *s;

    if (!lib) {
        const char *e = dlerror();
        snprintf(l->error, sizeof l->error, "%s", e ? e : l->soname);
        __atomic_store_n(&l->state, -1, __ATOMIC_RELEASE);
        return;
    }
    for (s = l->syms; s->name; s++) {
        void *sym = dlsym(lib, s->name);
        if (!sym) {
            snprintf(l->error, sizeof l->error, "%s has no %s", l->soname, s->name);
            dlclose(lib);
            __atomic_store_n(&l->state, -1, __ATOMIC_RELEASE);
            return;
        }
        /* POSIX's way from dlsym's void * to a function pointer */
        memcpy(s->fn, &sym, sizeof sym);
    }
    /* release: a reader that sees 1 without the lock sees the pointers */
    __atomic_store_n(&l->state, 1, __ATOMIC_RELEASE);
}

int abx_lazylib_ready(struct abx_lazylib *l)
{
    int state = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);

    if (state == 0) {
        pthread_mutex_lock(&g_lock);
        if (l->state == 0)
            load(l);
        state = l->state;
        pthread_mutex_unlock(&g_lock);
    }
    return state == 1;
}
