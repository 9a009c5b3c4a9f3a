/* The ONNX importer's shared state (graph/onnx): the file, the clgraph
 * model being built, and what is known of every ONNX value (its type, and
 * its value where it is a constant or computed from constants). */
#ifndef CG_GRAPH_ONNX_IMP_H
#define CG_GRAPH_ONNX_IMP_H

#include "clgraph/clgraph.h"
#include "error.h"
#include "ir.h"
#include "onnx.pb-c.h"
#include "tensor.h"

#include <stdint.h>

/* Opsets of the default domain ("" or "ai.onnx") the importer reads. */
#define CG_ONNX_OPSET_MIN 1
#define CG_ONNX_OPSET_MAX 28
/* The most inputs or outputs one clgraph node made by the importer has. */
#define ONNX_MAX_IO 64

/* One ONNX value. */
typedef struct onnx_val {
    char *name;             /* the ONNX name (also the clgraph value's) */
    int typed;              /* desc holds its dtype and dims */
    cg_tensor_desc desc;    /* dims: sizes or CG_DIM_SYM(k) of the model */
    cg_tensor *konst;       /* its value where known at import, else NULL */
    int emitted;            /* a clgraph value exists for it */
    int input;              /* a graph input (declared when first used as data) */
    const cg_tensor *given; /* an input's value given for import (options) */
    int fixed;              /* given, and that value used at import */
    int zeros;              /* all zeros, known at import (an Expand of zeros) */
    int sym;                /* konst holds symbolic dims (ONNX_SYM codes: onnx_sym.c) */
    int sym_i32;            /* ... and ONNX has them as int32 (a Cast): konst stays int64 */
    cg_tensor *fill;        /* ConstantOfShape of symbolic dims: desc typed, every element
                            * this one value; made a node only where read as data */
    /* ONNX sequences and optionals, known at import (onnx_seq.c) */
    int seq;      /* a sequence: its elements are the tensor values named elems[0 .. n_elems) */
    int optional; /* an optional: it holds what the rest says (a tensor or a sequence) unless none */
    int none;     /* an optional without an element */
    int n_elems;
    char **elems;
    /* a bool computed at run time from one comparison of dims (Equal of a
     * Shape element and 1): what an If on it may fork the import on */
    int has_pred;
    cg_guard pred;
    int64_t declared[CG_MAX_DIMS]; /* a graph input's dims as the file has them (desc: as a variant fixes them) */
    const char *weight_t;          /* the param holding this constant transposed for linear, or NULL */
} onnx_val;

/* Elements of a shape value that stand for a symbolic dim: symbol k of the
 * model, or a dim clgraph cannot name (B * 4); far below any real size. */
#define ONNX_SYM_UNKNOWN (INT64_MIN / 2)
#define ONNX_SYM(k) (ONNX_SYM_UNKNOWN - 1 - (int64_t)(k))
static inline int onnx_is_sym(int64_t v) { return v <= ONNX_SYM_UNKNOWN && v > ONNX_SYM_UNKNOWN - ((int64_t)1 << 32); }

typedef struct onnx_imp {
    cg_context *ctx;
    const char *path; /* for messages */
    char *dir;        /* the model's folder (external data) */
    Onnx__ModelProto *proto;
    int64_t opset; /* of the default domain */
    cg_model *m;
    cg_graph *g;
    onnx_val **vals;
    int n_vals, cap_vals;
    int32_t *index; /* open addressing over vals by name, -1 empty */
    uint32_t cap_index;
    /* constants that became params: the weights the model is bound to */
    int n_params, cap_params;
    char **param_names;
    cg_tensor **param_tensors;
    /* the graph whose nodes are being imported: the model's, or inside If,
     * Loop and Scan a renamed copy of a subgraph (onnx_ctrl.c) */
    const Onnx__GraphProto *graph;
    struct onnx_scope *scope; /* the subgraphs being imported, innermost first (onnx_ctrl.c) */
    int64_t unrolled;         /* subgraph nodes copied so far (onnx_ctrl.c) */
    /* the node being imported, for messages */
    const Onnx__NodeProto *node;
    int node_index;
    int n_emitted;           /* clgraph nodes made for the current ONNX node */
    unsigned char *absorbed; /* per ONNX node: fused into an earlier node's mapping */
    int uniq;                /* counter for generated names */
    char bad_attr[320];      /* the current node's first attribute of a wrong type (its message), or "" */
    int sym_failed;          /* a derived dim could not be made (out of memory) */
    const cg_onnx_options *opt;
    cg_dtype narrow; /* f16 or bf16 while a mapping runs widened to f32 (cg_onnx_map), else 0 */
    /* Variants (onnx_variant.c): this import's graph is made for the
     * bindings where these comparisons of dims hold; an If on a comparison
     * none of them answers, whose branches cannot be selected between,
     * asks for two imports more (fork: the comparison and its negation). */
    int n_assume;
    cg_guard assume[CG_MAX_GUARDS];
    int fork_wanted;
    cg_guard fork;
    cg_guard last_pred; /* the comparison sym_elem last could not answer */
    int has_last_pred;
} onnx_imp;

