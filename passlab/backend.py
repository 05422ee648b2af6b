"""Bring your own backend: UMA-style accelerator backends as pipeline edits.

A :class:`Backend` is a name, the patterns of the operators it takes, and passes to run
at named phases of the pipeline, as UMA proposed for Relay (``UMAPartitioner`` with
``_register_pattern`` and ``_register_relay_pass(phase, ...)``). :func:`apply_backend`
(``Pipeline.with_backend``) turns it into ordinary user entries of a
:class:`~passlab.Pipeline`, so that partitioning is recorded like any other pass:

==================  ======================================================================
phase               where its passes run
==================  ======================================================================
before_partition    just before partitioning (start of ``legalize``, before LegalizeOps)
(partition)         ``partition_for_<name>``: FuseOpsByPattern + MergeCompositeFunctions
after_partition     just after partitioning, on the ``Codegen`` functions
(offload)           ``RunCodegen`` with a registered ``relax.ext.<name>`` codegen, else
                    ``host_fallback_<name>`` (regions inlined back, compiled for the host)
after_fusion        end of ``legalize``: after FuseOps/FuseTIR
before_lowering     start of ``dataflow_lower``
after_memory_plan   just after StaticPlanBlockMemory
==================  ======================================================================

Phases are positions in the pipeline: a pass there sees (and may change) the whole module.
``preview`` records only the beginning (up to ``after_partition``), which is where a
backend without a codegen can be inspected: TVM 0.27 can partition with no external
codegen registered, but neither ``RunCodegen`` nor a CPU build can handle the partitioned
module then.

Examples
--------
>>> import passlab
>>> from passlab.backend import Backend
>>> from tvm.relax.dpl import is_op, wildcard
>>> npu = Backend("npu", patterns=[("dense", is_op("relax.matmul")(wildcard(), wildcard()))])
>>> pipe = passlab.Pipeline.default("llvm").with_backend(npu)
>>> [e.name for e in pipe.user_passes]
['partition_for_npu', 'host_fallback_npu']
>>> npu.preview(passlab.models.mlp()).top_level()[-1].name
'partition_for_npu'
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import _tvm
from ._names import unknown
from .pipeline import PassEntry, Pipeline, Stage, _user_entry

__all__ = ["Backend", "apply_backend", "preview", "partition", "PHASES", "PartitionWarning"]

#: Phase names, in pipeline order (see the module docstring for where each runs).
PHASES: tuple[str, ...] = ("before_partition", "after_partition", "after_fusion",
                           "before_lowering", "after_memory_plan")

#: TVM modules that register pattern sets when imported (``tvm.relax.backend.contrib``).
_PATTERN_MODULES = {
    "tensorrt": "tvm.relax.backend.contrib.tensorrt",
    "example_npu": "tvm.relax.backend.contrib.example_npu",
}

#: How the partitioned regions are handled in a full build.
CODEGENS = ("auto", "external", "host", "none")


class PartitionWarning(UserWarning):
    """Some of a backend's patterns matched nothing in the model."""


