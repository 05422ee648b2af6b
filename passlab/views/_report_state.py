"""The static report's data: the Explorer's state and the panes the page embeds.

The report is the Explorer's front end over a static model (`static/report/model.js`).
This module writes what that model reads: the widget's traits for the page's first view,
and one data block per pane the report keeps, each rendered by the pane renderer the
Explorer uses (`passlab.views.explorer_panes.PaneRenderer`), keyed as the model
looks them up (`"diff:<step>:side-by-side"`, of which the page makes the unified
layout; `"graph:<step>:<params>:<overlay>"`, ...). A diff holds the first screen of
its pass, as the Explorer's first view prints it; what it does not keep (the rest of a
diff, one past `REPORT_PASSES`, the graph after an arbitrary
pass, Compare, Edit) the page names in a note; `full=True` keeps whole diffs.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from passlab._progress import Bar
from passlab._render import error_panel
from passlab.analysis import ir_text
from passlab.recording import numbering as _numbering
from passlab.recording.trace import Step, Trace
from passlab.views import _embed, _snapshots, explorer_profile
from passlab.views import explorer_list as listing
from passlab.views import explorer_panes as panes

__all__ = ["Bounds", "ReportData", "report_data", "llvm_kept", "CODE_LINES", "OVERLAYS",
           "PARAMS", "REPORT_LLVM"]

#: Lines of a kernel's TIR and of its generated code kept per kernel.
CODE_LINES = 400
#: The one diff layout a report keeps (the page makes the other from it).
DIFF_LAYOUT = "side-by-side"
#: Panes longer than this (characters) are kept gzip-compressed: most of a report is diffs
#: of a few KiB each, which shrink about tenfold.
COMPRESS_OVER = 2_000
#: The graph drawings kept for each key snapshot (weights folded or drawn; colourings).
PARAMS = ("collapse", "show")
OVERLAYS = ("none", "bytes", "flops")
#: A graph of more nodes than this is kept in its default drawing only (each drawing is a
#: layout run of seconds on a 7B-shaped model).
DRAWINGS_UP_TO = 150
#: Kernel panels kept (the first kernels of the graph after fusion; of a graph of more
#: than DRAWINGS_UP_TO nodes, a quarter as many): each one's links cost a buffer
#: analysis of the module (a 7B-shaped model: ~0.2 s each).
KERNEL_PANELS = 40


@dataclass(frozen=True)
class Bounds:
    """What a report covers: `last` (the index of the last step listed, None for all),
    the failing step, `max_functions` and `max_lines` per diff (None: all), and
    `full`."""

    last: int | None
    failing: Step | None
    max_functions: int | None
    max_lines: int | None
    full: bool

    def covers(self, step: Step) -> bool:
        return self.last is None or step.index <= self.last or step is self.failing


@dataclass
class ReportData:
    """The page's `plx-data` block (state, block keys, notes) and the data blocks."""

    state: dict[str, Any]
    blocks: dict[str, str] = field(default_factory=dict)  # key -> block id
    notes: dict[str, str] = field(default_factory=dict)
    html: list[str] = field(default_factory=list)
    _ids: dict[str, str] = field(default_factory=dict)  # content hash -> block id

    def add(self, key: str, text: str) -> None:
        """Keep `text` under `key`; identical texts share one block."""
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()
        block = self._ids.get(digest)
        if block is None:
            block = self._ids[digest] = f"plx-b{len(self._ids)}"
            self.html.append(_embed.data_block(block, text, COMPRESS_OVER))
        self.blocks[key] = block

    #: [step index, its name] of the steps whose graph and buffers are kept
    drawn: list[list[Any]] = field(default_factory=list)

    def to_html(self) -> str:
        data = {"state": self.state, "blocks": self.blocks, "notes": self.notes,
                "drawn": self.drawn}
        return _embed.data_block("plx-data", _embed.json_for_script(data)) + "".join(self.html)


def _main(step: Step, failing: Step | None) -> bool:
    return step.on_main_chain or step is failing


