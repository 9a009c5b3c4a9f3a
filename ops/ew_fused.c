/* ew_fused: a chain of f32 element-wise ops as one node (what the graph
 * rewrite "elementwise" makes of GELU, bias and residual adds and the
 * like), so that an OpenCL device pays one launch for the chain instead of
 * one per op. The chain is a postfix program over the inputs; each
 * operation is computed as the unfused op's own kernel computes it, so the
 * fused result is the unfused chain's, bit for bit on the CPU. */
#include "ops_cl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_math.h"
#include "cpu/cpu_pool.h"
#include "ew_fused.cl.h"

#define EW_MAX_IN 8
#define EW_MAX_TOKENS 64
#define EW_MAX_DEPTH 16
/* Elements each token's loop handles at a time: the stack of blocks stays
 * in L1 (16 blocks of 1 KiB). */
#define EW_BLOCK 256
/* Longest OpenCL expression: 64 tokens of at most 62 characters (a
 * hard_sigmoid with two literals around its operand). */
#define EW_EXPR_MAX 4096

/* Tokens 0..7 push input k; the rest are operations. */
enum {
    EW_ADD = EW_MAX_IN,
    EW_SUB,
    EW_MUL,
    EW_DIV,
    EW_NEG,
    EW_ERF,
    EW_TANH,
    EW_SIGMOID,
    EW_RELU,
    EW_EXP,
    EW_SQRT,
    EW_ABS,
    EW_POW,
    EW_AFFINE,
    EW_HARD_SIGMOID,
    EW_SQUARE,
    EW_CUBE
};

static const struct {
    const char *name;
    int pops;
    const char *cl; /* OpenCL C: an infix operator, or a function */
} ew_ops[] = {
    [EW_ADD] = {"add", 2, "+"},
    [EW_SUB] = {"sub", 2, "-"},
    [EW_MUL] = {"mul", 2, "*"},
    [EW_DIV] = {"div", 2, "/"},
    [EW_NEG] = {"neg", 1, "-"},
    [EW_ERF] = {"erf", 1, "cg_erf"},
    [EW_TANH] = {"tanh", 1, "tanh"},
    [EW_SIGMOID] = {"sigmoid", 1, "cg_sigmoid"},
    [EW_RELU] = {"relu", 1, "cg_relu"},
    [EW_EXP] = {"exp", 1, "exp"},
    [EW_SQRT] = {"sqrt", 1, "sqrt"},
    [EW_ABS] = {"abs", 1, "fabs"},
    [EW_POW] = {"pow", 2, "pow"},
    /* with two parameters: "affine:A:B", "hard_sigmoid:A:B" */
    [EW_AFFINE] = {"affine", 1, NULL},
    [EW_HARD_SIGMOID] = {"hard_sigmoid", 1, NULL},
    /* pow by a constant 2 or 3 (GPT-2's GELU cubes): the exponent known
     * when the kernel is built, so no general pow per element */
    [EW_SQUARE] = {"square", 1, "cg_square"},
    [EW_CUBE] = {"cube", 1, "cg_cube"},
};
/* The op names in messages. */
#define EW_TOKEN_NAMES \
    "add sub mul div pow neg erf tanh sigmoid relu exp sqrt abs square cube affine:A:B hard_sigmoid:A:B"

enum { EW_N_TOKENS = (int)(sizeof ew_ops / sizeof ew_ops[0]) };

typedef struct ew_prog {
    int n, depth;
    uint8_t tok[EW_MAX_TOKENS];
    float pa[EW_MAX_TOKENS], pb[EW_MAX_TOKENS]; /* affine's and hard_sigmoid's A and B */
} ew_prog;

/* ":A:B" ending at end into *a, *b (f32 as the ops take their attributes). */
static int ew_params(const char *s, const char *end, float *a, float *b) {
    char *e;
    if (s == end || *s != ':') return 0;
    *a = (float)strtod(s + 1, &e);
    if (e == s + 1 || *e != ':') return 0;
    s = e;
    *b = (float)strtod(s + 1, &e);
    return e != s + 1 && e == end;
}