@dataclass(frozen=True)
class Backend:
    """An accelerator backend: what it takes (patterns) and its passes (by phase).

    Parameters
    ----------
    name
        The backend's name; it is also the ``Codegen`` attribute of the partitioned
        functions and the codegen TVM looks for (``relax.ext.<name>``). No dots.
    patterns
        What the backend takes, highest priority first. Each item is one of:

        * ``(name, pattern)`` or ``(name, pattern, check)``: a ``tvm.relax.dpl``
          pattern, and optionally ``check(ctx: PatternCheckContext) -> bool`` (a mapping
          in third place is TVM's ``annotation_patterns``; 4-tuples are TVM's
          ``(name, pattern, annotation_patterns, check)``);
        * a ``tvm.relax.transform.FusionPattern`` (e.g. from
          ``tvm.relax.backend.pattern_registry``);
        * a string: a registered pattern set by prefix (``"tensorrt"``, ``"example_npu"``)
          or one registered pattern by full name (``"example_npu.conv2d_relu_fused"``).

        Pattern names get the backend's prefix (``"conv2d_relu"`` becomes
        ``"npu.conv2d_relu"``, ``"example_npu.conv2d"`` becomes ``"npu.conv2d"``), since
        TVM derives the codegen from it. Default: the patterns registered under ``name``.
    passes
        ``{phase: [pass, ...]}``; a pass is a TVM pass or a function
        ``IRModule -> IRModule``. Phases: :data:`PHASES`.
    codegen
        How a full build handles the partitioned regions: ``"external"`` runs TVM's
        ``RunCodegen`` (needs a registered ``relax.ext.<name>``), ``"host"`` inlines the
        regions back so that TVM compiles them for the host (a simulation: the build
        completes and outputs can be checked), ``"none"`` leaves them (TVM 0.27's CPU
        build then fails in VMShapeLower), ``"auto"`` (default) is ``"external"`` when
        the codegen is registered, else ``"host"``.

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
        if isinstance(pats, (str, tuple)) and _is_single_pattern(pats):
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
        """The patterns as TVM ``FusionPattern`` objects, named ``<name>.<pattern>``,
        highest priority first."""
        if not self.patterns:
            try:
                return _resolve(self.name, self.name)
            except ValueError:
                raise ValueError(
                    f"backend {self.name!r} has no patterns, and none are registered under "
                    f"its name: give patterns=[(name, pattern), ...] or the name of a "
                    f"registered set ({', '.join(_PATTERN_MODULES)})"
                ) from None
        return [p for item in self.patterns for p in _resolve(item, self.name)]

    @property
    def pattern_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.fusion_patterns())

    def phase(self, name: str) -> tuple[Any, ...]:
        """The passes of phase ``name`` (empty when none)."""
        if name not in PHASES:
            raise unknown("phase", name, PHASES)
        return dict(self.passes).get(name, ())

    # ------------------------------------------------------------------- running
    def partition(self, mod: Any) -> Any:
        """``mod`` partitioned by this backend's patterns (no phase passes)."""
        return partition(mod, self)

    def preview(self, model: Any, target: Any = "llvm", pipeline: Pipeline | None = None):
        """Record the pipeline up to partitioning and the ``after_partition`` passes;
        see :func:`preview`."""
        return preview(model, self, target, pipeline=pipeline)

    def codegen_registered(self) -> bool:
        """True when TVM has an external codegen ``relax.ext.<name>``."""
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
        from . import _render

        title, header, rows = self._table()
        return title + "\n" + _render.text_table(header, rows)

    def to_html(self) -> str:
        from . import _render

        title, header, rows = self._table()
        return _render.html_table(header, rows, caption=title)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from . import _render

        return _render.mimebundle(self)

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


def _is_single_pattern(p: Any) -> bool:
    """A lone ``"tensorrt"`` or ``("name", pattern)`` rather than a list of them."""
    return isinstance(p, str) or (
        len(p) >= 2 and isinstance(p[0], str) and not isinstance(p[1], str))


