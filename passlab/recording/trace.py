"""Step and Trace: what a recorded build looks like, as immutable, sequence-like data.

A `Trace` is a tuple of `Step`, one per pass call, in the order the passes
started (pre-order, like TVM's `PassTimingInstrument`). Change sets are computed lazily,
on first access: object identity first (TVM shares unchanged functions), then a
per-function structural hash that skips tensor content, cached by object identity.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from passlab import _render, _tvm
from passlab._sequence import NamedSequence
from passlab._tvm.llvm import LLVM_STAGE
from passlab._tvm.tir import CODEGEN, TIR_OTHER, TIR_ROOT, TIR_STAGES
from passlab.errors import unknown

__all__ = ["Step", "Trace", "Changes", "Failure"]

#: Conveniences served by higher layers (``save``, ``dump``, ``reproducer``: :mod:`passlab.io`;
#: ``report`` (:meth:`Trace.write_report`): :mod:`passlab.views.report`; ``explain``, ``card_summary``:
#: :mod:`passlab.analysis.explain`; ``positions``, ``name_of``: the pipeline numbers of
#: :mod:`passlab.recording.numbering`, which imports this module), registered by
#: ``passlab/__init__.py`` so that this module never imports upwards or in a cycle.
_UPPER: dict[str, Callable[..., Any]] = {}

#: Step kinds. "pass": a pass of the coherent main chain (its ``after`` is, most of the
#: time, the next pass's ``before``); "container": a wrapper that only sequences passes
#: (the pipeline, its stages, TVM's ``sequential``); "inner": a pass run inside another
#: pass, whose modules may be partial or temporary (e.g. FoldConstant's TIR build).
KINDS = ("pass", "container", "inner")

#: Columns of :meth:`Trace.to_dataframe` (one row per step, from :meth:`Step.row`).
ROW_COLUMNS = ("index", "name", "stage", "depth", "kind", "origin", "ms", "changed",
               "added", "removed", "modified", "failed", "bindings_before", "bindings_after",
               "prim_funcs_before", "prim_funcs_after")


@dataclass(frozen=True)
class Changes:
    """Global functions a pass added, removed or modified (by name)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    attrs: bool = False  # module attributes changed

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified or self.attrs)

    @property
    def names(self) -> tuple[str, ...]:
        return self.added + self.removed + self.modified

    def summary(self) -> str:
        parts = []
        for sign, names in (("+", self.added), ("-", self.removed), ("~", self.modified)):
            if names:
                parts.append(f"{sign}{len(names)}")
        if self.attrs:
            parts.append("attrs")
        return " ".join(parts)


class _HashCache:
    """Per-function structural hashes and per-module counts for one trace, cached by
    object (see `passlab._tvm.ObjectCache`). Unchanged functions are the same
    objects from step to step, so each is hashed once per trace."""

    def __init__(self) -> None:
        self._hash = _tvm.ObjectCache(_tvm.function_hash)
        self.module_stats = _tvm.ObjectCache(_module_stats)
        """(Relax functions, Relax bindings, PrimFuncs) of a module (0s for None)."""
        self.functions = _tvm.ObjectCache(_tvm.functions)
        """`{name: function}` of a module: inner steps go back and forth between a few
        modules (FoldConstant's), so each is listed once (15,000 rows: 10 s -> ~1 s)."""
        self.owners: list[Callable[[], Trace | None]] = []
        """Weak references to the traces these steps belong to, the newest last (see
        `Step.owner`): a trace that adopts them and dies hands them back to the one
        before it, instead of leaving them without an owner."""

    def owner(self) -> Trace | None:
        """The newest living owner, or None."""
        for ref in reversed(self.owners):
            trace = ref()
            if trace is not None:
                return trace
        return None

    def adopt(self, trace: Trace) -> None:
        self.owners = [r for r in self.owners if r() is not None] + [weakref.ref(trace)]

    def __call__(self, func: Any) -> int:
        return self._hash(func)


def _module_stats(mod: Any) -> tuple[int, int, int]:
    fns = _tvm.functions(mod).values()
    relax_fns = [f for f in fns if _tvm.is_relax_function(f)]
    return (len(relax_fns), sum(_tvm.count_bindings(f) for f in relax_fns),
            sum(1 for f in fns if _tvm.is_prim_func(f)))


