"""Snapshots for the analysis tests: TVM's CPU Relax pipeline applied pass by pass, by
hand, so that the analyses are tested on IRModules independently of the recorder."""

from __future__ import annotations

import functools

import tvm
from tvm.relax.backend.cpu_generic import pipeline as cpu

from passlab import models

MODELS = {"mlp": models.mlp, "resnet": models.resnet, "transformer": models.transformer,
          "tf12": lambda: models.transformer(layers=12),
          "dyn": lambda: models.transformer(seq_len="n"), "mobilenet": models.mobilenet}


@functools.cache
def snapshots(model: str) -> dict[str, tvm.IRModule]:
    """The module after each pass of the CPU Relax pipeline (and "input")."""
    mod = MODELS[model]()
    target = tvm.target.Target("llvm")
    out = {"input": mod}
    with target:
        for p in (cpu.library_dispatch_passes(target) + cpu.legalize_passes(target)
                  + cpu.dataflow_lower_passes(target) + cpu.finalize_passes(target)):
            mod = p(mod)
            out[p.info.name] = mod
    return out
