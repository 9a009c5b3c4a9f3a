/*
 * NumPy .npy files: reading versions 1.0, 2.0 and 3.0, writing version 1.0.
 *
 * Layout: "\x93NUMPY", major, minor, a little-endian header length (u16 for
 * version 1, u32 for versions 2 and 3), then the header: a Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
 * with spaces and ended by '\n', then the raw data. The header is parsed by
 * a small strict parser (no evaluation); every size is checked against the
 * file size before anything is allocated. Every message starts with the path.
 *
 * bfloat16: numpy has no descr for it. numpy.save of an ml_dtypes.bfloat16
 * array writes '<V2' (a 2-byte opaque type with '<', where a plain np.void
 * array says '|V2'), and np.load gives the bytes back as V2, which
 * .view(ml_dtypes.bfloat16) turns into bfloat16 again. So '<V2' reads as
 * bf16 and bf16 is written as '<V2': files round-trip with numpy and
 * ml_dtypes.
 */
#include "tensor.h"

#include "error.h"
#include "narrow.h"
#include "read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* numpy leaves room in the header for the first axis to grow in place. */
#define NPY_GROWTH_AXIS_MAX_DIGITS 21

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define NPY_HOST_BIG_ENDIAN 1
#else
#define NPY_HOST_BIG_ENDIAN 0
#endif

/* The descrs read, without their byte-order character, and the dtype each
 * loads as. The first entry of a dtype is the one written for it, with
 * '|' for one-byte types and '<' for the others, as numpy writes them. */
static const struct npy_type {
    const char *descr;
    size_t size; /* bytes per element in the file */
    cg_dtype dtype;
} npy_types[] = {
    {"f4", 4, CG_F32},    {"i4", 4, CG_I32}, {"f2", 2, CG_F16},  {"V2", 2, CG_BF16}, {"i1", 1, CG_I8},
    {"u1", 1, CG_U8},     {"i8", 8, CG_I64}, {"b1", 1, CG_BOOL}, {"i2", 2, CG_I16},  {"u2", 2, CG_U16},
    {"u4", 4, CG_U32},    {"u8", 8, CG_U64}, {"f8", 8, CG_F32}, /* float64: rounded to f32, there is no f64 dtype */
    {"f1", 1, CG_F8E5M2},                                       /* what ml_dtypes' float8_e5m2 is saved as */
};
#define NPY_NTYPES ((int)(sizeof npy_types / sizeof npy_types[0]))
#define NPY_SUPPORTED                                                                                          \
    "'<f4' float32, '<f8' float64, '<f2' float16, '<V2' bfloat16 (ml_dtypes), '<i8' int64, "                   \
    "'<i4' int32, '<i2' int16, '|i1' int8, '<u8' uint64, '<u4' uint32, '<u2' uint16, '|u1' uint8, '|b1' bool " \
    "or '<f1' float8_e5m2 (ml_dtypes)"

/* ml_dtypes' other float8, float4, int4 and int2 types are all saved as
 * '<V1': the file does not say which, so such a file is refused, and these
 * dtypes are written so (np.load(path).view(ml_dtypes.float8_e4m3fn) reads
 * one back; the 4- and 2-bit integers as clgraph holds them, sign-extended
 * for i4 and i2, which ml_dtypes reads by their low bits). */
#define NPY_V1_TYPES \
    "float8_e4m3fn, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn, int4, uint4, int2 or uint2"

/* Copies `len` bytes of untrusted text into `dst` for a message: printable
 * ASCII as is, anything else as \xNN, cut with "..." when too long. */
static void quote_text(char *dst, size_t size, const char *src, size_t len) {
    size_t o = 0;
    if (size == 0) return;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        char tmp[5];
        int n;
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            tmp[0] = (char)c;
            n = 1;
        } else {
            n = snprintf(tmp, sizeof tmp, "\\x%02x", c);
        }
        if (o + (size_t)n + 4 > size) {
            if (o + 4 <= size) memcpy(dst + o, "...", 3), o += 3;
            break;
        }
        memcpy(dst + o, tmp, (size_t)n);
        o += (size_t)n;
    }
    dst[o < size ? o : size - 1] = '\0';
}