/* ---- onnx_read.c: files and tensors ---- */

/* Reads and unpacks a message of type d from a file (nesting checked as
 * for models); NULL and *st set, naming `path`, on failure. */
ProtobufCMessage *cg_onnx_read_message(const char *path, const ProtobufCMessageDescriptor *d, cg_status *st);

/* Reads and unpacks a model file; a message naming `path` on failure. */
cg_status cg_onnx_read_model(const char *path, Onnx__ModelProto **out);

/* st, with the last error made one line (control bytes of names in the
 * file shown as '?') and naming `path`: a message from below the importer
 * (an allocation, a symbol table) is prefixed with it. */
cg_status cg_onnx_one_line(cg_status st, const char *path);

/* The clgraph dtype of an ONNX element type, or 0 for one clgraph has no
 * type for (double is read as f32: see cg_onnx_tensor). */
cg_dtype cg_onnx_dtype(int32_t onnx_type);

/* The ONNX name of an element type ("FLOAT", "STRING", ...). */
const char *cg_onnx_type_name(int32_t onnx_type);

/* A TensorProto's value as a tensor: raw_data, the typed fields or external
 * data (read relative to `dir`, NULL: none allowed). DOUBLE values become
 * f32 (rounded). `what` names it in messages ("initializer 'w'"). */
cg_status cg_onnx_tensor(const Onnx__TensorProto *t, const char *dir, const char *path, const char *what,
                         cg_tensor **out);

/* ---- onnx_import.c: values and emission ---- */

/* The value called `name`, added (untyped) if new; NULL on no memory. */
onnx_val *onnx_val_get(onnx_imp *im, const char *name);

/* The value called `name`, or NULL when there is none. */
onnx_val *onnx_val_find(onnx_imp *im, const char *name);

/* Imports the nodes of gp (a subgraph's renamed copy: onnx_ctrl.c) as the
 * model's are; the current node and graph are restored after. */
cg_status onnx_import_nodes(onnx_imp *im, const Onnx__GraphProto *gp);

/* Input i of the current node, or NULL where it is absent or "". */
onnx_val *onnx_in(onnx_imp *im, int i);

/* Fails the current node: "PATH: node 'NAME' (OP, #I): message". */
cg_status onnx_fail(onnx_imp *im, cg_status st, const char *fmt, ...) CG_PRINTF(3, 4);

/* Makes v a clgraph value (a graph input, or a param for a constant) so a
 * node can read it. */
cg_status onnx_use(onnx_imp *im, onnx_val *v);

/* v's value at import: a constant, or the value given for a graph input
 * (which marks it fixed: it may then not also be fed at run time); NULL
 * when neither (or v is NULL). */
const cg_tensor *onnx_known(onnx_val *v);

/* v's value, which the current node needs at import (a shape, axes):
 * known, or given for a graph input; else an error naming `what`. */
cg_status onnx_need_const(onnx_imp *im, onnx_val *v, const char *what, const cg_tensor **out);

/* Sets output `o` of the current node to a known value (takes t). */
cg_status onnx_set_const(onnx_imp *im, int o, cg_tensor *t);

/* Adds a clgraph node of `op` reading `ins` (clgraph value names) and
 * defining `outs` (NULL entries: fresh names); types the outputs by the
 * op's inference. attrs: "key: value, ..." in the text format, or NULL.
 * The node is named after the ONNX node (with /2, /3 ... for more). */
cg_status onnx_emit(onnx_imp *im, const char *op, int n_in, const char *const *ins, int n_out, const char **outs,
                    const char *attrs);

/* A fresh value name derived from the current node's. */
const char *onnx_fresh(onnx_imp *im, const char *what);