def _state(trace: Trace, listed: list[Step], complete: bool) -> dict[str, Any]:
    """The Explorer's traits for the first view (explorer.py's, with no kernel behind)."""
    rows = listing.rows(trace, main_only=not complete, steps=listed)
    have = {r["i"] for r in rows}
    visible = [i for i in listing.visible(trace) if i in have]
    first = listing.default_selection(trace)
    main = [s for s in listed if s.on_main_chain] or listed
    state: dict[str, Any] = dict(
        steps=rows, steps_complete=True, step_count=sum(1 for r in rows if r["i"] >= 0),
        stages=list(dict.fromkeys(s.stage for s in trace)),
        summary=trace.summary().split("\n")[0] if len(trace) else "Empty trace",
        failure=trace.failure.to_text() if trace.failure is not None else "",
        visible=visible, changed_only=False, stage="", search="", show_inner=False,
        show_llvm=False,
        selected=first if first in have else (visible[0] if visible else -1),
        tab="diff", diff_mode="unified", diff_all=False, bounds={}, symbols=[],
        compare_a=main[0].index if main else -1, compare_b=main[-1].index if main else -1,
        focus=[], ir_search="", ir_search_more={}, node="", graph_params="collapse",
        graph_overlay="none", graph_open=[], provenance_open=None, rendered=0, edit_pending=[], edit_run=0, edit_shown=0)
    for tab in panes.TABS:
        state[f"{tab}_html"] = ""
    for name in ("explain_html", "kernel_title", "kernel_text", "kernel_text_html",
                 "kernel_html", "code_title", "code_text"):
        state[name] = ""
    return state


