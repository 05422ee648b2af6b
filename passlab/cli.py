"""The `passlab` command: print pipelines, record builds, write reports."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from passlab import models
from passlab.errors import CliError, DeviceUnavailableError, WorkerError


def _cmd_passes(args: argparse.Namespace) -> int:
    from passlab.pipeline import Pipeline

    pipe = Pipeline.default(args.target, variant=args.variant)
    print(pipe.to_text())
    used = Pipeline.relax_build_variant(args.target)
    from passlab._tvm import codegen, target

    kind = target(args.target).kind.name
    print(f"\nTIR stages ({', '.join(pipe.tir_stage_names)}) run in tvm.tirx.build and are "
          f"edited like the Relax ones; code generation for {kind}: "
          f"{codegen.codegen_status(kind)}.")
    print(f"relax.build/tvm.compile with no pipeline runs the {used!r} variant for {args.target}.")
    return 0


def _seed_pass():
    """The seed-1 user pass: after the default optimizations and fusion, before memory
    planning, look at the fused kernels and the temporary buffers between them."""
    report: dict[str, Any] = {}

    def after_fusion_report(mod):
        from passlab import _tvm
        from passlab.analysis.buffers import buffers

        fns = _tvm.functions(mod)
        report["kernels"] = sorted(n for n, f in fns.items() if _tvm.is_prim_func(f))
        report["fused"] = [n for n in report["kernels"] if n.startswith("fused_")]
        report["buffers"] = buffers(mod)
        return mod

    return after_fusion_report, report


def _writable(path: Path, *, folder: bool = False, inside: tuple[str, ...] = ()) -> Path:
    """Check, before a long build, that `-o path` can be written: a file (or a folder
    with the files `inside`) whose nearest existing parent folder takes new files. A
    `CliError` (exit status 2) says what is wrong."""
    if folder and path.exists() and not path.is_dir():
        raise CliError(f"-o {path}: that is a file, not a folder; give a folder to write into")
    if not folder and path.is_dir():
        raise CliError(f"-o {path}: that is a folder; give the file to write, e.g. "
                       f"{path / 'report.html'}")
    for name in inside:
        if (path / name).is_dir():
            raise CliError(f"-o {path}: {path / name} is a folder; passlab writes a file there")
    existing = path if folder else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise CliError(f"-o {path}: {existing} is a file, so nothing can be written under it")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
        for name in ((path.name,) if not folder else inside):
            target = (path.parent if not folder else path) / name
            if target.exists():
                with open(target, "ab"):  # opening to append changes nothing
                    pass
    except OSError as exc:
        raise CliError(f"-o {path}: cannot write there ({exc.strerror or exc}); choose "
                       "another output path") from None
    return path


def _cmd_demo(args: argparse.Namespace) -> int:
    from passlab._render import human_bytes, to_csv
    from passlab.analysis.buffers import buffers
    from passlab.pipeline import Pipeline
    from passlab.recording.build import build, max_abs_diff

    out = _writable(Path(args.output), folder=True,
                    inside=("report.html", "trace.txt", "trace.csv"))
    out.mkdir(parents=True, exist_ok=True)
    mod = models.by_name(args.model)
    user_pass, seen = _seed_pass()
    pipe = Pipeline.default("llvm").insert(user_pass, after="legalize")
    names = list(pipe.names)
    where = names.index(user_pass.__name__)
    print(f"pipeline: TVM's default for llvm, {len(names)} passes, with the user pass "
          f"{user_pass.__name__!r} inserted at #{where}, after the legalize stage "
          f"(`passlab passes` lists them all)\n")
    b = build(mod, pipe)
    trace = b.trace
    print(trace.summary())
    temps = seen["buffers"]
    big = sorted(temps.tensors, key=lambda t: -(t.bytes or 0))[:3]
    print(f"\nuser pass {user_pass.__name__!r} ran after FuseTIR, before memory planning, and saw "
          f"{len(seen['kernels'])} TIR kernels ({len(seen['fused'])} fused) and "
          f"{len(temps.tensors)} temporary tensors between them: peak "
          f"{human_bytes(temps.peak_bytes)} live at once, {human_bytes(temps.total_bytes)} "
          "in all; largest:")
    for t in big:
        print(f"  {t.name}: {t.shape_text} {t.dtype}, "
              f"{human_bytes(t.bytes or 0)}, {t.producer} -> {', '.join(t.consumers) or 'output'}")
    steps = {s.name: s for s in trace.main_chain()}
    if "CallTIRRewrite" in steps and "StaticPlanBlockMemory" in steps:
        before = buffers(steps["CallTIRRewrite"])
        after = buffers(steps["StaticPlanBlockMemory"])
        print(f"memory planning: {len(before.allocations)} allocations, "
              f"{human_bytes(before.total_bytes)} -> {len(after.allocations)} allocations, "
              f"{human_bytes(after.total_bytes)} (StaticPlanBlockMemory reuses storages)")
    ref = build(mod)
    diff = max_abs_diff(b.run(), ref.run())
    print(f"outputs vs the unmodified pipeline: max abs diff {diff:g}")
    (out / "trace.txt").write_text(trace.to_text(all_steps=True) + "\n")
    to_csv(trace.to_dataframe(), out / "trace.csv")
    report = trace.write_report(out / "report.html")
    print(f"\nwrote {report} (open it in a browser: works offline), "
          f"{out / 'trace.txt'} and {out / 'trace.csv'}")
    return 0 if diff == 0 else 1


_TARGET_HELP = ("llvm (default), c, cuda, rocm or metal, with options as in "
                "'llvm -mcpu=x86-64 -mattr=+avx2' or as JSON ('{\"kind\": \"llvm\", ...}')")
_INSERT_SPEC = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_][\w.]*)"
                          r"@(?P<where>after|before)=(?P<anchor>\S+)$")
_INSERT_FORM = ("module:function@after=PassOrStage (or @before=...), "
                "e.g. mypkg.passes:count@after=legalize")


def _load_insert(spec: str) -> tuple[Any, str, str]:
    """(user pass, "after" or "before", anchor) from an `--insert` spec."""
    m = _INSERT_SPEC.match(spec.strip())
    if m is None:
        raise CliError(f"--insert {spec!r} is not of the form {_INSERT_FORM}")
    module_name, attr = m["module"], m["attr"]
    # Like `python -m`, find user modules in the current folder.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise CliError(f"--insert {spec!r}: cannot import module {module_name!r}: "
                       f"{type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CliError(f"--insert {spec!r}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj, m["where"], m["anchor"]


def _size_text(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} KB"


def _cmd_report(args: argparse.Namespace) -> int:
    from passlab.errors import BuildError
    from passlab.models.importers import resolve_model
    from passlab.pipeline import Pipeline
    from passlab.recording.build import build
    from passlab.views.report import REPORT_FUNCTIONS, write_report

    _writable(Path(args.output))
    if args.profile:
        _time_here(args.target)
    inserts = [_load_insert(spec) for spec in args.insert]
    mod = resolve_model(args.model, trust=args.trust)
    pipe = Pipeline.default(args.target, variant=args.variant)
    for fn, where, anchor in inserts:
        pipe = pipe.insert(fn, **{where: anchor})
    if args.llvm_option:
        try:
            pipe = pipe.llvm_options(*args.llvm_option)
        except ValueError as exc:
            raise CliError(f"--llvm-option: {exc}") from None
    start = time.perf_counter()
    status = 0
    try:
        built = build(mod, pipe, llvm_passes=tuple(args.llvm_kernel) or (
            "per-kernel" if args.llvm_per_kernel else args.llvm_passes))
        trace = built.trace
    except BuildError as err:
        trace = err.trace
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"passlab: build failed: {first}", file=sys.stderr)
        status = 1
    seconds = time.perf_counter() - start
    # --profile: the report's "Run time" section (a failed build has nothing to time)
    prof = (built.profile(repeat=args.repeat, budget_s=args.budget)
            if args.profile and status == 0 else None)
    # a file's name, not its path: reports are shared, and the path is the writer's own
    name = Path(args.model).name if args.model not in models.NAMES else args.model
    title = f"{name} ({args.variant}, {pipe.target})"
    if pipe.user_passes:
        title += " + " + ", ".join(e.name for e in pipe.user_passes)
    start = time.perf_counter()
    out = write_report(trace, args.output, title=title,
                       max_functions=None if args.all_functions else REPORT_FUNCTIONS,
                       full=args.full, profile=prof)
    took = time.perf_counter() - start
    size = out.stat().st_size
    print(f"recorded {len(trace)} pass calls in {seconds:.2f} s; wrote the report in {took:.2f} s")
    if trace.llvm_summary is not None:
        s = trace.llvm_summary
        print(f"LLVM: {s.changed:,} of its {s.runs:,} pass runs changed the IR "
              f"({s.seconds:.2f} s to record)")
    if prof is not None:
        print(prof.summary())
    print(f"wrote {out} ({_size_text(size)})")
    return status


_SWEEP_FORM = ("NAME=BASE[+INSERT...] where BASE is default or build and each INSERT is "
               + _INSERT_FORM + ", e.g. mine=default+mypkg.passes:count@after=legalize")


def _sweep_pipeline(spec: str, target: str) -> tuple[str, Any]:
    """(name, Pipeline) from a `--pipeline` spec; the same inserts as `report --insert`."""
    from passlab.pipeline import Pipeline

    name, sep, body = spec.strip().partition("=")
    if not sep:  # a bare "default" or "build" names itself
        name, body = spec.strip(), spec.strip()
    base, *inserts = body.split("+")
    if not name or base not in ("default", "build"):
        raise CliError(f"--pipeline {spec!r} is not of the form {_SWEEP_FORM}")
    pipe = Pipeline.default(target, variant="fused" if base == "default" else "build")
    for insert in inserts:
        fn, where, anchor = _load_insert(insert)
        pipe = pipe.insert(fn, **{where: anchor})
    return name, pipe


_TRUST_HELP = ("read .pt2 model files that hold pickles or compiled code (this runs code "
               "from the file: only for files you trust); without it they are refused")


def _finite_seconds(text: str, *, zero: bool) -> float:
    """A finite number of seconds from the command line: above 0, or at least 0 with
    `zero`; anything else is argparse's error, naming what it takes."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 if zero else value > 0) or value == float("inf"):
        what = "a number of seconds (0 or more)" if zero else "a positive number of seconds"
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def _seconds(text: str) -> float:
    """`--timeout`: a positive, finite number of seconds."""
    return _finite_seconds(text, zero=False)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from passlab.research.sweep import sweep

    pipes: dict[str, Any] = {}
    for spec in args.pipeline or ["default"]:
        name, pipe = _sweep_pipeline(spec, args.target)
        if name in pipes:
            raise CliError(f"two --pipeline options are named {name!r}; give each pipeline "
                           f"its own name ({_SWEEP_FORM})")
        pipes[name] = pipe
    try:  # a bar on a terminal (jobs done, failures, time left); PASSLAB_PROGRESS=0/1
        result = sweep(args.models, pipes, workers=args.workers, out=args.output,
                       timeout=args.timeout, progress=None, trust=args.trust)
    except (KeyboardInterrupt, WorkerError) as exc:
        return _stopped(exc)
    print(result.to_text())
    index = result.to_html(Path(args.output) / "index.html")
    print(f"wrote {index} (every job's report and trace are linked from it)")
    return 0 if all(r.status == "ok" for r in result) else 1