/* A constant that the clgraph graph reads, made a param; its name out. */
cg_status onnx_const_param(onnx_imp *im, cg_tensor *t, const char **name);

/* ---- attributes of the current node ---- */
/* The attribute called `name`, whatever its type (for presence checks);
 * NULL when absent. Values are read through the typed accessors below. */
const Onnx__AttributeProto *onnx_attr(const onnx_imp *im, const char *name);
/* Whether attribute a has type `want` (or leaves its type out); if not,
 * the mistake is noted in im->bad_attr, which fails the node naming the
 * attribute and both types, whatever the mapping does next. */
int onnx_attr_check(onnx_imp *im, const Onnx__AttributeProto *a, Onnx__AttributeProto__AttributeType want);
/* The attribute `name` when it has type `want`; NULL when absent or of
 * another type (noted as onnx_attr_check does). */
const Onnx__AttributeProto *onnx_attr_typed(onnx_imp *im, const char *name, Onnx__AttributeProto__AttributeType want);
int64_t onnx_attr_int(onnx_imp *im, const char *name, int64_t def);
double onnx_attr_float(onnx_imp *im, const char *name, double def);
/* The ints of an INTS attribute (*n = -1 when absent). */
const int64_t *onnx_attr_ints(onnx_imp *im, const char *name, int *n);
/* Fails on attributes the mapping does not read ("known": NULL-ended). */
cg_status onnx_check_attrs(onnx_imp *im, const char *const *known);

/* ---- onnx_ops.c: the operator table ---- */

typedef cg_status (*onnx_map_fn)(onnx_imp *im);
/* The mapping of op_type, or NULL. */
onnx_map_fn cg_onnx_find_op(const char *op_type);

/* onnx_ops.c: a reshape of x to dims (sizes, or x's symbolic dims) into
 * *out (NULL: a fresh value, named there); fails where clgraph's reshape
 * cannot express it (more than one symbolic dim moves). */
cg_status onnx_emit_reshape(onnx_imp *im, onnx_val *x, int ndim, const int64_t *dims, const char **out);

/* onnx_rnn.c: GRU and LSTM (clgraph's gru / lstm, or unrolled), and RNN
 * (always unrolled). */
cg_status cg_onnx_map_rnn_layer(onnx_imp *im);
cg_status cg_onnx_map_rnn(onnx_imp *im);

/* onnx_einsum.c: Einsum of one or two operands. */
cg_status cg_onnx_map_einsum(onnx_imp *im);

/* onnx_attention.c: Attention (opsets 23 to 25). */
cg_status cg_onnx_map_attention(onnx_imp *im);

/* onnx_loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
cg_status cg_onnx_map_nll_loss(onnx_imp *im);
cg_status cg_onnx_map_softmax_cross_entropy(onnx_imp *im);

/* onnx_norm.c: BatchNormalization (inference), InstanceNormalization,
 * GroupNormalization, RMSNormalization, LpNormalization,
 * MeanVarianceNormalization. */
cg_status cg_onnx_map_batch_norm(onnx_imp *im);
cg_status cg_onnx_map_instance_norm(onnx_imp *im);
cg_status cg_onnx_map_group_norm(onnx_imp *im);
cg_status cg_onnx_map_rms_norm(onnx_imp *im);
cg_status cg_onnx_map_lp_norm(onnx_imp *im);
cg_status cg_onnx_map_mvn(onnx_imp *im);

/* onnx_act.c: Celu, Gelu, HardSwish, Hardmax, IsInf, IsNaN, Mish, PRelu,
 * Selu, Shrink, Swish, ThresholdedRelu. */
cg_status cg_onnx_map_act(onnx_imp *im);

/* onnx_position.c: EyeLike, ReverseSequence. */
cg_status cg_onnx_map_eye_like(onnx_imp *im);
cg_status cg_onnx_map_reverse_sequence(onnx_imp *im);

/* onnx_rotary.c: RotaryEmbedding. */
cg_status cg_onnx_map_rotary(onnx_imp *im);

/* onnx_cast.c: Cast and CastLike. */
cg_status cg_onnx_map_cast(onnx_imp *im);

/* onnx_quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger. */
cg_status cg_onnx_map_quantize(onnx_imp *im);
cg_status cg_onnx_map_dequantize(onnx_imp *im);
cg_status cg_onnx_map_dynamic_quantize(onnx_imp *im);
cg_status cg_onnx_map_matmul_integer(onnx_imp *im);

