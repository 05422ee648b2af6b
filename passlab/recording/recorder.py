"""The PassInstrument that records every pass call of a build.

Each callback does the least it can: it keeps references to the before and after
IRModules (TVM IR is immutable and unchanged functions are shared, so this is nearly
free), a timestamp and the nesting stack. Everything else (stages, change sets, hashes)
is derived later, lazily, by :mod:`passlab.trace`.

A callback never raises into TVM: an exception inside one would abort the user's build
(or, in ``enter_pass_ctx``, silently drop every instrument). A recorder bug becomes a
warning and a partial trace instead.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Recorder", "RawEvent"]


@dataclass
class RawEvent:
    """One pass call as the recorder saw it (mutable while the build runs)."""

    name: str
    depth: int
    parent: int | None
    before: Any
    start: float
    after: Any = None
    end: float | None = None


@dataclass
class _State:
    events: list[RawEvent] = field(default_factory=list)
    stack: list[int] = field(default_factory=list)
    broken: str | None = None
    user_errors: dict[str, BaseException] = field(default_factory=dict)


def _make_instrument_class():
    # Defined lazily: ``pass_instrument`` needs TVM, and ``import passlab`` must not.
    from tvm.ir.instrument import pass_instrument

    @pass_instrument
    class PasslabRecorder:
        """Records before/after modules, depth, parent and wall time of every pass."""

        def __init__(self, progress=None):
            self.state = _State()
            self._clock = time.perf_counter
            self._progress = progress

        # Only the two hooks we need are defined: each costs a C++ -> Python call.
        def run_before_pass(self, mod, info):
            st = self.state
            try:
                if st.broken is None:
                    stack = st.stack
                    st.events.append(
                        RawEvent(info.name, len(stack), stack[-1] if stack else None, mod,
                                 self._clock())
                    )
                    stack.append(len(st.events) - 1)
                    if self._progress is not None and len(stack) <= 3:
                        self._progress(info.name, len(st.events))
            except BaseException as exc:  # noqa: BLE001 - never raise into TVM
                _break(st, exc)

        def run_after_pass(self, mod, info):
            now = self._clock()
            st = self.state
            try:
                if st.broken is None:
                    ev = st.events[st.stack.pop()]
                    ev.after, ev.end = mod, now
            except BaseException as exc:  # noqa: BLE001
                _break(st, exc)

        def release(self):
            """Let go of every recorded event (the caller keeps ``state``): TVM's C++
            instrument holds this object through its bound methods, a cycle Python's
            collector cannot break, so a finished run must not leave its snapshots here."""
            self.state = _State()
            self._progress = None

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
    except BaseException:  # noqa: BLE001 - even the warning must not reach TVM
        pass


_CLASS = None


def Recorder(progress=None):  # noqa: N802 - reads as a class to users
    """A new recording instrument; its ``.state`` holds the raw events.

    ``progress(pass_name, events_so_far)``, if given, is called when a pass of the main
    chain or a stage starts (not for passes nested deeper), e.g. to show a progress bar.
    """
    global _CLASS  # a cached class object, not state: every call makes a new instrument
    if _CLASS is None:
        _CLASS = _make_instrument_class()
    return _CLASS(progress)
