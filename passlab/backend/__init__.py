"""Bring your own backend: UMA-style accelerator backends as pipeline edits.

A `Backend` is a name, the patterns of the operators it takes, and passes to run
at named phases of the pipeline, as UMA proposed for Relay (`UMAPartitioner` with
`_register_pattern` and `_register_relay_pass(phase, ...)`). `apply_backend`
(`Pipeline.with_backend`) turns it into ordinary user entries of a
`Pipeline`, so that partitioning is recorded like any other pass:

==================  ======================================================================
phase               where its passes run
==================  ======================================================================
before_partition    just before partitioning (start of `legalize`, before LegalizeOps)
(partition)         `partition_for_<name>`: FuseOpsByPattern + MergeCompositeFunctions
after_partition     just after partitioning, on the `Codegen` functions
(offload)           `RunCodegen` with a registered `relax.ext.<name>` codegen, else
                    `host_fallback_<name>` (regions inlined back, compiled for the host)
after_fusion        end of `legalize`: after FuseOps/FuseTIR
before_lowering     start of `dataflow_lower`
after_memory_plan   just after StaticPlanBlockMemory
tir_before_lowering start of the TIR stage `s_tir`: scheduled TIR, blocks not lowered yet
tir_after_lowering  TIR lowered to flat loops and buffers, just before
                    `tirx.SplitHostDevice` (end of `tirx` without it)
codegen             source emitters, functions `IRModule -> str` run on the lowered TIR
                    module after TVM's code generators; their text is recorded in the
                    trace's `codegen` step (`build.source("<backend name>")`)
==================  ======================================================================

Phases are positions in the pipeline: a pass there sees (and may change) the whole module.
`preview` records only the beginning (up to `after_partition`), which is where a
backend without a codegen can be inspected: TVM 0.27 can partition with no external
codegen registered, but neither `RunCodegen` nor a CPU build can handle the partitioned
module then.

This module holds what a user touches: `Backend`, `apply_backend`,
`preview`, `partition` and `host_fallback`. Behind them:
`passlab.backend.patterns` (resolving pattern items), `passlab.backend.passes`
(the TVM transforms) and `passlab.backend.placement` (where the entries go).

Examples
--------
>>> import passlab
>>> from passlab.backend import Backend
>>> from tvm.relax.dpl import is_op, wildcard
>>> npu = Backend("npu", patterns=[("dense", is_op("relax.matmul")(wildcard(), wildcard()))])
>>> pipe = passlab.Pipeline.default("llvm").with_backend(npu)
>>> [e.name for e in pipe.user_passes]
['partition_for_npu', 'host_fallback_npu']
>>> npu.preview(passlab.models.mlp()).main_chain()[-1].name
'partition_for_npu'
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from passlab import _render, _tvm
from passlab.backend import passes as _backend_passes
from passlab.backend import placement as _backend_pipeline
from passlab.backend.passes import composite_names as composite_names  # re-exported
from passlab.backend.patterns import PATTERN_MODULES, is_single_pattern, resolve
from passlab.errors import PartitionWarning, unknown
from passlab.models import as_module
from passlab.pipeline import Pipeline, Stage
from passlab.recording.run import RecordedRun

__all__ = ["Backend", "apply_backend", "preview", "partition", "PHASES", "PartitionWarning"]

#: Phase names, in pipeline order (see the module docstring for where each runs).
PHASES: tuple[str, ...] = ("before_partition", "after_partition", "after_fusion",
                           "before_lowering", "after_memory_plan", "tir_before_lowering",
                           "tir_after_lowering", "codegen")

#: How the partitioned regions are handled in a full build.
CODEGENS = ("auto", "external", "host", "none")


@dataclass(frozen=True)
class Backend(_render.Displayable):
    """An accelerator backend: what it takes (patterns) and its passes (by phase).

    Parameters
    ----------
    name
        The backend's name; it is also the `Codegen` attribute of the partitioned
        functions and the codegen TVM looks for (`relax.ext.<name>`). No dots.
    patterns
        What the backend takes, highest priority first. Each item is one of:

        * `(name, pattern)` or `(name, pattern, check)`: a `tvm.relax.dpl`
          pattern, and optionally `check(ctx: PatternCheckContext) -> bool` (a mapping
          in third place is TVM's `annotation_patterns`; 4-tuples are TVM's
          `(name, pattern, annotation_patterns, check)`);
        * a `tvm.relax.transform.FusionPattern` (e.g. from
          `tvm.relax.backend.pattern_registry`);
        * a string: a registered pattern set by prefix (`"tensorrt"`, `"example_npu"`)
          or one registered pattern by full name (`"example_npu.conv2d_relu_fused"`).

        Pattern names get the backend's prefix (`"conv2d_relu"` becomes
        `"npu.conv2d_relu"`, `"example_npu.conv2d"` becomes `"npu.conv2d"`), since
        TVM derives the codegen from it. Default: the patterns registered under `name`.
    passes
        `{phase: [pass, ...]}`; a pass is a TVM pass or a function
        `IRModule -> IRModule` (TIR phases get the module of PrimFuncs). Phases:
        `PHASES`. `"codegen"` takes source emitters instead: functions
        `IRModule -> str` whose text the build records next to TVM's generated code,
        under the backend's name.
    codegen
        How a full build handles the partitioned regions: `"external"` runs TVM's
        `RunCodegen` (needs a registered `relax.ext.<name>`), `"host"` inlines the
        regions back so that TVM compiles them for the host (a simulation: the build
        completes and outputs can be checked), `"none"` leaves them (TVM 0.27's CPU
        build then fails in VMShapeLower), `"auto"` (default) is `"external"` when
        the codegen is registered, else `"host"`.

    Examples
    --------
    >>> from tvm.relax.dpl import is_op, wildcard
    >>> conv = is_op("relax.nn.conv2d")(wildcard(), wildcard())
    >>> b = Backend("npu", patterns=[("conv2d_relu", is_op("relax.nn.relu")(conv))],
    ...             passes={"after_partition": [lambda mod: mod]})
    >>> [p.name for p in b.fusion_patterns()]
    ['npu.conv2d_relu']
    """

    name: str
    patterns: tuple[Any, ...] = ()
    passes: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    codegen: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.name):
            raise ValueError(
                f"a backend name must be an identifier without dots (it becomes the "
                f"'Codegen' attribute and the prefix of pattern names), not {self.name!r}"
            )
        pats = self.patterns
        if isinstance(pats, (str, tuple)) and is_single_pattern(pats):
            pats = (pats,)
        elif isinstance(pats, Mapping):
            pats = tuple(pats.items())
        object.__setattr__(self, "patterns", tuple(pats))
        object.__setattr__(self, "passes", _normalize_passes(self.passes))
        if self.codegen not in CODEGENS:
            raise unknown("codegen mode", str(self.codegen), CODEGENS)
        self.fusion_patterns()  # resolve now: a bad pattern is an error at construction

    # ------------------------------------------------------------------ patterns
    def fusion_patterns(self) -> list[Any]:
        """The patterns as TVM `FusionPattern` objects, named `<name>.<pattern>`,
        highest priority first."""
        if not self.patterns:
            try:
                return resolve(self.name, self.name)
            except ValueError:
                raise ValueError(
                    f"backend {self.name!r} has no patterns, and none are registered under "
                    f"its name: give patterns=[(name, pattern), ...] or the name of a "
                    f"registered set ({', '.join(PATTERN_MODULES)})"
                ) from None
        return [p for item in self.patterns for p in resolve(item, self.name)]

    @property
    def pattern_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.fusion_patterns())

    def phase(self, name: str) -> tuple[Any, ...]:
        """The passes of phase `name` (empty when none)."""
        if name not in PHASES:
            raise unknown("phase", name, PHASES)
        return dict(self.passes).get(name, ())

    # ------------------------------------------------------------------- running
    def partition(self, mod: Any) -> Any:
        """`mod` partitioned by this backend's patterns (no phase passes)."""
        return partition(mod, self)

    def preview(self, model: Any, target: Any = "llvm", pipeline: Pipeline | None = None):
        """Record the pipeline up to partitioning and the `after_partition` passes;
        see `preview`."""
        return preview(model, self, target, pipeline=pipeline)

    def codegen_registered(self) -> bool:
        """True when TVM has an external codegen `relax.ext.<name>`."""
        return _tvm.tvm().get_global_func(f"relax.ext.{self.name}", allow_missing=True) is not None

    # ---------------------------------------------------------------------- views
    def _table(self) -> tuple[str, list[str], list[list[str]]]:
        rows = [["pattern", p.name, f"priority {i + 1}" + (", with check" if p.check else "")]
                for i, p in enumerate(self.fusion_patterns())]
        rows += [["pass", _pass_label(p), phase] for phase, ps in self.passes for p in ps]
        mode = self.codegen
        if mode == "auto":
            mode += (f" (external: relax.ext.{self.name})" if self.codegen_registered() else
                     f" (host: no relax.ext.{self.name} registered)")
        n = len(rows) - sum(len(ps) for _, ps in self.passes)
        title = f"Backend {self.name!r}: {n} pattern{'s' if n != 1 else ''}, codegen {mode}"
        return title, ["kind", "name", "where"], rows

    def to_text(self) -> str:
        title, header, rows = self._table()
        return title + "\n" + _render.text_table(header, rows)

    def to_html(self) -> str:
        title, header, rows = self._table()
        return _render.html_table(header, rows, caption=title)

    def __repr__(self) -> str:
        items = self.patterns or (self.name,)
        n = ", ".join(repr(i) if isinstance(i, str) else repr(str(getattr(i, "name", None) or i[0]))
                      for i in items)
        phases = ", ".join(f"{p}: {len(ps)}" for p, ps in self.passes)
        return (f"Backend({self.name!r}, patterns=[{n}], passes={{{phases}}}, "
                f"codegen={self.codegen!r})")


