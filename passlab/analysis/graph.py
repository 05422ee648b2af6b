"""The fused operator graph of a Relax function: which kernels run, what they contain,
and which tensors flow between them.

This module holds the data (`Node`, `Edge`, `Cluster`,
`FusedGraph`) and `fused_graph`, which turns a walk of the function
(`passlab._tvm.walk.Walker`) into nodes and edges; `kernel_flops` gives
TVM's FLOP estimate of each kernel. Drawing (DOT, text, HTML) lives in
`passlab.analysis._graph_render`; `region=` and `collapse=` in
`passlab.analysis._graph_focus`; Model Explorer JSON in
`passlab.analysis._graph_export`.

Examples
--------
>>> import passlab
>>> from passlab.analysis.graph import fused_graph
>>> g = fused_graph(passlab.models.mlp())  # weight transposes fold into their consumers
>>> [n.label for n in g.nodes if n.kind == "op"]
['matmul', 'add', 'nn.relu', 'matmul', 'add']
>>> [n.label for n in fused_graph(passlab.models.mlp(), params="show").nodes if n.kind == "op"]
['permute_dims', 'matmul', 'add', 'nn.relu', 'permute_dims', 'matmul', 'add']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from passlab import _render, _tvm
from passlab._sequence import NamedSequence
from passlab._tvm import ir as _ir
from passlab.analysis import _graph_export, _graph_focus, _graph_groups, _graph_render
from passlab.analysis._graph_groups import Group
from passlab.analysis._graph_render import (
    TERMINALS as TERMINALS,  # node kinds that are data, not computation
)

__all__ = ["fused_graph", "FusedGraph", "Node", "Edge", "Cluster", "Group", "kernel_flops",
           "kernel_times", "graph_changes", "marked_against"]


@dataclass(frozen=True)
class Node:
    """One node: a parameter, an operator/kernel call, a fused call or the output.

    `kind` is one of `input`, `weight`, `constant`, `output` (data) or `op`
    (Relax operator), `kernel` (one PrimFunc), `fused` (a fused function or fused
    PrimFunc), `composite` (a pattern-matched partition), `call` (any other call),
    `alloc` or `repeat` (identical blocks folded by `collapse=True`).
    `params` names the parameter nodes folded into this one by `params="collapse"`
    (weights, constants and calls that only transform them) and `param_bytes` their
    bytes (None when a size is symbolic). `source` names the source model's nodes a
    call runs (ONNX node names, PyTorch module paths; set by
    `FusedGraph.with_sources`), which group calls into `FusedGraph.groups`.
    """

    id: str
    label: str
    kind: str
    ops: tuple[str, ...] = ()
    pattern: int | None = None
    binding: int | None = None
    cluster: str | None = None
    count: int = 1
    params: tuple[str, ...] = ()
    param_bytes: int | None = None
    source: tuple[str, ...] = ()

    @property
    def pattern_name(self) -> str:
        """TVM's name for `pattern` (`injective`, `out-elemwise-fusable`...)."""
        return _ir.pattern_name(self.pattern)


@dataclass(frozen=True)
class Edge:
    """A tensor flowing from node `src` to node `dst`; in a drawing with closed source
    groups, `count` tensors between a group and another node (`tensor` then says how
    many, `bytes` is their sum)."""

    src: str
    dst: str
    tensor: str
    shape: tuple[int | str, ...] | None
    dtype: str
    bytes: int | None
    size: str = ""
    count: int = 1

    @property
    def shape_text(self) -> str:
        return _render.shape_text(self.shape)

    @property
    def label(self) -> str:
        return f"{self.tensor}: {self.shape_text} {self.dtype}, {_graph_render.bytes_text(self)}"


@dataclass(frozen=True)
class Cluster:
    """A partitioned function (`Codegen` attribute, kind `codegen`) whose calls are
    drawn together, or an opened source group (kind `source`, id `group:<path>`:
    see `passlab.analysis._graph_groups.fold`)."""

    id: str
    label: str
    kind: str = "codegen"
    parent: str | None = None