def _diff_functions(before: Any, after: Any, hash_of: _HashCache) -> Changes:
    if before is None or after is None or before.same_as(after):
        return Changes()
    fa, fb = hash_of.functions(before), hash_of.functions(after)
    added = tuple(n for n in fb if n not in fa)
    removed = tuple(n for n in fa if n not in fb)
    # One structural comparison per function that is not the same object: TVM's TIR
    # passes rebuild every PrimFunc, mostly into an equal copy (4,264 of Swin-T's 6,268
    # such pairs; 3,376 of them from the very same parts, which _tvm.structural_equal
    # answers without a walk), and an unequal pair stops at its first difference.
    # Hashing both sides instead walked every function whole.
    modified = tuple(name for name, f in fb.items()
                     if (g := fa.get(name)) is not None and not g.same_as(f)
                     and not _tvm.structural_equal(g, f))
    attrs = not _tvm.attrs_equal(before.attrs, after.attrs)
    return Changes(added, removed, modified, attrs)


@dataclass(frozen=True, eq=False)
class Step(_render.Displayable):
    """One pass call of a recorded build.

    `before` and `after` are the IRModules the pass received and returned (`after`
    is None when the pass failed). `depth` is the nesting depth (0 for a top-level
    pass), `parent` the index of the enclosing step, `stage` the pipeline stage
    ("legalize", ..., the TIR stages "s_tir", "tirx", "host_finalize",
    "device_finalize", "tir" for the steps TVM runs around them, "codegen" for the final
    step holding the generated code, "llvm" for LLVM's own passes nested under it;
    `level` groups them).
    """

    index: int
    name: str
    depth: int
    parent: int | None
    stage: str
    kind: str
    origin: str
    occurrence: int
    seconds: float | None
    before: Any = field(repr=False)
    after: Any = field(repr=False)
    failed: bool = False
    _hash: _HashCache = field(default_factory=_HashCache, repr=False)
    caught: bool = False
    """The pass failed and the code that called it (e.g. a user pass) caught the error
    and went on: `failed` is True, the build did not fail."""
    code: Any = field(default=None, repr=False)
    """For the final `codegen` step: what the target produced (a
    `passlab.recording.codegen.GeneratedCode`); None for passes."""
    llvm: Any = field(default=None, repr=False)
    """For a step of LLVM's own pipeline (level "llvm", recorded with
    `build(..., llvm_passes=True)`): what the pass changed, a
    `passlab.recording.llvm.LlvmChange` (functions, LLVM IR before and after, kernels);
    None for every other step. `before` and `after` are then the lowered TIR module,
    which LLVM does not change."""

    @property
    def level(self) -> str:
        """"relax" for the Relax pipeline's steps, "tir" for TVM's TIR pipeline (its
        stages s_tir, tirx, host_finalize, device_finalize, and the steps around them),
        "codegen" for the generated code, "llvm" for LLVM's passes inside code generation."""
        if self.stage == CODEGEN:
            return "codegen"
        if self.stage == LLVM_STAGE:
            return "llvm"
        return "tir" if self.stage == TIR_OTHER or self.stage in TIR_STAGES else "relax"

    @cached_property
    def functions_changed(self) -> Changes:
        """Which global functions this pass added, removed or modified (for an LLVM
        step: the generated functions, by symbol)."""
        if self.llvm is not None:
            return self.llvm.changes
        return _diff_functions(self.before, self.after, self._hash)

    @property
    def changes_known(self) -> bool:
        """Whether `functions_changed` is known without comparing a function: computed
        before, an LLVM step's, or a pass that failed or returned its module as it came."""
        if "functions_changed" in self.__dict__ or self.llvm is not None:
            return True
        before, after = self.before, self.after
        return before is None or after is None or before.same_as(after)

    def comparisons(self) -> int:
        """How many functions computing `functions_changed` still compares structurally:
        0 when the change set is known (`changes_known`), else the functions of `after`
        that are not the very object of that name in `before` (an upper bound: a copy
        rebuilt from the same parts needs no walk). A view that must answer quickly
        computes the cheap change sets first."""
        if self.changes_known:
            return 0
        fa, fb = self._hash.functions(self.before), self._hash.functions(self.after)
        return sum(1 for name, f in fb.items()
                   if (g := fa.get(name)) is not None and not g.same_as(f))

    @property
    def changed(self) -> bool:
        """True when the module after the pass differs from the module before it."""
        return bool(self.functions_changed)

    @property
    def inner(self) -> bool:
        """True for passes run inside another pass (partial or temporary modules)."""
        return self.kind == "inner"

    @property
    def on_main_chain(self) -> bool:
        """True for a pass of the main chain (`kind == "pass"`: the pipeline's own
        passes and TVM's TIR passes; see `Trace.main_chain`)."""
        return self.kind == "pass"

    @property
    def module(self) -> Any:
        """The step's module: the module after the pass, or the one it received when it
        failed (a failed pass has no `after`). Views and analyses of "this step" read it."""
        return self.before if self.after is None else self.after

    @property
    def label(self) -> str:
        return self.name if self.occurrence == 0 else f"{self.name}#{self.occurrence}"

    @property
    def owner(self) -> Trace | None:
        """The trace this step was recorded (or loaded) in, while that trace is alive;
        `passlab.reproducer(step)` takes the target and user passes from it."""
        return self._hash.owner()

    def explain(self) -> Any:
        """What this pass did here: an `Explanation`, one
        sentence with this step's real numbers, holding the pass's card as `.card`
        (what `passlab.explain` returns for the name: what the pass does in
        general). A user pass is explained by its own docstring.

        Examples
        --------
        >>> import passlab
        >>> step = passlab.build(passlab.models.mlp()).trace.find("FuseOps")
        >>> step.explain().sentence
        'FuseOps grouped 5 kernel calls into 2 fused functions (fused_matmul_add_relu, fused_matmul1_add1); 2 calls stay unfused.'
        """
        return _UPPER["explain"](self)

    def row(self) -> dict[str, Any]:
        """This step as one row of the per-pass table (see `ROW_COLUMNS`)."""
        ch = self.functions_changed
        stats = self._hash.module_stats
        _, bind_before, prim_before = stats(self.before) if self.before is not None else (0, 0, 0)
        _, bind_after, prim_after = stats(self.after) if self.after is not None else (0, 0, 0)
        return dict(
            index=self.index, name=self.name, stage=self.stage, depth=self.depth,
            kind=self.kind, origin=self.origin, ms=None if self.seconds is None else
            self.seconds * 1e3, changed=bool(ch), added=len(ch.added),
            removed=len(ch.removed), modified=len(ch.modified), failed=self.failed,
            bindings_before=bind_before, bindings_after=bind_after,
            prim_funcs_before=prim_before, prim_funcs_after=prim_after,
        )

    def to_text(self) -> str:
        ch = self.functions_changed
        t = (("failed (caught)" if self.caught else "failed") if self.failed
             else "not timed" if self.seconds is None
             else f"{self.seconds * 1e3:.2f} ms")
        # named as every view names it: its pipeline position ("#7 place_kernels"), the
        # trace index (``trace[21]``) after it
        owner = self.owner
        pos = None if owner is None else _UPPER["positions"](owner).get(self.index)
        head = self.label if pos is None else f"#{pos} {_UPPER['name_of'](self, owner)}"
        lines = [f"{head} (step {self.index}, stage {self.stage}, depth {self.depth}, "
                 f"{self.kind}, {self.origin}): {t}"]
        if not ch:
            lines.append("  no change")
        for sign, names in (("added", ch.added), ("removed", ch.removed), ("modified", ch.modified)):
            if names:
                lines.append(f"  {sign}: {', '.join(names)}")
        return "\n".join(lines)

    def to_html(self) -> str:
        ch = self.functions_changed
        rows = [[k, ", ".join(v) or "-"] for k, v in
                (("added", ch.added), ("removed", ch.removed), ("modified", ch.modified))]
        cap = self.to_text().splitlines()[0]
        return _render.html_table(["change", "functions"], rows, caption=cap)


