/* Plans: the internal structures shared by lowering (lower.c), placement
 * (place.c), cost measurement (cost.c), memory planning (memplan.c), the
 * executor (exec.c), residency of carried and kept inputs (carry.c,
 * keep.c) and plan printing (plan_print.c).
 *
 * A cg_plan belongs to one graph and one set of placement options. For each
 * binding of the symbolic dimensions it holds an instance: the graph lowered
 * for those shapes (decompositions expanded, every step on a device, copies
 * at device boundaries, buffers assigned by liveness per device, kernel
 * states made). Instances are cached by their binding, so a shape seen
 * before runs with no work but the kernels.
 *
 * Devices are reached only through backends/backend.h: a slot's memory is a
 * cg_buf of its device, whatever the backend. */
#ifndef CG_GRAPH_PLAN_H
#define CG_GRAPH_PLAN_H

#include <stdint.h>

#include "analysis.h"
#include "backend.h"
#include "tensor.h"

/* Bindings whose instances a plan keeps (least recently used dropped
 * beyond): a cache policy, not a limit on the graph. The instances share
 * the plan's arena, so one costs its step and slot tables only: a
 * Transformer decoder has one per cache length of each source length. */
#define CG_PLAN_CACHED_INSTANCES 128

/* A device a plan may use. Index 0 is always the CPU (host memory). */
typedef struct pdev {
    int index; /* backend device index (cg_dev_*) */
    cg_device *dev;
    const cg_device_info *info;
} pdev;

/* One placement rule: nodes whose name (or whose graph's name) matches the
 * glob go to `dev` (a pdev index, or -1 for auto). */
typedef struct place_rule {
    char *pattern;
    int dev;
} place_rule;

typedef enum { SLOT_INPUT, SLOT_PARAM, SLOT_TEMP } slot_kind;

typedef struct slot {
    cg_tensor_desc desc; /* concrete type */
    int dev;             /* where it lives (pdev index) */
    slot_kind kind;
    int input_index;   /* SLOT_INPUT: position among graph inputs */
    const void *param; /* SLOT_PARAM: the weight's host bytes */
    /* Its memory on `dev`: TEMP a view of the device's arena, PARAM the
     * plan's replica (the host bytes themselves on the CPU); INPUT none
     * (the caller's tensor, wrapped at each run). */
    cg_buf buf;
    int value; /* graph value index, or -1 */
    int def_step, last_step;
    int alias;    /* TEMP sharing another's buffer (in place), or -1 */
    int live_all; /* TEMP whose bytes no other slot shares: it lives through
                            * every run (a kept input's copy, a `once` step's result) */
    int carry_in; /* TEMP on a host-memory device holding a carried output:
                   * the graph input it is carried into (its bytes are a
                   * block of the plan's pool, not the arena's), or -1 */
    size_t offset, bytes;
} slot;

typedef enum { STEP_KERNEL, STEP_COPY, STEP_NOP } step_kind;

/* Where a step's cost comes from (clgraph plan shows it). */
enum {
    COST_NONE = 0, /* not known */
    COST_MEASURED, /* the kernel timed in this process */
    COST_CACHED,   /* a time from costs.txt: same device, driver, kernel code and types */
    COST_MODEL,    /* a copy: the link's measured latency plus bytes over its bandwidth */
    COST_PLACEMENT /* timed while auto placement chose the device: kernel plus input copies */
};

typedef struct step {
    step_kind kind;
    int dev;    /* device that runs it (copies: the destination) */
    char *name; /* node name; decomposed nodes "node/op.k" */
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
    cg_buf ws;   /* its workspace: a view of the device's arena */
    void *state; /* the kernel's per-node state (ABI 1.1 create) */
    size_t state_bytes;
    double cost_us; /* estimated (measured) time, 0 if unknown */
    int cost_src;   /* where cost_us comes from: COST_* */
    /* copies: src slot (on another device) -> dst slot (on `dev`) */
    int32_t src, dst;
    size_t bytes;
    void *staging;      /* host bytes for copies between two devices without host memory */
    cg_event ev;        /* a copy into host memory still under way */
    int32_t check_word; /* kernels: its first check word on its device (checks.c), -1: none */
    /* uploads of a kept input (cg_plan_keep_input): the stamp and data of
     * the tensor the device copy holds; 0: none valid */
    uint64_t kept_stamp;
    const void *kept_data;
    /* reads nothing but parameters, directly or through other such steps
     * (a decomposition's cast of a weight): runs in the instance's first
     * run only, its outputs kept (lower.c fold_params) */
    int once;
} step;

