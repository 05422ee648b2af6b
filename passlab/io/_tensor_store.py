"""The IR graph of a saved trace in its stored form: every tensor content and every
repeated value stored once, or tensors left out.

`tvm.ir.save_json` writes an object once per identity, but passes make new objects with
the content of old ones: FoldConstant's tensors (a model's weights appear again in every
snapshot that rebuilt them), and above all the TIR passes, which rebuild each kernel's
loops, indices, types and argument checks as new objects equal to the old ones.
DenseNet-121's whole build wrote 965,000 nodes, 57% of them copies of an earlier node
(its `ir.IntImm`, `ffi.Array`, `ir.StringType`, `ir.Range`, `tirx.For`...).
`stored_graph` rewrites the JSON graph so that each such content is one node, as
hash-consing does: a node whose type and data (its children already merged) equal an
earlier node's becomes a reference to that node (then 417,500 nodes and 3.15 of 6.4
million JSON values; loading takes 5 s instead of 14-22 s and half the memory). What has
an identity of its own is never merged (`_shared`): variables (TIR variables and
buffers, Relax variables, global functions), loop iterators, modules, Relax expressions
(Relax passes key their analyses by expression: two allocations of one shape stay two),
Relax constants (the printer numbers them by identity, `metadata["ir.GenericConst"][k]`,
and a reproducer gives each its own values) and strings the printer cannot write inline
(also numbered by identity). Every loaded module is structurally equal to the saved one and
prints the same text.

With `weights=False` each tensor is replaced by an empty one of the same data type (its
shape stays in the constant's type): views, diffs and reports read only the type, and a
reproducer draws seeded random values for it.
"""

from __future__ import annotations

import base64
import re
import struct
from typing import Any

from passlab.io import validate as _validate

__all__ = ["stored_graph", "EMPTY_SHAPE"]

_HEAD = struct.Struct("<QQiiiBBH")
#: The shape of a tensor whose data was left out (``weights=False``).
EMPTY_SHAPE = (0,)
_CONTAINERS = frozenset({"ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict"})
#: Object types never merged with an equal one: their identity is part of their meaning
#: (any type whose key ends in "Var" is one too: TIR variables and buffers, Relax
#: variables, global functions; and every Relax expression, `relax.expr.*` and the Relax
#: calls of `ir.Call`: Relax passes key their analyses by expression, so two allocations
#: of one shape must stay two objects).
_IDENTITY = frozenset({"ir.IRModule", "tirx.IterVar", "ir.GenericConst", "ir.Tuple",
                       "ir.TupleGetItem"})
#: The operators of TIR calls (`ir.Call` is also Relax's call): only those are merged.
_TIR_OPS = ("tirx.", "prim.", "tir.")
#: Strings TVM's printer writes inline (printable ASCII without quotes or backslashes);
#: it moves the others into ``metadata``, numbered by object identity.
_INLINE = re.compile(r"[ !#-\[\]-~]*").fullmatch


def _placeholder(data: str) -> str:
    """An empty tensor (shape `(0,)`) of the data type of the saved tensor `data`."""
    head = base64.b64decode(data[:64])[:_HEAD.size]
    magic, reserved, dev, dev_id, _, code, bits, lanes = _HEAD.unpack(head)
    blob = _HEAD.pack(magic, reserved, dev, dev_id, 1, code, bits, lanes) + \
        struct.pack("<qq", 0, 0)
    return base64.b64encode(blob).decode()


def _plan(key: str, data: Any) -> tuple[str, ...] | str:
    """How a node of type `key` refers to others: "list" (a container: its data is node
    indices), "plain" (no references) or its reference fields."""
    if key in _CONTAINERS:
        return "list"
    if key in _validate._PLAIN or not isinstance(data, dict):
        return "plain"
    return _validate.reference_fields(key)


def _shared(key: str) -> bool:
    return key not in _IDENTITY and not key.endswith("Var") and not key.startswith("relax.expr.")


def stored_graph(graph: dict[str, Any], weights: bool) -> tuple[dict[str, Any], dict[str, int]]:
    """A parsed `save_json` graph in its stored form (see the module docstring), rewritten
    in place, and counts: `tensors`, `stored` (distinct tensors), `dropped_bytes`
    (tensor data left out), `nodes` (as TVM wrote them) and `merged` (copies stored
    as a reference to the first). `save_trace` checks this graph rather than parsing
    what it writes."""
    nodes = graph["nodes"]
    new = [0] * len(nodes)  # old index -> new index
    kept: list[dict[str, Any]] = []
    first: dict[Any, int] = {}  # (type, data) -> new index of the first such node
    plans: dict[str, tuple[str, ...] | str] = {}
    tensors = stored = dropped = 0
    for i, node in enumerate(nodes):
        key, data = node["type"], node.get("data")
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = _plan(key, data)
        if plan == "list":
            data = node["data"] = [new[j] for j in data]
            content: Any = tuple(data)
        elif plan == "plain":
            if key == "ffi.Tensor":
                tensors += 1
                if not weights:
                    blob = len(data) * 3 // 4 - data[-2:].count("=")
                    ndim = _HEAD.unpack(base64.b64decode(data[:64])[:_HEAD.size])[4]
                    dropped += blob - _HEAD.size - 8 * ndim - 8  # the data, not the header
                    data = node["data"] = _placeholder(data)
            content = tuple(data) if isinstance(data, list) else data
        else:
            for name in plan:
                if name in data:
                    data[name] = new[data[name]]
            content = tuple(data.items())
            if key == "ir.StringImm" and not _INLINE(str(kept[data["value"]].get("data"))):
                content = None
            elif key == "ir.Call":  # a TIR call (of a tirx./prim. operator), not Relax's
                op = kept[data["op"]] if isinstance(data.get("op"), int) else {}
                if op.get("type") != "ir.Op" or not str(op.get("data")).startswith(_TIR_OPS):
                    content = None
        at = len(kept)
        if content is not None and _shared(key):
            try:
                at = first.setdefault((key, content), at)
            except TypeError:  # a list inside an object's data: stored as it is
                pass
        if at == len(kept):
            kept.append(node)
            stored += key == "ffi.Tensor"
        new[i] = at
    graph["nodes"] = kept
    graph["root_index"] = new[graph["root_index"]]
    stats = dict(tensors=tensors, stored=stored, dropped_bytes=dropped, nodes=len(nodes),
                 merged=len(nodes) - len(kept))
    return graph, stats