/* Token `s` (length len): an input index below n_in or an operation (with
 * its parameters into p's slot); -1 for neither, -2 for an input the node
 * lacks. */
static int ew_token(const char *s, size_t len, int n_in, ew_prog *p) {
    if (len == 1 && s[0] >= '0' && s[0] <= '9') return s[0] - '0' < n_in ? s[0] - '0' : -2;
    for (int t = EW_ADD; t < EW_N_TOKENS; t++) {
        const size_t n = strlen(ew_ops[t].name);
        if (n > len || strncmp(ew_ops[t].name, s, n)) continue;
        if (t == EW_AFFINE || t == EW_HARD_SIGMOID) {
            if (ew_params(s + n, s + len, &p->pa[p->n], &p->pb[p->n])) return t;
        } else if (n == len) {
            return t;
        }
    }
    return -1;
}

/* Parses call's program into *p, checking it leaves exactly one value. */
static cg_op_status ew_parse(const cg_op_call *call, ew_prog *p) {
    const char *s = call->attrs[0].s;
    int depth = 0;
    p->n = p->depth = 0;
    for (int pos = 1;; pos++) {
        size_t len = strcspn(s, " ");
        if (len == 0)
            return cg_op_fail(call, "program \"%s\": token %d is empty (one space between tokens)", call->attrs[0].s,
                              pos);
        if (p->n == EW_MAX_TOKENS) return cg_op_fail(call, "program: more than %d tokens", EW_MAX_TOKENS);
        int t = ew_token(s, len, call->n_inputs, p);
        if (t == -2)
            return cg_op_fail(call, "program token %d '%.*s': the node has %d inputs", pos, (int)len, s,
                              call->n_inputs);
        if (t < 0)
            return cg_op_fail(call, "program token %d '%.*s' is neither an input index nor one of " EW_TOKEN_NAMES, pos,
                              (int)len, s);
        int pops = t < EW_MAX_IN ? 0 : ew_ops[t].pops;
        if (depth < pops)
            return cg_op_fail(call, "program token %d '%.*s' needs %d values, the stack holds %d", pos, (int)len, s,
                              pops, depth);
        depth += 1 - pops;
        if (depth > EW_MAX_DEPTH)
            return cg_op_fail(call, "program token %d: more than %d values on the stack", pos, EW_MAX_DEPTH);
        if (depth > p->depth) p->depth = depth;
        p->tok[p->n++] = (uint8_t)t;
        if (!s[len]) break;
        s += len + 1;
    }
    if (depth != 1) return cg_op_fail(call, "program \"%s\" leaves %d values, not 1", call->attrs[0].s, depth);
    return CG_OP_OK;
}

/* ---- shapes ---- */

/* Whether input d broadcasts over o as ew_fused allows: o's shape, or, with
 * its leading 1s dropped, o's trailing dims (one element: no dims left). */
static int ew_fits(const cg_tensor_desc *d, const cg_tensor_desc *o) {
    int lead = 0;
    while (lead < d->ndim && d->dims[lead] == 1) lead++;
    if (d->ndim == o->ndim) {
        int same = 1;
        for (int i = 0; i < d->ndim; i++) same = same && cg_dim_compatible(d->dims[i], o->dims[i]);
        if (same) return 1;
    }
    int n = d->ndim - lead;
    if (n > o->ndim) return 0;
    for (int i = 0; i < n; i++)
        if (!cg_dim_compatible(d->dims[lead + i], o->dims[o->ndim - n + i])) return 0;
    return 1;
}

