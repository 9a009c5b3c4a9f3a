/*
 * clgraph public API: the runtime (contexts, tensors, weights, models and
 * graphs, plans, devices, conformance). The seq2seq model family has its
 * own header, clgraph/seq2seq.h; operator plugins see only clgraph/plugin.h.
 *
 * Every function that can fail returns a cg_status. On failure, a one-line
 * message with its context (file:line:col, node, tensor or plugin name) is
 * kept per thread and read with cg_last_error(). Handles are opaque; each
 * create, load or open call has a matching free call that accepts NULL.
 *
 * Threads. The library keeps no mutable state outside the objects below
 * but process-wide caches that lock themselves (compiled OpenCL programs,
 * measured kernel costs, SGEMM choices, the CPU thread pool, opened
 * devices). Per object:
 *  - cg_context: shared freely once created, except that
 *    cg_context_load_plugin must not run while another thread uses it;
 *  - cg_weights: shared freely (reads are locked where they convert);
 *  - cg_tensor: no locking; several threads may read one (e.g. as an input
 *    of plans running at once) while none writes it;
 *  - cg_model: built, parsed, bound and verified by one thread; once
 *    verified with its weights bound it is read only, and plans of it may
 *    be created and run from several threads at once;
 *  - cg_plan: one thread at a time (it caches per-binding state and
 *    statistics); different plans, of one model or several, run in
 *    parallel on the same devices (a device's work from several threads is
 *    ordered on its queue; kernel launches on one OpenCL device are
 *    serialised);
 *  - cg_conform: may run while other threads run plans;
 *  - errors: per thread (cg_last_error).
 * tests/graph/sched/test_threads.c runs these cases under ThreadSanitizer.
 */
#ifndef CLGRAPH_H
#define CLGRAPH_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "dtype.h"
#include "clgraph/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CG_API __attribute__((visibility("default")))
#else
#define CG_API
#endif

/** Result of every fallible call. */
typedef enum cg_status {
    CG_OK = 0,               /**< success */
    CG_ERR_INVALID_ARGUMENT, /**< a NULL handle, bad index or bad option */
    CG_ERR_NO_MEMORY,        /**< an allocation failed */
    CG_ERR_IO,               /**< a file could not be opened, read or written */
    CG_ERR_PARSE,            /**< graph text is malformed */
    CG_ERR_FORMAT,           /**< a safetensors or .npy file is malformed */
    CG_ERR_VERIFY,           /**< the graph is invalid (types, shapes, arity...) */
    CG_ERR_NOT_FOUND,        /**< a named graph, value, weight or op is missing */
    CG_ERR_PLUGIN,           /**< a plugin could not be loaded */
    CG_ERR_KERNEL,           /**< a kernel failed while running */
    CG_ERR_UNSUPPORTED       /**< a feature or dtype is not supported here */
} cg_status;

/* cg_dtype (CG_F32, CG_I32, CG_F16, CG_BF16, CG_I8, CG_U8, CG_I64, CG_BOOL,
 * CG_I16, CG_U16, CG_U32, CG_U64) is defined in dtype.h, shared with the plugin ABI. */

/** Opaque handles. */
typedef struct cg_context cg_context; /**< backends, devices, operator registry */
typedef struct cg_tensor cg_tensor;   /**< a dense row-major host tensor */
typedef struct cg_weights cg_weights; /**< a memory-mapped safetensors file */
typedef struct cg_model cg_model;     /**< named graphs plus bound weights */
typedef struct cg_graph cg_graph;     /**< one graph of a model (owned by it) */
typedef struct cg_node cg_node;       /**< one node of a graph (owned by it) */
typedef struct cg_plan cg_plan;       /**< a graph lowered for execution */

/* ------------------------------------------------------------------ */
/* Errors and version                                                  */

/** The message of the last failed call on this thread ("" if none). */
CG_API const char *cg_last_error(void);

/** Name of a status code, e.g. "CG_ERR_PARSE". */
CG_API const char *cg_status_name(cg_status s);

/** The library version string, CG_VERSION_STRING of the built library (e.g. "0.2.0"). */
CG_API const char *cg_version(void);

/**
 * The optional dependencies this build of the library was configured with
 * (README.md, "Build options"), as names separated by one space, in this
 * order: "opencl" (the OpenCL backend), "clblast" (CLBlast SGEMM on OpenCL),
 * "onnx" (ONNX import), "png" (PNG output of the CLI), "sentencepiece"
 * (the tokenizer of Marian-layout Transformer models); "" when none. A
 * feature left out fails where it is needed with CG_ERR_UNSUPPORTED or
 * CG_ERR_NOT_FOUND and a message that says this build lacks it.
 */
CG_API const char *cg_build_features(void);

/**
 * Name of a dtype, as the graph text format writes it: "f32", "i32", "f16",
 * "bf16", "i8", "u8", "i64" or "bool"; "?" if invalid.
 */
CG_API const char *cg_dtype_name(cg_dtype t);

/** Size in bytes of one element of a dtype (0 if invalid). */
CG_API size_t cg_dtype_size(cg_dtype t);

/* ------------------------------------------------------------------ */
/* Context                                                             */

/**
 * What a context is made with (zero-initialise, set struct_size, then what
 * you need; or pass NULL for every default). A zero or NULL field leaves its
 * CLGRAPH_* environment variable in charge (README: "Settings"), so the
 * variables are the defaults of a program that sets nothing.
 *
 * All but `plugins` are settings of the process, shared by its contexts:
 * what they configure (the CPU thread pool, the chosen SGEMM paths, the
 * OpenCL kernel path set, the cache directory) is made once. A context that
 * asks for another value than the one in effect fails with
 * CG_ERR_INVALID_ARGUMENT naming the setting and that value; set them in
 * the first context (or give the same values).
 */
