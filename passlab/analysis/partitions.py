"""What a backend takes: offloaded regions, coverage and host/accelerator traffic of a
partitioned Relax function.

:func:`partitions` reads a snapshot after partitioning (``Codegen`` functions made by
``MergeCompositeFunctions``, or ``Composite`` functions called directly) and reports:

* every operator call, on the host or in a region, with estimated FLOPs and bytes;
* each offloaded region (one ``Codegen`` function call): its composites, its operators,
  its inputs and outputs;
* the tensors that cross between host and accelerator, with their bytes;
* coverage per backend: share of operators, of FLOPs and of bytes it takes.

Estimates (per operator call): ``matmul`` 2·out·K (K the first input's last dimension);
``conv1d/2d/3d`` 2·out·(weight elements / output channels); ``conv*_transpose``
2·in·(weight elements / input channels); layout and view operators (reshape,
permute_dims, ...) 0; every other operator one FLOP per output element. Bytes: every
tensor read plus every tensor written. Sizes with symbolic dimensions count only when
``bounds`` gives their values.

Examples
--------
>>> import passlab
>>> from passlab.backend import Backend
>>> from passlab.analysis.partitions import partitions
>>> report = partitions(Backend("tensorrt").partition(passlab.models.mlp()))
>>> [(r.backend, r.op_names) for r in report]
[('tensorrt', ('permute_dims', 'matmul', 'add', 'nn.relu', 'permute_dims', 'matmul', 'add'))]
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from passlab import _render

from . import _ir

__all__ = ["partitions", "compare_backends", "PartitionReport", "Region", "OpCall",
           "Crossing", "Coverage", "BackendComparison"]

HOST = "host"
#: Operators that only move or reinterpret data: no arithmetic.
LAYOUT_OPS = frozenset({
    "reshape", "permute_dims", "expand_dims", "squeeze", "flatten", "nn.batch_flatten",
    "broadcast_to", "concat", "split", "strided_slice", "take", "layout_transform",
    "memory.view", "astype", "collapse_sum_like", "zeros", "ones", "full", "zeros_like",
    "ones_like", "full_like", "arange", "tile", "repeat", "flip", "gather_elements",
    "gather_nd", "dynamic_strided_slice"})
_CONV = ("nn.conv1d", "nn.conv2d", "nn.conv3d")
_CONV_T = ("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")


# ------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class OpCall:
    """One operator call; ``backend`` is None on the host."""

    index: int
    op: str
    var: str
    backend: str | None
    region: str | None
    composite: str | None
    shape: tuple[int | str, ...] | None
    dtype: str
    flops: int | None
    bytes: int | None

    @property
    def offloaded(self) -> bool:
        return self.backend is not None


@dataclass(frozen=True)
class Crossing:
    """A tensor that crosses between the host and a region (``direction`` "in": into the
    region, "out": back to the host). ``kind``: input, weight, constant or activation;
    ``peer``: where it comes from (in) or goes to (out): ``host``, a region, ``output``
    or a parameter."""

    region: str
    direction: str
    tensor: str
    kind: str
    shape: tuple[int | str, ...] | None
    dtype: str
    bytes: int | None
    peer: str

    @property
    def shape_text(self) -> str:
        return "?" if self.shape is None else "x".join(map(str, self.shape)) or "scalar"


@dataclass(frozen=True)
class Region:
    """One offloaded region: a call of a ``Codegen`` (or ``Composite``) function."""

    name: str
    backend: str
    var: str
    composites: tuple[str, ...]
    ops: tuple[OpCall, ...]
    inputs: tuple[Crossing, ...]
    outputs: tuple[Crossing, ...]

    @property
    def op_names(self) -> tuple[str, ...]:
        return tuple(o.op for o in self.ops)

    @property
    def flops(self) -> int:
        return sum(o.flops or 0 for o in self.ops)

    @property
    def bytes_in(self) -> int:
        return sum(c.bytes or 0 for c in self.inputs)

    @property
    def bytes_out(self) -> int:
        return sum(c.bytes or 0 for c in self.outputs)


@dataclass(frozen=True)
class Coverage:
    """What one backend (or the host) takes, against the whole function."""

    backend: str
    regions: int
    ops: int
    ops_total: int
    flops: int
    flops_total: int
    bytes: int
    bytes_total: int
    bytes_in: int = 0
    bytes_out: int = 0

    @staticmethod
    def _pct(a: int, b: int) -> float:
        return 100.0 * a / b if b else 0.0

    @property
    def ops_pct(self) -> float:
        return self._pct(self.ops, self.ops_total)

    @property
    def flops_pct(self) -> float:
        return self._pct(self.flops, self.flops_total)

    @property
    def bytes_pct(self) -> float:
        return self._pct(self.bytes, self.bytes_total)


_COVERAGE_HEADER = ["backend", "regions", "ops", "ops %", "FLOPs", "FLOPs %", "bytes",
                    "bytes %", "traffic in B", "traffic out B"]


def _coverage_row(c: Coverage) -> list[str]:
    return [c.backend, str(c.regions) if c.backend != HOST else "", f"{c.ops}/{c.ops_total}",
            f"{c.ops_pct:.1f}%", str(c.flops), f"{c.flops_pct:.1f}%", str(c.bytes),
            f"{c.bytes_pct:.1f}%", str(c.bytes_in) if c.backend != HOST else "",
            str(c.bytes_out) if c.backend != HOST else ""]


@dataclass(frozen=True)
class PartitionReport:
    """The partitions of one Relax function (see :func:`partitions`).

    Behaves like a sequence of :class:`Region` (one per call of an offloaded function):
    ``len``, iteration, indexing by position, by function name (its first call) or by
    the call's variable.
    """

    function: str
    ops: tuple[OpCall, ...]
    regions: tuple[Region, ...]
    notes: tuple[str, ...] = field(default=())

    # ------------------------------------------------------------------ sequence
    def __len__(self) -> int:
        return len(self.regions)

    def __iter__(self) -> Iterator[Region]:
        return iter(self.regions)

    def __getitem__(self, key: int | str) -> Region:
        if isinstance(key, int):
            return self.regions[key]
        for r in self.regions:
            if key in (r.name, r.var):
                return r
        from passlab._names import unknown

        raise unknown("region", key, [r.name for r in self.regions] + [r.var for r in self.regions])

    # ------------------------------------------------------------------ summaries
    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.backend for r in self.regions))

    @property
    def crossings(self) -> tuple[Crossing, ...]:
        return tuple(c for r in self.regions for c in r.inputs + r.outputs)

    @property
    def host_ops(self) -> tuple[OpCall, ...]:
        return tuple(o for o in self.ops if not o.offloaded)

    def coverage(self, backend: str | None = None) -> Coverage:
        """What ``backend`` takes (default: the only backend); ``"host"`` for the rest."""
        if backend is None:
            if len(self.backends) != 1:
                raise ValueError(f"the function has regions of {len(self.backends)} backends "
                                 f"({', '.join(self.backends) or 'none'}); name one")
            backend = self.backends[0]
        if backend != HOST and backend not in self.backends:
            from passlab._names import unknown

            raise unknown("backend", backend, self.backends + (HOST,))
        mine = [o for o in self.ops if (o.backend or HOST) == backend]
        regions = [r for r in self.regions if r.backend == backend]
        return Coverage(
            backend, len(regions), len(mine), len(self.ops),
            sum(o.flops or 0 for o in mine), sum(o.flops or 0 for o in self.ops),
            sum(o.bytes or 0 for o in mine), sum(o.bytes or 0 for o in self.ops),
            sum(r.bytes_in for r in regions), sum(r.bytes_out for r in regions))

    def coverages(self) -> tuple[Coverage, ...]:
        """One :class:`Coverage` per backend, then the host."""
        return tuple(self.coverage(b) for b in self.backends) + (self.coverage(HOST),)

    def summary(self) -> str:
        n = len(self.regions)
        who = ", ".join(self.backends) if self.backends else "no backend"
        out = (f"Partitions of {self.function}: {n} offloaded region{'s' if n != 1 else ''} "
               f"({who}), {len(self.ops)} operator calls")
        if self.regions:
            moved = sum(r.bytes_in + r.bytes_out for r in self.regions)
            out += f", {moved} B crossing host/accelerator"
        return out

    # --------------------------------------------------------------------- tables
    def _region_rows(self) -> list[list[str]]:
        return [[str(i), _short(r.name), r.backend, r.var, str(len(r.composites)),
                 _op_counts(r.op_names), str(len(r.inputs)), str(len(r.outputs)),
                 str(r.bytes_in), str(r.bytes_out), str(r.flops)]
                for i, r in enumerate(self.regions)]

    _REGION_HEADER = ["#", "region", "backend", "call", "composites", "ops", "inputs",
                      "outputs", "in B", "out B", "FLOPs"]
    _OP_HEADER = ["composite", "op", "result", "shape", "dtype", "FLOPs", "bytes"]
    _CROSS_HEADER = ["dir", "tensor", "kind", "shape", "dtype", "bytes", "from/to"]

    @staticmethod
    def _op_rows(ops: Sequence[OpCall]) -> list[list[str]]:
        return [[o.composite or "", o.op, o.var,
                 "?" if o.shape is None else "x".join(map(str, o.shape)), o.dtype,
                 "?" if o.flops is None else str(o.flops),
                 "?" if o.bytes is None else str(o.bytes)] for o in ops]

    @staticmethod
    def _cross_rows(r: Region) -> list[list[str]]:
        return [[("-> " + r.backend) if c.direction == "in" else "-> host", c.tensor, c.kind,
                 c.shape_text, c.dtype, "?" if c.bytes is None else str(c.bytes), c.peer]
                for c in r.inputs + r.outputs]

    def to_text(self, detail: bool = True) -> str:
        """Coverage, the region table and (``detail``) one table per region."""
        parts = [self.summary(), "",
                 _render.text_table(_COVERAGE_HEADER, [_coverage_row(c) for c in self.coverages()])]
        if self.regions:
            parts += ["", "Regions", _render.text_table(self._REGION_HEADER, self._region_rows())]
        if detail:
            for r in self.regions:
                parts += ["", f"Region {r.name} ({r.backend}), called as {r.var}",
                          _render.text_table(self._OP_HEADER, self._op_rows(r.ops)),
                          _render.text_table(self._CROSS_HEADER, self._cross_rows(r))]
        parts += [f"note: {n}" for n in self.notes]
        return "\n".join(parts)

    def to_html(self) -> str:
        esc = _render.esc
        out = [_render.html_table(_COVERAGE_HEADER, [_coverage_row(c) for c in self.coverages()],
                                  caption=self.summary())]
        if self.regions:
            out.append(_render.html_table(self._REGION_HEADER, self._region_rows(),
                                          caption="Regions"))
        for r in self.regions:
            out.append(
                f"<details><summary>{esc(r.name)} ({esc(r.backend)}, called as "
                f"{esc(r.var)}): {esc(_op_counts(r.op_names, 200))}</summary>"
                + _render.html_table(self._OP_HEADER, self._op_rows(r.ops), caption="operators")
                + _render.html_table(self._CROSS_HEADER, self._cross_rows(r),
                                     caption="tensors crossing") + "</details>")
        out += [f'<div class="passlab-note">{esc(n)}</div>' for n in self.notes]
        return "".join(out)

    def to_dataframe(self, table: str = "ops") -> Any:
        """``table``: "ops" (one row per operator call), "regions", "crossings" or
        "coverage"."""
        import pandas as pd

        if table == "ops":
            return pd.DataFrame([o.__dict__ for o in self.ops]).set_index("index")
        if table == "regions":
            return pd.DataFrame([dict(region=r.name, backend=r.backend, call=r.var,
                                      composites=len(r.composites), ops=len(r.ops),
                                      inputs=len(r.inputs), outputs=len(r.outputs),
                                      bytes_in=r.bytes_in, bytes_out=r.bytes_out,
                                      flops=r.flops) for r in self.regions])
        if table == "crossings":
            return pd.DataFrame([c.__dict__ for c in self.crossings])
        if table == "coverage":
            return pd.DataFrame([dict(c.__dict__, ops_pct=c.ops_pct, flops_pct=c.flops_pct,
                                      bytes_pct=c.bytes_pct) for c in self.coverages()]
                                ).set_index("backend")
        from passlab._names import unknown

        raise unknown("table", table, ("ops", "regions", "crossings", "coverage"))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _render.mimebundle(self)

    def __repr__(self) -> str:
        return (f"PartitionReport(function={self.function!r}, regions={len(self.regions)}, "
                f"backends={list(self.backends)}, ops={len(self.ops)})")


def _short(name: str, width: int = 48) -> str:
    """Merged regions are named after every op they hold; tables show the start."""
    return name if len(name) <= width else name[: width - 3] + "..."


def _op_counts(ops: Sequence[str], width: int = 60) -> str:
    """``nn.conv2d x20, nn.relu x17, add`` in order of first appearance."""
    counts: dict[str, int] = {}
    for o in ops:
        counts[o] = counts.get(o, 0) + 1
    text = ", ".join(o if n == 1 else f"{o} x{n}" for o, n in counts.items())
    return _short(text, width)


# --------------------------------------------------------------------------- analysis
def partitions(x: Any, function: str | None = None, *,
               bounds: Mapping[str, int] | None = None) -> PartitionReport:
    """Report what each backend takes in a partitioned Relax function.

    Parameters
    ----------
    x : tvm.IRModule, Step, Trace or Build
        A partitioned module, or a recorded step (its ``after`` module). A Trace (or a
        Build's trace) is read at the last step of its main chain that has offloaded
        regions (after the ``after_partition`` passes, before a host fallback).
    function : str, optional
        The Relax function; default the entry.
    bounds : mapping of str to int, optional
        Values of symbolic dimensions, so that their tensors count.

    Returns
    -------
    PartitionReport

    Examples
    --------
    >>> import passlab
    >>> from passlab.backend import preview
    >>> trace = preview(passlab.models.resnet(), "tensorrt")
    >>> report = partitions(trace)
    >>> len(report), report.coverage("tensorrt").ops_pct > 50
    (18, True)
    """
    mod, _ = _ir.as_module(_snapshot(x))
    name = _ir.select_functions(mod, function, all_when_none=False)[0]
    return _Analysis(mod, bounds).run(name)


def _snapshot(x: Any) -> Any:
    """The step of a Trace (or a Build's) to read: the last main-chain step whose module
    still has offloaded regions (a host fallback or codegen removes them later)."""
    trace = getattr(x, "trace", None) if not hasattr(x, "find") else x
    if trace is None or not hasattr(trace, "find"):
        return x
    done = [s for s in trace if s.kind == "pass" and s.after is not None]
    for step in reversed(done):
        if any(_is_offload(f) for _, f in step.after.functions_items()):
            return step
    if not done:
        raise ValueError("the trace has no finished pass to analyse")
    return done[-1]


def _tensors(ty: Any, bounds: Mapping[str, int] | None) -> list[_ir.TensorInfo]:
    return _ir.tensor_infos(ty, bounds)


def _sum_bytes(infos: Sequence[_ir.TensorInfo]) -> int | None:
    total = 0
    for i in infos:
        if i.size.bytes is None:
            return None
        total += i.size.bytes
    return total


def _elements(info: _ir.TensorInfo) -> int | None:
    if info.shape is None or any(not isinstance(d, int) for d in info.shape):
        return None
    return math.prod(info.shape)


def estimate_flops(op: str, args: Sequence[Any], out: Sequence[_ir.TensorInfo],
                   attrs: Any = None) -> int | None:
    """FLOPs of one operator call from shapes (see the module docstring)."""
    if op in LAYOUT_OPS:
        return 0
    out_elems = [_elements(i) for i in out]
    if any(e is None for e in out_elems):
        return None
    n_out = sum(out_elems)  # type: ignore[arg-type]
    ins = [_ir.tensor_infos(getattr(a, "ty", None)) for a in args]
    ins = [i[0] if len(i) == 1 else None for i in ins]
    if op == "matmul":
        k = ins[0].shape[-1] if ins and ins[0] is not None and ins[0].shape else None
        return 2 * n_out * k if isinstance(k, int) else None
    if op in _CONV + _CONV_T:
        if len(ins) < 2 or ins[1] is None:
            return None
        w = _elements(ins[1])
        layout = str(getattr(attrs, "kernel_layout", "") or "")
        axis = layout.find("O" if op in _CONV else "I")
        if w is None or axis < 0 or ins[1].shape is None:
            return None
        per = w // int(ins[1].shape[axis])
        if op in _CONV:
            return 2 * n_out * per
        n_in = _elements(ins[0]) if ins[0] is not None else None
        return None if n_in is None else 2 * n_in * per
    return n_out


class _Analysis:
    def __init__(self, mod: Any, bounds: Mapping[str, int] | None):
        self.mod, self.bounds = mod, bounds
        self.ops: list[OpCall] = []
        self.regions: list[Region] = []
        self.notes: list[str] = []

    def run(self, name: str) -> PartitionReport:
        func = self.mod[name]
        _, relax = _ir._tvm()
        n_in = _ir.num_inputs(func)
        origin: dict[Any, str] = {}  # var -> "host", a region's name, "parameter"
        kinds: dict[Any, str] = {}  # var -> input, weight, activation
        for i, p in enumerate(func.params):
            origin[p], kinds[p] = "parameter", "input" if i < n_in else "weight"
        self.readers = self._readers(func)
        self.items: dict[Any, list[tuple[int, Any]]] = {}  # tuple var -> [(index, item var)]
        for b in _ir.iter_bindings(func):
            v, var = b.value, b.var
            if isinstance(v, relax.TupleGetItem) and isinstance(v.tuple_value, relax.Var):
                self.items.setdefault(v.tuple_value, []).append((int(v.index), var))
            if isinstance(v, relax.Call):
                target = self._callee(v)
                if target is not None and _is_offload(target[1]):
                    self._region(target[0], target[1], v, var, origin, kinds)
                    origin[var], kinds[var] = target[0], "activation"
                    continue
                self._host_call(v, var, target)
                origin[var], kinds[var] = HOST, "activation"
            else:
                src = _ir.var_refs(v)
                one = len(src) == 1 and src[0] in origin
                origin[var] = origin[src[0]] if one else HOST
                kinds[var] = kinds[src[0]] if one else "activation"
        return PartitionReport(name, tuple(self.ops), tuple(self.regions), tuple(self.notes))

    # -------------------------------------------------------------------- helpers
    def _callee(self, call: Any) -> tuple[str, Any] | None:
        tvm, _ = _ir._tvm()
        if isinstance(call.op, tvm.ir.GlobalVar):
            return call.op.name_hint, self.mod[call.op]
        return None

    def _readers(self, func: Any) -> dict[Any, list[str]]:
        """Who reads each variable: ``host``, a region (its function's name) or
        ``output``; plain aliases (``y = x``) pass their readers on to ``x``."""
        _, relax = _ir._tvm()
        alias: dict[Any, Any] = {}
        out: dict[Any, list[str]] = {}

        def note(v: Any, who: str) -> None:
            while v in alias:
                v = alias[v]
            lst = out.setdefault(v, [])
            if who not in lst:
                lst.append(who)

        for b in _ir.iter_bindings(func):
            v = b.value
            if isinstance(v, relax.Var):
                alias[b.var] = v
            elif isinstance(v, relax.TupleGetItem):
                continue  # an item is read through its own variable
            else:
                t = self._callee(v) if isinstance(v, relax.Call) else None
                who = t[0] if t is not None and _is_offload(t[1]) else HOST
                for r in _ir.var_refs(v):
                    note(r, who)
        for r in _ir.var_refs(func.body.body):
            note(r, "output")
        return out

    def _op(self, call: Any, var: Any, backend: str | None, region: str | None,
            composite: str | None) -> None:
        op = _ir.short_op(str(call.op.name))
        out = _tensors(getattr(var, "ty", None), self.bounds)
        ins = [i for a in call.args for i in _tensors(getattr(a, "ty", None), self.bounds)]
        b_in, b_out = _sum_bytes(ins), _sum_bytes(out)
        first = out[0] if out else None
        self.ops.append(OpCall(
            len(self.ops), op, str(var.name), backend, region, composite,
            first.shape if first else None, first.dtype if first else "",
            estimate_flops(op, list(call.args), out, call.attrs),
            None if b_in is None or b_out is None else b_in + b_out))

    def _host_call(self, call: Any, var: Any, target: tuple[str, Any] | None) -> None:
        tvm, relax = _ir._tvm()
        if isinstance(call.op, tvm.ir.Op):
            name = str(call.op.name)
            if name in _ir.CALL_TIR_OPS:
                self._kernel(call, var, call.args[0].name_hint)
            elif name not in _ir.BOOKKEEPING_OPS and name not in _ir.ALLOC_OPS:
                self._op(call, var, None, None, None)
        elif target is not None and isinstance(target[1], relax.Function):
            self._inline(target[1], None, None)
        elif target is not None:
            self._kernel(call, var, target[0])

    def _kernel(self, call: Any, var: Any, name: str) -> None:
        out = _tensors(getattr(var, "ty", None), self.bounds)
        first = out[0] if out else None
        elems = [_elements(i) for i in out]
        self.ops.append(OpCall(len(self.ops), f"call_tir:{name}", str(var.name), None, None,
                               None, first.shape if first else None,
                               first.dtype if first else "",
                               None if None in elems else sum(elems),  # type: ignore[arg-type]
                               _sum_bytes(out)))
        note = ("kernels (call_tir) count one FLOP per output element and only their "
                "outputs' bytes: analyse a snapshot before LegalizeOps for per-operator "
                "estimates")
        if note not in self.notes:
            self.notes.append(note)

    def _inline(self, func: Any, backend: str | None, region: str | None,
                composite: str | None = None) -> list[str]:
        """Add the operator calls of ``func``'s body; return the composites met."""
        tvm, relax = _ir._tvm()
        comp = _ir.attr(func, "Composite", composite)
        found: list[str] = [comp] if comp is not None and comp != composite else []
        local: dict[Any, Any] = {}
        for b in _ir.iter_bindings(func):
            v = b.value
            if isinstance(v, relax.Function):
                local[b.var] = v
            elif isinstance(v, relax.Call):
                if isinstance(v.op, tvm.ir.Op):
                    if str(v.op.name) in _ir.CALL_TIR_OPS:
                        self._kernel(v, b.var, v.args[0].name_hint)
                    else:
                        self._op(v, b.var, backend, region, comp)
                elif v.op in local:
                    found += self._inline(local[v.op], backend, region, comp)
                elif isinstance(v.op, tvm.ir.GlobalVar):
                    f = self.mod[v.op]
                    if isinstance(f, relax.Function):
                        found += self._inline(f, backend, region, comp)
                    else:
                        self._kernel(v, b.var, v.op.name_hint)
        return found

    def _region(self, gname: str, func: Any, call: Any, var: Any, origin: Mapping[Any, str],
                kinds: Mapping[Any, str]) -> None:
        _, relax = _ir._tvm()
        codegen = _ir.attr(func, "Codegen")
        backend = (str(codegen) if codegen is not None
                   else str(_ir.attr(func, "Composite")).split(".")[0])
        start = len(self.ops)
        composites = tuple(self._inline(func, backend, gname))
        inputs = []
        for a in call.args:
            infos = _tensors(getattr(a, "ty", None), self.bounds)
            if isinstance(a, relax.Var):
                peer, kind, label = origin.get(a, HOST), kinds.get(a, "activation"), str(a.name)
            else:
                peer, kind, label = "constant", "constant", "const"
            for i, info in enumerate(infos):
                inputs.append(Crossing(gname, "in", label if len(infos) == 1 else f"{label}[{i}]",
                                       kind, info.shape, info.dtype, info.size.bytes, peer))
        out_infos = _tensors(getattr(var, "ty", None), self.bounds)
        whole = self.readers.get(var, [])
        items = {i: v for i, v in self.items.get(var, [])}
        outputs = []
        for i, info in enumerate(out_infos):
            if len(out_infos) == 1:
                label, who = str(var.name), whole
            elif i in items:
                label, who = str(items[i].name), self.readers.get(items[i], []) + whole
            else:
                label, who = f"{var.name}[{i}]", whole
            outputs.append(Crossing(gname, "out", label, "activation", info.shape, info.dtype,
                                    info.size.bytes, ", ".join(dict.fromkeys(who)) or "unused"))
        self.regions.append(Region(gname, backend, str(var.name), composites,
                                   tuple(self.ops[start:]), tuple(inputs), tuple(outputs)))


def _is_offload(func: Any) -> bool:
    return _ir.attr(func, "Codegen") is not None or _ir.attr(func, "Composite") is not None


# ------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class BackendComparison:
    """Partition reports of one model under several backends, side by side.

    Behaves like a sequence of ``(backend name, PartitionReport)``; ``cmp["tensorrt"]``
    is one report.
    """

    reports: tuple[tuple[str, PartitionReport], ...]

    def __len__(self) -> int:
        return len(self.reports)

    def __iter__(self) -> Iterator[tuple[str, PartitionReport]]:
        return iter(self.reports)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, int):
            return self.reports[key]
        for name, report in self.reports:
            if name == key:
                return report
        from passlab._names import unknown

        raise unknown("backend", key, [n for n, _ in self.reports])

    def _coverage(self, name: str, report: PartitionReport) -> Coverage:
        if name in report.backends:
            return report.coverage(name)
        host = report.coverage(HOST)  # nothing matched: everything stays on the host
        return Coverage(name, 0, 0, host.ops_total, 0, host.flops_total, 0, host.bytes_total)

    def coverage_rows(self) -> list[list[str]]:
        return [_coverage_row(self._coverage(n, r)) for n, r in self.reports]

    def op_rows(self) -> tuple[list[str], list[list[str]]]:
        """One row per operator type: calls in the model, calls each backend takes."""
        names = [n for n, _ in self.reports]
        totals: dict[str, int] = {}
        taken: dict[str, dict[str, int]] = {}
        for n, report in self.reports:
            for o in report.ops:
                if n == names[0]:
                    totals[o.op] = totals.get(o.op, 0) + 1
                if o.backend == n:
                    taken.setdefault(o.op, {}).setdefault(n, 0)
                    taken[o.op][n] += 1
        header = ["op", "calls"] + names
        rows = [[op, str(total)] + [str(taken.get(op, {}).get(n, 0)) for n in names]
                for op, total in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))]
        return header, rows

    def summary(self) -> str:
        function = self.reports[0][1].function if self.reports else "?"
        return (f"{len(self.reports)} backends on {function}: "
                + ", ".join(f"{n} takes {self._coverage(n, r).ops_pct:.1f}% of the operators "
                            f"in {len(r)} regions" for n, r in self.reports))

    def to_text(self) -> str:
        header, rows = self.op_rows()
        return "\n".join([self.summary(), "",
                          _render.text_table(_COVERAGE_HEADER, self.coverage_rows()), "",
                          "Operators taken", _render.text_table(header, rows)])

    def to_html(self) -> str:
        header, rows = self.op_rows()
        return (_render.html_table(_COVERAGE_HEADER, self.coverage_rows(), caption=self.summary())
                + _render.html_table(header, rows, caption="Operators taken"))

    def to_dataframe(self, table: str = "coverage") -> Any:
        """``table``: "coverage" (one row per backend) or "ops" (one row per op type)."""
        import pandas as pd

        if table == "coverage":
            return pd.DataFrame([dict(self._coverage(n, r).__dict__, regions=len(r))
                                 for n, r in self.reports]).set_index("backend")
        if table == "ops":
            header, rows = self.op_rows()
            return pd.DataFrame(rows, columns=header).set_index("op").astype(int)
        from passlab._names import unknown

        raise unknown("table", table, ("coverage", "ops"))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _render.mimebundle(self)

    def __repr__(self) -> str:
        return f"BackendComparison(backends={[n for n, _ in self.reports]})"


def compare_backends(model: Any, backends: Sequence[Any], target: Any = "llvm", *,
                     function: str | None = None,
                     bounds: Mapping[str, int] | None = None) -> BackendComparison:
    """Partition ``model`` with each backend (by :func:`passlab.backend.preview`, so
    each backend's ``before_partition``/``after_partition`` passes run) and compare.

    Parameters
    ----------
    model
        An IRModule, TVMScript or built-in model name.
    backends
        :class:`passlab.backend.Backend` objects or names of registered pattern sets.

    Examples
    --------
    >>> import passlab
    >>> cmp = compare_backends(passlab.models.resnet(), ["tensorrt", "example_npu"])
    >>> [n for n, _ in cmp]
    ['tensorrt', 'example_npu']
    """
    from passlab.backend import as_backend, preview

    resolved = [as_backend(b) for b in backends]
    names = [b.name for b in resolved]
    if len(set(names)) != len(names):
        raise ValueError(f"backends need distinct names to be compared, got {names}")
    out = []
    for b in resolved:
        trace = preview(model, b, target)
        out.append((b.name, partitions(trace, function, bounds=bounds)))
    return BackendComparison(tuple(out))