/* Formats a shape as Python writes a tuple: (), (3,), (2, 3). */
static void format_tuple(char *buf, size_t size, int ndim, const int64_t *dims) {
    size_t o = 0;
    int n = snprintf(buf, size, "(");
    o = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < ndim && o < size; i++) {
        n = snprintf(buf + o, size - o, "%s%lld", i ? ", " : "", (long long)dims[i]);
        if (n > 0) o += (size_t)n;
    }
    if (o < size) snprintf(buf + o, size - o, ndim == 1 ? ",)" : ")");
}

/* ------------------------------------------------------------------ */
/* Header parser                                                       */

typedef struct npy_header {
    int has_descr, has_fortran, has_shape;
    const char *descr; /* points into the header text */
    size_t descr_len;
    int fortran;
    int ndim;
    int64_t dims[CG_MAX_DIMS];
} npy_header;

typedef struct hparser {
    const char *path;
    const char *s;
    size_t n, pos;
} hparser;

static int hp_peek(const hparser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }

static void hp_ws(hparser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static cg_status hp_fail(const hparser *p, const char *what) {
    return cg_error(CG_ERR_FORMAT, "%s: malformed .npy header: %s (at header byte %zu)", p->path, what, p->pos);
}

static cg_status hp_expect(hparser *p, char c, const char *what) {
    hp_ws(p);
    if (hp_peek(p) != (unsigned char)c) return hp_fail(p, what);
    p->pos++;
    return CG_OK;
}

/* A quoted Python string without escapes: 'abc' or "abc". */
static cg_status hp_string(hparser *p, const char **s, size_t *len) {
    hp_ws(p);
    int q = hp_peek(p);
    if (q != '\'' && q != '"') return hp_fail(p, "expected a quoted string");
    size_t start = ++p->pos;
    while (p->pos < p->n && p->s[p->pos] != (char)q) {
        char c = p->s[p->pos];
        if (c == '\\') return hp_fail(p, "escape sequences are not supported in strings");
        if (c == '\n' || c == '\r') return hp_fail(p, "unterminated string");
        p->pos++;
    }
    if (p->pos >= p->n) return hp_fail(p, "unterminated string");
    *s = p->s + start;
    *len = p->pos - start;
    p->pos++;
    return CG_OK;
}

static int hp_word(hparser *p, const char *w) {
    size_t l = strlen(w);
    if (p->n - p->pos < l || memcmp(p->s + p->pos, w, l) != 0) return 0;
    /* the word must end here: "Truex" is not True */
    if (p->pos + l < p->n) {
        char c = p->s[p->pos + l];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return 0;
    }
    p->pos += l;
    return 1;
}

static cg_status hp_bool(hparser *p, int *v) {
    hp_ws(p);
    if (hp_word(p, "True")) *v = 1;
    else if (hp_word(p, "False")) *v = 0;
    else return hp_fail(p, "'fortran_order' must be True or False");
    return CG_OK;
}

/* A tuple of non-negative integers: (), (3,), (2, 3), (2, 3,). */
static cg_status hp_shape(hparser *p, npy_header *h) {
    hp_ws(p);
    if (hp_peek(p) != '(') return hp_fail(p, "'shape' must be a tuple such as (2, 3)");
    p->pos++;
    h->ndim = 0;
    int trailing_comma = 0;
    for (;;) {
        hp_ws(p);
        int c = hp_peek(p);
        if (c == ')') break;
        if (c == '-') return hp_fail(p, "negative dimension in 'shape'");
        if (c < '0' || c > '9') return hp_fail(p, "expected an integer in 'shape'");
        if (c == '0' && p->pos + 1 < p->n && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9')
            return hp_fail(p, "leading zero in a dimension of 'shape'");
        int64_t v = 0;
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            int d = p->s[p->pos] - '0';
            if (v > (INT64_MAX - d) / 10) return hp_fail(p, "dimension in 'shape' is too large");
            v = v * 10 + d;
            p->pos++;
        }
        if (hp_peek(p) == 'L') p->pos++; /* Python 2 long literal, written by old numpy */
        if (h->ndim == CG_MAX_DIMS)
            return cg_error(CG_ERR_UNSUPPORTED, "%s: 'shape' has more than %d dimensions, which is not supported",
                            p->path, CG_MAX_DIMS);
        h->dims[h->ndim++] = v;
        hp_ws(p);
        c = hp_peek(p);
        trailing_comma = 0;
        if (c == ',') {
            p->pos++;
            trailing_comma = 1;
            continue;
        }
        if (c == ')') break;
        return hp_fail(p, "expected ',' or ')' in 'shape'");
    }
    if (h->ndim == 1 && !trailing_comma) return hp_fail(p, "'shape' is not a tuple (a 1-d shape is written (n,))");
    p->pos++; /* ')' */
    return CG_OK;
}

static cg_status parse_header(const char *path, const char *text, size_t len, npy_header *h) {
    hparser p = {path, text, len, 0};
    cg_status s;
    memset(h, 0, sizeof *h);
    if ((s = hp_expect(&p, '{', "expected '{' at the start of the header")) != CG_OK) return s;
    for (;;) {
        hp_ws(&p);
        if (hp_peek(&p) == '}') break;
        const char *key;
        size_t klen;
        size_t key_pos = p.pos;
        if ((s = hp_string(&p, &key, &klen)) != CG_OK) return s;
        if ((s = hp_expect(&p, ':', "expected ':' after a key")) != CG_OK) return s;
        int *seen;
        if (klen == 5 && memcmp(key, "descr", 5) == 0) seen = &h->has_descr;
        else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) seen = &h->has_fortran;
        else if (klen == 5 && memcmp(key, "shape", 5) == 0) seen = &h->has_shape;
        else {
            char k[80];
            quote_text(k, sizeof k, key, klen);
            return cg_error(CG_ERR_FORMAT, "%s: malformed .npy header: unknown key '%s' (at header byte %zu)", path, k,
                            key_pos);
        }
        if (*seen) {
            char k[80];
            quote_text(k, sizeof k, key, klen);
            return cg_error(CG_ERR_FORMAT, "%s: malformed .npy header: duplicate key '%s' (at header byte %zu)", path,
                            k, key_pos);
        }
        *seen = 1;
        if (seen == &h->has_descr) {
            hp_ws(&p);
            if (hp_peek(&p) == '[' || hp_peek(&p) == '{')
                return cg_error(CG_ERR_UNSUPPORTED, "%s: structured dtypes are not supported (expected %s)", path,
                                NPY_SUPPORTED);
            if ((s = hp_string(&p, &h->descr, &h->descr_len)) != CG_OK) return s;
        } else if (seen == &h->has_fortran) {
            if ((s = hp_bool(&p, &h->fortran)) != CG_OK) return s;
        } else {
            if ((s = hp_shape(&p, h)) != CG_OK) return s;
        }
        hp_ws(&p);
        int c = hp_peek(&p);
        if (c == ',') {
            p.pos++;
            continue;
        }
        if (c == '}') break;
        return hp_fail(&p, "expected ',' or '}' after a value");
    }
    p.pos++; /* '}' */
    hp_ws(&p);
    if (p.pos != p.n) return hp_fail(&p, "unexpected text after the header dictionary");
    const char *missing = !h->has_descr ? "descr" : !h->has_fortran ? "fortran_order" : !h->has_shape ? "shape" : NULL;
    if (missing) return cg_error(CG_ERR_FORMAT, "%s: malformed .npy header: missing key '%s'", path, missing);
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

static uint32_t rd_le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t rd_le64(const unsigned char *b) { return (uint64_t)rd_le32(b) | (uint64_t)rd_le32(b + 4) << 32; }

/* Reverses the bytes of each of n elements of `size` bytes in place: file
 * order <-> host order on a big-endian host. */
static void swap_elems(void *data, int64_t n, size_t size) {
    unsigned char *b = data;
    for (int64_t i = 0; size > 1 && i < n; i++, b += size)
        for (size_t k = 0; k < size / 2; k++) {
            unsigned char c = b[k];
            b[k] = b[size - 1 - k];
            b[size - 1 - k] = c;
        }
}

/* Reads exactly n bytes; a short read is an I/O error (the file shrank). */
static cg_status read_exact(int fd, void *buf, size_t n, const char *path) {
    unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t r = read(fd, p, chunk);
        if (r < 0) {
            if (errno == EINTR) continue;
            return cg_error(CG_ERR_IO, "%s: read failed: %s", path, strerror(errno));
        }
        if (r == 0) return cg_error(CG_ERR_IO, "%s: unexpected end of file (was it changed while being read?)", path);
        p += r;
        n -= (size_t)r;
    }
    return CG_OK;
}

