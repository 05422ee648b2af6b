"""The one job engine of `sweep` and `attribute`: argument checks, workers, interrupts.

Both hand plain-data jobs (`passlab.research._sweep_jobs`) to `run_jobs`, which runs
them on passlab's own worker processes or on any `concurrent.futures.Executor`, and
calls the caller's `finish(index, row)` as each one ends, in the caller's thread; a
`finish` that returns True stops the rest (attribute stops when its full pipeline cannot
be built in time: every variant needs that build). The contract, the same for both:

- every argument is checked before any process starts (`check_timeout`,
  `check_workers`, `check_executor`, `check_progress`, `job_inputs`);
- a job that fails, crashes (its build process, or its worker) or runs out of time is
  one row; no other row is lost with it;
- Ctrl-C stops everything within a second and kills every process of the call; the
  `KeyboardInterrupt` goes to the caller, which attaches the rows that finished;
- when the workers cannot start, or the executor's workers all died, `WorkerError`
  names the cause and the way out, and the caller attaches the rows that finished.

passlab's own workers are `python -c` processes (nothing of the caller's `__main__` is
imported, so a program read from standard input works), each with a build process of its
own (see `passlab.research._supervise`). No `multiprocessing` pool: no resource tracker,
no semaphores, nothing that outlives the call. A worker reads jobs from a pipe whose
other end only this process holds: when this process dies, however it dies, the worker
sees the end of the file, kills its build process's group and exits (a parent-death
signal and a watchdog thread back that up).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, wait
from multiprocessing.connection import wait as wait_readable
from typing import Any

from passlab._progress import Bar, bar
from passlab.errors import SweepError, WorkerError, first_line
from passlab.research._supervise import ended, kill_group, run_job, spawn_piped
from passlab.research._sweep_jobs import empty_row

__all__ = ["check_timeout", "check_workers", "check_executor", "check_progress",
           "job_inputs", "job_bar", "run_jobs", "lost_row"]

#: `finish(index, row) -> stop`: a job ended (its row, with `outputs`).
Finish = Callable[[int, dict[str, Any]], bool]


# -------------------------------------------------------------------- arguments
def check_timeout(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not math.isfinite(timeout) or timeout <= 0:
        raise SweepError(f"timeout is the seconds one job may take: a positive number (or "
                         f"None for no limit), not {timeout!r}")
    return float(timeout)


def check_workers(workers: Any) -> int | None:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise SweepError(f"workers is how many worker processes to start: an int >= 1 (or "
                         f"None for the CPU count), not {workers!r}")
    return workers


def check_executor(executor: Any) -> None:
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise SweepError(f"executor is a concurrent.futures.Executor (e.g. Dask's "
                         f"client.get_executor()) or None for passlab's own worker "
                         f"processes, not {type(executor).__name__}")


def check_progress(progress: Any) -> None:
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise SweepError(f"progress is None (a bar in Jupyter or on a terminal), True, False "
                         f"or a callable, not {progress!r}")


def job_inputs(inputs: Any, label: str, by_label: bool = True
               ) -> tuple[int, list[Any] | None]:
    """`(seed, arrays)` of a job: None (seed 0), a seed, a list of arrays, or (for a
    sweep, `by_label`) a dict `label -> arrays`."""
    import numpy as np

    if inputs is None:
        return 0, None
    if isinstance(inputs, int) and not isinstance(inputs, bool):
        if inputs < 0:
            raise SweepError(f"inputs as a seed is an int >= 0, not {inputs!r}")
        return inputs, None
    if by_label and isinstance(inputs, Mapping):
        given = inputs.get(label)
        return job_inputs(given, label, False) if given is not None else (0, None)
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (Sequence, np.ndarray)) \
            or isinstance(inputs, Mapping):
        also = ", or a dict model label -> arrays" if by_label else ""
        raise SweepError(f"inputs is None (seeded random inputs), a seed (an int >= 0) or a "
                         f"list of input arrays{also}, not {type(inputs).__name__}")
    arrays = [np.asarray(a) for a in inputs]
    if any(a.dtype == object for a in arrays):
        raise SweepError("inputs holds something that is not a numeric array; give numpy "
                         "arrays (or lists of numbers)")
    return 0, arrays


def job_bar(progress: Any, total: int, done: int, desc: str) -> Bar:
    """The bar of a sweep or an attribution (jobs done of `total`, failures, ETA);
    inert for `progress=False` and for a callable (the caller calls that itself)."""
    shown = bar(False if callable(progress) else progress, total=total, desc=desc,
                unit="job")
    shown.goto(done)
    return shown


def lost_row(job: dict[str, Any], why: str) -> dict[str, Any]:
    return empty_row(job["model"], job["pipeline"]) | dict(status="crashed", outputs=None,
                                                           error=why)


# -------------------------------------------------------------------- running
def run_jobs(jobs: list[dict[str, Any]], todo: Sequence[int], finish: Finish, *,
             workers: int | None, executor: Executor | None) -> list[int]:
    """Run `jobs[i]` for each `i` in `todo`, calling `finish` as each ends; returns
    the jobs left unfinished because a `finish` asked to stop (in order)."""
    if not todo:
        return []
    if executor is not None:
        return _on_executor(jobs, todo, finish, executor)
    size = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    return _on_workers(jobs, todo, finish, size)


_WORK = ("import signal, sys\n"
         "signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's\n"
         "from multiprocessing.connection import Connection\n"
         "try:\n"
         "    from passlab.research._supervise import work\n"
         "except BaseException as exc:\n"
         "    Connection(int(sys.argv[2]), readable=False).send(\n"
         "        ('failed', f'{type(exc).__name__}: {exc}'))\n"
         "    raise SystemExit(3)\n"
         "work(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))\n")


class _Worker:
    """One of passlab's worker processes (in this process's group, SIGINT ignored) and
    the two pipes to it; the write end of `down` is only ever held here."""

    def __init__(self) -> None:
        self.proc, self.down, self.up = spawn_piped(_WORK)
        self.ready = False
        self.job: int | None = None
        self.server: int | None = None  # its build process: leader of its own group
        self.failure = ""  # what it said when it could not start

    def end(self) -> str:
        """Kill its build process's group, then the worker; say how the worker ended."""
        if self.server is not None:
            kill_group(self.server)
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        for conn in (self.down, self.up):
            if not conn.closed:
                conn.close()
        return ended(code)

    def leave(self) -> None:
        """Let an idle worker go: it sees the end of its pipe, kills its build process
        and exits."""
        if not self.down.closed:
            self.down.close()


