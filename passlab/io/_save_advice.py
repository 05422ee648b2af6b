"""What to do when `trace.save` refuses a trace: advice that holds for this trace.

A refusal names the load limit the file would break; the advice says what would save
instead, and only what would: `weights=False` when the tensor data is what makes
`ir.json` too large and the file fits without it, and the longest first part of the
steps, `trace[0:b]`, that fits every limit (or that none does). Both are computed
from the graph about to be written, so a user who follows the advice saves a file.

How a prefix is sized: `save_json` writes every node after the nodes it refers to,
module by module in the order the trace first meets them (the steps' `before` and
`after`, in step order), so the file of `trace[0:b]` holds at most the nodes up to
its last module's node, and stores them in the same stored form
(`stored_graph` merges a node only into an earlier one).
The sums over that part of the graph bound the slice's `ir.json` from above.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from passlab.io import validate as _limits

__all__ = ["advice", "failing_node"]

_NODE = re.compile(r"^ir\.json node (\d+) ")


def failing_node(why: str) -> int | None:
    """The node a graph check refused (its messages begin "ir.json node N (...)")."""
    m = _NODE.match(why)
    return int(m.group(1)) if m else None


def _module_ids(record: dict[str, Any]) -> list[int]:
    return [m for m in (record.get("before"), record.get("after")) if type(m) is int]


def advice(graph: dict[str, Any], data: dict[str, Any], ir_bytes: int, meta: bytes,
           weights: bool, node: int | None = None) -> str:
    """The advice for a refused save of the trace whose `trace.json` is `meta`
    (`data` parsed) and whose stored `ir.json` graph is `graph` (`ir_bytes`
    long); `node` is the node a graph check refused, if one did."""
    nodes = graph["nodes"]
    out = []
    if weights and ir_bytes > _limits.MAX_IR_JSON_BYTES:
        data_text = sum(len(n["data"]) - 60 for n in nodes if n.get("type") == "ffi.Tensor")
        if ir_bytes - data_text <= _limits.MAX_IR_JSON_BYTES:
            out.append(f"trace.save(path, weights=False) leaves out the tensor data "
                       f"({data_text / 2**20:,.1f} MiB of text) and fits")
    steps = data["steps"]
    b = _longest_prefix(graph, data, meta, node)
    if b == len(steps):
        pass  # every prefix fits: the trace breaks no count (a per-function limit)
    elif b > 0:
        out.append(f"trace[0:{b}] (its first {b:,} of {len(steps):,} steps) fits")
    elif not out:
        out.append("No part of it fits: its first step alone breaks the limit")
    return "; ".join(out)


def _tokens(text: str) -> int:
    """JSON values as the loader counts them (see `archive._count_values`)."""
    return text.count(",") + text.count("[") + text.count("{")


def _longest_prefix(graph: dict[str, Any], data: dict[str, Any], meta: bytes,
                    node: int | None) -> int:
    """The largest `b` such that the file of `trace[0:b]` stays within the count
    limits (nodes, JSON values and bytes of both members, steps) and holds no node from
    `node` on."""
    nodes = graph["nodes"]
    # the last node of modules 0..k, for each k (the root array lists them in order)
    ends = list(accumulate(nodes[graph["root_index"]]["data"], max))
    steps = data["steps"]
    # what every prefix holds anyway: the input module and a failure's own step record
    top = data["input"] if type(data.get("input")) is int else -1
    failure = data.get("failure") or {}
    if isinstance(failure.get("step_record"), dict):
        top = max([top, *_module_ids(failure["step_record"])])
    texts = [json.dumps(n, separators=(",", ":")) for n in nodes]
    values = list(accumulate(map(_tokens, texts)))
    sizes = list(accumulate(len(t) + 1 for t in texts))
    records = [json.dumps(r, indent=1) for r in steps]
    record_bytes = list(accumulate(len(r) + 2 for r in records))
    record_values = list(accumulate(_tokens(r) + 1 for r in records))
    # the rest of trace.json, less the generated code (its step's part holds it)
    code = json.dumps(data.get("code"), indent=1)
    code_step = (data.get("code") or {}).get("step")
    fixed_bytes = len(meta) - (record_bytes[-1] if records else 0) - len(code)
    fixed_values = (_tokens(meta.decode("utf-8", "replace")) - _tokens(code)
                    - (record_values[-1] if records else 0))
    fits = 0
    for b, record in enumerate(steps[:_limits.MAX_STEPS], 1):
        top = max([top, *_module_ids(record)])
        if record.get("index") == code_step:
            fixed_bytes, fixed_values = fixed_bytes + len(code), fixed_values + _tokens(code)
        if top < 0:
            fits = b
            continue
        last = ends[top]  # nodes 0..last: every node of the prefix's modules
        if ((node is not None and last >= node)
                or last + 2 > _limits.MAX_IR_NODES
                or values[last] + last + top + 8 > _limits.MAX_IR_JSON_VALUES
                or sizes[last] + 12 * (top + 1) + 64 > _limits.MAX_IR_JSON_BYTES
                or fixed_bytes + record_bytes[b - 1] > _limits.MAX_TRACE_JSON_BYTES
                or fixed_values + record_values[b - 1] > _limits.MAX_TRACE_JSON_VALUES):
            break
        fits = b
    return fits