def _pass_label(p: Any) -> str:
    if _tvm.is_pass(p):
        return _tvm.pass_name(p)
    return getattr(p, "__name__", None) or type(p).__name__


def _normalize_passes(passes: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    items = passes.items() if isinstance(passes, Mapping) else passes
    found: dict[str, tuple[Any, ...]] = {}
    for phase, ps in items:
        if phase not in PHASES:
            raise unknown("phase", str(phase), PHASES)
        if _tvm.is_pass(ps) or callable(ps):
            ps = (ps,)
        for p in ps:
            if phase == "codegen" and (_tvm.is_pass(p) or not callable(p)):
                raise TypeError(f"phase 'codegen' takes source emitters, functions "
                                f"IRModule -> str, not {type(p).__name__}; a TVM pass "
                                "belongs in a TIR phase (tir_after_lowering)")
            if not (_tvm.is_pass(p) or callable(p)):
                raise TypeError(f"a pass of phase {phase!r} must be a TVM pass or a function "
                                f"IRModule -> IRModule, not {type(p).__name__}")
        found[phase] = found.get(phase, ()) + tuple(ps)
    return tuple((p, found[p]) for p in PHASES if found.get(p))


# ----------------------------------------------------------------------- entry points
def as_backend(backend: Any) -> Backend:
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        return Backend(backend)
    raise TypeError(f"a backend is a passlab.backend.Backend or the name of a registered "
                    f"pattern set, not {type(backend).__name__}")


def partition(mod: Any, backend: Backend | str, merge: bool = True) -> Any:
    """Partition `mod` by `backend`'s patterns, as `partition_for_<name>` does.

    `FuseOpsByPattern` groups each match into a `Composite` function, then
    `MergeCompositeFunctions` merges neighbouring ones into `Codegen` functions (the
    offloaded regions). With `merge=False` each match becomes its own region
    (`annotate_codegen=True`). Weights stay arguments of the regions
    (`bind_constants=False`), so they show as traffic. Only the entry function is
    partitioned; modules whose entry is `forward` are handled (see
    `passlab.backend.passes.with_entry_as_main`).
    """
    return _backend_passes.partition_module(mod, as_backend(backend).fusion_patterns(), merge)


def host_fallback(mod: Any, backend: Backend | str) -> Any:
    """`mod` with `backend`'s regions inlined back into their callers, so that TVM
    compiles them for the host like the rest of the model (a simulation of the offload).

    TVM's `LambdaLift` and `InlinePrivateFunctions` do the work, on the whole module:
    other private Relax functions are inlined too, and with a second backend applied its
    regions' composite functions would be lifted as well (one backend per build is what
    this supports).
    """
    return _backend_passes.inline_regions(mod, as_backend(backend).name)


def apply_backend(pipeline: Pipeline, backend: Backend | str) -> Pipeline:
    """`pipeline` with `backend` applied: its partitioning, codegen (or host
    fallback) and phase passes inserted as user entries (see the module docstring).

    Examples
    --------
    >>> import passlab
    >>> pipe = passlab.Pipeline.default("llvm").with_backend("tensorrt")
    >>> [e.name for e in pipe.stage("legalize").passes][:3]
    ['partition_for_tensorrt', 'host_fallback_tensorrt', 'LegalizeOps']
    """
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"apply_backend needs a passlab.Pipeline, not {type(pipeline).__name__}")
    return _backend_pipeline.insert_entries(pipeline, as_backend(backend), offload=True)[0]


