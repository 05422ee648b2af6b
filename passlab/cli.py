"""The ``passlab`` command: print pipelines, record builds, write reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import models


def _cmd_passes(args: argparse.Namespace) -> int:
    from .pipeline import Pipeline

    pipe = Pipeline.default(args.target, variant=args.variant)
    print(pipe.to_text())
    used = Pipeline.relax_build_variant(args.target)
    print(f"\nrelax.build/tvm.compile with no pipeline runs the {used!r} variant for {args.target}.")
    return 0


def _seed_pass():
    """The seed-1 user pass: after the default optimizations and fusion, before memory
    planning, list the fused kernels and the temporaries between them."""
    report: dict[str, object] = {}

    def after_fusion_report(mod):
        from . import _tvm

        fns = _tvm.functions(mod)
        report["kernels"] = sorted(n for n, f in fns.items() if _tvm.is_prim_func(f))
        return mod

    return after_fusion_report, report


def _cmd_demo(args: argparse.Namespace) -> int:
    from .build import build, max_abs_diff
    from .pipeline import Pipeline

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    mod = models.by_name(args.model)
    user_pass, seen = _seed_pass()
    pipe = Pipeline.default("llvm").insert(user_pass, after="legalize")
    print(pipe.to_text(), end="\n\n")
    b = build(mod, pipe)
    trace = b.trace
    print(trace.summary())
    print(f"user pass {user_pass.__name__!r} ran after FuseTIR and saw "
          f"{len(seen['kernels'])} TIR kernels: {', '.join(seen['kernels'][:6])}"
          f"{', ...' if len(seen['kernels']) > 6 else ''}")
    ref = build(mod)
    diff = max_abs_diff(b.run(), ref.run())
    print(f"outputs vs the unmodified pipeline: max abs diff {diff:g}")
    (out / "trace.txt").write_text(trace.to_text(all_steps=True) + "\n")
    trace.to_dataframe().to_csv(out / "trace.csv")
    print(f"\nwrote {out / 'trace.txt'} and {out / 'trace.csv'}")
    return 0 if diff == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="passlab", description="Record, edit and explore Apache TVM's pass pipeline.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("passes", help="print the default Relax pipeline of a target")
    p.add_argument("--target", default="llvm", help="llvm (default), cuda, rocm or metal")
    p.add_argument("--variant", default="fused", choices=("fused", "build"),
                   help="fused: get_default_pipeline; build: what relax.build runs on CPU")
    p.set_defaults(func=_cmd_passes)

    d = sub.add_parser("demo", help="record a build of a built-in model with a user pass "
                                    "inserted after fusion, and write the trace")
    d.add_argument("--model", default="resnet", choices=models.NAMES)
    d.add_argument("-o", "--output", default="passlab-demo", help="output folder")
    d.set_defaults(func=_cmd_demo)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (KeyError, ValueError, TypeError) as exc:
        print(f"passlab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
