/* In-memory graph IR: models hold named graphs; graphs hold values and nodes.
 * The parser, the builder API, the printer, the verifier and the executor
 * all work on these structs. */
#ifndef CG_GRAPH_IR_H
#define CG_GRAPH_IR_H

#include "clgraph/clgraph.h"
#include "clgraph/plugin.h"
#include "arena.h"
#include "registry.h"

#include <stdint.h>

typedef struct cg_attr {
    char *key;
    cg_attr_type type;
    int64_t i;
    double f;
    char *s;
    int64_t *ints;
    int32_t n_ints;
    int syms;      /* ints hold symbolic dims (CG_DIM_SYM) written by name */
    int line, col; /* where it was written (0 from the builder) */
} cg_attr;

typedef enum cg_value_kind {
    CG_VAL_INPUT = 1, /* graph input, bound at run */
    CG_VAL_PARAM = 2, /* weight from the safetensors file */
    CG_VAL_NODE = 3   /* output of a node */
} cg_value_kind;

/* A slot of a graph's name index: the value (-1: empty) and its name's
 * hash, so that probes and growth compare and move hashes without touching
 * the names. */
typedef struct cg_name_slot {
    int32_t v;
    uint32_t hash;
} cg_name_slot;

typedef struct cg_value {
    char *name;
    cg_value_kind kind;
    /* Declared for inputs and params; filled by inference for node outputs
     * (typed == 0 until the verifier has run). dims hold sizes or
     * CG_DIM_SYM(k) with k an index into the model's symbol table. */
    int typed;
    cg_dtype dtype;
    int ndim;
    int64_t dims[CG_MAX_DIMS];
    char *weight;         /* params: the weight name */
    int32_t producer;     /* node index for CG_VAL_NODE, else -1 */
    int32_t producer_out; /* output slot of the producer */
    int line, col;
} cg_value;

struct cg_node {
    char *name;
    char *op;
    int n_inputs;
    char **in_names; /* as written; resolved into inputs[] by verify */
    int32_t *inputs; /* value indices, -1 until resolved */
    int n_outputs;
    int32_t *outputs; /* value indices */
    int n_attrs;
    cg_attr *attrs;
    int line, col;
    int op_line, op_col; /* position of the op name */
    struct cg_graph *graph;
};

/* A condition on dims under which a variant of a graph holds (`graph main
 * when T == 1 {`): a and b sizes or CG_DIM_SYM(k); op a CG_GUARD_*. */
#define CG_MAX_GUARDS 16
enum { CG_GUARD_EQ = 1, CG_GUARD_NE, CG_GUARD_LT, CG_GUARD_LE, CG_GUARD_GT, CG_GUARD_GE };
typedef struct cg_guard {
    int op;
    int64_t a, b;
} cg_guard;

#define CG_MAX_REWRITES 16

typedef struct cg_value_sym {
    int sym;
    char *input;
} cg_value_sym;

typedef struct cg_refused_variant {
    int n_guards;
    cg_guard guards[CG_MAX_GUARDS];
    char *why;
} cg_refused_variant;

struct cg_graph {
    char *name;
    struct cg_model *model;
    /* Variants: graphs of one name, each made for the bindings its guards
     * admit (an ONNX If on dims whose branches differ in shape); a plan of
     * that name runs the first whose guards hold (none: a single graph). */
    int n_guards;
    cg_guard *guards;
    int n_values, cap_values;
    cg_value *values;
    int n_nodes, cap_nodes;
    struct cg_node **nodes;
    int n_inputs;
    int32_t *inputs; /* value indices, in declaration order */
    int n_outputs;
    char **out_names;        /* as written; resolved into outputs[] by verify */
    int32_t *outputs;        /* value indices, -1 until resolved */
    int *out_line, *out_col; /* where each output was named */
    int line, col;
    int end_line;               /* the line of its closing '}'; 0 when not parsed */
    struct cg_name_slot *index; /* value names -> indices (names.c) */
    uint32_t cap_index;         /* slots, a power of two */
    int32_t n_index;            /* values indexed */
    cg_arena arena;             /* the nodes and every name of nodes and values */
};

/* A '#' comment of a parsed text, kept so that printing the model (clgraph
 * fmt) writes it back: from the '#' to the end of its line, trailing
 * blanks dropped. */
typedef struct cg_comment {
    char *text;
    int line;
    int own_line; /* nothing but blanks before it on its line */
} cg_comment;

/* Operators of derived dims (sym_expr.c). DIV and MOD are on sizes, so
 * floor and truncation agree. */
enum { CG_SYM_ADD = 1, CG_SYM_SUB, CG_SYM_MUL, CG_SYM_DIV, CG_SYM_MOD, CG_SYM_MIN, CG_SYM_MAX, CG_SYM_CEIL_DIV };