def _capped(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= CODE_LINES:
        return text
    return "\n".join(lines[:CODE_LINES]) + f"\n\u2026 shown {CODE_LINES} of {len(lines)} lines"


#: LLVM steps (a trace recorded with llvm_passes=True) whose diff and explanation a report
#: keeps: the vectorizers' and unrolling's first, then the others in LLVM's order (an
#: LLVM pass's diff is a whole function, hundreds of lines: ResNet-18 records 2,297).
REPORT_LLVM = 40
_LLVM_FIRST = ("LoopVectorizePass", "SLPVectorizerPass", "LoopUnrollPass")


def llvm_kept(steps: list[Step], full: bool = False) -> list[Step]:
    """The LLVM steps of `steps` whose diffs a report keeps (all with `full`)."""
    if full or len(steps) <= REPORT_LLVM:
        return steps
    first = [s for s in steps if s.name.partition("#")[0] in _LLVM_FIRST][:REPORT_LLVM]
    rest = [s for s in steps if s not in first][:REPORT_LLVM - len(first)]
    return sorted(first + rest, key=lambda s: s.index)


def _explains(data: ReportData, trace: Trace, steps: Iterable[Step]) -> None:
    from passlab.analysis._explain_steps import explain_step

    for s in steps:
        try:  # the page holds the Explain styles once
            markup = explain_step(s, trace.pipeline).to_html(style=False)
        except Exception as exc:  # noqa: BLE001 - a view never fails the report
            markup = error_panel(exc, f"the explanation of {s.label}", style=False)
        data.add(f"explain:{s.index}", markup)


def _diffs(data: ReportData, renderer: panes.PaneRenderer, steps: list[Step],
           bounds: Bounds) -> None:
    """Each step's diff side by side, without token colours (the page colours the one
    shown, and makes the unified layout from this one: `static/report/unified.js`; a
    report would be seconds slower to write otherwise): its first screen, as the
    Explorer's first view prints it, unless `bounds.full`."""
    diffs: dict[int, Any] = {}
    for s in steps:
        try:
            diffs[s.index] = renderer.module_diff(s.index)
        except Exception as exc:  # noqa: BLE001
            diffs[s.index] = exc
    good = {i: d for i, d in diffs.items() if not isinstance(d, Exception)}
    cut: set[int] = set()
    if bounds.full:
        ir_text.prefetch(good.values(), bounds.max_functions)
    else:
        good, cut = _first_screens(good, bounds)
    for s in steps:
        d = good.get(s.index, diffs[s.index])
        try:
            if isinstance(d, Exception):
                raise d
            markup = d.to_html(DIFF_LAYOUT, max_functions=bounds.max_functions, highlight=False,
                               max_total_lines=bounds.max_lines, anchors="plx-diff")
            note = FIRST_SCREEN_NOTE if s.index in cut else ""
            markup = f'<div class="plx-untokenized">{markup}{note}</div>'
        except Exception as exc:  # noqa: BLE001
            markup = error_panel(exc, f"the diff of {s.label}", style=False)
        data.add(f"diff:{s.index}:{DIFF_LAYOUT}", markup)


#: Said under a diff that its first screen cut (the functions or lines past it are
#: named above, not printed).
FIRST_SCREEN_NOTE = ('<div class="plx-note plx-first-screen">This report keeps the first '
                     "screen of each pass's diff; written with full=True (passlab report "
                     "--full) it keeps every changed function whole, or open the trace in "
                     "passlab.Explorer(trace).</div>")
#: Functions printed per diff and round by :func:`_first_screens` (the printer's threads
#: take one round's functions of every diff at once).
_BATCH = 2


def _first_screens(diffs: dict[int, Any], bounds: Bounds) -> tuple[dict[int, Any], set[int]]:
    """Each diff as its first screen prints it (`ModuleDiff.first_screen`: a huge
    Relax function cut to its first binding region), its functions printed a few at a
    time until `bounds.max_lines` diff rows are spent: a late TIR pass rewrites every
    kernel, and the first screen holds a few of them. Printing is most of a report's
    time. Returns the first screens and the steps whose diff they cut."""
    from passlab.analysis._diff_render import row_total
    from passlab.analysis.diff import MAX_LINES

    views = {i: d.first_screen(bounds.max_functions) for i, d in diffs.items()}
    shown = {i: v.functions[:bounds.max_functions] for i, v in views.items()}
    printed = dict.fromkeys(views, 0)
    lines = dict.fromkeys(views, 0)
    budget = bounds.max_lines
    while True:
        todo = [i for i in views if printed[i] < len(shown[i])
                and (budget is None or lines[i] <= budget)]
        if not todo:
            break
        batches = {i: shown[i][printed[i]:printed[i] + _BATCH] for i in todo}
        ir_text.prefetch(dataclasses.replace(views[i], functions=b)
                         for i, b in batches.items())
        for i, batch in batches.items():  # as to_html(max_total_lines=) counts them
            lines[i] += sum(min(row_total(fd, True), MAX_LINES) for fd in batch)
            printed[i] += len(batch)
    cut = {i for i, v in views.items() if v.regions or printed[i] < len(v.functions)
           or (budget is not None and lines[i] > budget)}
    return views, cut


def _kernels(renderer: panes.PaneRenderer, index: int, params: str,
             most: int = KERNEL_PANELS) -> dict[str, list[str]]:
    """Node id -> [title, TIR, links, code title, code] for the first `most` kernels
    of one graph."""
    out: dict[str, list[str]] = {}
    for node in renderer.graph(index, params).nodes:
        if node.kind in panes._DATA_KINDS:
            continue
        if len(out) >= most:
            break
        try:
            title, text = renderer.kernel(index, node.id, params)
            code_title, code = renderer.code(index, node.id, params)
            links = renderer.kernel_links(index, node.id, params) if text else ""
        except Exception as exc:  # noqa: BLE001 - the panel says so
            title, text, links, code_title, code = (
                f"could not look up {node.id!r}", f"{type(exc).__name__}: {exc}", "", "", "")
        out[node.id] = [title, _capped(text), links, code_title, _capped(code)]
    return out


_SVG_PROLOGUE = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*", re.S)
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')


def _inline_svg(pane: str) -> str:
    """A graph pane whose Graphviz SVG sits inline in HTML: no XML prologue, doctype or
    comments, no namespace declarations (they only look like web links)."""
    pane = _SVG_PROLOGUE.sub("", pane)
    return re.sub(r"<svg\b[^>]*>", lambda m: _XMLNS.sub("", m.group(0)), pane)


def _snapshot_drawings(renderer: panes.PaneRenderer, snaps: list[_snapshots.Snapshot],
                       layouts: _Layouts) -> tuple[dict[str, Future[str]], list[bool]]:
    """The graph panes of the key snapshots, their layouts started in `layouts`: each
    drawn with the weights folded and shown, the first (after fusion) also coloured by
    bytes and by FLOPs (a drawing is a layout run: most of a report's time). Returns the
    panes to come by key, and whether each snapshot's graph is small enough for every
    drawing."""
    drawings: dict[str, Any] = {}
    smalls = []
    for k, snap in enumerate(snaps):
        i = snap.step.index
        try:
            small = len(renderer.graph(i, "collapse").nodes) <= DRAWINGS_UP_TO
        except Exception:  # noqa: BLE001 - no graph here: the pane says why
            small = False
        smalls.append(small)
        for params in PARAMS if small else ("collapse",):
            for overlay in OVERLAYS if params == "collapse" and k == 0 and small else ("none",):
                drawings[f"graph:{i}:{params}:{overlay}"] = (
                    _drawing(renderer, snap.step, params, overlay), snap.step.label)
    return layouts.start(drawings), smalls


def _snapshots_panes(data: ReportData, renderer: panes.PaneRenderer,
                     snaps: list[_snapshots.Snapshot], graphs: dict[str, Future[str]],
                     smalls: list[bool]) -> None:
    """Kernel panel and buffers of the key snapshots, then their graph panes (`graphs`,
    laid out meanwhile): the kernel panel of the first (its kernels are the same
    whichever way the weights are drawn; the later snapshots' nodes fall back to it by
    node id)."""
    for k, snap in enumerate(snaps):
        i, small = snap.step.index, smalls[k]
        try:  # a kernel's links cost a buffer analysis each: the graph after fusion's
            most = KERNEL_PANELS if small else KERNEL_PANELS // 4
            kernels = _kernels(renderer, i, "collapse", most) if k == 0 else {}
        except Exception:  # noqa: BLE001 - no graph here: the pane says why
            kernels = {}
        if kernels:
            data.add(f"kernels:{i}:collapse", json.dumps(kernels, ensure_ascii=False))
            data.add("kernels:default", json.dumps(kernels, ensure_ascii=False))
        data.add(f"buffers:{i}", renderer.pane("buffers", i))
    for key, pane in graphs.items():
        data.add(key, _inline_svg(pane.result()))


def _drawing(renderer: panes.PaneRenderer, step: Step, params: str, overlay: str) -> Any:
    """The graph pane after `step` ready to lay out, a note, or the error panel."""
    try:
        return renderer.graph_drawing(step, params, overlay)
    except Exception as exc:  # noqa: BLE001 - the pane says what failed
        return error_panel(exc, f"the fused graph after {step.label}")


#: Provenance drawings a report keeps beyond its first view: each group closed there
#: opened on its own (DenseNet-121: its 4 dense blocks and 3 transitions).
PROVENANCE_OPENINGS = 12


def _provenance_drawings(renderer: panes.PaneRenderer, index: int, layouts: _Layouts
                         ) -> tuple[dict[str, Future[str]], tuple[str, ...]] | str:
    """The provenance pane as it first opens, and with each group it shows closed opened
    (one more drawing each, up to `PROVENANCE_OPENINGS`), keyed by the groups drawn open
    as the page's model looks them up (`"provenance:open:<paths, sorted, one a line>"`),
    their layouts started in `layouts`; with the groups the first view opens. The error
    panel (str) where there is no provenance."""
    step = renderer.by_index[index]
    try:
        first = renderer.provenance_drawing(step)
    except Exception as exc:  # noqa: BLE001 - no provenance here: the pane says why
        return error_panel(exc, f"the provenance up to {step.label}")
    view = first.view
    groups = [grp for g in (view.input_graph, view.fused_graph) for grp in g.groups]
    closed = dict.fromkeys(grp.id for grp in groups if grp.id not in first.opened
                           and (grp.parent is None or grp.parent in first.opened))
    drawings: dict[str, tuple[Any, str]] = {"provenance:default": (first, step.label)}
    for gid in list(closed)[:PROVENANCE_OPENINGS]:
        drawing = renderer.provenance_drawing(step, (*first.opened, gid))
        drawings["provenance:open:" + "\n".join(drawing.opened)] = (drawing, step.label)
    return layouts.start(drawings), first.opened


def _provenance(data: ReportData,
                drawn: tuple[dict[str, Future[str]], tuple[str, ...]] | str) -> None:
    """The provenance panes `_provenance_drawings` started, once laid out."""
    if isinstance(drawn, str):
        data.add("provenance:default", drawn)
        return
    panes_by_key, opened = drawn
    for key, pane in panes_by_key.items():
        data.add(key, pane.result())
    # the first view under its groups too (one block: the same text)
    data.add("provenance:open:" + "\n".join(opened), panes_by_key["provenance:default"].result())


#: Graphviz layouts run at once: each is a subprocess, and its Python around it (the DOT
#: text, the page around the SVG) is short; mobilenet's report ran 10 layouts one after
#: another, ~1 s of its ~3 s.
LAYOUTS_AT_ONCE = 3


class _Layouts:
    """Graphviz layouts run in the background, `LAYOUTS_AT_ONCE` at a time, each in a
    copy of the caller's context with the layout store of `PaneRenderer.laying_out`:
    `dot` is a subprocess, so while it runs the report's thread goes on printing diffs
    and analysing buffers on the other core. A drawing's `html` touches no cache of the
    renderer. Leaving the block waits for the layouts (cancelling those not started when
    the block failed)."""

    def __init__(self, renderer: panes.PaneRenderer) -> None:
        self.renderer = renderer
        self.pool = ThreadPoolExecutor(LAYOUTS_AT_ONCE, thread_name_prefix="passlab-layout")

    def __enter__(self) -> _Layouts:
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        self.pool.shutdown(wait=True, cancel_futures=kind is not None)

    def start(self, drawings: dict[str, tuple[Any, str]]) -> dict[str, Future[str]]:
        """Each drawing's pane to come (key -> (drawing, its step's label), in the same
        order)."""
        with self.renderer.laying_out():  # layouts kept beside the trace's file, if any
            return {key: self.pool.submit(contextvars.copy_context().run, _pane, item)
                    for key, item in drawings.items()}


def _pane(item: tuple[Any, str]) -> str:
    """One drawing laid out, a note as it is, or the error panel."""
    drawing, label = item
    if isinstance(drawing, str):
        return drawing
    try:
        return drawing.html()
    except Exception as exc:  # noqa: BLE001 - the pane says what failed
        what = "the provenance up to" if isinstance(drawing, panes.ProvenanceDrawing) \
            else "the fused graph after"
        return error_panel(exc, f"{what} {label}")


#: The phases of a report a progress bar shows (`write_report(progress=)`).
REPORT_PHASES = ("the pass list and explanations", "diffs", "graphs and buffers",
                 "provenance", "writing the page")


def report_data(trace: Trace, listed: list[Step], complete: bool, bounds: Bounds,
                snaps: list[_snapshots.Snapshot], profile: Any = None,
                shown: Bar | None = None) -> ReportData:
    """Everything the page's static model reads: the state for `listed` (the steps the
    list shows; `complete` False when inner steps were left out) and the panes; the
    Profile pane's table when `profile` (a `passlab.research.profile.Profile`)
    is given. `shown` follows the `REPORT_PHASES`."""
    shown = shown if shown is not None else Bar()
    shown.note(REPORT_PHASES[0])
    renderer = panes.PaneRenderer(trace, cache_size=4)
    data = ReportData(_state(trace, listed, complete))
    failing = bounds.failing
    main = [s for s in listed if _main(s, failing)]
    llvm = [s for s in listed if s.llvm is not None]  # `listed` keeps llvm_kept's
    _explains(data, trace, main + llvm)
    with _Layouts(renderer) as layouts:  # laid out while the diffs print
        graphs, smalls = _snapshot_drawings(renderer, snaps, layouts)
        drawn = (_provenance_drawings(renderer, snaps[0].step.index if snaps
                                      else main[-1].index, layouts)
                 if any(s.on_main_chain for s in trace) else None)
        shown.goto(1, note=REPORT_PHASES[1])
        _diffs(data, renderer, [s for s in main if not s.failed and s.changed] + llvm,
               bounds)
        shown.goto(2, note=REPORT_PHASES[2], now=True)
        _snapshots_panes(data, renderer, snaps, graphs, smalls)
        shown.goto(3, note=REPORT_PHASES[3], now=True)
        if drawn is not None:
            _provenance(data, drawn)
    shown.goto(4, note=REPORT_PHASES[4])
    data.add("pipeline", renderer.pane("pipeline", -1))
    if profile is not None:
        data.add("profile", explorer_profile.pane_html(profile, static=True))
    data.drawn = [[s.step.index, _numbering.ref(s.step)] for s in snaps]
    drawn = ", ".join(_numbering.ref(s.step) for s in snaps) or "no pass"
    data.notes = {
        "diff": ("This pass's diff is not in this report: it keeps the diffs of the "
                 "main-chain passes it lists (inner passes and wrappers run inside other "
                 "passes, on partial modules) and of at most "
                 f"{REPORT_LLVM} of LLVM's own passes (the vectorizers' and unrolling's "
                 "first). In Python: passlab.diff(trace[i]), or passlab.Explorer(trace)."),
        "graph": (f"This report draws the fused graph after {drawn}; "
                  "passlab.Explorer(trace) draws it after any pass."),
        "graph_variant": ("This drawing (weights or colouring) is not in this report for "
                          "this pass: the default drawing follows."),
        "buffers": (f"This report keeps the buffers after {drawn}; "
                    "passlab.Explorer(trace) shows them after any pass."),
        "provenance": "No pass was recorded: there is no provenance to show.",
        "provenance_open": ("This report keeps the provenance as it first opens, and with "
                            "each group shown closed there opened one at a time; "
                            "passlab.Explorer(trace) opens and closes any group. The first "
                            "view follows."),
        "kernel": ("not in this report: it keeps the kernel panels of the first kernels of "
                   f"the graph after {data.drawn[0][1] if data.drawn else 'fusion'}."),
        "compare": ("Compare needs a kernel to diff any two passes: open the trace in "
                    "passlab.Explorer(trace). This report shows each pass's own diff "
                    "(the Diff tab)."),
        "edit": ("Editing and re-running the pipeline need the build and a kernel: "
                 "passlab.Explorer(passlab.build(model)). This is a static report."),
        "pipeline": "No pipeline was recorded with this trace.",
        "profile": ("This report was written without a profile: passlab report --profile, "
                    "or trace.write_report(path, profile=build.profile())."),
        "other": ("This pane is not in this report: it needs a kernel. Open the trace in "
                  "passlab.Explorer(trace)."),
    }
    return data



def read_report(page: str) -> tuple[dict[str, Any], dict[str, str]]:
    """`(data, panes)` of a report's HTML: its `plx-data` block (state, block keys,
    notes) and every kept pane's text by key, decoded as the page does; for tests and
    tools."""
    found = {m.group(1): _embed.decode_block(m.group(3), m.group(2)) for m in re.finditer(
        r'<script type="application/json" id="([\w-]+)"(?: data-encoding="([^"]+)")?>(.*?)'
        r"</script>", page, re.S)}
    data = json.loads(found["plx-data"])
    return data, {key: found[block] for key, block in data["blocks"].items()}