typedef struct cg_context_options {
    size_t struct_size;    /**< sizeof(cg_context_options) */
    int threads;           /**< CPU pool threads (CLGRAPH_THREADS); 0: the online CPUs */
    const char *cpu_gemm;  /**< CPU SGEMM path (CLGRAPH_CPU_GEMM): "blas", "own", "avx512", "avx2", "portable" */
    const char *cpu_math;  /**< CPU exp/tanh/logistic level (CLGRAPH_CPU_MATH): "avx2", "baseline" */
    const char *gemm;      /**< OpenCL SGEMM (CLGRAPH_GEMM): "auto", "own", "clblast" */
    const char *cl_paths;  /**< OpenCL kernel paths (CLGRAPH_CL_PATHS): "auto", "cpu", "gpu" */
    const char *cache_dir; /**< compiled programs and measurements (CLGRAPH_CACHE_DIR) */
    int cl_warnings; /**< the OpenCL compiler's warnings (CLGRAPH_CL_WARNINGS): 1 show, -1 hide, 0 the variable's */
    const char *const *plugins; /**< plugin libraries to load, after those of CLGRAPH_PLUGINS */
    int n_plugins;              /**< their count */
    int no_env_plugins;         /**< 1: do not load CLGRAPH_PLUGINS */
} cg_context_options;

/**
 * Creates a context with the CPU backend and the built-in operators,
 * applies `opt` (NULL: defaults), then loads every plugin named in the
 * environment variable CLGRAPH_PLUGINS (paths separated by ':'; unless
 * opt->no_env_plugins) and opt->plugins. Fails if a setting conflicts with
 * the one in effect or a plugin fails to load (the message names it).
 */
CG_API cg_status cg_context_create(const cg_context_options *opt, cg_context **out);

/** Frees a context (NULL is ignored). Models and plans must be freed first. */
CG_API void cg_context_free(cg_context *ctx);

/**
 * Loads an operator plugin from a shared library. Errors say why: the
 * dlerror() text, "not a clgraph plugin" (no entry symbol), both ABI versions
 * on a mismatch, a failed init, or an operator name already registered.
 */
CG_API cg_status cg_context_load_plugin(cg_context *ctx, const char *path);

/** Number of registered operators. */
CG_API int cg_context_op_count(const cg_context *ctx);

/** Name of registered operator i (NULL if out of range). */
CG_API const char *cg_context_op_name(const cg_context *ctx, int i);

/**
 * Definition of registered operator i (see clgraph/plugin.h), for listing
 * documentation, arity and attributes; NULL if out of range.
 */
CG_API const struct cg_op_def *cg_context_op_def(const cg_context *ctx, int i);

/* ------------------------------------------------------------------ */
/* Tensors                                                             */

/** Creates a zero-filled tensor of the given dtype and shape. */
CG_API cg_status cg_tensor_create(cg_dtype dtype, int ndim, const int64_t *dims, cg_tensor **out);

/**
 * A tensor over memory the caller owns, without a copy: `data` holds the
 * row-major elements (numel * dtype size bytes; NULL only when numel is 0),
 * aligned to the dtype's size, and must stay valid and not be freed before
 * cg_tensor_free(*out), which frees only the tensor. As an input of a run
 * it is read where it lies (the CPU device reads it in place); as an output
 * of cg_plan_run_into the run writes into it. Writes through `data` after a
 * run need cg_tensor_touch for a plan that keeps the input. Binding
 * languages (Python's buffer protocol) pass arrays through this.
 */
CG_API cg_status cg_tensor_wrap(cg_dtype dtype, int ndim, const int64_t *dims, void *data, cg_tensor **out);

/** Frees a tensor (NULL is ignored). */
CG_API void cg_tensor_free(cg_tensor *t);

/** Element type. */
CG_API cg_dtype cg_tensor_dtype(const cg_tensor *t);

/** Number of dimensions. */
CG_API int cg_tensor_ndim(const cg_tensor *t);

/** Size of dimension i (0 if out of range). */
CG_API int64_t cg_tensor_dim(const cg_tensor *t, int i);

/** Number of elements. */
CG_API int64_t cg_tensor_numel(const cg_tensor *t);

/**
 * Pointer to the row-major data (numel * dtype size bytes), for reading and
 * writing: the call marks the contents as changed (see cg_tensor_touch).
 */
CG_API void *cg_tensor_data(cg_tensor *t);

/**
 * Marks the contents as changed, for writes through a pointer taken before
 * the last run: a plan uploads an input it keeps on a device
 * (cg_plan_keep_input) again only after this or cg_tensor_data.
 */
CG_API void cg_tensor_touch(cg_tensor *t);

/** Read-only pointer to the data. */
CG_API const void *cg_tensor_data_const(const cg_tensor *t);

/**
 * 1 when cg_tensor_convert converts `from` to `to` exactly (every value is
 * either represented exactly or reported): the same dtype, f16 or bf16 to
 * f32, and any pair of integer types and bool. 0 otherwise, f32 to f16
 * or bf16 (which round) included.
 */
CG_API int cg_dtype_convert_exact(cg_dtype from, cg_dtype to);

/**
 * Converts a tensor to dtype `to` into a new tensor (the same dtype gives a
 * copy):
 *  - f16, bf16 -> f32: exact;
 *  - f32 -> f16, bf16: rounded to nearest, ties to even; values too large
 *    become infinities, a NaN stays a NaN of its sign (f16 keeps the top of
 *    its payload, as numpy does; bf16 becomes 0x7FC0 / 0xFFC0, as ml_dtypes
 *    does);
 *  - between the integer types and bool: every value must fit the target
 *    (bool: 0 or 1), else CG_ERR_UNSUPPORTED with a message naming the first
 *    element that does not, by its row-major index, and its value;
 *  - anything else (an integer to a float, f16 to bf16, ...):
 *    CG_ERR_UNSUPPORTED.
 */
CG_API cg_status cg_tensor_convert(const cg_tensor *t, cg_dtype to, cg_tensor **out);

/**
 * Quantizes an f32 matrix [rows, cols] to int8 with one f32 scale per row,
 * symmetric: scale[r] = max|t[r, :]| / 127 and q[r, c] = round(t[r, c] /
 * scale[r]) (ties to even, in [-127, 127]), so t[r, c] ~ scale[r] q[r, c]
 * within scale[r] / 2. A row of zeros gets scale 0. This is the int8 format
 * of `clgraph quantize --to int8` and of linear, gru_cell, lstm_cell, gru
 * and lstm: the scales are stored as a tensor of their own named after the
 * weight, NAME_scale. A tensor that is not f32 with 2 dims, or that holds a
 * NaN or an infinity (named by its row): CG_ERR_UNSUPPORTED. On success
 * *q_out (i8) and *scale_out (f32 [rows]) are new tensors.
 */
