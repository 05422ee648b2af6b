"""A sweep of the built-in models with 2 worker processes vs 1: the speed-up.

Every built-in model (mlp, resnet, transformer, transformer-dynamic, mobilenet) is built
with the default pipeline and the unfused "build" variant (10 jobs), recorded and run on
seeded inputs, first with ``workers=1``, then with ``workers=2`` (alternating, ``--repeat``
times). Each sweep starts its own worker processes, so the seconds include starting them
and their build processes (importing TVM once per worker). No ``out=``: no report is written, the figure
is about builds. Both give the same table (checked on the stable columns).

    .venv/bin/python benchmarks/bench_sweep.py [--repeat 1] [--model mlp --model resnet ...]

On a machine whose two cores are shared with other work, the speed-up is bounded by what
the other work leaves free.
"""

from __future__ import annotations

import argparse
import statistics
import time

import passlab

STABLE = ["model", "pipeline", "status", "passes", "kernels", "peak_bytes",
          "peak_bytes_unplanned", "max_abs_diff"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=passlab.models.NAMES,
                        help="models to sweep (default: every built-in model)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    models = args.model or list(passlab.models.NAMES)
    pipelines = {"default": "fused", "unfused": "build"}
    seconds: dict[int, list[float]] = {1: [], 2: []}
    tables = {}
    for _ in range(args.repeat):
        for workers in (1, 2):
            start = time.perf_counter()
            result = passlab.sweep(models, pipelines, workers=workers, progress=False)
            seconds[workers].append(time.perf_counter() - start)
            tables[workers] = result.to_dataframe()[STABLE]
            print(f"workers={workers}: {seconds[workers][-1]:.1f} s "
                  f"({result.counts}, build seconds summed: "
                  f"{sum(r.build_s or 0 for r in result):.1f})", flush=True)
    assert tables[1].equals(tables[2]), "1 and 2 workers gave different tables"
    one, two = statistics.median(seconds[1]), statistics.median(seconds[2])
    print(f"\n{len(models)} models x {len(pipelines)} pipelines = {len(tables[1])} jobs")
    print(f"workers=1: {one:.1f} s   workers=2: {two:.1f} s   speed-up {one / two:.2f}x")


if __name__ == "__main__":
    main()
