/*
 * safetensors files: memory-mapped, validated, viewed or converted lazily.
 *
 * Layout: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...,
 *    "__metadata__": {"key": "value", ...}}
 * (possibly padded with trailing spaces), then the data section. Offsets are
 * relative to the data section.
 *
 * Nothing in the file is trusted before it is checked: the header length
 * against the file and a 100 MB cap, UTF-8, the JSON syntax (a strict parser
 * for exactly this schema, no floats, booleans or nulls anywhere), the keys
 * of every tensor, the dtype, the rank, the element count and byte size
 * (overflow-checked), that offsets lie in the data section, that every
 * tensor's byte range matches its shape, that no two names are equal, and,
 * as the reference implementation requires, that the tensors tile the data
 * section exactly (no overlaps, no holes, no trailing bytes).
 *
 * Why a private parser although cJSON is linked: measured with cJSON
 * 1.7.15, cJSON accepts what this schema must refuse and what its tree no
 * longer shows: "a\u0000b" becomes the key "a" (a silent rename), 1.0, 1e0
 * and 01 all become 1, 9007199254740993 becomes ...992 and 2^64 the same
 * double as 2^64-1, a raw tab inside a string and data after the object
 * pass, duplicate keys are both kept. Checking those on top of cJSON means
 * tokenizing the text again; this parser does it once and says what and
 * where (byte offset) for each refusal.
 */
#include "weights.h"

#include "dtype.h"
#include "mem.h"
#include "error.h"
#include "read_file.h"
#include "strbuf.h"
#include "tensor.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ST_HOST_BIG_ENDIAN 1
#else
#define ST_HOST_BIG_ENDIAN 0
#endif

/* The format's dtype names, indexed by the cg_dtype each one is. */
static const char *const st_names[] = {
    [CG_F32] = "F32",
    [CG_I32] = "I32",
    [CG_F16] = "F16",
    [CG_BF16] = "BF16",
    [CG_I8] = "I8",
    [CG_U8] = "U8",
    [CG_I64] = "I64",
    [CG_BOOL] = "BOOL",
    [CG_I16] = "I16",
    [CG_U16] = "U16",
    [CG_U32] = "U32",
    [CG_U64] = "U64",
    /* the float8 types under the names safetensors' PyTorch loader gives
     * them; f4e2m1, i4, u4, i2 and u2 have none (the format's packed F4 is
     * not read), so they are neither read nor written */
    [CG_F8E4M3FN] = "F8_E4M3",
    [CG_F8E4M3FNUZ] = "F8_E4M3FNUZ",
    [CG_F8E5M2] = "F8_E5M2",
    [CG_F8E5M2FNUZ] = "F8_E5M2FNUZ",
    [CG_F8E8M0] = "F8_E8M0",
};
#define ST_NTYPES ((int)(sizeof st_names / sizeof st_names[0]))
#define ST_SUPPORTED \
    "F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E4M3FNUZ, F8_E5M2, F8_E5M2FNUZ, F8_E8M0"

const char *cg_st_dtype_name(cg_dtype t) { return (int)t > 0 && (int)t < ST_NTYPES ? st_names[t] : NULL; }

