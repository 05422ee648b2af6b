"""The fused operator graph of a Relax function: which kernels run, what they contain,
and which tensors flow between them.

Examples
--------
>>> import passlab
>>> from passlab.analysis.graph import fused_graph
>>> g = fused_graph(passlab.models.mlp())
>>> [n.label for n in g.nodes if n.kind == "op"]
['permute_dims', 'matmul', 'add', 'nn.relu', 'permute_dims', 'matmul', 'add']
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from passlab import _render

from . import _ir

__all__ = ["fused_graph", "FusedGraph", "Node", "Edge", "Cluster"]

#: Node kinds that are data, not computation.
TERMINALS = frozenset({"input", "weight", "constant", "output"})
_FILL = {"input": "#cfe8fc", "output": "#cfe8fc", "weight": "#eeeeee", "constant": "#eeeeee",
         "op": "#fff2cc", "kernel": "#fff2cc", "fused": "#ffd8a8", "composite": "#e5dbff",
         "call": "#d3f9d8", "alloc": "#f8f9fa", "repeat": "#f1f3f5"}


@dataclass(frozen=True)
class Node:
    """One node: a parameter, an operator/kernel call, a fused call or the output.

    ``kind`` is one of ``input``, ``weight``, ``constant``, ``output`` (data) or ``op``
    (Relax operator), ``kernel`` (one PrimFunc), ``fused`` (a fused function or fused
    PrimFunc), ``composite`` (a pattern-matched partition), ``call`` (any other call),
    ``alloc`` or ``repeat`` (identical blocks folded by ``collapse=True``).
    """

    id: str
    label: str
    kind: str
    ops: tuple[str, ...] = ()
    pattern: int | None = None
    binding: int | None = None
    cluster: str | None = None
    count: int = 1

    @property
    def pattern_name(self) -> str:
        """TVM's name for :attr:`pattern` (``injective``, ``out-elemwise-fusable``...)."""
        return _ir.pattern_name(self.pattern)


@dataclass(frozen=True)
class Edge:
    """A tensor flowing from node ``src`` to node ``dst``."""

    src: str
    dst: str
    tensor: str
    shape: tuple[int | str, ...] | None
    dtype: str
    bytes: int | None
    size: str = ""

    @property
    def shape_text(self) -> str:
        return "?" if self.shape is None else "x".join(map(str, self.shape)) or "scalar"

    @property
    def label(self) -> str:
        return f"{self.tensor}: {self.shape_text} {self.dtype}, {_bytes_text(self)}"


@dataclass(frozen=True)
class Cluster:
    """A partitioned function (``Codegen`` attribute) whose calls are drawn together."""

    id: str
    label: str
    kind: str = "codegen"
    parent: str | None = None


def _bytes_text(e: Edge) -> str:
    return f"{e.bytes} B" if e.bytes is not None else f"{e.size} B"


