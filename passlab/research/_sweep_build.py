"""The build server of a sweep: a child process that builds one job after another.

`serve` is the child's main loop (started by `passlab.research._supervise`):
it imports TVM once, says "ready", then for each job received builds the model with
recording, runs it on the job's seeded inputs, measures the trace, keeps the trace file
and the report in the job's folder and sends the row back. As it goes it says what it
is doing: the name of each pass it enters, then "run" and the name of each VM call
before it runs (a kernel that crashes is named), "profile" and "save", so that the
supervisor can say where the process died or ran out of time. The job's files are
written through `passlab.io._files.Folder`: never through a link planted in `out/`.
"""

from __future__ import annotations

import gc
import io
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from passlab import _tvm
from passlab.errors import BuildError, first_line
from passlab.io._files import Folder
from passlab.research._profile_jobs import KEPT, baseline, profile_summary
from passlab.research._supervise import die_with
from passlab.research._sweep_jobs import (
    check_from_recipe,
    empty_row,
    job_place,
    model_from_spec,
    pipeline_from_recipe,
)

#: Seconds past a job's timeout after which the build server stops itself: the
#: supervisor kills it at the timeout; this holds when the supervisor cannot.
GRACE_S = 5.0

#: What a job's messages say it is doing (see `passlab.research._supervise`).
Note = Callable[[str, Any], None]


def _alarm(seconds: float | None) -> None:
    """Let the kernel end this process `seconds` from now (SIGALRM's default action;
    0/None: cancel), so that a job's timeout holds even when nobody watches it."""
    if seconds:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, seconds or 0.0)


def serve(fd_in: int, fd_out: int, parent: int | None = None) -> None:
    """Answer jobs from `fd_in` on `fd_out` until the supervisor goes away."""
    if parent is not None:
        die_with(parent)
    down = Connection(fd_in, writable=False)
    up = Connection(fd_out, readable=False)
    _tvm.relax()  # pay for importing TVM before the first job's clock starts
    up.send(("ready", None))
    while True:
        try:
            job = down.recv()
        except EOFError:  # the supervisor closed the pipe or died: nothing left to do
            return
        timeout = job.get("timeout")
        _alarm(None if timeout is None else timeout + GRACE_S)
        row = build_job(job, lambda kind, value: up.send((kind, value)))
        _alarm(None)
        up.send(("done", row))
        gc.collect()  # a job's modules and executable go now, not in the middle of the next


def error_text(err: BaseException) -> str:
    """One line: the failing pass (or "codegen") and the first line of the error."""
    failure = getattr(getattr(err, "trace", None), "failure", None)
    if failure is None:
        return first_line(err)
    where = failure.step.label if failure.step is not None else failure.where
    lines = str(failure.message).strip().splitlines()
    return f"{where}: {failure.error_type}: {lines[0] if lines else ''}"[:300]


def measures(trace: Any, finished: bool) -> dict[str, Any]:
    """Main-chain length; for a finished build also the kernels the Relax pipeline ended
    with and the peak of temporary memory before and after memory planning."""
    from passlab.analysis.buffers import buffers

    main = [s for s in trace if s.on_main_chain]
    out: dict[str, Any] = dict(passes=len(main))
    if not finished:
        return out
    relax = [s for s in main if s.level == "relax" and s.after is not None]
    if relax:
        out["kernels"] = sum(1 for f in _tvm.functions(relax[-1].after).values()
                             if _tvm.is_prim_func(f))
    for column, name in (("peak_bytes", "StaticPlanBlockMemory"),
                         ("peak_bytes_unplanned", "CallTIRRewrite")):
        step = next((s for s in main if s.name == name and s.after is not None), None)
        if step is not None:
            out[column] = buffers(step).peak_bytes
    return out


def flatten(result: Any) -> list[Any]:
    """A result (an array or nested tuples of arrays) as a flat list of numpy arrays."""
    import numpy as np

    if isinstance(result, (tuple, list)):
        return [a for r in result for a in flatten(r)]
    return [np.asarray(result)]


