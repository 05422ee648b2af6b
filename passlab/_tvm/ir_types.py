"""Relax nodes read as plain Python values: the bottom of the IR helpers (gathered in
`passlab._tvm.ir`).

* the lazy `tvm` import; function attributes (`attr`, `num_inputs`);
  `rename_symbolic_vars` (an importer's `s27` back to the user's `seq`);
* bindings: `iter_bindings`, and `var_refs` (the variables an expression
  reads);
* types and sizes: `tensor_infos` (shape, dtype, bytes; symbolic sizes kept as text
  like `256 * n` and evaluated with `bounds`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from passlab._tvm import ObjectCache


@functools.lru_cache(maxsize=1)
def _tvm() -> tuple[Any, Any]:
    import tvm
    from tvm import relax

    return tvm, relax


def attr(func: Any, key: str, default: Any = None) -> Any:
    """A function attribute as a plain Python value (`default` when absent)."""
    attrs = getattr(func, "attrs", None)
    if attrs is None or key not in attrs:
        return default
    value = attrs[key]
    return value if isinstance(value, (bool, int, str)) else str(value)


def rename_symbolic_vars(func: Any, names: Mapping[str, str]) -> Any:
    """`func` with its symbolic shape variables renamed (`{"s27": "seq"}`), in the
    signature, the body and the `tir_var_lower_bound`/`tir_var_upper_bound`
    attributes. Names that are not variables of `func` are ignored. Binding spans are
    not kept (TVM's rebinding makes new bindings): callers write them again."""
    tvm, relax = _tvm()
    found = {str(v.name): v for v in relax.analysis.defined_symbolic_vars(func)}
    binding = {found[old]: tvm.tirx.Var(new, found[old].ty)
               for old, new in names.items() if old in found and new != old}
    if not binding:
        return func
    out = func.bind_symbolic_vars(binding)
    for key in ("tir_var_lower_bound", "tir_var_upper_bound"):
        bounds = (func.attrs or {}).get(key)
        if bounds is not None:
            out = out.with_attr(key, {names.get(str(k), str(k)): int(v)
                                      for k, v in bounds.items()})
    return out


# ---------------------------------------------------------------------------- bindings
def iter_bindings(func: Any) -> Iterator[Any]:
    """Every binding of a function body, across its binding blocks, in order."""
    for block in getattr(func.body, "blocks", ()):
        yield from block.bindings


def var_refs(expr: Any) -> list[Any]:
    """The Relax variables an expression reads (through tuples, items, call args)."""
    _, relax = _tvm()
    out: list[Any] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, relax.Var):
            out.append(e)
        elif isinstance(e, relax.Tuple):
            stack.extend(reversed(list(e.fields)))
        elif isinstance(e, relax.TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, relax.Call):
            stack.extend(reversed(list(e.args)))
        elif isinstance(e, relax.If):
            stack.extend([e.false_branch, e.true_branch, e.cond])
        elif isinstance(e, relax.SeqExpr):
            stack.append(e.body)
            for block in e.blocks:
                stack.extend(b.value for b in block.bindings)
    return out


# ----------------------------------------------------------------------- types and sizes
def dtype_bytes(dtype: str) -> int:
    """Bytes per element, with the rounding `estimate_memory_usage` uses."""
    tvm, _ = _tvm()
    t = tvm.DataType(dtype)
    return ((t.bits + 7) // 8) * t.lanes


def prim_text(e: Any) -> str:
    """A PrimExpr (or int) as short text: `256 * n` rather than `n * T.int64(256)`."""
    return _fmt(e)[0]


_PREC = {"Add": (1, "+"), "Sub": (1, "-"), "Mul": (2, "*"), "FloorDiv": (2, "//"),
         "FloorMod": (2, "%"), "Div": (2, "/"), "Mod": (2, "%")}


def _fmt(e: Any) -> tuple[str, int]:
    if isinstance(e, int):
        return str(e), 3
    kind = type(e).__name__
    if kind == "IntImm":
        return str(e.value), 3
    if kind == "Var":
        return str(e.name), 3
    if kind == "Cast":
        return _fmt(e.value)
    if kind in _PREC:
        prec, sym = _PREC[kind]
        (a, pa), (b, pb) = _fmt(e.a), _fmt(e.b)
        if kind == "Mul" and b.isdigit() and not a.isdigit():  # constants first, like TVM
            (a, pa), (b, pb) = (b, pb), (a, pa)
        a = a if pa >= prec else f"({a})"
        b = b if pb > prec else f"({b})"
        return f"{a} {sym} {b}", prec
    if kind in ("Max", "Min"):
        return f"{kind.lower()}({_fmt(e.a)[0]}, {_fmt(e.b)[0]})", 3
    return str(e), 0


def symbols(e: Any) -> set[str]:
    """Names of the symbolic variables in a PrimExpr."""
    kind = type(e).__name__
    if kind == "Var":
        return {str(e.name)}
    out: set[str] = set()
    for part in ("a", "b", "value"):
        sub = getattr(e, part, None) if kind not in ("IntImm", "FloatImm") else None
        if sub is not None and not isinstance(sub, (int, float)):
            out |= symbols(sub)
    return out


_OPS: dict[str, Callable[[int, int], int]] = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
        "FloorDiv": lambda a, b: a // b, "Div": lambda a, b: a // b,
        "FloorMod": lambda a, b: a % b, "Mod": lambda a, b: a % b, "Max": max, "Min": min}


