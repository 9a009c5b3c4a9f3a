/* ONNX files: a model file unpacked by protobuf-c (from the onnx.proto that
 * Debian's libonnx-dev installs), and TensorProto values (initializers,
 * Constant nodes, the .pb files of ONNX's test data) as clgraph tensors. */
#include "onnx_imp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype.h"
#include "narrow.h"
#include "error.h"
#include "read_file.h"
#include "shape.h"

/* protobuf-c allocates the unpacked message; a failed allocation there
 * makes unpack return NULL, which the callers report. */

/* The bytes of a file, mapped (len 0: no mapping). */
typedef struct file_map {
    void *p;
    size_t len;
} file_map;

static cg_status map_file(const char *path, file_map *f) {
    f->p = NULL;
    f->len = 0;
    /* A FIFO or device named as the model is refused without waiting. */
    int fd;
    struct stat st;
    cg_status s = cg_open_regular(path, O_RDONLY, &fd, &st);
    if (s) return s;
    if ((uint64_t)st.st_size > (uint64_t)INT_MAX)
        /* protobuf messages are limited to 2 GB; larger models keep their
         * weights in external data files */
        s = cg_error(CG_ERR_FORMAT, "%s: %lld bytes is more than a protobuf message may hold (2 GB)", path,
                     (long long)st.st_size);
    else if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) s = cg_error(CG_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        else f->p = p, f->len = (size_t)st.st_size;
    }
    close(fd);
    return s;
}

static void unmap_file(file_map *f) {
    if (f->len) munmap(f->p, f->len);
}

/* The deepest nesting of messages read (a model is level 0): a subgraph
 * costs 3 levels (GraphProto, NodeProto, AttributeProto), so 100 is 30
 * graphs nested in If / Loop / Scan bodies, where real models have a few;
 * each level costs protobuf-c a stack frame or two. */
#define CG_ONNX_MAX_NESTING 100

/* protobuf-c unpacks a nested message by recursing, one C frame per level:
 * a 54 KB file of 3,000 graphs nested in node attributes overflowed the
 * stack (SIGSEGV). So the nesting is measured first, by a walk of the wire
 * format: tags and lengths only, descending into the length-delimited
 * fields that the message's descriptor says are messages (every recursive
 * field of onnx.proto, AttributeProto.g/graphs, TypeProto's element types,
 * FunctionProto's nodes, ... without a list to keep up to date). The walk
 * goes at most CG_ONNX_MAX_NESTING levels deep itself. Data that does not
 * parse ends the walk quietly: unpack reports it. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 1;
    }
    return 0;
}

/* 1 when a message under d at `depth` nests deeper than the limit. */
static int too_deep(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len, int depth) {
    const uint8_t *end = p + len;
    while (p < end) {
        uint64_t tag, v;
        if (!varint(&p, end, &tag)) return 0;
        switch (tag & 7) {
        case 0:
            if (!varint(&p, end, &v)) return 0;
            break;
        case 1:
            if (end - p < 8) return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 0;
            p += 4;
            break;
        case 2: {
            if (!varint(&p, end, &v) || v > (uint64_t)(end - p)) return 0;
            const uint64_t num = tag >> 3;
            const ProtobufCFieldDescriptor *f =
                num && num <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)num) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                (depth + 1 > CG_ONNX_MAX_NESTING || too_deep(f->descriptor, p, (size_t)v, depth + 1)))
                return 1;
            p += v;
            break;
        }
        default: return 0; /* groups: not in onnx.proto */
        }
    }
    return 0;
}

static cg_status check_nesting(const char *path, const ProtobufCMessageDescriptor *d, const file_map *f) {
    if (f->len && too_deep(d, f->p, f->len, 0))
        return cg_error(CG_ERR_FORMAT,
                        "%s: messages nested more than %d deep (graphs in node attributes in graphs "
                        "...); refused before unpacking",
                        path, CG_ONNX_MAX_NESTING);
    return CG_OK;
}

cg_status cg_onnx_read_model(const char *path, Onnx__ModelProto **out) {
    *out = NULL;
    file_map f;
    cg_status s = map_file(path, &f);
    if (!s) s = check_nesting(path, &onnx__model_proto__descriptor, &f);
    if (s) {
        unmap_file(&f);
        return s;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, f.len, f.p);
    unmap_file(&f);
    if (!m)
        return cg_error(CG_ERR_FORMAT,
                        "%s: not an ONNX model (the file does not parse as an ONNX ModelProto: "
                        "truncated or corrupt)",
                        path);
    if (!m->graph) {
        onnx__model_proto__free_unpacked(m, NULL);
        return cg_error(CG_ERR_FORMAT, "%s: the ONNX model has no graph", path);
    }
    *out = m;
    return CG_OK;
}

