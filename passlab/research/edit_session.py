"""Live pipeline editing, the model behind the Explorer's Edit pane: pending edits,
re-runs and their A/B results. No Jupyter, no HTML of the pane here
(`passlab.views.explorer_edit` draws it).

An `EditSession` holds the build being explored, the passes the user registered,
the edits waiting for "Run" and the `HistoryEntry` of every run. A run calls
`passlab.research.rerun` on the first full build (a re-run's trace covers only the
re-run part, so it cannot be resumed from), which reuses the recorded prefix up to the
first edited position; its `ABResult` compares outputs, kernels, liveness peak,
build time and run time (A and B timed in alternation) with the build it was edited from.

The edits themselves (`Edit`, by position in `list(pipeline)`)
are the pipeline's: `passlab.Pipeline.apply_edit`.

Examples
--------
>>> import passlab
>>> from passlab.research.edit_session import Edit, EditSession
>>> s = EditSession(passlab.build(passlab.models.mlp()))
>>> s.add(Edit("disable", s.pipeline.names.index("FoldConstant")))
>>> s.run().result.max_abs_diff
0.0
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from passlab import _render, _tvm
from passlab.errors import BuildError, first_line
from passlab.pipeline import Edit, PassEntry, Pipeline
from passlab.recording import numbering as _numbering
from passlab.recording.build import Build, max_abs_diff
from passlab.research._profile_plot import seconds_text
from passlab.research.profile import NOISY, paired_end_to_end
from passlab.research.rerun import Rerun, rerun

__all__ = ["Edit", "EditSession", "HistoryEntry", "ABResult", "RUN_REPEAT", "built_what"]


# ------------------------------------------------------------------------ results
def _last_relax(build: Build) -> Any:
    """The module the Relax pipeline ended with (what the executable runs)."""
    relax = [s for s in build.trace if s.on_main_chain and s.level == "relax"
             and s.after is not None]
    return relax[-1].after if relax else getattr(build, "snapshot", None)


def _measures(build: Build) -> dict[str, float | None]:
    """Kernels (PrimFuncs) and liveness peak of the last Relax module, and build time."""
    module = _last_relax(build)
    kernels = peak = None
    if module is not None:
        kernels = sum(1 for f in _tvm.functions(module).values() if _tvm.is_prim_func(f))
        try:
            from passlab.analysis.buffers import buffers

            peak = buffers(module).peak_bytes
        except Exception:  # noqa: BLE001 - a module buffers() cannot analyse: unknown
            peak = None
    return {"kernels": kernels, "peak": peak, "build time": build.seconds}


def _cell(name: str, value: float | None) -> str:
    if value is None:
        return "?"
    if name == "peak":
        return _render.human_bytes(int(value))
    if name == "run time":
        return seconds_text(value)
    return f"{value:.3f} s" if name == "build time" else str(int(value))


def built_what(build: Build) -> str:
    """What a build's `seconds` measured: "whole pipeline", or for a re-run the part it
    ran, e.g. "re-run from #5 FuseOps (4 recorded passes reused)"."""
    if not isinstance(build, Rerun) or build.reused == 0:
        return "whole pipeline"
    first = (f"#{build.resumed_position} {build.resumed_pass}" if build.resumed_pass
             else "the TIR stage")
    n = build.reused
    return f"re-run from {first} ({n} recorded pass{'es' if n != 1 else ''} reused)"


#: Repeats of the A/B run time (both entry functions in alternation, per repeat).
RUN_REPEAT = 5


@dataclass(frozen=True)
class ABResult(_render.Displayable):
    """A run against the build it was edited from (A) and its new build (B), or how it
    failed: `error` (the message), `failed_step` and the `reproducer` script."""

    a: str
    b: str
    measures: tuple[tuple[str, float | None, float | None], ...] = ()
    max_abs_diff: float | None = None
    max_abs_diff_original: float | None = None
    note: str = ""
    error: str = ""
    failed_step: str = ""
    reproducer: str = ""
    #: why the outputs of A and B were not compared ("" when they were): an edit that
    #: changes the entry function's signature (BundleModelParams, LiftTransformParams,
    #: LazyGetInput, LazySetOutput), or a run that failed
    not_compared: str = ""
    #: end-to-end run time of A's and B's entry functions (seconds per run, medians),
    #: timed in alternation on the same seeded inputs (``time_evaluator``, as
    #: ``Build.profile`` does); None where they could not be timed (``run_error``)
    run_s: tuple[float | None, float | None] = (None, None)
    #: the larger of the two spreads ((max - min) / median over the repeats)
    run_spread: float | None = None
    run_error: str = ""
    #: what each build time measured (:func:`built_what`): a whole build and a re-run's
    #: part are different work, so their difference is not shown
    built: tuple[str, str] = ("whole pipeline", "whole pipeline")

    @property
    def ok(self) -> bool:
        return not self.error

    def _rows(self) -> list[list[str]]:
        rows = [["outputs: max abs diff vs A", "", "",
                 "not compared" if self.not_compared else _num(self.max_abs_diff)]]
        if self.max_abs_diff_original is not None:
            rows.append(["outputs: max abs diff vs the original", "", "",
                         _num(self.max_abs_diff_original)])
        ra, rb = self.run_s
        if ra is not None or rb is not None or self.run_error:
            rows.append(["run time (end to end, per run)", _cell("run time", ra),
                         _cell("run time", rb), _run_change(ra, rb, self.run_spread)])
        like = self.built[0] == self.built[1]
        for name, a, b in self.measures:
            change = "" if a is None or b is None else (
                f"{b - a:+.3f} s" if name == "build time" else
                (_render.human_bytes(int(b - a)) if name == "peak" else f"{int(b - a):+d}"))
            if name == "peak" and change and not change.startswith("-"):
                change = "+" + change
            if name == "build time" and not like:
                change = "other work"  # a whole build against a re-run's part
            label = {"kernels": "number of kernels", "peak": "liveness peak",
                     "build time": "build time"}.get(name, name)
            rows.append([label, _cell(name, a), _cell(name, b), change])
        return rows

    def _notes(self) -> list[str]:
        out = [n for n in (self.not_compared and f"outputs not compared: {self.not_compared}",
                           self.note) if n]
        a, b = self.built
        out.append(f"Build time: A {a}, B {b}." + (
            "" if a == b else " Those are different work, so B - A is not shown; the "
            "run time compares like with like."))
        if self.run_error:
            out.append(f"run time not measured: {self.run_error}")
        elif self.run_s[0] is not None:
            out.append(f"Run time: median of {RUN_REPEAT} repeats of each entry function, "
                       "A and B in alternation on the same seeded inputs (time_evaluator)"
                       + ("" if self.run_spread is None else
                          f"; spread {self.run_spread:.0%}"
                          + (" (noisy: the difference may be noise)"
                             if self.run_spread > NOISY else "")) + ".")
        return out

    def to_text(self) -> str:
        head = f"A: {self.a}\nB: {self.b}"
        if not self.ok:
            return (f"{head}\nfailed at {self.failed_step}: {self.error}"
                    + (f"\n\nreproducer:\n{self.reproducer}" if self.reproducer else ""))
        table = _render.text_table(["", "A", "B", "B - A"], self._rows())
        return f"{head}\n{table}" + "".join(f"\n{n}" for n in self._notes())

    def to_html(self) -> str:
        head = (f'<div class="plx-ab-head">A: {html.escape(self.a)}<br>'
                f"B: {html.escape(self.b)}</div>")
        if not self.ok:
            repro = (f"<details open><summary>Reproducer (runs the failing pass alone)"
                     f"</summary><pre>{html.escape(self.reproducer)}</pre></details>"
                     if self.reproducer else "")
            return (f'<div class="plx-ab plx-ab-failed">{head}<div class="plx-warn">'
                    f"The edited build failed at {html.escape(self.failed_step)}: "
                    f"{html.escape(self.error)}. The previous run is kept.</div>{repro}</div>")
        rows = self._rows()
        table = _render.html_table(["", "A", "B", "B - A"], rows, [""] * len(rows),
                                   caption="A/B: the edited run against the build it was "
                                           "edited from")
        notes = self._notes()
        if self.not_compared:
            notes = notes[1:]
        note = "".join(f'<div class="plx-note">{html.escape(n)}</div>' for n in notes)
        if self.not_compared:
            note = (f'<div class="plx-warn plx-ab-uncompared">Outputs not compared: '
                    f"{html.escape(self.not_compared)}</div>{note}")
        return f'<div class="plx-ab">{head}{table}{note}</div>'


def _num(x: float | None) -> str:
    return "?" if x is None else f"{x:.3g}"


def _run_change(a: float | None, b: float | None, spread: float | None) -> str:
    if a is None or b is None:
        return ""
    d = b - a
    pct = f" ({d / a:+.1%})" if a > 0 else ""
    return ("+" if d >= 0 else "-") + seconds_text(abs(d)) + pct


@dataclass(frozen=True)
class HistoryEntry(_render.Displayable):
    """One run of the session: its `pipeline`, `build` (None when it failed) and the
    A/B `result` (None for the recorded build the session started from)."""

    pipeline: Pipeline
    build: Build | None = field(repr=False)
    result: ABResult | None = None
    label: str = ""
    error: BaseException | None = field(default=None, repr=False, compare=False)

    def __iter__(self):  # (pipeline, build, result), as the history promises
        return iter((self.pipeline, self.build, self.result))

    def to_text(self) -> str:
        return self.label + ("" if self.result is None else "\n" + self.result.to_text())

    def to_html(self) -> str:
        return (f"<div><b>{html.escape(self.label)}</b></div>"
                + ("" if self.result is None else self.result.to_html()))


# ------------------------------------------------------------------------ session
class EditSession:
    """The editing state of one Explorer (mutable: it is the widget's model).

    Parameters
    ----------
    build
        The recorded build to edit (a `Build`; a Rerun is edited from
        the full build it came from).
    """

    def __init__(self, build: Build):
        if not isinstance(build, Build):
            raise TypeError(f"editing needs a passlab.Build (from passlab.build), not "
                            f"{type(build).__name__}")
        base = build
        while isinstance(base, Rerun) and base.original is not None:
            base = base.original
        self.base = base
        self.registered: dict[str, Callable] = {}
        self.pending: tuple[Edit, ...] = ()
        self.history: tuple[HistoryEntry, ...] = (
            HistoryEntry(build.pipeline, build, None, "#0 the recorded build"),)
        self.shown = 0
        #: why the last edit from the front end was refused ("" when it was not)
        self.message = ""

    # -- what the user edits
    @property
    def current(self) -> HistoryEntry:
        """The entry shown in the Explorer, the one new edits start from."""
        return self.history[self.shown]

    @property
    def pipeline(self) -> Pipeline:
        """The shown entry's pipeline with the pending edits applied."""
        pipe = self.current.pipeline
        for e in self.pending:
            pipe = pipe.apply_edit(e, self.registered)
        return pipe

    def register(self, fn: Callable, name: str | None = None) -> str:
        """Offer `fn` (IRModule -> IRModule) to the insert control; returns its name."""
        if not callable(fn) or _tvm.is_pass(fn):
            raise TypeError("register_pass() takes a function IRModule -> IRModule, not "
                            f"{type(fn).__name__}; insert TVM passes by name")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise TypeError(f"register_pass(fn, name): name is the text the Edit pane "
                            f"offers the pass under, e.g. 'my_pass', not {name!r}")
        n = name or getattr(fn, "__name__", "") or type(fn).__name__
        if not isinstance(n, str) or not n.strip() or n == "<lambda>":
            n = "user_lambda"  # a callable object or a lambda: no usable __name__
        self.registered[n] = fn
        return n

    def add(self, edit: Edit) -> None:
        """Queue `edit` after checking it applies (else raise, queue unchanged)."""
        self.pipeline.apply_edit(edit, self.registered)
        self.pending = self.pending + (edit,)

    def set_pending(self, edits: list[Any]) -> tuple[Edit, ...]:
        """Replace the pending edits by `edits` (dicts from the front end, or Edits),
        keeping those that apply up to the first bad one; `message` says why that
        one was refused. Returns the edits kept."""
        self.pending, self.message = (), ""
        for d in edits:
            try:
                self.add(d if isinstance(d, Edit) else Edit.from_dict(d))
            except (ValueError, IndexError, TypeError, KeyError) as exc:
                self.message = f"edit refused: {exc}"
                break
        return self.pending

    def show(self, index: int) -> HistoryEntry:
        """Show history entry `index` (a run that built); pending edits are dropped."""
        if not 0 <= index < len(self.history) or self.history[index].build is None:
            ok = [str(i) for i, h in enumerate(self.history) if h.build is not None]
            raise IndexError(f"no build to show at history entry {index}; entries with a "
                             f"build: {', '.join(ok)}")
        self.shown, self.pending = index, ()
        return self.history[index]

    # -- running
    def run(self, pipeline: Pipeline | None = None) -> HistoryEntry:
        """Re-run with `pipeline` (default `pipeline`) from the first edit; the
        entry is added to the history and shown when it built."""
        new = self.pipeline if pipeline is None else pipeline
        if not isinstance(new, Pipeline):
            raise TypeError(f"edit() takes a passlab.Pipeline, not {type(new).__name__}")
        prev = self.current
        n = len(self.history)
        self.message = ""
        label = f"#{n} {_describe(prev.pipeline, new)}"
        a = prev.label
        try:
            built = rerun(self.base, new)
        except BuildError as exc:
            step = exc.step
            where = _numbering.ref(step, exc.trace) if step is not None else "code generation"
            cause = exc.original or exc
            entry = HistoryEntry(new, None, ABResult(
                a, label, error=f"{type(cause).__name__}: {first_line(cause)}", failed_step=where,
                reproducer=_reproducer_text(exc)), label + " (failed)", exc)
            self.history += (entry,)
            self.pending = ()
            return entry
        entry = HistoryEntry(new, built, _ab(prev, built, label, self.base), label)
        self.history += (entry,)
        self.shown, self.pending = n, ()
        return entry


def _describe(old: Pipeline, new: Pipeline) -> str:
    """What changed, e.g. "FoldConstant disabled, peek inserted after FuseOps"."""
    was: dict[tuple[str, str], list[PassEntry]] = {}
    for e in old:
        was.setdefault((e.name, e.origin), []).append(e)
    out = []
    for e in new:
        same = was.get((e.name, e.origin))
        before = same.pop(0) if same else None
        if before is None:
            out.append(f"{e.name} {e.note or 'added'}")
        elif before.enabled != e.enabled:
            out.append(f"{e.name} {'enabled' if e.enabled else 'disabled'}")
    out += [f"{name} removed" for (name, _), left in was.items() for _ in left]
    if not out and old.names != new.names:
        out.append("passes moved")
    return ", ".join(out[:4]) + (f" and {len(out) - 4} more" if len(out) > 4 else "") \
        or "same pipeline"


def _reproducer_text(exc: BuildError) -> str:
    try:
        from passlab.io.reproducer import reproducer

        return reproducer(exc).text
    except Exception as why:  # noqa: BLE001 - the failure itself still shows
        return f"# no reproducer: {first_line(why)}"


def _ab(prev: HistoryEntry, new: Build, label: str, original: Build) -> ABResult:
    a_build = prev.build
    assert a_build is not None  # only entries that built are shown
    ma, mb = _measures(a_build), _measures(new)
    diff = diff_orig = None
    why = _incomparable(a_build, new)
    with_original = a_build is not original and not _incomparable(original, new)
    try:
        if not why or with_original:
            out_b = new.run()
            diff = None if why else max_abs_diff(a_build.run(), out_b)
            diff_orig = max_abs_diff(original.run(), out_b) if with_original else None
    except Exception as exc:  # noqa: BLE001 - the run is kept; the result says why
        diff = diff_orig = None
        why = (f"running A and B on the same inputs failed "
               f"({type(exc).__name__}: {first_line(exc)})")
    run_s: tuple[float | None, float | None] = (None, None)
    spread, run_error = None, ""
    if _incomparable(a_build, new):
        run_error = "A and B take different inputs (see above)"
    else:
        try:
            ta, tb, spread = paired_end_to_end(a_build, new, repeat=RUN_REPEAT)
            run_s = (ta, tb)
        except Exception as exc:  # noqa: BLE001 - e.g. a GPU build without its device
            run_error = f"{type(exc).__name__}: {first_line(exc)}"
    return ABResult(prev.label, label, tuple((k, ma[k], mb[k]) for k in ma),
                    diff, diff_orig, new.note if isinstance(new, Rerun) else "",
                    not_compared=why, run_s=run_s, run_spread=spread, run_error=run_error,
                    built=(built_what(a_build), built_what(new)))


def _incomparable(a: Build, b: Build) -> str:
    """Why `a` and `b` cannot run on the same inputs ("" when they can): their entry
    functions differ in name, parameters or result."""
    try:
        ea, eb = a.entry, b.entry
        sa, sb = (_tvm.signature((_last_relax(x) or x.module)[e]) for x, e in ((a, ea), (b, eb)))
    except Exception as exc:  # noqa: BLE001 - no entry function to compare
        return f"the entry functions could not be read ({type(exc).__name__}: {first_line(exc)})"
    if ea == eb and sa == sb:
        return ""

    def shown(name: str, sig: tuple[tuple[str, str], ...]) -> str:
        return f"{name}({', '.join(n for n, _ in sig[:-1])}) -> {sig[-1][1]}"

    return (f"the edit changed the entry function's signature: A's is {shown(ea, sa)}, "
            f"B's is {shown(eb, sb)}, so they cannot run on the same inputs (passes such as "
            "BundleModelParams, LiftTransformParams, LazyGetInput and LazySetOutput change "
            "it; B's build and trace are kept in the history)")
