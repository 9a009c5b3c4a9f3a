/* Model-directory helpers shared by the model families (model_dir.h). */
#include "model_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis.h"
#include "error.h"
#include "ir.h"
#include "read_file.h"
#include "weights.h"

char *cg_path_join(const char *dir, const char *file) {
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, file);
    return p;
}

int cg_path_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

cg_status cg_read_text_file(const char *path, char **out) { return cg_read_file(path, CG_MAX_TEXT_FILE, out, NULL); }

static int is_param(const cg_model *model, const char *name) {
    for (int gi = 0; gi < model->n_graphs; gi++) {
        const cg_graph *g = model->graphs[gi];
        for (int i = 0; i < g->n_values; i++)
            if (g->values[i].kind == CG_VAL_PARAM && !strcmp(g->values[i].weight, name)) return 1;
    }
    return 0;
}

/* Tensor `name` is NAME_scale of an int8 tensor NAME that a param reads:
 * the scales its f32 view multiplies by, or those of an op's i8 weight. */
static int scales_of_param(const cg_model *model, cg_weights *w, const char *name) {
    const size_t n = strlen(name);
    if (n <= 6 || strcmp(name + n - 6, "_scale") != 0 || n - 6 >= 512) return 0;
    char base[512];
    memcpy(base, name, n - 6);
    base[n - 6] = 0;
    const int i = cg_weights_find(w, base);
    return i >= 0 && cg_weights_dtype(w, i) == CG_I8 && is_param(model, base);
}

cg_status cg_model_weights_exact(const cg_model *model, cg_weights *w, const char *described_by) {
    const char *wp = cg_weights_path(w);
    for (int gi = 0; gi < model->n_graphs; gi++) {
        const cg_graph *g = model->graphs[gi];
        for (int i = 0; i < g->n_values; i++) {
            const cg_value *v = &g->values[i];
            if (v->kind != CG_VAL_PARAM) continue;
            cg_tensor_desc want, have;
            char a[256], b[256];
            cg_desc_from_value(v, &want);
            cg_desc_format(b, sizeof b, model, &want);
            int idx = cg_weights_find(w, v->weight);
            if (idx < 0)
                return cg_error(CG_ERR_NOT_FOUND, "%s: tensor '%s' is missing (expected %s)", wp, v->weight, b);
            cg_status st = cg_weights_desc(w, (size_t)idx, &have);
            if (st) return st;
            /* the stored dtype serves a param declared so (16-bit weights
             * the kernels read as they are) */
            const cg_dtype stored = cg_weights_dtype(w, idx);
            if (cg_weights_viewable(stored, want.dtype) &&
                (want.dtype == CG_BF16 || want.dtype == CG_F16 || stored == want.dtype || stored == CG_I8))
                have.dtype = want.dtype;
            int same = have.dtype == want.dtype && have.ndim == want.ndim;
            for (int d = 0; same && d < want.ndim; d++) same = have.dims[d] == want.dims[d];
            if (!same) {
                cg_desc_format(a, sizeof a, model, &have);
                return cg_error(CG_ERR_VERIFY, "%s: tensor '%s' is %s, expected %s", wp, v->weight, a, b);
            }
        }
    }
    for (int i = 0; i < cg_weights_count(w); i++) {
        const char *name = cg_weights_name(w, i);
        if (!is_param(model, name) && !scales_of_param(model, w, name))
            return cg_error(CG_ERR_VERIFY, "%s: tensor '%s' is not a parameter of the model %s describes", wp, name,
                            described_by);
    }
    return CG_OK;
}

cg_status cg_graph_need_io(const char *file, const cg_graph *g, int out, const char *name) {
    int cnt = out ? cg_graph_output_count(g) : cg_graph_input_count(g);
    for (int k = 0; k < cnt; k++)
        if (!strcmp(out ? cg_graph_output_name(g, k) : cg_graph_input_name(g, k), name)) return CG_OK;
    return cg_error(CG_ERR_VERIFY, "%s: graph '%s' needs an %s named '%s' for this configuration", file,
                    cg_graph_name(g), out ? "output" : "input", name);
}
