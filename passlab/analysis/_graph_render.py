"""How a `FusedGraph` is drawn: Graphviz DOT, a text
listing and HTML (SVG when a layout program is installed, else a table).

Works on any object with the attributes of `FusedGraph`, `Node` and `Edge`
(duck-typed, so this module needs nothing from `graph.py`; it also holds the node-kind
vocabulary, `TERMINALS`, that `graph.py` shares). Every IR name is escaped: DOT
quoted strings and HTML-like labels, `html.escape` in HTML.
"""

from __future__ import annotations

import html
import math
import uuid
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from passlab import _render
from passlab.analysis import _graph_groups
from passlab.analysis._graph_groups import GROUP_PREFIX

__all__ = ["TERMINALS", "OVERLAYS", "MARKS", "bytes_text", "params_text", "shown", "node_bytes",
           "Overlay", "overlay", "to_dot", "to_text", "to_html", "contrast", "text_on"]

#: Node kinds that are data, not computation.
TERMINALS = frozenset({"input", "weight", "constant", "output"})
_FILL = {"input": "#cfe8fc", "output": "#cfe8fc", "weight": "#eeeeee", "constant": "#eeeeee",
         "op": "#fff2cc", "kernel": "#fff2cc", "fused": "#ffd8a8", "composite": "#e5dbff",
         "call": "#d3f9d8", "alloc": "#f8f9fa", "repeat": "#f1f3f5",
         "group": "#e7f5ff"}
#: After an opened source group's name (its cluster label): click to close it.
OPEN_MARK = " \u25be"
#: What ``overlay=`` can colour by: nothing, bytes (edges by tensor bytes, kernels by bytes
#: in+out), or kernels by ``values`` given per node (the Explorer's FLOPs, which need the
#: module: see :func:`passlab._tvm.tir.flops`).
OVERLAYS = ("none", "bytes", "flops", "time")
#: ... or "time": kernels by a profile's seconds per run (``values`` again: node id ->
#: seconds, :func:`passlab.analysis.graph.kernel_times`).
#: Change marks against an earlier graph: node class and outline colour (read on light
#: and dark backgrounds).
MARKS = {"new": ("plx-new", "#2da44e"), "rewritten": ("plx-rewritten", "#d4a72c")}
#: Colour ramps of the bytes and FLOPs overlays, small to large: viridis (perceptually
#: uniform, monotone in lightness, readable by the colour-blind). Kernels take the whole
#: ramp, each under the text colour of :func:`text_on` (4.5:1 or better on every fill);
#: edges take its middle, the part that keeps 3:1 on white and on JupyterLab Dark's
#: #111111, and their width carries the rest of the scale.
FILL_RAMP = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
             "#6ece58", "#b5de2b", "#fde725")
EDGE_RAMP = ("#31688e", "#26828e", "#1f9e89")


def _luminance(colour: str) -> float:
    """WCAG relative luminance of "#rrggbb"."""
    def lin(c: int) -> float:
        x = c / 255
        return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two "#rrggbb" colours (1 to 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)))
    return (lb + 0.05) / (la + 0.05)


def text_on(fill: str) -> str:
    """Black or white, whichever reads better on `fill` (never under 4.5:1 on a ramp
    colour: the two are equal, at 4.58:1, only at luminance 0.18)."""
    return "#000000" if contrast(fill, "#000000") >= contrast(fill, "#ffffff") else "#ffffff"


def params_text(n: Any) -> str:
    """What `params="collapse"` folded into a node: "3 params, 4.5 KiB"."""
    if not n.params:
        return ""
    size = "" if n.param_bytes is None else f", {_render.human_bytes(n.param_bytes)}"
    return f"{len(n.params)} param{'s' if len(n.params) != 1 else ''}{size}"


def bytes_text(e: Any) -> str:
    """An edge's size in the units of every other view ("2.0 KiB", via
    `passlab._render.human_bytes`) when known, else the symbolic size."""
    return _render.human_bytes(e.bytes) if e.bytes is not None else f"{e.size} B"


def shown(g: Any) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[str, ...]]:
    """The nodes, edges and notes a rendering shows (at most `g.max_nodes` nodes)."""
    notes = g.notes
    nodes = g.nodes
    if g.max_nodes is not None and len(nodes) > g.max_nodes:
        nodes = nodes[: g.max_nodes]
        notes += (f"shown {len(nodes)} of {len(g.nodes)} nodes (max_nodes="
                  f"{g.max_nodes}; use region= or collapse=True to focus)",)
    ids = {n.id for n in nodes}
    edges = tuple(e for e in g.edges if e.src in ids and e.dst in ids)
    return nodes, edges, notes


