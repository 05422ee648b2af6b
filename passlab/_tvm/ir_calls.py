"""What a Relax call calls, and what a kernel contains (gathered in
`passlab._tvm.ir`).

* `call_target`: operator, `call_tir` kernel, fused function, partition,
  destination-passing call, allocation or bookkeeping;
* kernel names: `normalize_kernel` (`matmul1` -> `matmul`),
  `split_fused_name` (the ops of `fused_batch_norm1_add1_relu1`), `short_op`;
* `op_pattern` (`op_pattern`, `pattern_name`) and the op sets a walk treats
  apart (views, allocations, bookkeeping).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from passlab._tvm import ObjectCache
from passlab._tvm.ir_types import _tvm, attr

#: TVM's ``OpPatternKind`` (``include/tvm/relax/op_attr_types.h``).
PATTERN_NAMES: dict[int, str] = {0: "elemwise", 1: "broadcast", 2: "injective",
                                  3: "comm-reduce", 4: "out-elemwise-fusable", 7: "tuple",
                                  8: "opaque"}

#: Ops whose result is a view of their first argument (no new memory).
VIEW_OPS = frozenset({"relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset"})
#: Memory-management ops that are bookkeeping, not computation.
BOOKKEEPING_OPS = frozenset(
    {"relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object",
     "relax.null_value"}
)
ALLOC_TENSOR = "relax.builtin.alloc_tensor"
ALLOC_STORAGE = "relax.memory.alloc_storage"
STORAGE_TENSOR = "relax.memory.alloc_tensor"
#: Allocation ops: the three above plus their VM forms after LowerRuntimeBuiltin (which
#: ``estimate_memory_usage`` does not count).
STORAGE_OPS = frozenset({ALLOC_STORAGE, "relax.vm.alloc_storage"})
ALLOC_OPS = STORAGE_OPS | {ALLOC_TENSOR, STORAGE_TENSOR, "relax.vm.alloc_tensor"}
#: Packed functions that only check or record shapes.
_BOOKKEEPING_PACKED = ("vm.builtin.check_", "vm.builtin.match_", "vm.builtin.alloc_shape_heap",
                       "vm.builtin.make_shape", "vm.builtin.null_value")
CALL_TIR_OPS = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad"})


class Target(NamedTuple):
    """What a Relax `Call` calls.

    `kind`: `op` (Relax operator), `call_tir` (kernel through `R.call_tir`),
    `dps` (PrimFunc, extern or `call_packed` function called destination-passing
    style after CallTIRRewrite), `function` (a Relax function: fused, composite,
    codegen or plain), `packed` (`call_dps_packed`), `alloc` or `bookkeeping`.
    """

    kind: str
    name: str
    func: Any = None
    args: tuple[Any, ...] = ()


def call_target(call: Any, mod: Any, local_funcs: Mapping[Any, Any]) -> Target:
    """What `call` calls, its functions looked up in `mod` (a GlobalVar) or in
    `local_funcs` (functions bound inside the walked one)."""
    t, gv, local = _call_shape(call)
    if gv is not None:  # a kernel or function of the module: looked up in this module
        func = _lookup(mod, gv)
        if t.kind != "call_tir":
            _, relax = _tvm()
            return Target("function" if isinstance(func, relax.Function) else "dps", t.name,
                          func, t.args)
        return Target(t.kind, t.name, func, t.args)
    if local is not None and local in local_funcs:
        return Target("function", t.name, local_funcs[local], t.args)
    return t


def _shape_of(call: Any) -> tuple[Target, Any, Any]:
    """What `call` calls as far as the call itself says: the target without the
    module's function, the GlobalVar to look that up by, and the op when it may be a
    local function (one bound inside the walked function)."""
    tvm, relax = _tvm()
    op = call.op
    args = tuple(call.args)
    if isinstance(op, tvm.ir.Op):
        name = str(op.name)
        if name in CALL_TIR_OPS:
            gv = args[0]
            inputs = tuple(args[1].fields) if isinstance(args[1], relax.Tuple) else (args[1],)
            return Target("call_tir", gv.name_hint, None, inputs), gv, None
        if name in ("relax.call_dps_packed", "relax.call_pure_packed", "relax.call_packed"):
            sym = str(getattr(args[0], "global_symbol", None) or args[0])
            if name == "relax.call_dps_packed":  # returns its outputs, like call_tir
                rest = args[1:]
                if rest and isinstance(rest[0], relax.Tuple):
                    rest = tuple(rest[0].fields)
                return Target("packed", sym, None, rest), None, None
            kind = "bookkeeping" if sym.startswith(_BOOKKEEPING_PACKED) else "dps"
            return Target(kind, sym, None, args[1:]), None, None
        if name in ALLOC_OPS:
            return Target("alloc", name, None, args), None, None
        if name in BOOKKEEPING_OPS:
            return Target("bookkeeping", name, None, args), None, None
        return Target("op", name, None, args), None, None
    if isinstance(op, tvm.ir.GlobalVar):
        return Target("function", op.name_hint, None, args), op, None
    if isinstance(op, relax.ExternFunc):
        sym = str(op.global_symbol)
        return Target("bookkeeping" if sym.startswith(_BOOKKEEPING_PACKED) else "dps", sym,
                      None, args), None, None
    return Target("function", str(getattr(op, "name", op)), None, args), None, op


#: Call object -> :func:`_shape_of` (an LRU). Passes keep the calls they leave alone, so
#: the walks of a pipeline's modules meet them again (7B-shaped transformer: 8,234
#: distinct calls in 20,726 lookups over its 18 Relax modules), and reading a call's
#: fields through the FFI is most of a walk's time.
_call_shape = ObjectCache(_shape_of, maxsize=16384)


def _lookup(mod: Any, key: Any) -> Any:
    """`mod[key]` or `None` (no module, unknown name, dangling GlobalVar)."""
    try:
        return None if mod is None else mod[key]
    except Exception:
        return None


def short_op(name: str) -> str:
    """`relax.nn.conv2d` -> `nn.conv2d`."""
    return name[6:] if name.startswith("relax.") else name


@functools.lru_cache(maxsize=1)
def _vocab() -> dict[str, str]:
    """Kernel-name spelling -> op name, for every registered Relax operator."""
    tvm, _ = _tvm()
    vocab: dict[str, str] = {"transpose": "transpose"}
    for full in tvm.ir.Op.list_op_names():
        full = str(full)
        if not full.startswith("relax."):
            continue
        base = full.rsplit(".", 1)[-1]
        vocab.setdefault(base, base)
        vocab[full.replace(".", "_")] = short_op(full)  # FuseOpsByPattern: relax_nn_relu
    return vocab


def normalize_kernel(name: str, extra: frozenset[str] = frozenset()) -> str:
    """`matmul1` -> `matmul`: drop the numeric suffix LegalizeOps adds to kernels."""
    vocab = _vocab()
    if name in vocab:
        return vocab[name]
    base = name.rstrip("0123456789")
    if base and base != name and (base in vocab or base in extra):
        return vocab.get(base, base)
    return name


def split_fused_name(name: str, extra: frozenset[str] = frozenset()) -> tuple[str, ...] | None:
    """Recover the ops of `fused_batch_norm1_add1_relu1` from its name, or `None`."""
    if not name.startswith("fused_"):
        return None
    vocab = _vocab()
    tokens = name[len("fused_"):].split("_")
    best: list[tuple[str, ...] | None] = [()] + [None] * len(tokens)
    for i in range(1, len(tokens) + 1):
        for j in range(i - 1, -1, -1):
            if best[j] is None:
                continue
            word = "_".join(tokens[j:i])
            base = word.rstrip("0123456789") or word
            if word in vocab or base in vocab or base in extra:
                cand = best[j] + (normalize_kernel(word, extra),)  # type: ignore[operator]
                if best[i] is None or len(cand) < len(best[i]):  # type: ignore[arg-type]
                    best[i] = cand
    return best[-1] or None


def op_pattern(func: Any) -> int | None:
    value = attr(func, "op_pattern")
    return None if value is None else int(value)


def pattern_name(pattern: int | None) -> str:
    return "" if pattern is None else PATTERN_NAMES.get(pattern, str(pattern))
