"""Re-run from an edit vs a full rebuild, for two kinds of edit.

"late": a pass is inserted after CallTIRRewrite (a no-op that counts the kernels, the kind
of pass one adds while studying memory planning). ``passlab.rerun`` resumes from the
recorded module before StaticPlanBlockMemory, and since the kernels come out identical
it reuses the original's compiled library: TIR lowering and codegen do not run again.
"kernels": FuseOps and FuseTIR are disabled, so the kernels change and the re-run must
compile them: it can only save the Relax passes before the edit.
Runs are interleaved (full, rerun, full, rerun, ...) so that machine noise hits both
alike; the table shows medians, min-max and the ratios rerun / full of medians and of
minimums (the steadier one on a shared machine). Both give the same outputs (checked
once per model and edit).

    .venv/bin/python benchmarks/bench_rerun.py [--model resnet] [--model transformer] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import passlab
from passlab.research import rerun
from passlab.research.rerun import pipeline_chain

MODELS = {
    "resnet": lambda: passlab.models.resnet(),
    "transformer": lambda: passlab.models.transformer(layers=4),
    "mlp": lambda: passlab.models.mlp(),
}


def count_kernels(mod):
    """The inserted pass: looks at the module, returns it unchanged."""
    count_kernels.last = sum(1 for gv in mod.get_global_vars() if gv.name_hint.startswith("fused_"))
    return mod


EDITS = {
    "late": lambda p: p.insert(count_kernels, after="CallTIRRewrite"),
    "kernels": lambda p: p.disable("FuseOps").disable("FuseTIR"),
}


def measure(model: str, repeat: int, edit: str) -> dict:
    mod = MODELS[model]()
    original = passlab.build(mod)
    edited = EDITS[edit](original.pipeline)
    times: dict[str, list[float]] = {"full rebuild": [], "rerun": []}
    for _ in range(repeat):
        t = time.perf_counter()
        full = passlab.build(mod, edited)
        times["full rebuild"].append(time.perf_counter() - t)
        t = time.perf_counter()
        again = rerun(original, edited)
        times["rerun"].append(time.perf_counter() - t)
    inputs = original.inputs(0)
    diff = passlab.max_abs_diff(full.run(*inputs), again.run(*inputs))
    chain = pipeline_chain(original.trace, original.pipeline)
    skipped = sum(step.seconds or 0.0 for _, step in chain[:again.reused])
    return {"times": times, "diff": diff, "note": again.note, "skipped": skipped,
            "build": original.seconds, "kernels_reused": again.trace.kernels_reused}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    for model, edit in [(m, e) for m in args.model or ["resnet", "transformer"] for e in EDITS]:
        r = measure(model, args.repeat, edit)
        full = statistics.median(r["times"]["full rebuild"])
        label = "transformer(layers=4)" if model == "transformer" else model
        print(f"{label}, edit {edit!r}: {r['note']}")
        best = min(r["times"]["full rebuild"])
        print(f"{'variant':<14}{'median s':>10}{'min-max s':>16}{'ratio':>8}{'min ratio':>11}")
        for name, ts in r["times"].items():
            med = statistics.median(ts)
            print(f"{name:<14}{med:>10.3f}{f'{min(ts):.3f}-{max(ts):.3f}':>16}"
                  f"{med / full:>7.2f}x{min(ts) / best:>10.2f}x")
        tir = ("compiled kernels reused: TIR lowering and codegen skipped" if r["kernels_reused"]
               else "kernels changed: TIR lowering and codegen ran again")
        print(f"the reused Relax passes took {r['skipped']:.3f} s of the recorded "
              f"{r['build']:.3f} s build; {tir}")
        print(f"max abs difference of the outputs: {r['diff']}\n")


if __name__ == "__main__":
    main()
