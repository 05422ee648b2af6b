"""The Explorer's fused-graph pane, the Python half: the graph of a step marked against
the previous main-chain step (new, rewritten and removed kernels), an optional bytes
overlay with its legend, and what a click on a kernel links to (its diff in this step,
the passes that created and rewrote it, its buffers). No Jupyter here.

Every name from IR is escaped here (`html.escape`) or by the renderers called.
"""

from __future__ import annotations

import html
import json
from collections.abc import Collection, Mapping
from typing import Any

from passlab import _render, _tvm
from passlab.analysis import _graph_groups, _graph_render
from passlab.recording import numbering as _numbering
from passlab.recording.trace import Step, Trace

__all__ = ["PARAMS", "pane_html", "kernel_name",
           "kernel_links"]

#: The graph pane's parameter modes (``fused_graph(params=...)``).
PARAMS = ("collapse", "show", "hide")
_DATA = _graph_render.TERMINALS


def pane_html(g: Any, *, overlay_by: str = "none", marks: Mapping[str, str] | None = None,
              removed: tuple[str, ...] | list[str] = (), against: Step | None = None,
              values: Mapping[str, float | None] | None = None,
              opened: Collection[str] | None = None) -> str:
    """The graph pane: a head (title, notes, change legend, removed kernels, overlay
    legend, source groups), the node labels for the front end's links (`data-nodes`:
    id -> kernel name) and the SVG, or the plain table without a layout program.

    `opened` names the source groups (`g.groups`) drawn open, as frames; the others
    are one box each (a click opens one: the Explorer's `graph_open`). None opens
    every group (a static page, where nothing can be clicked open)."""
    marks = dict(marks or {})
    groups = getattr(g, "groups", ())
    static = opened is None
    if opened is None:
        opened = [grp.id for grp in groups]
    for grp in groups:  # a closed group is marked when a call inside it is
        inner = {marks[i] for i in grp.nodes if i in marks}
        if inner:
            marks[_graph_groups.GROUP_PREFIX + grp.id] = "new" if inner == {"new"} else "rewritten"
    nodes, _, notes = _graph_render.shown(g)
    head = [f'<div class="plx-graph-title"><b>fused graph of {_render.esc(g.function)}</b>: '
            f"{len(g.nodes)} nodes, {len(g.edges)} edges</div>"]
    head += [f'<div class="passlab-note">{_render.esc(n)}</div>' for n in notes]
    if groups:
        top = [grp for grp in groups if grp.parent is None]
        shut = sum(1 for grp in groups if grp.id not in set(opened))
        head.append(f'<div class="plx-graph-groups">grouped by the model\'s node paths: '
                    f"{len(top)} top-level group{'s' if len(top) != 1 else ''} "
                    f"({len(groups)} in all, {shut} closed); "
                    + ("each drawn open as a frame (passlab.Explorer folds them into boxes "
                       "that a click opens)" if static else
                       "click a double-framed box to open it, the name of a frame to close it")
                    + "</div>")
    if against is not None:
        counts = {k: sum(v == k for v in marks.values()) for k in ("new", "rewritten")}
        parts = [f'<span class="plx-mark plx-mark-{k}">{k}</span> {c}' for k, c in counts.items()]
        gone = f'<span class="plx-mark plx-mark-removed">removed</span> ({len(removed)})'
        if removed:  # a closed disclosure: the list opens over the graph, not above it
            gone = (f'<details class="plx-removed"><summary>{gone}</summary>'
                    f'<div class="plx-removed-list">'
                    f'{", ".join(_render.esc(r) for r in removed)}</div></details>')
        parts.append(gone)
        head.append(f'<div class="plx-graph-marks" title="{_numbering.ref_title(against)}">'
                    f"Against {_render.esc(_numbering.ref(against))}: {'; '.join(parts)}</div>")
    ov = _graph_render.overlay(g, overlay_by, values)
    if ov is not None:
        head.append(_legend(ov))
    meta = json.dumps({n.id: n.label for n in nodes})
    # the groups drawn open: a click toggles one from these (the first view's, until the
    # Explorer's graph_open says otherwise)
    drawn_open = set(opened)
    shown = json.dumps([grp.id for grp in groups if grp.id in drawn_open])
    body = (f'<div class="plx-graph-meta" hidden data-nodes="{html.escape(meta)}" '
            f'data-open="{html.escape(shown)}"></div>')
    if _render.layout_program():
        try:
            # a graph far deeper than wide drawn left to right: top to bottom, the
            # viewport could show it whole only at an unreadable scale
            svg = _graph_render.to_svg(g, overlay_by=overlay_by, marks=marks, title=False,
                                       values=values, opened=opened, rankdir="auto")
            return (f'<div class="plx-graph-head">{"".join(head)}</div>{body}'
                    f'<div class="passlab-graph">{svg}</div>')
        except (RuntimeError, OSError):
            pass  # the table below
    return body + _graph_render.to_html(g)


