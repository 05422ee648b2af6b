"""passlab.attribute (issue 25): which pass costs or saves run time. Structure and the
order of effects, not timings: the slowed kernel (a transpose, there with and without
fusion, so disabling FuseOps keeps it slow) does 20,000x its work (a few milliseconds),
far above the noise of 2 shared cores (small kernels there vary by 100s of us; at 5,000x,
about a millisecond, a loaded machine once ranked FuseOps first)."""

from __future__ import annotations

import pytest
from attribute_test_passes import identity, slow_transpose

import passlab
from passlab.errors import SweepError, UnknownNameError
from passlab.research.attribute import COLUMNS, Attribution


def _kernels_called(build: passlab.Build) -> int:
    """Distinct kernels the entry function calls, from the IR the VM runs."""
    import tvm

    final = [s for s in build.trace if s.kind == "pass" and s.level == "relax"][-1].after
    prims = {gv.name_hint for gv, f in final.functions_items()
             if isinstance(f, tvm.tirx.PrimFunc)}
    called: set[str] = set()

    def visit(e):
        if isinstance(e, tvm.relax.Call) and isinstance(e.op, tvm.ir.GlobalVar) \
                and e.op.name_hint in prims:
            called.add(e.op.name_hint)

    tvm.relax.analysis.post_order_visit(final[build.entry], visit)
    return len(called)


@pytest.fixture(scope="module")
def slowed() -> Attribution:
    pipe = passlab.Pipeline.default("llvm").insert(slow_transpose, after="legalize")
    return passlab.attribute("mlp", pipe, passes=["FuseOps", "slow_transpose", "LegalizeOps"],
                             repeat=5, workers=2)


@pytest.mark.slow
def test_the_slow_pass_comes_first_with_its_kernel(slowed):
    assert slowed.status == "ok" and slowed.model == "mlp" and slowed.target == "llvm"
    first = slowed[0]
    assert first.pass_ == "slow_transpose" and first.status == "ok"
    assert first.moved[0][0] == "transpose" and first.moved[0][1] > 0
    assert first.delta_s > 0 and first.run_s > first.run_s_without
    assert first.delta_s == pytest.approx(first.run_s - first.run_s_without)
    assert first.delta_pct == pytest.approx(first.delta_s / first.run_s_without)
    assert first.kernels == first.kernels_without == 4
    assert first.max_abs_diff == 0.0  # same work, done TIMES times
    assert first.reused is False  # its kernels differ from the full pipeline's
    # both pipelines timed in alternation in the variant's job: the same load on both
    assert first.paired and slowed["FuseOps"].paired and not slowed["LegalizeOps"].paired


@pytest.mark.slow
def test_disabling_fuseops_adds_exactly_the_unfused_kernels(slowed, mlp_build):
    unfused = passlab.build("mlp", passlab.Pipeline.default("llvm").disable("FuseOps"))
    row = slowed["FuseOps"]
    assert row.status == "ok" and row.max_abs_diff < 1e-5
    assert (row.kernels, row.kernels_without) == (_kernels_called(mlp_build),
                                                  _kernels_called(unfused))
    assert row.kernels_without - row.kernels == 3  # matmul, add, relu apart: 7 - 4


@pytest.mark.slow
def test_a_pass_the_build_needs_is_a_build_fails_row(slowed):
    row = slowed["LegalizeOps"]
    assert row.status == "build fails" and row.error
    assert row.run_s_without is None and row.delta_s is None and row.moved == ()
    assert slowed[-1] is row  # failures last


@pytest.mark.slow
def test_attribution_views(slowed):
    df = slowed.to_dataframe()
    assert list(df.columns) == list(COLUMNS)
    assert df["pass"].tolist() == ["slow_transpose", "FuseOps", "LegalizeOps"]
    assert df["status"].tolist() == ["ok", "ok", "build fails"]
    text = slowed.to_text()
    assert text.splitlines()[0] == slowed.summary()
    assert "2 ok, 1 build fails" in slowed.summary()
    assert "transpose +" in text
    assert "<table" in slowed.to_html()
    with pytest.raises(UnknownNameError, match="did you mean 'FuseOps'"):
        slowed["FuseOp"]


