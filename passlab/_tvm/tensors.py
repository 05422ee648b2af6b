"""Tensor constants as TVM 0.27 stores and loads them (`SaveDLTensor` / `Tensor::Load` in
`include/tvm/runtime/tensor.h`, `GetDataSize` in tvm_ffi's `container/tensor.h`).

The saved form is `magic, reserved, device (type, id), ndim, dtype (code, bits, lanes),
shape[ndim], data_byte_size, data`. The writer and the loader size the data as
`prod(shape) * ((bits + 7) // 8)` (lanes ignored), but `Tensor::Empty` allocates the
buffer packed, `ceil(prod(shape) * bits * lanes / 8)`, and the loader copies the declared
bytes into it: for a sub-byte type (`bool` as 1 bit, `int4`, `int6`) of more than one
element that writes past the allocation. `tensor_bytes` gives both counts, so a
checker can accept exactly the tensors whose copy fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["TENSOR_MAGIC", "tensor_bytes", "dtype_name", "imm_error", "random_constants"]

#: ``kTVMTensorMagic``: the first 8 bytes of a saved tensor.
TENSOR_MAGIC = 0xDD5E40F096B4A13F


@lru_cache(maxsize=256)
def dtype_name(code: int, bits: int, lanes: int) -> str | None:
    """TVM's name of the DLPack data type (`float32`, `int4`, `float32x4`), or None
    for a type code TVM does not know or a type that does not read back as itself."""
    import tvm_ffi
    from tvm_ffi import core

    try:
        name = str(core._create_cdtype_from_tuple(core.DataType, code, bits, lanes))
        back = tvm_ffi.dtype(name)
    except Exception:  # noqa: BLE001 - TVM raises its own error types
        return None
    if (back.type_code, back.bits, back.lanes) != (code, bits, lanes):
        return None
    return name


def tensor_bytes(bits: int, lanes: int, shape: Sequence[int]) -> tuple[int, int]:
    """(bytes the saved form holds and `Tensor::Load` copies, bytes it allocates) for a
    tensor of `shape` whose elements have `bits` bits and `lanes` lanes, computed
    exactly (no 64-bit wrap-around)."""
    count = math.prod(shape)
    return count * ((bits + 7) // 8), (count * bits * lanes + 7) // 8


@lru_cache(maxsize=4096)
def imm_error(kind: str, dtype: str) -> str | None:
    """None when TVM's own constructor makes a scalar constant `kind` (`"ir.IntImm"` or
    `"ir.FloatImm"`) of type `dtype` (tried with the value 0), else the last line of
    its error. The JSON loader builds objects field by field and skips that check (an
    integer typed `void` loads, then the printer raises). Values are not checked: TVM's
    own passes make constants its constructor would refuse (`bool` 57)."""
    import tvm.tirx

    make = tvm.tirx.IntImm if kind == "ir.IntImm" else tvm.tirx.FloatImm
    try:
        make(dtype, 0)
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error types
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return (lines[-1] if lines else type(exc).__name__)[:200]
    return None


def random_constants(mod, seed: int = 0):
    """`mod` with every Relax tensor constant whose data was left out (a trace saved
    with `weights=False`: an empty tensor where its type has a shape) replaced by seeded
    random values of its type's shape and data type; other constants are kept."""
    import numpy as np
    import tvm
    from tvm import relax

    rng = np.random.default_rng(seed)

    @relax.expr_functor.mutator
    class _Fill(relax.PyExprMutator):
        def visit_generic_const_(self, op):
            data, ty = op.value, op.ty
            shape = getattr(getattr(ty, "shape", None), "values", None)
            if not isinstance(data, tvm.runtime.Tensor) or shape is None or \
                    tuple(data.shape) == tuple(int(d) for d in shape):
                return op
            dims = [int(d) for d in shape]
            dtype = str(ty.dtype)
            kind = np.dtype(dtype).kind if dtype != "bool" else "b"
            if kind == "f":
                values = rng.uniform(-1.0, 1.0, size=dims).astype(dtype)
            elif kind == "b":
                values = rng.integers(0, 2, size=dims).astype(bool)
            else:
                values = rng.integers(0, 8, size=dims).astype(dtype)
            return relax.const(values, dtype)

    out = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            out[gv] = _Fill().visit_expr(func)
    return out
