/* Admitting a plugin: its descriptor, op definitions, attributes and
 * kernels are checked, then copied into host-layout records. Arrays the
 * plugin hands over are walked at each element's own struct_size, so a
 * plugin built against ABI 1.0 (smaller kernel structs) or a later minor
 * (larger ones) is read at its own stride; fields it predates read as zero.
 * Built-in ops come through here too, with the same checks. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "registry.h"

#if UINTPTR_MAX == 0xffffffffffffffffu
/* The frozen 1.0 sizes on LP64 targets: a field moved by mistake fails here. */
_Static_assert(CG_V1_0_PLUGIN_SIZE == 52, "cg_plugin_desc 1.0 layout");
_Static_assert(CG_V1_0_OP_SIZE == 104, "cg_op_def 1.0 layout");
_Static_assert(CG_V1_0_KERNEL_SIZE == 24, "cg_kernel_def 1.0 layout");
_Static_assert(CG_V1_0_ATTR_SIZE == 56, "cg_attr_def 1.0 layout");
#endif

/* A struct_size this large is a corrupt descriptor, not a newer ABI. */
#define MAX_STRUCT_SIZE 4096u
/* Counts past these are corrupt descriptors too; checked before the arrays
 * they describe are read. */
#define MAX_PLUGIN_OPS 4096
#define MAX_OP_ATTRS 1024

typedef struct admit {
    const cg_plugin_desc *desc;
    char tag[600]; /* "PATH: plugin 'NAME'" */
    int n_attrs, n_kernels;
} admit;

static int valid_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.')) return 0;
    return 1;
}

/* Element i of a plugin's array, walking each element's own struct_size;
 * NULL when a size is out of range (checked by the callers' messages). */
static const void *element(const void *base, int i, size_t min_size) {
    const char *p = base;
    for (int k = 0; k < i; k++) {
        uint32_t sz = *(const uint32_t *)p;
        if (sz < min_size || sz > MAX_STRUCT_SIZE) return NULL;
        p += sz;
    }
    uint32_t sz = *(const uint32_t *)p;
    return sz < min_size || sz > MAX_STRUCT_SIZE ? NULL : p;
}

static cg_status check_attrs(const admit *a, const cg_op_def *op) {
    if (op->n_attrs < 0 || (op->n_attrs > 0 && !op->attrs))
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' declares invalid attributes", a->tag, op->name);
    if (op->n_attrs > MAX_OP_ATTRS)
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s': %d attributes, more than an op may declare (%d)", a->tag, op->name,
                        op->n_attrs, MAX_OP_ATTRS);
    for (int i = 0; i < op->n_attrs; i++) {
        const cg_attr_def *ad = element(op->attrs, i, CG_V1_0_ATTR_SIZE);
        if (ad && valid_ident(ad->name) && ad->type == CG_ATTR_DIMS && a->desc->abi_minor < 3)
            return cg_error(CG_ERR_PLUGIN,
                            "%s: op '%s': attribute '%s' is a dim list, which needs ABI %d.3 (the plugin claims %d.%d)",
                            a->tag, op->name, ad->name, CG_PLUGIN_ABI_MAJOR, a->desc->abi_major, a->desc->abi_minor);
        if (!ad || !valid_ident(ad->name) || ad->type < CG_ATTR_INT || ad->type > CG_ATTR_DIMS)
            return cg_error(CG_ERR_PLUGIN, "%s: op '%s': attribute #%d is invalid", a->tag, op->name, i);
        for (int j = 0; j < i; j++)
            if (!strcmp(((const cg_attr_def *)element(op->attrs, j, CG_V1_0_ATTR_SIZE))->name, ad->name))
                return cg_error(CG_ERR_PLUGIN, "%s: op '%s': attribute '%s' declared twice", a->tag, op->name,
                                ad->name);
    }
    return CG_OK;
}

