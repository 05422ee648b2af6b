"""A/B pipelines: align two recorded builds pass by pass and say where they part.

The main chains of both traces are aligned on pass names (Relax passes with Relax
passes, TIR with TIR, by `difflib.SequenceMatcher`). At every matched point the
modules after the pass are compared function by function (object identity first, then
structural equality with free variables mapped and tensor bytes skipped), and
`diff(...)` shows the two modules side by side. Final deltas say what the difference
costs: kernels, temporary bytes, peak memory, build time, and the vector types in the
generated LLVM IR (what LLVM options such as `-vectorize-loops:bool=false` change: the
summary names the options each side was built with).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab._sequence import NamedSequence
from passlab.errors import unknown
from passlab.recording.build import Build
from passlab.recording.trace import Step, Trace

__all__ = ["compare", "Comparison", "Point", "Delta"]

#: Differing points whose IR diff is embedded in ``Comparison.to_html()``.
HTML_DIFFS = 3


@dataclass(frozen=True, eq=False)
class Point:
    """One row of the alignment: a pass in A, in B, or in both.

    `status` is "same" or "differs" (the modules after the pass, for a pass in both),
    "only in A" or "only in B". `functions` names the global functions that differ
    after a matched pass ("(module attrs)" when only the attributes do).
    """

    status: str
    a: Step | None = field(repr=False)
    b: Step | None = field(repr=False)
    functions: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        step = self.a if self.a is not None else self.b
        return step.label if step is not None else ""

    @property
    def stage(self) -> str:
        step = self.a if self.a is not None else self.b
        return step.stage if step is not None else ""

    def diff(self, **kwargs: Any):
        """`passlab.diff` of A's module against B's after this pass (matched points)."""
        if self.a is None or self.b is None:
            raise ValueError(f"{self.name!r} ran {self.status}: there is nothing to diff "
                             "it against; diff a pass that ran in both builds")
        from passlab.analysis.diff import diff

        return diff(self.a.after, self.b.after, **kwargs)

    def __repr__(self) -> str:
        return f"Point({self.name!r}, {self.status!r})"


@dataclass(frozen=True)
class Delta:
    """One final measure of A and B; `change` is B minus A (None if either is unknown)."""

    name: str
    a: float | None
    b: float | None
    unit: str = ""

    @property
    def change(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    def cells(self) -> list[str]:
        fmt = (lambda v: "?" if v is None else f"{v:.3f}") if self.unit == "s" else (
            lambda v: "?" if v is None else f"{int(v)}")
        c = self.change
        sign = "" if c is None else ("+" if c > 0 else "")
        return [self.name + (f" ({self.unit})" if self.unit else ""), fmt(self.a), fmt(self.b),
                "?" if c is None else sign + fmt(c)]


class Comparison(NamedSequence[Point], _render.Displayable):
    """Two recorded builds aligned pass by pass: a read-only sequence of `Point`.

    Index by position or by pass name (`comparison["FuseOps"]`).
    """

    __slots__ = ("deltas", "llvm_options", "names", "points")

    def __init__(self, points: Sequence[Point], deltas: Sequence[Delta],
                 names: tuple[str, str] = ("A", "B"),
                 llvm_options: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())):
        self.points = tuple(points)
        self.deltas = tuple(deltas)
        self.names = names
        #: the LLVM options (`Pipeline.llvm_options`) A and B were built with
        self.llvm_options = llvm_options

    def _items(self) -> tuple[Point, ...]:
        return self.points

    def _by_name(self, name: str) -> Point:
        for p in self.points:
            if name in (p.name, *(s.name for s in (p.a, p.b) if s is not None)):
                return p
        raise unknown("pass", name, [p.name for p in self.points], extra="(in this comparison)")

    # -------------------------------------------------------------------- summary
    @property
    def differing(self) -> tuple[Point, ...]:
        """Matched passes after which the modules differ."""
        return tuple(p for p in self.points if p.status == "differs")

    @property
    def only_in_a(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.points if p.status == "only in A")

    @property
    def only_in_b(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.points if p.status == "only in B")

    @property
    def first_difference(self) -> Point | None:
        """The first point that is not "same"."""
        return next((p for p in self.points if p.status != "same"), None)

    def delta(self, name: str) -> Delta:
        for d in self.deltas:
            if d.name == name:
                return d
        raise unknown("delta", name, [d.name for d in self.deltas])

    @property
    def identical(self) -> bool:
        """True when every pass matched, every module after it is the same, and kernels,
        bytes and peak memory agree (build time is ignored)."""
        return all(p.status == "same" for p in self.points) and all(
            d.a == d.b for d in self.deltas if d.unit != "s")

    def diff(self, key: int | str, **kwargs: Any):
        """The synchronized diff at a matched pass: A's module against B's after it."""
        return self[key].diff(**kwargs)

    # ---------------------------------------------------------------------- views
    def summary(self) -> str:
        a, b = self.names
        n_a = sum(p.a is not None for p in self.points)
        n_b = sum(p.b is not None for p in self.points)
        head = f"Comparison of {a} ({n_a} passes) and {b} ({n_b} passes): "
        if self.identical:
            return head + "identical"
        parts = [f"{len(self.only_in_a)} only in {a}", f"{len(self.only_in_b)} only in {b}",
                 f"{len(self.differing)} differ after the pass"]
        first = self.first_difference
        tail = f"; first difference at {first.name} ({first.status})" if first else ""
        if self.llvm_options[0] != self.llvm_options[1]:
            shown = [" ".join(o) or "none" for o in self.llvm_options]
            tail += f"; LLVM options: {a} {shown[0]}, {b} {shown[1]}"
        return head + ", ".join(parts) + tail

    def _table(self) -> tuple[list[str], list[list[str]], list[str]]:
        a, b = self.names
        status = {"only in A": f"only in {a}", "only in B": f"only in {b}"}
        header = [f"{a} #", f"{b} #", "pass", "stage", "status", "differing functions"]
        rows, classes = [], []
        for p in self.points:
            fns = ", ".join(p.functions[:6]) + (f", ... ({len(p.functions)})"
                                               if len(p.functions) > 6 else "")
            rows.append(["" if p.a is None else str(p.a.index), "" if p.b is None else
                         str(p.b.index), p.name, p.stage, status.get(p.status, p.status), fns])
            classes.append({"same": "same", "differs": "failed"}.get(p.status, "user"))
        return header, rows, classes

    def _delta_table(self) -> tuple[list[str], list[list[str]]]:
        a, b = self.names
        return ["measure", a, b, f"{b} - {a}"], [d.cells() for d in self.deltas]

    def to_text(self) -> str:
        header, rows, _ = self._table()
        dh, drows = self._delta_table()
        return "\n".join([self.summary(), _render.text_table(header, rows), "",
                          _render.text_table(dh, drows)])

    def to_html(self) -> str:
        header, rows, classes = self._table()
        dh, drows = self._delta_table()
        out = [_render.html_table(header, rows, classes, caption=self.summary()),
               _render.html_table(dh, drows, caption="final deltas")]
        for p in self.differing[:HTML_DIFFS]:
            out.append(f"<details><summary>diff after {_render.esc(p.name)} "
                       f"({_render.esc(self.names[0])} vs {_render.esc(self.names[1])})"
                       f"</summary>{p.diff().to_html()}</details>")
        return "".join(out)

    def to_dataframe(self):
        import pandas as pd

        a, b = self.names
        rows = [dict(pass_=p.name, stage=p.stage, status=p.status,
                     a_index=None if p.a is None else p.a.index,
                     b_index=None if p.b is None else p.b.index,
                     functions=", ".join(p.functions)) for p in self.points]
        df = pd.DataFrame(rows, columns=["pass_", "stage", "status", "a_index", "b_index",
                                         "functions"])
        df = df.astype({"a_index": "Int64", "b_index": "Int64"})  # missing steps stay <NA>
        return df.rename(columns={"pass_": "pass", "a_index": f"{a} #", "b_index": f"{b} #"})

    def __repr__(self) -> str:
        return f"<Comparison: {self.summary()}>"


# ----------------------------------------------------------------------- compare
class _Equal:
    """Function equality, cached per pair of function objects (unchanged functions are
    the same objects from step to step, so each pair is compared once)."""

    def __init__(self) -> None:
        self._equal = _tvm.ObjectCache(_tvm.structural_equal)

    def __call__(self, f: Any, g: Any) -> bool:
        return f.same_as(g) or bool(self._equal(f, g))

    def differing(self, ma: Any, mb: Any) -> tuple[str, ...]:
        """Global functions that differ between two modules (by name)."""
        if ma is None or mb is None:
            return () if ma is mb else ("(no module)",)
        if ma.same_as(mb):
            return ()
        fa, fb = _tvm.functions(ma), _tvm.functions(mb)
        out = sorted(set(fa) ^ set(fb))
        out += sorted(n for n in set(fa) & set(fb) if not self(fa[n], fb[n]))
        if not out and not _tvm.attrs_equal(ma.attrs, mb.attrs):
            out.append("(module attrs)")
        return tuple(out)


def _as_trace(x: Any, role: str) -> Trace:
    if isinstance(x, Build):
        return x.trace
    if isinstance(x, Trace):
        return x
    raise TypeError(f"compare() takes two Traces or Builds; {role} is a {type(x).__name__}")


def _align(a: list[Step], b: list[Step], equal: _Equal) -> list[Point]:
    out: list[Point] = []
    matcher = difflib.SequenceMatcher(None, [s.name for s in a], [s.name for s in b],
                                      autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for sa, sb in zip(a[i1:i2], b[j1:j2]):
                fns = equal.differing(sa.after, sb.after)
                out.append(Point("differs" if fns else "same", sa, sb, fns))
            continue
        out += [Point("only in A", s, None) for s in a[i1:i2]]
        out += [Point("only in B", None, s) for s in b[j1:j2]]
    return out


def _measures(trace: Trace) -> dict[str, float | None]:
    main = [s for s in trace if s.on_main_chain and s.after is not None]
    relax = [s for s in main if s.level == "relax"]
    last = relax[-1] if relax else (main[-1] if main else None)
    kernels = report = None
    if last is not None:
        kernels = sum(1 for f in _tvm.functions(last.after).values() if _tvm.is_prim_func(f))
        try:
            from passlab.analysis.buffers import buffers

            report = buffers(last.after)
        except Exception:  # a module buffers() cannot analyse: the delta is unknown
            report = None
    code = trace.code
    vectors = None
    if code is not None and "llvm" in code.kinds:
        from passlab._tvm.llvm import vector_types

        vectors = sum(vector_types(code.text("llvm")).values())
    return {"kernels": kernels,
            "bytes": None if report is None else report.total_bytes,
            "peak": None if report is None else report.peak_bytes,
            "vector types": vectors,
            "build time": sum(s.seconds or 0.0 for s in trace if s.depth == 0)}


def compare(a: Trace | Build, b: Trace | Build, *,
            names: tuple[str, str] = ("A", "B")) -> Comparison:
    """Align two recorded builds pass by pass and compare the modules at every match.

    Parameters
    ----------
    a, b
        Traces (or Builds) of two pipelines, usually of the same model.
    names
        How the two sides are called in tables ("A", "B" by default).

    Returns
    -------
    Comparison
        Rows "same", "differs", "only in A", "only in B"; `.identical`;
        `.diff(pass)` for the synchronized IR diff; `.deltas`: kernels (PrimFuncs),
        bytes (`buffers(...).total_bytes`) and peak bytes at the last Relax pass, the
        vector types written in the generated LLVM IR, and build time (seconds of
        top-level steps); `.llvm_options`: each side's LLVM options.

    Examples
    --------
    >>> import passlab
    >>> from passlab.research import compare
    >>> fused = passlab.build(passlab.models.mlp())
    >>> plain = passlab.build(passlab.models.mlp(), "build")
    >>> c = compare(fused, plain)
    >>> c.only_in_a
    ('AnnotateTIROpPattern', 'FoldConstant', 'FuseOps', 'FuseTIR')
    >>> c.delta("kernels").change
    3
    """
    ta, tb = _as_trace(a, "a"), _as_trace(b, "b")
    equal = _Equal()
    points: list[Point] = []
    for tir in (False, True):
        sa = [s for s in ta if s.on_main_chain and (s.level != "relax") == tir]
        sb = [s for s in tb if s.on_main_chain and (s.level != "relax") == tir]
        points += _align(sa, sb, equal)
    ma, mb = _measures(ta), _measures(tb)
    units = {"build time": "s"}
    deltas = [Delta(k, ma[k], mb[k], units.get(k, "B" if k in ("bytes", "peak") else ""))
              for k in ma]
    options = tuple(tuple(getattr(t.pipeline, "llvm_opts", ()) or ()) for t in (ta, tb))
    return Comparison(points, deltas, tuple(names), options)  # type: ignore[arg-type]
