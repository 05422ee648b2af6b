"""How `passlab.research.profile.profile` measures: the in-place runs and their hooks'
calibration in alternation, then the plain runs and each kernel alone, repeated until the
medians' intervals reach the target or the budget runs out; and the per-kernel seconds of
each run with the hooks' share taken out. Plain numbers in, plain numbers out: the result
types live in `passlab.research.profile`."""

from __future__ import annotations

import math
import statistics
import time
from collections import Counter
from typing import Any

from passlab import _progress
from passlab._tvm import timing as _timing

__all__ = ["measure", "noisy", "per_run_kernels", "wide_in_place"]

#: Kernels holding at least this share of the run must reach the target before the runs
#: stop (the smaller ones are marked noisy when they miss it).
_STOP_SHARE = 0.05

def noisy(median: float, lo: float, hi: float, target: float) -> bool:
    """Whether the interval `lo`..`hi` reaches beyond +-`target` of `median`. A median of
    0 (a kernel below the hooks' noise once their cost is taken out) with an interval of
    any width is noisy: no relative figure holds."""
    if math.isnan(lo) or math.isnan(hi):
        return False
    return lo < median * (1 - target) or hi > median * (1 + target)


def measure(plain: dict[str, Any], in_place: Any, calibration: Any,
             alone_timers: dict[Any, Any], repeat: int, target: float, budget_s: float,
             names: dict[str, str], per_sig: Counter, progress: Any, entry: str
             ) -> tuple[list[Any], list[Any], dict[str, list[float]], dict[Any, list[float]]]:
    """Two phases, each of `repeat` rounds and then more while an interval misses
    `target` and its half of `budget_s` lasts:

    1. in place: the instrumented run and the skeleton's, in alternation (after one
       discarded pair), nothing else between them. A plain timing just before an
       instrumented run would slow it (a CPU thread pool's workers still spin after
       the timing's last call: 2.4x on the MLP here), and alternation makes the
       hooks' calibration see the same state as the run it calibrates;
    2. apart: the plain run, the skeleton's plain run and (the first `repeat` rounds)
       each kernel alone, in alternation, so that load that comes and goes falls on
       all of them alike.
    """
    runs: list[Any] = []
    skel_runs: list[Any] = []
    samples: dict[str, list[float]] = {k: [] for k in plain}
    alone_samples: dict[Any, list[float]] = {k: [] for k in alone_timers}
    limit = max(50 * repeat, 200)
    with _progress.bar(progress, total=2 * repeat, desc=f"profiling {entry}", unit="run",
                       delay=0.5) as shown:
        start = time.perf_counter()
        if calibration is not None:
            calibration.run()
        in_place.run()
        for i in range(limit):
            if calibration is not None and i % 2:
                skel_runs.append(calibration.run())
            runs.append(in_place.run())
            if calibration is not None and not i % 2:
                skel_runs.append(calibration.run())
            if i < repeat:
                shown.update(note="in place")
            if i + 1 < repeat:
                continue
            wide = wide_in_place(runs, skel_runs, names, target)
            if not wide or time.perf_counter() - start >= budget_s / 2:
                break
            shown.note(f"in place, run {i + 1}: {wide} wider than +-{target:.0%}")
        start = time.perf_counter()
        for i in range(limit):
            for key, (once, _) in plain.items():
                samples[key].append(once())
            if i < repeat:
                for key, (once, _) in alone_timers.items():
                    alone_samples[key].append(once())
                shown.update(note=f"plain runs, {len(alone_timers)} kernels alone"
                             if alone_timers else "plain runs")
            if i + 1 < repeat:
                continue
            lo, hi = _timing.median_ci(samples["e2e"])
            if not noisy(statistics.median(samples["e2e"]), lo, hi, target) \
                    or time.perf_counter() - start >= budget_s / 2:
                break
            shown.note(f"plain run {i + 1}: wider than +-{target:.0%}")
    return runs, skel_runs, samples, alone_samples


def per_run_kernels(runs: list[Any], skel_runs: list[Any], names: dict[str, str]
                     ) -> tuple[list[dict[str, float]], list[float]]:
    """Per instrumented run: each kernel's seconds in place (the hooks' share taken out,
    never below 0), and the run's hook-free kernel sum; the per-call floor comes from
    the skeleton's runs (the same call, its kernel empty). Linear in the calls of one
    run: the floors are summed per kernel once for every run of the same call sequence."""
    per_run: list[dict[str, float]] = []
    totals: list[float] = []
    if not runs:
        return per_run, totals

    def floor_sums(run: Any) -> dict[str, float]:
        out: dict[str, float] = {}
        for sym, floor in zip(run.symbols, _timing.hook_floor(run, skel_runs)):
            k = names[sym]
            out[k] = out.get(k, 0.0) + floor
        return out

    first = runs[0]
    common = floor_sums(first)
    for r in runs:
        floors = common if r.symbols == first.symbols else floor_sums(r)
        acc: dict[str, float] = {}
        for sym, ns in r.by_symbol.items():
            k = names[sym]
            acc[k] = acc.get(k, 0.0) + ns
        acc = {k: max(0.0, (v - floors.get(k, 0.0)) * 1e-9) for k, v in acc.items()}
        per_run.append(acc)
        totals.append(sum(acc.values()))
    return per_run, totals


def wide_in_place(runs: list[Any], skel_runs: list[Any], names: dict[str, str],
                   target: float) -> str:
    """What of the in-place figures still misses the target ("the instrumented run",
    "3 kernels"), "" when nothing does: the run, and every kernel holding at least
    `_STOP_SHARE` of it."""
    out = []
    raw = [r.total_ns * 1e-9 for r in runs]
    med = statistics.median(raw)
    if noisy(med, *_timing.median_ci(raw), target):
        out.append("the instrumented run")
    per_run, _ = per_run_kernels(runs, skel_runs, names)
    big = 0
    for k in per_run[0] if per_run else {}:
        values = [p.get(k, 0.0) for p in per_run]
        m = statistics.median(values)
        if m >= _STOP_SHARE * med and noisy(m, *_timing.median_ci(values), target):
            big += 1
    if big:
        out.append(f"{big} kernel{'s' if big != 1 else ''}")
    return ", ".join(out)
