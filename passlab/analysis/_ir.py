"""IR-walking helpers shared by :mod:`passlab.analysis.graph` and
:mod:`passlab.analysis.buffers`.

Every call that depends on the shape of TVM 0.27's Python API (unified ``tvm.ir.expr``
nodes, ``var.ty`` instead of struct info, ``tvm.ir.prim.expr`` for symbolic sizes) lives
here, so that the two analyses read plain Python values only:

* inputs: :func:`as_module`, :func:`select_functions`;
* types and sizes: :func:`tensor_infos` (shape, dtype, bytes; symbolic sizes kept as text
  like ``256 * n`` and evaluated with ``bounds``);
* calls: :func:`call_target` (operator, ``call_tir`` kernel, fused function, partition,
  destination-passing call, allocation), fused-kernel names, ``op_pattern``;
* :class:`Walker`: one Relax function as :class:`Value` objects flowing between
  :class:`CallSite` objects, through aliases, tuples, views and allocations.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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


@functools.lru_cache(maxsize=1)
def _tvm() -> tuple[Any, Any]:
    import tvm
    from tvm import relax

    return tvm, relax


# ----------------------------------------------------------------------------- inputs
def as_module(x: Any) -> tuple[Any, Any]:
    """Return ``(module, before)`` for an IRModule or a Step (``.after`` / ``.before``)."""
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


def attr(func: Any, key: str, default: Any = None) -> Any:
    """A function attribute as a plain Python value (``default`` when absent)."""
    attrs = getattr(func, "attrs", None)
    if attrs is None or key not in attrs:
        return default
    value = attrs[key]
    return value if isinstance(value, (bool, int, str)) else str(value)


def main_function(mod: Any) -> str:
    """The entry function's name: ``num_input`` attribute, then ``main``/``forward``."""
    funcs = relax_functions(mod)
    if not funcs:
        raise ValueError(
            "the module has no Relax function (only "
            f"{len(list(mod.functions_items()))} PrimFunc/other functions); nothing to analyse"
        )
    for name, f in funcs.items():
        if attr(f, "num_input") is not None:
            return name
    for name in ("main", "forward"):
        if name in funcs:
            return name
    public = [n for n, f in funcs.items() if attr(f, "global_symbol") is not None]
    return (public or list(funcs))[0]


def select_functions(mod: Any, function: str | None, all_when_none: bool) -> list[str]:
    """Validate ``function`` against the module's Relax functions."""
    funcs = relax_functions(mod)
    if not funcs:
        main_function(mod)  # raises the "no Relax function" error
    if function is None:
        return list(funcs) if all_when_none else [main_function(mod)]
    if function not in funcs:
        from passlab._names import unknown

        others = [gv.name_hint for gv in mod.get_global_vars() if gv.name_hint not in funcs]
        extra = f"{function!r} is a PrimFunc, not a Relax function." if function in others else ""
        raise unknown("function", function, list(funcs), extra)
    return [function]


def num_inputs(func: Any) -> int:
    n = attr(func, "num_input")
    return len(func.params) if n is None else int(n)


# ----------------------------------------------------------------------- types and sizes
def dtype_bytes(dtype: str) -> int:
    """Bytes per element, with the rounding ``estimate_memory_usage`` uses."""
    tvm, _ = _tvm()
    t = tvm.DataType(dtype)
    return ((t.bits + 7) // 8) * t.lanes


def prim_text(e: Any) -> str:
    """A PrimExpr (or int) as short text: ``256 * n`` rather than ``n * T.int64(256)``."""
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


_OPS = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
        "FloorDiv": lambda a, b: a // b, "Div": lambda a, b: a // b,
        "FloorMod": lambda a, b: a % b, "Mod": lambda a, b: a % b, "Max": max, "Min": min}


def evaluate(e: Any, bounds: Mapping[str, int] | None) -> int | None:
    """Integer value of a PrimExpr with ``bounds`` substituted; ``None`` if unknown."""
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
    """Byte size of a tensor or storage: exact ``bytes`` when known, ``text`` always."""

    bytes: int | None
    text: str
    symbols: tuple[str, ...] = ()