@dataclass(frozen=True)
class Failure:
    """Where and why a build failed.

    `where` is "pass" (`step` is the failing pass, `enclosing` the passes around
    it, innermost last), "codegen" (every recorded pass had finished) or "setup" (no
    pass started: e.g. an instrument of the user's PassContext raised).
    """

    where: str
    message: str
    error_type: str
    step: Step | None = None
    enclosing: tuple[str, ...] = ()
    note: str = ""
    original: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def input(self) -> Any:
        """The module the failing pass received."""
        return None if self.step is None else self.step.before

    def to_text(self) -> str:
        if self.step is None and self.where == "setup":
            head = "build failed before its first pass"
        elif self.step is None:
            head = f"build failed in {self.where} after every recorded pass finished"
        else:
            chain = " > ".join(self.enclosing + (self.step.label,))
            head = f"pass {self.step.label!r} (step #{self.step.index}, in {chain}) failed"
        out = f"{head}: {self.error_type}: {self.message}"
        return out + (f"\n({self.note})" if self.note else "")


class Trace(NamedSequence[Step], _render.Displayable):
    """The recorded passes of a build: a read-only sequence of `Step`.

    Examples
    --------
    >>> import passlab
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> trace.find("FuseOps").changed
    True
    >>> len(trace.changed().main_chain()) < len(trace)
    True
    """

    __slots__ = ("__weakref__", "_meta", "_steps")

    def __init__(self, steps: Sequence[Step], meta: dict[str, Any] | None = None, *,
                 adopt: bool = False):
        self._steps = tuple(steps)
        self._meta = dict(meta or {})
        # A trace built from steps becomes their owner unless a living trace already is
        # (a copy made for a moment must not take them from the build's trace); the
        # recorder's own finishing steps (a failure, the codegen step, load notes) pass
        # adopt=True; when an adopting trace dies the steps fall back to the owner before
        # it. Filtered views (_sub) never own. Weak: a step never keeps a trace alive, and
        # no reference cycle is made.
        for cache in {id(s._hash): s._hash for s in self._steps}.values():
            if adopt or cache.owner() is None:
                cache.adopt(self)

    # ------------------------------------------------------------------- sequence
    # by position, slices (a Trace) and pass name (``trace["FuseOps#1"]`` is ``find``)
    def _items(self) -> tuple[Step, ...]:
        return self._steps

    def _by_name(self, name: str) -> Step:
        return self.find(name)

    def _slice(self, items: Sequence[Step]) -> Trace:
        return self._sub(items)

    def _sub(self, steps: Sequence[Step]) -> Trace:
        view = Trace.__new__(Trace)  # a view: its steps keep belonging to this trace
        view._steps, view._meta = tuple(steps), dict(self._meta)
        return view

    # ------------------------------------------------------------------- metadata
    @property
    def target(self) -> str | None:
        return self._meta.get("target")

    @property
    def pipeline(self) -> Any:
        """The `Pipeline` that was built, if any."""
        return self._meta.get("pipeline")

    @property
    def failure(self) -> Failure | None:
        """Where the build failed, or None."""
        return self._meta.get("failure")

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._meta.get("warnings", ()))

    @property
    def notes(self) -> tuple[str, ...]:
        """What a reader should know about how this trace was recorded."""
        return tuple(self._meta.get("notes", ()))

    @property
    def kernels_reused(self) -> bool:
        """True when the build reused an earlier build's compiled kernels, so that the TIR
        pipeline and codegen did not run (and are not in this trace)."""
        return bool(self._meta.get("kernels_reused", False))

    @property
    def versions(self) -> dict[str, str]:
        """Versions of TVM, tvm-ffi and passlab that recorded this trace."""
        return dict(self._meta.get("versions", {}))

    @property
    def input(self) -> Any:
        """The module the build started from."""
        return self._meta.get("input")

    @property
    def llvm_summary(self) -> Any:
        """How LLVM's own passes were recorded (a `passlab.recording.llvm.LlvmSummary`:
        options, pass runs, runs that changed something, runs per pass that changed
        nothing), or None when they were not (`build(..., llvm_passes=True)` records
        them)."""
        return self._meta.get("llvm")

    @property
    def code(self) -> Any:
        """What the target produced (a `passlab.recording.codegen.GeneratedCode`,
        from the final `codegen` step), or None (a failed build, `record`)."""
        return next((s.code for s in reversed(self._steps) if s.code is not None), None)

    # --------------------------------------------------------------- persistence
    def save(self, path: Any, *, weights: bool = True, progress: Any = None) -> Any:
        """Write the trace to one file (a zip archive, never a pickle) that
        `passlab.load_trace` reads back in any process, every snapshot included.
        Returns the path. Each tensor constant is stored once by content;
        `weights=False` keeps their shapes and data types but not their values (views,
        diffs and reports work the same; a reproducer draws seeded random values). A
        trace that would break a limit of `passlab.load_trace` is refused before
        anything is written, with the limit named. `progress`: a bar of the save's
        phases when it takes more than a second (as `passlab.build`'s).

        Examples
        --------
        >>> import os, tempfile, passlab
        >>> trace = passlab.build(passlab.models.mlp()).trace
        >>> path = trace.save(os.path.join(tempfile.mkdtemp(), "mlp.trace.zip"))
        >>> len(passlab.load_trace(path)) == len(trace)
        True
        """
        return _UPPER["save"](self, path, weights=weights, progress=progress)

    def dump(self, folder: Any, *, all_steps: bool = False, overwrite: bool = False) -> tuple:
        """Write numbered TVMScript files, one per changed pass, for diff tools
        (see `passlab.io.export_dump`: only an earlier dump's files are replaced;
        a folder holding other files needs `overwrite=True`)."""
        return _UPPER["dump"](self, folder, all_steps=all_steps, overwrite=overwrite)

    def reproducer(self, step: Step | None = None, *, module: str = "auto") -> Any:
        """A script that re-runs the failing pass (or `step`) on its recorded input
        (see `passlab.reproducer`)."""
        return _UPPER["reproducer"](self if step is None else step, self, module=module)

    # ------------------------------------------------------------------ filters
    def filter(self, predicate: Callable[[Step], bool]) -> Trace:
        """Steps for which `predicate(step)` is true."""
        return self._sub([s for s in self._steps if predicate(s)])

    def changed(self) -> Trace:
        """Steps that changed the module."""
        return self.filter(lambda s: s.changed)

    def main_chain(self) -> Trace:
        """The main chain: the pipeline's own passes and TVM's TIR passes, without
        wrappers and without passes run inside other passes (the steps whose
        `Step.on_main_chain` is true; one's `after` is, most of the time, the
        next one's `before`).

        Examples
        --------
        >>> trace = passlab.build(passlab.models.mlp()).trace
        >>> [s.name for s in trace.main_chain()][:2]
        ['DispatchSampling', 'DispatchSortScan']
        """
        return self.filter(lambda s: s.on_main_chain)

    def top_level(self) -> Trace:
        """The main chain (an alias of `main_chain`, kept for existing code)."""
        return self.main_chain()

    def stage(self, name: str) -> Trace:
        stages = tuple(dict.fromkeys(s.stage for s in self._steps))
        if name not in stages:
            raise unknown("stage", name, stages)
        return self.filter(lambda s: s.stage == name)

    def touching(self, function: str) -> Trace:
        """Steps that added, removed or modified the global function `function`."""
        return self.filter(lambda s: function in s.functions_changed.names)

    def user(self) -> Trace:
        """Steps of passes the user inserted."""
        return self.filter(lambda s: s.origin == "user")

    def llvm_steps(self, kernel: str | None = None) -> Trace:
        """LLVM's own passes that changed something (level "llvm", recorded with
        `build(..., llvm_passes=True)`), in the order LLVM ran them; with `kernel`
        (a TIR kernel's name), only those that changed its functions. Empty when LLVM's
        passes were not recorded.

        Examples
        --------
        >>> b = passlab.build(passlab.models.mlp(), llvm_passes=True)
        >>> len(b.trace.llvm_steps()) == b.trace.llvm_summary.changed
        True
        >>> b.trace.llvm_steps("fused_matmul_add_relu")[0].llvm.kernels
        ('fused_matmul_add_relu',)
        """
        steps = [s for s in self._steps if s.llvm is not None]
        if kernel is not None:
            code = self.code
            known = code.kernels if code is not None else ()
            if kernel not in known:
                raise unknown("kernel", kernel, known, extra="(the TIR kernels compiled)")
            steps = [s for s in steps if kernel in s.llvm.kernels]
        return self._sub(steps)

    # ------------------------------------------------------------------- lookup
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.name for s in self._steps))

    def find(self, name: str, occurrence: int = 0) -> Step:
        """The `occurrence`-th (0-based) step called `name`; `"Name#k"` works too."""
        if "#" in name and occurrence == 0:
            base, _, k = name.rpartition("#")
            if k.isdigit():
                name, occurrence = base, int(k)
        hits = [s for s in self._steps if s.name == name]
        if not hits:
            raise unknown("pass", name, self.names, extra="(in this trace)")
        if not -len(hits) <= occurrence < len(hits):
            raise IndexError(
                f"pass {name!r} ran {len(hits)} time(s) in this trace; occurrence must be "
                f"in 0..{len(hits) - 1}, not {occurrence}"
            )
        return hits[occurrence]

    def first(self, predicate: Callable[[Step], bool], *, top_level: bool = True) -> Step | None:
        """The first step for which `predicate(step)` is true (on the main chain by
        default), or None. Predicates usually look at `step.after`.

        Examples
        --------
        >>> trace = passlab.build(passlab.models.mlp()).trace
        >>> fused = lambda s: any(g.name_hint.startswith("fused_") for g in s.after.get_global_vars())
        >>> trace.first(fused).name
        'FuseOps'
        """
        for s in self._steps:
            if (s.on_main_chain or not top_level) and predicate(s):
                return s
        return None

    def find_all(self, name: str) -> Trace:
        if name not in self.names:
            raise unknown("pass", name, self.names, extra="(in this trace)")
        return self.filter(lambda s: s.name == name)

    def children(self, step: Step) -> Trace:
        return self.filter(lambda s: s.parent == step.index)

    # ------------------------------------------------------------------- views
    def to_dataframe(self, explain: bool = False):
        """One row per step (pandas DataFrame indexed by step index); `explain` adds a
        `summary` column: the one-sentence card of each pass (see `passlab.explain`)."""
        import pandas as pd

        columns = list(ROW_COLUMNS) + (["summary"] if explain else [])
        rows = [s.row() for s in self._steps]
        if explain:
            for r in rows:
                r["summary"] = _UPPER["card_summary"](r["name"])
        return pd.DataFrame(rows, columns=columns).set_index("index")

    def _table(self, all_steps: bool, explain: bool = False, pending: Collection[int] = ()
               ) -> tuple[list[str], list[list[str]], list[str], int]:
        steps = self._steps if all_steps else [s for s in self._steps if s.on_main_chain or s.failed]
        # "#": the pass's pipeline position, as every view numbers it (a trace recorded
        # without a pipeline has none); "step": its index in the trace (``trace[i]``)
        pos = _UPPER["positions"](self)
        header = (["#"] if pos else []) + ["step", "pass", "stage", "ms", "changed", "functions"] \
            + (["what it does"] if explain else [])
        rows, classes = [], []
        for s in steps:
            ch = None if s.index in pending else s.functions_changed
            ms = (("failed (caught)" if s.caught else "failed") if s.failed
                  else "" if s.seconds is None else f"{s.seconds * 1e3:.2f}")
            indent = "  " * s.depth if all_steps else ""
            n = pos.get(s.index)
            rows.append(([f"#{n}" if n is not None else ""] if pos else [])
                        + [str(s.index), indent + s.label, s.stage, ms]
                        + (["\u2026", "\u2026"] if ch is None else
                           ["yes" if ch else "", ch.summary()])
                        + ([_UPPER["card_summary"](s.name)] if explain else []))
            classes.append("failed" if s.failed else "user" if s.origin == "user"
                           else "inner" if s.kind == "inner" else "" if ch or ch is None
                           else "same")
        return header, rows, classes, len(self._steps) - len(steps)

    def summary(self) -> str:
        total = sum(s.seconds or 0 for s in self._steps if s.depth == 0)
        n_main = sum(s.on_main_chain for s in self._steps)
        out = (f"Trace of {len(self)} pass calls ({n_main} in the main chain), "
               f"target {self.target}, {total:.3f} s in top-level passes")
        for note in self.notes:
            out += f"\nnote: {note}"
        if self.warnings:
            more = len(self.warnings) - 1
            out += f"\nwarning: {self.warnings[0]}" + (
                f" (and {more} more in .warnings)" if more else "")
        if self.failure is not None:
            out += "\nFAILED: " + self.failure.to_text()
        return out

    def to_text(self, all_steps: bool = False, explain: bool = False, *,
                pending: Collection[int] = ()) -> str:
        """The pass table; `explain` adds what each pass does (its card's summary).
        `pending`: indices of steps whose change columns read "…", their change sets not
        computed (the Explorer's text form, while it still computes them)."""
        header, rows, _, hidden = self._table(all_steps, explain, frozenset(pending))
        out = self.summary() + "\n" + _render.text_table(header, rows)
        if hidden:
            out += f"\n({hidden} wrapper and inner steps hidden: to_text(all_steps=True) shows them)"
        return out

    def write_report(self, path: Any, *, title: str | None = None, full: bool = False,
                     profile: Any = None, **kwargs: Any) -> Any:
        """Write the static, offline HTML report of this trace to `path` and return the
        path (see `passlab.views.report.write_report` for `title`, `full` and
        `max_functions`; `profile`, a `build.profile()`, adds its "Run time"
        section).

        Examples
        --------
        >>> import os, tempfile, passlab
        >>> trace = passlab.build(passlab.models.mlp()).trace
        >>> trace.write_report(os.path.join(tempfile.mkdtemp(), "report.html")).name
        'report.html'
        """
        return _UPPER["report"](self, path, title=title, full=full, profile=profile, **kwargs)

    def to_html(self, path: Any = None, all_steps: bool = False, explain: bool = False,
                profile: Any = None) -> str:
        """The pass table as HTML (`explain`: with each pass's card summary).

        `to_html(path)` writing the report is deprecated: use `write_report`
        (it still writes the report and returns the path, with a `DeprecationWarning`).
        """
        if path is not None:
            warnings.warn("Trace.to_html(path) is deprecated: use Trace.write_report(path) to "
                          "write the report (to_html() returns the pass table's HTML)",
                          DeprecationWarning, stacklevel=2)
            return self.write_report(path, profile=profile)
        header, rows, classes, hidden = self._table(all_steps, explain)
        note = f"{hidden} wrapper and inner steps hidden" if hidden else ""
        return _render.html_table(header, rows, classes, caption=self.summary()) + (
            f'<div class="passlab-note">{_render.esc(note)}</div>' if note else "")

    def __repr__(self) -> str:
        fail = ", FAILED" if self.failure is not None else ""
        return f"<Trace: {len(self)} steps, target {self.target}{fail}>"


