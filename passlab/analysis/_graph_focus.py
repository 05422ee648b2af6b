"""Focusing a `FusedGraph`: `fused_graph(region=...)`
keeps the calls a region names (with the data they touch), `collapse=True` folds runs of
identical blocks (e.g. transformer layers) into one `repeat` node.

Both take a graph and return a new one through `dataclasses.replace`, so this module
needs nothing from `graph.py` but the node kinds it shares with the renderer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from passlab.analysis._graph_render import TERMINALS

__all__ = ["keep_region", "collapse"]


def keep_region(g: Any, region: str | tuple[int, int]) -> Any:
    """The calls whose id, label or ops contain `region` (text), or whose binding index
    is in `[start, stop)`, with the parameters and output they touch."""
    if isinstance(region, str):
        text = region.lower()
        keep = {n.id for n in g.nodes if n.kind not in TERMINALS and any(
            text in s.lower() for s in (n.id, n.label, *n.ops))}
        what = f"region {region!r}"
        if not keep:
            from passlab.errors import unknown

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


def _signatures(g: Any, calls: list[Any]) -> list[tuple]:
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


def collapse(g: Any, min_block: int = 3) -> Any:
    """Fold periodic runs of identical calls: keep the first block, one `repeat` node."""
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
        # a Node like ``first`` (same binding and cluster) standing for the folded blocks
        rep = replace(first, id=rid, label=f"{period} calls x {reps - 1} more", kind="repeat",
                      ops=tuple(n.label for n in block), pattern=None, count=reps - 1)
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


#: ``fused_graph(params=...)`` modes.
PARAM_MODES = ("collapse", "show", "hide")
#: Node kinds that hold parameters (weights and bound constants).
PARAM_KINDS = frozenset({"weight", "constant"})


def fold_params(g: Any, mode: str) -> Any:
    """Fold weights and parameter plumbing away.

    A node is parameter plumbing when it is a weight or constant, or a call all of whose
    inputs are parameter plumbing (a bias `reshape`, a weight `transpose`): it
    computes nothing that depends on the model's input. With `"collapse"` each consumer
    of such nodes keeps a note of them (`Node.params`, `Node.param_bytes`);
    with `"hide"` they simply go; `"show"` returns `g` as it is.
    """
    if mode == "show":
        return g
    if mode not in PARAM_MODES:
        from passlab.errors import unknown

        raise unknown("params mode", str(mode), PARAM_MODES)
    incoming: dict[str, list[Any]] = {}
    for e in g.edges:
        incoming.setdefault(e.dst, []).append(e)
    plumbing: set[str] = set()
    for n in g.nodes:  # nodes are in program order: producers come first
        ins = incoming.get(n.id, [])
        if n.kind in PARAM_KINDS or (n.kind not in TERMINALS and n.kind != "alloc" and ins
                                     and all(e.src in plumbing for e in ins)):
            plumbing.add(n.id)
    if not plumbing:
        return g
    out_bytes: dict[str, int | None] = {}
    for e in g.edges:
        out_bytes.setdefault(e.src, e.bytes)
    roots: dict[str, dict[str, int | None]] = {}  # plumbing node -> the parameters it holds
    for n in g.nodes:
        if n.id in plumbing:
            roots[n.id] = ({n.id: out_bytes.get(n.id)} if n.kind in PARAM_KINDS else
                           {r: b for e in incoming[n.id] for r, b in roots[e.src].items()})
    folded: dict[str, dict[str, int | None]] = {}  # consumer -> {parameter: bytes}
    for e in g.edges:
        if e.src in plumbing and e.dst not in plumbing:
            folded.setdefault(e.dst, {}).update(roots[e.src])
    nodes = []
    for n in g.nodes:
        if n.id in plumbing:
            continue
        got = folded.get(n.id)
        if got and mode == "collapse":
            sizes = list(got.values())
            n = replace(n, params=tuple(got), param_bytes=None if None in sizes else
                        sum(b for b in sizes if b is not None))
        nodes.append(n)
    edges = tuple(e for e in g.edges if e.src not in plumbing and e.dst not in plumbing)
    n_params = sum(1 for n in g.nodes if n.id in plumbing and n.kind in PARAM_KINDS)
    n_calls = len(plumbing) - n_params
    what = "folded into their consumers" if mode == "collapse" else "hidden"
    note = (f"{n_params} parameter{'s' if n_params != 1 else ''}"
            + (f" and {n_calls} call{'s' if n_calls != 1 else ''} that only transform "
               "parameters" if n_calls else "")
            + f" {what} (params='show' draws them)")
    return replace(g, nodes=tuple(nodes), edges=edges, notes=(*g.notes, note))
