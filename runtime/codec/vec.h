/* Growable arrays (vec.c), the one way a C array of ours grows: doubling
 * (amortised O(1) appends), overflow-checked, shared with abx-local. */
#ifndef ABX_VEC_H
#define ABX_VEC_H

#include <stddef.h>

/* items (NULL, or from malloc) made to hold at least need elements of
 * size bytes: *cap doubles (from 16) until it does, and the array is
 * realloc'd. Returns the array to use from now on (items itself when it
 * already held need), or NULL when out of memory or when the size would
 * overflow: then items is unchanged and still the caller's. */
void *abx_vec_grow(void *items, size_t *cap, size_t need, size_t size);
/* The same in place: arrp is the address of the array pointer (any
 * object pointer type). 0, or -1 with the array as it was. */
int abx_vec_reserve(void *arrp, size_t *cap, size_t need, size_t size);
/* ABX_VEC_RESERVE(v, cap, need): v (a T *) holds need elements. */
#define ABX_VEC_RESERVE(v, cap, need) abx_vec_reserve(&(v), &(cap), (need), sizeof *(v))

#endif
