"""Everything that depends on the TVM version, in one place.

apache-tvm moves fast (Relay removed, `tir` split into `tirx`/`s_tir`, struct info
renamed to types). When TVM changes, this package is what to touch. Nothing here imports
Jupyter; TVM itself is imported lazily so that `import passlab` stays cheap.

This module: targets, the Relax stage lists and the `relax.build` variant, the build
call, context copying, `ObjectCache`, function listing, hashing and equality, the
entry-function rule, parameters and signatures. Beside it:

* `.tir`: TVM's TIR pipeline as stages, and how an edited one reaches `tirx.build`;
  TVM's FLOP estimate of a PrimFunc;
* `.printing`: per-function TVMScript, printed lazily and cached;
* `.ir` (gathering `.ir_types`, `.ir_calls`, `.walk`): Relax read as
  plain Python values, for the analyses;
* `.passinfo`: a pass's API page and docstring, a census of a module's calls;
* `.codegen`: generated source per function, which targets compile here;
* `.tensors`: tensor constants as TVM stores them; `.timing`: kernel and
  entry-function timers; `.logs`: TVM's C++ log on standard error, sorted.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from passlab._tvm.logs import sorted_stderr
from passlab.errors import UnknownNameError, close_matches, unknown

#: Stage names, in pipeline order, of TVM's per-target Relax pipelines
#: (``tvm.relax.backend.<target>.pipeline``).
STAGES: tuple[str, ...] = ("library_dispatch", "legalize", "dataflow_lower", "finalize")

#: Backend module per target kind (``tvm.relax.pipeline`` dispatches the same way, except
#: for "c", which it does not dispatch: a CPU target, given cpu_generic like "llvm").
_BACKENDS = {"llvm": "cpu_generic", "c": "cpu_generic", "cuda": "cuda", "rocm": "rocm",
             "metal": "gpu_generic", "opencl": "gpu_generic", "vulkan": "gpu_generic",
             "webgpu": "gpu_generic"}

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
#: Target kinds passlab has Relax pipelines for. "c" has no entry in TVM's
#: ``relax.get_default_pipeline`` dispatch; like ``relax.build(mod, "c")`` it is a CPU
#: target, so its fused pipeline is cpu_generic's (what "llvm" gets).
SUPPORTED_TARGETS = ("llvm", "c", "cuda", "rocm", "metal", "opencl", "vulkan", "webgpu")


def target(spec: Any):
    """A `tvm.target.Target` from a kind name (`"llvm"`), the familiar string form
    (`"llvm -mcpu=x86-64 -mattr=+avx2,+fma"`), its JSON text, a dict
    (`{"kind": "llvm", "mcpu": "x86-64"}`, the only form TVM 0.27 parses) or a Target;
    one clear error, in terms of the option, otherwise."""
    t = tvm()
    if isinstance(spec, t.target.Target):
        tgt = spec
    else:
        config = target_spec(spec)
        kind = config if isinstance(config, str) else config.get("kind")
        if not isinstance(kind, str) or kind not in _target_kinds():
            others = [k for k in _target_kinds() if k not in SUPPORTED_TARGETS]
            raise unknown("target", str(kind), SUPPORTED_TARGETS,
                          extra=f"(TVM also defines the kinds {', '.join(others)}.)")
        try:
            # TVM logs "no CUDA toolkit" here for GPU kinds; a build says it once, as a
            # warning of its trace (passlab/_tvm/logs.py)
            with sorted_stderr():
                tgt = t.target.Target(config)
        except Exception as exc:  # TVM raises ValueError or its own errors
            raise ValueError(f"TVM rejected the target {_shown(spec)}: "
                             f"{_tvm_said(exc)}") from None
        _check_cpu(tgt, spec)
    if _backend_module_name(tgt) is None:
        raise unknown(
            "target", tgt.kind.name, SUPPORTED_TARGETS,
            extra="passlab knows the Relax pipelines of these target kinds.",
        )
    return tgt


def target_spec(spec: Any) -> str | dict[str, Any]:
    """What `tvm.target.Target(...)` takes for `spec` in TVM 0.27: the kind name
    alone (`"llvm"`), else the dict form. The string form's options are checked
    against the kind's (`-mcpuu` is an unknown option for 'llvm') and typed: lists
    split at commas (`-mattr=+avx2,+fma`), integers, booleans (`-fast-math` alone
    is true).

    Examples
    --------
    >>> from passlab import _tvm
    >>> _tvm.target_spec("llvm -mcpu=x86-64 -mattr=+avx2,+fma -num-cores=4")
    {'kind': 'llvm', 'mcpu': 'x86-64', 'mattr': ['+avx2', '+fma'], 'num-cores': 4}
    >>> _tvm.target_spec(" c ")
    'c'
    """
    import json

    t = tvm()
    if isinstance(spec, t.target.Target):
        return dict(spec.export())
    if isinstance(spec, dict):
        return _typed(dict(spec), repr(spec), "")
    if not isinstance(spec, str) or not spec.strip():
        raise TypeError(f"a target is a kind name such as 'llvm', a string such as "
                        f"'llvm -mcpu=x86-64', a dict such as {{'kind': 'llvm', 'mcpu': "
                        f"'x86-64'}} or a tvm.target.Target, not {spec!r}")
    text = spec.strip()
    if text.startswith("{"):
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"target {text!r} starts like JSON but does not parse ({exc})") \
                from None
        if not isinstance(config, dict):
            raise ValueError(f"target {text!r}: JSON text must be an object")
        return _typed(config, repr(text), "")
    kind, *options = text.split()
    if not options:
        return kind
    config = {"kind": kind}  # str -> Any, as json.loads above gives
    for option in options:
        name, eq, value = option.partition("=")
        key = name.lstrip("-")
        if not name.startswith("-") or not key:
            raise ValueError(f"target {text!r}: {option!r} is not an option; options look "
                             "like -name=value (-mcpu=x86-64) or -flag")
        config[key] = value if eq else None
    return _typed(config, repr(text), "-")


def _typed(config: dict[str, Any], shown: str, dash: str) -> dict[str, Any]:
    """`config` with each option checked against the target kind's and string values
    converted to the declared type: lists split at commas (`+avx2,+fma`), integers,
    booleans (a bare `-flag` is true). `dash` is how the user wrote option names."""
    kind = config.get("kind")
    if not isinstance(kind, str) or kind not in _target_kinds():
        return config  # target() reports the unknown kind
    known = dict(tvm().target.TargetKind.options_from_name(kind))
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key not in known:
            choices = tuple(f"{dash}{k}" for k in known if k != "kind")
            close = close_matches(f"{dash}{key}", choices)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "."
            raise UnknownNameError(
                f"target {shown}: unknown option '{dash}{key}' for target kind {kind!r}{hint} "
                f"Known: {', '.join(choices)}.", f"{dash}{key}", choices, close)
        out[key] = _option_value(shown, f"{dash}{key}", str(known[key]), value)
    return out


def _option_value(shown: str, key: str, kind: str, value: Any) -> Any:
    """A string-form option value converted to the type TVM's target kind declares."""
    if value is None:
        if kind == "bool":
            return True
        raise ValueError(f"target {shown}: option '{key}' needs a value ({key}=...)")
    if not isinstance(value, str):
        return value
    if kind == "bool":
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0"):
            return False
        raise ValueError(f"target {shown}: option '{key}' is true or false, not {value!r}")
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"target {shown}: option '{key}' is an integer, not "
                             f"{value!r}") from None
    if kind.startswith("Array"):
        return [v for v in value.split(",") if v]
    return value