@dataclass(frozen=True)
class FusedGraph(NamedSequence[Node], _render.Displayable):
    """Immutable operator graph of one Relax function (see `fused_graph`).

    Behaves like a sequence of `Node`: `len`, iteration, indexing by position or
    by node id. `groups` are the calls grouped by the source model's node paths
    (`with_sources`), outermost first; drawings show each group closed, as one
    box, unless `opened` names it.
    """

    function: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    clusters: tuple[Cluster, ...] = ()
    total_nodes: int = 0
    max_nodes: int | None = 200
    notes: tuple[str, ...] = field(default=())
    groups: tuple[Group, ...] = ()
    #: the IRModule the graph was drawn from (its kernels' FLOPs for the "flops" colour);
    #: not part of the graph's value
    module: Any = field(default=None, repr=False, compare=False)

    def _items(self) -> tuple[Node, ...]:
        return self.nodes

    def _by_name(self, name: str) -> Node:
        for n in self.nodes:
            if n.id == name:
                return n
        from passlab.errors import unknown

        raise unknown("node", name, [n.id for n in self.nodes])

    def __repr__(self) -> str:
        return (f"FusedGraph(function={self.function!r}, nodes={len(self.nodes)}, "
                f"edges={len(self.edges)})")

    def inputs_of(self, node_id: str) -> tuple[Edge, ...]:
        """Edges entering `node_id`, in argument order."""
        return tuple(e for e in self.edges if e.dst == node_id)

    def outputs_of(self, node_id: str) -> tuple[Edge, ...]:
        """Edges leaving `node_id`."""
        return tuple(e for e in self.edges if e.src == node_id)

    def with_sources(self, sources: Any, step: Any = None) -> FusedGraph:
        """This graph with its calls grouped by the source model's node paths, as Model
        Explorer groups by namespace: `sources` is the trace's
        `provenance` and `step` the recorded step
        this graph was drawn from (default: the trace's last), or `sources` is a
        mapping node id -> source names. A group is a path shared by two or more calls
        or subgroups (`/layer1`, `/layer1/layer1.0` on an ONNX ResNet; `layer1.0`
        on a torchvision one).

        Examples
        --------
        >>> g = fused_graph(passlab.models.mlp()).with_sources({"matmul": ("/fc1/MatMul",),
        ...     "add": ("/fc1/Add",), "relu": ("/relu/Relu",)})
        >>> [(grp.id, grp.nodes) for grp in g.groups]
        [('/fc1', ('matmul', 'add'))]
        """
        found = (dict(sources) if isinstance(sources, Mapping)
                 else _graph_groups.node_sources(self, sources, step))
        return _graph_groups.with_groups(self, found)

    def group(self, node_id: str) -> str | None:
        """The innermost group holding node `node_id` (its id), or None."""
        return _graph_groups.group_of(self, node_id)

    # ------------------------------------------------------------------ rendering
    def to_dot(self, overlay: str = "none", opened: Collection[str] = (),
               profile: Any = None) -> str:
        """Graphviz DOT source; every name is escaped (quoted strings, HTML-like labels).
        `overlay="bytes"` colours kernels by bytes in+out and edges by tensor bytes;
        `overlay="flops"` colours kernels by TVM's FLOP estimate (`kernel_flops`
        over the module the graph was drawn from), on a viridis ramp, log scale;
        `overlay="time"` by their time per run in `profile` (a
        `Profile`: `build.profile()`; see
        `kernel_times`), on the same ramp. Each group not in `opened` (group ids)
        is one node (`group:<id>`), each opened one a cluster (`cluster_group:<id>`).

        Examples
        --------
        >>> import passlab
        >>> trace = passlab.build(passlab.models.mlp()).trace
        >>> "fillcolor" in fused_graph(trace.find("FuseTIR")).to_dot("flops")
        True
        """
        values = None
        if overlay == "time":
            values = kernel_times(self, profile)
        elif overlay == "flops" and self.module is not None:
            values = kernel_flops(self.module, self)
        return _graph_render.to_dot(self, overlay_by=overlay, opened=opened, values=values)

    def to_svg(self, overlay: str = "none", opened: Collection[str] = (),
               profile: Any = None) -> str:
        """Lay the graph out as SVG (the `<svg>` element) with Graphviz's `dot` or the
        pip-installable `graphviz-pure` (`RuntimeError` naming what to install when
        neither exists). A drawing is laid out once per process: the same graph drawn the
        same way again, here, in the Explorer or in a report, takes that layout."""
        return _render.dot_to_svg(self.to_dot(overlay, opened, profile=profile))

    def to_text(self) -> str:
        """A readable listing: one line per node, its input tensors indented below."""
        return _graph_render.to_text(self)

    def to_html(self, overlay: str = "none") -> str:
        """SVG when a layout program is installed (in a box with zoom buttons that work
        without JavaScript), else an HTML table; IR names are escaped."""
        return _graph_render.to_html(self, overlay_by=overlay)

    def to_model_explorer(self, graph_id: str | None = None) -> dict[str, Any]:
        """This graph in Google Model Explorer's JSON graph format (one `Graph`: `id`,
        `nodes` with `namespace`, `attrs`, `incomingEdges` and
        `outputsMetadata`). `passlab.to_model_explorer` writes a file of them.

        Examples
        --------
        >>> g = fused_graph(passlab.models.mlp())
        >>> me = g.to_model_explorer()
        >>> me["id"], [n["id"] for n in me["nodes"]][:2], me["nodes"][1]["incomingEdges"]
        ('forward', ['x', 'matmul'], [{'sourceNodeId': 'x', 'sourceNodeOutputId': '0', 'targetNodeInputId': '0'}])
        """
        return _graph_export.to_model_explorer(self, graph_id)

    def to_dataframe(self, table: str = "nodes") -> Any:
        """The nodes (`table="nodes"`) or edges (`"edges"`) as a pandas DataFrame."""
        import pandas as pd

        if table == "edges":
            return pd.DataFrame([{**vars(e), "shape": e.shape_text} for e in self.edges])
        if table != "nodes":
            raise ValueError(f"table must be 'nodes' or 'edges', not {table!r}")
        return pd.DataFrame([{**vars(n), "pattern_name": n.pattern_name} for n in self.nodes])


