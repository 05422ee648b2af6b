"""Everything that depends on the TVM version, in one place.

apache-tvm moves fast (Relay removed, ``tir`` split into ``tirx``/``s_tir``, struct info
renamed to types). When TVM changes, this is the module to touch. Nothing here imports
Jupyter; TVM itself is imported lazily so that ``import passlab`` stays cheap.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from passlab.errors import unknown

#: Stage names, in pipeline order, of TVM's per-target Relax pipelines
#: (``tvm.relax.backend.<target>.pipeline``).
STAGES: tuple[str, ...] = ("library_dispatch", "legalize", "dataflow_lower", "finalize")

#: Backend module per target kind (``tvm.relax.pipeline`` dispatches the same way).
_BACKENDS = {"llvm": "cpu_generic", "cuda": "cuda", "rocm": "rocm", "metal": "gpu_generic"}

#: The passes of ``tvm.relax.pipeline.default_build_pipeline`` (what ``relax.build`` and
#: ``tvm.compile`` run on CPU), per stage. TVM builds that list inside a closure, so it is
#: mirrored here; ``tests/test_pipeline.py`` checks it against a real ``relax.build``.
_BUILD_VARIANT = {
    "library_dispatch": ("backend.DispatchSampling", "backend.DispatchSortScan"),
    "legalize": ("transform.LegalizeOps",),
    "dataflow_lower": (
        "transform.RewriteDataflowReshape",
        "transform.ToNonDataflow",
        "transform.RemovePurityChecking",
        "transform.CallTIRRewrite",
    ),
    "finalize": (
        "transform.StaticPlanBlockMemory",
        "transform.RewriteCUDAGraph",
        "transform.LowerAllocTensor",
        "transform.KillAfterLastUse",
        "transform.LowerRuntimeBuiltin",
        "transform.ComputePrimValue",
        "transform.VMShapeLower",
        "transform.AttachGlobalSymbol",
    ),
}

#: Names of pass wrappers that only sequence other passes (TVM's own ``Sequential`` and
#: the ``_pipeline`` module passes of the default Relax and TIR pipelines).
CONTAINER_NAMES = frozenset({"sequential", "_pipeline"})


def tvm():
    import tvm as _tvm

    return _tvm


def relax():
    from tvm import relax as _relax

    return _relax


def is_module(obj: Any) -> bool:
    return isinstance(obj, tvm().IRModule)


def is_pass(obj: Any) -> bool:
    return isinstance(obj, tvm().transform.Pass)


# ---------------------------------------------------------------------------- targets
SUPPORTED_TARGETS = ("llvm", "cuda", "rocm", "metal")


def target(spec: Any):
    """A ``tvm.target.Target`` from a string, dict or Target; one clear error otherwise."""
    t = tvm()
    if isinstance(spec, t.target.Target):
        tgt = spec
    else:
        try:
            tgt = t.target.Target(spec)
        except Exception as exc:  # TVM raises ValueError or its own errors
            kind = str(spec).split()[0] if isinstance(spec, str) and spec.strip() else spec
            raise unknown(
                "target", str(kind), SUPPORTED_TARGETS,
                extra=f"(TVM said: {str(exc).splitlines()[0]})",
            ) from None
    if _backend_module_name(tgt) is None:
        raise unknown(
            "target", tgt.kind.name, SUPPORTED_TARGETS,
            extra="passlab knows the Relax pipelines of these target kinds.",
        )
    return tgt


def target_label(spec: Any, tgt) -> str:
    """A short, re-parseable name: the user's string when they gave one (``"llvm"``),
    else TVM's JSON form."""
    return spec.strip() if isinstance(spec, str) else str(tgt)


def same_target(a: Any, b: Any) -> bool:
    return str(target(a)) == str(target(b))


def _backend_module_name(tgt) -> str | None:
    name = _BACKENDS.get(tgt.kind.name)
    if name is None and "gpu" in list(tgt.keys):
        name = "gpu_generic"
    return name


def relax_build_variant(tgt) -> str:
    """Which pipeline ``relax.build(mod, target)`` runs by default: GPU targets take the
    target's fused pipeline, CPU takes ``default_build_pipeline`` (no FuseOps/FuseTIR)."""
    return "fused" if "gpu" in list(tgt.keys) else "build"


def stage_passes(tgt, variant: str) -> list[tuple[str, list]]:
    """``[(stage, [Pass, ...]), ...]`` for ``variant`` "fused" (the target's default
    pipeline, from ``tvm.relax.backend.<target>.pipeline``) or "build" (what
    ``relax.build`` runs on CPU)."""
    if variant == "fused":
        mod = importlib.import_module(f"tvm.relax.backend.{_backend_module_name(tgt)}.pipeline")
        with tgt:
            return [(s, list(getattr(mod, f"{s}_passes")(tgt))) for s in STAGES]
    if variant == "build":
        r = relax()
        out = []
        for stage, names in _BUILD_VARIANT.items():
            passes = []
            for dotted in names:
                ns, fn = dotted.split(".")
                passes.append(getattr(getattr(r, ns), fn)())
            out.append((stage, passes))
        return out
    raise unknown("pipeline variant", variant, ("fused", "build"))


