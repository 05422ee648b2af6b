"""What a backend takes: offloaded regions, coverage and host/accelerator traffic of a
partitioned Relax function.

`partitions` reads a snapshot after partitioning (`Codegen` functions made by
`MergeCompositeFunctions`, or `Composite` functions called directly) and reports:

* every operator call, on the host or in a region, with estimated FLOPs and bytes;
* each offloaded region (one `Codegen` function call): its composites, its operators,
  its inputs and outputs;
* the tensors that cross between host and accelerator, with their bytes;
* coverage per backend: share of operators, of FLOPs and of bytes it takes.

Estimates (per operator call): `matmul` 2·out·K (K the first input's last dimension);
`conv1d/2d/3d` 2·out·(weight elements / output channels); `conv*_transpose`
2·in·(weight elements / input channels); layout and view operators (reshape,
permute_dims, ...) 0; every other operator one FLOP per output element. Bytes: every
tensor read plus every tensor written. Sizes with symbolic dimensions count only when
`bounds` gives their values.

This module holds the entry points, `partitions` and `compare_backends` (with
its `BackendComparison`). The result types and their text/HTML/DataFrame forms live
in `passlab.analysis._partitions_report`; reading the IR and the estimates in
`passlab.analysis._partitions_scan`.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from passlab import _render
from passlab._sequence import NamedSequence
from passlab._tvm import ir as _ir
from passlab.analysis._partitions_report import (
    _COVERAGE_HEADER,
    HOST,
    Coverage,
    Crossing,
    OpCall,
    PartitionReport,
    Region,
    _coverage_row,
)
from passlab.analysis._partitions_scan import LAYOUT_OPS as LAYOUT_OPS
from passlab.analysis._partitions_scan import _Analysis, _is_offload
from passlab.analysis._partitions_scan import estimate_flops as estimate_flops

__all__ = ["partitions", "compare_backends", "PartitionReport", "Region", "OpCall",
           "Crossing", "Coverage", "BackendComparison"]


# --------------------------------------------------------------------------- analysis
def partitions(x: Any, function: str | None = None, *,
               bounds: Mapping[str, int] | None = None) -> PartitionReport:
    """Report what each backend takes in a partitioned Relax function.

    Parameters
    ----------
    x : tvm.IRModule, Step, Trace or Build
        A partitioned module, or a recorded step (its `after` module). A Trace (or a
        Build's trace) is read at the last step of its main chain that has offloaded
        regions (after the `after_partition` passes, before a host fallback).
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
    done = [s for s in trace if s.on_main_chain and s.after is not None]
    for step in reversed(done):
        if any(_is_offload(f) for _, f in step.after.functions_items()):
            return step
    if not done:
        raise ValueError("the trace has no finished pass to analyse")
    return done[-1]


# ------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class BackendComparison(NamedSequence[Any], _render.Displayable):
    """Partition reports of one model under several backends, side by side.

    Behaves like a sequence of `(backend name, PartitionReport)`; `cmp["tensorrt"]`
    is one report.
    """

    reports: tuple[tuple[str, PartitionReport], ...]

    # by position: a ``(name, report)`` pair; by backend name: the report
    def _items(self) -> tuple[tuple[str, PartitionReport], ...]:
        return self.reports

    def _by_name(self, name: str) -> PartitionReport:
        for backend, report in self.reports:
            if backend == name:
                return report
        from passlab.errors import unknown

        raise unknown("backend", name, [n for n, _ in self.reports])

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
        """`table`: "coverage" (one row per backend) or "ops" (one row per op type)."""
        import pandas as pd

        if table == "coverage":
            return pd.DataFrame([dict(self._coverage(n, r).__dict__, regions=len(r))
                                 for n, r in self.reports]).set_index("backend")
        if table == "ops":
            header, rows = self.op_rows()
            return pd.DataFrame(rows, columns=header).set_index("op").astype(int)
        from passlab.errors import unknown

        raise unknown("table", table, ("coverage", "ops"))

    def __repr__(self) -> str:
        return f"BackendComparison(backends={[n for n, _ in self.reports]})"


def compare_backends(model: Any, backends: Sequence[Any], target: Any = "llvm", *,
                     function: str | None = None,
                     bounds: Mapping[str, int] | None = None) -> BackendComparison:
    """Partition `model` with each backend (by `passlab.backend.preview`, so
    each backend's `before_partition`/`after_partition` passes run) and compare.

    Parameters
    ----------
    model
        An IRModule, TVMScript or built-in model name.
    backends
        `passlab.backend.Backend` objects or names of registered pattern sets.

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
