"""Tensor constants in a saved trace: each stored once by content, or left out.

`tvm.ir.save_json` writes an object once per identity, but FoldConstant makes new tensor
objects with the content of the ones it folded (and a module's weights appear again in
every snapshot that rebuilt them): a model's weights are then stored about twice.
`stored_graph` rewrites the JSON graph so that every tensor content is one node
(references to a copy point at the first one, the copies are removed and the indices
closed up), and with `weights=False` replaces each tensor by an empty one of the same
data type (its shape stays in the constant's type): views, diffs and reports read only
the type, and a reproducer draws seeded random values for it.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from passlab.io.validate import references

__all__ = ["stored_graph", "EMPTY_SHAPE"]

_HEAD = struct.Struct("<QQiiiBBH")
#: The shape of a tensor whose data was left out (``weights=False``).
EMPTY_SHAPE = (0,)


def _placeholder(data: str) -> str:
    """An empty tensor (shape `(0,)`) of the data type of the saved tensor `data`."""
    head = base64.b64decode(data[:64])[:_HEAD.size]
    magic, reserved, dev, dev_id, _, code, bits, lanes = _HEAD.unpack(head)
    blob = _HEAD.pack(magic, reserved, dev, dev_id, 1, code, bits, lanes) + \
        struct.pack("<qq", 0, 0)
    return base64.b64encode(blob).decode()


def stored_graph(graph: dict[str, Any], weights: bool) -> tuple[dict[str, Any], dict[str, int]]:
    """A parsed `save_json` graph with every tensor content stored once (and, without
    `weights`, every tensor empty), rewritten in place, and counts: tensors, distinct,
    bytes dropped. `save_trace` checks this graph rather than parsing what it writes."""
    nodes = graph["nodes"]
    first: dict[str, int] = {}
    alias: dict[int, int] = {}
    dropped = 0
    tensors = 0
    for i, node in enumerate(nodes):
        if node.get("type") != "ffi.Tensor":
            continue
        tensors += 1
        if not weights:
            data = node["data"]
            blob = len(data) * 3 // 4 - data[-2:].count("=")
            ndim = _HEAD.unpack(base64.b64decode(data[:64])[:_HEAD.size])[4]
            dropped += blob - _HEAD.size - 8 * ndim - 8  # the data, not the header
            node["data"] = _placeholder(data)
        j = first.setdefault(node["data"], i)
        if j != i:
            alias[i] = j
    stats = dict(tensors=tensors, stored=len(first), dropped_bytes=dropped)
    if not alias:
        return graph, stats
    # new index of each kept node; a copy's references go to its first occurrence (always
    # earlier, so every reference still points backwards)
    new, removed = [0] * len(nodes), 0
    for i in range(len(nodes)):
        if i in alias:
            removed += 1
        else:
            new[i] = i - removed
    for i in alias:
        new[i] = new[alias[i]]
    kept = []
    for i, node in enumerate(nodes):
        if i in alias:
            continue
        for box, key in references(node):
            box[key] = new[box[key]]
        kept.append(node)
    graph["nodes"] = kept
    graph["root_index"] = new[graph["root_index"]]
    return graph, stats
