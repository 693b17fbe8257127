/* Module e2e.commands: sbx.commands (metatable e2e.Commands). Lua API:
 * docs/lua-api.md "sbx.commands"; wire: envd.h (process streams). The
 * handle that owns each process stream is lua_cmdhandle.c: a foreground
 * run is a handle waited on at once. */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "jsonutil.h"
#include "lua_cmdhandle.h"
#include "lua_commands.h"
#include "lua_e2e.h"
#include "lua_json.h"
#include "lua_sbxmap.h"
#include "lua_sbxtype.h"
#include "lua_util.h"

#define DEFAULT_TIMEOUT_S 60.0

/* ---- helpers ---------------------------------------------------------- */
static uint32_t check_pid(lua_State *L, int arg)
{
    lua_Integer pid = luaL_checkinteger(L, arg);

    luaL_argcheck(L, pid >= 0 && pid <= (lua_Integer)UINT32_MAX, arg,
                  "pid out of range");
    return (uint32_t)pid;
}

/* sbx.commands at 1 and a pid at 2: the sandbox (checked alive). */
static struct abx_lsandbox *pid_target(lua_State *L, uint32_t *pid)
{
    luaL_checkudata(L, 1, ABX_COMMANDS_MT);
    *pid = check_pid(L, 2);
    return abx_lowner(L, 1);
}

/* ---- sbx.commands ----------------------------------------------------- */
static int c_run(lua_State *L)
{
    static const char *const known[] = {
        "background", "envs", "cwd", "user", "timeout",
        "on_stdout", "on_stderr", "stdin", NULL,
    };
    struct abx_lsandbox *s;
    struct abx_proc_cfg cfg;
    struct abx_proc *pr;
    struct abx_err e;
    const char *args[4];
    cJSON *envs = NULL;
    int background, cbo, cbe, envs_idx, hidx;

    luaL_checkudata(L, 1, ABX_COMMANDS_MT);
    s = abx_lowner(L, 1);
    memset(&cfg, 0, sizeof cfg);
    args[0] = "-l";
    args[1] = "-c";
    args[2] = abx_lcheck_cstring(L, 2);
    args[3] = NULL;
    abx_lopt_check(L, 3, "run", known);
    background = abx_lopt_bool(L, 3, "background", 0);
    cfg.cwd = abx_lopt_string(L, 3, "cwd", NULL);
    cfg.user = abx_lopt_string(L, 3, "user", NULL);
    cfg.timeout = abx_lopt_seconds(L, 3, "timeout", DEFAULT_TIMEOUT_S);
    cfg.stdin_given = abx_lopt_push(L, 3, "stdin", LUA_TBOOLEAN);
    lua_pop(L, 1);
    cfg.stdin_open = abx_lopt_bool(L, 3, "stdin", 0);
    cbo = abx_lopt_push(L, 3, "on_stdout", LUA_TFUNCTION) ? lua_gettop(L) : 0;
    cbe = abx_lopt_push(L, 3, "on_stderr", LUA_TFUNCTION) ? lua_gettop(L) : 0;
    abx_lopt_push(L, 3, "envs", LUA_TTABLE);
    envs_idx = lua_gettop(L);
    lua_getiuservalue(L, 1, 1);
    /* run's callbacks stay with a background handle, for its wait. */
    abx_lhandle_push(L, -1, background ? cbo : 0, background ? cbe : 0);
    hidx = lua_gettop(L);
    /* Last thing that may raise: from here to the free, nothing does. */
    envs = abx_lopt_env_map(L, envs_idx, 3);
    cfg.cmd = "/bin/bash";
    cfg.args = args;
    cfg.envs = envs;
    abx_err_clear(&e);
    pr = abx_proc_start(&s->envd, &cfg, &e);
    cJSON_Delete(envs);
    if (!pr)
        return abx_err_raise(L, &e);
    abx_lhandle_own(L, hidx, pr, cfg.timeout);
    if (background) {
        lua_pushvalue(L, hidx);
        return 1;
    }
    return abx_lhandle_wait(L, hidx, cbo, cbe);
}