def _count(x: float) -> str:
    """4352 -> "4.35 K", 4718592 -> "4.72 M" (FLOPs)."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.0f}"


def _legend(ov: _graph_render.Overlay) -> str:
    if ov.by == "time":
        from passlab.views.explorer_profile import time_legend

        return time_legend(ov)
    fill = ", ".join(_graph_render.FILL_RAMP)
    if ov.by == "flops":
        if ov.lo is None or ov.hi is None:
            return ('<div class="plx-graph-legend">colour by FLOPs: no kernel here has an '
                    "estimate (before LegalizeOps the calls are operators, not kernels)</div>")
        return ('<div class="plx-graph-legend">colour by FLOPs (TVM\'s estimate, log scale): '
                f'<span class="plx-legend-min">{_count(ov.lo)}</span>'
                f'<span class="plx-ramp" title="kernels: estimated FLOPs" '
                f'style="background: linear-gradient(to right, {fill})"></span>'
                f'<span class="plx-legend-max">{_count(ov.hi)}</span> kernels; '
                "uncoloured: no estimate (copies, layout changes)</div>")
    if ov.lo is None or ov.hi is None:
        return '<div class="plx-graph-legend">colour by bytes: no size is known here</div>'
    edge = ", ".join(_graph_render.EDGE_RAMP)
    return ('<div class="plx-graph-legend">colour by bytes (log scale): '
            f'<span class="plx-legend-min">{_render.human_bytes(int(ov.lo))}</span>'
            f'<span class="plx-ramp" title="kernels: bytes in + out" '
            f'style="background: linear-gradient(to right, {fill})"></span>'
            f'<span class="plx-legend-max">{_render.human_bytes(int(ov.hi))}</span> kernels '
            '(bytes in + out); edges (tensor bytes) on the same scale: '
            f'<span class="plx-ramp plx-ramp-edge" title="edges: tensor bytes, thicker when larger" '
            f'style="background: linear-gradient(to right, {edge})"></span> and thicker; '
            "uncoloured: symbolic size</div>")


def kernel_name(module: Any, node: Any) -> str | None:
    """The global function a node calls (its label, else its id), or None."""
    funcs = _tvm.functions(module)
    return next((n for n in dict.fromkeys((node.label, node.id)) if n in funcs), None)


def kernel_links(trace: Trace, step: Step, node: Any, prov: Any = None) -> str:
    """What a clicked call links to, as escaped HTML: the diff of its kernel in `step`
    (when the step changed it), the main-chain passes that created and rewrote the
    kernel (links that select them: `data-step`), the input's operator calls it holds
    (`prov`: the trace's provenance, when known), and the buffers it reads and writes."""
    if node.kind in _DATA:
        return ""
    module = step.module
    name = kernel_name(module, node)
    out = []
    if name is not None:
        out.append(_history(trace, step, name))
        out.append(_llvm_facts(trace, name))
        out.append(_origins(prov, name))
        if not step.failed and name in step.functions_changed.names:
            out.append(_function_diff(step, name))
    out.append(_buffers(module, node, name))
    return "".join(out)


def _step_link(s: Step) -> str:
    return (f'<a class="plx-step-link" href="#" data-step="{s.index}" '
            f'title="{_numbering.ref_title(s)}">{_render.esc(_numbering.ref(s))}</a>')


def _history(trace: Trace, step: Step, name: str) -> str:
    from passlab.research.blame import blame

    try:
        b = blame(step, name, trace=trace, kind="function")
    except Exception as exc:  # noqa: BLE001 - the rest of the panel still shows
        return _render.error_panel(exc, f"the history of {name}")
    parts = []
    if b.in_input:
        parts.append("in the input model")
    for action, steps in (("created by", b.created_by), ("rewritten by", b.rewritten_by),
                          ("removed by", b.removed_by)):
        if steps:
            parts.append(f"{action} " + ", ".join(_step_link(s) for s in steps))
    text = "; ".join(parts) or "no main-chain pass changed it"
    return (f'<div class="plx-kernel-history"><b>{_render.esc(name)}</b>: {text} '
            f"(up to {_render.esc(_numbering.ref(step))})</div>")


def _llvm_facts(trace: Trace, name: str) -> str:
    """What LLVM's vectorizers did to kernel `name` (a trace recorded with
    `llvm_passes=True`), with links to their steps; "" otherwise."""
    if trace.llvm_summary is None or trace.code is None or name not in trace.code.kernels:
        return ""
    from passlab.analysis.llvm import vectorization

    try:
        k = vectorization(trace)[name]
    except Exception as exc:  # noqa: BLE001 - the rest of the panel still shows
        return _render.error_panel(exc, f"what LLVM did to {name}")
    by = [trace[i] for i in k.steps]
    links = ", ".join(_step_link(s) for s in by)
    runs = len(trace.llvm_steps(name))
    text = _render.esc(k.sentence()) + (f" ({links})" if links else "")
    return (f'<div class="plx-kernel-llvm"><b>LLVM</b>: {text}; {runs} of LLVM\'s pass runs '
            f"changed its functions (the LLVM group under codegen)</div>")


def _origins(prov: Any, name: str) -> str:
    """The operator calls of the input that kernel `name` holds (`prov`: the trace's
    provenance), with the source model's node names where the importer kept them; ""
    when none is known."""
    ops = prov.ops_of(name) if prov is not None and name in prov.kernels else ()
    if not ops:
        return ""
    shown = ", ".join(f"{_render.esc(op)} ({_render.esc(prov[op].operator)})" for op in ops[:12])
    more = f" and {len(ops) - 12} more" if len(ops) > 12 else ""
    sources = prov.sources_of(name)
    src = (f'<div class="plx-kernel-sources">from the model\'s nodes: '
           f"{_render.esc(', '.join(sources[:8]))}{' ...' if len(sources) > 8 else ''}</div>"
           if sources else "")
    return (f'<div class="plx-kernel-ops">holds {len(ops)} operator call'
            f"{'s' if len(ops) != 1 else ''} of the input: {shown}{more} "
            f"(see the Provenance tab)</div>{src}")


def _function_diff(step: Step, name: str) -> str:
    from passlab.analysis.diff import diff

    try:
        d = diff(step, function=name)
    except Exception as exc:  # noqa: BLE001
        return _render.error_panel(exc, f"the diff of {name}")
    if not len(d):
        return ""
    return (f'<details class="plx-kernel-diff" open><summary>changed by '
            f"{_render.esc(_numbering.ref(step))}</summary>{d[0].to_html('unified')}</details>")


def _buffers(module: Any, node: Any, name: str | None) -> str:
    from passlab.analysis.buffers import buffers

    try:
        report = buffers(module)
    except Exception as exc:  # noqa: BLE001
        return _render.error_panel(exc, "the buffers")
    me = {node.label, node.id} | ({name} if name else set())
    rows, roles = [], []
    for t in report.tensors:
        role = "writes" if t.producer in me else "reads" if me & set(t.consumers) else None
        if role is None:
            continue
        size = _render.human_bytes(t.bytes) if t.bytes is not None else f"{t.size} B"
        live = "" if t.last_use is None else f"{t.defined}..{t.last_use}"
        rows.append([role, t.name, t.kind, t.shape_text, t.dtype, size, live])
        roles.append(role)
    if not rows:
        return '<div class="plx-note">No intermediate tensor of this call in the buffers.</div>'
    return ('<div class="plx-kernel-buffers">' + _render.html_table(
        ["", "tensor", "kind", "shape", "dtype", "bytes", "live (bindings)"], rows, roles,
        caption="Buffers") + "</div>")
