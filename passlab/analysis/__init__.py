"""Analyses over recorded snapshots: plain data in, plain data out, no Jupyter.

Every analysis and the type of its result, in one namespace:

* :func:`diff` -> :class:`ModuleDiff` of :class:`FunctionDiff` (per-function IR diffs);
* :func:`fused_graph` -> :class:`FusedGraph` of :class:`Node`, :class:`Edge`,
  :class:`Cluster` (operators, kernels and the tensors between them); :func:`kernel_flops`
  (TVM's FLOP estimate of each kernel of a graph) and :func:`kernel_times` (each kernel's
  time per run in a :class:`~passlab.research.profile.Profile`);
* :func:`buffers` -> :class:`BufferReport` of :class:`Tensor` and :class:`Allocation`
  (intermediate tensors, liveness peak, the memory plan);
* :func:`pass_table` -> :class:`PassTable` (one row per pass, with IR lines and peak);
* :func:`partitions` -> :class:`PartitionReport` of :class:`Region`, :class:`OpCall`,
  :class:`Crossing`, :class:`Coverage`; :func:`compare_backends` ->
  :class:`BackendComparison`;
* :func:`provenance` -> :class:`Provenance` of :class:`OpOrigin` (where each operator
  call of the input ended up);
* :func:`explain` -> :class:`Card` (what a pass does, in general: no build needed;
  :func:`cards`: every card by pass name);
  :func:`explain_step` -> :class:`Explanation` (what one recorded step did, with its
  pass's card as ``.card``; what :meth:`passlab.Step.explain` returns).

Each takes a :class:`~passlab.Step` (its module after the pass) or an IRModule, except
``pass_table`` and ``provenance`` (a trace), ``explain`` (a pass name or pass) and
``compare_backends`` (a model and backends). The functions are imported here, so
``passlab.analysis.diff`` is always the function; the module it lives in is
``passlab.analysis.diff`` in ``sys.modules`` (``from passlab.analysis.diff import ...``).
"""

from __future__ import annotations

from passlab.analysis._explain_steps import Explanation, explain_step
from passlab.analysis.buffers import Allocation, BufferReport, Tensor, buffers
from passlab.analysis.diff import FunctionDiff, ModuleDiff, diff
from passlab.analysis.explain import Card, cards, explain
from passlab.analysis.graph import (
    Cluster,
    Edge,
    FusedGraph,
    Node,
    fused_graph,
    graph_changes,
    kernel_flops,
    kernel_times,
    marked_against,
)
from passlab.analysis.partitions import (
    BackendComparison,
    Coverage,
    Crossing,
    OpCall,
    PartitionReport,
    Region,
    compare_backends,
    partitions,
)
from passlab.analysis.provenance import OpOrigin, Provenance, provenance
from passlab.analysis.table import PassTable, pass_table

__all__ = [
    "diff", "ModuleDiff", "FunctionDiff",
    "fused_graph", "FusedGraph", "Node", "Edge", "Cluster", "kernel_flops", "kernel_times",
    "graph_changes", "marked_against",
    "buffers", "BufferReport", "Tensor", "Allocation",
    "pass_table", "PassTable",
    "partitions", "PartitionReport", "Region", "OpCall", "Crossing", "Coverage",
    "compare_backends", "BackendComparison",
    "provenance", "Provenance", "OpOrigin",
    "explain", "cards", "Card", "explain_step", "Explanation",
]