typedef struct st_entry {
    char *name;
    cg_dtype dtype; /* as stored */
    int ndim;
    int64_t dims[CG_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end; /* relative to the data section */
    /* Views that are not the mapped bytes themselves, made on first use
     * (under the lock) and kept until cg_weights_free, cg_aligned_alloc'ed:
     * the stored dtype in host order and aligned, and each dtype a view
     * converts it to (F16/BF16 -> F32, I64 -> I32, F32 -> F16 or BF16),
     * indexed by that dtype. */
    void *copy;
    void *converted[CG_DTYPE_LAST + 1];
    int bools_checked; /* BOOL: every byte was seen to be 0 or 1 */
} st_entry;

struct cg_weights {
    char *path;
    void *map;
    size_t map_size;
    const unsigned char *data; /* the data section */
    uint64_t data_size;
    st_entry *entries; /* sorted by name (strcmp) */
    size_t count;
    pthread_mutex_t lock; /* guards entries[].copy, .converted, .bools_checked */
    void *owned;          /* cg_weights_from_tensors: the data section */
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

#define NAME_BUF 160
static void quote_name(char *dst, const char *name) { cg_quote_text(dst, NAME_BUF, name, strlen(name)); }

/* "F32[12, 4]" */
static void format_stored(char *buf, size_t size, const st_entry *e) {
    size_t o = 0;
    int n = snprintf(buf, size, "%s[", st_names[e->dtype]);
    o = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < e->ndim && o < size; i++) {
        n = snprintf(buf + o, size - o, "%s%lld", i ? ", " : "", (long long)e->dims[i]);
        if (n > 0) o += (size_t)n;
    }
    if (o < size) snprintf(buf + o, size - o, "]");
}

static uint32_t rd_le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t rd_le64(const unsigned char *b) { return (uint64_t)rd_le32(b) | (uint64_t)rd_le32(b + 4) << 32; }

/* ------------------------------------------------------------------ */
/* JSON parser for the header schema                                   */

typedef struct jparser {
    const char *path;
    const unsigned char *s;
    size_t n, pos;
    const char *ctx; /* "tensor 'x': " or "" */
} jparser;

static cg_status jp_fail(const jparser *p, cg_status st, const char *fmt, ...) CG_PRINTF(3, 4);
static cg_status jp_fail(const jparser *p, cg_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cg_error(st, "%s: %s%s (at header byte %zu)", p->path, p->ctx, msg, p->pos);
}

static void jp_ws(jparser *p) {
    while (p->pos < p->n) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static int jp_peek(const jparser *p) { return p->pos < p->n ? p->s[p->pos] : -1; }

/* What the next token is, for "expected X, found Y". */
static const char *jp_found(const jparser *p, char *buf, size_t size) {
    int c = jp_peek(p);
    if (c < 0) return "the end of the header";
    if (c == '{') return "an object";
    if (c == '[') return "an array";
    if (c == '"') return "a string";
    if (c == '-' || (c >= '0' && c <= '9')) {
        size_t i = p->pos + (c == '-');
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
        if (i < p->n && (p->s[i] == '.' || p->s[i] == 'e' || p->s[i] == 'E')) return "a floating-point number";
        return c == '-' ? "a negative number" : "a number";
    }
    if (p->n - p->pos >= 4 && memcmp(p->s + p->pos, "true", 4) == 0) return "a boolean";
    if (p->n - p->pos >= 5 && memcmp(p->s + p->pos, "false", 5) == 0) return "a boolean";
    if (p->n - p->pos >= 4 && memcmp(p->s + p->pos, "null", 4) == 0) return "null";
    if (c >= 0x21 && c < 0x7f) snprintf(buf, size, "'%c'", c);
    else snprintf(buf, size, "byte 0x%02x", (unsigned)c);
    return buf;
}

/* Expects the punctuation character `c` after optional whitespace. */
static cg_status jp_expect(jparser *p, char c, const char *what) {
    jp_ws(p);
    if (jp_peek(p) == (unsigned char)c) {
        p->pos++;
        return CG_OK;
    }
    char b[16];
    return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: expected %s, found %s", what, jp_found(p, b, sizeof b));
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int jp_hex4(jparser *p, uint32_t *v) {
    if (p->n - p->pos < 4) return 0;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p->s[p->pos + i]);
        if (h < 0) return 0;
        r = r << 4 | (uint32_t)h;
    }
    p->pos += 4;
    *v = r;
    return 1;
}

/* Parses a JSON string (after whitespace) into a new NUL-terminated buffer;
 * *len excludes the terminator (the text itself may contain NULs). `what`
 * names the expected thing for messages. The header is valid UTF-8. */
static cg_status jp_string(jparser *p, const char *what, char **out, size_t *len) {
    *out = NULL;
    jp_ws(p);
    if (jp_peek(p) != '"') {
        char b[16];
        return jp_fail(p, CG_ERR_FORMAT, "expected %s, found %s", what, jp_found(p, b, sizeof b));
    }
    size_t start = p->pos;
    /* the decoded text is never longer than the raw one: find the end */
    size_t i = p->pos + 1;
    while (i < p->n && p->s[i] != '"') i += p->s[i] == '\\' ? 2 : 1;
    if (i >= p->n) return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: unterminated string");
    char *buf = malloc(i - start);
    if (!buf) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", p->path);
    size_t o = 0;
    p->pos++;
    for (;;) {
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            free(buf);
            return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: unescaped control character 0x%02x in a string", c);
        }
        if (c != '\\') {
            buf[o++] = (char)c;
            p->pos++;
            continue;
        }
        size_t esc_pos = p->pos;
        p->pos++;
        c = p->s[p->pos++];
        uint32_t cp;
        switch (c) {
        case '"': buf[o++] = '"'; continue;
        case '\\': buf[o++] = '\\'; continue;
        case '/': buf[o++] = '/'; continue;
        case 'b': buf[o++] = '\b'; continue;
        case 'f': buf[o++] = '\f'; continue;
        case 'n': buf[o++] = '\n'; continue;
        case 'r': buf[o++] = '\r'; continue;
        case 't': buf[o++] = '\t'; continue;
        case 'u':
            if (!jp_hex4(p, &cp)) {
                p->pos = esc_pos;
                free(buf);
                return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: bad \\u escape in a string");
            }
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                p->pos = esc_pos;
                free(buf);
                return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: unpaired surrogate \\u%04X in a string", (unsigned)cp);
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
                    (p->pos += 2, !jp_hex4(p, &lo)) || lo < 0xdc00 || lo > 0xdfff) {
                    p->pos = esc_pos;
                    free(buf);
                    return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: unpaired surrogate \\u%04X in a string",
                                   (unsigned)cp);
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            /* UTF-8 of cp is at most as long as its escape (6 or 12 bytes) */
            if (cp < 0x80) {
                buf[o++] = (char)cp;
            } else if (cp < 0x800) {
                buf[o++] = (char)(0xc0 | cp >> 6);
                buf[o++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                buf[o++] = (char)(0xe0 | cp >> 12);
                buf[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                buf[o++] = (char)(0x80 | (cp & 0x3f));
            } else {
                buf[o++] = (char)(0xf0 | cp >> 18);
                buf[o++] = (char)(0x80 | ((cp >> 12) & 0x3f));
                buf[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                buf[o++] = (char)(0x80 | (cp & 0x3f));
            }
            continue;
        default:
            p->pos = esc_pos;
            free(buf);
            return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: bad escape sequence in a string");
        }
    }
    buf[o] = '\0';
    *out = buf;
    *len = o;
    return CG_OK;
}

/* A non-negative JSON integer no larger than `max`. */
static cg_status jp_uint(jparser *p, const char *what, uint64_t max, uint64_t *v) {
    jp_ws(p);
    int c = jp_peek(p);
    char b[16];
    if (c < '0' || c > '9') return jp_fail(p, CG_ERR_FORMAT, "expected %s, found %s", what, jp_found(p, b, sizeof b));
    const char *found = jp_found(p, b, sizeof b);
    if (strcmp(found, "a number") != 0) return jp_fail(p, CG_ERR_FORMAT, "expected %s, found %s", what, found);
    if (c == '0' && p->pos + 1 < p->n && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9')
        return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: number with a leading zero");
    uint64_t r = 0;
    size_t start = p->pos;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        unsigned d = p->s[p->pos] - '0';
        if (r > (max - d) / 10) {
            p->pos = start;
            return jp_fail(p, CG_ERR_FORMAT, "%s is too large (more than %llu)", what, (unsigned long long)max);
        }
        r = r * 10 + d;
        p->pos++;
    }
    *v = r;
    return CG_OK;
}

/* After a value in an array or object: ',' (returns 1) or `close` (0). */
static cg_status jp_next(jparser *p, char close, const char *where, int *more) {
    jp_ws(p);
    int c = jp_peek(p);
    if (c == ',') {
        p->pos++;
        *more = 1;
        return CG_OK;
    }
    if (c == (unsigned char)close) {
        p->pos++;
        *more = 0;
        return CG_OK;
    }
    char b[16];
    return jp_fail(p, CG_ERR_FORMAT, "invalid JSON: expected ',' or '%c' in %s, found %s", close, where,
                   jp_found(p, b, sizeof b));
}

/* Opens an object or array: `open`, then returns *empty if `close` follows. */
static cg_status jp_open(jparser *p, char open, char close, const char *what, int *empty) {
    jp_ws(p);
    if (jp_peek(p) != (unsigned char)open) {
        char b[16];
        return jp_fail(p, CG_ERR_FORMAT, "expected %s, found %s", what, jp_found(p, b, sizeof b));
    }
    p->pos++;
    jp_ws(p);
    *empty = jp_peek(p) == (unsigned char)close;
    if (*empty) p->pos++;
    return CG_OK;
}

typedef struct key_ref {
    const char *s;
    size_t len;
} key_ref;

static int key_ref_cmp(const void *a, const void *b) {
    const key_ref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* "__metadata__": an object of string values, no duplicate keys. */
static cg_status parse_metadata(jparser *p) {
    cg_status s;
    int empty, more = 1;
    p->ctx = "'__metadata__': ";
    if ((s = jp_open(p, '{', '}', "an object of strings", &empty)) != CG_OK) return s;
    if (empty) return CG_OK;
    char **keys = NULL;
    key_ref *refs = NULL;
    size_t n = 0, cap = 0;
    while (more) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **k = realloc(keys, nc * sizeof *k);
            if (!k) {
                s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", p->path);
                goto done;
            }
            keys = k;
            cap = nc;
        }
        size_t klen;
        if ((s = jp_string(p, "a string key", &keys[n], &klen)) != CG_OK) goto done;
        n++;
        if ((s = jp_expect(p, ':', "':' after a key")) != CG_OK) goto done;
        char *val;
        size_t vlen;
        char kq[NAME_BUF], what[NAME_BUF + 40];
        cg_quote_text(kq, sizeof kq, keys[n - 1], klen);
        snprintf(what, sizeof what, "a string value for key '%s'", kq);
        if ((s = jp_string(p, what, &val, &vlen)) != CG_OK) goto done;
        free(val);
        if ((s = jp_next(p, '}', "'__metadata__'", &more)) != CG_OK) goto done;
    }
    refs = malloc(n * sizeof *refs);
    if (!refs) {
        s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", p->path);
        goto done;
    }
    for (size_t i = 0; i < n; i++) refs[i] = (key_ref){keys[i], strlen(keys[i])};
    qsort(refs, n, sizeof *refs, key_ref_cmp);
    for (size_t i = 1; i < n; i++)
        if (key_ref_cmp(&refs[i - 1], &refs[i]) == 0) {
            char kq[NAME_BUF];
            cg_quote_text(kq, sizeof kq, refs[i].s, refs[i].len);
            s = cg_error(CG_ERR_FORMAT, "%s: '__metadata__': duplicate key '%s'", p->path, kq);
            goto done;
        }
    s = CG_OK;
done:
    for (size_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
    free(refs);
    p->ctx = "";
    return s;
}

/* The value of "dtype": one of the format's names we read. */
static cg_status parse_dtype(jparser *p, st_entry *e) {
    char *dt;
    size_t dlen;
    jp_ws(p);
    size_t dt_pos = p->pos;
    cg_status s = jp_string(p, "a string for 'dtype'", &dt, &dlen);
    if (s != CG_OK) return s;
    int t = 0;
    for (int i = 1; i < ST_NTYPES && !t; i++)
        if (st_names[i] && dlen == strlen(st_names[i]) && strcmp(dt, st_names[i]) == 0) t = i;
    if (!t) {
        char dq[64];
        cg_quote_text(dq, sizeof dq, dt, dlen);
        p->pos = dt_pos;
        s = jp_fail(p, CG_ERR_UNSUPPORTED, "unsupported dtype '%s' (supported: %s)", dq, ST_SUPPORTED);
    }
    free(dt);
    e->dtype = (cg_dtype)t;
    return s;
}

/* The value of "shape": an array of at most CG_MAX_DIMS sizes. */
static cg_status parse_shape(jparser *p, st_entry *e) {
    int empty, more = 1;
    cg_status s = jp_open(p, '[', ']', "an array of integers for 'shape'", &empty);
    if (s != CG_OK) return s;
    e->ndim = 0;
    while (!empty && more) {
        uint64_t d;
        if ((s = jp_uint(p, "a non-negative integer in 'shape'", (uint64_t)INT64_MAX, &d)) != CG_OK) return s;
        if (e->ndim == CG_MAX_DIMS)
            return jp_fail(p, CG_ERR_UNSUPPORTED, "'shape' has more than %d dimensions, which is not supported",
                           CG_MAX_DIMS);
        e->dims[e->ndim++] = (int64_t)d;
        if ((s = jp_next(p, ']', "'shape'", &more)) != CG_OK) return s;
    }
    return CG_OK;
}

/* The value of "data_offsets": exactly [begin, end]. */
static cg_status parse_offsets(jparser *p, st_entry *e) {
    int empty, more = 0, n = 0;
    jp_ws(p);
    size_t arr_pos = p->pos;
    cg_status s = jp_open(p, '[', ']', "an array [begin, end] for 'data_offsets'", &empty);
    if (s != CG_OK) return s;
    uint64_t *v[2] = {&e->begin, &e->end};
    for (more = !empty; more && n < 2; n++) {
        if ((s = jp_uint(p, "an integer in 'data_offsets'", UINT64_MAX, v[n])) != CG_OK ||
            (s = jp_next(p, ']', "'data_offsets'", &more)) != CG_OK)
            return s;
    }
    if (n != 2 || more) {
        p->pos = arr_pos;
        return jp_fail(p, CG_ERR_FORMAT, "'data_offsets' must have exactly two integers [begin, end]");
    }
    return CG_OK;
}

/* A key of a tensor description: 0 dtype, 1 shape, 2 data_offsets, each at
 * most once (seen[]). */
static cg_status parse_tensor_key(jparser *p, const int seen[3], int *which) {
    char *key;
    size_t klen;
    jp_ws(p);
    size_t key_pos = p->pos;
    cg_status s = jp_string(p, "a string key", &key, &klen);
    if (s != CG_OK) return s;
    static const char *const keys[3] = {"dtype", "shape", "data_offsets"};
    int k = -1;
    for (int i = 0; i < 3 && k < 0; i++)
        if (klen == strlen(keys[i]) && strcmp(key, keys[i]) == 0) k = i;
    if (k < 0 || seen[k]) {
        char kq[NAME_BUF];
        cg_quote_text(kq, sizeof kq, key, klen);
        p->pos = key_pos;
        s = jp_fail(p, CG_ERR_FORMAT, "%s key '%s'%s", k < 0 ? "unknown" : "duplicate", kq,
                    k < 0 ? " (expected dtype, shape and data_offsets)" : "");
    }
    free(key);
    *which = k;
    return s;
}

/* One tensor description {"dtype": .., "shape": [..], "data_offsets": [b, e]}. */
static cg_status parse_tensor(jparser *p, st_entry *e, const char *qname) {
    char ctx[NAME_BUF + 16];
    snprintf(ctx, sizeof ctx, "tensor '%s': ", qname);
    p->ctx = ctx;
    int empty, more = 1, seen[3] = {0, 0, 0}, which;
    cg_status s = jp_open(p, '{', '}', "an object with 'dtype', 'shape' and 'data_offsets'", &empty);
    while (s == CG_OK && !empty && more) {
        if ((s = parse_tensor_key(p, seen, &which)) != CG_OK || (s = jp_expect(p, ':', "':' after a key")) != CG_OK)
            break;
        s = which == 0 ? parse_dtype(p, e) : which == 1 ? parse_shape(p, e) : parse_offsets(p, e);
        seen[which] = 1;
        if (s == CG_OK) s = jp_next(p, '}', "a tensor description", &more);
    }
    if (s == CG_OK && (!seen[0] || !seen[1] || !seen[2]))
        s = jp_fail(p, CG_ERR_FORMAT, "missing '%s'", !seen[0] ? "dtype" : !seen[1] ? "shape" : "data_offsets");
    p->ctx = "";
    return s;
}

static void entries_free(st_entry *es, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(es[i].name);
        cg_aligned_free(es[i].copy);
        for (int k = 0; k <= CG_DTYPE_LAST; k++) cg_aligned_free(es[i].converted[k]);
    }
    free(es);
}

/* The whole header object. Fills w->entries / w->count (file order). */
static cg_status parse_header(cg_weights *w, const unsigned char *hdr, size_t len) {
    jparser p = {w->path, hdr, len, 0, ""};
    cg_status s;
    int empty, more = 1, have_meta = 0;
    size_t cap = 0;
    jp_ws(&p);
    if ((s = jp_open(&p, '{', '}', "a JSON object", &empty)) != CG_OK) return s;
    while (!empty && more) {
        char *name;
        size_t nlen;
        size_t name_pos;
        jp_ws(&p);
        name_pos = p.pos;
        if ((s = jp_string(&p, "a tensor name (string)", &name, &nlen)) != CG_OK) return s;
        if ((s = jp_expect(&p, ':', "':' after a tensor name")) != CG_OK) {
            free(name);
            return s;
        }
        if (strcmp(name, "__metadata__") == 0 && nlen == 12) {
            free(name);
            if (have_meta) {
                p.pos = name_pos;
                return jp_fail(&p, CG_ERR_FORMAT, "duplicate key '__metadata__'");
            }
            have_meta = 1;
            if ((s = parse_metadata(&p)) != CG_OK) return s;
        } else {
            char qname[NAME_BUF];
            cg_quote_text(qname, sizeof qname, name, nlen);
            if (strlen(name) != nlen) {
                free(name);
                p.pos = name_pos;
                return jp_fail(&p, CG_ERR_FORMAT, "tensor name '%s' contains a NUL character", qname);
            }
            if (w->count == cap) {
                size_t nc = cap ? cap * 2 : 64;
                st_entry *ne = realloc(w->entries, nc * sizeof *ne);
                if (!ne) {
                    free(name);
                    return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", w->path);
                }
                w->entries = ne;
                cap = nc;
            }
            st_entry *e = &w->entries[w->count++];
            memset(e, 0, sizeof *e);
            e->name = name;
            if ((s = parse_tensor(&p, e, qname)) != CG_OK) return s;
        }
        if ((s = jp_next(&p, '}', "the header object", &more)) != CG_OK) return s;
    }
    jp_ws(&p);
    if (p.pos != p.n) return jp_fail(&p, CG_ERR_FORMAT, "invalid JSON: unexpected data after the header object");
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Validation                                                          */

static int entry_name_cmp(const void *a, const void *b) {
    return strcmp(((const st_entry *)a)->name, ((const st_entry *)b)->name);
}

static int entry_offset_cmp(const void *a, const void *b) {
    const st_entry *x = *(st_entry *const *)a, *y = *(st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name); /* deterministic messages */
}

/* Sorts the entries by name (cg_weights_find searches them) and refuses a
 * name given twice. */
static cg_status sort_names(cg_weights *w) {
    if (w->count > 1) qsort(w->entries, w->count, sizeof *w->entries, entry_name_cmp);
    for (size_t i = 1; i < w->count; i++)
        if (strcmp(w->entries[i - 1].name, w->entries[i].name) == 0) {
            char q[NAME_BUF];
            quote_name(q, w->entries[i].name);
            return cg_error(CG_ERR_FORMAT, "%s: duplicate tensor name '%s'", w->path, q);
        }
    return CG_OK;
}

static cg_status validate(cg_weights *w) {
    char q[NAME_BUF], shape[256];
    for (size_t i = 0; i < w->count; i++) {
        st_entry *e = &w->entries[i];
        int64_t numel = cg_shape_numel(e->ndim, e->dims);
        size_t esize = cg_dtype_size(e->dtype);
        if (numel < 0 || (uint64_t)numel > UINT64_MAX / esize) {
            quote_name(q, e->name);
            format_stored(shape, sizeof shape, e);
            return cg_error(CG_ERR_FORMAT, "%s: tensor '%s': shape %s has too many elements", w->path, q, shape);
        }
        e->numel = numel;
        uint64_t bytes = (uint64_t)numel * esize;
        if (e->begin > e->end) {
            quote_name(q, e->name);
            return cg_error(CG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] are reversed (begin > end)",
                            w->path, q, (unsigned long long)e->begin, (unsigned long long)e->end);
        }
        if (e->end > w->data_size) {
            quote_name(q, e->name);
            return cg_error(CG_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets [%llu, %llu] go past the end of the "
                            "data section (%llu bytes)",
                            w->path, q, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)w->data_size);
        }
        if (e->end - e->begin != bytes) {
            quote_name(q, e->name);
            format_stored(shape, sizeof shape, e);
            return cg_error(CG_ERR_FORMAT,
                            "%s: tensor '%s': data_offsets [%llu, %llu] give %llu bytes, expected "
                            "%llu for %s",
                            w->path, q, (unsigned long long)e->begin, (unsigned long long)e->end,
                            (unsigned long long)(e->end - e->begin), (unsigned long long)bytes, shape);
        }
    }

    cg_status ds = sort_names(w);
    if (ds != CG_OK) return ds;

    /* The tensors must tile the data section: sorted by offset, each one
     * starts where the previous one ended, the last one ends at its end. */
    st_entry **by_off = malloc((w->count ? w->count : 1) * sizeof *by_off);
    if (!by_off) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", w->path);
    for (size_t i = 0; i < w->count; i++) by_off[i] = &w->entries[i];
    if (w->count > 1) qsort(by_off, w->count, sizeof *by_off, entry_offset_cmp);
    uint64_t pos = 0;
    const st_entry *prev = NULL;
    cg_status s = CG_OK;
    for (size_t i = 0; i < w->count; i++) {
        const st_entry *e = by_off[i];
        if (e->begin < pos) {
            char pq[NAME_BUF];
            quote_name(q, e->name);
            quote_name(pq, prev->name);
            s = cg_error(CG_ERR_FORMAT,
                         "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' [%llu, "
                         "%llu]",
                         w->path, q, (unsigned long long)e->begin, (unsigned long long)e->end, pq,
                         (unsigned long long)prev->begin, (unsigned long long)prev->end);
            break;
        }
        if (e->begin > pos) {
            quote_name(q, e->name);
            s = cg_error(CG_ERR_FORMAT,
                         "%s: tensor '%s': data_offsets [%llu, %llu] leave a hole: bytes [%llu, "
                         "%llu) of the data section belong to no tensor",
                         w->path, q, (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)pos,
                         (unsigned long long)e->begin);
            break;
        }
        pos = e->end;
        prev = e;
    }
    free(by_off);
    if (s != CG_OK) return s;
    if (pos != w->data_size)
        return cg_error(CG_ERR_FORMAT,
                        "%s: the data section has %llu bytes but the tensors cover only %llu "
                        "(%llu unused bytes at the end)",
                        w->path, (unsigned long long)w->data_size, (unsigned long long)pos,
                        (unsigned long long)(w->data_size - pos));
    return CG_OK;
}

