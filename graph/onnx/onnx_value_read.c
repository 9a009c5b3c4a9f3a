/* ONNX value files that are no plain tensor (SequenceProto, OptionalProto:
 * the test data of sequence and optional inputs and outputs) read as the
 * tensors they hold, and the kinds of a model's inputs and outputs, so a
 * caller knows which proto each test data file is. */
#include "onnx_imp.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "read_file.h"

/* A growing list of tensors (the value's elements). */
typedef struct tlist {
    int n, cap;
    cg_tensor **t;
} tlist;

static void tlist_free(tlist *l) {
    for (int i = 0; i < l->n; i++) cg_tensor_free(l->t[i]);
    free(l->t);
    *l = (tlist){0};
}

/* SequenceProto and OptionalProto are defined in onnx-data.proto, which
 * Debian does not install (only onnx.proto, the C of which is generated at
 * build time): their few fields are read here from the wire format. Both
 * number them alike: 1 name, 2 elem_type, 3 tensor(s), 4 sparse tensor(s),
 * 5 sequence(s), 6 map(s), 7 optional(s). Only tensors, and an optional's
 * sequence of tensors, are taken; the nesting is one level at most. */
typedef struct wire {
    const uint8_t *p, *end;
    const char *path;
} wire;

static int varint(wire *w, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && w->p < w->end; shift += 7) {
        uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 1;
    }
    return 0;
}

static cg_status bad(const wire *w) {
    return cg_error(CG_ERR_FORMAT, "%s: not an ONNX sequence or optional value (the file does not parse)", w->path);
}

/* The next field: its number, and for length-delimited ones the bytes
 * (*len; others skipped, *data NULL); 0 at the end, -1 on bad data. */
static int field(wire *w, int *num, const uint8_t **data, size_t *len) {
    uint64_t tag, v;
    if (w->p == w->end) return 0;
    if (!varint(w, &tag)) return -1;
    *num = (int)(tag >> 3);
    *data = NULL;
    switch (tag & 7) {
    case 0: return varint(w, &v) ? 1 : -1;
    case 1: return w->end - w->p >= 8 ? (w->p += 8, 1) : -1;
    case 5: return w->end - w->p >= 4 ? (w->p += 4, 1) : -1;
    case 2:
        if (!varint(w, &v) || v > (uint64_t)(w->end - w->p)) return -1;
        *data = w->p;
        *len = (size_t)v;
        w->p += v;
        return 1;
    default: return -1;
    }
}

static cg_status add_tensor(tlist *l, const uint8_t *data, size_t len, const char *path) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        cg_tensor **t = realloc(l->t, (size_t)cap * sizeof *t);
        if (!t) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        l->t = t;
        l->cap = cap;
    }
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, data);
    if (!tp) return cg_error(CG_ERR_FORMAT, "%s: element %d is not an ONNX tensor", path, l->n);
    char what[64];
    snprintf(what, sizeof what, "element %d", l->n);
    cg_status s = cg_onnx_tensor(tp, NULL, path, what, &l->t[l->n]);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (!s) l->n++;
    return s;
}

/* A SequenceProto or (optional 1) OptionalProto in w: its tensors into l,
 * its name into *name (malloc'ed) where name is not NULL. */
static cg_status value(wire *w, int optional, tlist *l, cg_onnx_kind *held, char **name) {
    int num, r;
    const uint8_t *data;
    size_t len;
    while ((r = field(w, &num, &data, &len)) > 0) {
        cg_status s = CG_OK;
        if (num == 1 && data && name && !*name && !(*name = strndup((const char *)data, len)))
            s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
        else if (num == 3 && data && !(s = add_tensor(l, data, len, w->path)))
            *held = optional ? CG_ONNX_TENSOR : CG_ONNX_SEQUENCE;
        else if (num == 5 && data && optional) {
            wire in = {data, data + len, w->path};
            if (!(s = value(&in, 0, l, held, NULL))) *held = CG_ONNX_SEQUENCE;
        } else if (num >= 4 && num <= 7)
            s = cg_error(CG_ERR_UNSUPPORTED, "%s: a %s of sparse tensors, sequences, maps or optionals", w->path,
                         optional ? "optional" : "sequence");
        if (s) return s;
    }
    return r < 0 ? bad(w) : CG_OK;
}

static cg_status read_value(const char *path, cg_onnx_kind kind, tlist *l, cg_onnx_kind *held, char **name) {
    *held = kind; /* an empty sequence or optional unless a value is read */
    if (kind == CG_ONNX_TENSOR) {
        if (!(l->t = calloc(1, sizeof *l->t))) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
        l->cap = 1;
        cg_status s = cg_tensor_load_onnx(path, &l->t[0], name);
        l->n = !s;
        return s;
    }
    size_t len;
    char *buf;
    cg_status s = cg_read_file(path, (size_t)INT_MAX, &buf, &len);
    if (s) return s;
    wire w = {(const uint8_t *)buf, (const uint8_t *)buf + len, path};
    s = value(&w, kind == CG_ONNX_OPTIONAL, l, held, name);
    if (!s && name && !*name && !(*name = strdup(""))) s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    free(buf);
    return s;
}

cg_status cg_tensors_load_onnx(const char *path, cg_onnx_kind kind, int *n, cg_tensor ***out, cg_onnx_kind *held,
                               char **name) {
    cg_onnx_kind h;
    if (!path || !n || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensors_load_onnx: NULL argument");
    *n = 0;
    *out = NULL;
    if (name) *name = NULL;
    if (kind != CG_ONNX_TENSOR && kind != CG_ONNX_SEQUENCE && kind != CG_ONNX_OPTIONAL)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: only tensor, sequence and optional values are read", path);
    tlist l = {0};
    cg_status s = read_value(path, kind, &l, &h, name);
    if (s) {
        tlist_free(&l);
        if (name) free(*name), *name = NULL;
        return cg_onnx_one_line(s, path);
    }
    *n = l.n;
    *out = l.t;
    if (held) *held = h;
    return CG_OK;
}

static cg_onnx_kind type_kind(const Onnx__TypeProto *tp) {
    switch (tp ? tp->value_case : ONNX__TYPE_PROTO__VALUE__NOT_SET) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: return CG_ONNX_TENSOR;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return CG_ONNX_SEQUENCE;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return CG_ONNX_OPTIONAL;
    default: return CG_ONNX_OTHER;
    }
}

cg_status cg_onnx_io_kinds(const char *path, int outputs, int *n, cg_onnx_kind **kinds) {
    if (!path || !n || !kinds) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_onnx_io_kinds: NULL argument");
    *n = 0;
    *kinds = NULL;
    Onnx__ModelProto *m;
    cg_status s = cg_onnx_read_model(path, &m);
    if (s) return cg_onnx_one_line(s, path);
    const Onnx__GraphProto *g = m->graph;
    size_t count = outputs ? g->n_output : g->n_input;
    Onnx__ValueInfoProto **vi = outputs ? g->output : g->input;
    cg_onnx_kind *k = malloc((count + 1) * sizeof *k);
    if (!k) s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; k && i < count; i++) k[i] = type_kind(vi[i]->type);
    onnx__model_proto__free_unpacked(m, NULL);
    if (s) return s;
    *n = (int)count;
    *kinds = k;
    return CG_OK;
}
