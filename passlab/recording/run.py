"""The one recorded run: a recorder added to a copy of the user's PassContext, around
whatever runs passes (``build``, ``record``, ``backend.preview``), and what comes out of
it: a :class:`~passlab.recording.trace.Trace`, or a :class:`~passlab.errors.BuildError`
that carries the trace so far.

The recorder's hooks are bound methods held by TVM's C++ instrument, a reference cycle
through C++ that Python's collector cannot see: when the run ends, the recorder lets go
of everything it recorded, so a dropped build frees its snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passlab import _tvm
from passlab.errors import error_class, message_of
from passlab.pipeline import ROOT_NAME, Pipeline
from passlab.recording.recorder import Recorder
from passlab.recording.trace import Failure, Trace, from_events

__all__ = ["RecordedRun"]

_CONVERTED_NOTE = ("TVM hands Python exceptions raised inside passes back as RuntimeError; "
                   "the message is kept")


class RecordedRun:
    """Record every pass run inside ``with run:``.

    ``pipeline`` (None for :func:`passlab.record`) names the stages and the user's
    passes; ``relax_pass()`` is the pipeline as one TVM pass that also remembers the
    original exception of a failing user pass (TVM turns it into a RuntimeError).
    After the block, :meth:`trace` builds the trace and :meth:`error` the exception to
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

    def relax_pass(self, pipeline: Pipeline | None = None) -> Any:
        pipe = pipeline or self.pipeline
        if pipe is None:
            raise ValueError("this run has no pipeline to turn into a pass")
        errors = self._state.user_errors
        return pipe.to_pass(on_error=lambda name, exc: errors.setdefault(name, exc))

    def __enter__(self) -> RecordedRun:
        self._ctx = _tvm.copy_context([self._recorder], self._config)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._ctx.__exit__(*exc_info)
        finally:
            self._release()

    def _release(self) -> None:
        # Break the cycle instrument -> bound methods -> recorder -> state: TVM may keep
        # the instrument alive, but from now on it holds nothing that was recorded.
        rec, self._recorder, self._ctx = self._recorder, None, None
        if rec is not None:
            rec.release()

    # ------------------------------------------------------------------- results
    def trace(self, exc: BaseException | None = None, **meta: Any) -> Trace:
        """The trace of what was recorded; with ``exc``, its failure too."""
        state, pipe = self._state, self.pipeline
        info: dict[str, Any] = dict(versions=_tvm.versions())
        if pipe is not None:
            info.update(target=pipe.target, pipeline=pipe, input=self.module)
        if state.broken:
            info["warnings"] = [f"recorder stopped early: {state.broken}"]
        info.update(meta)
        if pipe is None:
            trace = from_events(state.events, info)
        else:
            trace = from_events(state.events, info, ROOT_NAME, pipe.stage_names,
                                [e.name for e in pipe.user_passes])
        if exc is None:
            return trace
        info["failure"] = _failure(trace, state.user_errors, exc)
        return Trace(list(trace), info)

    def error(self, exc: BaseException, trace: Trace | None = None,
              extra: str = "") -> BaseException:
        """What to raise for ``exc``: a :class:`BuildError` (also an instance of the
        original exception's class) carrying the trace, or, for Ctrl-C and other
        non-errors, the original exception with ``.trace`` attached."""
        trace = trace if trace is not None else self.trace(exc)
        f = trace.failure
        original = f.original if f is not None and f.original is not None else exc
        if not isinstance(original, Exception):  # Ctrl-C, SystemExit: not a build error
            original.trace = trace  # type: ignore[attr-defined]  # what was recorded is kept
            return original
        return error_class(type(original))(message(trace) + extra, trace, original)


def _failure(trace: Trace, user_errors: dict[str, BaseException], exc: BaseException) -> Failure:
    open_steps = [s for s in trace if s.failed]
    if not open_steps:
        where = "codegen" if len(trace) else "setup"
        return Failure(where, message_of(exc), type(exc).__name__, original=exc)
    step = open_steps[-1]
    enclosing = tuple(s.label for s in open_steps[:-1])
    user_exc = user_errors.get(step.name)
    if user_exc is not None:
        return Failure("pass", str(user_exc), type(user_exc).__name__, step, enclosing,
                       original=user_exc)
    note = _CONVERTED_NOTE if type(exc) is RuntimeError else ""
    return Failure("pass", message_of(exc), type(exc).__name__, step, enclosing, note, exc)


def message(trace: Trace) -> str:
    """The message of a failed build's error: the failure and what ``.trace`` keeps."""
    f = trace.failure
    kept = sum(1 for s in trace if not s.failed)
    tail = (f"\nThe error's .trace keeps the {len(trace)} steps recorded so far "
            f"({kept} finished)")
    if f is not None and f.step is not None:
        tail += f"; .step.before is the input of {f.step.label!r}."
    return (f.to_text() if f is not None else "build failed") + tail

