"""Record a program that does not know about passlab.

`PASSLAB_TRACE=out/ python my_script.py` (with passlab installed from its wheel) or
`passlab record -o out/ -- python my_script.py` records every `relax.build`,
`tvm.compile` and `tirx.build` the program calls, and every pass it runs by hand
outside a build, and writes one trace per build or pass run to `out/`
(`001-relax.build-llvm.trace.zip`, ...; `PASSLAB_REPORT=1` writes each one's HTML
report beside it), then says on standard error where they are. TVM's own
`PassContext(instruments=[DumpIR(dir)])` needs a code change and writes every module as
text; this needs none and writes traces that every passlab view reads
(`passlab.load_trace`).

What the program computes, prints on standard output and returns as its exit code is
unchanged: the recorder only adds itself to a copy of the program's current
PassContext (as `passlab.record` does), and a failure of passlab's own (a trace
that cannot be saved, a report that fails) is a warning on standard error, never an
exception in the program. A build that fails is recorded up to its failure, saved, and
its exception reaches the program as it would have.

Activation: the wheel installs `passlab-autorecord.pth`, whose one line imports this
module only when `PASSLAB_TRACE` is set; `passlab record` also puts a
`sitecustomize` on `PYTHONPATH` (it runs the one it shadows), so it works from a
source checkout too. Nothing imports TVM early: the entry points are wrapped when the
program imports TVM (`passlab._tvm.entry_points`).
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ENV", "REPORT_ENV", "WEIGHTS_ENV", "activate", "Session"]

#: The folder traces are written to; setting it turns recording on.
ENV = "PASSLAB_TRACE"
#: ``1``: write each trace's HTML report beside it.
REPORT_ENV = "PASSLAB_REPORT"
#: ``0``: save traces without tensor data (smaller, faster; views work the same).
WEIGHTS_ENV = "PASSLAB_TRACE_WEIGHTS"

_TRUE = ("1", "true", "yes", "on")


class Session:
    """The traces one process writes: numbered in the order builds end, each file
    created new (`O_EXCL`, never through a link), so several processes can share the
    folder."""

    def __init__(self, folder: str | os.PathLike, report: bool = False,
                 weights: bool = True) -> None:
        self.folder = Path(folder)
        self.report = report
        self.weights = weights
        self.written: list[Path] = []
        self.failed = 0
        self.busy = threading.local()
        self.lock = threading.Lock()

    # -------------------------------------------------------------- wrapping
    def wrapper(self, original: Callable[..., Any], label: str) -> Callable[..., Any]:
        """`original` recorded: the wrapper TVM's entry points get."""
        session = self

        @functools.wraps(original)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            if getattr(session.busy, "on", False) or _recording_here():
                return original(*args, **kwargs)  # inside a recorded build already
            return session.call(original, label, args, kwargs)

        return recorded

    def call(self, original: Callable[..., Any], label: str, args: tuple, kwargs: dict
             ) -> Any:
        try:
            from passlab.recording.build import record

            context = record()
            recording = context.__enter__()
        except Exception as exc:  # noqa: BLE001 - passlab's failure, not the program's
            _warn(f"could not record this {label} ({type(exc).__name__}: {exc}); it runs "
                  "unrecorded")
            return original(*args, **kwargs)
        self.busy.on = True
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            self.busy.on = False
            self._finish(context, recording, label, args, kwargs, exc)
            raise
        self.busy.on = False
        self._finish(context, recording, label, args, kwargs, None)
        return result

    def _finish(self, context: Any, recording: Any, label: str, args: tuple,
                kwargs: dict, exc: BaseException | None) -> None:
        try:
            if exc is None:
                context.__exit__(None, None, None)
            else:
                context.__exit__(type(exc), exc, exc.__traceback__)
            trace = recording.trace
            if trace is None or len(trace) == 0:
                return
            self._write(trace, label, _kind_of(label, args, kwargs))
        except Exception as err:  # noqa: BLE001 - never into the program
            self.failed += 1
            _warn(f"could not save the trace of this {label} ({type(err).__name__}: {err})")

    # -------------------------------------------------------------- writing
    def _write(self, trace: Any, label: str, kind: str) -> None:
        path = self._reserve(f"{label}-{kind}" if kind else label)
        trace.save(path, weights=self.weights)
        self.written.append(path)
        note = f"{len(trace)} pass calls"
        if trace.failure is not None:
            note += f", failed in {trace.failure.where}"
        if self.report:
            report = path.with_name(path.name.replace(".trace.zip", ".report.html"))
            try:
                trace.write_report(report)
                note += f"; report {report.name}"
            except Exception as err:  # noqa: BLE001
                _warn(f"could not write the report of {path.name} "
                      f"({type(err).__name__}: {err})")
        sys.stderr.write(f"passlab: recorded {label} ({note}) -> {path}\n")

    def _reserve(self, stem: str) -> Path:
        """A new file name in the folder, created empty and exclusively: the next free
        number, so traces sort in the order they were written."""
        with self.lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            n = len(self.written) + 1
            while True:
                path = self.folder / f"{n:03d}-{_safe(stem)}.trace.zip"
                try:
                    os.close(os.open(path, flags, 0o644))
                    return path
                except FileExistsError:
                    n += 1

    def summary(self) -> str:
        if not self.written:
            text = (f"passlab: {ENV} is set, but the program ran no TVM build or pass; "
                    f"nothing was written to {self.folder}")
        else:
            text = (f"passlab: {len(self.written)} trace(s) in {self.folder}; open one "
                    f"with passlab.load_trace(path) or passlab report PATH")
        if self.failed:
            text += f" ({self.failed} could not be saved: see the warnings above)"
        return text