def _check_cpu(tgt: Any, spec: Any) -> None:
    """TVM accepts any `mcpu` and LLVM later falls back to a generic CPU with only a log
    line: say so now, as LLVM would."""
    mcpu = tgt.attrs.get("mcpu") if tgt.kind.name == "llvm" else None
    if not mcpu:
        return
    codegen = tvm().target.codegen
    triple = str(tgt.attrs.get("mtriple") or codegen.llvm_get_system_triple())
    if codegen.llvm_is_valid_cpu(str(mcpu), triple):
        return
    cpus = [str(c) for c in codegen.llvm_get_cpu_archlist(tgt)]
    close = close_matches(str(mcpu), cpus)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "."
    raise UnknownNameError(
        f"target {_shown(spec)}: LLVM {codegen.llvm_version_major()} does not know the CPU "
        f"{str(mcpu)!r} for {triple} (it would fall back to 'generic'){hint} It knows "
        f"{len(cpus)} CPUs, e.g. x86-64, skylake, znver4: "
        "tvm.target.codegen.llvm_get_cpu_archlist() lists them.",
        str(mcpu), tuple(cpus), close)


def _shown(spec: Any) -> str:
    return repr(spec) if isinstance(spec, (str, dict)) else str(spec)


def _tvm_said(exc: BaseException) -> str:
    """TVM's message without its trailing "Target creation ... failed: <spec>" echo."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[-1] if lines else type(exc).__name__
    return text.split(". Target creation")[0].strip()


@functools.lru_cache(maxsize=1)
def _target_kinds() -> tuple[str, ...]:
    return tuple(str(k) for k in tvm().target.Target.list_kinds())


def target_label(spec: Any, tgt) -> str:
    """A short, re-parseable name: the user's string when they gave one (`"llvm"`,
    `"llvm -mcpu=x86-64"`), the string form of a dict when it has one, else TVM's
    JSON form."""
    if isinstance(spec, str):
        return " ".join(spec.split())
    if isinstance(spec, dict) and isinstance(spec.get("kind"), str) and not any(
            isinstance(v, dict) for v in spec.values()):  # a host target has no string form
        parts = [spec["kind"]]
        for key, value in spec.items():
            if key == "kind":
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (list, tuple)) and value and all(
                    isinstance(v, str) for v in value):
                text = ",".join(value)
            else:
                text = str(value)
            parts.append(f"-{key}={text}")
        label = " ".join(parts)
        try:
            if target_spec(label) == target_spec(spec):
                return label
        except ValueError:  # a value the string form cannot carry (spaces, "=")
            pass
    return str(tgt)


def same_target(a: Any, b: Any) -> bool:
    return str(target(a)) == str(target(b))


def _backend_module_name(tgt) -> str | None:
    name = _BACKENDS.get(tgt.kind.name)
    if name is None and "gpu" in list(tgt.keys):
        name = "gpu_generic"
    return name


def relax_build_variant(tgt) -> str:
    """Which pipeline `relax.build(mod, target)` runs by default: GPU targets take the
    target's fused pipeline, CPU takes `default_build_pipeline` (no FuseOps/FuseTIR)."""
    return "fused" if "gpu" in list(tgt.keys) else "build"


