"""Saved traces: passlab's save and load beside TVM's own, measured in one run.

    .venv/bin/python benchmarks/bench_io.py [--models resnet,swin,...] [--cache DIR] [--repeat 2]

For each model, on one recorded trace:

- **TVM's load**: the trace's ``ir.json`` read from the archive and handed to
  ``tvm.ir.load_json`` as it is: what TVM does with a file it trusts. ``load_json`` first
  runs its upgrader of old JSON (a parse and a write in Python), so the table also gives
  **TVM's parse** alone (``tvm_ffi``'s ``from_json_graph_str``), the floor of any load.
- **load_trace**: the same file through ``passlab.load_trace``, which also checks every
  node of the graph against TVM's type registry, writes the checked graph back for TVM,
  and runs TVM's well-formedness check on every function in a forked child.
- **TVM's save**: ``tvm.ir.save_json`` of the trace's distinct modules, deflated into a
  zip archive.
- **trace.save**: ``passlab``'s save of the same trace (tensors stored once, the same
  checks as a load, the archive compressed while they run).

The ratios are what passlab's checks cost over TVM's own reader and writer. No target:
TVM's load is the floor a checked load cannot go under, and a file TVM trusts can crash
it (``tests/security``). Models: the built-in ones (``passlab.models``) and
``benchmarks/large_models.py``'s (``--cache`` keeps their traces: Swin-T takes minutes to
build).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import large_models  # noqa: E402
import tvm  # noqa: E402
from tvm_ffi.serialization import from_json_graph_str  # noqa: E402

import passlab  # noqa: E402


def _trace(name: str, cache: str | None) -> passlab.Trace:
    if name in large_models.NAMES:
        return large_models.trace(name, cache)
    return passlab.build(getattr(passlab.models, name)()).trace


def _seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _save_figures(name: str, cache: str | None, repeat: int, saved: Path,
                  plain: Path) -> dict[str, float]:
    trace = _trace(name, cache)
    modules = list({m.__chandle__(): m for s in trace for m in (s.before, s.after)
                    if m is not None}.values())

    def tvm_save() -> None:
        with zipfile.ZipFile(plain, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            z.writestr("ir.json", tvm.ir.save_json(modules))

    return {"steps": len(trace), "tvm save": _seconds(tvm_save, repeat),
            "trace.save": _seconds(lambda: trace.save(saved), repeat),
            "MB": saved.stat().st_size / 1e6}


def measure(name: str, cache: str | None, repeat: int, folder: Path) -> dict[str, float]:
    saved = folder / f"{name}.trace.zip"
    out = _save_figures(name, cache, repeat, saved, folder / f"{name}.plain.zip")

    def tvm_load() -> None:
        with zipfile.ZipFile(saved) as z:
            tvm.ir.load_json(z.read("ir.json").decode())

    def tvm_parse() -> None:
        with zipfile.ZipFile(saved) as z:
            from_json_graph_str(z.read("ir.json").decode())

    out["tvm load"] = _seconds(tvm_load, repeat)
    out["tvm parse"] = _seconds(tvm_parse, repeat)
    out["load_trace"] = _seconds(lambda: passlab.load_trace(saved), repeat)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet,mobilenet,llama7b,onnx-efficientnet,"
                                        "onnx-mobilenetv2,swin")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cache", default=None,
                    help="folder that keeps the large models' traces between runs")
    args = ap.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in large_models.NAMES and n not in passlab.models.NAMES:
            ap.error(f"unknown model {n!r}; choose from "
                     f"{', '.join(passlab.models.NAMES + large_models.NAMES)}")
    passlab.load_trace  # noqa: B018 - imported up front, not inside the first figure
    print(f"{'':<32} {'--------- save ---------':^27}   "
          f"{'------------------- load -------------------':^46}")
    print(f"{'model':<18} {'steps':>6} {'MB':>6}   {'TVM':>7} {'passlab':>8} {'ratio':>8}   "
          f"{'TVM':>7} {'parse':>7} {'passlab':>8} {'/TVM':>6} {'/parse':>7}")
    with tempfile.TemporaryDirectory(prefix="bench-io-") as tmp:
        for name in names:
            r = measure(name, args.cache, args.repeat, Path(tmp))
            print(f"{name:<18} {r['steps']:>6,} {r['MB']:>6.1f}   {r['tvm save']:>6.2f}s "
                  f"{r['trace.save']:>7.2f}s {r['trace.save'] / r['tvm save']:>7.2f}x   "
                  f"{r['tvm load']:>6.2f}s {r['tvm parse']:>6.2f}s {r['load_trace']:>7.2f}s "
                  f"{r['load_trace'] / r['tvm load']:>5.2f}x "
                  f"{r['load_trace'] / r['tvm parse']:>6.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