static const struct {
    int32_t onnx;
    const char *name;
    cg_dtype dtype;
    int size; /* bytes of one element in raw_data */
} types[] = {
    {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "FLOAT", CG_F32, 4},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, "UINT8", CG_U8, 1},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, "INT8", CG_I8, 1},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, "UINT16", CG_U16, 2},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT16, "INT16", CG_I16, 2},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT32, "INT32", CG_I32, 4},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "INT64", CG_I64, 8},
    {ONNX__TENSOR_PROTO__DATA_TYPE__STRING, "STRING", 0, 0},
    {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "BOOL", CG_BOOL, 1},
    {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, "FLOAT16", CG_F16, 2},
    {ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, "DOUBLE", CG_F32, 8},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, "UINT32", CG_U32, 4},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, "UINT64", CG_U64, 8},
    {ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, "COMPLEX64", 0, 8},
    {ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128, "COMPLEX128", 0, 16},
    {ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, "BFLOAT16", CG_BF16, 2},
    /* onnx.proto's later types, by value: Debian's copy of the schema
     * predates them. The 4- and 2-bit ones are packed in raw_data and
     * int32_data (two or four a byte) and unpacked to a byte each. */
    {17, "FLOAT8E4M3FN", CG_F8E4M3FN, 1},
    {18, "FLOAT8E4M3FNUZ", CG_F8E4M3FNUZ, 1},
    {19, "FLOAT8E5M2", CG_F8E5M2, 1},
    {20, "FLOAT8E5M2FNUZ", CG_F8E5M2FNUZ, 1},
    {21, "UINT4", CG_U4, 1},
    {22, "INT4", CG_I4, 1},
    {23, "FLOAT4E2M1", CG_F4E2M1, 1},
    {24, "FLOAT8E8M0", CG_F8E8M0, 1},
    {25, "UINT2", CG_U2, 1},
    {26, "INT2", CG_I2, 1},
    {27, "FLOAT6E2M3", 0, 1},
    {28, "FLOAT6E3M2", 0, 1},
};
#define N_TYPES (int)(sizeof types / sizeof types[0])

static int type_index(int32_t t) {
    for (int i = 0; i < N_TYPES; i++)
        if (types[i].onnx == t) return i;
    return -1;
}

cg_dtype cg_onnx_dtype(int32_t t) {
    int i = type_index(t);
    return i < 0 ? (cg_dtype)0 : types[i].dtype;
}

const char *cg_onnx_type_name(int32_t t) {
    int i = type_index(t);
    return i < 0 ? "an unknown element type" : types[i].name;
}

/* Reads `len` bytes at `offset` of an external data file into dst. The
 * location must stay inside the model's folder (ONNX's own rule). */
static cg_status read_external(const Onnx__TensorProto *t, const char *dir, const char *path, const char *what,
                               void **dst_out, size_t want) {
    void *dst = NULL;
    *dst_out = NULL;
    const char *loc = NULL;
    long long offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value) continue;
        char *end;
        if (!strcmp(e->key, "location")) loc = e->value;
        else if (!strcmp(e->key, "offset") || !strcmp(e->key, "length")) {
            errno = 0;
            long long v = strtoll(e->value, &end, 10);
            if (errno || *end || v < 0 || end == e->value)
                return cg_error(CG_ERR_FORMAT, "%s: %s: external data %s '%s' is not a byte count", path, what, e->key,
                                e->value);
            if (!strcmp(e->key, "offset")) offset = v;
            else length = v;
        }
    }
    if (!loc || !*loc) return cg_error(CG_ERR_FORMAT, "%s: %s: external data without a location", path, what);
    if (!dir) return cg_error(CG_ERR_UNSUPPORTED, "%s: %s: external data is read only for a model file", path, what);
    if (loc[0] == '/' || strstr(loc, "..") || strchr(loc, '\\'))
        return cg_error(CG_ERR_FORMAT, "%s: %s: external data location '%s' is not a path inside the model's folder",
                        path, what, loc);
    if (length >= 0 && (unsigned long long)length != (unsigned long long)want)
        return cg_error(CG_ERR_FORMAT, "%s: %s: external data length %lld, the tensor needs %zu bytes", path, what,
                        length, want);
    size_t n = strlen(dir) + strlen(loc) + 2;
    char *file = malloc(n);
    if (!file) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    snprintf(file, n, "%s/%s", dir, loc);
    struct stat sb;
    int fd = cg_open_regular_quiet(file, O_RDONLY, 0, &sb);
    cg_status s = CG_OK;
    if (fd < 0) {
        s = errno ? cg_error(CG_ERR_IO, "%s: %s: cannot open its external data file %s: %s", path, what, file,
                             strerror(errno))
                  : cg_error(CG_ERR_IO, "%s: %s: its external data file %s is not a regular file (%s)", path, what,
                             file, cg_file_kind(sb.st_mode));
    } else {
        size_t got = 0;
        if ((uint64_t)sb.st_size < (uint64_t)offset + want) {
            s = cg_error(CG_ERR_FORMAT, "%s: %s: %s has %lld bytes, the tensor needs %zu from byte %lld", path, what,
                         file, (long long)sb.st_size, want, offset);
            got = want; /* nothing to read */
        } else if (!(dst = malloc(want ? want : 1))) {
            s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
            got = want;
        }
        while (got < want) {
            ssize_t r = pread(fd, (char *)dst + got, want - got, (off_t)offset + (off_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                s = r < 0 ? cg_error(CG_ERR_IO, "%s: %s: cannot read %s: %s", path, what, file, strerror(errno))
                          : cg_error(CG_ERR_FORMAT, "%s: %s: %s ends before byte %lld (offset %lld + %zu bytes)", path,
                                     what, file, offset + (long long)want, offset, want);
                break;
            }
            got += (size_t)r;
        }
        close(fd);
    }
    free(file);
    if (s) free(dst);
    else *dst_out = dst;
    return s;
}

