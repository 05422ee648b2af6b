"""The key snapshots of a trace: the modules a static report keeps a fused graph, its
kernels and its buffers of (after fusion, after CallTIRRewrite, after memory planning).
The panes themselves are the Explorer's (`passlab.views._report_state`)."""

from __future__ import annotations

from dataclasses import dataclass

from passlab._render import layout_program
from passlab.recording.trace import Step, Trace

__all__ = ["Snapshot", "key_snapshots", "layout_program"]


@dataclass(frozen=True)
class Snapshot:
    """A module worth a graph and a buffer table: the one after `step`."""

    key: str
    title: str
    step: Step


def _first_ok(trace: Trace, name: str) -> Step | None:
    for s in trace:
        if s.on_main_chain and s.name == name and not s.failed:
            return s
    return None


def key_snapshots(trace: Trace) -> list[Snapshot]:
    """After fusion (FuseTIR, else the last legalize-stage pass), after CallTIRRewrite
    and after StaticPlanBlockMemory, whichever exist; else the last recorded pass."""
    main = [s for s in trace if s.on_main_chain and not s.failed]
    out: list[Snapshot] = []
    fused = _first_ok(trace, "FuseTIR")
    if fused is not None:
        out.append(Snapshot("fusion", "after fusion (FuseTIR)", fused))
    else:
        legalize = [s for s in main if s.stage == "legalize"]
        if legalize:
            out.append(Snapshot("legalize", f"end of the legalize stage ({legalize[-1].label})",
                                legalize[-1]))
    for name, key, what in (("CallTIRRewrite", "calltir", "explicit allocations"),
                            ("StaticPlanBlockMemory", "memplan", "memory planning")):
        s = _first_ok(trace, name)
        if s is not None:
            out.append(Snapshot(key, f"after {what} ({name})", s))
    if not out and main:
        out.append(Snapshot("last", f"after the last recorded pass ({main[-1].label})",
                            main[-1]))
    return out
