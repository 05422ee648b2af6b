"""Provenance drawn: the input graph and the fused graph side by side, linked both ways.

Every operator node of the input graph carries `data-op` (its binding name) and
`data-kernels` (a JSON list of the kernels `provenance` says it ended
in); every kernel node of the fused graph carries `data-kernel`, `data-ops` (JSON list,
`Provenance.ops_of`) and `data-node` (its graph node id). The rows of the op table
below carry the same `data-op`/`data-kernels`. A page highlights the linked elements on
hover (the front end's `provenance.js`, in the Explorer and the report); without script the
view still reads as two graphs and a table. Every IR name is escaped.

Examples
--------
>>> import passlab
>>> from passlab.analysis._provenance_view import provenance_view
>>> view = provenance_view(passlab.build(passlab.models.mlp()).trace)
>>> view.step.name, view.links()["lv"]
('FuseTIR', ('fused_matmul_add_relu', ('matmul', 'add', 'relu')))
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from passlab import _render, _tvm
from passlab._render import esc
from passlab.analysis import _graph_groups
from passlab.analysis.graph import TERMINALS, FusedGraph, fused_graph
from passlab.analysis.provenance import Provenance, input_module, provenance
from passlab.recording import numbering

__all__ = ["ProvenanceView", "provenance_view", "fused_step", "CSS"]

#: Layout and highlight rules; JupyterLab's theme variables with fallbacks for pages.
CSS = """
.passlab-prov-graphs { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-start; }
.passlab-prov-side { flex: 1 1 340px; min-width: 0; }
.passlab-prov-head { font-size: 12px; padding: 2px 0 4px; }
.passlab-prov-box { overflow: auto; max-height: 70vh; border: 1px solid rgba(128,128,128,.3);
  border-radius: 3px; }
