"""The TIR stage as data: TVM's default TIR pipeline in the Pipeline, edited like the
Relax stages, registered with TVM for one build only, recorded under its stage names."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import tvm

import passlab
from passlab import Pipeline
from passlab._tvm import tir as _tir
from passlab.research import rerun

S_TIR_HEAD = ["s_tir.CanonicalizeLoop", "s_tir.LowerCrossThreadReduction", "s_tir.LowerInitBlock"]


def _tvm_pipelines() -> dict:
    return dict(tvm.tirx.compilation_pipeline.PIPELINE_MAP)


def _ran(trace, stage_parent: str) -> list[str]:
    """Names of the passes recorded directly under the containers called
    ``stage_parent`` (TVM's ``sequential`` of its default TIR pipeline)."""
    containers = {s.index for s in trace if s.name == stage_parent}
    return [s.name for s in trace if s.parent in containers]


@pytest.fixture(scope="module")
def mlp():
    return passlab.models.mlp()


@pytest.fixture(scope="module")
def base(mlp):
    return passlab.build(mlp)


def test_default_tir_stages_are_what_tvm_runs(mlp):
    """The mirrored list equals what TVM's own default TIR pipeline runs, under the
    default config and under one that drops and changes passes."""
    config = {"tirx.disable_cse_tir": True, "tirx.disable_vectorize": True}
    for cfg in ({}, config):
        with tvm.transform.PassContext(config=cfg):
            pipe = Pipeline.default("llvm")
            with passlab.record() as rec:
                tvm.relax.build(mlp, "llvm")
        lowering = next(s for s in rec.trace if s.name == "_pipeline" and s.stage == "tir")
        ran = [s.name for s in rec.trace if s.parent is not None
               and rec.trace[s.parent].parent == lowering.index]
        stages = {s.name: [e.name for e in s.passes] for s in pipe.tir_stages}
        assert ran == stages["s_tir"] + stages["tirx"]
        host = [s.name for s in rec.trace if s.parent is not None and s.index > lowering.index
                and rec.trace[s.parent].name == "sequential" and rec.trace[s.parent].depth == 0]
        assert host == stages["host_finalize"]
    assert "tirx.CommonSubexprElim" not in stages["tirx"]
    assert pipe["tirx.VectorizeLoop"].note == "vectorization off (tirx.disable_vectorize)"
    assert stages["s_tir"][:3] == S_TIR_HEAD and len(stages["s_tir"]) == 17
    assert stages["device_finalize"] == ["tirx.LowerWarpMemory", "tirx.StmtSimplify",
                                         "tirx.LowerIntrin"]
    assert stages["codegen"] == []


def test_identity_pass_after_flatten_buffer_sees_primfuncs_and_keeps_outputs(mlp, base):
    seen = []

    def ident(mod):
        seen.append(sorted({type(f).__name__ for f in mod.functions.values()}))
        return mod

    before = _tvm_pipelines()
    b = passlab.build(mlp, Pipeline.default("llvm").insert(ident, after="tirx.FlattenBuffer"))
    assert seen == [["PrimFunc"]]
    assert np.array_equal(b.run(), base.run())
    step = b.trace.find("ident")
    assert (step.stage, step.origin, step.kind, step.level, step.changed) == (
        "tirx", "user", "pass", "tir", False)
    assert b.trace[step.index - 1].name == "tirx.FlattenBuffer"
    # TVM's registered pipelines are untouched after the build: same names, same factories
    assert _tvm_pipelines() == before
    assert not any(n.startswith("passlab_") for n in _tir.registered_names())


def test_recorded_tir_steps_carry_the_pipeline_stage_names(base):
    t = base.trace
    by_stage = {}
    for s in t.top_level():
        by_stage.setdefault(s.stage, []).append(s.name)
    assert by_stage["s_tir"][:3] == S_TIR_HEAD
    assert by_stage["tirx"][0] == "tirx.FlattenBuffer"
    assert by_stage["tirx"][-1] == "tirx.BF16StorageLegalize"
    assert by_stage["host_finalize"] == ["tirx.LowerTVMBuiltin", "tirx.LowerIntrin"]
    assert by_stage["tir"] == ["tirx.BindTarget", "tirx.Filter", "tirx.Filter"]
    assert by_stage["codegen"] == ["codegen"]
    root = t.find(_tir.TIR_ROOT)
    assert (root.kind, root.depth, root.stage) == ("container", 0, "tir")
    assert [s.name for s in t.children(root)] == ["s_tir", "tirx"]
    host = next(s for s in t if s.name == "host_finalize")
    assert (host.kind, host.depth, host.stage) == ("container", 0, "host_finalize")
    assert t.stage("tirx").top_level()[0].name == "tirx.FlattenBuffer"


def test_a_tir_pass_that_changes_something_shows_in_the_trace(mlp):
    def mark(mod):
        return tvm.IRModule({gv: f.with_attr("passlab.seen", 1) for gv, f in mod.functions.items()},
                            attrs=mod.attrs)

    b = passlab.build(mlp, Pipeline.default("llvm").insert(mark, before="tirx.MakePackedAPI"))
    step = b.trace.find("mark")
    assert step.stage == "tirx" and step.changed
    assert sorted(step.functions_changed.modified) == sorted(
        gv.name_hint for gv in step.before.get_global_vars())
    assert len(step.functions_changed.modified) >= 4
    assert '"passlab.seen": 1' in passlab.diff(step).to_text()


def test_remove_replace_disable_work_on_tir_passes(mlp):
    pipe = Pipeline.default("llvm")
    assert "tirx.CommonSubexprElim" not in pipe.remove("tirx.CommonSubexprElim").names

    def my_cse(mod):
        return mod

    r = pipe.replace("tirx.CommonSubexprElim", my_cse).disable("tirx.VectorizeLoop")
    assert r["my_cse"].note == "replaces tirx.CommonSubexprElim" and r.edited
    assert r["tirx.VectorizeLoop"].enabled is False
    assert [e.name for e in r.user_passes] == ["my_cse"]
    b = passlab.build(mlp, r)
    names = [s.name for s in b.trace]
    assert "my_cse" in names and "tirx.CommonSubexprElim" not in names
    assert "tirx.VectorizeLoop" not in names
    assert b.trace.find("my_cse").stage == "tirx"
    with pytest.raises(passlab.UnknownNameError, match="did you mean 'tirx.FlattenBuffer'"):
        pipe.insert(my_cse, after="tirx.FlatenBuffer")
    with pytest.raises(TypeError, match="the codegen stage takes source emitters"):
        pipe.insert(tvm.tirx.transform.RemoveNoOp(), after="codegen")


@pytest.mark.slow
def test_a_failing_tir_pass_is_captured_with_a_reproducer(mlp, tmp_path):
    def boom(mod):
        raise ValueError("no TIR today")

    before = _tvm_pipelines()
    with pytest.raises(passlab.BuildError) as info:
        passlab.build(mlp, Pipeline.default("llvm").insert(boom, after="tirx.FlattenBuffer"))
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.failure.where, err.step.name, err.step.stage) == ("pass", "boom", "tirx")
    assert err.failure.enclosing == (_tir.TIR_ROOT, "tirx")
    assert err.failure.message == "no TIR today"
    assert sorted({type(f).__name__ for f in err.step.before.functions.values()}) == ["PrimFunc"]
    assert _tvm_pipelines() == before  # cleaned up after a failed build too
    path = tmp_path / "repro.py"
    passlab.reproducer(err).write(path)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == "ValueError: no TIR today"


def test_kernel_reuse_keys_on_the_tir_pipeline_content(mlp, base):
    same = passlab.build(mlp, Pipeline.default("llvm"), reuse=base)
    assert same.trace.kernels_reused and same.trace.code is base.trace.code
    edited = base.pipeline.insert(lambda mod: mod, after="tirx.FlattenBuffer", name="peek")
    other = passlab.build(mlp, edited, reuse=base)
    assert not other.trace.kernels_reused
    assert other.trace.find("peek").stage == "tirx"
    # a rerun of a TIR edit reuses every Relax pass and runs only the TIR stage again
    r = rerun(base, edited)
    assert (r.resumed_pass, r.reused) == ("peek", len(base.pipeline.relax_passes))
    assert not r.trace.kernels_reused and r.trace.find("peek").origin == "user"
    assert np.array_equal(r.run(), base.run())


def test_a_tvm_pipeline_name_still_works(mlp):
    b = passlab.build(mlp, tir_pipeline="default")
    stages = {s.stage for s in b.trace}
    assert "tirx" not in stages and "tir" in stages  # TVM's own pipeline: no stage names
    assert b.trace.code.kinds == ("llvm", "asm")
