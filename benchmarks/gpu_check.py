"""Check passlab on a GPU in one short run: CUDA builds that run, match the CPU, and time.

On a machine with an NVIDIA GPU (and a TVM whose CUDA runtime is enabled):

1. builds the built-in ResNet and an ONNX ResNet-18 (made here with `onnx.helper`, its
   weights as graph inputs: no file, no download) for llvm and for cuda;
2. runs each CUDA build on the GPU with `Build.run` and compares the outputs with the
   llvm build's on the same seeded inputs;
3. profiles each on the GPU (`build.profile()`: in place, device-synchronised) and prints
   the kernel table with the GPU's name and the date, and checks that the parts add up;
4. the research numerics on the device: `passlab.bisect` of the MLP's cuda pipeline (every
   row is a `Build.run` on the GPU) and an A/B re-run (`EditSession`, outputs and paired
   run times);
5. "compiled here, run there": a child process with `TVM_COMPILE_FORCE_FALLBACK=1` (what a
   CPU-only machine's TVM makes: the CUDA module holds CUDA C source) builds the MLP and
   the ResNet for cuda and exports each as a library; this process loads them, runs them
   on the GPU (TVM compiles the source when it loads it: NVRTC from `cuda-bindings`, or
   nvcc with `TVM_CUDA_COMPILE_MODE=nvcc`) and compares with llvm.

    python benchmarks/gpu_check.py            # on the GPU machine: < 3 min
    python benchmarks/gpu_check.py --dry-run  # anywhere: every step that needs no GPU
                                              # (builds, exports, the ONNX model)

`--dry-run` (and a machine without a GPU) builds and exports everything, checks what the
exported libraries hold, and says which steps need the GPU. Each step prints PASS, FAIL
or SKIP with its reason; the exit status is 1 when a step failed. Everything it needs is
in the repository; the ONNX part needs the `onnx` package (skipped without it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

import passlab  # noqa: E402

RESULTS: list[tuple[str, str, str]] = []  # (step, PASS/FAIL/SKIP, detail)


def step(name: str, status: str, detail: str = "") -> None:
    RESULTS.append((name, status, detail))
    print(f"[{status}] {name}" + (f": {detail}" if detail else ""), flush=True)


def guarded(name: str):
    """Run a step; an exception is that step's FAIL (with its traceback), not the end."""
    def wrap(fn):
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - reported, the next step runs
                traceback.print_exc()
                step(name, "FAIL", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
                return None
        return run
    return wrap


# ------------------------------------------------------------------ the ONNX model
def onnx_resnet18(path: Path, image: int = 64, classes: int = 10) -> Path:
    """torchvision's ResNet-18 layer for layer (conv 7x7/2, max pool, 4 stages of 2 basic
    blocks, global average pool, a linear layer), written with `onnx.helper`; every
    weight a graph input, so the file is a few kilobytes."""
    import onnx
    from onnx import TensorProto, helper

    nodes, inputs = [], [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                       [1, 3, image, image])]

    def weight(name: str, *shape: int) -> str:
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def conv_bn(x: str, name: str, cin: int, cout: int, k: int, stride: int,
                relu: bool) -> str:
        w = weight(f"{name}.weight", cout, cin, k, k)
        nodes.append(helper.make_node("Conv", [x, w], [f"{name}.conv"], name=f"/{name}/Conv",
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        bn = [weight(f"{name}.bn.{p}", cout) for p in ("weight", "bias", "running_mean",
                                                         "running_var")]
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv", *bn],
                                      [f"{name}.bn"], name=f"/{name}/BatchNormalization",
                                      epsilon=1e-5))
        if not relu:
            return f"{name}.bn"
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"],
                                      name=f"/{name}/Relu"))
        return f"{name}.relu"

    x = conv_bn("input", "conv1", 3, 64, 7, 2, True)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="/maxpool/MaxPool",
                                  kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "pool", 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            name = f"layer{stage}.{block}"
            y = conv_bn(x, f"{name}.conv1", cin, cout, 3, stride, True)
            y = conv_bn(y, f"{name}.conv2", cout, cout, 3, 1, False)
            skip = x
            if stride != 1 or cin != cout:
                skip = conv_bn(x, f"{name}.downsample", cin, cout, 1, stride, False)
            nodes.append(helper.make_node("Add", [y, skip], [f"{name}.add"],
                                          name=f"/{name}/Add"))
            nodes.append(helper.make_node("Relu", [f"{name}.add"], [f"{name}.out"],
                                          name=f"/{name}/Relu"))
            x, cin = f"{name}.out", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="/avgpool/Pool"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="/Flatten", axis=1))
    fc_w, fc_b = weight("fc.weight", classes, 512), weight("fc.bias", classes)
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], ["output"], name="/fc/Gemm",
                                  transB=1))
    graph = helper.make_graph(nodes, "resnet18", inputs, [
        helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, classes])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


