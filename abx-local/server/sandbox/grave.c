/* --vary dead-listed=terminated: a killed sandbox stays in an unfiltered
 * list for a while, as "terminated" (FC documents the state, not how long
 * it is listed). The grave holds a reference to each record for GRAVE_MS. */
#include <stdlib.h>

#include "base.h"
#include "sandbox.h"

#define GRAVE_MS 20000
#define GRAVE_MAX 256

static pthread_mutex_t grave_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    struct abxl_sbx *s;
    int64_t at;
} graves[GRAVE_MAX];
static size_t n_graves;

/* Takes a reference of the caller's: the record stays until it expires. */
void abxl_grave_add(struct abxl_sbx *s)
{
    struct abxl_sbx *old = NULL;
    pthread_mutex_lock(&abxl_reg_lock);
    s->refs++;
    pthread_mutex_unlock(&abxl_reg_lock);
    pthread_mutex_lock(&grave_lock);
    if (n_graves == GRAVE_MAX) {   /* full: the oldest goes first */
        old = graves[0].s;
        for (size_t i = 1; i < n_graves; i++)
            graves[i - 1] = graves[i];
        n_graves--;
    }
    graves[n_graves].s = s;
    graves[n_graves++].at = abxl_now_ms();
    pthread_mutex_unlock(&grave_lock);
    abxl_sbx_unref(old);
}

/* References to the records still listed (oldest kill first); expired
 * ones are dropped. Free with abxl_reg_put_all. */
struct abxl_sbx **abxl_grave_all(size_t *n)
{
    struct abxl_sbx *gone[GRAVE_MAX], **v;
    size_t k = 0, ng = 0;
    int64_t now = abxl_now_ms();
    pthread_mutex_lock(&grave_lock);
    while (ng < n_graves && now - graves[ng].at > GRAVE_MS) {
        gone[ng] = graves[ng].s;
        ng++;
    }
    for (size_t i = ng; i < n_graves; i++)
        graves[i - ng] = graves[i];
    n_graves -= ng;
    v = calloc(n_graves + 1, sizeof *v);
    pthread_mutex_lock(&abxl_reg_lock);
    for (size_t i = 0; v && i < n_graves; i++) {
        graves[i].s->refs++;
        v[k++] = graves[i].s;
    }
    pthread_mutex_unlock(&abxl_reg_lock);
    pthread_mutex_unlock(&grave_lock);
    for (size_t i = 0; i < ng; i++)
        abxl_sbx_unref(gone[i]);
    *n = k;
    return v;
}