CG_API cg_status cg_tensor_quantize_rows(const cg_tensor *t, cg_tensor **q_out, cg_tensor **scale_out);

/**
 * Reads a .npy file (format version 1.0, 2.0 or 3.0, C order, little-endian
 * or a one-byte type). Each descr loads as its dtype: '<f4' f32, '<i4' i32,
 * '<f2' f16, '|i1' i8, '|u1' u8, '<i8' i64, '|b1' bool (every byte must be 0
 * or 1), and '<V2' bf16: that is what numpy.save writes for an
 * ml_dtypes.bfloat16 array (numpy has no bfloat16 descr of its own; read such
 * a file back in Python with np.load(path).view(ml_dtypes.bfloat16)).
 * '<f8' (float64) is rounded to f32, as there is no f64 dtype. One-byte
 * types are also accepted with '<' or '>' for '|'. int64 files load as i64:
 * convert with cg_tensor_convert where i32 is needed.
 */
CG_API cg_status cg_tensor_load_npy(const char *path, cg_tensor **out);

/**
 * Writes a tensor as a .npy file (version 1.0), byte for byte what
 * numpy.save writes for the same array: the descr of cg_tensor_load_npy for
 * each dtype ('<V2' for bf16, as with ml_dtypes), numpy's header layout and
 * padding. On failure the file is removed and the message names it.
 */
CG_API cg_status cg_tensor_save_npy(const cg_tensor *t, const char *path);

/* ------------------------------------------------------------------ */
/* Weights                                                             */

/**
 * Opens a safetensors file (memory-mapped). Every offset, size and shape is
 * checked before it is trusted. Stored dtypes F32, F16, BF16, I64, I32, I16,
 * I8, U64, U32, U16, U8 and BOOL are read (each is the cg_dtype of the same name); others are
 * CG_ERR_UNSUPPORTED. Data is read when a tensor is first accessed.
 */
CG_API cg_status cg_weights_open(const char *path, cg_weights **out);

/** Closes a weights file (NULL is ignored). */
CG_API void cg_weights_free(cg_weights *w);

/** Number of tensors in the file. */
CG_API int cg_weights_count(const cg_weights *w);

/** Name of tensor i (NULL if out of range). */
CG_API const char *cg_weights_name(const cg_weights *w, int i);

/** The dtype tensor i is stored as (0 if out of range). */
CG_API cg_dtype cg_weights_dtype(const cg_weights *w, int i);

/**
 * Copies the named tensor into a new tensor: F32 for F32, F16 and BF16
 * weights (converted exactly), I32 for I32 and I64 ones (range checked:
 * CG_ERR_UNSUPPORTED naming the element otherwise), and the stored dtype for
 * I8, U8 and BOOL. CG_ERR_NOT_FOUND if there is no such name. For another
 * dtype, the stored one included, use cg_weights_get_as.
 */
CG_API cg_status cg_weights_get(cg_weights *w, const char *name, cg_tensor **out);

/**
 * Copies the named tensor into a new tensor of dtype `dtype`: the stored
 * bytes when it is the stored dtype (see cg_weights_dtype), else converted
 * by the rules of cg_tensor_convert (CG_ERR_UNSUPPORTED for a pair it does
 * not convert, or a value out of range, naming the file, tensor and element).
 */
CG_API cg_status cg_weights_get_as(cg_weights *w, const char *name, cg_dtype dtype, cg_tensor **out);

/**
 * Writes n tensors, called names[i], as a safetensors file that
 * cg_weights_open and Python's safetensors package read: the 8-byte
 * little-endian header length, the JSON header (names sorted bytewise, each
 * {"dtype", "shape", "data_offsets"}, no "__metadata__") padded with spaces
 * to a multiple of 8 bytes, then the data, little-endian, ordered by element
 * size (largest first) then name, so that every tensor is aligned to its
 * element size. Every dtype is written (as F32, I32, F16, BF16, I8, U8, I64,
 * BOOL). Names must be non-empty, valid UTF-8, distinct and not
 * "__metadata__". The file is written atomically (a temporary file in the
 * same directory, fsync, rename): readers see the old file or the whole new
 * one, and a failure leaves no partial file and a message naming the path.
 */
CG_API cg_status cg_weights_save(const char *path, int n, const char *const *names, const cg_tensor *const *tensors);

/**
 * Writes every tensor of `w`, each in the dtype it is stored as, to `path`
 * by the rules of cg_weights_save (atomically; a failure names the path).
 */
CG_API cg_status cg_weights_write(cg_weights *w, const char *path);

/**
 * Picks the tensors cg_weights_narrow stores in fewer bytes: called with a
 * tensor's name, the dtype it is stored as, its number of dimensions and
 * `user`; non-zero picks it.
 */
typedef int (*cg_weights_pick_fn)(const char *name, cg_dtype stored, int ndim, void *user);

/**
 * The pick of `clgraph quantize`: the f32 weights of matrix products, i.e.
 * 2-D tensors named *.weight or holding ".weight_ih" / ".weight_hh" (an
 * RNN's); an embedding table ("embed" in its name) only when `user` points
 * to a non-zero int (NULL: never). Biases and vectors are never picked.
 */
CG_API int cg_weights_pick_products(const char *name, cg_dtype stored, int ndim, void *user);

/**
 * A copy of `w` in memory with the tensors `pick` picks stored as `to`
 * (CG_BF16, CG_F16 or CG_I8); `pick` is asked about every tensor not stored
 * as `to` already, and the others are copied as they are stored. A picked
 * tensor is read as f32
 * (cg_weights_get_as) and rounded to nearest even (bf16, f16: see
 * cg_tensor_convert) or quantized per row (int8: cg_tensor_quantize_rows,
 * which takes matrices only), its scales added as the f32 tensor NAME_scale:
 * the layout `clgraph quantize` writes and the int8 ops read. A NAME_scale
 * that `w` holds already, or a tensor that cannot be converted: an error
 * naming the file and the tensors, and no copy. *out is new (free it with
 * cg_weights_free); its messages name `w`'s path.
 */
