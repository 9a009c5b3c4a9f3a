/* The one place a seq2seq model's graphs are searched by name: the
 * encoder's and decoders' inputs and outputs become positions, and what the
 * configuration needs is checked (the error names the missing one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ir.h"
#include "s2s_iface.h"

int cg_s2s_input_pos(const cg_graph *g, const char *name) {
    for (int k = 0; k < cg_graph_input_count(g); k++)
        if (!strcmp(cg_graph_input_name(g, k), name)) return k;
    return -1;
}

int cg_s2s_output_pos(const cg_graph *g, const char *name) {
    for (int k = 0; k < cg_graph_output_count(g); k++)
        if (!strcmp(cg_graph_output_name(g, k), name)) return k;
    return -1;
}

/* A name with a layer number: "h%d", "s0_%d", ... (an int never fills it). */
static const char *layer_name(char buf[64], const char *fmt, int l) {
    snprintf(buf, 64, fmt, l);
    return buf;
}

/* A recurrent state input: h<digits>, c<digits> or htilde (carried from
 * <name>_new). */
int cg_s2s_is_state_name(const char *name) {
    if (!strcmp(name, "htilde")) return 1;
    if ((name[0] != 'h' && name[0] != 'c') || !name[1]) return 0;
    for (const char *q = name + 1; *q; q++)
        if (*q < '0' || *q > '9') return 0;
    return 1;
}

/* The layer of an encoder output named s0_<l>, l < L in decimal digits
 * only; else -1. */
static int s0_layer(const char *nm, int L) {
    if (strncmp(nm, "s0_", 3) || !nm[3]) return -1;
    long long l = 0;
    for (const char *q = nm + 3; *q; q++) {
        if (*q < '0' || *q > '9') return -1;
        l = l * 10 + (*q - '0');
        if (l >= L) return -1; /* also stops before l could overflow */
    }
    return (int)l;
}

static cg_status missing(const char *file, const cg_graph *g, int out, const char *name) {
    return cg_error(CG_ERR_VERIFY, "%s: graph '%s' needs an %s named '%s' for this configuration", file,
                    cg_graph_name(g), out ? "output" : "input", name);
}

/* Requires position p (of `name`) to exist. */
#define NEED(P, G, OUT, NAME) (st = st ? st : (P) >= 0 ? CG_OK : missing(file, (G), (OUT), (NAME)))

static cg_status resolve_encoder(const cg_graph *e, const s2s_config *c, const char *file, s2s_enc_iface *x) {
    const int L = c->decoder_layers;
    x->s0 = malloc(sizeof *x->s0 * ((size_t)L + 1));
    if (!x->s0) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    for (int l = 0; l < L; l++) x->s0[l] = -1;
    x->src = cg_s2s_input_pos(e, "src");
    x->src_len = cg_s2s_input_pos(e, "src_len");
    x->n_out = cg_graph_output_count(e);
    x->keys = cg_s2s_output_pos(e, "keys");
    x->kproj = cg_s2s_output_pos(e, "keys_proj");
    for (int k = 0, l; k < x->n_out; k++)
        if ((l = s0_layer(cg_graph_output_name(e, k), L)) >= 0) x->s0[l] = k;
    cg_status st = CG_OK;
    NEED(x->src, e, 0, "src");
    NEED(x->src_len, e, 0, "src_len");
    NEED(x->keys, e, 1, "keys");
    if (c->attention == S2S_ADDITIVE) NEED(x->kproj, e, 1, "keys_proj");
    char nm[64];
    /* s0_<l> spelt so is required; other spellings of l (s0_01) are read */
    for (int l = 0; c->bridge_dense && l < L; l++) NEED(cg_s2s_output_pos(e, layer_name(nm, "s0_%d", l)), e, 1, nm);
    return st;
}

static cg_status dec_alloc(const cg_graph *g, int L, s2s_dec_iface *x) {
    size_t nl = (size_t)L + 1;
    x->n_in = cg_graph_input_count(g);
    x->n_out = cg_graph_output_count(g);
    x->h = malloc(nl * sizeof *x->h);
    x->c = malloc(nl * sizeof *x->c);
    x->h_new = malloc(nl * sizeof *x->h_new);
    x->c_new = malloc(nl * sizeof *x->c_new);
    x->state = calloc((size_t)x->n_in + 1, 1);
    x->state_out = calloc((size_t)x->n_out + 1, 1);
    if (!x->h || !x->c || !x->h_new || !x->c_new || !x->state || !x->state_out)
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    return CG_OK;
}

/* Every position of a decoder graph, whatever the configuration needs. */
static cg_status find_decoder(const cg_graph *g, int L, s2s_dec_iface *x) {
    cg_status st = dec_alloc(g, L, x);
    if (st) return st;
    x->y = cg_s2s_input_pos(g, "y_prev");
    x->keys = cg_s2s_input_pos(g, "keys");
    x->kproj = cg_s2s_input_pos(g, "keys_proj");
    x->len = cg_s2s_input_pos(g, "src_len");
    x->pos = cg_s2s_input_pos(g, "pos");
    x->htilde = cg_s2s_input_pos(g, "htilde");
    x->parent = cg_s2s_input_pos(g, "parent");
    x->sent = cg_s2s_input_pos(g, "sentence");
    x->logp = cg_s2s_output_pos(g, "logp");
    x->top_v = cg_s2s_output_pos(g, "top_logp");
    x->top_i = cg_s2s_output_pos(g, "top_id");
    x->a = cg_s2s_output_pos(g, "a");
    x->htilde_new = cg_s2s_output_pos(g, "htilde_new");
    char nm[64];
    for (int l = 0; l < L; l++) {
        x->h[l] = cg_s2s_input_pos(g, layer_name(nm, "h%d", l));
        x->c[l] = cg_s2s_input_pos(g, layer_name(nm, "c%d", l));
        x->h_new[l] = cg_s2s_output_pos(g, layer_name(nm, "h%d_new", l));
        x->c_new[l] = cg_s2s_output_pos(g, layer_name(nm, "c%d_new", l));
        if (x->h_new[l] >= 0) x->state_out[x->h_new[l]] = 1;
        if (x->c_new[l] >= 0) x->state_out[x->c_new[l]] = 1;
    }
    if (x->htilde_new >= 0) x->state_out[x->htilde_new] = 1;
    for (int k = 0; k < x->n_in; k++) x->state[k] = (unsigned char)cg_s2s_is_state_name(cg_graph_input_name(g, k));
    return CG_OK;
}