def _normalize_passes(passes: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    items = passes.items() if isinstance(passes, Mapping) else passes
    found: dict[str, tuple[Any, ...]] = {}
    for phase, ps in items:
        if phase not in PHASES:
            raise unknown("phase", str(phase), PHASES)
        if _tvm.is_pass(ps) or callable(ps):
            ps = (ps,)
        for p in ps:
            if not (_tvm.is_pass(p) or callable(p)):
                raise TypeError(f"a pass of phase {phase!r} must be a TVM pass or a function "
                                f"IRModule -> IRModule, not {type(p).__name__}")
        found[phase] = found.get(phase, ()) + tuple(ps)
    return tuple((p, found[p]) for p in PHASES if found.get(p))


# ------------------------------------------------------------------- pattern registry
def _registry():
    from tvm.relax.backend import pattern_registry

    return pattern_registry


def _load_pattern_module(prefix: str) -> None:
    module = _PATTERN_MODULES.get(prefix.split(".")[0])
    if module is not None:
        importlib.import_module(module)


def _registered_names() -> list[str]:
    for module in _PATTERN_MODULES.values():
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    return [p.name for p in _registry().get_patterns_with_prefix("")]


def _resolve(item: Any, backend: str) -> list[Any]:
    from tvm.relax.dpl import DFPattern
    from tvm.relax.transform import FusionPattern

    if isinstance(item, str):
        _load_pattern_module(item)
        reg = _registry()
        found = list(reg.get_patterns_with_prefix(item + ".")) or (
            [p] if (p := reg.get_pattern(item)) is not None else [])
        if not found:
            names = _registered_names()
            if "." in item:
                raise unknown("registered pattern", item, names,
                              extra="Give (name, pattern) tuples for your own patterns.")
            raise unknown("pattern set", item, sorted({n.split(".")[0] for n in names}),
                          extra="One registered pattern can be named in full (e.g. "
                          "'example_npu.conv2d'); give (name, pattern) tuples for your own "
                          "patterns.")
        return [_renamed(p, backend, registered=True) for p in found]
    if isinstance(item, FusionPattern):
        return [_renamed(item, backend, registered=True)]
    if isinstance(item, tuple) and 2 <= len(item) <= 4 and isinstance(item[0], str):
        name, pattern, *rest = item
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"pattern {name!r}: the second item must be a tvm.relax.dpl "
                            f"pattern (e.g. is_op('relax.nn.relu')(wildcard())), not "
                            f"{type(pattern).__name__}")
        annotations, check = {}, None
        if len(rest) == 1:
            if isinstance(rest[0], Mapping):
                annotations = dict(rest[0])
            elif callable(rest[0]):
                check = rest[0]
            else:
                raise TypeError(f"pattern {name!r}: the third item must be a check function or "
                                f"a mapping of annotation patterns, not {type(rest[0]).__name__}")
        elif len(rest) == 2:
            annotations, check = dict(rest[0] or {}), rest[1]
        return [_renamed(FusionPattern(name, pattern, annotations, check), backend,
                         registered=False)]
    raise TypeError(
        f"cannot use {item!r} as a pattern of backend {backend!r}: give (name, pattern), "
        "(name, pattern, check), a FusionPattern or the name of a registered pattern set"
    )


def _renamed(p: Any, backend: str, registered: bool) -> Any:
    """``p`` named ``<backend>.<rest>``: TVM derives the codegen from the prefix."""
    from tvm.relax.transform import FusionPattern

    name = str(p.name)
    if name.startswith(backend + "."):
        return p
    rest = name.split(".", 1)[1] if registered and "." in name else name
    return FusionPattern(f"{backend}.{rest}", p.pattern, dict(p.annotation_patterns),
                         p.check, getattr(p, "attrs_getter", None))


# ----------------------------------------------------------------------- the passes
def _with_entry_as_main(mod: Any, fn: Callable[[Any], Any]) -> Any:
    """Run ``fn`` on the entry function alone, named ``main``, and put the module back
    together after.

    ``MergeCompositeFunctions`` (TVM 0.27) only looks at a function called ``main`` and
    fails on modules with other public Relax functions; the built-in models' entry is
    ``forward``. So the other public Relax functions are set aside (and returned
    untouched), and the entry is renamed through ``global_symbol`` and
    ``NormalizeGlobalVar``, which also updates every call of it.
    """
    tvm, relax = _tvm.tvm(), _tvm.relax()
    entry = _tvm.entry_function(mod)
    aside = {gv: f for gv, f in mod.functions_items()
             if gv.name_hint != entry and isinstance(f, relax.Function)
             and f.attrs is not None and "global_symbol" in f.attrs}
    sub = mod if not aside else tvm.IRModule(
        {gv: f for gv, f in mod.functions_items() if gv not in aside},
        attrs=mod.attrs, global_infos=mod.global_infos)
    if entry != "main":
        sub = _rename(sub, {entry: "main"})
    out = fn(sub)
    if entry != "main":
        out = _rename(out, {"main": entry})
    if not aside:
        return out
    funcs = dict(out.functions_items())
    taken = {gv.name_hint for gv in funcs}
    clash = [gv.name_hint for gv in aside if gv.name_hint in taken]
    if clash:
        raise ValueError(f"partitioning made functions named like existing ones: {clash}")
    return tvm.IRModule({**funcs, **aside}, attrs=out.attrs, global_infos=out.global_infos)


