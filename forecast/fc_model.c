/* Loading a forecasting model directory: configuration, weights, graph step
 * (model.cg or the builder's) and its plan, the state carried run to run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fc_internal.h"
#include "model_dir.h"
#include "weights.h"

/* The last layer of a configuration, looked for before anything of the
 * layers' size is built: its input matrix in the weights (builder) or its
 * state input in graph 'step' (model.cg). "layers": 1000000 took 30 s and
 * 2 GB, 10^8 over a minute, before layer 1 was named missing (issue 29). */
static cg_status last_layer_present(const fc_config *c, cg_weights *w, const char *cfg, cg_model *model,
                                    const char *cgp) {
    if (c->layers <= 1) return CG_OK;
    char name[64];
    if (model) {
        cg_graph *g = cg_model_graph(model, "step");
        snprintf(name, sizeof name, "h%d", c->layers - 1);
        return g ? cg_graph_need_io(cgp, g, 0, name) : CG_OK;
    }
    snprintf(name, sizeof name, "rnn.weight_ih_l%d", c->layers - 1);
    if (cg_weights_find(w, name) < 0)
        return cg_error(CG_ERR_NOT_FOUND, "%s: tensor '%s' is missing (%s says layers %d)", cg_weights_path(w), name,
                        cfg, c->layers);
    return CG_OK;
}

cg_status cg_forecast_graph_text(const char *dir, char **out) {
    if (!dir || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_forecast_graph_text: NULL argument");
    *out = NULL;
    char *cgp = cg_path_join(dir, "model.cg"), *cfgp = cg_path_join(dir, "config.json");
    cg_status st = cgp && cfgp ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st && cg_path_exists(cgp)) {
        st = cg_read_text_file(cgp, out);
    } else if (!st) {
        fc_config c;
        cg_weights *w = NULL;
        char *wp = cg_path_join(dir, "weights.safetensors");
        st = wp ? cg_fc_config_read(cfgp, &c) : cg_error(CG_ERR_NO_MEMORY, "out of memory");
        if (!st) {
            st = cg_weights_open(wp, &w);
            if (!st) st = last_layer_present(&c, w, cfgp, NULL, NULL);
            if (!st) st = cg_fc_build_text(&c, out);
            cg_fc_config_free(&c);
        }
        cg_weights_free(w);
        free(wp);
    }
    free(cgp);
    free(cfgp);
    return st;
}

void cg_forecast_free(cg_forecaster *m) {
    if (!m) return;
    cg_plan_free(m->plan);
    cg_model_free(m->model);
    cg_weights_free(m->weights);
    cg_fc_config_free(&m->cfg);
    free(m->dir);
    free(m);
}

cg_status cg_fc_state_names(const fc_config *c, char ***names, int *n) {
    int att = c->attention != FC_NONE, lstm = c->cell == FC_LSTM;
    int k = c->layers * (lstm ? 2 : 1) + att + (c->attention == FC_ADDITIVE);
    char **v = calloc((size_t)k, sizeof *v);
    if (!v) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int i = 0, ok = 1;
    for (int s = 0; s < (lstm ? 2 : 1); s++)
        for (int l = 0; l < c->layers; l++) {
            char b[32];
            snprintf(b, sizeof b, "%c%d", s ? 'c' : 'h', l);
            ok &= (v[i++] = cg_strdup(b)) != NULL;
        }
    if (att) ok &= (v[i++] = cg_strdup("ring")) != NULL;
    if (c->attention == FC_ADDITIVE) ok &= (v[i++] = cg_strdup("ring_proj")) != NULL;
    if (!ok) {
        for (int j = 0; j < k; j++) free(v[j]);
        free(v);
        return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    }
    *names = v;
    *n = k;
    return CG_OK;
}

/* Graph step must have the interface the runner drives, with the types it
 * fills: x f32[B, C] in and y f32[B, C] out, each state and its `_new`
 * output, count and a with attention. */
