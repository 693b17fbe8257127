/* A shared library loaded on first use (lazylib.c): a program not linked
 * to it skips mapping and relocating it, and its dependencies, on every
 * run that does not need it (libcurl for a run that talks to no
 * platform, libedit outside the REPL). The one loader: curl_lazy.c and
 * the REPL's line editor describe their library and forward to it. */
#ifndef ABX_LAZYLIB_H
#define ABX_LAZYLIB_H

#include <stddef.h>

/* One function: its name, and where its pointer goes (the address of a
 * function pointer variable of the right type). */
struct abx_lazysym {
    const char *name;
    void *fn;
};

struct abx_lazylib {
    const char *soname;              /* "libcurl.so.4" */
    const struct abx_lazysym *syms;  /* ending with {NULL, NULL} */
    int state;                       /* 0 not tried, 1 loaded, -1 failed */
    char error[256];                 /* why it failed */
};

/* Loads l once (thread-safe): 1 when its functions are there to call,
 * else 0 with l->error set (dlopen's or dlsym's words). */
int abx_lazylib_ready(struct abx_lazylib *l);

#endif