def _rename(mod: Any, renames: Mapping[str, str]) -> Any:
    relax = _tvm.relax()
    tvm = _tvm.tvm()
    funcs = {}
    for gv, func in mod.functions_items():
        if gv.name_hint in renames:
            func = func.with_attr("global_symbol", renames[gv.name_hint])
        funcs[gv] = func
    new = tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)
    return relax.transform.NormalizeGlobalVar()(new)


def partition(mod: Any, backend: Backend | str, merge: bool = True) -> Any:
    """Partition ``mod`` by ``backend``'s patterns, as ``partition_for_<name>`` does.

    ``FuseOpsByPattern`` groups each match into a ``Composite`` function, then
    ``MergeCompositeFunctions`` merges neighbouring ones into ``Codegen`` functions (the
    offloaded regions). With ``merge=False`` each match becomes its own region
    (``annotate_codegen=True``). Weights stay arguments of the regions
    (``bind_constants=False``), so they show as traffic. Only the entry function is
    partitioned; modules whose entry is ``forward`` are handled (see
    :func:`_with_entry_as_main`).
    """
    b = as_backend(backend)
    relax = _tvm.relax()
    patterns = b.fusion_patterns()

    def run(m):
        m = relax.transform.FuseOpsByPattern(patterns, bind_constants=False,
                                             annotate_codegen=not merge,
                                             entry_functions=["main"])(m)
        return relax.transform.MergeCompositeFunctions()(m) if merge else m

    return _with_entry_as_main(mod, run)


def host_fallback(mod: Any, backend: Backend | str) -> Any:
    """``mod`` with ``backend``'s regions inlined back into their callers, so that TVM
    compiles them for the host like the rest of the model (a simulation of the offload).

    TVM's ``LambdaLift`` and ``InlinePrivateFunctions`` do the work, on the whole module:
    other private Relax functions are inlined too, and with a second backend applied its
    regions' composite functions would be lifted as well (one backend per build is what
    this supports).
    """
    name = as_backend(backend).name
    tvm, relax = _tvm.tvm(), _tvm.relax()
    funcs, hit = {}, False
    for gv, func in mod.functions_items():
        attrs = getattr(func, "attrs", None)
        if attrs is not None and "Codegen" in attrs and str(attrs["Codegen"]) == name:
            func = func.without_attr("Codegen").without_attr("global_symbol")
            hit = True
        funcs[gv] = func
    if not hit:
        return mod
    new = tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)
    new = relax.transform.LambdaLift()(new)  # composite closures become private functions
    new = relax.transform.InlinePrivateFunctions()(new)
    # Inlined results come out as dataflow-block outputs, which would keep FuseOps from
    # fusing across them; CanonicalizeBindings makes them dataflow variables again.
    return relax.transform.CanonicalizeBindings()(new)