/* ------------------------------------------------------------------ */
/* Public API                                                          */

void cg_weights_free(cg_weights *w) {
    if (!w) return;
    entries_free(w->entries, w->count);
    if (w->map) munmap(w->map, w->map_size);
    cg_aligned_free(w->owned);
    pthread_mutex_destroy(&w->lock);
    free(w->path);
    free(w);
}

cg_status cg_weights_open(const char *path, cg_weights **out) {
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_open: NULL output pointer");
    *out = NULL;
    if (!path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_open: NULL path");

    cg_weights *w = calloc(1, sizeof *w);
    if (!w) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    w->path = malloc(strlen(path) + 1);
    if (!w->path || pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w->path);
        free(w);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    strcpy(w->path, path);

    cg_status s;
    /* A FIFO or device named as the weights is refused without waiting. */
    int fd;
    struct stat st;
    if ((s = cg_open_regular(path, O_RDONLY, &fd, &st)) != CG_OK) goto fail;
    uint64_t fsize = (uint64_t)st.st_size;
    if (fsize < 8) {
        s = cg_error(CG_ERR_FORMAT, "%s: file is too short (%llu bytes) to hold the 8-byte header length", path,
                     (unsigned long long)fsize);
        close(fd);
        goto fail;
    }
    if (fsize > SIZE_MAX) {
        s = cg_error(CG_ERR_UNSUPPORTED, "%s: file is too large to map", path);
        close(fd);
        goto fail;
    }
    void *map = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED) {
        s = cg_error(CG_ERR_IO, "%s: cannot map: %s", path, strerror(map_errno));
        goto fail;
    }
    w->map = map;
    w->map_size = (size_t)fsize;
    const unsigned char *base = map;

    uint64_t hlen = rd_le64(base);
    if (hlen > CG_ST_MAX_HEADER_LEN) {
        s = cg_error(CG_ERR_FORMAT, "%s: header length %llu exceeds the limit of %llu bytes", path,
                     (unsigned long long)hlen, CG_ST_MAX_HEADER_LEN);
        goto fail;
    }
    if (hlen > fsize - 8) {
        s = cg_error(CG_ERR_FORMAT, "%s: header length %llu is larger than the rest of the file (%llu bytes)", path,
                     (unsigned long long)hlen, (unsigned long long)(fsize - 8));
        goto fail;
    }
    const unsigned char *hdr = base + 8;
    size_t bad = cg_utf8_check(hdr, (size_t)hlen);
    if (bad != hlen) {
        s = cg_error(CG_ERR_FORMAT, "%s: header is not valid UTF-8 (at header byte %zu)", path, bad);
        goto fail;
    }
    w->data = hdr + hlen;
    w->data_size = fsize - 8 - hlen;
    if ((s = parse_header(w, hdr, (size_t)hlen)) != CG_OK) goto fail;
    if ((s = validate(w)) != CG_OK) goto fail;
    *out = w;
    return CG_OK;
fail:
    cg_weights_free(w);
    return s;
}

