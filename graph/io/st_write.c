/*
 * safetensors writer: cg_weights_save.
 *
 * The file is what the reference writer (safetensors.serialize) makes, but
 * for the order of the header's keys: an 8-byte little-endian header length
 * N, N bytes of compact JSON padded with spaces to a multiple of 8 (so that
 * the data section starts 8-aligned), then the data with no gaps. The keys
 * are sorted by name (bytewise) so that a file is a function of its
 * tensors; the data is ordered by element size, largest first, then by
 * name, so that every tensor starts aligned to its element size and readers
 * (ours included) can use the mapped bytes in place. For tensors that all
 * have one element size this is byte for byte what the reference writes.
 */
#include "weights.h"

#include "dtype.h"

#include "atomic_file.h"
#include "error.h"
#include "strbuf.h"
#include "tensor.h"
#include "utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ST_HOST_BIG_ENDIAN 1
#else
#define ST_HOST_BIG_ENDIAN 0
#endif

typedef struct st_item {
    const char *name;
    const cg_tensor *t;
    uint64_t begin, end; /* in the data section */
} st_item;

/* A name for a message: printable ASCII as is, other bytes as \xNN, cut
 * with "..." when long. */
static const char *show(char buf[80], const char *s) {
    size_t o = 0;
    for (; *s && o + 8 < 80; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\') buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, 80 - o, "\\x%02x", c);
    }
    if (*s) memcpy(buf + o, "...", 3), o += 3;
    buf[o] = '\0';
    return buf;
}

/* Each name usable as a key and each tensor present. */
static cg_status check_items(const char *path, int n, const char *const *names, const cg_tensor *const *tensors) {
    char q[80];
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        if (!nm || !*nm)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: the name of tensor %d is %s", path, i, nm ? "empty" : "NULL");
        if (cg_utf8_check((const unsigned char *)nm, strlen(nm)) != strlen(nm))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: tensor name '%s' is not valid UTF-8", path, show(q, nm));
        if (strcmp(nm, "__metadata__") == 0)
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: '__metadata__' is reserved by the format, not a tensor name",
                            path);
        if (!tensors[i]) return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: tensor '%s' is NULL", path, show(q, nm));
        if (!cg_st_dtype_name(tensors[i]->dtype) && cg_dtype_valid((int)tensors[i]->dtype))
            return cg_error(CG_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, which safetensors has no dtype for", path,
                            show(q, nm), cg_dtype_name(tensors[i]->dtype));
        if (!cg_st_dtype_name(tensors[i]->dtype))
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: tensor '%s' has an invalid dtype %d", path, show(q, nm),
                            (int)tensors[i]->dtype);
    }
    return CG_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const st_item *)a)->name, ((const st_item *)b)->name);
}

