/* Sandbox lifecycle: kill, pause (the cgroup freezer; SIGSTOP where there
 * is none), resume, TTL reaper. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "log.h"
#include "server.h"

void abxl_life_kill(struct abxl_sbx *s)
{
    if (abxl_reg_claim_kill(s))
        abxl_spawn_destroy(s);
}

/* Moves s to `to` by sending sig to its processes: 0 done, 1 already
 * there or another change is under way, -1 gone. busy keeps a second
 * change (and the reaper) off s while the signals go out unlocked. */
static int change_state(struct abxl_sbx *s, enum abxl_sbx_state to, int sig, int64_t end_ms)
{
    int rc = 0;
    pthread_mutex_lock(&abxl_reg_lock);
    if (s->state == ABXL_SBX_DEAD)
        rc = -1;
    else if (s->state == to || s->busy)
        rc = 1;
    else
        s->busy = true;
    pthread_mutex_unlock(&abxl_reg_lock);
    if (rc != 0)
        return rc;
    /* The freezer stops every task at once, forks in flight included, and
     * a frozen process cannot tell it was stopped (SIGSTOP shows). */
    if (!s->cgroup || abxl_cgroup_freeze(s->id, to == ABXL_SBX_PAUSED) != 0)
        abxl_procs_signal(s, sig);
    pthread_mutex_lock(&abxl_reg_lock);
    if (s->state != ABXL_SBX_DEAD) {   /* killed meanwhile: stays dead */
        s->state = to;
        if (end_ms > 0)
            s->end_ms = end_ms;
    }
    s->busy = false;
    pthread_mutex_unlock(&abxl_reg_lock);
    return 0;
}

int abxl_life_pause(struct abxl_sbx *s)
{
    return change_state(s, ABXL_SBX_PAUSED, SIGSTOP, 0);
}

int abxl_life_resume(struct abxl_sbx *s, int64_t end_ms)
{
    return change_state(s, ABXL_SBX_RUNNING, SIGCONT, end_ms);
}

void abxl_life_kill_all(void)
{
    size_t n;
    struct abxl_sbx **v = abxl_reg_all(&n, true);
    for (size_t i = 0; i < n; i++)
        abxl_life_kill(v[i]);
    abxl_reg_put_all(v, n);
}

/* ---- reaper: TTL expiry and sandboxes whose bwrap exited on its own ---- */
static pthread_t reaper_tid;
static pthread_mutex_t rp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rp_cv = PTHREAD_COND_INITIALIZER;
static bool rp_stop, rp_started;

static void reap_once(void)
{
    size_t n;
    struct abxl_sbx **v = abxl_reg_all(&n, false);
    int64_t now = abxl_now_ms();
    for (size_t i = 0; i < n; i++) {
        struct abxl_sbx *s = v[i];
        int status;
        /* bwrap_pid under the lock: whoever reaps bwrap (here or
         * abxl_spawn_destroy) zeroes it, so it is never waited for twice
         * (a second wait could catch a reused pid). */
        pthread_mutex_lock(&abxl_reg_lock);
        bool exited = s->bwrap_pid > 0 && waitpid(s->bwrap_pid, &status, WNOHANG) == s->bwrap_pid;
        if (exited)
            s->bwrap_pid = 0;
        pthread_mutex_unlock(&abxl_reg_lock);
        if (exited) {
            abxl_log(ABXL_LOG_INFO, "sandbox %s exited on its own", s->id);
            abxl_life_kill(s);
            continue;
        }
        abxl_metrics_sample(s, false);   /* when the profile's interval has passed */
        pthread_mutex_lock(&abxl_reg_lock);
        bool expired = s->state == ABXL_SBX_RUNNING && !s->busy && now >= s->end_ms;
        bool pause = s->auto_pause;
        pthread_mutex_unlock(&abxl_reg_lock);
        if (!expired)
            continue;
        if (pause) {
            abxl_life_pause(s);
        } else {
            abxl_log(ABXL_LOG_INFO, "sandbox %s reached its end time, killing", s->id);
            abxl_life_kill(s);
        }
    }
    abxl_reg_put_all(v, n);
}

static void *reaper_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rp_lock);
    while (!rp_stop) {
        pthread_mutex_unlock(&rp_lock);
        reap_once();
        pthread_mutex_lock(&rp_lock);
        struct timespec ts;
        abxl_abstime_in(&ts, 200);
        if (!rp_stop)
            pthread_cond_timedwait(&rp_cv, &rp_lock, &ts);
    }
    pthread_mutex_unlock(&rp_lock);
    return NULL;
}

int abxl_reaper_start(void)
{
    if (pthread_create(&reaper_tid, NULL, reaper_main, NULL) != 0)
        return -1;
    rp_started = true;
    return 0;
}

void abxl_reaper_stop(void)
{
    if (!rp_started)
        return;
    pthread_mutex_lock(&rp_lock);
    rp_stop = true;
    pthread_cond_broadcast(&rp_cv);
    pthread_mutex_unlock(&rp_lock);
    pthread_join(reaper_tid, NULL);
    rp_started = false;
}