cg_status cg_weights_from_tensors(const char *label, int n, const char *const *names, const cg_tensor *const *tensors,
                                  cg_weights **out) {
    if (!out || !label || n < 0 || (n && (!names || !tensors)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_from_tensors: bad argument");
    *out = NULL;
    cg_weights *w = calloc(1, sizeof *w);
    if (!w) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", label);
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", label);
    }
    cg_status s = CG_OK;
    w->path = strdup(label);
    w->entries = calloc((size_t)n + 1, sizeof *w->entries);
    if (!w->path || !w->entries) s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", label);
    /* each tensor at a 64-byte boundary of one section, so views are the
     * bytes themselves */
    uint64_t size = 0;
    for (int i = 0; !s && i < n; i++) {
        st_entry *e = &w->entries[i];
        const cg_tensor *t = tensors[i];
        if (!names[i] || !t) {
            s = cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_from_tensors: NULL name or tensor %d", i);
            break;
        }
        e->name = strdup(names[i]);
        w->count = (size_t)i + 1;
        if (!e->name) {
            s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", label);
            break;
        }
        e->dtype = t->dtype;
        e->ndim = t->ndim;
        memcpy(e->dims, t->dims, sizeof e->dims);
        e->numel = cg_shape_numel(t->ndim, t->dims);
        e->begin = size;
        e->end = size + (uint64_t)e->numel * cg_dtype_size(t->dtype);
        size = (e->end + 63) / 64 * 64;
    }
    if (!s && size > SIZE_MAX) s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", label);
    if (!s && !(w->owned = cg_aligned_alloc(size ? (size_t)size : 64)))
        s = cg_error(CG_ERR_NO_MEMORY, "%s: out of memory (%llu bytes of weights)", label, (unsigned long long)size);
    for (int i = 0; !s && i < n; i++)
        memcpy((unsigned char *)w->owned + w->entries[i].begin, tensors[i]->data,
               (size_t)(w->entries[i].end - w->entries[i].begin));
    if (!s) {
        w->data = w->owned;
        w->data_size = size;
        s = sort_names(w);
    }
    if (s) {
        cg_weights_free(w);
        return s;
    }
    *out = w;
    return CG_OK;
}

int cg_weights_count(const cg_weights *w) { return w ? (int)w->count : 0; }

const char *cg_weights_name(const cg_weights *w, int i) {
    if (!w || i < 0 || (size_t)i >= w->count) return NULL;
    return w->entries[i].name;
}

const char *cg_weights_path(const cg_weights *w) { return w ? w->path : NULL; }

int cg_weights_find(const cg_weights *w, const char *name) {
    if (!w || !name) return -1;
    size_t lo = 0, hi = w->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, w->entries[mid].name);
        if (c == 0) return mid > (size_t)INT32_MAX ? -1 : (int)mid;
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return -1;
}