static int c_list(lua_State *L)
{
    struct abx_lsandbox *s;
    struct abx_lbox *box;
    const cJSON *p, *cfg, *v;
    struct abx_err e;
    lua_Integer i = 0;

    luaL_checkudata(L, 1, ABX_COMMANDS_MT);
    s = abx_lowner(L, 1);
    box = abx_lbox_push(L, 0);
    abx_err_clear(&e);
    if (abx_envd_proc_list(&s->envd, &box->json, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    lua_newtable(L);
    cJSON_ArrayForEach(p, box->json) {
        lua_createtable(L, 0, 6);
        v = abx_json_field(p, "pid");
        lua_pushinteger(L, cJSON_IsNumber(v) ? (lua_Integer)v->valuedouble
                                             : 0);
        lua_setfield(L, -2, "pid");
        abx_lset_jstring(L, p, "tag", "tag");
        cfg = abx_json_field(p, "config");
        abx_lset_jstring(L, cfg, "cmd", "cmd");
        abx_lset_jstring(L, cfg, "cwd", "cwd");
        v = abx_json_field(cfg, "args");
        if (cJSON_IsArray(v))
            abx_json_push(L, v);
        else
            lua_newtable(L);
        lua_setfield(L, -2, "args");
        v = abx_json_field(cfg, "envs");
        if (cJSON_IsObject(v))
            abx_json_push(L, v);
        else
            lua_newtable(L);
        lua_setfield(L, -2, "envs");
        lua_rawseti(L, -2, ++i);
    }
    abx_lbox_release(box);
    return 1;
}

static int c_kill(lua_State *L)
{
    uint32_t pid;
    struct abx_lsandbox *s = pid_target(L, &pid);
    struct abx_err e;
    int r;

    abx_err_clear(&e);
    if ((r = abx_envd_signal(&s->envd, pid, 9, &e)) < 0)
        return abx_err_raise(L, &e);
    lua_pushboolean(L, r);
    return 1;
}

static int c_connect(lua_State *L)
{
    static const char *const known[] = {"timeout", NULL};
    struct abx_lsandbox *s;
    struct abx_proc *pr;
    struct abx_err e;
    uint32_t pid;
    double timeout;

    luaL_checkudata(L, 1, ABX_COMMANDS_MT);
    pid = check_pid(L, 2);
    abx_lopt_check(L, 3, "connect", known);
    timeout = abx_lopt_seconds(L, 3, "timeout", DEFAULT_TIMEOUT_S);
    s = abx_lowner(L, 1);
    lua_getiuservalue(L, 1, 1);
    abx_lhandle_push(L, -1, 0, 0);
    abx_err_clear(&e);
    if (!(pr = abx_proc_connect(&s->envd, pid, timeout, &e)))
        return abx_err_raise(L, &e);
    abx_lhandle_own(L, -1, pr, timeout);
    return 1;
}

static int c_send_stdin(lua_State *L)
{
    uint32_t pid;
    struct abx_lsandbox *s = pid_target(L, &pid);
    size_t len;
    const char *data = luaL_checklstring(L, 3, &len);

    return abx_lsend_stdin(L, &s->envd, pid, data, len);
}

static int c_close_stdin(lua_State *L)
{
    uint32_t pid;
    struct abx_lsandbox *s = pid_target(L, &pid);
    struct abx_err e;

    abx_err_clear(&e);
    if (abx_envd_close_stdin(&s->envd, pid, &e) < 0)
        return abx_err_raise(L, &e);
    return 0;
}

static int c_open_streams(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)abx_lhandle_open_streams());
    return 1;
}

static const luaL_Reg methods[] = {
    {"run", c_run},
    {"list", c_list},
    {"kill", c_kill},
    {"connect", c_connect},
    {"send_stdin", c_send_stdin},
    {"close_stdin", c_close_stdin},
    {NULL, NULL},
};

static const struct abx_lsub commands = {ABX_COMMANDS_MT, methods,
                                         "_open_streams", c_open_streams};

void abx_lcommands_push(lua_State *L, int sbx_idx)
{
    abx_lsub_push(L, sbx_idx, &commands);
}

int luaopen_e2e_commands(lua_State *L)
{
    return abx_lsub_open(L, &commands);
}