/* An open file and what its prefix says. */
typedef struct npy_file {
    int fd;
    const char *path;
    uint64_t size;   /* of the whole file */
    uint64_t prefix; /* bytes before the header text: 10 or 12 */
    uint64_t hlen;   /* bytes of header text */
} npy_file;

/* The magic, the version and the header length, checked against the file.
 * The header length needs no cap of its own: it is read whole only once it
 * is known to fit in the file. */
static cg_status read_prefix(npy_file *f) {
    struct stat st;
    if (fstat(f->fd, &st) != 0) return cg_error(CG_ERR_IO, "%s: cannot stat: %s", f->path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return cg_error(CG_ERR_IO, "%s: not a regular file", f->path);
    f->size = (uint64_t)st.st_size;
    unsigned char pre[12];
    if (f->size < 10)
        return cg_error(CG_ERR_FORMAT, "%s: file is too short (%llu bytes) to be a .npy file", f->path,
                        (unsigned long long)f->size);
    cg_status s = read_exact(f->fd, pre, 10, f->path);
    if (s != CG_OK) return s;
    if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return cg_error(CG_ERR_FORMAT, "%s: not a .npy file (bad magic bytes)", f->path);
    unsigned major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: unsupported .npy format version %u.%u (expected 1.0, 2.0 or 3.0)",
                        f->path, major, minor);
    f->prefix = 10;
    f->hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    if (major >= 2) {
        f->prefix = 12;
        if (f->size < 12)
            return cg_error(CG_ERR_FORMAT, "%s: file is too short (%llu bytes) for a version %u.0 header", f->path,
                            (unsigned long long)f->size, major);
        if ((s = read_exact(f->fd, pre + 10, 2, f->path)) != CG_OK) return s;
        f->hlen = rd_le32(pre + 8);
    }
    if (f->hlen > f->size - f->prefix)
        return cg_error(CG_ERR_FORMAT, "%s: header length %llu is larger than the rest of the file (%llu bytes)",
                        f->path, (unsigned long long)f->hlen, (unsigned long long)(f->size - f->prefix));
    return CG_OK;
}