CG_API cg_status cg_weights_narrow(cg_weights *w, cg_dtype to, cg_weights_pick_fn pick, void *user, cg_weights **out);

/* ------------------------------------------------------------------ */
/* Models and graphs                                                   */

/** A dimension for the builder: a size, or a symbol when `sym` != NULL. */
typedef struct cg_dim {
    int64_t size;    /**< the size when sym is NULL */
    const char *sym; /**< symbolic name (e.g. "B"), bound at plan time */
} cg_dim;

/** A fixed dimension. */
#define CG_DIM(n) ((cg_dim){(n), NULL})
/** A symbolic dimension. */
#define CG_SYM(s) ((cg_dim){-1, (s)})

/** Creates an empty model for the builder API. */
CG_API cg_status cg_model_create(cg_context *ctx, cg_model **out);

/**
 * Parses graph text. `filename` is used in error messages
 * ("FILE:LINE:COL: message"). The model is not yet verified.
 */
CG_API cg_status cg_model_parse(cg_context *ctx, const char *text, size_t len, const char *filename, cg_model **out);

/** Reads and parses a graph text file. */
CG_API cg_status cg_model_load(cg_context *ctx, const char *path, cg_model **out);

/** Options of cg_model_load_onnx: zero-initialise, set struct_size, then
 * what you need (or pass NULL: none). */
typedef struct cg_onnx_options {
    size_t struct_size; /**< sizeof(cg_onnx_options) */
    /** Values of graph inputs, by name, that the importer may use where a
     * node needs a value at import (a Reshape's shape, Slice's starts):
     * such a use is folded, and an input used only that way is no longer
     * an input of the imported graph. Inputs used as data stay inputs. */
    int n_given;
    const char *const *given_names; /**< n_given input names */
    /** Their values (the caller keeps them). A sequence input of N tensors
     * is given as N values named NAME.0 .. NAME.N-1 (its length must be
     * known at import: it becomes N graph inputs of those names); a NULL
     * value named NAME is an empty sequence, or an optional input without
     * an element (an optional input not given holds a tensor). */
    const cg_tensor *const *given;
    /** The graph rewrites to run on the imported model (cg_model_rewrite's
     * `which`); NULL: the environment variable CLGRAPH_REWRITES, else all.
     * Callers built before this field (a smaller struct_size) get NULL. */
    const char *rewrites;
} cg_onnx_options;

/**
 * Imports an ONNX model file (the default domain, opsets 7 to 17) into a
 * verified model with one graph named after the ONNX graph ("main" when it
 * has none). Every node keeps its ONNX name (more clgraph nodes for one ONNX
 * node get "/2", "/3" ...); values keep theirs; `dim_param` dims become
 * symbols. Initializers, and what is computed from constants alone (folded
 * at import on the host), become params bound to weights the model owns
 * (cg_model_weights). An operator, attribute or type the importer does not
 * take fails with CG_ERR_UNSUPPORTED and "PATH: node 'NAME' (OP, #INDEX):
 * reason"; a malformed file with CG_ERR_FORMAT naming what is wrong.
 * `opt` NULL: no options; options whose struct_size is too small, or
 * n_given without names or values: CG_ERR_INVALID_ARGUMENT.
 */
CG_API cg_status cg_model_load_onnx(cg_context *ctx, const char *path, const cg_onnx_options *opt, cg_model **out);

/**
 * Graph rewrites: passes that replace a chain of nodes by fewer, larger
 * ones computing the same within rounding (the attention an exporter writes
 * as MatMul, scale, mask, Softmax, MatMul becomes one `sdpa` node). The
 * replaced nodes stay in the graph, unread; plans do not run them. An ONNX
 * import runs them (cg_onnx_options.rewrites); cg_model_rewrite runs them
 * on any model. cg_rewrite_count() passes, each with a name and a doc line.
 */
CG_API int cg_rewrite_count(void);
/** Name of rewrite i (0 <= i < cg_rewrite_count()), or NULL. */
CG_API const char *cg_rewrite_name(int i);
/** One line on what rewrite i replaces, or NULL. */
CG_API const char *cg_rewrite_doc(int i);

/**
 * Runs the rewrites `which` selects on every graph of m (verifying m first
 * when needed, and again after each rewrite that changed something):
 * NULL, "" or "all": every one; "none": none; "a,b": those; "-a,-b": all
 * but those. An unknown name fails with CG_ERR_INVALID_ARGUMENT naming it
 * and the rewrites there are. Each run adds to the count of places a
 * rewrite changed (cg_model_rewrite_fired).
 */
CG_API cg_status cg_model_rewrite(cg_model *m, const char *which);

/** How many places rewrite i changed in m, or -1 when it never ran on m. */
CG_API int cg_model_rewrite_fired(const cg_model *m, int i);

/** The weights bound to m (cg_model_bind_weights or an import), or NULL;
 * valid while m and the weights live. */
CG_API cg_weights *cg_model_weights(const cg_model *m);

/**
 * Reads an ONNX TensorProto file (the .pb files of ONNX's test data) into a
 * new tensor. DOUBLE values become f32 (rounded); element types clgraph has
 * no type for (strings, uint16/32/64, int16, complex) are CG_ERR_UNSUPPORTED.
 * `name` (may be NULL) receives the tensor's name (malloc'ed; "" if none).
 */
CG_API cg_status cg_tensor_load_onnx(const char *path, cg_tensor **out, char **name);

/** What an ONNX graph input or output holds (cg_onnx_io_kinds), and the
 * proto a value file of it is (cg_tensors_load_onnx). */
typedef enum cg_onnx_kind {
    CG_ONNX_TENSOR = 1,   /**< a tensor: TensorProto */
    CG_ONNX_SEQUENCE = 2, /**< a sequence of tensors: SequenceProto */
    CG_ONNX_OPTIONAL = 3, /**< an optional tensor or sequence: OptionalProto */
    CG_ONNX_OTHER = 4     /**< maps, sparse tensors, opaque types */
} cg_onnx_kind;