static cg_op_status ew_infer(cg_op_call *call) {
    for (int k = 0; k < call->n_inputs; k++)
        if (call->inputs[k].dtype != CG_OP_F32)
            return cg_op_fail(call, "input %d (x%d) must be f32, got %s", k, k,
                              cg_ops_dtype_name(call->inputs[k].dtype));
    ew_prog p;
    if (ew_parse(call, &p)) return CG_OP_ERROR;
    /* the output: the first input every input fits (the largest) */
    int out = -1, bad = -1;
    for (int c = 0; c < call->n_inputs && out < 0; c++) {
        int k = 0;
        while (k < call->n_inputs && ew_fits(&call->inputs[k], &call->inputs[c])) k++;
        if (k == call->n_inputs) out = c;
        else if (c == 0) bad = k;
    }
    if (out < 0) {
        char sa[128], sb[128];
        cg_ops_format_dims(sa, sizeof sa, &call->inputs[bad]);
        cg_ops_format_dims(sb, sizeof sb, &call->inputs[0]);
        return cg_op_fail(
            call,
            "input %d (x%d) %s is neither input 0's shape %s, a suffix of it, nor one element (and no input "
            "is a shape every input fits)",
            bad, bad, sa, sb);
    }
    cg_tensor_desc *o = &call->outputs[0];
    *o = call->inputs[out];
    for (int k = 0; k < call->n_inputs; k++) /* a size or symbol where the chosen input's dim is unknown */
        if (call->inputs[k].ndim == o->ndim)
            for (int i = 0; i < o->ndim; i++)
                if (o->dims[i] == CG_DIM_UNKNOWN && call->inputs[k].dims[i] != 1) o->dims[i] = call->inputs[k].dims[i];
    return CG_OP_OK;
}

/* ---- CPU ---- */

typedef struct ew_run {
    const ew_prog *p;
    const float *in[EW_MAX_IN];
    int64_t m[EW_MAX_IN]; /* elements of each input */
    float *out;
    int64_t n;
} ew_run;

static float ew_relu(float x) { return x < 0.0f ? 0.0f : x; /* NaN stays NaN, as relu */ }

/* hard_sigmoid's min(1, max(0, a x + b)) as comparisons, which vectorise
 * where fminf/fmaxf are calls: the same values (NaN gives 0 as fmaxf(0,
 * NaN) does) */
static float ew_hard_sigmoid(float x, float a, float b) {
    float v = a * x + b;
    v = v > 0.0f ? v : 0.0f;
    return v < 1.0f ? v : 1.0f;
}

/* Elements [i0, i0 + len) of input k into buf, or a pointer straight into
 * the input when it is the output's shape. */
static const float *ew_load(const ew_run *r, int k, int64_t i0, int64_t len, float *buf) {
    const float *x = r->in[k];
    const int64_t m = r->m[k];
    if (m == r->n) return x + i0;
    if (m == 1) {
        for (int64_t j = 0; j < len; j++) buf[j] = x[0];
        return buf;
    }
    int64_t s = i0 % m;
    for (int64_t j = 0; j < len; j++) {
        buf[j] = x[s];
        if (++s == m) s = 0;
    }
    return buf;
}

/* pow as the unfused op computes it for a scalar exponent: 2 as x * x, 3
 * as the cube in double rounded once, any other through powf. */
static void ew_pow(const float *a, const float *b, float *y, int64_t len) {
    for (int64_t j = 0; j < len; j++)
        y[j] = b[j] == 2.0f ? a[j] * a[j] : b[j] == 3.0f ? cg_ops_cube(a[j]) : powf(a[j], b[j]);
}

/* One operation over a block: a and b the operands (b NULL for one; pa,
 * pb the parameters), the result into y (which may be a). Each as the
 * unfused op's CPU kernel. */
