"""Unit tests of Trace and Step over hand-made steps: no TVM build, only
``from_events`` over fake recorder events whose modules are tiny hand-built IRModules.

The fake build: the pipeline (a container) holds the stages ``legalize`` and
``finalize``; LegalizeOps (with an inner FoldConstant on a temporary empty module) and
the user's ``my_pass`` run in legalize, LegalizeOps a second time in finalize; then two
TIR passes at depth 0, the last of which failed (no ``after``, no end time).
"""

from __future__ import annotations

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

from passlab.errors import UnknownNameError
from passlab.recording.recorder import RawEvent
from passlab.recording.trace import Changes, Failure, Step, Trace, from_events


# fmt: off
@I.ir_module
class M0:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        return y


@I.ir_module
class M1:  # main rewritten
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        z = R.multiply(y, y)
        return z


@I.ir_module
class M2:  # helper added; main is a new object, structurally equal to M1's
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        z = R.multiply(y, y)
        return z

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.nn.relu(x)
# fmt: on

MS = 1e-3
STAGES = ("legalize", "finalize")


def events() -> list[RawEvent]:
    empty = tvm.IRModule()
    return [
        RawEvent("passlab.pipeline", 0, None, M0, 0.0, M2, 10 * MS),
        RawEvent("legalize", 1, 0, M0, 0.0, M1, 6 * MS),
        RawEvent("LegalizeOps", 2, 1, M0, 0.0, M1, 4 * MS),
        RawEvent("FoldConstant", 3, 2, empty, 1 * MS, empty, 2 * MS),
        RawEvent("my_pass", 2, 1, M1, 4 * MS, M1, 6 * MS),
        RawEvent("finalize", 1, 0, M1, 6 * MS, M2, 10 * MS),
        RawEvent("LegalizeOps", 2, 5, M1, 6 * MS, M2, 9 * MS),
        RawEvent("tirx.BindTarget", 0, None, M2, 10 * MS, M2, 11 * MS),
        RawEvent("s_tir.Simplify", 0, None, M2, 11 * MS),  # raised: no after, no end
    ]


@pytest.fixture()
def trace() -> Trace:
    return from_events(events(), {"target": "llvm", "notes": ["hand-made"]},
                       "passlab.pipeline", STAGES, ("my_pass",))


def indices(t: Trace) -> list[int]:
    return [s.index for s in t]


def test_from_events_derives_kind_stage_origin_and_labels(trace):
    got = [(s.index, s.label, s.kind, s.stage, s.origin, s.depth, s.parent, s.failed)
           for s in trace]
    assert got == [
        (0, "passlab.pipeline", "container", "relax", "tvm", 0, None, False),
        (1, "legalize", "container", "legalize", "tvm", 1, 0, False),
        (2, "LegalizeOps", "pass", "legalize", "tvm", 2, 1, False),
        (3, "FoldConstant", "inner", "legalize", "tvm", 3, 2, False),
        (4, "my_pass", "pass", "legalize", "user", 2, 1, False),
        (5, "finalize", "container", "finalize", "tvm", 1, 0, False),
        (6, "LegalizeOps#1", "pass", "finalize", "tvm", 2, 5, False),
        (7, "tirx.BindTarget", "pass", "tir", "tvm", 0, None, False),
        (8, "s_tir.Simplify", "pass", "tir", "tvm", 0, None, True),
    ]
    assert [s.occurrence for s in trace] == [0, 0, 0, 0, 0, 0, 1, 0, 0]
    assert trace[3].inner and not trace[2].inner
    assert trace[2].seconds == pytest.approx(0.004)
    assert trace[8].seconds is None and trace[8].after is None
    assert trace[8].module is M2  # a failed step's module is its input


def test_change_sets_by_identity_then_structure(trace):
    assert trace[2].functions_changed == Changes(modified=("main",))
    assert trace[4].functions_changed == Changes() and not trace[4].changed  # same object
    # M2's main is another object than M1's, but structurally equal: not "modified"
    assert trace[6].functions_changed == Changes(added=("helper",))
    assert trace[0].functions_changed == Changes(added=("helper",), modified=("main",))
    assert trace[0].functions_changed.summary() == "+1 ~1"
    assert trace[0].functions_changed.names == ("helper", "main")
    assert trace[8].functions_changed == Changes()  # failed: nothing to compare


