/* A copy of include/clgraph/plugin.h as released with ABI 1.0 (commit a5a3bc1), kept
 * unchanged: tests build a plugin against it to show 1.0 plugins still load.
 *
 * clgraph operator plugin ABI, version 1.
 *
 * A plugin is a shared library that exports exactly one entry symbol,
 * `cg_plugin_entry` (see CG_PLUGIN_ENTRY_SYMBOL), returning a static
 * description of the plugin and of the operators it provides. The built-in
 * operators of clgraph are registered through this same ABI.
 *
 * Compatibility rules:
 *  - the host loads a plugin only if its `abi_major` equals the host's;
 *  - a plugin built against a newer minor version is accepted, and the host
 *    reads only the fields it knows (the minor is capped at the host's);
 *  - every struct begins with `struct_size`, so either side reads only the
 *    prefix it knows and new fields are only ever appended;
 *  - the host API table (cg_host_api) only grows;
 *  - errors cross the boundary as a cg_op_status plus a message written into
 *    the caller's buffer, never by longjmp, exit() or abort().
 *
 * Dimensions: a dimension is an int64_t. A value >= 0 is a concrete size.
 * During verification (before shapes are bound), a dimension may be symbolic
 * (a named size such as B or S, encoded as CG_DIM_SYM(k), k >= 0) or unknown
 * (CG_DIM_UNKNOWN). Shape inference functions must accept these: compare
 * dims with cg_dim_compatible(), and produce CG_DIM_UNKNOWN where an output
 * size cannot be computed from non-concrete inputs. When a plan is built,
 * inference runs again with every dimension concrete.
 */
#ifndef CLGRAPH_PLUGIN_H
#define CLGRAPH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** ABI major version: a plugin must be built with the same major. */
#define CG_PLUGIN_ABI_MAJOR 1
/** ABI minor version: grows when fields or host functions are appended. */
#define CG_PLUGIN_ABI_MINOR 0
/** Name of the one symbol every plugin exports. */
#define CG_PLUGIN_ENTRY_SYMBOL "cg_plugin_entry"

/** Most dimensions a tensor may have. */
#define CG_MAX_DIMS 8

/** Unknown dimension (only during verification). */
#define CG_DIM_UNKNOWN ((int64_t)-1)
/** Symbolic dimension number k (only during verification). */
#define CG_DIM_SYM(k) ((int64_t)(-2 - (int64_t)(k)))

/** Marks the plugin entry point as exported from the plugin library. */
#if defined(__GNUC__)
#define CG_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CG_PLUGIN_EXPORT
#endif

/** Status returned by every plugin callback. */
typedef enum cg_op_status {
    CG_OP_OK = 0,       /**< success */
    CG_OP_ERROR = 1,    /**< failure; the message is in the call's err buffer */
    CG_OP_NO_MEMORY = 2 /**< an allocation failed */
} cg_op_status;

/** Element types. Values are part of the ABI. */
typedef enum cg_op_dtype {
    CG_OP_F32 = 1, /**< 32-bit IEEE float */
    CG_OP_I32 = 2  /**< 32-bit signed integer */
} cg_op_dtype;

/** Attribute types. Values are part of the ABI. */
typedef enum cg_attr_type {
    CG_ATTR_INT = 1,    /**< int64_t */
    CG_ATTR_FLOAT = 2,  /**< double */
    CG_ATTR_STRING = 3, /**< NUL-terminated UTF-8 string */
    CG_ATTR_INTS = 4    /**< list of int64_t */
} cg_attr_type;

/** Backend kinds a kernel may be written for. Values are part of the ABI. */
typedef enum cg_backend_kind {
    CG_BACKEND_CPU = 1,   /**< host memory; data pointers are plain pointers */
    CG_BACKEND_OPENCL = 2 /**< OpenCL buffers; data pointers are cl_mem */
} cg_backend_kind;

/** Declares one attribute an operator accepts. */
typedef struct cg_attr_def {
    uint32_t struct_size;       /**< sizeof(cg_attr_def) */
    const char *name;           /**< attribute name, e.g. "axis" */
    cg_attr_type type;          /**< its type; a value of another type is rejected */
    int required;               /**< non-zero: a node must set it */
    int64_t default_int;        /**< default when absent (INT) */
    double default_float;       /**< default when absent (FLOAT) */
    const char *default_string; /**< default when absent (STRING), may be NULL */
    const char *doc;            /**< one line of documentation */
} cg_attr_def;

