"""Research tools: numeric bisection, predicates, A/B comparison, blame, re-run."""

from __future__ import annotations

import re

import numpy as np
import pytest

import passlab
from passlab import Pipeline
from passlab.research import Rerun, bisect, blame, compare, rerun
from passlab.research.predicates import buffer_over, calls, has_function, no_calls


def negate_bias(mod):
    """A deliberately wrong pass: the second layer's fused kernel subtracts its bias.

    The kernel is swapped for a modified copy through TVMScript; the input module is
    left alone (it is the recorded snapshot before this pass)."""
    from tvm.script import from_source

    name = "fused_matmul1_add1"
    text = mod[name].script()
    wrong = text.replace("] + fc2_bias[", "] - fc2_bias[")
    assert wrong.count(" - fc2_bias[") == 1
    out = mod.clone()
    out.update_func(out.get_global_var(name), from_source(wrong))
    return out


def peek(mod):
    return mod


@pytest.fixture(scope="module")
def wrong_pipeline() -> Pipeline:
    return Pipeline.default("llvm").insert(negate_bias, after="FuseTIR")


@pytest.fixture(scope="module")
def plain_build() -> passlab.Build:
    return passlab.build(passlab.models.mlp(), "build")


# ------------------------------------------------------------------------- bisect
def test_bisect_reports_the_injected_wrong_pass_at_its_position(wrong_pipeline):
    report = bisect(passlab.models.mlp(), wrong_pipeline)
    assert report.first_bad.name == "negate_bias"
    assert report.first_bad.origin == "user"
    names = [r.step.name for r in report]
    assert names[:8] == ["DispatchSampling", "DispatchSortScan", "LegalizeOps",
                         "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR",
                         "negate_bias"]
    assert [r.status for r in report][:8] == ["ok"] * 7 + ["bad"]
    assert all(r.status == "bad" for r in report[7:])  # wrong from there on
    assert [r.position for r in report][6:9] == [6, 7, 8]  # pipeline positions
    assert all(r.max_abs == 0.0 for r in report[:7])
    bad = report["negate_bias"]
    assert bad.max_abs > 0.1 and bad.max_rel > 0.1 and not bad.reused
    # before the edit the passes are the reference's; a pass that leaves the module as
    # it was has the outputs of the row above
    assert [r.source for r in report][:8] == ["reference"] * 7 + ["built"]
    assert [r.name for r in report if r.source == "previous"] == ["RewriteDataflowReshape",
                                                                 "ComputePrimValue"]
    text = report.to_text()
    first = text.splitlines()[0]
    assert first == ("Bisection of 19 Relax passes against the default 'fused' build "
                     f"(rtol=1e-05, atol=1e-05): first bad pass: negate_bias (step "
                     f"#{report.first_bad.index}, stage legalize)")
    assert re.search(r"^ 7 +\d+ +negate_bias +legalize +user +1\.\d+ +\S+ +bad$", text, re.M)
    html = report.to_html()
    assert html.startswith("<svg") and html.count("<rect") == len(report)
    assert html.count('fill="#d73a49"') == 12 and "<table" in html and "negate_bias" in html
    df = report.to_dataframe()
    assert list(df.columns) == ["position", "step", "pass", "stage", "origin", "max_abs",
                                "max_rel", "status", "source"]
    assert df["status"].tolist().count("ok") == 7
    assert set(report._repr_mimebundle_()) == {"text/plain", "text/html"}


def test_bisect_of_a_clean_pipeline_reports_no_bad_pass(capsys):
    pipe = Pipeline.default("llvm").insert(peek, after="CallTIRRewrite")
    report = bisect(passlab.models.mlp(), pipe, seed=3)
    assert report.first_bad is None
    assert len(report) == 19 and all(r.ok and r.max_abs == 0.0 for r in report)
    assert report.summary().endswith("no bad pass")
    assert capsys.readouterr().err == ""  # no bar on a stderr that is not a terminal
    bisect(passlab.models.mlp(), pipe, seed=3, progress=True)
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("bisect: 100%") and " 19/19 [" in last and "0 not ok]" in last


def test_bisect_uses_the_given_inputs():
    # at the end of the Relax pipeline only one row needs a build of its own
    pipe = Pipeline.default("llvm").insert(negate_bias, after="finalize")
    args = passlab.build(passlab.models.mlp()).inputs(7)
    assert bisect(passlab.models.mlp(), pipe, inputs=args).first_bad.name == "negate_bias"
    args[-1] = np.zeros_like(args[-1])  # fc2.bias = 0: subtracting it changes nothing
    report = bisect(passlab.models.mlp(), pipe, inputs=args)
    assert report.first_bad is None
    assert [r.source for r in report].count("built") == 1


