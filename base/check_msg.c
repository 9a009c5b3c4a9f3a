#include "check_msg.h"

#include <stdio.h>

#include "clgraph/plugin.h"

void cg_check_message(char *buf, size_t size, int input, const char *name, int32_t value, int64_t pos, int32_t lo,
                      int32_t hi) {
    if (!buf || !size) return;
    if (name)
        snprintf(buf, size, "input %d (%s) holds %d at position %lld, outside [%d, %d]", input, name, (int)value,
                 (long long)pos, (int)lo, (int)hi);
    else
        snprintf(buf, size, "input %d holds %d at position %lld, outside [%d, %d]", input, (int)value, (long long)pos,
                 (int)lo, (int)hi);
}

int cg_check_words_message(char *buf, size_t size, const int32_t *w, const char *const *names, int n_names) {
    if (!w[CG_CHECK_FLAG]) return 0;
    int input = w[CG_CHECK_INPUT];
    /* the position's halves as the kernel wrote them: two's complement words */
    int64_t pos = (int64_t)(((uint64_t)(uint32_t)w[CG_CHECK_POS_HI] << 32) | (uint32_t)w[CG_CHECK_POS_LO]);
    const char *name = NULL;
    if (names && input >= 0 && input < n_names) name = names[input];
    cg_check_message(buf, size, input, name, w[CG_CHECK_VALUE], pos, w[CG_CHECK_LO], w[CG_CHECK_HI]);
    return 1;
}