static void ew_apply(int t, const float *a, const float *b, float pa, float pb, float *y, int64_t len) {
    switch (t) {
    case EW_POW: ew_pow(a, b, y, len); break;
    case EW_SQUARE:
        for (int64_t j = 0; j < len; j++) y[j] = a[j] * a[j];
        break;
    case EW_CUBE:
        for (int64_t j = 0; j < len; j++) y[j] = cg_ops_cube(a[j]);
        break;
    case EW_AFFINE:
        for (int64_t j = 0; j < len; j++) y[j] = pa * a[j] + pb;
        break;
    case EW_HARD_SIGMOID:
        for (int64_t j = 0; j < len; j++) y[j] = ew_hard_sigmoid(a[j], pa, pb);
        break;
    case EW_ADD:
        for (int64_t j = 0; j < len; j++) y[j] = a[j] + b[j];
        break;
    case EW_SUB:
        for (int64_t j = 0; j < len; j++) y[j] = a[j] - b[j];
        break;
    case EW_MUL:
        for (int64_t j = 0; j < len; j++) y[j] = a[j] * b[j];
        break;
    case EW_DIV:
        for (int64_t j = 0; j < len; j++) y[j] = a[j] / b[j];
        break;
    case EW_NEG:
        for (int64_t j = 0; j < len; j++) y[j] = -a[j];
        break;
    case EW_ERF: cg_cpu_verf(a, y, (size_t)len); break;
    case EW_TANH: cg_cpu_vtanh(a, y, (size_t)len); break;
    case EW_SIGMOID: cg_cpu_vsigmoid(a, y, (size_t)len); break;
    case EW_RELU:
        for (int64_t j = 0; j < len; j++) y[j] = ew_relu(a[j]);
        break;
    case EW_EXP: cg_cpu_vexp(a, y, (size_t)len); break;
    case EW_SQRT:
        for (int64_t j = 0; j < len; j++) y[j] = sqrtf(a[j]);
        break;
    default:
        for (int64_t j = 0; j < len; j++) y[j] = fabsf(a[j]);
        break;
    }
}

/* Blocks [b0, b1): the program once per block on a stack of block
 * buffers; the last operation writes the output directly. */
static void ew_blocks(void *ctx, size_t b0, size_t b1) {
    const ew_run *r = ctx;
    const ew_prog *p = r->p;
    float buf[EW_MAX_DEPTH][EW_BLOCK];
    const float *st[EW_MAX_DEPTH];
    for (size_t b = b0; b < b1; b++) {
        const int64_t i0 = (int64_t)b * EW_BLOCK, len = r->n - i0 < EW_BLOCK ? r->n - i0 : EW_BLOCK;
        float *y = r->out + i0;
        int sp = 0;
        for (int t = 0; t < p->n; t++) {
            const int tok = p->tok[t];
            if (tok < EW_MAX_IN) {
                st[sp] = ew_load(r, tok, i0, len, buf[sp]);
                sp++;
                continue;
            }
            const int two = ew_ops[tok].pops == 2;
            sp -= two;
            float *dst = t == p->n - 1 ? y : buf[sp - 1];
            ew_apply(tok, st[sp - 1], two ? st[sp] : NULL, p->pa[t], p->pb[t], dst, len);
            st[sp - 1] = dst;
        }
        if (st[0] != y) memcpy(y, st[0], (size_t)len * sizeof *y); /* a program of one input */
    }
}

static cg_op_status ew_cpu(const cg_kernel_args *a) {
    const cg_op_call *call = a->call;
    ew_prog p;
    if (ew_parse(call, &p)) return CG_OP_ERROR;
    ew_run r = {.p = &p, .out = a->out[0], .n = cg_desc_numel(&call->outputs[0])};
    if (r.n == 0) return CG_OP_OK;
    for (int k = 0; k < call->n_inputs; k++) {
        r.in[k] = a->in[k];
        r.m[k] = cg_desc_numel(&call->inputs[k]);
    }
    /* chunks of about 64K token-elements: the pool's wake-up stays small
     * against the work */
    const size_t blocks = (size_t)((r.n + EW_BLOCK - 1) / EW_BLOCK);
    const size_t grain = (size_t)(65536 / (EW_BLOCK * p.n)) + 1;
    cg_cpu_parallel_for(blocks, grain, ew_blocks, &r);
    return CG_OP_OK;
}

/* ---- OpenCL ---- */