typedef struct instance {
    int64_t *sym_vals; /* the binding this instance was built for */
    int n_slots, cap_slots;
    slot *slots;
    int32_t *redirect; /* slot -> slot that really holds it (decompositions) */
    int n_steps, cap_steps;
    step *steps;
    int32_t *val_slot;                       /* graph value -> its home slot */
    int32_t *out_slot;                       /* graph outputs -> slots */
    int32_t *copy_src, *copy_dev, *copy_dst; /* memo of copies made */
    int n_copies, cap_copies;
    size_t *arena_bytes; /* per plan device: what its slots need of the plan's arena */
    size_t state_bytes;  /* kernel states of its steps */
    cg_buf *check;       /* per plan device: its steps' check words (checks.c) */
    int *check_n;        /* per plan device: how many words */
    int32_t *check_host; /* every device's words, read back by each run */
    int max_in, max_out;
    double est_cost_us;
    uint64_t last_used;
    int once_done; /* a run completed the `once` steps */
} instance;

/* Host memory for a carried value: a tensor used as bytes, and how many
 * it holds (its shape is the value's). */
typedef struct host_block {
    cg_tensor *t;
    size_t cap;
} host_block;

/* A graph input carried from a graph output (cg_plan_carry): where the
 * value the last run wrote lives. */
typedef struct carry {
    int out;         /* graph output index; -1: the input is not carried */
    int valid;       /* a successful run wrote it */
    int on_host;     /* host->data holds it */
    int dev;         /* the device whose buffer holds it (0: none) */
    cg_tensor *host; /* its shape (always) and host copy (on_host) */
    size_t host_cap; /* bytes host->data holds */
    /* The pool block the run writes the output into (slot carry_in),
     * the value from when the run succeeds (carry_pool.c). */
    host_block next;
    int has_next;
    cg_buf *mem; /* per plan device: the plan's copy */
} carry;

/* A kept input's last upload to each device (cg_plan_keep_input), shared
 * by the instances: the tensor's stamp and data it holds (0: none). */
typedef struct kept {
    cg_buf *mem; /* per plan device */
    uint64_t *stamp;
    const void **data;
} kept;

/* A graph input's name and position (cg_plan.in_sorted). */
typedef struct plan_name {
    const char *name;
    int pos;
} plan_name;

struct cg_plan {
    cg_model *model;
    cg_graph *graph;
    cg_analysis an;
    int n_devs;
    pdev *devs;      /* n_devs; fixed once the placement is parsed */
    int default_dev; /* for nodes no rule names; -1 = auto */
    int n_rules;
    place_rule *rules;
    cg_buf *params; /* [n_devs * n_values]: parameter replicas */
    int n_inst;
    instance *inst[CG_PLAN_CACHED_INSTANCES];
    /* Per device: one arena the cached instances share (runs of a plan
     * never overlap), views of it for their temporaries; the instance whose
     * values it holds now (memplan.c cg_arena_claim). */
    cg_buf *arena;
    instance *arena_owner;
    uint64_t clock;
    const cg_buf **inptr; /* scratch for kernel arguments */
    const cg_buf **outptr;
    cg_buf *inbuf; /* scratch: the run's wrapped caller inputs */
    int scratch_cap;
    cg_plan_stats last, total;
    /* The graph inputs sorted by name, for name lookups in O(log n): a run
     * by names then costs no comparison per pair of inputs. */
    plan_name *in_sorted;
    unsigned char *keep; /* per graph input: kept on its devices between runs */
    kept *kept;          /* per graph input: its device copies */
    carry *carry;        /* per graph input */
    host_block *pool;    /* host blocks no carried value holds (carry_pool.c) */
    int n_pool, pool_cap;
    void *pool_scratch; /* carry_pool.c: a run's candidate blocks */
    int pool_scratch_cap;
    unsigned char *carried; /* per graph input: this run takes the carried value */
    cg_profiler *prof;      /* attached profiler (cg_plan_set_profiler), or NULL */
    int repeating;          /* repeat.c: the check's own runs are under way */
    int repeat_no_other;    /* repeat.c: a grown binding failed once; not tried again */
    /* A graph with variants (guards): this plan only dispatches each run to
     * the plan of the first variant whose guards the binding meets
     * (variant.c); graph is the first variant, for the interface. */
    int n_var;
    struct cg_plan **var;
};

/* The buffer a kernel reads for slot s: the caller's tensor for an input
 * (wrapped for this run in p->inbuf), else the slot's own. */
