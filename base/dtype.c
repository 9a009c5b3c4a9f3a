/* Element types: names and sizes (public: cg_dtype_name, cg_dtype_size). */
#include "clgraph/clgraph.h"

const char *cg_dtype_name(cg_dtype t) {
    switch (t) {
    case CG_F32: return "f32";
    case CG_I32: return "i32";
    }
    return "?";
}

size_t cg_dtype_size(cg_dtype t) {
    switch (t) {
    case CG_F32: return 4;
    case CG_I32: return 4;
    }
    return 0;
}
