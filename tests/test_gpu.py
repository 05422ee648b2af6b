"""CUDA builds on a GPU: `Build.run`, `build.profile()`, bisect, A/B, attribute and sweep
numerics on the device, and a library compiled without a GPU that runs on one.

The tests marked `gpu` need an NVIDIA GPU and a TVM whose CUDA runtime is enabled; they
skip, with the reason, everywhere else (CI has no GPU). On a GPU machine:

    python -m pytest -m gpu tests/test_gpu.py

`benchmarks/gpu_check.py` runs the same checks on the ResNets and prints the kernel table.
The test without the mark runs everywhere: a CUDA build made here exports a library that
holds the CUDA C source, which TVM compiles where the library is loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import passlab
from passlab.errors import DeviceUnavailableError


def _why_no_gpu() -> str | None:
    import tvm

    try:
        if not tvm.runtime.enabled("cuda"):
            return "this TVM has no CUDA runtime"
        if not tvm.cuda(0).exist:
            return "no CUDA device on this machine"
    except Exception as exc:  # noqa: BLE001 - a runtime that fails to load is absent
        return f"the CUDA runtime does not load ({type(exc).__name__})"
    return None


WHY = _why_no_gpu()
needs_gpu = pytest.mark.skipif(WHY is not None, reason=f"needs a GPU: {WHY}")


def _target() -> dict:
    import tvm

    major, minor = str(tvm.cuda(0).compute_version).split(".")
    return {"kind": "cuda", "arch": f"sm_{major}{minor}"}


def _close(a, b) -> bool:
    a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
    return len(a) == len(b) and all(np.allclose(x, y, rtol=1e-3, atol=1e-4)
                                    for x, y in zip(a, b))


@pytest.fixture(scope="module")
def cuda_mlp():
    return passlab.build(passlab.models.mlp(), passlab.Pipeline.default(_target()))


@pytest.mark.parametrize("name", ["mlp", "transformer", "resnet"])
@pytest.mark.gpu
@needs_gpu
def test_run_on_the_gpu_matches_llvm(name):
    import tvm

    built = passlab.build(name, passlab.Pipeline.default(_target()))
    assert str(built.device) == str(tvm.cuda(0))
    ref = passlab.build(name)
    inputs = ref.inputs(seed=0)
    out = built.run(*inputs)  # numpy in, numpy out: moved to the GPU and back
    assert _close(out, ref.run(*inputs))
    assert _close(built.run(), ref.run())  # drawn inputs, the same seed


@pytest.mark.gpu
@needs_gpu
def test_profile_on_the_gpu_adds_up(cuda_mlp):
    import tvm

    prof = cuda_mlp.profile(repeat=5, budget_s=2)
    assert prof.device == tvm.cuda(0).device_name
    assert prof.kernels_s + prof.overhead_s + prof.unattributed_s == \
        pytest.approx(prof.instrumented_s, rel=1e-12, abs=1e-15)
    assert all(0 <= k.share <= 1 and k.calls > 0 for k in prof)
    assert prof.unattributed_s >= -prof.noise_s
    assert all(k.alone_s is not None and k.alone_s > 0 for k in prof)
    assert prof.not_called == ()


@pytest.mark.gpu
@needs_gpu
def test_bisect_and_ab_numerics_on_the_gpu(cuda_mlp):
    from passlab.research.edit_session import Edit, EditSession

    report = passlab.bisect(passlab.models.mlp(), cuda_mlp.pipeline, progress=False)
    assert report.first_bad is None and len(report) > 0
    session = EditSession(cuda_mlp)
    session.add(Edit("disable", session.pipeline.names.index("FoldConstant")))
    result = session.run().result
    assert result.error == "" and result.max_abs_diff is not None
    assert result.max_abs_diff < 1e-4
    assert all(t is not None and t > 0 for t in result.run_s)


@pytest.mark.gpu
@needs_gpu
def test_attribute_and_sweep_numerics_on_the_gpu(tmp_path):
    pipe = passlab.Pipeline.default(_target())
    result = passlab.attribute("mlp", pipe, passes=["FoldConstant"], repeat=3, workers=1)
    assert result.status == "ok", result.error
    assert [r.status for r in result] == ["ok"]
    swept = passlab.sweep(["mlp"], {"default": pipe}, workers=1, out=tmp_path, profile=3)
    assert [r.status for r in swept] == ["ok"] and swept[0].run_s > 0


_EXPORT = """
import json, sys, passlab
b = passlab.build("mlp", passlab.Pipeline.default(json.loads(sys.argv[2])))
b.executable.export_library(sys.argv[1])
"""


def _export_without_gpu(path, target) -> None:
    import json

    env = dict(os.environ, TVM_COMPILE_FORCE_FALLBACK="1", CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-c", _EXPORT, str(path), json.dumps(target)],
                   env=env, check=True, timeout=600)


def test_a_cuda_build_made_without_a_gpu_exports_its_source(tmp_path):
    # what this machine's TVM (or any, with TVM_COMPILE_FORCE_FALLBACK=1) makes of a cuda
    # build: the CUDA module holds the CUDA C source, compiled where it is loaded
    path = tmp_path / "mlp_cuda.so"
    _export_without_gpu(path, {"kind": "cuda", "arch": "sm_90"})
    blob = path.read_bytes()
    assert blob.startswith(b"\x7fELF")
    kernels = ("fused_matmul_add_relu", "fused_matmul1_add1", "transpose", "transpose1")
    assert b'extern "C" __global__ void __launch_bounds__' in blob
    for k in kernels:
        assert f"{k}_kernel(".encode() in blob
    if WHY is not None:  # and it needs a GPU to run
        b = passlab.build(passlab.models.mlp(), passlab.Pipeline.default("cuda"))
        with pytest.raises(DeviceUnavailableError, match="cannot run this 'cuda' build"):
            b.run()


@pytest.mark.gpu
@needs_gpu
def test_a_library_compiled_without_a_gpu_runs_on_it(tmp_path):
    import tvm

    path = tmp_path / "mlp_cuda.so"
    _export_without_gpu(path, _target())
    vm = tvm.relax.VirtualMachine(tvm.runtime.load_module(str(path)), tvm.cuda(0))
    ref = passlab.build("mlp")
    inputs = ref.inputs(seed=0)
    out = vm[ref.entry](*[tvm.runtime.tensor(a, tvm.cuda(0)) for a in inputs])
    assert _close(passlab._tvm.to_numpy(out), ref.run(*inputs))
