/*
 * NumPy .npy files: reading versions 1.0, 2.0 and 3.0, writing version 1.0.
 *
 * Layout: "\x93NUMPY", major, minor, a little-endian header length (u16 for
 * version 1, u32 for versions 2 and 3), then the header: a Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded
 * with spaces and ended by '\n', then the raw data. The header is parsed by
 * a small strict parser (no evaluation); every size is checked against the
 * file size before anything is allocated. Every message starts with the path.
 */
#include "tensor.h"

#include "error.h"

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

/* Headers of the dtypes we read are < 200 bytes; numpy itself refuses
 * headers over 10000 bytes from untrusted files by default. */
#define NPY_MAX_HEADER_LEN (1u << 20)
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

typedef enum npy_kind { NPY_F4, NPY_F8, NPY_I4, NPY_I8 } npy_kind;

static const struct {
    const char *descr; /* without the byte-order character */
    npy_kind kind;
    size_t size;
    cg_dtype dtype;
} npy_types[] = {
    {"f4", NPY_F4, 4, CG_F32},
    {"f8", NPY_F8, 8, CG_F32},
    {"i4", NPY_I4, 4, CG_I32},
    {"i8", NPY_I8, 8, CG_I32},
};

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
    const char *descr;  /* points into the header text */
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

static int hp_peek(const hparser *p) {
    return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1;
}

