/* Module e2e.files: sbx.files (metatable e2e.Files); the directory
 * watcher is lua_watcher.c. Lua API: docs/lua-api.md "sbx.files"; wire:
 * envd.h (filesystem RPCs, /files, signed URLs).
 *
 * C-owned results (reply JSON, file bodies) live in a box on the Lua
 * stack while they are converted (lua_util.h), and a watch stream is
 * owned by a watcher userdata created before the stream, so no Lua error
 * strands them. */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "e2e_raise.h"
#include "jsonutil.h"
#include "lua_e2e.h"
#include "lua_files.h"
#include "lua_sbxtype.h"
#include "lua_util.h"
#include "lua_watcher.h"
#include "utf8.h"

#define URL_MAX 16384

/* The options of the methods that take only {user=}: checked, and the
 * user (NULL = the default one). */
static const char *user_opt(lua_State *L, int arg, const char *fname)
{
    static const char *const user_only[] = {"user", NULL};

    abx_lopt_check(L, arg, fname, user_only);
    return abx_lopt_string(L, arg, "user", NULL);
}

static struct abx_lsandbox *self(lua_State *L)
{
    luaL_checkudata(L, 1, ABX_FILES_MT);
    return abx_lowner(L, 1);
}

/* ---- EntryInfo / WriteInfo -> Lua ------------------------------------- */
static const char *type_name(const cJSON *v)
{
    const char *s;

    if (cJSON_IsNumber(v)) {
        switch ((int)v->valuedouble) {
        case 1: return "file";
        case 2: return "dir";
        case 3: return "symlink";
        default: return NULL;
        }
    }
    if (!cJSON_IsString(v))
        return NULL;
    s = v->valuestring;
    if (strcmp(s, "FILE_TYPE_FILE") == 0 || strcmp(s, "file") == 0)
        return "file";
    if (strcmp(s, "FILE_TYPE_DIRECTORY") == 0 || strcmp(s, "dir") == 0 ||
        strcmp(s, "directory") == 0)
        return "dir";
    if (strcmp(s, "FILE_TYPE_SYMLINK") == 0 || strcmp(s, "symlink") == 0)
        return "symlink";
    return NULL;
}

static void set_int(lua_State *L, const cJSON *o, const char *camel,
                    const char *key)
{
    struct abx_json_err je;
    int64_t v = 0;

    /* Absent is 0 (proto3 omits defaults); a bad value is left out. */
    if (abx_json_get_int(o, camel, &v, 0, INT64_MIN, INT64_MAX, &je) !=
        ABX_JSON_EBADTYPE) {
        lua_pushinteger(L, (lua_Integer)v);
        lua_setfield(L, -2, key);
    }
}

static void push_write_info(lua_State *L, const cJSON *o)
{
    const char *t = type_name(abx_json_field(o, "type"));

    lua_createtable(L, 0, 3);
    abx_lset_jstring(L, o, "name", "name");
    lua_pushstring(L, t ? t : "file");
    lua_setfield(L, -2, "type");
    abx_lset_jstring(L, o, "path", "path");
}

static void push_entry(lua_State *L, const cJSON *o)
{
    const char *t = type_name(abx_json_field(o, "type"));

    lua_createtable(L, 0, 10);
    abx_lset_jstring(L, o, "name", "name");
    if (t) {
        lua_pushstring(L, t);
        lua_setfield(L, -2, "type");
    }
    abx_lset_jstring(L, o, "path", "path");
    set_int(L, o, "size", "size");
    set_int(L, o, "mode", "mode");
    abx_lset_jstring(L, o, "permissions", "permissions");
    abx_lset_jstring(L, o, "owner", "owner");
    abx_lset_jstring(L, o, "group", "group");
    abx_lset_jstring(L, o, "modifiedTime", "modified_time");
    abx_lset_jstring(L, o, "symlinkTarget", "symlink_target");
}

/* Pushes the array of entries (or write infos) in json. */
static void push_array(lua_State *L, const cJSON *json,
                       void (*push)(lua_State *, const cJSON *))
{
    const cJSON *it;
    lua_Integer i = 0;

    lua_newtable(L);
    cJSON_ArrayForEach(it, json) {
        push(L, it);
        lua_rawseti(L, -2, ++i);
    }
}