static inline const cg_buf *cg_slot_buf(const cg_plan *p, const slot *s) {
    return s->kind == SLOT_INPUT ? &p->inbuf[s->input_index] : &s->buf;
}

/* Host address of a slot on a device with host memory, NULL elsewhere. */
static inline void *cg_slot_host(const cg_plan *p, const slot *s) {
    return cg_dev_host_ptr(p->devs[s->dev].dev, cg_slot_buf(p, s));
}

/* ---- variant.c ---- */

/* p->in_sorted for the plan's graph (plan.c). */
cg_status cg_plan_sort_input_names(cg_plan *p);

/* A plan of graph g (one variant or a graph without any), for plan.c. */
cg_status cg_plan_create_one(cg_model *m, cg_graph *g, const cg_plan_options *opt, cg_plan **out);
/* The dispatching plan of g's name when it has variants (else *out NULL). */
cg_status cg_variant_plan_create(cg_model *m, cg_graph *g, const cg_plan_options *opt, cg_plan **out);
/* The first variant of plan p whose guards the symbol sizes meet, or NULL. */
cg_plan *cg_variant_for(const cg_plan *p, const int64_t *sym);
/* The variant of plan p for its inputs by_pos (NULL where not given) and
 * the symbol sizes they bind (into sym); fails naming the sizes when none
 * holds. */
cg_status cg_variant_choose(cg_plan *p, cg_tensor *const *by_pos, int64_t *sym, cg_plan **out);

/* ---- lower.c ---- */

/* Builds the instance for the bound symbol values; `inputs` (by graph input
 * position) give the real data auto placement measures kernels with. */
cg_status cg_instance_build(cg_plan *p, const int64_t *sym_vals, cg_tensor *const *inputs, instance **out);
void cg_instance_free(cg_plan *p, instance *in);
/* Every cached instance freed (a setting their lowering or memory depends
 * on changed); the next run lowers again. */
void cg_plan_drop_instances(cg_plan *p);
const char *cg_plan_dev_name(const cg_plan *p, int dev);
/* The kernel of op on plan device dev for this call, if the device runs it. */
const cg_kernel_def *cg_plan_kernel_on(const cg_plan *p, const cg_op_entry *op, int dev, const cg_op_call *call);

/* ---- place.c ---- */

/* Parses "--place" rules and the default device into the plan. */
cg_status cg_place_parse(cg_plan *p, const char *device, const char *rules);
/* The device a graph node goes to by the rules: a pdev index or -1 (auto). */
int cg_place_rule_for(const cg_plan *p, const char *node_name);
/* Whether a rule names the node or its graph (else it gets the default). */
int cg_place_has_rule(const cg_plan *p, const char *node_name);
/* Index of the pdev for a device spec, opening it when new; -1 for "auto". */
cg_status cg_place_device(cg_plan *p, const char *spec, int *dev);

/* ---- cost.c ---- */

/* Measured time of one kernel on device `dev` for these types and real
 * input data (host copies), in microseconds, -1 if it fails there; cached
 * in memory and on disk (cache dir, costs.txt) by device, op, plugin
 * version, the identity of the file holding the kernel's code (the plugin,
 * or clgraph's library for built-in ops: rebuilt code is timed again),
 * types and attributes. *cached (may be NULL) is set when the time comes
 * from that cache. */
double cg_cost_kernel(cg_plan *p, int dev, const cg_op_entry *op, const cg_kernel_def *k, const cg_attr_value *attrs,
                      int n_in, const cg_tensor_desc *in, const void *const *host_in, int n_out,
                      const cg_tensor_desc *out, int *cached);
/* Estimated time of moving `bytes` from device a to device b (us). */
double cg_cost_copy(cg_plan *p, int a, int b, size_t bytes);

/* ---- carry.c ---- */

/* Carry state for a new plan (nothing carried). */
cg_status cg_carry_init(cg_plan *p);
void cg_carry_free(cg_plan *p);
/* The tensor a run not given carried input k binds (its shape, and its data
 * where on_host); an error naming the input if no run wrote it yet. */
cg_status cg_carry_bind(cg_plan *p, int k, cg_tensor **t);
/* Brings carried input k onto the host (where lowering measures kernels on
 * real inputs, or a host kernel reads it). */
cg_status cg_carry_to_host(cg_plan *p, int k, cg_plan_stats *st);
/* Before the steps: carried inputs that host-memory steps or host outputs
 * read directly are made valid on the host. */
