"""The device a build runs on: from its target kind to a TVM device, tensors moved there,
and the device synchronised (what GPU timing needs around each call).

TVM 0.27's `relax.VirtualMachine(executable, device)` runs the VM on `device`; every
tensor argument of a call must already be there (`Mismatched ... device_type ... expected
cuda` otherwise). `device_of` maps a target to its device, raising
`~passlab.errors.DeviceUnavailableError` with a sentence that names what is missing
when the device or TVM's runtime for it is absent; llvm and c run on this CPU.

Examples
--------
>>> from passlab._tvm.devices import device_of
>>> str(device_of("llvm"))
'cpu:0'
"""

from __future__ import annotations

from typing import Any

from passlab.errors import DeviceUnavailableError

#: The device kind a target kind's code runs on.
DEVICES = {"llvm": "cpu", "c": "cpu", "cuda": "cuda", "nvptx": "cuda", "rocm": "rocm",
           "metal": "metal", "opencl": "opencl", "vulkan": "vulkan", "webgpu": "webgpu"}


def kind_of(target: Any) -> str:
    """The target kind's name ("llvm", "cuda", ...) of a Target, a dict or a string."""
    if hasattr(target, "kind"):
        return str(target.kind.name)
    from passlab import _tvm

    return str(_tvm.target(target).kind.name)


def device_of(target: Any, what: str = "run") -> Any:
    """The TVM device the code of `target` (a Target, its kind's name, or a spec)
    runs on, or DeviceUnavailableError naming the missing device; `what` is the verb
    of the message ("run", "time")."""
    import tvm

    kind = target if isinstance(target, str) and target.isidentifier() else kind_of(target)
    name = DEVICES.get(kind)
    if name is None:
        raise DeviceUnavailableError(f"cannot {what} a {kind!r} build: passlab knows the "
                                     f"devices of {', '.join(sorted(DEVICES))}")
    if name != "cpu":
        try:
            present = bool(tvm.runtime.enabled(name)) and bool(tvm.device(name, 0).exist)
        except Exception:  # noqa: BLE001 - TVM raises for runtimes it was built without
            present = False
        if not present:
            raise DeviceUnavailableError(
                f"cannot {what} this {kind!r} build: no {name} device here (or this TVM has "
                f"no {name} runtime); the build and its generated code can still be "
                f"inspected; build for 'llvm' to {what} on this CPU")
    return tvm.device(name, 0)


def is_cpu(dev: Any) -> bool:
    """Whether `dev` is the host CPU (`str(tvm.cpu())` is "cpu:0")."""
    return str(dev).startswith("cpu")


def to_device(value: Any, dev: Any) -> Any:
    """`value` (a numpy array, a TVM tensor anywhere, or a scalar) as a tensor on
    `dev`; other values (shapes, scalars) as they are."""
    import numpy as np
    import tvm

    if isinstance(value, tvm.runtime.Tensor):
        return value if str(value.device) == str(dev) else value.copyto(dev)
    if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        return tvm.runtime.tensor(np.asarray(value), dev)
    return value


def sync(dev: Any) -> None:
    """Wait until the device has finished the work queued on it (nothing on a CPU)."""
    if not is_cpu(dev):
        dev.sync()


def device_name(dev: Any) -> str:
    """A readable name: the GPU's own ("NVIDIA H200"), or "cpu" and the processor."""
    if is_cpu(dev):
        import platform

        proc = platform.processor() or platform.machine()
        return f"cpu ({proc})" if proc else "cpu"
    try:
        return str(dev.device_name)
    except Exception:  # noqa: BLE001 - some runtimes do not report a name
        return str(dev)