static void hp_ws(hparser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static cg_status hp_fail(const hparser *p, const char *what) {
    return cg_error(CG_ERR_FORMAT, "%s: malformed .npy header: %s (at header byte %zu)",
                    p->path, what, p->pos);
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
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_')
            return 0;
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
            return cg_error(CG_ERR_UNSUPPORTED,
                            "%s: 'shape' has more than %d dimensions, which is not supported",
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
    if (h->ndim == 1 && !trailing_comma)
        return hp_fail(p, "'shape' is not a tuple (a 1-d shape is written (n,))");
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
            return cg_error(CG_ERR_FORMAT,
                            "%s: malformed .npy header: unknown key '%s' (at header byte %zu)",
                            path, k, key_pos);
        }
        if (*seen) {
            char k[80];
            quote_text(k, sizeof k, key, klen);
            return cg_error(CG_ERR_FORMAT,
                            "%s: malformed .npy header: duplicate key '%s' (at header byte %zu)",
                            path, k, key_pos);
        }
        *seen = 1;
        if (seen == &h->has_descr) {
            hp_ws(&p);
            if (hp_peek(&p) == '[' || hp_peek(&p) == '{')
                return cg_error(CG_ERR_UNSUPPORTED,
                                "%s: structured dtypes are not supported (expected float32, "
                                "float64, int32 or int64)",
                                path);
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
    const char *missing = !h->has_descr ? "descr" : !h->has_fortran ? "fortran_order"
                        : !h->has_shape ? "shape" : NULL;
    if (missing)
        return cg_error(CG_ERR_FORMAT, "%s: malformed .npy header: missing key '%s'", path,
                        missing);
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

static uint32_t rd_le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t rd_le64(const unsigned char *b) {
    return (uint64_t)rd_le32(b) | (uint64_t)rd_le32(b + 4) << 32;
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
        if (r == 0)
            return cg_error(CG_ERR_IO, "%s: unexpected end of file (was it changed while being read?)",
                            path);
        p += r;
        n -= (size_t)r;
    }
    return CG_OK;
}

/* Reads `numel` 8-byte elements in chunks, converting them into t->data. */
static cg_status read_convert8(int fd, const char *path, npy_kind kind, int64_t numel,
                               cg_tensor *t) {
    enum { CHUNK = 8192 };
    unsigned char *buf = malloc((size_t)CHUNK * 8);
    if (!buf) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    cg_status s = CG_OK;
    for (int64_t base = 0; base < numel && s == CG_OK; base += CHUNK) {
        size_t n = (size_t)(numel - base < CHUNK ? numel - base : CHUNK);
        if ((s = read_exact(fd, buf, n * 8, path)) != CG_OK) break;
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = rd_le64(buf + i * 8);
            if (kind == NPY_F8) {
                double d;
                memcpy(&d, &bits, sizeof d);
                ((float *)t->data)[base + (int64_t)i] = (float)d;
            } else {
                int64_t v = (int64_t)bits;
                if (v < INT32_MIN || v > INT32_MAX) {
                    s = cg_error(CG_ERR_UNSUPPORTED,
                                 "%s: element %lld has value %lld, which does not fit in int32",
                                 path, (long long)(base + (int64_t)i), (long long)v);
                    break;
                }
                ((int32_t *)t->data)[base + (int64_t)i] = (int32_t)v;
            }
        }
    }
    free(buf);
    return s;
}

static cg_status load_fd(int fd, const char *path, cg_tensor **out) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return cg_error(CG_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return cg_error(CG_ERR_IO, "%s: not a regular file", path);
    uint64_t fsize = (uint64_t)st.st_size;

    unsigned char pre[12];
    if (fsize < 10)
        return cg_error(CG_ERR_FORMAT, "%s: file is too short (%llu bytes) to be a .npy file",
                        path, (unsigned long long)fsize);
    cg_status s = read_exact(fd, pre, 10, path);
    if (s != CG_OK) return s;
    if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return cg_error(CG_ERR_FORMAT, "%s: not a .npy file (bad magic bytes)", path);
    unsigned major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: unsupported .npy format version %u.%u (expected 1.0, 2.0 or 3.0)",
                        path, major, minor);
    uint64_t prefix = 10;
    uint64_t hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    if (major >= 2) {
        prefix = 12;
        if (fsize < 12)
            return cg_error(CG_ERR_FORMAT,
                            "%s: file is too short (%llu bytes) for a version %u.0 header",
                            path, (unsigned long long)fsize, major);
        if ((s = read_exact(fd, pre + 10, 2, path)) != CG_OK) return s;
        hlen = rd_le32(pre + 8);
    }
    if (hlen > NPY_MAX_HEADER_LEN)
        return cg_error(CG_ERR_FORMAT, "%s: header length %llu exceeds the limit of %u bytes",
                        path, (unsigned long long)hlen, NPY_MAX_HEADER_LEN);
    if (hlen > fsize - prefix)
        return cg_error(CG_ERR_FORMAT,
                        "%s: header length %llu is larger than the rest of the file (%llu bytes)",
                        path, (unsigned long long)hlen, (unsigned long long)(fsize - prefix));

    char *text = malloc((size_t)hlen + 1);
    if (!text) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    if ((s = read_exact(fd, text, (size_t)hlen, path)) != CG_OK) {
        free(text);
        return s;
    }
    text[hlen] = '\0';
    npy_header h;
    s = parse_header(path, text, (size_t)hlen, &h);
    if (s != CG_OK) {
        free(text);
        return s;
    }

    /* dtype */
    int ti = -1;
    int big_endian = 0;
    if (h.descr_len == 3 && (h.descr[0] == '<' || h.descr[0] == '>')) {
        for (int i = 0; i < (int)(sizeof npy_types / sizeof npy_types[0]); i++)
            if (memcmp(h.descr + 1, npy_types[i].descr, 2) == 0) ti = i;
        if (ti >= 0 && h.descr[0] == '>') big_endian = 1;
    }
    char descr[64];
    quote_text(descr, sizeof descr, h.descr, h.descr_len);
    free(text); /* h.descr is not used past this point */
    if (big_endian)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: big-endian data ('%s') is not supported; save it as little-endian",
                        path, descr);
    if (ti < 0)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: unsupported dtype '%s' (expected float32, float64, int32 or int64)",
                        path, descr);
    if (h.fortran)
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: Fortran-order (column-major) data is not supported; save a "
                        "C-contiguous array",
                        path);

    /* sizes */
    char shape[256];
    format_tuple(shape, sizeof shape, h.ndim, h.dims);
    int64_t numel = cg_shape_numel(h.ndim, h.dims);
    size_t esize = npy_types[ti].size;
    if (numel < 0 || (uint64_t)numel > UINT64_MAX / esize)
        return cg_error(CG_ERR_FORMAT, "%s: shape %s has too many elements", path, shape);
    uint64_t expected = (uint64_t)numel * esize;
    uint64_t present = fsize - prefix - hlen;
    if (present < expected)
        return cg_error(CG_ERR_FORMAT,
                        "%s: data is truncated: shape %s of '%s' needs %llu bytes, but only %llu "
                        "are present",
                        path, shape, descr, (unsigned long long)expected,
                        (unsigned long long)present);
    if (present > expected)
        return cg_error(CG_ERR_FORMAT,
                        "%s: %llu bytes of unexpected data after the %llu bytes of shape %s of "
                        "'%s'",
                        path, (unsigned long long)(present - expected),
                        (unsigned long long)expected, shape, descr);

    cg_tensor *t;
    if ((s = cg_tensor_alloc(npy_types[ti].dtype, h.ndim, h.dims, &t)) != CG_OK) {
        cg_error_prefix("%s: ", path);
        return s;
    }
    npy_kind kind = npy_types[ti].kind;
    if (kind == NPY_F4 || kind == NPY_I4) {
        s = read_exact(fd, t->data, (size_t)expected, path);
#if NPY_HOST_BIG_ENDIAN
        if (s == CG_OK) {
            unsigned char *b = t->data;
            for (int64_t i = 0; i < numel; i++) {
                uint32_t v = rd_le32(b + 4 * i);
                memcpy(b + 4 * i, &v, 4);
            }
        }
#endif
    } else {
        s = read_convert8(fd, path, kind, numel, t);
    }
    if (s != CG_OK) {
        cg_tensor_free(t);
        return s;
    }
    *out = t;
    return CG_OK;
}