def _cannot_start(cause: str) -> WorkerError:
    return WorkerError(
        f"passlab's worker processes could not start: {cause}. Each is {sys.executable!r} "
        "run with this process's sys.path as PYTHONPATH and must import passlab; check "
        "that this Python can, or pass executor= to run the jobs elsewhere")


def _on_workers(jobs: list[dict[str, Any]], todo: Sequence[int], finish: Finish,
                size: int) -> list[int]:
    pending = deque(todo)
    crew: list[_Worker] = []
    failed_starts = 0  # in a row, since a worker last came up

    def hire() -> None:
        try:
            crew.append(_Worker())
        except OSError as exc:
            raise _cannot_start(f"{type(exc).__name__}: {exc}") from None

    def busy() -> list[_Worker]:
        return [w for w in crew if w.job is not None]

    clean = False
    try:
        for _ in range(min(size, len(pending))):
            hire()
        while pending or busy():
            for w in crew:
                if w.ready and w.job is None and pending:
                    w.job = pending.popleft()
                    try:
                        w.down.send(jobs[w.job])
                    except OSError:  # it died just now: the end of its pipe says so next
                        pending.appendleft(w.job)
                        w.job = None
            for conn in wait_readable([w.up for w in crew], 0.25):
                w = next(w for w in crew if w.up is conn)
                try:
                    kind, value = w.up.recv()
                except (EOFError, OSError):
                    why = w.end()
                    crew.remove(w)
                    if w.job is not None:  # this job is the one row it takes with it
                        row = lost_row(jobs[w.job], f"the worker process {why} while "
                                                    "running this job; its build process "
                                                    "was killed with it")
                        if finish(w.job, row):
                            return _stop(crew, pending)
                    elif not w.ready:
                        failed_starts += 1
                        if failed_starts >= max(2, size):
                            raise _cannot_start(w.failure or f"each {why} before it was "
                                                             "ready") from None
                    if pending and len(crew) < min(size, len(pending) + len(busy())):
                        hire()
                    continue
                if kind == "ready":
                    w.ready, failed_starts = True, 0
                elif kind == "server":
                    w.server = value
                elif kind == "failed":
                    w.failure = str(value)
                elif kind == "done" and w.job is not None:
                    i, w.job = w.job, None
                    if finish(i, value):
                        return _stop(crew, pending)
        clean = True
        return []
    finally:
        if clean:
            for w in crew:
                w.leave()
            deadline = time.monotonic() + 5
            for w in crew:
                try:
                    w.proc.wait(max(0.0, deadline - time.monotonic()))
                    w.server = None  # it took its build process down on the way out
                except subprocess.TimeoutExpired:
                    pass
        for w in crew:  # Ctrl-C, an error, a stop, or a worker slow to leave: now
            w.end()


