/* Plans: the internal structures shared by lowering (lower.c), placement
 * (place.c), cost measurement (cost.c), memory planning (memplan.c), the
 * executor (exec.c) and plan printing (plan_print.c).
 *
 * A cg_plan belongs to one graph and one set of placement options. For each
 * binding of the symbolic dimensions it holds an instance: the graph lowered
 * for those shapes (decompositions expanded, every step on a device, copies
 * at device boundaries, buffers assigned by liveness per device). Instances
 * are cached by their binding, so a shape seen before runs with no work but
 * the kernels. */
#ifndef CG_GRAPH_PLAN_H
#define CG_GRAPH_PLAN_H

#include <stdint.h>

#include "analysis.h"
#include "opencl/cl_backend.h"
#include "tensor.h"

#define CG_PLAN_MAX_DEVICES 16
#define CG_PLAN_MAX_INSTANCES 32

/* A device a plan may use. Index 0 is always the CPU. */
typedef struct pdev {
    int cl_index;          /* -1 for the CPU */
    cg_cl_device *cl;      /* NULL for the CPU */
    char name[24];         /* "cpu", "opencl:0" */
    size_t align;          /* buffer offset alignment */
} pdev;

/* One placement rule: nodes whose name (or whose graph's name) matches the
 * glob go to `dev` (a pdev index, or -1 for auto). */
typedef struct place_rule {
    char *pattern;
    int dev;
} place_rule;

typedef enum { SLOT_INPUT, SLOT_PARAM, SLOT_TEMP } slot_kind;

typedef struct slot {
    cg_tensor_desc desc;   /* concrete type */
    int dev;               /* where it lives (pdev index) */
    slot_kind kind;
    int input_index;       /* SLOT_INPUT: position among graph inputs */
    const void *param;     /* SLOT_PARAM on the CPU: weight data */
    cl_mem param_mem;      /* SLOT_PARAM on a device: the plan's replica */
    int value;             /* graph value index, or -1 */
    int def_step, last_step;
    int alias;             /* TEMP sharing another's buffer (in place), or -1 */
    size_t offset, bytes;
    cl_mem mem;            /* TEMP on a device: its sub-buffer */
} slot;

typedef enum { STEP_KERNEL, STEP_COPY, STEP_NOP } step_kind;

typedef struct step {
    step_kind kind;
    int dev;               /* device that runs it (copies: the destination) */
    char *name;            /* node name; decomposed nodes "node/op.k" */
    int line, col;
    /* kernels */
    const cg_op_entry *op;
    const cg_kernel_def *kernel;
    const cg_attr_value *attrs;
    cg_attr_value *owned_attrs; /* decomposed steps own their attributes */
    cg_node *attr_node;         /* ... and the parsed attribute text */
    int n_in, n_out;
    int32_t *in, *out;
    cg_tensor_desc *in_desc, *out_desc;
    size_t ws_offset, ws_bytes;
    cl_mem ws_mem;
    double cost_us;        /* estimated (measured) time, 0 if unknown */
    /* copies: src slot (on another device) -> dst slot (on `dev`) */
    int32_t src, dst;
    size_t bytes;
    void *staging;         /* host bytes for copies that leave a device */
    /* uploads of a kept input (cg_plan_keep_input): the stamp and data of
     * the tensor the device copy holds; 0: none valid */
    uint64_t kept_stamp;
    const void *kept_data;
} step;

typedef struct instance {
    int64_t *sym_vals;     /* the binding this instance was built for */
    int n_slots, cap_slots;
    slot *slots;
    int32_t *redirect;     /* slot -> slot that really holds it (decompositions) */
    int n_steps, cap_steps;
    step *steps;
    int32_t *val_slot;     /* graph value -> its home slot */
    int32_t *out_slot;     /* graph outputs -> slots */
    int32_t *copy_src, *copy_dev, *copy_dst; /* memo of copies made */
    int n_copies, cap_copies;
    size_t arena_bytes[CG_PLAN_MAX_DEVICES];
    void *host_arena;
    cl_mem cl_arena[CG_PLAN_MAX_DEVICES];
    int max_in, max_out;
    double est_cost_us;
    uint64_t last_used;
} instance;

/* A graph input carried from a graph output (cg_plan_carry): where the
 * value the last run wrote lives. */
typedef struct carry {
    int out;               /* graph output index; -1: the input is not carried */
    int valid;             /* a successful run wrote it */
    int on_host;           /* host->data holds it */
    int dev;               /* the device whose mem holds it (0: none) */
    cg_tensor *host;       /* its shape (always) and host copy (on_host) */
    size_t host_cap;       /* bytes host->data holds */
    cl_mem mem[CG_PLAN_MAX_DEVICES];
    size_t mem_cap[CG_PLAN_MAX_DEVICES];
} carry;

/* A kept input's last upload to each device (cg_plan_keep_input), shared
 * by the instances: the tensor's stamp and data it holds (0: none). */
typedef struct kept {
    cl_mem mem[CG_PLAN_MAX_DEVICES];
    size_t mem_cap[CG_PLAN_MAX_DEVICES];
    uint64_t stamp[CG_PLAN_MAX_DEVICES];
    const void *data[CG_PLAN_MAX_DEVICES];
} kept;

