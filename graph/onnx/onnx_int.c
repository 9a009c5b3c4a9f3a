/* ONNX's integer operators onto clgraph's: Mod (mod, fmod as given),
 * BitShift (bit_shift, direction in lower case), BitwiseAnd, BitwiseOr,
 * BitwiseXor and BitwiseNot. Broadcasting and the dtypes taken are the
 * clgraph ops' own (every integer type; Mod also f32, and f16, bf16 and
 * double through f32), whose inference names what they refuse. */
#include "onnx_imp.h"
#include "onnx_ops_util.h"

#include <stdio.h>
#include <string.h>

/* Inputs 0 and 1 into clgraph op `op` with attributes `attrs`. */
static cg_status binary(onnx_imp *im, const char *op, const char *attrs) {
    onnx_val *a, *b;
    cg_status s;
    if ((s = need_in(im, 0, &a)) || (s = need_in(im, 1, &b))) return s;
    const char *in[2] = {a->name, b->name};
    return emit1(im, op, 2, in, out_name(im, 0), attrs);
}

cg_status cg_onnx_map_mod(onnx_imp *im) {
    static const char *const known[] = {"fmod", NULL};
    cg_status s = onnx_check_attrs(im, known);
    if (s) return s;
    const int64_t f = onnx_attr_int(im, "fmod", 0);
    if (f != 0 && f != 1) return onnx_fail(im, CG_ERR_FORMAT, "attribute 'fmod' is %lld, not 0 or 1", (long long)f);
    return binary(im, "mod", f ? "fmod: 1" : "fmod: 0");
}

cg_status cg_onnx_map_bitshift(onnx_imp *im) {
    static const char *const known[] = {"direction", NULL};
    cg_status s = onnx_check_attrs(im, known);
    if (s) return s;
    const Onnx__AttributeProto *d = onnx_attr_typed(im, "direction", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!d || !d->has_s) return onnx_fail(im, CG_ERR_FORMAT, "no 'direction' attribute");
    const int left = d->s.len == 4 && !memcmp(d->s.data, "LEFT", 4);
    if (!left && !(d->s.len == 5 && !memcmp(d->s.data, "RIGHT", 5)))
        return onnx_fail(im, CG_ERR_FORMAT, "attribute 'direction' must be \"LEFT\" or \"RIGHT\"");
    return binary(im, "bit_shift", left ? "direction: \"left\"" : "direction: \"right\"");
}

cg_status cg_onnx_map_bitwise(onnx_imp *im) {
    cg_status s = onnx_check_attrs(im, NULL);
    if (s) return s;
    const char *op = im->node->op_type;
    if (!strcmp(op, "BitwiseNot")) {
        onnx_val *x;
        if ((s = need_in(im, 0, &x))) return s;
        const char *in[1] = {x->name};
        return emit1(im, "bitwise_not", 1, in, out_name(im, 0), NULL);
    }
    return binary(im,
                  !strcmp(op, "BitwiseAnd")  ? "bitwise_and"
                  : !strcmp(op, "BitwiseOr") ? "bitwise_or"
                                             : "bitwise_xor",
                  NULL);
}
