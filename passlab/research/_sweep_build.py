"""The build server of a sweep: a child process that builds one job after another.

`serve` is the child's main loop (started by `passlab.research._sweep_jobs`):
it imports TVM once, says "ready", then for each job received builds the model with
recording, runs it on the job's seeded inputs, measures the trace, keeps the trace file
and the report in the job's folder and sends the row back. While a job builds it sends
the name of each pass it enters, so that the supervisor can say which pass was running
when the process died or ran out of time.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from passlab import _tvm
from passlab.errors import BuildError, first_line
from passlab.research._profile_jobs import KEPT, baseline, profile_summary
from passlab.research._sweep_jobs import (
    check_from_recipe,
    empty_row,
    model_from_spec,
    pipeline_from_recipe,
)

#: Seconds past a job's timeout after which the build server stops itself: the
#: supervisor kills it at the timeout; this holds when the supervisor cannot.
GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1


def die_with(parent: int) -> None:
    """End this process when `parent` (the worker that started it) ends, whatever the
    worker does: the kernel's parent-death signal on Linux (SIGKILL, delivered even while
    a C++ pass holds the GIL), and a watchdog thread everywhere."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the sweep
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watchdog alone
        pass
    if os.getppid() != parent:  # the worker died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="passlab-parent-watchdog", daemon=True).start()


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
        row = build_job(job, lambda name, _count: up.send(("pass", name)))
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


def build_job(job: dict[str, Any], progress: Callable[[str, int], None] | None = None
              ) -> dict[str, Any]:
    """Build, run and measure one job here; a row dict with `outputs`."""
    from passlab.recording.build import build

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
        built = _variant(job, pipe, progress)
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
    if built is not None:
        seed, arrays = job["inputs"]
        try:
            row["outputs"] = flatten(built.run(*(arrays or ()), seed=seed))
        except Exception as exc:  # noqa: BLE001 - the model built but does not run
            row.update(status="failed", error=f"run: {type(exc).__name__}: {first_line(exc)}")
    if job.get("profile") is not None and row["status"] == "ok":  # attribute(), sweep(profile=)
        row["profile"] = profile_summary(built, job)
        row["run_s"] = row["profile"].get("run_s")
    if job["folder"] is not None:
        _keep(Path(job["folder"]), trace, row)
    return row


def _variant(job: dict[str, Any], pipe: Any,
             progress: Callable[[str, int], None] | None) -> Any:
    """An attribution's variant re-run from its full pipeline's build (`rerun`: the
    recorded prefix up to the disabled pass is reused, not built again), or None for a
    job that is no such variant (`job["prefix"]` false, or a sweep's job)."""
    if not job.get("prefix") or not isinstance(job.get("baseline"), dict) or job["checks"]:
        return None
    from passlab.research.rerun import rerun

    return rerun(baseline(job), pipe, reuse=KEPT.reusable(job), progress=progress or False)


def _keep(folder: Path, trace: Any, row: dict[str, Any]) -> None:
    """The trace file, the report and the outputs in the job's folder."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    try:
        row["trace"] = str(trace.save(folder / "trace.zip"))
        row["report"] = str(trace.write_report(folder / "report.html"))
    except Exception as exc:  # noqa: BLE001 - the row stands without its files
        note = f"trace/report not written: {type(exc).__name__}: {first_line(exc)}"
        row["error"] = f"{row['error']}; {note}" if row["error"] else note
    if row["outputs"] is not None:
        np.savez(folder / "outputs.npz", *row["outputs"])
