"""Tests of passlab.recording.checks over hand-made traces (``from_events`` with tiny
hand-built modules): which step first breaks each rule, and how checks are named,
limited and reported. Checks on real builds are in test_faults.py."""

from __future__ import annotations

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

from passlab.errors import CheckError, UnknownNameError
from passlab.recording.checks import (
    Check,
    Violation,
    as_check,
    context_config,
    immutable_modules,
    no_ops_after,
    predicate,
    run_checks,
    well_formed,
)
from passlab.recording.recorder import RawEvent
from passlab.recording.trace import Failure, Trace, from_events


# fmt: off
@I.ir_module
class Add:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        return y


@I.ir_module
class AddMul:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        z = R.multiply(y, y)
        return z
# fmt: on

# the body of AddMul's main under a declared return type it does not have
WRONG_RETURN = tvm.IRModule({"main": relax.Function(
    AddMul["main"].params, AddMul["main"].body, relax.TensorType((8,), "float32"))})


def make_trace(*passes, user=(), failure=None) -> Trace:
    """A pipeline with one stage ("legalize") running ``passes``: (name, before, after)
    triples (after None: the pass raised)."""
    first, last = passes[0][1], passes[-1][2] or passes[-1][1]
    events = [RawEvent("passlab.pipeline", 0, None, first, 0.0, last, 1.0),
              RawEvent("legalize", 1, 0, first, 0.0, last, 1.0)]
    for k, (name, before, after) in enumerate(passes):
        events.append(RawEvent(name, 2, 1, before, k * 0.1, after,
                               None if after is None else k * 0.1 + 0.05))
    trace = from_events(events, {}, "passlab.pipeline", ("legalize",), user)
    if failure is None:
        return trace
    return Trace(list(trace), {"failure": failure})


@pytest.fixture()
def trace() -> Trace:
    return make_trace(("LegalizeOps", Add, Add), ("Rewrite", Add, AddMul),
                      ("mine", AddMul, WRONG_RETURN), ("Cleanup", WRONG_RETURN, WRONG_RETURN),
                      user=("mine",))


def test_the_user_pass_that_broke_well_formedness_is_found(trace):
    (v,) = run_checks(trace)  # well-formedness after user passes is always checked
    assert (v.check, v.step.label) == ("well_formed (user passes)", "mine")
    assert v.message == ('function main declares return type R.Tensor((8,), dtype="float32") '
                         'but its body has type R.Tensor((4,), dtype="float32")')
    assert v.to_text() == ("check 'well_formed (user passes)' fails after user pass 'mine' "
                           "(step #4, stage legalize): " + v.message)
    assert run_checks(trace, user_passes=False) == ()


def test_a_check_already_failing_before_a_user_pass_is_pre_existing_once():
    # TVM's "Broken" pass breaks the module; the user passes after it keep it as it is
    t = make_trace(("LegalizeOps", Add, Add), ("Broken", Add, WRONG_RETURN),
                   ("mine", WRONG_RETURN, WRONG_RETURN), ("Cleanup", WRONG_RETURN, WRONG_RETURN),
                   ("mine2", WRONG_RETURN, WRONG_RETURN), user=("mine", "mine2"))
    (v,) = run_checks(t)
    assert (v.preexisting, v.step.label, v.since.label) == (True, "mine", "Broken")
    assert v.to_text() == (
        "check 'well_formed (user passes)' already fails before user pass 'mine' (step #4), "
        "not because of it: it first fails after pass 'Broken' (step #3, stage legalize): "
        + v.message)
    # broken on the build's input: no pass to name
    t = make_trace(("LegalizeOps", WRONG_RETURN, WRONG_RETURN),
                   ("mine", WRONG_RETURN, WRONG_RETURN), user=("mine",))
    (v,) = run_checks(t)
    assert (v.preexisting, v.since) == (True, None)
    assert "it first fails on the module this pass receives" in v.to_text()


def test_a_new_violation_after_a_pre_existing_one_is_the_user_pass_s_own():
    def rule(step):
        names = [gv.name_hint for gv in step.after.get_global_vars()]
        return "has helper" if "helper" in names else ("has mul" if "multiply" in
                                                        step.after.script() else None)

    with_helper = tvm.IRModule({"main": AddMul["main"], "helper": Add["main"]})
    t = make_trace(("Rewrite", Add, AddMul), ("mine", AddMul, AddMul),
                   ("adds", AddMul, with_helper), user=("mine", "adds"))
    old, new = run_checks(t, [Check("rule", rule, user_only=True)], user_passes=False)
    assert (old.preexisting, old.step.label, old.since.label) == (True, "mine", "Rewrite")
    assert (new.preexisting, new.step.label, new.message) == (False, "adds", "has helper")
    assert new.to_text().startswith("check 'rule' fails after user pass 'adds'")


