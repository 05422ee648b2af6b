"""Live editing in the Explorer: the Python API, the traits the front end sends, errors.

``set_state`` is how ipywidgets applies a message from the browser, so the front-end
path is tested through it (as tests/test_explorer.py does).
"""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("anywidget", reason="the Explorer needs the 'notebook' extra")

import passlab  # noqa: E402
from passlab.pipeline import Edit, known_passes  # noqa: E402
from passlab.research._profile_plot import seconds_text as _seconds  # noqa: E402
from passlab.research.edit_session import EditSession  # noqa: E402
from passlab.research.rerun import Rerun  # noqa: E402
from passlab.views.explorer import Explorer  # noqa: E402
from passlab.views.explorer_edit import pane_html  # noqa: E402


def peek(mod):
    return mod


def boom(mod):
    raise ValueError("boom <b>")


@pytest.fixture(scope="module")
def positions(mlp_build):
    names = mlp_build.pipeline.names
    return {"FoldConstant": names.index("FoldConstant"), "FuseOps": names.index("FuseOps")}


def labels(ex):
    """The labels of the passes that ran (a disabled entry's row is no step)."""
    return [r["label"] for r in ex.steps if r["kind"] != "disabled"]


def check_edited_run(ex, mlp_build, r):
    """The run of "FoldConstant disabled, peek after FuseOps" on mlp."""
    pipe = mlp_build.pipeline.disable("FoldConstant").insert(peek, after="FuseOps")
    full = passlab.build(passlab.models.mlp(), pipe)
    assert passlab.max_abs_diff(full.run(), r.run()) <= 1e-5
    assert (r.resumed_pass, r.reused) == ("FuseOps", 4)  # resumed at the first edit
    assert len(ex.history) == 2
    assert ex.history[0].build is mlp_build and ex.history[0].result is None
    assert ex.history[1].build is r and ex.history[1].label == (
        "#1 FoldConstant disabled, peek inserted after FuseOps")
    # the Explorer now shows the new trace
    assert ex.trace is r.trace and "peek" in labels(ex) and "FoldConstant" not in labels(ex)
    assert ex.summary.startswith("#1 FoldConstant disabled, peek inserted after FuseOps: Trace")
    assert ex.edit_shown == 1 and ex.edit_pending == []
    result = ex.history[1].result
    assert result.ok and result.max_abs_diff == 0.0
    assert dict((m, (a, b)) for m, a, b in result.measures)["kernels"] == (4, 4)
    # run time of both on the same seeded inputs; build times of other work not subtracted
    assert all(isinstance(t, float) and t > 0 for t in result.run_s) and not result.run_error
    assert result.built == ("whole pipeline", "re-run from #5 FuseOps (4 recorded passes "
                                              "reused)")
    rows = {r[0]: r for r in result._rows()}
    assert rows["build time"][3] == "other work"
    assert rows["run time (end to end, per run)"][1:3] == [
        _seconds(result.run_s[0]), _seconds(result.run_s[1])]