/**
 * Reads an ONNX value file of `kind` (the .pb files of ONNX's test data)
 * as the tensors it holds: a TensorProto's one tensor, a SequenceProto's
 * elements in order, an OptionalProto's tensor or sequence (none when it
 * is empty). *out: a new array of *n tensors (free each, then the array
 * with free()); `held` (may be NULL): CG_ONNX_TENSOR or CG_ONNX_SEQUENCE,
 * what the file holds (CG_ONNX_OPTIONAL: an empty optional); `name` (may
 * be NULL) as cg_tensor_load_onnx. Sequences of sequences and maps are
 * CG_ERR_UNSUPPORTED.
 */
CG_API cg_status cg_tensors_load_onnx(const char *path, cg_onnx_kind kind, int *n, cg_tensor ***out, cg_onnx_kind *held,
                                      char **name);

/**
 * The kinds of an ONNX model's graph inputs (`outputs` 0) or outputs
 * (`outputs` 1) in the file's order, as a new array *kinds of *n (free()),
 * so that a caller reads each test data file as the proto it is.
 */
CG_API cg_status cg_onnx_io_kinds(const char *path, int outputs, int *n, cg_onnx_kind **kinds);

/** Frees a model, its graphs and nodes (NULL is ignored). */
CG_API void cg_model_free(cg_model *m);

/**
 * Prints a model in the text format into a new NUL-terminated string that
 * the caller frees with free(). Parsing the result gives the same model.
 * A parsed model's '#' comments are printed too: one on a line of its own
 * before the statement that followed it, one after code at the end of its
 * statement's line (the canonical order moves statements; comments move
 * with them).
 */
CG_API cg_status cg_model_print(const cg_model *m, char **out);

/**
 * Verifies every graph: definitions, cycles, operator names, arity,
 * attributes, and dtypes/shapes through each operator's inference. With
 * weights bound, also that every parameter exists with its declared shape.
 */
CG_API cg_status cg_model_verify(cg_model *m);

/**
 * Binds a weights file to the model. Parameters are looked up by weight name
 * and checked against their declared dtype and shape. The model keeps a
 * reference; the weights must outlive it.
 */
CG_API cg_status cg_model_bind_weights(cg_model *m, cg_weights *w);

/** Number of graphs in the model. */
CG_API int cg_model_graph_count(const cg_model *m);

/** Graph i (NULL if out of range). */
CG_API cg_graph *cg_model_graph_at(const cg_model *m, int i);

/** Graph by name (NULL if absent). */
CG_API cg_graph *cg_model_graph(const cg_model *m, const char *name);

/** Adds a graph with a unique name. */
CG_API cg_status cg_model_add_graph(cg_model *m, const char *name, cg_graph **out);

/** Name of a graph. */
CG_API const char *cg_graph_name(const cg_graph *g);

/** Declares a graph input. */
CG_API cg_status cg_graph_add_input(cg_graph *g, const char *name, cg_dtype dtype, int ndim, const cg_dim *dims);

/** Declares a parameter value `name` read from weight `weight_name`. */
CG_API cg_status cg_graph_add_param(cg_graph *g, const char *name, const char *weight_name, cg_dtype dtype, int ndim,
                                    const cg_dim *dims);

/**
 * Adds a node `name` of operator `op` reading values `inputs` and defining
 * new values `outputs`. Attributes are set on the returned node.
 */
CG_API cg_status cg_graph_add_node(cg_graph *g, const char *op, const char *name, int n_inputs,
                                   const char *const *inputs, int n_outputs, const char *const *outputs, cg_node **out);

/** Sets an integer attribute. */
CG_API cg_status cg_node_set_int(cg_node *n, const char *key, int64_t v);
/** Sets a float attribute. */
CG_API cg_status cg_node_set_float(cg_node *n, const char *key, double v);
/** Sets a string attribute. */
CG_API cg_status cg_node_set_string(cg_node *n, const char *key, const char *v);
/** Sets an integer-list attribute. */
CG_API cg_status cg_node_set_ints(cg_node *n, const char *key, int count, const int64_t *v);

/** Marks existing values as the graph's outputs, in order. */
CG_API cg_status cg_graph_set_outputs(cg_graph *g, int n, const char *const *names);

/** Number of graph inputs. */
CG_API int cg_graph_input_count(const cg_graph *g);
/** Name of input i. */
CG_API const char *cg_graph_input_name(const cg_graph *g, int i);
/** Declared dtype of input i (0 if out of range). */
CG_API cg_dtype cg_graph_input_dtype(const cg_graph *g, int i);

/**
 * A feed for input `name` in the input's declared dtype: when `t`'s dtype
 * differs and converts into it exactly (cg_dtype_convert_exact: int64 token
 * ids into an i32 input, f16 into f32, ...), *out is a new converted tensor
 * (free it); otherwise *out is NULL and `t` is fed as it is (a run then
 * reports a name the graph lacks). A dtype that does not convert exactly is
 * left to the run too, or with `strict` is CG_ERR_INVALID_ARGUMENT ("input
 * 'x' of graph 'g' is i32, got an array of f32"); a value the conversion
 * cannot hold (an id past i32) is CG_ERR_INVALID_ARGUMENT naming the input
 * and the graph. What `clgraph run --input` (not strict) and the Python
 * Session (strict) do with what they are given.
 */
CG_API cg_status cg_graph_input_convert(const cg_graph *g, const char *name, const cg_tensor *t, int strict,
                                        cg_tensor **out);
/**
 * Symbolic dimensions of input i as text, one field per dimension separated
 * by commas, the symbol's name or "" for a fixed size: "B,S" for i32[B, S],
 * "B," for f32[B, 16]. The caller frees the string with free().
 */
CG_API cg_status cg_graph_input_dims(const cg_graph *g, int i, char **out);

/** Number of graph outputs. */
CG_API int cg_graph_output_count(const cg_graph *g);
/** Name of output i. */
CG_API const char *cg_graph_output_name(const cg_graph *g, int i);

/**
 * Type of graph input i (output 0) or output i (output 1) of a verified
 * model: its dtype, rank, and per dimension (dims and syms hold
 * CG_MAX_DIMS entries) either a fixed size (dims[d] >= 0, syms[d] NULL) or
 * a symbolic one (dims[d] -1, syms[d] the symbol's name, as "B" of
 * f32[B, 16]; it lives as long as the model). CG_ERR_INVALID_ARGUMENT for a
 * bad index or an output of a graph not verified yet.
 */
