"""Numeric bisection: which pass first makes the model compute something else?

Every Relax pass of a recorded build leaves a module behind. `bisect` finishes each
of those modules with the rest of TVM's own lowering (the enabled TVM passes after that
point, so a user pass never runs twice and a wrong pass shows at its own position), runs
it on the same inputs, and compares the outputs with the unmodified default build.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab._progress import Bar, ProgressArg, bar
from passlab._sequence import NamedSequence
from passlab.errors import BuildError, UnknownNameError, unknown
from passlab.models import as_module
from passlab.pipeline import Pipeline
from passlab.recording.build import build
from passlab.recording.trace import Step
from passlab.research.rerun import keep_only, pipeline_chain

__all__ = ["bisect", "BisectReport", "BisectRow"]


@dataclass(frozen=True, eq=False)
class BisectRow:
    """One pass of the bisection: the module after `step`, finished and run.

    `status` is "ok", "bad" (outputs outside the tolerance) or "error" (the module could
    not be finished or run; `error` says why). `source` says where the outputs come
    from: "built" (the module after the pass, finished and run), "previous" (the pass
    left the module exactly as it was: the row above's outputs) or "reference" (every
    pass so far and every TVM pass still to run are the reference build's: its outputs).
    """

    position: int
    step: Step = field(repr=False)
    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    source: str = "built"
    error: str = ""

    @property
    def reused(self) -> bool:
        """True when the outputs were not computed for this row (see `source`)."""
        return self.source != "built"

    @property
    def name(self) -> str:
        return self.step.label

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __repr__(self) -> str:
        return f"BisectRow({self.name!r}, {self.status!r}, max_abs={self.max_abs!r})"


@dataclass(frozen=True)
class BisectReport(NamedSequence[BisectRow], _render.Displayable):
    """Per-pass numeric comparison with the default build; a sequence of
    `BisectRow`, indexed by position or pass name."""

    rows: tuple[BisectRow, ...]
    rtol: float
    atol: float
    reference: str = field(default="")

    def _items(self) -> tuple[BisectRow, ...]:
        return self.rows

    def _by_name(self, name: str) -> BisectRow:
        for r in self.rows:
            if name in (r.name, r.step.name):
                return r
        raise unknown("pass", name, [r.name for r in self.rows], extra="(in this bisection)")

    @property
    def first_bad(self) -> Step | None:
        """The first pass after which the outputs are wrong (or cannot be computed)."""
        return next((r.step for r in self.rows if not r.ok), None)

    # ---------------------------------------------------------------------- views
    def summary(self) -> str:
        bad = self.first_bad
        verdict = ("no bad pass" if bad is None else
                   f"first bad pass: {bad.label} (step #{bad.index}, stage {bad.stage})")
        return (f"Bisection of {len(self.rows)} Relax passes against {self.reference} "
                f"(rtol={self.rtol:g}, atol={self.atol:g}): {verdict}")

    def _table(self) -> tuple[list[str], list[list[str]], list[str]]:
        header = ["#", "step", "pass", "stage", "origin", "max abs", "max rel", "result"]
        rows, classes = [], []
        for r in self.rows:
            result = r.status + _SOURCES[r.source]
            if r.error:
                result += f": {r.error[:120]}"
            rows.append([str(r.position), str(r.step.index), r.name, r.step.stage,
                         r.step.origin, _num(r.max_abs), _num(r.max_rel), result])
            classes.append("" if r.ok else "failed")
        return header, rows, classes

    def to_text(self) -> str:
        header, rows, _ = self._table()
        return self.summary() + "\n" + _render.text_table(header, rows)

    def to_html(self) -> str:
        header, rows, classes = self._table()
        return _svg(self) + _render.html_table(header, rows, classes, caption=self.summary())

    def to_dataframe(self):
        import pandas as pd

        return pd.DataFrame([dict(position=r.position, step=r.step.index, pass_=r.name,
                                  stage=r.step.stage, origin=r.step.origin, max_abs=r.max_abs,
                                  max_rel=r.max_rel, status=r.status, source=r.source)
                             for r in self.rows]).rename(columns={"pass_": "pass"})


_SOURCES = {"built": "", "previous": " (same module as above)",
            "reference": " (same passes as the reference)"}


def _num(v: float | None) -> str:
    return "" if v is None else "0" if v == 0 else f"{v:.3g}"


# --------------------------------------------------------------------------- plot
_FLOOR = 1e-12


def _svg(report: BisectReport, bar: int = 16, height: int = 120) -> str:
    """Max abs error per pass as bars on a log scale, a line through them, the
    tolerance dashed."""
    vals = [r.max_abs for r in report.rows]
    finite = [v for v in vals if v is not None and math.isfinite(v)]
    top = math.log10(max([report.atol * 10, 1e-6] + finite))
    bottom = math.log10(_FLOOR)
    left, pad = 44, 8
    width = left + bar * max(len(vals), 1) + pad

    def y(v: float | None) -> float:
        if v is None or not math.isfinite(v):
            return pad
        frac = (math.log10(max(v, _FLOOR)) - bottom) / (top - bottom)
        return pad + (1 - frac) * (height - 2 * pad)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="passlab-bisect" width="{width}" '
             f'height="{height + 26}" font-family="monospace" font-size="9">',
             f'<text x="{left}" y="{height + 22}">max abs error per pass position (log scale; '
             f'dashed: atol)</text>']
    for dec in range(math.ceil(bottom), math.floor(top) + 1, 3):
        yy = y(10.0 ** dec)
        parts.append(f'<text x="2" y="{yy + 3:.1f}">1e{dec}</text><line x1="{left}" '
                     f'x2="{width - pad}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#8884"/>')
    points = []
    for i, (r, v) in enumerate(zip(report.rows, vals)):
        x, top_y = left + i * bar, y(v)
        color = "#2ea043" if r.ok else "#d73a49"
        label = f"#{r.position} {r.name}: {_num(v) or r.status}"
        parts.append(f'<rect x="{x + 2}" y="{top_y:.1f}" width="{bar - 4}" '
                     f'height="{max(height - pad - top_y, 1):.1f}" fill="{color}">'
                     f"<title>{_render.esc(label)}</title></rect>")
        points.append(f"{x + bar / 2:.1f},{top_y:.1f}")
        parts.append(f'<text x="{x + 2}" y="{height + 10}">{r.position}</text>')
    parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="#555"/>')
    ty = y(report.atol)
    parts.append(f'<line x1="{left}" x2="{width - pad}" y1="{ty:.1f}" y2="{ty:.1f}" '
                 f'stroke="#d73a49" stroke-dasharray="4 3"><title>atol {report.atol:g}'
                 f"</title></line></svg>")
    return "".join(parts)


# ------------------------------------------------------------------------ bisect
def _flat(result: Any) -> list:
    import numpy as np

    if isinstance(result, tuple):
        return [a for r in result for a in _flat(r)]
    return [np.asarray(result)]


def _errors(out: Any, ref: Any, rtol: float, atol: float) -> tuple[float, float, bool]:
    import numpy as np

    got, want = _flat(out), _flat(ref)
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        raise ValueError("the outputs have another structure or shape than the reference")
    abs_err = rel_err = 0.0
    ok = True
    for g, w in zip(got, want):
        if g.size == 0:
            continue
        g64, w64 = g.astype("float64"), w.astype("float64")
        d = np.abs(g64 - w64)
        d = np.where(np.isnan(g64) & np.isnan(w64), 0.0, d)
        abs_err = max(abs_err, float(np.max(d)))
        rel_err = max(rel_err, float(np.max(d / np.maximum(np.abs(w64), 1e-30))))
        ok = ok and bool(np.all(np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)))
    return abs_err, rel_err, ok


def _same_module(a: Any, b: Any) -> bool:
    # tensor content counts: a pass that only changes a constant changes the numbers
    return _tvm.structural_equal(a, b, tensor_content=True)


def bisect(mod: Any, pipeline: Pipeline, inputs: Sequence[Any] | None = None,
           rtol: float = 1e-5, atol: float = 1e-5, seed: int = 0,
           progress: ProgressArg = None) -> BisectReport:
    """Find the first pass after which `mod` computes something else.

    `mod` is built with `pipeline` while recording. For each Relax pass, the module
    after it is finished with the enabled TVM passes that follow it in `pipeline`
    (user passes do not run again), run, and compared with the unmodified default build
    of `mod` (`Pipeline.default(target, variant)` of the same target and variant).
    Rows need no build of their own when the pass left the module exactly as it was
    (the row above's outputs) or when every pass so far and every TVM pass still to run
    are the reference's, as before the first edit (the reference's outputs).

    Parameters
    ----------
    mod
        An IRModule, TVMScript source or a built-in model name.
    pipeline
        The pipeline to examine, usually the default with user passes.
    inputs
        Arguments of the entry function (inputs, then weights); missing ones are drawn
        once with `seed` (`passlab.Build.inputs`) and used for every run.
    rtol, atol
        A pass is "bad" when some output is not `numpy.isclose` to the reference.
    progress
        None (default): a progress bar of the steps checked in Jupyter or on a terminal;
        True: also when standard error is not a terminal; False: none.

    Returns
    -------
    BisectReport
        `.first_bad` (a Step or None), `.rows`, `to_text()`, `to_html()` (a plot
        and the table), `to_dataframe()`.

    Raises
    ------
    passlab.BuildError
        When the build with `pipeline` itself fails (its `.trace` says where). A
        module that cannot be finished or run later is a row with status "error".

    Examples
    --------
    >>> import passlab
    >>> from passlab.research import bisect
    >>> pipe = passlab.Pipeline.default("llvm").insert(lambda m: m, after="FuseTIR", name="noop")
    >>> report = bisect(passlab.models.mlp(), pipe)
    >>> report.first_bad is None, report["noop"].status
    (True, 'ok')
    """
    mod = as_module(mod)
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"pipeline must be a passlab.Pipeline, not {type(pipeline).__name__}")
    with bar(progress, total=None, desc="bisect", unit="step") as shown:
        shown.note("building with the pipeline")
        return _bisect(mod, pipeline, inputs, rtol, atol, seed, shown)


def _bisect(mod: Any, pipeline: Pipeline, inputs: Sequence[Any] | None, rtol: float,
            atol: float, seed: int, shown: Bar) -> BisectReport:
    recorded = build(mod, pipeline, progress=False)
    try:
        default = Pipeline.default(pipeline.target, pipeline.variant)
    except UnknownNameError:  # a variant of its own (a backend): compare with TVM's default
        default = Pipeline.default(pipeline.target)
    args = list(inputs or [])
    args += recorded.inputs(seed)[len(args):]
    shown.note("building the reference")
    reference_build = build(mod, default, progress=False)
    reference = reference_build.run(*args)
    chain = list(pipeline_chain(recorded.trace, pipeline))
    shown.set_total(len(chain))
    # rows whose kernels come out identical to an earlier build's reuse its library
    compiled: list[Any] = [recorded, reference_build]
    entries = list(pipeline)
    enabled = [i for i, e in enumerate(entries) if e.enabled]
    ref_names = [e.name for e in default if e.enabled]
    rows: list[BisectRow] = []
    prev: tuple[Step, Any] | None = None  # last row's step and outputs
    for j, (pos, step) in enumerate(chain):
        bad = sum(r.status != "ok" for r in rows)
        shown.goto(j, note=f"{step.name}" + (f", {bad} not ok so far" if bad else ""))
        if step.after is None:
            continue
        rest = [i for i in enabled[j + 1:] if entries[i].origin == "tvm"]
        done = [entries[i] for i in enabled[:j + 1]]
        if (all(e.origin == "tvm" for e in done) and [e.name for e in done] == ref_names[:j + 1]
                and [entries[i].name for i in rest] == ref_names[j + 1:]):
            # the very passes of the reference build, on the very modules: its outputs
            out, error, source = reference, "", "reference"
        elif (prev is not None and prev[1] is not None and prev[0].after.same_as(step.before)
                and _same_module(step.before, step.after)):
            out, error, source = prev[1], "", "previous"
        else:
            out, error, source = None, "", "built"
            try:
                row_build = build(step.after, keep_only(pipeline, rest), reuse=compiled,
                                  progress=False)
                if not row_build.trace.kernels_reused:
                    compiled.append(row_build)
                out = row_build.run(*args)
            except BuildError as exc:
                error = f"finishing the build failed: {str(exc).splitlines()[0]}"
            except Exception as exc:  # running the executable failed
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if out is None:
            rows.append(BisectRow(pos, step, "error", error=error))
        else:
            try:
                abs_err, rel_err, ok = _errors(out, reference, rtol, atol)
                rows.append(BisectRow(pos, step, "ok" if ok else "bad", abs_err, rel_err, source))
            except ValueError as exc:
                rows.append(BisectRow(pos, step, "error", source=source, error=str(exc)))
        prev = (step, out)
    shown.goto(len(chain), note=f"{sum(r.status != 'ok' for r in rows)} not ok")
    ref = f"the default {default.variant!r} build"
    return BisectReport(tuple(rows), rtol, atol, ref)
