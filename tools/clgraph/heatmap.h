/* Attention heat maps for `clgraph translate --attention FILE`: source
 * tokens across, output tokens down; PNG, SVG or JSON by FILE's extension. */
#ifndef CG_TOOLS_HEATMAP_H
#define CG_TOOLS_HEATMAP_H

#include "clgraph/clgraph.h"

/*
 * Writes the attention of every source's best hypothesis (res[i].hyps[0]):
 * - .json: one file with, per source, its tokens, and per hypothesis the
 *   output tokens, the score and the weights (rows = generated tokens,
 *   EOS step included, each src_len long);
 * - .png / .svg: one image per source: FILE for source 0 and FILE with
 *   "-<i>" before the extension for source i > 0. Rows are the output tokens
 *   (plus "</s>" when the hypothesis ended with EOS), columns the source
 *   tokens; labels are the tokens (ids with `ids`).
 * Errors name the file.
 */
cg_status cg_heatmap_write(const cg_s2s *m, const char *path, const cg_s2s_result *res, int32_t *const *src,
                           const int *src_len, int n, int ids);

#endif
