"""passlab's benchmark suite: one command, ratios measured side by side in one run.

    .venv/bin/python benchmarks/run.py [--quick] [--json results.json]

Sections (each prints a table; all results also go to JSON with --json):

1. build overhead: a plain build vs the same build recorded by passlab, by TVM's
   PassTimingInstrument, PrintAfterAll (stdout to /dev/null) and DumpIR (temp dir);
   interleaved repetitions, medians, min-max, ratio to the plain build. Also the Relax
   pipeline alone (no TIR/codegen), and trace.changed() over the whole trace.
2. views: first-view latency of the diff of every changed main-chain step (max and
   median, printing cache cleared before each), fused graph and buffer table of the
   largest step, the static report's time and size.
3. memory: extra RSS held by a full trace (each measured in a fresh process).
4. scale: the transformer at 2, 4, 8, 16 layers: build, recording, views and memory per
   layer.

Targets (issue 6): recording <= 1.05x a full build and <= 1.10x the Relax pipeline alone;
trace.changed() <= 0.3x the build; first view <= 100 ms; report <= 3 s and <= 5 MB;
trace memory <= +30 MiB for mobilenet.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tvm  # noqa: E402
from bench_record import measure, print_table, variants  # noqa: E402

import passlab  # noqa: E402

HERE = Path(__file__).resolve().parent


def _ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


# --------------------------------------------------------------- relax pipeline alone
def relax_only(model: str, repeat: int) -> dict:
    """Ratio for the Relax pipeline alone: pipe.to_pass()(mod) with and without the
    recorder, interleaved."""
    mod = passlab.models.by_name(model)
    relax_pass = passlab.Pipeline.default("llvm").to_pass()

    def plain():
        relax_pass(mod)

    def recorded():
        with passlab.record():
            relax_pass(mod)

    plain(), recorded()
    a, b = [], []
    for _ in range(repeat):
        a.append(_ms(plain))
        b.append(_ms(recorded))
    return dict(plain_ms=statistics.median(a), recorded_ms=statistics.median(b),
                ratio=statistics.median(b) / statistics.median(a))


# ---------------------------------------------------------------------------- views
def views(model: str, mod=None) -> dict:
    import pandas  # noqa: F401 - a one-off import is not a view's latency

    from passlab._tvm import printing as _printing

    mod = mod if mod is not None else passlab.models.by_name(model)
    trace = passlab.build(mod).trace
    changed = [s for s in trace.main_chain() if s.changed]
    first_views, full_views = [], []
    for s in changed:
        # first view: what a notebook display or the explorer's diff pane renders (the
        # first FIRST_VIEW changed functions, the others named); full: every function
        _printing.clear_cache()
        first_views.append(_ms(lambda s=s: passlab.diff(s)._repr_mimebundle_()))
        _printing.clear_cache()
        full_views.append(_ms(lambda s=s: passlab.diff(s).to_html()))
    # the largest Relax-level snapshot: most bindings
    relax_steps = [s for s in trace.main_chain() if s.level == "relax"]
    largest = max(relax_steps, key=lambda s: s.row()["bindings_after"])
    fusetir = trace.find("FuseTIR")
    out = dict(
        steps=len(trace), changed_steps=len(changed),
        diff_first_view_max_ms=max(first_views), diff_first_view_median_ms=statistics.median(first_views),
        slowest_diff_step=changed[first_views.index(max(first_views))].label,
        diff_full_max_ms=max(full_views), diff_full_median_ms=statistics.median(full_views),
        largest_step=largest.label,
        graph_ms=_ms(lambda: passlab.fused_graph(largest).to_dot()),
        graph_fusetir_ms=_ms(lambda: passlab.fused_graph(fusetir).to_dot()),
        buffers_ms=_ms(lambda: passlab.buffers(largest).to_dataframe()),
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.html"
            out["report_ms"] = _ms(lambda: trace.write_report(path))
            out["report_mb"] = path.stat().st_size / 2**20
    except ImportError as exc:  # the static report is optional here
        out["report_error"] = str(exc)
    return out


# --------------------------------------------------------------------------- memory
_MEM_SCRIPT = """
import gc, sys, passlab
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
mod = passlab.models.by_name(sys.argv[1]) if sys.argv[1] != "layers" else \\
      passlab.models.transformer(layers=int(sys.argv[3]))
keep = sys.argv[2] == "trace"
passlab.build(mod); gc.collect()           # warm-up: code paths, JIT, caches
base = rss()
b = passlab.build(mod)
held = b.trace if keep else None
if keep:
    held.changed()                          # change sets computed and cached too