.passlab-prov-box svg { display: block; max-width: 100%; height: auto; }
.passlab-prov [data-op], .passlab-prov [data-kernel] { cursor: pointer; }
.passlab-prov-active g.node:not(.passlab-prov-hl) { opacity: .4; }
.passlab-prov g.node.passlab-prov-hl polygon, .passlab-prov g.node.passlab-prov-hl path,
.passlab-prov g.node.passlab-prov-hl ellipse { stroke: #e8590c; stroke-width: 3px; }
.passlab-prov tr.passlab-prov-hl td { background: rgba(232,89,12,.22); }
.passlab-prov-table { margin-top: 8px; }
"""

@dataclass(frozen=True, eq=False)
class ProvenanceView(_render.Displayable):
    """The input graph and the fused graph after `step`, linked by
    `provenance` (see `provenance_view`). `note` says why the fused graph
    is not the one after the pass that was asked for, if it is not."""

    provenance: Provenance
    input_graph: FusedGraph
    fused_graph: FusedGraph
    step: Any
    note: str = ""
    trace_steps: tuple[Any, ...] = ()

    def links(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Fused-graph node id -> (kernel, the input's operator calls it holds), for every
        node that runs one. The kernels are those of `step`: a kernel the pipeline
        turns into something else later (`reshape` into `vm.builtin.reshape`) still
        holds its operators here."""
        return dict(self._links)

    @functools.cached_property
    def _links(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        held: dict[str, list[str]] = {}
        for op, kernel in self.kernel_at_step().items():
            held.setdefault(kernel, []).append(op)
        return {n.id: (n.label, tuple(held[n.label])) for n in self.fused_graph.nodes
                if n.kind not in TERMINALS and n.label in held}

    def kernel_at_step(self) -> dict[str, str]:
        """Operator call -> the kernel (or Relax function) that runs it in the module
        after `step`, replaying each op's history up to that step."""
        upto = {s.label for s in self.trace_steps if s.index <= self.step.index}
        out = {}
        for o in self.provenance:
            name = _replay([event for label, event in o.history if label in upto])
            if name is not None:
                out[o.op] = name
        return out

    def _input_attrs(self) -> dict[str, dict[str, str]]:
        ops = {o.op: o for o in self.provenance}
        kernels: dict[str, list[str]] = {}
        for kernel, held in self._links.values():
            for op in held:
                if kernel not in kernels.setdefault(op, []):
                    kernels[op].append(kernel)
        return {n.id: {"data-op": n.id, "data-kernels": json.dumps(kernels.get(n.id, [])),
                       "data-fate": ops[n.id].fate,
                       **({"data-source": ", ".join(ops[n.id].source)} if ops[n.id].source
                          else {})}
                for n in self.input_graph.nodes if n.id in ops}

    def _fused_attrs(self) -> dict[str, dict[str, str]]:
        out = {}
        for nid, (kernel, ops) in self._links.items():
            src = list(dict.fromkeys(x for op in ops for x in self.provenance[op].source))
            out[nid] = {"data-kernel": kernel, "data-ops": json.dumps(list(ops)),
                        "data-node": nid,
                        **({"data-source": ", ".join(src[:6]) + (" ..." if len(src) > 6 else "")}
                           if src else {})}
        return out

    def _group_attrs(self, g: FusedGraph) -> dict[str, dict[str, str]]:
        """A closed group's box (node `group:<path>`): what its calls hold, so that
        hovering it or what it holds marks both sides (`data-group-ops`,
        `data-group-kernels`)."""
        if not g.groups:
            return {}
        links = self._links
        kernels_of: dict[str, list[str]] = {}
        for kernel, held in links.values():
            for op in held:
                kernels_of.setdefault(op, []).append(kernel)
        out = {}
        for grp in g.groups:
            if g is self.fused_graph:
                ops = [op for nid in grp.nodes if nid in links for op in links[nid][1]]
                kernels = [links[nid][0] for nid in grp.nodes if nid in links]
            else:
                ops = [nid for nid in grp.nodes if nid in kernels_of]
                kernels = [k for op in ops for k in kernels_of[op]]
            out[_graph_groups.GROUP_PREFIX + grp.id] = {
                "data-group": grp.id,
                "data-group-ops": json.dumps(list(dict.fromkeys(ops))),
                "data-group-kernels": json.dumps(list(dict.fromkeys(kernels)))}
        return out

    def to_text(self) -> str:
        s = self.step
        lines = [f"input graph of {self.input_graph.function} ({len(self.provenance)} "
                 f"operator calls) -> fused graph after {numbering.ref(s)}"]
        if self.note:
            lines.append(f"note: {self.note}")
        lines += [f"  {nid} = {kernel}: {', '.join(ops) or '-'}"
                  for nid, (kernel, ops) in self.links().items()]
        return "\n".join(lines) + "\n" + self.provenance.to_text()

    @property
    def groups(self) -> tuple[str, ...]:
        """The source groups of both graphs (the model's node paths), outermost first."""
        found = [grp.id for g in (self.input_graph, self.fused_graph) for grp in g.groups]
        return tuple(dict.fromkeys(found))

    def first_opened(self) -> tuple[str, ...]:
        """The groups a first view opens (`_graph_groups.first_opened`: level by level
        while each drawing stays small)."""
        return _graph_groups.first_opened((self.input_graph, self.fused_graph))

    def to_html(self, box_class: str = "", opened: Collection[str] | None = None) -> str:
        """Both graphs (SVG with a layout program, else tables), then the op table.
        `box_class` is added to each graph's box (a page's own graph styling).

        The graphs are grouped by the model's node paths (as the graph pane's): each
        group not in `opened` is one box, each opened one a frame, in both graphs at
        once. None opens every group (a page where nothing can be clicked open);
        the Explorer passes what the user opened, starting from `first_opened`."""
        s = self.step
        box = f"passlab-prov-box {box_class}".strip()
        static = opened is None
        shown = list(self.groups) if opened is None else [g for g in self.groups if g in opened]
        inputs, fused = self._attrs
        sides = [
            ("passlab-prov-input", f"Input: {self.input_graph.function} before the first "
             f"pass, {len(self.provenance)} operator calls", self.input_graph, "pi", inputs),
            ("passlab-prov-fused", f"Fused graph after {numbering.ref(s)}, "
             f"{len(self.provenance.kernels)} kernels hold the input's operators",
             self.fused_graph, "pf", fused),
        ]
        # the graphs' notes go above them, not into the drawing: a wide title would shrink
        # the nodes of a narrow graph when it is scaled to its column
        cols = "".join(
            f'<div class="passlab-prov-side {cls}"><div class="passlab-prov-head"><b>'
            f"{esc(head)}</b>" + "".join(f'<div class="passlab-note">{esc(n)}</div>'
                                         for n in g.notes)
            + f'</div><div class="{esc(box)}">'
            f"{_graph_html(replace(g, notes=()), prefix, attrs, shown)}"
            "</div></div>" for cls, head, g, prefix, attrs in sides)
        note = f'<div class="passlab-note">{esc(self.note)}</div>' if self.note else ""
        hint = ('<div class="passlab-note">Hover an operator to see the kernels it ended in, '
                "a kernel to see the operators it holds.</div>")
        if self.groups:
            top = len({grp.id for g in (self.input_graph, self.fused_graph) for grp in g.groups
                       if grp.parent is None})
            hint += ('<div class="passlab-note plx-prov-groups">Grouped by the model\'s node '
                     f"paths: {len(self.groups)} groups, {len(shown)} open"
                     + ("; every group drawn open" if static else
                        "; click a double-framed box to open it, the name of a frame to "
                        f"close it ({top} at the top)") + ".</div>")
        return (f'<style>{CSS}</style><div class="passlab-prov" data-step="{esc(str(s.index))}" '
                f'data-open="{esc(json.dumps(shown))}">'
                f'{note}<div class="passlab-prov-table">{self._table_html}</div>{hint}'
                f'<div class="passlab-prov-graphs">{cols}</div></div>')

    @functools.cached_property
    def _attrs(self) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
        """The data-* attributes of the input graph's and the fused graph's nodes (the
        same whichever groups are open: a drawing takes those of what it shows)."""
        return ({**self._input_attrs(), **self._group_attrs(self.input_graph)},
                {**self._fused_attrs(), **self._group_attrs(self.fused_graph)})

    @functools.cached_property
    def _table_html(self) -> str:
        """The op table with its search box (the same whichever groups are open)."""
        # the op table first, searchable (a page's script filters its rows by
        # data-search), the source model's node names beside each op; the graphs below
        rows = [{"data-op": o.op, "data-kernels": json.dumps(list(o.kernels)),
                 "data-fate": o.fate,
                 "data-search": " ".join((o.op, o.operator, *o.kernels, *o.source)).lower()}
                for o in self.provenance]
        header, body = self.table()
        # the long names wrap at their token boundaries, so that every column fits
        # a pane (the kernels and what became of each op first of all)
        table = _render.html_table(
            header, body, classes=[o.fate for o in self.provenance], attrs=rows,
            caption=self.provenance.to_text().split("\n", 1)[0],
            wrap=[k for k, h in enumerate(header) if h in ("source", "kernels", "note")])
        search = ('<input type="search" class="passlab-prov-search" aria-label="filter the '
                  'operator calls" placeholder="filter: op, kernel or source name '
                  '(/layer1/...)">')
        return search + table

    def table(self) -> tuple[list[str], list[list[str]]]:
        """The op table's header and rows: op, then `source` (the ONNX node or PyTorch
        module path each came from, when the input carries them), then what became of it."""
        header, rows = self.provenance._columns(), self.provenance._rows()
        if "source" not in header:
            return header, rows
        k = header.index("source")
        order = [0, k] + [i for i in range(1, len(header)) if i != k]
        return [header[i] for i in order], [[r[i] for i in order] for r in rows]


def _replay(events: list[str]) -> str | None:
    """Where an operator's binding runs after these history events (see
    `provenance`): the kernel it calls, the Relax function it moved into
    (until FuseTIR makes that a kernel), or None once it is gone."""
    name: str | None = None
    inside = False  # moved into a Primitive function: its own calls are not graph nodes
    for event in events:
        if event.startswith("moved into "):
            name, inside = event.removeprefix("moved into "), True
        elif event.startswith("merged into kernel "):
            name, inside = event.removeprefix("merged into kernel "), False
        elif event.startswith("kernel ") and event.endswith(" called directly"):
            name, inside = event[len("kernel "):-len(" called directly")], False
        elif event.startswith("calls "):
            name = name if inside else event.removeprefix("calls ")
        else:  # folded, removed, or its kernel removed
            name, inside = None, False
    return name


def _dot_form(name: str) -> str:
    return "\\n".join(p.replace("\\", "\\\\") for p in name.split("\n"))


def _attr_text(attrs: dict[str, str]) -> str:
    return "".join(f' {k}="{esc(v)}"' for k, v in attrs.items())


def _graph_html(g: FusedGraph, prefix: str, attrs: dict[str, dict[str, str]],
                opened: Collection[str] = ()) -> str:
    """The graph as SVG with `attrs` on the node groups (ids prefixed, so that two
    graphs on one page do not share ids), its source groups in `opened` drawn open and
    the others closed, or as a table of its nodes without a layout program."""
    if _render.layout_program():
        try:
            svg = g.to_svg(opened=opened)  # the other graph's groups are ignored
        except (RuntimeError, OSError):
            svg = ""
        start = svg.find("<svg")
        if start >= 0:
            svg = svg[start:].replace('<g id="', f'<g id="{prefix}-')

            # Graphviz titles a node with its DOT ID as written: backslashes doubled,
            # newlines as \n (see _graph_render._q); quotes and <>& are XML entities
            by_title = {**attrs, **{_dot_form(k): v for k, v in attrs.items()}}

            def link(m: re.Match) -> str:
                extra = by_title.get(html.unescape(m.group(3)))
                cls = "node" + m.group(2) + (" passlab-prov-linked" if extra else "")
                # the hover label names the source model's nodes (ONNX, PyTorch)
                src = (extra or {}).get("data-source")
                tip = f"{m.group(3)}&#10;from {esc(src)}" if src else m.group(3)
                return (f'<g id="{m.group(1)}" class="{cls}"{_attr_text(extra or {})}>'
                        f"<title>{tip}</title>")

            return re.sub(r'<g id="(' + prefix + r'-node\d+)" class="node([^"]*)">\s*'
                          r"<title>(.*?)</title>", link, svg, flags=re.DOTALL)
    nodes = [n for n in g.nodes if n.kind not in ("weight", "constant")]
    return _render.html_table(["node", "kind", "label", "ops"],
                              [[n.id, n.kind, n.label, " + ".join(n.ops)] for n in nodes],
                              classes=[n.kind for n in nodes],
                              attrs=[attrs.get(n.id, {}) for n in nodes])


def fused_step(trace: Any, step: Any = None) -> tuple[Any, str]:
    """The step whose fused graph a provenance view draws for `step`, and a note when
    it is another one: the step itself once fusion is done, else FuseTIR; a failed or
    inner step or one without a Relax function (TIR stage) stands back to the last
    main-chain pass with a Relax function."""
    trace = getattr(trace, "trace", trace)
    relax = _tvm.ObjectCache(_tvm.has_relax_function)

    def drawable(s: Any) -> bool:  # a main-chain pass with a Relax module after it
        return s.on_main_chain and not s.failed and s.after is not None and relax(s.after)

    # each scan stops at its first hit: a trace of 20,000 steps is not listed whole
    steps = tuple(trace)
    fuse = next((s for s in steps if s.name == "FuseTIR" and drawable(s)), None)
    last = next((s for s in reversed(steps) if drawable(s)), None)
    if last is None:
        raise ValueError("no pass of this trace produced a Relax module: there is no fused "
                         "graph to link to")
    fallback = fuse or last
    if step is None:
        return fallback, ""
    if fuse is not None and step.index < fuse.index:
        return fuse, (f"{numbering.ref(step)} runs before fusion: the fused graph is the "
                      f"one after {numbering.ref(fuse)}")
    if any(s is step for s in steps) and drawable(step):
        return step, ""
    back = [next((s for s in reversed(steps) if s.index <= step.index and drawable(s)),
                 fallback)]
    return back[-1], (f"{numbering.ref(step)} has no Relax module of its own to draw "
                      f"(failed, inner or TIR stage): the fused graph is the one after "
                      f"{numbering.ref(back[-1])}")


def provenance_view(trace: Any, step: Any = None, prov: Provenance | None = None
                    ) -> ProvenanceView:
    """The input graph and the fused graph after `step` (see `fused_step`),
    linked by `provenance` (`prov`, when already computed)."""
    trace = getattr(trace, "trace", trace)
    prov = prov if prov is not None else provenance(trace)
    after, note = fused_step(trace, step)
    inputs, fused = fused_graph(input_module(trace), prov.function), fused_graph(after)
    sources = {o.op: o.source for o in prov if o.source}
    if sources:  # both graphs grouped by the model's node paths, as the graph pane's
        inputs = inputs.with_sources(sources)
        fused = fused.with_sources(prov, after)
    return ProvenanceView(prov, inputs, fused, after, note,
                          tuple(s for s in trace if s.on_main_chain))