# ----------------------------------------------------------------------------- passes
def pass_name(p) -> str:
    return p.info.name


def module_pass(fn: Callable, name: str):
    """Wrap ``fn(mod) -> mod`` (or ``fn(mod, ctx)``) as a module-level TVM pass."""
    return tvm().transform.module_pass(fn, opt_level=0, name=name)


def sequential(passes: Sequence, name: str):
    return tvm().transform.Sequential(list(passes), opt_level=0, name=name)


def copy_context(extra_instruments: Sequence = (), extra_config: dict | None = None,
                 **overrides):
    """A PassContext equal to the current one plus ``extra_instruments`` and
    ``extra_config``.

    An inner ``with PassContext(...)`` replaces the outer context's instruments, opt_level
    and config; copying keeps what the user set and adds the recorder. The extra
    instruments go first: TVM calls hooks in list order and stops at the first that
    raises, so a user's instrument refusing a pass still leaves that pass in the trace.
    """
    t = tvm()
    cur = t.transform.PassContext.current()
    config = {**dict(cur.config or {}), **dict(extra_config or {})}
    kwargs = dict(
        opt_level=cur.opt_level,
        required_pass=list(cur.required_pass),
        disabled_pass=list(cur.disabled_pass),
        instruments=list(extra_instruments) + list(cur.instruments),
        config=config or None,
    )
    kwargs.update(overrides)
    return t.transform.PassContext(**kwargs)


class Kernels:
    """A compiled TIR library and the TIR module it was compiled from.

    Two builds whose Relax pipelines end in structurally equal TIR modules (same target,
    same TIR pipeline) can share one library: compiling the kernels (TIR lowering and
    LLVM) is most of a CPU build.
    """

    __slots__ = ("_hash", "lib", "target", "tir_mod", "tir_pipeline")

    def __init__(self, tir_mod, target: str, tir_pipeline: str, lib):
        self.tir_mod, self.target, self.tir_pipeline, self.lib = tir_mod, target, tir_pipeline, lib
        self._hash = None

    def key(self) -> int:
        if self._hash is None:
            self._hash = function_hash(self.tir_mod)
        return self._hash

    def matches(self, tir_mod, target: str, tir_pipeline: str) -> bool:
        return (self.target == target and self.tir_pipeline == tir_pipeline
                and function_hash(tir_mod) == self.key()
                and structural_equal(tir_mod, self.tir_mod))


def build(mod, tgt, relax_pipeline, tir_pipeline: str = "default", reuse=()):
    """Build ``mod`` to a VM executable: what ``relax.build(mod, tgt, relax_pipeline=...,
    tir_pipeline=...)`` does, step by step, so that the compiled TIR library can be kept
    and reused.

    Returns ``(executable, kernels, reused)``: the :class:`Kernels` of this build (None
    without TIR functions) and whether they came from ``reuse`` (then the TIR pipeline and
    codegen did not run).
    """
    from tvm.relax import vm_build as vb

    r, t = relax(), tvm()
    with tgt:
        mod = relax_pipeline(mod)
    attrs = dict(mod.attrs) if mod.attrs else {}
    ext_libs = list(attrs.get("external_mods", []))
    params = dict(attrs.get("const_name_to_constant", {}))
    builder = r.ExecBuilder()
    mod = vb._vmcodegen(builder, mod, "bytecode")
    tir_mod = vb._filter_tir(mod)
    kernels, reused = None, False
    if tir_mod is not None and len(tir_mod.get_global_vars()) > 0:
        tir_mod = vb._auto_attach_system_lib_prefix(tir_mod, tgt, None)
        label = str(tgt)
        kernels = next((k for k in reuse if k is not None
                        and k.matches(tir_mod, label, tir_pipeline)), None)
        reused = kernels is not None
        if kernels is None:
            lib = t.tirx.build(tir_mod, target=tgt, pipeline=tir_pipeline)
            kernels = Kernels(tir_mod, label, tir_pipeline, lib)
    lib = None if kernels is None else kernels.lib
    device_libs = [m for m in ext_libs if vb._is_device_module(m)]
    host_libs = [m for m in ext_libs if not vb._is_device_module(m)]
    if lib is not None and not reused:
        for m in device_libs:
            lib.import_module(m)
    executable = vb.VMExecutable(vb._ffi_api.VMLink(builder, tgt, lib, host_libs, params))
    return executable, kernels, reused


# ------------------------------------------------------------------------ object cache
class ObjectCache:
    """``fn(obj)`` for TVM objects, cached by the C object's address.

    Python wrappers of one TVM object differ from call to call, so ``id()`` is useless;
    the address is stable. Each entry keeps its object alive, so that the address
    cannot be reused by another object while the entry is cached.
    """

    __slots__ = ("_cache", "_fn")

    def __init__(self, fn: Callable[[Any], Any]):
        self._fn = fn
        self._cache: dict[int, tuple[Any, Any]] = {}

    def __call__(self, obj: Any) -> Any:
        key = obj.__chandle__()
        hit = self._cache.get(key)
        if hit is None:
            hit = (obj, self._fn(obj))
            self._cache[key] = hit
        return hit[1]


