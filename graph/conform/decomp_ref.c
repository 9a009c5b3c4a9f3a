/* The decomposition reference of conform (decomp_ref.h). The graph is
 * written as IR text and parsed, as a user's graph would be, in a shallow
 * copy of the context whose entry for the op has no kernels: the rest of
 * the registry (the plugins, the ops the decomposition emits) is shared. */
#include "decomp_ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgraph/clgraph.h"
#include "error.h"
#include "shape.h"
#include "strbuf.h"

/* "graph conform {\n input x0: f32[3]\n y0, y1 = OP(x0) {ATTRS}\n output y0, y1\n}" */
static char *graph_text(const cg_op_entry *op, const cg_conform_case *c) {
    cg_strbuf b = {0};
    cg_strbuf_cat(&b, "graph conform {\n", (char *)NULL);
    for (int i = 0; i < c->n_inputs; i++) {
        char sh[160];
        cg_shape_format(sh, sizeof sh, c->inputs[i].dtype, c->inputs[i].ndim, c->inputs[i].dims, NULL, 0);
        cg_strbuf_put(&b, "  input x%d: %s\n", i, sh);
    }
    cg_strbuf_cat(&b, "  ", (char *)NULL);
    for (int o = 0; o < c->n_outputs; o++) cg_strbuf_put(&b, "%sy%d", o ? ", " : "", o);
    cg_strbuf_put(&b, " = %s(", op->def->name);
    for (int i = 0; i < c->n_inputs; i++) cg_strbuf_put(&b, "%sx%d", i ? ", " : "", i);
    cg_strbuf_cat(&b, ")", (char *)NULL);
    if (c->attrs && *c->attrs) cg_strbuf_put(&b, " {%s}", c->attrs);
    cg_strbuf_cat(&b, "\n  output ", (char *)NULL);
    for (int o = 0; o < c->n_outputs; o++) cg_strbuf_put(&b, "%sy%d", o ? ", " : "", o);
    cg_strbuf_cat(&b, "\n}\n", (char *)NULL);
    return cg_strbuf_take(&b);
}

/* Copies output o of the run into ref, after checking it is what infer said. */
static int take_output(const cg_tensor *t, int o, const cg_tensor_desc *want, void *ref, char *msg, size_t msz) {
    int same = cg_tensor_dtype(t) == (cg_dtype)want->dtype && cg_tensor_ndim(t) == want->ndim;
    for (int k = 0; same && k < want->ndim; k++) same = cg_tensor_dim(t, k) == want->dims[k];
    if (!same) {
        int64_t dims[CG_MAX_DIMS];
        for (int k = 0; k < cg_tensor_ndim(t) && k < CG_MAX_DIMS; k++) dims[k] = cg_tensor_dim(t, k);
        char got[96], inf[96];
        cg_shape_format(got, sizeof got, (int)cg_tensor_dtype(t), cg_tensor_ndim(t), dims, NULL, 0);
        cg_shape_format(inf, sizeof inf, want->dtype, want->ndim, want->dims, NULL, 0);
        snprintf(msg, msz, "the decomposition gives %s for output %d, infer %s", got, o, inf);
        return 0;
    }
    memcpy(ref, cg_tensor_data_const(t), cg_desc_bytes(want));
    return 1;
}

cg_status cg_conform_decomp_run(const cg_context *ctx, const cg_op_entry *op, const cg_conform_case *c,
                                const cg_tensor_desc *out, const void *const *host_in, void *const *ref_out, char *msg,
                                size_t msz) {
    cg_op_entry bare = *op; /* the op without kernels: the scheduler decomposes it */
    memset(bare.kernel, 0, sizeof bare.kernel);
    cg_context view = *ctx;
    view.ops = malloc(sizeof *view.ops * (size_t)(ctx->n_ops ? ctx->n_ops : 1));
    char *text = graph_text(op, c);
    cg_tensor *in[CG_CONFORM_MAX_INPUTS] = {0}, **outs = calloc((size_t)c->n_outputs, sizeof *outs);
    const char *names[CG_CONFORM_MAX_INPUTS];
    char name_buf[CG_CONFORM_MAX_INPUTS][16];
    cg_model *m = NULL;
    cg_plan *p = NULL;
    cg_status st = view.ops && text && outs ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; !st && i < ctx->n_ops; i++) view.ops[i] = ctx->ops[i] == op ? &bare : ctx->ops[i];
    if (!st) st = cg_model_parse(&view, text, strlen(text), "<decomposition>", &m);
    if (!st) st = cg_model_verify(m);
    cg_plan_options po = {.struct_size = sizeof(cg_plan_options), .device = "cpu"};
    if (!st) st = cg_plan_create(m, "conform", &po, &p);
    for (int i = 0; !st && i < c->n_inputs; i++) {
        st = cg_tensor_create((cg_dtype)c->inputs[i].dtype, c->inputs[i].ndim, c->inputs[i].dims, &in[i]);
        if (!st) memcpy(cg_tensor_data(in[i]), host_in[i], cg_desc_bytes(&c->inputs[i]));
        snprintf(name_buf[i], sizeof name_buf[i], "x%d", i);
        names[i] = name_buf[i];
    }
    if (!st) st = cg_plan_run(p, c->n_inputs, names, in, c->n_outputs, outs);
    if (st) snprintf(msg, msz, "the decomposition failed: %s", cg_last_error());
    for (int o = 0; !st && o < c->n_outputs; o++)
        if (!take_output(outs[o], o, &out[o], ref_out[o], msg, msz)) st = CG_ERR_VERIFY;
    for (int o = 0; outs && o < c->n_outputs; o++) cg_tensor_free(outs[o]);
    for (int i = 0; i < c->n_inputs; i++) cg_tensor_free(in[i]);
    cg_plan_free(p);
    cg_model_free(m);
    free(outs);
    free(text);
    free(view.ops);
    return st;
}
