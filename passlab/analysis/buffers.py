"""Intermediate tensors, their live ranges and the peak memory they need, at any point of
the pipeline: on operator graphs, on fused ``call_tir`` graphs (where
``relax.analysis.estimate_memory_usage`` sees nothing yet) and after memory planning.

Model
-----
A *tensor* is a value a binding creates: an operator or kernel result, or (after
CallTIRRewrite) an ``alloc_tensor`` a kernel writes into. ``R.reshape`` and
``R.memory.view`` results are views: they extend their base tensor's life and are listed
as its aliases. Parameters (inputs, weights) and constants are not temporaries.

A tensor lives from the binding that creates it to the last binding that reads or writes
it (the function's return counts as binding ``len(bindings)``). The *peak* is the largest
sum, over bindings, of the bytes of memory blocks alive there: each tensor on its own
before planning; after ``StaticPlanBlockMemory`` each ``alloc_storage`` (alive from its
allocation to the last use of any tensor placed in it) plus the outputs'
``alloc_tensor``.

Examples
--------
>>> import passlab
>>> report = buffers(passlab.models.mlp())
>>> report.peak_bytes, [t.name for t in report.peak_tensors]
(2560, ['permute_dims', 'matmul'])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from passlab import _render
from passlab._tvm import ir as _ir

__all__ = ["buffers", "BufferReport", "Tensor", "Allocation"]

_COUNTED = (_ir.ALLOC_STORAGE, _ir.ALLOC_TENSOR)  # what estimate_memory_usage counts


@dataclass(frozen=True)
class Tensor:
    """One tensor of a function: who makes it, who reads it, its size and live range.

    ``bytes`` is ``None`` when the size is symbolic and no bound was given; ``size`` is
    always the size as text (``"256 * n"``). ``defined``, ``first_use`` and ``last_use``
    are binding indices of ``function``.
    """

    name: str
    function: str
    kind: str  # intermediate, output, input, weight
    producer: str
    consumers: tuple[str, ...]
    shape: tuple[int | str, ...] | None
    dtype: str
    bytes: int | None
    size: str
    defined: int
    first_use: int | None
    last_use: int | None
    storage: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def shape_text(self) -> str:
        return "?" if self.shape is None else "x".join(map(str, self.shape)) or "scalar"


@dataclass(frozen=True)
class Allocation:
    """An explicit allocation: ``R.memory.alloc_storage`` or ``R.builtin.alloc_tensor``."""

    name: str
    function: str
    op: str
    bytes: int | None
    size: str
    binding: int
    tensors: tuple[str, ...]
    constant: bool = True


def _fmt(n: int | None, size: str = "?") -> str:
    return f"{n} B" if n is not None else f"{size} B"


@dataclass(frozen=True)
class BufferReport:
    """Tensors, allocations and liveness peak of one function or a whole module.

    Behaves like a sequence of :class:`Tensor` (``len``, iteration, indexing by position
    or by tensor name).

    ``allocations`` mirrors the "With memory planning" line of
    ``relax.analysis.estimate_memory_usage``: every constant-size ``alloc_storage`` and
    ``builtin.alloc_tensor``. Symbolic-size ones are in ``dynamic_allocations``.
    ``peak_bytes`` is a lower bound when ``peak_exact`` is false (symbolic sizes without
    ``bounds``: the unknown sizes count as 0); ``unknown_symbols`` names what is missing.
    """

    functions: tuple[str, ...]
    tensors: tuple[Tensor, ...]
    params: tuple[Tensor, ...]
    allocations: tuple[Allocation, ...]
    dynamic_allocations: tuple[Allocation, ...]
    peak_bytes: int
    peak_exact: bool
    peak_function: str | None
    peak_binding: int | None
    peak_tensors: tuple[Tensor, ...]
    timelines: tuple[tuple[str, tuple[int, ...]], ...] = ()
    bindings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    unknown_symbols: tuple[str, ...] = ()
    bounds: tuple[tuple[str, int], ...] = ()

    def __len__(self) -> int:
        return len(self.tensors)

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self.tensors)

    def __getitem__(self, key: int | str) -> Tensor:
        if isinstance(key, int):
            return self.tensors[key]
        for t in self.tensors:
            if t.name == key or key in t.aliases:
                return t
        from passlab.errors import unknown

        raise unknown("tensor", key, [t.name for t in self.tensors])

    def __repr__(self) -> str:
        peak = ("=" if self.peak_exact else ">=") + str(self.peak_bytes)
        return (f"BufferReport(functions={list(self.functions)}, tensors={len(self.tensors)}, "
                f"allocations={len(self.allocations)}, peak_bytes{peak})")

    @property
    def total_bytes(self) -> int:
        """Bytes of all allocations (constant-size plus dynamic ones with known size) when
        the module has explicit allocations (after CallTIRRewrite); otherwise bytes of all
        intermediate and output tensors. Unknown symbolic sizes count as 0."""
        allocs = self.allocations + self.dynamic_allocations
        items = allocs if allocs else self.tensors
        return sum(a.bytes or 0 for a in items)

    @property
    def timeline(self) -> tuple[int, ...]:
        """Live bytes at each binding of :attr:`peak_function` (the return is last)."""
        return dict(self.timelines).get(self.peak_function or "", ())

    def _summary(self) -> list[str]:
        where = ""
        if self.peak_function is not None and self.peak_binding is not None:
            names = dict(self.bindings)[self.peak_function]
            at = names[self.peak_binding] if self.peak_binding < len(names) else "return"
            where = f" at binding {self.peak_binding} ({at}) of {self.peak_function}"
        peak = f"peak {self.peak_bytes} B{where}"
        if not self.peak_exact:
            why = "some sizes are only known at run time"
            if self.unknown_symbols:
                why = (f"sizes depend on {', '.join(self.unknown_symbols)}; pass bounds={{"
                       + ", ".join(f"{s!r}: ..." for s in self.unknown_symbols) + "}")
            peak = f"peak >= {self.peak_bytes} B{where} (lower bound: {why})"
        lines = [f"buffers of {', '.join(self.functions)}: {len(self.tensors)} tensors, {peak}"]
        if self.peak_tensors:
            lines.append("live at peak: " + ", ".join(
                f"{t.name} ({_fmt(t.bytes, t.size)})" for t in self.peak_tensors))
        known = sum(a.bytes for a in self.allocations if a.bytes is not None)
        lines.append(f"allocations: {len(self.allocations)} constant-size, {known} B"
                     + (f"; {len(self.dynamic_allocations)} symbolic-size"
                        if self.dynamic_allocations else ""))
        if self.bounds:
            lines.append("bounds: " + ", ".join(f"{k}={v}" for k, v in self.bounds))
        return lines

    def _rows(self) -> tuple[list[str], list[list[Any]]]:
        head = ["tensor", "kind", "producer", "consumers", "shape", "dtype", "bytes", "defined",
                "first", "last", "storage"]
        multi = len(self.functions) > 1
        rows = [[t.name + (f" ({', '.join(t.aliases)})" if t.aliases else ""), t.kind,
                 t.producer or "-", ", ".join(t.consumers) or "-", t.shape_text, t.dtype,
                 t.bytes if t.bytes is not None else t.size, t.defined,
                 "-" if t.first_use is None else t.first_use,
                 "-" if t.last_use is None else t.last_use, t.storage or "-"]
                for t in self.tensors]
        if multi:
            head.insert(0, "function")
            for r, t in zip(rows, self.tensors):
                r.insert(0, t.function)
        return head, rows

    def _alloc_rows(self) -> tuple[list[str], list[list[Any]]]:
        head = ["allocation", "function", "op", "bytes", "binding", "tensors"]
        rows = [[a.name, a.function, _ir.short_op(a.op), a.bytes if a.bytes is not None
                 else a.size, a.binding, ", ".join(a.tensors)]
                for a in self.allocations + self.dynamic_allocations]
        return head, rows

    def to_text(self) -> str:
        """Summary lines, the tensor table and the allocation table."""
        out = self._summary() + ["", _render.text_table(*self._rows())]
        if self.allocations or self.dynamic_allocations:
            out += ["", _render.text_table(*self._alloc_rows())]
        return "\n".join(out)

    def to_html(self) -> str:
        """The same content as :meth:`to_text` as escaped HTML tables."""
        lines = self._summary()
        out = [f'<div class="passlab-buffers"><p><b>{_render.esc(lines[0])}</b></p>']
        out += [f'<div class="passlab-note">{_render.esc(s)}</div>' for s in lines[1:]]
        peak = {t.name for t in self.peak_tensors}
        head, rows = self._rows()
        classes = ["user" if t.name in peak else "" for t in self.tensors]
        out.append(_render.html_table(head, rows, classes=classes, caption="tensors "
                                      "(highlighted: live at the peak)"))
        if self.allocations or self.dynamic_allocations:
            out.append(_render.html_table(*self._alloc_rows(), caption="allocations"))
        return "".join(out) + "</div>"

    def to_dataframe(self, table: str = "tensors") -> Any:
        """``tensors`` (default), ``params`` or ``allocations`` as a pandas DataFrame."""
        import pandas as pd

        items = {"tensors": self.tensors, "params": self.params,
                 "allocations": self.allocations + self.dynamic_allocations}
        if table not in items:
            raise ValueError(f"table must be one of {sorted(items)}, not {table!r}")
        return pd.DataFrame([dict(vars(x)) for x in items[table]])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _render.mimebundle(self)


def buffers(
    x: Any, function: str | None = None, bounds: Mapping[str, int] | None = None
) -> BufferReport:
    """List every intermediate tensor with its live range, and the liveness peak.

    Parameters
    ----------
    x : tvm.IRModule or Step
        The module to analyse (a Step's ``.after`` module).
    function : str, optional
        One Relax function; by default every Relax function of the module.
    bounds : mapping of str to int, optional
        Values for symbolic dimensions (``{"n": 128}``): sizes, peak and totals become
        exact numbers. Without them symbolic sizes stay expressions and the peak is a
        lower bound.

    Returns
    -------
    BufferReport

    Examples
    --------
    >>> import passlab
    >>> r = buffers(passlab.models.transformer(seq_len="n"), bounds={"n": 128})
    >>> r.peak_exact
    True
    """
    mod, _ = _ir.as_module(x)
    names = _ir.select_functions(mod, function, all_when_none=True)
    bounds = _check_bounds(bounds)
    walker = _ir.Walker(mod, bounds=bounds, inline_codegen=False)  # external memory
    walks = [walker.walk(n) for n in names]
    if bounds:
        known = sorted({s for w in walks for v in w.values for s in v.info.size.symbols})
        for key in bounds:
            if key not in known:
                from passlab.errors import unknown

                raise unknown("symbolic variable", key, known, "bounds names a dimension "
                              "that no analysed tensor has.")
    return _report([_analyse(w, bounds or {}) for w in walks], names, bounds)


def _check_bounds(bounds: Mapping[str, int] | None) -> dict[str, int] | None:
    if bounds is None:
        return None
    if not isinstance(bounds, Mapping):
        raise TypeError(f"bounds must be a mapping like {{'n': 128}}, not {type(bounds).__name__}")
    for k, v in bounds.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise TypeError(f"bounds[{k!r}] must be a non-negative int, not {v!r}")
    return dict(bounds)


@dataclass
class _Result:
    walk: _ir.Walk
    tensors: list[Tensor]
    params: list[Tensor]
    allocs: list[Allocation]
    timeline: list[int]
    exact: bool
    live_at: list[list[str]]  # names of the tensors live at each binding
    unknown: set[str]


def _base(v: _ir.Value) -> _ir.Value:
    while v.view_of is not None:
        v = v.view_of
    return v


def _analyse(w: _ir.Walk, bounds: Mapping[str, int]) -> _Result:
    end = len(w.bindings)
    uses: dict[int, list[int]] = {}
    readers: dict[int, list[str]] = {}
    for c in w.calls:
        for v in c.inputs:
            b = _base(v)
            uses.setdefault(id(b), []).append(c.index)
            readers.setdefault(id(b), []).append(c.label)
        for v in c.outputs:
            uses.setdefault(id(_base(v)), []).append(c.index)
    returned = {id(_base(v)) for v in w.results}
    for key in returned:
        uses.setdefault(key, []).append(end)

    views: dict[int, list[str]] = {}
    placed: dict[int, list[str]] = {}
    for x in w.values:
        if x.view_of is not None:
            views.setdefault(id(_base(x)), []).append(x.display)
        if x.storage is not None:
            placed.setdefault(id(x.storage), []).append(x.name)
    tensors, params, block_end = [], [], {}
    for v in w.values:
        if v.view_of is not None or v.kind == "storage":
            continue
        u = sorted(set(uses.get(id(v), [])))
        aliases = tuple(dict.fromkeys(a for a in (*v.aliases, *views.get(id(v), ()))
                                      if a != v.name))
        kind = v.kind if v.kind in ("input", "weight") else (
            "output" if id(v) in returned else "intermediate")
        t = Tensor(v.name, w.function, kind, v.producer.label if v.producer else "",
                   tuple(dict.fromkeys(readers.get(id(v), []))), v.info.shape, v.info.dtype,
                   v.info.size.bytes, v.info.size.text, v.index, u[0] if u else None,
                   u[-1] if u else None, v.storage.name if v.storage is not None else None, aliases)
        if v.kind in ("input", "weight", "const"):  # module data, not temporaries
            if v.kind != "const":
                params.append(t)
            continue
        tensors.append(t)
        block = v.storage if v.storage is not None else v
        last = max(t.last_use if t.last_use is not None else v.index, v.index)
        block_end[id(block)] = max(block_end.get(id(block), -1), last)

    blocks = [v for v in w.values if id(v) in block_end]
    timeline = [0] * (end + 1)
    live_at: list[list[str]] = [[] for _ in range(end + 1)]
    unknown: set[str] = set()
    exact = True
    for b in blocks:
        size = b.info.size
        if size.bytes is None:
            exact = False
            unknown |= set(size.symbols) - set(bounds)
        for i in range(max(b.index, 0), block_end[id(b)] + 1):
            timeline[i] += size.bytes or 0
    for t in tensors:
        for i in range(t.defined, (t.last_use if t.last_use is not None else t.defined) + 1):
            live_at[i].append(t.name)
    allocs = []
    for v in w.values:
        if v.op in _COUNTED:
            inside = placed.get(id(v), []) if v.kind == "storage" else [v.name]
            allocs.append(Allocation(v.name, w.function, v.op, v.info.size.bytes,
                                     v.info.size.text, v.index, tuple(inside),
                                     not v.info.size.symbols and v.info.size.bytes is not None))
    return _Result(w, tensors, params, allocs, timeline, exact, live_at, unknown)


def _report(results: list[_Result], names: list[str],
            bounds: dict[str, int] | None) -> BufferReport:
    best = max(results, key=lambda r: max(r.timeline), default=None)
    peak, index, peak_tensors = 0, None, ()
    if best is not None and best.tensors:
        peak = max(best.timeline)
        index = best.timeline.index(peak)
        live = set(best.live_at[index])
        peak_tensors = tuple(t for t in best.tensors if t.name in live)
    unknown = set().union(*(r.unknown for r in results)) if results else set()
    return BufferReport(
        functions=tuple(names),
        tensors=tuple(t for r in results for t in r.tensors),
        params=tuple(t for r in results for t in r.params),
        allocations=tuple(a for r in results for a in r.allocs if a.constant),
        dynamic_allocations=tuple(a for r in results for a in r.allocs if not a.constant),
        peak_bytes=peak,
        peak_exact=all(r.exact for r in results),
        peak_function=best.walk.function if best is not None and best.tensors else None,
        peak_binding=index,
        peak_tensors=peak_tensors,
        timelines=tuple((r.walk.function, tuple(r.timeline)) for r in results),
        bindings=tuple((r.walk.function, tuple(r.walk.bindings)) for r in results),
        unknown_symbols=tuple(sorted(unknown)),
        bounds=tuple(sorted((bounds or {}).items())),
    )