def size_of_shape(dims: list[Any] | None, dtype: str, bounds: Mapping[str, int] | None) -> Size:
    """Bytes of a tensor of shape ``dims`` (PrimExprs) and ``dtype``."""
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
    """Size of an ``alloc_storage`` (already in bytes)."""
    syms = tuple(sorted(symbols(e)))
    return Size(evaluate(e, bounds), prim_text(e), syms)


@dataclass(frozen=True)
class TensorInfo:
    """Shape, dtype and size of one tensor-typed value."""

    shape: tuple[int | str, ...] | None
    dtype: str
    size: Size


def tensor_infos(ty: Any, bounds: Mapping[str, int] | None = None) -> list[TensorInfo]:
    """One :class:`TensorInfo` per tensor in ``ty`` (tuples flattened, others skipped)."""
    _, relax = _tvm()
    if ty is None:
        return []
    if isinstance(ty, relax.TupleType):
        return [i for f in ty.fields for i in tensor_infos(f, bounds)]
    if not isinstance(ty, relax.TensorType):
        return []
    values = getattr(getattr(ty, "shape", None), "values", None)
    dims, dtype = None if values is None else list(values), str(ty.dtype)
    shape = None if dims is None else tuple(
        v if (v := evaluate(d, None)) is not None else prim_text(d) for d in dims)
    return [TensorInfo(shape, dtype, size_of_shape(dims, dtype, bounds))]


# ------------------------------------------------------------------------- call targets
@dataclass(frozen=True)
class Target:
    """What a Relax ``Call`` calls.

    ``kind``: ``op`` (Relax operator), ``call_tir`` (kernel through ``R.call_tir``),
    ``dps`` (PrimFunc, extern or ``call_packed`` function called destination-passing
    style after CallTIRRewrite), ``function`` (a Relax function: fused, composite,
    codegen or plain), ``packed`` (``call_dps_packed``), ``alloc`` or ``bookkeeping``.
    """

    kind: str
    name: str
    func: Any = None
    args: tuple[Any, ...] = ()


def call_target(call: Any, mod: Any, local_funcs: Mapping[Any, Any]) -> Target:
    tvm, relax = _tvm()
    op = call.op
    args = tuple(call.args)
    if isinstance(op, tvm.ir.Op):
        name = str(op.name)
        if name in CALL_TIR_OPS:
            gv = args[0]
            inputs = tuple(args[1].fields) if isinstance(args[1], relax.Tuple) else (args[1],)
            return Target("call_tir", gv.name_hint, _lookup(mod, gv), inputs)
        if name in ("relax.call_dps_packed", "relax.call_pure_packed", "relax.call_packed"):
            sym = str(getattr(args[0], "global_symbol", None) or args[0])
            if name == "relax.call_dps_packed":  # returns its outputs, like call_tir
                rest = args[1:]
                if rest and isinstance(rest[0], relax.Tuple):
                    rest = tuple(rest[0].fields)
                return Target("packed", sym, None, rest)
            kind = "bookkeeping" if sym.startswith(_BOOKKEEPING_PACKED) else "dps"
            return Target(kind, sym, None, args[1:])
        if name in ALLOC_OPS:
            return Target("alloc", name, None, args)
        if name in BOOKKEEPING_OPS:
            return Target("bookkeeping", name, None, args)
        return Target("op", name, None, args)
    if isinstance(op, tvm.ir.GlobalVar):
        func = _lookup(mod, op)
        kind = "function" if isinstance(func, relax.Function) else "dps"
        return Target(kind, op.name_hint, func, args)
    if isinstance(op, relax.ExternFunc):
        sym = str(op.global_symbol)
        return Target("bookkeeping" if sym.startswith(_BOOKKEEPING_PACKED) else "dps", sym,
                      None, args)
    if op in local_funcs:
        return Target("function", str(op.name), local_funcs[op], args)
    return Target("function", str(getattr(op, "name", op)), None, args)