def _codegen_pass(b: Backend) -> tuple[str, Callable[[Any], Any], str]:
    mode = b.codegen
    if mode == "auto":
        mode = "external" if b.codegen_registered() else "host"
    if mode == "external":
        if not b.codegen_registered():
            raise ValueError(
                f"backend {b.name!r} asks for codegen='external', but TVM has no codegen "
                f"'relax.ext.{b.name}' registered; register one, or use codegen='host' to "
                "compile the regions for the host, or preview() to stop at partitioning"
            )

        def run_codegen(mod):
            return _tvm.relax().transform.RunCodegen(
                None, [_tvm.entry_function(mod)])(mod)

        return (f"codegen_for_{b.name}", run_codegen,
                f"backend {b.name}: RunCodegen (relax.ext.{b.name})")
    if mode == "host":
        return (f"host_fallback_{b.name}", lambda mod: host_fallback(mod, b),
                f"backend {b.name}: no codegen, regions inlined back for the host")
    return "", None, ""  # "none"


# --------------------------------------------------------------------- pipeline edits
def as_backend(backend: Any) -> Backend:
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        return Backend(backend)
    raise TypeError(f"a backend is a passlab.backend.Backend or the name of a registered "
                    f"pattern set, not {type(backend).__name__}")


def _entries(b: Backend, phase: str) -> tuple[PassEntry, ...]:
    return tuple(_user_entry(p, None, f"backend {b.name}: {phase}") for p in b.phase(phase))


def _stage_index(pipe: Pipeline, name: str, phase: str) -> int:
    if name not in pipe.stage_names:
        raise ValueError(f"phase {phase!r} needs the {name!r} stage, which this pipeline "
                         f"does not have (stages: {', '.join(pipe.stage_names)})")
    return pipe.stage_names.index(name)


def _apply(pipe: Pipeline, b: Backend, offload: bool) -> tuple[Pipeline, int, int]:
    """The edited pipeline, and (stage, pass) index of its last partition-phase entry."""
    stages = list(pipe.stages)
    li = _stage_index(pipe, "legalize", "partition")
    legal = list(stages[li].passes)
    at = next((i for i, e in enumerate(legal) if e.name == "LegalizeOps" and e.origin == "tvm"), 0)
    part = PassEntry(f"partition_for_{b.name}", lambda mod: partition(mod, b), "user", True,
                     f"backend {b.name}: FuseOpsByPattern + MergeCompositeFunctions, "
                     f"{len(b.fusion_patterns())} patterns")
    block = [*_entries(b, "before_partition"), part, *_entries(b, "after_partition")]
    cut = at + len(block) - 1
    if offload:
        name, fn, note = _codegen_pass(b)
        if fn is not None:
            block.append(PassEntry(name, fn, "user", True, note))
    legal[at:at] = block
    legal += _entries(b, "after_fusion")
    stages[li] = Stage(stages[li].name, tuple(legal))
    if b.phase("before_lowering"):
        di = _stage_index(pipe, "dataflow_lower", "before_lowering")
        stages[di] = Stage(stages[di].name, _entries(b, "before_lowering") + stages[di].passes)
    if b.phase("after_memory_plan"):
        fi = _stage_index(pipe, "finalize", "after_memory_plan")
        fin = list(stages[fi].passes)
        pos = next((i for i, e in enumerate(fin) if e.name == "StaticPlanBlockMemory"), None)
        if pos is None:
            raise ValueError("phase 'after_memory_plan' needs StaticPlanBlockMemory, which "
                             "this pipeline does not run")
        fin[pos + 1:pos + 1] = _entries(b, "after_memory_plan")
        stages[fi] = Stage(stages[fi].name, tuple(fin))
    return dataclasses.replace(pipe, stages=tuple(stages)), li, cut


