"""A `FusedGraph` in Google Model Explorer's JSON graph
format (the `graph_builder` types of the `ai-edge-model-explorer` package).

One graph per Relax function (its `id`); a node's `namespace` is the backend region
(`Codegen` cluster) a call sits in, or the source groups (`FusedGraph.groups`: the
model's node paths, `layer1/layer1.0`) holding it, so that Model Explorer draws
collapsible layers: a ResNet opens as its stages, each one closed box. A node in none is
at the graph's root (`""`); the function is the graph, not a layer around it.
Output metadata carries each tensor's name, shape, dtype and bytes; `attrs` carry the
kind, the ops inside a fused kernel, TVM's pattern kind and folded parameters.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_model_explorer", "node_data"]


def _kv(key: str, value: Any) -> dict[str, str]:
    return {"key": key, "value": str(value)}


def _namespaces(g: Any) -> dict[str, str]:
    """Cluster id -> "region/subregion" path."""
    by_id = {c.id: c for c in g.clusters}
    out: dict[str, str] = {}

    def path(cid: str) -> str:
        if cid not in out:
            c = by_id[cid]
            label = c.label.replace("/", "_")
            out[cid] = f"{path(c.parent)}/{label}" if c.parent in by_id else label
        return out[cid]

    for cid in by_id:
        path(cid)
    return out


def _group_spaces(g: Any) -> dict[str, str]:
    """Node id -> "layer1/layer1.0": the source groups (`g.groups`, outermost
    first) holding it, so that Model Explorer collapses a block into one layer."""
    by_id = {grp.id: grp for grp in getattr(g, "groups", ())}
    out: dict[str, str] = {}
    for grp in by_id.values():  # a later (deeper) group overrides its parent
        chain = [grp]
        while chain[-1].parent in by_id:
            chain.append(by_id[chain[-1].parent])
        path = "/".join(c.label.replace("/", "_") for c in reversed(chain))
        for nid in grp.nodes:
            if nid not in out or out[nid].count("/") < path.count("/"):
                out[nid] = path
    return out


def to_model_explorer(g: Any, graph_id: str | None = None) -> dict[str, Any]:
    """`g` as one Model Explorer `Graph` (a JSON-ready dict)."""
    spaces = _namespaces(g)
    groups = _group_spaces(g)
    outputs: dict[str, list[Any]] = {}  # node id -> its distinct output tensors, in order
    for e in g.edges:
        tensors = outputs.setdefault(e.src, [])
        if all(t.tensor != e.tensor for t in tensors):
            tensors.append(e)
    incoming: dict[str, list[Any]] = {}
    for e in g.edges:
        incoming.setdefault(e.dst, []).append(e)
    nodes = []
    for n in g.nodes:
        attrs = [_kv("kind", n.kind)]
        if n.ops and n.ops != (n.label,):
            attrs.append(_kv("ops", " + ".join(n.ops)))
        if n.pattern is not None:
            attrs.append(_kv("pattern", n.pattern_name))
        if n.binding is not None:
            attrs.append(_kv("binding", n.binding))
        if n.count != 1:
            attrs.append(_kv("repeats", n.count))
        if n.params:
            attrs.append(_kv("params", ", ".join(n.params)))
            if n.param_bytes is not None:
                attrs.append(_kv("param_bytes", n.param_bytes))
        ins = incoming.get(n.id, [])
        edges = []
        for i, e in enumerate(ins):
            produced = [t.tensor for t in outputs.get(e.src, [])]
            edges.append({"sourceNodeId": e.src,
                          "sourceNodeOutputId": str(produced.index(e.tensor)),
                          "targetNodeInputId": str(i)})
        meta = [{"id": str(k), "attrs": [
            _kv("__tensor_tag", t.tensor), _kv("shape", t.shape_text), _kv("dtype", t.dtype),
            _kv("bytes", t.bytes if t.bytes is not None else t.size)]}
            for k, t in enumerate(outputs.get(n.id, []))]
        inputs_meta = [{"id": str(i), "attrs": [_kv("__tensor_tag", e.tensor)]}
                       for i, e in enumerate(ins)]
        nodes.append({
            "id": n.id, "label": n.label if n.kind not in ("input", "weight", "constant")
            else n.id,
            "namespace": spaces.get(n.cluster, "") if n.cluster else groups.get(n.id, ""),
            "attrs": attrs, "incomingEdges": edges, "outputsMetadata": meta,
            "inputsMetadata": inputs_meta,
        })
    return {"id": graph_id or g.function, "nodes": nodes}


def node_data(g: Any, metric: str = "bytes_out") -> dict[str, dict[str, float]]:
    """Per-node values for Model Explorer's node-data overlay: `bytes_out` (bytes of
    the tensors a node produces) or `bytes_in`. Nodes whose sizes are symbolic are
    left out."""
    if metric not in ("bytes_out", "bytes_in"):
        from passlab.errors import unknown

        raise unknown("metric", metric, ("bytes_out", "bytes_in"))
    seen: set[tuple[str, str]] = set()
    totals: dict[str, float] = {}
    for e in g.edges:
        node = e.src if metric == "bytes_out" else e.dst
        key = (node, e.tensor)
        if e.bytes is None or key in seen:
            continue
        seen.add(key)
        totals[node] = totals.get(node, 0) + e.bytes
    return {nid: {"value": v} for nid, v in totals.items()}
