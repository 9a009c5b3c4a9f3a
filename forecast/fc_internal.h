/* The loaded forecaster, shared by the loader and the runner. */
#ifndef CG_FORECAST_FC_INTERNAL_H
#define CG_FORECAST_FC_INTERNAL_H

#include "clgraph/forecast.h"
#include "fc.h"

struct cg_forecaster {
    char *dir;
    fc_config cfg;
    cg_weights *weights;
    cg_model *model;
    cg_plan *plan; /* graph step; states and windows carried */
};

/* The names of graph step's carried inputs, in a fixed order: h<l> for
 * each layer, c<l> (lstm), ring, ring_proj (additive). *n gets the count;
 * the strings are the caller's (free each, then the array). */
cg_status cg_fc_state_names(const fc_config *c, char ***names, int *n);

#endif
