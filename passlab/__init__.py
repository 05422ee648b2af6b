"""passlab: record, edit and explore Apache TVM's pass pipeline.

>>> import passlab
>>> pipe = passlab.Pipeline.default("llvm").insert(lambda mod: mod, after="legalize")
>>> build = passlab.build(passlab.models.mlp(), pipe)
>>> build.trace.find("FuseOps").changed
True

The import is cheap: TVM, pandas and Jupyter are imported where they are used. This
module is the top of the import graph: it hands the public names on, and it wires the
few conveniences by which lower layers reach higher ones (`Trace.save` into
`passlab.io`, `Trace.write_report` into `passlab.views.report`,
`Pipeline.with_backend` into `passlab.backend`) without importing them.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from passlab import models
from passlab import pipeline as _pipeline
from passlab.errors import BuildError, UnknownNameError

# Imported eagerly (it is cheap: no TVM) so that ``passlab.reproducer`` is the function.
from passlab.io.reproducer import reproducer
from passlab.pipeline import Pipeline
from passlab.recording import trace as _trace
from passlab.recording.build import Build, Recording, build, max_abs_diff, record
from passlab.recording.trace import Step, Trace

try:
    __version__ = version("passlab")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "Build", "BuildError", "Pipeline", "Step", "Trace", "UnknownNameError",
    "Recording", "build", "record", "max_abs_diff", "models", "diff", "fused_graph",
    "buffers", "pass_table", "Explorer", "bisect", "compare", "blame", "rerun", "load",
    "Backend", "partitions", "load_trace", "reproducer", "checks", "to_model_explorer", "provenance", "sweep",
    "explain", "targets", "attribute", "Profile", "Attribution",
]

if TYPE_CHECKING:  # the lazily imported public names, typed for checkers and editors
    # from the defining modules, as _LAZY imports them (`passlab.analysis.diff` is also a
    # module's name: the API reference would document the module)
    from passlab.analysis.buffers import buffers
    from passlab.analysis.diff import diff
    from passlab.analysis.explain import explain
    from passlab.analysis.graph import fused_graph
    from passlab.analysis.partitions import partitions
    from passlab.analysis.provenance import provenance
    from passlab.analysis.table import pass_table
    from passlab.backend import Backend
    from passlab.io.archive import load_trace
    from passlab.models.importers import load
    from passlab.recording import checks
    from passlab.recording.codegen import targets
    from passlab.research import predicates as predicates
    from passlab.research.attribute import Attribution, attribute
    from passlab.research.bisect import bisect
    from passlab.research.blame import blame
    from passlab.research.compare import compare
    from passlab.research.profile import Profile
    from passlab.research.rerun import rerun
    from passlab.research.sweep import sweep
    from passlab.views.explorer import Explorer
    from passlab.views.model_explorer import to_model_explorer

# Analyses and views live higher up; import them on first use so `import passlab` stays cheap.
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
    "sweep": ("passlab.research.sweep", "sweep"),
    "predicates": ("passlab.research", "predicates"),
    "load": ("passlab.models.importers", "load"),
    "Backend": ("passlab.backend", "Backend"),
    "partitions": ("passlab.analysis.partitions", "partitions"),
    "to_model_explorer": ("passlab.views.model_explorer", "to_model_explorer"),
    "provenance": ("passlab.analysis.provenance", "provenance"),
    "load_trace": ("passlab.io.archive", "load_trace"),
    "checks": ("passlab.recording.checks", None),  # the module: passlab.checks.well_formed() ...
    "explain": ("passlab.analysis.explain", "explain"),
    "targets": ("passlab.recording.codegen", "targets"),
    "Profile": ("passlab.research.profile", "Profile"),
    "attribute": ("passlab.research.attribute", "attribute"),
    "Attribution": ("passlab.research.attribute", "Attribution"),
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


# ------------------------------------------------------------------ conveniences
# Methods of lower layers that are served by higher ones; each imports its layer on use.
def _save(trace: Trace, path: Any, **kwargs: Any) -> Any:
    from passlab.io.archive import save_trace

    return save_trace(trace, path, **kwargs)


def _dump(trace: Trace, folder: Any, **kwargs: Any) -> Any:
    from passlab.io.dump import export_dump

    return export_dump(trace, folder, **kwargs)


def _report(trace: Trace, path: Any, **kwargs: Any) -> Any:
    from passlab.views.report import write_report

    return write_report(trace, path, **kwargs)


def _with_backend(pipe: Pipeline, backend: Any) -> Pipeline:
    from passlab.backend import apply_backend

    return apply_backend(pipe, backend)


def _explain_step(step: Step) -> Any:
    from passlab.analysis._explain_steps import explain_step

    owner = step.owner
    return explain_step(step, None if owner is None else owner.pipeline)


def _card_summary(name: str) -> str:
    from passlab.analysis.explain import card_summary

    return card_summary(name)


def _positions(trace: Trace) -> dict[int, int]:
    from passlab.recording.numbering import positions

    return positions(trace)


def _name_of(step: Step, trace: Trace) -> str:
    from passlab.recording.numbering import name_of

    return name_of(step, trace)


def _profile(build: Build, *inputs: Any, **kwargs: Any) -> Any:
    from passlab.research.profile import profile

    return profile(build, *inputs, **kwargs)


_trace._UPPER.update(save=_save, dump=_dump, reproducer=reproducer, report=_report)
_trace._UPPER.update(explain=_explain_step, card_summary=_card_summary)
_trace._UPPER.update(profile=_profile)
_trace._UPPER.update(positions=_positions, name_of=_name_of)
_pipeline._UPPER.update(with_backend=_with_backend)