/* A derived dim: op(a, b), each a size >= 0 or CG_DIM_SYM(k) of a symbol
 * defined before it; op 0 for a free symbol (bound from the inputs). */
typedef struct cg_sym_def {
    int op;
    int64_t a, b;
} cg_sym_def;

struct cg_model {
    cg_context *ctx;
    char *filename; /* for messages; "<builder>" for the builder */
    int n_graphs;
    struct cg_graph **graphs;
    int n_syms;
    char **syms;               /* symbolic dimension names */
    cg_sym_def *sym_defs;      /* per symbol, or NULL when none is derived */
    cg_weights *weights;       /* bound weights or NULL */
    cg_weights *owned_weights; /* weights the model came with (an ONNX file's
                                * initializers), freed with it */
    int verified;
    /* Symbols bound from a graph input's value (one integer), not from
     * dims: `dim sr.value = value(sr)`; what guards on a mode input read. */
    int n_value_syms;
    struct cg_value_sym *value_syms;
    /* Variants an import asked for but could not make (their guards and
     * why), for the plan's message when a binding needs one of them. */
    int n_refused;
    struct cg_refused_variant *refused;
    int n_comments, cap_comments;
    cg_comment *comments; /* in text order; none for built or imported models */
    /* Graph rewrites run on the model (graph/rewrite): whether
     * cg_model_rewrite was called, bit i set when pass i ran, and how many
     * places each changed. */
    int rewritten;
    unsigned rewrites_ran;
    int rewrites_fired[CG_MAX_REWRITES];
};

/* ---- construction (used by the parser and the builder API) ---- */

/* Symbol index of `name`, added if new; -1 on allocation failure. */
int cg_model_sym(cg_model *m, const char *name);

/* Symbol index of `name`, or -1 if the model has none of that name. */
int cg_model_find_sym(const cg_model *m, const char *name);

/* ---- derived dims (sym_expr.c) ---- */

/* The symbol for op(a, b) (a, b sizes or symbols of m): an existing one
 * with that definition, else a new one named after it ("B*4"). */
cg_status cg_model_sym_define(cg_model *m, int op, int64_t a, int64_t b, int *out);

/* The same under a given name (the text format's `dim NAME = a op b`);
 * fails when the name is taken or an operand is not defined before. */
cg_status cg_model_sym_define_named(cg_model *m, const char *name, int op, int64_t a, int64_t b, int *out);

/* Non-zero when symbol k is derived. */
int cg_model_sym_derived(const cg_model *m, int k);

/* Given the free symbols' sizes in vals (-1 where unbound), computes the
 * derived ones; fails on a definition with no size for this binding
 * (negative, division by zero, overflow) or one an input bound to another
 * size. */
cg_status cg_model_eval_syms(const cg_model *m, int64_t *vals);

/* "B * 4": symbol k's definition as the text format writes it. */
void cg_model_sym_def_text(const cg_model *m, int k, char *buf, size_t size);

/* The operator's spelling ("+", "ceil_div") or NULL; and back (0: none). */
const char *cg_sym_op_text(int op);
/* Whether op is written between its operands ("B * 4") or as a call. */
int cg_sym_op_infix(int op);
int cg_sym_op_parse(const char *s);

/* ---- variants (guard.c) ---- */

/* A new graph of name `name` guarded by guards[0..n-1] (copied): a model
 * may hold several graphs of one name when each has guards. */
cg_status cg_model_new_variant(cg_model *m, const char *name, int n, const cg_guard *guards, int line, int col,
                               cg_graph **out);

/* Frees the model's last graph (an import that made it failed). */
void cg_model_drop_last_graph(cg_model *m);

/* Non-zero when the guards of g hold for the symbol sizes vals (every
 * symbol a guard reads bound, as cg_model_eval_syms leaves them). */
int cg_graph_guards_hold(const cg_graph *g, const int64_t *vals);
int cg_guards_hold(int n, const cg_guard *guards, const int64_t *vals);

/* The symbol `name` bound from the value of graph input `input` (one
 * integer or bool); an existing one for that input is returned. Fails when
 * `name` is a dim already. */
cg_status cg_model_sym_value(cg_model *m, const char *name, const char *input, int *out);

/* Whether a graph input of dtype t can bind a value symbol (integers and
 * bool). */
int cg_value_sym_dtype(cg_dtype t);

/* The input whose value binds symbol k, or NULL for a dim. */
const char *cg_model_sym_input(const cg_model *m, int k);

/* Sets vals[k] of every value symbol from g's inputs by_pos (graph input
 * order; NULL where not given): fails naming an input that is not one
 * integer. */
cg_status cg_graph_bind_values(const cg_graph *g, const cg_tensor *const *by_pos, int64_t *vals);

/* Records that the variant for guards[0..n-1] could not be made, and why. */
cg_status cg_model_refuse_variant(cg_model *m, int n, const cg_guard *guards, const char *why);

