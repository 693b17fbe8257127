/* sbx.files:watch_dir and its watcher userdata (lua_watcher.c). */
#ifndef ABX_LUA_WATCHER_H
#define ABX_LUA_WATCHER_H

#include <stddef.h>

#include <lua.h>

/* files:watch_dir(path, {recursive=, timeout=, user=}) -> watcher. */
int abx_lfiles_watch_dir(lua_State *L);
/* Watch streams held by watchers of this process (selftest counter). */
size_t abx_lwatchers_open(void);

#endif
