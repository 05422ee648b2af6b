"""What a target produced: source text out of TVM's runtime modules, split per function,
and which targets this TVM wheel can generate code for without their hardware.

`tvm.tirx.build` returns a host runtime module (kind "llvm" or "c") with one imported
module per device target (kind "cuda", "opencl", "metal", "webgpu", ...). Each one
answers `inspect_source(fmt)`: LLVM IR ("ll") and assembly ("asm") for llvm, C for c,
the device language for the others.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

__all__ = ["sources", "split_functions", "kernel_of", "codegen_status", "MAIN_KIND",
           "DEVICE_KINDS"]

#: The source a target is mainly about, by target kind: a GPU target's device code.
MAIN_KIND = {"llvm": "llvm", "c": "c", "cuda": "cuda", "rocm": "rocm", "metal": "metal",
             "opencl": "opencl", "vulkan": "vulkan", "webgpu": "webgpu", "nvptx": "cuda"}

#: Target kinds whose kernels run on a device other than the host CPU.
DEVICE_KINDS = frozenset(MAIN_KIND) - {"llvm", "c"}

# Host modules: (source kind, inspect_source format), in the order shown.
_HOST_FORMATS = {"llvm": (("llvm", "ll"), ("asm", "asm")), "c": (("c", "c"),)}


def _inspect(module: Any, fmt: str) -> str:
    try:
        return str(module.inspect_source(fmt))
    except Exception:  # noqa: BLE001 - a module that cannot show this format has none
        return ""


#: Source kinds that cost a compilation to produce (LLVM's assembly printer runs again:
#: seconds for a transformer layer), read only when asked for.
EXPENSIVE = frozenset({"asm"})


def sources(lib: Any) -> tuple[dict[str, str], dict[str, Callable[[], str]]]:
    """The source of a compiled TIR library: `({kind: text}, {kind: read})`, the first
    for cheap kinds (LLVM IR, C, device code: the host module's, then each imported
    device module's under its kind, "cuda", "opencl", ...), the second for expensive ones
    (`EXPENSIVE`), to be read on demand. Kinds whose text is empty are left out."""
    out: dict[str, str] = {}
    later: dict[str, Callable[[], str]] = {}
    todo = [lib]
    while todo:
        mod = todo.pop(0)
        kind = str(mod.kind)
        if kind in _HOST_FORMATS:
            for name, fmt in _HOST_FORMATS[kind]:
                if name in EXPENSIVE:
                    later.setdefault(name, functools.partial(_inspect, mod, fmt))
                    continue
                text = _inspect(mod, fmt)
                if text and name not in out:
                    out[name] = text
        else:
            text = _inspect(mod, "")
            if text:
                out[kind] = out[kind] + "\n" + text if kind in out else text
        todo.extend(mod.imports)
    return out, later


_LLVM_DEFINE = re.compile(r'^define\b[^@]*@"?([\w.$-]+)"?\(')
_ASM_TYPE = re.compile(r"^\s*\.type\s+([\w.$]+),\s*@function", re.M)
_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
_NOT_NAMES = frozenset({"__launch_bounds__", "__attribute__", "if", "for", "while", "switch",
                        "return", "sizeof", "workgroup_size", "kernel"})


def split_functions(text: str, kind: str) -> dict[str, str]:
    """`{symbol: text}` of the function definitions in `text` (source kind `kind`),
    in order. LLVM IR: `define ... @name(` to `}`; assembly: `name:` to its
    `.size`; C-like sources (c, cuda, opencl, metal, webgpu): a definition starts on an
    unindented line that ends with `{` and ends at the next line that is `}`
    (WGSL: at a line starting `fn name(`)."""
    lines = text.splitlines()
    out: dict[str, str] = {}
    if kind == "asm":
        for name in _ASM_TYPE.findall(text):
            start = next((i for i, ln in enumerate(lines) if ln == f"{name}:"), None)
            if start is None:
                continue
            end = next((i for i in range(start, len(lines))
                        if re.match(rf"\s*\.size\s+{re.escape(name)},", lines[i])), len(lines) - 1)
            out[name] = "\n".join(lines[start:end + 1])
        return out
    i = 0
    while i < len(lines):
        line = lines[i]
        name = None
        if kind == "llvm":
            m = _LLVM_DEFINE.match(line)
            name = m.group(1) if m and line.rstrip().endswith("{") else None
        elif kind == "webgpu":  # WGSL: "fn name(" with parameters on the next lines
            m = re.match(r"fn (\w+)\(", line)
            name = m.group(1) if m else None
        elif line[:1] not in ("", " ", "\t", "#", "/") and line.rstrip().endswith("{"):
            name = next((n for n in _CALL.findall(line) if n not in _NOT_NAMES), None)
        if name is None:
            i += 1
            continue
        close = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "}"), None)
        if close is None:
            break
        out[name] = out[name] + "\n\n" + "\n".join(lines[i:close + 1]) if name in out \
            else "\n".join(lines[i:close + 1])
        i = close + 1
    return out


def kernel_of(symbol: str, kernels: Any) -> str | None:
    """The TIR kernel (PrimFunc name) a generated symbol belongs to: the longest kernel
    name that the symbol is, or starts with followed by `_` (`__tvm_ffi_` prefix of
    packed functions dropped): `fused_add_kernel` and `fused_add_compute_` belong to
    `fused_add`."""
    base = symbol.removeprefix("__tvm_ffi_")
    best = None
    for k in kernels:
        if (base == k or base.startswith(k + "_")) and (best is None or len(k) > len(best)):
            best = k
    return best


def codegen_status(kind: str) -> str:
    """"available", or why this TVM wheel cannot generate code for target kind
    `kind` on this machine (without building anything)."""
    import tvm

    if tvm.get_global_func(f"target.build.{kind}", allow_missing=True) is None:
        return f"not available: no code generator in this TVM (target.build.{kind})"
    if kind == "rocm" and not _rocm_path():
        return "not available: no ROCm installation (ROCM_PATH, hipcc) for its linker"
    if kind == "nvptx" and not _libdevice():
        return "not available: no CUDA toolkit (libdevice) for nvptx"
    return "available"


def _rocm_path() -> str | None:
    # where tvm.support.rocm.find_rocm_path looks
    import os
    import shutil

    if "ROCM_PATH" in os.environ:
        return os.environ["ROCM_PATH"]
    hipcc = shutil.which("hipcc")
    if hipcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(hipcc)))
    return "/opt/rocm" if os.path.exists("/opt/rocm/bin/hipcc") else None


def _libdevice() -> bool:
    import glob

    return bool(glob.glob("/usr/local/cuda*/nvvm/libdevice/*.bc")
                or glob.glob("/usr/lib/nvidia-cuda-toolkit/libdevice/*.bc"))


def runnable(kind: str) -> str | None:
    """None when built code for target kind `kind` can run here, else why not."""
    import tvm

    if kind == "c":
        return ("the 'c' target generates C source, which the VM cannot load as it is: "
                "build for 'llvm' to run, or compile the C with "
                "executable.export_library('lib.so')")
    if kind == "llvm":
        return None
    device = {"nvptx": "cuda"}.get(kind, kind)
    try:
        enabled = bool(tvm.runtime.enabled(device))
    except Exception:  # noqa: BLE001 - TVM raises for runtimes it does not know
        enabled = False
    if not enabled:
        return (f"this TVM has no {device} runtime: code for {kind!r} was generated and "
                f"can be inspected (build.source()), but it runs only where TVM is built "
                f"with {device} and a {device} device is present; build for 'llvm' to run "
                "on this CPU")
    try:
        exists = bool(tvm.device(device, 0).exist)
    except Exception:  # noqa: BLE001
        exists = False
    if not exists:
        return (f"no {device} device on this machine: code for {kind!r} was generated and "
                f"can be inspected (build.source()); build for 'llvm' to run on this CPU")
    return None


def compile_alone(module: Any, name: str) -> BaseException | None:
    """Run the code generator (`target.build.<kind>`, what `tvm.tirx.build` ends
    with) on function `name` of a lowered TIR `module` alone, for the target bound to
    that function; the exception it raised, or None when it compiled."""
    import tvm

    gv = module.get_global_var(name)
    func = module[gv]
    target = func.attrs.get("target") if func.attrs is not None else None
    if target is None:
        return ValueError(f"function {name!r} has no target attribute (not lowered)")
    try:
        build = tvm.get_global_func(f"target.build.{target.kind.name}")
        build(tvm.IRModule({gv: func}, attrs=module.attrs), target)
    except Exception as exc:  # noqa: BLE001 - what the caller wants to know
        return exc
    return None


def single_function(module: Any, name: str) -> Any:
    """`module` with only function `name` (and the module's attributes)."""
    import tvm

    gv = module.get_global_var(name)
    return tvm.IRModule({gv: module[gv]}, attrs=module.attrs)
