/* linear_attention: the recurrent form of linear attention (ONNX
 * LinearAttention, opset 27; Katharopoulos et al., gated linear attention,
 * DeltaNet and Gated DeltaNet): per key/value head a state S [dk, dv]; at
 * each step t, S *= exp(decay_t) (gated), v_t = beta_t * (v_t - S^T k_t)
 * (delta), S += k_t v_t^T, and each query head of the group reads
 * scale * S^T q_t. The columns of S are independent, so both kernels walk
 * one column over the whole sequence (OpenCL: one work-item per column,
 * cl/linear_attn.cl), summing over the key dim in order. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "linear_attn.cl.h"

enum { LA_HQ, LA_HKV, LA_SCALE, LA_RULE };

static const cg_attr_def la_attrs[] = {
    CG_ATTR(.name = "q_num_heads", .type = CG_ATTR_INT, .required = 1, .doc = "query heads (a multiple of kv heads)"),
    CG_ATTR(.name = "kv_num_heads", .type = CG_ATTR_INT, .required = 1, .doc = "key/value heads"),
    CG_ATTR(.name = "scale", .type = CG_ATTR_FLOAT, .default_float = 0.0, .doc = "factor of the read; 0: 1 / sqrt(dk)"),
    CG_ATTR(.name = "update_rule", .type = CG_ATTR_STRING, .default_string = "gated_delta",
            .doc = "\"linear\", \"gated\" (decay input), \"delta\" (beta input) or \"gated_delta\" (both)"),
};

/* Bit 0: gated (a decay input), bit 1: delta (a beta input); -1 unknown. */
static int la_rule(const cg_op_call *call) {
    static const char *const names[] = {"linear", "gated", "delta", "gated_delta"};
    const char *s = call->attrs[LA_RULE].s ? call->attrs[LA_RULE].s : "gated_delta";
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* The geometry of a call: heads and head dims (concrete), the input
 * positions of decay and beta (-1: none). */
typedef struct la_geom {
    int64_t hq, hkv, dk, dv, dlen, blen;
    int rule, i_decay, i_beta;
} la_geom;

static const char *la_name(const la_geom *g, int i) {
    static const char *const names[] = {"q", "k", "v", "state"};
    return i < 4 ? names[i] : i == g->i_decay ? "decay" : "beta";
}

static cg_op_status la_shapes(const cg_op_call *call, la_geom *g) {
    const cg_tensor_desc *in = call->inputs;
    g->hq = call->attrs[LA_HQ].i, g->hkv = call->attrs[LA_HKV].i, g->rule = la_rule(call);
    if (g->rule < 0)
        return cg_op_fail(call, "update_rule \"%s\" is not linear, gated, delta or gated_delta",
                          call->attrs[LA_RULE].s);
    if (g->hq <= 0 || g->hkv <= 0 || g->hq % g->hkv)
        return cg_op_fail(call, "q_num_heads %lld must be a positive multiple of kv_num_heads %lld", (long long)g->hq,
                          (long long)g->hkv);
    g->i_decay = g->rule & 1 ? 4 : -1;
    g->i_beta = g->rule & 2 ? 4 + (g->rule & 1) : -1;
    const int want = 4 + (g->rule & 1) + ((g->rule >> 1) & 1);
    if (call->n_inputs != want)
        return cg_op_fail(call, "update_rule \"%s\" takes %d inputs (q, k, v, state%s%s), got %d",
                          call->attrs[LA_RULE].s, want, g->i_decay > 0 ? ", decay" : "", g->i_beta > 0 ? ", beta" : "",
                          call->n_inputs);
    for (int i = 0; i < call->n_inputs; i++)
        if (in[i].dtype != CG_OP_F32 || in[i].ndim != (i == 3 ? 4 : 3) || in[i].dims[in[i].ndim - 1] < 0)
            return cg_op_fail(call, "input %d (%s) must be f32 of %d dims with a concrete last dim", i, la_name(g, i),
                              i == 3 ? 4 : 3);
    g->dk = in[0].dims[2] / g->hq, g->dv = in[2].dims[2] / g->hkv;
    g->dlen = g->i_decay > 0 ? in[g->i_decay].dims[2] : 0, g->blen = g->i_beta > 0 ? in[g->i_beta].dims[2] : 0;
    if (g->dk * g->hq != in[0].dims[2] || g->dk * g->hkv != in[1].dims[2] || g->dv * g->hkv != in[2].dims[2] ||
        g->dk == 0 || g->dv == 0)
        return cg_op_fail(call, "q, k, v must be [B, T, heads * head dim] (%lld and %lld heads)", (long long)g->hq,
                          (long long)g->hkv);
    const int64_t sd[4] = {in[0].dims[0], g->hkv, g->dk, g->dv};
    for (int i = 1; i < 4; i++)
        if (!cg_dim_compatible(in[3].dims[i], sd[i]))
            return cg_op_fail(call, "state must be [B, %lld, %lld, %lld]", (long long)g->hkv, (long long)g->dk,
                              (long long)g->dv);
    if (g->i_decay > 0 && g->dlen != g->hkv && g->dlen != g->hkv * g->dk)
        return cg_op_fail(call, "decay's last dim %lld must be kv heads %lld or kv heads * dk %lld", (long long)g->dlen,
                          (long long)g->hkv, (long long)(g->hkv * g->dk));
    if (g->i_beta > 0 && g->blen != 1 && g->blen != g->hkv)
        return cg_op_fail(call, "beta's last dim %lld must be 1 or kv heads %lld", (long long)g->blen,
                          (long long)g->hkv);
    for (int i = 1; i < call->n_inputs; i++)
        for (int d = 0; d < 2; d++)
            if (i != 3 && !cg_dim_compatible(in[i].dims[d], in[0].dims[d]))
                return cg_op_fail(call, "input %d (%s) must have q's batch and length", i, la_name(g, i));
    if (!cg_dim_compatible(in[3].dims[0], in[0].dims[0])) return cg_op_fail(call, "state must have q's batch");
    return CG_OP_OK;
}

static cg_op_status la_infer(cg_op_call *call) {
    la_geom g;
    if (la_shapes(call, &g)) return CG_OP_ERROR;
    const cg_tensor_desc *q = &call->inputs[0];
    call->outputs[0] = *q;
    call->outputs[0].dims[2] = g.hq * g.dv;
    call->outputs[1] = call->inputs[3];
    call->outputs[1].dims[0] = cg_dim_unify(q->dims[0], call->inputs[3].dims[0]);
    return CG_OP_OK;
}

static float la_scale(const cg_op_call *call, const la_geom *g) {
    const double s = call->attrs[LA_SCALE].f;
    return s == 0.0 ? (float)(1.0 / sqrt((double)g->dk)) : (float)s;
}

/* One column m of head h of batch b through the sequence, as the OpenCL
 * kernel does it. */
static void la_column(const cg_kernel_args *a, const la_geom *g, int64_t nt, int64_t b, int64_t h, int64_t m,
                      float scale) {
    const float *q = a->in[0], *k = a->in[1], *v = a->in[2], *s0 = a->in[3];
    const float *decay = g->i_decay > 0 ? a->in[g->i_decay] : NULL, *beta = g->i_beta > 0 ? a->in[g->i_beta] : NULL;
    float *out = a->out[0], *s = (float *)a->out[1] + (b * g->hkv + h) * g->dk * g->dv + m;
    const int64_t dk = g->dk, dv = g->dv, grp = g->hq / g->hkv;
    s0 += (b * g->hkv + h) * dk * dv + m;
    for (int64_t d = 0; d < dk; d++) s[d * dv] = s0[d * dv];
    for (int64_t t = 0; t < nt; t++) {
        const int64_t row = b * nt + t;
        const float *kr = k + row * g->hkv * dk + h * dk;
        if (decay) {
            const float *dr = decay + row * g->dlen + (g->dlen == g->hkv ? h : h * dk);
            for (int64_t d = 0; d < dk; d++) s[d * dv] *= expf(dr[g->dlen == g->hkv ? 0 : d]);
        }
        float val = v[row * g->hkv * dv + h * dv + m];
        if (beta) {
            float r = 0.0f;
            for (int64_t d = 0; d < dk; d++) r += s[d * dv] * kr[d];
            val = beta[row * g->blen + (g->blen == 1 ? 0 : h)] * (val - r);
        }
        for (int64_t d = 0; d < dk; d++) s[d * dv] += kr[d] * val;
        for (int64_t j = 0; j < grp; j++) {
            const int64_t qh = h * grp + j;
            const float *qr = q + row * g->hq * dk + qh * dk;
            float o = 0.0f;
            for (int64_t d = 0; d < dk; d++) o += qr[d] * s[d * dv];
            out[row * g->hq * dv + qh * dv + m] = scale * o;
        }
    }
}

static cg_op_status la_cpu(const cg_kernel_args *a) {
    la_geom g;
    if (la_shapes(a->call, &g)) return CG_OP_ERROR;
    const int64_t nb = a->call->inputs[0].dims[0], nt = a->call->inputs[0].dims[1];
    const float scale = la_scale(a->call, &g);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < g.hkv; h++)
            for (int64_t m = 0; m < g.dv; m++) la_column(a, &g, nt, b, h, m, scale);
    return CG_OP_OK;
}

