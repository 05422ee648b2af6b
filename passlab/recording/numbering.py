"""One number per pass in every pane: its position in the pipeline (`list(pipeline)`,
disabled entries counted, as `passlab.Pipeline.position` and the Edit pane count),
not the step index (which counts wrappers and inner passes, and moves with every edit).
The step index goes in a tooltip. A step that is no pipeline entry (an inner pass,
TVM's own `tirx.BindTarget`) has no number: it is named by its label and step.

A name gets its occurrence suffix ("DeadCodeElimination#1") only where two rows of the
main chain share it: a pass inserted by an edit is "DeadCodeElimination", not "#2".
"""

from __future__ import annotations

import weakref
from typing import Any

from passlab.pipeline import ROOT_NAME
from passlab.recording.trace import Step, Trace

__all__ = ["pipeline_chain", "resumed", "positions", "disabled_entries", "name_of", "ref", "ref_title"]


def pipeline_chain(trace: Trace, pipeline: Any) -> tuple[tuple[int, Step], ...]:
    """`(position, step)` for every pipeline entry the recorded build ran, in order.

    `position` indexes `list(pipeline)` (disabled entries included). The steps are
    the direct children of the stage wrappers, so a user pass that is itself a TVM
    `Sequential` counts once. A failed build gives the entries run so far; a trace
    that does not follow `pipeline` is a `ValueError`.
    """
    by_index = {s.index: s for s in trace}
    stages = set(pipeline.stage_names)

    def is_stage(i: int | None) -> bool:
        p = by_index.get(i) if i is not None else None
        if p is None or p.kind != "container" or p.name not in stages:
            return False
        root = by_index.get(p.parent) if p.parent is not None else None
        return root is not None and root.name == ROOT_NAME

    steps = [s for s in trace if is_stage(s.parent)]
    enabled = [i for i, e in enumerate(pipeline) if e.enabled]
    entries = list(pipeline)
    for (pos, step) in zip(enabled, steps):
        if entries[pos].name != step.name:
            raise ValueError(
                f"the trace does not follow the pipeline: step #{step.index} ran "
                f"{step.name!r} where the pipeline's enabled entry {pos} is "
                f"{entries[pos].name!r}; record the trace with this pipeline")
    return tuple(zip(enabled, steps))

_CACHE: weakref.WeakKeyDictionary[Any, tuple[int, dict[int, int], dict[str, int]]] = (
    weakref.WeakKeyDictionary())
#: A re-run's trace holds only the passes from its first edit (``passlab.rerun`` builds
#: the tail of the pipeline): its own pipeline's position p is the whole pipeline's
#: p + offset. The re-run says so here (:func:`resumed`), so the list keeps the numbers
#: the Edit pane shows instead of starting again at 0.
_RESUMED: weakref.WeakKeyDictionary[Any, tuple[Any, int]] = weakref.WeakKeyDictionary()


def resumed(trace: Trace, pipeline: Any, offset: int) -> None:
    """Record that `trace` ran `pipeline`'s entries from position `offset` on."""
    try:
        _RESUMED[trace] = (pipeline, offset)
    except TypeError:  # not weakly referable: numbered from 0
        pass
    _CACHE.pop(trace, None)


def _pipeline(trace: Trace) -> tuple[Any, int]:
    """The whole pipeline `trace` numbers against, and its own pipeline's offset in it."""
    hit = _RESUMED.get(trace)
    return hit if hit is not None else (getattr(trace, "pipeline", None), 0)


def _facts(trace: Trace) -> tuple[dict[int, int], dict[str, int]]:
    """(step index -> pipeline position, name -> how many main-chain steps bear it),
    computed once per trace (and again when it grows)."""
    hit = _CACHE.get(trace)
    if hit is not None and hit[0] == len(trace):
        return hit[1], hit[2]
    pos: dict[int, int] = {}
    pipeline = getattr(trace, "pipeline", None)
    offset = _pipeline(trace)[1]
    if pipeline is not None:
        try:
            pos = {s.index: p + offset for p, s in pipeline_chain(trace, pipeline)}
        except ValueError:  # a trace recorded without this pipeline: no numbers
            pos = {}
        if pos:
            pos.update(_tir_positions(trace, pipeline, offset, pos))
    counts: dict[str, int] = {}
    for s in trace:
        if s.on_main_chain or s.failed:
            counts[s.name] = counts.get(s.name, 0) + 1
    try:
        _CACHE[trace] = (len(trace), pos, counts)
    except TypeError:  # not weakly referable: recompute next time
        pass
    return pos, counts


def _tir_positions(trace: Trace, pipeline: Any, offset: int, known: dict[int, int]
                   ) -> dict[int, int]:
    """The TIR stages' entries: TVM runs them inside `relax.build`, not under passlab's
    stage wrappers, so they are matched in order to the main-chain steps after the last
    Relax one, by stage and name (a step TVM adds, as tirx.BindTarget, matches none)."""
    last = max(known)
    steps = [s for s in trace if s.index > last and s.on_main_chain]
    out: dict[int, int] = {}
    taken, stages = set(known.values()), {s.stage for s in steps}
    k, p = 0, 0
    for stage in pipeline.all_stages:
        for e in stage.passes:
            if e.enabled and p + offset not in taken and stage.name in stages:
                j = next((j for j in range(k, len(steps)) if steps[j].name == e.name
                          and steps[j].stage == stage.name), None)
                if j is not None:
                    out[steps[j].index] = p + offset
                    k = j + 1
            p += 1
    return out


def positions(trace: Trace) -> dict[int, int]:
    """Step index -> pipeline position, for every step that ran a pipeline entry."""
    return _facts(trace)[0]


def disabled_entries(trace: Trace) -> list[tuple[int, str, str]]:
    """`(position, stage, name)` of the pipeline's disabled entries (they did not run,
    so they have no step; the pass list shows them greyed)."""
    pipeline = _pipeline(trace)[0]  # a re-run's: the whole pipeline, from position 0
    if pipeline is None:
        return []
    out, pos = [], 0
    for stage in pipeline.all_stages:
        for e in stage.passes:
            if not e.enabled:
                out.append((pos, stage.name, e.name))
            pos += 1
    return out


def name_of(step: Step, trace: Trace | None = None) -> str:
    """The step's name, with its occurrence suffix only when another main-chain step has
    the same name (an inner pass keeps its label: it often shares a main pass's name)."""
    trace = trace if trace is not None else step.owner
    if trace is None or not (step.on_main_chain or step.failed):
        return step.label
    return step.label if _facts(trace)[1].get(step.name, 0) > 1 else step.name


def ref(step: Step, trace: Trace | None = None) -> str:
    """How every pane names a step: "#5 FuseOps" (its pipeline position), or its name and
    step for one that is no pipeline entry ("tirx.BindTarget (step 35)")."""
    trace = trace if trace is not None else step.owner
    if trace is None:
        return f"{step.label} (step {step.index})"
    p = positions(trace).get(step.index)
    return f"#{p} {name_of(step, trace)}" if p is not None else f"{step.label} (step {step.index})"


def ref_title(step: Step) -> str:
    """The tooltip beside `ref`: the step index."""
    return f"step {step.index} of the trace"
