/* JSON configuration files (a model directory's config.json), read so that
 * every mistake is one line naming the file and the key: a syntax error
 * with its line:column, an unknown key, a value of the wrong kind or range
 * with what it must be and what it was. The model families share it. */
#ifndef CG_GRAPH_IO_CONFIG_JSON_H
#define CG_GRAPH_IO_CONFIG_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "clgraph/clgraph.h"

/* Reads and parses `path` (at most 16 MiB); the top level must be an
 * object. *root is the caller's (cJSON_Delete). */
cg_status cg_cfg_read(const char *path, cJSON **root);

/* Fails naming the first key of `obj` not in `known` (NULL-terminated);
 * `prefix` ("" or "local.") is put before the key in the message. */
cg_status cg_cfg_known_keys(const char *path, const cJSON *obj, const char *const *known, const char *prefix);

/* An integer key in [min, max]; absent or null: `def`, unless def < min,
 * which makes the key required. `label` names it in messages (NULL: key). */
cg_status cg_cfg_int(const char *path, const cJSON *obj, const char *key, const char *label, int def, int min, int max,
                     int *out);

/* A string key that must be one of `names` (NULL-terminated); *out is its
 * index; absent or null: `def` (def < 0: required). */
cg_status cg_cfg_enum(const char *path, const cJSON *obj, const char *key, const char *label, const char *const *names,
                      int def, int *out);

/* A true/false key; absent or null: def. */
cg_status cg_cfg_bool(const char *path, const cJSON *obj, const char *key, int def, int *out);

/* What a value was, for a message: its JSON text, cut short with "...". */
const char *cg_cfg_got(const cJSON *v, char *buf, size_t size);

/* A string from the file for a message, on one line (cg_quote_text). */
const char *cg_cfg_shown(const char *str, char *buf, size_t size);

#endif
