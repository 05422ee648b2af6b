"""Reading a partitioned Relax function for `passlab.analysis.partitions.partitions`:
every operator call (on the host, or inlined from the `Codegen`/`Composite` function
a region calls), its FLOPs and bytes (`estimate_flops`; the estimates are described
in `passlab.analysis.partitions`), and the tensors crossing each region's boundary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from passlab._tvm import ir as _ir
from passlab.analysis._partitions_report import HOST, Crossing, OpCall, PartitionReport, Region

#: Operators that only move or reinterpret data: no arithmetic.
LAYOUT_OPS = frozenset({
    "reshape", "permute_dims", "expand_dims", "squeeze", "flatten", "nn.batch_flatten",
    "broadcast_to", "concat", "split", "strided_slice", "take", "layout_transform",
    "memory.view", "astype", "collapse_sum_like", "zeros", "ones", "full", "zeros_like",
    "ones_like", "full_like", "arange", "tile", "repeat", "flip", "gather_elements",
    "gather_nd", "dynamic_strided_slice"})
_CONV = ("nn.conv1d", "nn.conv2d", "nn.conv3d")
_CONV_T = ("nn.conv1d_transpose", "nn.conv2d_transpose", "nn.conv3d_transpose")


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
    return math.prod(int(d) for d in info.shape)


def estimate_flops(op: str, args: Sequence[Any], out: Sequence[_ir.TensorInfo],
                   attrs: Any = None) -> int | None:
    """FLOPs of one operator call from shapes (see
    `passlab.analysis.partitions`)."""
    if op in LAYOUT_OPS:
        return 0
    out_elems = [_elements(i) for i in out]
    if any(e is None for e in out_elems):
        return None
    n_out = sum(out_elems)  # type: ignore[arg-type]
    infos = [_ir.tensor_infos(getattr(a, "ty", None)) for a in args]
    ins = [i[0] if len(i) == 1 else None for i in infos]
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
        """Who reads each variable: `host`, a region (its function's name) or
        `output`; plain aliases (`y = x`) pass their readers on to `x`."""
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
        """Add the operator calls of `func`'s body; return the composites met."""
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