static cg_op_status la_cl(const cg_kernel_args *a) {
    static const char name[] = "linear_attention";
    la_geom g;
    if (la_shapes(a->call, &g)) return CG_OP_ERROR;
    const cg_tensor_desc *q = &a->call->inputs[0];
    const int64_t n = q->dims[0] * g.hkv * g.dv, big = cg_desc_numel(q) > cg_desc_numel(&a->call->outputs[0])
                                                           ? cg_desc_numel(q)
                                                           : cg_desc_numel(&a->call->outputs[0]);
    if (n == 0) return CG_OP_OK;
    if (q->dims[0] > INT32_MAX || q->dims[1] > INT32_MAX || g.hq > INT32_MAX || g.dk > INT32_MAX || g.dv > INT32_MAX)
        return cg_op_fail(a->call, "dims past 2^31");
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_linear_attn, name, big > INT32_MAX || n > INT32_MAX, 0, NULL);
    if (!k) return CG_OP_ERROR;
    cl_mem in[6], out = (cl_mem)a->out[0], st = (cl_mem)a->out[1];
    for (int i = 0; i < 4; i++) in[i] = (cl_mem)a->in[i];
    in[4] = g.i_decay > 0 ? (cl_mem)a->in[g.i_decay] : in[0]; /* unread when absent */
    in[5] = g.i_beta > 0 ? (cl_mem)a->in[g.i_beta] : in[0];
    cl_int nb = (cl_int)q->dims[0], nt = (cl_int)q->dims[1], hq = (cl_int)g.hq, hkv = (cl_int)g.hkv;
    cl_int dk = (cl_int)g.dk, dv = (cl_int)g.dv, dl = (cl_int)g.dlen, bl = (cl_int)g.blen;
    cl_int gated = g.i_decay > 0, delta = g.i_beta > 0;
    cl_float scale = la_scale(a->call, &g);
    const cg_ops_cl_arg_value v[] = {
        CG_OPS_CL_ARG(in[0]), CG_OPS_CL_ARG(in[1]), CG_OPS_CL_ARG(in[2]), CG_OPS_CL_ARG(in[3]), CG_OPS_CL_ARG(in[4]),
        CG_OPS_CL_ARG(in[5]), CG_OPS_CL_ARG(out),   CG_OPS_CL_ARG(st),    CG_OPS_CL_ARG(nb),    CG_OPS_CL_ARG(nt),
        CG_OPS_CL_ARG(hq),    CG_OPS_CL_ARG(hkv),   CG_OPS_CL_ARG(dk),    CG_OPS_CL_ARG(dv),    CG_OPS_CL_ARG(dl),
        CG_OPS_CL_ARG(bl),    CG_OPS_CL_ARG(scale), CG_OPS_CL_ARG(gated), CG_OPS_CL_ARG(delta)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(v), v)) return CG_OP_ERROR;
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* Cases: every update rule, grouped and plain heads, per-head and per-key
 * decay, shared and per-head beta, one step and a longer sequence. decay
 * is a log in [-1, 0], beta in [0, 1]. */