def fused_graph(
    x: Any,
    function: str | None = None,
    *,
    before: Any = None,
    region: str | tuple[int, int] | None = None,
    collapse: bool = False,
    params: str = "collapse",
    inputs: Sequence[str] | None = None,
    max_nodes: int | None = 200,
    bounds: Mapping[str, int] | None = None,
) -> FusedGraph:
    """Build the operator graph of a Relax function at any point of the pipeline.

    Parameters
    ----------
    x : tvm.IRModule or Step
        The module, or a recorded step (its `.after` module; its `.before` module, if
        any, is used like `before=`).
    function : str, optional
        Relax function to draw; default the entry (`num_input` attribute, `main` or
        `forward`).
    before : tvm.IRModule, optional
        A module from before `FuseTIR`: its `Primitive` functions name the ops inside
        each `fused_*` PrimFunc. Without it they are recovered from the kernel's name.
    region : str or (int, int), optional
        Keep only the calls whose label, ops or id contain this text, or whose binding
        index is in `[start, stop)`, with the parameters and output they touch.
    collapse : bool
        Fold runs of identical blocks (same kernels, shapes and dtypes: e.g. transformer
        layers) into one `repeat` node after the first block.
    params : {"collapse", "show", "hide"}
        Weights and parameter plumbing (bound constants, parameters after `num_input`,
        and calls that only transform them, like a bias `reshape`): `"collapse"`
        (default) removes them and notes them on their consumers (`Node.params`),
        `"hide"` removes them, `"show"` draws them.
    inputs : sequence of str, optional
        Names of the real inputs, for models that do not say (an ONNX file whose weights
        are graph inputs makes `num_input` cover everything): the other parameters are
        weights.
    max_nodes : int or None
        Renderings (DOT, text, HTML) show at most this many nodes, with a "shown N of M
        nodes" note; `FusedGraph.nodes` always holds every node (of the region).
    bounds : mapping of str to int, optional
        Values for symbolic dimensions, so that edges of shape `(1, n, 64)` get bytes.

    Returns
    -------
    FusedGraph

    Examples
    --------
    >>> import passlab
    >>> g = fused_graph(passlab.models.mlp(), params="show")
    >>> g["matmul"].kind, [e.tensor for e in g.inputs_of("matmul")]
    ('op', ['x', 'permute_dims'])
    >>> g = fused_graph(passlab.models.mlp())  # weights folded into their consumers
    >>> g["matmul"].params, [e.tensor for e in g.inputs_of("matmul")]
    (('fc1.weight',), ['x'])
    """
    mod, step_before = _ir.as_module(x)
    name = _ir.select_functions(mod, function, all_when_none=False)[0]
    if max_nodes is not None and (not isinstance(max_nodes, int) or max_nodes < 1):
        raise ValueError(f"max_nodes must be a positive int or None, not {max_nodes!r}")
    walker = _ir.Walker(mod, before if before is not None else step_before, bounds)
    walk = walker.walk(name)
    graph = _from_walk(walk, max_nodes)
    if inputs is not None:
        graph = _mark_weights(graph, inputs)
    graph = _graph_focus.fold_params(graph, params)
    if region is not None:
        graph = _graph_focus.keep_region(graph, region)
    if collapse:
        graph = _graph_focus.collapse(graph)
    return replace(graph, module=mod)


def _mark_weights(g: FusedGraph, inputs: Sequence[str]) -> FusedGraph:
    names = [n.id for n in g.nodes if n.kind == "input"]
    missing = [i for i in inputs if i not in names]
    if missing:
        from passlab.errors import unknown

        raise unknown("input", missing[0], names, extra="inputs= names the real inputs.")
    keep = set(inputs)
    nodes = tuple(replace(n, kind="weight") if n.kind == "input" and n.id not in keep else n
                  for n in g.nodes)
    return replace(g, nodes=nodes)


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
        """Node id producing `v`, creating parameter/constant/alloc nodes on first use."""
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


