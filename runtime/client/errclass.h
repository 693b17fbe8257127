/* Error classes of the sandbox clients (control plane, envd, code
 * interpreter), after the E2B SDKs' exception mapping
 * (docs/protocol.md "Error classes"). One struct carries the class, the
 * HTTP status, the wire code and a message; the bindings turn it into a
 * Lua error table {class=, message=, status=, code=}.
 * Messages never contain credentials: builders take bodies from servers,
 * never request headers, and everything printed passes the masker. */
#ifndef ABX_ERRCLASS_H
#define ABX_ERRCLASS_H

#include <stddef.h>

#include "connect.h"

enum abx_errclass {
    ABX_E_OK = 0,
    ABX_E_AUTH,         /* "Authentication": 401, unauthenticated */
    ABX_E_NOT_FOUND,    /* "NotFound": 404, not_found */
    ABX_E_RATE_LIMIT,   /* "RateLimit": 429, resource_exhausted */
    ABX_E_TIMEOUT,      /* "Timeout": 502 from envd/proxy, deadline,
                           a request or test deadline that elapsed */
    ABX_E_INVALID,      /* "InvalidArgument": envd 400, invalid_argument,
                           client-side argument checks */
    ABX_E_NO_SPACE,     /* "NotEnoughSpace": envd 507 */
    ABX_E_SANDBOX,      /* "Sandbox": any other platform error */
    ABX_E_CONNECTION,   /* "Connection": unreachable host, refused, reset,
                           TLS failure (curl's message names the host) */
    ABX_E_PROTOCOL,     /* "Protocol": a reply we cannot parse (bad JSON,
                           truncated stream, missing required field) */
    ABX_E_CANCELED,     /* "Canceled": the run is being interrupted */
    ABX_E_TEMPLATE,     /* "Template": the sandbox's envd is too old for
                           what was asked (the SDKs' TemplateError) */
};

struct abx_err {
    enum abx_errclass cls;
    long status;         /* HTTP status, 0 if none */
    char code[48];       /* Connect code name, API error_code, or "" */
    char message[1024];  /* human text, without the class prefix */
    /* The integer "code" of a control-plane JSON error body, 0 if none:
     * E2B's JS SDK tells "not found" by it, so it must equal status. */
    long body_code;
};

/* "Authentication", "NotFound", ... ; "OK" for ABX_E_OK. */
const char *abx_errclass_name(enum abx_errclass c);

void abx_err_clear(struct abx_err *e);
void abx_err_set(struct abx_err *e, enum abx_errclass c, long status,
                 const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Control-plane error response (docs/protocol.md "Control-plane
 * errors"): 401 Authentication, 404 NotFound, 429 RateLimit, 400
 * InvalidArgument, else Sandbox. Message = body "message" (or the body
 * text, cleaned and capped), prefixed by what the caller was doing (what
 * may be NULL): "create sandbox: 404: ...". */
void abx_err_from_api(struct abx_err *e, const char *what, long status,
                      const char *body, size_t len);
/* envd REST error (docs/protocol.md "envd HTTP errors"): 400
 * InvalidArgument, 401 Authentication, 404 NotFound, 429 RateLimit, 502
 * Timeout ("sandbox is probably not running"), 507 NotEnoughSpace, else
 * Sandbox. */
void abx_err_from_envd_http(struct abx_err *e, const char *what,
                            long status, const char *body, size_t len);
/* Connect error (docs/protocol.md "Error classes"): invalid_argument
 * InvalidArgument, unauthenticated Authentication, not_found NotFound,
 * unavailable / canceled / deadline_exceeded Timeout, resource_exhausted
 * RateLimit, else Sandbox ("<code>: <message>"). */
void abx_err_from_connect(struct abx_err *e, const char *what,
                          enum abx_connect_code code, const char *message,
                          long status);

#endif