def stage_passes(tgt, variant: str) -> list[tuple[str, list]]:
    """`[(stage, [Pass, ...]), ...]` for `variant` "fused" (the target's default
    pipeline, from `tvm.relax.backend.<target>.pipeline`) or "build" (what
    `relax.build` runs on CPU)."""
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
    """Wrap `fn(mod) -> mod` (or `fn(mod, ctx)`) as a module-level TVM pass."""
    return tvm().transform.module_pass(fn, opt_level=0, name=name)


def sequential(passes: Sequence, name: str):
    return tvm().transform.Sequential(list(passes), opt_level=0, name=name)


def copy_context(extra_instruments: Sequence = (), extra_config: dict | None = None,
                 **overrides):
    """A PassContext equal to the current one plus `extra_instruments` and
    `extra_config`.

    An inner `with PassContext(...)` replaces the outer context's instruments, opt_level
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

    __slots__ = ("_hash", "code", "lib", "seconds", "target", "tir_mod", "tir_pipeline")

    def __init__(self, tir_mod, target: str, tir_pipeline: Any, lib, seconds: float = 0.0):
        self.tir_mod, self.target, self.tir_pipeline, self.lib = tir_mod, target, tir_pipeline, lib
        self.seconds = seconds  # wall time of tirx.build: TIR pipeline + code generation
        self.code: Any = None  # what was generated, filled in by the build that compiled it
        self._hash: int | None = None

    def key(self) -> int:
        if self._hash is None:
            self._hash = function_hash(self.tir_mod)
        return self._hash

    def matches(self, tir_mod, target: str, tir_pipeline: Any) -> bool:
        from passlab._tvm.tir import same_content

        return (self.target == target and same_content(self.tir_pipeline, tir_pipeline)
                and function_hash(tir_mod) == self.key()
                and structural_equal(tir_mod, self.tir_mod))


def build(mod, tgt, relax_pipeline, tir_pipeline: Any = "default", reuse=()):
    """Build `mod` to a VM executable: what `relax.build(mod, tgt, relax_pipeline=...,
    tir_pipeline=...)` does, step by step, so that the compiled TIR library can be kept
    and reused.

    `tir_pipeline` is the name of a TIR pipeline TVM has registered, or a
    `passlab._tvm.tir.TirPipeline` (a pipeline's TIR stages), registered under a
    fresh name for this build only. Kernels are reused only from a build whose TIR
    pipeline had the same content.

    Returns `(executable, kernels, reused)`: the `Kernels` of this build (None
    without TIR functions) and whether they came from `reuse` (then the TIR pipeline and
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
        key = tir_pipeline if isinstance(tir_pipeline, str) else tir_pipeline.key
        kernels = next((k for k in reuse if k is not None
                        and k.matches(tir_mod, label, key)), None)
        reused = kernels is not None
        if kernels is None:
            start = time.perf_counter()
            with _tir_name(tir_pipeline) as name:
                lib = t.tirx.build(tir_mod, target=tgt, pipeline=name)
            kernels = Kernels(tir_mod, label, key, lib, time.perf_counter() - start)
    lib = None if kernels is None else kernels.lib
    device_libs = [m for m in ext_libs if vb._is_device_module(m)]
    host_libs = [m for m in ext_libs if not vb._is_device_module(m)]
    if lib is not None and not reused:
        for m in device_libs:
            lib.import_module(m)
    executable = vb.VMExecutable(vb._ffi_api.VMLink(builder, tgt, lib, host_libs, params))
    return executable, kernels, reused


def _tir_name(tir_pipeline: Any):
    """A context giving the name `tirx.build` takes: TVM's own name as it is, a
    passlab TIR pipeline registered for the block."""
    from contextlib import nullcontext

    from passlab._tvm import tir

    if isinstance(tir_pipeline, str):
        return nullcontext(tir_pipeline)
    return tir.registered(tir_pipeline.stages, tir_pipeline.owner)


# ------------------------------------------------------------------------ object cache
class ObjectCache:
    """`fn(obj)` for TVM objects, cached by the C object's address; `fn(a, b)` for
    pairs (or more) of objects, cached by their addresses together.

    Python wrappers of one TVM object differ from call to call, so `id()` is useless;
    the address is stable. Each entry keeps its objects alive, so that an address
    cannot be reused by another object while the entry is cached.

    For a cache that outlives a trace: `maxsize` keeps the entries used last, and
    `weak=True` (one object per call) refers to the object weakly instead, so that the
    cache keeps nothing alive; its entry counts while that Python object lives (a trace's
    step holds its modules' objects) and is dropped when found dead, since the address may
    be reused.
    """

    __slots__ = ("_cache", "_fn", "_lock", "_maxsize", "_weak")

    def __init__(self, fn: Callable[..., Any], maxsize: int | None = None,
                 weak: bool = False):
        self._fn = fn
        self._maxsize = maxsize
        self._weak = weak
        self._cache: dict[Any, tuple[Any, Any]] = {} if maxsize is None else OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, obj: Any, *more: Any) -> Any:
        key = obj.__chandle__() if not more else (
            obj.__chandle__(), *(m.__chandle__() for m in more))
        hit = self._cache.get(key)
        if hit is not None and self._weak and hit[0]() is None:
            hit = None  # that object is gone; the address means nothing now
        if hit is None:
            held = weakref.ref(obj) if self._weak else (obj, *more)
            hit = (held, self._fn(obj, *more))
            if self._maxsize is None:
                self._cache[key] = hit
            else:
                with self._lock:
                    self._cache[key] = hit
                    while len(self._cache) > self._maxsize:
                        self._cache.popitem(last=False)  # type: ignore[call-arg]
        elif self._maxsize is not None:
            try:  # atomic, no lock: a hit is most calls of a walk
                self._cache.move_to_end(key)  # type: ignore[attr-defined]
            except KeyError:  # another thread evicted it meanwhile
                pass
        return hit[1]

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def stores(self) -> list[tuple[Any, Any, int | None, Any]]:
        """This cache as `forget_unreferenced` reads it (nothing for a weak one: it keeps
        no object alive)."""
        if self._weak:
            return []
        return [(self._cache, lambda entry: entry[0], None, self._lock)]


def forget_unreferenced(stores: list[tuple[Any, Any, int | None, Any]]) -> int:
    """Drop the entries of caches that outlive traces whose TVM objects nothing but
    these caches refers to (a dropped build's functions and calls: each entry keeps its
    objects alive so that an address is not reused); returns how many went.

    `stores`: `(mapping, holder, n, lock)` per cache: `holder(entry)` is the tuple that
    holds the entry's objects, its first `n` items (None: all). References are counted
    with `sys.getrefcount`, less those the caches themselves hold (an object two caches
    keep counts as unreferenced when only they keep it)."""
    import sys
    from contextlib import ExitStack

    with ExitStack() as stack:
        for lock in dict.fromkeys(lock for *_, lock in stores):
            stack.enter_context(lock)
        held: dict[int, int] = {}  # id -> references from the caches' holders
        for mapping, holder, n, _ in stores:
            for entry in mapping.values():
                box = holder(entry)
                for i in range(len(box) if n is None else n):
                    if box[i] is not None:
                        held[id(box[i])] = held.get(id(box[i]), 0) + 1

        def unreferenced(box: Any, n: int | None) -> bool:
            # getrefcount's argument is the one reference besides the caches'
            return all(box[i] is None or sys.getrefcount(box[i]) - 1 <= held[id(box[i])]
                       for i in range(len(box) if n is None else n))

        gone = 0
        for mapping, holder, n, _ in stores:
            dead = [k for k, entry in mapping.items() if unreferenced(holder(entry), n)]
            for k in dead:
                del mapping[k]
            gone += len(dead)
    return gone


# -------------------------------------------------------------------------- functions
def functions(mod) -> dict[str, Any]:
    """`{global name: function}` of a module."""
    return {gv.name_hint: f for gv, f in mod.functions.items()}


def function_hash(func) -> int:
    """Structural hash of one function, skipping tensor content (weights)."""
    import tvm_ffi

    # map_free_vars=True: from MakePackedAPI on, PrimFuncs hold free buffer-data vars, and a
    # function that differs only in which Var objects those are is not a change (the diff
    # compares the same way).
    return tvm_ffi.structural_hash(func, True, True)


@functools.lru_cache(maxsize=64)
def _field_names(cls: Any) -> tuple[str, ...] | None:
    """The reflected fields of an IR object class (its ancestors' too) that structural
    equality compares (a span is ignored); None when the class has no type info or
    Python does not expose every such field."""
    info = getattr(cls, "__tvm_ffi_type_info__", None)
    names: list[str] = []
    while info is not None:
        names += [f.name for f in info.fields if getattr(f, "c_structural_eq", None) != "ignore"]
        info = info.parent_type_info
    if not names or not all(hasattr(cls, n) for n in names):
        return None
    return tuple(names)


def rebuilt_copy(a, b) -> bool:
    """Whether `b` is `a` rebuilt from the very same parts: one type, and every field
    (span aside) the same object or an equal plain value. TVM's TIR passes return most
    PrimFuncs this way (3,376 of Swin-T's 6,268 rebuilt functions), and such a pair is
    structurally equal without walking it."""
    cls: Any = type(a)
    if type(b) is not cls:
        return False
    names = _field_names(cls)  # type: ignore[arg-type]  # a class is hashable
    if names is None:
        return False
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            if x is not y:
                return False
        elif hasattr(x, "same_as"):
            if not x.same_as(y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def structural_equal(a, b, *, tensor_content: bool = False) -> bool:
    """Structural equality with free variables mapped (see `function_hash`);
    tensor bytes are compared only with `tensor_content=True`."""
    if a.same_as(b) or rebuilt_copy(a, b):
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


def has_relax_function(mod) -> bool:
    """True when `mod` (an IRModule, or None) holds a Relax function: the graph, the
    buffers and provenance describe Relax functions, and TVM's TIR stage has none."""
    return mod is not None and any(is_relax_function(f) for f in functions(mod).values())


def is_prim_func(func) -> bool:
    return isinstance(func, tvm().tirx.PrimFunc)


def entry_function(mod, *, strict: bool = True) -> str:
    """Name of the function a user calls, by one rule used everywhere (running a build,
    the fused graph, buffers, partitions): the first Relax function with a `num_input`
    attribute (what `nn.Module.export_tvm` and TVM's ONNX and PyTorch importers set),
    else `main`, else `forward`, else the only public Relax function.

    When none of these decides, `strict` raises `ValueError`; otherwise the first
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
    its `num_input` attribute, else all of them."""
    attrs = func.attrs
    if attrs is not None and "num_input" in attrs:
        return int(attrs["num_input"])
    return len(func.params)


def with_inputs(func, names: Sequence[str]):
    """`func` with the parameters named `names` as its inputs: they come first (in
    the function's own order) and the `num_input` attribute says how many; the others
    are weights. Unknown names are refused, listing the parameters."""
    given = [str(p.name) for p in func.params]
    for n in names:
        if n not in given:
            raise unknown("input", n, given, extra="(the entry function's parameters)")
    wanted = set(names)
    params = [p for p in func.params if str(p.name) in wanted] + \
             [p for p in func.params if str(p.name) not in wanted]
    if [str(p.name) for p in params] != given:
        func = relax().Function(params, func.body, func.ret_ty, func.is_pure, func.attrs,
                                func.span)
    return func.with_attr("num_input", len(wanted))


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
    """`[(name, shape, dtype), ...]` of a Relax function's tensor parameters; symbolic
    dimensions appear as their variable names."""
    out = []
    for p in func.params:
        ty = p.ty
        shape = tuple(
            int(d) if isinstance(d, tvm().tirx.IntImm) else str(d) for d in ty.shape.values
        )
        out.append((p.name, shape, str(ty.dtype)))
    return out


def signature(func) -> tuple[tuple[str, str], ...]:
    """`((name, type), ...)` of a Relax function's parameters and, last, `("->",
    return type)`: any parameter kind (tensors, tuples, callbacks), as TVM prints it."""
    ret = func.ret_ty if hasattr(func, "ret_ty") else getattr(func, "ret_struct_info", None)
    text = str(ret)
    if text == "None" and len(getattr(ret, "fields", ()) or ()) == 0 and ret is not None:
        text = "R.Tuple"  # the empty tuple type prints as "None" on its own
    return tuple((p.name, str(p.ty)) for p in func.params) + (("->", text),)


def virtual_machine(executable, device: Any = "cpu"):
    """A Relax VM for `executable` on `device` (a TVM device, or its name: "cpu",
    "cuda", ...)."""
    r = relax()
    dev = getattr(tvm(), device)() if isinstance(device, str) else device
    return r.VirtualMachine(executable, dev)


def to_tvm_tensor(array, device: Any = None):
    """`array` as a TVM tensor, on `device` (default the CPU)."""
    t = tvm()
    if device is None:
        return t.runtime.tensor(array)
    if isinstance(array, t.runtime.Tensor):  # moved where it is not there yet
        return array if str(array.device) == str(device) else array.copyto(device)
    return t.runtime.tensor(array, device)


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


# ------------------------------------------------------------------------- renaming
def rename_functions(mod, renames: dict[str, str]):
    """`mod` with public functions renamed (`{old: new}`) through their
    `global_symbol` and `NormalizeGlobalVar`, which also updates every call of them."""
    t = tvm()
    funcs = {}
    for gv, func in mod.functions_items():
        if gv.name_hint in renames:
            func = func.with_attr("global_symbol", renames[gv.name_hint])
        funcs[gv] = func
    new = t.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)
    return relax().transform.NormalizeGlobalVar()(new)


def without_symbol(func):
    """`func` without its `global_symbol` attribute (its public name), to compare two
    functions that differ only in what they are called."""
    attrs = func.attrs
    if attrs is None or "global_symbol" not in attrs:
        return func
    return func.without_attr("global_symbol")


def called_functions(func) -> set[str]:
    """Names of the global functions a Relax function refers to (none for other kinds)."""
    if not is_relax_function(func):
        return set()
    return {gv.name_hint for gv in relax().analysis.all_global_vars(func)}


def keep_interrupts() -> None:
    """Make a KeyboardInterrupt raised in a Python callback during a TVM pass (a hook,
    a Python pass, a signal handler run there) come back to Python as a
    KeyboardInterrupt. tvm_ffi maps exceptions to C++ errors by registered class name;
    an unregistered class becomes `RuntimeError` with the exception's message, which
    for Ctrl-C is empty."""
    from tvm_ffi.error import register_error

    register_error("KeyboardInterrupt", KeyboardInterrupt)
