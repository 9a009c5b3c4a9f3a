/* What every model family's loader does with a model directory: paths in
 * it, its optional model.cg, the exact match of a model's parameters and
 * its weights file, and the inputs and outputs a family's runner needs. */
#ifndef CG_GRAPH_IR_MODEL_DIR_H
#define CG_GRAPH_IR_MODEL_DIR_H

#include "clgraph/clgraph.h"

/* "dir/file", malloc'd; NULL when memory is short. */
char *cg_path_join(const char *dir, const char *file);

/* Non-zero if path names something (stat succeeds). */
int cg_path_exists(const char *path);

/* The whole of a text file, NUL-terminated (*out is the caller's). */
cg_status cg_read_text_file(const char *path, char **out);

/* Every parameter of m is in w with its exact dtype and shape, and every
 * tensor of w is a parameter of m (a missing, extra or mis-shaped tensor is
 * an error naming it and the weights file; `described_by` names the file
 * the graphs come from, for the extra one). */
cg_status cg_model_weights_exact(const cg_model *m, cg_weights *w, const char *described_by);

/* An error naming `file` unless g has an input (out 0) or output (out 1)
 * called `name`. */
cg_status cg_graph_need_io(const char *file, const cg_graph *g, int out, const char *name);

#endif