def node_bytes(g: Any, node_id: str) -> int | None:
    """Bytes a node reads and writes: its input tensors, the parameters folded into it
    and each output tensor once (None when a size is symbolic or nothing is known)."""
    ins = [e.bytes for e in g.edges if e.dst == node_id]
    outs = list({e.tensor: e.bytes for e in g.edges if e.src == node_id}.values())
    node = next((n for n in g.nodes if n.id == node_id), None)
    if node is not None and node.params:
        ins.append(node.param_bytes)
    sizes = ins + outs
    if not sizes or any(b is None for b in sizes):
        return None
    return sum(sizes)


@dataclass(frozen=True)
class Overlay:
    """Colours of an overlay (`by`: "bytes" or "flops"): node fills, and for bytes edge
    colours and widths by tensor bytes, on a log scale from `lo` to `hi` (None:
    nothing known)."""

    fills: dict[str, str]
    edges: dict[int, tuple[str, float]]  # edge position -> (colour, pen width)
    lo: float | None
    hi: float | None
    by: str = "bytes"


_NEEDS_VALUES = {
    "flops": "overlay='flops' needs the FLOPs of each kernel, which come from the module "
             "the graph was drawn from, and this graph has none (made by hand?): draw it "
             "with passlab.analysis.fused_graph(module_or_step), or use overlay='bytes'",
    "time": "overlay='time' needs a profile: g.to_dot('time', profile=build.profile()) (in "
            "the Explorer: the Profile tab's Profile button, or Explorer(build, profile=p))"}


def overlay(g: Any, by: str, values: Mapping[str, float | None] | None = None
            ) -> Overlay | None:
    """The overlay `by` of graph `g`'s shown part: "none", "bytes", or "flops" with
    `values` (node id -> FLOPs; the graph alone does not know them)."""
    if by not in OVERLAYS:
        raise ValueError(f"overlay must be one of {', '.join(map(repr, OVERLAYS))}, not {by!r}")
    if by == "none":
        return None
    nodes, edges, _ = shown(g)
    if by in ("flops", "time"):
        if values is None:
            raise ValueError(_NEEDS_VALUES[by])
        sizes = {n.id: values.get(n.id) for n in nodes if n.kind not in TERMINALS}
        edges = ()
    else:
        sizes = {n.id: node_bytes(g, n.id) for n in nodes if n.kind not in TERMINALS}
    known = [b for b in (*sizes.values(), *(e.bytes for e in edges)) if b]
    lo, hi = (min(known), max(known)) if known else (None, None)

    def t(b: float | None) -> float | None:
        if not b or lo is None or hi is None:
            return None
        return 0.0 if hi == lo else math.log(b / lo) / math.log(hi / lo)

    fills = {i: _ramp(FILL_RAMP, f) for i, b in sizes.items() if (f := t(b)) is not None}
    out = {k: (_ramp(EDGE_RAMP, f), round(1 + 4 * f, 2))
           for k, e in enumerate(edges) if (f := t(e.bytes)) is not None}
    return Overlay(fills, out, lo, hi, by)