# -------------------------------------------------------------------------- functions
def functions(mod) -> dict[str, Any]:
    """``{global name: function}`` of a module."""
    return {gv.name_hint: f for gv, f in mod.functions.items()}


def function_hash(func) -> int:
    """Structural hash of one function, skipping tensor content (weights)."""
    import tvm_ffi

    # map_free_vars=True: from MakePackedAPI on, PrimFuncs hold free buffer-data vars, and a
    # function that differs only in which Var objects those are is not a change (the diff
    # compares the same way).
    return tvm_ffi.structural_hash(func, True, True)


def structural_equal(a, b, *, tensor_content: bool = False) -> bool:
    """Structural equality with free variables mapped (see :func:`function_hash`);
    tensor bytes are compared only with ``tensor_content=True``."""
    if a.same_as(b):
        return True
    import tvm_ffi

    return bool(tvm_ffi.structural_equal(a, b, True, not tensor_content))


def attrs_equal(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if a.same_as(b):
        return True
    import tvm_ffi

    return tvm_ffi.structural_equal(a, b, True, True)


def count_bindings(func) -> int:
    """Number of variable bindings in a Relax function's body (0 for other functions)."""
    body = getattr(func, "body", None)
    blocks = getattr(body, "blocks", None)
    if blocks is None or not is_relax_function(func):
        return 0
    return sum(len(b.bindings) for b in blocks)


def is_relax_function(func) -> bool:
    return isinstance(func, relax().Function)


def is_prim_func(func) -> bool:
    return isinstance(func, tvm().tirx.PrimFunc)


def entry_function(mod, *, strict: bool = True) -> str:
    """Name of the function a user calls, by one rule used everywhere (running a build,
    the fused graph, buffers, partitions): the first Relax function with a ``num_input``
    attribute (what ``nn.Module.export_tvm`` and TVM's ONNX and PyTorch importers set),
    else ``main``, else ``forward``, else the only public Relax function.

    When none of these decides, ``strict`` raises ``ValueError``; otherwise the first
    public Relax function (or the first Relax function) is taken.
    """
    fns = {n: f for n, f in functions(mod).items() if is_relax_function(f)}
    for name, f in fns.items():
        if f.attrs is not None and "num_input" in f.attrs:
            return name
    for name in ("main", "forward"):
        if name in fns:
            return name
    public = [n for n, f in fns.items() if _is_public(f)]
    if len(public) == 1 or (public and not strict):
        return public[0]
    if fns and not strict:
        return next(iter(fns))
    raise ValueError(
        "cannot tell which function to run: the module has "
        + (f"the public Relax functions {public}" if public else "no public Relax function")
        + "; pass function='name'."
    )


def num_inputs(func) -> int:
    """How many leading parameters of a Relax function are inputs (the rest are weights):
    its ``num_input`` attribute, else all of them."""
    attrs = func.attrs
    if attrs is not None and "num_input" in attrs:
        return int(attrs["num_input"])
    return len(func.params)


def _is_public(func) -> bool:
    attrs = func.attrs
    return attrs is not None and "global_symbol" in attrs


def parse_script(text: str):
    """An IRModule from TVMScript source."""
    import re

    from tvm.script import from_source, ir, relax, tirx

    # from_source parses one module or function; the usual header imports would be
    # rejected, so they are dropped and the names they bind are provided instead.
    body = re.sub(r"^(from tvm\.script import .*|import tvm.*)$", "", text, flags=re.M)
    return from_source(body, extra_vars={"I": ir, "R": relax, "T": tirx})


def params(func) -> list[tuple[str, tuple, str]]:
    """``[(name, shape, dtype), ...]`` of a Relax function's tensor parameters; symbolic
    dimensions appear as their variable names."""
    out = []
    for p in func.params:
        ty = p.ty
        shape = tuple(
            int(d) if isinstance(d, tvm().tirx.IntImm) else str(d) for d in ty.shape.values
        )
        out.append((p.name, shape, str(ty.dtype)))
    return out


def virtual_machine(executable, device: str = "cpu"):
    r = relax()
    return r.VirtualMachine(executable, getattr(tvm(), device)())


def to_tvm_tensor(array):
    return tvm().runtime.tensor(array)


def to_numpy(value):
    """numpy arrays from a VM result (a tensor or a nested tuple of them)."""
    if hasattr(value, "numpy"):
        return value.numpy()
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "List"):
        return tuple(to_numpy(v) for v in value)
    return value


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str], ...]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("apache-tvm", "apache-tvm-ffi", "passlab"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return tuple(out.items())


def versions() -> dict[str, str]:
    """Versions of TVM, tvm-ffi and passlab (looked up once per process)."""
    return dict(_versions())