def _stop(crew: list[_Worker], pending: deque[int]) -> list[int]:
    """What a stop leaves unfinished: the running jobs (their workers are killed on the
    way out) and those not started, in order."""
    return sorted([w.job for w in crew if w.job is not None] + list(pending))


def _main_from_stdin() -> bool:
    """Whether the main program was read from standard input (`python - < prog.py`,
    `__file__` "<stdin>"): not a `python -c` program or an embedding host, whose
    `__main__` has no file at all and which 'spawn' workers do not try to import."""
    main = sys.modules.get("__main__")
    file = getattr(main, "__file__", None)
    if file is None:
        return sys.argv[:1] == ["-"]
    return str(file).startswith("<")


def _broken(exc: BaseException, done: int, total: int) -> WorkerError:
    if _main_from_stdin():
        why = ("this program was read from standard input (or typed in), and a process "
               "pool that starts its workers with 'spawn' or 'forkserver' imports the main "
               "program from its file, so each worker died at start (FileNotFoundError: "
               "'<stdin>' on its stderr): run the program from a script file whose work is "
               "under `if __name__ == \"__main__\":`, or leave executor= out (passlab's own "
               "worker processes import no main program)")
    else:
        why = ("a worker died (the OOM killer, a pass that kills its parent), or a script "
               "that starts a process pool with 'spawn' lacks the `if __name__ == "
               "\"__main__\":` guard; leave executor= out to use passlab's own worker "
               "processes, where a worker that dies is one \"crashed\" row")
    return WorkerError(f"the executor's worker processes died ({type(exc).__name__}: "
                       f"{first_line(exc)}): {why}. {done} of {total} jobs had finished "
                       "(the error's .partial holds them)")


def _on_executor(jobs: list[dict[str, Any]], todo: Sequence[int], finish: Finish,
                 executor: Executor) -> list[int]:
    futures: dict[Any, int] = {}
    done = 0
    try:
        try:
            for i in todo:
                futures[executor.submit(run_job, jobs[i])] = i
        except BrokenExecutor as exc:
            raise _broken(exc, 0, len(todo)) from None
        for fut in _completed(list(futures)):
            i = futures.pop(fut)
            try:
                row = fut.result()
            except BrokenExecutor as exc:  # its workers are gone: nothing more will run
                raise _broken(exc, done, len(todo)) from None
            except Exception as exc:  # noqa: BLE001 - the executor lost this job: one row
                row = lost_row(jobs[i], f"the executor lost the job: {type(exc).__name__}: "
                                        f"{first_line(exc)}")
            done += 1
            if finish(i, row):
                return sorted(futures.values())
        return []
    finally:
        for fut in futures:  # a stop, Ctrl-C or an error: what has not started never will
            fut.cancel()


def _completed(futures: Iterable[Any], poll: float = 0.25) -> Iterator[Any]:
    """The futures as they finish, as `as_completed` yields them, but waiting at most
    `poll` seconds at a time: Python runs a signal's handler in the main thread only,
    and when the kernel hands a Ctrl-C to another thread (one of the executor's, when the
    main thread has SIGINT blocked) an untimed wait sleeps on until the next job ends,
    which for a hanging job is its timeout."""
    order = {fut: n for n, fut in enumerate(futures)}
    left = set(order)
    while left:
        done, left = wait(left, timeout=poll, return_when=FIRST_COMPLETED)
        yield from sorted(done, key=order.__getitem__)  # a batch in submission order