def test_sequence_protocol(trace):
    assert len(trace) == 9
    assert trace[-1].name == "s_tir.Simplify"
    part = trace[2:5]
    assert isinstance(part, Trace) and indices(part) == [2, 3, 4]
    assert part.target == "llvm"  # a slice keeps the metadata
    assert [s.name for s in reversed(trace)][:2] == ["s_tir.Simplify", "tirx.BindTarget"]
    assert trace[4] in trace and trace.index(trace[4]) == 4
    assert trace["my_pass"] is trace[4]
    with pytest.raises(IndexError):
        trace[9]


def test_find_by_name_and_occurrence(trace):
    assert trace.find("LegalizeOps").index == 2
    assert trace.find("LegalizeOps", 1).index == 6
    assert trace.find("LegalizeOps", -1).index == 6
    assert trace.find("LegalizeOps#1").index == 6
    assert trace["LegalizeOps#1"] is trace[6]
    with pytest.raises(IndexError) as err:
        trace.find("LegalizeOps", 2)
    assert str(err.value) == ("pass 'LegalizeOps' ran 2 time(s) in this trace; occurrence "
                              "must be in 0..1, not 2")
    with pytest.raises(UnknownNameError) as err:
        trace.find("LegalizeOp")
    assert err.value.close_matches == ("LegalizeOps", "legalize")  # case-insensitive
    assert str(err.value).startswith("unknown pass 'LegalizeOp'; did you mean 'LegalizeOps', "
                                     "'legalize'?")
    assert str(err.value).endswith("(in this trace)")
    assert indices(trace.find_all("LegalizeOps")) == [2, 6]


def test_step_module_is_after_or_the_failed_passs_input(trace):
    assert trace[2].module is trace[2].after and trace[2].module.same_as(M1)
    assert trace[8].failed and trace[8].after is None
    assert trace[8].module is trace[8].before and trace[8].module.same_as(M2)


def test_filters(trace):
    assert indices(trace.changed()) == [0, 1, 2, 5, 6]
    assert indices(trace.top_level()) == [2, 4, 6, 7, 8]
    assert indices(trace.changed().top_level()) == [2, 6]
    assert indices(trace.main_chain()) == [2, 4, 6, 7, 8]  # top_level() is its alias
    assert [s.on_main_chain for s in trace] == [False, False, True, False, True, False, True,
                                                True, True]
    assert indices(trace.stage("tir")) == [7, 8]
    assert indices(trace.stage("legalize")) == [1, 2, 3, 4]
    assert indices(trace.touching("helper")) == [0, 5, 6]
    assert indices(trace.touching("main")) == [0, 1, 2]
    assert indices(trace.user()) == [4]
    assert indices(trace.filter(lambda s: s.depth == 0)) == [0, 7, 8]
    assert trace.names == ("passlab.pipeline", "legalize", "LegalizeOps", "FoldConstant",
                           "my_pass", "finalize", "tirx.BindTarget", "s_tir.Simplify")
    with pytest.raises(UnknownNameError, match=r"unknown stage 'legalise'; did you mean "
                                               r"'legalize'\?"):
        trace.stage("legalise")


def test_children_and_first(trace):
    assert indices(trace.children(trace[0])) == [1, 5]
    assert indices(trace.children(trace[1])) == [2, 4]
    assert indices(trace.children(trace[2])) == [3]
    assert indices(trace.children(trace[7])) == []
    has_helper = lambda s: s.after is not None and "helper" in [
        g.name_hint for g in s.after.get_global_vars()]
    assert trace.first(has_helper).index == 6  # on the main chain by default
    assert trace.first(has_helper, top_level=False).index == 0  # the pipeline wrapper
    assert trace.first(lambda s: False) is None


def test_trace_to_text_main_chain(trace):
    # a trace recorded without a pipeline: no pipeline numbers, the step index only
    assert trace.to_text() == """\
Trace of 9 pass calls (5 in the main chain), target llvm, 0.011 s in top-level passes
note: hand-made
step  pass             stage     ms      changed  functions
----  ---------------  --------  ------  -------  ---------
   2  LegalizeOps      legalize  4.00    yes      ~1
   4  my_pass          legalize  2.00
   6  LegalizeOps#1    finalize  3.00    yes      +1
   7  tirx.BindTarget  tir       1.00
   8  s_tir.Simplify   tir       failed
(4 wrapper and inner steps hidden: to_text(all_steps=True) shows them)"""