def _recording_here() -> bool:
    from passlab.recording.run import recording_here

    return recording_here()


def _kind_of(label: str, args: tuple, kwargs: dict) -> str:
    """A short name for the file: the target's kind of a build, the pass's name."""
    try:
        if label == "pass":
            return str(args[0].info.name)  # args[0] is the pass (self)
        target = kwargs.get("target", args[1] if len(args) > 1 else None)
        if target is None:
            return ""
        if isinstance(target, str):
            return target.split()[0]
        kind = getattr(getattr(target, "kind", None), "name", None)
        if kind is not None:
            return str(kind)
        if isinstance(target, dict):
            return str(target.get("kind", ""))
    except Exception:  # noqa: BLE001 - only a file name
        pass
    return ""


def _safe(stem: str) -> str:
    keep = "".join(c if c.isalnum() or c in "._-" else "_" for c in stem)
    return keep[:80] or "run"


def _warn(text: str) -> None:
    try:
        warnings.warn(f"passlab: {text}", RuntimeWarning, stacklevel=3)
    except Exception:  # noqa: BLE001 - warnings turned into errors must not break the program
        pass


_SESSION: list[Session] = []  # the one session of this process, once activated


def activate(folder: str | os.PathLike | None = None) -> Session | None:
    """Start recording this process's TVM builds into `folder` (default: the
    `PASSLAB_TRACE` environment variable). Idempotent; returns the session, or None
    when no folder is given."""
    if _SESSION:
        return _SESSION[0]
    folder = folder if folder is not None else os.environ.get(ENV)
    if not folder:
        return None
    session = Session(folder, report=os.environ.get(REPORT_ENV, "").lower() in _TRUE,
                      weights=os.environ.get(WEIGHTS_ENV, "1").lower() in _TRUE)
    _SESSION.append(session)
    from passlab._tvm.entry_points import wrap_on_import

    wrap_on_import(session.wrapper)
    atexit.register(lambda: sys.stderr.write(session.summary() + "\n"))
    return session


def activate_from_environment() -> None:
    """What the `.pth` line and the `sitecustomize` call: activate when
    `PASSLAB_TRACE` is set, and never raise into the program's start-up."""
    if not os.environ.get(ENV):
        return
    try:
        activate()
    except Exception as exc:  # noqa: BLE001
        sys.stderr.write(f"passlab: recording is off: {type(exc).__name__}: {exc}\n")
