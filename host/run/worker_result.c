/* A test's result as the reports hold it, made from what the prelude's
 * run returned (worker_int.h): texts cleaned and capped, the message its
 * first line. */
#include <stdlib.h>
#include <string.h>

#include "worker_int.h"

/* Report texts are bounded: a 100 MB error message must neither flood the
 * terminal nor outgrow the pipe line limit (the result would be lost). */
#define FIELD_MAX ((size_t)1024 * 1024 + 4096)  /* capture cap + note */
#define MESSAGE_MAX 4096  /* the one-line message */

/* Copies a Lua string field for the reports (abx_clean_text: NULs shown,
 * invalid UTF-8 replaced, capped at FIELD_MAX with a note). */
static void set_field(lua_State *L, int idx, const char *key, char **dst)
{
    struct abx_buf b;
    const char *s;
    size_t len;

    lua_getfield(L, idx, key);
    if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return;
    }
    s = lua_tolstring(L, -1, &len);
    abx_buf_init(&b, FIELD_MAX + 256);
    abx_clean_text(&b, s, len, FIELD_MAX);
    abx_result_set(dst, abx_buf_cstr(&b));
    abx_buf_free(&b);
    lua_pop(L, 1);
}

static double num_field(lua_State *L, int idx, const char *key)
{
    double v;

    lua_getfield(L, idx, key);
    v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return v;
}

static void strlist_field(lua_State *L, int idx, const char *key,
                          struct abx_strlist *out)
{
    lua_Integer i, n;

    lua_getfield(L, idx, key);
    if (lua_type(L, -1) == LUA_TTABLE) {
        n = (lua_Integer)lua_rawlen(L, -1);
        for (i = 1; i <= n; i++) {
            if (lua_rawgeti(L, -1, i) == LUA_TSTRING)
                abx_strlist_push(out, lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
}

struct abx_result *abx_wresult_from_lua(lua_State *L, const char *file, int ii, int ri)
{
    struct abx_result *r = abx_result_new();
    struct abx_strlist groups;
    char *full = NULL, *nl;
    int o;

    if (!r)
        return NULL;
    abx_strlist_init(&groups);
    strlist_field(L, ii, "groups", &groups);
    lua_getfield(L, ii, "name");
    abx_result_set_identity(r, file, (int)num_field(L, ii, "line"),
                            (const char *const *)groups.items, groups.n,
                            lua_tostring(L, -1));
    lua_pop(L, 1);
    abx_strlist_free(&groups);
    strlist_field(L, ii, "marks", &r->markers);
    /* Ids of the sandboxes a failed test used (the prelude sets them). */
    strlist_field(L, ri, "sandboxes", &r->sandbox_ids);

    lua_getfield(L, ri, "outcome");
    o = abx_outcome_parse(lua_tostring(L, -1));
    lua_pop(L, 1);
    r->outcome = o < 0 ? ABX_OUTCOME_ERROR : (enum abx_outcome)o;
    lua_getfield(L, ri, "when");
    o = lua_isstring(L, -1) ? abx_phase_parse(lua_tostring(L, -1)) : -1;
    lua_pop(L, 1);
    r->when = o < 0 ? ABX_PHASE_NONE : (enum abx_phase)o;
    lua_getfield(L, ri, "xpass_strict");
    r->xpass_strict = lua_toboolean(L, -1);
    lua_pop(L, 1);
    /* message: first line; longrepr: the whole text and traceback. */
    set_field(L, ri, "message", &full);
    if (full) {
        set_field(L, ri, "longrepr", &r->longrepr);
        if (!r->longrepr)
            abx_result_set(&r->longrepr, full);
        if ((nl = strchr(full, '\n')))
            *nl = '\0';
        if (strlen(full) > MESSAGE_MAX) {
            size_t cut = MESSAGE_MAX - 3;
            while (cut > 0 && ((unsigned char)full[cut] & 0xC0) == 0x80)
                cut--;  /* never split a UTF-8 sequence */
            memcpy(full + cut, "...", 4);
        }
        abx_result_set(&r->message, full);
        free(full);
    }
    set_field(L, ri, "reason", &r->reason);
    set_field(L, ri, "skip_loc", &r->skip_loc);
    set_field(L, ri, "output", &r->output);
    set_field(L, ri, "teardown_message", &r->teardown_message);
    set_field(L, ri, "teardown_longrepr", &r->teardown_longrepr);
    r->dur_setup = num_field(L, ri, "setup");
    r->dur_call = num_field(L, ri, "call");
    r->dur_teardown = num_field(L, ri, "teardown");
    r->worker = abx_wmsg_index();
    return r;
}

struct abx_result *abx_wresult_error(const char *nodeid, const char *file, const char *raw)
{
    struct abx_result *r = abx_result_new();
    struct abx_buf clean;
    const char *msg;

    if (!r)
        return NULL;
    abx_buf_init(&clean, FIELD_MAX + 256);
    abx_clean_text(&clean, raw ? raw : "", raw ? strlen(raw) : 0, FIELD_MAX);
    msg = abx_buf_cstr(&clean);
    abx_result_set(&r->nodeid, nodeid);
    abx_result_set(&r->file, file);
    abx_result_set(&r->name, nodeid);
    r->outcome = ABX_OUTCOME_ERROR;
    r->when = ABX_PHASE_COLLECT;
    abx_result_set(&r->message, msg);
    abx_result_set(&r->longrepr, msg);
    abx_buf_free(&clean);
    r->worker = abx_wmsg_index();
    return r;
}
