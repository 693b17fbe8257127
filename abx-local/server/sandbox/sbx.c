/* The sandbox registry: a small locked list of reference-counted records. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sandbox.h"

pthread_mutex_t abxl_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct abxl_sbx *reg_head;

struct abxl_sbx *abxl_sbx_new(void)
{
    struct abxl_sbx *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->metadata = cJSON_CreateObject();
    if (s->metadata == NULL) {
        free(s);
        return NULL;
    }
    s->pidfd = -1;
    s->netns_fd = -1;
    s->egress_fd = -1;
    s->uid_fd = -1;
    s->uid_base = ABXL_UID_BASE;
    s->refs = 1;
    s->state = ABXL_SBX_STARTING;
    return s;
}

void abxl_sbx_unref(struct abxl_sbx *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&abxl_reg_lock);
    int left = --s->refs;
    pthread_mutex_unlock(&abxl_reg_lock);
    if (left > 0)
        return;
    if (s->pidfd >= 0)
        close(s->pidfd);
    if (s->netns_fd >= 0)
        close(s->netns_fd);
    if (s->egress_fd >= 0)
        close(s->egress_fd);
    if (s->uid_fd >= 0)
        close(s->uid_fd);
    abxl_sbxlog_close(s->log);
    cJSON_Delete(s->metadata);
    cJSON_Delete(s->network);
    abxl_metrics_free(s->metrics);
    explicit_bzero(s->access_token, sizeof s->access_token);
    explicit_bzero(s->traffic_token, sizeof s->traffic_token);
    free(s);
}

/* The registry holds its own reference while a sandbox is listed. The
 * count and the insertion share one lock hold, so concurrent creates
 * cannot overshoot max between them. */
bool abxl_reg_add(struct abxl_sbx *s, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&abxl_reg_lock);
    for (struct abxl_sbx *e = reg_head; e; e = e->next)
        n++;
    bool room = n < max;
    if (room) {
        s->refs++;
        s->next = reg_head;
        reg_head = s;
    }
    pthread_mutex_unlock(&abxl_reg_lock);
    return room;
}

struct abxl_sbx *abxl_reg_get(const char *id)
{
    return abxl_reg_find(id, false);
}

struct abxl_sbx *abxl_reg_find(const char *id, bool any_case)
{
    char key[ABXL_ID_MAX + 1];
    size_t n = strlen(id);
    /* The legacy "<id>-<clientID>" form; an fc id has a '-' of its own. */
    if (n > sizeof ABXL_CLIENT_ID &&
        strcmp(id + n - sizeof ABXL_CLIENT_ID + 1, ABXL_CLIENT_ID) == 0 &&
        id[n - sizeof ABXL_CLIENT_ID] == '-')
        n -= sizeof ABXL_CLIENT_ID;
    if (n == 0 || n > ABXL_ID_MAX)
        return NULL;
    memcpy(key, id, n);
    key[n] = '\0';
    struct abxl_sbx *found = NULL;
    pthread_mutex_lock(&abxl_reg_lock);
    for (struct abxl_sbx *s = reg_head; s; s = s->next) {
        if ((any_case ? strcasecmp(s->id, key) : strcmp(s->id, key)) == 0 &&
            (s->state == ABXL_SBX_RUNNING || s->state == ABXL_SBX_PAUSED)) {
            s->refs++;
            found = s;
            break;
        }
    }
    pthread_mutex_unlock(&abxl_reg_lock);
    return found;
}

struct abxl_sbx **abxl_reg_all(size_t *n, bool include_hidden)
{
    pthread_mutex_lock(&abxl_reg_lock);
    size_t cnt = 0;
    for (struct abxl_sbx *s = reg_head; s; s = s->next)
        cnt++;
    struct abxl_sbx **v = calloc(cnt + 1, sizeof *v);
    size_t k = 0;
    if (v != NULL) {
        for (struct abxl_sbx *s = reg_head; s; s = s->next) {
            if (!include_hidden && s->state != ABXL_SBX_RUNNING &&
                s->state != ABXL_SBX_PAUSED)
                continue;
            s->refs++;
            v[k++] = s;
        }
    }
    pthread_mutex_unlock(&abxl_reg_lock);
    *n = k;
    return v;
}

void abxl_reg_put_all(struct abxl_sbx **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        abxl_sbx_unref(v[i]);
    free(v);
}

size_t abxl_reg_count(void)
{
    size_t n = 0;
    pthread_mutex_lock(&abxl_reg_lock);
    for (struct abxl_sbx *s = reg_head; s; s = s->next)
        n++;
    pthread_mutex_unlock(&abxl_reg_lock);
    return n;
}

bool abxl_reg_claim_kill(struct abxl_sbx *s)
{
    bool won = false;
    pthread_mutex_lock(&abxl_reg_lock);
    if (s->state != ABXL_SBX_DEAD) {
        s->state = ABXL_SBX_DEAD;
        won = true;
        for (struct abxl_sbx **pp = &reg_head; *pp; pp = &(*pp)->next) {
            if (*pp == s) {
                *pp = s->next;
                s->next = NULL;
                s->refs--;   /* the registry's reference; caller holds one */
                break;
            }
        }
    }
    pthread_mutex_unlock(&abxl_reg_lock);
    return won;
}