def kernel_flops(module: Any, graph: FusedGraph) -> dict[str, float | None]:
    """TVM's FLOP estimate of each call of `graph` (drawn from `module`), by node id:
    its PrimFunc's, or the sum over the PrimFuncs a fused Relax function calls (FuseOps
    to FuseTIR); None where nothing is known (an operator before LegalizeOps, a copy).
    Data nodes (inputs, weights, constants, outputs) are left out."""
    from passlab._tvm.tir import flops

    funcs = _tvm.functions(module)
    out: dict[str, float | None] = {}
    for n in graph.nodes:
        if n.kind in TERMINALS:
            continue
        name = next((x for x in dict.fromkeys((n.label, n.id)) if x in funcs), None)
        func = funcs.get(name) if name is not None else None
        if func is None:
            out[n.id] = None
        elif _tvm.is_prim_func(func):
            out[n.id] = flops(func)
        else:
            parts = [flops(funcs[c]) for c in _tvm.called_functions(func) if c in funcs]
            known = [p for p in parts if p]
            out[n.id] = sum(known) if known else None
    return out


def kernel_times(graph: FusedGraph, profile: Any) -> dict[str, float | None] | None:
    """Each call of `graph`, by node id: its kernel's time per run in `profile` (a
    `Profile`: `total_s`, all the kernel's calls
    together, as the Profile pane lists it), None for a call whose kernel the run did not
    time (an operator before LegalizeOps, a kernel the VM never called). Data nodes are
    left out; None without a profile.

    Examples
    --------
    >>> b = passlab.build(passlab.models.mlp())
    >>> times = kernel_times(fused_graph(b.trace[-1]), b.profile(repeat=1))  # doctest: +SKIP
    """
    if profile is None:
        return None
    totals = {k.kernel: k.total_s for k in profile if k.calls > 0}
    out: dict[str, float | None] = {}
    for n in graph.nodes:
        if n.kind in TERMINALS:
            continue
        name = next((x for x in dict.fromkeys((n.label, n.id)) if x in totals), None)
        out[n.id] = None if name is None else totals[name]
    return out


def marked_against(trace: Any, step: Any) -> Any:
    """The step whose graph the graph after `step` is marked against (see
    `graph_changes`): the last main-chain pass before it whose output has a Relax
    function, or None."""
    for s in reversed([s for s in trace if s.index < step.index]):
        if s.on_main_chain and not s.failed and _tvm.has_relax_function(s.after):
            return s
    return None


def _signature(g: FusedGraph, n: Node) -> tuple:
    ins = tuple((e.shape, e.dtype) for e in g.inputs_of(n.id))
    outs = tuple(dict.fromkeys((e.shape, e.dtype) for e in g.outputs_of(n.id)))
    return n.kind, n.label, n.ops, ins, outs


def graph_changes(before: FusedGraph, after: FusedGraph,
                  rewritten: Collection[str] = frozenset()) -> tuple[dict[str, str], list[str]]:
    """What changed from graph `before` to graph `after`: `({node id: "new" or
    "rewritten"}, [removed calls as "id (label)"])`, the change marks the graph pane and
    the report draw.

    A call is matched by node id, else by kernel name (a variable renamed by a pass, as
    FuseTIR turns `lv1` into `gv`). A matched call is rewritten when its kind, kernel,
    ops or tensor shapes differ, or its kernel's name is in `rewritten` (the functions
    the step modified). Data nodes (inputs, weights, output) are never marked.

    Examples
    --------
    >>> import passlab
    >>> from passlab.analysis import fused_graph, graph_changes
    >>> trace = passlab.build(passlab.models.mlp()).trace
    >>> step = trace.find("FuseOps")
    >>> marks, removed = graph_changes(fused_graph(step.before), fused_graph(step.after))
    >>> sorted(set(marks.values())), len(removed) > 0
    (['new'], True)
    """
    old = {n.id: n for n in before.nodes if n.kind not in TERMINALS}
    new_ids = {n.id for n in after.nodes}
    by_label: dict[str, list[Node]] = {}
    for n in old.values():
        if n.id not in new_ids:
            by_label.setdefault(n.label, []).append(n)
    marks: dict[str, str] = {}
    matched: set[str] = set()
    for n in after.nodes:
        if n.kind in TERMINALS:
            continue
        p = old.get(n.id)
        if p is None and by_label.get(n.label):
            p = by_label[n.label].pop(0)
        if p is None:
            marks[n.id] = "new"
            continue
        matched.add(p.id)
        if _signature(before, p) != _signature(after, n) or n.label in rewritten:
            marks[n.id] = "rewritten"
    removed = [f"{n.id} ({n.label})" if n.label != n.id else n.id
               for n in old.values() if n.id not in matched]
    return marks, removed
