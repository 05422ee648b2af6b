"""A trace tells the truth when a failing pass's error is caught.

TVM reports no ``run_after_pass`` for a pass that raised. A user pass that calls a TVM
pass which fails, catches the error and returns its input used to leave the failed pass
open on the recorder's stack: every later pass was nested under it, the ``dataflow_lower``,
``finalize`` and TIR stages were lost and the whole pipeline looked failed.
"""

from __future__ import annotations

import pytest
from tvm import relax

import passlab
from passlab import Pipeline
from passlab.pipeline import ROOT_NAME
from passlab.recording.recorder import Recorder


def tolerant(mod):
    """Try partitioning; MergeCompositeFunctions needs an entry called "main", which the
    built-in models do not have, so it raises and the pass goes on with its input."""
    try:
        relax.transform.MergeCompositeFunctions()(mod)
    except ValueError:
        pass
    return mod


def tolerant_then_normalize(mod):
    try:
        relax.transform.MergeCompositeFunctions()(mod)
    except ValueError:
        pass
    return relax.transform.Normalize()(mod)


@pytest.fixture(scope="module")
def plain() -> passlab.Build:
    return passlab.build(passlab.models.mlp())


@pytest.fixture(scope="module")
def caught() -> passlab.Build:
    return passlab.build(passlab.models.mlp(),
                         Pipeline.default("llvm").insert(tolerant, after="FuseOps"))


def chain(trace):
    return [(s.name, s.stage, s.kind) for s in trace.top_level()]


def test_main_chain_is_the_plain_one_plus_the_user_pass(plain, caught):
    expected = chain(plain.trace)
    at = [n for n, _, _ in expected].index("FuseOps") + 1
    expected.insert(at, ("tolerant", "legalize", "pass"))
    assert chain(caught.trace) == expected
    # every stage is there, the TIR part included, and nothing else failed
    assert list(dict.fromkeys(s.stage for s in caught.trace)) == list(
        dict.fromkeys(s.stage for s in plain.trace))
    assert {"dataflow_lower", "finalize"} <= {s.stage for s in caught.trace}
    assert (caught.trace.find("FuseTIR").kind, caught.trace.find("CallTIRRewrite").kind) == (
        "pass", "pass")
    assert caught.trace.failure is None
    assert [s.name for s in caught.trace if s.failed] == ["MergeCompositeFunctions"]
    assert len(caught.trace) == len(plain.trace) + 2  # the user pass and the failed one


def test_the_failed_inner_pass_is_failed_and_caught(caught):
    t = caught.trace
    user, inner = t.find("tolerant"), t.find("MergeCompositeFunctions")
    assert (user.failed, user.caught, user.origin, user.changed) == (False, False, "user", False)
    assert (inner.failed, inner.caught, inner.kind, inner.after, inner.seconds) == (
        True, True, "inner", None, None)
    assert (inner.parent, inner.depth, inner.index) == (user.index, user.depth + 1,
                                                        user.index + 1)
    assert inner.before.same_as(user.before)
    # the next pass is the user pass's sibling, not a child of the failed pass
    after = t[inner.index + 1]
    assert (after.name, after.parent, after.depth) == ("FuseTIR", user.parent, user.depth)
    assert user.after.same_as(after.before)
    assert f"{inner.index:>2}  MergeCompositeFunctions" in t.to_text()
    row = next(line for line in t.to_text().splitlines() if "MergeCompositeFunctions" in line)
    assert row.split()[1:4] == ["MergeCompositeFunctions", "legalize", "failed"]
    assert "(caught)" in row
    assert inner.to_text().splitlines()[0] == (
        f"MergeCompositeFunctions (step {inner.index}, stage legalize, depth {inner.depth}, "
        "inner, tvm): failed (caught)")
    # it builds and runs exactly like the plain build
    assert caught.run().tolist() == passlab.build(passlab.models.mlp()).run().tolist()


def test_passes_run_after_the_caught_failure_nest_under_the_user_pass():
    b = passlab.build(passlab.models.mlp(),
                      Pipeline.default("llvm").insert(tolerant_then_normalize, after="FuseOps"))
    t = b.trace
    user = t.find("tolerant_then_normalize")
    inner = [s for s in t if s.parent == user.index]
    assert [(s.name, s.failed, s.caught) for s in inner] == [
        ("MergeCompositeFunctions", True, True), ("Normalize", False, False)]
    assert {s.depth for s in inner} == {user.depth + 1}
    assert t.failure is None and not any(s.failed for s in t.top_level())