@dataclass(frozen=True)
class FusedGraph:
    """Immutable operator graph of one Relax function (see :func:`fused_graph`).

    Behaves like a sequence of :class:`Node`: ``len``, iteration, indexing by position or
    by node id.
    """

    function: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    clusters: tuple[Cluster, ...] = ()
    total_nodes: int = 0
    max_nodes: int | None = 200
    notes: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __getitem__(self, key: int | str) -> Node:
        if isinstance(key, int):
            return self.nodes[key]
        for n in self.nodes:
            if n.id == key:
                return n
        from passlab._names import unknown

        raise unknown("node", key, [n.id for n in self.nodes])

    def __repr__(self) -> str:
        return (f"FusedGraph(function={self.function!r}, nodes={len(self.nodes)}, "
                f"edges={len(self.edges)})")

    def inputs_of(self, node_id: str) -> tuple[Edge, ...]:
        """Edges entering ``node_id``, in argument order."""
        return tuple(e for e in self.edges if e.dst == node_id)

    def outputs_of(self, node_id: str) -> tuple[Edge, ...]:
        """Edges leaving ``node_id``."""
        return tuple(e for e in self.edges if e.src == node_id)

    # ------------------------------------------------------------------ rendering
    def _shown(self) -> tuple[tuple[Node, ...], tuple[Edge, ...], tuple[str, ...]]:
        notes = self.notes
        nodes = self.nodes
        if self.max_nodes is not None and len(nodes) > self.max_nodes:
            nodes = nodes[: self.max_nodes]
            notes += (f"shown {len(nodes)} of {len(self.nodes)} nodes (max_nodes="
                      f"{self.max_nodes}; use region= or collapse=True to focus)",)
        ids = {n.id for n in nodes}
        edges = tuple(e for e in self.edges if e.src in ids and e.dst in ids)
        return nodes, edges, notes

    def to_dot(self) -> str:
        """Graphviz DOT source; every name is escaped (quoted strings, HTML-like labels)."""
        nodes, edges, notes = self._shown()
        title = f"{self.function}" + "".join(f"\n{n}" for n in notes)
        out = [f"digraph {_q(self.function)} {{",
               f"  graph [rankdir=TB, fontname=Helvetica, labelloc=t, label={_q(title)}];",
               "  node [fontname=Helvetica, fontsize=10];",
               "  edge [fontname=Helvetica, fontsize=8, color=\"#555555\"];"]
        by_cluster: dict[str | None, list[str]] = {}
        for n in nodes:
            by_cluster.setdefault(n.cluster, []).append(f"{_q(n.id)} {_node_attrs(n)};")
        out += ["  " + line for line in by_cluster.pop(None, [])]
        children: dict[str | None, list[Cluster]] = {}
        for c in self.clusters:
            children.setdefault(c.parent, []).append(c)

        def emit(c: Cluster, depth: int) -> None:
            pad = "  " * depth
            out.append(f"{pad}subgraph {_q('cluster_' + c.id)} {{")
            out.append(f"{pad}  label={_q(c.label)}; style=\"rounded,dashed\"; color=\"#7048e8\";")
            out.extend(f"{pad}  {line}" for line in by_cluster.get(c.id, []))
            for sub in children.get(c.id, []):
                emit(sub, depth + 1)
            out.append(f"{pad}}}")

        for c in children.get(None, []):
            emit(c, 1)
        for e in edges:
            label = f"{e.tensor}\n{e.shape_text} {e.dtype}\n{_bytes_text(e)}"
            out.append(f"  {_q(e.src)} -> {_q(e.dst)} [label={_q(label)}];")
        out.append("}")
        return "\n".join(out) + "\n"

    def to_svg(self) -> str:
        """Lay the graph out as SVG with Graphviz's ``dot`` or the pip-installable
        ``graphviz-pure`` (``RuntimeError`` naming what to install when neither exists)."""
        return _render.dot_to_svg(self.to_dot())

    def to_text(self) -> str:
        """A readable listing: one line per node, its input tensors indented below."""
        nodes, edges, notes = self._shown()
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.kind] = counts.get(n.kind, 0) + 1
        summary = ", ".join(f"{v} {k}" for k, v in counts.items())
        lines = [f"fused graph of {self.function}: {len(self.nodes)} nodes ({summary}), "
                 f"{len(self.edges)} edges"] + [f"  note: {n}" for n in notes]
        incoming: dict[str, list[Edge]] = {}
        for e in edges:
            incoming.setdefault(e.dst, []).append(e)
        for n in nodes:
            head = f"  [{n.kind}] {n.id}"
            if n.kind not in TERMINALS:
                head += f" = {n.label}"
                if n.ops and n.ops != (n.label,):
                    head += f" [{' + '.join(n.ops)}]"
                if n.pattern is not None:
                    head += f" ({n.pattern_name})"
            if n.cluster:
                head += f" in {n.cluster}"
            lines.append(head)
            lines += [f"      <- {e.label}" + (f" (from {e.src})" if e.src != e.tensor else "")
                      for e in incoming.get(n.id, [])]
        return "\n".join(lines)

    def to_html(self) -> str:
        """SVG when a layout program is installed, else an HTML table; IR names are
        escaped."""
        nodes, edges, notes = self._shown()
        head = (f"<p><b>fused graph of {_render.esc(self.function)}</b>: {len(self.nodes)} "
                f"nodes, {len(self.edges)} edges</p>"
                + "".join(f'<div class="passlab-note">{_render.esc(n)}</div>' for n in notes))
        if _render.layout_program():
            try:
                svg = self.to_svg()
                svg = svg[svg.find("<svg"):]  # drop the XML prolog and doctype
                return f'<div class="passlab-graph">{head}{svg}</div>'
            except (RuntimeError, OSError):
                pass  # fall back to the table
        incoming: dict[str, list[str]] = {}
        for e in edges:
            incoming.setdefault(e.dst, []).append(e.label + (f" from {e.src}" if e.src != e.tensor
                                                              else ""))
        rows = [[n.id, n.kind, n.label, " + ".join(n.ops), n.pattern_name,
                 "; ".join(incoming.get(n.id, []))] for n in nodes]
        table = _render.html_table(["node", "kind", "label", "ops", "pattern", "inputs"], rows,
                                   classes=[n.kind for n in nodes])
        return f'<div class="passlab-graph">{head}{table}</div>'

    def to_dataframe(self, table: str = "nodes") -> Any:
        """The nodes (``table="nodes"``) or edges (``"edges"``) as a pandas DataFrame."""
        import pandas as pd

        if table == "edges":
            return pd.DataFrame([{**vars(e), "shape": e.shape_text} for e in self.edges])
        if table != "nodes":
            raise ValueError(f"table must be 'nodes' or 'edges', not {table!r}")
        return pd.DataFrame([{**vars(n), "pattern_name": n.pattern_name} for n in self.nodes])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return _render.mimebundle(self)