cg_status cg_carry_prepare(cg_plan *p, instance *in, cg_plan_stats *st);
/* The copy step `c` from carried input k to its device slot. */
cg_status cg_carry_upload(cg_plan *p, instance *in, step *c, int k, cg_plan_stats *st);
/* After the steps: outputs carried are copied where they were made, on
 * devices without host memory before the queues drain (on_host 0), into
 * host memory after (on_host 1). */
cg_status cg_carry_save(cg_plan *p, instance *in, int on_host);
/* Room for a carried value that grows: at least twice what it had. */
size_t cg_carry_grown(size_t need, size_t had);
/* The host copy holds output `s` now: its shape, and a new stamp. */
void cg_carry_host_shape(carry *c, const slot *s);
/* A failed run leaves nothing to carry. */
void cg_carry_invalidate(cg_plan *p);

/* ---- carry_pool.c ---- */

/* Before the steps: points the instance's carried host outputs (slots with
 * carry_in) at blocks of the pool or of carried inputs no later step
 * reads, with room for this run's shapes (a new block counts as a host
 * allocation in stats). */
cg_status cg_carry_direct(cg_plan *p, instance *in, cg_plan_stats *stats);
/* After a successful run (cg_carry_save calls it): the blocks written hold
 * the carried values, the ones they replace go to the pool. */
cg_status cg_carry_direct_done(cg_plan *p, instance *in);
/* The pool's blocks freed (a plan's end). */
void cg_carry_pool_free(cg_plan *p);
/* Frees every carried value and the pool's blocks (cg_plan_release): the
 * next run must be given the carried inputs. */
void cg_carry_drop_values(cg_plan *p);

/* ---- keep.c ---- */

/* Nothing kept for a new plan. */
cg_status cg_keep_init(cg_plan *p);
void cg_keep_free(cg_plan *p);
/* The copy step `c` from kept input k (tensor t) to its device slot:
 * uploads t once per device while it keeps its stamp and buffer, then
 * copies on the device into the slot when the slot holds something else. */
cg_status cg_keep_upload(cg_plan *p, instance *in, step *c, int k, const cg_tensor *t, cg_plan_stats *st);

/* ---- checks.c ---- */

/* Check words for the instance's flagged OpenCL kernels (zeroed buffers). */
cg_status cg_checks_make(cg_plan *p, instance *in);
void cg_checks_free(cg_plan *p, instance *in);
/* Enqueues the read of every device's words behind the run's steps. */
cg_status cg_checks_read(cg_plan *p, instance *in);
/* After the queues drained: the error of the first step that recorded an
 * invalid value (set as the last error when `report`; the words are
 * cleared either way), else CG_OK. */
cg_status cg_checks_verdict(cg_plan *p, instance *in, int report);
/* The run-time error of kernel step s, "<where>op 'node' on device: msg". */
cg_status cg_step_error(const cg_plan *p, const step *s, const char *msg);

/* ---- repeat.c (CLGRAPH_CHECK_RUNS) ---- */

/* Whether this run is checked by repeating it. */
int cg_repeat_wanted(const cg_plan *p);
/* Before a checked run: host copies of the carried inputs it takes (snap,
 * per graph input, NULL where not carried; by_pos[k] rebound to the host
 * copy of the carry). */
cg_status cg_repeat_snapshot(cg_plan *p, cg_tensor **by_pos, cg_tensor **snap);
/* After a successful checked run with outputs `outputs` (NULL entries: not
 * read): the same inputs twice more, a grown binding in between, each
 * bit-identical or an error naming the output and element. The plan's
 * statistics stay those of the checked run. */
cg_status cg_repeat_check(cg_plan *p, cg_tensor **by_pos, cg_tensor **snap, cg_tensor *const *outputs);

/* ---- memplan.c ---- */

/* Assigns offsets per device by liveness, grows the plan's arenas to hold
 * the instance, and makes its views of them. */
cg_status cg_instance_memory(cg_plan *p, instance *in);

/* Makes `in` the instance whose values the plan's arenas hold, before a
 * run: when another instance ran last, what `in` keeps in the arena between
 * runs (its `once` outputs, kept inputs' copies) is made again. */
void cg_arena_claim(cg_plan *p, instance *in);
/* An arena again for a plan released (cg_plan_release) with its instances
 * kept: as large as the largest cached instance needs, their views moved
 * to it. Does nothing where the arena is there. */
cg_status cg_arena_restore(cg_plan *p, const instance *in);

#endif