/* The dtype the legacy calls (cg_weights_desc, cg_weights_view,
 * cg_weights_get) give: F32 for the float formats, I32 for I32 and I64, the
 * stored dtype for the rest. */
static cg_dtype default_dtype(cg_dtype stored) {
    if (stored == CG_F16 || stored == CG_BF16) return CG_F32;
    if (stored == CG_I64) return CG_I32;
    return stored;
}

int cg_weights_viewable(cg_dtype stored, cg_dtype want) {
    /* f32 narrows to a 16-bit float (rounded to nearest even) for a param
     * declared so: a model's weights taken in half the bytes at load; an
     * int8 matrix with its NAME_scale tensor dequantizes to f32 */
    return want == stored || (want == CG_F32 && (stored == CG_F16 || stored == CG_BF16 || stored == CG_I8)) ||
           (want == CG_I32 && stored == CG_I64) || (stored == CG_F32 && (want == CG_F16 || want == CG_BF16));
}

static cg_status host_order(const cg_weights *w, const st_entry *e, const void **src, void **tmp);

/* The scales of int8 matrix `e` (w->lock held): tensor NAME_scale, f32
 * [rows], in host order. */
static cg_status q8_scales(const cg_weights *w, const st_entry *e, const float **scales, void **tmp) {
    char q[NAME_BUF], sname[NAME_BUF + 8];
    quote_name(q, e->name);
    snprintf(sname, sizeof sname, "%s_scale", e->name);
    const int i = e->ndim == 2 ? cg_weights_find(w, sname) : -1;
    const st_entry *s = i >= 0 ? &w->entries[i] : NULL;
    if (!s || s->dtype != CG_F32 || s->ndim != 1 || s->dims[0] != e->dims[0])
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: tensor '%s' is an I8 matrix, which is viewed as f32 only with its scales: an F32 "
                        "tensor '%s_scale' of [%lld]",
                        w->path, q, q, (long long)(e->ndim >= 1 ? e->dims[0] : 0));
    const void *src;
    cg_status st = host_order(w, s, &src, tmp);
    *scales = src;
    return st;
}

