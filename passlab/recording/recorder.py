"""The PassInstrument that records every pass call of a build.

Each callback does the least it can: it keeps references to the before and after
IRModules (TVM IR is immutable and unchanged functions are shared, so this is nearly
free), a timestamp and the nesting stack. Everything else (stages, change sets, hashes)
is derived later, lazily, by `passlab.recording.trace`.

A callback never raises an error into TVM: an exception inside one would abort the
user's build (or, in `enter_pass_ctx`, silently drop every instrument). A recorder bug
becomes a warning and a partial trace instead. Ctrl-C is the exception: it propagates,
and TVM hands it back to Python as a `KeyboardInterrupt` (see `passlab._tvm.keep_interrupts`).

Memory: TVM's C++ instrument holds the hook functions it was given. Were they bound
methods of the instrument, the instrument would keep itself and every recorded snapshot
alive through C++, a cycle Python's collector cannot see. The hooks are bound methods of
a separate `_Hooks` object that never refers back to the instrument, so a dropped
instrument frees everything; `release` also empties the hooks when a run ends.

Nesting: TVM reports no `run_after_pass` for a pass that raised. When a user pass
catches such a failure and goes on, the failed pass would stay on the stack and every
later pass would be nested under it. Each open pass remembers the Python frame that
called into TVM for it; when that frame is gone from the Python stack (or the pass that
ends is further down the stack), the passes above are closed as failed and caught.
"""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from passlab import _tvm

__all__ = ["Recorder", "RawEvent"]


@dataclass
class RawEvent:
    """One pass call as the recorder saw it (mutable while the build runs).

    `caught`: the pass raised (no `after`), and the code that called it caught the
    error and went on.
    """

    name: str
    depth: int
    parent: int | None
    before: Any
    start: float
    after: Any = None
    end: float | None = None
    caught: bool = False


@dataclass
class _State:
    events: list[RawEvent] = field(default_factory=list)
    stack: list[int] = field(default_factory=list)
    #: Per open event: (the Python frame that called into TVM, the PassInfo's handle,
    #: the PassInfo itself, which keeps that handle from being reused).
    frames: list[tuple[Any, int, Any]] = field(default_factory=list)
    broken: str | None = None
    user_errors: dict[str, BaseException] = field(default_factory=dict)


def _on_stack(frame: Any, current: Any) -> bool:
    """Whether `frame` is `current` or one of its callers (still running)."""
    while current is not None:
        if current is frame:
            return True
        current = current.f_back
    return False


class _Hooks:
    """The recorder's callbacks, held by TVM's C++ instrument; they reach the recorded
    state and nothing else (in particular not the instrument)."""

    __slots__ = ("clock", "progress", "state")

    def __init__(self, progress: Any) -> None:
        self.state: _State | None = _State()
        self.progress = progress
        self.clock = time.perf_counter

    def run_before_pass(self, mod: Any, info: Any) -> None:
        st = self.state
        if st is None or st.broken is not None:
            return
        try:
            caller = sys._getframe(1)  # the Python frame that called into TVM
            _close_caught(st, caller)
            stack = st.stack
            st.events.append(RawEvent(info.name, len(stack), stack[-1] if stack else None,
                                      mod, self.clock()))
            stack.append(len(st.events) - 1)
            st.frames.append((caller, info.__chandle__(), info))
            if self.progress is not None and len(stack) <= 3:
                self.progress(info.name, len(st.events))
        except Exception as exc:  # noqa: BLE001 - never raise an error into TVM
            _break(st, exc)
        # KeyboardInterrupt (Ctrl-C, also from the progress callback) propagates: it
        # stops the build, and TVM gives it back to Python as a KeyboardInterrupt.

    def run_after_pass(self, mod: Any, info: Any) -> None:
        now = self.clock()
        st = self.state
        if st is None or st.broken is not None:
            return
        try:
            _close_caught(st, sys._getframe(1))
            handle, frames = info.__chandle__(), st.frames
            # the pass that ends is normally on top; passes above it failed and the
            # failure was caught inside TVM's C++ code (no Python frame in between)
            k = len(frames) - 1
            while k > 0 and frames[k][1] != handle:
                k -= 1
            if frames[k][1] != handle:
                k = len(frames) - 1  # not found (cannot happen): close the top one
            while len(frames) > k + 1:
                _close(st, caught=True)
            ev = _close(st, caught=False)
            ev.after, ev.end = mod, now
        except Exception as exc:  # noqa: BLE001
            _break(st, exc)

    def release(self) -> None:
        st, self.state, self.progress = self.state, None, None
        if st is not None:
            st.frames.clear()  # frames hold their locals: let them go with the run


def _close(st: _State, caught: bool) -> RawEvent:
    st.frames.pop()
    ev = st.events[st.stack.pop()]
    ev.caught = caught
    return ev


def _close_caught(st: _State, caller: Any) -> None:
    """Close the open passes whose calling Python frame has returned: they raised, and
    Python code caught the error (else this callback would not run)."""
    frames = st.frames
    while frames and frames[-1][0] is not caller and not _on_stack(frames[-1][0], caller):
        _close(st, caught=True)


def finish(state: _State) -> None:
    """A run ended without an error: passes still open raised, and their error was
    caught (e.g. by the user's code inside `passlab.record`). A recorder that
    stopped early knows no more: its open passes stay as they are."""
    while state.frames and state.broken is None:
        _close(state, caught=True)


def _make_instrument_class():
    # Defined lazily: ``pass_instrument`` needs TVM, and ``import passlab`` must not.
    from tvm.ir.instrument import pass_instrument

    _tvm.keep_interrupts()

    @pass_instrument
    class PasslabRecorder:
        """Records before/after modules, depth, parent and wall time of every pass."""

        def __init__(self, progress=None):
            self._hooks = _Hooks(progress)

        # TVM wires the two hooks this class defines (each costs a C++ -> Python call),
        # reading them with getattr: these properties hand it the hooks object's bound
        # methods, so the C++ instrument never holds this instrument (see module doc).
        run_before_pass = property(lambda self: self._hooks.run_before_pass)
        run_after_pass = property(lambda self: self._hooks.run_after_pass)

        @property
        def state(self) -> _State:
            """The raw events recorded so far (an empty state after `release`)."""
            st = self._hooks.state
            return st if st is not None else _State()

        def release(self):
            """Let go of every recorded event (the caller keeps `state`): a finished
            run leaves nothing of its snapshots reachable from TVM's instrument."""
            self._hooks.release()

    return PasslabRecorder


def _break(state: _State, exc: BaseException) -> None:
    try:
        state.broken = f"{type(exc).__name__}: {exc}"
        kept = len(state.events) if isinstance(state.events, list) else 0
        warnings.warn(
            f"passlab's recorder failed ({state.broken}); the build goes on and the trace "
            f"keeps the {kept} steps recorded before the failure.",
            RuntimeWarning,
            stacklevel=2,
        )
    except Exception:  # noqa: BLE001 - even the warning must not reach TVM
        pass


_CLASS = None


def Recorder(progress=None):  # noqa: N802 - reads as a class to users
    """A new recording instrument; its `.state` holds the raw events.

    `progress(pass_name, events_so_far)`, if given, is called when a pass of the main
    chain or a stage starts (not for passes nested deeper), e.g. to show a progress bar.
    """
    global _CLASS  # a cached class object, not state: every call makes a new instrument
    if _CLASS is None:
        _CLASS = _make_instrument_class()
    return _CLASS(progress)
