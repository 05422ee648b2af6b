"""How a :class:`~passlab.analysis.graph.FusedGraph` is drawn: Graphviz DOT, a text
listing and HTML (SVG when a layout program is installed, else a table).

Works on any object with the attributes of ``FusedGraph``, ``Node`` and ``Edge``
(duck-typed, so this module needs nothing from ``graph.py``; it also holds the node-kind
vocabulary, :data:`TERMINALS`, that ``graph.py`` shares). Every IR name is escaped: DOT
quoted strings and HTML-like labels, ``html.escape`` in HTML.
"""

from __future__ import annotations

import html
from typing import Any

from passlab import _render

__all__ = ["TERMINALS", "bytes_text", "params_text", "shown", "to_dot", "to_text", "to_html"]

#: Node kinds that are data, not computation.
TERMINALS = frozenset({"input", "weight", "constant", "output"})
_FILL = {"input": "#cfe8fc", "output": "#cfe8fc", "weight": "#eeeeee", "constant": "#eeeeee",
         "op": "#fff2cc", "kernel": "#fff2cc", "fused": "#ffd8a8", "composite": "#e5dbff",
         "call": "#d3f9d8", "alloc": "#f8f9fa", "repeat": "#f1f3f5"}


def params_text(n: Any) -> str:
    """What ``params="collapse"`` folded into a node: "3 params, 4.5 KiB"."""
    if not n.params:
        return ""
    size = "" if n.param_bytes is None else f", {_render.human_bytes(n.param_bytes)}"
    return f"{len(n.params)} param{'s' if len(n.params) != 1 else ''}{size}"


def bytes_text(e: Any) -> str:
    """An edge's size: exact bytes when known, else the symbolic size."""
    return f"{e.bytes} B" if e.bytes is not None else f"{e.size} B"


def shown(g: Any) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[str, ...]]:
    """The nodes, edges and notes a rendering shows (at most ``g.max_nodes`` nodes)."""
    notes = g.notes
    nodes = g.nodes
    if g.max_nodes is not None and len(nodes) > g.max_nodes:
        nodes = nodes[: g.max_nodes]
        notes += (f"shown {len(nodes)} of {len(g.nodes)} nodes (max_nodes="
                  f"{g.max_nodes}; use region= or collapse=True to focus)",)
    ids = {n.id for n in nodes}
    edges = tuple(e for e in g.edges if e.src in ids and e.dst in ids)
    return nodes, edges, notes


def to_dot(g: Any) -> str:
    """Graphviz DOT source; every name is escaped (quoted strings, HTML-like labels)."""
    nodes, edges, notes = shown(g)
    title = f"{g.function}" + "".join(f"\n{n}" for n in notes)
    out = [f"digraph {_q(g.function)} {{",
           f"  graph [rankdir=TB, fontname=Helvetica, labelloc=t, label={_q(title)}];",
           "  node [fontname=Helvetica, fontsize=10];",
           "  edge [fontname=Helvetica, fontsize=8, color=\"#555555\"];"]
    by_cluster: dict[str | None, list[str]] = {}
    for n in nodes:
        by_cluster.setdefault(n.cluster, []).append(f"{_q(n.id)} {_node_attrs(n)};")
    out += ["  " + line for line in by_cluster.pop(None, [])]
    children: dict[str | None, list[Any]] = {}
    for c in g.clusters:
        children.setdefault(c.parent, []).append(c)

    def emit(c: Any, depth: int) -> None:
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
        label = f"{e.tensor}\n{e.shape_text} {e.dtype}\n{bytes_text(e)}"
        out.append(f"  {_q(e.src)} -> {_q(e.dst)} [label={_q(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def to_text(g: Any) -> str:
    """A readable listing: one line per node, its input tensors indented below."""
    nodes, edges, notes = shown(g)
    counts: dict[str, int] = {}
    for n in g.nodes:
        counts[n.kind] = counts.get(n.kind, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    lines = [f"fused graph of {g.function}: {len(g.nodes)} nodes ({summary}), "
             f"{len(g.edges)} edges"] + [f"  note: {n}" for n in notes]
    incoming: dict[str, list[Any]] = {}
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
        if n.params:
            head += f" (+{params_text(n)}: {', '.join(n.params)})"
        lines.append(head)
        lines += [f"      <- {e.label}" + (f" (from {e.src})" if e.src != e.tensor else "")
                  for e in incoming.get(n.id, [])]
    return "\n".join(lines)


def to_html(g: Any) -> str:
    """SVG (``g.to_svg()``) when a layout program is installed, else an HTML table; IR
    names are escaped."""
    nodes, edges, notes = shown(g)
    head = (f"<p><b>fused graph of {_render.esc(g.function)}</b>: {len(g.nodes)} "
            f"nodes, {len(g.edges)} edges</p>"
            + "".join(f'<div class="passlab-note">{_render.esc(n)}</div>' for n in notes))
    if _render.layout_program():
        try:
            svg = g.to_svg()
            svg = svg[svg.find("<svg"):]  # drop the XML prolog and doctype
            return f'<div class="passlab-graph">{head}{svg}</div>'
        except (RuntimeError, OSError):
            pass  # fall back to the table
    incoming: dict[str, list[str]] = {}
    for e in edges:
        incoming.setdefault(e.dst, []).append(e.label + (f" from {e.src}" if e.src != e.tensor
                                                          else ""))
    rows = [[n.id, n.kind, n.label, " + ".join(n.ops), n.pattern_name,
             "; ".join(incoming.get(n.id, [])), params_text(n)] for n in nodes]
    table = _render.html_table(["node", "kind", "label", "ops", "pattern", "inputs", "params"],
                               rows,
                               classes=[n.kind for n in nodes])
    return f'<div class="passlab-graph">{head}{table}</div>'


def _q(s: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, newlines as DOT line breaks."""
    parts = str(s).split("\n")
    return '"' + "\\n".join(p.replace("\\", "\\\\").replace('"', '\\"') for p in parts) + '"'


def _node_attrs(n: Any) -> str:
    esc = html.escape
    lines = [f"<B>{esc(n.label)}</B>"]
    if n.kind in TERMINALS and n.label != n.id:
        lines[0] = f"<B>{esc(n.id)}</B>"
    if n.ops and n.ops != (n.label,):
        rows = [" + ".join(n.ops[i:i + 6]) for i in range(0, len(n.ops), 6)]  # wrap long lists
        lines.append(f'<FONT POINT-SIZE="9">{"<BR/>".join(esc(r) for r in rows)}</FONT>')
    if n.pattern is not None:
        lines.append(f'<FONT POINT-SIZE="8" COLOR="#666666">{esc(n.pattern_name)}</FONT>')
    if n.params:
        lines.append(f'<FONT POINT-SIZE="8" COLOR="#666666">+ {esc(params_text(n))}</FONT>')
    shape = {"input": "oval", "output": "oval", "weight": "note", "constant": "note"}.get(
        n.kind, "box")
    style = "filled" if n.kind in TERMINALS else "rounded,filled"
    size = ", fontsize=8, height=0.3" if n.kind in ("weight", "constant") else ""
    return (f"[shape={shape}, style={_q(style)}, fillcolor={_q(_FILL.get(n.kind, '#ffffff'))}"
            f"{size}, label=<{'<BR/>'.join(lines)}>]")
