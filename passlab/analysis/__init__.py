"""Analyses over recorded snapshots: plain data in, plain data out, no Jupyter.

Every analysis and the type of its result, in one namespace:

* `diff` -> `ModuleDiff` of `FunctionDiff` (per-function IR diffs);
* `fused_graph` -> `FusedGraph` of `Node`, `Edge`,
  `Cluster` (operators, kernels and the tensors between them); `kernel_flops`
  (TVM's FLOP estimate of each kernel of a graph) and `kernel_times` (each kernel's
  time per run in a `Profile`);
* `buffers` -> `BufferReport` of `Tensor` and `Allocation`
  (intermediate tensors, liveness peak, the memory plan);
* `pass_table` -> `PassTable` (one row per pass, with IR lines and peak);
* `partitions` -> `PartitionReport` of `Region`, `OpCall`,
  `Crossing`, `Coverage`; `compare_backends` ->
  `BackendComparison`;
* `provenance` -> `Provenance` of `OpOrigin` (where each operator
  call of the input ended up);
* `explain` -> `Card` (what a pass does, in general: no build needed;
  `cards`: every card by pass name);
  `explain_step` -> `Explanation` (what one recorded step did, with its
  pass's card as `.card`; what `passlab.Step.explain` returns);
* LLVM's own passes (a trace recorded with `llvm_passes=True`): `llvm_diff` ->
  `ModuleDiff` (LLVM IR diffs of an LLVM step), `llvm_table` -> `LlvmTable` (instructions,
  basic blocks, vector instructions per function and pass), `vectorization` ->
  `Vectorization` of `KernelVectorization` (what the loop and SLP vectorizers did to
  each kernel).

Each takes a `Step` (its module after the pass) or an IRModule, except
`pass_table` and `provenance` (a trace), `explain` (a pass name or pass) and
`compare_backends` (a model and backends). The functions are imported here, so
`passlab.analysis.diff` is always the function; the module it lives in is
`passlab.analysis.diff` in `sys.modules` (`from passlab.analysis.diff import ...`).
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
from passlab.analysis.llvm import (
    KernelVectorization,
    LlvmTable,
    Vectorization,
    llvm_diff,
    llvm_table,
    vectorization,
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
    "llvm_diff", "llvm_table", "LlvmTable", "vectorization", "Vectorization",
    "KernelVectorization",
]