def test_attribute_bad_input():
    with pytest.raises(UnknownNameError, match="did you mean 'FuseOps'"):
        passlab.attribute("mlp", passes=["FuseOp"])
    with pytest.raises(SweepError, match="already disabled"):
        passlab.attribute("mlp", passlab.Pipeline.default("llvm").disable("FuseOps"),
                          passes="FuseOps")
    with pytest.raises(ValueError, match="repeat must be an int of at least 1"):
        passlab.attribute("mlp", repeat=0)
    with pytest.raises(SweepError, match="cannot travel to a worker process"):
        passlab.attribute("mlp", passlab.Pipeline.default("llvm").insert(
            lambda mod: mod, after="legalize"), passes=["FuseOps"])


@pytest.mark.slow
def test_cli_attribute_prints_the_pass_table(capsys):
    from passlab.cli import main

    assert main(["attribute", "mlp", "--passes", "FuseOps", "--workers", "1",
                 "--repeat", "1"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("mlp on llvm: ") and "1 passes disabled" in lines[0]
    assert lines[3].split()[:2] == ["FuseOps", "ok"] and "4 -> 7" in lines[3]
    assert "[2/2] mlp" in captured.err


@pytest.mark.slow
def test_profiled_sweep_has_run_time_columns():
    result = passlab.sweep(["mlp"], {"default": "fused", "unfused": "build"}, workers=1,
                           profile=2)
    df = result.to_dataframe()
    assert list(df.columns[-2:]) == ["run_s", "run_s_vs_default"]
    base, unfused = result["mlp", "default"], result["mlp", "unfused"]
    assert base.run_s > 0 and unfused.run_s > 0 and base.run_s_vs_default == 1.0
    assert unfused.run_s_vs_default == pytest.approx(unfused.run_s / base.run_s)


def test_sweep_profile_argument_is_checked():
    with pytest.raises(SweepError, match="profile is True, False or a number of repeats"):
        passlab.sweep(["mlp"], {"default": "fused"}, profile=0.5)


@pytest.mark.slow
def test_variants_with_the_same_kernels_reuse_them():
    # FoldConstant has nothing to fold in the MLP (its weights are parameters): the build
    # without it ends in the same kernels and skips TIR lowering and codegen
    a = passlab.attribute("mlp", passes=["FoldConstant", "FuseOps"], repeat=1, workers=1)
    assert (a["FoldConstant"].status, a["FoldConstant"].reused) == ("ok", True)
    assert (a["FuseOps"].status, a["FuseOps"].reused) == ("ok", False)
    assert a["FoldConstant"].kernels == a["FoldConstant"].kernels_without == 4


@pytest.mark.slow
def test_prefix_reuse_gives_the_same_rows():
    # each variant re-run from the full pipeline's recorded prefix (the default) against
    # each one built from the model: the same statuses, kernels, outputs and errors; a
    # user pass that is the last Relax pass too (its re-run runs no Relax pass: the
    # profile starts from the module it resumed from)
    names = ["LegalizeOps", "FoldConstant", "FuseOps", "FuseTIR", "identity"]
    pipe = passlab.Pipeline.default("llvm").insert(identity, after="finalize")

    def rows(a):
        return {r.pass_: (r.status, r.max_abs_diff, r.kernels, r.kernels_without, r.reused,
                          r.error) for r in a}

    reused = passlab.attribute("mlp", pipe, passes=names, repeat=1, workers=1)
    built = passlab.attribute("mlp", pipe, passes=names, repeat=1, workers=1,
                              reuse_prefix=False)
    assert rows(reused) == rows(built)
    assert rows(reused)["FuseOps"][:4] == ("ok", 0.0, 4, 7)
    assert rows(reused)["LegalizeOps"][0] == "build fails"
    assert rows(reused)["identity"][:5] == ("ok", 0.0, 4, 4, True)
