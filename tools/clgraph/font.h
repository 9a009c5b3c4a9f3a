/* A small bitmap font for the attention heat maps (tools/clgraph/heatmap.c).
 *
 * Every glyph is 5 pixels wide and drawn in a 6 x 9 cell: rows 0..6 hold
 * capitals and digits (baseline under row 6), lower case has its x-height in
 * rows 2..6 and descenders in rows 7..8; column 5 is the gap to the next
 * glyph. Printable ASCII (32..126) has its own glyphs; any other code point
 * (and each byte of malformed UTF-8, and ASCII control characters) is drawn
 * as a small hollow box, one per code point. A label that is exactly one
 * space is drawn as a middle dot, so that a character-level model's space
 * token stays visible; spaces inside longer text are blank. */
#ifndef CG_TOOLS_FONT_H
#define CG_TOOLS_FONT_H

#include <stdint.h>

#define FONT_GLYPH_W 5 /* pixels lit at most per glyph row */
#define FONT_ADV 6     /* horizontal advance per code point */
#define FONT_H 9       /* rows per glyph cell, descenders included */

/* Code points in a UTF-8 string (a malformed byte counts as one). */
int font_count(const char *utf8);

/* Pixel width of the text: FONT_ADV per code point (trailing gap included). */
int font_width(const char *utf8);

/* Draws text into a packed 8-bit RGB image of w x h pixels with the top-left
 * of the first glyph cell at (x, y); pixels outside the image are skipped. */
void font_draw(uint8_t *rgb, int w, int h, int x, int y, const char *utf8, uint8_t r, uint8_t g, uint8_t b);

/* The same text turned 90 degrees counter-clockwise (read bottom to top):
 * it starts at the bottom row y - 1 and goes up font_width(utf8) rows; the
 * glyphs' tops face left and they fill columns x .. x + FONT_H - 1. */
void font_draw_up(uint8_t *rgb, int w, int h, int x, int y, const char *utf8, uint8_t r, uint8_t g, uint8_t b);

#endif