static int by_layout(const void *a, const void *b) {
    const st_item *x = *(st_item *const *)a, *y = *(st_item *const *)b;
    size_t sx = cg_dtype_size(x->t->dtype), sy = cg_dtype_size(y->t->dtype);
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

static uint64_t item_bytes(const st_item *it) {
    return (uint64_t)cg_shape_numel(it->t->ndim, it->t->dims) * cg_dtype_size(it->t->dtype);
}

/* The items sorted by name, with their data offsets; *order lists them in
 * data order. Both are the caller's to free. */
static cg_status layout(const char *path, int n, const char *const *names, const cg_tensor *const *tensors,
                        st_item **items, st_item ***order) {
    st_item *it = calloc((size_t)n + 1, sizeof *it);
    st_item **ord = calloc((size_t)n + 1, sizeof *ord);
    if (!it || !ord) {
        free(it), free(ord);
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    for (int i = 0; i < n; i++) it[i] = (st_item){names[i], tensors[i], 0, 0};
    qsort(it, (size_t)n, sizeof *it, by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(it[i - 1].name, it[i].name) == 0) {
            char q[80];
            cg_status s =
                cg_error(CG_ERR_INVALID_ARGUMENT, "%s: duplicate tensor name '%s'", path, show(q, it[i].name));
            free(it), free(ord);
            return s;
        }
    for (int i = 0; i < n; i++) ord[i] = &it[i];
    qsort(ord, (size_t)n, sizeof *ord, by_layout);
    uint64_t pos = 0;
    for (int i = 0; i < n; i++) {
        ord[i]->begin = pos;
        pos = ord[i]->end = pos + item_bytes(ord[i]);
    }
    *items = it;
    *order = ord;
    return CG_OK;
}

/* A JSON string as serde_json (the reference's) writes it: '"', '\' and
 * control characters escaped, everything else (UTF-8 included) as is. */
static void put_json_string(cg_strbuf *b, const char *s) {
    cg_strbuf_put(b, "\"");
    for (const char *run = s;; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        cg_strbuf_put(b, "%.*s", (int)(s - run), run);
        if (!c) break;
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        if (esc) cg_strbuf_put(b, "%s", esc);
        else cg_strbuf_put(b, "\\u%04x", c);
        run = s + 1;
    }
    cg_strbuf_put(b, "\"");
}

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static cg_status build_header(const char *path, const st_item *it, int n, char **out, size_t *len) {
    cg_strbuf b = {0};
    cg_strbuf_put(&b, "{");
    for (int i = 0; i < n; i++) {
        const cg_tensor *t = it[i].t;
        cg_strbuf_put(&b, "%s", i ? "," : "");
        put_json_string(&b, it[i].name);
        cg_strbuf_put(&b, ":{\"dtype\":\"%s\",\"shape\":[", cg_st_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) cg_strbuf_put(&b, "%s%lld", d ? "," : "", (long long)t->dims[d]);
        cg_strbuf_put(&b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)it[i].begin,
                      (unsigned long long)it[i].end);
    }
    cg_strbuf_put(&b, "}");
    while (!b.failed && b.n % 8) cg_strbuf_put(&b, " ");
    size_t n_bytes = b.n;
    char *s = cg_strbuf_take(&b);
    if (!s) return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory", path);
    if (n_bytes > CG_ST_MAX_HEADER_LEN) {
        free(s);
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: the header would be %zu bytes, more than the %llu the format allows", path, n_bytes,
                        CG_ST_MAX_HEADER_LEN);
    }
    *out = s;
    *len = n_bytes;
    return CG_OK;
}

/* A tensor's data, little-endian. 0 or errno. */
static int write_tensor(cg_afile *f, const cg_tensor *t) {
    size_t es = cg_dtype_size(t->dtype);
    size_t bytes = (size_t)cg_shape_numel(t->ndim, t->dims) * es;
    if (!ST_HOST_BIG_ENDIAN || es == 1) return cg_afile_write(f, t->data, bytes);
    unsigned char buf[4096];
    const unsigned char *p = t->data;
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < sizeof buf ? bytes - done : sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = p[done + (i / es) * es + es - 1 - i % es];
        int e = cg_afile_write(f, buf, n);
        if (e) return e;
        done += n;
    }
    return 0;
}

/* The prefix, the header and the data in order, through a temporary file. */
static cg_status write_file(const char *path, const char *hdr, size_t hlen, st_item *const *order, int n) {
    cg_afile f;
    int e = cg_afile_open(&f, path);
    if (e) return cg_error(CG_ERR_IO, "%s: cannot create a temporary file in its directory: %s", path, strerror(e));
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    e = cg_afile_write(&f, prefix, 8);
    if (!e) e = cg_afile_write(&f, hdr, hlen);
    for (int i = 0; !e && i < n; i++) e = write_tensor(&f, order[i]->t);
    if (e) {
        cg_afile_abort(&f);
        return cg_error(CG_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    if ((e = cg_afile_commit(&f)) != 0)
        return cg_error(CG_ERR_IO, "%s: cannot finish writing (sync, close or rename): %s", path, strerror(e));
    return CG_OK;
}

cg_status cg_weights_save(const char *path, int n, const char *const *names, const cg_tensor *const *tensors) {
    if (!path || !*path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_save: no path");
    if (n < 0 || (n > 0 && (!names || !tensors)))
        return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: cg_weights_save: bad tensor list (n = %d)", path, n);
    st_item *items = NULL, **order = NULL;
    char *hdr = NULL;
    size_t hlen = 0;
    cg_status s = check_items(path, n, names, tensors);
    if (s == CG_OK) s = layout(path, n, names, tensors, &items, &order);
    if (s == CG_OK) s = build_header(path, items, n, &hdr, &hlen);
    if (s == CG_OK) s = write_file(path, hdr, hlen, order, n);
    free(hdr);
    free(order);
    free(items);
    return s;
}