def _profile_pipeline(spec: str | None, target: str) -> Any:
    """The pipeline of `profile`/`attribute`: the default, or a `--pipeline` spec."""
    from passlab.pipeline import Pipeline

    return Pipeline.default(target) if spec is None else _sweep_pipeline(spec, target)[1]


#: The most bytes all `--inputs` arrays together may hold: 4 GiB, or half the machine's
#: memory where that is less. Each .npy header is checked against it (and against the
#: file's own size) before any array is read, so a 138-byte file claiming 2^40 floats is
#: refused, not allocated.
INPUT_BYTES = 4 << 30


def _input_budget() -> int:
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return INPUT_BYTES
    return min(INPUT_BYTES, memory // 2)


def _npy_bytes(path: str) -> int:
    """The bytes the array of .npy file `path` holds, from its header alone; a
    CliError when the header is not one numpy writes or claims more than the file has."""
    import numpy as np
    from numpy.lib import format as npy

    from passlab._render import human_bytes

    with open(path, "rb") as f:
        version = npy.read_magic(f)
        header = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
        if version not in header:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, _, dtype = header[version](f, max_header_size=10_000)
        if dtype.hasobject:
            raise ValueError("it holds Python objects (pickles), which passlab never reads")
        n = int(np.prod(shape, dtype=object)) * dtype.itemsize
        have = os.fstat(f.fileno()).st_size - f.tell()
    if n > have:
        raise CliError(f"--inputs {path!r}: its header claims {human_bytes(n)} of "
                       f"{dtype} {tuple(shape)} but the file holds {human_bytes(have)} of "
                       "data: a truncated or forged file; save each input with "
                       "numpy.save('x.npy', array)")
    return n


def _input_arrays(paths: list[str]) -> list[Any]:
    """`--inputs`: .npy files, read without pickles, each header checked against the
    file's size and all of them against `INPUT_BYTES` before any is read."""
    import numpy as np

    from passlab._render import human_bytes

    sizes = []
    for p in paths:
        try:
            sizes.append(_npy_bytes(p))
        except (OSError, ValueError) as exc:
            raise CliError(f"--inputs {p!r}: not a readable .npy array file ({exc}); save "
                           "each input with numpy.save('x.npy', array)") from None
    budget = _input_budget()
    if sum(sizes) > budget:
        raise CliError(f"--inputs: the arrays hold {human_bytes(sum(sizes))}, more than the "
                       f"{human_bytes(budget)} passlab reads as inputs (4 GiB, or half this "
                       "machine's memory); give smaller inputs")
    out = []
    for p in paths:
        try:
            out.append(np.load(p, allow_pickle=False))
        except (OSError, ValueError) as exc:
            raise CliError(f"--inputs {p!r}: not a readable .npy array file ({exc}); save "
                           "each input with numpy.save('x.npy', array)") from None
    return out


def _cmd_profile(args: argparse.Namespace) -> int:
    from passlab.errors import BuildError
    from passlab.models.importers import resolve_model
    from passlab.recording.build import build

    pipe = _profile_pipeline(args.pipeline, args.target)
    _time_here(pipe.target)  # before the build: a device that is absent is one line
    inputs = _input_arrays(args.inputs)
    try:
        built = build(resolve_model(args.model), pipe)
    except BuildError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"passlab: build failed: {first}", file=sys.stderr)
        return 1
    prof = built.profile(*inputs, repeat=args.repeat, seed=args.seed, budget_s=args.budget)
    print(prof.to_text())
    return 0


