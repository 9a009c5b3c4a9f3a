#include "ops_common.h"

void cg_ops_format_dims(char *buf, size_t size, const cg_tensor_desc *d) {
    size_t used = 0;
    used += (size_t)snprintf(buf + used, size > used ? size - used : 0, "[");
    for (int i = 0; i < d->ndim; i++) {
        int64_t v = d->dims[i];
        const char *sep = i ? ", " : "";
        if (v >= 0)
            used += (size_t)snprintf(buf + used, size > used ? size - used : 0, "%s%lld", sep, (long long)v);
        else if (v == CG_DIM_UNKNOWN)
            used += (size_t)snprintf(buf + used, size > used ? size - used : 0, "%s?", sep);
        else
            used += (size_t)snprintf(buf + used, size > used ? size - used : 0, "%ss%lld", sep, (long long)(-2 - v));
    }
    snprintf(buf + used, size > used ? size - used : 0, "]");
}

static const char *dtype_str(cg_op_dtype t) {
    return t == CG_OP_F32 ? "f32" : t == CG_OP_I32 ? "i32" : "?";
}

cg_op_status cg_expect_input(const cg_op_call *call, int i, cg_op_dtype dt, int ndim) {
    const cg_tensor_desc *d = &call->inputs[i];
    if (d->dtype != dt)
        return cg_op_fail(call, "input %d must be %s, got %s", i, dtype_str(dt), dtype_str(d->dtype));
    if (ndim >= 0 && d->ndim != ndim) {
        char b[128];
        cg_ops_format_dims(b, sizeof b, d);
        return cg_op_fail(call, "input %d must have %d dims, got %s", i, ndim, b);
    }
    return CG_OP_OK;
}

cg_op_status cg_broadcast_shapes(const cg_op_call *call, const cg_tensor_desc *a,
                                 const cg_tensor_desc *b, cg_tensor_desc *out) {
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    out->ndim = nd;
    for (int i = 0; i < nd; i++) {
        int ia = a->ndim - nd + i, ib = b->ndim - nd + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        if (da == 1) out->dims[i] = db;
        else if (db == 1) out->dims[i] = da;
        else if (cg_dim_compatible(da, db)) out->dims[i] = cg_dim_unify(da, db);
        else {
            char sa[128], sb[128];
            cg_ops_format_dims(sa, sizeof sa, a);
            cg_ops_format_dims(sb, sizeof sb, b);
            return cg_op_fail(call, "shapes %s and %s do not broadcast", sa, sb);
        }
    }
    return CG_OP_OK;
}

const char *cg_input_name(const cg_op_def *def, int i) {
    if (!def->input_names) return "input";
    for (int k = 0; def->input_names[k]; k++)
        if (k == i) return def->input_names[k];
    return "input";
}