CG_API cg_status cg_graph_io_shape(const cg_graph *g, int output, int i, cg_dtype *dtype, int *ndim, int64_t *dims,
                                   const char **syms);

/**
 * Describes every value of a verified model, one line each
 * ("graph.value: f32[B, S, 16]  (node 'enc')"), into a string freed by the
 * caller with free().
 */
CG_API cg_status cg_model_describe(const cg_model *m, char **out);

/* ------------------------------------------------------------------ */
/* Plans                                                               */

/** Options of cg_plan_create: zero-initialise, set struct_size, then what
 * you need (or pass NULL: everything on the CPU). */
typedef struct cg_plan_options {
    size_t struct_size; /**< sizeof(cg_plan_options) */
    /**
     * Where nodes run unless a placement rule says otherwise: "cpu" (the
     * default when NULL), "opencl:N", a case-insensitive substring of an
     * OpenCL device, vendor or platform name (see cg_device_describe), or
     * "auto": per node, the device with the least measured kernel time plus
     * copy time (measurements are cached on disk per device and shape); the
     * CPU is always a candidate.
     */
    const char *device;
    /**
     * Placement rules, comma separated PATTERN=DEVICE, e.g.
     * "encoder=opencl:0,decoder=opencl:1,*attn*=cpu". A pattern is a glob
     * matched against node names and against the graph's name; a node-name
     * match wins over a graph-name match, and among those the last rule
     * wins. DEVICE is as for `device` (auto included). NULL for none.
     */
    const char *place;
} cg_plan_options;

/**
 * Lowers graph `graph_name` of a model with bound weights (verified here if
 * it is not yet; NULL names the model's only graph) into a plan placed by
 * `opt` (NULL: the CPU). Symbolic dimensions are bound from the inputs'
 * shapes at run. An op without a kernel on its device runs as its
 * decomposition there; one with neither is an error naming the node and the
 * device (under "auto" it moves to a device that has a kernel, the CPU at
 * worst). Values cross devices through inserted copy steps; parameters are
 * uploaded to each device once.
 */
CG_API cg_status cg_plan_create(cg_model *m, const char *graph_name, const cg_plan_options *opt, cg_plan **out);

/** The device a plan runs on, e.g. "cpu" or "opencl:0 (NAME)". */
CG_API const char *cg_plan_device(const cg_plan *p);

/** Frees a plan (NULL is ignored). */
CG_API void cg_plan_free(cg_plan *p);

/**
 * Runs the plan. `inputs` are given by the graph's input names (any order,
 * every input exactly once). `outputs` receives one new tensor per graph
 * output, in the graph's order; the caller frees them.
 */
CG_API cg_status cg_plan_run(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs,
                             int n_outputs, cg_tensor **outputs);

/**
 * Like cg_plan_run, but writes into `outputs` the caller allocated with the
 * outputs' dtypes and shapes (CG_ERR_INVALID_ARGUMENT otherwise): with shapes
 * seen before, a run then allocates nothing and creates no OpenCL object.
 * An entry may be NULL: that output is computed but not copied to the host
 * (useful when it is only carried into the next run, see cg_plan_carry).
 * Inputs carried by cg_plan_carry may be left out of `names`.
 */
CG_API cg_status cg_plan_run_into(cg_plan *p, int n_inputs, const char *const *names, cg_tensor *const *inputs,
                                  int n_outputs, cg_tensor *const *outputs);

/**
 * The position of graph input `name` among the plan's graph inputs (0 to
 * the input count - 1), for cg_plan_run_indexed; -1 when the graph has no
 * such input or an argument is NULL. Look names up once and run by index:
 * a run then compares no names.
 */
CG_API int cg_plan_input_index(const cg_plan *p, const char *name);

/** The position of graph output `name` (the order of cg_plan_run's
 * outputs), or -1 as cg_plan_input_index. */
CG_API int cg_plan_output_index(const cg_plan *p, const char *name);

/** The inputs and outputs of one cg_plan_run_indexed. */
typedef struct cg_plan_binding {
    size_t struct_size;       /**< sizeof(cg_plan_binding) */
    int n_inputs;             /**< entries of input_index and inputs */
    const int *input_index;   /**< graph input positions (cg_plan_input_index), each at most once */
    cg_tensor *const *inputs; /**< the tensor of each, not NULL */
    int n_outputs;            /**< the graph's output count */
    /** By graph output position, allocated by the caller as for
     * cg_plan_run_into; an entry may be NULL (not read back). */
    cg_tensor *const *outputs;
} cg_plan_binding;

/**
 * cg_plan_run_into with inputs named by position instead of by name: the
 * same checks, results and statistics. Inputs carried by cg_plan_carry may
 * be left out. CG_ERR_INVALID_ARGUMENT for an index out of range or given
 * twice, more inputs than the graph has, an output count other than the
 * graph's, or a binding whose struct_size is too small.
 */
CG_API cg_status cg_plan_run_indexed(cg_plan *p, const cg_plan_binding *b);

/**
 * Keeps input `name` on the devices that read it (keep 1) or uploads it
 * every run (keep 0, the default). A kept input is uploaded when a run gets
 * a different tensor, or the same one after cg_tensor_data or
 * cg_tensor_touch was called on it; otherwise the plan's device copy is
 * used, by runs of any binding of the symbolic dims (each binding copies it
 * on the device once), so inputs that change rarely (an encoder's keys
 * during decoding) cross the bus once. Changing the setting drops the
 * plan's lowered instances (they are rebuilt on the next run) and its copy.
 * CG_ERR_NOT_FOUND when the graph has no such input.
 */
CG_API cg_status cg_plan_keep_input(cg_plan *p, const char *name, int keep);

/** What cg_plan_release gives back (flags). */
enum {
    /** The arena the plan's runs keep their temporaries in, on every
     * device. Lowered instances stay where they live in host memory (the
     * next run's arena takes their views again); on a device they go, and
     * the next run lowers its binding again. */
    CG_RELEASE_ARENA = 1u << 0,
    /** The carried values (cg_plan_carry) and their spare blocks: the next
     * run must be given the carried inputs. */
    CG_RELEASE_CARRIED = 1u << 1,
    CG_RELEASE_ALL = CG_RELEASE_ARENA | CG_RELEASE_CARRIED
};