/* int8 matrix `e` as f32 at dst: each row times its scale. */
static cg_status dequantize(const cg_weights *w, const st_entry *e, float *dst) {
    const float *sc = NULL;
    void *tmp = NULL;
    cg_status st = q8_scales(w, e, &sc, &tmp);
    if (st != CG_OK) return st;
    const int8_t *q = (const int8_t *)(w->data + e->begin);
    const int64_t cols = e->dims[1];
    for (int64_t r = 0; r < e->dims[0]; r++) {
        float s;
        memcpy(&s, sc + r, sizeof s); /* the mapped scales may be unaligned */
        for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = s * (float)q[r * cols + c];
    }
    cg_aligned_free(tmp);
    return CG_OK;
}

static void fill_desc(const st_entry *e, cg_dtype dtype, cg_tensor_desc *d) {
    memset(d, 0, sizeof *d);
    d->dtype = dtype;
    d->ndim = e->ndim;
    for (int i = 0; i < e->ndim; i++) d->dims[i] = e->dims[i];
}

static cg_status check_index(const cg_weights *w, size_t i, const char *fn) {
    if (!w) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: NULL weights", fn);
    if (i >= w->count)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: tensor index %zu out of range (%zu tensors)", w->path, i,
                        w->count);
    return CG_OK;
}