def test_edit_from_python(mlp_build, positions):
    ex = Explorer(mlp_build)
    assert ex.register_pass(peek) == "peek"
    pipe, build, result = ex.history[0]  # entries unpack as (pipeline, build, result)
    assert build is mlp_build and result is None
    r = ex.edit(pipe.disable("FoldConstant").insert(peek, after="FuseOps"))
    assert isinstance(r, Rerun)
    check_edited_run(ex, mlp_build, r)
    entry = ex.history[1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.label = "x"  # type: ignore[misc]
    text = entry.to_text()
    assert "A: #0 the recorded build" in text
    assert "outputs: max abs diff vs A" in text and "number of kernels" in text
    peak = next(line for line in text.splitlines() if line.startswith("liveness peak"))
    assert peak.split() == ["liveness", "peak", "2.6", "KiB", "2.6", "KiB", "+0", "B"]
    assert "resumed at step #9 (before FoldConstant) with pass FuseOps" in text
    assert ("Build time: A whole pipeline, B re-run from #5 FuseOps (4 recorded passes "
            "reused). Those are different work, so B - A is not shown") in text
    assert "A and B in alternation on the same seeded inputs (time_evaluator)" in text
    assert "<caption>A/B: the edited run against the build it was edited from</caption>" \
        in entry.to_html()


def test_edit_through_the_front_end_traits(mlp_build, positions):
    ex = Explorer(mlp_build, tab="edit")
    ex.register_pass(peek)
    assert 'data-edit="disable" data-pos="4"' in ex.edit_html
    assert '<option value="peek">peek</option>' in ex.edit_html
    ex.set_state({"edit_pending": [{"action": "disable", "position": positions["FoldConstant"]}]})
    ex.set_state({"edit_pending": ex.edit_pending + [
        {"action": "insert", "position": positions["FuseOps"], "name": "peek", "where": "after"}]})
    assert ex.edit_pending == [
        {"action": "disable", "position": 4, "name": "", "where": "after"},
        {"action": "insert", "position": 5, "name": "peek", "where": "after"}]
    # the pending list says what will change before Run
    assert "<li>disable #4 FoldConstant</li><li>insert peek after #5 FuseOps</li>" in ex.edit_html
    assert "2 pending edits" in ex.edit_html and len(ex.history) == 1
    ex.set_state({"edit_run": ex.edit_run + 1})
    check_edited_run(ex, mlp_build, ex.history[1].build)
    assert "outputs: max abs diff vs A" in ex.edit_html and "0 pending edits" in ex.edit_html
    # the way back: show the recorded build again, then the edited run
    ex.set_state({"edit_shown": 0})
    assert ex.trace is mlp_build.trace and len(ex.steps) == len(mlp_build.trace)
    assert ex.summary == mlp_build.trace.summary().split("\n")[0]
    ex.set_state({"edit_shown": 1})
    assert "peek" in labels(ex)


def test_a_failing_pass_shows_its_step_and_reproducer(mlp_build, positions):
    ex = Explorer(mlp_build, tab="edit")
    ex.register_pass(boom)
    before = ex.trace
    ex.set_state({"edit_pending": [
        {"action": "insert", "position": positions["FuseOps"], "name": "boom"}]})
    ex.set_state({"edit_run": 1})
    failed = ex.history[1]
    assert failed.build is None and not failed.result.ok
    assert failed.result.failed_step == "#6 boom"
    assert "The edited build failed at #6 boom: ValueError: boom &lt;b&gt;. The previous run " \
           "is kept." in ex.edit_html
    assert "Reproducer (runs the failing pass alone)" in ex.edit_html
    assert "def boom(mod):" in failed.result.reproducer
    assert ex.trace is before and ex.edit_shown == 0  # nothing recorded was lost
    assert "<td>#1 boom inserted after FuseOps (failed)</td><td>failed</td>" in ex.edit_html
    # from Python the BuildError is raised (a ValueError too, as the pass raised)
    with pytest.raises(passlab.BuildError) as info:
        ex.edit(mlp_build.pipeline.insert(boom, after="FuseOps"))
    assert isinstance(info.value, ValueError) and len(ex.history) == 3
    assert ex.trace is before


def test_bad_input_says_what_would_be_right(mlp_build, positions):
    ex = Explorer(mlp_build, tab="edit")
    ex.set_state({"edit_pending": [
        {"action": "insert", "position": 5, "name": "FoldConstnt"}]})
    assert ex.edit_pending == []
    assert ("edit refused: unknown pass to insert &#x27;FoldConstnt&#x27;; did you mean "
            "&#x27;FoldConstant&#x27;?") in ex.edit_html
    ex.set_state({"edit_pending": [{"action": "disable", "position": 4},
                                   {"action": "remove", "position": 999}]})
    assert ex.edit_pending == [{"action": "disable", "position": 4, "name": "", "where": "after"}]
    n = len(mlp_build.pipeline)
    assert (f"edit refused: no pass at position 999: this pipeline has {n} passes, positions "
            f"0..{n - 1}") in ex.edit_html
    ex.set_state({"edit_shown": 5})
    assert ex.edit_shown == 0
    assert "no build to show at history entry 5; entries with a build: 0" in ex.edit_html
    with pytest.raises(TypeError, match="register_pass.. takes a function"):
        ex.register_pass(42)
    with pytest.raises(TypeError, match="edit.. takes a passlab.Pipeline, not str"):
        ex.edit("FoldConstant")

    traced = Explorer(mlp_build.trace, tab="edit")
    assert traced.history == ()
    assert "open passlab.Explorer(passlab.build(model)) to edit" in traced.edit_html
    with pytest.raises(TypeError, match=r"edit\(\) needs the build, and this Explorer was "
                                        r"opened on a trace it cannot re-run"):
        traced.edit(mlp_build.pipeline)


def test_edits_by_position(mlp_build):
    pipe = mlp_build.pipeline
    s = EditSession(mlp_build)
    first_finalize = pipe.names.index(pipe.stage("finalize").passes[0].name)
    # moving the first pass of a stage up puts it at the end of the stage before
    moved = pipe.apply_edit(Edit("up", first_finalize))
    assert moved.stage("dataflow_lower").passes[-1].name == pipe[first_finalize].name
    assert moved.stage("dataflow_lower").passes[-1].note == "moved"
    assert moved.apply_edit(Edit("down", first_finalize)).names == pipe.names
    with pytest.raises(ValueError, match="first pass of its Relax stages: it cannot move up"):
        pipe.apply_edit(Edit("up", 0))
    with pytest.raises(ValueError, match="Relax stages: it cannot move down"):
        pipe.apply_edit(Edit("down", len(pipe.relax_passes) - 1))
    assert pipe.apply_edit(Edit("remove", 4)).names == pipe.names[:4] + pipe.names[5:]
    assert not pipe.apply_edit(Edit("disable", 4))[4].enabled
    # a TVM pass by the name TVM records for it
    vec = pipe.apply_edit(Edit("insert", 5, "tirx.VectorizeLoop", "before"))
    assert vec[5].name == "tirx.VectorizeLoop" and vec[5].note == "inserted before FuseOps"
    assert {"FoldConstant", "tirx.VectorizeLoop", "s_tir.LoopPartition"} <= set(known_passes())
    assert "BindParams" not in known_passes()  # needs arguments
    assert Edit("up", 4).to_text(pipe) == "move up #4 FoldConstant"
    assert s.pipeline.names == pipe.names and pane_html(s).startswith('<div class="plx-edit">')


SIGNATURE_PASSES = {  # what each does to forward(x, fc1.weight, fc1.bias, fc2.weight, fc2.bias)
    "BundleModelParams": "forward(x, model_params)",
    "LiftTransformParams": "forward(x, fc1.bias, fc2.bias, permute_dims, permute_dims1)",
    "LazyGetInput": "forward(x, fget_param)",
    "LazySetOutput": "forward(x, fset_output, fc1.weight, fc1.bias, fc2.weight, fc2.bias)",
}


@pytest.mark.parametrize("name", list(SIGNATURE_PASSES))
def test_an_edit_that_changes_the_entry_signature_is_kept_and_says_why(mlp_build, name):
    # issue 22 item 11: the A/B comparison raised TVM's error and the run was lost
    import tvm

    ex = Explorer(mlp_build, tab="edit")
    pass_ = getattr(tvm.relax.transform, name)()
    edited = mlp_build.pipeline.insert(pass_, after="FuseTIR")
    if name == "LazySetOutput":  # its impure callback inside a dataflow block is ill-formed
        with pytest.warns(RuntimeWarning, match="Impure function call fset_output"):
            r = ex.edit(edited)
    else:
        r = ex.edit(edited)
    assert isinstance(r, Rerun) and len(ex.history) == 2 and ex.history[1].build is r
    assert ex.edit_shown == 1 and ex.trace is r.trace
    result = ex.history[1].result
    assert result.ok and result.max_abs_diff is None and result.max_abs_diff_original is None
    ret = 'R.Tensor((4, 8), dtype="float32")' if name != "LazySetOutput" else "R.Tuple"
    assert result.not_compared == (
        "the edit changed the entry function's signature: A's is forward(x, fc1.weight, "
        f'fc1.bias, fc2.weight, fc2.bias) -> R.Tensor((4, 8), dtype="float32"), B\'s is '
        f"{SIGNATURE_PASSES[name]} -> {ret}, so they cannot run on the same inputs (passes "
        "such as BundleModelParams, LiftTransformParams, LazyGetInput and LazySetOutput "
        "change it; B's build and trace are kept in the history)")
    text = result.to_text().splitlines()
    assert text[4].split() == ["outputs:", "max", "abs", "diff", "vs", "A", "not", "compared"]
    assert "outputs not compared: " + result.not_compared in text
    # nor timed against each other: they take other inputs
    assert result.run_s == (None, None)
    assert text[-1] == "run time not measured: A and B take different inputs (see above)"
    assert ("Outputs not compared: the edit changed the entry function&#x27;s signature"
            in ex.edit_html)
    # an edit from there back to the recorded pipeline compares with the original
    back = ex.edit(mlp_build.pipeline.disable("FoldConstant"))
    last = ex.history[2].result
    assert back is ex.history[2].build and last.max_abs_diff is None
    assert last.max_abs_diff_original == 0.0 and last.not_compared.startswith(
        f"the edit changed the entry function's signature: A's is {SIGNATURE_PASSES[name]}")


def test_register_pass_refuses_a_name_that_is_no_text(mlp_build):
    # issue 22 item 15: register_pass(fn, 5) stored the pass under 5 and broke the pane
    ex = Explorer(mlp_build, tab="edit")
    for bad in (5, "", "  ", b"peek"):
        with pytest.raises(TypeError, match=(
                r"register_pass\(fn, name\): name is the text the Edit pane offers the pass "
                rf"under, e.g. 'my_pass', not {bad!r}")):
            ex.register_pass(peek, bad)
    assert ex._session.registered == {}
    assert ex.register_pass(lambda mod: mod) == "user_lambda"
    assert ex.register_pass(peek, "look") == "look"
    assert list(ex._session.registered) == ["user_lambda", "look"]
    assert '<option value="look">look</option>' in ex.edit_html