# --------------------------------------------------------------------- predicates
def test_predicates_on_a_real_trace(mlp_build):
    trace = mlp_build.trace
    assert trace.first(no_calls("relax.nn.")).name == "LegalizeOps"
    assert trace.first(has_function("fused_*")).name == "FuseOps"
    assert trace.first(has_function("fused_matmul_add_relu")).name == "FuseOps"
    assert trace.first(has_function("fused")) is None  # exact name without a pattern
    assert trace.first(calls("relax.call_tir")).name == "LegalizeOps"
    assert trace.first(calls("fused_matmul_add_relu")).name == "FuseOps"
    assert trace.first(has_function("fused_*") & ~calls("relax.call_tir")).name == "CallTIRRewrite"
    assert trace.first(calls("nn.relu")).name == "DispatchSampling"
    # the input already has a 2048-byte temporary (the transposed first weight)
    assert trace.first(buffer_over(1024)).name == "DispatchSampling"
    assert trace.first(buffer_over(2048)) is None
    assert [repr(p) for p in (no_calls(), buffer_over(5), calls("nn.relu") | has_function("f"))] == [
        "no_calls('relax.nn.')", "buffer_over(5)", "(calls('nn.relu') | has_function('f'))"]
    lowering = trace.first(has_function("fused_*") & (lambda s: s.stage == "dataflow_lower"))
    assert lowering.name == "RewriteDataflowReshape"
    failed = type("FailedStep", (), {"after": None})()
    assert not no_calls()(failed) and not (~no_calls())(failed)
    with pytest.raises(ValueError, match="nbytes must be a non-negative int"):
        buffer_over(-1)


# ------------------------------------------------------------------------ compare
def test_compare_a_pipeline_with_itself_is_identical(mlp_build):
    again = passlab.build(passlab.models.mlp())
    c = compare(mlp_build, again)
    assert c.identical and c.first_difference is None
    assert c.summary() == "Comparison of A (71 passes) and B (71 passes): identical"
    assert {p.status for p in c} == {"same"}
    assert c.delta("kernels").change == 0 and c.delta("bytes").a == 3712
    assert c.diff("FuseOps").to_text() == "no changes"


def test_compare_fused_with_build_variant(mlp_build, plain_build):
    c = compare(mlp_build, plain_build, names=("fused", "build"))
    assert not c.identical
    assert c.only_in_a == ("AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR")
    assert c.only_in_b == ("RewriteCUDAGraph",)
    assert c.first_difference.name == "AnnotateTIROpPattern"
    assert c["LegalizeOps"].status == "same"
    point = c["RewriteDataflowReshape"]
    assert point.status == "differs"
    assert "fused_matmul_add_relu" in point.functions
    d = c.diff("RewriteDataflowReshape")
    assert d.removed == ("fused_matmul1_add1", "fused_matmul_add_relu")
    assert d.added == ("add", "add1", "matmul", "matmul1", "relu")
    k = c.delta("kernels")
    assert (k.a, k.b, k.change) == (4, 7, 3)
    assert (c.delta("bytes").a, c.delta("bytes").b) == (3712, 4864)
    text = c.to_text()
    assert text.splitlines()[0] == (
        "Comparison of fused (71 passes) and build (68 passes): 4 only in fused, 1 only in "
        "build, 63 differ after the pass; first difference at AnnotateTIROpPattern (only in A)")
    assert re.search(r"^kernels +4 +7 +\+3$", text, re.M)
    html = c.to_html()
    assert html.count("<details>") == 3 and "only in fused" in html
    df = c.to_dataframe()
    assert list(df.columns) == ["pass", "stage", "status", "fused #", "build #", "functions"]
    assert df["status"].tolist().count("only in A") == 4
    with pytest.raises(ValueError, match="nothing to diff"):
        c.diff("FuseOps")


# -------------------------------------------------------------------------- blame
def test_blame_a_fused_kernel(mlp_build):
    b = blame(mlp_build.trace, "fused_matmul_add_relu")
    assert b.kind == "function" and not b.in_input
    assert [s.name for s in b.created_by] == ["FuseOps"]
    assert [s.name for s in b.rewritten_by][:3] == ["FuseTIR", "AttachGlobalSymbol",
                                                     "tirx.BindTarget"]
    # TVM's device-module Filter is a side branch: the build goes on from the host module
    assert b.removed_by == ()
    assert b.summary().startswith("fused_matmul_add_relu (function): not in the input model; "
                                  "created by FuseOps; rewritten by FuseTIR, ")
    assert b.to_text().splitlines()[1].split() == ["step", "pass", "stage", "action", "function"]
    assert "<table" in b.to_html()