def evaluate(e: Any, bounds: Mapping[str, int] | None) -> int | None:
    """Integer value of a PrimExpr with `bounds` substituted; `None` if unknown."""
    if isinstance(e, int):
        return e
    kind = type(e).__name__
    if kind == "IntImm":
        return int(e.value)
    if kind == "Var":
        return None if not bounds or str(e.name) not in bounds else int(bounds[str(e.name)])
    if kind == "Cast":
        return evaluate(e.value, bounds)
    if kind in _OPS:
        a, b = evaluate(e.a, bounds), evaluate(e.b, bounds)
        return None if a is None or b is None else _OPS[kind](a, b)
    return None


@dataclass(frozen=True)
class Size:
    """Byte size of a tensor or storage: exact `bytes` when known, `text` always."""

    bytes: int | None
    text: str
    symbols: tuple[str, ...] = ()


def size_of_shape(dims: list[Any] | None, dtype: str, bounds: Mapping[str, int] | None) -> Size:
    """Bytes of a tensor of shape `dims` (PrimExprs) and `dtype`."""
    if dims is None or not dtype or dtype == "void":
        return Size(None, "?")
    const, parts, syms = dtype_bytes(dtype), [], set()
    value: int | None = const
    for d in dims:
        v = evaluate(d, None)
        if v is not None:
            const *= v
            value = None if value is None else value * v
            continue
        text, prec = _fmt(d)
        parts.append(text if prec >= 2 else f"({text})")
        syms |= symbols(d)
        bound = evaluate(d, bounds)
        value = None if value is None or bound is None else value * bound
    if not parts:
        return Size(const, str(const))
    text = " * ".join(([str(const)] if const != 1 else []) + parts)
    return Size(value if syms else const, text, tuple(sorted(syms)))


def size_of_expr(e: Any, bounds: Mapping[str, int] | None) -> Size:
    """Size of an `alloc_storage` (already in bytes)."""
    syms = tuple(sorted(symbols(e)))
    return Size(evaluate(e, bounds), prim_text(e), syms)


@dataclass(frozen=True)
class TensorInfo:
    """Shape, dtype and size of one tensor-typed value."""

    shape: tuple[int | str, ...] | None
    dtype: str
    size: Size


def tensor_infos(ty: Any, bounds: Mapping[str, int] | None = None) -> list[TensorInfo]:
    """One `TensorInfo` per tensor in `ty` (tuples flattened, others skipped).

    Without `bounds`, remembered per type object (an LRU): a pass that rewrites a
    function keeps the bindings it leaves alone, types included, so the buffer walks of a
    pipeline's modules meet the same types again (7B-shaped transformer: 2,016 distinct
    types in 16,968 lookups over the 18 Relax modules' walks)."""
    if ty is None:
        return []
    if not bounds:
        return list(_unbounded_infos(ty))
    return _tensor_infos(ty, bounds)


def _tensor_infos(ty: Any, bounds: Mapping[str, int] | None) -> list[TensorInfo]:
    _, relax = _tvm()
    if isinstance(ty, relax.TupleType):
        return [i for f in ty.fields for i in tensor_infos(f, bounds)]
    if not isinstance(ty, relax.TensorType):
        return []
    values = getattr(getattr(ty, "shape", None), "values", None)
    dims, dtype = None if values is None else list(values), str(ty.dtype)
    shape = None if dims is None else tuple(
        v if (v := evaluate(d, None)) is not None else prim_text(d) for d in dims)
    return [TensorInfo(shape, dtype, size_of_shape(dims, dtype, bounds))]


def _infos_of(ty: Any) -> tuple[TensorInfo, ...]:
    return tuple(_tensor_infos(ty, None))


#: Type object -> its tensor infos without bounds (frozen, shared by every caller).
_unbounded_infos = ObjectCache(_infos_of, maxsize=8192)