del b; gc.collect()
print(rss() - base)
"""


def memory(model: str, layers: int | None = None) -> dict:
    """Extra RSS after a build whose trace is kept vs one whose trace is dropped."""
    def run(mode: str) -> int:
        args = [sys.executable, "-c", _MEM_SCRIPT, model if layers is None else "layers", mode,
                str(layers or 0)]
        out = subprocess.run(args, capture_output=True, text=True, check=True)
        return int(out.stdout.strip().splitlines()[-1])

    dropped, kept = run("drop"), run("trace")
    return dict(rss_trace_mib=(kept - dropped) / 2**20, rss_without_mib=dropped / 2**20,
                rss_with_mib=kept / 2**20)


# ---------------------------------------------------------------------------- scale
def scale(layers_list: list[int], repeat: int) -> list[dict]:
    rows = []
    for n in layers_list:
        mod = passlab.models.transformer(layers=n)
        pipe = passlab.Pipeline.default("llvm")
        tgt = tvm.target.Target("llvm")
        plain, rec = [], []
        for _ in range(repeat):
            plain.append(_ms(lambda: tvm.relax.build(mod, tgt, relax_pipeline=pipe.to_pass())))
            rec.append(_ms(lambda: passlab.build(mod, pipe)))
        v = views("transformer", mod)
        m = memory("transformer", layers=n)
        rows.append(dict(layers=n, plain_ms=statistics.median(plain), record_ms=statistics.median(rec),
                         ratio=statistics.median(rec) / statistics.median(plain),
                         diff_max_ms=v["diff_first_view_max_ms"], graph_ms=v["graph_ms"],
                         buffers_ms=v["buffers_ms"], report_ms=v.get("report_ms"),
                         rss_trace_mib=m["rss_trace_mib"]))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="passlab benchmark suite")
    ap.add_argument("--quick", action="store_true", help="fewer models and repetitions")
    ap.add_argument("--json", help="write all results here")
    args = ap.parse_args(argv)
    repeat = 3 if args.quick else 5
    models = ["mlp", "resnet"] if args.quick else ["mlp", "resnet", "transformer", "mobilenet"]
    results: dict = {"build": {}, "relax_only": {}, "views": {}, "memory": {}, "scale": []}

    print("== 1. build overhead (interleaved; ratio = median / plain median)")
    for m in models:
        results["build"][m] = measure(m, repeat, variants(full=True))
        print_table(m, results["build"][m])
    print("\n== 1b. Relax pipeline alone (no TIR, no codegen)")
    print(f"{'model':12} {'plain ms':>9} {'recorded ms':>12} {'ratio':>7}")
    for m in models:
        r = results["relax_only"][m] = relax_only(m, repeat * 2)
        print(f"{m:12} {r['plain_ms']:9.1f} {r['recorded_ms']:12.1f} {r['ratio']:6.2f}x")

    print("\n== 2. views (ms, empty printing cache; first view = the notebook display / explorer"
          " pane, full = every changed function)")
    print(f"{'model':12} {'changed':>7} {'first max':>9} {'median':>7} {'full max':>9} "
          f"{'graph':>7} {'buffers':>8} {'report ms':>10} {'MB':>6}  slowest diff / largest step")
    for m in models:
        v = results["views"][m] = views(m)
        print(f"{m:12} {v['changed_steps']:7d} {v['diff_first_view_max_ms']:9.1f} "
              f"{v['diff_first_view_median_ms']:7.1f} {v['diff_full_max_ms']:9.1f} "
              f"{v['graph_ms']:7.1f} {v['buffers_ms']:8.1f} "
              f"{v.get('report_ms', float('nan')):10.0f} {v.get('report_mb', float('nan')):6.2f}  "
              f"{v['slowest_diff_step']} / {v['largest_step']}")

    print("\n== 3. memory held by a full trace (RSS, fresh process each)")
    for m in models:
        r = results["memory"][m] = memory(m)
        print(f"{m:12} +{r['rss_trace_mib']:.1f} MiB")

    print("\n== 4. scale: transformer by layers")
    layers = [2, 4, 8] if args.quick else [2, 4, 8, 16]
    results["scale"] = scale(layers, max(2, repeat - 2))
    print(f"{'layers':>6} {'plain ms':>9} {'rec ms':>8} {'ratio':>6} {'diff max':>9} {'graph':>6} "
          f"{'buffers':>8} {'report':>7} {'trace MiB':>9} {'ms/layer':>9}")
    for r in results["scale"]:
        print(f"{r['layers']:6d} {r['plain_ms']:9.0f} {r['record_ms']:8.0f} {r['ratio']:5.2f}x "
              f"{r['diff_max_ms']:9.1f} {r['graph_ms']:6.1f} {r['buffers_ms']:8.1f} "
              f"{(r['report_ms'] or float('nan')):7.0f} {r['rss_trace_mib']:9.1f} "
              f"{r['record_ms'] / r['layers']:9.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