static cg_status check_kernels(const admit *a, const cg_op_def *op) {
    if (op->n_kernels < 0 || (op->n_kernels > 0 && !op->kernels))
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' declares invalid kernels", a->tag, op->name);
    if (op->n_kernels > CG_BACKEND_KINDS - 1)
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s': %d kernels, more than one per backend kind (%d)", a->tag, op->name,
                        op->n_kernels, CG_BACKEND_KINDS - 1);
    int seen[CG_BACKEND_KINDS] = {0};
    for (int k = 0; k < op->n_kernels; k++) {
        const cg_kernel_def *kd = element(op->kernels, k, CG_V1_0_KERNEL_SIZE);
        if (!kd || !kd->run || kd->backend <= 0 || kd->backend >= CG_BACKEND_KINDS)
            return cg_error(CG_ERR_PLUGIN, "%s: op '%s': kernel #%d is invalid", a->tag, op->name, k);
        if (seen[kd->backend]++)
            return cg_error(CG_ERR_PLUGIN, "%s: op '%s' has two kernels for backend kind %d", a->tag, op->name,
                            (int)kd->backend);
        /* create and destroy come in pairs (1.1 fields: zero for 1.0). */
        int has_create = kd->struct_size >= CG_END_OF(cg_kernel_def, destroy) && kd->create;
        int has_destroy = kd->struct_size >= CG_END_OF(cg_kernel_def, destroy) && kd->destroy;
        if (has_create != has_destroy)
            return cg_error(CG_ERR_PLUGIN, "%s: op '%s': kernel #%d has a %s callback without a %s callback", a->tag,
                            op->name, k, has_create ? "create" : "destroy", has_create ? "destroy" : "create");
    }
    return CG_OK;
}

/* Checks one op definition; `idx` numbers it in messages. */
static cg_status check_op(admit *a, const cg_op_def *op, int idx) {
    if (!op) return cg_error(CG_ERR_PLUGIN, "%s: op #%d is NULL", a->tag, idx);
    if (op->struct_size < CG_V1_0_OP_SIZE || op->struct_size > MAX_STRUCT_SIZE)
        return cg_error(CG_ERR_PLUGIN, "%s: op #%d: struct_size %u is not a cg_op_def (ABI 1.0's is %zu)", a->tag, idx,
                        op->struct_size, (size_t)CG_V1_0_OP_SIZE);
    if (!valid_ident(op->name)) return cg_error(CG_ERR_PLUGIN, "%s: op #%d has an invalid name", a->tag, idx);
    if (!op->infer) return cg_error(CG_ERR_PLUGIN, "%s: op '%s' has no infer function", a->tag, op->name);
    if (op->min_inputs < 0 || (op->max_inputs >= 0 && op->max_inputs < op->min_inputs) || op->min_outputs < 1 ||
        op->max_outputs < op->min_outputs)
        return cg_error(CG_ERR_PLUGIN, "%s: op '%s' declares an invalid arity", a->tag, op->name);
    cg_status st = check_attrs(a, op);
    if (!st) st = check_kernels(a, op);
    a->n_attrs += op->n_attrs;
    a->n_kernels += op->n_kernels;
    return st;
}