/* onnx_train.c: the optimizers of the ai.onnx.preview.training domain, the
 * one domain besides the default that the importer reads (for these three
 * ops only: cg_onnx_training_op). */
int cg_onnx_training_op(const char *domain, const char *op_type);
cg_status cg_onnx_map_adagrad(onnx_imp *im);
cg_status cg_onnx_map_momentum(onnx_imp *im);
cg_status cg_onnx_map_adam(onnx_imp *im);

/* onnx_misc.c: ops whose output shape depends on input values, evaluated
 * at import (NonZero, Unique, NonMaxSuppression), and Compress (its
 * condition known: a Gather). */
cg_status cg_onnx_map_nonzero(onnx_imp *im);
cg_status cg_onnx_map_unique(onnx_imp *im);
cg_status cg_onnx_map_nms(onnx_imp *im);
cg_status cg_onnx_map_compress(onnx_imp *im);

/* onnx_signal.c: HannWindow, HammingWindow, BlackmanWindow and
 * MelWeightMatrix (their sizes known at import: evaluated there); DFT and
 * STFT as a matrix product with the transform's matrix. */
cg_status cg_onnx_map_window(onnx_imp *im);
cg_status cg_onnx_map_mel(onnx_imp *im);
cg_status cg_onnx_map_dft(onnx_imp *im);
cg_status cg_onnx_map_stft(onnx_imp *im);

/* onnx_nn.c: LRN and MaxUnpool as the ONNX ops of their definitions. */
cg_status cg_onnx_map_lrn(onnx_imp *im);
cg_status cg_onnx_map_max_unpool(onnx_imp *im);
/* onnx_nn.c: GridSample and RoiAlign onto grid_sample and roi_align. */
cg_status cg_onnx_map_grid_sample(onnx_imp *im);
cg_status cg_onnx_map_roi_align(onnx_imp *im);

/* onnx_qlinear.c: QLinearMatMul (one scale and zero point per tensor),
 * QLinearConv (w's per output channel too). */
cg_status cg_onnx_map_qlinear_matmul(onnx_imp *im);
cg_status cg_onnx_map_qlinear_conv(onnx_imp *im);

/* onnx_tfidf.c: TfIdfVectorizer of integer input (a direct count). */
cg_status cg_onnx_map_tfidf(onnx_imp *im);

/* onnx_sub.c: ONNX nodes made inside a mapping, so a composite op is
 * written as the ONNX ops of its definition. */
/* A fresh value holding the constant t (taken), not yet a param: a node
 * reading it at import (indices, shapes) needs no clgraph value. */
cg_status onnx_new_const(onnx_imp *im, cg_tensor *t, const char **name);
/* The same from dtype, dims and data (NULL: uninitialised). */
cg_status onnx_new_const_data(onnx_imp *im, cg_dtype dt, int ndim, const int64_t *dims, const void *data,
                              const char **name);
/* An attribute of a sub-node (its ints are borrowed). */
typedef struct onnx_sub_attr {
    Onnx__AttributeProto a;
} onnx_sub_attr;
onnx_sub_attr onnx_sub_int(const char *name, int64_t v);
onnx_sub_attr onnx_sub_float(const char *name, double v);
onnx_sub_attr onnx_sub_ints(const char *name, int n, const int64_t *v);
/* ONNX op `op_type` (default domain, the opset of the model) on the ONNX
 * values ins[0..n_in) ("" or NULL: absent) into outs[0..n_out) (NULL
 * entries: fresh values, named there), folded where its inputs are known,
 * else mapped; part of the current node for names and messages. */
cg_status onnx_sub_node(onnx_imp *im, const char *op_type, int n_in, const char *const *ins, int n_out,
                        const char **outs, int n_attrs, onnx_sub_attr *attrs);
/* onnx_sub_node of a two-input op without attributes into *out (NULL: a
 * fresh value, named there). */
cg_status onnx_sub2(onnx_imp *im, const char *op, const char *a, const char *b, const char **out);
/* A scalar constant of dtype dt (f32 or i64) of value v. */
cg_status onnx_sub_scalar(onnx_imp *im, cg_dtype dt, double v, const char **name);
/* The STRING attribute `name` into buf (def when absent); 0 when it does
 * not fit. */
