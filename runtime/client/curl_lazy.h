/* libcurl loaded on first use (curl_lazy.c): abx-e2e is not linked to
 * libcurl and its ~30 libraries, so a run that never talks to a platform
 * (exec of a script, a suite of pure tests, --collect-only) does not pay
 * for mapping and relocating them. The curl_* functions our code calls
 * are defined there and forward to the library once it is loaded. */
#ifndef ABX_CURL_LAZY_H
#define ABX_CURL_LAZY_H

/* NULL once libcurl is loaded, or why it cannot be (dlopen's words);
 * loads it if it was not tried yet. */
const char *abx_curl_load_error(void);

#endif
