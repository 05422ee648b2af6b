"""Mutation fuzzing of saved traces, the long run of ``tests/security/test_trace_fuzz.py``.

Saves a fresh trace of ``passlab.models.mlp()`` (``--model``, ``--target``: another
built-in model or target), writes ``--mutants`` random edits of the
files inside it (indices, references to nodes of the same type or type family, swapped
fields and nodes, nulls, numbers, strings of every length with lone surrogates and
control characters, types, truncation, duplication) and, for one in ten, of the zip
container (compression method, encrypted flag, declared sizes, entry count, a duplicate
member), loads each one in a child process and calls ``to_text()``,
``changed()`` and ``to_html()``, and prints how many ended in each way. Every mutant
must end "ok" or "TraceFileError": a signal, a timeout or another exception is a
finding, printed with the edits that caused it (the mutant is kept with ``--keep``).
``--print-ir`` also prints every function of each mutant that loads (the report's and the
explorer's work).

    .venv/bin/python benchmarks/fuzz_traces.py --mutants 2000 --seed 1 [--print-ir]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "security"))

from trace_mutants import make_mutants, run_mutants

import passlab


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds one mutant may take before it counts as a hang")
    ap.add_argument("--print-ir", action="store_true",
                    help="also print every function of each mutant that loads (as the "
                         "report and explorer do); an exception there is 'print-error'")
    ap.add_argument("--keep", help="folder to keep the mutants in (default: a temporary one)")
    ap.add_argument("--model", default="mlp", choices=passlab.models.NAMES,
                    help="the built-in model whose trace is mutated (default: mlp)")
    ap.add_argument("--target", default="llvm",
                    help="the build's target, e.g. cuda (built without a GPU; default: llvm)")
    args = ap.parse_args(argv)
    folder = Path(args.keep or tempfile.mkdtemp(prefix="passlab-fuzz-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        model = passlab.models.by_name(args.model)
        base = passlab.build(model, target=args.target).trace.save(
            folder / f"{args.model}.trace.zip")
        what = make_mutants(base, folder, args.mutants, args.seed)
        res = run_mutants(list(what), what, timeout=args.timeout, print_ir=args.print_ir,
                          progress=lambda line: print("  finding:", line, flush=True))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"{args.mutants} mutants (seed {args.seed}) in {res.seconds:.1f} s, "
          f"{res.children} child process(es)")
    for outcome, n in res.outcomes.most_common():
        print(f"  {outcome:16s} {n}")
    for path, outcome, edits in res.findings:
        print(f"FINDING {Path(path).name}: {outcome}\n    edits: {edits}")
    return 1 if res.findings else 0


if __name__ == "__main__":
    sys.exit(main())
