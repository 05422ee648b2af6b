"""Ctrl-C during TVM's TIR passes stays a KeyboardInterrupt.

During a C++ pass, Python code runs only in callbacks: the recorder's hooks, a user's
instrument or progress callback, a Python pass. A KeyboardInterrupt raised there (by
Python's SIGINT handler, or by the code itself) crosses TVM's C++ code; tvm_ffi used to
hand it back as a ``RuntimeError`` with an empty message, which ``build`` reported as a
failure of whichever pass was open. (The Relax case, a user pass raising it, is in
``tests/test_faults.py``.)
"""

from __future__ import annotations

import signal

import pytest
import tvm
from tvm.ir.instrument import pass_instrument

import passlab
from passlab.pipeline import ROOT_NAME

#: The TIR pass the tests interrupt (any pass of TVM's TIR pipeline would do).
TARGET_PASS = "tirx.FlattenBuffer"


def interrupted(**kw) -> KeyboardInterrupt:
    with pytest.raises(KeyboardInterrupt) as info:
        passlab.build(passlab.models.mlp(), **kw)
    assert type(info.value) is KeyboardInterrupt  # not a BuildError, not a RuntimeError
    return info.value


def check_trace(exc: KeyboardInterrupt, failing: str = TARGET_PASS) -> None:
    """The trace keeps every step up to the interrupted pass; the Relax pipeline finished."""
    t = exc.trace
    f = t.failure
    assert (f.where, f.error_type, f.message, f.note) == (
        "pass", "KeyboardInterrupt", "interrupted (Ctrl-C)", "")
    assert f.step is t[-1] and f.step.name == failing and f.step.after is None
    open_steps = [s for s in t if s.failed]
    assert open_steps[-1] is f.step
    assert tuple(s.label for s in open_steps[:-1]) == f.enclosing
    relax_root, last = t.find(ROOT_NAME), t.find("AttachGlobalSymbol")  # Relax finished
    assert not relax_root.failed and not last.failed and f.step.index > last.index
    assert not any(s.failed for s in t[: last.index + 1])
    assert f.to_text().startswith(
        f"pass {failing!r} (step #{f.step.index}, in ") and f.to_text().endswith(
        "failed: KeyboardInterrupt: interrupted (Ctrl-C)")


@pass_instrument
class StopAt:
    """A user's instrument: when ``name`` starts, raise KeyboardInterrupt, or deliver a
    real SIGINT (Python's handler raises it right there)."""

    def __init__(self, name: str, how: str):
        self.stop_at, self.how = name, how

    def run_before_pass(self, mod, info):
        if info.name == self.stop_at:
            if self.how == "signal":
                signal.raise_signal(signal.SIGINT)
            raise KeyboardInterrupt


@pytest.mark.parametrize("how", ["raise", "signal"])
def test_user_instrument_interrupts_a_tir_pass(how):
    with tvm.transform.PassContext(instruments=[StopAt(TARGET_PASS, how)]):
        exc = interrupted()
    check_trace(exc)


@pytest.mark.parametrize("how", ["raise", "signal"])
def test_progress_callback_interrupts_a_tir_pass(how):
    def progress(name, count):  # passlab calls it from inside its own hook
        if name == TARGET_PASS:
            if how == "signal":
                signal.raise_signal(signal.SIGINT)
            raise KeyboardInterrupt

    check_trace(interrupted(progress=progress))


def test_python_tir_pass_interrupts(monkeypatch):
    from tvm.tirx import compilation_pipeline

    @tvm.tirx.transform.prim_func_pass(opt_level=0, name="interrupting_tir_pass")
    def stop(func, mod, ctx):
        raise KeyboardInterrupt

    def factory(**kwargs):
        lower, host, device = compilation_pipeline.get_tir_pipeline("default")
        return tvm.transform.Sequential([lower, stop]), host, device

    monkeypatch.setitem(compilation_pipeline.PIPELINE_MAP, "passlab-test-interrupt", factory)
    exc = interrupted(tir_pipeline="passlab-test-interrupt")
    check_trace(exc, "interrupting_tir_pass")
    f = exc.trace.failure
    lowering = [s for s in exc.trace if s.parent == f.step.parent][-2]  # just before it
    assert not lowering.failed and f.step.before.same_as(lowering.after)


def test_a_build_after_an_interrupt_is_healthy():
    with tvm.transform.PassContext(instruments=[StopAt(TARGET_PASS, "raise")]):
        interrupted()
    b = passlab.build(passlab.models.mlp())
    assert b.trace.failure is None and b.run().shape == (4, 8)


def test_other_errors_in_a_tir_callback_are_still_build_errors():
    @pass_instrument
    class Broken:
        def run_before_pass(self, mod, info):
            if info.name == TARGET_PASS:
                raise ValueError("instrument bug")

    with tvm.transform.PassContext(instruments=[Broken()]), \
            pytest.raises(passlab.BuildError) as err:
        passlab.build(passlab.models.mlp())
    assert isinstance(err.value, ValueError)
    assert (err.value.step.name, err.value.failure.message) == (TARGET_PASS, "instrument bug")
