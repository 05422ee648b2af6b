"""The Explorer's pass list, the Python half: one JSON-able row per step, the filters
(changed only, stage, search, inner passes) and the step to open on, and the traits that
follow from a trace alone. No Jupyter here.

The front end (`static/explorer/list.js`) draws the rows and sends the filters back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from passlab.recording import numbering as _numbering
from passlab.recording.trace import Step, Trace

__all__ = ["ROWS_UP_FRONT", "COMPARISONS_UP_FRONT", "rows", "pending", "detail", "listed",
           "visible", "trace_state", "default_selection"]

#: A trace of at most this many steps sends every row when the Explorer opens; a larger
#: one sends the main chain's rows first and the others (inner passes and wrappers, most
#: of a model with weights as constants: FoldConstant's TIR builds) when the list shows
#: them, so opening costs the same whatever the number of inner steps.
ROWS_UP_FRONT = 400

#: Structural function comparisons an opening Explorer spends on its rows' change counts
#: ("+16 ~1"). The rows get theirs in list order (the main chain's first) until one needs
#: more comparisons (`Step.comparisons`) than are left; that one and those after it are
#: sent pending (`changed`, `summary` and `detail` None, unless their change set is known
#: already) and filled in once the first view is out (`Explorer.load_changes`). The MLP
#: (270 comparisons in all) opens complete, the ResNets (1,300-1,700) without their last
#: TIR rows, DenseNet-121 (its 140 kernels rebuilt by some 50 TIR passes: 6,900) with its
#: Relax rows and the first few TIR ones.
COMPARISONS_UP_FRONT = 1_000


def rows(trace: Trace, *, main_only: bool = False, steps: Sequence[Step] | None = None,
         comparisons: int | None = None) -> list[dict[str, Any]]:
    """One JSON-able row per step for the pass list (every step; filters pick some):
    its index `i`, pipeline number `n` (None: no pipeline entry), label, stage, kind,
    origin, depth, whether it changed the module, the change counts (`summary`, "+16 ~1",
    and `detail` in words), whether it failed and its time in ms. With `main_only`,
    only the main chain's rows (and failed steps'): what the list
    shows without inner passes, computed without the change sets of the other steps.
    `steps`: only these steps of `trace` (the static report's bounded list).
    `comparisons`: at most about this many structural function comparisons (see
    `COMPARISONS_UP_FRONT`); a row whose change set does not fit is pending: its
    `changed`, `summary` and `detail` are None (None: every change set is computed)."""
    out = []
    steps = list(trace) if steps is None else list(steps)
    if main_only and any(listed(s) for s in steps):
        steps = [s for s in steps if listed(s)]
    known = _up_front(steps, comparisons)
    pos = _numbering.positions(trace)
    llvm = sum(1 for s in trace if s.llvm is not None)
    for s in steps:
        ch = s.functions_changed if known is None or s.index in known else None
        out.append(dict(
            i=s.index, n=pos.get(s.index), label=_numbering.name_of(s, trace), stage=s.stage,
            kind=s.kind, origin=s.origin, depth=s.depth,
            changed=None if ch is None else bool(ch),
            summary=None if ch is None else ch.summary(),
            detail=None if ch is None else detail(ch), failed=s.failed,
            ms=None if s.seconds is None else round(s.seconds * 1e3, 2),
        ))
        if llvm and s.code is not None:  # the codegen row heads the group of LLVM's passes
            out[-1]["llvm"] = llvm
    # the pipeline's disabled entries did not run: greyed rows (no step: index -1 - n)
    for n, stage, name in _numbering.disabled_entries(trace):
        out.append(dict(i=-1 - n, n=n, label=name, stage=stage, kind="disabled",
                        origin="tvm", depth=0, changed=False, summary="disabled",
                        detail="", failed=False, ms=None))
    return out


def _up_front(steps: Sequence[Step], budget: int | None) -> set[int] | None:
    """The indices of `steps` whose change sets are known or fit in `budget` structural
    comparisons, taken in list order (the rows the list shows without inner passes
    first) until one does not fit; None without a budget: all of them."""
    if budget is None:
        return None
    known = set()
    for s in sorted(steps, key=lambda s: not listed(s)):  # stable: the order stays
        if s.changes_known:
            known.add(s.index)
        elif budget >= 0:
            cost = s.comparisons()
            budget -= cost
            if budget >= 0:
                known.add(s.index)
    return known


def pending(rows: Sequence[dict[str, Any]]) -> int:
    """How many of `rows` wait for their change counts (see `rows(comparisons=)`)."""
    return sum(1 for r in rows if r["summary"] is None)


def detail(changes: Any) -> str:
    """What a row's change counts ("+16 ~1") say, in words: "functions: 16 added, 1
    modified" ("" for no change)."""
    parts = [f"{len(names)} {what}" for names, what in
             ((changes.added, "added"), (changes.removed, "removed"),
              (changes.modified, "modified")) if names]
    if changes.attrs:
        parts.append("the module's attributes changed")
    return ("functions: " + ", ".join(parts)) if parts else ""


def listed(s: Step) -> bool:
    """A step the list shows without inner passes: a main-chain one, or one that failed."""
    return s.on_main_chain or s.failed


def visible(trace: Trace, *, changed_only: bool = False, stage: str = "", search: str = "",
            show_inner: bool = False, show_llvm: bool = False) -> list[int]:
    """Indices of the steps the list shows: the main chain (every step with
    `show_inner`; LLVM's passes, the group under the codegen step, with `show_llvm`),
    optionally only changed ones, of one stage, whose label contains `search`
    (case-insensitive)."""
    steps: Sequence[Step] = list(trace)
    if not show_inner and any(listed(s) for s in steps):
        steps = [s for s in steps if listed(s) or (show_llvm and s.llvm is not None)]
    if changed_only:
        steps = [s for s in steps if s.changed or s.failed]
    if stage:
        steps = [s for s in steps if s.stage == stage]
    needle = search.strip().lower()
    if needle:
        steps = [s for s in steps if needle in s.label.lower()]
    out = [s.index for s in steps]
    if changed_only:
        return out
    # a disabled entry goes where it stands in the pipeline: before the first step of a
    # later position (its row's index is -1 - position)
    pos = _numbering.positions(trace)
    for n, st, name in _numbering.disabled_entries(trace):
        if (stage and st != stage) or (needle and needle not in name.lower()):
            continue
        at = next((k for k, i in enumerate(out) if pos.get(i, -1) > n), len(out))
        out.insert(at, -1 - n)
    return out


def trace_state(trace: Trace, show_inner: bool = False,
                comparisons: int | None = None) -> dict[str, Any]:
    """The Explorer's traits that follow from the trace alone: its rows (on a trace of
    more than `ROWS_UP_FRONT` steps the main chain's only, unless `show_inner`; with
    `comparisons`, those whose change sets do not fit pending: `changes_pending` counts
    them), stages, one-line summary and failure, and the default compare span (the main
    chain's first input to the Relax pipeline's last output)."""
    main = [s for s in trace if s.on_main_chain] or list(trace)
    relax = [s for s in main if s.level == "relax"] or main
    complete = len(trace) <= ROWS_UP_FRONT or show_inner
    table = rows(trace, main_only=not complete, comparisons=comparisons)
    return dict(steps=table, steps_complete=complete, changes_pending=pending(table),
                step_count=len(trace), stages=list(dict.fromkeys(s.stage for s in trace)),
                summary=trace.summary().split("\n")[0],
                failure=trace.failure.to_text() if trace.failure is not None else "",
                compare_a=main[0].index if main else -1,
                compare_b=relax[-1].index if relax else -1)


def default_selection(trace: Trace) -> int:
    """The step to open on: the failing pass, else the first user pass, else the first
    main-chain pass that changed something, else the first step (-1 when empty)."""
    f = trace.failure
    if f is not None and f.step is not None:
        return f.step.index
    for pick in (lambda s: s.origin == "user", lambda s: s.on_main_chain and s.changed,
                 lambda s: True):
        for s in trace:
            if pick(s):
                return s.index
    return -1