def test_trace_to_text_all_steps_indents_by_depth(trace):
    lines = trace.to_text(all_steps=True).splitlines()
    assert lines[2:] == [
        "step  pass                stage     ms      changed  functions",
        "----  ------------------  --------  ------  -------  ---------",
        "   0  passlab.pipeline    relax     10.00   yes      +1 ~1",
        "   1    legalize          legalize  6.00    yes      ~1",
        "   2      LegalizeOps     legalize  4.00    yes      ~1",
        "   3        FoldConstant  legalize  1.00",
        "   4      my_pass         legalize  2.00",
        "   5    finalize          finalize  4.00    yes      +1",
        "   6      LegalizeOps#1   finalize  3.00    yes      +1",
        "   7  tirx.BindTarget     tir       1.00",
        "   8  s_tir.Simplify      tir       failed",
    ]


def test_step_to_text(trace):
    assert trace[2].to_text() == ("LegalizeOps (step 2, stage legalize, depth 2, pass, tvm): "
                                  "4.00 ms\n  modified: main")
    assert trace[4].to_text() == ("my_pass (step 4, stage legalize, depth 2, pass, user): "
                                  "2.00 ms\n  no change")
    assert trace[8].to_text().startswith("s_tir.Simplify (step 8, stage tir, depth 0, pass, "
                                         "tvm): failed")


def test_text_names_a_pass_by_its_pipeline_number_as_the_explorer_does(mlp_build):
    # one number per pass everywhere: "#5 FuseOps" in the Explorer's list, in
    # step.to_text() and in the trace table; the step index (trace[10]) beside it
    trace = mlp_build.trace
    fuse = trace.find("FuseOps")
    assert fuse.to_text().splitlines()[0].startswith(
        "#5 FuseOps (step 10, stage legalize, depth 2, pass, tvm): ")
    bind = trace.find("tirx.BindTarget")  # run by TVM itself: no pipeline entry
    assert bind.to_text().startswith(f"tirx.BindTarget (step {bind.index}, stage tir, ")
    lines = trace.to_text().splitlines()
    assert lines[1].split() == ["#", "step", "pass", "stage", "ms", "changed", "functions"]
    row = next(x for x in lines if " FuseOps " in x).split()
    assert row[:4] == ["#5", "10", "FuseOps", "legalize"]
    row = next(x for x in lines if " tirx.BindTarget " in x).split()
    assert row[:2] == [str(bind.index), "tirx.BindTarget"]  # no "#": no number


def test_html_marks_rows_and_escapes(trace):
    html = trace.to_html()
    assert '<tr class="user"><td class="num">4</td><td>my_pass</td>' in html
    assert '<tr class="failed"><td class="num">8</td><td>s_tir.Simplify</td>' in html
    assert '<tr class="same"><td class="num">7</td>' in html
    assert html.endswith('<div class="passlab-note">4 wrapper and inner steps hidden</div>')
    bundle = trace._repr_mimebundle_(include={"text/plain"})
    assert bundle == {"text/plain": trace.to_text()}


def test_rows_and_dataframe_count_bindings(trace):
    row = trace[6].row()
    assert {k: row[k] for k in ("index", "name", "stage", "kind", "origin", "changed",
                                "added", "removed", "modified", "failed")} == dict(
        index=6, name="LegalizeOps", stage="finalize", kind="pass", origin="tvm",
        changed=True, added=1, removed=0, modified=0, failed=False)
    assert (row["bindings_before"], row["bindings_after"]) == (2, 3)
    df = trace.to_dataframe()
    assert list(df.index) == list(range(9))
    assert list(df.loc[[0, 2, 6], "bindings_after"]) == [3, 2, 3]
    assert df.loc[8, "failed"] and df.loc[8, "ms"] != df.loc[8, "ms"]  # NaN: no time