def _ramp(stops: tuple[str, ...], f: float) -> str:
    """The colour at `f` (0..1) of a ramp through `stops`, as #rrggbb."""
    f = min(1.0, max(0.0, f)) * (len(stops) - 1)
    k = min(int(f), len(stops) - 2)
    a, b = stops[k], stops[k + 1]
    mix = [round(int(a[i:i + 2], 16) + (int(b[i:i + 2], 16) - int(a[i:i + 2], 16)) * (f - k))
           for i in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def to_dot(g: Any, *, overlay_by: str = "none", marks: Mapping[str, str] | None = None,
           title: bool = True, values: Mapping[str, float | None] | None = None,
           opened: Collection[str] = (), rankdir: str = "TB") -> str:
    """Graphviz DOT source; every name is escaped (quoted strings, HTML-like labels).

    `overlay_by="bytes"` colours kernels by bytes in+out and edges by tensor bytes;
    `marks` maps node ids to "new" or "rewritten" (a class and a coloured outline);
    `title=False` leaves out the function name and notes (a view that prints them);
    source groups (`g.groups`) not in `opened` are drawn as one node each, opened
    ones as clusters (`passlab.analysis._graph_groups.fold`). `rankdir` is Graphviz's
    ("TB": top to bottom, "LR"), or "auto": left to right for a graph far deeper than
    wide (`_rankdir`), which top to bottom would draw as a tall thin column that a
    viewport can only show whole at an unreadable scale."""
    g = _graph_groups.fold(g, opened)
    nodes, edges, notes = shown(g)
    ov = overlay(g, overlay_by, values)
    marks = marks or {}
    label = f"{g.function}" + "".join(f"\n{n}" for n in notes)
    # a large graph's layout bounded (_render.BOUNDED_LAYOUT): its cost grows with the edges
    bounded = _render.layout_attrs(len(edges))
    out = [f"digraph {_q(g.function)} {{",
           f"  graph [rankdir={_rankdir(nodes, edges) if rankdir == 'auto' else rankdir}, "
           "fontname=Helvetica, labelloc=t"
           + (f", {bounded}" if bounded else "")
           + (f", label={_q(label)}];" if title else "];"),
           "  node [fontname=Helvetica, fontsize=10];",
           # edge labels as large as node text: 10 px at the views' smallest scale
           "  edge [fontname=Helvetica, fontsize=10, color=\"#555555\"];"]
    by_cluster: dict[str | None, list[str]] = {}
    for n in nodes:
        by_cluster.setdefault(n.cluster, []).append(
            f"{_q(n.id)} {_node_attrs(n, ov.fills.get(n.id) if ov else None, marks.get(n.id))};")
    out += ["  " + line for line in by_cluster.pop(None, [])]
    children: dict[str | None, list[Any]] = {}
    for c in g.clusters:
        children.setdefault(c.parent, []).append(c)

    def emit(c: Any, depth: int) -> None:
        pad = "  " * depth
        out.append(f"{pad}subgraph {_q('cluster_' + c.id)} {{")
        if getattr(c, "kind", "codegen") == "source":  # an opened group: click to close
            out.append(f"{pad}  label={_q(c.label + OPEN_MARK)}; style=\"rounded\"; "
                       f"color=\"#868e96\"; class=\"plx-group-open\"; "
                       f"tooltip={_q(c.id[len(GROUP_PREFIX):] + ' (click to close)')};")
        else:
            out.append(f"{pad}  label={_q(c.label)}; style=\"rounded,dashed\"; "
                       f"color=\"#7048e8\";")
        out.extend(f"{pad}  {line}" for line in by_cluster.get(c.id, []))
        for sub in children.get(c.id, []):
            emit(sub, depth + 1)
        out.append(f"{pad}}}")

    for c in children.get(None, []):
        emit(c, 1)
    for k, e in enumerate(edges):
        label = (f"{e.tensor}\n{e.dtype}, "
                 + (bytes_text(e) if e.bytes is not None else "symbolic sizes")
                 if getattr(e, "count", 1) > 1  # tensors of a closed group, one edge
                 else f"{e.tensor}\n{e.shape_text} {e.dtype}\n{bytes_text(e)}")
        extra = ""
        if ov is not None and k in ov.edges:
            colour, width = ov.edges[k]
            extra = f', class="plx-ov", color="{colour}", penwidth={width}'
        out.append(f"  {_q(e.src)} -> {_q(e.dst)} [label={_q(label)}{extra}];")
    out.append("}")
    return "\n".join(out) + "\n"


#: A graph at least this many ranks deep, and `TALL` times deeper than its widest rank,
#: is drawn left to right by `rankdir="auto"`.
DEEP, TALL = 8, 3


def _rankdir(nodes: Sequence[Any], edges: Sequence[Any]) -> str:
    """"LR" for a graph far deeper than wide (its longest path against its widest rank,
    ranks by longest path from the inputs), else "TB"."""
    ids = {n.id for n in nodes}
    succ: dict[str, list[str]] = {i: [] for i in ids}
    indeg = dict.fromkeys(ids, 0)
    for e in edges:
        if e.src in ids and e.dst in ids and e.src != e.dst:
            succ[e.src].append(e.dst)
            indeg[e.dst] += 1
    rank = dict.fromkeys(ids, 0)
    ready = [i for i, d in indeg.items() if d == 0]
    while ready:  # Kahn's order: a node's rank is 1 + its deepest predecessor's
        i = ready.pop()
        for j in succ[i]:
            rank[j] = max(rank[j], rank[i] + 1)
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    if not rank:
        return "TB"
    depth = max(rank.values()) + 1
    width = max(Counter(rank.values()).values())
    return "LR" if depth >= DEEP and depth >= TALL * width else "TB"


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


def to_svg(g: Any, *, overlay_by: str = "none", marks: Mapping[str, str] | None = None,
           title: bool = True, values: Mapping[str, float | None] | None = None,
           opened: Collection[str] = (), rankdir: str = "TB") -> str:
    """The laid-out SVG element (no XML prolog); `RuntimeError` without a layout program."""
    import re

    svg = _render.dot_to_svg(to_dot(g, overlay_by=overlay_by, marks=marks, title=title,
                                    values=values, opened=opened, rankdir=rankdir))
    # dot writes "plx&#45;new": plain class names, for CSS and readers of the markup
    return re.sub(r'class="([^"&]*&#45;[^"]*)"',
                  lambda m: f'class="{m.group(1).replace("&#45;", "-")}"', svg)


def to_html(g: Any, *, overlay_by: str = "none", zoom: bool = True) -> str:
    """SVG when a layout program is installed, else an HTML table; IR names are escaped.

    With `zoom` a large SVG sits in a scrolling box with fit/50%/100%/200% buttons that
    need no JavaScript (radio buttons and CSS: notebook front ends drop scripts)."""
    nodes, edges, notes = shown(g)
    head = (f"<p><b>fused graph of {_render.esc(g.function)}</b>: {len(g.nodes)} "
            f"nodes, {len(g.edges)} edges</p>"
            + "".join(f'<div class="passlab-note">{_render.esc(n)}</div>' for n in notes))
    if _render.layout_program():
        try:  # nothing can be clicked open here: every source group drawn open; the
            # title and notes are the head's above (not printed twice)
            svg = to_svg(g, overlay_by=overlay_by, title=False,
                         opened=[grp.id for grp in getattr(g, "groups", ())])
            return (f'<div class="passlab-graph"><style>{GRAPH_CSS}</style>{head}'
                    f'{zoomable(svg) if zoom else svg}</div>')
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


#: The drawing in a notebook output takes the page's theme: Graphviz's white page becomes
#: transparent, the title, edge labels and plain edges take the page's text colour
#: (JupyterLab's --jp-content-font-color*, else the inherited colour). Overlay edges keep
#: their colours; node fills are light tints under dark ink in either theme.
GRAPH_CSS = """
.passlab-graph svg g.graph > polygon[fill="white"],
.passlab-graph svg g.graph > polygon[fill="#ffffff"] { fill: transparent; }
.passlab-graph svg g.graph > text:not([fill]), .passlab-graph svg g.edge text:not([fill]),
.passlab-graph svg g.cluster > text:not([fill]) {
  fill: var(--jp-content-font-color1, currentColor); }
.passlab-graph svg g.edge path[stroke="#555555"] {
  stroke: var(--jp-content-font-color2, currentColor); }
.passlab-graph svg g.edge polygon[stroke="#555555"] {
  fill: var(--jp-content-font-color2, currentColor);
  stroke: var(--jp-content-font-color2, currentColor); }
"""

_ZOOM_CSS = """
.passlab-zoom { position: relative; }
.passlab-zoom > input { position: absolute; opacity: 0; width: 1px; height: 1px; margin: 0; }
.passlab-zoom > label { display: inline-block; margin: 0 2px 4px 0; padding: 0 8px;
  border: 1px solid rgba(128,128,128,.5); border-radius: 3px; cursor: pointer;
  font: 12px/1.6 sans-serif; color: inherit; }
.passlab-zoom > input:checked + label { background: rgba(128,128,128,.25); font-weight: 600; }
.passlab-zoom > input:focus-visible + label { outline: 2px solid #1c7ed6; }
.passlab-zoom-box { overflow: auto; max-height: 80vh; max-width: 100%;
  border: 1px solid rgba(128,128,128,.3); border-radius: 3px; }
.passlab-zoom-box > svg { display: block; }
"""


def zoomable(svg: str) -> str:
    """An SVG in a scrolling box with zoom buttons made of radio buttons and CSS (each
    output gets its own group name and rules): "fit" (the width of the output, the
    default for a graph wider than it), 50%, 100% and 200%."""
    import re

    key = "passlab-z" + uuid.uuid4().hex[:10]
    size = re.match(r'<svg[^>]*?\swidth="([\d.]+)pt"[^>]*?\sheight="([\d.]+)pt"', svg)
    if size is None:
        return svg
    w, h = float(size.group(1)), float(size.group(2))
    rules = [f".{key} > .passlab-z-fit:checked ~ .passlab-zoom-box > svg "
             "{ max-width: 100%; height: auto; }"]
    levels = [("fit", "fit")]
    for pct in (50, 100, 200):
        levels.append((str(pct), f"{pct}%"))
        rules.append(f".{key} > .passlab-z-{pct}:checked ~ .passlab-zoom-box > svg "
                     f"{{ width: {w * pct / 100:.1f}pt; height: {h * pct / 100:.1f}pt; "
                     "max-width: none; }")
    radios = "".join(
        f'<input type="radio" name="{key}" id="{key}-{v}" class="passlab-z-{v}"'
        f'{" checked" if v == "fit" else ""}><label for="{key}-{v}">{text}</label>'
        for v, text in levels)
    style = f"<style>{_ZOOM_CSS}{chr(10).join(rules)}</style>"
    return (f'<div class="passlab-zoom {key}">{style}{radios}'
            f'<div class="passlab-zoom-box" data-plx-scroll>{svg}</div></div>')


def _q(s: str) -> str:
    """A DOT quoted string: backslashes and quotes escaped, newlines as DOT line breaks."""
    parts = str(s).split("\n")
    return '"' + "\\n".join(p.replace("\\", "\\\\").replace('"', '\\"') for p in parts) + '"'


def _group_attrs(n: Any, fill: str | None, mark: str | None) -> str:
    """A closed source group: its name, how many calls it holds, double outline."""
    esc = html.escape
    kernels = f"{n.count} call{'s' if n.count != 1 else ''}"
    lines = [f"<B>{esc(n.label)} \u25b8</B>", f'<FONT POINT-SIZE="9">{kernels}</FONT>']
    extra = ""
    if mark in MARKS:
        cls, colour = MARKS[mark]
        extra += f', class="plx-group {cls}", color="{colour}", penwidth=3'
    else:
        extra += ', class="plx-group"'
    if fill:
        extra += f", fontcolor={_q(text_on(fill))}"
    tip = f"{n.source[0] if n.source else n.label}: {kernels} (click to open)"
    return (f"[shape=box, style=\"rounded,filled\", peripheries=2, "
            f"fillcolor={_q(fill or _FILL['group'])}{extra}, tooltip={_q(tip)}, "
            f"label=<{'<BR/>'.join(lines)}>]")


def _node_attrs(n: Any, fill: str | None = None, mark: str | None = None) -> str:
    esc = html.escape
    if n.kind == "group":
        return _group_attrs(n, fill, mark)
    lines = [f"<B>{esc(n.label)}</B>"]
    if n.kind in TERMINALS and n.label != n.id:
        lines[0] = f"<B>{esc(n.id)}</B>"
    if n.ops and n.ops != (n.label,):
        rows = [" + ".join(n.ops[i:i + 6]) for i in range(0, len(n.ops), 6)]  # wrap long lists
        lines.append(f'<FONT POINT-SIZE="9">{"<BR/>".join(esc(r) for r in rows)}</FONT>')
    # an overlay fill may be dark: the small lines take its text colour, not grey
    small = text_on(fill) if fill else "#666666"
    if n.pattern is not None:
        lines.append(f'<FONT POINT-SIZE="8" COLOR="{small}">{esc(n.pattern_name)}</FONT>')
    if n.params:
        lines.append(f'<FONT POINT-SIZE="8" COLOR="{small}">+ {esc(params_text(n))}</FONT>')
    shape = {"input": "oval", "output": "oval", "weight": "note", "constant": "note"}.get(
        n.kind, "box")
    style = "filled" if n.kind in TERMINALS else "rounded,filled"
    size = ", fontsize=8, height=0.3" if n.kind in ("weight", "constant") else ""
    if mark in MARKS:
        cls, colour = MARKS[mark]
        size += f', class="{cls}", color="{colour}", penwidth=3'
    if fill:
        size += f", fontcolor={_q(text_on(fill))}"
    fill = fill or _FILL.get(n.kind, "#ffffff")
    return (f"[shape={shape}, style={_q(style)}, fillcolor={_q(fill)}"
            f"{size}, label=<{'<BR/>'.join(lines)}>]")
