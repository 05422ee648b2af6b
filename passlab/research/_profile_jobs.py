"""A profile as plain data, for jobs that run in a sweep's build process.

A :class:`~passlab.research.profile.Profile` holds its build (TVM objects that do not
travel between processes); :func:`profile_summary` keeps what a sweep row or an
attribution needs: the end-to-end median and spread, and each kernel's calls and time
per run.
"""

from __future__ import annotations

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
