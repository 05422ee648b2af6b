"""Cost of the two structural analyses on the largest snapshots of the built-in models.

For ``transformer(layers=12)`` and ``resnet()``, applies the fused CPU pipeline (the stage
lists of ``tvm.relax.backend.cpu_generic.pipeline``) pass by pass, picks the snapshot whose
entry function has the most bindings (the most work for both analyses) and the FuseTIR
snapshot (the fused graph users look at), and times, best of ``--repeat`` runs:

* ``fused_graph(mod)`` and ``.to_dot()`` (and ``collapse=True``),
* ``buffers(mod)`` and ``.to_text()``.

Run: ``.venv/bin/python benchmarks/bench_analyses.py [--repeat 5]``
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
    args = parser.parse_args(argv)
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
