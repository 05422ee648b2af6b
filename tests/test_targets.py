"""Targets: kind names, the familiar string form, JSON text, dicts and Target objects are
taken everywhere a target is (Pipeline.default, build, the CLI); errors name the option."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

import passlab
from passlab import Pipeline, _tvm, cli
from passlab.errors import UnknownNameError


def test_string_form_becomes_the_dict_form():
    assert _tvm.target_spec("llvm") == "llvm"
    assert _tvm.target_spec("llvm -mcpu=x86-64 -mattr=+avx2") == {
        "kind": "llvm", "mcpu": "x86-64", "mattr": ["+avx2"]}
    assert _tvm.target_spec("  llvm  -mattr=+avx2,+fma -keys=cpu,x -num-cores=4 "
                            "-fast-math -opt-level=3 -fast-math-nnan=false -device=arm_cpu") == {
        "kind": "llvm", "mattr": ["+avx2", "+fma"], "keys": ["cpu", "x"], "num-cores": 4,
        "fast-math": True, "opt-level": 3, "fast-math-nnan": False, "device": "arm_cpu"}
    assert _tvm.target_spec('{"kind": "llvm", "mcpu": "skylake"}') == {
        "kind": "llvm", "mcpu": "skylake"}
    assert _tvm.target_spec({"kind": "llvm", "mattr": "+avx2"}) == {
        "kind": "llvm", "mattr": ["+avx2"]}
    tgt = _tvm.target("llvm -mcpu=x86-64 -mattr=+avx2")
    assert (tgt.kind.name, str(tgt.attrs["mcpu"]), list(tgt.attrs["mattr"])) == (
        "llvm", "x86-64", ["+avx2"])
    assert _tvm.same_target("llvm -mcpu=x86-64", {"kind": "llvm", "mcpu": "x86-64"})
    assert _tvm.same_target(tvm.target.Target({"kind": "llvm", "mcpu": "x86-64"}),
                            "llvm -mcpu=x86-64")


@pytest.mark.parametrize("spec, message", [
    ("llvm -mcpuu=x86-64", "target 'llvm -mcpuu=x86-64': unknown option '-mcpuu' for target "
                           "kind 'llvm'; did you mean '-mcpu'? Known: -keys, -tag, -device,"),
    ({"kind": "llvm", "mcpuu": "x"}, "target {'kind': 'llvm', 'mcpuu': 'x'}: unknown option "
                                     "'mcpuu' for target kind 'llvm'; did you mean 'mcpu'?"),
    ("llvm -mcpu=unknown", "target 'llvm -mcpu=unknown': LLVM 22 does not know the CPU "
                           "'unknown' for "),
    ("llvm -num-cores=four", "target 'llvm -num-cores=four': option '-num-cores' is an "
                             "integer, not 'four'"),
    ("llvm -mcpu", "target 'llvm -mcpu': option '-mcpu' needs a value (-mcpu=...)"),
    ("llvm mcpu=x86-64", "target 'llvm mcpu=x86-64': 'mcpu=x86-64' is not an option; options "
                         "look like -name=value (-mcpu=x86-64) or -flag"),
    ("llvx -mcpu=x86-64", "unknown target 'llvx'; did you mean 'llvm'? Known target names: "
                          "llvm, c, cuda, rocm, metal"),
    ("{not json", "target '{not json' starts like JSON but does not parse"),
])
def test_errors_say_what_is_wrong_with_the_option(spec, message):
    with pytest.raises(ValueError) as err:
        _tvm.target(spec)
    assert str(err.value).startswith(message)


def test_unknown_cpu_suggests_close_names():
    with pytest.raises(UnknownNameError) as err:
        _tvm.target("llvm -mcpu=skylak")
    assert err.value.close_matches[0] == "skylake"
    assert "it would fall back to 'generic'); did you mean 'skylake'" in str(err.value)


def test_every_form_is_taken_by_pipeline_and_build(mlp_build):
    forms = ["llvm -mcpu=x86-64", {"kind": "llvm", "mcpu": "x86-64"},
             tvm.target.Target({"kind": "llvm", "mcpu": "x86-64"}),
             '{"kind": "llvm", "mcpu": "x86-64"}']
    labels = [Pipeline.default(f).target for f in forms]
    assert labels[:2] == ["llvm -mcpu=x86-64", "llvm -mcpu=x86-64"]
    assert all(_tvm.same_target(label, "llvm -mcpu=x86-64") for label in labels)
    b = passlab.build(passlab.models.mlp(), target={"kind": "llvm", "mcpu": "x86-64"})
    assert b.trace.target == "llvm -mcpu=x86-64"
    np.testing.assert_allclose(b.run(), mlp_build.run(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="differs from the pipeline's target"):
        passlab.build(passlab.models.mlp(), Pipeline.default("llvm"), target="llvm -mcpu=skylake")


def test_tvms_dict_target_with_a_host_is_taken():
    # issue 22 item 15: {"kind": "cuda", "host": {...}} raised (no string form for a host)
    spec = {"kind": "cuda", "host": {"kind": "llvm"}}
    label = Pipeline.default(spec).target
    assert label == str(tvm.target.Target(spec)) and label.startswith('{"kind":"cuda"')
    tgt = _tvm.target(label)
    assert (tgt.kind.name, tgt.host.kind.name) == ("cuda", "llvm")
    b = passlab.build(passlab.models.mlp(), target=spec)
    assert b.trace.target == label and b.trace.code.kinds == ("llvm", "asm", "cuda")
    assert "fused_matmul_add_relu_kernel(float* __restrict__" in b.source(
        kernel="fused_matmul_add_relu")


def test_c_target_builds_and_runs_mlp(mlp_build):
    pipe = Pipeline.default("c")
    assert (pipe.target, pipe.variant) == ("c", "fused")
    assert pipe.names == Pipeline.default("llvm").names  # cpu_generic's stages, as llvm
    assert Pipeline.relax_build_variant("c") == "build"
    mod = passlab.models.mlp()
    b = passlab.build(mod, pipe)
    assert b.trace.find("FuseOps").changed
    # TVM's VM runs the C build as it is (called directly: build.run() refuses "c", see
    # passlab/_tvm/codegen.py:runnable)
    rng = np.random.default_rng(0)
    args = [rng.random([int(d) for d in p.ty.shape.values], dtype="float32")
            for p in mod["forward"].params]

    def run(executable):
        vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
        return vm["forward"](*[tvm.runtime.tensor(a) for a in args]).numpy()

    np.testing.assert_allclose(run(b.executable), run(mlp_build.executable), rtol=1e-6)


def test_cli_takes_the_string_form(capsys):
    assert cli.main(["passes", "--target", "llvm -mcpu=x86-64 -mattr=+avx2"]) == 0
    assert capsys.readouterr().out.startswith("Pipeline for llvm -mcpu=x86-64 -mattr=+avx2 ")
    assert cli.main(["passes", "--target", "llvm -mcpuu=x86-64"]) == 2
    assert capsys.readouterr().err.startswith(
        "passlab: error: target 'llvm -mcpuu=x86-64': unknown option '-mcpuu' for target kind "
        "'llvm'; did you mean '-mcpu'?")