static cg_status check_interface(cg_forecaster *m, const char *file, char **states, int n_states) {
    const fc_config *c = &m->cfg;
    cg_graph *g = cg_model_graph(m->model, "step");
    if (!g) return cg_error(CG_ERR_VERIFY, "%s: a forecasting model needs a graph 'step'", file);
    cg_status st = cg_graph_need_io(file, g, 0, "x");
    if (!st) st = cg_graph_need_io(file, g, 1, "y");
    if (!st && c->attention != FC_NONE) st = cg_graph_need_io(file, g, 0, "count");
    if (!st && c->attention != FC_NONE) st = cg_graph_need_io(file, g, 1, "a");
    for (int i = 0; !st && i < n_states; i++) {
        char out[48];
        snprintf(out, sizeof out, "%s_new", states[i]);
        st = cg_graph_need_io(file, g, 0, states[i]);
        if (!st) st = cg_graph_need_io(file, g, 1, out);
    }
    if (st) return st;
    int expect = 1 + n_states + (c->attention != FC_NONE);
    if (cg_graph_input_count(g) != expect)
        return cg_error(CG_ERR_VERIFY,
                        "%s: graph 'step' has %d inputs; this configuration drives exactly %d (x%s and "
                        "the carried state)",
                        file, cg_graph_input_count(g), expect, c->attention != FC_NONE ? ", count" : "");
    return CG_OK;
}

static cg_status plan_step(cg_forecaster *m, const cg_plan_options *placement, char **states, int n_states) {
    cg_status st = cg_plan_create(m->model, "step", placement, &m->plan);
    for (int i = 0; !st && i < n_states; i++) {
        char out[48];
        snprintf(out, sizeof out, "%s_new", states[i]);
        st = cg_plan_carry(m->plan, states[i], out);
    }
    return st;
}

cg_status cg_forecast_load(cg_context *ctx, const char *dir, const cg_plan_options *placement, cg_forecaster **out) {
    if (!ctx || !dir || !out) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_forecast_load: NULL argument");
    *out = NULL;
    cg_forecaster *m = calloc(1, sizeof *m);
    if (!m) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    m->dir = cg_strdup(dir);
    char *cfg = cg_path_join(dir, "config.json"), *wp = cg_path_join(dir, "weights.safetensors"),
         *cgp = cg_path_join(dir, "model.cg"), *text = NULL, **states = NULL;
    int n_states = 0;
    cg_status st = m->dir && cfg && wp && cgp ? CG_OK : cg_error(CG_ERR_NO_MEMORY, "out of memory");
    if (!st && !cg_path_exists(dir)) st = cg_error(CG_ERR_IO, "%s: no such model directory", dir);
    if (!st) st = cg_fc_config_read(cfg, &m->cfg);
    if (!st) st = cg_weights_open(wp, &m->weights);
    int from_file = !st && cg_path_exists(cgp);
    if (!st && !from_file) st = last_layer_present(&m->cfg, m->weights, cfg, NULL, NULL);
    if (!st) st = from_file ? cg_model_load(ctx, cgp, &m->model) : cg_fc_build_text(&m->cfg, &text);
    if (!st && from_file) st = last_layer_present(&m->cfg, NULL, cfg, m->model, cgp);
    if (!st && !from_file) {
        char label[4200];
        snprintf(label, sizeof label, "%s (generated from config.json)", cfg);
        st = cg_model_parse(ctx, text, strlen(text), label, &m->model);
        /* The builder's graph against the weights first: its messages name
         * the weights file, not a line of generated text. */
        if (!st) st = cg_model_weights_exact(m->model, m->weights, cfg);
    }
    if (!st) st = cg_model_verify(m->model);
    if (!st) st = cg_model_bind_weights(m->model, m->weights);
    if (!st) st = cg_fc_state_names(&m->cfg, &states, &n_states);
    if (!st) st = check_interface(m, from_file ? cgp : cfg, states, n_states);
    if (!st && from_file) st = cg_model_weights_exact(m->model, m->weights, cgp);
    if (!st) st = plan_step(m, placement, states, n_states);
    for (int i = 0; i < n_states; i++) free(states[i]);
    free(states);
    free(text);
    free(cfg);
    free(wp);
    free(cgp);
    if (st) {
        cg_forecast_free(m);
        return st;
    }
    *out = m;
    return CG_OK;
}

int cg_forecast_channels(const cg_forecaster *m) { return m ? m->cfg.C : 0; }

const char *cg_forecast_column(const cg_forecaster *m, int i) {
    return m && i >= 0 && i < m->cfg.C ? m->cfg.columns[i] : NULL;
}

int cg_forecast_window(const cg_forecaster *m) { return m && m->cfg.attention != FC_NONE ? m->cfg.window : 0; }

cg_status cg_forecast_plan(cg_forecaster *m, cg_plan **plan) {
    if (!m || !plan) return cg_error(CG_ERR_INVALID_ARGUMENT, "cg_forecast_plan: NULL argument");
    *plan = m->plan;
    return CG_OK;
}
