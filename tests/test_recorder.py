"""Tests of the recording instrument (passlab.recording.recorder) on hand-made module
passes: the events it keeps, the depth/parent stack, a recorder bug that becomes a
warning and a partial trace, and ``release()``. No full build: only LegalizeOps runs."""

from __future__ import annotations

import pytest
import tvm

import passlab
from passlab.recording.recorder import Recorder
from passlab.recording.run import RecordedRun


def module_pass(name, fn=None):
    @tvm.transform.module_pass(opt_level=0, name=name)
    def p(mod, ctx):
        return fn(mod) if fn is not None else mod

    return p


INNER = module_pass("Inner", lambda m: tvm.relax.transform.LegalizeOps()(m))
OUTER = module_pass("Outer", lambda m: INNER(m))  # a pass that runs another pass
OTHER = module_pass("Other")
SEQ = tvm.transform.Sequential([OUTER, OTHER])  # named "sequential", like TVM's own


@pytest.fixture(scope="module")
def mod():
    return passlab.models.mlp()


def run(rec, mod, passes=SEQ):
    with tvm.transform.PassContext(instruments=[rec]):
        return passes(mod)


def test_events_keep_names_depths_parents_in_start_order(mod):
    rec = Recorder()
    run(rec, mod)
    events = rec.state.events
    assert [(e.name, e.depth, e.parent) for e in events] == [
        ("sequential", 0, None), ("Outer", 1, 0), ("Inner", 2, 1), ("LegalizeOps", 3, 2),
        ("Other", 1, 0)]
    assert rec.state.stack == [] and rec.state.broken is None
    assert all(e.end is not None and e.end >= e.start for e in events)
    assert not any(e.caught for e in events)


def test_events_hold_references_not_copies(mod):
    rec = Recorder()
    out = run(rec, mod)
    seq, outer, inner, legalize, other = rec.state.events
    assert seq.before.same_as(mod) and outer.before.same_as(mod)
    assert seq.after.same_as(out)
    assert legalize.after.same_as(inner.after) and inner.after.same_as(outer.after)
    assert outer.after.same_as(other.before)  # the chain: one pass's output, the next's input
    assert other.after.same_as(other.before)  # an identity pass returns its input
    assert not legalize.before.same_as(legalize.after)


def test_a_pass_that_raises_has_no_after(mod):
    def boom(m):
        raise ValueError("inner pass failed")

    failing = tvm.transform.Sequential([OTHER, module_pass("Boom", boom)])
    rec = Recorder()
    with pytest.raises(Exception, match="inner pass failed"):
        run(rec, mod, failing)
    events = rec.state.events
    assert [(e.name, e.after is None, e.end is None) for e in events] == [
        ("sequential", True, True), ("Other", False, False), ("Boom", True, True)]


def test_progress_sees_the_main_chain_and_stages_only(mod):
    calls = []
    rec = Recorder(lambda name, n: calls.append((name, n)))
    run(rec, mod)
    # depth 0-2 (pipeline, stage, pass) report; LegalizeOps at depth 3 does not
    assert calls == [("sequential", 1), ("Outer", 2), ("Inner", 3), ("Other", 5)]


def test_a_recorder_bug_is_a_warning_and_a_partial_trace(mod):
    def progress(name, n):
        if n == 3:
            raise ValueError("progress bar broke")

    recorded = RecordedRun(progress=progress)
    with pytest.warns(RuntimeWarning) as seen, recorded:
        out = SEQ(mod)
    assert isinstance(out, tvm.IRModule)  # the build itself went on
    assert [str(w.message) for w in seen] == [
        "passlab's recorder failed (ValueError: progress bar broke); the build goes on and "
        "the trace keeps the 3 steps recorded before the failure."]
    trace = recorded.trace()
    assert [s.name for s in trace] == ["sequential", "Outer", "Inner"]
    assert trace.warnings == ("recorder stopped early: ValueError: progress bar broke",)


def test_ctrl_c_in_a_callback_stops_the_build(mod):
    def progress(name, n):
        if name == "Outer":
            raise KeyboardInterrupt

    rec = Recorder(progress)
    with pytest.raises(KeyboardInterrupt):
        run(rec, mod)
    assert rec.state.broken is None  # an interrupt is not a recorder bug


def test_release_drops_the_state(mod):
    rec = Recorder()
    run(rec, mod)
    assert len(rec.state.events) == 5
    rec.release()
    assert rec.state.events == [] and rec.state.stack == []
    run(rec, mod)  # a released recorder records nothing and raises nothing
    assert rec.state.events == []


def test_record_releases_the_instrument_and_keeps_the_trace(mod):
    with passlab.record() as recording:
        SEQ(mod)
    assert [s.name for s in recording.trace] == ["sequential", "Outer", "Inner",
                                                 "LegalizeOps", "Other"]
    assert [s.kind for s in recording.trace] == ["container", "pass", "inner", "inner",
                                                 "pass"]