# ------------------------------------------------------------------ the steps
def close(a: Any, b: Any) -> tuple[bool, float, float]:
    """Whether two results agree (rtol 1e-3, atol 1e-4: float32 kernels of another
    device), with the max absolute and the max relative difference."""
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    diff = passlab.max_abs_diff(a, b)
    scale = max((float(np.max(np.abs(x))) for x in b if np.size(x)), default=1.0) or 1.0
    ok = all(np.allclose(x, y, rtol=1e-3, atol=1e-4) for x, y in zip(a, b))
    return ok, diff, diff / scale


def cuda_target(gpu: Any) -> Any:
    """The cuda target with the GPU's own architecture (sm_90 on an H100/H200), or plain
    "cuda" without a GPU (TVM then assumes sm_50 and says so)."""
    if gpu is None:
        return "cuda"
    major, minor = str(gpu.compute_version).split(".")
    return {"kind": "cuda", "arch": f"sm_{major}{minor}"}


def check_model(name: str, model: Any, gpu: Any, repeat: int) -> None:
    start = time.perf_counter()
    ref = passlab.build(model, passlab.Pipeline.default("llvm"))
    built = passlab.build(model, passlab.Pipeline.default(cuda_target(gpu)))
    kernels = len(built.trace.code.kernels)
    step(f"{name}: build llvm and cuda", "PASS",
         f"{time.perf_counter() - start:.1f} s, {kernels} CUDA kernels, "
         f"{len(built.source('cuda'))} characters of CUDA C")
    if gpu is None:
        step(f"{name}: run on the GPU and compare with llvm", "SKIP", "no GPU here")
        step(f"{name}: profile on the GPU", "SKIP", "no GPU here")
        return
    inputs = ref.inputs(seed=0)
    start = time.perf_counter()
    out = built.run(*inputs)
    first = time.perf_counter() - start
    start = time.perf_counter()
    built.run(*inputs)
    again = time.perf_counter() - start
    ok, diff, rel = close(out, ref.run(*inputs))
    step(f"{name}: run on the GPU and compare with llvm", "PASS" if ok else "FAIL",
         f"max abs diff {diff:.3g} (relative {rel:.2g}); Build.run first {first:.2f} s "
         f"(CUDA module load), then {again * 1e3:.1f} ms")
    prof = built.profile(*inputs, repeat=repeat, budget_s=10)
    print(f"\n{name} on {prof.device}, {datetime.date.today().isoformat()}:")
    print(prof.to_text())
    parts = prof.kernels_s + prof.overhead_s + prof.unattributed_s
    adds = abs(parts - prof.instrumented_s) <= 1e-9 * max(1.0, prof.instrumented_s)
    shares = all(0 <= k.share <= 1 for k in prof)
    fine = adds and shares and prof.unattributed_s >= -prof.noise_s
    step(f"{name}: profile on the GPU", "PASS" if fine else "FAIL",
         f"instrumented {prof.instrumented_s * 1e3:.3f} ms = kernels "
         f"{prof.kernels_s * 1e3:.3f} + runtime {prof.overhead_s * 1e3:.3f} + unattributed "
         f"{prof.unattributed_s * 1e3:.3f} ms (noise +-{prof.noise_s * 1e3:.3f}); plain "
         f"{prof.end_to_end_s * 1e3:.3f} ms; clocked with hooks {prof.slowdown:.2f}x")


@guarded("research numerics on the device")
def check_research(gpu: Any) -> None:
    if gpu is None:
        step("bisect of the MLP's cuda pipeline on the GPU", "SKIP", "no GPU here")
        step("A/B re-run on the GPU", "SKIP", "no GPU here")
        return
    from passlab.research.edit_session import Edit, EditSession

    pipe = passlab.Pipeline.default(cuda_target(gpu))
    report = passlab.bisect(passlab.models.mlp(), pipe, progress=False)
    step("bisect of the MLP's cuda pipeline on the GPU",
         "PASS" if report.first_bad is None else "FAIL", report.summary()[:300])
    session = EditSession(passlab.build(passlab.models.mlp(), pipe))
    session.add(Edit("disable", session.pipeline.names.index("FoldConstant")))
    result = session.run().result
    ok = result.max_abs_diff is not None and result.max_abs_diff < 1e-4 and not result.error
    a, b = result.run_s
    step("A/B re-run on the GPU", "PASS" if ok else "FAIL",
         f"max abs diff {result.max_abs_diff}; run A {a} s, B {b} s"
         + (f"; {result.error or result.run_error}" if result.error or result.run_error
            else ""))