def preview(model: Any, backend: Backend | str, target: Any = "llvm", *,
            pipeline: Pipeline | None = None):
    """Record the pipeline from its start through partitioning and the backend's
    `after_partition` passes, and stop there.

    This is how a backend without a codegen is inspected: the last main-chain step,
    `trace.main_chain()[-1]`, holds the `Codegen` functions in its `after` module
    (see `passlab.partitions`, which also takes the trace itself). A
    `PartitionWarning` (also kept in `trace.warnings`) names the backend's own
    patterns that matched nothing, or says that nothing matched at all.

    Returns
    -------
    Trace
        With `trace.pipeline` the truncated pipeline that ran.

    Raises
    ------
    BuildError
        When a pass fails; `.trace` keeps the steps recorded so far.

    Examples
    --------
    >>> import passlab
    >>> trace = preview(passlab.models.resnet(), "tensorrt")
    >>> trace.main_chain()[-1].name
    'partition_for_tensorrt'
    """
    b = as_backend(backend)
    mod = as_module(model)
    pipe = pipeline if pipeline is not None else Pipeline.default(target)
    full, si, cut = _backend_pipeline.insert_entries(pipe, b, offload=False)
    stages = full.stages[:si] + (Stage(full.stages[si].name, full.stages[si].passes[:cut + 1]),)
    short = dataclasses.replace(full, stages=stages, tir_stages=())  # no TIR stage runs
    run = RecordedRun(short, mod)
    try:
        with run:
            out = run.relax_pass()(mod)
    except BaseException as exc:
        err = run.error(exc)
        if err is exc:  # Ctrl-C: the KeyboardInterrupt itself, .trace attached
            raise
        raise err from exc
    found = _backend_passes.unmatched_message(b, out)
    if found:
        warnings.warn(found, PartitionWarning, stacklevel=2)
        return run.trace(warnings=[found])
    return run.trace()