def _q(s: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, newlines as DOT line breaks."""
    parts = str(s).split("\n")
    return '"' + "\\n".join(p.replace("\\", "\\\\").replace('"', '\\"') for p in parts) + '"'


def _node_attrs(n: Node) -> str:
    esc = html.escape
    lines = [f"<B>{esc(n.label)}</B>"]
    if n.kind in TERMINALS and n.label != n.id:
        lines[0] = f"<B>{esc(n.id)}</B>"
    if n.ops and n.ops != (n.label,):
        rows = [" + ".join(n.ops[i:i + 6]) for i in range(0, len(n.ops), 6)]  # wrap long lists
        lines.append(f'<FONT POINT-SIZE="9">{"<BR/>".join(esc(r) for r in rows)}</FONT>')
    if n.pattern is not None:
        lines.append(f'<FONT POINT-SIZE="8" COLOR="#666666">{esc(n.pattern_name)}</FONT>')
    shape = {"input": "oval", "output": "oval", "weight": "note", "constant": "note"}.get(
        n.kind, "box")
    style = "filled" if n.kind in TERMINALS else "rounded,filled"
    size = ", fontsize=8, height=0.3" if n.kind in ("weight", "constant") else ""
    return (f"[shape={shape}, style={_q(style)}, fillcolor={_q(_FILL.get(n.kind, '#ffffff'))}"
            f"{size}, label=<{'<BR/>'.join(lines)}>]")


def fused_graph(
    x: Any,
    function: str | None = None,
    *,
    before: Any = None,
    region: str | tuple[int, int] | None = None,
    collapse: bool = False,
    max_nodes: int | None = 200,
    bounds: Mapping[str, int] | None = None,
) -> FusedGraph:
    """Build the operator graph of a Relax function at any point of the pipeline.

    Parameters
    ----------
    x : tvm.IRModule or Step
        The module, or a recorded step (its ``.after`` module; its ``.before`` module, if
        any, is used like ``before=``).
    function : str, optional
        Relax function to draw; default the entry (``num_input`` attribute, ``main`` or
        ``forward``).
    before : tvm.IRModule, optional
        A module from before ``FuseTIR``: its ``Primitive`` functions name the ops inside
        each ``fused_*`` PrimFunc. Without it they are recovered from the kernel's name.
    region : str or (int, int), optional
        Keep only the calls whose label, ops or id contain this text, or whose binding
        index is in ``[start, stop)``, with the parameters and output they touch.
    collapse : bool
        Fold runs of identical blocks (same kernels, shapes and dtypes: e.g. transformer
        layers) into one ``repeat`` node after the first block.
    max_nodes : int or None
        Renderings (DOT, text, HTML) show at most this many nodes, with a "shown N of M
        nodes" note; :attr:`FusedGraph.nodes` always holds every node (of the region).
    bounds : mapping of str to int, optional
        Values for symbolic dimensions, so that edges of shape ``(1, n, 64)`` get bytes.

    Returns
    -------
    FusedGraph

    Examples
    --------
    >>> import passlab
    >>> g = fused_graph(passlab.models.mlp())
    >>> g["matmul"].kind, [e.tensor for e in g.inputs_of("matmul")]
    ('op', ['x', 'permute_dims'])
    """
    mod, step_before = _ir.as_module(x)
    name = _ir.select_functions(mod, function, all_when_none=False)[0]
    if max_nodes is not None and (not isinstance(max_nodes, int) or max_nodes < 1):
        raise ValueError(f"max_nodes must be a positive int or None, not {max_nodes!r}")
    walker = _ir.Walker(mod, before if before is not None else step_before, bounds)
    walk = walker.walk(name)
    graph = _from_walk(walk, max_nodes)
    if region is not None:
        graph = _region(graph, region)
    if collapse:
        graph = _collapse(graph)
    return graph


def _from_walk(w: _ir.Walk, max_nodes: int | None) -> FusedGraph:
    """Nodes for parameters (weights placed before their first consumer), calls, output."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    ids: dict[int, str] = {}  # id(Value or CallSite) -> node id
    taken: set[str] = set()

    def new_id(base: str) -> str:
        nid, k = base, 1
        while nid in taken:
            k += 1
            nid = f"{base}#{k}"
        taken.add(nid)
        return nid

    def source(v: _ir.Value) -> str:
        """Node id producing ``v``, creating parameter/constant/alloc nodes on first use."""
        while v.view_of is not None and v.producer is None:
            v = v.view_of
        if v.producer is not None:
            return ids[id(v.producer)]
        if id(v) not in ids:
            kind = {"const": "constant", "storage": "alloc"}.get(v.kind, v.kind)
            ids[id(v)] = new_id(v.name)
            nodes.append(Node(ids[id(v)], v.name if kind != "alloc" else _ir.short_op(v.op),
                              kind, binding=None if v.index < 0 else v.index))
        return ids[id(v)]

    def sources(values: list[_ir.Value]) -> list[tuple[str, _ir.Value]]:
        found: dict[tuple[str, str], _ir.Value] = {}
        for v in values:
            found.setdefault((source(v), v.display), v)
        return [(src, v) for (src, _), v in found.items()]

    def connect(pairs: list[tuple[str, _ir.Value]], dst: str) -> None:
        edges.extend(Edge(src, dst, v.display, v.info.shape, v.info.dtype, v.info.size.bytes,
                          v.info.size.text) for src, v in pairs)

    for p in w.params:
        if p.kind == "input":
            source(p)
    for c in w.calls:
        pairs = sources(c.inputs)  # creates weight nodes first: they precede their consumer
        out = c.outputs[0] if c.outputs else None
        nid = new_id(out.display if out is not None and out.kind == "alloc" else c.var)
        ids[id(c)] = nid
        nodes.append(Node(nid, c.label, c.kind, c.ops, c.pattern, c.index, c.cluster))
        connect(pairs, nid)
    out_id = new_id("output")
    pairs = sources(w.results)
    nodes.append(Node(out_id, "output", "output", binding=len(w.bindings)))
    connect(pairs, out_id)
    for p in w.params:  # unused parameters still appear
        if id(p) not in ids:
            source(p)
    clusters = tuple(Cluster(cid, label, "codegen", parent) for cid, label, parent in w.clusters)
    return FusedGraph(w.function, tuple(nodes), tuple(edges), clusters, len(nodes), max_nodes)


def _region(g: FusedGraph, region: str | tuple[int, int]) -> FusedGraph:
    if isinstance(region, str):
        text = region.lower()
        keep = {n.id for n in g.nodes if n.kind not in TERMINALS and any(
            text in s.lower() for s in (n.id, n.label, *n.ops))}
        what = f"region {region!r}"
        if not keep:
            from passlab._names import unknown

            labels = [n.label for n in g.nodes if n.kind not in TERMINALS]
            raise unknown("region", region, labels, "A region matches node ids, labels or ops.")
    else:
        if not (isinstance(region, tuple) and len(region) == 2
                and all(isinstance(i, int) for i in region)):
            raise TypeError("region must be text or a (start, stop) pair of binding indices, "
                            f"not {region!r}")
        start, stop = region
        keep = {n.id for n in g.nodes if n.kind not in TERMINALS and n.binding is not None
                and start <= n.binding < stop}
        what = f"bindings [{start}, {stop})"
        if not keep:
            raise ValueError(f"no call of {g.function} has a binding index in [{start}, {stop})")
    kinds = {n.id: n.kind for n in g.nodes}
    for e in g.edges:  # the data a kept call touches
        if e.dst in keep and kinds[e.src] in TERMINALS:
            keep.add(e.src)
        if e.src in keep and kinds[e.dst] in TERMINALS:
            keep.add(e.dst)
    nodes = tuple(n for n in g.nodes if n.id in keep)
    edges = tuple(e for e in g.edges if e.src in keep and e.dst in keep)
    note = f"{what}: {len(nodes)} of {g.total_nodes} nodes"
    return replace(g, nodes=nodes, edges=edges, notes=g.notes + (note,))


def _signatures(g: FusedGraph, calls: list[Node]) -> list[tuple]:
    ins: dict[str, list[tuple]] = {}
    outs: dict[str, set[tuple]] = {}
    for e in g.edges:
        ins.setdefault(e.dst, []).append((e.shape, e.dtype))
        outs.setdefault(e.src, set()).add((e.tensor, e.shape, e.dtype))
    return [(n.kind, n.label, n.ops, tuple(ins.get(n.id, ())),
             tuple(sorted(((s, d) for _, s, d in outs.get(n.id, ())), key=str))) for n in calls]


def _best_repeat(sig: list[tuple], min_block: int) -> tuple[int, int, int] | None:
    """(start, period, repetitions) of the periodic run that saves the most nodes."""
    best, saved = None, 0
    for p in range(min_block, len(sig) // 2 + 1):
        run = 0
        for i in range(len(sig) - p + 1):
            if i < len(sig) - p and sig[i] == sig[i + p]:
                run += 1
                continue
            reps = (run + p) // p
            if reps >= 2 and (reps - 1) * p > saved:
                best, saved = (i - run, p, reps), (reps - 1) * p
            run = 0
    return best


def _collapse(g: FusedGraph, min_block: int = 3) -> FusedGraph:
    """Fold periodic runs of identical calls: keep the first block, one ``repeat`` node."""
    notes = list(g.notes)
    for k in range(1, 100):
        calls = [n for n in g.nodes if n.kind not in TERMINALS and n.kind != "repeat"]
        found = _best_repeat(_signatures(g, calls), min_block)
        if found is None:
            break
        start, period, reps = found
        gone = {n.id for n in calls[start + period: start + reps * period]}
        consumers: dict[str, set[str]] = {}
        for e in g.edges:
            consumers.setdefault(e.src, set()).add(e.dst)
        kinds = {n.id: n.kind for n in g.nodes}
        gone |= {s for s, ds in consumers.items() if kinds[s] in ("weight", "constant")
                 and ds <= gone}
        first = calls[start + period]
        rid = f"repeat{k}"
        block = calls[start: start + period]
        rep = Node(rid, f"{period} calls x {reps - 1} more", "repeat",
                   tuple(n.label for n in block), None, first.binding, first.cluster, reps - 1)
        nodes, placed = [], False
        for n in g.nodes:
            if n.id in gone:
                if not placed and n.kind not in TERMINALS:
                    nodes.append(rep)
                    placed = True
                continue
            nodes.append(n)
        edges, seen = [], set()
        for e in g.edges:
            if e.src in gone and e.dst in gone:
                continue
            e = replace(e, src=rid if e.src in gone else e.src, dst=rid if e.dst in gone else e.dst)
            if (e.src, e.dst, e.tensor) not in seen:
                seen.add((e.src, e.dst, e.tensor))
                edges.append(e)
        notes.append(f"collapsed {reps} identical blocks of {period} calls "
                     f"({block[0].label} ... {block[-1].label}) into 1 block + {rid}")
        g = replace(g, nodes=tuple(nodes), edges=tuple(edges))
    return replace(g, notes=tuple(notes))