def build_job(job: dict[str, Any], note: Note | None = None) -> dict[str, Any]:
    """Build, run and measure one job here; a row dict with `outputs`. `note(kind,
    value)` hears what it is doing: ("pass", name) for each pass entered, ("phase",
    "run" / "profile" / "save") and ("kernel", symbol) before each VM call of the run."""
    from passlab.recording.build import build

    def say(kind: str, value: Any) -> None:
        if note is not None:
            note(kind, value)

    progress = None if note is None else (lambda name, _count: note("pass", name))

    row = empty_row(job["model"], job["pipeline"]) | dict(outputs=None)
    start = time.perf_counter()
    try:
        mod = model_from_spec(job["model_spec"])
        pipe = pipeline_from_recipe(job["pipeline_recipe"])
        checks = [check_from_recipe(c) for c in job["checks"]]
    except Exception as exc:  # noqa: BLE001 - any setup error is this job's failure
        return row | dict(status="failed", error=f"setup: {type(exc).__name__}: "
                                                 f"{first_line(exc)}")
    built = None
    start = time.perf_counter()
    try:
        built = _variant(job, pipe, progress, say)
        if built is None:
            built = build(mod, pipe, checks=checks, progress=progress or False,
                          reuse=KEPT.reusable(job))  # attribute(): kernels of its variants
        trace = built.trace
        KEPT.keep(job, built)
    except BuildError as err:
        trace = err.trace
        row.update(status="failed", error=error_text(err))
    row["build_s"] = time.perf_counter() - start
    row.update(measures(trace, built is not None))
    if job.get("reuse") is not None:
        row["kernels_reused"] = bool(getattr(trace, "kernels_reused", False))
    if job["folder"] is not None:  # before running: a crash while running keeps them
        say("phase", "save")
        _keep(job, trace, row)
    # what a crash or a timeout from here on keeps: the build's figures and files
    say("built", {k: v for k, v in row.items() if k != "outputs"})
    if built is not None:
        seed, arrays = job["inputs"]
        say("phase", "run")
        watched = False
        try:
            watched = _say_calls(built, note)
            row["outputs"] = flatten(built.run(*(arrays or ()), seed=seed))
        except Exception as exc:  # noqa: BLE001 - the model built but does not run
            row.update(status="failed", error=f"run: {type(exc).__name__}: {first_line(exc)}")
        finally:
            if watched:
                built.vm.set_instrument(None)
    if job.get("profile") is not None and row["status"] == "ok":  # attribute(), sweep(profile=)
        say("phase", "profile")
        row["profile"] = profile_summary(built, job)
        row["run_s"] = row["profile"].get("run_s")
    if job["folder"] is not None and row["outputs"] is not None:
        say("phase", "save")
        _keep_outputs(job, row)
    return row


def _say_calls(built: Any, note: Note | None) -> bool:
    """Say each VM call of the next run before it happens, so that a kernel that kills
    the process is named (one message per call: a run, not a timing loop)."""
    if note is None:
        return False

    def instrument(_func: Any, symbol: Any, before: bool, _ret: Any, *_args: Any) -> int:
        if before:
            note("kernel", str(symbol))
        return 0  # VMInstrumentReturnKind.NO_OP

    built.vm.set_instrument(instrument)
    return True


def _variant(job: dict[str, Any], pipe: Any, progress: Callable[[str, int], None] | None,
             say: Note) -> Any:
    """An attribution's variant re-run from its full pipeline's build (`rerun`: the
    recorded prefix up to the disabled pass is reused, not built again), or None for a
    job that is no such variant (`job["prefix"]` false, or a sweep's job)."""
    if not job.get("prefix") or not isinstance(job.get("baseline"), dict) or job["checks"]:
        return None
    from passlab.research.rerun import rerun

    say("phase", "full")  # until its own first pass: the full pipeline's build, if not kept
    return rerun(baseline(job), pipe, reuse=KEPT.reusable(job), progress=progress or False)


def _keep(job: dict[str, Any], trace: Any, row: dict[str, Any]) -> None:
    """The trace file and the report in the job's folder, each written beside its final
    name and renamed over it; a link at either (or on the way to the folder) is refused
    and the row says which."""
    try:
        with Folder(*job_place(job), create=True) as folder:
            row["trace"] = str(folder.produce("trace.zip", trace.save))
            row["report"] = str(folder.produce("report.html", trace.write_report))
    except Exception as exc:  # noqa: BLE001 - the row stands without its files
        _note(row, f"files not kept: {type(exc).__name__}: {first_line(exc, 1000)}")


def _keep_outputs(job: dict[str, Any], row: dict[str, Any]) -> None:
    """The outputs in the job's folder (`outputs.npz`, as `_keep` writes)."""
    import numpy as np

    data = io.BytesIO()
    np.savez(data, *row["outputs"])
    try:
        with Folder(*job_place(job), create=True) as folder:
            folder.write("outputs.npz", data.getvalue())
    except Exception as exc:  # noqa: BLE001 - the row stands; a rerun builds it again
        _note(row, f"outputs not kept: {type(exc).__name__}: {first_line(exc, 1000)}")


def _note(row: dict[str, Any], note: str) -> None:
    row["error"] = f"{row['error']}; {note}" if row["error"] else note
