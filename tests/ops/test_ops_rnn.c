/* Tests of the recurrent and attention operators: gru_cell, lstm_cell, gru,
 * lstm (against PyTorch golden data made by tools/py/gen_golden_rnn.py; from
 * given initial states against a naive double-precision reference),
 * attn_score and attn_context (against naive double-precision references),
 * their error messages, symbolic shapes, and their decompositions (run by a
 * small evaluator of the built-in ops they emit). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"
#include "op_harness.h"
#include "test_util.h"

#ifndef CG_TEST_DATA_DIR
#define CG_TEST_DATA_DIR "tests/golden"
#endif

/* Largest error allowed against PyTorch. */
#define GOLDEN_TOL 1e-5

/* The golden data directory: $CG_TEST_DATA_DIR, else the compile-time one. */
static const char *data_dir(void) {
    const char *env = getenv("CG_TEST_DATA_DIR");
    return env && *env ? env : CG_TEST_DATA_DIR;
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                buf[n] = 0;
                *size = (size_t)n;
            }
        }
    }
    fclose(f);
    return buf;
}

/* ---- golden files (format: see tools/py/gen_golden_rnn.py) ---- */

#define GOLDEN_MAX 64

typedef struct golden {
    int n;
    th_tensor t[GOLDEN_MAX];
    char *buf;
} golden;

static int32_t read_i32(const char *buf, size_t *off, size_t size) {
    ck_assert_msg(*off + 4 <= size, "golden file truncated");
    const unsigned char *p = (const unsigned char *)buf + *off;
    *off += 4;
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static void golden_load(golden *g, const char *file) {
    const uint32_t one = 1;
    ck_assert_msg(*(const unsigned char *)&one == 1, "golden data is little-endian");
    char path[1024];
    snprintf(path, sizeof path, "%s/rnn/%s", data_dir(), file);
    size_t size = 0;
    g->buf = read_file(path, &size);
    ck_assert_msg(g->buf != NULL, "cannot read %s (set CG_TEST_DATA_DIR)", path);
    ck_assert_msg(size >= 8 && memcmp(g->buf, "CGT1", 4) == 0, "%s is not a CGT1 file", path);
    size_t off = 4;
    g->n = read_i32(g->buf, &off, size);
    ck_assert_msg(g->n > 1 && g->n <= GOLDEN_MAX, "%s: bad tensor count %d", path, g->n);
    for (int i = 0; i < g->n; i++) {
        int32_t dtype = read_i32(g->buf, &off, size), ndim = read_i32(g->buf, &off, size);
        ck_assert_msg((dtype == CG_OP_F32 || dtype == CG_OP_I32) && ndim >= 0 && ndim <= CG_MAX_DIMS,
                      "%s: bad tensor header %d", path, i);
        int64_t dims[CG_MAX_DIMS], numel = 1;
        for (int k = 0; k < ndim; k++) {
            dims[k] = read_i32(g->buf, &off, size);
            ck_assert(dims[k] >= 0);
            numel *= dims[k];
        }
        ck_assert_msg(off + (size_t)numel * 4 <= size, "%s: tensor %d truncated", path, i);
        g->t[i] = dtype == CG_OP_F32 ? th_f32((float *)(void *)(g->buf + off), ndim, dims)
                                     : th_i32((int32_t *)(void *)(g->buf + off), ndim, dims);
        off += (size_t)numel * 4;
    }
    ck_assert_msg(off == size, "%s: trailing bytes", path);
}

static int64_t numel_of(const cg_tensor_desc *d) { return cg_desc_numel(d); }

static void assert_same_shape(const cg_tensor_desc *got, const cg_tensor_desc *want, const char *what) {
    char a[128], b[128];
    cg_ops_format_dims(a, sizeof a, got);
    cg_ops_format_dims(b, sizeof b, want);
    ck_assert_msg(strcmp(a, b) == 0, "%s: shape %s, expected %s", what, a, b);
}

static const cg_op_def *rnn_op(const char *name) {
    if (strcmp(name, "gru") == 0) return &cg_op_gru;
    if (strcmp(name, "lstm") == 0) return &cg_op_lstm;
    if (strcmp(name, "gru_cell") == 0) return &cg_op_gru_cell;
    if (strcmp(name, "lstm_cell") == 0) return &cg_op_lstm_cell;
    return NULL;
}

static void seq_attrs(th_attrs *at, const cg_op_def *def, int64_t hidden, int64_t layers, int64_t bidir) {
    th_attrs_init(at, def);
    th_set_int(at, def, "hidden", hidden);
    if (layers != 1) th_set_int(at, def, "layers", layers);
    if (bidir) th_set_int(at, def, "bidirectional", bidir);
}

/* Runs one golden case with its first `n_out` outputs (0: all of them). */
static void check_golden(const char *opname, const char *file, int n_out) {
    const cg_op_def *def = rnn_op(opname);
    ck_assert_msg(def != NULL, "unknown op %s in the golden index", opname);
    golden g;
    golden_load(&g, file);
    ck_assert(g.t[0].desc.dtype == CG_OP_I32 && numel_of(&g.t[0].desc) == 4);
    const int32_t *cfg = g.t[0].data; /* hidden, layers, bidirectional, n_outputs */
    int n_in = g.n - 1 - cfg[3];
    if (n_out == 0) n_out = cfg[3];
    ck_assert(n_out <= cfg[3] && n_in > 0);
    th_attrs at;
    th_attrs_init(&at, def);
    if (def->n_attrs) seq_attrs(&at, def, cfg[0], cfg[1], cfg[2]);
    th_tensor out[3];
    char err[512];
    cg_op_status st = th_run(def, n_in, g.t + 1, &at, n_out, out, err, sizeof err);
    ck_assert_msg(st == CG_OP_OK, "%s: %s", file, err);
    for (int i = 0; i < n_out; i++) {
        const th_tensor *want = &g.t[1 + n_in + i];
        char what[300];
        snprintf(what, sizeof what, "%s output %d", file, i);
        assert_same_shape(&out[i].desc, &want->desc, what);
        double diff = th_max_abs_diff(out[i].data, want->data, numel_of(&want->desc));
        ck_assert_msg(diff <= GOLDEN_TOL, "%s: max abs error %g", what, diff);
    }
    th_free_outputs(n_out, out);
    free(g.buf);
}

/* Runs every case of the index whose op is `opname`; returns their count. */
static int for_each_golden(const char *opname, int n_out) {
    char path[1024];
    snprintf(path, sizeof path, "%s/rnn/index.txt", data_dir());
    size_t size;
    char *text = read_file(path, &size);
    ck_assert_msg(text != NULL, "cannot read %s (set CG_TEST_DATA_DIR)", path);
    int count = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char op[64], file[256];
        ck_assert_msg(sscanf(line, "%63s %255s", op, file) == 2, "bad index line '%s'", line);
        if (strcmp(op, opname) != 0) continue;
        check_golden(op, file, n_out);
        count++;
    }
    free(text);
    return count;
}

START_TEST(golden_gru_cell) { ck_assert_int_ge(for_each_golden("gru_cell", 0), 2); }
END_TEST

START_TEST(golden_lstm_cell) {
    ck_assert_int_ge(for_each_golden("lstm_cell", 0), 2);
    ck_assert_int_ge(for_each_golden("lstm_cell", 1), 2); /* h' only */
}
END_TEST

START_TEST(golden_gru) {
    ck_assert_int_ge(for_each_golden("gru", 0), 6);
    ck_assert_int_ge(for_each_golden("gru", 1), 6); /* out only */
}
END_TEST

START_TEST(golden_lstm) {
    ck_assert_int_ge(for_each_golden("lstm", 0), 6);
    ck_assert_int_ge(for_each_golden("lstm", 2), 6); /* out, h_n */
}
END_TEST

/* ---- gru / lstm on generated data ---- */

#define SEQ_MAX_IN (2 + 4 * 3 * 2 + 2)

/* Inputs of a gru (gates 3) or lstm (gates 4) with random weights (when
 * `store` is non-NULL: a malloc'ed buffer the caller frees) or descriptors
 * only. x and lengths are the caller's. */
