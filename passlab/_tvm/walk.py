"""The `Walker`: one Relax function read as `Value` objects (tensors and
storage) flowing between `CallSite` objects (computations), through aliases,
tuples, views and allocations. `passlab.analysis.graph` draws the `Walk`;
`passlab.analysis.buffers` measures it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from passlab._tvm import ObjectCache, num_inputs
from passlab._tvm.ir_calls import (
    ALLOC_TENSOR,
    STORAGE_OPS,
    VIEW_OPS,
    _lookup,
    call_target,
    normalize_kernel,
    op_pattern,
    short_op,
    split_fused_name,
)
from passlab._tvm.ir_types import (
    Size,
    TensorInfo,
    _tvm,
    attr,
    iter_bindings,
    size_of_expr,
    tensor_infos,
    var_refs,
)

#: A call's operators, or what reads them when first asked (see `CallSite.ops`).
Ops = tuple[str, ...] | Callable[[], tuple[str, ...]]


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
        """The name the program gives the tensor (`permute_dims` for its `alloc`)."""
        return self.aliases[0] if self.kind == "alloc" and self.aliases else self.name


@dataclass(eq=False)
class CallSite:
    """One computation: an operator, kernel, fused or partitioned call."""

    index: int
    var: str
    kind: str  # op, kernel, fused, composite, call
    label: str
    _ops: Ops
    pattern: int | None
    inputs: list[Value]
    outputs: list[Value]
    cluster: str | None = None

    @property
    def ops(self) -> tuple[str, ...]:
        """The operators the call computes. Read on first use: a fused kernel whose name
        does not say them is printed for its block names, and the buffers analysis (a
        step's Explain strip) never asks: 62 of DenseNet-121's kernels, 120-320 ms."""
        if callable(self._ops):
            self._ops = self._ops()
        return self._ops


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


#: Expression class -> what :meth:`Walker._eval` does with it. A walk evaluates every
#: binding and argument (~50,000 on a 32-layer forward), and isinstance on TVM's classes
#: goes through ABC checks: the class is looked at once.
_KINDS: dict[type, str] = {}


def _expr_kind(cls: type) -> str:
    kind = _KINDS.get(cls)
    if kind is None:
        tvm, relax = _tvm()
        kinds = ((relax.Var, "var"), (relax.Tuple, "tuple"), (relax.TupleGetItem, "get"),
                 (tvm.ir.expr.GenericConst, "const"), (relax.Call, "call"),
                 ((relax.If, relax.SeqExpr), "control"))
        kind = _KINDS[cls] = next((k for c, k in kinds if issubclass(cls, c)), "other")
    return kind


class Walker:
    """Interprets a Relax function's bindings as values flowing between calls."""

    def __init__(self, mod: Any, before: Any = None, bounds: Mapping[str, int] | None = None,
                 inline_codegen: bool = True):
        self.mod, self.before, self.bounds = mod, before, bounds
        self.inline_codegen = inline_codegen
        self._names: dict[str, int] = {}
        self._fused_ops: dict[str, tuple[Ops, int | None]] = {}
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
            env[p.__chandle__()] = flow
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
        """Distinct names for distinct values, like the printer's `lv`, `lv_1`."""
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
                env[b.var.__chandle__()] = flow
                if isinstance(value, (relax.Var, relax.TupleGetItem)) and isinstance(flow, Value):
                    flow.aliases.append(str(b.var.name))
        body = func.body
        return self._eval(getattr(body, "body", body), None, len(self.w.bindings), env, local,
                          cluster)

    def _eval(self, e: Any, var: Any, index: int, env: dict, local: dict,
              cluster: str | None) -> Any:
        kind = _expr_kind(type(e))
        if kind == "var":
            return env.get(e.__chandle__())
        if kind == "tuple":
            return tuple(self._eval(f, None, index, env, local, cluster) for f in e.fields)
        if kind == "get":
            flow = self._eval(e.tuple_value, None, index, env, local, cluster)
            return flow[e.index] if isinstance(flow, tuple) and e.index < len(flow) else None
        if kind == "const":  # bound, or inline as an argument
            return self._make(e.ty, "const" if var is None else str(var.name), "const", index)
        if var is None:
            return None
        name = str(var.name)
        if kind == "call":
            return self._call(e, var, index, env, local, cluster)
        if kind == "control":  # opaque control flow: one node
            ins = [v for r in var_refs(e) for v in flatten(env.get(r.__chandle__()))]
            return self._site(index, name, "call", type(e).__name__.lower(), (), None, ins,
                              var.ty, cluster)
        return None

    def _site(self, index: int, name: str, kind: str, label: str, ops: Ops,
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
                    inner[p.__chandle__()] = self._eval(a, None, index, env, local, cluster)
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
    def _kernel(self, name: str, func: Any) -> tuple[str, Ops, int | None]:
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
        lazy: Ops = split_fused_name(name, self._extra) or functools.partial(
            _ops_of_blocks, func, name)
        self._fused_ops[name] = (lazy, None)
        return "fused", lazy, pattern

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


def _ops_of_blocks(func: Any, name: str) -> tuple[str, ...]:
    """The ops of a fused kernel whose name does not say them: its block names, else
    its name."""
    return _block_names(func) or (name,)


def _block_names(func: Any) -> tuple[str, ...]:
    """Names of the computation blocks of a PrimFunc (last resort for odd fused names)."""
    return () if func is None else _BLOCK_NAMES(func)


def _printed_block_names(func: Any) -> tuple[str, ...]:
    # TVM's Python has no TIR statement visitor: the names are read off the printed text
    found = re.findall(r'T\.sblock\("([^"]+)"\)', func.script())
    return tuple(n for n in found if n != "root")


#: A PrimFunc's block names, printed once per function: a kernel that is not rewritten
#: is the same object in every step that calls it (mobilenet's report walks 18 modules
#: and asked for 216 names of 24 functions, printing each time: 0.9 s).
_BLOCK_NAMES = ObjectCache(_printed_block_names, maxsize=512)
