"""IR helpers shared by the analyses (`graph`,
`buffers`, `partitions`,
`provenance`, the liveness and partition scans) and
`passlab.models._source_names`, in one namespace.

Every call that depends on the shape of TVM 0.27's Python API (unified `tvm.ir.expr`
nodes, `var.ty` instead of struct info, `tvm.ir.prim.expr` for symbolic sizes) lives
in this module or the three it gathers, so that the analyses read plain Python values
only. They import this module (`from passlab._tvm import ir as _ir`) and use
`_ir.<name>`:

* inputs (here): `as_module`, `relax_functions`, `select_functions`,
  `main_function`;
* `passlab._tvm.ir_types`: function attributes, bindings, and types and sizes
  (`tensor_infos`: shape, dtype, bytes; symbolic sizes kept as text like
  `256 * n` and evaluated with `bounds`);
* `passlab._tvm.ir_calls`: `call_target` (operator, `call_tir` kernel, fused
  function, partition, destination-passing call, allocation), fused-kernel names,
  `op_pattern`;
* `passlab._tvm.walk`: `Walker`, one Relax function as `Value` objects
  flowing between `CallSite` objects, through aliases, tuples, views and
  allocations.

Imports run one way: `ir_types` <- `ir_calls` <- `walk` <- this module. Views do not
import it (`tests/test_architecture.py`): they ask the analyses.
"""

from __future__ import annotations

from typing import Any

from passlab._tvm import entry_function, num_inputs
from passlab._tvm.ir_calls import (
    ALLOC_OPS,
    ALLOC_STORAGE,
    ALLOC_TENSOR,
    BOOKKEEPING_OPS,
    CALL_TIR_OPS,
    PATTERN_NAMES,
    STORAGE_OPS,
    STORAGE_TENSOR,
    VIEW_OPS,
    Target,
    call_target,
    normalize_kernel,
    op_pattern,
    pattern_name,
    short_op,
    split_fused_name,
)
from passlab._tvm.ir_types import (
    Size,
    TensorInfo,
    attr,
    dtype_bytes,
    evaluate,
    iter_bindings,
    prim_text,
    rename_symbolic_vars,
    size_of_expr,
    size_of_shape,
    symbols,
    tensor_infos,
    var_refs,
)
from passlab._tvm.ir_types import _tvm as _tvm  # the lazy ``tvm, relax`` import, for the analyses
from passlab._tvm.walk import CallSite, Value, Walk, Walker, flatten

__all__ = [
    # inputs
    "as_module", "relax_functions", "main_function", "select_functions",
    # _ir_types
    "attr", "num_inputs", "iter_bindings", "var_refs", "dtype_bytes", "prim_text",
    "symbols", "evaluate", "Size", "size_of_shape", "size_of_expr", "TensorInfo",
    "tensor_infos", "rename_symbolic_vars",
    # _ir_calls
    "PATTERN_NAMES", "VIEW_OPS", "BOOKKEEPING_OPS", "ALLOC_TENSOR", "ALLOC_STORAGE",
    "STORAGE_TENSOR", "STORAGE_OPS", "ALLOC_OPS", "CALL_TIR_OPS", "Target", "call_target",
    "short_op", "normalize_kernel", "split_fused_name", "op_pattern", "pattern_name",
    # _walk
    "Value", "CallSite", "Walk", "flatten", "Walker",
    "clear_caches", "stores",
]


def clear_caches() -> None:
    """Forget what the IR readers remember per object (call targets, tensor types, block
    names): benchmarks measure a cold walk with it."""
    from passlab._tvm import ir_calls, ir_types, walk

    ir_calls._call_shape.clear()
    ir_types._unbounded_infos.clear()
    walk._BLOCK_NAMES.clear()


def stores() -> list[tuple[Any, Any, int | None, Any]]:
    """The IR readers' caches that outlive traces (call targets, tensor types, block
    names), as `_tvm.forget_unreferenced` reads them."""
    from passlab._tvm import ir_calls, ir_types, walk

    return [store for c in (ir_calls._call_shape, ir_types._unbounded_infos, walk._BLOCK_NAMES)
            for store in c.stores()]


# ----------------------------------------------------------------------------- inputs
def as_module(x: Any) -> tuple[Any, Any]:
    """Return `(module, before)` for an IRModule or a Step (`.after` / `.before`)."""
    tvm, _ = _tvm()
    if isinstance(x, tvm.IRModule):
        return x, None
    after = getattr(x, "after", None)
    before = getattr(x, "before", None)
    before = before if isinstance(before, tvm.IRModule) else None
    if isinstance(after, tvm.IRModule) and hasattr(x, "name"):
        return after, before
    if after is None and before is not None and hasattr(x, "name"):
        raise ValueError(f"step {x.name!r} has no module after it (the pass failed); "
                         "analyse step.before instead")
    raise TypeError(
        "expected a tvm.IRModule or a Step (an object with .after IRModule and .name), "
        f"got {type(x).__name__}"
    )


def relax_functions(mod: Any) -> dict[str, Any]:
    """The module's Relax functions by name, in module order."""
    _, relax = _tvm()
    return {gv.name_hint: f for gv, f in mod.functions_items() if isinstance(f, relax.Function)}


def main_function(mod: Any) -> str:
    """The entry function's name (`passlab._tvm.entry_function`), or an error
    saying there is nothing to analyse."""
    funcs = relax_functions(mod)
    if not funcs:
        raise ValueError(
            "the module has no Relax function (only "
            f"{len(list(mod.functions_items()))} PrimFunc/other functions); nothing to analyse"
        )
    return entry_function(mod, strict=False)


def select_functions(mod: Any, function: str | None, all_when_none: bool) -> list[str]:
    """Validate `function` against the module's Relax functions."""
    funcs = relax_functions(mod)
    if not funcs:
        main_function(mod)  # raises the "no Relax function" error
    if function is None:
        return list(funcs) if all_when_none else [main_function(mod)]
    if function not in funcs:
        from passlab.errors import unknown

        others = [gv.name_hint for gv in mod.get_global_vars() if gv.name_hint not in funcs]
        extra = f"{function!r} is a PrimFunc, not a Relax function." if function in others else ""
        raise unknown("function", function, list(funcs), extra)
    return [function]
