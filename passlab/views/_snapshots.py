"""The key snapshots of a trace and their fused graph and buffer panels.

The graph and buffer analyses are used only through ``passlab.fused_graph`` and
``passlab.buffers``; any error they raise (or their absence) becomes a short panel, so a
report is always written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from passlab import _tvm
from passlab._render import NO_LAYOUT as _NO_LAYOUT
from passlab._render import error_panel, esc, human_bytes, layout_program
from passlab.analysis.buffers import buffers
from passlab.analysis.graph import fused_graph
from passlab.recording.trace import Step, Trace
from passlab.views._embed import inline_svg

__all__ = ["Snapshot", "key_snapshots", "no_relax_reason", "graph_panel", "buffers_panel",
           "layout_program", "NO_LAYOUT_NOTE"]

#: Shown above the table form of a graph when no layout program exists.
NO_LAYOUT_NOTE = _NO_LAYOUT + "; the graph is shown as a table"


@dataclass(frozen=True)
class Snapshot:
    """A module worth a graph and a buffer table: the one after ``step``."""

    key: str
    title: str
    step: Step


def _first_ok(trace: Trace, name: str) -> Step | None:
    for s in trace:
        if s.on_main_chain and s.name == name and not s.failed:
            return s
    return None


def key_snapshots(trace: Trace) -> list[Snapshot]:
    """After fusion (FuseTIR, else the last legalize-stage pass), after CallTIRRewrite
    and after StaticPlanBlockMemory, whichever exist; else the last recorded pass."""
    main = [s for s in trace if s.on_main_chain and not s.failed]
    out: list[Snapshot] = []
    fused = _first_ok(trace, "FuseTIR")
    if fused is not None:
        out.append(Snapshot("fusion", "after fusion (FuseTIR)", fused))
    else:
        legalize = [s for s in main if s.stage == "legalize"]
        if legalize:
            out.append(Snapshot("legalize", f"end of the legalize stage ({legalize[-1].label})",
                                legalize[-1]))
    for name, key, what in (("CallTIRRewrite", "calltir", "explicit allocations"),
                            ("StaticPlanBlockMemory", "memplan", "memory planning")):
        s = _first_ok(trace, name)
        if s is not None:
            out.append(Snapshot(key, f"after {what} ({name})", s))
    if not out and main:
        out.append(Snapshot("last", f"after the last recorded pass ({main[-1].label})",
                            main[-1]))
    return out


def no_relax_reason(step: Step) -> str | None:
    """Why the graph and buffers cannot be drawn for ``step``, in plain words, or None."""
    mod = step.after
    if mod is None:
        return f"pass {step.label!r} failed, so there is no module after it"
    fns = _tvm.functions(mod)
    if not _tvm.has_relax_function(mod):
        n = len(fns)
        kinds = f"{n} TIR PrimFunc{'s' if n != 1 else ''} only" if n else "no function at all"
        return (f"the module after {step.label!r} has no Relax function ({kinds}): the fused "
                "graph and the buffer table need one")
    return None


def graph_panel(step: Step, program: str | None) -> str:
    """The fused graph after ``step``: SVG when a layout program exists, else its table."""
    reason = no_relax_reason(step)
    if reason is not None:
        return f'<div class="pl-plain">{esc(reason)}.</div>'
    try:
        graph = fused_graph(step, collapse=True)
    except Exception as exc:  # the analysis may change or fail; the report must not
        return error_panel(exc, "the fused graph", style=False)
    note = ""
    if program is not None:
        try:
            svg = graph.to_svg()
            summary = graph.to_text().split("\n", 1)[0]
            button, full = _weights_toggle(step, graph)
            return (f'<div class="pl-graph-head">{esc(summary)} '
                    f'<button type="button" class="pl-zoom">actual size</button>'
                    f"{button}</div>"
                    f'<div class="pl-svg">{inline_svg(svg)}</div>{full}')
        except (RuntimeError, OSError, ValueError) as exc:
            note = f"graph layout failed ({exc}); the graph is shown as a table"
    else:
        note = NO_LAYOUT_NOTE
    try:
        table = graph.to_html()  # its table form when no `dot` is on PATH
    except Exception as exc:
        return error_panel(exc, "the fused graph", style=False)
    return f'<div class="pl-note">{esc(note)}</div>{table}'


def _weights_toggle(step: Step, graph: Any) -> tuple[str, str]:
    """A "show weights" button and the graph with its parameters drawn (in a template
    until pressed), when ``graph`` folded some: the report has no kernel to redraw it."""
    if not any(n.params for n in graph.nodes):
        return "", ""
    try:
        full = fused_graph(step, collapse=True, params="show").to_svg()
    except Exception:  # noqa: BLE001 - the folded graph still shows
        return "", ""
    return ('<button type="button" class="pl-weights" aria-pressed="false">show weights'
            '</button>', f'<template class="pl-weights-svg">{inline_svg(full)}</template>')


def buffers_panel(step: Step, compare_with: Step | None = None) -> tuple[str, str]:
    """(headline "peak N, total M" or "", the liveness picture and the buffer tables, or
    why there are none). With ``compare_with`` (an earlier step, e.g. CallTIRRewrite) the
    picture of that step is drawn above this one's on the same axes."""
    reason = no_relax_reason(step)
    if reason is not None:
        return "", f'<div class="pl-plain">{esc(reason)}.</div>'
    try:
        report = buffers(step)
        body = report.to_html(plot=True)
    except Exception as exc:
        return "", error_panel(exc, "the buffer table", style=False)
    if compare_with is not None and no_relax_reason(compare_with) is None:
        try:
            pair = buffers(compare_with).plot(compare=report).to_html()
            body += (f"<h3>Before and after: {esc(compare_with.label)} vs "
                     f"{esc(step.label)}</h3>{pair}")
        except Exception as exc:  # the single picture above still shows
            body += error_panel(exc, "the before/after picture", style=False)
    try:
        exact = "" if getattr(report, "peak_exact", True) else ">= "
        head = f"peak {exact}{human_bytes(report.peak_bytes)}, total {human_bytes(report.total_bytes)}"
    except Exception:  # a changed report API costs the headline only
        head = ""
    return head, body
