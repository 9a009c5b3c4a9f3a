/* Check words: how an invalid index or length found by an OpenCL kernel
 * becomes the same run-time error a CPU kernel returns. Each instance gives
 * every step whose kernel is flagged CG_KERNEL_FLAG_CHECKS CG_CHECK_WORDS
 * zeroed words of one small buffer per device; a run enqueues their read
 * behind its last step (no extra wait: the queues drain anyway), and after
 * the drain the first step in order that recorded something fails the run
 * with the node's position and name. Words are cleared only when something
 * was recorded, so a clean run costs one small read per device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_msg.h"
#include "error.h"
#include "plan.h"

cg_status cg_checks_make(cg_plan *p, instance *in) {
    in->check = calloc((size_t)p->n_devs, sizeof *in->check);
    in->check_n = calloc((size_t)p->n_devs, sizeof *in->check_n);
    if (!in->check || !in->check_n) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    int total = 0;
    for (int si = 0; si < in->n_steps; si++) {
        step *s = &in->steps[si];
        s->check_word = -1;
        if (s->kind != STEP_KERNEL || !cg_dev_checks(p->devs[s->dev].dev, s->kernel)) continue;
        s->check_word = in->check_n[s->dev];
        in->check_n[s->dev] += CG_CHECK_WORDS;
        total += CG_CHECK_WORDS;
    }
    if (!total) return CG_OK;
    in->check_host = calloc((size_t)total, sizeof *in->check_host);
    if (!in->check_host) return cg_error(CG_ERR_NO_MEMORY, "out of memory");
    cg_status st = CG_OK;
    for (int d = 0; !st && d < p->n_devs; d++) {
        if (!in->check_n[d]) continue;
        size_t bytes = sizeof(int32_t) * (size_t)in->check_n[d];
        st = cg_dev_alloc(p->devs[d].dev, bytes, &in->check[d]);
        if (!st) st = cg_dev_write(p->devs[d].dev, &in->check[d], 0, in->check_host, bytes);
    }
    return st;
}

void cg_checks_free(cg_plan *p, instance *in) {
    for (int d = 0; in->check && d < p->n_devs; d++) cg_dev_free(p->devs[d].dev, &in->check[d]);
    free(in->check);
    free(in->check_n);
    free(in->check_host);
    in->check = NULL;
    in->check_n = NULL;
    in->check_host = NULL;
}

/* Device d's words in the host copy. */
static int32_t *host_words(const cg_plan *p, const instance *in, int d) {
    int32_t *w = in->check_host;
    for (int e = 0; e < d && e < p->n_devs; e++) w += in->check_n[e];
    return w;
}

cg_status cg_checks_read(cg_plan *p, instance *in) {
    cg_status st = CG_OK;
    for (int d = 0; !st && in->check_host && d < p->n_devs; d++)
        if (in->check_n[d])
            st = cg_dev_read_async(p->devs[d].dev, &in->check[d], 0, host_words(p, in, d),
                                   sizeof(int32_t) * (size_t)in->check_n[d], NULL);
    return st;
}

cg_status cg_step_error(const cg_plan *p, const step *s, const char *msg) {
    char where[512];
    cg_loc_format(where, sizeof where, p->model, s->line, s->col);
    return cg_error(CG_ERR_KERNEL, "%s%s '%s' on %s: %s", where, s->op->def->name, s->name, cg_plan_dev_name(p, s->dev),
                    msg && msg[0] ? msg : "kernel failed");
}

/* Zeroes every device's words for the next run. */
static void clear_words(cg_plan *p, instance *in) {
    memset(in->check_host, 0, sizeof(int32_t) * (size_t)(host_words(p, in, p->n_devs) - in->check_host));
    for (int d = 0; d < p->n_devs; d++)
        if (in->check_n[d])
            cg_dev_write(p->devs[d].dev, &in->check[d], 0, host_words(p, in, d),
                         sizeof(int32_t) * (size_t)in->check_n[d]);
}

cg_status cg_checks_verdict(cg_plan *p, instance *in, int report) {
    if (!in->check_host) return CG_OK;
    const step *bad = NULL;
    const int32_t *bad_w = NULL;
    for (int si = 0; !bad && si < in->n_steps; si++) {
        const step *s = &in->steps[si];
        if (s->check_word < 0) continue;
        const int32_t *w = host_words(p, in, s->dev) + s->check_word;
        if (w[CG_CHECK_FLAG]) {
            bad = s;
            bad_w = w;
        }
    }
    if (!bad) return CG_OK;
    char msg[256];
    if (report) {
        const char *const *names = bad->op->def->input_names;
        int n_names = 0;
        while (names && names[n_names]) n_names++;
        cg_check_words_message(msg, sizeof msg, bad_w, names, n_names);
    }
    clear_words(p, in); /* before the message: a failure of its own is not the run's */
    return report ? cg_step_error(p, bad, msg) : CG_ERR_KERNEL;
}
