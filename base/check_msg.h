/* The one wording of an invalid input value (an index or a length out of
 * range), shared by the CPU kernels, which find it themselves, and the hosts
 * that read an OpenCL kernel's check words (plugin.h, CG_CHECK_*), so a bad
 * value gets the same message on every device. */
#ifndef CG_CHECK_MSG_H
#define CG_CHECK_MSG_H

#include <stddef.h>
#include <stdint.h>

/* "input <input> (<name>) holds <value> at position <pos>, outside [lo, hi]"
 * into buf (`name` NULL: no parenthesis). */
void cg_check_message(char *buf, size_t size, int input, const char *name, int32_t value, int64_t pos, int32_t lo,
                      int32_t hi);

/* The message of a node's check words w[0..CG_CHECK_WORDS) into buf, with
 * the input's name from names[0..n_names) when there is one (names may be
 * NULL). Returns 0 when w holds no record (nothing written). */
int cg_check_words_message(char *buf, size_t size, const int32_t *w, const char *const *names, int n_names);

#endif