def from_events(events: Sequence[Any], meta: dict[str, Any], root: str | None = None,
                stage_names: Sequence[str] = (), user_names: Sequence[str] = ()) -> Trace:
    """Turn a recorder's raw events into a Trace (see `passlab.recording.recorder`)."""
    stage_set, users = set(stage_names), set(user_names)
    hash_cache = _HashCache()
    # the pipeline's Relax pass and its TIR pipeline pass hold the stage Sequentials;
    # TVM runs the TIR finalize stages at the top level, after the host/device split
    roots = {root, TIR_ROOT} if root else set()
    containers = _tvm.CONTAINER_NAMES | roots
    steps: list[Step] = []
    seen: dict[str, int] = {}
    in_tir = False
    for i, ev in enumerate(events):
        parent = steps[ev.parent] if ev.parent is not None else None
        stage_start = ev.name in stage_set and (
            parent.name in roots if parent is not None else in_tir)
        if parent is None:
            in_tir = in_tir or ev.name in ("tirx.BindTarget", TIR_ROOT)
            stage = ev.name if stage_start else "tir" if in_tir else "relax"
        elif stage_start:
            stage = ev.name
        else:
            stage = parent.stage
        under_containers = parent is None or parent.kind == "container"
        is_container = ev.name in containers or stage_start
        kind = ("container" if is_container else "pass") if under_containers else "inner"
        origin = "user" if kind == "pass" and ev.name in users and stage in stage_set else "tvm"
        occ = seen.get(ev.name, 0)
        seen[ev.name] = occ + 1
        failed = ev.end is None
        steps.append(Step(
            i, ev.name, ev.depth, ev.parent, stage, kind, origin, occ,
            None if failed else ev.end - ev.start, ev.before, ev.after, failed, hash_cache,
            caught=bool(getattr(ev, "caught", False)),
        ))
    return Trace(steps, meta)
