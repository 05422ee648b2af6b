"""Profiles as plain data, and kernel reuse, for jobs that run in a sweep's build process.

A `Profile` holds its build (TVM objects that do not
travel between processes); `profile_summary` keeps what a sweep row or an
attribution needs: the end-to-end median and spread, and each kernel's calls and time
per run. Jobs of one attribution are variants of one pipeline: `KEPT` holds the
build process's last builds of a job's `reuse` group, so a variant whose Relax pipeline
ends in the same kernels skips TIR lowering and codegen (`build(..., reuse=)`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from passlab.errors import first_line
from passlab.research.profile import paired_end_to_end, profile


def profile_summary(built: Any, job: dict[str, Any]) -> dict[str, Any]:
    """`{"run_s", "spread", "kernels": {name: seconds per run}, "calls": {name: calls}}`
    of `built` on the job's inputs, or `{"error": ...}` when it cannot be timed."""
    opts = job["profile"]
    seed, arrays = job["inputs"]
    try:  # times only: no provenance, blame, skeleton VM or kernels alone per variant
        prof = profile(built, *(arrays or ()), seed=seed, repeat=int(opts.get("repeat", 10)),
                       number=opts.get("number"), min_repeat_ms=opts.get("min_repeat_ms"),
                       links=False, overhead=False, alone=False, budget_s=0,
                       progress=False)
    except Exception as exc:  # noqa: BLE001 - the row says why, the job stands
        return dict(error=f"profile: {type(exc).__name__}: {first_line(exc)}")
    called = [k for k in prof if k.calls > 0]
    out = dict(run_s=prof.end_to_end_s, spread=prof.end_to_end_spread,
               kernels={k.kernel: k.total_s for k in called},
               calls={k.kernel: k.calls for k in called})
    if job.get("baseline") is True:
        KEPT.baselines[job["reuse"]] = built
    elif job.get("baseline") is not None:  # a variant: timed against the full pipeline
        try:
            base = baseline(job)
            out["paired"] = paired_end_to_end(base, built, *(arrays or ()), seed=seed,
                                              repeat=int(opts.get("repeat", 10)))
        except Exception as exc:  # noqa: BLE001 - the unpaired figures stand
            out["paired_error"] = f"{type(exc).__name__}: {first_line(exc)}"
    return out


def baseline(job: dict[str, Any]) -> Any:
    """The full pipeline's build of the job's group: kept by this process, or built now
    (the first variant on a process that did not build it); variants are timed against
    it and, with `job["prefix"]`, re-run from its recorded snapshots."""
    from passlab.recording.build import build
    from passlab.research._sweep_jobs import model_from_spec, pipeline_from_recipe

    group = job["reuse"]
    base = KEPT.baselines.get(group)
    if base is None:
        base = build(model_from_spec(job["model_spec"]), pipeline_from_recipe(job["baseline"]),
                     reuse=KEPT.reusable(job))
        KEPT.baselines[group] = base
    return base


class _Kept:
    """The last few builds of each reuse group, in this build process only."""

    def __init__(self, per_group: int = 3) -> None:
        self.per_group = per_group
        self.builds: dict[str, OrderedDict[int, Any]] = {}
        self.baselines: dict[str, Any] = {}  # group -> the full pipeline's build

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
        for other in [g for g in self.baselines if g != group]:
            del self.baselines[other]


#: This process's kept builds (see the module doc).
KEPT = _Kept()
