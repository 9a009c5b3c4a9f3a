#include "srv_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "srv_tensor.h"

int64_t srv_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int srv_ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* NAME from the spec (before its '='), or the base name of `path` without
 * its extension; only
 * characters that need no escaping in a URL path or a metrics label. */
static char *srv_model_name(const char *spec, const char *path, char *err, size_t errsz) {
    const char *eq = strchr(spec, '=');
    char *name;
    if (eq) {
        name = strndup(spec, (size_t)(eq - spec));
    } else {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strrchr(base, '.');
        name = strndup(base, dot && dot > base ? (size_t)(dot - base) : strlen(base));
    }
    if (!name) return NULL;
    int ok = name[0] != '\0';
    for (const char *c = name; *c && ok; c++)
        ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
             *c == '-' || *c == '.';
    if (!ok) {
        snprintf(err, errsz, "model '%s': a name takes letters, digits, '_', '-' and '.' (give NAME=PATH)", spec);
        free(name);
        return NULL;
    }
    return name;
}

/* One side's io from the verified graph; names live as long as the model. */
static int srv_describe(const cg_graph *g, int output, srv_io *io, int *n, const char **sym0, const char *model,
                        char *err, size_t errsz) {
    *n = output ? cg_graph_output_count(g) : cg_graph_input_count(g);
    if (*n > SRV_MAX_IO) {
        snprintf(err, errsz, "model '%s': more than %d %s", model, SRV_MAX_IO, output ? "outputs" : "inputs");
        return -1;
    }
    for (int i = 0; i < *n; i++) {
        const char *syms[CG_MAX_DIMS] = {0};
        srv_io *x = &io[i];
        x->name = output ? cg_graph_output_name(g, i) : cg_graph_input_name(g, i);
        if (cg_graph_io_shape(g, output, i, &x->dtype, &x->ndim, x->dims, syms)) {
            snprintf(err, errsz, "model '%s': %s", model, cg_last_error());
            return -1;
        }
        if (!srv_dtype_name(x->dtype)) {
            snprintf(err, errsz, "model '%s': %s '%s' is %s, which the protocol has no datatype for", model,
                     output ? "output" : "input", x->name, cg_dtype_name(x->dtype));
            return -1;
        }
        /* batchable: every dimension 0 is the same symbol */
        if (x->ndim < 1 || !syms[0]) *sym0 = "";
        else if (!*sym0) *sym0 = syms[0];
        else if (strcmp(*sym0, syms[0])) *sym0 = "";
    }
    return 0;
}

/* 1 when dir/config.json says "task": "forecast". */
static int srv_is_forecaster(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *root = cJSON_Parse(buf);
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(root, "task");
    int yes = cJSON_IsString(task) && !strcmp(task->valuestring, "forecast");
    cJSON_Delete(root);
    return yes;
}

/* A translation model directory (cg_s2s_load picks the family) or a
 * forecasting one. */
static int srv_model_open_dir(srv_model *m, cg_context *ctx, const char *path, const char *device, char *err,
                              size_t errsz) {
    const int fc = srv_is_forecaster(path);
    m->kind = fc ? SRV_FORECAST : SRV_TRANSLATE;
    m->platform = strdup(fc ? "clgraph_forecast" : "clgraph_translate");
    m->batchable = 1;
    m->device = device ? device : "cpu"; /* m->device_req: lives as long as m */
    cg_plan_options popt = {.struct_size = sizeof popt, .device = device};
    if (fc ? cg_forecast_load(ctx, path, &popt, &m->fc) : cg_s2s_load(ctx, path, &popt, NULL, &m->s2s)) {
        snprintf(err, errsz, "model '%s': %s", m->name, cg_last_error());
        return -1;
    }
    if (!fc) { /* the RNN family decodes as a stream: sentences join the running decode */
        cg_s2s_stream *probe = NULL;
        m->streams = cg_s2s_stream_open(m->s2s, NULL, 1, &probe) == CG_OK;
        cg_s2s_stream_free(probe);
    }
    return 0;
}

static int srv_model_open(srv_model *m, cg_context *ctx, const char *path, const char *weights, const char *device,
                          char *err, size_t errsz) {
    struct stat st_dir;
    if (stat(path, &st_dir) == 0 && S_ISDIR(st_dir.st_mode))
        return srv_model_open_dir(m, ctx, path, device, err, errsz);
    int onnx = srv_ends_with(path, ".onnx");
    m->platform = strdup(onnx ? "onnx" : "clgraph_graph");
    cg_status st = onnx ? cg_model_load_onnx(ctx, path, NULL, &m->m) : cg_model_load(ctx, path, &m->m);
    if (!st && !onnx) st = cg_model_verify(m->m);
    if (!st && weights) st = cg_weights_open(weights, &m->w);
    if (!st && weights) st = cg_model_bind_weights(m->m, m->w);
    cg_plan_options popt = {.struct_size = sizeof popt, .device = device};
    if (!st) st = cg_plan_create(m->m, NULL, &popt, &m->plan);
    if (st) {
        snprintf(err, errsz, "model '%s': %s", m->name, cg_last_error());
        return -1;
    }
    m->device = cg_plan_device(m->plan);
    const cg_graph *g = cg_model_graph_at(m->m, 0);
    const char *sym0 = NULL;
    if (srv_describe(g, 0, m->io.in, &m->io.n_in, &sym0, m->name, err, errsz) ||
        srv_describe(g, 1, m->io.out, &m->io.n_out, &sym0, m->name, err, errsz))
        return -1;
    m->batchable = sym0 && *sym0;
    return 0;
}

int srv_model_load(cg_context *ctx, const char *spec, const char *device, srv_model **out, char *err, size_t errsz) {
    *out = NULL;
    srv_model *m = calloc(1, sizeof *m);
    char *path = NULL;
    if (!m) goto oom;
    pthread_mutex_init(&m->lock, NULL);
    pthread_condattr_t ca; /* the batch delay is measured on CLOCK_MONOTONIC */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cond, &ca);
    pthread_condattr_destroy(&ca);
    const char *eq = strchr(spec, '=');
    path = strdup(eq ? eq + 1 : spec);
    if (!path) goto oom;
    const char *given = device;
    char *dev = strstr(path, ",device=");
    if (dev) {
        *dev = '\0';
        dev += 8;
        device = dev;
    }
    char *at = strrchr(path, '@');
    if (at) *at++ = '\0';
    if (!*path) {
        snprintf(err, errsz, "model '%s': no file", spec);
        goto fail;
    }
    m->name = srv_model_name(spec, path, err, errsz);
    if (!m->name) goto fail;
    m->default_device = given;
    if (!(m->spec = strdup(spec))) goto oom;
    /* the device asked for, kept for the workers' plans and the listing */
    if (device && !(m->device_own = strdup(device))) goto oom;
    m->device_req = m->device_own;
    if (srv_model_open(m, ctx, path, at, m->device_req, err, errsz)) goto fail;
    free(path);
    *out = m;
    return 0;
oom:
    snprintf(err, errsz, "model '%s': out of memory", spec);
fail:
    free(path);
    srv_model_free(m);
    return -1;
}

void srv_model_free(srv_model *m) {
    if (!m) return;
    srv_model_drain(m);
    cg_plan_free(m->plan);
    cg_s2s_free(m->s2s);
    cg_forecast_free(m->fc);
    cg_model_free(m->m);
    cg_weights_free(m->w);
    free(m->name);
    free(m->platform);
    free(m->spec);
    free(m->device_own);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->cond);
    free(m);
}
