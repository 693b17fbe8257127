/* Growable arrays (vec.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

void *abx_vec_grow(void *items, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap : 16;
    void *p;

    if (need <= *cap && items)
        return items;
    while (c < need) {
        if (c > SIZE_MAX / 2) {
            errno = EOVERFLOW;
            return NULL;
        }
        c *= 2;
    }
    if (size && c > SIZE_MAX / size) {
        errno = EOVERFLOW;
        return NULL;
    }
    p = realloc(items, c * (size ? size : 1));
    if (!p)
        return NULL;
    *cap = c;
    return p;
}

int abx_vec_reserve(void *arrp, size_t *cap, size_t need, size_t size)
{
    void *items, *p;

    /* memcpy: arrp may point at any object pointer type, not a void * */
    memcpy(&items, arrp, sizeof items);
    if (!(p = abx_vec_grow(items, cap, need, size)))
        return -1;
    memcpy(arrp, &p, sizeof p);
    return 0;
}
