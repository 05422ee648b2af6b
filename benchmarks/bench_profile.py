"""What profiling costs, whether its parts add up, and attribute() with 1 and 2 workers.

1. Per built-in model, `build.profile(repeat=N)` (in place, the default budget), with:
   - in place / instrumented: the kernels' in-place sum over the instrumented run (the
     hooks' cost taken out), and the same with the runtime's own work added (1.00 when
     nothing is left unattributed);
   - instrumented / plain: the instrumented run (hooks taken out) over the plain
     end-to-end median, and the run as clocked with the hooks over the plain one;
   - alone / in place: the median over kernels of each kernel's time alone on copies of
     its arguments over its time inside the run (below 1: slower in place);
   - cost: the profile's wall time against N plain `build.run()` calls (after one
     warm-up run, so the LLVM JIT of the executable is paid before either).
2. `passlab.attribute` over the ResNet's main chain (every enabled Relax pass) with
   `workers=1` and `workers=2`: seconds and speed-up, and the passes that matter most;
   each variant re-run from the full pipeline's recorded prefix (`reuse_prefix=True`,
   the default) and, with `--prefix both`, also built from the model (`False`, what
   attribute did before), the two in alternation so that the same load falls on both.

    .venv/bin/python benchmarks/bench_profile.py [--repeat 10] [--model mlp ...]
        [--no-attribute] [--no-profile] [--prefix on|off|both] [--quick]

`--quick` profiles the MLP alone with repeat=3 and no extra runs, and skips part 2: it
proves the script works. Run time on 2 shared cores is noisy; the intervals are printed
next to the medians.
"""

from __future__ import annotations

import argparse
import statistics
import time

import passlab


def profile_cost(name: str, repeat: int, budget_s: float) -> dict[str, float]:
    b = passlab.build(name)
    b.run()  # JIT and first-call set-up, outside both measurements
    start = time.perf_counter()
    for _ in range(repeat):
        b.run()
    runs = time.perf_counter() - start
    start = time.perf_counter()
    p = b.profile(repeat=repeat, budget_s=budget_s, progress=False)
    took = time.perf_counter() - start
    ratios = [k.alone_s / k.in_place_s for k in p if k.alone_s and k.in_place_s > 0]
    inst = p.instrumented_s
    return dict(runs_s=runs, profile_s=took, e2e_s=p.end_to_end_s, inst_s=inst,
                kernels=len(p), runs=p.repeat, noise_s=p.noise_s,
                in_place=p.kernels_s / inst, with_runtime=(p.kernels_s + p.overhead_s) / inst,
                unattributed_s=p.unattributed_s, net=inst / p.end_to_end_s,
                clocked=p.slowdown, alone=statistics.median(ratios) if ratios else float("nan"),
                hooks_s=p.hook_cost_s)


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
    parser.add_argument("--budget", type=float, default=5.0,
                        help="profile(budget_s=...): seconds of extra runs (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="the MLP alone, repeat=3, no extra runs, no attribute()")
    args = parser.parse_args()
    if args.quick:
        args.model, args.repeat, args.budget, args.no_attribute = ["mlp"], 3, 0.0, True
    if not args.no_profile:
        profile_costs(args.model or list(passlab.models.NAMES), args.repeat, args.budget)
    if not args.no_attribute:
        attribute_times({"on": (True,), "off": (False,), "both": (False, True)}[args.prefix])


def profile_costs(models: list[str], repeat: int, budget_s: float) -> None:
    print(f"== 1. profile(repeat={repeat}, budget_s={budget_s:g}) vs {repeat} plain runs")
    print(f"{'model':<20} {'kernels':>7} {'runs':>4} {'plain ms':>9} {'instr ms':>9} "
          f"{'+-ms':>7} {'in place':>8} {'+runtime':>8} {'unattr ms':>9} {'instr/plain':>11} "
          f"{'clocked':>7} {'alone/in':>8} {'hooks ms':>8} {'profile s':>9} {'cost':>7}")
    for name in models:
        r = profile_cost(name, repeat, budget_s)
        print(f"{name:<20} {r['kernels']:>7} {r['runs']:>4} {r['e2e_s'] * 1e3:>9.3f} "
              f"{r['inst_s'] * 1e3:>9.3f} {r['noise_s'] * 1e3:>7.3f} {r['in_place']:>8.2f} "
              f"{r['with_runtime']:>8.2f} {r['unattributed_s'] * 1e3:>9.3f} "
              f"{r['net']:>11.2f} {r['clocked']:>6.2f}x {r['alone']:>8.2f} "
              f"{r['hooks_s'] * 1e3:>8.3f} {r['profile_s']:>9.2f} "
              f"{r['profile_s'] / r['runs_s']:>6.0f}x", flush=True)


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