def _lookup(mod: Any, key: Any) -> Any:
    """``mod[key]`` or ``None`` (no module, unknown name, dangling GlobalVar)."""
    try:
        return None if mod is None else mod[key]
    except Exception:
        return None


def short_op(name: str) -> str:
    """``relax.nn.conv2d`` -> ``nn.conv2d``."""
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
    """``matmul1`` -> ``matmul``: drop the numeric suffix LegalizeOps adds to kernels."""
    vocab = _vocab()
    if name in vocab:
        return vocab[name]
    base = name.rstrip("0123456789")
    if base and base != name and (base in vocab or base in extra):
        return vocab.get(base, base)
    return name


def split_fused_name(name: str, extra: frozenset[str] = frozenset()) -> tuple[str, ...] | None:
    """Recover the ops of ``fused_batch_norm1_add1_relu1`` from its name, or ``None``."""
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


# ----------------------------------------------------------------------------- walking
def iter_bindings(func: Any) -> Iterator[Any]:
    """Every binding of a function body, across its binding blocks, in order."""
    for block in getattr(func.body, "blocks", ()):
        yield from block.bindings


@dataclass(eq=False)
class Value:
    """A tensor (or storage) of the walked function; mutable only while walking."""

    name: str
    info: TensorInfo
    kind: str  # input, weight, const, result, alloc (alloc_tensor), storage
    index: int  # binding index where it comes into existence; -1 for parameters
    op: str = ""  # allocating op, for kind alloc/storage
    producer: CallSite | None = None
    view_of: Value | None = None
    storage: Value | None = None
    aliases: list[str] = field(default_factory=list)

    @property
    def display(self) -> str:
        """The name the program gives the tensor (``permute_dims`` for its ``alloc``)."""
        return self.aliases[0] if self.kind == "alloc" and self.aliases else self.name


@dataclass(eq=False)
class CallSite:
    """One computation: an operator, kernel, fused or partitioned call."""

    index: int
    var: str
    kind: str  # op, kernel, fused, composite, call
    label: str
    ops: tuple[str, ...]
    pattern: int | None
    inputs: list[Value]
    outputs: list[Value]
    cluster: str | None = None


@dataclass
class Walk:
    """Everything the analyses need from one Relax function."""

    function: str
    params: list[Value] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    bindings: list[str] = field(default_factory=list)
    clusters: list[tuple[str, str, str | None]] = field(default_factory=list)


def flatten(flow: Any) -> list[Value]:
    if flow is None:
        return []
    if isinstance(flow, Value):
        return [flow]
    return [v for f in flow for v in flatten(f)]