def _time_here(target: Any) -> None:
    """DeviceUnavailableError (one line, exit status 2) when `target`'s device is not
    here: said before a build that could not be timed."""
    from passlab._tvm.devices import device_of

    device_of(target, "time")


def _cmd_attribute(args: argparse.Namespace) -> int:
    from passlab.research.attribute import attribute

    pipe = _profile_pipeline(args.pipeline, args.target)
    inputs = _input_arrays(args.inputs) if args.inputs else args.seed
    try:  # a bar on a terminal (jobs done, failures, time left); PASSLAB_PROGRESS=0/1
        result = attribute(args.model, pipe, passes=args.passes, inputs=inputs,
                           repeat=args.repeat, workers=args.workers, progress=None)
    except (KeyboardInterrupt, WorkerError) as exc:
        return _stopped(exc)
    print(result.to_text())
    return 0 if result.status == "ok" else 1


def _stopped(exc: BaseException) -> int:
    """A sweep or an attribution that stopped early: the rows that finished, then why
    (exit status 130 for Ctrl-C, 1 when the workers died)."""
    partial = getattr(exc, "partial", None)
    if partial is not None:
        print(partial.to_text())
    if isinstance(exc, KeyboardInterrupt):
        print("passlab: interrupted; the rows above are the jobs that had finished",
              file=sys.stderr)
        return 130
    print(f"passlab: error: {exc}", file=sys.stderr)
    return 1