static cg_status check_desc(const cg_context *ctx, admit *a, const char *path) {
    const cg_plugin_desc *desc = a->desc;
    if (!desc) return cg_error(CG_ERR_PLUGIN, "%s: init failed: entry returned no descriptor", path);
    if (desc->struct_size < CG_V1_0_PLUGIN_SIZE)
        return cg_error(CG_ERR_PLUGIN, "%s: descriptor struct_size %u is smaller than ABI 1.0's %zu", path,
                        desc->struct_size, (size_t)CG_V1_0_PLUGIN_SIZE);
    if (desc->struct_size > MAX_STRUCT_SIZE)
        return cg_error(CG_ERR_PLUGIN,
                        "%s: descriptor struct_size %u is not a cg_plugin_desc (a corrupt descriptor: "
                        "at most %u)",
                        path, desc->struct_size, MAX_STRUCT_SIZE);
    if (desc->abi_major != CG_PLUGIN_ABI_MAJOR)
        return cg_error(CG_ERR_PLUGIN,
                        "%s: plugin '%s' was built for ABI %u.%u, this clgraph has ABI %u.%u "
                        "(major versions must match)",
                        path, desc->name ? desc->name : "?", desc->abi_major, desc->abi_minor, CG_PLUGIN_ABI_MAJOR,
                        CG_PLUGIN_ABI_MINOR);
    if (!desc->name || !*desc->name) return cg_error(CG_ERR_PLUGIN, "%s: the plugin descriptor has no name", path);
    /* The name and version appear in messages and listings, one line each. */
    const char *texts[2] = {desc->name, desc->version}, *what[2] = {"name", "version"};
    for (int k = 0; k < 2; k++)
        for (const char *p = texts[k]; p && *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return cg_error(CG_ERR_PLUGIN, "%s: the plugin's %s has a control character (byte 0x%02x at offset %d)",
                                path, what[k], (unsigned char)*p, (int)(p - texts[k]));
    snprintf(a->tag, sizeof a->tag, "%s: plugin '%s'", path, desc->name);
    for (int i = 0; i < ctx->n_plugins; i++)
        if (!strcmp(ctx->plugins[i]->name, desc->name))
            return cg_error(CG_ERR_PLUGIN, "%s is already loaded from %s", a->tag, ctx->plugins[i]->path);
    if (desc->n_ops < 0 || (desc->n_ops > 0 && !desc->ops))
        return cg_error(CG_ERR_PLUGIN, "%s: invalid op list", a->tag);
    if (desc->n_ops > MAX_PLUGIN_OPS)
        return cg_error(CG_ERR_PLUGIN, "%s: %d ops, more than a plugin may declare (%d)", a->tag, desc->n_ops,
                        MAX_PLUGIN_OPS);
    for (int i = 0; i < desc->n_ops; i++) {
        cg_status st = check_op(a, desc->ops[i], i);
        if (st) return st;
        const cg_op_entry *prev = cg_registry_find(ctx, desc->ops[i]->name);
        if (prev)
            return cg_error(CG_ERR_PLUGIN, "%s: duplicate op '%s' (already registered by plugin '%s' from %s)", a->tag,
                            desc->ops[i]->name, prev->plugin->name, prev->plugin->path);
        for (int j = 0; j < i; j++)
            if (!strcmp(desc->ops[j]->name, desc->ops[i]->name))
                return cg_error(CG_ERR_PLUGIN, "%s: duplicate op '%s' within the plugin", a->tag, desc->ops[i]->name);
    }
    return CG_OK;
}

/* Copies the first min(size, room) bytes of a plugin struct into a zeroed
 * host struct of `room` bytes and sets its struct_size to the host's. */
static void copy_struct(void *dst, size_t room, const void *src) {
    uint32_t size = *(const uint32_t *)src;
    memset(dst, 0, room);
    memcpy(dst, src, size < room ? size : room);
    *(uint32_t *)dst = (uint32_t)room;
}

static void rec_free(cg_plugin_rec *rec) {
    if (!rec) return;
    free(rec->name);
    free(rec->path);
    free(rec->version);
    free(rec->entries);
    free(rec->defs);
    free(rec->attrs);
    free(rec->kernels);
    free(rec);
}

/* The host-layout records of every op of an admitted plugin. */
static cg_status make_rec(const admit *a, const char *path, cg_plugin_rec **out) {
    const cg_plugin_desc *desc = a->desc;
    cg_plugin_rec *rec = calloc(1, sizeof *rec);
    if (!rec) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", a->tag);
    int n = desc->n_ops;
    rec->name = cg_strdup(desc->name);
    rec->path = cg_strdup(path);
    rec->version = cg_strdup(desc->version ? desc->version : "");
    rec->entries = calloc((size_t)n + 1, sizeof *rec->entries);
    rec->defs = calloc((size_t)n + 1, sizeof *rec->defs);
    rec->attrs = calloc((size_t)a->n_attrs + 1, sizeof *rec->attrs);
    rec->kernels = calloc((size_t)a->n_kernels + 1, sizeof *rec->kernels);
    if (!rec->name || !rec->path || !rec->version || !rec->entries || !rec->defs || !rec->attrs || !rec->kernels) {
        rec_free(rec);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", a->tag);
    }
    rec->n_ops = n;
    int na = 0, nk = 0;
    for (int i = 0; i < n; i++) {
        const cg_op_def *src = desc->ops[i];
        cg_op_def *def = &rec->defs[i];
        copy_struct(def, sizeof *def, src);
        for (int k = 0; k < src->n_attrs; k++)
            copy_struct(&rec->attrs[na + k], sizeof(cg_attr_def), element(src->attrs, k, CG_V1_0_ATTR_SIZE));
        def->attrs = src->n_attrs ? &rec->attrs[na] : NULL;
        na += src->n_attrs;
        cg_op_entry *e = &rec->entries[i];
        for (int k = 0; k < src->n_kernels; k++) {
            cg_kernel_def *kd = &rec->kernels[nk + k];
            copy_struct(kd, sizeof *kd, element(src->kernels, k, CG_V1_0_KERNEL_SIZE));
            e->kernel[kd->backend] = kd;
        }
        def->kernels = src->n_kernels ? &rec->kernels[nk] : NULL;
        nk += src->n_kernels;
        e->def = def;
        e->plugin = rec;
    }
    /* A newer minor is accepted; the host uses only what its own minor knows. */
    rec->abi_minor = desc->abi_minor < CG_PLUGIN_ABI_MINOR ? desc->abi_minor : CG_PLUGIN_ABI_MINOR;
    *out = rec;
    return CG_OK;
}

/* Room for one more plugin and n more ops. */
static cg_status reserve(cg_context *ctx, int n, const char *tag) {
    if (ctx->n_ops + n > ctx->cap_ops) {
        int cap = (ctx->n_ops + n) * 2 + 16;
        const cg_op_entry **ops = realloc(ctx->ops, sizeof *ops * (size_t)cap);
        if (!ops) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", tag);
        ctx->ops = ops;
        ctx->cap_ops = cap;
    }
    if (ctx->n_plugins == ctx->cap_plugins) {
        int cap = ctx->cap_plugins * 2 + 4;
        cg_plugin_rec **pl = realloc(ctx->plugins, sizeof *pl * (size_t)cap);
        if (!pl) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", tag);
        ctx->plugins = pl;
        ctx->cap_plugins = cap;
    }
    return CG_OK;
}

cg_status cg_registry_add_plugin(cg_context *ctx, const cg_plugin_desc *desc, const char *path, void *dl) {
    admit a = {.desc = desc};
    cg_status st = check_desc(ctx, &a, path);
    if (st) return st;
    if (desc->init) {
        char err[512] = "";
        if (desc->init(cg_host_api_get(), err, sizeof err) != CG_OP_OK) {
            err[sizeof err - 1] = 0;
            return cg_error(CG_ERR_PLUGIN, "%s: init failed: %s", a.tag, err[0] ? err : "(no message)");
        }
    }
    st = reserve(ctx, desc->n_ops, a.tag);
    cg_plugin_rec *rec = NULL;
    if (!st) st = make_rec(&a, path, &rec);
    if (st) return st;
    rec->dl = dl;
    ctx->plugins[ctx->n_plugins++] = rec;
    for (int i = 0; i < rec->n_ops; i++) ctx->ops[ctx->n_ops++] = &rec->entries[i];
    return CG_OK;
}

void cg_registry_free_plugin(cg_plugin_rec *rec) {
    if (rec && rec->dl) cg_plugin_unload(rec->dl);
    rec_free(rec);
}