/* An f32 constant as an exact OpenCL C literal (hexadecimal). */
static void ew_literal(char *buf, size_t size, float v) {
    if (isnan(v)) snprintf(buf, size, "NAN");
    else if (isinf(v)) snprintf(buf, size, v < 0 ? "(-INFINITY)" : "INFINITY");
    else snprintf(buf, size, v < 0 || signbit(v) ? "(%af)" : "%af", (double)v);
}

/* Unary token tok of operand a as OpenCL C into buf, as the unfused kernel
 * writes it (elementwise.cl, math.cl). */
static int ew_expr_unary(char *buf, size_t size, int tok, const char *a, float pa, float pb) {
    char la[48], lb[48];
    ew_literal(la, sizeof la, pa);
    ew_literal(lb, sizeof lb, pb);
    if (tok == EW_NEG) return snprintf(buf, size, "(-%s)", a);
    if (tok == EW_AFFINE) return snprintf(buf, size, "((%s*%s)+%s)", la, a, lb);
    if (tok == EW_HARD_SIGMOID) return snprintf(buf, size, "fmin(1.0f,fmax(0.0f,((%s*%s)+%s)))", la, a, lb);
    return snprintf(buf, size, "%s(%s)", ew_ops[tok].cl, a);
}

/* The program as one OpenCL C expression of a0 .. a7 into buf[EW_EXPR_MAX]
 * (no spaces: it goes into a -D build option). */
static cg_op_status ew_expr(const cg_op_call *call, const ew_prog *p, char *buf) {
    /* the stack's expressions, EW_EXPR_MAX each; the operands copied out */
    char *mem = malloc(EW_MAX_DEPTH * (size_t)EW_EXPR_MAX), a[EW_EXPR_MAX], b[EW_EXPR_MAX];
    if (!mem) return cg_op_fail(call, "out of memory");
    int sp = 0, len = 0;
    for (int t = 0; t < p->n && len >= 0 && len < EW_EXPR_MAX; t++) {
        const int tok = p->tok[t];
        if (tok < EW_MAX_IN) {
            len = snprintf(mem + EW_EXPR_MAX * sp++, EW_EXPR_MAX, "a%d", tok);
        } else if (ew_ops[tok].pops == 2) {
            memcpy(a, mem + EW_EXPR_MAX * (sp - 2), EW_EXPR_MAX);
            memcpy(b, mem + EW_EXPR_MAX * --sp, EW_EXPR_MAX);
            char *d = mem + EW_EXPR_MAX * (sp - 1);
            len = tok == EW_POW ? snprintf(d, EW_EXPR_MAX, "pow(%s,%s)", a, b)
                                : snprintf(d, EW_EXPR_MAX, "(%s%s%s)", a, ew_ops[tok].cl, b);
        } else {
            memcpy(a, mem + EW_EXPR_MAX * (sp - 1), EW_EXPR_MAX);
            len = ew_expr_unary(mem + EW_EXPR_MAX * (sp - 1), EW_EXPR_MAX, tok, a, p->pa[t], p->pb[t]);
        }
    }
    const int fits = len >= 0 && len < EW_EXPR_MAX;
    if (fits) memcpy(buf, mem, EW_EXPR_MAX);
    free(mem);
    return fits ? CG_OP_OK : cg_op_fail(call, "program too long for an OpenCL kernel");
}

