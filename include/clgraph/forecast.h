/*
 * clgraph forecast API: the attention-RNN forecaster, the model family of
 * the contract docs/forecast.md, on top of the runtime of clgraph.h
 * (contexts, plans, devices). A recurrent network attends, at every step,
 * over its own previous hidden states and predicts the next value of a
 * multivariate time series; forecasting feeds each prediction back in.
 * Threads: a cg_forecaster is used by one thread at a time (it holds a plan);
 * load one per thread for forecasts in parallel.
 */
#ifndef CLGRAPH_FORECAST_H
#define CLGRAPH_FORECAST_H

#include "clgraph/clgraph.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A forecasting model: a model directory with config.json,
 * weights.safetensors and optionally model.cg (used instead of the
 * builder's graph `step`).
 */
typedef struct cg_forecaster cg_forecaster;

/**
 * Loads a model directory: reads and checks config.json (a mistake names the
 * key), the weights (a missing, extra or mis-shaped tensor is named with its
 * expected shape), builds or reads graph `step`, verifies it and plans it
 * with `placement` (NULL: CPU). The recurrent state and the window of
 * previous states are carried from run to run on the device that makes
 * them.
 */
CG_API cg_status cg_forecast_load(cg_context *ctx, const char *dir, const cg_plan_options *placement,
                                  cg_forecaster **out);

/** Frees a model (NULL is ignored). */
CG_API void cg_forecast_free(cg_forecaster *m);

/**
 * The graph text a model directory describes: its model.cg, or the step
 * graph the builder makes from config.json. The caller frees the string.
 */
CG_API cg_status cg_forecast_graph_text(const char *dir, char **out);

/** The number of channels C (the config's columns). */
CG_API int cg_forecast_channels(const cg_forecaster *m);

/** Channel i's name (the config's columns[i]), or NULL if out of range. */
CG_API const char *cg_forecast_column(const cg_forecaster *m, int i);

/** The attention window w (previous states attended); 0 without attention. */
CG_API int cg_forecast_window(const cg_forecaster *m);

/** Forecasting options: zero-initialise, set struct_size and the horizon
 * (which has no default, so they are not optional). */
typedef struct cg_forecast_options {
    size_t struct_size; /**< sizeof(cg_forecast_options) */
    int horizon;        /**< N >= 1: values forecast after each history */
    int batch;          /**< series run together; 0: 64 */
    int attention;      /**< non-zero: return each forecast step's attention */
} cg_forecast_options;

/** One series' history: raw values, oldest first. */
typedef struct cg_forecast_series {
    const double *values; /**< length x C, row-major (row t is time step t + 1) */
    int length;           /**< T >= 1 */
} cg_forecast_series;

/**
 * One series' forecast. Attention row j (j = 0..horizon-1) is the weights p
 * of the step whose output is forecast value j; column k is the weight of
 * the state h_i with i = att_first[j] + k (the spec's 1-based step index:
 * i <= length are history steps, later ones forecast steps), for
 * k < att_count[j]; att_count[j] is 0 when that step had no previous states
 * to attend (the first two steps).
 */
typedef struct cg_forecast_result {
    double *values;   /**< horizon x C raw forecast values, row-major */
    float *attention; /**< horizon x window weights when asked (else NULL) */
    int *att_first;   /**< horizon entries when asked */
    int *att_count;   /**< horizon entries when asked */
    int horizon, channels, window;
} cg_forecast_result;

/** Called after each batch with the number of series done. */
typedef void (*cg_forecast_progress_fn)(int done, int total, void *user);

/**
 * Forecasts `n` series into `results[n]` (in input order): each history is
 * run through the model (teacher forcing) and then `horizon` values are
 * forecast, each prediction fed back as the next input. Series are sorted
 * by length into batches of `batch`; a series' forecast does not depend on
 * the batch it is in or on the other series. Inputs must be finite
 * (CG_ERR_INVALID_ARGUMENT names the series, step and channel otherwise);
 * options whose struct_size is too small are CG_ERR_INVALID_ARGUMENT too.
 */
CG_API cg_status cg_forecast_run(cg_forecaster *m, const cg_forecast_options *opt, int n,
                                 const cg_forecast_series *series, cg_forecast_result *results,
                                 cg_forecast_progress_fn progress, void *user);

/** Frees what cg_forecast_run put in one result. */
CG_API void cg_forecast_result_clear(cg_forecast_result *r);

/**
 * The plan of graph `step` (owned by the model: do not free it), to describe
 * with cg_plan_describe or to read its statistics.
 */
CG_API cg_status cg_forecast_plan(cg_forecaster *m, cg_plan **plan);

#ifdef __cplusplus
}
#endif

#endif