def test_a_later_failure_is_the_build_failure():
    pipe = (Pipeline.default("llvm").insert(tolerant, after="FuseOps")
            .insert(fail_later, after="CallTIRRewrite"))
    with pytest.raises(passlab.BuildError) as err:
        passlab.build(passlab.models.mlp(), pipe)
    t = err.value.trace
    assert (t.failure.step.name, t.failure.enclosing, t.failure.message) == (
        "fail_later", (ROOT_NAME, "dataflow_lower"), "broken on purpose")
    assert [(s.name, s.caught) for s in t if s.failed] == [
        (ROOT_NAME, False), ("MergeCompositeFunctions", True), ("dataflow_lower", False),
        ("fail_later", False)]


def fail_later(mod):
    raise ValueError("broken on purpose")


def test_record_at_top_level():
    mod = passlab.models.mlp()
    with passlab.record() as rec:
        try:
            relax.transform.MergeCompositeFunctions()(mod)
        except ValueError:
            pass
        relax.transform.LegalizeOps()(mod)
    assert [(s.name, s.depth, s.parent, s.failed, s.caught) for s in rec.trace] == [
        ("MergeCompositeFunctions", 0, None, True, True), ("LegalizeOps", 0, None, False, False)]
    assert rec.trace.failure is None


def test_record_ends_with_the_caught_failure():
    # no pass runs after the caught failure: the run ends without an error, so the open
    # pass was caught
    mod = passlab.models.mlp()
    with passlab.record() as rec:
        try:
            relax.transform.MergeCompositeFunctions()(mod)
        except ValueError:
            pass
    assert [(s.name, s.failed, s.caught) for s in rec.trace] == [
        ("MergeCompositeFunctions", True, True)]


class _Info:
    """What TVM hands the hooks: a name and an object handle."""

    def __init__(self, name: str, handle: int):
        self.name, self._handle = name, handle

    def __chandle__(self) -> int:
        return self._handle


def test_a_failure_caught_inside_cpp_is_closed_by_the_parents_end():
    # Calling the hooks from one Python frame is what a C++ pass that catches an inner
    # pass's error looks like: no Python frame tells, the ending pass's identity does.
    rec = Recorder()
    hooks = rec._hooks
    outer, inner, nxt = _Info("Outer", 1), _Info("Inner", 2), _Info("Next", 3)
    hooks.run_before_pass("m0", outer)
    hooks.run_before_pass("m0", inner)  # raises inside Outer's C++ code, which catches
    hooks.run_before_pass("m0", nxt)    # Outer goes on: recorded under Inner for now
    hooks.run_after_pass("m1", nxt)
    hooks.run_after_pass("m2", outer)   # Outer ends: Inner was caught
    events = rec.state.events
    assert [(e.name, e.depth, e.parent, e.after, e.caught) for e in events] == [
        ("Outer", 0, None, "m2", False), ("Inner", 1, 0, None, True),
        ("Next", 2, 1, "m1", False)]
    assert rec.state.stack == [] and rec.state.frames == []


def test_a_failure_caught_by_python_is_closed_by_the_next_pass():
    rec = Recorder()
    hooks = rec._hooks
    seq, fail, ok = _Info("Seq", 1), _Info("Fail", 2), _Info("Ok", 3)

    def call(info, mod, raises=False):  # a Pass.__call__: its own Python frame
        hooks.run_before_pass(mod, info)
        if raises:
            raise ValueError("no main")
        hooks.run_after_pass(mod + "'", info)

    hooks.run_before_pass("m", seq)
    with pytest.raises(ValueError):
        call(fail, "m", raises=True)
    call(ok, "m")
    hooks.run_after_pass("m''", seq)
    assert [(e.name, e.depth, e.parent, e.after, e.caught) for e in rec.state.events] == [
        ("Seq", 0, None, "m''", False), ("Fail", 1, 0, None, True), ("Ok", 1, 0, "m'", False)]
    assert rec.state.stack == [] and rec.state.frames == []


def test_saved_trace_keeps_caught(caught, tmp_path):
    loaded = passlab.load_trace(caught.trace.save(tmp_path / "caught.trace.zip"))
    assert [(s.name, s.failed, s.caught) for s in loaded if s.failed] == [
        ("MergeCompositeFunctions", True, True)]
    assert loaded.failure is None


def test_an_uncaught_failure_is_still_the_build_failure():
    pipe = Pipeline.default("llvm").insert(relax.transform.MergeCompositeFunctions(),
                                           before="LegalizeOps")
    with pytest.raises(passlab.BuildError) as err:
        passlab.build(passlab.models.mlp(), pipe)
    t = err.value.trace
    assert [(s.name, s.caught) for s in t if s.failed] == [
        (ROOT_NAME, False), ("legalize", False), ("MergeCompositeFunctions", False)]
    assert t.failure.step is t.find("MergeCompositeFunctions")
    assert t.failure.enclosing == (ROOT_NAME, "legalize")