static cg_op_status ew_cl(const cg_kernel_args *a) {
    static const char name[] = "ew_fused";
    const cg_op_call *call = a->call;
    const int64_t n = cg_desc_numel(&call->outputs[0]);
    ew_prog p;
    char expr[EW_EXPR_MAX], opts[EW_EXPR_MAX + 96];
    if (ew_parse(call, &p) || ew_expr(call, &p, expr)) return CG_OP_ERROR;
    if (n == 0) return CG_OP_OK;
    unsigned bcast = 0, scalar = 0;
    for (int i = 0; i < call->n_inputs; i++) {
        const int64_t m = cg_desc_numel(&call->inputs[i]);
        if (m == 1 && n != 1) scalar |= 1u << i;
        else if (m != n) bcast |= 1u << i;
    }
    snprintf(opts, sizeof opts, "-DNIN=%d -DBCAST=%u -DSCALAR=%u -DEXPR=%s", call->n_inputs, bcast, scalar, expr);
    cl_kernel k = cg_ops_cl_kernel(a, cg_cl_ew_fused, name, n > INT32_MAX, 0, opts);
    if (!k) return CG_OP_ERROR;
    const cl_mem y = (cl_mem)a->out[0];
    const cl_long ln = n;
    const cg_ops_cl_arg_value head[] = {CG_OPS_CL_ARG(y), CG_OPS_CL_ARG(ln)};
    if (cg_ops_cl_args(a, k, name, 0, CG_OPS_CL_N_ARGS(head), head)) return CG_OP_ERROR;
    for (int i = 0; i < call->n_inputs; i++) {
        const cl_mem x = (cl_mem)a->in[i];
        const cl_long m = cg_desc_numel(&call->inputs[i]);
        const cg_ops_cl_arg_value in[] = {CG_OPS_CL_ARG(x), CG_OPS_CL_ARG(m)};
        if (cg_ops_cl_args(a, k, name, (cl_uint)(2 + 2 * i), CG_OPS_CL_N_ARGS(in), in)) return CG_OP_ERROR;
    }
    return cg_ops_cl_launch_1d(a, k, NULL, n, cg_ops_cl_work_group(a, k, CG_OPS_CL_MAX_WORK_GROUP, 0));
}

/* ---- decomposition: the unfused chain (conform's second reference) ---- */

/* v reshaped to d's dims from `lead` on (concrete ones only). */
static int32_t ew_reshape(cg_ops_emitter *e, int32_t v, const cg_tensor_desc *d, int lead) {
    char shape[256] = "shape: [";
    for (int i = lead; i < d->ndim && e->st == CG_OP_OK; i++) {
        if (d->dims[i] < 0) e->st = cg_op_fail(e->call, "no decomposition of ew_fused on symbolic dims here");
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i > lead ? ", " : "",
                 (long long)d->dims[i]);
    }
    strcat(shape, "]");
    return cg_ops_emit(e, "reshape", shape, v, -1, -1);
}

/* Input k for the broadcasting ops: an input with more dims than the
 * output (leading 1s) reshaped to its dims without them. */
static int32_t ew_decomp_input(cg_ops_emitter *e, int k) {
    const cg_tensor_desc *d = &e->call->inputs[k], *o = &e->call->outputs[0];
    int32_t v = cg_ops_emit_input(e, k);
    return d->ndim <= o->ndim ? v : ew_reshape(e, v, d, d->ndim - o->ndim);
}

static cg_op_status ew_decompose(cg_decomp *d, const cg_op_call *call) {
    ew_prog p;
    if (ew_parse(call, &p)) return CG_OP_ERROR;
    cg_ops_emitter e = {d, call, CG_OP_OK};
    int32_t in[EW_MAX_IN], st[EW_MAX_DEPTH] = {0};
    for (int k = 0; k < call->n_inputs; k++) in[k] = ew_decomp_input(&e, k);
    int sp = 0;
    for (int t = 0; t < p.n; t++) {
        const int tok = p.tok[t];
        if (tok < EW_MAX_IN) {
            st[sp++] = in[tok];
        } else if (ew_ops[tok].pops == 2) {
            st[sp - 2] = cg_ops_emit(&e, ew_ops[tok].name, NULL, st[sp - 2], st[sp - 1], -1);
            sp--;
        } else {
            char attrs[96] = "";
            if (tok == EW_SQUARE || tok == EW_CUBE) { /* x * x, and times x again (within an ulp of the cube) */
                const int32_t x = st[sp - 1];
                st[sp - 1] = cg_ops_emit(&e, "mul", NULL, x, x, -1);
                if (tok == EW_CUBE) st[sp - 1] = cg_ops_emit(&e, "mul", NULL, st[sp - 1], x, -1);
                continue;
            }
            if (tok == EW_AFFINE || tok == EW_HARD_SIGMOID)
                snprintf(attrs, sizeof attrs, "alpha: %.9g, beta: %.9g", (double)p.pa[t], (double)p.pb[t]);
            st[sp - 1] = cg_ops_emit(&e, ew_ops[tok].name, attrs[0] ? attrs : NULL, st[sp - 1], -1, -1);
        }
    }
    /* a program of one input and no operation: still a node of its own */
    if (p.n == 1) st[0] = ew_reshape(&e, st[0], &call->outputs[0], 0);
    cg_ops_emit_output(&e, 0, st[0]);
    return e.st;
}