/* The type a descr names, or NULL; *big_endian when it names a supported
 * type in big-endian order. Byte order means nothing for one-byte types,
 * so '|', '<' and '>' all do for them; '<V2' is bf16 (see the top of the
 * file), '|V2' a plain opaque type. */
static const struct npy_type *match_descr(const char *d, size_t len, int *big_endian) {
    *big_endian = 0;
    if (len != 3) return NULL;
    const struct npy_type *ty = NULL;
    for (int i = 0; i < NPY_NTYPES && !ty; i++)
        if (memcmp(d + 1, npy_types[i].descr, 2) == 0) ty = &npy_types[i];
    if (!ty) return NULL;
    if (ty->size == 1) return d[0] == '|' || d[0] == '<' || d[0] == '>' ? ty : NULL;
    if (d[0] == '>') *big_endian = 1;
    return d[0] == '<' ? ty : NULL;
}

/* The type of the data, and that its layout is one we read. */
static cg_status header_type(const char *path, const npy_header *h, const struct npy_type **out) {
    int big_endian;
    const struct npy_type *ty = match_descr(h->descr, h->descr_len, &big_endian);
    char descr[64];
    quote_text(descr, sizeof descr, h->descr, h->descr_len);
    if (big_endian)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: big-endian data ('%s') is not supported; save it as little-endian",
                        path, descr);
    if (!ty && h->descr_len == 3 && !memcmp(h->descr + 1, "V1", 2))
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: dtype '%s' is a one-byte type numpy does not name: ml_dtypes saves each of its %s so, and "
                        "the file does not say which (save it as safetensors, or as another dtype)",
                        path, descr, NPY_V1_TYPES);
    if (!ty)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: unsupported dtype '%s' (expected %s)", path, descr, NPY_SUPPORTED);
    if (h->fortran)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: Fortran-order (column-major) data is not supported; save a "
                        "C-contiguous array",
                        path);
    *out = ty;
    return CG_OK;
}

/* Reads the header text and parses it, then its type. */
static cg_status read_header(const npy_file *f, npy_header *h, const struct npy_type **ty) {
    char *text = malloc((size_t)f->hlen + 1);
    if (!text) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", f->path);
    cg_status s = read_exact(f->fd, text, (size_t)f->hlen, f->path);
    if (s == CG_OK) {
        text[f->hlen] = '\0';
        s = parse_header(f->path, text, (size_t)f->hlen, h);
    }
    if (s == CG_OK) s = header_type(f->path, h, ty);
    free(text); /* h->descr points into it: not used past this point */
    h->descr = NULL;
    return s;
}