static const struct {
    int64_t b, t, hq, hkv, dk, dv;
    int rule, per_key_decay, beta_one;
    const char *attrs;
} la_cases[] = {
    {1, 1, 1, 1, 1, 1, 0, 0, 0, "q_num_heads: 1, kv_num_heads: 1, update_rule: \"linear\""},
    {2, 5, 2, 2, 3, 4, 0, 0, 0, "q_num_heads: 2, kv_num_heads: 2, update_rule: \"linear\", scale: 0.5"},
    {2, 4, 4, 2, 8, 5, 1, 0, 0, "q_num_heads: 4, kv_num_heads: 2, update_rule: \"gated\""},
    {1, 6, 2, 2, 4, 4, 1, 1, 0, "q_num_heads: 2, kv_num_heads: 2, update_rule: \"gated\""},
    {2, 3, 3, 3, 4, 6, 2, 0, 0, "q_num_heads: 3, kv_num_heads: 3, update_rule: \"delta\""},
    {2, 7, 8, 4, 8, 8, 3, 1, 0, "q_num_heads: 8, kv_num_heads: 4"},
    {3, 5, 4, 1, 16, 9, 3, 0, 1, "q_num_heads: 4, kv_num_heads: 1, update_rule: \"gated_delta\""},
    {1, 40, 2, 2, 64, 33, 3, 1, 0, "q_num_heads: 2, kv_num_heads: 2"},
    {2, 0, 2, 2, 4, 4, 3, 0, 0, "q_num_heads: 2, kv_num_heads: 2"},
};

