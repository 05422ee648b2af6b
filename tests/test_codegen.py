"""Generated code as the last step of the trace, per target, on a machine without GPUs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import passlab
from passlab import Pipeline
from passlab.backend import Backend
from passlab.errors import DeviceUnavailableError, UnknownNameError

KERNELS = ("fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1")


@pytest.fixture(scope="module")
def mlp():
    return passlab.models.mlp()


@pytest.fixture(scope="module")
def cpu(mlp):
    return passlab.build(mlp)


@pytest.fixture(scope="module")
def cuda(mlp):
    return passlab.build(mlp, Pipeline.default("cuda"))


def test_llvm_codegen_step_holds_llvm_ir_and_assembly_per_kernel(cpu):
    step = cpu.trace[-1]
    assert (step.name, step.stage, step.level, step.kind, step.changed) == (
        "codegen", "codegen", "codegen", "pass", False)
    assert step.seconds is not None and step.seconds > 0
    code = cpu.trace.code
    assert code is step.code and sorted(code.kernels) == sorted(KERNELS)
    assert code.kinds == ("llvm", "asm") and code.main_kind == "llvm"
    assert cpu.source() == cpu.source("llvm") == code.text("llvm")
    assert cpu.source().startswith("; ModuleID = 'TVMMod'")
    assert "\t.text" in cpu.source("asm")
    ir = cpu.source("llvm", kernel="fused_matmul_add_relu")
    # what the kernel computes first, the wrapper that unpacks the arguments last
    assert re.findall(r"^define .*@(\w+)\(", ir, re.M) == [
        "fused_matmul_add_relu_compute_", "__tvm_ffi_fused_matmul_add_relu"]
    asm = cpu.source("asm", kernel="fused_matmul_add_relu")
    assert asm.splitlines()[0] == "fused_matmul_add_relu_compute_:"
    assert sorted(code.per_kernel("asm")) == sorted(KERNELS)
    both = code.kernel("transpose")
    assert both.startswith("// llvm\ndefine internal fastcc void @transpose_compute_(")
    assert "\n// asm\ntranspose_compute_:" in both
    assert "transpose1" not in both  # transpose1 is another kernel
    with pytest.raises(passlab.UnknownNameError, match="unknown source kind 'cuda'"):
        cpu.source("cuda")
    assert code.to_text().splitlines()[0] == (
        f"Generated code for llvm, 4 kernels (llvm, asm, llvm: "
        f"{len(code.text('llvm').splitlines())} lines)")
    assert '<pre data-kind="llvm">; ModuleID = &#x27;TVMMod&#x27;' in code.to_html()


def test_llvm_target_options_reach_the_code_generator(mlp, cpu):
    avx = passlab.build(mlp, Pipeline.default("llvm -mcpu=haswell"))
    assert avx.pipeline.target == "llvm -mcpu=haswell"
    assert "%ymm" in avx.source("asm") and "%ymm" not in cpu.source("asm")
    assert np.allclose(avx.run(), cpu.run(), atol=1e-5)


def test_c_target_generates_c_function_bodies(mlp):
    b = passlab.build(mlp, Pipeline.default("c"))
    assert b.trace.code.kinds == ("c",)
    body = b.source(kernel="fused_matmul_add_relu")
    assert body.startswith("TVM_DLL int32_t __tvm_ffi_fused_matmul_add_relu(void* self_handle")
    assert body.rstrip().endswith("}") and "return 0;" in body
    with pytest.raises(DeviceUnavailableError, match="the 'c' target generates C source"):
        b.run()


def test_a_misspelt_kernel_is_named_with_close_matches(cpu):
    # issue 22 item 15: build.source(kernel="typo") returned ""
    with pytest.raises(UnknownNameError) as err:
        cpu.source(kernel="fused_matmul_add_rel")
    assert str(err.value) == (
        "unknown kernel 'fused_matmul_add_rel'; did you mean 'fused_matmul_add_relu', "
        "'fused_matmul1_add1'? Known "
        "kernel names: fused_matmul1_add1, fused_matmul_add_relu, transpose, transpose1. (the "
        "TIR kernels compiled for llvm)")
    with pytest.raises(KeyError, match="unknown kernel 'typo'. Known kernel names"):
        cpu.trace.code.kernel("typo", "asm")
    assert isinstance(err.value, ValueError)


def test_cuda_kernels_and_thread_bindings_on_a_cpu_machine(cuda):
    t = cuda.trace
    assert t.find("ApplyDefaultSchedule").stage == "legalize"  # DLight
    lowering = t.find("s_tir.CanonicalizeLoop").before.script()
    assert 'T.thread_binding(' in lowering and 'thread="threadIdx.x"' in lowering
    code = t.code
    assert code.kinds == ("llvm", "asm", "cuda") and code.main_kind == "cuda"
    kernel = cuda.source(kernel="fused_matmul_add_relu")
    assert kernel.startswith('extern "C" __global__ void __launch_bounds__(')
    assert "fused_matmul_add_relu_kernel(float* __restrict__" in kernel
    assert "threadIdx.x" in kernel and "__shared__" in kernel
    assert sorted(code.per_kernel()) == sorted(KERNELS)
    assert "device_finalize" in {s.stage for s in t}
    with pytest.raises(DeviceUnavailableError, match="no cuda runtime"):
        cuda.run()


def test_compare_works_across_targets(cpu, cuda):
    c = passlab.compare(cpu.trace, cuda.trace)
    assert c.only_in_b == ("ApplyDefaultSchedule", "RewriteCUDAGraph", "tirx.LowerWarpMemory",
                           "tirx.StmtSimplify#1", "tirx.LowerIntrin#1")  # device_finalize
    assert "codegen" not in c.only_in_a + c.only_in_b
    assert c.first_difference is not None
    assert "Comparison of A" in c.to_text()


@pytest.mark.slow
@pytest.mark.parametrize("kind, marker", [("opencl", "__kernel void fused_matmul_add_relu_kernel("),
                                          ("webgpu", "fn fused_matmul_add_relu_kernel(")])
def test_other_gpu_sources(mlp, kind, marker):
    b = passlab.build(mlp, Pipeline.default(kind))
    assert b.trace.code.main_kind == kind
    assert b.source(kernel="fused_matmul_add_relu").startswith(marker)


@pytest.mark.slow
def test_a_target_without_a_code_generator_says_so_and_keeps_every_pass(mlp):
    assert passlab.targets().status("vulkan").startswith("not available: no code generator")
    with pytest.raises(passlab.BuildError) as info:
        passlab.build(mlp, Pipeline.default("vulkan"))
    err = info.value
    assert err.failure.where == "codegen"
    assert "Code generation for 'vulkan' is not available: no code generator in this TVM " \
           "(target.build.vulkan)" in str(err)
    assert err.trace.find("tirx.MakePackedAPI").stage == "tirx"


def test_targets_table():
    t = passlab.targets()
    assert {"llvm", "c", "cuda", "opencl", "webgpu"} <= set(t.available)
    assert "vulkan" not in t.available
    assert t.rows[0] == ("llvm", "cpu_generic", "available", "yes")
    assert t.rows[1] == ("c", "cpu_generic", "available", "no: C source")
    assert t.rows[2] == ("cuda", "cuda", "available", "no: no cuda runtime or device")
    assert t.to_text().splitlines()[1].split() == ["target", "Relax", "pipeline", "code",
                                                   "generation", "runs", "here"]


def test_backend_tir_phases_and_codegen_hook(mlp):
    seen = {}

    def before(mod):
        seen["before"] = "T.sblock" in mod.script()
        return mod

    def after(mod):
        seen["after"] = "T.sblock" in mod.script()
        return mod

    def emit(mod):
        return "\n".join(f"// npu kernel {gv.name_hint}" for gv in mod.get_global_vars()
                         if not gv.name_hint.startswith("__"))

    npu = Backend("npu", patterns=["example_npu"],
                  passes={"tir_before_lowering": before, "tir_after_lowering": after,
                          "codegen": emit})
    pipe = Pipeline.default("llvm").with_backend(npu)
    assert [(r["stage"], r["name"]) for r in pipe.rows() if r["origin"] == "user"][-3:] == [
        ("s_tir", "before"), ("tirx", "after"), ("codegen", "npu")]
    assert pipe.stage("s_tir").passes[0].name == "before"
    assert pipe.names[pipe.names.index("after") + 1] == "tirx.SplitHostDevice"
    b = passlab.build(mlp, pipe)
    assert seen == {"before": True, "after": False}
    assert sorted(b.source("npu").splitlines()) == sorted(f"// npu kernel {k}" for k in KERNELS)
    assert b.trace.code.kinds == ("llvm", "asm", "npu")
    with pytest.raises(TypeError, match="phase 'codegen' takes source emitters"):
        Backend("npu", patterns=["example_npu"], passes={"codegen": [3]})


def test_saved_trace_keeps_the_generated_code(cpu, tmp_path):
    cpu.source("asm")  # assembly is saved once it was generated (it costs a compilation)
    path = cpu.trace.save(tmp_path / "mlp.trace.zip")
    loaded = passlab.load_trace(path)
    assert loaded[-1].stage == "codegen"
    assert loaded.code.kinds == ("llvm", "asm")
    assert loaded.code.text("asm") == cpu.source("asm")
    assert loaded.code.kernel("transpose1", "llvm") == cpu.source("llvm", kernel="transpose1")
    assert loaded.pipeline.tir_stage_names == cpu.pipeline.tir_stage_names
    assert [e.name for e in loaded.pipeline.tir_passes] == [e.name for e in cpu.pipeline.tir_passes]
    # what a file keeps: assembly only once someone asked for it (it costs a compilation)
    fresh = passlab.build(passlab.models.mlp())
    assert list(fresh.trace.code.read_sources()) == ["llvm"]
    assert fresh.trace.code.kinds == ("llvm", "asm")


def test_explorer_shows_a_kernels_generated_code_beside_its_tir(cuda):
    pytest.importorskip("anywidget", reason="needs the 'notebook' extra")
    from passlab.views.explorer import Explorer

    step = cuda.trace.find("FuseTIR")
    ex = Explorer(cuda.trace, tab="graph", selected=step.index)
    node = next(n for n in ex._panes.graph(step.index).nodes if n.label == "fused_matmul_add_relu")
    ex.node = node.id
    assert ex.kernel_title == "TIR of fused_matmul_add_relu (after #6 FuseTIR)"  # its pipeline position
    assert ex.code_title == "cuda generated for fused_matmul_add_relu (codegen step)"
    assert ex.code_text == cuda.source("cuda", kernel="fused_matmul_add_relu")
    ex.node = "x"  # an input tensor: no kernel, no code
    assert (ex.code_title, ex.code_text) == ("", "")


def test_report_has_each_kernels_code_next_to_its_lowered_tir(cpu):
    from passlab.views._report_state import read_report
    from passlab.views.report import render_report

    _, kept = read_report(render_report(cpu.trace))
    # the kernel panel of the graph after fusion: each kernel's TIR beside its llvm
    panel = json.loads(kept[f"kernels:{cpu.trace.find('FuseTIR').index}:collapse"])
    by_title = {v[0]: v for v in panel.values()}
    kernel = by_title["TIR of fused_matmul_add_relu (after #6 FuseTIR)"]
    assert "def fused_matmul_add_relu(" in kernel[1]
    assert kernel[3] == "llvm generated for fused_matmul_add_relu (codegen step)"
    assert "define " in kernel[4]
    assert sorted(t.split()[2] for t in by_title) == sorted(k for k in KERNELS if "fused" in k)