"""Recording overhead, measured side by side: a plain build vs the same build recorded
by passlab and by TVM's own instruments (PrintAfterAll, DumpIR, PassTimingInstrument).

Runs are interleaved (plain, passlab, ..., plain, passlab, ...) so that machine noise hits
every variant alike; the table shows medians, min-max and the ratio of medians to the
plain build.

    .venv/bin/python benchmarks/bench_record.py [--model resnet] [--repeat 7] [--json out.json]

`--llvm` measures recording LLVM's own passes instead (`llvm_passes=True`: the lowered
module compiled a second time while LLVM prints every function a pass changed, per
kernel above 1 MB of lowered module; `"whole-module"`: as one module however large)
against the plain build and against LLVM's printing alone (TVM's own build with the same
LLVM options, standard error to /dev/null: the part that is LLVM's), and the per-kernel
recording (`llvm_passes="per-kernel"`: each kernel compiled alone, the kernels spread
over this process and worker processes; `PASSLAB_LLVM_WORKERS=1` keeps them here), and
the recording of one kernel's passes (`llvm_passes=NAME`, the kernel with the largest
lowered functions: what a look at one kernel costs).
`--onnx` adds torchvision's ResNet-18 written as an ONNX file with `onnx.helper`
(weights as graph inputs, 64x64):

    .venv/bin/python benchmarks/bench_record.py --llvm --model resnet --onnx --repeat 3

`--only TEXT` keeps the variants whose name contains TEXT (and the plain build), e.g.
`--llvm --only "kernel"` leaves out the whole-module recordings (minutes on a ResNet).
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


def _passlab_llvm(mod, pipe, tgt):
    passlab.build(mod, pipe, llvm_passes=True)


def _passlab_llvm_whole(mod, pipe, tgt):
    passlab.build(mod, pipe, llvm_passes="whole-module")


def _passlab_llvm_per_kernel(mod, pipe, tgt):
    passlab.build(mod, pipe, llvm_passes="per-kernel")


def _largest_kernel(mod, pipe, tgt) -> str:
    """The kernel of `mod`'s build whose lowered functions are the largest (their
    `tvm.ir.save_json` text): the one whose LLVM recording takes longest."""
    key = id(mod)
    if key not in _largest_kernel.found:
        from passlab._tvm.codegen import kernel_of
        from passlab._tvm.llvm import kernel_modules
        from passlab.recording.codegen import _final_module

        trace = passlab.build(mod, pipe).trace
        kernels = list(trace.code.kernels)
        jobs = kernel_modules(_final_module(trace, "host_finalize"), kernels,
                              lambda symbol: kernel_of(symbol, kernels))
        _largest_kernel.found[key] = max(jobs, key=lambda j: len(tvm.ir.save_json(j[1])))[0]
    return _largest_kernel.found[key]


_largest_kernel.found = {}


def _passlab_llvm_one_kernel(mod, pipe, tgt):
    passlab.build(mod, pipe, llvm_passes=_largest_kernel(mod, pipe, tgt))


@contextlib.contextmanager
def _stderr_to_devnull():
    """File descriptor 2 (where LLVM prints) to /dev/null for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _llvm_printing_alone(mod, pipe, tgt):
    """TVM's own build with LLVM printing what each pass changed (the options passlab
    uses), to /dev/null: what LLVM's dumping costs, without passlab reading it."""
    from passlab._tvm.llvm import PRINT_OPTIONS, codegen_target

    printing = codegen_target(tgt, PRINT_OPTIONS)  # as passlab's recording makes it
    with _stderr_to_devnull():
        tvm.relax.build(mod, printing, relax_pipeline=pipe.to_pass())


def _onnx_model() -> str:
    """torchvision's ResNet-18 as an ONNX file (benchmarks/gpu_check.py writes it)."""
    from pathlib import Path

    from gpu_check import onnx_resnet18

    return str(onnx_resnet18(Path(tempfile.mkdtemp(prefix="passlab-onnx-")) / "resnet18.onnx"))


def measure(model: str, repeat: int, variants: dict) -> dict:
    mod = passlab.load(model) if model.endswith(".onnx") else passlab.models.by_name(model)
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


def variants(full: bool, llvm: bool = False) -> dict:
    if llvm:
        return {"plain build": _plain, "passlab record": _passlab,
                "passlab record + LLVM's passes (True)": _passlab_llvm,
                "passlab record + LLVM's passes, whole module": _passlab_llvm_whole,
                "TVM build, LLVM printing to /dev/null": _llvm_printing_alone,
                "passlab record + LLVM's passes per kernel": _passlab_llvm_per_kernel,
                "passlab record + LLVM's passes, largest kernel": _passlab_llvm_one_kernel}
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
    print(f"{'variant':48} {'median s':>9} {'min-max s':>15} {'ratio':>7}", file=out)
    for name, r in rows.items():
        print(f"{name:48} {r['median_s']:9.3f} {r['min_s']:7.3f}-{r['max_s']:<7.3f} "
              f"{r['ratio']:6.2f}x", file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="built-in model (repeatable)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="only plain vs passlab")
    ap.add_argument("--llvm", action="store_true",
                    help="the cost of llvm_passes=True (and of LLVM's printing alone)")
    ap.add_argument("--onnx", action="store_true",
                    help="also torchvision's ResNet-18 as an ONNX file (onnx.helper)")
    ap.add_argument("--only", action="append", metavar="TEXT",
                    help="only the variants whose name contains TEXT (repeatable; the "
                    "plain build is always measured: it is the ratios' base)")
    ap.add_argument("--json", help="write the results here as JSON")
    args = ap.parse_args(argv)
    results = {}
    models = list(args.model or ["resnet"]) + ([_onnx_model()] if args.onnx else [])
    for model in models:
        name = "onnx-resnet18" if model.endswith(".onnx") else model
        chosen = {k: v for k, v in variants(not args.quick, args.llvm).items()
                  if k == "plain build" or not args.only or any(t in k for t in args.only)}
        results[name] = measure(model, args.repeat, chosen)
        print_table(name, results[name])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
