/* render/font.h - a built-in bitmap font for text on PNG plots: 5x7 cells plus
 * one row for descenders (5x8).
 *
 * Covers printable ASCII and the Greek ε and δ (UTF-8); any other character
 * is drawn as '?'. Glyphs advance PG_FONT_ADV pixels (times scale). Drawing
 * clips to the image and never allocates.
 */
#ifndef PG_RENDER_FONT_H
#define PG_RENDER_FONT_H

#include <stdint.h>

#define PG_FONT_W   5
#define PG_FONT_H   8
#define PG_FONT_ADV 6

/* 1 when pixel (x, y) of code point cp's glyph is ink (0 outside it). */
int pg_font_ink(unsigned cp, int x, int y);
/* The next code point of a UTF-8 string, advancing *s; 0 at the end. */
unsigned pg_font_next(const char **s);
/* Width in pixels of s drawn at `scale` (no trailing gap). */
int pg_font_width(const char *s, int scale);
/* Draws s into a w x h RGB8 image with its top-left corner at (x, y); with
 * `vertical`, rotated a quarter turn so it reads upwards from (x, y). */
void pg_font_draw(uint8_t *rgb, int w, int h, int x, int y, const char *s, int scale,
                  const uint8_t color[3], int vertical);

#endif
