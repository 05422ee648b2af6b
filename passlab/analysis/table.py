"""The per-pass table: one row per pass with what it changed and what it cost.

`Trace.to_dataframe()` gives the cheap columns (time, change sets, Relax bindings and
PrimFunc counts before/after). `pass_table` adds the ones that need printing or an
analysis, computed once per distinct module: IR lines after the pass and the estimated
peak of temporary memory (`passlab.buffers`) where it can be computed. Its text and
HTML forms hide passes that changed nothing by default, like Compiler Explorer's
"hide inactive passes", except user passes: a user pass that changed nothing is listed,
marked "no change". Passes are named by `Step.label` (`tirx.Filter#1` for the
second call of `tirx.Filter`), as in every other view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab._sequence import NamedSequence
from passlab.recording.trace import Trace

__all__ = ["pass_table", "PassTable"]

_EXTRA = ("label", "ir_lines", "peak_bytes", "peak_exact")


@dataclass(frozen=True)
class PassTable(NamedSequence[dict[str, Any]], _render.Displayable):
    """Rows of the per-pass table (dicts with the columns of `Trace.to_dataframe()`
    plus `label`, `ir_lines`, `peak_bytes` and `peak_exact`)."""

    rows: tuple[dict[str, Any], ...]
    title: str = ""
    notes: tuple[str, ...] = field(default=())

    def _items(self) -> tuple[dict[str, Any], ...]:
        return self.rows

    def to_dataframe(self):
        import pandas as pd

        from passlab.recording.trace import ROW_COLUMNS

        return pd.DataFrame(list(self.rows), columns=list(ROW_COLUMNS + _EXTRA)).set_index("index")

    def _table(self, changed_only: bool) -> tuple[list[str], list[list[str]], list[str], int]:
        header = ["#", "pass", "stage", "ms", "functions", "bindings", "PrimFuncs", "IR lines",
                  "peak temp"]
        rows = [r for r in self.rows if not changed_only or _listed(r)]
        body, classes = [], []
        for r in rows:
            ch = "+{added} -{removed} ~{modified}".format(**r) if r["changed"] else "no change"
            peak = "" if r["peak_bytes"] is None else \
                ("" if r["peak_exact"] else ">=") + _render.human_bytes(r["peak_bytes"])
            body.append([str(r["index"]), r["label"], r["stage"],
                         "failed" if r["ms"] is None else f"{r['ms']:.2f}", ch,
                         _arrow(r["bindings_before"], r["bindings_after"]),
                         _arrow(r["prim_funcs_before"], r["prim_funcs_after"]),
                         "" if r["ir_lines"] is None else str(r["ir_lines"]), peak])
            classes.append("failed" if r["failed"] else "user" if r["origin"] == "user"
                           else "" if r["changed"] else "same")
        return header, body, classes, len(self.rows) - len(rows)

    def to_text(self, changed_only: bool = True) -> str:
        header, body, _, hidden = self._table(changed_only)
        out = [self.title, _render.text_table(header, body)] if self.title else \
            [_render.text_table(header, body)]
        if hidden:
            out.append(f"({hidden} library passes that changed nothing hidden: "
                       "to_text(changed_only=False))")
        return "\n".join(out + [f"note: {n}" for n in self.notes])

    def plot(self, column: str = "peak") -> Any:
        """One numeric column over the main chain as a line, with stage bands and the
        passes that moved it labelled.

        Parameters
        ----------
        column : str
            `"peak"` (the liveness peak of temporaries, default), `"ms"`,
            `"ir_lines"`, `"bindings"`, `"kernels"` or any numeric column of
            `to_dataframe`.

        Returns
        -------
        ColumnPlot
            Displays as an inline SVG in notebooks; `to_svg(mark=step_index)`,
            `to_text()`, `moves()` (the passes that changed the value).

        Examples
        --------
        >>> import passlab
        >>> from passlab.analysis.table import pass_table
        >>> p = pass_table(passlab.build(passlab.models.mlp()).trace).plot("peak")
        >>> [name for _, name, _, _ in p.moves()]
        ['StaticPlanBlockMemory']
        """
        from passlab.analysis._column_plot import column_plot

        return column_plot(self.rows, column, self.title)

    def to_html(self, changed_only: bool = True) -> str:
        header, body, classes, hidden = self._table(changed_only)
        note = f"{hidden} library passes that changed nothing hidden" if hidden else ""
        notes = "".join(f'<div class="passlab-note">{_render.esc(n)}</div>'
                        for n in ([note] if note else []) + list(self.notes))
        return _render.html_table(header, body, classes, caption=self.title) + notes


def pass_table(trace: Trace, *, memory: bool = True, ir_lines: bool = True,
               all_steps: bool = False) -> PassTable:
    """The per-pass table of `trace` (main-chain passes unless `all_steps`).

    `memory` adds the liveness peak of temporaries after each Relax-level pass
    (`peak_exact` False when symbolic shapes make it a lower bound; None where no Relax
    function is left); `ir_lines` the TVMScript lines of the module after the pass.
    Both are computed once per distinct module.

    Examples
    --------
    >>> import passlab
    >>> from passlab.analysis.table import pass_table
    >>> t = pass_table(passlab.build(passlab.models.mlp()).trace)
    >>> row = next(r for r in t if r["name"] == "FuseTIR")
    >>> row["prim_funcs_before"], row["prim_funcs_after"], row["peak_bytes"]
    (7, 4, 2560)
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"pass_table() takes a passlab.Trace, not {type(trace).__name__}")
    steps = list(trace) if all_steps else [s for s in trace if s.on_main_chain or s.failed]
    # per module object: unchanged modules are shared between steps, so each is measured once
    peaks = _tvm.ObjectCache(_peak)
    lines = _tvm.ObjectCache(_lines)
    rows = []
    for s in steps:
        row = s.row()
        row["label"] = s.label
        mod = s.module
        measured = memory and mod is not None and s.level == "relax"
        row["peak_bytes"], row["peak_exact"] = peaks(mod) if measured else (None, True)
        row["ir_lines"] = lines(mod) if ir_lines and mod is not None else None
        rows.append(row)
    notes: tuple[str, ...] = ()
    if memory:
        notes = ("peak temp: liveness peak of intermediate tensors (passlab.buffers) of the "
                 "module after the pass; >= marks a lower bound (symbolic shapes)",)
    return PassTable(tuple(rows), trace.summary().split("\n")[0], notes)


def _listed(row: dict[str, Any]) -> bool:
    """Shown when passes that changed nothing are hidden: changed, failed, or a user pass
    (whose "no change" is news to its author)."""
    return bool(row["changed"] or row["failed"] or row["origin"] == "user")


def _peak(mod: Any) -> tuple[int | None, bool]:
    """The liveness peak of a Relax module and whether it is exact."""
    from passlab.analysis.buffers import buffers

    try:
        report = buffers(mod)
    except (ValueError, TypeError):  # no Relax function left, or nothing to measure
        return None, True
    return int(report.peak_bytes), bool(report.peak_exact)


def _lines(mod: Any) -> int:
    """TVMScript lines of the module's functions, each printed once (unchanged functions
    are shared between snapshots, and the printing cache knows them)."""
    from passlab._tvm.printing import function_text

    return sum(function_text(f, name).count("\n") + 1 for name, f in _tvm.functions(mod).items())


def _arrow(a: int, b: int) -> str:
    return str(a) if a == b else f"{a} -> {b}"
