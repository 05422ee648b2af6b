"""Intermediate tensors, their live ranges and the peak memory they need, at any point of
the pipeline: on operator graphs, on fused `call_tir` graphs (where
`relax.analysis.estimate_memory_usage` sees nothing yet) and after memory planning.

Model
-----
A *tensor* is a value a binding creates: an operator or kernel result, or (after
CallTIRRewrite) an `alloc_tensor` a kernel writes into. `R.reshape` and
`R.memory.view` results are views: they extend their base tensor's life and are listed
as its aliases. Parameters (inputs, weights) and constants are not temporaries.

A tensor lives from the binding that creates it to the last binding that reads or writes
it (the function's return counts as binding `len(bindings)`).

The peak (one definition, two regimes)
--------------------------------------
* Before memory planning: the most bytes of *tensors* live at one binding.
  `peak_tensors` lists exactly the tensors live there; their bytes sum to `peak_bytes`.
* After `StaticPlanBlockMemory`: the most bytes of *storages* live at one binding, a
  storage being live from its first to its last user (the first and last binding of any
  tensor placed in it); an output's `builtin.alloc_tensor` is its own storage.
  `peak_storages` lists exactly the storages live there; their bytes sum to
  `peak_bytes`; `peak_tensors` are the tensors live there, each inside one of them.

Examples
--------
>>> import passlab
>>> report = buffers(passlab.models.mlp())
>>> report.peak_bytes, [t.name for t in report.peak_tensors]
(2560, ['permute_dims', 'matmul'])
>>> sum(t.bytes for t in report.peak_tensors)
2560
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from passlab import _render
from passlab._sequence import NamedSequence
from passlab._tvm import ir as _ir
from passlab.analysis._liveness import Allocation, Tensor, _analyse, _peak_storages, _Result

__all__ = ["buffers", "BufferReport", "Tensor", "Allocation", "PEAK_DEFINITION"]

#: How the peak is defined, in words shown by every view (report, explorer, plot).
PEAK_DEFINITION = {
    False: "peak: the most bytes of tensors live at one binding (a tensor lives from the "
           "binding that creates it to its last use)",
    True: "peak: the most bytes of storages live at one binding (after memory planning; a "
          "storage lives from its first to its last user)",
}



def _fmt(n: int | None, size: str = "?") -> str:
    return _render.human_bytes(n) if n is not None else f"{size} B"


@dataclass(frozen=True)
class BufferReport(NamedSequence[Tensor], _render.Displayable):
    """Tensors, allocations and liveness peak of one function or a whole module.

    Behaves like a sequence of `Tensor` (`len`, iteration, indexing by position
    or by tensor name).

    `allocations` mirrors the "With memory planning" line of
    `relax.analysis.estimate_memory_usage`: every constant-size `alloc_storage` and
    `builtin.alloc_tensor`. Symbolic-size ones are in `dynamic_allocations`.
    `peak_bytes` is a lower bound when `peak_exact` is false (symbolic sizes without
    `bounds`: the unknown sizes count as 0); `unknown_symbols` names what is missing.

    The peak is defined in the module docstring (`PEAK_DEFINITION`): `planned`
    says which regime applies; the bytes of `peak_tensors` (before planning) or of
    `peak_storages` (after planning) always sum to `peak_bytes`. `plot` draws it.
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
    planned: bool = False
    #: after planning: every memory block (storage, or an output's alloc_tensor) with its
    #: live range, whether ``estimate_memory_usage`` counts it or not; empty before
    storages: tuple[Allocation, ...] = ()
    peak_storages: tuple[Allocation, ...] = ()
    #: per function, the label of the kernel or operator called at each binding ("" if none)
    binding_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()
    source: str = ""
    #: every symbolic dimension the sizes depend on (with or without bounds)
    symbols: tuple[str, ...] = ()
    #: the most bytes of tensors live at one binding, by the definition before planning,
    #: whatever the regime: after planning, what the storages would need with no padding
    tensor_peak_bytes: int = 0

    def _items(self) -> tuple[Tensor, ...]:
        return self.tensors

    def _by_name(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name or name in t.aliases:
                return t
        from passlab.errors import unknown

        raise unknown("tensor", name, [t.name for t in self.tensors])

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
        """Live bytes at each binding of `peak_function` (the return is last)."""
        return dict(self.timelines).get(self.peak_function or "", ())

    def _summary(self) -> list[str]:
        where = ""
        if self.peak_function is not None and self.peak_binding is not None:
            names = dict(self.bindings)[self.peak_function]
            at = names[self.peak_binding] if self.peak_binding < len(names) else "return"
            where = f" at binding {self.peak_binding} ({at}) of {self.peak_function}"
        size = f"{_render.human_bytes(self.peak_bytes)} ({self.peak_bytes} B)"
        peak = f"peak {size}{where}"
        if not self.peak_exact:
            why = "some sizes are only known at run time"
            if self.unknown_symbols:
                why = (f"sizes depend on {', '.join(self.unknown_symbols)}; pass bounds={{"
                       + ", ".join(f"{s!r}: ..." for s in self.unknown_symbols) + "}")
            peak = f"peak >= {size}{where} (lower bound: {why})"
        stores = ""
        if self.planned:
            n = sum(1 for a in self.storages if a.function == self.peak_function)
            stores = f" in {n} storage{'s' if n != 1 else ''}"
        lines = [f"buffers of {', '.join(self.functions)}: {len(self.tensors)} tensors"
                 f"{stores}, {peak}"]
        lines += self._live_line()
        known = sum(a.bytes for a in self.allocations if a.bytes is not None)
        lines.append(f"allocations: {len(self.allocations)} constant-size, "
                     f"{_render.human_bytes(known)}"
                     + (f"; {len(self.dynamic_allocations)} symbolic-size"
                        if self.dynamic_allocations else ""))
        if self.bounds:
            lines.append("bounds: " + ", ".join(f"{k}={v}" for k, v in self.bounds))
        lines.append(PEAK_DEFINITION[self.planned])
        why = self.planned_peak_note()
        if why:
            lines.append(why)
        return lines

    def planned_peak_note(self) -> str:
        """Why the peak after planning exceeds the most bytes of tensors live at once,
        in numbers ("" when it does not)."""
        extra = self.peak_bytes - self.tensor_peak_bytes
        if not self.planned or extra <= 0 or not self.peak_storages:
            return ""
        live: dict[str, int] = {}
        for t in self.peak_tensors:  # an output's alloc_tensor is its own storage
            block = t.storage if t.storage is not None else t.name
            live[block] = live.get(block, 0) + (t.bytes or 0)
        idle = sorted(self.peak_storages, key=lambda a: live.get(a.name, 0) - (a.bytes or 0))
        worst = [f"{a.name} {_fmt(a.bytes, a.size)} holding "
                 f"{_render.human_bytes(live.get(a.name, 0))}" for a in idle
                 if (a.bytes or 0) > live.get(a.name, 0)]
        shown = ", ".join(worst[:3]) + (f" and {len(worst) - 3} more" if len(worst) > 3 else "")
        return (f"why the peak rose: planning needs {_render.human_bytes(self.peak_bytes)} where "
                f"at most {_render.human_bytes(self.tensor_peak_bytes)} of tensors are live at "
                f"once (+{_render.human_bytes(extra)}): a storage is as big as the largest "
                "tensor it ever holds and stays live from its first to its last user, so at "
                f"the peak {shown}")

    def _live_line(self) -> list[str]:
        """"live at peak": exactly what adds up to the peak (storages after planning)."""
        if self.planned and self.peak_storages:
            inside: dict[str, list[str]] = {}
            for t in self.peak_tensors:
                inside.setdefault(t.storage or t.name, []).append(t.name)
            items = [f"{a.name} {_fmt(a.bytes, a.size)}" + (
                f" [holds {', '.join(inside[a.name])}]"
                if inside.get(a.name, [a.name]) != [a.name] else "")
                for a in self.peak_storages]
            what = f"{len(items)} storage{'s' if len(items) != 1 else ''}"
        elif self.peak_tensors:
            items = [f"{t.name} {_fmt(t.bytes, t.size)}" for t in self.peak_tensors]
            what = f"{len(items)} tensor{'s' if len(items) != 1 else ''}"
        else:
            return []
        return [f"live at peak ({what}, summing to the peak): " + ", ".join(items)]

    def _rows(self) -> tuple[list[str], list[list[Any]]]:
        # sizes and live ranges before the long kernel names, so that a narrow view
        # shows them and only the names need scrolling or wrapping
        head = ["tensor", "kind", "shape", "dtype", "bytes", "defined", "first", "last",
                "storage", "producer", "consumers"]
        multi = len(self.functions) > 1
        rows = [[t.name + (f" ({', '.join(t.aliases)})" if t.aliases else ""), t.kind,
                 t.shape_text, t.dtype, _fmt(t.bytes, t.size), t.defined,
                 "-" if t.first_use is None else t.first_use,
                 "-" if t.last_use is None else t.last_use, t.storage or "-",
                 t.producer or "-", ", ".join(t.consumers) or "-"]
                for t in self.tensors]
        if multi:
            head.insert(0, "function")
            for r, t in zip(rows, self.tensors):
                r.insert(0, t.function)
        return head, rows

    def _alloc_rows(self) -> tuple[list[str], list[list[Any]]]:
        head = ["allocation", "function", "op", "bytes", "binding", "live", "tensors"]
        rows = [[a.name, a.function, _ir.short_op(a.op), _fmt(a.bytes, a.size), a.binding,
                 "-" if a.first_use is None else f"{a.first_use}-{a.last_use}",
                 ", ".join(a.tensors)]
                for a in self.allocations + self.dynamic_allocations]
        return head, rows

    def to_text(self) -> str:
        """Summary lines, the tensor table and the allocation table."""
        out = self._summary() + ["", _render.text_table(*self._rows())]
        if self.allocations or self.dynamic_allocations:
            out += ["", _render.text_table(*self._alloc_rows())]
        return "\n".join(out)

    def to_html(self, plot: bool = False) -> str:
        """The same content as `to_text` as escaped HTML tables; `plot` puts the
        liveness picture (`plot`) between the summary and the tables."""
        lines = self._summary()
        out = [f'<div class="passlab-buffers"><p><b>{_render.esc(lines[0])}</b></p>']
        if plot:
            out[1:] = [f'<div class="passlab-note">{_render.esc(s)}</div>' for s in lines[1:]]
            # the summary above says what the picture's headline would
            out.append(replace(self.plot(), heading=False).to_html())
            lines = lines[:1]
        out += [f'<div class="passlab-note">{_render.esc(s)}</div>' for s in lines[1:]]
        peak = {t.name for t in self.peak_tensors}
        head, rows = _unbroken(*self._rows())
        classes = ["user" if t.name in peak else "" for t in self.tensors]
        # the kernels that make and use each tensor (the Explorer highlights them in
        # the graph when the row is clicked)
        attrs = [{"data-tensor": t.name, "data-function": t.function, "data-focus": json.dumps(
            [k for k in (t.producer, *t.consumers) if k])} for t in self.tensors]
        out.append(_render.html_table(head, rows, classes=classes, caption="tensors "
                                      "(highlighted: live at the peak)", attrs=attrs,
                                      wrap=_names(head)))
        if self.allocations or self.dynamic_allocations:
            head, rows = _unbroken(*self._alloc_rows())
            out.append(_render.html_table(head, rows, caption="allocations", wrap=_names(head)))
        return "".join(out) + "</div>"

    def to_dataframe(self, table: str = "tensors") -> Any:
        """`tensors` (default), `params` or `allocations` as a pandas DataFrame."""
        import pandas as pd

        items = {"tensors": self.tensors, "params": self.params,
                 "allocations": self.allocations + self.dynamic_allocations}
        if table not in items:
            raise ValueError(f"table must be one of {sorted(items)}, not {table!r}")
        return pd.DataFrame([dict(vars(x)) for x in items[table]])

    def plot(self, compare: BufferReport | None = None, *, function: str | None = None,
             names: tuple[str, str] | None = None) -> Any:
        """The liveness picture: one block per tensor (before planning) or per storage
        with its tensors inside (after planning), stacked over the bindings in program
        order; the envelope is the live bytes, the peak is marked.

        Parameters
        ----------
        compare : BufferReport, optional
            A second report (e.g. after StaticPlanBlockMemory) drawn below this one on the
            same x axis and byte scale, with allocation counts, totals, peaks and what
            planning saved.
        function : str, optional
            The Relax function to draw (default: the one with the peak).
        names : (str, str), optional
            Labels of the two reports (default: the passes they come from, else A and B).

        Returns
        -------
        BufferPlot
            Displays as an inline SVG in notebooks; `to_svg()`, `to_text()`.

        Examples
        --------
        >>> import passlab
        >>> r = buffers(passlab.models.mlp())
        >>> r.plot().to_svg().count('<g class="pb-block'), len(r.tensors)  # one block each
        (7, 7)
        """
        from passlab.analysis._buffer_plot import plot

        return plot(self, compare, function=function, names=names,
                    definitions=PEAK_DEFINITION)


def _names(head: list[str]) -> list[int]:
    """The columns of names (tensors, kernels, storages, functions) that may wrap at
    their token boundaries in HTML, so that a table fits a narrow pane."""
    return [k for k, h in enumerate(head) if h in (
        "tensor", "function", "shape", "storage", "producer", "consumers", "allocation",
        "op", "tensors")]


def _unbroken(head: list[str], rows: list[list[Any]]) -> tuple[list[str], list[list[Any]]]:
    """Sizes ("64.0 KiB", "256 * n B") kept on one line where a view lets cells wrap."""
    k = head.index("bytes")
    return head, [[*r[:k], str(r[k]).replace(" ", "\u00a0"), *r[k + 1:]] for r in rows]


def buffers(
    x: Any, function: str | None = None, bounds: Mapping[str, int] | None = None
) -> BufferReport:
    """List every intermediate tensor with its live range, and the liveness peak.

    Parameters
    ----------
    x : tvm.IRModule or Step
        The module to analyse (a Step's `.after` module).
    function : str, optional
        One Relax function; by default every Relax function of the module.
    bounds : mapping of str to int, optional
        Values for symbolic dimensions (`{"n": 128}`): sizes, peak and totals become
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
    source = str(getattr(x, "label", "") or getattr(x, "name", "") or "")
    key = (mod.__chandle__(), tuple(names), tuple(sorted((bounds or {}).items())))
    report = _REPORTS.get(key)
    if report is None:
        report = _REPORTS.put(key, mod, _buffers(mod, names, bounds, source))
    # the analysis is the module's; the label is the caller's (a step's, or none)
    return report if report.source == source else replace(report, source=source)


class _ReportCache:
    """LRU of buffer reports keyed by `(module address, functions, bounds)`.

    A report is immutable and a pure function of its module, so every view that shows the
    buffers after one pass (the pane, each kernel panel's links, a report's snapshots,
    the peak across the pipeline) shares one analysis, asked for by module or by step.
    An entry refers to its module weakly (the cache must not keep a closed Explorer's
    trace alive) and counts only while that module lives: a dead module's address may be
    reused by another, so its entry is dropped when looked up."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[tuple[Any, ...], tuple[weakref.ref[Any], BufferReport]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> BufferReport | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            if entry[0]() is None:  # its module is gone; the address means nothing now
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return entry[1]

    def put(self, key: tuple[Any, ...], mod: Any, report: BufferReport) -> BufferReport:
        with self._lock:
            self._data[key] = (weakref.ref(mod), report)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return report

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


#: Buffer reports kept: a view shows the buffers after a few passes at a time (the
#: Explorer's selection and its bounds, a report's key snapshots).
_REPORTS = _ReportCache(32)


def clear_cache() -> None:
    """Forget every cached buffer report (benchmarks measure a cold analysis with it)."""
    _REPORTS.clear()


def _buffers(mod: Any, names: list[str], bounds: dict[str, int] | None,
             source: str) -> BufferReport:
    walker = _ir.Walker(mod, bounds=bounds, inline_codegen=False)  # external memory
    walks = [walker.walk(n) for n in names]
    if bounds:
        known = sorted({s for w in walks for v in w.values for s in v.info.size.symbols})
        for key in bounds:
            if key not in known:
                from passlab.errors import unknown

                raise unknown("symbolic variable", key, known, "bounds names a dimension "
                              "that no analysed tensor has.")
    symbols = sorted({s for w in walks for v in w.values for s in v.info.size.symbols})
    return _report([_analyse(w, bounds or {}) for w in walks], names, bounds, source, symbols)


def _check_bounds(bounds: Mapping[str, int] | None) -> dict[str, int] | None:
    if bounds is None:
        return None
    if not isinstance(bounds, Mapping):
        raise TypeError(f"bounds must be a mapping like {{'n': 128}}, not {type(bounds).__name__}")
    for k, v in bounds.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise TypeError(f"bounds[{k!r}] must be a non-negative int, not {v!r}")
    return dict(bounds)


def _report(results: list[_Result], names: list[str], bounds: dict[str, int] | None,
            source: str = "", symbols: list[str] | None = None) -> BufferReport:
    best = max(results, key=lambda r: max(r.timeline), default=None)
    peak, index = 0, None
    peak_tensors: tuple[Tensor, ...] = ()
    peak_storages: tuple[Allocation, ...] = ()
    if best is not None and best.tensors:
        peak = max(best.timeline)
        index = best.timeline.index(peak)
        live = set(best.live_at(index))
        peak_tensors = tuple(t for t in best.tensors if t.name in live)
        peak_storages = _peak_storages(best, index)
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
        planned=best is not None and best.planned,
        storages=tuple(a for r in results for a in r.storages),
        peak_storages=peak_storages,
        binding_calls=tuple((r.walk.function, r.calls) for r in results),
        source=source,
        symbols=tuple(symbols or ()),
        tensor_peak_bytes=max((r.tensor_peak() for r in results), default=0),
    )