/**
 * Gives back the plan's working memory named by `what` (CG_RELEASE_*)
 * until its next run, which allocates it again (touching fresh pages).
 * For a plan that runs once in a while beside others that need the memory
 * meanwhile: a translator's encoder while its decoder runs (the arena), its
 * decoder between two batches (the carried caches). Kept inputs' device
 * copies and weights on devices stay. A dispatching plan releases each of
 * its variants. CG_ERR_INVALID_ARGUMENT for a NULL plan or unknown flags.
 */
CG_API cg_status cg_plan_release(cg_plan *p, unsigned what);

/**
 * Carries output `output` of each run into input `input` of the next, for
 * recurrent state: a run whose `names` leave `input` out takes the value the
 * last successful run wrote to `output`, with that run's shape (so symbolic
 * dims of `input` bind from it), and takes it where it was made: a device
 * output is copied on that device into the next run's input buffer and
 * never crosses the bus (nor is read back when the run_into entry is NULL).
 * A run that names `input` takes the given tensor as usual. The first run,
 * or one after a failed run, must give it. `output` NULL stops carrying.
 * dtype, rank and fixed dims of the two must agree (CG_ERR_INVALID_ARGUMENT);
 * CG_ERR_NOT_FOUND when either name is not in the graph.
 */
CG_API cg_status cg_plan_carry(cg_plan *p, const char *input, const char *output);

/** What a plan holds in memory. */
typedef struct cg_plan_memory_info {
    uint64_t arena_bytes;     /**< buffers of the last bound shapes, every device */
    uint64_t param_bytes;     /**< parameter copies on devices without host memory (the CPU reads weights in place) */
    uint64_t state_bytes;     /**< per-node kernel states (plugin ABI 1.1) of the last bound shapes */
    uint64_t all_state_bytes; /**< kernel states of every cached binding */
    uint64_t instances;       /**< bindings of the symbolic dims the plan keeps lowered */
} cg_plan_memory_info;

/** Fills *out with what the plan holds now. */
CG_API cg_status cg_plan_memory(const cg_plan *p, cg_plan_memory_info *out);

/** What a run did, for tests and benchmarks. */
typedef struct cg_plan_stats {
    uint64_t runs;            /**< runs counted */
    uint64_t instances_built; /**< shape bindings lowered (plan cache misses) */
    uint64_t host_allocs;     /**< host allocations by the executor (lowering, outputs) */
    uint64_t device_objects;  /**< objects the device backends created: buffers, programs, kernels */
    uint64_t kernel_launches; /**< kernels run on every device (OpenCL launches counted by the backend) */
    uint64_t copies;          /**< copy steps between devices, uploads and downloads included */
    uint64_t bytes_copied;    /**< their bytes */
    uint64_t library_calls;   /**< calls into device libraries that create objects inside (CLBlast SGEMM) */
    double run_ms;            /**< wall time inside cg_plan_run / cg_plan_run_into */
} cg_plan_stats;

/** Statistics of the last run and the sums over all runs (either may be NULL). */
CG_API cg_status cg_plan_stats_get(const cg_plan *p, cg_plan_stats *last, cg_plan_stats *total);

/* ------------------------------------------------------------------ */
/* Profiling                                                           */

/** A profile: the kernels, copies and host waits of the runs of every plan
 * it is attached to. */
typedef struct cg_profiler cg_profiler;

/** Creates an empty profiler; its clock starts now. */
CG_API cg_status cg_profiler_create(cg_profiler **out);

/** Frees a profiler (NULL is ignored); detach it from its plans first. */
CG_API void cg_profiler_free(cg_profiler *p);

/**
 * Attaches a profiler to a plan (NULL detaches it). Each run then records
 * every kernel (op, node, input shapes, device), copy (bytes), host wait
 * and the run itself. A profiled run waits for each step's device before
 * the next step, so every step's time is its own and the steps of a run
 * add up to the run; devices do not overlap while profiled. Recording
 * allocates (a profiled run is not allocation-free).
 */
CG_API cg_status cg_plan_set_profiler(cg_plan *p, cg_profiler *prof);

/**
 * Writes the events as a Chrome trace / Perfetto JSON file: a track for
 * the host and one per device queue ("cpu", "opencl:0", ...); kernels are
 * named by op with the node, graph and input shapes as arguments, copies
 * carry their bytes. Opens in ui.perfetto.dev or chrome://tracing.
 */
CG_API cg_status cg_profiler_write_trace(const cg_profiler *p, const char *path);

/**
 * The time per node as a text table (freed by the caller), largest first,
 * `top` rows (0: all): calls, total and mean time, share of the kernels'
 * and copies' time, and a last line comparing that time with the runs'.
 */
CG_API cg_status cg_profiler_table(const cg_profiler *p, int top, char **out);

/** Events the profiler could not keep (memory short); 0 normally. */
CG_API uint64_t cg_profiler_dropped(const cg_profiler *p);

/**
 * Lowers the plan for a binding of its symbolic dimensions, given as
 * "B=3,S=7" (without running it; auto placement then uses cached costs or
 * measures on zero-filled inputs), and describes it into a string freed by
 * the caller: every node with its device and kernel, every copy with its
 * bytes, the memory per device and the estimated cost. With `dot`, the
 * description is Graphviz source instead.
 */
CG_API cg_status cg_plan_describe(cg_plan *p, const char *bindings, int dot, char **out);

/* ------------------------------------------------------------------ */
/* Devices                                                             */

/**
 * Number of devices: 1 (the CPU, "cpu") plus every OpenCL device
 * ("opencl:0", ...). OpenCL devices are enumerated once per process; with no
 * ICD or platform there are none and cg_device_note() says why.
 */
CG_API int cg_device_count(void);

/**
 * Describes device i in one line for listings ("opencl:0  NAME  platform ...")
 * into buf; returns its stable name ("cpu", "opencl:0") or NULL if i is out of
 * range. The name stays valid for the process.
 */
CG_API const char *cg_device_describe(int i, char *buf, size_t size);

/** Why no OpenCL device is available, or NULL when some are. */
CG_API const char *cg_device_note(void);