_BUDGET_HELP = ("seconds of measuring after which no more runs are added while a median's "
                "95%% interval is wider than +-5%% (default 5; 0: exactly --repeat runs)")


def _budget(text: str) -> float:
    """`--budget`: a finite number of seconds, at least 0."""
    return _finite_seconds(text, zero=True)


def _positive(text: str) -> int:
    """`--repeat`, `--workers`: an int of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _cmd_export(args: argparse.Namespace) -> int:
    from passlab.views.export import export_notebook

    source = Path(args.notebook)
    if not source.is_file():
        raise CliError(f"no notebook at {source}")
    out = Path(args.output) if args.output else source.with_suffix(".html")
    start = time.perf_counter()
    try:
        export_notebook(source, out, execute=args.execute, timeout=args.timeout)
    except Exception as exc:
        # nbclient's CellExecutionError: the failing cell and its traceback, as text
        if type(exc).__name__ != "CellExecutionError":
            raise
        print(f"passlab: error: a cell of {source} failed:\n{exc}", file=sys.stderr)
        return 1
    took = time.perf_counter() - start
    print(f"wrote {out} ({_size_text(out.stat().st_size)}) in {took:.1f} s; "
          "its widgets render offline, without a kernel")
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from passlab._render import text_table
    from passlab.analysis.explain import cards, explain

    if args.pass_name is None:  # the whole deck: name, stage, summary
        rows = [[c.name, c.stage, c.summary] for c in cards().values()]
        print(text_table(["pass", "stage", "what it does"], rows))
        return 0
    card = explain(args.pass_name)
    print(card.to_html() if args.html else card.to_text())
    return 0


def _cmd_record(args: argparse.Namespace) -> int:
    import subprocess

    from passlab import autorecord

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CliError("give the command to record after --, e.g. "
                       "passlab record -o traces -- python my_script.py")
    out = _writable(Path(args.output), folder=True).resolve()
    boot = Path(autorecord.__file__).parent / "boot"
    env = dict(os.environ)
    env[autorecord.ENV] = str(out)
    if args.report:
        env[autorecord.REPORT_ENV] = "1"
    if args.no_weights:
        env[autorecord.WEIGHTS_ENV] = "0"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(boot), env.get("PYTHONPATH")]))
    before = set(out.glob("*.trace.zip")) if out.is_dir() else set()
    try:
        code = subprocess.run(command, env=env).returncode
    except OSError as exc:
        print(f"passlab: error: cannot run {command[0]!r}: {exc.strerror or exc}",
              file=sys.stderr)
        return 127
    new = sorted(set(out.glob("*.trace.zip")) - before) if out.is_dir() else []
    print(f"passlab record: {len(new)} new trace(s) in {out}"
          + (f" ({', '.join(p.name for p in new[:5])}{', ...' if len(new) > 5 else ''})"
             if new else ""), file=sys.stderr)
    return code if code >= 0 else 128 - code  # a signal, as a shell reports it


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="passlab", description="Record, edit and explore Apache TVM's pass pipeline.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("passes", help="print the default pipeline of a target: Relax and "
                                      "TIR stages")
    p.add_argument("--target", default="llvm", help=_TARGET_HELP)
    p.add_argument("--variant", default="fused", choices=("fused", "build"),
                   help="fused: get_default_pipeline; build: what relax.build runs on CPU")
    p.set_defaults(func=_cmd_passes)

    d = sub.add_parser("demo", help="record a build of a built-in model with a user pass "
                                    "inserted after fusion, and write the trace")
    d.add_argument("--model", default="resnet", choices=models.NAMES)
    d.add_argument("-o", "--output", default="passlab-demo", help="output folder")
    d.set_defaults(func=_cmd_demo)

    r = sub.add_parser("report", help="build a model (built-in, or an ONNX, PyTorch or "
                                      "TVMScript file) while recording every pass, and "
                                      "write one self-contained HTML report")
    r.add_argument("model", help=f"a built-in model ({', '.join(models.NAMES)}) "
                                 "or a .onnx/.pt2/.py file")
    r.add_argument("--insert", action="append", default=[], metavar="FN_SPEC",
                   help=f"insert a user pass: {_INSERT_FORM} (repeatable)")
    r.add_argument("--variant", default="fused", choices=("fused", "build"),
                   help="fused (default): get_default_pipeline; build: no fusion")
    r.add_argument("--target", default="llvm", help=_TARGET_HELP)
    r.add_argument("-o", "--output", default="report.html", help="the HTML file to write")
    r.add_argument("--trust", action="store_true", help=_TRUST_HELP)
    r.add_argument("--llvm-passes", action="store_true",
                   help="also record LLVM's own passes (SROA, InstCombine, the vectorizers, "
                        "...) as steps under codegen: the module is compiled a second time "
                        "while LLVM prints what each pass changed (slow: about 5-10x the "
                        "build; a lowered module over 1 MB is recorded per kernel, as "
                        "--llvm-per-kernel; --llvm-kernel whole-module records it whole)")
    r.add_argument("--llvm-per-kernel", action="store_true",
                   help="record LLVM's passes of every kernel, each compiled alone, the "
                        "kernels spread over processes (several times faster than the whole "
                        "module on a large model; LLVM's module-level passes then see "
                        "one kernel at a time)")
    r.add_argument("--llvm-kernel", action="append", default=[], metavar="KERNEL",
                   help="record LLVM's passes of this kernel only, compiled alone (much "
                        "faster on a large model; repeatable; implies --llvm-passes)")
    r.add_argument("--llvm-option", action="append", default=[], metavar="OPT",
                   help="an LLVM option for code generation, as TVM reads it: "
                        "-name:type=value, e.g. -vectorize-loops:bool=false (repeatable)")
    r.add_argument("--all-functions", action="store_true",
                   help="print every changed function in each pass diff (default: the first "
                        "24, naming the others)")
    r.add_argument("--full", action="store_true",
                   help="write everything: every function, every step's row, every "
                        "main-chain pass (default: the first 400, naming the rest)")
    r.add_argument("--profile", action="store_true",
                   help="time the build (each kernel in place and alone, and end to end) "
                        "and add a \"Run time\" section")
    r.add_argument("--repeat", type=_positive, default=10,
                   help="with --profile: the fewest runs of each timing (default 10)")
    r.add_argument("--budget", type=_budget, default=5.0, metavar="SECONDS",
                   help=_BUDGET_HELP)
    r.set_defaults(func=_cmd_report)

    s = sub.add_parser("sweep", help="build every model with every pipeline in worker "
                                     "processes and print one table (and an index page)")
    s.add_argument("models", nargs="+", metavar="MODEL",
                   help=f"built-in models ({', '.join(models.NAMES)}) or .onnx/.pt2/.py files")
    s.add_argument("--pipeline", action="append", metavar="NAME=SPEC",
                   help=f"a pipeline: {_SWEEP_FORM} (repeatable; default: default)")
    s.add_argument("--workers", type=_positive, default=None,
                   help="worker processes (default: the CPU count)")
    s.add_argument("--timeout", type=_seconds, default=None,
                   help="seconds one job may take (a positive number)")
    s.add_argument("--trust", action="store_true", help=_TRUST_HELP)
    s.add_argument("--target", default="llvm", help="llvm (default), cuda, rocm or metal")
    s.add_argument("-o", "--output", default="passlab-sweep",
                   help="folder for every job's trace, report and record, and index.html; "
                        "a rerun builds only the jobs not finished there")
    s.set_defaults(func=_cmd_sweep)

    for name, what in (("profile", "build a model and time it: each kernel where it runs "
                                   "(calls, share, GFLOP/s, GB/s; and alone), the runtime's "
                                   "own work, the end-to-end run; with the operators each "
                                   "kernel holds and the passes that shaped it"),
                       ("attribute", "which pass costs or saves run time: build without "
                                     "each pass in worker processes, check the outputs, "
                                     "profile, print one row per pass")):
        t = sub.add_parser(name, help=what)
        t.add_argument("model", metavar="MODEL",
                       help=f"a built-in model ({', '.join(models.NAMES)}) or a model file")
        t.add_argument("--pipeline", metavar="SPEC", default=None,
                       help=f"the pipeline: {_SWEEP_FORM} (default: default)")
        t.add_argument("--repeat", type=_positive, default=10,
                       help="repeats of each timing (default 10)")
        t.add_argument("--inputs", nargs="+", default=[], metavar="NPY",
                       help="input arrays as .npy files (default: random, --seed)")
        t.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
        t.add_argument("--target", default="llvm", help=_TARGET_HELP)
        if name == "profile":
            t.add_argument("--budget", type=_budget, default=5.0, metavar="SECONDS",
                           help=_BUDGET_HELP)
        if name == "attribute":
            t.add_argument("--passes", default=None, metavar="A,B",
                           help="the passes to disable one at a time (default: every "
                                "enabled Relax pass)")
            t.add_argument("--workers", type=_positive, default=None,
                           help="worker processes (default: the CPU count)")
        t.set_defaults(func=_cmd_profile if name == "profile" else _cmd_attribute)

    e = sub.add_parser("export", help="write a notebook as one HTML file whose widgets "
                                      "(the Explorer) render offline")
    e.add_argument("notebook", help="the .ipynb file")
    e.add_argument("-o", "--output", help="the HTML file to write (default: the notebook's "
                                          "name with .html)")
    e.add_argument("--execute", action="store_true",
                   help="run the notebook first (saving the widget state)")
    e.add_argument("--timeout", type=int, default=120, help="seconds per cell when executing")
    e.set_defaults(func=_cmd_export)

    x = sub.add_parser("explain", help="what a pass does: its card (every pass of TVM's "
                                       "default pipelines has one)")
    x.add_argument("pass_name", nargs="?", metavar="PASS",
                   help="a pass name as recorded (FuseOps, tirx.LowerIntrin, FuseOps#1); "
                        "without it, list every card")
    x.add_argument("--html", action="store_true", help="print the card as HTML")
    x.set_defaults(func=_cmd_explain)

    rec = sub.add_parser(
        "record", help="run a command unmodified and record every TVM build (relax.build, "
                       "tvm.compile, tirx.build) and pass run of its Python processes, one "
                       "trace per build",
        description="Run COMMAND with passlab's recorder in each of its Python processes "
                    "(through PASSLAB_TRACE and a sitecustomize on PYTHONPATH). The "
                    "command's output and exit status are its own.")
    rec.add_argument("-o", "--output", default="passlab-traces",
                     help="folder for the traces (default: passlab-traces)")
    rec.add_argument("--report", action="store_true",
                     help="also write each trace's HTML report beside it")
    rec.add_argument("--no-weights", action="store_true",
                     help="save the traces without tensor data (smaller and faster)")
    rec.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                     help="the command to run, after --")
    rec.set_defaults(func=_cmd_record)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CliError, KeyError, ValueError, TypeError, OSError, ImportError,
            DeviceUnavailableError) as exc:
        print(f"passlab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
