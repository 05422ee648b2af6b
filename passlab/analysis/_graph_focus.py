"""Focusing a :class:`~passlab.analysis.graph.FusedGraph`: ``fused_graph(region=...)``
keeps the calls a region names (with the data they touch), ``collapse=True`` folds runs of
identical blocks (e.g. transformer layers) into one ``repeat`` node.

Both take a graph and return a new one through :func:`dataclasses.replace`, so this module
needs nothing from ``graph.py`` but the node kinds it shares with the renderer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from passlab.analysis._graph_render import TERMINALS

__all__ = ["keep_region", "collapse"]


def keep_region(g: Any, region: str | tuple[int, int]) -> Any:
    """The calls whose id, label or ops contain ``region`` (text), or whose binding index
    is in ``[start, stop)``, with the parameters and output they touch."""
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