/* ---- conformance ---- */

typedef struct ew_case {
    const char *program;
    int n_in;
    struct {
        int nd;
        int64_t d[4];
        double lo, hi;
    } in[EW_MAX_IN];
} ew_case;

#define IN(lo, hi, nd, ...) \
    { nd, {__VA_ARGS__}, lo, hi }
#define GELU "0 1 div erf 2 add 0 mul 3 mul"
/* GELU's constants: sqrt(2), 1, 0.5 */
#define GELU_K IN(1.41421356, 1.41421356, 1, 1), IN(1, 1, 1, 1), IN(0.5, 0.5, 1, 1)
#define EVERY "0 neg erf 1 tanh add 2 sigmoid mul 3 relu sub 4 exp div 5 sqrt add 6 abs mul"

/* GELU as exporters write it, bias and residual adds over [B, L, C], a 0-d
 * scalar, eight inputs of every broadcast form, every token (pow, affine
 * and hard_sigmoid in a case of their own), and odd sizes
 * that span many CPU blocks and work-groups. */
static const ew_case ew_cases[] = {
    {GELU, 4, {IN(-4, 4, 3, 2, 7, 13), GELU_K}},
    {"0 1 add", 2, {IN(-2, 2, 3, 3, 5, 17), IN(-2, 2, 1, 17)}},
    {"0 1 add 2 add", 3, {IN(-2, 2, 3, 3, 5, 17), IN(-2, 2, 1, 17), IN(-2, 2, 3, 3, 5, 17)}},
    {"0 1 mul 1 sub", 2, {IN(-2, 2, 1, 257), IN(-2, 2, 0, 0)}},
    {"0 exp sqrt", 1, {IN(-2, 2, 0, 0)}},
    {"0 1 add 2 mul 3 sub 4 div 5 add 6 mul 7 add",
     8,
     {IN(-2, 2, 2, 4, 33), IN(-2, 2, 1, 33), IN(-2, 2, 1, 1), IN(-2, 2, 2, 4, 33), IN(0.5, 2, 2, 1, 33),
      IN(-2, 2, 2, 4, 33), IN(-2, 2, 2, 1, 1), IN(-2, 2, 1, 33)}},
    {EVERY,
     7,
     {IN(-3, 3, 3, 2, 3, 19), IN(-3, 3, 1, 19), IN(-8, 8, 3, 2, 3, 19), IN(-2, 2, 2, 3, 19), IN(-2, 2, 0, 0),
      IN(0, 4, 3, 2, 3, 19), IN(-2, 2, 1, 1)}},
    {"0 1 add 0 2 mul add tanh", 3, {IN(-2, 2, 2, 3, 1), IN(-2, 2, 2, 1, 1), IN(-2, 2, 3, 1, 3, 1)}},
    {"0 1 add", 2, {IN(-2, 2, 2, 0, 5), IN(-2, 2, 1, 5)}},
    {GELU, 4, {IN(-4, 4, 2, 77, 1003), GELU_K}},
    {"0 affine:0.5:-0.25 1 pow 0 hard_sigmoid:0x1.99999ap-3:0.5 mul 0 affine:-1:0 hard_sigmoid:2:-0.5 sub",
     2,
     {IN(1, 3, 2, 5, 37), IN(-2, 2, 1, 37)}},
    {"0 cube 1 mul 0 add 2 mul tanh 0 square add",
     3,
     {IN(-5, 5, 3, 2, 9, 129), IN(0.044715, 0.044715, 0, 0), IN(0.8, 0.8, 1, 1)}},
    {"0 cube 0 square sub", 1, {IN(-1e13, 1e13, 1, 1001)}}, /* some cubes overflow */
    {NULL, 1, {IN(-3, 3, 2, 3, 41)}},                       /* the longest program and expression */
    {"0 1 add 0 sigmoid mul 2 add", 3, {IN(-6, 6, 3, 2, 129, 771), IN(-2, 2, 1, 771), IN(-2, 2, 3, 2, 129, 771)}},
};
#undef IN

