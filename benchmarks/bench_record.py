"""Recording overhead, measured side by side: a plain build vs the same build recorded
by passlab and by TVM's own instruments (PrintAfterAll, DumpIR, PassTimingInstrument).

Runs are interleaved (plain, passlab, ..., plain, passlab, ...) so that machine noise hits
every variant alike; the table shows medians, min-max and the ratio of medians to the
plain build.

    .venv/bin/python benchmarks/bench_record.py [--model resnet] [--repeat 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time

import tvm
from tvm.ir.instrument import DumpIR, PassTimingInstrument, PrintAfterAll

import passlab


def _plain(mod, pipe, tgt):
    tvm.relax.build(mod, tgt, relax_pipeline=pipe.to_pass())


def _with_instrument(make):
    def run(mod, pipe, tgt):
        inst = make()
        with contextlib.ExitStack() as stack:
            if isinstance(inst, PrintAfterAll):
                devnull = stack.enter_context(open(os.devnull, "w"))
                stack.enter_context(contextlib.redirect_stdout(devnull))
            stack.enter_context(tvm.transform.PassContext(instruments=[inst]))
            tvm.relax.build(mod, tgt, relax_pipeline=pipe.to_pass())
    return run


def _passlab(mod, pipe, tgt):
    passlab.build(mod, pipe)


def _passlab_changed(mod, pipe, tgt):
    """Recording, then computing every step's change set (the lazy part)."""
    trace = passlab.build(mod, pipe).trace
    t = time.perf_counter()
    trace.changed()
    _passlab_changed.last = time.perf_counter() - t


def measure(model: str, repeat: int, variants: dict) -> dict:
    mod = passlab.models.by_name(model)
    pipe = passlab.Pipeline.default("llvm")
    tgt = tvm.target.Target("llvm")
    times: dict[str, list[float]] = {k: [] for k in variants}
    changed_cost: list[float] = []
    for fn in variants.values():  # warm-up: first builds pay one-off JIT/import costs
        fn(mod, pipe, tgt)
    for _ in range(repeat):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn(mod, pipe, tgt)
            times[name].append(time.perf_counter() - t)
            if fn is _passlab_changed:
                changed_cost.append(_passlab_changed.last)
    base = statistics.median(times["plain build"])
    rows = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        rows[name] = dict(median_s=med, min_s=min(ts), max_s=max(ts), ratio=med / base)
    if changed_cost:
        rows["trace.changed() alone"] = dict(
            median_s=statistics.median(changed_cost), min_s=min(changed_cost),
            max_s=max(changed_cost), ratio=statistics.median(changed_cost) / base)
    return rows


def variants(full: bool) -> dict:
    v = {"plain build": _plain, "passlab record": _passlab}
    if full:
        tmp = tempfile.mkdtemp(prefix="passlab-dumpir-")
        v.update({
            "passlab record + changed()": _passlab_changed,
            "TVM PassTimingInstrument": _with_instrument(PassTimingInstrument),
            "TVM PrintAfterAll (stdout to /dev/null)": _with_instrument(PrintAfterAll),
            "TVM DumpIR (temp dir)": _with_instrument(lambda: DumpIR(tmp, refresh=True)),
        })
    return v


def print_table(model: str, rows: dict, out=sys.stdout) -> None:
    print(f"\n{model}: ratio = median / median of the plain build", file=out)
    print(f"{'variant':42} {'median s':>9} {'min-max s':>15} {'ratio':>7}", file=out)
    for name, r in rows.items():
        print(f"{name:42} {r['median_s']:9.3f} {r['min_s']:7.3f}-{r['max_s']:<7.3f} "
              f"{r['ratio']:6.2f}x", file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="built-in model (repeatable)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="only plain vs passlab")
    ap.add_argument("--json", help="write the results here as JSON")
    args = ap.parse_args(argv)
    results = {}
    for model in args.model or ["resnet"]:
        results[model] = measure(model, args.repeat, variants(not args.quick))
        print_table(model, results[model])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