static int seq_inputs(th_tensor *in, int gates, int64_t B, int64_t S, int64_t I, int64_t H, int64_t L, int64_t D,
                      float *x, int32_t *lengths, float **store) {
    int64_t GH = gates * H, total = 0;
    for (int64_t k = 0; k < L; k++) total += D * (GH * ((k ? D * H : I) + H) + 2 * GH);
    float *w = NULL;
    if (store) {
        *store = w = malloc(sizeof(float) * (size_t)(total ? total : 1));
        th_fill(w, total, -0.7f, 0.7f);
    }
    const int64_t dx[3] = {B, S, I}, dl[1] = {B};
    int n = 0;
    in[n++] = th_f32(x, 3, dx);
    in[n++] = th_i32(lengths, 1, dl);
    for (int64_t k = 0; k < L; k++)
        for (int64_t d = 0; d < D; d++) {
            const int64_t ih[2] = {GH, k ? D * H : I}, hh[2] = {GH, H}, b[1] = {GH};
            in[n++] = th_f32(w, 2, ih);
            if (w) w += ih[0] * ih[1];
            in[n++] = th_f32(w, 2, hh);
            if (w) w += GH * H;
            in[n++] = th_f32(w, 1, b);
            if (w) w += GH;
            in[n++] = th_f32(w, 1, b);
            if (w) w += GH;
        }
    return n;
}

/* A row of a batch gives the same result as that row alone, rows of length 0
 * give zeros, and positions beyond a length are zero. */
static void check_batch_rows(int gates) {
    const cg_op_def *def = gates == 3 ? &cg_op_gru : &cg_op_lstm;
    const int64_t B = 4, S = 5, I = 3, H = 17, L = 2, D = 2;
    int32_t lengths[4] = {3, 0, 5, 1};
    float x[4 * 5 * 3];
    th_seed(7);
    th_fill(x, B * S * I, -1.0f, 1.0f);
    float *w;
    th_tensor in[SEQ_MAX_IN];
    int n_in = seq_inputs(in, gates, B, S, I, H, L, D, x, lengths, &w);
    th_attrs at;
    seq_attrs(&at, def, H, L, 1);
    const int n_out = gates == 3 ? 2 : 3;
    th_tensor out[3];
    char err[512];
    ck_assert_msg(th_run(def, n_in, in, &at, n_out, out, err, sizeof err) == CG_OP_OK, "%s", err);
    const float *y = out[0].data;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = lengths[b]; t < S; t++)
            for (int64_t j = 0; j < D * H; j++)
                ck_assert_msg(y[(b * S + t) * D * H + j] == 0.0f, "row %lld t %lld not zero", (long long)b,
                              (long long)t);
        /* The same row alone. */
        th_tensor in1[SEQ_MAX_IN], out1[3];
        memcpy(in1, in, sizeof(th_tensor) * (size_t)n_in);
        const int64_t dx[3] = {1, S, I}, dl[1] = {1};
        in1[0] = th_f32(x + b * S * I, 3, dx);
        in1[1] = th_i32(lengths + b, 1, dl);
        ck_assert_msg(th_run(def, n_in, in1, &at, n_out, out1, err, sizeof err) == CG_OP_OK, "%s", err);
        double diff = th_max_abs_diff(out1[0].data, y + b * S * D * H, S * D * H);
        ck_assert_msg(diff <= 1e-6, "row %lld alone differs by %g", (long long)b, diff);
        for (int i = 1; i < n_out; i++)
            for (int64_t r = 0; r < L * D; r++) {
                const float *state = (const float *)out[i].data + (r * B + b) * H;
                diff = th_max_abs_diff((const float *)out1[i].data + r * H, state, H);
                ck_assert_msg(diff <= 1e-6, "state %d row %lld alone differs by %g", i, (long long)b, diff);
                if (lengths[b] == 0)
                    for (int64_t j = 0; j < H; j++) ck_assert(state[j] == 0.0f);
            }
        th_free_outputs(n_out, out1);
    }
    th_free_outputs(n_out, out);
    free(w);
}

START_TEST(gru_batch_rows) { check_batch_rows(3); }
END_TEST

START_TEST(lstm_batch_rows) { check_batch_rows(4); }
END_TEST

/* Empty batch and empty sequences. */
START_TEST(seq_empty) {
    for (int gates = 3; gates <= 4; gates++) {
        const cg_op_def *def = gates == 3 ? &cg_op_gru : &cg_op_lstm;
        const int n_out = gates == 3 ? 2 : 3;
        int32_t lengths[2] = {0, 0};
        float x[1] = {0};
        for (int64_t B = 0; B <= 2; B += 2) {
            float *w;
            th_tensor in[SEQ_MAX_IN], out[3];
            int n_in = seq_inputs(in, gates, B, 0, 3, 4, 2, 2, x, lengths, &w);
            th_attrs at;
            seq_attrs(&at, def, 4, 2, 1);
            char err[512];
            ck_assert_msg(th_run(def, n_in, in, &at, n_out, out, err, sizeof err) == CG_OP_OK, "%s", err);
            const int64_t want_out[3] = {B, 0, 8}, want_state[3] = {4, B, 4};
            ck_assert(out[0].desc.ndim == 3 && memcmp(out[0].desc.dims, want_out, sizeof want_out) == 0);
            for (int i = 1; i < n_out; i++) {
                ck_assert(memcmp(out[i].desc.dims, want_state, sizeof want_state) == 0);
                for (int64_t j = 0; j < 4 * B * 4; j++) ck_assert(((float *)out[i].data)[j] == 0.0f);
            }
            th_free_outputs(n_out, out);
            free(w);
        }
    }
}
END_TEST

