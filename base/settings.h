/* The process-wide settings: where each CLGRAPH_* environment variable is
 * read (the only place), and how cg_context_options overrides them. A
 * setting's value is the one set through cg_setting_set, else its variable,
 * else NULL (the consumer's default). Consumers keep their own parsing and
 * messages: a value here is the text a user gave.
 *
 * Once a setting has been read, setting it to another value fails, naming
 * the value in effect: what it configures (the CPU pool's size, the chosen
 * SGEMM path, the OpenCL path set, the cache directory) was made from the
 * value read. Thread-safe. */
#ifndef CG_BASE_SETTINGS_H
#define CG_BASE_SETTINGS_H

#include "clgraph/clgraph.h"

typedef enum cg_setting_id {
    CG_SET_THREADS,     /* CLGRAPH_THREADS: CPU pool threads */
    CG_SET_CPU_GEMM,    /* CLGRAPH_CPU_GEMM: the CPU SGEMM path */
    CG_SET_CPU_MATH,    /* CLGRAPH_CPU_MATH: the CPU's exp/tanh/logistic instruction set */
    CG_SET_GEMM,        /* CLGRAPH_GEMM: the OpenCL SGEMM (auto, own, clblast) */
    CG_SET_CL_PATHS,    /* CLGRAPH_CL_PATHS: the OpenCL kernel path set (auto, cpu, gpu) */
    CG_SET_CACHE_DIR,   /* CLGRAPH_CACHE_DIR: compiled programs and measurements */
    CG_SET_CL_WARNINGS, /* CLGRAPH_CL_WARNINGS: show the OpenCL compiler's warnings (read at each build) */
    CG_SET_PLUGINS,     /* CLGRAPH_PLUGINS: plugins every new context loads (read per context) */
    CG_SET_REWRITES,    /* CLGRAPH_REWRITES: the graph rewrites an ONNX import runs (read per import) */
    CG_SET_COUNT
} cg_setting_id;

/* The value of setting `id` (NULL: unset): the value set, else the
 * environment variable's (read at this call; valid until the variable
 * changes). */
const char *cg_setting(cg_setting_id id);

/* The setting's environment variable name, e.g. "CLGRAPH_THREADS". */
const char *cg_setting_name(cg_setting_id id);

/* Sets `id` to `value` (NULL: unset, as if the variable were not there).
 * CG_OK when it is not fixed yet or already has that value; otherwise
 * CG_ERR_INVALID_ARGUMENT naming the setting and the value in effect.
 * Settings read at every use (CG_SET_CL_WARNINGS) are never fixed. */
cg_status cg_setting_set(cg_setting_id id, const char *value);

#endif