/* The element count, and that the data after the header has exactly the
 * bytes it needs. */
static cg_status check_data_size(const npy_file *f, const npy_header *h, const struct npy_type *ty, int64_t *numel) {
    char shape[256], descr[4] = {ty->size == 1 ? '|' : '<', ty->descr[0], ty->descr[1], 0};
    format_tuple(shape, sizeof shape, h->ndim, h->dims);
    int64_t n = cg_shape_numel(h->ndim, h->dims);
    if (n < 0 || (uint64_t)n > UINT64_MAX / ty->size)
        return cg_error(CG_ERR_FORMAT, "%s: shape %s has too many elements", f->path, shape);
    uint64_t expected = (uint64_t)n * ty->size;
    uint64_t present = f->size - f->prefix - f->hlen;
    if (present < expected)
        return cg_error(CG_ERR_FORMAT,
                        "%s: data is truncated: shape %s of '%s' needs %llu bytes, but only %llu "
                        "are present",
                        f->path, shape, descr, (unsigned long long)expected, (unsigned long long)present);
    if (present > expected)
        return cg_error(CG_ERR_FORMAT,
                        "%s: %llu bytes of unexpected data after the %llu bytes of shape %s of "
                        "'%s'",
                        f->path, (unsigned long long)(present - expected), (unsigned long long)expected, shape, descr);
    *numel = n;
    return CG_OK;
}

/* Reads `numel` float64 elements in chunks, rounding them into t's f32. */
static cg_status read_f8(const npy_file *f, int64_t numel, cg_tensor *t) {
    enum { CHUNK = 8192 };
    unsigned char *buf = malloc((size_t)CHUNK * 8);
    if (!buf) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", f->path);
    cg_status s = CG_OK;
    for (int64_t base = 0; base < numel && s == CG_OK; base += CHUNK) {
        size_t n = (size_t)(numel - base < CHUNK ? numel - base : CHUNK);
        if ((s = read_exact(f->fd, buf, n * 8, f->path)) != CG_OK) break;
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = rd_le64(buf + i * 8);
            double d;
            memcpy(&d, &bits, sizeof d);
            ((float *)t->data)[base + (int64_t)i] = (float)d;
        }
    }
    free(buf);
    return s;
}

/* A bool is one byte, 0 or 1: anything else is not a value numpy makes. */
static cg_status check_bools(const char *path, const cg_tensor *t, int64_t numel) {
    const unsigned char *b = t->data;
    for (int64_t i = 0; i < numel; i++)
        if (b[i] > 1)
            return cg_error(CG_ERR_FORMAT, "%s: element %lld of the bool array is %u, not 0 (False) or 1 (True)", path,
                            (long long)i, (unsigned)b[i]);
    return CG_OK;
}

/* Reads the data into a new tensor of the type's dtype. */
static cg_status read_data(const npy_file *f, const npy_header *h, const struct npy_type *ty, int64_t numel,
                           cg_tensor **out) {
    cg_tensor *t;
    cg_status s = cg_tensor_alloc(ty->dtype, h->ndim, h->dims, &t);
    if (s != CG_OK) {
        cg_error_prefix("%s: ", f->path);
        return s;
    }
    if (ty->size != cg_dtype_size(ty->dtype)) {
        s = read_f8(f, numel, t);
    } else {
        s = read_exact(f->fd, t->data, (size_t)numel * ty->size, f->path);
        if (s == CG_OK && NPY_HOST_BIG_ENDIAN) swap_elems(t->data, numel, ty->size);
        if (s == CG_OK && ty->dtype == CG_BOOL) s = check_bools(f->path, t, numel);
    }
    if (s != CG_OK) {
        cg_tensor_free(t);
        return s;
    }
    *out = t;
    return CG_OK;
}

static cg_status load_fd(int fd, const char *path, cg_tensor **out) {
    npy_file f = {fd, path, 0, 0, 0};
    npy_header h;
    const struct npy_type *ty = NULL;
    int64_t numel = 0;
    cg_status s = read_prefix(&f);
    if (s == CG_OK) s = read_header(&f, &h, &ty);
    if (s == CG_OK) s = check_data_size(&f, &h, ty, &numel);
    if (s == CG_OK) s = read_data(&f, &h, ty, numel, out);
    return s;
}

