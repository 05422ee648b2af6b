"""TVM's TIR pipeline as stages of passes, and how an edited one reaches `tirx.build`.

`tvm.tirx.build` (and `relax.build`) take a TIR pipeline only by name: a factory
registered with `tvm.tirx.register_tir_pipeline(name, factory)` that returns the
pipeline pass and two callables making the host and device finalize passes (see
`tvm/tirx/compilation_pipeline.py`). TVM's default ("default", which means "s_tir")
builds its list of passes inside a closure, reading the PassContext config, so the list
is mirrored here, config conditions included; `tests/test_tir_stage.py` checks it
against what a real `relax.build` runs.

`registered` registers an edited pipeline under a fresh name for the length of one
build and removes it afterwards; TVM's own names are never touched.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: TIR stages, in order: the scheduled-TIR lowering (blocks to loops, ``s_tir.*``), the
#: lowering to flat buffers and the packed API (``tirx.*``), the finalize passes TVM
#: runs on the host module and on each device module after splitting them, and the
#: user's source emitters (``codegen``: functions ``IRModule -> str``, not passes).
TIR_STAGES: tuple[str, ...] = ("s_tir", "tirx", "host_finalize", "device_finalize", "codegen")

#: Name of the module pass that runs the ``s_tir`` and ``tirx`` stages.
TIR_ROOT = "passlab.tir_pipeline"

#: Stage names of the steps around the TIR pipeline that TVM runs itself (BindTarget,
#: the host/device split) and of the generated code.
TIR_OTHER = "tir"
CODEGEN = "codegen"

# (stage, namespace.Pass, args, config key, config value that keeps it); None: always.
# Mirrors ``tvm.s_tir.pipeline.default_s_tir_pipeline`` and its finalize functions.
_DEFAULT: tuple[tuple[str, str, tuple, str | None, bool], ...] = (
    ("s_tir", "s_tir.CanonicalizeLoop", (), None, True),
    ("s_tir", "s_tir.LowerCrossThreadReduction", (), None, True),
    ("s_tir", "s_tir.LowerInitBlock", (), None, True),
    ("s_tir", "s_tir.PlanAndUpdateBufferAllocationLocation", (), None, True),
    ("s_tir", "s_tir.ConvertBlocksToOpaque", (), None, True),
    ("s_tir", "s_tir.LiftThreadBinding", (), None, True),
    ("s_tir", "s_tir.ManifestSharedMemoryLocalStage", (), None, True),
    ("s_tir", "s_tir.CompactBufferAllocation", (), None, True),
    ("s_tir", "s_tir.LowerAutoCopy", (), None, True),
    ("s_tir", "s_tir.UnifyThreadBinding", (), None, True),
    ("s_tir", "s_tir.LowerMatchBuffer", (), None, True),
    ("s_tir", "s_tir.StmtSimplify", (), None, True),
    ("s_tir", "s_tir.InjectPermutedLayout", (), None, True),
    ("s_tir", "s_tir.AnnotateIrregularLoop", (), None, True),
    ("s_tir", "s_tir.InjectSoftwarePipeline", (), None, True),
    ("s_tir", "s_tir.TransformMmaBufferLayout", (), None, True),
    ("s_tir", "s_tir.LowerOpaqueBlock", (), None, True),
    ("tirx", "tirx.FlattenBuffer", (), None, True),
    ("tirx", "tirx.BF16ComputeLegalize", (), None, True),
    ("tirx", "tirx.NarrowDataType", (32,), None, True),
    ("tirx", "s_tir.LoopPartition", (), None, True),
    ("tirx", "tirx.VectorizeLoop", ("vectorize",), None, True),
    ("tirx", "s_tir.InjectVirtualThread", (), None, True),
    ("tirx", "s_tir.InjectDoubleBuffer", (), None, True),
    ("tirx", "tirx.StorageRewrite", (), "tirx.disable_storage_rewrite", False),
    ("tirx", "s_tir.LowerAsyncDMA", (), "tirx.use_async_copy", True),
    ("tirx", "s_tir.HoistIfThenElse", (), None, True),
    ("tirx", "tirx.UnrollLoop", (), None, True),
    ("tirx", "s_tir.RenormalizeSplitPattern", (), None, True),
    ("tirx", "tirx.StmtSimplify", (), None, True),
    ("tirx", "tirx.RemoveNoOp", (), None, True),
    ("tirx", "s_tir.RewriteUnsafeSelect", (), None, True),
    ("tirx", "s_tir.InstrumentBoundCheckers", (), "tirx.instrument_bound_checkers", True),
    ("tirx", "s_tir.InjectPTXLDG32", (True,), "tirx.s_tir.ldg32", True),
    ("tirx", "tirx.CommonSubexprElim", (), "tirx.disable_cse_tir", False),
    ("tirx", "s_tir.InstrumentProfileIntrinsics", (), "tirx.instrument_lwp", True),
    ("tirx", "tirx.FP8ComputeLegalize", (), None, True),
    ("tirx", "s_tir.VerifyVTCMLimit", (), None, True),
    ("tirx", "s_tir.LowerVtcmAlloc", (), None, True),
    ("tirx", "tirx.VerifyMemory", (), None, True),
    ("tirx", "tirx.AnnotateEntryFunc", (), None, True),
    ("tirx", "s_tir.ThreadSync", ("shared",), None, True),
    ("tirx", "s_tir.ThreadSync", ("shared.dyn",), None, True),
    ("tirx", "s_tir.ThreadSync", ("warp",), None, True),
    ("tirx", "s_tir.InferFragment", (), None, True),
    ("tirx", "s_tir.LowerThreadAllreduce", (), None, True),
    ("tirx", "s_tir.InjectPTXAsyncCopy", (), "tirx.use_async_copy", True),
    ("tirx", "s_tir.InjectPTXLDG32", (), "tirx.s_tir.ldg32", True),
    ("tirx", "s_tir.MergeSharedMemoryAllocations", (), None, True),
    ("tirx", "tirx.SplitHostDevice", (), None, True),
    ("tirx", "tirx.MakePackedAPI", (), None, True),
    ("tirx", "tirx.FP8StorageLegalize", (), None, True),
    ("tirx", "tirx.BF16StorageLegalize", (), None, True),
    ("host_finalize", "tirx.LowerTVMBuiltin", (), None, True),
    ("host_finalize", "tirx.LowerIntrin", (), None, True),
    ("device_finalize", "tirx.LowerWarpMemory", (), None, True),
    ("device_finalize", "tirx.StmtSimplify", (), None, True),
    ("device_finalize", "tirx.LowerIntrin", (), None, True),
)


def stage_passes(config: Any = None) -> list[tuple[str, list[tuple[Any, str]]]]:
    """`[(stage, [(Pass, note), ...]), ...]`: TVM's default TIR pipeline under
    `config` (default: the current PassContext's), stage by stage (`TIR_STAGES`).

    `note` is empty, or says which config setting changed a pass (it then also tells
    two pipelines built under different settings apart, see `content_key`).
    """
    import tvm
    from tvm import s_tir, tirx

    if config is None:
        config = tvm.transform.PassContext.current().config
    config = dict(config or {})
    spaces = {"s_tir": s_tir.transform, "tirx": tirx.transform}
    out: dict[str, list[tuple[Any, str]]] = {s: [] for s in TIR_STAGES}
    for stage, dotted, args, key, keep in _DEFAULT:
        if key is not None and bool(config.get(key, False)) != keep:
            continue
        ns, name = dotted.split(".")
        note = f"{key}={config[key]!r}" if key is not None and key in config else ""
        if args == ("vectorize",):
            off = bool(config.get("tirx.disable_vectorize", False))
            args = (not off,)
            note = "vectorization off (tirx.disable_vectorize)" if off else ""
        out[stage].append((getattr(spaces[ns], name)(*args), note))
    return [(s, out[s]) for s in TIR_STAGES]


def content_key(stages: Sequence[tuple[str, Sequence[Any]]]) -> tuple:
    """What makes two TIR pipelines the same computation, for kernel reuse: per stage
    the enabled entries' names, origins and notes, and the user's own pass objects
    (held, so that an id is never reused by another object while the key lives)."""
    return tuple((stage, tuple((e.name, e.origin, e.note, e.pass_ if e.origin == "user"
                                else None) for e in entries if e.enabled))
                 for stage, entries in stages)


def same_content(a: Any, b: Any) -> bool:
    """Two keys from `content_key` (or two TVM pipeline names) are equal: user
    passes compared by identity."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if len(a) != len(b):
        return False
    for (sa, ea), (sb, eb) in zip(a, b):
        if sa != sb or len(ea) != len(eb):
            return False
        for x, y in zip(ea, eb):
            if x[:3] != y[:3] or x[3] is not y[3]:
                return False
    return True


class TirPipeline:
    """A pipeline's TIR stages on their way to `tirx.build`: `stages` the enabled
    passes per stage (`[(stage, [Pass, ...]), ...]`), `key` their content (see
    `content_key`), `owner` the pipeline object (it names the registration)."""

    __slots__ = ("key", "owner", "stages")

    def __init__(self, stages: Sequence[tuple[str, Sequence[Any]]], key: tuple, owner: object):
        self.stages, self.key, self.owner = list(stages), key, owner


_NAMES = itertools.count()
_LOCK = threading.Lock()


def _pipeline_map() -> dict[str, Callable]:
    # TVM 0.27 keeps registered TIR pipelines in a plain dict and has no unregister
    # function: removing our entry after the build is done on that dict.
    from tvm.tirx import compilation_pipeline

    return compilation_pipeline.PIPELINE_MAP


@contextmanager
def registered(stages: Sequence[tuple[str, Sequence[Any]]], owner: object) -> Iterator[str]:
    """Register a TIR pipeline made of `stages` (`[(stage, [Pass, ...]), ...]`,
    enabled passes only) under a fresh name for the block; yields the name.

    The name says which pipeline object it is for (`passlab_<id>_<n>`); a name TVM
    already has is never overwritten, and the entry is removed when the block ends.
    """
    import tvm

    by_stage = {s: list(ps) for s, ps in stages}
    seqs = {s: tvm.transform.Sequential(by_stage.get(s, []), opt_level=0, name=s)
            for s in TIR_STAGES if s != CODEGEN}

    def factory(**_kwargs):
        @tvm.transform.module_pass(opt_level=0, name=TIR_ROOT)
        def run(mod, _ctx):
            mod = seqs["s_tir"](mod)
            return seqs["tirx"](mod)

        return run, (lambda: seqs["host_finalize"]), (lambda: seqs["device_finalize"])

    table = _pipeline_map()
    with _LOCK:
        name = f"passlab_{id(owner):x}_{next(_NAMES)}"
        while name in table:
            name = f"passlab_{id(owner):x}_{next(_NAMES)}"
        tvm.tirx.register_tir_pipeline(name, factory)
    try:
        yield name
    finally:
        with _LOCK:
            if table.get(name) is factory:
                del table[name]


def registered_names() -> tuple[str, ...]:
    """The names of every TIR pipeline TVM has registered now."""
    return tuple(_pipeline_map())


def flops(func: Any) -> float | None:
    """TVM's estimate of the floating-point operations of one PrimFunc
    (`tvm.s_tir.analysis.estimate_tir_flops`: loop extents times the arithmetic in their
    bodies), or None when it is not a PrimFunc or TVM cannot estimate it (symbolic loop
    extents, opaque calls)."""
    import tvm

    if not isinstance(func, tvm.tirx.PrimFunc):
        return None
    try:
        from tvm.s_tir.analysis import estimate_tir_flops

        value = float(estimate_tir_flops(tvm.IRModule({"main": func})))
    except Exception:  # noqa: BLE001 - TVM refuses what it cannot count: unknown
        return None
    return value if value > 0 else None