static int32_t ew_conform(int32_t index, cg_conform_case *c) {
    if (index < 0 || index >= (int32_t)(sizeof ew_cases / sizeof ew_cases[0])) return 0;
    const ew_case *t = &ew_cases[index];
    c->n_inputs = t->n_in;
    c->n_outputs = 1;
    for (int k = 0; k < t->n_in; k++) {
        c->inputs[k].dtype = CG_OP_F32;
        c->inputs[k].ndim = t->in[k].nd;
        for (int i = 0; i < t->in[k].nd; i++) c->inputs[k].dims[i] = t->in[k].d[i];
        c->lo[k] = t->in[k].lo;
        c->hi[k] = t->in[k].hi;
    }
    /* the strings live as long as the table */
    static char attrs[sizeof ew_cases / sizeof ew_cases[0]][200], longest[EW_MAX_TOKENS * 48];
    if (!t->program) { /* 0, then hard_sigmoid with long literals for every other token */
        strcpy(longest, "program: \"0");
        for (int i = 1; i < EW_MAX_TOKENS; i++) strcat(longest, " hard_sigmoid:-0x1.555556p-3:0x1.99999ap-1");
        strcat(longest, "\"");
        c->attrs = longest;
        return 1;
    }
    snprintf(attrs[index], sizeof attrs[index], "program: \"%s\"", t->program);
    c->attrs = attrs[index];
    return 1;
}

/* ---- definition ---- */

static const cg_attr_def ew_attrs[] = {
    CG_ATTR(.name = "program", .type = CG_ATTR_STRING, .required = 1,
            .doc = "postfix program over the inputs, tokens separated by single spaces: \"0\"..\"7\" pushes that "
                   "input's element; add sub mul div pow pop two (a b -> a op b); neg erf tanh sigmoid relu exp sqrt "
                   "abs, square and cube (pow by 2 and 3, as pow computes them), affine:A:B (A * x + B) and "
                   "hard_sigmoid:A:B (min(1, max(0, A * x + B))), A and B numbers "
                   "as C writes them (hexadecimal for exact f32), pop one; it must leave exactly one value"),
};

static const char *const ew_inputs[] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", NULL};

static const cg_kernel_def ew_kernels[] = {
    CG_KERNEL(.backend = CG_BACKEND_CPU, .run = ew_cpu),
    CG_KERNEL(.backend = CG_BACKEND_OPENCL, .run = ew_cl),
};

const cg_op_def cg_op_ew_fused =
    CG_OP(.name = "ew_fused",
          .doc =
              "A chain of f32 element-wise ops in one node (the graph rewrite \"elementwise\" makes them): a postfix "
              "program over inputs x0..x7 (1 to 8), each operation computed as its own op computes it. Each input "
              "is the output's shape, its trailing dims (after leading 1s: a bias [C] over [B, L, C]) or one "
              "element; output element i reads input k at i % numel(k). The output has the largest input's shape.",
          .min_inputs = 1, .max_inputs = EW_MAX_IN, .min_outputs = 1, .max_outputs = 1, .input_names = ew_inputs,
          CG_ATTRS(ew_attrs), .infer = ew_infer, .decompose = ew_decompose, CG_KERNELS(ew_kernels),
          .conform_case = ew_conform);
