/* Lowering internals shared by lower.c (nodes to steps), expand.c
 * (decompositions) and autoplace.c (placement by measurement). */
#ifndef CG_GRAPH_LOWER_H
#define CG_GRAPH_LOWER_H

#include "plan.h"

/* Decompositions nest at most this deep (a decomposition that emits its
 * own op would otherwise never end). */
#define CG_MAX_DECOMP_DEPTH 8

/* One instance being built. */
typedef struct build {
    cg_plan *p;
    instance *in;
    cg_tensor *const *inputs; /* caller data by input position, or NULL */
    int autoplace;            /* some node may be placed by measurement */
    void **shadow;            /* auto: host values of slots, from host kernels */
    unsigned char *borrowed;  /* auto: shadow[i] is not ours to free */
    int cap_shadow;
    size_t shadow_bytes; /* auto: what the shadow values hold */
} build;

/* One node to lower (a graph node, or one a decomposition emits). */
typedef struct lower_node {
    const cg_op_entry *op;
    const cg_attr_value *attrs;
    cg_attr_value *owned; /* attributes the instance takes over (or NULL) */
    cg_node *attr_node;   /* their parsed text (or NULL) */
    const char *name;
    int line, col;
    int n_in, n_out;
    const int32_t *in; /* slots */
    int dev;           /* pdev index, or -1: auto */
    int by_default;    /* dev is the plan's default: no --place rule names the node */
    int depth;         /* decomposition depth */
} lower_node;

static inline int32_t cg_lower_resolve(const instance *in, int32_t s) {
    while (in->redirect[s] != s) s = in->redirect[s];
    return s;
}

cg_status cg_lower_oom(void);
cg_status cg_lower_new_slot(build *b, const cg_tensor_desc *d, int dev, int32_t *out);
cg_status cg_lower_new_step(build *b, step_kind kind, int dev, const char *name, int *out);
void cg_lower_free_attr_node(cg_node *n);

/* The call a node's callbacks get: its descriptors and attributes, with
 * an error buffer (or none). */
cg_op_call cg_lower_call(const lower_node *n, const cg_tensor_desc *ind, cg_tensor_desc *outd, char *err,
                         size_t err_size);

/* Lowers one node, writing the slots of its n_out outputs. */
cg_status cg_lower_node(build *b, const lower_node *n, int32_t *outs);

/* expand.c: expands node n (whose outputs are the placeholder slots
 * `place`, its inputs' descriptors `ind`, outputs' `outd`) into what its
 * op's decompose callback emits, on n->dev (or placed automatically). */
cg_status cg_lower_expand(build *b, const lower_node *n, const int32_t *ins, const cg_tensor_desc *ind,
                          cg_tensor_desc *outd, int32_t *place);

/* autoplace.c */
/* The device with the least measured kernel time plus the time to bring
 * the inputs there; -1 if no device has a kernel (decompose). */
int cg_auto_choose(build *b, const lower_node *n, const int32_t *ins, const cg_tensor_desc *ind,
                   const cg_tensor_desc *outd, double *cost);
/* Runs the host kernel of a lowered node on the shadow values so later
 * nodes are measured on real data; failure leaves no shadow. Shadows stop
 * at CG_AUTO_SHADOW_BUDGET bytes in all (later nodes are measured on
 * zeros), so auto placement of a plan too large for memory allocates
 * little before the memory plan refuses it. */
#define CG_AUTO_SHADOW_BUDGET ((size_t)256 << 20)
void cg_auto_shadow_eval(build *b, const lower_node *n, const int32_t *home, const cg_tensor_desc *ind,
                         cg_tensor_desc *outd, const int32_t *outs);
/* Grows the shadow table with the slots. */
cg_status cg_auto_grow(build *b, int cap);
void cg_auto_free(build *b);

#endif