/* Whether the typed field that holds t's values has numel of them. */
static cg_status typed_count(const Onnx__TensorProto *t, int ti, const char *path, const char *what, int64_t numel) {
    size_t have;
    int32_t dt = types[ti].onnx;
    const char *field;
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) have = t->n_float_data, field = "float_data";
    else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) have = t->n_int64_data, field = "int64_data";
    else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) have = t->n_double_data, field = "double_data";
    else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 || dt == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64)
        have = t->n_uint64_data, field = "uint64_data";
    else have = t->n_int32_data, field = "int32_data";
    /* 4- and 2-bit types: one packed byte of them per int32 */
    if (types[ti].dtype) numel = (int64_t)cg_narrow_packed_bytes(types[ti].dtype, numel);
    if (have != (size_t)numel)
        return cg_error(CG_ERR_FORMAT, "%s: %s: %zu values in %s for %lld elements", path, what, have, field,
                        (long long)numel);
    return CG_OK;
}

/* Copies the typed field that holds t's values (counted before). */
static void typed_values(const Onnx__TensorProto *t, int ti, int64_t numel, cg_tensor *out) {
    int32_t dt = types[ti].onnx;
    if (cg_dtype_is_narrow(out->dtype)) { /* one byte of the packed form per int32 */
        const int bits = cg_dtype_packed_bits(out->dtype), per = 8 / bits;
        for (int64_t i = 0; i < numel; i++) {
            uint32_t byte = (uint32_t)t->int32_data[i / per] & 0xFF;
            ((uint8_t *)out->data)[i] = cg_narrow_normalize(out->dtype, (uint8_t)(byte >> (i % per * bits)));
        }
        return;
    }
    for (int64_t i = 0; i < numel; i++) {
        switch (out->dtype) {
        case CG_F32:
            ((float *)out->data)[i] =
                dt == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ? (float)t->double_data[i] : t->float_data[i];
            break;
        case CG_I64: ((int64_t *)out->data)[i] = t->int64_data[i]; break;
        case CG_I32: ((int32_t *)out->data)[i] = t->int32_data[i]; break;
        case CG_F16:
        case CG_BF16: ((uint16_t *)out->data)[i] = (uint16_t)t->int32_data[i]; break;
        case CG_BOOL: ((uint8_t *)out->data)[i] = t->int32_data[i] != 0; break;
        /* the narrow types sit in int32_data, u32 and u64 in uint64_data:
         * the low bits are the value (ONNX's writers keep them in range) */
        case CG_I16:
        case CG_U16: ((uint16_t *)out->data)[i] = (uint16_t)t->int32_data[i]; break;
        case CG_U32: ((uint32_t *)out->data)[i] = (uint32_t)t->uint64_data[i]; break;
        case CG_U64: ((uint64_t *)out->data)[i] = t->uint64_data[i]; break;
        default: ((uint8_t *)out->data)[i] = (uint8_t)t->int32_data[i]; break; /* I8, U8 */
        }
    }
}

