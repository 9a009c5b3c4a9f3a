/* Subgraphs imported into the one clgraph graph (onnx_ctrl.c), shared by
 * If (onnx_ctrl.c) and Loop and Scan (onnx_loop.c). */
#ifndef CG_GRAPH_ONNX_CTRL_H
#define CG_GRAPH_ONNX_CTRL_H

#include "onnx_imp.h"

/* The most subgraph nodes a model's If, Loop and Scan nodes copy in all
 * (iterations times body nodes, nested loops multiplied): past it the
 * node is refused, not imported for minutes. */
#define ONNX_CTRL_MAX_UNROLL 262144
/* Subgraphs nested deeper than this are refused (the import recurses). */
#define ONNX_CTRL_MAX_DEPTH 64

/* How one subgraph is imported. */
typedef struct onnx_ctrl_frame {
    const char *prefix; /* put before the names defined inside; NULL: the enclosing scope's ("" at the top) */
    const char *label;  /* names the subgraph's nameless nodes ("/Loop/iter2", "/If/then") */
    int n_actual;       /* the subgraph's inputs are these values (names), in order */
    const char *const *actual;
    int n_preset; /* names the subgraph defines that take these names instead (an If's outputs) */
    const char *const *preset_from, *const *preset_to;
} onnx_ctrl_frame;

/* Imports subgraph g under f: the values it defines renamed (unique), the
 * names it reads from enclosing scopes looked up there. outs[k] receives
 * the importer's name of g's output k (valid until the import ends). */
cg_status onnx_ctrl_body(onnx_imp *im, const Onnx__GraphProto *g, const onnx_ctrl_frame *f, const char **outs);

/* Imports one ONNX node made by the importer (`op` on ins into out, named
 * `name`), folded or mapped like the file's: an optional attribute `key`
 * of one int (list 0) or a list of one int (list 1). */
cg_status onnx_ctrl_node(onnx_imp *im, const char *op, const char *name, int n_in, const char *const *ins,
                         const char *out, const char *key, int64_t val, int list);

/* A value known at import named after `base` (made unique) holding t
 * (taken); its name out. */
cg_status onnx_ctrl_konst(onnx_imp *im, const char *base, cg_tensor *t, const char **name);

/* base, or base_2, base_3 ... where base names a value already: a name for
 * a new value (malloc'ed; NULL on no memory). */
char *onnx_ctrl_unique(onnx_imp *im, const char *base);

/* The current node's name, or "OpType_INDEX" for a nameless one, into buf. */
const char *onnx_ctrl_node_name(const onnx_imp *im, char *buf, size_t size);

/* The subgraph attribute `key` of the current node (an error when it is
 * missing or not a graph). */
cg_status onnx_ctrl_graph_attr(onnx_imp *im, const char *key, const Onnx__GraphProto **g);

#endif