/* What the configuration needs of a decoder graph, in the order errors
 * are reported. */
static cg_status check_decoder(const cg_graph *g, const s2s_config *c, const char *file, const s2s_dec_iface *x) {
    cg_status st = CG_OK;
    char nm[64];
    NEED(x->y, g, 0, "y_prev");
    /* A model.cg without them is converted at load (s2s_upgrade.c). */
    NEED(x->parent, g, 0, "parent");
    if (x->keys >= 0 || x->kproj >= 0 || x->len >= 0) NEED(x->sent, g, 0, "sentence");
    if (c->attention != S2S_NONE) {
        NEED(x->keys, g, 0, "keys");
        NEED(x->len, g, 0, "src_len");
        NEED(x->a, g, 1, "a");
        if (c->attention == S2S_ADDITIVE) NEED(x->kproj, g, 0, "keys_proj");
        if (c->local == S2S_LOCAL_MONOTONIC) NEED(x->pos, g, 0, "pos");
        if (c->luong) {
            NEED(x->htilde, g, 0, "htilde");
            NEED(x->htilde_new, g, 1, "htilde_new");
        }
    }
    for (int l = 0; l < c->decoder_layers; l++) {
        NEED(x->h[l], g, 0, layer_name(nm, "h%d", l));
        NEED(x->h_new[l], g, 1, layer_name(nm, "h%d_new", l));
        if (c->cell == S2S_LSTM) {
            NEED(x->c[l], g, 0, layer_name(nm, "c%d", l));
            NEED(x->c_new[l], g, 1, layer_name(nm, "c%d_new", l));
        }
    }
    return st;
}

/* The decoder step outputs either logp [B, V] or top_logp f32 [B, k] and
 * top_id i32 [B, k] with a fixed k. */
static cg_status check_outputs(const cg_graph *d, const char *file, s2s_dec_iface *x) {
    if (x->logp >= 0) return CG_OK;
    if (x->top_v < 0 || x->top_i < 0)
        return cg_error(CG_ERR_VERIFY,
                        "%s: graph 'decoder' needs an output named 'logp', or outputs named "
                        "'top_logp' and 'top_id'",
                        file);
    const cg_value *tv = &d->values[d->outputs[x->top_v]], *ti = &d->values[d->outputs[x->top_i]];
    int ok = tv->dtype == CG_F32 && ti->dtype == CG_I32 && tv->ndim == 2 && ti->ndim == 2 &&
             tv->dims[1] == ti->dims[1] && tv->dims[1] > 0;
    if (!ok)
        return cg_error(CG_ERR_VERIFY,
                        "%s: graph 'decoder': outputs top_logp and top_id must be f32 [B, k] and "
                        "i32 [B, k] with the same fixed k > 0",
                        file);
    x->top_k = (int)tv->dims[1];
    return CG_OK;
}

cg_status cg_s2s_iface_resolve(const cg_model *model, const s2s_config *c, const char *file, s2s_iface *out) {
    memset(out, 0, sizeof *out);
    const cg_graph *e = cg_model_graph(model, "encoder"), *d = cg_model_graph(model, "decoder"),
                   *dl = cg_model_graph(model, "decoder_logp");
    if (!e || !d) return cg_error(CG_ERR_VERIFY, "%s: a seq2seq model needs graphs 'encoder' and 'decoder'", file);
    cg_status st = resolve_encoder(e, c, file, &out->enc);
    if (!st) st = find_decoder(d, c->decoder_layers, &out->dec);
    if (!st) st = check_decoder(d, c, file, &out->dec);
    if (!st && dl) st = find_decoder(dl, c->decoder_layers, &out->dec_logp);
    if (!st && dl) st = check_decoder(dl, c, file, &out->dec_logp);
    if (!st && dl) NEED(out->dec_logp.logp, dl, 1, "logp");
    if (!st) st = check_outputs(d, file, &out->dec);
    if (!st && cg_graph_input_count(e) != 2)
        st = cg_error(CG_ERR_VERIFY, "%s: graph 'encoder' must take exactly the inputs src and src_len", file);
    return st;
}
#undef NEED

static void dec_free(s2s_dec_iface *x) {
    free(x->h);
    free(x->c);
    free(x->h_new);
    free(x->c_new);
    free(x->state);
    free(x->state_out);
}

void cg_s2s_iface_free(s2s_iface *x) {
    if (!x) return;
    free(x->enc.s0);
    dec_free(&x->dec);
    dec_free(&x->dec_logp);
    memset(x, 0, sizeof *x);
}