/** A resolved attribute value, as the host hands it to a callback. */
typedef struct cg_attr_value {
    cg_attr_type type;   /**< the declared type */
    int present;         /**< non-zero if the node set it (else the default) */
    int64_t i;           /**< INT */
    double f;            /**< FLOAT */
    const char *s;       /**< STRING (never NULL: "" if no default) */
    const int64_t *ints; /**< INTS */
    int32_t n_ints;      /**< INTS length */
} cg_attr_value;

/** Element type and shape of one tensor. */
typedef struct cg_tensor_desc {
    cg_op_dtype dtype;         /**< element type */
    int32_t ndim;              /**< number of dimensions, 0..CG_MAX_DIMS */
    int64_t dims[CG_MAX_DIMS]; /**< sizes, outermost first (row-major) */
} cg_tensor_desc;

struct cg_host_api;

/**
 * Everything a callback needs about one node. `attrs` is indexed like the
 * operator's `attrs` declaration, with defaults filled in.
 */
typedef struct cg_op_call {
    uint32_t struct_size;           /**< sizeof(cg_op_call) */
    const char *node_name;          /**< the node's name, for messages */
    int32_t n_inputs;               /**< inputs given to the node */
    int32_t n_outputs;              /**< outputs the node defines */
    const cg_tensor_desc *inputs;   /**< n_inputs descriptors */
    cg_tensor_desc *outputs;        /**< n_outputs: written by infer, read-only after */
    const cg_attr_value *attrs;     /**< one per declared attribute */
    char *err;                      /**< message buffer for CG_OP_ERROR */
    size_t err_size;                /**< its size in bytes */
    const struct cg_host_api *host; /**< host services */
} cg_op_call;

/**
 * Arguments to a kernel. For CG_BACKEND_CPU, `in[i]`/`out[i]` point at
 * row-major host data of the shapes in `call`; `workspace` holds at least the
 * bytes the kernel's workspace callback asked for (or NULL if 0).
 * For CG_BACKEND_OPENCL the pointers are cl_mem handles (each a buffer of
 * exactly the tensor, possibly a sub-buffer), `workspace` is a cl_mem or NULL,
 * and `stream` is the
 * device's cl_command_queue.
 */
typedef struct cg_kernel_args {
    uint32_t struct_size;   /**< sizeof(cg_kernel_args) */
    const cg_op_call *call; /**< shapes, attributes, error buffer */
    const void *const *in;  /**< n_inputs input buffers */
    void *const *out;       /**< n_outputs output buffers */
    void *workspace;        /**< scratch memory (uninitialised) */
    size_t workspace_size;  /**< its size in bytes */
    void *stream;           /**< backend queue (OpenCL), NULL on the CPU */
    void *device;           /**< host's handle of the device, for host API calls */
} cg_kernel_args;

/** One kernel of an operator for one backend kind. */
typedef struct cg_kernel_def {
    uint32_t struct_size;    /**< sizeof(cg_kernel_def) */
    cg_backend_kind backend; /**< which backend runs it */
    /** Bytes of scratch memory needed for this call; NULL means none. */
    size_t (*workspace)(const cg_op_call *call);
    /** Runs the node. Must not allocate on the hot path if it can avoid it. */
    cg_op_status (*run)(const cg_kernel_args *args);
} cg_kernel_def;

/** Most inputs a conformance case may have. */
#define CG_CONFORM_MAX_INPUTS 32

/**
 * One conformance case of an operator: input types and value ranges and the
 * attributes, so `clgraph conform` can run the op on every device against
 * its CPU kernel with random data. Dims must be concrete.
 */
typedef struct cg_conform_case {
    uint32_t struct_size;                         /**< sizeof(cg_conform_case), set by the host */
    int32_t n_inputs;                             /**< inputs of the node */
    cg_tensor_desc inputs[CG_CONFORM_MAX_INPUTS]; /**< their types */
    double lo[CG_CONFORM_MAX_INPUTS];             /**< uniform values in [lo, hi]; i32: integers */
    double hi[CG_CONFORM_MAX_INPUTS];             /**< upper bound of each input's values */
    int32_t n_outputs;                            /**< outputs of the node */
    const char *attrs;                            /**< attribute text in IR syntax, or NULL */
    double atol;                                  /**< abs. tolerance; 0 = default (1e-4 for f32) */
    double rtol;                                  /**< rel. tolerance; 0 = default (1e-4 for f32) */
} cg_conform_case;

