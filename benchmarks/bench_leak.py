"""Memory after dropped builds: resident memory (RSS) after one and after N builds that
were dropped, per built-in model, each in a fresh process; and the same for repeated
failing builds, ``record()``, ``backend.preview`` and ``bisect`` runs (mlp).

A recorded build holds every snapshot of its pipeline; once dropped, all of it must be
freed (issue 11: +5 MiB at most after 20 builds). Each row is measured in its own
process, after ``gc.collect()``, from ``/proc/self/statm``.

    .venv/bin/python benchmarks/bench_leak.py [--builds 20] [--models mlp,resnet]
        [--bisects 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time

import passlab

#: Allowed growth after 20 dropped builds (the target of issue 11).
LIMIT_MIB = 5.0

CHILD = textwrap.dedent("""
    import gc, json, os, sys, time
    import passlab

    def rss_mib():
        gc.collect()
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    kind, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mod = passlab.models.by_name(name)
    pipe = passlab.Pipeline.default("llvm")

    def broken(m):
        raise ValueError("broken on purpose")

    def once():
        if kind == "build":
            passlab.build(mod)
        elif kind == "failed build":
            try:
                passlab.build(mod, pipe.insert(broken, after="FuseTIR"))
            except passlab.BuildError:
                pass
        elif kind == "record":
            import tvm
            with passlab.record():
                tvm.relax.transform.LegalizeOps()(mod)
        elif kind == "preview":
            from passlab.backend import preview
            preview(mod, "tensorrt")
        elif kind == "bisect":
            from passlab.research import bisect
            bisect(mod, pipe.insert(lambda m: m, after="FuseTIR", name="noop"))

    start = time.perf_counter()
    once()
    first = rss_mib()
    for _ in range(n - 1):
        once()
    print(json.dumps(dict(first=first, last=rss_mib(), seconds=time.perf_counter() - start)))
""")


def measure(kind: str, model: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, model, str(n)],
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {model}: {out.stderr[-2000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return dict(kind=kind, model=model, runs=n, first_mib=round(r["first"], 1),
                last_mib=round(r["last"], 1), grew_mib=round(r["last"] - r["first"], 2),
                seconds=round(r["seconds"], 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builds", type=int, default=20, help="dropped builds per model")
    ap.add_argument("--models", default=",".join(passlab.models.NAMES))
    ap.add_argument("--bisects", type=int, default=5, help="bisect runs (mlp)")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    plan = [("build", m, args.builds) for m in args.models.split(",") if m]
    plan += [("failed build", "mlp", args.builds), ("record", "mlp", args.builds),
             ("preview", "mlp", args.builds), ("bisect", "mlp", args.bisects)]
    rows = []
    print(f"{'what':<14} {'model':<20} {'runs':>4} {'RSS after 1':>12} {'after N':>9} "
          f"{'grew':>8} {'seconds':>8}")
    for kind, model, n in plan:
        t = time.perf_counter()
        r = measure(kind, model, n)
        rows.append(r)
        # the limit is +5 MiB for 20 runs; scaled for other counts (noise floor 2 MiB)
        limit = max(2.0, LIMIT_MIB * (n - 1) / 19)
        verdict = "ok" if r["grew_mib"] <= limit else f"LEAK (limit {limit:.1f})"
        print(f"{kind:<14} {model:<20} {n:>4} {r['first_mib']:>9.1f} MiB {r['last_mib']:>9.1f} "
              f"{r['grew_mib']:>+8.2f} {time.perf_counter() - t:>8.1f}  {verdict}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