/* Little-endian raw bytes (8-byte doubles for DOUBLE) into out. */
static void raw_values(const unsigned char *raw, int ti, int64_t numel, cg_tensor *out) {
    if (types[ti].onnx == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        for (int64_t i = 0; i < numel; i++) {
            double d;
            memcpy(&d, raw + 8 * i, 8);
            ((float *)out->data)[i] = (float)d;
        }
        return;
    }
    if (cg_dtype_is_narrow(out->dtype)) {
        cg_narrow_unpack(out->dtype, raw, numel, out->data);
        return;
    }
    memcpy(out->data, raw, (size_t)numel * (size_t)types[ti].size);
    if (out->dtype == CG_BOOL)
        for (int64_t i = 0; i < numel; i++) ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
}

cg_status cg_onnx_tensor(const Onnx__TensorProto *t, const char *dir, const char *path, const char *what,
                         cg_tensor **out) {
    *out = NULL;
    int ti = type_index(t->data_type);
    if (ti < 0 || !types[ti].dtype)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: %s: element type %s is not supported", path, what,
                        cg_onnx_type_name(t->data_type));
    if (t->n_dims > CG_MAX_DIMS)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: %s: %zu dims, at most %d are supported", path, what, t->n_dims,
                        CG_MAX_DIMS);
    int64_t dims[CG_MAX_DIMS];
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return cg_error(CG_ERR_FORMAT, "%s: %s: dim %zu is %lld", path, what, i, (long long)t->dims[i]);
        dims[i] = t->dims[i];
    }
    if (!cg_shape_fits((int)t->n_dims, dims))
        return cg_error(CG_ERR_FORMAT, "%s: %s: more than 2^40 elements", path, what);
    int64_t numel = cg_shape_numel((int)t->n_dims, dims);
    size_t raw_bytes = cg_dtype_is_narrow(types[ti].dtype) ? cg_narrow_packed_bytes(types[ti].dtype, numel)
                                                           : (size_t)numel * (size_t)types[ti].size;
    /* the data is checked to be there before the tensor is allocated: a
     * file declaring 2^40 elements and holding none gets a message */
    cg_status s = CG_OK;
    void *ext = NULL;
    int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external) s = read_external(t, dir, path, what, &ext, raw_bytes);
    else if (t->has_raw_data && t->raw_data.len != raw_bytes)
        s = cg_error(CG_ERR_FORMAT, "%s: %s: raw_data has %zu bytes, %s[%lld elements] needs %zu", path, what,
                     t->raw_data.len, types[ti].name, (long long)numel, raw_bytes);
    else if (!t->has_raw_data) s = typed_count(t, ti, path, what, numel);
    cg_tensor *x = NULL;
    if (!s) s = cg_tensor_alloc(types[ti].dtype, (int)t->n_dims, dims, &x);
    if (!s && numel) {
        if (external) raw_values(ext, ti, numel, x);
        else if (t->has_raw_data) raw_values(t->raw_data.data, ti, numel, x);
        else typed_values(t, ti, numel, x);
    }
    free(ext);
    if (s) {
        cg_tensor_free(x);
        return s;
    }
    *out = x;
    return CG_OK;
}

cg_status cg_onnx_one_line(cg_status st, const char *path) {
    if (st == CG_OK) return st;
    /* names in a file may hold any byte: the message stays one line */
    char msg[2048];
    const char *last = cg_last_error();
    if (strstr(last, path)) snprintf(msg, sizeof msg, "%s", last);
    else snprintf(msg, sizeof msg, "%s: %s", path, last);
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return cg_error(st, "%s", msg);
}

cg_status cg_tensor_load_onnx(const char *path, cg_tensor **out, char **name) {
    if (!out || !path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_load_onnx: NULL argument");
    *out = NULL;
    if (name) *name = NULL;
    file_map f;
    cg_status s = map_file(path, &f);
    if (!s) s = check_nesting(path, &onnx__tensor_proto__descriptor, &f);
    if (s) {
        unmap_file(&f);
        return s;
    }
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, f.len, f.p);
    unmap_file(&f);
    if (!t) return cg_error(CG_ERR_FORMAT, "%s: not an ONNX tensor (the file does not parse as a TensorProto)", path);
    char what[300];
    snprintf(what, sizeof what, "tensor '%.200s'", t->name ? t->name : "");
    s = cg_onnx_tensor(t, NULL, path, what, out);
    if (!s && name && !(*name = strdup(t->name ? t->name : ""))) {
        cg_tensor_free(*out);
        *out = NULL;
        s = cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return cg_onnx_one_line(s, path);
}