cg_status cg_tensor_load_npy(const char *path, cg_tensor **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_load_npy: NULL output pointer");
    *out = NULL;
    if (!path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_load_npy: NULL path");
    /* A FIFO or device named as a .npy file is refused without waiting. */
    int fd;
    cg_status s = cg_open_regular(path, O_RDONLY, &fd, NULL);
    if (s) return s;
    s = load_fd(fd, path, out);
    close(fd);
    return s;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

/* The descr written for a dtype, as numpy writes it ("<f4", "|b1", "<V2"), or
 * NULL for an invalid dtype. */
static int save_descr(cg_dtype dtype, char descr[4]) {
    if (cg_dtype_is_narrow(dtype)) { /* as ml_dtypes writes them */
        memcpy(descr, dtype == CG_F8E5M2 ? "<f1" : "<V1", 4);
        return 1;
    }
    for (int i = 0; i < NPY_NTYPES; i++)
        if (npy_types[i].dtype == dtype) {
            descr[0] = npy_types[i].size == 1 ? '|' : '<';
            memcpy(descr + 1, npy_types[i].descr, 2);
            descr[3] = '\0';
            return 1;
        }
    return 0;
}

/* The prefix and header numpy.save writes: sorted keys, repr() values, spare
 * room for the first axis to grow, padded with spaces so that the data
 * starts on a 64-byte boundary, ended by '\n'. The dict is at most ~250
 * bytes (8 dimensions of at most 20 digits), so `hdr` (512) always holds it,
 * the growth room and the padding. Returns the bytes in hdr. */
static size_t build_header(const cg_tensor *t, const char *descr, unsigned char hdr[512]) {
    char shape[256];
    format_tuple(shape, sizeof shape, t->ndim, t->dims);
    char *dict = (char *)hdr + 10;
    int dn = snprintf(dict, 512 - 10 - NPY_GROWTH_AXIS_MAX_DIGITS - NPY_ALIGN,
                      "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t len = (size_t)dn;
    if (t->ndim > 0) {
        char first[32];
        size_t fl = (size_t)snprintf(first, sizeof first, "%lld", (long long)t->dims[0]);
        size_t grow = NPY_GROWTH_AXIS_MAX_DIGITS > fl ? NPY_GROWTH_AXIS_MAX_DIGITS - fl : 0;
        memset(dict + len, ' ', grow);
        len += grow;
    }
    size_t pad = NPY_ALIGN - (NPY_MAGIC_LEN + 2 + 2 + len + 1) % NPY_ALIGN;
    memset(dict + len, ' ', pad);
    size_t total = len + pad + 1;
    dict[total - 1] = '\n';
    memcpy(hdr, NPY_MAGIC, NPY_MAGIC_LEN);
    hdr[6] = 1;
    hdr[7] = 0;
    hdr[8] = (unsigned char)(total & 0xff);
    hdr[9] = (unsigned char)(total >> 8);
    return 10 + total;
}

/* Writes the data little-endian. */
static int write_data(FILE *f, const cg_tensor *t, int64_t numel) {
    size_t es = cg_dtype_size(t->dtype);
    if (!NPY_HOST_BIG_ENDIAN) return numel == 0 || fwrite(t->data, es, (size_t)numel, f) == (size_t)numel;
    for (int64_t i = 0; i < numel; i++) {
        unsigned char b[8];
        memcpy(b, (const unsigned char *)t->data + es * (size_t)i, es);
        swap_elems(b, 1, es);
        if (fwrite(b, 1, es, f) != es) return 0;
    }
    return 1;
}

cg_status cg_tensor_save_npy(const cg_tensor *t, const char *path) {
    if (!t) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_save_npy: NULL tensor");
    if (!path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_save_npy: NULL path");
    char descr[4];
    if (!save_descr(t->dtype, descr))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: cannot save a tensor of dtype %d", path, (int)t->dtype);
    int64_t numel = cg_shape_numel(t->ndim, t->dims);
    if (numel < 0) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: the tensor has an invalid shape", path);
    unsigned char hdr[512];
    size_t hn = build_header(t, descr, hdr);

    FILE *f = fopen(path, "wb");
    if (!f) return cg_error(CG_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    int ok = fwrite(hdr, 1, hn, f) == hn && write_data(f, t, numel);
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        remove(path);
        return cg_error(CG_ERR_IO, "%s: write failed: %s", path, err ? strerror(err) : "short write");
    }
    return CG_OK;
}