/* "T == 1, S < 4": g's guards as the text format writes them ("" if none). */
void cg_graph_guards_text(const cg_graph *g, char *buf, size_t size);

/* The operator's spelling ("==", "<=") or NULL; and back (0: none). */
const char *cg_guard_op_text(int op);
int cg_guard_op_parse(const char *s);

/* Replaces in d every symbol that g's guards fix (T == 1) by its size:
 * inside the variant the dim is that size. */
void cg_graph_pin_desc(const cg_graph *g, cg_tensor_desc *d);

/* Adds a value; fails (with a message naming both places) if the name is
 * already defined in the graph. Returns the index through *out. */
cg_status cg_graph_new_value(cg_graph *g, const char *name, cg_value_kind kind, int line, int col, int32_t *out);

/* Index of the value named `name`, or -1 (a hash lookup: names.c). */
int32_t cg_graph_find_value(const cg_graph *g, const char *name);

/* Makes room in g's name index for `extra` more values, so that the
 * cg_graph_index_add calls that commit them cannot fail. */
cg_status cg_graph_index_reserve(cg_graph *g, int extra);

/* Indexes value v under its name (room reserved before). */
void cg_graph_index_add(cg_graph *g, int32_t v);

/* Adds a node with outputs defined; inputs are kept by name. */
cg_status cg_graph_new_node(cg_graph *g, const char *op, const char *name, int n_inputs, const char *const *inputs,
                            int n_outputs, const char *const *outputs, int line, int col, cg_node **out);

/* Appends graph outputs by name (resolved by the verifier). */
cg_status cg_graph_add_output_names(cg_graph *g, int n, const char *const *names, const int *lines, const int *cols);

/* Rewrites an unverified graph (a model family converting an older
 * interface at load): input i of node n now names `name`; `name` becomes
 * n's last input; graph output i now names `name`. The verifier resolves
 * the names. */
cg_status cg_node_set_input_name(cg_node *n, int i, const char *name);
cg_status cg_node_append_input(cg_node *n, const char *name);
cg_status cg_graph_set_output_name(cg_graph *g, int i, const char *name);

/* Appends an attribute (takes ownership of nothing; copies). Fails if the
 * key is already set on the node. */
cg_status cg_node_add_attr(cg_node *n, const cg_attr *a);

/* Frees the contents of an attribute. */
void cg_attr_clear(cg_attr *a);

/* Location prefix for messages: "FILE:LINE:COL: " or "FILE: " when no line. */
void cg_loc_format(char *buf, size_t size, const cg_model *m, int line, int col);

/* Formats a value's type "f32[B, 16]" with symbol names. */
void cg_value_type_format(char *buf, size_t size, const cg_model *m, const cg_value *v);

/* Creates an empty model. `ctx` may be NULL (parsing and printing need no
 * registry); `filename` is kept for messages (NULL: "<builder>"). */
cg_status cg_model_new(cg_context *ctx, const char *filename, cg_model **out);

/* Adds a graph; fails if the name is taken (message naming both places). */
cg_status cg_model_new_graph(cg_model *m, const char *name, int line, int col, cg_graph **out);

/* Declares a typed graph input (appended to g->inputs) or a parameter read
 * from weight `weight`. dims hold sizes >= 0 or CG_DIM_SYM(k) of m's symbols. */
cg_status cg_graph_new_input(cg_graph *g, const char *name, cg_dtype dtype, int ndim, const int64_t *dims, int line,
                             int col, int32_t *out);
cg_status cg_graph_new_param(cg_graph *g, const char *name, const char *weight, cg_dtype dtype, int ndim,
                             const int64_t *dims, int line, int col, int32_t *out);

/* Non-zero if `s` may name a graph, value, node or symbol: non-empty
 * UTF-8 (the printer quotes what is not an identifier). */
int cg_name_valid(const char *s);
/* An identifier: [A-Za-z_][A-Za-z0-9_.]* (op names, attribute keys). */
int cg_ident_valid(const char *s);

/* ---- verification (verify.c) ---- */

/* Resolves a node's attributes against its operator's declaration:
 * unknown keys, wrong types, missing required ones are errors that name the
 * node and attribute. `out` has def->n_attrs entries. */
cg_status cg_node_resolve_attrs(const cg_model *m, const cg_node *n, const cg_op_def *def, cg_attr_value *out);

/* ---- text format (parse.c, print.c) ---- */

cg_status cg_parse_text(cg_context *ctx, const char *text, size_t len, const char *filename, cg_model **out);

/* Parses an attribute list "key: value, ..." (no braces) into a node's
 * attributes; used by decompositions. */
cg_status cg_parse_attr_list(const char *text, cg_node *n);

cg_status cg_print_text(const cg_model *m, char **out);

#endif
