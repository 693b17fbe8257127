/* Sandbox lifecycle: kill, pause (the cgroup freezer; SIGSTOP where there
 * is none), a filesystem-only pause (its processes end, its disk stays),
 * resume, TTL reaper. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "base.h"
#include "log.h"
#include "rootfs.h"
#include "sandbox.h"

/* Signalled when a state change ends (busy goes false). */
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;

void abxl_life_kill(struct abxl_sbx *s)
{
    if (!abxl_reg_claim_kill(s))
        return;
    /* A pause or resume under way (a boot, for a cold one) ends first:
     * the processes it starts must not outlive the kill. */
    pthread_mutex_lock(&abxl_reg_lock);
    while (s->busy)
        pthread_cond_wait(&idle_cv, &abxl_reg_lock);
    pthread_mutex_unlock(&abxl_reg_lock);
    abxl_spawn_destroy(s);
    if (abxl_vary(ABXL_V_DEAD_LISTED) == 1)
        abxl_grave_add(s);
}

/* Takes s for a change to `to`: 0 taken (busy set), 1 already there or
 * another change is under way, -1 gone. busy keeps a second change (and
 * the reaper) off s while the change runs unlocked. */
static int begin(struct abxl_sbx *s, enum abxl_sbx_state to)
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
    return rc;
}

static void finish(struct abxl_sbx *s, enum abxl_sbx_state to, bool cold, int64_t end_ms)
{
    pthread_mutex_lock(&abxl_reg_lock);
    if (s->state != ABXL_SBX_DEAD) {   /* killed meanwhile: stays dead */
        s->state = to;
        s->cold = cold;
        if (end_ms > 0)
            s->end_ms = end_ms;
    }
    s->busy = false;
    pthread_cond_broadcast(&idle_cv);
    pthread_mutex_unlock(&abxl_reg_lock);
}

/* Moves s to `to` by freezing or thawing it (sig where there is no
 * freezer). */
static int change_state(struct abxl_sbx *s, enum abxl_sbx_state to, int sig, int64_t end_ms)
{
    int rc = begin(s, to);
    if (rc != 0)
        return rc;
    /* The freezer stops every task at once, forks in flight included, and
     * a frozen process cannot tell it was stopped (SIGSTOP shows). */
    if (!s->cgroup || abxl_cgroup_freeze(s->id, to == ABXL_SBX_PAUSED) != 0)
        abxl_procs_signal(s, sig);
    finish(s, to, false, end_ms);
    return 0;
}

int abxl_life_pause(struct abxl_sbx *s)
{
    return change_state(s, ABXL_SBX_PAUSED, SIGSTOP, 0);
}

/* E2B's pause with memory: false. Its disk outlives its processes only
 * where it is a file system of its own: not under a runtime that says
 * otherwise (gVisor: runsc's overlay over the root lives in the sentry's
 * memory) nor on a tmpfs disk (a machine without loop devices). There its
 * memory is kept, and the log says so. */
int abxl_life_pause_fs(struct abxl_sbx *s)
{
    const char *why = abxl_runtime()->fs_pause_keeps_memory;
    if (why || abxl_cfg.disk_tmpfs) {
        abxl_log(ABXL_LOG_WARN, "sandbox %s: a filesystem-only pause keeps memory here (%s)",
                 s->id, why ? why : "the disk is a tmpfs: no loop devices");
        return abxl_life_pause(s);
    }
    int rc = begin(s, ABXL_SBX_PAUSED);
    if (rc != 0)
        return rc;
    abxl_spawn_halt(s);
    /* Paused means its disk is written back and free: the next boot
     * mounts it again, and two mounts of one ext4 would ruin it. */
    if (abxl_disk_wait_free(s->dir, 30000) != 0)
        abxl_log(ABXL_LOG_ERROR, "sandbox %s: its disk is still attached 30 s after its "
                 "processes ended", s->id);
    abxl_log(ABXL_LOG_INFO, "sandbox %s paused, filesystem only: its processes ended", s->id);
    finish(s, ABXL_SBX_PAUSED, true, 0);
    return 0;
}

/* A filesystem-only paused sandbox boots again: -2 when it cannot (it
 * stays paused, the log says why). */
static int cold_resume(struct abxl_sbx *s, int64_t end_ms)
{
    int rc = begin(s, ABXL_SBX_RUNNING);
    if (rc != 0)
        return rc;
    char err[512];
    struct abxl_tmpl t = {0};
    bool booted = false;
    if (abxl_disk_wait_free(s->dir, 30000) != 0)
        abxl_fmt(err, sizeof err, "its disk is still attached");
    else if (abxl_tmpl_find(s->template_id, &t, err, sizeof err) == 0)
        booted = abxl_spawn_reboot(s, &t, err, sizeof err) == 0 &&
                 abxl_spawn_wait_ready(s, &t, err, sizeof err) == 0;
    abxl_tmpl_free(&t);
    if (!booted) {
        abxl_log(ABXL_LOG_ERROR, "sandbox %s: cannot boot it again: %s", s->id, err);
        abxl_spawn_halt(s);
        finish(s, ABXL_SBX_PAUSED, true, 0);
        return -2;
    }
    abxl_log(ABXL_LOG_INFO, "sandbox %s booted again after a filesystem-only pause", s->id);
    finish(s, ABXL_SBX_RUNNING, false, end_ms);
    return 0;
}

int abxl_life_resume(struct abxl_sbx *s, int64_t end_ms)
{
    pthread_mutex_lock(&abxl_reg_lock);
    bool cold = s->cold && s->state == ABXL_SBX_PAUSED;
    pthread_mutex_unlock(&abxl_reg_lock);
    if (cold)
        return cold_resume(s, end_ms);
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
        /* --vary reap-delay=30s: a sweep that comes by 30 s late. */
        int64_t late = abxl_vary(ABXL_V_REAP_DELAY) ? 30000 : 0;
        bool expired = s->state == ABXL_SBX_RUNNING && !s->busy && now >= s->end_ms + late;
        bool pause = s->auto_pause;
        pthread_mutex_unlock(&abxl_reg_lock);
        if (!expired)
            continue;
        if (pause && s->auto_pause_fs) {
            abxl_life_pause_fs(s);
        } else if (pause) {
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
