"""Analyses over recorded snapshots: plain data in, plain data out, no Jupyter.

Each works on a :class:`~passlab.Step` (its module after the pass) or an IRModule:
``diff`` (per-function IR diffs), ``fused_graph`` (operators, kernels and the tensors
between them) and ``buffers`` (intermediate tensors, liveness peak, the memory plan).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["diff", "fused_graph", "buffers", "pass_table"]

_WHERE = {"diff": ".diff", "fused_graph": ".graph", "buffers": ".buffers",
          "pass_table": ".table"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module 'passlab.analysis' has no attribute {name!r}")
