"""What profiling costs, whether its parts add up, and attribute() with 1 and 2 workers.

1. Per built-in model: ``build.profile(repeat=N)`` against N plain ``build.run()`` calls
   (after one warm-up run, so the LLVM JIT of the executable is paid before either), and
   the ratio of the kernels' sum plus the runtime overhead to the end-to-end median (1.00
   means the parts timed alone account for the whole run).
2. ``passlab.attribute`` over the ResNet's main chain (every enabled Relax pass) with
   ``workers=1`` and ``workers=2``: seconds and speed-up, and the passes that matter most;
   each variant re-run from the full pipeline's recorded prefix (``reuse_prefix=True``,
   the default) and, with ``--prefix both``, also built from the model (``False``, what
   attribute did before), the two in alternation so that the same load falls on both.

    .venv/bin/python benchmarks/bench_profile.py [--repeat 10] [--model mlp ...]
        [--no-attribute] [--no-profile] [--prefix on|off|both]

Run time on 2 shared cores is noisy; the spreads are printed next to the medians.
"""

from __future__ import annotations

import argparse
import time

import passlab


def profile_cost(name: str, repeat: int) -> dict[str, float]:
    b = passlab.build(name)
    b.run()  # JIT and first-call set-up, outside both measurements
    start = time.perf_counter()
    for _ in range(repeat):
        b.run()
    runs = time.perf_counter() - start
    start = time.perf_counter()
    p = b.profile(repeat=repeat)
    took = time.perf_counter() - start
    return dict(runs_s=runs, profile_s=took, e2e_s=p.end_to_end_s, spread=p.end_to_end_spread,
                kernels_s=p.kernels_s, overhead_s=p.overhead_s, kernels=len(p),
                ratio=(p.kernels_s + p.overhead_s) / p.end_to_end_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=passlab.models.NAMES,
                        help="models to profile (default: every built-in model)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-attribute", action="store_true",
                        help="skip attribute() over the ResNet main chain")
    parser.add_argument("--no-profile", action="store_true",
                        help="skip the per-model profiling cost (part 1)")
    parser.add_argument("--prefix", choices=("on", "off", "both"), default="on",
                        help="attribute(reuse_prefix=...): on (default), off, or both")
    args = parser.parse_args()
    if not args.no_profile:
        profile_costs(args.model or list(passlab.models.NAMES), args.repeat)
    if not args.no_attribute:
        attribute_times({"on": (True,), "off": (False,), "both": (False, True)}[args.prefix])


def profile_costs(models: list[str], repeat: int) -> None:
    print(f"== 1. profile(repeat={repeat}) vs {repeat} plain runs; "
          "(kernels + overhead) / end to end")
    print(f"{'model':<20} {'kernels':>7} {'runs s':>8} {'profile s':>9} {'cost':>7} "
          f"{'e2e ms':>9} {'spread':>6} {'kernels ms':>10} {'overhead ms':>11} {'ratio':>6}")
    for name in models:
        r = profile_cost(name, repeat)
        print(f"{name:<20} {r['kernels']:>7} {r['runs_s']:>8.3f} {r['profile_s']:>9.2f} "
              f"{r['profile_s'] / r['runs_s']:>6.0f}x {r['e2e_s'] * 1e3:>9.3f} "
              f"{r['spread']:>6.0%} {r['kernels_s'] * 1e3:>10.3f} "
              f"{r['overhead_s'] * 1e3:>11.3f} {r['ratio']:>6.2f}", flush=True)


def attribute_times(prefixes: tuple[bool, ...]) -> None:
    print("\n== 2. attribute('resnet') over the main chain, repeat=3")
    seconds = {}
    for workers in (1, 2):
        for prefix in prefixes:
            start = time.perf_counter()
            a = passlab.attribute("resnet", repeat=3, workers=workers, reuse_prefix=prefix)
            seconds[workers, prefix] = time.perf_counter() - start
            reused = sum(bool(r.reused) for r in a)
            print(f"workers={workers} reuse_prefix={prefix}: {seconds[workers, prefix]:.1f} s, "
                  f"{len(a)} passes ({reused} reused the full pipeline's kernels)", flush=True)
    print(a.to_text())
    for prefix in prefixes:
        print(f"reuse_prefix={prefix}: speed-up with 2 workers: "
              f"{seconds[1, prefix] / seconds[2, prefix]:.2f}x")
    if len(prefixes) == 2:
        for workers in (1, 2):
            print(f"workers={workers}: prefix reuse {seconds[workers, False]:.1f} s -> "
                  f"{seconds[workers, True]:.1f} s "
                  f"({seconds[workers, False] / seconds[workers, True]:.2f}x)")


if __name__ == "__main__":
    main()
