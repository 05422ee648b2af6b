"""First-view latency of ``passlab.diff(before, after).to_html()`` along the fused pipeline.

For each model, applies the default fused CPU pipeline (the stage lists of
``tvm.relax.backend.cpu_generic.pipeline``) pass by pass, keeps every before/after
module, and for each step that changed the module times the first rendering of its
diff as HTML with an empty printing cache (best of three such first views). For comparison it times ``mod.script()`` of
the whole output module, which is what printing everything would cost.

Run: ``python benchmarks/bench_diff.py`` (target: at most 100 ms per step).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tvm  # noqa: E402
from tvm.relax.backend.cpu_generic import pipeline as cpu  # noqa: E402

import passlab.models  # noqa: E402
from passlab._tvm import printing as _printing  # noqa: E402
from passlab.analysis.diff import diff  # noqa: E402

TARGET_MS = 100.0
REPEAT = 3
STAGES = (cpu.library_dispatch_passes, cpu.legalize_passes, cpu.dataflow_lower_passes,
          cpu.finalize_passes)


def steps(mod: tvm.IRModule) -> list[tuple[str, tvm.IRModule, tvm.IRModule]]:
    """``(pass name, before, after)`` for every top-level pass of the fused pipeline."""
    target = tvm.target.Target("llvm")
    out = []
    with target:
        for stage in STAGES:
            for p in stage(target):
                after = p(mod)
                out.append((p.info.name, mod, after))
                mod = after
    return out


def _ms(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return (time.perf_counter() - start) * 1e3, value


def bench(label: str, mod: tvm.IRModule) -> bool:
    rows = []
    for name, before, after in steps(mod):
        if before.same_as(after):
            continue
        d = diff(before, after)
        if d.unchanged:
            continue
        diff_ms = script_ms = float("inf")
        for _ in range(REPEAT):  # best of REPEAT: the machine is shared and noisy
            _printing.clear_cache()
            ms, html = _ms(lambda: diff(before, after).to_html())
            diff_ms = min(diff_ms, ms)
            script_ms = min(script_ms, _ms(after.script)[0])
        rows.append((name, diff_ms, script_ms, len(d), len(html)))
    print(f"\n{label}: {len(rows)} changed steps")
    print(f"  {'pass':<28} {'diff.to_html ms':>16} {'mod.script ms':>14} {'funcs':>6} {'html KiB':>9}")
    for name, diff_ms, script_ms, funcs, size in rows:
        print(f"  {name:<28} {diff_ms:>16.1f} {script_ms:>14.1f} {funcs:>6} {size / 1024:>9.0f}")
    diffs = [r[1] for r in rows]
    scripts = [r[2] for r in rows]
    print(f"  diff(before, after).to_html(): max {max(diffs):.1f} ms, "
          f"median {statistics.median(diffs):.1f} ms")
    print(f"  whole-module mod.script():     max {max(scripts):.1f} ms, "
          f"median {statistics.median(scripts):.1f} ms")
    ok = max(diffs) <= TARGET_MS
    print(f"  target <= {TARGET_MS:.0f} ms per step: {'met' if ok else 'NOT met'}")
    return ok


def main() -> int:
    diff(passlab.models.mlp(), passlab.models.mlp()).to_html()  # warm imports
    ok = bench("transformer(layers=8)", passlab.models.transformer(layers=8))
    ok &= bench("resnet()", passlab.models.resnet())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
