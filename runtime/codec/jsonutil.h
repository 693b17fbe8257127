/* Small cJSON helpers for proto3 JSON messages (Connect JSON codec).
 *
 * Field lookup accepts the lowerCamelCase JSON name and the proto's
 * snake_case name (derived from the camel one); JSON null counts as absent.
 * Getters return ABX_JSON_OK (value set), ABX_JSON_ABSENT (default set) or
 * ABX_JSON_EBADTYPE (err filled with a message naming the field). */
#ifndef ABX_JSONUTIL_H
#define ABX_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define ABX_JSON_OK 0
#define ABX_JSON_ABSENT 1
#define ABX_JSON_EBADTYPE (-1)

struct abx_json_err {
    char msg[256];
};

/* cJSON_ParseWithLength, integers beyond 2^53 kept exact: such a number
 * node carries its literal in valuestring (jsonexact.c). */
cJSON *abx_json_parse(const char *text, size_t len);
/* The exact value of such a node (one that fits in a long long): 0, or -1
 * (not one: use valuedouble). */
int abx_json_exact_int(const cJSON *v, long long *out);

/* The member named camel (or its snake_case form), NULL if absent/null. */
const cJSON *abx_json_field(const cJSON *obj, const char *camel);

int abx_json_get_string(const cJSON *obj, const char *camel,
                        const char **out, const char *def,
                        struct abx_json_err *err);
int abx_json_get_bool(const cJSON *obj, const char *camel, int *out, int def,
                      struct abx_json_err *err);
/* Number or decimal string (int64 rule); integral and within [min,max]. */
int abx_json_get_int(const cJSON *obj, const char *camel, int64_t *out,
                     int64_t def, int64_t min, int64_t max,
                     struct abx_json_err *err);
/* Enum given as a name from names[0..n) (index = value) or as an integer
 * in [0, n). Unknown names are a type error. */
int abx_json_get_enum(const cJSON *obj, const char *camel,
                      const char *const *names, int n, int *out, int def,
                      struct abx_json_err *err);
/* An object member (message or map), NULL when absent. */
int abx_json_get_object(const cJSON *obj, const char *camel,
                        const cJSON **out, struct abx_json_err *err);
/* An array member, NULL when absent. */
int abx_json_get_array(const cJSON *obj, const char *camel,
                       const cJSON **out, struct abx_json_err *err);
/* bytes field: base64 (standard or URL alphabet, padding optional),
 * decoded and appended to out. */
int abx_json_get_bytes(const cJSON *obj, const char *camel,
                       struct abx_buf *out, struct abx_json_err *err);

/* Adds bytes as standard padded base64. 0 or -1. */
int abx_json_add_bytes(cJSON *obj, const char *name, const void *p,
                       size_t len);
/* Adds an int64 as a JSON string (proto3 rule). 0 or -1. */
int abx_json_add_int64(cJSON *obj, const char *name, int64_t v);

/* Serialises compactly and appends to out. 0 or -1. */
int abx_json_append(struct abx_buf *out, const cJSON *v);

#endif
