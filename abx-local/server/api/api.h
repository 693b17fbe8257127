/* The control plane: the E2B REST API (sandboxes, templates, metrics,
 * logs) as the profile shapes it. */
#ifndef ABXL_API_H
#define ABXL_API_H

#include "http.h"
#include "sandbox.h"

extern const struct abxl_plane abxl_ctl_plane;

enum MHD_Result abxl_ctl_sandboxes(struct MHD_Connection *c, const char *method,
                                  const char *path, const char *uri,
                                  const struct abx_buf *body);
enum MHD_Result abxl_ctl_create(struct MHD_Connection *c, const struct abx_buf *body, bool v2);
/* Request bodies (ctl_body.c): NULL with *bad set (a reply) on a bad
 * body, NULL with *bad = MHD_YES when there is none. Field getters: 1
 * present (*out set), 0 absent or null, -1 wrong type/range (err set). */
cJSON *abxl_body_parse(struct MHD_Connection *c, const struct abx_buf *body, enum MHD_Result *bad);
int abxl_body_int(const cJSON *o, const char *name, long min, long max, long *out, char *err,
                 size_t errlen);
int abxl_body_bool(const cJSON *o, const char *name, bool *out, char *err, size_t errlen);
enum abxl_keys { ABXL_KEYS_NONEMPTY, ABXL_KEYS_ENV };
int abxl_body_map(const cJSON *o, const char *name, enum abxl_keys keys, const cJSON **out,
                  char *err, size_t errlen);
/* GET /templates and GET /templates/{id} (ctl_templates.c). */
enum MHD_Result abxl_ctl_templates(struct MHD_Connection *c, const char *method,
                                  const char *path);
/* GET /sandboxes (v1) and GET /v2/sandboxes (ctl_list.c). */
enum MHD_Result abxl_ctl_list(struct MHD_Connection *c, const char *uri, bool v2);
cJSON *abxl_json_sandbox(const struct abxl_sbx *s);          /* Sandbox */
cJSON *abxl_json_detail(const struct abxl_sbx *s, bool listed); /* (Listed)SandboxDetail */

#endif
