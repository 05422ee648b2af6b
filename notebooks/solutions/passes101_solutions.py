"""Solutions to the exercises of ``notebooks/07-passes-101.ipynb``.

The notebook imports this file when the environment variable ``PASSLAB_SOLUTIONS`` (or
``CI``) is set, so that it runs headless in CI; in class, students write the passes
themselves. Each pass takes an IRModule and returns a new one (never changing its input).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import is_call_tir, is_const, is_op, rewrite_call, wildcard
from tvm.script import tirx as T

__all__ = ["relu_to_clip", "fold_multiply_by_one", "add_relu", "fuse_add_relu"]


def _rewrite(mod, pattern, rewriter):
    """A copy of ``mod`` with ``rewrite_call`` applied to every Relax function."""
    out = mod.clone()
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            out[gv] = rewrite_call(pattern, rewriter, func)
    return out


def relu_to_clip(mod):
    """Replace every relu by clip(x, 0, +inf): the same numbers from another operator."""
    x = wildcard()
    pattern = is_op("relax.nn.relu")(x)

    def rewriter(expr, matches):
        return relax.op.clip(matches[x], 0.0, float("inf"))

    return _rewrite(mod, pattern, rewriter)


def fold_multiply_by_one(mod):
    """Replace x * 1 (a constant of ones that does not change x's shape) by x."""
    x, one = wildcard(), is_const()
    pattern = is_op("relax.multiply")(x, one)

    def rewriter(expr, matches):
        value = matches[one].value.numpy()  # a relax constant: .value is its tensor
        same_shape = value.size == 1 or value.shape == tuple(expr.ty.shape.values)
        if np.all(value == 1) and same_shape and str(value.dtype) == str(matches[x].ty.dtype):
            return matches[x]
        return expr

    return _rewrite(mod, pattern, rewriter)


# out = max(a + b, 0) in one loop nest: one kernel instead of two. Relax shapes are
# int64, and a kernel with blocks is schedulable TIR (s_tir=True), as LegalizeOps makes them.
@T.prim_func(private=True, s_tir=True)
def add_relu(a: T.Buffer((T.int64(2), T.int64(4)), "float32"), b: T.Buffer((T.int64(4),), "float32"),
             out: T.Buffer((T.int64(2), T.int64(4)), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i, j in T.grid(T.int64(2), T.int64(4)):
        with T.sblock("add_relu"):
            vi, vj = T.axis.remap("SS", [i, j])
            out[vi, vj] = T.max(a[vi, vj] + b[vj], T.float32(0))


def fuse_add_relu(mod):
    """After LegalizeOps: call one hand-written kernel for relu(add(a, b))."""
    builder = relax.BlockBuilder(mod.clone())  # gives the new GlobalVar its function type
    kernel = builder.add_func(add_relu, "add_relu")
    out = builder.get()
    a, b = wildcard(), wildcard()
    pattern = is_call_tir("relu", args=[is_call_tir("add", args=[a, b])])

    def rewriter(expr, matches):
        return relax.call_tir(kernel, [matches[a], matches[b]], out_ty=expr.ty)

    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            out[gv] = relax.analysis.remove_all_unused(rewrite_call(pattern, rewriter, func))
    return out
