"""Re-run a build from an edit: reuse the recorded snapshots up to the first changed pass.

A recorded build keeps the module before every pass. When a user edits the pipeline
late (inserts a pass after CallTIRRewrite, say), everything before the edit is the same
computation as before; `rerun` resumes from the snapshot just before the first pass
that differs and runs only the rest, TVM's TIR pipeline and codegen included.

This module also holds the two helpers the other research tools share: which recorded
step ran which pipeline entry (`pipeline_chain`), and a pipeline reduced to some
of its entries (`keep_only`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from passlab import _tvm
from passlab.errors import BuildError
from passlab.pipeline import PassEntry, Pipeline
from passlab.recording import numbering
from passlab.recording.build import Build, build
from passlab.recording.trace import Step, Trace

if TYPE_CHECKING:
    from passlab.research.compare import Comparison

__all__ = ["rerun", "Rerun", "pipeline_chain", "keep_only"]


# ---------------------------------------------------------------- shared helpers
def pipeline_chain(trace: Trace, pipeline: Pipeline) -> tuple[tuple[int, Step], ...]:
    """`(position, step)` for every pipeline entry the recorded build ran, in order
    (`passlab.recording.numbering.pipeline_chain`, which the views' one numbering
    of passes also uses)."""
    from passlab.recording.numbering import pipeline_chain as chain

    return chain(trace, pipeline)


def keep_only(pipeline: Pipeline, positions: Collection[int]) -> Pipeline:
    """`pipeline` with only the entries at `positions` (indices into
    `list(pipeline)`), stages kept so that traces still show stage boundaries."""
    keep, i, stages = set(positions), 0, []
    for stage in pipeline.stages:
        kept = []
        for entry in stage.passes:
            if i in keep:
                kept.append(entry)
            i += 1
        stages.append(dataclasses.replace(stage, passes=tuple(kept)))
    return dataclasses.replace(pipeline, stages=tuple(stages))


def _same_entry(a: PassEntry, b: PassEntry) -> bool:
    # TVM's own passes of one name are the same computation even when Pipeline.default
    # was called twice (new Pass objects); a user pass must be the very same object.
    if a.name != b.name or a.origin != b.origin:
        return False
    if a.origin == "tvm":
        return True
    if a.pass_ is b.pass_:
        return True
    return _tvm.is_pass(a.pass_) and _tvm.is_pass(b.pass_) and a.pass_.same_as(b.pass_)


# ------------------------------------------------------------------------ rerun
@dataclass(frozen=True)
class Rerun(Build):
    """A `Build` resumed from a recorded snapshot.

    `trace` covers only the re-run part (the remaining Relax passes, then TIR and codegen
    unless the kernels came out structurally identical, in which case the original's
    compiled library is reused: `trace.kernels_reused`);
    `pipeline` is the full new pipeline and `module` the original input, so
    `run()` and `inputs()` behave as for a full build. `resumed_step` is the step
    of the original trace whose `.before` was resumed from (None when every Relax pass
    was reused), `resumed_pass` the first pass that ran again and `resumed_position`
    its index in `list(pipeline)`; `reused` counts the recorded passes not run again.
    """

    original: Build | None = field(default=None, repr=False)
    resumed_position: int = 0
    resumed_pass: str | None = None
    resumed_step: Step | None = field(default=None, repr=False)
    snapshot: Any = field(default=None, repr=False)
    reused: int = 0

    @property
    def note(self) -> str:
        """Where the build resumed, e.g. "resumed at step #27 (before StaticPlanBlockMemory)
        with pass peek: reused 11 recorded passes, re-ran the rest in 0.18 s"."""
        step = self.resumed_step
        if self.reused == 0:
            where = "rebuilt from the input (nothing before the edit to reuse)"
        elif step is None:
            where = "resumed after the last Relax pass"
        else:
            where = f"resumed at step #{step.index} (before {step.label})"
        first = f" with pass {self.resumed_pass}" if self.resumed_pass else ""
        n = self.reused
        return (f"{where}{first}: reused {n} recorded pass{'es' if n != 1 else ''}, "
                f"re-ran the rest in {self.seconds:.2f} s")

    @cached_property
    def downstream(self) -> Comparison:
        """The original trace from the resume point (A) against the re-run (B)."""
        from passlab.research.compare import compare

        if self.original is None:
            raise ValueError("this Rerun has no original build to compare with")
        chain = [s for _, s in pipeline_chain(self.original.trace, self.original.pipeline)]
        if self.resumed_step is not None:
            start = self.resumed_step.index
        else:
            start = chain[-1].index + 1 if chain else 0
        tail = self.original.trace.filter(lambda s: s.index >= start)
        if self.trace.kernels_reused:  # identical kernels: the TIR part was not run again
            tail = tail.filter(lambda s: s.level != "tir")  # the codegen step is in both
        return compare(tail, self.trace, names=("original", "rerun"))

    def __repr__(self) -> str:
        return f"<Rerun: {self.note}>"