struct cg_plan {
    cg_model *model;
    cg_graph *graph;
    cg_analysis an;
    int n_devs;
    pdev devs[CG_PLAN_MAX_DEVICES];
    int default_dev;       /* for nodes no rule names; -1 = auto */
    int n_rules;
    place_rule *rules;
    cl_mem *param_mem;     /* [n_devs * n_values]: parameter replicas */
    int n_inst;
    instance *inst[CG_PLAN_MAX_INSTANCES];
    uint64_t clock;
    const void **inptr;    /* scratch for kernel arguments */
    void **outptr;
    int scratch_cap;
    cg_plan_stats last, total;
    unsigned char *keep;   /* per graph input: kept on its devices between runs */
    kept *kept;            /* per graph input: its device copies */
    carry *carry;          /* per graph input */
    unsigned char *carried; /* per graph input: this run takes the carried value */
};

/* Host pointer of a slot on the CPU. */
static inline void *cg_slot_host(const instance *in, const slot *s, cg_tensor **by_pos) {
    if (s->kind == SLOT_INPUT) return by_pos[s->input_index]->data;
    if (s->kind == SLOT_PARAM) return (void *)s->param;
    return (char *)in->host_arena + s->offset;
}

/* Device buffer of a slot on an OpenCL device. */
static inline cl_mem cg_slot_mem(const slot *s) { return s->kind == SLOT_PARAM ? s->param_mem : s->mem; }

/* ---- lower.c ---- */

/* Builds the instance for the bound symbol values; `inputs` (by graph input
 * position) give the real data auto placement measures kernels with. */
cg_status cg_instance_build(cg_plan *p, const int64_t *sym_vals, cg_tensor *const *inputs,
                            instance **out);
void cg_instance_free(cg_plan *p, instance *in);
const char *cg_plan_dev_name(const cg_plan *p, int dev);

/* ---- place.c ---- */

/* Parses "--place" rules and the default device into the plan. */
cg_status cg_place_parse(cg_plan *p, const char *device, const char *rules);
/* The device a graph node goes to by the rules: a pdev index or -1 (auto). */
int cg_place_rule_for(const cg_plan *p, const char *node_name);
/* Index of the pdev for a device spec, opening it when new; -1 for "auto". */
cg_status cg_place_device(cg_plan *p, const char *spec, int *dev);

/* ---- cost.c ---- */

/* Measured time of one kernel on device `dev` for these types and real
 * input data (host copies), in microseconds; cached in memory and on disk
 * (cache dir, costs.txt) by device, op, types and attributes. */
double cg_cost_kernel(cg_plan *p, int dev, const cg_op_entry *op, const cg_attr_value *attrs,
                      int n_in, const cg_tensor_desc *in, const void *const *host_in, int n_out,
                      const cg_tensor_desc *out);
/* Estimated time of moving `bytes` from device a to device b (us). */
double cg_cost_copy(cg_plan *p, int a, int b, size_t bytes);

/* ---- carry.c ---- */

/* Carry state for a new plan (nothing carried). */
cg_status cg_carry_init(cg_plan *p);
void cg_carry_free(cg_plan *p);
/* The tensor a run not given carried input k binds (its shape, and its data
 * where on_host); an error naming the input if no run wrote it yet. */
cg_status cg_carry_bind(cg_plan *p, int k, cg_tensor **t);
/* Brings every input this run takes carried onto the host (where lowering
 * measures kernels on real inputs, or a CPU kernel reads it). */
cg_status cg_carry_to_host(cg_plan *p, int k, cg_plan_stats *st);
/* Before the steps: carried inputs that CPU steps or CPU outputs read
 * directly are made valid on the host. */
cg_status cg_carry_prepare(cg_plan *p, instance *in, cg_plan_stats *st);
/* The copy step `c` from carried input k to its device slot. */
cg_status cg_carry_upload(cg_plan *p, instance *in, step *c, int k, cg_plan_stats *st);
/* After the steps: device outputs carried are copied on their device (before
 * the queues drain), host outputs (after). */
cg_status cg_carry_save(cg_plan *p, instance *in, cg_tensor **by_pos, int on_host);
/* A failed run leaves nothing to carry. */
void cg_carry_invalidate(cg_plan *p);

/* ---- keep.c ---- */

/* Nothing kept for a new plan. */
cg_status cg_keep_init(cg_plan *p);
void cg_keep_free(cg_plan *p);
/* The copy step `c` from kept input k (tensor t) to its device slot:
 * uploads t once per device while it keeps its stamp and buffer, then
 * copies on the device into the slot when the slot holds something else. */
cg_status cg_keep_upload(cg_plan *p, instance *in, step *c, int k, const cg_tensor *t, cg_plan_stats *st);

/* ---- memplan.c ---- */

/* Assigns offsets per device by liveness, sizes and creates the arenas and
 * sub-buffers of an instance. */
cg_status cg_instance_memory(cg_plan *p, instance *in);

#endif
