"""The one recorded run: a recorder added to a copy of the user's PassContext, around
whatever runs passes (`build`, `record`, `backend.preview`), and what comes out of
it: a `Trace`, or a `BuildError`
that carries the trace so far.

Memory: TVM's C++ objects hold Python callbacks (the recorder's hooks, the `on_error`
of the pipeline's passes), and Python's collector cannot see a reference cycle that runs
through C++. Neither callback refers back to what it fills (see
`passlab.recording.recorder` and `_ErrorSink`), and when the run ends the
recorder also lets go of everything it recorded, so a dropped build, failed or not,
frees its snapshots (`tests/security/test_leaks.py`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from passlab import _tvm
from passlab._tvm.logs import sorted_stderr
from passlab.errors import error_class, message_of
from passlab.pipeline import ROOT_NAME, Pipeline
from passlab.recording.recorder import Recorder, _State, finish
from passlab.recording.trace import Failure, Trace, from_events

__all__ = ["RecordedRun", "recording_here"]

#: How many recorded runs are open in each thread (a build may nest another).
_OPEN = threading.local()


def recording_here() -> bool:
    """Whether a `RecordedRun` is open in this thread (`passlab.build`,
    `passlab.record`): what runs now is recorded already."""
    return getattr(_OPEN, "count", 0) > 0

_CONVERTED_NOTE = ("TVM hands Python exceptions raised inside passes back as RuntimeError; "
                   "the message is kept")


class RecordedRun:
    """Record every pass run inside `with run:`.

    `pipeline` (None for `passlab.record`) names the stages and the user's
    passes; `relax_pass()` is the pipeline as one TVM pass that also remembers the
    original exception of a failing user pass (TVM turns it into a RuntimeError).
    After the block, `trace` builds the trace and `error` the exception to
    raise for a failure.
    """

    def __init__(self, pipeline: Pipeline | None = None, module: Any = None, *,
                 progress: Callable[[str, int], None] | None = None,
                 config: dict[str, Any] | None = None) -> None:
        self.pipeline = pipeline
        self.module = module
        self._recorder: Any = Recorder(progress)
        self._state = self._recorder.state
        self._config = config
        self._ctx: Any = None
        self._log: Any = None
        self._logged: list[str] = []  # TVM's benign log lines, kept as the trace's warnings

    def relax_pass(self, pipeline: Pipeline | None = None) -> Any:
        pipe = pipeline or self.pipeline
        if pipe is None:
            raise ValueError("this run has no pipeline to turn into a pass")
        return pipe.to_pass(on_error=_ErrorSink(self._state))

    def tir_pipeline(self, pipeline: Pipeline | None = None) -> Any:
        """The pipeline's TIR stages for `passlab._tvm.build` (see
        `passlab.Pipeline.to_tir`), remembering a failing user pass's exception."""
        pipe = pipeline or self.pipeline
        if pipe is None:
            raise ValueError("this run has no pipeline to take the TIR stages from")
        return pipe.to_tir(on_error=_ErrorSink(self._state))

    def __enter__(self) -> RecordedRun:
        self._ctx = _tvm.copy_context([self._recorder], self._config)
        self._log = sorted_stderr()
        self._logged = self._log.__enter__()
        try:
            self._ctx.__enter__()
        except BaseException:
            self._log.__exit__(None, None, None)
            raise
        _OPEN.count = getattr(_OPEN, "count", 0) + 1
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _OPEN.count -= 1
        try:
            self._ctx.__exit__(*exc_info)
            if exc_info[0] is None:
                finish(self._state)  # passes still open failed, and the error was caught
        finally:
            self._log.__exit__(None, None, None)
            self._release()

    def _release(self) -> None:
        # Break the cycle instrument -> bound methods -> recorder -> state: TVM may keep
        # the instrument alive, but from now on it holds nothing that was recorded.
        rec, self._recorder, self._ctx = self._recorder, None, None
        if rec is not None:
            rec.release()

    # ------------------------------------------------------------------- results
    def trace(self, exc: BaseException | None = None, **meta: Any) -> Trace:
        """The trace of what was recorded; with `exc`, its failure too."""
        state, pipe = self._state, self.pipeline
        info: dict[str, Any] = dict(versions=_tvm.versions())
        if pipe is not None:
            info.update(target=pipe.target, pipeline=pipe, input=self.module)
        found = [*self._logged, *meta.pop("warnings", ())]
        if state.broken:
            found.insert(0, f"recorder stopped early: {state.broken}")
        if found:
            info["warnings"] = found
        info.update(meta)
        if pipe is None:
            trace = from_events(state.events, info)
        else:
            trace = from_events(state.events, info, ROOT_NAME, pipe.stage_names,
                                [e.name for e in pipe.user_passes])
        if exc is None:
            return trace
        info["failure"] = _failure(trace, state.user_errors, exc)
        return Trace(list(trace), info, adopt=True)

    def error(self, exc: BaseException, trace: Trace | None = None,
              extra: str = "") -> BaseException:
        """What to raise for `exc`: a `BuildError` (also an instance of the
        original exception's class) carrying the trace, or, for Ctrl-C and other
        non-errors, the original exception with `.trace` attached."""
        trace = trace if trace is not None else self.trace(exc)
        f = trace.failure
        original = f.original if f is not None and f.original is not None else exc
        if not isinstance(original, Exception):  # Ctrl-C, SystemExit: not a build error
            original.trace = trace  # type: ignore[attr-defined]  # what was recorded is kept
            return original
        return error_class(type(original))(message(trace) + extra, trace, original)


class _ErrorSink:
    """`on_error` of the pipeline's passes: keeps a failing user pass's original
    exception in the run's state.

    TVM's C++ pass objects hold this callback; the exception's traceback holds the frames
    that hold those pass objects. A strong reference from here to the exception would
    close a cycle through C++ that Python's collector cannot see, and every failed build
    would stay in memory; a weak reference to the state does not."""

    __slots__ = ("_state",)

    def __init__(self, state: _State) -> None:
        self._state = weakref.ref(state)

    def __call__(self, name: str, exc: BaseException) -> None:
        state = self._state()
        if state is not None:
            state.user_errors.setdefault(name, exc)


def _failure(trace: Trace, user_errors: dict[str, BaseException], exc: BaseException) -> Failure:
    open_steps = [s for s in trace if s.failed and not s.caught]
    if not open_steps:
        where = "codegen" if len(trace) else "setup"
        return Failure(where, _message(exc), type(exc).__name__, original=exc)
    step = open_steps[-1]
    enclosing = tuple(s.label for s in open_steps[:-1])
    user_exc = user_errors.get(step.name)
    if user_exc is not None:
        return Failure("pass", str(user_exc), type(user_exc).__name__, step, enclosing,
                       original=user_exc)
    note = _CONVERTED_NOTE if type(exc) is RuntimeError else ""
    return Failure("pass", _message(exc), type(exc).__name__, step, enclosing, note, exc)


def _message(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt) and not str(exc).strip():
        return "interrupted (Ctrl-C)"
    return message_of(exc)


def message(trace: Trace) -> str:
    """The message of a failed build's error: the failure and what `.trace` keeps."""
    f = trace.failure
    kept = sum(1 for s in trace if not s.failed)
    tail = (f"\nThe error's .trace keeps the {len(trace)} steps recorded so far "
            f"({kept} finished)")
    if f is not None and f.step is not None:
        tail += f"; .step.before is the input of {f.step.label!r}."
    return (f.to_text() if f is not None else "build failed") + tail