int onnx_attr_str(onnx_imp *im, const char *name, const char *def, char *buf, size_t size);
/* onnx_int.c: Mod, BitShift, BitwiseAnd, BitwiseOr, BitwiseXor,
 * BitwiseNot. */
cg_status cg_onnx_map_mod(onnx_imp *im);
cg_status cg_onnx_map_bitshift(onnx_imp *im);
cg_status cg_onnx_map_bitwise(onnx_imp *im);

/* onnx_index.c: GatherND, ScatterND, Pad, DepthToSpace, SpaceToDepth. */
cg_status cg_onnx_map_index(onnx_imp *im);
/* The STRING attribute `name` into buf (def when absent); fails on a value
 * longer than buf or holding NUL or '"'. */
cg_status cg_onnx_attr_string(onnx_imp *im, const char *name, const char *def, char *buf, size_t size);
/* The values of known input i (a 1-D int64 or int32 tensor of at most max
 * values; `what` names it in messages) into v, their count into *n. */
cg_status cg_onnx_known_ints(onnx_imp *im, int i, const char *what, int max, int64_t *v, int *n);

/* onnx_resize.c: Resize (opsets 10 to 19) and Upsample. */
cg_status cg_onnx_map_resize(onnx_imp *im);

/* onnx_conv.c: Conv, ConvTranspose and ConvInteger. */
cg_status cg_onnx_map_conv(onnx_imp *im);
cg_status cg_onnx_map_conv_integer(onnx_imp *im);
cg_status cg_onnx_map_conv_transpose(onnx_imp *im);

/* onnx_pool.c: MaxPool, AveragePool, LpPool; GlobalAveragePool,
 * GlobalMaxPool, GlobalLpPool. */
cg_status cg_onnx_map_pool(onnx_imp *im);
cg_status cg_onnx_map_global_pool(onnx_imp *im);

/* onnx_new.c: SwiGLU, TensorScatter, CenterCropPad, BitCast. */
cg_status cg_onnx_map_swiglu(onnx_imp *im);
cg_status cg_onnx_map_tensor_scatter(onnx_imp *im);
cg_status cg_onnx_map_center_crop_pad(onnx_imp *im);
cg_status cg_onnx_map_bitcast(onnx_imp *im);

/* onnx_grid.c: AffineGrid (a constant grid times theta), Col2Im (a
 * conv_transpose with one-hot weights). */
cg_status cg_onnx_map_affine_grid(onnx_imp *im);
cg_status cg_onnx_map_col2im(onnx_imp *im);

/* onnx_state.c: CausalConvWithState, LinearAttention. */
cg_status cg_onnx_map_causal_conv(onnx_imp *im);
cg_status cg_onnx_map_linear_attention(onnx_imp *im);

/* onnx_qlinear.c: QLinearMatMul, QLinearConv. */
cg_status cg_onnx_map_qlinear_matmul(onnx_imp *im);
cg_status cg_onnx_map_qlinear_conv(onnx_imp *im);

/* onnx_deform.c: DeformConv (2-D) onto deform_conv. */
cg_status cg_onnx_map_deform_conv(onnx_imp *im);

/* Runs fn (cg_onnx_find_op's) on im->node; where the op computes in f32
 * only, f16 and bf16 inputs are cast to f32 and its outputs back. */
cg_status cg_onnx_map(onnx_imp *im, onnx_map_fn fn);

/* ---- onnx_seq.c: sequences and optionals known at import ---- */

/* dtype and dims of a graph input of type tp (a tensor, or through
 * cg_onnx_seq_input a sequence or optional) into v (onnx_import.c). */
cg_status onnx_input_type(onnx_imp *im, const Onnx__TypeProto *tp, onnx_val *v);

/* A graph input of sequence or optional type: a sequence's elements are
 * the given values NAME.0 .. NAME.N-1 (graph inputs of those names); an
 * optional is empty where a NULL value is given for it, else a tensor or
 * sequence input. */
cg_status cg_onnx_seq_input(onnx_imp *im, const Onnx__TypeProto *tp, onnx_val *v);

/* Before the op table: Identity of a sequence or optional (a copy of what
 * it holds), and any other op but the sequence ops and control flow
 * reading one (refused). 1 when it handled the node (*st its status). */
int cg_onnx_seq_node(onnx_imp *im, cg_status *st);

/* The sequence and optional operators (SequenceConstruct ... Optional,
 * OptionalHasElement, OptionalGetElement): the values at import. */
