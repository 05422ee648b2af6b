"""Source groups of a fused graph: its calls grouped by the source model's node paths
(ONNX node names `/layer1/layer1.0/conv1/Conv`, PyTorch module paths
`layer1.0.conv1`), so that a ResNet block is one box until it is opened, as Model
Explorer does with namespaces.

* `node_sources`: the source names behind each call of a graph, from the trace's
  provenance (a kernel that several call sites share gives each site its own operators,
  in program order);
* `namespace`: the group path of a call, the longest path its source names share;
* `with_groups`: the graph with `Node.source` set and its `Group`
  tree, keeping only groups of two or more members (a group of one is no grouping);
* `fold`: what a drawing shows with some groups opened: each closed group one
  `group` node (edges into and out of it merged), each opened one a cluster.

Works on the duck-typed graph of `passlab.analysis._graph_render`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Group", "GROUP_PREFIX", "FIRST_VIEW_NODES", "namespace", "node_sources",
           "with_groups", "fold", "drawn_nodes", "first_opened", "group_of", "has_sources"]

#: Graph ids of closed groups' nodes and of opened groups' clusters begin with this
#: (``group:/layer1``; Graphviz names the cluster ``cluster_group:/layer1``).
GROUP_PREFIX = "group:"
_DATA = frozenset({"input", "weight", "constant", "output"})


@dataclass(frozen=True)
class Group:
    """Calls of a fused graph that came from one subtree of the source model.

    `id` is the source path (`/layer1/layer1.0`, `layer1.0`), `label` its last
    part (`layer1.0`), `parent` the enclosing group's id (None at the top), and
    `nodes` every node id below it, subgroups included, in graph order."""

    id: str
    label: str
    parent: str | None
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class SourceCluster:
    """An opened group as a drawing's cluster (the shape of
    `Cluster`, kind `source`)."""

    id: str
    label: str
    kind: str = "source"
    parent: str | None = None


def _prefixes(name: str) -> tuple[str, ...]:
    """The group paths a source name lies in, outermost first: an ONNX node name's
    parent paths (`/layer1`, `/layer1/layer1.0`, `/layer1/layer1.0/conv1` for
    `/layer1/layer1.0/conv1/Conv`: the last part names the node itself), a PyTorch
    module path's own prefixes (`layer1`, `layer1.0`, `layer1.0.conv1`). A name
    with no path (a torch.export node name, `Conv_0`) lies in none."""
    if name.startswith("/"):
        parts = [p for p in name.split("/") if p][:-1]
        return tuple("/" + "/".join(parts[:i + 1]) for i in range(len(parts)))
    if "." in name and "/" not in name:
        parts = name.split(".")
        if all(parts):
            return tuple(".".join(parts[:i + 1]) for i in range(len(parts)))
    return ()


def namespace(names: Sequence[str]) -> tuple[str, ...]:
    """The group path of a call whose operators came from the source nodes `names`:
    the longest path all of them (those that have one) share, outermost first."""
    paths = [p for p in map(_prefixes, names) if p]
    if not paths:
        return ()
    common = paths[0]
    for p in paths[1:]:
        k = 0
        while k < min(len(common), len(p)) and common[k] == p[k]:
            k += 1
        common = common[:k]
    return common


_EVENTS = ("calls ", "moved into ", "merged into kernel ", "kernel ")


def _runs_as(o: Any, upto: int | None, order: Mapping[str, int]) -> tuple[str | None, str]:
    """What the operator call `o` runs as after the step of index `upto` (None:
    after the last): the kernel or fused function its latest event by then names (its
    own binding when none has happened yet, None once it is gone), and the unit it runs
    in: the fused function FuseOps moved it into (one per call site: FuseTIR may later
    share the kernel between sites), else the operator itself."""
    name: str | None = o.op
    unit = o.op
    for label, event in o.history:
        at = order.get(label)
        if upto is not None and (at is None or at > upto):
            break
        if event.startswith(("folded", "removed")) or " removed by " in event:
            return None, unit
        head = next((h for h in _EVENTS if event.startswith(h)), None)
        if head is not None:
            name = event[len(head):].split(" ")[0]
            if head == "moved into ":
                unit = "fn:" + name
    return name, unit


def has_sources(trace: Any) -> bool:
    """Whether the input of `trace` carries source node names (cheap: no provenance)."""
    from passlab import _tvm
    from passlab.analysis.provenance import input_module
    from passlab.models._source_names import source_names

    try:
        first = input_module(trace)
        return bool(source_names(first[_tvm.entry_function(first, strict=False)]))
    except (ValueError, KeyError):
        return False


def node_sources(g: Any, prov: Any, step: Any = None) -> dict[str, tuple[str, ...]]:
    """Node id -> the source names of the operator calls it runs, for the calls of
    graph `g` drawn from `step` (a step of the trace `prov`, a
    `Provenance`, was made from; None: after the
    trace's last step). Each operator is followed through its history up to `step`:
    a call is matched by the binding name while that is still the operator's (before
    LegalizeOps), else by the kernel or fused function it calls; where call sites share
    a kernel, program order tells them apart."""
    if not getattr(prov, "sources", ()):
        return {}
    trace = getattr(step, "owner", None) if step is not None else None
    order = {s.label: s.index for s in trace} if trace is not None else {}
    upto = step.index if step is not None and order else None
    ops = list(prov)
    calls = [n for n in g.nodes if n.kind not in _DATA]
    ids = {n.id for n in calls}
    # the operators running in one unit (one fused function of FuseOps, or one
    # operator), per kernel, in program order; a kernel's call sites take its units in
    # binding order (FuseTIR shares one kernel between identical sites)
    labels = {n.label for n in calls}
    state = [_runs_as(o, upto, order) for o in ops]
    held: dict[str, list[Any]] = {}
    runs: dict[str, list[list[int]]] = {}  # kernel -> runs of operator positions
    last: dict[tuple[str, str], int] = {}  # (kernel, unit) -> its run's index in runs
    recent = -1  # position of the last operator that runs as a call of the graph
    for k, (o, (name, unit)) in enumerate(zip(ops, state)):
        if name is None or (name not in labels and name != o.op):
            continue
        if name == o.op:  # not yet legalized: the call is the operator's own binding
            if name in ids:
                held.setdefault(name, []).append(o)
            continue
        r = last.get((name, unit))
        # a unit's operators that another call separates are two sites (FuseOps and
        # FuseTIR share one function or kernel between identical sites)
        if r is None or recent != runs[name][r][-1]:
            runs.setdefault(name, []).append([k])
            last[(name, unit)] = len(runs[name]) - 1
        else:
            runs[name][r].append(k)
        recent = k
    sites: dict[str, list[str]] = {}
    for n in calls:
        sites.setdefault(n.label, []).append(n.id)
    for name, found in runs.items():
        where = sites.get(name, [])
        if len(found) > len(where):  # strays (no path to group by) join the next run
            found = _merge_strays(found, ops, len(where))
        for k, run in enumerate(found):
            if where:  # still more runs than sites: the rest join the last site
                held.setdefault(where[min(k, len(where) - 1)], []).extend(ops[p] for p in run)
    out: dict[str, tuple[str, ...]] = {}
    for nid, mine in held.items():
        names = tuple(dict.fromkeys(s for o in mine for s in o.source))
        if names:
            out[nid] = names
    return out


def _merge_strays(runs: list[list[int]], ops: list[Any], k: int) -> list[list[int]]:
    """`runs` with runs whose operators carry no source path merged into a neighbour
    (the next, or the previous for the last) while there are more than `k`."""
    runs = [list(r) for r in runs]
    j = 0
    while len(runs) > k and j < len(runs):
        if not any(_prefixes(s) for p in runs[j] for s in ops[p].source):
            other = j + 1 if j + 1 < len(runs) else j - 1
            if other < 0:
                break
            runs[other] = sorted(runs[other] + runs[j])
            del runs[j]
            continue
        j += 1
    return runs


def with_groups(g: Any, sources: Mapping[str, Sequence[str]]) -> Any:
    """`g` with each call's `Node.source` set from `sources` and its groups
    (`FusedGraph.groups`): the group paths of the calls, each kept when it holds
    two or more members (calls, or groups kept below it). Calls inside a backend region
    (`Node.cluster`) keep their region and join no group."""
    paths = {n.id: namespace(tuple(sources.get(n.id, ()))) for n in g.nodes
             if n.kind not in _DATA and n.cluster is None}
    nodes = tuple(replace(n, source=tuple(sources[n.id])) if n.id in sources else n
                  for n in g.nodes)
    # keep a path when it has two or more members: direct calls, or kept groups below it
    every = {p for path in paths.values() for p in path}
    kept: set[str] = set()
    for p in sorted(every, key=lambda p: -_depth(p)):  # children before their parents
        if _members(p, paths, kept) >= 2:
            kept.add(p)
    order = {n.id: k for k, n in enumerate(g.nodes)}
    calls = tuple(i for i in order if i in paths)
    held = {p: tuple(i for i in calls if p in paths[i]) for p in kept}
    # a group holding just what its parent holds (all of the graph, at the top) tells
    # nothing: one box around everything
    for p in sorted(kept, key=_depth):
        up = [q for q in _chain(p)[:-1] if q in kept]
        if held[p] == (held[up[-1]] if up else calls):
            kept.discard(p)
    groups = []
    for p in sorted(kept, key=lambda p: (order[held[p][0]], _depth(p))):
        up = [q for q in _chain(p)[:-1] if q in kept]
        parent = up[-1] if up else None
        groups.append(Group(p, _label(p, parent), parent, held[p]))
    return replace(g, nodes=nodes, groups=tuple(groups))


def _depth(path: str) -> int:
    return path.count("/") if path.startswith("/") else path.count(".") + 1


def _chain(path: str) -> tuple[str, ...]:
    """`path` and its parent paths, outermost first."""
    return _prefixes(path + "/x") if path.startswith("/") else _prefixes(path)


def _members(path: str, paths: Mapping[str, tuple[str, ...]], kept: set[str]) -> int:
    """Members of group `path`: its direct calls, its kept subgroups, and what each
    dropped subgroup hands up (its own members)."""
    direct = sum(1 for p in paths.values() if p and p[-1] == path)
    below = {p[p.index(path) + 1] for p in paths.values() if path in p and p[-1] != path}
    return direct + sum(1 if c in kept else _members(c, paths, kept) for c in below)


def _label(path: str, parent: str | None) -> str:
    """The part of `path` below `parent` (`layer1.0` of `/layer1/layer1.0`;
    a PyTorch path keeps its dotted whole, `layer1.0`, which reads better than `0`)."""
    if path.startswith("/"):
        rest = path[len(parent):] if parent and path.startswith(parent + "/") else path
        return rest.strip("/")
    return path


def group_of(g: Any, node_id: str) -> str | None:
    """The innermost group holding `node_id`, or None."""
    found = [grp for grp in g.groups if node_id in grp.nodes]
    return found[-1].id if found else None


#: Nodes a first view draws at most: `first_opened` opens the groups level by level while
#: the drawing stays within this (DenseNet-121: its one group `features` opened, 19
#: nodes; a ResNet: its four stages opened, each block one box).
FIRST_VIEW_NODES = 40


def drawn_nodes(g: Any, opened: Collection[str]) -> int:
    """How many nodes a drawing of `g` with the groups `opened` open shows (as `fold`
    makes them, without making them): the nodes whose every group is open, and each
    closed group whose parent is open (or that has none)."""
    groups = getattr(g, "groups", ())
    if not groups:
        return len(g.nodes)
    open_ = set(opened)
    parent = {grp.id: grp.parent for grp in groups}

    def visible(gid: str | None) -> bool:
        while gid is not None:
            if gid not in open_:
                return False
            gid = parent.get(gid)
        return True

    inside: dict[str, list[str]] = {}
    for grp in groups:
        for n in grp.nodes:
            inside.setdefault(n, []).append(grp.id)
    shown = sum(1 for n in g.nodes if all(gid in open_ for gid in inside.get(n.id, ())))
    return shown + sum(1 for grp in groups if grp.id not in open_ and visible(grp.parent))


def first_opened(graphs: Sequence[Any], budget: int | None = None) -> tuple[str, ...]:
    """The groups a first view of `graphs` (drawn side by side, their groups opened
    together) opens: level by level from the top, each level whole, while every drawing
    shows at most `budget` nodes (default `FIRST_VIEW_NODES`). A model whose one top
    group holds nearly everything (torchvision's `features`) opens on its parts, not on
    one box."""
    budget = FIRST_VIEW_NODES if budget is None else budget
    levels: dict[int, list[str]] = {}
    for g in graphs:
        depth: dict[str, int] = {}
        for grp in getattr(g, "groups", ()):  # outermost first: a parent before its children
            depth[grp.id] = 0 if grp.parent is None else depth.get(grp.parent, 0) + 1
            levels.setdefault(depth[grp.id], [])
            if grp.id not in levels[depth[grp.id]]:
                levels[depth[grp.id]].append(grp.id)
    opened: list[str] = []
    for level in sorted(levels):
        more = opened + levels[level]
        if any(drawn_nodes(g, more) > budget for g in graphs):
            break
        opened = more
    return tuple(opened)


def _merged(edges: list[Any]) -> list[Any]:
    """`edges` with the tensors between a closed group and one other node drawn as one
    edge (`count` tensors, their bytes summed; None when one is symbolic): a dense
    block's output to the concatenation after it is 24 tensors, one arrow."""
    pairs: dict[tuple[str, str], list[Any]] = {}
    for e in edges:
        pairs.setdefault((e.src, e.dst), []).append(e)
    out = []
    for (src, dst), group in pairs.items():
        if len(group) == 1 or not (src.startswith(GROUP_PREFIX) or dst.startswith(GROUP_PREFIX)):
            out.extend(group)
            continue
        dtypes = {e.dtype for e in group}
        sizes = [e.bytes for e in group]
        out.append(replace(group[0], tensor=f"{len(group)} tensors", shape=None,
                           dtype=dtypes.pop() if len(dtypes) == 1 else "mixed",
                           bytes=None if None in sizes else sum(sizes), size="",
                           count=len(group)))
    return out


def fold(g: Any, opened: Collection[str] = ()) -> Any:
    """What a drawing of `g` shows with the groups `opened` open (their ids; a group
    opens only when its parent is open): each outermost closed group becomes one node of
    kind `group` (`count`: the calls inside; `ops`: what they run) in place of its
    first call, edges into and out of it merged (one per tensor, none inside); each
    opened group becomes a `SourceCluster` (kind `source`)
    (id `group:<path>`) that the calls directly inside it sit in. The tensors between a
    closed group and another node are one edge (`_merged`)."""
    groups = getattr(g, "groups", ())
    if not groups:
        return g
    by_id = {grp.id: grp for grp in groups}
    open_ = set(opened)

    def chain(gid: str) -> list[str]:
        out = [gid]
        while by_id[out[-1]].parent is not None:
            out.append(by_id[out[-1]].parent)
        return out

    def shown_as(node_id: str) -> str | None:
        """The closed group that stands for `node_id`, or None (shown itself). Groups
        come outermost first, so the first closed one has every ancestor open."""
        return next((grp.id for grp in groups if node_id in grp.nodes
                     and grp.id not in open_), None)

    rep = {n.id: shown_as(n.id) for n in g.nodes}
    visible_open = [grp for grp in groups if all(c in open_ for c in chain(grp.id))]
    open_ids = {grp.id for grp in visible_open}
    nodes: list[Any] = []
    placed: set[str] = set()
    for n in g.nodes:
        gid = rep[n.id]
        if gid is None:
            inner = next((grp.id for grp in reversed(visible_open) if n.id in grp.nodes), None)
            nodes.append(replace(n, cluster=GROUP_PREFIX + inner) if inner and n.cluster is None
                         else n)
            continue
        if gid in placed:
            continue
        placed.add(gid)
        grp = by_id[gid]
        members = [m for m in g.nodes if m.id in grp.nodes]
        kernels = tuple(dict.fromkeys(m.label for m in members))
        parent = grp.parent if grp.parent in open_ids else None
        nodes.append(replace(members[0], id=GROUP_PREFIX + gid, label=grp.label,
                             kind="group", ops=kernels, pattern=None, binding=None,
                             cluster=None if parent is None else GROUP_PREFIX + parent,
                             count=len(members), params=(), param_bytes=None,
                             source=(gid,)))
    ids = {n.id: n.id if (r := rep[n.id]) is None else GROUP_PREFIX + r for n in g.nodes}
    edges: list[Any] = []
    seen: set[tuple[str, str, str]] = set()
    for e in g.edges:
        src, dst = ids.get(e.src, e.src), ids.get(e.dst, e.dst)
        if src == dst or (src, dst, e.tensor) in seen:
            continue
        seen.add((src, dst, e.tensor))
        edges.append(replace(e, src=src, dst=dst))
    edges = _merged(edges)
    clusters = tuple(g.clusters) + tuple(
        SourceCluster(GROUP_PREFIX + grp.id, grp.label, "source",
                GROUP_PREFIX + grp.parent if grp.parent in open_ids else None)
        for grp in visible_open)
    return replace(g, nodes=tuple(nodes), edges=tuple(edges), clusters=clusters)
