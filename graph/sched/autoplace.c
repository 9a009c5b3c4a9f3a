/* Placement by measurement ("auto"): each node goes to the device with the
 * least measured kernel time plus the time to bring its inputs there. The
 * kernels are measured on real data: every lowered node's host kernel also
 * runs on "shadow" host copies of the values, so a later node is timed on
 * the inputs it will really get (data-dependent kernels differ a lot). */
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "shape.h"

cg_status cg_auto_grow(build *b, int cap) {
    void **sh = realloc(b->shadow, sizeof *sh * (size_t)cap);
    if (!sh) return CG_ERR_NO_MEMORY;
    b->shadow = sh;
    unsigned char *bo = realloc(b->borrowed, (size_t)cap);
    if (!bo) return CG_ERR_NO_MEMORY;
    b->borrowed = bo;
    for (int i = b->cap_shadow; i < cap; i++) {
        sh[i] = NULL;
        bo[i] = 0;
    }
    b->cap_shadow = cap;
    return CG_OK;
}

void cg_auto_free(build *b) {
    for (int i = 0; b->shadow && i < b->cap_shadow; i++)
        if (!b->borrowed[i]) free(b->shadow[i]);
    free(b->shadow);
    free(b->borrowed);
    b->shadow = NULL;
    b->borrowed = NULL;
    b->cap_shadow = 0;
}

void cg_auto_shadow_eval(build *b, const lower_node *n, const int32_t *home, const cg_tensor_desc *ind,
                         cg_tensor_desc *outd, const int32_t *outs) {
    cg_plan *p = b->p;
    char err[256];
    cg_op_call call = cg_lower_call(n, ind, outd, err, sizeof err);
    const cg_kernel_def *k = cg_plan_kernel_on(p, n->op, 0, &call);
    if (!k) return;
    size_t bytes = 0;
    for (int i = 0; i < n->n_out; i++) {
        size_t ob = cg_desc_bytes(&outd[i]);
        if (ob > CG_AUTO_SHADOW_BUDGET) return;
        bytes += ob;
    }
    if (bytes > CG_AUTO_SHADOW_BUDGET - b->shadow_bytes) return; /* beyond the budget: no shadow */
    const void **ins = calloc((size_t)n->n_in + 1, sizeof *ins);
    void **outp = calloc((size_t)n->n_out + 1, sizeof *outp);
    int ok = ins && outp;
    for (int i = 0; ok && i < n->n_in; i++) ok = (ins[i] = b->shadow[home[i]]) != NULL;
    for (int i = 0; ok && i < n->n_out; i++)
        ok = (outp[i] = b->shadow[outs[i]] = calloc(1, cg_desc_bytes(&outd[i]) + 4)) != NULL;
    if (!ok || cg_dev_run_host(p->devs[0].dev, k, &call, ins, outp, 0, 0, NULL) != CG_OK) {
        for (int i = 0; outp && i < n->n_out; i++) {
            free(b->shadow[outs[i]]);
            b->shadow[outs[i]] = NULL;
        }
    } else {
        b->shadow_bytes += bytes;
    }
    free(ins);
    free(outp);
}

int cg_auto_choose(build *b, const lower_node *n, const int32_t *ins, const cg_tensor_desc *ind,
                   const cg_tensor_desc *outd, double *cost) {
    cg_plan *p = b->p;
    int best = -1, first = -1;
    double best_cost = 0;
    const void **host_in = calloc((size_t)n->n_in + 1, sizeof *host_in);
    cg_tensor_desc *od = calloc((size_t)n->n_out + 1, sizeof *od);
    if (!host_in || !od) {
        free(host_in);
        free(od);
        *cost = 0;
        return 0; /* memory is short: the CPU, which always has room to try */
    }
    for (int i = 0; i < n->n_in; i++) host_in[i] = b->shadow[cg_lower_resolve(b->in, ins[i])];
    memcpy(od, outd, sizeof *od * (size_t)n->n_out);
    for (int d = 0; d < p->n_devs; d++) {
        cg_op_call call = cg_lower_call(n, ind, od, NULL, 0);
        const cg_kernel_def *k = cg_plan_kernel_on(p, n->op, d, &call);
        if (!k) continue;
        if (first < 0) first = d;
        double c = cg_cost_kernel(p, d, n->op, k, n->attrs, n->n_in, ind, host_in, n->n_out, outd, NULL);
        if (c < 0) continue; /* the kernel failed on these inputs there */
        for (int i = 0; i < n->n_in; i++) {
            const slot *s = &b->in->slots[cg_lower_resolve(b->in, ins[i])];
            if (s->kind != SLOT_PARAM && s->dev != d) c += cg_cost_copy(p, s->dev, d, cg_desc_bytes(&ind[i]));
        }
        if (best < 0 || c < best_cost) {
            best = d;
            best_cost = c;
        }
    }
    free(host_in);
    free(od);
    *cost = best_cost;
    /* Measured nowhere (too large for every trial, or failing on these
     * inputs everywhere): the first device with a kernel takes it, and the
     * memory plan or the run says what is wrong, as for a fixed device. */
    return best >= 0 ? best : first;
}