def test_a_build_notes_a_pre_existing_violation_and_does_not_warn(mlp_build, recwarn):
    import passlab

    def fused(step):
        names = [gv.name_hint for gv in step.after.get_global_vars()]
        return "fused kernels" if any(n.startswith("fused_") for n in names) else None

    pipe = passlab.Pipeline.default().insert(lambda mod: mod, after="FuseTIR", name="mine")
    b = passlab.build(passlab.models.mlp(), pipe,
                      checks=[Check("no fused kernels", fused, user_only=True)])
    assert not [w for w in recwarn if "fails" in str(w.message)]
    (note,) = [n for n in b.trace.notes if "already fails" in n]
    assert note == ("check 'no fused kernels' already fails before user pass 'mine' "
                    f"(step #{b.trace.find('mine').index}), not because of it: it first "
                    f"fails after pass 'FuseOps' (step #{b.trace.find('FuseOps').index}, "
                    "stage legalize): fused kernels")


def test_well_formed_checks_every_pass_from_the_first(trace):
    (v,) = run_checks(trace, [well_formed()])  # replaces the user-pass check
    assert (v.check, v.step.index) == ("well_formed", 4)


def test_no_ops_after_starts_at_its_pass(trace):
    (v,) = run_checks(trace, [no_ops_after("relax.multiply", after="Rewrite")],
                      user_passes=False)
    assert v.check == "no relax.multiply* ops after Rewrite"
    assert (v.step.label, v.message) == ("Rewrite",
                                         "function main still calls relax.multiply after Rewrite")
    assert run_checks(trace, [no_ops_after("relax.nn.", after="LegalizeOps")],
                      user_passes=False) == ()
    (v,) = run_checks(trace, [no_ops_after("relax.", after="Rewrite")], user_passes=False)
    assert v.message == ("function main still calls relax.add (and 1 more) after Rewrite")


def test_an_unknown_start_pass_is_an_error_unless_the_build_failed_before_it(trace):
    with pytest.raises(UnknownNameError, match=r"unknown pass 'Rewrit'; did you mean "
                                               r"'Rewrite'\?.*check 'no relax\.nn\.\* ops "
                                               r"after Rewrit' starts after it"):
        run_checks(trace, [no_ops_after(after="Rewrit")])
    failed = make_trace(("LegalizeOps", Add, Add), ("Rewrite", Add, None),
                        failure=Failure("pass", "boom", "ValueError"))
    assert run_checks(failed, [no_ops_after(after="Cleanup")]) == ()


def test_predicate_on_module_module_and_step_or_step(trace):
    few = predicate(lambda mod: len(mod.functions) < 1, "no functions")
    (v,) = run_checks(trace, [few], user_passes=False)
    assert (v.check, v.step.label, v.message) == ("no functions", "LegalizeOps",
                                                  "no functions is false after LegalizeOps")

    def says(mod, step):
        return None if step.name != "Cleanup" else f"{step.name} is the last pass"

    (v,) = run_checks(trace, [predicate(says, after="Rewrite")], user_passes=False)
    assert (v.check, v.step.label, v.message) == ("says", "Cleanup", "Cleanup is the last pass")
    (v,) = run_checks(trace, [predicate(lambda step: step.origin != "user", "tvm only",
                                        on="step")], user_passes=False)
    assert v.step.label == "mine"
    with pytest.raises(ValueError, match="on must be 'module' or 'step', not 'pass'"):
        predicate(lambda mod: True, on="pass")


def test_a_check_that_raises_is_a_finding(trace):
    def crashes(step):
        raise ZeroDivisionError("division by zero")

    (v,) = run_checks(trace, [crashes], user_passes=False)
    assert (v.check, v.step.index) == ("crashes", 2)  # the first main-chain pass
    assert v.message == "the check itself raised ZeroDivisionError: division by zero"


def test_plain_functions_and_checks_in_order(trace):
    def never(step):
        return None

    def always(step):
        return "no"

    found = run_checks(trace, [always, never, well_formed()])
    assert [(v.check, v.step.index) for v in found] == [("always", 2), ("well_formed", 4)]
    assert as_check(never).name == "never"
    check = Check("named", always)
    assert as_check(check) is check and check(trace[2]) == "no"
    with pytest.raises(TypeError, match="a check is a passlab.checks.Check or a function "
                                        r"\(step\) -> str \| None, not int"):
        as_check(42)


def test_failed_and_inner_steps_are_not_checked():
    t = make_trace(("LegalizeOps", Add, Add), ("Broken", Add, None),
                   failure=Failure("pass", "boom", "ValueError"))
    seen = []
    run_checks(t, [lambda step: seen.append(step.label)], user_passes=False)
    assert seen == ["LegalizeOps"]


def test_violation_views_escape_and_check_errors_list_them(trace):
    v = Violation("<rule>", trace[4], "a <b> c")
    assert v.to_html() == ('<div class="passlab-error">check &#x27;&lt;rule&gt;&#x27; fails '
                           "after user pass &#x27;mine&#x27; (step #4, stage legalize): "
                           "a &lt;b&gt; c</div>")
    assert v._repr_mimebundle_() == {"text/plain": v.to_text(), "text/html": v.to_html()}
    found = run_checks(trace, [well_formed(), no_ops_after("relax.multiply", after="Rewrite")])
    err = CheckError(trace, found)
    assert str(err) == ("the build broke 2 checks:\n" + found[0].to_text() + "\n"
                        + found[1].to_text())
    assert err.trace is trace


def test_context_config_collects_what_checks_need():
    assert context_config([well_formed(), lambda step: None]) == {}
    assert context_config([immutable_modules()]) == {"testing.immutable_module": True}
    assert immutable_modules().fn(None) is None  # TVM enforces it during the build