cg_status cg_onnx_map_seq(onnx_imp *im);

/* The clgraph outputs graph output v stands for (a sequence: one per
 * element, named NAME.0 .. NAME.N-1, n_elems names; an empty optional:
 * none) into names. */
cg_status cg_onnx_seq_outputs(onnx_imp *im, onnx_val *v, const char **names);

/* v made a sequence of the n values named names (copied). */
cg_status onnx_seq_set(onnx_val *v, int n, char *const *names);

/* onnx_seq_map.c: SequenceMap, its body imported once per element. */
cg_status cg_onnx_map_seq_map(onnx_imp *im);

/* onnx_seq_map.c: an If's output k, sequences or optionals from both
 * branches (t, e) when the condition is known only at run time: a where
 * per element, when both are alike (the same length, or both empty). */
cg_status cg_onnx_seq_select(onnx_imp *im, const char *cond, onnx_val *t, onnx_val *e, const char *out, int k);

/* What a sequence value owns. */
void cg_onnx_seq_free(onnx_val *v);

/* ---- onnx_fold.c: evaluation on the host at import ---- */

/* Evaluates the current node where every input is known and its op is one
 * the host folds (shape arithmetic and small elementwise math): 1 and the
 * outputs set, 0 when it does not apply, -1 on error (message set). */
int cg_onnx_fold(onnx_imp *im);

/* ---- onnx_import.c, onnx_variant.c: the graph and its variants ---- */

/* One import of the model's graph into im->m (a variant of it when im
 * assumes comparisons); the weights are bound by the caller. */
cg_status cg_onnx_import_graph(onnx_imp *im);
/* Frees what an import holds (not the model, nor im->proto when NULL). */
void cg_onnx_imp_free(onnx_imp *im);
/* Imports proto into m: once, or as variants where an If forks it. */
cg_status cg_onnx_import_variants(cg_context *ctx, const char *path, const cg_onnx_options *opt,
                                  Onnx__ModelProto *proto, cg_model *m);
/* 1 where im's assumptions imply comparison c, 0 where they imply its
 * negation, else -1. */
int onnx_assumed(const onnx_imp *im, const cg_guard *c);
/* Asks for the import to fork on cond's comparison of dims, if it has one
 * (and room for another assumption); 0 when it cannot. */
int onnx_fork_on(onnx_imp *im, const onnx_val *cond);
/* The node being imported as a comparison of a mode input's value (one
 * integer graph input, not given) with a constant: -1 when it is not one;
 * 0 or 1 where the variant's assumptions decide it (its output is then that
 * constant); 2 with *pred the comparison where they do not (st: failure). */
int onnx_value_compare(onnx_imp *im, cg_guard *pred, cg_status *st);

/* ---- onnx_sym.c: shape values over symbolic dims ---- */

/* Shape and Size of a value with symbolic dims, and the arithmetic on such
 * values that stays a size or a symbol: 1 and the output set, 0 when it
 * does not apply, 2 when the op's mapping reads the symbolic values (no
 * folding), -1 on error (message set: what cannot be computed). */
int cg_onnx_fold_sym(onnx_imp *im);

/* Whether an int64 tensor holds ONNX_SYM codes. */
int onnx_has_sym(const cg_tensor *t);

/* The derived dim op(a, b) (CG_SYM_* of graph/ir) of two sizes or codes,
 * as a code (a size when both are sizes); ONNX_SYM_UNKNOWN when it cannot
 * be named. */
int64_t onnx_sym_derive(onnx_imp *im, int op, int64_t a, int64_t b);

/* One end of a step-1 slice over a dim n (a size or a code), clamped as
 * Python's: v an integer (negative from the end, huge for "to the end")
 * or a code. */
int64_t onnx_sym_clamp(onnx_imp *im, int64_t n, int64_t v);

/* The product of n sizes or codes: a size, or a derived dim (sizes first
 * multiplied, then the symbols in order: B*S*64). */
int64_t onnx_sym_product(onnx_imp *im, int n, const int64_t *x);

/* An ONNX_SYM code as a clgraph dim (CG_DIM_SYM, CG_DIM_UNKNOWN), sizes as
 * they are; and back. */
int64_t onnx_sym_to_dim(int64_t v);

/* "[1, S, `B*4`, 64]": dims (sizes, CG_DIM_SYM of the model's symbols, at
 * most one CG_DIM_UNKNOWN, written -1) as a dim list attribute; 0 when
 * more than one is unknown or buf is too small. */