cg_status cg_weights_desc(const cg_weights *w, size_t i, cg_tensor_desc *desc_out) {
    if (!desc_out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_desc: NULL argument");
    cg_status s = check_index(w, i, "cg_weights_desc");
    if (s == CG_OK) fill_desc(&w->entries[i], default_dtype(w->entries[i].dtype), desc_out);
    return s;
}

cg_status cg_weights_stored_desc(const cg_weights *w, size_t i, cg_tensor_desc *desc_out) {
    if (!desc_out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_stored_desc: NULL argument");
    cg_status s = check_index(w, i, "cg_weights_stored_desc");
    if (s == CG_OK) fill_desc(&w->entries[i], w->entries[i].dtype, desc_out);
    return s;
}

cg_dtype cg_weights_dtype(const cg_weights *w, int i) {
    return w && i >= 0 && (size_t)i < w->count ? w->entries[i].dtype : (cg_dtype)0;
}

/* A BOOL tensor's bytes must be 0 or 1: anything else is no bool. */
static cg_status check_bools(const cg_weights *w, const st_entry *e) {
    const unsigned char *b = w->data + e->begin;
    for (int64_t i = 0; i < e->numel; i++)
        if (b[i] > 1) {
            char q[NAME_BUF];
            quote_name(q, e->name);
            return cg_error(CG_ERR_FORMAT,
                            "%s: tensor '%s': element %lld of the BOOL tensor is %u, "
                            "not 0 (false) or 1 (true)",
                            w->path, q, (long long)i, (unsigned)b[i]);
        }
    return CG_OK;
}

/* The stored bytes of `e` in host order: the mapped bytes on a
 * little-endian host, else a byte-swapped copy in *tmp (freed by the
 * caller). */
static cg_status host_order(const cg_weights *w, const st_entry *e, const void **src, void **tmp) {
    *tmp = NULL;
    *src = w->data + e->begin;
    size_t es = cg_dtype_size(e->dtype);
    if (!ST_HOST_BIG_ENDIAN || es == 1) return CG_OK;
    unsigned char *b = cg_aligned_alloc((size_t)e->numel * es);
    if (!b) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", w->path);
    const unsigned char *in = *src;
    for (int64_t i = 0; i < e->numel; i++)
        for (size_t k = 0; k < es; k++) b[(size_t)i * es + k] = in[(size_t)i * es + es - 1 - k];
    *src = *tmp = b;
    return CG_OK;
}

/* Converts the stored data of `e` into `want` at dst (numel elements), by
 * the rules of cg_tensor_convert. */
static cg_status convert(const cg_weights *w, const st_entry *e, cg_dtype want, void *dst) {
    char q[NAME_BUF];
    const void *src;
    void *tmp;
    cg_status s = e->dtype == CG_BOOL ? check_bools(w, e) : CG_OK;
    if (s == CG_OK) s = host_order(w, e, &src, &tmp);
    if (s != CG_OK) return s;
    int64_t bad = 0;
    char val[CG_CONV_VALUE_LEN];
    cg_conv_result r = cg_convert_elems(e->dtype, src, want, dst, e->numel, &bad, val);
    cg_aligned_free(tmp);
    if (r == CG_CONV_OK) return CG_OK;
    quote_name(q, e->name);
    if (r == CG_CONV_RANGE)
        return cg_error(CG_ERR_UNSUPPORTED, "%s: tensor '%s': element %lld has value %s, which does not fit in %s",
                        w->path, q, (long long)bad, val, cg_dtype_name(want));
    return cg_error(CG_ERR_UNSUPPORTED, "%s: tensor '%s' is stored as %s, which is not converted to %s", w->path, q,
                    st_names[e->dtype], cg_dtype_name(want));
}

static cg_status lookup(const cg_weights *w, const char *name, const char *fn, st_entry **e) {
    if (!w || !name) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    int i = cg_weights_find(w, name);
    if (i < 0) {
        char q[NAME_BUF];
        quote_name(q, name);
        return cg_error(CG_ERR_NOT_FOUND, "%s: no tensor named '%s'", w->path, q);
    }
    *e = &w->entries[i];
    return CG_OK;
}

/* The buffer a view of `e` as `want` keeps (w->lock held): made and
 * converted on first use. */
static cg_status cached_view(cg_weights *w, st_entry *e, cg_dtype want, const void **data) {
    void **slot = want == e->dtype ? &e->copy : &e->converted[want];
    cg_status s = CG_OK;
    if (!*slot) {
        void *buf = cg_aligned_alloc((size_t)e->numel * cg_dtype_size(want));
        if (!buf) {
            char q[NAME_BUF];
            quote_name(q, e->name);
            s = cg_error(CG_ERR_NO_MEMORY, "%s: tensor '%s': out of memory converting to %s", w->path, q,
                         cg_dtype_name(want));
        } else if ((s = e->dtype == CG_I8 && want == CG_F32 ? dequantize(w, e, buf) : convert(w, e, want, buf)) !=
                   CG_OK) {
            cg_aligned_free(buf);
        } else {
            *slot = buf;
        }
    }
    *data = *slot;
    return s;
}

cg_status cg_weights_view_as(cg_weights *w, const char *name, cg_dtype want, cg_tensor_desc *desc_out,
                             const void **data_out) {
    st_entry *e;
    if (!desc_out || !data_out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_view_as: NULL output pointer");
    *data_out = NULL;
    cg_status s = lookup(w, name, "cg_weights_view_as", &e);
    if (s != CG_OK) return s;
    if (!cg_weights_viewable(e->dtype, want)) {
        char q[NAME_BUF];
        quote_name(q, e->name);
        return cg_error(CG_ERR_UNSUPPORTED,
                        "%s: tensor '%s' is stored as %s, which cannot be viewed as %s (a view is "
                        "the stored dtype, F16, BF16 or I8 with scales as f32, F32 as f16 or bf16, or I64 as i32)",
                        w->path, q, st_names[e->dtype], cg_dtype_name(want));
    }
    fill_desc(e, want, desc_out);
    const unsigned char *src = w->data + e->begin;
    size_t es = cg_dtype_size(want);
    pthread_mutex_lock(&w->lock);
    if (want == e->dtype && e->dtype == CG_BOOL && !e->bools_checked) {
        s = check_bools(w, e);
        e->bools_checked = s == CG_OK;
    }
    if (s == CG_OK && want == e->dtype && (!ST_HOST_BIG_ENDIAN || es == 1) && (uintptr_t)src % es == 0)
        *data_out = src; /* zero copy: the mapped bytes are the tensor */
    else if (s == CG_OK) s = cached_view(w, e, want, data_out);
    pthread_mutex_unlock(&w->lock);
    return s;
}

cg_status cg_weights_view(cg_weights *w, const char *name, cg_tensor_desc *desc_out, const void **data_out) {
    st_entry *e;
    if (!desc_out || !data_out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_view: NULL output pointer");
    *data_out = NULL;
    cg_status s = lookup(w, name, "cg_weights_view", &e);
    if (s != CG_OK) return s;
    return cg_weights_view_as(w, name, default_dtype(e->dtype), desc_out, data_out);
}

cg_status cg_weights_get_as(cg_weights *w, const char *name, cg_dtype dtype, cg_tensor **out) {
    st_entry *e;
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_get_as: NULL output pointer");
    *out = NULL;
    cg_status s = lookup(w, name, "cg_weights_get_as", &e);
    if (s != CG_OK) return s;
    cg_tensor *t;
    if ((s = cg_tensor_alloc(dtype, e->ndim, e->dims, &t)) != CG_OK) {
        char q[NAME_BUF];
        quote_name(q, e->name);
        cg_error_prefix("%s: tensor '%s': ", w->path, q);
        return s;
    }
    if ((s = convert(w, e, dtype, t->data)) != CG_OK) {
        cg_tensor_free(t);
        return s;
    }
    *out = t;
    return CG_OK;
}

cg_status cg_weights_get(cg_weights *w, const char *name, cg_tensor **out) {
    st_entry *e;
    if (!out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_get: NULL output pointer");
    *out = NULL;
    cg_status s = lookup(w, name, "cg_weights_get", &e);
    if (s != CG_OK) return s;
    return cg_weights_get_as(w, name, default_dtype(e->dtype), out);
}