/* Length of the maximal subpart of an ill-formed sequence at s[0..n) (a
 * lead byte and the continuation bytes that could still complete it), so
 * that each becomes one U+FFFD, as Python's "replace" and TextDecoder do
 * (Unicode 3.9, "U+FFFD substitution of maximal subparts"). */
static size_t bad_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, k;

    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 2;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 3;
    else
        return 1;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    for (k = 1; k <= need && k < n; k++) {
        if (s[k] < lo || s[k] > hi)
            break;
        lo = 0x80;
        hi = 0xBF;
    }
    return k;
}

/* Text: every ill-formed subsequence becomes U+FFFD, so the result is
 * always valid UTF-8. */
static void push_text(lua_State *L, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    luaL_Buffer b;
    uint32_t cp;
    size_t i = 0, k;

    luaL_buffinit(L, &b);
    while (i < n) {
        if ((k = abx_utf8_decode(u + i, n - i, &cp)) != 0) {
            luaL_addlstring(&b, s + i, k);
        } else {
            luaL_addstring(&b, "\xEF\xBF\xBD");
            k = bad_len(u + i, n - i);
        }
        i += k;
    }
    luaL_pushresult(&b);
}

/* ---- sbx.files -------------------------------------------------------- */
static int f_read(lua_State *L)
{
    static const char *const known[] = {"format", "user", NULL};
    struct abx_lsandbox *s;
    struct abx_lbox *box;
    struct abx_err e;
    const char *path, *format, *user;
    int text;

    s = self(L);
    path = abx_lcheck_cstring(L, 2);
    abx_lopt_check(L, 3, "read", known);
    format = abx_lopt_string(L, 3, "format", "text");
    user = abx_lopt_string(L, 3, "user", NULL);
    text = strcmp(format, "text") == 0;
    if (!text && strcmp(format, "bytes") != 0)
        return luaL_argerror(L, 3, lua_pushfstring(
            L, "option 'format': \"text\" or \"bytes\" expected, got \"%s\"",
            format));
    box = abx_lbox_push(L, 0);
    abx_err_clear(&e);
    if (abx_envd_read(&s->envd, path, user, &box->buf, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    if (text)
        push_text(L, abx_buf_cstr(&box->buf), box->buf.len);
    else
        lua_pushlstring(L, abx_buf_cstr(&box->buf), box->buf.len);
    abx_lbox_release(box);
    return 1;
}

static int f_write(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    size_t len;
    const char *data = luaL_checklstring(L, 3, &len);
    const char *user;
    struct abx_lbox *box;
    struct abx_err e;

    user = user_opt(L, 4, "write");
    box = abx_lbox_push(L, 0);
    abx_err_clear(&e);
    if (abx_envd_write(&s->envd, path, user, data, len, &box->json, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    if (box->json) {
        push_write_info(L, cJSON_IsArray(box->json)
                               ? cJSON_GetArrayItem(box->json, 0)
                               : box->json);
    } else {  /* a reply without infos: say what we wrote */
        lua_createtable(L, 0, 3);
        lua_pushstring(L, path);
        lua_setfield(L, -2, "path");
        lua_pushstring(L, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
        lua_setfield(L, -2, "name");
        lua_pushliteral(L, "file");
        lua_setfield(L, -2, "type");
    }
    abx_lbox_release(box);
    return 1;
}

static int f_write_many(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    struct abx_write_item *items;
    struct abx_lbox *box;
    struct abx_err e;
    const char *user;
    size_t n, i, plen;

    luaL_checktype(L, 2, LUA_TTABLE);
    user = user_opt(L, 3, "write_many");
    n = (size_t)lua_rawlen(L, 2);
    if (n == 0) {
        lua_newtable(L);
        return 1;
    }
    luaL_argcheck(L, n <= 100000, 2, "too many files (at most 100000)");
    items = lua_newuserdatauv(L, n * sizeof *items, 0);  /* anchored */
    for (i = 0; i < n; i++) {
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        if (!lua_istable(L, -1))
            return luaL_argerror(L, 2, lua_pushfstring(
                L, "item %d: table {path=, data=} expected, got %s",
                (int)i + 1, luaL_typename(L, -1)));
        /* Raw reads: no metamethod can hand out a string that nothing
         * anchors once popped. */
        lua_pushliteral(L, "path");
        if (lua_rawget(L, -2) != LUA_TSTRING)
            return luaL_argerror(L, 2, lua_pushfstring(
                L, "item %d: 'path' must be a string", (int)i + 1));
        items[i].path = lua_tolstring(L, -1, &plen);  /* anchored by the item */
        if (strlen(items[i].path) != plen)
            return luaL_argerror(L, 2, lua_pushfstring(
                L, "item %d: 'path' contains a NUL byte", (int)i + 1));
        lua_pop(L, 1);
        lua_pushliteral(L, "data");
        if (lua_rawget(L, -2) != LUA_TSTRING)
            return luaL_argerror(L, 2, lua_pushfstring(
                L, "item %d: 'data' must be a string", (int)i + 1));
        items[i].data = lua_tolstring(L, -1, &items[i].len);
        lua_pop(L, 2);
    }
    box = abx_lbox_push(L, 0);
    abx_err_clear(&e);
    if (abx_envd_write_many(&s->envd, items, n, user, &box->json, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    push_array(L, box->json, push_write_info);
    abx_lbox_release(box);
    return 1;
}

static int f_list(lua_State *L)
{
    static const char *const known[] = {"depth", "user", NULL};
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    struct abx_lbox *box;
    struct abx_err e;
    const char *user;
    lua_Integer depth;

    abx_lopt_check(L, 3, "list", known);
    depth = abx_lopt_integer(L, 3, "depth", 1);
    user = abx_lopt_string(L, 3, "user", NULL);
    abx_err_clear(&e);
    if (depth < 1 || depth > UINT32_MAX) {
        /* E2B checks this client-side and raises InvalidArgument. */
        abx_err_set(&e, ABX_E_INVALID, 0, "invalid_argument",
                    "depth should be at least one (got %lld)",
                    (long long)depth);
        return abx_err_raise(L, &e);
    }
    box = abx_lbox_push(L, 0);
    if (abx_envd_list(&s->envd, path, (unsigned)depth, user, &box->json,
                      &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    push_array(L, box->json, push_entry);
    abx_lbox_release(box);
    return 1;
}

static int f_stat(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    struct abx_lbox *box;
    struct abx_err e;
    const char *user;

    user = user_opt(L, 3, "stat");
    box = abx_lbox_push(L, 0);
    abx_err_clear(&e);
    if (abx_envd_stat(&s->envd, path, user, &box->json, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    push_entry(L, box->json);
    abx_lbox_release(box);
    return 1;
}

static int f_exists(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    struct abx_err e;
    const char *user;
    int r;

    user = user_opt(L, 3, "exists");
    abx_err_clear(&e);
    if ((r = abx_envd_exists(&s->envd, path, user, &e)) < 0)
        return abx_err_raise(L, &e);
    lua_pushboolean(L, r);
    return 1;
}

static int f_make_dir(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    struct abx_err e;
    const char *user;
    int r;

    user = user_opt(L, 3, "make_dir");
    abx_err_clear(&e);
    if ((r = abx_envd_make_dir(&s->envd, path, user, &e)) < 0)
        return abx_err_raise(L, &e);
    lua_pushboolean(L, r);
    return 1;
}

static int f_rename(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *src = abx_lcheck_cstring(L, 2);
    const char *dst = abx_lcheck_cstring(L, 3);
    struct abx_lbox *box;
    struct abx_err e;
    const char *user;

    user = user_opt(L, 4, "rename");
    box = abx_lbox_push(L, 0);
    abx_err_clear(&e);
    if (abx_envd_move(&s->envd, src, dst, user, &box->json, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    push_entry(L, box->json);
    abx_lbox_release(box);
    return 1;
}

static int f_remove(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    struct abx_err e;
    const char *user;

    user = user_opt(L, 3, "remove");
    abx_err_clear(&e);
    if (abx_envd_remove(&s->envd, path, user, &e) < 0)
        return abx_err_raise(L, &e);
    return 0;
}

static int f_upload(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *local = abx_lcheck_cstring(L, 2);
    const char *remote = abx_lcheck_cstring(L, 3);
    struct abx_lbox *box;
    struct abx_err e;
    struct stat st;
    const char *user;

    user = user_opt(L, 4, "upload");
    abx_err_clear(&e);
    /* A FIFO (or a device) would block the open below in C, out of the
     * test deadline's reach: refuse anything but a regular file first. */
    if (stat(local, &st) == 0 && !S_ISREG(st.st_mode)) {
        abx_err_set(&e, ABX_E_INVALID, 0, "", "upload file: cannot read %s: "
                    "not a regular file", local);
        return abx_err_raise(L, &e);
    }
    box = abx_lbox_push(L, 0);
    if (abx_envd_upload(&s->envd, local, remote, user, &box->json, &e) < 0) {
        abx_lbox_release(box);
        return abx_err_raise(L, &e);
    }
    if (cJSON_IsArray(box->json))
        push_write_info(L, cJSON_GetArrayItem(box->json, 0));
    else
        push_write_info(L, box->json);
    abx_lbox_release(box);
    return 1;
}

static int f_download(lua_State *L)
{
    struct abx_lsandbox *s = self(L);
    const char *remote = abx_lcheck_cstring(L, 2);
    const char *local = abx_lcheck_cstring(L, 3);
    struct abx_err e;
    const char *user;

    user = user_opt(L, 4, "download");
    abx_err_clear(&e);
    if (abx_envd_download(&s->envd, remote, user, local, &e) < 0)
        return abx_err_raise(L, &e);
    return 0;
}

static int file_url(lua_State *L, const char *op, const char *fname)
{
    static const char *const known[] = {"user", "expires", NULL};
    struct abx_lsandbox *s = self(L);
    const char *path = abx_lcheck_cstring(L, 2);
    struct abx_err e;
    const char *user;
    lua_Integer expires;
    int given;
    char url[URL_MAX];

    abx_lopt_check(L, 3, fname, known);
    user = abx_lopt_string(L, 3, "user", NULL);
    /* Absent: no expiration (-1 for envd.h). Given: at least 1 s, so a
     * caller cannot reach that sentinel or sign an already-dead URL. */
    given = abx_lopt_push(L, 3, "expires", LUA_TNUMBER);
    lua_pop(L, 1);
    expires = abx_lopt_integer(L, 3, "expires", -1);
    if (given)
        luaL_argcheck(L, expires >= 1 && expires <= 100L * 365 * 86400, 3,
                      "option 'expires': seconds out of range (1 to 100 "
                      "years)");
    abx_err_clear(&e);
    if (abx_envd_file_url(&s->envd, path, op, user, (long)expires, url,
                          URL_MAX, &e) < 0)
        return abx_err_raise(L, &e);
    lua_pushstring(L, url);
    return 1;
}

static int f_download_url(lua_State *L)
{
    return file_url(L, "read", "download_url");
}

static int f_upload_url(lua_State *L)
{
    return file_url(L, "write", "upload_url");
}

static int f_open_watchers(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)abx_lwatchers_open());
    return 1;
}

static const luaL_Reg methods[] = {
    {"read", f_read},
    {"write", f_write},
    {"write_many", f_write_many},
    {"list", f_list},
    {"stat", f_stat},
    {"exists", f_exists},
    {"make_dir", f_make_dir},
    {"rename", f_rename},
    {"remove", f_remove},
    {"watch_dir", abx_lfiles_watch_dir},
    {"upload", f_upload},
    {"download", f_download},
    {"download_url", f_download_url},
    {"upload_url", f_upload_url},
    {NULL, NULL},
};

static const struct abx_lsub files = {ABX_FILES_MT, methods,
                                      "_open_watchers", f_open_watchers};

void abx_lfiles_push(lua_State *L, int sbx_idx)
{
    abx_lsub_push(L, sbx_idx, &files);
}

int luaopen_e2e_files(lua_State *L)
{
    return abx_lsub_open(L, &files);
}