START_TEST(seq_bad_lengths) {
    const int64_t B = 3, S = 5, I = 2, H = 3;
    float x[3 * 5 * 2];
    th_fill(x, B * S * I, -1.0f, 1.0f);
    const int32_t cases[2][3] = {{5, 6, 1}, {2, 0, -1}};
    const char *const want[2] = {"input 1 (lengths) holds 6 at position 1, outside [0, 5]",
                                 "input 1 (lengths) holds -1 at position 2, outside [0, 5]"};
    for (int c = 0; c < 2; c++) {
        int32_t lengths[3];
        memcpy(lengths, cases[c], sizeof lengths);
        float *w;
        th_tensor in[SEQ_MAX_IN], out[2];
        int n_in = seq_inputs(in, 3, B, S, I, H, 1, 1, x, lengths, &w);
        th_attrs at;
        seq_attrs(&at, &cg_op_gru, H, 1, 0);
        char err[512];
        ck_assert(th_run(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
        ck_assert_msg(strstr(err, want[c]) != NULL, "message: %s", err);
        th_free_outputs(2, out);
        free(w);
    }
}
END_TEST

/* Infers a gru/lstm whose input `bad` is replaced by a descriptor of the
 * given shape; checks the message. */
static void check_seq_weight_error(int gates, int64_t L, int64_t D, int bad, int ndim, const int64_t *dims,
                                   const char *want) {
    const cg_op_def *def = gates == 3 ? &cg_op_gru : &cg_op_lstm;
    th_tensor in[SEQ_MAX_IN], out[3];
    int n_in = seq_inputs(in, gates, 2, 5, 7, 16, L, D, NULL, NULL, NULL);
    in[bad] = th_f32(NULL, ndim, dims);
    th_attrs at;
    seq_attrs(&at, def, 16, L, D - 1);
    char err[512];
    ck_assert(th_infer(def, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, want) != NULL, "message '%s', expected '%s'", err, want);
}

START_TEST(seq_weight_errors) {
    /* gru, 2 layers, bidirectional: weight_hh_l1_reverse is input 2 + 4*3 + 1. */
    const int64_t hh[2] = {48, 15};
    check_seq_weight_error(3, 2, 2, 15, 2, hh, "weight_hh_l1_reverse has shape [48, 15], expected [48, 16]");
    const int64_t ih1[2] = {48, 16};
    check_seq_weight_error(3, 2, 2, 10, 2, ih1, "weight_ih_l1 has shape [48, 16], expected [48, 32]");
    const int64_t ih0[2] = {64, 6};
    check_seq_weight_error(4, 1, 1, 2, 2, ih0, "weight_ih_l0 has shape [64, 6], expected [64, 7]");
    const int64_t b[1] = {63};
    check_seq_weight_error(4, 1, 2, 9, 1, b, "bias_hh_l0_reverse has shape [63], expected [64]");
    const int64_t b2[2] = {1, 48};
    check_seq_weight_error(3, 1, 1, 4, 2, b2, "bias_ih_l0 has shape [1, 48], expected [48]");
}
END_TEST

START_TEST(seq_infer_errors) {
    th_tensor in[SEQ_MAX_IN], out[3];
    char err[512];
    th_attrs at;
    int n_in = seq_inputs(in, 3, 2, 5, 7, 16, 2, 2, NULL, NULL, NULL);

    seq_attrs(&at, &cg_op_gru, 16, 1, 1); /* 10 inputs expected, 18 given */
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "takes 10 inputs") && strstr(err, "got 18"), "%s", err);

    seq_attrs(&at, &cg_op_gru, 0, 2, 1);
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "attribute hidden must be >= 1, got 0"), "%s", err);

    seq_attrs(&at, &cg_op_gru, 16, 2, 2);
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "attribute bidirectional must be 0 or 1, got 2"), "%s", err);

    seq_attrs(&at, &cg_op_gru, 16, 0, 1);
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "attribute layers must be"), "%s", err);

    seq_attrs(&at, &cg_op_gru, 16, 2, 1);
    const int64_t d3[1] = {3};
    th_tensor saved = in[1];
    in[1] = th_i32(NULL, 1, d3);
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'lengths' must be i32 [B] with B = 2"), "%s", err);
    in[1] = th_f32(NULL, 1, saved.desc.dims);
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'lengths' must be i32"), "%s", err);
    in[1] = saved;

    const int64_t x2[2] = {2, 5};
    in[0] = th_f32(NULL, 2, x2);
    ck_assert(th_infer(&cg_op_gru, n_in, in, &at, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'x' has shape [2, 5], expected [?, ?, ?]"), "%s", err);
}
END_TEST

START_TEST(seq_infer_symbolic) {
    th_tensor in[SEQ_MAX_IN], out[3];
    char err[512];
    th_attrs at;
    int n_in = seq_inputs(in, 4, 2, 5, 7, 16, 2, 2, NULL, NULL, NULL);
    const int64_t dx[3] = {CG_DIM_SYM(0), CG_DIM_SYM(1), CG_DIM_SYM(2)}, dl[1] = {CG_DIM_UNKNOWN};
    in[0] = th_f32(NULL, 3, dx);
    in[1] = th_i32(NULL, 1, dl);
    seq_attrs(&at, &cg_op_lstm, 16, 2, 1);
    ck_assert_msg(th_infer(&cg_op_lstm, n_in, in, &at, 3, out, err, sizeof err) == CG_OP_OK, "%s", err);
    const int64_t want_out[3] = {CG_DIM_SYM(0), CG_DIM_SYM(1), 32};
    const int64_t want_state[3] = {4, CG_DIM_SYM(0), 16};
    ck_assert(out[0].desc.dtype == CG_OP_F32 && out[0].desc.ndim == 3);
    ck_assert(memcmp(out[0].desc.dims, want_out, sizeof want_out) == 0);
    for (int i = 1; i < 3; i++) ck_assert(memcmp(out[i].desc.dims, want_state, sizeof want_state) == 0);
    /* A concrete length count fixes B. */
    const int64_t dl2[1] = {3};
    in[1] = th_i32(NULL, 1, dl2);
    ck_assert_msg(th_infer(&cg_op_lstm, n_in, in, &at, 3, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(out[0].desc.dims[0] == 3 && out[1].desc.dims[1] == 3);
    /* A symbolic weight is accepted too. */
    const int64_t wsym[2] = {64, CG_DIM_SYM(5)};
    in[2] = th_f32(NULL, 2, wsym);
    ck_assert_msg(th_infer(&cg_op_lstm, n_in, in, &at, 3, out, err, sizeof err) == CG_OP_OK, "%s", err);
}
END_TEST

/* ---- gru / lstm from given initial states, against a naive reference ---- */

static double ref_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Row `r` of weight matrix w [rows, k] times v [k]. */
static double ref_dot(const float *w, int64_t r, int64_t k, const double *v) {
    double sum = 0;
    for (int64_t i = 0; i < k; i++) sum += (double)w[r * k + i] * v[i];
    return sum;
}

/* One PyTorch cell update of state h (and c, LSTM) from input v [k]:
 * nn.GRU's gates r, z, n and nn.LSTM's i, f, g, o, written out from the
 * PyTorch documentation's equations. w: weight_ih, weight_hh, bias_ih,
 * bias_hh. */
static void ref_cell(int gates, int64_t H, int64_t k, const float *const *w, const double *v, double *h, double *c) {
    double a[4 * 64], hh[4 * 64], hn[64];
    ck_assert(H <= 64);
    for (int64_t r = 0; r < gates * H; r++) {
        a[r] = ref_dot(w[0], r, k, v) + w[2][r];
        hh[r] = ref_dot(w[1], r, H, h) + w[3][r];
    }
    for (int64_t j = 0; j < H; j++) {
        if (gates == 3) {
            const double rg = ref_sigmoid(a[j] + hh[j]), z = ref_sigmoid(a[H + j] + hh[H + j]);
            const double n = tanh(a[2 * H + j] + rg * hh[2 * H + j]);
            hn[j] = (1 - z) * n + z * h[j];
        } else {
            const double i = ref_sigmoid(a[j] + hh[j]), f = ref_sigmoid(a[H + j] + hh[H + j]);
            const double g = tanh(a[2 * H + j] + hh[2 * H + j]), o = ref_sigmoid(a[3 * H + j] + hh[3 * H + j]);
            c[j] = f * c[j] + i * g;
            hn[j] = o * tanh(c[j]);
        }
    }
    memcpy(h, hn, sizeof(double) * (size_t)H);
}

/* nn.GRU / nn.LSTM(batch_first=True) over packed rows from the initial
 * states in[n_w] (h0) and in[n_w + 1] (c0), [L*D, B, H]: each row alone,
 * forward over positions 0..len-1, backward from len-1 down to 0. Writes
 * out [B, S, D*H] (zeros past a row's length), h_n and c_n [L*D, B, H]. */
static void ref_seq(int gates, int64_t B, int64_t S, int64_t I, int64_t H, int64_t L, int64_t D, const th_tensor *in,
                    int n_w, double *out, double *hn, double *cn) {
    const float *x = in[0].data, *h0 = in[n_w].data, *c0 = gates == 4 ? in[n_w + 1].data : NULL;
    const int32_t *lengths = in[1].data;
    double *layer_in = malloc(sizeof(double) * (size_t)(B * S * (I > D * H ? I : D * H) + 1));
    for (int64_t i = 0; i < B * S * I; i++) layer_in[i] = x[i];
    int64_t in_size = I;
    for (int64_t k = 0; k < L; k++) {
        memset(out, 0, sizeof(double) * (size_t)(B * S * D * H));
        for (int64_t d = 0; d < D; d++) {
            const float *w[4];
            for (int q = 0; q < 4; q++) w[q] = in[2 + 4 * (k * D + d) + q].data;
            for (int64_t b = 0; b < B; b++) {
                double h[64], c[64];
                const int64_t st = ((k * D + d) * B + b) * H;
                for (int64_t j = 0; j < H; j++) h[j] = h0[st + j], c[j] = c0 ? c0[st + j] : 0;
                for (int64_t step = 0; step < lengths[b]; step++) {
                    const int64_t t = d ? lengths[b] - 1 - step : step;
                    ref_cell(gates, H, in_size, w, layer_in + (b * S + t) * in_size, h, c);
                    for (int64_t j = 0; j < H; j++) out[(b * S + t) * D * H + d * H + j] = h[j];
                }
                for (int64_t j = 0; j < H; j++) hn[st + j] = h[j], cn[st + j] = c[j];
            }
        }
        memcpy(layer_in, out, sizeof(double) * (size_t)(B * S * D * H));
        in_size = D * H;
    }
    free(layer_in);
}

/* Largest |got - want| over n values. */
static double ref_diff(const float *got, const double *want, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - want[i]);
        if (!(e <= m)) m = e;
    }
    return m;
}

/* gru / lstm with attribute initial against ref_seq: rows of length 0 keep
 * their initial state, rows of other lengths start from it (S may be 0). */
static void check_initial(int gates, int64_t B, int64_t S, int64_t L, int64_t D, const int32_t *lens) {
    const cg_op_def *def = gates == 3 ? &cg_op_gru : &cg_op_lstm;
    const int64_t I = 3, H = 7, n_state = L * D * B * H;
    float x[4 * 6 * 3], states[2][2 * 2 * 4 * 7];
    int32_t lengths[4];
    memcpy(lengths, lens, sizeof(int32_t) * (size_t)B);
    th_seed(23 + (uint64_t)gates);
    th_fill(x, B * S * I, -1.0f, 1.0f);
    th_fill(states[0], n_state, -1.0f, 1.0f);
    th_fill(states[1], n_state, -1.0f, 1.0f);
    float *w;
    th_tensor in[SEQ_MAX_IN], out[3];
    const int n_w = seq_inputs(in, gates, B, S, I, H, L, D, x, lengths, &w);
    const int64_t ds[3] = {L * D, B, H};
    int n_in = n_w;
    for (int i = 0; i < gates - 2; i++) in[n_in++] = th_f32(states[i], 3, ds);
    th_attrs at;
    seq_attrs(&at, def, H, L, D - 1);
    th_set_int(&at, def, "initial", 1);
    const int n_out = gates - 1;
    char err[512];
    ck_assert_msg(th_run(def, n_in, in, &at, n_out, out, err, sizeof err) == CG_OP_OK, "%s", err);
    double *want = malloc(sizeof(double) * (size_t)(B * S * D * H + 2 * n_state + 1));
    ref_seq(gates, B, S, I, H, L, D, in, n_w, want, want + B * S * D * H, want + B * S * D * H + n_state);
    const int64_t size[3] = {B * S * D * H, n_state, n_state};
    const double *ref[3] = {want, want + size[0], want + size[0] + n_state};
    for (int i = 0; i < n_out; i++) {
        const double diff = ref_diff(out[i].data, ref[i], size[i]);
        ck_assert_msg(diff <= 2e-5, "%s L %lld D %lld S %lld: output %d differs from the reference by %g", def->name,
                      (long long)L, (long long)D, (long long)S, i, diff);
    }
    th_free_outputs(n_out, out);
    free(want);
    free(w);
}

START_TEST(seq_initial_states) {
    const int32_t lens[4] = {3, 0, 5, 1}, empty[4] = {0, 0, 0, 0};
    for (int gates = 3; gates <= 4; gates++) {
        check_initial(gates, 4, 5, 2, 2, lens);
        check_initial(gates, 4, 6, 1, 1, lens);
        check_initial(gates, 3, 5, 2, 1, lens + 1);
        check_initial(gates, 4, 0, 2, 2, empty); /* the initial states are the final ones */
    }
}
END_TEST

/* Initial states of the wrong count, dtype or shape name the input. */
START_TEST(seq_initial_errors) {
    th_tensor in[SEQ_MAX_IN], out[3];
    char err[512];
    th_attrs at;
    const int n_w = seq_inputs(in, 4, 2, 5, 7, 16, 2, 2, NULL, NULL, NULL);
    const int64_t ds[3] = {4, 2, 16}, bad[3] = {4, 3, 16}, short_h[3] = {2, 2, 16};
    in[n_w] = th_f32(NULL, 3, ds);
    in[n_w + 1] = th_f32(NULL, 3, ds);
    seq_attrs(&at, &cg_op_lstm, 16, 2, 1);
    th_set_int(&at, &cg_op_lstm, "initial", 1);
    ck_assert_msg(th_infer(&cg_op_lstm, n_w + 2, in, &at, 3, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(th_infer(&cg_op_lstm, n_w + 1, in, &at, 3, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "takes 20 inputs") && strstr(err, "then h0 and c0), got 19"), "%s", err);
    in[n_w + 1] = th_f32(NULL, 3, bad);
    ck_assert(th_infer(&cg_op_lstm, n_w + 2, in, &at, 3, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'c0' (initial c) has shape [4, 3, 16], expected [4, 2, 16]"), "%s", err);
    in[n_w] = th_f32(NULL, 3, short_h);
    ck_assert(th_infer(&cg_op_lstm, n_w + 2, in, &at, 3, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'h0' (initial h) has shape [2, 2, 16], expected [4, 2, 16]"), "%s", err);
    in[n_w] = th_i32(NULL, 3, ds);
    ck_assert(th_infer(&cg_op_lstm, n_w + 2, in, &at, 3, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'h0' (initial h) must be f32"), "%s", err);
    th_set_int(&at, &cg_op_lstm, "initial", 2);
    ck_assert(th_infer(&cg_op_lstm, n_w + 2, in, &at, 3, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "attribute initial must be 0 or 1, got 2"), "%s", err);
    /* A symbolic batch takes the states' concrete one. */
    const int64_t dx[3] = {CG_DIM_SYM(0), CG_DIM_SYM(1), 7}, dl[1] = {CG_DIM_SYM(0)};
    in[0] = th_f32(NULL, 3, dx);
    in[1] = th_i32(NULL, 1, dl);
    in[n_w] = th_f32(NULL, 3, ds);
    in[n_w + 1] = th_f32(NULL, 3, ds);
    th_set_int(&at, &cg_op_lstm, "initial", 1);
    ck_assert_msg(th_infer(&cg_op_lstm, n_w + 2, in, &at, 3, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(out[0].desc.dims[0] == 2 && out[2].desc.dims[1] == 2);
}
END_TEST

/* ---- cells: errors and symbolic shapes ---- */

static void cell_descs(th_tensor *in, int gates, int64_t B, int64_t I, int64_t H) {
    const int64_t dx[2] = {B, I}, dh[2] = {B, H}, ih[2] = {gates * H, I}, hh[2] = {gates * H, H};
    const int64_t b[1] = {gates * H};
    int n = 0;
    in[n++] = th_f32(NULL, 2, dx);
    in[n++] = th_f32(NULL, 2, dh);
    if (gates == 4) in[n++] = th_f32(NULL, 2, dh);
    in[n++] = th_f32(NULL, 2, ih);
    in[n++] = th_f32(NULL, 2, hh);
    in[n++] = th_f32(NULL, 1, b);
    in[n++] = th_f32(NULL, 1, b);
}

static void check_cell_error(int gates, int bad, int ndim, const int64_t *dims, const char *want) {
    const cg_op_def *def = gates == 3 ? &cg_op_gru_cell : &cg_op_lstm_cell;
    th_tensor in[7], out[2];
    cell_descs(in, gates, 3, 4, 5);
    in[bad] = th_f32(NULL, ndim, dims);
    char err[512];
    ck_assert(th_infer(def, def->min_inputs, in, NULL, 1, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, want) != NULL, "message '%s', expected '%s'", err, want);
}

START_TEST(cell_errors) {
    const int64_t hh[2] = {18, 6};
    check_cell_error(3, 3, 2, hh, "input 'w_hh' has shape [18, 6], expected [15, 5]");
    const int64_t h[2] = {2, 5};
    check_cell_error(3, 1, 2, h, "input 'h' has shape [2, 5], expected [3, 5]");
    const int64_t c[2] = {3, 4};
    check_cell_error(4, 2, 2, c, "input 'c' has shape [3, 4], expected [3, 5]");
    const int64_t ih[2] = {20, 3};
    check_cell_error(4, 3, 2, ih, "input 'w_ih' has shape [20, 3], expected [20, 4]");
    const int64_t b[1] = {21};
    check_cell_error(4, 6, 1, b, "input 'b_hh' has shape [21], expected [20]");
    const int64_t x1[1] = {4};
    check_cell_error(3, 0, 1, x1, "input 'x' has shape [4], expected [?, ?]");
    /* dtype */
    th_tensor in[7], out[1];
    cell_descs(in, 3, 3, 4, 5);
    in[4].desc.dtype = CG_OP_I32;
    char err[512];
    ck_assert(th_infer(&cg_op_gru_cell, 6, in, NULL, 1, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'b_ih' must be f32, got i32"), "%s", err);
}
END_TEST

START_TEST(cell_infer_symbolic) {
    th_tensor in[7], out[2];
    char err[512];
    cell_descs(in, 4, 3, 4, 6);
    const int64_t dx[2] = {CG_DIM_SYM(0), 4}, dh[2] = {CG_DIM_SYM(0), CG_DIM_SYM(1)};
    in[0] = th_f32(NULL, 2, dx);
    in[1] = th_f32(NULL, 2, dh);
    in[2] = th_f32(NULL, 2, dh);
    ck_assert_msg(th_infer(&cg_op_lstm_cell, 7, in, NULL, 2, out, err, sizeof err) == CG_OP_OK, "%s", err);
    for (int i = 0; i < 2; i++)
        ck_assert(out[i].desc.ndim == 2 && out[i].desc.dims[0] == CG_DIM_SYM(0) && out[i].desc.dims[1] == 6);
    /* With H symbolic everywhere, the rows of w_hh must be a multiple of the gates. */
    const int64_t hh[2] = {23, CG_DIM_SYM(1)};
    in[4] = th_f32(NULL, 2, hh);
    in[3].desc.dims[0] = 23;
    ck_assert(th_infer(&cg_op_lstm_cell, 7, in, NULL, 2, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "not a multiple of 4 gates"), "%s", err);
}
END_TEST

/* ---- attention: naive double-precision references ---- */

/* Reference score of key s of row b; *mag gets the sum of the magnitudes of
 * the terms, which bounds the rounding error of a float evaluation. */
static double ref_score(const char *kind, int64_t S, int64_t H, int64_t K, const float *q, const float *keys,
                        const float *w, const float *bias, const float *v, int64_t b, int64_t s, double *mag) {
    const float *qb = q + b * H, *h = keys + (b * S + s) * K;
    double e = 0, m = 0;
    if (strcmp(kind, "additive") == 0) {
        for (int64_t a = 0; a < K; a++) {
            double t = (double)bias[a] + h[a];
            for (int64_t i = 0; i < H; i++) t += (double)w[a * H + i] * qb[i];
            e += v[a] * tanh(t);
            m += fabs(v[a]);
        }
    } else if (strcmp(kind, "general") == 0) {
        for (int64_t k = 0; k < K; k++) {
            double wq = 0, wq_mag = 0;
            for (int64_t i = 0; i < H; i++) {
                wq += (double)w[k * H + i] * qb[i];
                wq_mag += fabs((double)w[k * H + i] * qb[i]);
            }
            e += h[k] * wq;
            m += fabs((double)h[k]) * wq_mag;
        }
    } else {
        double nq = 0, nk = 0;
        for (int64_t i = 0; i < H; i++) {
            e += (double)qb[i] * h[i];
            m += fabs((double)qb[i] * h[i]);
            nq += (double)qb[i] * qb[i];
            nk += (double)h[i] * h[i];
        }
        if (strcmp(kind, "scaled_dot") == 0) {
            e /= sqrt((double)H);
            m /= sqrt((double)H);
        } else if (strcmp(kind, "cosine") == 0) {
            double den = fmax(sqrt(nq) * sqrt(nk), 1e-8);
            e /= den;
            m /= den;
        }
    }
    *mag = m;
    return e;
}

static int kind_inputs(const char *kind) {
    return strcmp(kind, "additive") == 0 ? 5 : strcmp(kind, "general") == 0 ? 3 : 2;
}

static const char *const score_kinds[] = {"additive", "dot", "scaled_dot", "general", "cosine"};

/* Inputs of attn_score for `kind` over the caller's buffers. */
static int score_inputs(th_tensor *in, const char *kind, int64_t B, int64_t S, int64_t H, int64_t K, float *q,
                        float *keys, float *w, float *bias, float *v) {
    const int64_t dq[2] = {B, H}, dk[3] = {B, S, K}, dw[2] = {K, H}, db[1] = {K}, dv[2] = {1, K};
    in[0] = th_f32(q, 2, dq);
    in[1] = th_f32(keys, 3, dk);
    in[2] = th_f32(w, 2, dw);
    in[3] = th_f32(bias, 1, db);
    in[4] = th_f32(v, 2, dv);
    return kind_inputs(kind);
}

static const int64_t odd_sizes[3] = {1, 3, 17};

/* attn_score of `kind` on random inputs (one allocation), run by the kernel. */
typedef struct score_case {
    const char *kind;
    int64_t B, S, H, K;
    float *q, *keys, *w, *bias, *v;
    int n_in;
    th_tensor in[5], out[1];
    th_attrs at;
} score_case;

static void score_case_run(score_case *c, const char *kind, int64_t B, int64_t S, int64_t H, int64_t K, uint64_t seed) {
    c->kind = kind;
    c->B = B, c->S = S, c->H = H, c->K = K;
    int64_t n[5] = {B * H, B * S * K, K * H, K, K}, total = 0;
    for (int i = 0; i < 5; i++) total += n[i];
    float *p = malloc(sizeof(float) * (size_t)total), **parts[5] = {&c->q, &c->keys, &c->w, &c->bias, &c->v};
    th_seed(seed);
    th_fill(p, total, -1, 1);
    for (int i = 0; i < 5; i++) {
        *parts[i] = p;
        p += n[i];
    }
    c->n_in = score_inputs(c->in, kind, B, S, H, K, c->q, c->keys, c->w, c->bias, c->v);
    th_attrs_init(&c->at, &cg_op_attn_score);
    th_set_string(&c->at, &cg_op_attn_score, "kind", kind);
    char err[512];
    ck_assert_msg(th_run(&cg_op_attn_score, c->n_in, c->in, &c->at, 1, c->out, err, sizeof err) == CG_OP_OK, "%s: %s",
                  kind, err);
    ck_assert(c->out[0].desc.ndim == 2 && c->out[0].desc.dims[0] == B && c->out[0].desc.dims[1] == S);
}

static void score_case_free(score_case *c) {
    th_free_outputs(1, c->out);
    free(c->q);
}

START_TEST(attn_score_reference) {
    const char *kind = score_kinds[_i];
    int same_width = kind_inputs(kind) == 2;
    int runs = 0;
    for (int64_t B = 1; B <= 3; B += 2)
        for (int si = 0; si < 3; si++)
            for (int hi = 0; hi < 3; hi++)
                for (int ki = 0; ki < 3; ki++) {
                    int64_t S = odd_sizes[si], H = odd_sizes[hi], K = same_width ? H : odd_sizes[ki];
                    if (same_width && ki) continue;
                    score_case c;
                    score_case_run(&c, kind, B, S, H, K, (uint64_t)(1000 * B + 100 * S + 10 * H + K));
                    const float *e = c.out[0].data;
                    for (int64_t b = 0; b < B; b++)
                        for (int64_t s = 0; s < S; s++) {
                            double mag, ref = ref_score(kind, S, H, K, c.q, c.keys, c.w, c.bias, c.v, b, s, &mag);
                            ck_assert_msg(fabs(e[b * S + s] - ref) <= 1e-5 * (1 + mag),
                                          "%s B %lld S %lld H %lld K %lld: e[%lld, %lld] = %.9g, expected %.9g", kind,
                                          (long long)B, (long long)S, (long long)H, (long long)K, (long long)b,
                                          (long long)s, e[b * S + s], ref);
                        }
                    score_case_free(&c);
                    runs++;
                }
    ck_assert_int_ge(runs, 18);
}
END_TEST

/* The cosine score of a zero query is 0 (the denominator's floor). */
START_TEST(attn_score_cosine_zero) {
    float q[3] = {0, 0, 0}, keys[2 * 3] = {1, 2, 3, 0, 0, 0};
    th_tensor in[5], out[1];
    score_inputs(in, "cosine", 1, 2, 3, 3, q, keys, NULL, NULL, NULL);
    th_attrs at;
    th_attrs_init(&at, &cg_op_attn_score);
    th_set_string(&at, &cg_op_attn_score, "kind", "cosine");
    char err[512];
    ck_assert_msg(th_run(&cg_op_attn_score, 2, in, &at, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(((float *)out[0].data)[0] == 0.0f && ((float *)out[0].data)[1] == 0.0f);
    th_free_outputs(1, out);
}
END_TEST

static void check_score_error(const char *kind, int n_in, const th_tensor *in, const char *want) {
    th_attrs at;
    th_attrs_init(&at, &cg_op_attn_score);
    th_set_string(&at, &cg_op_attn_score, "kind", kind);
    th_tensor out[1];
    char err[512];
    ck_assert(th_infer(&cg_op_attn_score, n_in, in, &at, 1, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, want) != NULL, "message '%s', expected '%s'", err, want);
}

START_TEST(attn_score_errors) {
    th_tensor in[5];
    score_inputs(in, "additive", 2, 7, 4, 6, NULL, NULL, NULL, NULL, NULL);
    check_score_error("bilinear", 2, in, "unknown attention kind 'bilinear'");
    check_score_error("dot", 4, in, "kind 'dot' takes 2 inputs (q, keys), or 3 with rows, got 4");
    check_score_error("dot", 3, in, "input 2 (rows) must be i32 [B] with B from input 0 [2, 4], got f32 [6, 4]");
    check_score_error("additive", 2, in,
                      "kind 'additive' takes 5 inputs (q, keys, W_q, b_q, v), or 6 with rows, got 2");
    check_score_error("general", 5, in, "kind 'general' takes 3 inputs (q, keys, W), or 4 with rows, got 5");
    check_score_error("dot", 2, in, "kind 'dot' needs keys as wide as q (K == H), got q [2, 4] and keys [2, 7, 6]");
    check_score_error("cosine", 2, in, "needs keys as wide as q");
    th_tensor bad[5];
    memcpy(bad, in, sizeof bad);
    const int64_t wq[2] = {5, 4};
    bad[2] = th_f32(NULL, 2, wq);
    check_score_error("additive", 5, bad, "input 'W_q' has shape [5, 4], expected [6, 4]");
    const int64_t v[2] = {6, 1};
    memcpy(bad, in, sizeof bad);
    bad[4] = th_f32(NULL, 2, v);
    check_score_error("additive", 5, bad, "input 'v' has shape [6, 1], expected [1, 6]");
    const int64_t w[2] = {6, 5};
    memcpy(bad, in, sizeof bad);
    bad[2] = th_f32(NULL, 2, w);
    check_score_error("general", 3, bad, "input 'W' has shape [6, 5], expected [6, 4]");
    const int64_t k[3] = {3, 7, 4};
    memcpy(bad, in, sizeof bad);
    bad[1] = th_f32(NULL, 3, k);
    check_score_error("dot", 2, bad, "input 'keys' has shape [3, 7, 4], expected [2, ?, ?]");
}
END_TEST

START_TEST(attn_infer_symbolic) {
    th_tensor in[5], out[1];
    char err[512];
    score_inputs(in, "general", CG_DIM_SYM(0), CG_DIM_SYM(1), 16, 32, NULL, NULL, NULL, NULL, NULL);
    in[1].desc.dims[0] = CG_DIM_UNKNOWN;
    th_attrs at;
    th_attrs_init(&at, &cg_op_attn_score);
    th_set_string(&at, &cg_op_attn_score, "kind", "general");
    ck_assert_msg(th_infer(&cg_op_attn_score, 3, in, &at, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(out[0].desc.ndim == 2 && out[0].desc.dims[0] == CG_DIM_SYM(0) && out[0].desc.dims[1] == CG_DIM_SYM(1));
    /* dot with a symbolic key width */
    score_inputs(in, "dot", 2, 5, 16, CG_DIM_SYM(2), NULL, NULL, NULL, NULL, NULL);
    th_set_string(&at, &cg_op_attn_score, "kind", "dot");
    ck_assert_msg(th_infer(&cg_op_attn_score, 2, in, &at, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);

    const int64_t da[2] = {CG_DIM_SYM(0), CG_DIM_SYM(1)}, dv[3] = {CG_DIM_UNKNOWN, CG_DIM_SYM(1), 24};
    in[0] = th_f32(NULL, 2, da);
    in[1] = th_f32(NULL, 3, dv);
    ck_assert_msg(th_infer(&cg_op_attn_context, 2, in, NULL, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(out[0].desc.ndim == 2 && out[0].desc.dims[0] == CG_DIM_SYM(0) && out[0].desc.dims[1] == 24);
}
END_TEST

/* c [B, K] against the double-precision sum over s of w[b, s] values[b, s, :]. */
static void check_context(const char *what, const float *c, const float *w, const float *values, int64_t B, int64_t S,
                          int64_t K) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t k = 0; k < K; k++) {
            double ref = 0, mag = 0;
            for (int64_t s = 0; s < S; s++) {
                ref += (double)w[b * S + s] * values[(b * S + s) * K + k];
                mag += fabs((double)w[b * S + s] * values[(b * S + s) * K + k]);
            }
            if (fabs(c[b * K + k] - ref) > 1e-5 * (1 + mag))
                ck_abort_msg("%s B %lld S %lld K %lld: c[%lld, %lld] = %.9g, expected %.9g", what, (long long)B,
                             (long long)S, (long long)K, (long long)b, (long long)k, c[b * K + k], ref);
        }
}

START_TEST(attn_context_reference) {
    for (int64_t B = 1; B <= 3; B += 2)
        for (int si = 0; si < 3; si++)
            for (int ki = 0; ki < 3; ki++) {
                int64_t S = odd_sizes[si], K = odd_sizes[ki];
                th_seed((uint64_t)(100 * B + 10 * S + K));
                float *w = malloc(sizeof(float) * (size_t)(B * S));
                float *values = malloc(sizeof(float) * (size_t)(B * S * K));
                th_fill(w, B * S, 0, 1);
                th_fill(values, B * S * K, -1, 1);
                const int64_t dw[2] = {B, S}, dv[3] = {B, S, K};
                th_tensor in[2] = {th_f32(w, 2, dw), th_f32(values, 3, dv)}, out[1];
                char err[512];
                ck_assert_msg(th_run(&cg_op_attn_context, 2, in, NULL, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);
                ck_assert(out[0].desc.ndim == 2 && out[0].desc.dims[0] == B && out[0].desc.dims[1] == K);
                check_context("context", out[0].data, w, values, B, S, K);
                th_free_outputs(1, out);
                free(w);
                free(values);
            }
}
END_TEST

/* With rows, batch row b reads keys (values) row rows[b] of N: against the
 * naive references on keys gathered by hand, for every kind; B = 5 rows over
 * N = 3 keys rows, one of them read by no row. */
START_TEST(attn_rows_reference) {
    const char *kind = score_kinds[_i];
    const int64_t B = 5, N = 3, S = 7, H = 6, K = kind_inputs(kind) == 2 ? H : 4;
    int32_t rows[5] = {2, 0, 2, 2, 0};
    score_case c;
    score_case_run(&c, kind, N, S, H, K, 77 + (uint64_t)_i); /* keys [N, S, K] */
    float *q = malloc(sizeof(float) * (size_t)(B * H));
    float *gathered = malloc(sizeof(float) * (size_t)(B * S * K));
    th_fill(q, B * H, -1, 1);
    for (int64_t b = 0; b < B; b++)
        memcpy(gathered + b * S * K, c.keys + rows[b] * S * K, sizeof(float) * (size_t)(S * K));
    const int64_t dq[2] = {B, H}, dr[1] = {B};
    th_tensor in[6];
    memcpy(in, c.in, sizeof(th_tensor) * 5);
    in[0] = th_f32(q, 2, dq);
    in[c.n_in] = th_i32(rows, 1, dr);
    th_tensor out[1];
    char err[512];
    ck_assert_msg(th_run(&cg_op_attn_score, c.n_in + 1, in, &c.at, 1, out, err, sizeof err) == CG_OP_OK, "%s: %s", kind,
                  err);
    ck_assert(out[0].desc.ndim == 2 && out[0].desc.dims[0] == B && out[0].desc.dims[1] == S);
    const float *e = out[0].data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            double mag, ref = ref_score(kind, S, H, K, q, gathered, c.w, c.bias, c.v, b, s, &mag);
            ck_assert_msg(fabs(e[b * S + s] - ref) <= 1e-5 * (1 + mag),
                          "%s with rows: e[%lld, %lld] = %.9g, expected %.9g", kind, (long long)b, (long long)s,
                          e[b * S + s], ref);
        }
    th_free_outputs(1, out);
    /* A row outside [0, N) is a clear run-time error on the CPU. */
    rows[3] = 3;
    ck_assert(th_run(&cg_op_attn_score, c.n_in + 1, in, &c.at, 1, out, err, sizeof err) == CG_OP_ERROR);
    th_free_outputs(1, out);
    ck_assert_msg(strstr(err, "(rows) holds 3 at position 3, outside [0, 2]"), "%s", err);
    rows[3] = 2;

    /* attn_context over the same keys as values. */
    float *a = malloc(sizeof(float) * (size_t)(B * S));
    th_fill(a, B * S, 0, 1);
    const int64_t da[2] = {B, S}, dv[3] = {N, S, K};
    th_tensor cin[3] = {th_f32(a, 2, da), th_f32(c.keys, 3, dv), th_i32(rows, 1, dr)};
    ck_assert_msg(th_run(&cg_op_attn_context, 3, cin, NULL, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);
    ck_assert(out[0].desc.ndim == 2 && out[0].desc.dims[0] == B && out[0].desc.dims[1] == K);
    check_context("context with rows", out[0].data, a, gathered, B, S, K);
    th_free_outputs(1, out);
    rows[0] = -1;
    ck_assert(th_run(&cg_op_attn_context, 3, cin, NULL, 1, out, err, sizeof err) == CG_OP_ERROR);
    th_free_outputs(1, out);
    ck_assert_msg(strstr(err, "(rows) holds -1 at position 0, outside [0, 2]"), "%s", err);
    /* rows must be i32 [B] with q's (a's) B */
    const int64_t dr4[1] = {4};
    cin[2] = th_i32(rows, 1, dr4);
    ck_assert(th_infer(&cg_op_attn_context, 3, cin, NULL, 1, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 2 (rows) must be i32 [B] with B from input 0 [5, 7], got i32 [4]"), "%s", err);
    free(a);
    free(q);
    free(gathered);
    score_case_free(&c);
}
END_TEST

START_TEST(attn_context_errors) {
    const int64_t da[2] = {2, 5}, dv[3] = {2, 6, 3}, da3[3] = {2, 5, 1};
    th_tensor in[2] = {th_f32(NULL, 2, da), th_f32(NULL, 3, dv)}, out[1];
    char err[512];
    ck_assert(th_infer(&cg_op_attn_context, 2, in, NULL, 1, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'values' has shape [2, 6, 3], expected [2, 5, ?]"), "%s", err);
    in[0] = th_f32(NULL, 3, da3);
    ck_assert(th_infer(&cg_op_attn_context, 2, in, NULL, 1, out, err, sizeof err) == CG_OP_ERROR);
    ck_assert_msg(strstr(err, "input 'a' has shape [2, 5, 1], expected [?, ?]"), "%s", err);
}
END_TEST

/* ---- decompositions, run by a small evaluator of the emitted ops ---- */

#define EV_MAX 256

typedef struct ev_value {
    int ndim;
    int64_t dims[CG_MAX_DIMS];
    float *data;
} ev_value;

struct cg_decomp {
    const th_tensor *inputs;
    int n;
    ev_value v[EV_MAX];
    int32_t outputs[4];
    char msg[256];
};

static int64_t ev_numel(const ev_value *x) {
    int64_t n = 1;
    for (int i = 0; i < x->ndim; i++) n *= x->dims[i];
    return n;
}

static int32_t ev_new(cg_decomp *d, int ndim, const int64_t *dims) {
    ck_assert(d->n < EV_MAX);
    ev_value *x = &d->v[d->n];
    x->ndim = ndim;
    memcpy(x->dims, dims, sizeof(int64_t) * (size_t)ndim);
    int64_t n = ev_numel(x);
    x->data = calloc((size_t)(n ? n : 1), sizeof(float));
    return d->n++;
}

static int32_t ev_input(cg_decomp *d, int32_t i) {
    const th_tensor *t = &d->inputs[i];
    int32_t id = ev_new(d, t->desc.ndim, t->desc.dims);
    memcpy(d->v[id].data, t->data, sizeof(float) * (size_t)ev_numel(&d->v[id]));
    return id;
}

/* Attribute `key` of IR text like "axis: 1, shape: [0, 1, -1]": the start
 * of its value, or NULL. */
static const char *ev_attr(const char *attrs, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = attrs; p && (p = strstr(p, key)) != NULL; p += kl)
        if ((p == attrs || p[-1] == ' ' || p[-1] == ',') && p[kl] == ':') return p + kl + 1;
    return NULL;
}

static double ev_num(const char *attrs, const char *key, double def) {
    const char *p = ev_attr(attrs, key);
    return p ? strtod(p, NULL) : def;
}

static int ev_ints(const char *attrs, const char *key, int64_t *out) {
    const char *p = ev_attr(attrs, key);
    ck_assert_msg(p != NULL, "attribute %s missing in '%s'", key, attrs);
    while (*p == ' ') p++;
    ck_assert(*p == '[');
    int n = 0;
    for (p++; *p && *p != ']';) {
        char *end;
        out[n++] = strtoll(p, &end, 10);
        p = end;
        while (*p == ',' || *p == ' ') p++;
    }
    return n;
}

static double ev_apply(const char *op, double a, double b) {
    if (strcmp(op, "add") == 0) return a + b;
    if (strcmp(op, "sub") == 0) return a - b;
    if (strcmp(op, "mul") == 0) return a * b;
    if (strcmp(op, "div") == 0) return a / b;
    return a > b ? a : b; /* maximum */
}

static int32_t ev_binary(cg_decomp *d, const char *op, int32_t ia, int32_t ib) {
    const ev_value a = d->v[ia], b = d->v[ib];
    int nd = a.ndim > b.ndim ? a.ndim : b.ndim;
    int64_t dims[CG_MAX_DIMS], sa[CG_MAX_DIMS], sb[CG_MAX_DIMS];
    int64_t stride_a = 1, stride_b = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int xa = a.ndim - nd + i, xb = b.ndim - nd + i;
        int64_t da = xa >= 0 ? a.dims[xa] : 1, db = xb >= 0 ? b.dims[xb] : 1;
        ck_assert_msg(da == db || da == 1 || db == 1, "%s: dims do not broadcast", op);
        dims[i] = da > db ? da : db;
        sa[i] = da == 1 ? 0 : stride_a;
        sb[i] = db == 1 ? 0 : stride_b;
        stride_a *= da;
        stride_b *= db;
    }
    int32_t id = ev_new(d, nd, dims);
    ev_value *o = &d->v[id];
    for (int64_t f = 0, n = ev_numel(o); f < n; f++) {
        int64_t rest = f, oa = 0, ob = 0;
        for (int i = nd - 1; i >= 0; i--) {
            int64_t idx = rest % dims[i];
            rest /= dims[i];
            oa += idx * sa[i];
            ob += idx * sb[i];
        }
        o->data[f] = (float)ev_apply(op, a.data[oa], b.data[ob]);
    }
    return id;
}

static cg_op_status ev_node(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out, int32_t *out,
                            const char *attrs) {
    ck_assert_int_eq(n_out, 1);
    for (int i = 0; i < n_in; i++) ck_assert(in[i] >= 0 && in[i] < d->n);
    const ev_value *x = &d->v[in[0]];
    int32_t id;
    if (!strcmp(op, "add") || !strcmp(op, "sub") || !strcmp(op, "mul") || !strcmp(op, "div") ||
        !strcmp(op, "maximum")) {
        ck_assert_int_eq(n_in, 2);
        id = ev_binary(d, op, in[0], in[1]);
    } else if (!strcmp(op, "sigmoid") || !strcmp(op, "tanh") || !strcmp(op, "sqrt") || !strcmp(op, "affine")) {
        ck_assert_int_eq(n_in, 1);
        double alpha = ev_num(attrs, "alpha", 1.0), beta = ev_num(attrs, "beta", 0.0);
        id = ev_new(d, x->ndim, x->dims);
        x = &d->v[in[0]];
        for (int64_t i = 0, n = ev_numel(x); i < n; i++) {
            double t = x->data[i];
            double r = !strcmp(op, "sigmoid") ? 1 / (1 + exp(-t))
                       : !strcmp(op, "tanh")  ? tanh(t)
                       : !strcmp(op, "sqrt")  ? sqrt(t)
                                              : alpha * t + beta;
            d->v[id].data[i] = (float)r;
        }
    } else if (!strcmp(op, "linear") || !strcmp(op, "matmul")) {
        /* linear(x [M, K], w [N, K], b [N]); matmul of 2-D operands. */
        const ev_value *w = &d->v[in[1]];
        int lin = op[0] == 'l';
        int ta = lin ? 0 : (int)ev_num(attrs, "transpose_a", 0), tb = lin ? 1 : (int)ev_num(attrs, "transpose_b", 0);
        ck_assert(x->ndim == 2 && w->ndim == 2 && n_in == (lin ? 3 : 2));
        int64_t M = ta ? x->dims[1] : x->dims[0], K = ta ? x->dims[0] : x->dims[1];
        int64_t N = tb ? w->dims[0] : w->dims[1];
        ck_assert_int_eq(K, tb ? w->dims[1] : w->dims[0]);
        const int64_t dims[2] = {M, N};
        id = ev_new(d, 2, dims);
        x = &d->v[in[0]];
        w = &d->v[in[1]];
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = lin ? d->v[in[2]].data[n] : 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x->data[ta ? k * M + m : m * K + k] * w->data[tb ? n * K + k : k * N + n];
                d->v[id].data[m * N + n] = (float)acc;
            }
    } else if (!strcmp(op, "slice")) {
        int axis = (int)ev_num(attrs, "axis", -99);
        int64_t start = (int64_t)ev_num(attrs, "start", -1), end = (int64_t)ev_num(attrs, "end", -1);
        ck_assert(axis >= 0 && axis < x->ndim && 0 <= start && start <= end && end <= x->dims[axis]);
        int64_t dims[CG_MAX_DIMS], outer = 1, inner = 1;
        memcpy(dims, x->dims, sizeof dims);
        dims[axis] = end - start;
        for (int i = 0; i < axis; i++) outer *= x->dims[i];
        for (int i = axis + 1; i < x->ndim; i++) inner *= x->dims[i];
        id = ev_new(d, x->ndim, dims);
        x = &d->v[in[0]];
        for (int64_t o = 0; o < outer; o++)
            memcpy(d->v[id].data + o * (end - start) * inner, x->data + (o * x->dims[axis] + start) * inner,
                   sizeof(float) * (size_t)((end - start) * inner));
    } else if (!strcmp(op, "reshape")) {
        int64_t dims[CG_MAX_DIMS], known = 1;
        int n = ev_ints(attrs, "shape", dims), infer = -1;
        for (int i = 0; i < n; i++) {
            if (dims[i] == 0) dims[i] = x->dims[i];
            if (dims[i] == -1) infer = i;
            else known *= dims[i];
        }
        if (infer >= 0) dims[infer] = ev_numel(x) / known;
        id = ev_new(d, n, dims);
        x = &d->v[in[0]];
        ck_assert_int_eq(ev_numel(&d->v[id]), ev_numel(x));
        memcpy(d->v[id].data, x->data, sizeof(float) * (size_t)ev_numel(x));
    } else if (!strcmp(op, "reduce_sum")) {
        int64_t axes[CG_MAX_DIMS];
        ck_assert_int_eq(ev_ints(attrs, "axes", axes), 1);
        int axis = (int)axes[0], keep = (int)ev_num(attrs, "keepdims", 1);
        int64_t dims[CG_MAX_DIMS], outer = 1, inner = 1, n = x->dims[axis];
        int nd = 0;
        for (int i = 0; i < x->ndim; i++) {
            if (i < axis) outer *= x->dims[i];
            if (i > axis) inner *= x->dims[i];
            if (i != axis) dims[nd++] = x->dims[i];
            else if (keep) dims[nd++] = 1;
        }
        id = ev_new(d, nd, dims);
        x = &d->v[in[0]];
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < inner; j++) {
                double acc = 0;
                for (int64_t k = 0; k < n; k++) acc += x->data[(o * n + k) * inner + j];
                d->v[id].data[o * inner + j] = (float)acc;
            }
    } else {
        snprintf(d->msg, sizeof d->msg, "evaluator: op %s not supported", op);
        return CG_OP_ERROR;
    }
    out[0] = id;
    return CG_OP_OK;
}

static cg_op_status ev_output(cg_decomp *d, int32_t i, int32_t v) {
    ck_assert(i >= 0 && i < 4 && v >= 0 && v < d->n);
    d->outputs[i] = v;
    return CG_OP_OK;
}

static const cg_host_api ev_host = {
    .struct_size = sizeof(cg_host_api),
    .abi_major = CG_PLUGIN_ABI_MAJOR,
    .abi_minor = CG_PLUGIN_ABI_MINOR,
    .decomp_input = ev_input,
    .decomp_node = ev_node,
    .decomp_output = ev_output,
};

/* Decomposes `def` on the given inputs and checks every output against the
 * kernel's (which must already be in `want`). The call shows the inputs in
 * `sym_inputs` (a bit mask) with symbolic dims, as a plan may. */
static void check_decomposition(const cg_op_def *def, int n_in, const th_tensor *in, const th_attrs *at, int n_out,
                                const th_tensor *want, double tol, unsigned sym_inputs) {
    cg_decomp *d = calloc(1, sizeof *d);
    d->inputs = in;
    for (int i = 0; i < 4; i++) d->outputs[i] = -1;
    cg_tensor_desc ind[16], outd[4];
    for (int i = 0; i < n_in; i++) {
        ind[i] = in[i].desc;
        if (sym_inputs >> i & 1)
            for (int k = 0; k < ind[i].ndim; k++) ind[i].dims[k] = CG_DIM_SYM(k);
    }
    for (int i = 0; i < n_out; i++) outd[i] = want[i].desc;
    char err[256] = "";
    cg_op_call call = {sizeof call,
                       def->name,
                       n_in,
                       n_out,
                       ind,
                       outd,
                       at ? at->v : NULL,
                       err,
                       sizeof err,
                       &ev_host,
                       sizeof(cg_attr_value),
                       sizeof(cg_tensor_desc)};
    cg_op_status st = def->decompose(d, &call);
    ck_assert_msg(st == CG_OP_OK, "%s decomposition failed: %s %s", def->name, err, d->msg);
    for (int i = 0; i < n_out; i++) {
        ck_assert_msg(d->outputs[i] >= 0, "%s decomposition left output %d unset", def->name, i);
        const ev_value *v = &d->v[d->outputs[i]];
        cg_tensor_desc got = {CG_OP_F32, v->ndim, {0}};
        memcpy(got.dims, v->dims, sizeof v->dims);
        assert_same_shape(&got, &want[i].desc, def->name);
        double diff = th_max_abs_diff(v->data, want[i].data, ev_numel(v));
        ck_assert_msg(diff <= tol, "%s decomposition output %d differs by %g", def->name, i, diff);
    }
    for (int i = 0; i < d->n; i++) free(d->v[i].data);
    free(d);
}

START_TEST(decompose_cells) {
    const char *const files[2] = {"gru_cell_b3.bin", "lstm_cell_b3.bin"};
    for (int c = 0; c < 2; c++) {
        golden g;
        golden_load(&g, files[c]);
        const int32_t *cfg = g.t[0].data;
        int n_out = cfg[3], n_in = g.n - 1 - n_out;
        const cg_op_def *def = c ? &cg_op_lstm_cell : &cg_op_gru_cell;
        check_decomposition(def, n_in, g.t + 1, NULL, n_out, g.t + 1 + n_in, GOLDEN_TOL, 0);
        /* x, h (and c) symbolic: the hidden size comes from the weights. */
        check_decomposition(def, n_in, g.t + 1, NULL, n_out, g.t + 1 + n_in, GOLDEN_TOL, c ? 7u : 3u);
        free(g.buf);
    }
}
END_TEST

START_TEST(decompose_attention) {
    const int64_t B = 3, S = 17, H = 3;
    for (int k = 0; k < 5; k++) {
        score_case c;
        score_case_run(&c, score_kinds[k], B, S, H, kind_inputs(score_kinds[k]) == 2 ? H : 17, (uint64_t)k + 99);
        check_decomposition(&cg_op_attn_score, c.n_in, c.in, &c.at, 1, c.out, 1e-5, 0);
        check_decomposition(&cg_op_attn_score, c.n_in, c.in, &c.at, 1, c.out, 1e-5, 1u); /* q symbolic */
        score_case_free(&c);
    }
    float a[3 * 17], values[3 * 17 * 5];
    th_fill(a, B * S, 0, 1);
    th_fill(values, B * S * 5, -1, 1);
    const int64_t da[2] = {B, S}, dv[3] = {B, S, 5};
    th_tensor in[2] = {th_f32(a, 2, da), th_f32(values, 3, dv)}, out[1];
    char err[512];
    ck_assert_msg(th_run(&cg_op_attn_context, 2, in, NULL, 1, out, err, sizeof err) == CG_OP_OK, "%s", err);
    check_decomposition(&cg_op_attn_context, 2, in, NULL, 1, out, 1e-5, 3u);
    th_free_outputs(1, out);
}
END_TEST

/* ---- op definitions ---- */

START_TEST(op_definitions) {
    const cg_op_def *defs[] = {&cg_op_gru_cell, &cg_op_lstm_cell,  &cg_op_gru,
                               &cg_op_lstm,     &cg_op_attn_score, &cg_op_attn_context};
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        const cg_op_def *d = defs[i];
        ck_assert(d->struct_size == sizeof(cg_op_def));
        ck_assert_msg(d->doc && strlen(d->doc) > 100, "%s needs documentation", d->name);
        ck_assert(d->infer && d->n_kernels == 2 && d->kernels[0].backend == CG_BACKEND_CPU &&
                  d->kernels[1].backend == CG_BACKEND_OPENCL);
        ck_assert_msg(d->conform_case != NULL, "%s has no conformance cases", d->name);
        ck_assert(d->min_inputs >= 2 && d->min_outputs == 1);
    }
    ck_assert(cg_op_attn_score.min_inputs == 2 && cg_op_attn_score.max_inputs == 6);
    ck_assert(cg_op_attn_context.min_inputs == 2 && cg_op_attn_context.max_inputs == 3);
    ck_assert(cg_op_gru_cell.decompose && cg_op_lstm_cell.decompose);
    ck_assert(cg_op_attn_score.decompose && cg_op_attn_context.decompose);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_rnn");
    TCase *tc = tcase_create("rnn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, golden_gru_cell);
    tcase_add_test(tc, golden_lstm_cell);
    tcase_add_test(tc, golden_gru);
    tcase_add_test(tc, golden_lstm);
    tcase_add_test(tc, gru_batch_rows);
    tcase_add_test(tc, lstm_batch_rows);
    tcase_add_test(tc, seq_empty);
    tcase_add_test(tc, seq_bad_lengths);
    tcase_add_test(tc, seq_weight_errors);
    tcase_add_test(tc, seq_infer_errors);
    tcase_add_test(tc, seq_infer_symbolic);
    tcase_add_test(tc, seq_initial_states);
    tcase_add_test(tc, seq_initial_errors);
    tcase_add_test(tc, cell_errors);
    tcase_add_test(tc, cell_infer_symbolic);
    suite_add_tcase(s, tc);

    TCase *ta = tcase_create("attention");
    tcase_set_timeout(ta, 120);
    tcase_add_loop_test(ta, attn_score_reference, 0, 5);
    tcase_add_test(ta, attn_score_cosine_zero);
    tcase_add_test(ta, attn_score_errors);
    tcase_add_test(ta, attn_infer_symbolic);
    tcase_add_test(ta, attn_context_reference);
    tcase_add_test(ta, attn_context_errors);
    tcase_add_loop_test(ta, attn_rows_reference, 0, 5);
    suite_add_tcase(s, ta);

    TCase *td = tcase_create("definitions");
    tcase_set_timeout(td, 120);
    tcase_add_test(td, decompose_cells);
    tcase_add_test(td, decompose_attention);
    tcase_add_test(td, op_definitions);
    suite_add_tcase(s, td);

    return tu_run_suite(s, 0);
}
