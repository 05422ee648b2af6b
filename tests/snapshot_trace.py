"""A hand-made trace over the CPU Relax pipeline's snapshots of a built-in model: no
``passlab.build``, no TIR stage, no codegen. Each named pass is one main-chain step whose
``before`` is the previous step's ``after`` (the input for the first), so analyses of a
trace (provenance, blame, pass table, explanations) can be tested on exact, small data."""

from __future__ import annotations

from collections.abc import Sequence

from relax_snapshots import snapshots

from passlab.recording.recorder import RawEvent
from passlab.recording.trace import Trace, from_events

#: The passes provenance follows an operator through, and memory planning after them.
FUSION_CHAIN = ("LegalizeOps", "FuseOps", "FuseTIR", "CallTIRRewrite", "StaticPlanBlockMemory")


def snapshot_trace(model: str = "mlp", passes: Sequence[str] = FUSION_CHAIN) -> Trace:
    """``passes`` (names of the CPU pipeline's passes) as the main chain of one container,
    ``passlab.pipeline``, with the model's snapshot after each as its ``after``."""
    s = snapshots(model)  # cached per model
    events = [RawEvent("passlab.pipeline", 0, None, s["input"], 0.0, s[passes[-1]], 1.0)]
    before = s["input"]
    for k, name in enumerate(passes):
        events.append(RawEvent(name, 1, 0, before, k * 0.1, s[name], k * 0.1 + 0.05))
        before = s[name]
    return from_events(events, {"input": s["input"], "target": "llvm"}, "passlab.pipeline")