/** Handle through which a decomposition emits nodes (host-owned). */
typedef struct cg_decomp cg_decomp;

/** Operator flags. */
enum {
    /** Output 0 may share input 0's buffer (same size, elementwise). */
    CG_OP_FLAG_INPLACE0 = 1u << 0
};

/** Definition of one operator. */
typedef struct cg_op_def {
    uint32_t struct_size;           /**< sizeof(cg_op_def) */
    const char *name;               /**< operator name used in graphs, e.g. "gru_cell" */
    const char *doc;                /**< one-paragraph documentation */
    int32_t min_inputs;             /**< fewest inputs */
    int32_t max_inputs;             /**< most inputs; -1 for any number */
    int32_t min_outputs;            /**< fewest outputs */
    int32_t max_outputs;            /**< most outputs */
    const char *const *input_names; /**< NULL-terminated input names for messages and docs, may be NULL */
    const cg_attr_def *attrs;       /**< declared attributes */
    int32_t n_attrs;                /**< their count */
    /**
     * Dtype and shape inference: reads call->inputs and call->attrs, writes
     * call->outputs[0..n_outputs). Returns CG_OP_ERROR with a message (without
     * the node name, which the host adds) on invalid input.
     */
    cg_op_status (*infer)(cg_op_call *call);
    /**
     * Optional decomposition into other operators, used when no kernel exists
     * for a device, and as the op's reference meaning. NULL if none.
     */
    cg_op_status (*decompose)(cg_decomp *d, const cg_op_call *call);
    const cg_kernel_def *kernels; /**< kernels, at most one per backend kind */
    int32_t n_kernels;            /**< their count */
    uint32_t flags;               /**< CG_OP_FLAG_* */
    /**
     * Conformance cases: fills case `index` (0, 1, ...) and returns 1, or
     * returns 0 past the last one. NULL: the op has no cases and conform
     * reports it as untested.
     */
    int32_t (*conform_case)(int32_t index, cg_conform_case *c);
} cg_op_def;

/**
 * Services the host offers to plugins. The table only grows: check
 * `struct_size` before using a function added in a later minor version.
 */
typedef struct cg_host_api {
    uint32_t struct_size; /**< sizeof(cg_host_api) of the host */
    uint32_t abi_major;   /**< host ABI major */
    uint32_t abi_minor;   /**< host ABI minor */
    /**
     * Row-major single-precision GEMM on host memory:
     * C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T.
     * A is [M,K] (or [K,M] if trans_a), B is [K,N] (or [N,K] if trans_b).
     */
    void (*sgemm)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    /** Decomposition: value id of the op's input i. */
    int32_t (*decomp_input)(cg_decomp *d, int32_t i);
    /**
     * Decomposition: adds a node of operator `op` on `n_in` value ids; writes
     * the ids of its `n_out` new outputs. `attrs` is a text attribute list in
     * the IR syntax (e.g. "axis: 1, transpose_b: 1") or NULL. Returns
     * CG_OP_ERROR (message kept by the host) on failure.
     */
    cg_op_status (*decomp_node)(cg_decomp *d, const char *op, int32_t n_in, const int32_t *in, int32_t n_out,
                                int32_t *out, const char *attrs);
    /** Decomposition: makes value id `v` the op's output i. */
    cg_op_status (*decomp_output)(cg_decomp *d, int32_t i, int32_t v);

    /* ---- OpenCL services (kernels whose backend is CG_BACKEND_OPENCL) ---- */

    /**
     * The cl_kernel `name` from OpenCL C 1.2 `source` built with `options`
     * for the kernel's device. Programs are built on first use, cached in
     * memory and on disk; later calls return the same object, so a kernel
     * creates no OpenCL object in the steady state. The returned kernel is
     * the host's (do not release it); set its arguments and launch it before
     * returning from run. NULL on failure, with the message (the build log
     * for a compile error) in args->call->err.
     */
    void *(*cl_kernel)(const cg_kernel_args *args, const char *source, const char *options, const char *name);
    /**
     * Enqueues `kernel` on the device's queue over `dims` dimensions.
     * `global` is rounded up to a multiple of `local` (when local is not
     * NULL), so the kernel must bounds-check. Fails with the OpenCL error's
     * name in args->call->err.
     */
    cg_op_status (*cl_launch)(const cg_kernel_args *args, void *kernel, int32_t dims, const size_t *global,
                              const size_t *local);
    /**
     * Row-major SGEMM on OpenCL buffers: C = alpha op(A) op(B) + beta C, with
     * element offsets. The backend picks CLBlast or its own GEMV/GEMM kernel
     * by measurement per device and shape, and records the choice.
     */
    cg_op_status (*cl_sgemm)(const cg_kernel_args *args, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, void *a, size_t a_off, int64_t lda, void *b, size_t b_off, int64_t ldb,
                             float beta, void *c, size_t c_off, int64_t ldc);
    /** A device limit: one of CG_CL_INFO_*. 0 if unknown. */
    int64_t (*cl_info)(const cg_kernel_args *args, int32_t what);
    /** Name of an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES". */
    const char *(*cl_error_name)(int32_t code);
} cg_host_api;