class Walker:
    """Interprets a Relax function's bindings as values flowing between calls."""

    def __init__(self, mod: Any, before: Any = None, bounds: Mapping[str, int] | None = None,
                 inline_codegen: bool = True):
        self.mod, self.before, self.bounds = mod, before, bounds
        self.inline_codegen = inline_codegen
        self._names: dict[str, int] = {}
        self._fused_ops: dict[str, tuple[tuple[str, ...], int | None]] = {}
        names = [gv.name_hint for gv in mod.get_global_vars()]
        if before is not None:
            names += [gv.name_hint for gv in before.get_global_vars()]
        self._extra = frozenset(n.rstrip("0123456789") for n in names)

    def walk(self, name: str) -> Walk:
        func = self.mod[name]
        w = self.w = Walk(name)
        self._names = {}
        n_in = num_inputs(func)
        env: dict[Any, Any] = {}
        for i, p in enumerate(func.params):
            flow = self._make(p.ty, str(p.name), "input" if i < n_in else "weight", -1)
            env[p] = flow
            w.params += flatten(flow)
        w.results = flatten(self._body(func, env, None, None))
        return w

    # ------------------------------------------------------------------ values
    def _make(self, ty: Any, name: str, kind: str, index: int, **kw: Any) -> Any:
        _, relax = _tvm()
        if isinstance(ty, relax.TupleType):
            return tuple(self._make(f, f"{name}[{i}]", kind, index, **kw)
                         for i, f in enumerate(ty.fields))
        infos = tensor_infos(ty, self.bounds)
        if not infos:
            return None
        v = Value(self._unique(name), infos[0], kind, index, **kw)
        self.w.values.append(v)
        return v

    def _unique(self, name: str) -> str:
        """Distinct names for distinct values, like the printer's ``lv``, ``lv_1``."""
        n = self._names.get(name, 0)
        self._names[name] = n + 1
        if n == 0:
            return name
        while f"{name}_{n}" in self._names:
            n += 1
        self._names[f"{name}_{n}"] = 1
        return f"{name}_{n}"

    def _body(self, func: Any, env: dict[Any, Any], cluster: str | None, at: int | None) -> Any:
        _, relax = _tvm()
        local: dict[Any, Any] = {}
        for b in iter_bindings(func):
            index = at if at is not None else len(self.w.bindings)
            if at is None:
                self.w.bindings.append(str(b.var.name))
            value = b.value
            if isinstance(value, relax.Function):
                local[b.var] = value
                continue
            flow = self._eval(value, b.var, index, env, local, cluster)
            if flow is not None:
                env[b.var] = flow
                if isinstance(value, (relax.Var, relax.TupleGetItem)) and isinstance(flow, Value):
                    flow.aliases.append(str(b.var.name))
        body = func.body
        return self._eval(getattr(body, "body", body), None, len(self.w.bindings), env, local,
                          cluster)

    def _eval(self, e: Any, var: Any, index: int, env: dict, local: dict,
              cluster: str | None) -> Any:
        tvm, relax = _tvm()
        if isinstance(e, relax.Var):
            return env.get(e)
        if isinstance(e, relax.Tuple):
            return tuple(self._eval(f, None, index, env, local, cluster) for f in e.fields)
        if isinstance(e, relax.TupleGetItem):
            flow = self._eval(e.tuple_value, None, index, env, local, cluster)
            return flow[e.index] if isinstance(flow, tuple) and e.index < len(flow) else None
        if isinstance(e, tvm.ir.expr.GenericConst):  # bound, or inline as an argument
            return self._make(e.ty, "const" if var is None else str(var.name), "const", index)
        if var is None:
            return None
        name = str(var.name)
        if isinstance(e, relax.Call):
            return self._call(e, var, index, env, local, cluster)
        if isinstance(e, (relax.If, relax.SeqExpr)):  # opaque control flow: one node
            ins = [v for r in var_refs(e) for v in flatten(env.get(r))]
            return self._site(index, name, "call", type(e).__name__.lower(), (), None, ins,
                              var.ty, cluster)
        return None

    def _site(self, index: int, name: str, kind: str, label: str, ops: tuple[str, ...],
              pattern: int | None, inputs: list[Value], ty: Any, cluster: str | None,
              outputs: list[Value] | None = None) -> Any:
        site = CallSite(index, name, kind, label, ops, pattern, inputs, outputs or [], cluster)
        flow = self._make(ty, name, "result", index, producer=site) if ty is not None else None
        site.outputs += flatten(flow)
        if site.outputs:
            site.var = site.outputs[0].name.split("[")[0]
        self.w.calls.append(site)
        return flow

    def _call(self, call: Any, var: Any, index: int, env: dict, local: dict,
              cluster: str | None) -> Any:
        name = str(var.name)
        ty = var.ty if var.ty is not None else call.ty
        t = call_target(call, self.mod, local)

        def values(args: Any) -> list[Value]:
            return [v for a in args
                    for v in flatten(self._eval(a, None, index, env, local, cluster))]

        if t.kind == "alloc":
            if t.name in STORAGE_OPS:
                dims = getattr(t.args[0], "values", None)  # a runtime shape after VMShapeLower
                size = size_of_expr(dims[0], self.bounds) if dims else Size(None, "?")
                v = Value(self._unique(name), TensorInfo(None, "", size), "storage", index, t.name)
                self.w.values.append(v)
                return v
            storage = self._eval(t.args[0], None, index, env, local, cluster)
            return self._make(ty, name, "alloc", index, op=t.name,
                              storage=storage if t.name != ALLOC_TENSOR else None)
        if t.kind == "bookkeeping":
            return None
        if t.kind == "op":
            ins = values(t.args)
            flow = self._site(index, name, "op", short_op(t.name), (short_op(t.name),), None,
                              ins, ty, cluster)
            if t.name in VIEW_OPS and ins and isinstance(flow, Value):
                flow.view_of = ins[0]
            return flow
        if t.kind in ("call_tir", "packed"):
            kind, ops, pattern = self._kernel(t.name, t.func) if t.kind == "call_tir" else (
                "call", (t.name,), None)
            return self._site(index, name, kind, t.name, ops, pattern, values(t.args), ty, cluster)
        if t.kind == "function" and t.func is not None:
            codegen, composite = attr(t.func, "Codegen"), attr(t.func, "Composite")
            if codegen is not None and self.inline_codegen:
                cid = f"c{len(self.w.clusters)}"
                self.w.clusters.append((cid, f"{codegen}: {t.name}", cluster))
                inner = dict(env)
                for p, a in zip(t.func.params, t.args):
                    inner[p] = self._eval(a, None, index, env, local, cluster)
                return self._body(t.func, inner, cid, index)
            ops, pattern = self._relax_ops(t.func, self.mod)
            if composite is not None:
                return self._site(index, name, "composite", str(composite), ops, pattern,
                                  values(t.args), ty, cluster)
            kind = "fused" if attr(t.func, "Primitive") else "call"
            return self._site(index, name, kind, t.name, ops if kind == "fused" else (t.name,),
                              pattern, values(t.args), ty, cluster)
        # destination-passing calls: trailing arguments not yet written are outputs
        args = values(t.args)
        outs: list[Value] = []
        while args and args[-1].kind == "alloc" and args[-1].producer is None:
            outs.insert(0, args.pop())
        kind, ops, pattern = self._kernel(t.name, t.func) if t.func is not None else (
            "call", (t.name,), None)
        flow = self._site(index, name, kind, t.name, ops, pattern, args,
                          None if outs else ty, cluster, outs)
        for v in outs:
            v.producer = self.w.calls[-1]
        return flow

    # ------------------------------------------------------------- what is fused
    def _kernel(self, name: str, func: Any) -> tuple[str, tuple[str, ...], int | None]:
        """Kind, ops and pattern of a PrimFunc called by name."""
        pattern = op_pattern(func) if func is not None else None
        if name in self._fused_ops:
            ops, pat = self._fused_ops[name]
            return "fused", ops, pattern if pattern is not None else pat
        prior = _lookup(self.before, name)
        if prior is not None and attr(prior, "Primitive"):
            ops, pat = self._relax_ops(prior, self.before)
            self._fused_ops[name] = (ops, pat)
            return "fused", ops, pattern if pattern is not None else pat
        if not name.startswith("fused_"):
            return "kernel", (normalize_kernel(name, self._extra),), pattern
        ops = split_fused_name(name, self._extra) or _block_names(func) or (name,)
        self._fused_ops[name] = (ops, None)
        return "fused", ops, pattern

    def _relax_ops(self, func: Any, mod: Any) -> tuple[tuple[str, ...], int | None]:
        """Ops called by a fused/composite Relax function; its most complex pattern."""
        ops: list[str] = []
        patterns: list[int] = []
        for b in iter_bindings(func):
            if not isinstance(b.value, _tvm()[1].Call):
                continue
            t = call_target(b.value, mod, {})
            if t.kind == "call_tir":
                ops.append(normalize_kernel(t.name, self._extra))
                if (p := op_pattern(t.func)) is not None:
                    patterns.append(p)
            elif t.kind in ("op", "function", "packed"):
                ops.append(short_op(t.name))
        return tuple(ops), max(patterns) if patterns else None


def _block_names(func: Any) -> tuple[str, ...]:
    """Names of the computation blocks of a PrimFunc (last resort for odd fused names)."""
    if func is None:
        return ()
    found = re.findall(r'T\.sblock\("([^"]+)"\)', func.script())
    return tuple(n for n in found if n != "root")


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