def test_failure_text_in_the_summary(trace):
    failure = Failure("pass", "boom", "ValueError", trace[8], ("tir_pipeline",),
                      note="TVM hands Python exceptions back as RuntimeError")
    failed = Trace(list(trace), {"target": "llvm", "failure": failure})
    assert failed.failure is failure and failure.input is M2
    assert failed.summary().splitlines() == [
        "Trace of 9 pass calls (5 in the main chain), target llvm, 0.011 s in top-level passes",
        "FAILED: pass 's_tir.Simplify' (step #8, in tir_pipeline > s_tir.Simplify) failed: "
        "ValueError: boom",
        "(TVM hands Python exceptions back as RuntimeError)",
    ]
    assert repr(failed) == "<Trace: 9 steps, target llvm, FAILED>"
    assert repr(trace) == "<Trace: 9 steps, target llvm>"
    assert Failure("codegen", "no llvm", "RuntimeError").to_text() == (
        "build failed in codegen after every recorded pass finished: RuntimeError: no llvm")
    assert Failure("setup", "bad instrument", "TypeError").to_text() == (
        "build failed before its first pass: TypeError: bad instrument")


def test_metadata_defaults():
    t = Trace([])
    assert (len(t), t.target, t.pipeline, t.failure, t.input) == (0, None, None, None, None)
    assert (t.notes, t.warnings, t.versions, t.kernels_reused) == ((), (), {}, False)
    assert t.to_text().splitlines()[0] == ("Trace of 0 pass calls (0 in the main chain), "
                                           "target None, 0.000 s in top-level passes")


def test_without_a_pipeline_root_every_top_level_pass_is_main_chain():
    """``record()`` around a plain ``relax.build`` has no passlab pipeline: the stage is
    "relax" until TIR's BindTarget, and TVM's ``sequential`` wrappers are containers."""
    evs = [RawEvent("sequential", 0, None, M0, 0.0, M1, 2 * MS),
           RawEvent("LegalizeOps", 1, 0, M0, 0.0, M1, 1 * MS),
           RawEvent("tirx.BindTarget", 0, None, M1, 2 * MS, M1, 3 * MS)]
    t = from_events(evs, {})
    assert [(s.name, s.kind, s.stage, s.origin) for s in t] == [
        ("sequential", "container", "relax", "tvm"), ("LegalizeOps", "pass", "relax", "tvm"),
        ("tirx.BindTarget", "pass", "tir", "tvm")]


def test_steps_are_displayable_and_compare_by_identity(trace):
    assert isinstance(trace[2], Step)
    assert trace[2] != Step(*[getattr(trace[2], f) for f in (
        "index", "name", "depth", "parent", "stage", "kind", "origin", "occurrence",
        "seconds", "before", "after")])  # eq=False: two steps are never "equal"
    assert set(trace[2]._repr_mimebundle_()) == {"text/plain", "text/html"}


def test_steps_know_their_trace_and_a_passing_copy_does_not_take_them(trace):
    assert all(s.owner is trace for s in trace)
    copy = Trace(list(trace), {"target": "c"})  # e.g. a copy made to save other metadata
    assert trace[0].owner is trace and trace.changed()[0].owner is trace
    adopted = Trace(list(copy), {}, adopt=True)  # what a recorder's finishing step does
    assert copy[0].owner is adopted
    # an adopting trace that dies hands the steps back to the owner before it (session 4:
    # a test's adopting copy, once freed, left the session trace's steps ownerless)
    del adopted
    import gc

    gc.collect()
    assert all(s.owner is trace for s in trace)


def test_has_relax_function():
    from passlab import _tvm

    assert _tvm.has_relax_function(M0) and _tvm.has_relax_function(M2)
    assert not _tvm.has_relax_function(tvm.IRModule()) and not _tvm.has_relax_function(None)


def test_object_cache_by_object_and_by_pairs_of_objects():
    from passlab import _tvm

    calls = []
    one = _tvm.ObjectCache(lambda f: calls.append(f) or len(f.body.blocks[0].bindings))
    assert [one(M0["main"]), one(M1["main"]), one(M0["main"])] == [1, 2, 1]
    assert len(calls) == 2  # a new Python wrapper of the same C object is a hit
    pair = _tvm.ObjectCache(lambda a, b: calls.append((a, b)) or a.same_as(b))
    main0, main1 = M0["main"], M1["main"]
    assert [pair(main0, main1), pair(M0["main"], M1["main"]), pair(main1, main0),
            pair(main0, main0)] == [False, False, False, True]
    assert len(calls) == 2 + 3  # (0, 1) once, (1, 0) and (0, 0) are other keys
