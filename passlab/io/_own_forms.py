"""The parts of a saved IR graph that TVM reads through code of its own: objects saved
by name (operators, type-inference functions, target kinds, source names, layout axes),
tensor constants in TVM's binary format (sized exactly as TVM's loader allocates and
copies them), and scalar constants (typed as TVM's constructor requires). Used by
`passlab.io.validate.check_ir_graph`, whose limits apply."""

from __future__ import annotations

import base64
import binascii
import re
import struct
from functools import cache
from typing import Any

from passlab._tvm.tensors import TENSOR_MAGIC, dtype_name, imm_error, tensor_bytes
from passlab.io import _text as _v

__all__ = ["OWN_FORM_STR", "check_own_form", "check_imm", "b64"]

#: Types saved as their name (a string), each checked against what this TVM registers.
OWN_FORM_STR = frozenset({"ir.Op", "ir.EnvFunc", "target.TargetKind", "ir.SourceName",
                          "tirx.Axis"})
# Layout axes (``tirx.Axis``, in the kernels of cumsum and other scans) are saved by name;
# TVM registers an unknown name when it loads one, so only short plain names are read.
_AXIS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# EnvFunc names are looked up in TVM's global function table and called by type
# inference: only TVM's own type-inference functions may be named.
_ENV_FUNC = re.compile(r"^tvm\.relax\.type\.[A-Za-z0-9_.]+$")


def check_imm(g: Any, i: int, key: str, data: dict[str, Any]) -> None:
    """A scalar constant must have a type TVM's constructor accepts (a scalar integer or
    float type): the loader skips that check."""
    ty = data.get("ty")
    if type(ty) is not int:
        raise g.fail(i, f"a {key} needs its type", "ty")
    if g.kind[ty] != "ir.PrimType":
        raise g.fail(i, f"refers to node {ty}, which is a {g.kind[ty]}, but a {key} is typed "
                        "by an ir.PrimType", "ty")
    dtype = g.nodes[ty]["data"].get("dtype")
    why = imm_error(key, dtype) if isinstance(dtype, str) else "no dtype"
    if why is not None:
        raise g.fail(i, f"is typed {dtype!r:.40}, which TVM's {key} refuses ({why})")


def b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def check_own_form(g: Any, i: int, key: str, data: Any) -> None:
    if key in OWN_FORM_STR:
        if not isinstance(data, str):
            raise g.fail(i, f"a {key} is saved as its name (a string)")
        why = _v.bad_text(data, _v.MAX_SOURCE_NAME if key == "ir.SourceName" else _v.MAX_NAME)
        if why:
            raise g.fail(i, f"a {key} whose name {why}")
        known = _known_names(key)
        if known is not None and data not in known:
            raise g.fail(i, f"{data!r:.80} is not a {key} registered in this TVM")
        if key == "tirx.Axis" and not _AXIS_NAME.match(data):
            raise g.fail(i, f"{data!r:.80} is not a layout axis name (a short identifier)")
        if key == "ir.EnvFunc" and not _ENV_FUNC.match(data):
            raise g.fail(i, f"{data!r:.80} is not one of TVM's type-inference functions "
                            "(tvm.relax.type.*)")
    elif key == "ffi.Tensor":
        _check_tensor(g, i, data)
    elif key == "ffi.BigInt":
        if not isinstance(data, str) or not re.fullmatch(r"-?[0-9]{1,100}", data):
            raise g.fail(i, "a big integer is saved as its decimal digits")
    else:
        raise g.fail(i, "a trace's IR holds no objects of this type (it loads through "
                        "code of its own)")


@cache
def _known_names(key: str) -> frozenset[str] | None:
    import tvm

    if key == "ir.Op":
        return frozenset(tvm.ir.Op.list_op_names())
    if key == "ir.EnvFunc":
        from tvm_ffi.registry import list_global_func_names

        return frozenset(list_global_func_names())
    if key == "target.TargetKind":
        return frozenset(tvm.target.Target.list_kinds())
    return None


_HEAD = struct.Struct("<QQiiiBBH")  # magic, reserved, device type and id, ndim, dtype


def _check_tensor(g: Any, i: int, data: Any) -> None:
    """TVM's tensor format (`runtime::Tensor::Load`): the declared byte count must be
    what TVM's writer computes for the shape and data type, the data must be exactly that
    long, and the copy must fit the buffer TVM allocates for it (sub-byte types are
    allocated packed but copied a byte per element: refused unless both agree)."""
    blob = b64(data) if isinstance(data, str) else None
    if blob is None or len(blob) < _HEAD.size:
        raise g.fail(i, "a tensor is saved as base64 of TVM's tensor format")
    magic, _, dev, dev_id, ndim, code, bits, lanes = _HEAD.unpack_from(blob)
    if magic != TENSOR_MAGIC or dev != 1 or dev_id != 0:  # kDLCPU, device 0
        raise g.fail(i, "not a CPU tensor in TVM's tensor format")
    name = dtype_name(code, bits, lanes)
    if not 0 <= ndim <= _v.MAX_TENSOR_NDIM or name is None or bits == 0 or code == 3:
        raise g.fail(i, f"a tensor of {ndim} dimensions, type code {code}, {bits} bits x "
                        f"{lanes} lanes is not read (at most {_v.MAX_TENSOR_NDIM} dimensions, "
                        "a numeric data type TVM knows)")
    end = _HEAD.size + 8 * ndim + 8
    if len(blob) < end:
        raise g.fail(i, "the tensor's header is cut short")
    shape = struct.unpack_from(f"<{ndim}q", blob, _HEAD.size)
    (nbytes,) = struct.unpack_from("<q", blob, end - 8)
    if any(d < 0 or d >= 2**31 for d in shape):
        raise g.fail(i, f"a tensor of shape {list(shape)[:8]} has a dimension out of "
                        "0..2**31-1")
    copied, allocated = tensor_bytes(bits, lanes, shape)
    if nbytes != copied or nbytes != len(blob) - end:
        raise g.fail(i, f"a {name} tensor of shape {list(shape)[:8]} does not match its "
                        f"{len(blob) - end:,} bytes of data (declared {nbytes:,}; TVM "
                        f"reads {copied:,})")
    if copied != allocated:
        raise g.fail(i, f"a {name} tensor of shape {list(shape)[:8]} cannot be loaded "
                        f"safely: TVM would copy {copied:,} bytes into the {allocated:,} it "
                        "allocates for it")
