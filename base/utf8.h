/* The one strict UTF-8 validator: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing past U+10FFFF, no truncated sequences. Names
 * in graphs and ONNX files, safetensors headers and tokenizer input all go
 * through it, so they agree on what is text. */
#ifndef CG_BASE_UTF8_H
#define CG_BASE_UTF8_H

#include <stddef.h>

/* Length (1..4) of the well-formed UTF-8 sequence at s (avail >= 1 bytes
 * readable), or 0 if it is malformed (overlong, surrogate, beyond U+10FFFF,
 * truncated, a stray continuation byte, 0xF5..0xFF). */
size_t cg_utf8_seq_len(const char *s, size_t avail);

/* Offset of the first byte of s[0..len) that does not start a well-formed
 * sequence, or len if all of it is valid UTF-8. */
size_t cg_utf8_check(const unsigned char *s, size_t len);

/* Non-zero if the NUL-terminated string s is valid UTF-8. */
int cg_utf8_valid(const char *s);

#endif
