/* Attention heat maps for `clgraph translate --attention FILE`: source
 * tokens across, output tokens down; PNG, SVG or JSON by FILE's extension. */
#ifndef CG_TOOLS_HEATMAP_H
#define CG_TOOLS_HEATMAP_H

#include <stdio.h>

#include "clgraph/clgraph.h"
#include "clgraph/seq2seq.h"
#include "font.h"

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

/*
 * Details of cg_heatmap_write, for tests and other callers.
 *
 * On failure, the message ("clgraph: FILE: ...") has already been printed to
 * stderr: the caller must not print cg_last_error() (it is not set).
 * - an unknown extension: CG_ERR_INVALID_ARGUMENT,
 *   "FILE: unknown heat map format (use .png, .svg or .json)";
 * - a file that cannot be opened or written: CG_ERR_IO, naming the file and
 *   strerror(errno); each file is written whole or not at all (out_file.h),
 *   and the files of earlier sources written by the same call are removed;
 * - res[i].src_len differing from src_len[i], or a NULL argument:
 *   CG_ERR_INVALID_ARGUMENT; an image too large (either side over
 *   HEATMAP_MAX_SIDE pixels): CG_ERR_UNSUPPORTED.
 *
 * JSON tokens are strings, or integers when written with `ids` (no label
 * function); "attention" holds n_steps rows of src_len numbers (%.6g; a
 * non-finite number or score is null), or [] when the hypothesis has no
 * attention but a non-empty source; "eos" tells whether the last row is the
 * EOS step.
 *
 * Image layout (PNG pixels; the SVG uses the same coordinates):
 *   label(s)  = min(code points of s, HEATMAP_MAX_LABEL); a longer label is
 *               cut to HEATMAP_MAX_LABEL - 1 code points and "~";
 *   row_w     = max over the row labels of label(s) * FONT_ADV (0 if none);
 *   col_h     = max over the column labels of: FONT_H when label(s) == 1
 *               (drawn upright), else label(s) * FONT_ADV (drawn turned 90
 *               degrees, read bottom to top); 0 if none;
 *   left      = max(2 * HEATMAP_PAD + row_w, HEATMAP_MIN_WIDTH - src_len * HEATMAP_CELL)
 *   top       = 3 * HEATMAP_PAD + FONT_H + col_h   (title line, column labels)
 *   width     = left + src_len * HEATMAP_CELL
 *   height    = top + rows * HEATMAP_CELL
 * with rows = max(n_steps, n_tokens) of the best hypothesis (0 without one),
 * the row labels being its output tokens and HEATMAP_EOS for the EOS step.
 * Cell (t, j) (output row t, source column j) covers x in [left + j * CELL,
 * left + (j + 1) * CELL - 1), y likewise from top + t * CELL: its last
 * column and row stay white as a grid line. Its colour is
 * cg_heatmap_color(weight); a cell without a weight is HEATMAP_NO_DATA grey.
 */
#define HEATMAP_CELL 14       /* pixels per cell side */
#define HEATMAP_PAD 4         /* margin around labels and title */
#define HEATMAP_MAX_LABEL 20  /* code points drawn per label */
#define HEATMAP_MIN_WIDTH 164 /* room for the title line */
#define HEATMAP_MAX_SIDE 30000
#define HEATMAP_EOS "</s>"
#define HEATMAP_NO_DATA 0xDDDDDD

/* A token's label (NULL: the id as a number). */
typedef const char *(*cg_heatmap_label_fn)(void *user, int target, int32_t id);

/* cg_heatmap_write with labels from `label` (target 0: source, 1: output);
 * label == NULL means ids mode (numbers; integers in JSON). */
cg_status cg_heatmap_write_labels(const char *path, const cg_s2s_result *res, int32_t *const *src, const int *src_len,
                                  int n, cg_heatmap_label_fn label, void *user);

/* The layout above: `rows` row labels and `src_len` column labels. */
void cg_heatmap_margins(int src_len, int rows, const char *const *row_labels, const char *const *col_labels, int *left,
                        int *top);
void cg_heatmap_size(int src_len, int rows, const char *const *row_labels, const char *const *col_labels, int *w,
                     int *h);

/* The colour of a weight: clamped to [0, 1], from near white (0) through
 * light and mid blues to dark blue (1), linear between five stops; NaN gives
 * HEATMAP_NO_DATA. */
void cg_heatmap_color(float weight, uint8_t rgb[3]);

/* PNGs are written at HEATMAP_PNG_SCALE times their layout's size, each
 * pixel a square block, so that the 5 x 7 font and the cells read at a
 * glance (a 382 x 184 heat map was too small to read); 1 where the scaled
 * image would pass HEATMAP_MAX_SIDE. The layout above, and SVGs, stay in
 * unscaled pixels. */
#define HEATMAP_PNG_SCALE 2
static inline int cg_png_scale(int w, int h) {
    return w <= HEATMAP_MAX_SIDE / HEATMAP_PNG_SCALE && h <= HEATMAP_MAX_SIDE / HEATMAP_PNG_SCALE ? HEATMAP_PNG_SCALE
                                                                                                  : 1;
}

/* Writes a packed 8-bit RGB image of w x h pixels as a PNG file of
 * cg_png_scale(w, h) times the size; on failure the message naming the
 * file is printed (as for cg_heatmap_write). */
cg_status cg_png_write_rgb(const char *path, const uint8_t *rgb, int w, int h);

/* Writes s as XML text: &<>"' escaped, control characters as their Unicode
 * control pictures, malformed UTF-8 as U+FFFD. */
void cg_xml_text(FILE *f, const char *s);

/* The file for source i: path itself for i == 0, else "-<i>" inserted before
 * the extension. The caller frees it; NULL when out of memory. */
char *cg_heatmap_path(const char *path, int i);

/* Removes the files cg_heatmap_path names for 0 .. n-1 (regular files
 * only): the pictures written before one that failed, so that a failed
 * command leaves no partial set behind. */
void cg_heatmap_remove(const char *path, int n);

#endif