static int32_t la_conform(int32_t i, cg_conform_case *c) {
    if (i < 0 || i >= (int32_t)(sizeof la_cases / sizeof la_cases[0])) return 0;
    const uint32_t ss = c->struct_size;
    memset(c, 0, sizeof *c);
    c->struct_size = ss;
    const int64_t b = la_cases[i].b, t = la_cases[i].t, hkv = la_cases[i].hkv, dk = la_cases[i].dk;
    const int rule = la_cases[i].rule;
    const int64_t last[6] = {
        la_cases[i].hq * dk,           hkv * dk, hkv * la_cases[i].dv, 0, la_cases[i].per_key_decay ? hkv * dk : hkv,
        la_cases[i].beta_one ? 1 : hkv};
    int n = 0;
    for (int k = 0; k < 6; k++) {
        if ((k == 4 && !(rule & 1)) || (k == 5 && !(rule & 2))) continue;
        cg_tensor_desc *d = &c->inputs[n];
        d->dtype = CG_OP_F32;
        d->ndim = k == 3 ? 4 : 3;
        const int64_t sd[4] = {b, hkv, dk, la_cases[i].dv}, td[3] = {b, t, last[k]};
        memcpy(d->dims, k == 3 ? sd : td, sizeof(int64_t) * (size_t)d->ndim);
        c->lo[n] = k == 4 ? -1.0 : k == 5 ? 0.0 : -1.0;
        c->hi[n] = k == 4 ? 0.0 : 1.0;
        n++;
    }
    c->n_inputs = n;
    c->n_outputs = 2;
    c->attrs = la_cases[i].attrs;
    return 1;
}

static const char *const la_inputs[] = {"q", "k", "v", "state", "decay or beta", "beta", NULL};
static const cg_kernel_def la_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = la_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = la_cl),
};
const cg_op_def cg_op_linear_attention =
    CG_OP(.name = "linear_attention",
          .doc = "Linear attention as a recurrence (ONNX LinearAttention): q f32 [B, T, Hq * dk], k [B, T, Hkv * dk], "
                 "v [B, T, Hkv * dv], state [B, Hkv, dk, dv], then decay [B, T, Hkv or Hkv * dk] (a log; gated "
                 "rules) and beta [B, T, 1 or Hkv] (delta rules). Per step: S *= exp(decay), v = beta * (v - S^T "
                 "k) (delta), S += k v^T; query head j reads scale * S^T q with the state of kv head j / (Hq / "
                 "Hkv). Outputs [B, T, Hq * dv] and the final state [B, Hkv, dk, dv].",
          .min_inputs = 4, .max_inputs = 6, .min_outputs = 2, .max_outputs = 2, .input_names = la_inputs,
          CG_ATTRS(la_attrs), .infer = la_infer, CG_KERNELS(la_kernels), .conform_case = la_conform);