def apply_backend(pipeline: Pipeline, backend: Backend | str) -> Pipeline:
    """``pipeline`` with ``backend`` applied: its partitioning, codegen (or host
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
    return _apply(pipeline, as_backend(backend), offload=True)[0]


# -------------------------------------------------------------------------- preview
def preview(model: Any, backend: Backend | str, target: Any = "llvm", *,
            pipeline: Pipeline | None = None):
    """Record the pipeline from its start through partitioning and the backend's
    ``after_partition`` passes, and stop there.

    This is how a backend without a codegen is inspected: the last main-chain step,
    ``trace.top_level()[-1]``, holds the ``Codegen`` functions in its ``after`` module
    (see :func:`passlab.partitions`, which also takes the trace itself). A
    :class:`PartitionWarning` (also kept in ``trace.warnings``) names the backend's own
    patterns that matched nothing, or says that nothing matched at all.

    Returns
    -------
    Trace
        With ``trace.pipeline`` the truncated pipeline that ran.

    Raises
    ------
    BuildError
        When a pass fails; ``.trace`` keeps the steps recorded so far.

    Examples
    --------
    >>> import passlab
    >>> trace = preview(passlab.models.resnet(), "tensorrt")
    >>> trace.top_level()[-1].name
    'partition_for_tensorrt'
    """
    from .build import _error_class, _failure, _message, as_module
    from .pipeline import ROOT_NAME
    from .recorder import Recorder
    from .trace import Trace, from_events

    b = as_backend(backend)
    mod = as_module(model)
    pipe = pipeline if pipeline is not None else Pipeline.default(target)
    full, si, cut = _apply(pipe, b, offload=False)
    stages = full.stages[:si] + (Stage(full.stages[si].name, full.stages[si].passes[:cut + 1]),)
    short = dataclasses.replace(full, stages=stages)
    rec = Recorder()
    state = rec.state
    run = short.to_pass(on_error=lambda name, exc: state.user_errors.setdefault(name, exc))
    meta: dict[str, Any] = dict(target=short.target, pipeline=short, input=mod,
                                versions=_tvm.versions())
    users = [e.name for e in short.user_passes]
    try:
        with _tvm.copy_context([rec]):
            out = run(mod)
    except Exception as exc:
        trace = from_events(state.events, meta, ROOT_NAME, short.stage_names, users)
        meta["failure"] = _failure(trace, state, exc)
        trace = Trace(list(trace), meta)
        f = trace.failure
        original = f.original if f is not None and f.original is not None else exc
        raise _error_class(type(original))(_message(trace), trace, original) from exc
    found = _unmatched_message(b, out)
    if found:
        meta["warnings"] = [found]
        warnings.warn(found, PartitionWarning, stacklevel=2)
    return from_events(state.events, meta, ROOT_NAME, short.stage_names, users)


def composite_names(mod: Any) -> list[str]:
    """Names of every ``Composite`` function in ``mod``, top-level or inside a region."""
    relax = _tvm.relax()
    found: list[str] = []

    def visit(func: Any) -> None:
        attrs = getattr(func, "attrs", None)
        if attrs is not None and "Composite" in attrs:
            found.append(str(attrs["Composite"]))
        for block in getattr(getattr(func, "body", None), "blocks", ()):
            for binding in block.bindings:
                if isinstance(binding.value, relax.Function):
                    visit(binding.value)

    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            visit(func)
    return found


def _unmatched_message(b: Backend, mod: Any) -> str:
    used = set(composite_names(mod))
    names = b.pattern_names
    if not any(n in used for n in names):
        return (f"backend {b.name!r}: none of its {len(names)} patterns matched "
                f"({', '.join(names[:10])}{', ...' if len(names) > 10 else ''}); nothing is "
                "offloaded. Check the op names (e.g. 'relax.nn.conv2d') and that the model "
                "has those ops before LegalizeOps.")
    own = [p for p in _own_pattern_names(b) if p not in used]
    if own:
        return (f"backend {b.name!r}: {len(own)} of its patterns matched nothing: "
                f"{', '.join(own)}")
    return ""


def _own_pattern_names(b: Backend) -> list[str]:
    """Names of the patterns declared as tuples (registered sets are broad on purpose,
    so their unmatched patterns are not worth a warning)."""
    out: list[str] = []
    for item in b.patterns:
        if isinstance(item, tuple):
            out.extend(p.name for p in _resolve(item, b.name))
    return out