def test_blame_on_a_hand_made_trace_of_snapshots():
    from snapshot_trace import snapshot_trace

    trace = snapshot_trace("mlp", ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant",
                                   "FuseOps", "FuseTIR", "CallTIRRewrite",
                                   "StaticPlanBlockMemory"))
    events = {name: [(e.step.name, e.action) for e in blame(trace, name, kind=kind)]
              for name, kind in (("fused_matmul_add_relu", None), ("matmul", "function"),
                                 ("lv", None), ("x", None))}
    assert events == {
        "fused_matmul_add_relu": [("FuseOps", "created"), ("FuseTIR", "rewritten")],
        "matmul": [("LegalizeOps", "created"), ("AnnotateTIROpPattern", "rewritten"),
                   ("FuseTIR", "removed")],
        "lv": [("FuseOps", "created"), ("FuseTIR", "rewritten"), ("CallTIRRewrite", "rewritten")],
        "x": [("FuseOps", "created"), ("FuseTIR", "removed")]}  # x inside the fused function
    assert blame(trace, "x").summary() == (
        "x (binding): in the input model. In fused_matmul_add_relu: created by FuseOps; "
        "removed by FuseTIR")


def test_blame_a_binding_and_a_step(mlp_build):
    trace = mlp_build.trace
    b = blame(trace, "lv")
    assert b.summary() == ("lv (binding): not in the input model. In forward: created by "
                           "FuseOps; rewritten by FuseTIR, ToNonDataflow, CallTIRRewrite; "
                           "removed by KillAfterLastUse")
    assert [(e.action, e.step.name, e.function) for e in b][:2] == [
        ("created", "FuseOps", "forward"), ("rewritten", "FuseTIR", "forward")]
    upto = blame(trace.find("FuseTIR"), "lv", trace=trace)
    assert [e.step.name for e in upto] == ["FuseOps", "FuseTIR"]
    m = blame(trace, "matmul", kind="binding")
    assert m.in_input and [s.name for s in m.removed_by] == ["FuseOps", "FuseTIR"]
    assert blame(trace, "matmul").kind == "function"
    p = blame(trace, "T_add_intermediate")
    assert p.kind == "parameter" and [s.name for s in p.created_by] == ["FuseTIR"]


def test_blame_errors(mlp_build):
    trace = mlp_build.trace
    with pytest.raises(passlab.UnknownNameError, match="did you mean 'fused_matmul1_add1', "
                                                       "'fused_matmul_add_relu'"):
        blame(trace, "fused_matmul_ad")
    with pytest.raises(TypeError, match=r"trace=build\.trace"):
        blame(trace.find("FuseTIR"), "lv")
    with pytest.raises(passlab.UnknownNameError, match="did you mean 'function'"):
        blame(trace, "lv", kind="func")


# -------------------------------------------------------------------------- rerun
def test_rerun_late_edit_equals_full_rebuild(mlp_build):
    new = Pipeline.default("llvm").insert(peek, after="CallTIRRewrite")  # fresh TVM passes
    r = rerun(mlp_build, new)
    assert isinstance(r, Rerun) and isinstance(r, passlab.Build)
    assert (r.reused, r.resumed_pass, r.resumed_step.name) == (11, "peek", "StaticPlanBlockMemory")
    assert r.resumed_position == 11 and r.pipeline is new and r.module is mlp_build.module
    assert re.fullmatch(r"resumed at step #27 \(before StaticPlanBlockMemory\) with pass peek: "
                        r"reused 11 recorded passes, re-ran the rest in \d+\.\d\d s", r.note)
    main = [s.name for s in r.trace.top_level()]
    assert main[:2] == ["peek", "StaticPlanBlockMemory"] and "FuseOps" not in main
    full = passlab.build(passlab.models.mlp(), new)
    assert passlab.max_abs_diff(r.run(seed=1), full.run(seed=1)) == 0.0
    down = r.downstream
    assert down.only_in_b == ("peek",) and down.only_in_a == () and down.differing == ()
    assert down.names == ("original", "rerun")


def test_rerun_of_a_wrong_pass_gives_the_new_outputs(mlp_build, wrong_pipeline):
    r = rerun(mlp_build, wrong_pipeline)
    assert (r.reused, r.resumed_step.name) == (7, "RewriteDataflowReshape")
    full = passlab.build(passlab.models.mlp(), wrong_pipeline)
    assert passlab.max_abs_diff(r.run(), full.run()) == 0.0
    assert passlab.max_abs_diff(r.run(), mlp_build.run()) > 0.1
    assert r.downstream.only_in_b == ("negate_bias",)
    assert r.downstream.differing[0].name == "RewriteDataflowReshape"


def test_rerun_unchanged_and_disabled(mlp_build):
    same = rerun(mlp_build, mlp_build.pipeline)
    assert same.reused == 18 and same.resumed_pass is None
    assert same.note.startswith("resumed after the last Relax pass: reused 18")
    assert same.downstream.identical
    off = rerun(mlp_build, mlp_build.pipeline.disable("FoldConstant"))
    assert (off.reused, off.resumed_pass) == (4, "FuseOps")
    with pytest.raises(TypeError, match="passlab.Build"):
        rerun(mlp_build.trace, mlp_build.pipeline)


# ------------------------------------------------------------------ docs, imports
def test_import_research_is_cheap():
    import subprocess
    import sys

    code = ("import sys, passlab.research; print([m for m in ('tvm', 'pandas', 'IPython') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
