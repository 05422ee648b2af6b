"""passlab: record, edit and explore Apache TVM's pass pipeline.

>>> import passlab
>>> pipe = passlab.Pipeline.default("llvm").insert(lambda mod: mod, after="legalize")
>>> build = passlab.build(passlab.models.mlp(), pipe)
>>> build.trace.find("FuseOps").changed
True

The import is cheap: TVM, pandas and Jupyter are imported where they are used.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from . import models
from ._names import UnknownNameError
from .build import Build, BuildError, Recording, build, max_abs_diff, record
from .pipeline import Pipeline
# Imported eagerly (it is cheap: no TVM) so that the name is the function for good: a later
# `import passlab.reproducer` would otherwise rebind passlab.reproducer to the module.
from .reproducer import reproducer
from .trace import Step, Trace

try:
    __version__ = version("passlab")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "Build", "BuildError", "Pipeline", "Step", "Trace", "UnknownNameError",
    "Recording", "build", "record", "max_abs_diff", "models", "diff", "fused_graph", "buffers", "pass_table", "Explorer",
    "bisect", "compare", "blame", "rerun", "load", "Backend", "partitions",
    "load_trace", "reproducer", "checks",
]

# Analyses live one layer up; import them on first use so `import passlab` stays cheap.
_LAZY = {
    "diff": ("passlab.analysis.diff", "diff"),
    "fused_graph": ("passlab.analysis.graph", "fused_graph"),
    "buffers": ("passlab.analysis.buffers", "buffers"),
    "pass_table": ("passlab.analysis.table", "pass_table"),
    "Explorer": ("passlab.views.explorer", "Explorer"),
    "bisect": ("passlab.research.bisect", "bisect"),
    "compare": ("passlab.research.compare", "compare"),
    "blame": ("passlab.research.blame", "blame"),
    "rerun": ("passlab.research.rerun", "rerun"),
    "predicates": ("passlab.research", "predicates"),
    "load": ("passlab.importers", "load"),
    "Backend": ("passlab.backend", "Backend"),
    "partitions": ("passlab.analysis.partitions", "partitions"),
    "load_trace": ("passlab.io", "load_trace"),
    "checks": ("passlab.checks", None),  # the module: passlab.checks.well_formed() ...
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = import_module(module) if attr is None else getattr(import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'passlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