/* ------------------------------------------------------------------ */
/* This machine                                                        */

/** cg_machine_info.measure bits: what cg_machine_measure times. */
#define CG_MACHINE_READ 1u  /**< memory read bandwidth (512 MiB, best of 5; about a second) */
#define CG_MACHINE_SGEMM 2u /**< SGEMM peak (2048^3 through BLAS, best of 3) */

/** The CPU's limits, measured by cg_machine_measure. */
typedef struct cg_machine_info {
    size_t struct_size;  /**< in: sizeof(cg_machine_info) */
    unsigned measure;    /**< in: CG_MACHINE_* bits; 0 fills the counts only */
    double read_gbps;    /**< out: GB/s read by read_threads threads (CG_MACHINE_READ), else 0 */
    double sgemm_gflops; /**< out: GFLOP/s of one SGEMM call (CG_MACHINE_SGEMM), else 0 */
    int read_threads;    /**< out: the online CPUs, one reader thread each */
    int blas_threads;    /**< out: CLGRAPH_THREADS if set, else OpenBLAS's thread count
                          *   (the online CPUs where that is unknown) */
} cg_machine_info;

/**
 * Measures what info->measure asks for on the CPU (occupying every core
 * while it runs) and fills info. CG_ERR_INVALID_ARGUMENT when info is NULL,
 * info->struct_size is smaller than this cg_machine_info or measure has
 * unknown bits; CG_ERR_NO_MEMORY when the buffers or threads could not be
 * had.
 */
CG_API cg_status cg_machine_measure(cg_machine_info *info);

/* ------------------------------------------------------------------ */
/* Conformance                                                         */

/** Outcome of one operator on one device. */
typedef enum cg_conform_result {
    CG_CONFORM_PASS = 0,      /**< every case within tolerance */
    CG_CONFORM_FAIL = 1,      /**< a case differed or a kernel failed */
    CG_CONFORM_NO_KERNEL = 2, /**< the op has no kernel for the device (not a failure) */
    CG_CONFORM_NO_CASES = 3   /**< the op declares no conformance cases */
} cg_conform_result;

/** One row of a conformance report. */
typedef struct cg_conform_row {
    const char *op;           /**< operator name */
    const char *plugin;       /**< the plugin that provides it */
    const char *device;       /**< stable device name, e.g. "opencl:0" */
    int cases_run;            /**< cases compared */
    int cases_skipped;        /**< cases skipped by the quick option */
    double max_abs_error;     /**< largest |device - cpu| over all outputs */
    cg_conform_result result; /**< the verdict */
    const char *message;      /**< the first failure, or "" */
    const char *shapes;       /**< the input shapes tried, e.g. "f32[1], f32[17, 3]" */
    /** With the timing option: a line per case, "case 3 (f32[17]): cpu 2.10 us,
     * opencl:0 40.2 us", ending " SLOW" where the device took more than 100
     * times the CPU kernel's time and over 1 ms; "" otherwise. */
    const char *timings;
    int slow_cases; /**< cases flagged SLOW */
} cg_conform_row;

/** Receives each row as soon as it is known. */
typedef void (*cg_conform_fn)(const cg_conform_row *row, void *user);

/** Options of a conformance run: zero-initialise, set struct_size, then
 * what you need (or pass NULL: every op on every OpenCL device). */
typedef struct cg_conform_options {
    size_t struct_size;     /**< sizeof(cg_conform_options) */
    const char *op;         /**< only this operator, or NULL for all */
    const char *device;     /**< a device spec ("opencl:1", a name substring), NULL for all */
    int quick;              /**< skip cases with more than 4096 elements in a tensor */
    uint64_t seed;          /**< random seed (0 = fixed default) */
    const char *const *ops; /**< only these operators too (n_ops names; with `op`, it and these) */
    int n_ops;              /**< entries of ops */
    int plugin_only;        /**< only the operators of loaded plugins, not the built-in ones */
    /** Called before each kernel runs, with "op NAME case N (SHAPES) on DEVICE"
     * (valid until the next call): a crash handler can say where it was. */
    void (*starting)(const char *what, void *user);
    /** 1: time each passing case on both devices (warm, repeated runs) and
     * fill the rows' timings */
    int timing;
} cg_conform_options;

/**
 * Runs every conformance case of every operator (built-in and from loaded
 * plugins) on each selected OpenCL device against the op's CPU kernel on the
 * same random inputs. Outputs start as NaN (other dtypes: all bits set),
 * and an element a kernel never writes fails the case, as does a write into
 * the guard bytes before or after an output (host memory on the CPU, an
 * over-allocated buffer on OpenCL devices); messages name the case and the
 * kernel's device. `*n_failed` receives the number of failing rows.
 * Returns an error only when the options are bad (unknown op or device).
 */
CG_API cg_status cg_conform(cg_context *ctx, const cg_conform_options *opt, cg_conform_fn fn, void *user,
                            int *n_failed);

/* ------------------------------------------------------------------ */
/* Output files written whole or not at all                            */

/** An output file being written (opaque). */
typedef struct cg_out_file cg_out_file;

/**
 * Starts writing `path` whole or not at all: the stream (cg_out_file_stream)
 * writes a temporary file beside it, which cg_out_file_commit syncs and
 * renames over `path` once every byte is written, so readers see the old
 * file or the whole new one, and a full disk leaves no cut file behind. A
 * `path` that exists and is not a regular file (/dev/stdout, a FIFO) is
 * written in place. Fails with CG_ERR_IO naming the path (errno is kept).
 */
CG_API cg_status cg_out_file_open(const char *path, cg_out_file **out);

/** The stream to write (valid until commit or abort). */
CG_API FILE *cg_out_file_stream(cg_out_file *f);

/**
 * Flushes, syncs and renames the file onto its path when every write
 * succeeded, else removes the temporary file and fails with CG_ERR_IO naming
 * the path (errno is kept). Frees f either way.
 */
CG_API cg_status cg_out_file_commit(cg_out_file *f);

/** Closes the stream and removes the temporary file; frees f (NULL is ignored). */
CG_API void cg_out_file_abort(cg_out_file *f);

#ifdef __cplusplus
}
#endif
#endif /* CLGRAPH_H */
