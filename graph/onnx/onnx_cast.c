/* Cast and CastLike onto clgraph's cast op, which converts between every
 * pair of dtypes by ONNX's rules, the narrow types of float8, float4, int4
 * and int2 included: saturate (opset 19) and round_mode (opset 24) become
 * its attributes of the same names. */
#include "onnx_imp.h"

#include <stdio.h>
#include <string.h>

#include "narrow.h"
#include "onnx_ops_util.h"

cg_status cg_onnx_map_cast(onnx_imp *im) {
    static const char *const known[] = {"to", "saturate", "round_mode", NULL};
    onnx_val *x, *like = NULL;
    cg_status s;
    if ((s = need_in(im, 0, &x)) || (s = onnx_check_attrs(im, known))) return s;
    const int cast_like = !strcmp(im->node->op_type, "CastLike");
    if (cast_like && (s = need_in(im, 1, &like))) return s;
    const Onnx__AttributeProto *to =
        cast_like ? NULL : onnx_attr_typed(im, "to", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (!cast_like && (!to || !to->has_i)) return onnx_fail(im, CG_ERR_FORMAT, "no 'to' attribute");
    cg_dtype dt = cast_like ? (cg_dtype)like->desc.dtype : cg_onnx_dtype((int32_t)to->i);
    if (!dt) return onnx_fail(im, CG_ERR_UNSUPPORTED, "cast to %s is not supported", cg_onnx_type_name((int32_t)to->i));
    const Onnx__AttributeProto *rm = onnx_attr_typed(im, "round_mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char mode[16] = "up";
    if (rm && rm->has_s) snprintf(mode, sizeof mode, "%.*s", (int)rm->s.len, (const char *)rm->s.data);
    if (strcmp(mode, "up") && strcmp(mode, "down") && strcmp(mode, "nearest"))
        return onnx_fail(im, CG_ERR_FORMAT, "round_mode must be \"up\", \"down\" or \"nearest\", got \"%s\"", mode);
    if (dt == (cg_dtype)x->desc.dtype) {
        int64_t d[CG_MAX_DIMS];
        memcpy(d, x->desc.dims, sizeof d);
        return emit_reshape(im, x, x->desc.ndim, d, out_name(im, 0));
    }
    const char *in[1] = {x->name};
    char a[96];
    snprintf(a, sizeof a, "to: \"%s\", saturate: %d, round_mode: \"%s\"", cg_dtype_name(dt),
             onnx_attr_int(im, "saturate", 1) != 0, mode);
    return emit1(im, "cast", 1, in, out_name(im, 0), a);
}