/** Device limits readable through cg_host_api.cl_info. */
enum {
    CG_CL_INFO_MAX_WORK_GROUP = 1, /**< CL_DEVICE_MAX_WORK_GROUP_SIZE (capped at 256) */
    CG_CL_INFO_LOCAL_MEM = 2,      /**< CL_DEVICE_LOCAL_MEM_SIZE in bytes (capped at 32 KiB) */
    CG_CL_INFO_COMPUTE_UNITS = 3,  /**< CL_DEVICE_MAX_COMPUTE_UNITS */
    CG_CL_INFO_MEM_ALIGN = 4       /**< sub-buffer offset alignment in bytes */
};

/** What a plugin's entry symbol returns. */
typedef struct cg_plugin_desc {
    uint32_t struct_size; /**< sizeof(cg_plugin_desc) */
    uint32_t abi_major;   /**< CG_PLUGIN_ABI_MAJOR the plugin was built with */
    uint32_t abi_minor;   /**< CG_PLUGIN_ABI_MINOR the plugin was built with */
    const char *name;     /**< plugin name, e.g. "layernorm-example" */
    const char *version;  /**< plugin version string */
    /**
     * Optional: called once after the ABI check with the host table. Returns
     * CG_OP_ERROR with a message in `err` to refuse loading.
     */
    cg_op_status (*init)(const cg_host_api *host, char *err, size_t err_size);
    const cg_op_def *const *ops; /**< the operators */
    int32_t n_ops;               /**< their count */
} cg_plugin_desc;

/** Signature of the entry symbol `cg_plugin_entry`. */
typedef const cg_plugin_desc *(*cg_plugin_entry_fn)(void);

/* ---- helpers for inference functions (header-only, no ABI impact) ---- */

/** Non-zero when d is a concrete size. */
static inline int cg_dim_known(int64_t d) { return d >= 0; }

/**
 * Non-zero unless a and b are certainly different: concrete and unequal, or
 * a concrete size against nothing else is always compatible when either is
 * symbolic or unknown (checked again once shapes are bound).
 */
static inline int cg_dim_compatible(int64_t a, int64_t b) { return !(a >= 0 && b >= 0 && a != b); }

/** Unifies two compatible dims, preferring the concrete or symbolic one. */
static inline int64_t cg_dim_unify(int64_t a, int64_t b) {
    if (a >= 0) return a;
    if (b >= 0) return b;
    if (a != CG_DIM_UNKNOWN) return a;
    return b;
}

/** Sum of two dims; unknown unless both are concrete. */
static inline int64_t cg_dim_add(int64_t a, int64_t b) { return (a >= 0 && b >= 0) ? a + b : CG_DIM_UNKNOWN; }

/** Product of two dims; unknown unless both are concrete. */
static inline int64_t cg_dim_mul(int64_t a, int64_t b) { return (a >= 0 && b >= 0) ? a * b : CG_DIM_UNKNOWN; }

#ifdef __cplusplus
}
#endif
#endif /* CLGRAPH_PLUGIN_H */