int onnx_named_dims(const onnx_imp *im, int ndim, const int64_t *dims, char *buf, size_t size);
int64_t onnx_dim_to_sym(int64_t d);

/* Makes the lazy ConstantOfShape v a node: expand of its value against a
 * value of the same dims; an error naming v when there is none. */
cg_status onnx_materialize(onnx_imp *im, onnx_val *v);

/* ---- onnx_ctrl.c, onnx_loop.c: control flow ---- */

/* Before the nodes: graph inputs given for the import whose values decide
 * an If's branch or a Loop's trip count or condition (computable from
 * constants and given values alone) become constants of the graph. */
cg_status cg_onnx_ctrl_prepare(onnx_imp *im, const Onnx__GraphProto *gp);

/* If: the taken branch inline when the condition is known at import, else
 * both branches and a where per output. */
cg_status cg_onnx_map_if(onnx_imp *im);
/* Loop and Scan unrolled over a trip count / sequence length known at
 * import. */
cg_status cg_onnx_map_loop(onnx_imp *im);
cg_status cg_onnx_map_scan(onnx_imp *im);

/* Whether a node of gp, or of a subgraph of one, reads `name` from an
 * enclosing scope (fusions must not take in such a value). */
int cg_onnx_graph_reads(const Onnx__GraphProto *gp, const char *name);

/* Names the dims of a clgraph node's outputs that its op's inference left
 * unknown where the importer can: concat along symbolic dims (a sum),
 * reshape's inferred dim (a quotient), slice of a symbolic dim. */
void onnx_sym_refine(onnx_imp *im, const cg_node *nd, const cg_tensor_desc *in, cg_tensor_desc *out);

/* The i32 indices of the rows a step-1 slice [start, end) of a dim n
 * takes, where any of them may be symbolic: arange over the derived
 * length, plus the start read as data. */
cg_status onnx_sym_slice_rows(onnx_imp *im, int64_t n, int64_t start, int64_t end, const char **idx);

/* Slice of a lazy ConstantOfShape value (v->fill): 1 when the output was
 * made another such value, 0 when the node maps as usual, -1 on failure. */
int cg_onnx_fill_move(onnx_imp *im);

/* A value holding symbolic dims (v->sym) made a clgraph value where it is
 * read as data: dim_values, bound at plan time (onnx_sym.c). */
cg_status onnx_sym_materialize(onnx_imp *im, onnx_val *v);

/* Maps the current node with its symbolic inputs read as run-time data
 * (cg_onnx_fold_sym returned 3: arithmetic that has no dim to name). */
cg_status onnx_sym_map_as_data(onnx_imp *im, onnx_map_fn fn);

/* ---- onnx_fuse.c: exporter idioms as fused ops ---- */

/* MatMul(a, constant [K, N]) whose only reader adds a constant [N]: linear,
 * the Add absorbed. 1 when fused (*st: the emission's status), else 0. */
int cg_onnx_fuse_linear(onnx_imp *im, onnx_val *a, onnx_val *b, cg_status *st);
/* w, a constant f32 [K, N] (x w, as MatMul and Gemm without transB take
 * it), as linear's weight [N, K]: a param named in *name, made once per w. linear's CPU
 * kernel and the OpenCL GEMMs read that layout fastest. */
cg_status cg_onnx_weight_t(onnx_imp *im, onnx_val *w, const char **name);

/* The current ReduceMean starting the opset < 17 export of nn.LayerNorm
 * (Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then Mul gamma and Add beta
 * if there): layer_norm, the rest absorbed. 1 when fused, else 0. */
int cg_onnx_fuse_layer_norm(onnx_imp *im, cg_status *st);

/* ConstantOfShape and Range over symbolic dims (the other cases fold). */
cg_status cg_onnx_map_constant_of_shape(onnx_imp *im);
cg_status cg_onnx_map_range(onnx_imp *im);

/* Element i of t as an integer (floats truncated toward zero and
 * saturated, NaN 0). */
int64_t cg_onnx_int_at(const cg_tensor *t, int64_t i);
/* Element i of t as a double; element i of t set to v (rounded to t's
 * float type, or truncated to its integer type). */
double cg_onnx_float_at(const cg_tensor *t, int64_t i);
void cg_onnx_set_at(cg_tensor *t, int64_t i, double v);

#endif
