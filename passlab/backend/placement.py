"""Where a `Backend` goes in a `Pipeline`: the
`partition_for_<name>` entry at the start of `legalize`, the codegen (or host
fallback) entry after it, and the phase passes at their positions (the table in
`passlab.backend`). Used by `passlab.backend.apply_backend` and
`passlab.backend.preview`.

Takes an already resolved backend, so this module never imports `passlab.backend`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from passlab import _tvm
from passlab.backend.passes import inline_regions, partition_module
from passlab.pipeline import PassEntry, Pipeline, Stage, _user_entry


def _codegen_pass(b: Any) -> tuple[str, Callable[[Any], Any] | None, str]:
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
        return (f"host_fallback_{b.name}", lambda mod: inline_regions(mod, b.name),
                f"backend {b.name}: no codegen, regions inlined back for the host")
    return "", None, ""  # "none"


def _entries(b: Any, phase: str) -> tuple[PassEntry, ...]:
    return tuple(_user_entry(p, None, f"backend {b.name}: {phase}") for p in b.phase(phase))


def _stage_index(pipe: Pipeline, name: str, phase: str) -> int:
    if name not in pipe.stage_names:
        raise ValueError(f"phase {phase!r} needs the {name!r} stage, which this pipeline "
                         f"does not have (stages: {', '.join(pipe.stage_names)})")
    return pipe.stage_names.index(name)


def insert_entries(pipe: Pipeline, b: Any, offload: bool) -> tuple[Pipeline, int, int]:
    """The edited pipeline, and (stage, pass) index of its last partition-phase entry."""
    stages = list(pipe.stages)
    li = _stage_index(pipe, "legalize", "partition")
    legal = list(stages[li].passes)
    at = next((i for i, e in enumerate(legal) if e.name == "LegalizeOps" and e.origin == "tvm"), 0)
    part = PassEntry(f"partition_for_{b.name}",
                     lambda mod: partition_module(mod, b.fusion_patterns()), "user", True,
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
    out = dataclasses.replace(pipe, stages=tuple(stages))
    return _tir_entries(out, b), li, cut


def _tir_entries(pipe: Pipeline, b: Any) -> Pipeline:
    """The TIR phases: `tir_before_lowering` at the start of `s_tir`,
    `tir_after_lowering` before `tirx.SplitHostDevice`, `codegen` emitters named
    after the backend (`build.source(b.name)`)."""
    tir = {s.name: list(s.passes) for s in pipe.tir_stages}
    for phase, stage in (("tir_before_lowering", "s_tir"), ("tir_after_lowering", "tirx"),
                         ("codegen", "codegen")):
        if b.phase(phase) and stage not in tir:
            raise ValueError(f"phase {phase!r} needs the TIR stage {stage!r}, which this "
                             f"pipeline does not have (TIR stages: "
                             f"{', '.join(tir) or 'none'})")
    if b.phase("tir_before_lowering"):
        tir["s_tir"][0:0] = _entries(b, "tir_before_lowering")
    if b.phase("tir_after_lowering"):
        lowered = tir["tirx"]
        pos = next((i for i, e in enumerate(lowered) if e.name == "tirx.SplitHostDevice"),
                   len(lowered))
        lowered[pos:pos] = _entries(b, "tir_after_lowering")
    emitters = b.phase("codegen")
    for i, fn in enumerate(emitters):
        name = b.name if len(emitters) == 1 else f"{b.name}.{i}"
        tir["codegen"].append(_user_entry(fn, name, f"backend {b.name}: codegen"))
    if not any(b.phase(p) for p in ("tir_before_lowering", "tir_after_lowering", "codegen")):
        return pipe
    return dataclasses.replace(pipe, tir_stages=tuple(
        Stage(s.name, tuple(tir[s.name])) for s in pipe.tir_stages))
