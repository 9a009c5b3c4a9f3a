"""Writes ops/int_*/ in ONNX's backend-test layout (as make_ops.py) for the
integer types beyond int32 and int64: uint64 values past int64's range,
int16 and uint32 arithmetic, Mod's two sign rules, BitShift and the bitwise
ops, Cast between the new types; each once folded at import (initializers)
and once run on a device (graph inputs). Expected outputs come from NumPy.
`clgraph onnx-test tests/data/onnx/ops` runs them (tests/graph/onnx/
test_onnx.c, every device). Needs numpy and onnx: python3 make_int_ops.py"""
import functools

import numpy as np
from onnx import TensorProto, helper

import onnx_case

# ONNX 18: BitShift and the bitwise ops of uint16/uint32
save = functools.partial(onnx_case.save, opset=18)


def node(op, ins, out, **attrs):
    return helper.make_node(op, ins, [out], name=out, **attrs)


# uint64 past int64's range: division, Python's and C's remainder, order,
# the conversion to float (NumPy rounds uint64 to float32 once)
a = np.array([2**64 - 1, 2**63, 2**63 + 12345, 10, 7, 2**40 + 3], dtype=np.uint64)
b = np.array([2, 10, 2**62, 3, 9, 2**63 + 1], dtype=np.uint64)
u64 = [("div", node("Div", ["a", "b"], "div"), a // b), ("mod", node("Mod", ["a", "b"], "mod"), np.mod(a, b)),
       ("max", node("Max", ["a", "b"], "max"), np.maximum(a, b)),
       ("less", node("Less", ["a", "b"], "less"), np.less(a, b)),
       ("tofloat", node("Cast", ["a"], "tofloat", to=TensorProto.FLOAT), a.astype(np.float32)),
       ("toi16", node("Cast", ["a"], "toi16", to=TensorProto.INT16), a.astype(np.int16))]
outs = [(n, w) for n, _, w in u64]
save("int_u64_folded", [nd for _, nd, _ in u64], [], outs, inits=[("a", a), ("b", b)])
save("int_u64_runtime", [nd for _, nd, _ in u64], [("a", a), ("b", b)], outs)

# int16: wrapping arithmetic, Mod with fmod 0 (the divisor's sign) and 1
# (the dividend's), Abs and Neg of the most negative value
x = np.array([-32768, -7, 7, -7, 32767, 300, -1], dtype=np.int16)
y = np.array([3, 3, -3, -3, 2, -301, 5], dtype=np.int16)
with np.errstate(over="ignore"):
    i16 = [("add", node("Add", ["x", "y"], "add"), x + y), ("mul", node("Mul", ["x", "y"], "mul"), x * y),
           ("mod0", node("Mod", ["x", "y"], "mod0"), np.mod(x, y)),
           ("mod1", node("Mod", ["x", "y"], "mod1", fmod=1), np.fmod(x, y)),
           ("abs", node("Abs", ["x"], "abs"), np.abs(x)), ("neg", node("Neg", ["x"], "neg"), np.negative(x)),
           ("tou32", node("Cast", ["x"], "tou32", to=TensorProto.UINT32), x.astype(np.uint32))]
save("int_i16", [nd for _, nd, _ in i16], [("x", x), ("y", y)], [(n, w) for n, _, w in i16])

# uint32 shifts (amounts below the width; ONNX 18's BitShift is unsigned)
# and the bitwise ops with broadcasting, uint16 BitwiseNot
v = np.array([[1, 2**31 + 5, 0xFFFFFFFF], [12345, 7, 2**20]], dtype=np.uint32)
s = np.array([3, 31, 0], dtype=np.uint32)
w16 = np.array([0, 1, 0x8000, 0xFFFF], dtype=np.uint16)
bits = [("shl", node("BitShift", ["v", "s"], "shl", direction="LEFT"), np.left_shift(v, s)),
        ("shr", node("BitShift", ["v", "s"], "shr", direction="RIGHT"), np.right_shift(v, s)),
        ("band", node("BitwiseAnd", ["v", "s"], "band"), np.bitwise_and(v, s)),
        ("bor", node("BitwiseOr", ["v", "s"], "bor"), np.bitwise_or(v, s)),
        ("bxor", node("BitwiseXor", ["v", "s"], "bxor"), np.bitwise_xor(v, s)),
        ("bnot", node("BitwiseNot", ["w16"], "bnot"), np.invert(w16))]
save("int_bits", [nd for _, nd, _ in bits], [("v", v), ("s", s), ("w16", w16)], [(n, w) for n, _, w in bits])
