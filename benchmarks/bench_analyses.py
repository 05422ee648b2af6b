"""Cost of the two structural analyses on the largest snapshots of the built-in models.

For ``transformer(layers=12)`` and ``resnet()``, applies the fused CPU pipeline (the stage
lists of ``tvm.relax.backend.cpu_generic.pipeline``) pass by pass, picks the snapshot whose
entry function has the most bindings (the most work for both analyses) and the FuseTIR
snapshot (the fused graph users look at), and times, best of ``--repeat`` runs:

* ``fused_graph(mod)`` and ``.to_dot()`` (and ``collapse=True``),
* ``buffers(mod)`` and ``.to_text()``.

Then, for every built-in model (``passlab.models.NAMES``), the liveness picture
``buffers(mod).plot().to_svg()`` (the report computed beforehand) after FuseTIR,
CallTIRRewrite and StaticPlanBlockMemory, and the before/after picture
``plot(compare=...)``: target <= 100 ms each.

Run: ``.venv/bin/python benchmarks/bench_analyses.py [--repeat 5] [--only plot]``
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tvm  # noqa: E402
from tvm.relax.backend.cpu_generic import pipeline as cpu  # noqa: E402

import passlab.models  # noqa: E402
from passlab._tvm import ir as _ir  # noqa: E402
from passlab.analysis.buffers import buffers  # noqa: E402
from passlab.analysis.graph import fused_graph  # noqa: E402

MODELS: dict[str, Callable[[], tvm.IRModule]] = {
    "transformer(layers=12)": lambda: passlab.models.transformer(layers=12),
    "resnet()": passlab.models.resnet,
}


def snapshots(mod: tvm.IRModule) -> list[tuple[str, tvm.IRModule]]:
    """``(pass name, module after it)`` for every top-level pass of the fused pipeline."""
    target = tvm.target.Target("llvm")
    out = [("input", mod)]
    with target:
        for stage in (cpu.library_dispatch_passes, cpu.legalize_passes,
                      cpu.dataflow_lower_passes, cpu.finalize_passes):
            for p in stage(target):
                mod = p(mod)
                out.append((p.info.name, mod))
    return out


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=("analyses", "plot"), default=None,
                        help="run one of the two tables")
    args = parser.parse_args(argv)
    if args.only != "plot":
        analyses(args)
    if args.only != "analyses":
        plots(args)


def plots(args: argparse.Namespace) -> None:
    """plot() per built-in model: one picture per planning regime, and the pair."""
    stages = ("FuseTIR", "CallTIRRewrite", "StaticPlanBlockMemory")
    print(f"\n{'model':<22} " + " ".join(f"{s:>22}" for s in stages)
          + f" {'compare':>9} {'blocks':>7}   (plot().to_svg() ms, best of {args.repeat})")
    for name in passlab.models.NAMES:
        snaps = dict(snapshots(passlab.models.by_name(name)))
        reports = [buffers(snaps[s]) for s in stages]
        cols = [best_ms(lambda r=r: r.plot().to_svg(), args.repeat) for r in reports]
        pair = best_ms(lambda: reports[1].plot(compare=reports[2]).to_svg(), args.repeat)
        blocks = [len(r.plot().panels[0].blocks) for r in reports]
        print(f"{name:<22} " + " ".join(f"{c:>22.1f}" for c in cols) + f" {pair:>9.1f} "
              + f"{'/'.join(map(str, blocks)):>7}")


def analyses(args: argparse.Namespace) -> None:
    print(f"{'model':<24} {'snapshot':<22} {'bindings':>8} {'graph':>8} {'+dot':>8} "
          f"{'collapse':>9} {'buffers':>8} {'+text':>8}   (ms, best of {args.repeat})")
    for label, make in MODELS.items():
        snaps = snapshots(make())

        def size(m: tvm.IRModule) -> int:
            return sum(1 for _ in _ir.iter_bindings(m[_ir.main_function(m)]))

        largest = max(snaps, key=lambda s: size(s[1]))
        fusetir = next(s for s in snaps if s[0] == "FuseTIR")
        for name, mod in dict([largest, fusetir]).items():
            g = fused_graph(mod)
            r = buffers(mod)
            cols = [
                best_ms(lambda: fused_graph(mod), args.repeat),
                best_ms(lambda: fused_graph(mod).to_dot(), args.repeat),
                best_ms(lambda: fused_graph(mod, collapse=True), args.repeat),
                best_ms(lambda: buffers(mod), args.repeat),
                best_ms(lambda: buffers(mod).to_text(), args.repeat),
            ]
            print(f"{label:<24} {name:<22} {size(mod):>8} "
                  + " ".join(f"{c:>8.1f}" for c in cols[:2]) + f" {cols[2]:>9.1f} "
                  + " ".join(f"{c:>8.1f}" for c in cols[3:])
                  + f"   ({len(g.nodes)} nodes, {len(r.tensors)} tensors)")


if __name__ == "__main__":
    main()