cg_status cg_tensor_load_npy(const char *path, cg_tensor **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_load_npy: NULL output pointer");
    *out = NULL;
    if (!path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_load_npy: NULL path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cg_error(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    cg_status s = load_fd(fd, path, out);
    close(fd);
    return s;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

cg_status cg_tensor_save_npy(const cg_tensor *t, const char *path) {
    if (!t) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_save_npy: NULL tensor");
    if (!path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_tensor_save_npy: NULL path");
    const char *descr = t->dtype == CG_F32 ? "<f4" : t->dtype == CG_I32 ? "<i4" : NULL;
    if (!descr)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: cannot save a tensor of dtype %d", path,
                        (int)t->dtype);
    int64_t numel = cg_shape_numel(t->ndim, t->dims);
    if (numel < 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: the tensor has an invalid shape", path);

    /* Same bytes as numpy.save: sorted keys, repr() values, spare room for
     * the first axis to grow, padded with spaces so that the data starts on
     * a 64-byte boundary, ended by '\n'. */
    char shape[256];
    format_tuple(shape, sizeof shape, t->ndim, t->dims);
    char dict[512];
    int dn = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                      descr, shape);
    if (dn < 0 || (size_t)dn + NPY_GROWTH_AXIS_MAX_DIGITS + NPY_ALIGN + 1 > sizeof dict)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: header too long", path);
    size_t len = (size_t)dn;
    if (t->ndim > 0) {
        char first[32];
        size_t fl = (size_t)snprintf(first, sizeof first, "%lld", (long long)t->dims[0]);
        size_t grow = NPY_GROWTH_AXIS_MAX_DIGITS > fl ? NPY_GROWTH_AXIS_MAX_DIGITS - fl : 0;
        memset(dict + len, ' ', grow);
        len += grow;
    }
    size_t hlen = len + 1;
    size_t pad = NPY_ALIGN - (NPY_MAGIC_LEN + 2 + 2 + hlen) % NPY_ALIGN;
    size_t total_header = hlen + pad;
    unsigned char prefix[10];
    memcpy(prefix, NPY_MAGIC, NPY_MAGIC_LEN);
    prefix[6] = 1;
    prefix[7] = 0;
    prefix[8] = (unsigned char)(total_header & 0xff);
    prefix[9] = (unsigned char)(total_header >> 8);
    memset(dict + len, ' ', pad);
    dict[len + pad] = '\n';

    FILE *f = fopen(path, "wb");
    if (!f) return cg_error(CG_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    int ok = fwrite(prefix, 1, sizeof prefix, f) == sizeof prefix &&
             fwrite(dict, 1, total_header, f) == total_header;
    size_t bytes = (size_t)numel * 4;
#if NPY_HOST_BIG_ENDIAN
    for (int64_t i = 0; ok && i < numel; i++) {
        uint32_t v;
        memcpy(&v, (const unsigned char *)t->data + 4 * i, 4);
        unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
                              (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
        ok = fwrite(b, 1, 4, f) == 4;
    }
#else
    if (ok && bytes > 0) ok = fwrite(t->data, 1, bytes, f) == bytes;
#endif
    int err = ok ? 0 : errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok) {
        remove(path);
        return cg_error(CG_ERR_IO, "%s: write failed: %s", path,
                        err ? strerror(err) : "short write");
    }
    return CG_OK;
}
