/* The attention-RNN forecaster (docs/forecast.md):
 * the configuration read from config.json and the step graph's builder, on
 * top of the graph IR and plans. */
#ifndef CG_FORECAST_FC_H
#define CG_FORECAST_FC_H

#include "clgraph/clgraph.h"

typedef enum { FC_RNN, FC_GRU, FC_LSTM } fc_cell;
typedef enum { FC_DOT, FC_SCALED_DOT, FC_GENERAL, FC_ADDITIVE, FC_NONE } fc_attention;

typedef struct fc_config {
    int C;          /* channels: the columns */
    char **columns; /* C names, the CSV header */
    fc_cell cell;
    int hidden, layers;
    fc_attention attention;
    int attention_dim;  /* A, additive only */
    int window;         /* w: previous states attended */
    double *mean, *std; /* C each: x = (raw - mean) / std */
} fc_config;

/* Parses and validates a config.json; every mistake names the key. */
cg_status cg_fc_config_read(const char *path, fc_config *out);

/* Frees what cg_fc_config_read allocated (the struct itself is the caller's). */
void cg_fc_config_free(fc_config *c);

/* The name of an attention kind as config.json and attn_score spell it. */
const char *cg_fc_attention_name(fc_attention a);

/* The IR text of graph `step` for a configuration (see fc_build.c for its
 * inputs and outputs). */
cg_status cg_fc_build_text(const fc_config *c, char **out);

#endif