def rerun(original: Build, new_pipeline: Pipeline, *, reuse: Collection[Build] = (),
          progress: bool | Callable[[str, int], None] = False) -> Rerun:
    """Build with `new_pipeline`, reusing `original`'s snapshots up to the first pass
    that differs.

    The enabled entries of both pipelines are compared in order; the first position
    where they differ (a pass inserted, removed, replaced, disabled or enabled) is where
    the build resumes, from the recorded module before that pass. The result gives the
    same outputs as `passlab.build(original.module, new_pipeline)`.

    Parameters
    ----------
    original
        A recorded build (from `passlab.build`).
    new_pipeline
        The edited pipeline; a different target means a full rebuild.
    reuse
        Other earlier builds whose compiled kernels may be reused too (`original`'s
        always may): see `passlab.build`.
    progress
        As for `passlab.build`: the passes of the re-run part.

    Returns
    -------
    Rerun
        A Build whose trace covers the re-run part, with `.note` and `.downstream`
        (a `Comparison` with the original).

    Examples
    --------
    >>> import passlab
    >>> from passlab.research import rerun
    >>> b = passlab.build(passlab.models.mlp())
    >>> r = rerun(b, b.pipeline.insert(lambda mod: mod, after="CallTIRRewrite", name="peek"))
    >>> r.resumed_pass, r.reused
    ('peek', 11)
    >>> r.downstream.only_in_b
    ('peek',)
    """
    if not isinstance(original, Build):
        raise TypeError(f"rerun() needs a passlab.Build (from passlab.build), not "
                        f"{type(original).__name__}")
    if not isinstance(new_pipeline, Pipeline):
        raise TypeError(f"new_pipeline must be a passlab.Pipeline, not {type(new_pipeline).__name__}")
    old_entries = list(original.pipeline)
    old_enabled = [i for i, e in enumerate(old_entries) if e.enabled]
    new_entries = list(new_pipeline)
    new_enabled = [i for i, e in enumerate(new_entries) if e.enabled]
    k = 0
    if _tvm.same_target(original.pipeline.target, new_pipeline.target):
        while (k < min(len(old_enabled), len(new_enabled))
               and _same_entry(old_entries[old_enabled[k]], new_entries[new_enabled[k]])):
            k += 1
    chain = [s for _, s in pipeline_chain(original.trace, original.pipeline)]
    if k < len(chain):
        step: Step | None = chain[k]
        snapshot = chain[k].before
    else:
        step = None
        snapshot = chain[-1].after if chain else original.module
    first = new_enabled[k] if k < len(new_enabled) else len(new_entries)
    rest = keep_only(new_pipeline, range(first, len(new_entries)))
    try:
        resumed = build(snapshot, rest, reuse=[original, *reuse], progress=progress)
    except BuildError as exc:  # its steps keep the whole pipeline's numbers too
        if exc.trace is not None:
            numbering.resumed(exc.trace, new_pipeline, first)
        raise
    numbering.resumed(resumed.trace, new_pipeline, first)
    return Rerun(
        original.module, new_pipeline, resumed.trace, resumed.executable, resumed.seconds,
        resumed._kernels, original=original, resumed_position=first,
        resumed_pass=new_entries[first].name if first < len(new_entries) else None,
        resumed_step=step, snapshot=snapshot, reused=min(k, len(chain)),
    )
