/* Weights in fewer bytes (cg_weights_narrow) and a whole weights object
 * written out (cg_weights_write): what `clgraph quantize` saves and what a
 * seq2seq model quantizes at load share this one walk, so the two cannot
 * disagree on the int8 layout (NAME_scale) or on a clashing scale name. */
#include "weights.h"

#include "error.h"
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tensors of w as stored (ts[i] for tensor i; the caller frees them). */
static cg_status load_all(cg_weights *w, size_t n, const char **names, cg_tensor **ts) {
    for (size_t i = 0; i < n; i++) {
        names[i] = cg_weights_name(w, i);
        cg_status st = cg_weights_get_as(w, names[i], cg_weights_dtype(w, i), &ts[i]);
        if (st) return st;
    }
    return CG_OK;
}

static void free_all(cg_tensor **ts, size_t n) {
    for (size_t i = 0; ts && i < n; i++) cg_tensor_free(ts[i]);
    free(ts);
}

cg_status cg_weights_write(cg_weights *w, const char *path) {
    if (!w || !path) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_write: NULL argument");
    const size_t n = cg_weights_count(w);
    const char **names = calloc(n + 1, sizeof *names);
    cg_tensor **ts = calloc(n + 1, sizeof *ts);
    cg_status st = names && ts ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st) st = load_all(w, n, names, ts);
    if (!st) st = cg_weights_save(path, (int)n, names, (const cg_tensor *const *)ts);
    free_all(ts, n);
    free(names);
    return st;
}

/* Tensor i of w, read as f32, converted to `to`: *t (and for int8 *scale)
 * new. cg_weights_get_as names the file and tensor in its errors; the
 * conversion's own errors get them as a prefix. */
static cg_status convert_one(cg_weights *w, size_t i, cg_dtype to, cg_tensor **t, cg_tensor **scale) {
    cg_tensor *f = NULL;
    cg_status st = cg_weights_get_as(w, cg_weights_name(w, i), CG_F32, &f);
    if (st) return st;
    st = to == CG_I8 ? cg_tensor_quantize_rows(f, t, scale) : cg_tensor_convert(f, to, t);
    if (st && st != CG_ERR_NO_MEMORY)
        cg_error_prefix("%s: tensor '%s' to %s: ", cg_weights_path(w), cg_weights_name(w, i), cg_dtype_name(to));
    cg_tensor_free(f);
    return st;
}

/* The name of tensor i's int8 scales, NAME_scale, which w must not hold. */
static cg_status scale_name(cg_weights *w, size_t i, char **out) {
    const char *name = cg_weights_name(w, i);
    const size_t len = strlen(name) + sizeof "_scale";
    if (!(*out = malloc(len))) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    snprintf(*out, len, "%s_scale", name);
    if (cg_weights_find(w, *out) >= 0)
        return cg_error(CG_ERR_INVALID_ARGUMENT,
                        "%s: tensor '%s' exists already, where the int8 scales of '%s' would go", cg_weights_path(w),
                        *out, name);
    return CG_OK;
}

int cg_weights_pick_products(const char *name, cg_dtype stored, int ndim, void *user) {
    if (!name || stored != CG_F32 || ndim != 2) return 0;
    const size_t n = strlen(name);
    const int weight =
        (n >= 7 && !strcmp(name + n - 7, ".weight")) || strstr(name, ".weight_ih") || strstr(name, ".weight_hh");
    if (!weight) return 0;
    return (user && *(const int *)user) || !strstr(name, "embed");
}

cg_status cg_weights_narrow(cg_weights *w, cg_dtype to, cg_weights_pick_fn pick, void *user, cg_weights **out) {
    if (!w || !pick || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_narrow: NULL argument");
    *out = NULL;
    if (to != CG_BF16 && to != CG_F16 && to != CG_I8)
        return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_weights_narrow: to bf16, f16 or int8, not %s", cg_dtype_name(to));
    const size_t n = cg_weights_count(w);
    /* int8 adds a NAME_scale per converted tensor: up to 2n tensors */
    const char **names = calloc(2 * n + 1, sizeof *names);
    char **scale_names = calloc(n + 1, sizeof *scale_names);
    cg_tensor **ts = calloc(2 * n + 1, sizeof *ts);
    size_t k = n;
    cg_status st = names && scale_names && ts ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; !st && i < n; i++) {
        names[i] = cg_weights_name(w, i);
        cg_tensor_desc d;
        st = cg_weights_stored_desc(w, i, &d);
        if (st) break;
        if (d.dtype == to || !pick(names[i], d.dtype, d.ndim, user)) {
            st = cg_weights_get_as(w, names[i], d.dtype, &ts[i]);
            continue;
        }
        if (to == CG_I8) st = scale_name(w, i, &scale_names[i]);
        if (!st) st = convert_one(w, i, to, &ts[i], &ts[k]);
        if (!st && to == CG_I8) names[k++] = scale_names[i];
    }
    if (!st) st = cg_weights_from_tensors(cg_weights_path(w), (int)k, names, (const cg_tensor *const *)ts, out);
    free_all(ts, k);
    for (size_t i = 0; scale_names && i < n; i++) free(scale_names[i]);
    free(scale_names);
    free(names);
    return st;
}