_EXPORT = """
import json, sys, passlab
name, path, target = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
b = passlab.build(name, passlab.Pipeline.default(target))
b.executable.export_library(path)
print(len(b.trace.code.kernels))
"""


@guarded("compiled without a GPU, run on it")
def check_export(gpu: Any, folder: Path) -> None:
    """Build and export in a child process whose TVM makes the CUDA module a CPU-only
    machine makes (source), then load and run here."""
    import tvm

    for name in ("mlp", "resnet"):
        path = folder / f"{name}_cuda.so"
        env = dict(os.environ, TVM_COMPILE_FORCE_FALLBACK="1", CUDA_VISIBLE_DEVICES="")
        done = subprocess.run([sys.executable, "-c", _EXPORT, name, str(path),
                               json.dumps(cuda_target(gpu))], env=env,
                              capture_output=True, text=True, timeout=600, cwd=ROOT)
        if done.returncode != 0:
            step(f"{name}: export a CUDA build made without a GPU", "FAIL",
                 done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else "")
            continue
        blob = path.read_bytes()
        sources = blob.count(b'extern "C" __global__')
        step(f"{name}: export a CUDA build made without a GPU", "PASS" if sources else "FAIL",
             f"{path.stat().st_size // 1024} KiB, {sources} CUDA C kernel declarations "
             "(source: TVM compiles it where it is loaded)")
        if gpu is None:
            step(f"{name}: load the exported library on the GPU and run it", "SKIP",
                 "no GPU here")
            continue
        lib = tvm.runtime.load_module(str(path))
        vm = tvm.relax.VirtualMachine(lib, tvm.cuda(0))
        ref = passlab.build(name)
        inputs = ref.inputs(seed=0)
        start = time.perf_counter()
        out = vm[ref.entry](*[tvm.runtime.tensor(a, tvm.cuda(0)) for a in inputs])
        took = time.perf_counter() - start
        ok, diff, rel = close(passlab._tvm.to_numpy(out), ref.run(*inputs))
        step(f"{name}: load the exported library on the GPU and run it",
             "PASS" if ok else "FAIL",
             f"max abs diff {diff:.3g} (relative {rel:.2g}); first run {took:.2f} s "
             "(compiling the CUDA source included)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU steps, even where a GPU is present")
    parser.add_argument("--repeat", type=int, default=10, help="profile(repeat=...)")
    parser.add_argument("--out", default=None, help="folder for the exported libraries "
                                                    "(default: a temporary one)")
    args = parser.parse_args()
    import tvm

    started = time.perf_counter()
    gpu = None
    try:
        present = bool(tvm.runtime.enabled("cuda")) and bool(tvm.cuda(0).exist)
    except Exception:  # noqa: BLE001 - a TVM without its CUDA runtime raises
        present = False
    if present and not args.dry_run:
        gpu = tvm.cuda(0)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    versions = passlab._tvm.versions()
    print(f"passlab gpu_check, {when}; TVM {versions.get('apache-tvm')}, Python "
          f"{sys.version.split()[0]}")
    memory = getattr(gpu, "total_global_memory", None) or 0
    print("GPU: " + (f"{gpu.device_name} (compute {gpu.compute_version}, "
                     f"{memory / 2**30:.0f} GiB)" if gpu is not None else
                     ("present, not used (--dry-run)" if present else
                      "none (TVM's CUDA runtime is not enabled or no device): dry run")))
    print(f"cuda target: {cuda_target(gpu)}\n")
    guarded("built-in ResNet")(check_model)("built-in ResNet", "resnet", gpu, args.repeat)
    try:
        import onnx  # noqa: F401
    except ImportError:
        step("ONNX ResNet-18", "SKIP", "the onnx package is missing (pip install onnx)")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = onnx_resnet18(Path(tmp) / "resnet18.onnx")
            model = passlab.load(path)
            step("ONNX ResNet-18: made with onnx.helper", "PASS",
                 f"{path.stat().st_size} bytes, weights as graph inputs, 1x3x64x64")
            guarded("ONNX ResNet-18")(check_model)("ONNX ResNet-18", model, gpu, args.repeat)
    check_research(gpu)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.out) if args.out else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        check_export(gpu, folder)
    failed = [r for r in RESULTS if r[1] == "FAIL"]
    print(f"\n{len(RESULTS)} steps: {sum(r[1] == 'PASS' for r in RESULTS)} passed, "
          f"{len(failed)} failed, {sum(r[1] == 'SKIP' for r in RESULTS)} skipped in "
          f"{time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
