from __future__ import annotations

import pytest
import tvm

import passlab
from passlab import Pipeline

FUSED = [
    "DispatchSampling", "DispatchSortScan",
    "LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR",
    "RewriteDataflowReshape", "ToNonDataflow", "RemovePurityChecking", "CallTIRRewrite",
    "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse", "LowerRuntimeBuiltin",
    "ComputePrimValue", "VMShapeLower", "AttachGlobalSymbol",
]


def ident(mod):
    return mod


def test_default_fused_pipeline_matches_tvm_stage_lists():
    pipe = Pipeline.default("llvm")
    assert pipe.variant == "fused"
    assert pipe.target == "llvm"
    assert pipe.stage_names == ("library_dispatch", "legalize", "dataflow_lower", "finalize",
                                "s_tir", "tirx", "host_finalize", "device_finalize", "codegen")
    assert [e.name for e in pipe.relax_passes] == FUSED
    assert list(pipe.names) == FUSED + [e.name for e in pipe.tir_passes]
    assert [e.name for e in pipe.stage("legalize").passes] == FUSED[2:7]


def test_build_variant_is_what_relax_build_runs():
    """The 'build' variant mirrors default_build_pipeline; check it against a real
    relax.build so that a TVM upgrade that changes the list fails here."""
    pipe = Pipeline.default("llvm", variant="build")
    assert Pipeline.relax_build_variant("llvm") == "build"
    assert Pipeline.relax_build_variant("cuda") == "fused"
    with passlab.record() as rec:
        tvm.relax.build(passlab.models.mlp(), "llvm")
    relax_pipeline = next(s for s in rec.trace if s.name == "_pipeline")
    ran = [s.name for s in rec.trace if s.depth == 2 and s.index < relax_pipeline.index + 40
           and s.stage == "relax" and s.parent is not None
           and rec.trace[s.parent].parent == relax_pipeline.index]
    assert ran == [e.name for e in pipe.relax_passes]
    assert "FuseOps" not in pipe.names


def test_cuda_pipeline_has_dlight_schedule():
    pipe = Pipeline.default("cuda")
    assert pipe.names[pipe.names.index("FuseTIR") + 1] == "ApplyDefaultSchedule"


def test_insert_after_pass_and_stage_and_before():
    pipe = Pipeline.default("llvm")
    p = pipe.insert(ident, after="FuseOps", name="a").insert(ident, after="legalize", name="b")
    p = p.insert(ident, before="legalize", name="c").insert(ident, before="CallTIRRewrite", name="d")
    assert [e.name for e in p.stage("legalize").passes] == [
        "c", "LegalizeOps", "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "a", "FuseTIR", "b"]
    assert [e.name for e in p.stage("dataflow_lower").passes][-2:] == ["d", "CallTIRRewrite"]
    assert [e.note for e in p.user_passes] == [
        "inserted before legalize", "inserted after FuseOps", "inserted after legalize",
        "inserted before CallTIRRewrite"]
    # the original is untouched: pipelines are values
    assert [e.name for e in pipe.relax_passes] == FUSED and not pipe.edited and p.edited


def test_remove_replace_disable():
    pipe = Pipeline.default("llvm")
    assert "FoldConstant" not in pipe.remove("FoldConstant").names
    r = pipe.replace("FoldConstant", ident, new_name="my_fold")
    assert r.names[4] == "my_fold" and r["my_fold"].note == "replaces FoldConstant"
    d = pipe.disable("FoldConstant")
    assert d.names == pipe.names and d["FoldConstant"].enabled is False
    assert d.enable("FoldConstant")["FoldConstant"].enabled is True


def test_pipeline_text_marks_user_passes_and_disabled():
    p = Pipeline.default("llvm").insert(ident, after="legalize", name="mine").disable("FoldConstant")
    text = p.to_text()
    assert text.splitlines()[0] == ("Pipeline for llvm (variant 'fused'), 71 passes "
                                    "(19 Relax, 52 TIR)")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    assert "7 legalize mine + user: inserted after legalize" in lines
    assert "4 legalize FoldConstant disabled" in lines
    assert "36 tirx tirx.FlattenBuffer" in lines and "66 host_finalize tirx.LowerTVMBuiltin" in lines
    assert lines[-1] == "70 device_finalize tirx.LowerIntrin"
    html = p.to_html()
    assert '<tr class="user">' in html and '<tr class="off">' in html
    df = p.to_dataframe()
    assert list(df.columns) == ["stage", "name", "origin", "enabled", "note"]
    assert df.loc[7, "name"] == "mine"


def test_misspelt_name_lists_close_matches():
    with pytest.raises(passlab.UnknownNameError) as err:
        Pipeline.default("llvm").insert(ident, after="FuseOp")
    msg = str(err.value)
    assert msg.startswith("unknown pass or stage 'FuseOp'; did you mean 'FuseOps', 'FuseTIR'?")
    assert "legalize" in msg and err.value.close_matches == ("FuseOps", "FuseTIR")
    with pytest.raises(KeyError):
        Pipeline.default("llvm").remove("Legalize")
    with pytest.raises(ValueError, match="unknown stage 'legalise'; did you mean 'legalize'"):
        Pipeline.default("llvm").stage("legalise")


def test_bad_target_and_variant_and_anchor():
    with pytest.raises(ValueError, match="unknown target 'llvx'; did you mean 'llvm'"):
        Pipeline.default("llvx")
    # a kind TVM defines but has no Relax pipeline for ("c" is taken: tests/test_targets.py)
    with pytest.raises(ValueError, match="unknown target 'hexagon'.*Known target names: llvm, c, "
                                         "cuda"):
        Pipeline.default("hexagon")
    with pytest.raises(ValueError, match="unknown pipeline variant 'fuse'; did you mean 'fused'"):
        Pipeline.default("llvm", variant="fuse")
    with pytest.raises(ValueError, match="exactly one of before= or after="):
        Pipeline.default("llvm").insert(ident)
    with pytest.raises(TypeError, match="a user pass must be a TVM pass .* not int"):
        Pipeline.default("llvm").insert(3, after="FuseOps")


def test_to_pass_is_one_module_pass():
    p = Pipeline.default("llvm").to_pass()
    assert isinstance(p, tvm.transform.Pass) and p.info.name == "passlab.pipeline"


def test_position_names_one_of_several_passes_of_the_same_name():
    pipe = Pipeline.default("llvm")
    names = list(pipe.names)
    at = [k for k, n in enumerate(names) if n == "s_tir.ThreadSync"]
    assert len(at) >= 2
    spots = {pipe.position(k) for k in at}
    assert len(spots) == len(at)  # each call its own (stage, index)
    for k in at:
        si, pi = pipe.position(k)
        assert pipe.all_stages[si].passes[pi].name == "s_tir.ThreadSync"
    for bad in (-1, len(names)):
        with pytest.raises(IndexError, match=rf"positions 0..{len(names) - 1}"):
            pipe.position(bad)
    # with_passes keeps the codegen stage for source emitters only
    codegen = pipe.stage_names.index("codegen")
    with pytest.raises(TypeError, match="emitter"):
        pipe.with_passes(codegen, pipe.all_stages[0].passes)
