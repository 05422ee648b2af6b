"""Profiles as plain data, and kernel reuse, for jobs that run in a sweep's build process.

A :class:`~passlab.research.profile.Profile` holds its build (TVM objects that do not
travel between processes); :func:`profile_summary` keeps what a sweep row or an
attribution needs: the end-to-end median and spread, and each kernel's calls and time
per run. Jobs of one attribution are variants of one pipeline: :data:`KEPT` holds the
build process's last builds of a job's ``reuse`` group, so a variant whose Relax pipeline
ends in the same kernels skips TIR lowering and codegen (``build(..., reuse=)``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from passlab.errors import first_line
from passlab.research.profile import profile


def profile_summary(built: Any, job: dict[str, Any]) -> dict[str, Any]:
    """``{"run_s", "spread", "kernels": {name: seconds per run}, "calls": {name: calls}}``
    of ``built`` on the job's inputs, or ``{"error": ...}`` when it cannot be timed."""
    opts = job["profile"]
    seed, arrays = job["inputs"]
    try:
        prof = profile(built, *(arrays or ()), seed=seed, repeat=int(opts.get("repeat", 10)),
                       number=opts.get("number"), min_repeat_ms=opts.get("min_repeat_ms"))
    except Exception as exc:  # noqa: BLE001 - the row says why, the job stands
        return dict(error=f"profile: {type(exc).__name__}: {first_line(exc)}")
    called = [k for k in prof if k.calls > 0]
    return dict(run_s=prof.end_to_end_s, spread=prof.end_to_end_spread,
                overhead_s=prof.overhead_s,
                kernels={k.kernel: k.total_s for k in called},
                calls={k.kernel: k.calls for k in called})


class _Kept:
    """The last few builds of each reuse group, in this build process only."""

    def __init__(self, per_group: int = 3) -> None:
        self.per_group = per_group
        self.builds: dict[str, OrderedDict[int, Any]] = {}

    def reusable(self, job: dict[str, Any]) -> list[Any]:
        group = job.get("reuse")
        return [] if group is None else list(self.builds.get(group, {}).values())

    def keep(self, job: dict[str, Any], built: Any) -> None:
        group = job.get("reuse")
        if group is None or built is None:
            return
        kept = self.builds.setdefault(group, OrderedDict())
        kept[id(built)] = built
        while len(kept) > self.per_group:
            kept.popitem(last=False)
        for other in [g for g in self.builds if g != group]:  # one group at a time
            del self.builds[other]


#: This process's kept builds (see the module doc).
KEPT = _Kept()
