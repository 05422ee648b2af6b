"""What the Explorer shows, as plain functions of a trace: one HTML pane at a time (the
pass list's rows and filters are `passlab.views.explorer_list`'s). No Jupyter here,
so it is cheap to test.

Every pane is rendered on demand for one step; an analysis that raises becomes a short
error panel, never an exception in the widget.
"""

from __future__ import annotations

import dataclasses
import functools
import html
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from passlab import _render, _tvm
from passlab.analysis.graph import graph_changes, kernel_flops, marked_against
from passlab.io._layout_store import store_for
from passlab.recording import numbering as _numbering
from passlab.recording.trace import Step, Trace
from passlab.views import explorer_graph as eg
from passlab.views.explorer_list import listed

__all__ = ["TABS", "DIFF_MODES", "PaneRenderer", "GraphDrawing", "ProvenanceDrawing"]

#: The panes, in the order of the tabs.
TABS = ("diff", "graph", "buffers", "provenance", "compare", "pipeline", "edit", "profile")
DIFF_MODES = ("unified", "side-by-side")
#: Diff lines a first view renders across its functions (a few screens): highlighting
#: is what a large diff costs (a 32-layer forward rewritten by VMShapeLower: 8,800 lines,
#: 2 MB of HTML, 1.4 s); "show all" renders every line.
FIRST_VIEW_LINES = 400
#: Graph node kinds that stand for data, not a kernel.
_DATA_KINDS = frozenset({"input", "weight", "constant", "output"})
_DATA_WORDS = {"input": "an input of the function", "weight": "a weight",
               "constant": "a constant", "output": "the function's output"}


def _note(text: str, cls: str = "plx-note") -> str:
    return f'<div class="{cls}">{html.escape(text)}</div>'


def _failed_note(step: Step) -> str:
    return _note(f"Pass {step.label!r} failed, so it has no output module; the graph and "
                 "buffers panes show the module it received (step.before).", "plx-warn")


# ------------------------------------------------------------------------ the panes
@dataclasses.dataclass(frozen=True)
class GraphDrawing:
    """A graph pane ready to lay out (`PaneRenderer.graph_drawing`): the note above
    it, the graph and `explorer_graph.pane_html`'s arguments."""

    head: str
    graph: Any
    args: dict[str, Any]

    def html(self) -> str:
        """The pane: Graphviz's layout (a subprocess) and the page around it."""
        return self.head + eg.pane_html(self.graph, **self.args)


@dataclasses.dataclass(frozen=True)
class ProvenanceDrawing:
    """A provenance pane ready to lay out (`PaneRenderer.provenance_drawing`): the note
    above it, the view and the groups drawn open."""

    head: str
    view: Any
    opened: tuple[str, ...]

    def view_html(self) -> str:
        return self.view.to_html("plx-prov-box", self.opened)

    def html(self) -> str:
        """The pane: two Graphviz layouts (subprocesses) and the page around them."""
        return self.head + self.view_html()


class PaneRenderer:
    """Renders panes for one trace and caches the last few (an HTML diff of a large
    module is big, so the cache is small)."""

    def __init__(self, trace: Trace, cache_size: int = 24):
        self.trace = trace
        self.by_index = {s.index: s for s in trace}
        self._cache: OrderedDict[tuple, str] = OrderedDict()
        self._diffs: OrderedDict[tuple, Any] = OrderedDict()
        self._graphs: OrderedDict[tuple[int, str], Any] = OrderedDict()
        self._size = cache_size
        #: symbolic dimensions of the buffers after each step (a bound slider each)
        self.symbols: dict[int, tuple[str, ...]] = {}
        self._peaks: Any = None  # the per-pass peak line, computed on first use
        #: what the Edit pane shows (the Explorer's
        #: :class:`~passlab.research.edit_session.EditSession`), None when the Explorer
        #: has no Build to re-run
        self.editor: Any = None
        #: what the Profile pane shows (``explorer_profile.ProfileView``: the profile of
        #: the shown build, and the graph's "time" colour), None: a note
        self.profiler: Any = None
        #: the provenance views by the step their fused graph is drawn after
        self._prov_views: OrderedDict[int, Any] = OrderedDict()
        #: where layouts are kept beside the trace's file (None: a trace not loaded from
        #: one), so that its report and a later Explorer lay each graph out once
        self.layouts = store_for(trace)

    def clear(self) -> None:
        """Forget every rendered pane, diff and graph (the next pane starts cold)."""
        self._cache.clear()
        self._diffs.clear()
        self._graphs.clear()
        self._prov_views.clear()
        self.symbols.clear()
        self._peaks = None

    def _cached(self, key: tuple, make: Callable[[], str], what: str) -> str:
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        try:
            # a collection's pause is not the user's wait; layouts kept beside the trace file
            with _render.no_cycle_collection(), self.laying_out():
                out = make()
        except Exception as exc:  # noqa: BLE001 - a pane shows the error, the widget lives on
            out = _render.error_panel(exc, what)
        self._cache[key] = out
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return out

    def laying_out(self) -> Any:
        """A context in which graph layouts are also read from and kept in the store
        beside the trace's file (`_render.layout_store`)."""
        return _render.layout_store(self.layouts)

    def step(self, index: int) -> Step | None:
        return self.by_index.get(index)

    def explain(self, index: int) -> str:
        """The "Explain" strip above the step panes: what the pass of step `index` does
        and what it changed here (`passlab.Step.explain`); "" without a step."""
        step = self.step(index)
        if step is None:
            return ""
        return self._cached(("explain", index), lambda: self._explain(step),
                            f"the explanation of {step.label}")

    def _explain(self, step: Step) -> str:
        from passlab.analysis._explain_steps import explain_step

        return explain_step(step, self.trace.pipeline).to_html()

    def _empty(self) -> str | None:
        if not len(self.trace):
            return _note("This trace is empty: no pass was recorded.")
        return None

    def pane(self, tab: str, index: int, *, mode: str = "unified", a: int = -1,
             b: int = -1, all_functions: bool = False,
             bounds: dict[str, int] | None = None, params: str = "collapse",
             overlay: str = "none", opened: Sequence[str] | None = None,
             provenance_open: Sequence[str] | None = None) -> str:
        """HTML of pane `tab` for step `index` (or steps `a`..`b` for compare).

        `opened`: the source groups the graph draws open (None: all of them, for a
        static page; the Explorer passes its `graph_open`). `provenance_open`: those the
        provenance pane draws open (None: its first view's, `ProvenanceView.first_opened`).

        Diffs print the first `FIRST_VIEW` changed functions
        unless `all_functions`; the pane then offers a "show all" button."""
        empty = self._empty()
        if empty is not None:
            return empty
        if tab == "pipeline":
            return self._cached(("pipeline",), self._pipeline, "the pipeline")
        if tab == "edit":
            return self._edit()
        if tab == "profile":
            return self._profile()
        if tab == "compare":
            return self._cached(("compare", a, b, mode, all_functions),
                                lambda: self._compare(a, b, mode, all_functions),
                                "the comparison")
        step = self.step(index)
        if step is None:
            return _note("Select a pass in the list to see what it did.")
        if tab == "diff":
            return self._cached(("diff", index, mode, all_functions),
                                lambda: self._diff(step, mode, all_functions),
                                f"the diff of {step.label}")
        if tab == "graph":
            shown = None if opened is None else tuple(sorted(opened))
            return self._cached(("graph", index, params, overlay, shown),
                                lambda: self._graph(step, params, overlay, shown),
                                f"the fused graph after {step.label}")
        if tab == "provenance":
            shown = None if provenance_open is None else tuple(sorted(provenance_open))
            return self._cached(("provenance", index, shown),
                                lambda: self._provenance(step, shown),
                                f"the provenance up to {step.label}")
        if tab == "buffers":
            bound = tuple(sorted((bounds or {}).items()))
            return self._cached(("buffers", index, bound), lambda: self._buffers(step, bounds),
                                f"the buffers after {step.label}")
        raise ValueError(f"unknown pane {tab!r}; panes are {', '.join(TABS)}")

    def _diff(self, step: Step, mode: str, all_functions: bool) -> str:
        if step.failed:
            f = self.trace.failure
            text = f.to_text() if f is not None and f.step is step else "this pass failed"
            return _note(text, "plx-warn")
        return _first_view(self.module_diff(step.index), mode, all_functions, "plx-diff")

    def module_diff(self, a: int, b: int | None = None) -> Any:
        """The `ModuleDiff` of step `a` or, with `b`, from
        step `a`'s input to step `b`'s output (its input if `b` failed); cached, so
        that what the pane printed is printed once."""
        key = (a, b)
        d = self._diffs.get(key)
        if d is None:
            from passlab.analysis.diff import diff

            first = self.by_index[a]
            if b is None:
                d = diff(first)
            else:
                last = self.by_index[b]
                d = diff(first, last.before if last.failed else last)
            self._diffs[key] = d
            if len(self._diffs) > 8:
                self._diffs.popitem(last=False)
        self._diffs.move_to_end(key)
        return d

    def search_unshown(self, query: str, index: int, *, mode: str = "unified",
                       b: int | None = None) -> tuple[int, int]:
        """`(hits, functions)`: case-insensitive occurrences of `query` in the lines
        the diff of step `index` (from `index` to `b` for compare) would show for
        the functions its first view does not print, and in how many functions. Prints
        those functions (the cost "show all" would pay)."""
        from passlab.analysis import _diff_render
        from passlab.analysis.diff import FIRST_VIEW, MAX_LINES

        needle = query.lower()
        if not needle or index not in self.by_index or (b is not None and b not in self.by_index):
            return 0, 0
        step = self.by_index[index]
        if b is None and step.failed:
            return 0, 0
        hits = functions = 0
        for fd in self.module_diff(index, b).functions[FIRST_VIEW:]:
            n = sum(line.lower().count(needle) for line in _diff_render.shown_lines(
                fd, mode == "side-by-side", MAX_LINES))
            hits += n
            functions += n > 0
        return hits, functions

    def graph(self, index: int, params: str = "collapse") -> Any:
        """The fused graph after step `index` with `fused_graph(params=...)`, its
        calls grouped by the model's node paths when the input has them (cached: node
        clicks look nodes up in it)."""
        key = (index, params)
        g = self._graphs.get(key)
        if g is None:
            from passlab.analysis.graph import fused_graph

            step = self.by_index[index]
            g = fused_graph(step.before if step.failed else step, params=params)
            if self._has_sources:
                try:
                    g = g.with_sources(self.provenance, step)
                except Exception:  # noqa: BLE001 - no provenance: the graph, ungrouped
                    pass
            self._graphs[key] = g
            if len(self._graphs) > 8:
                self._graphs.popitem(last=False)
        return g

    def first_opened(self, index: int, params: str = "collapse") -> tuple[str, ...]:
        """The source groups the graph pane after step `index` opens with
        (`_graph_groups.first_opened`: level by level from the top while the drawing
        shows at most ~40 nodes; DenseNet-121's one group `features` opens on its dense
        blocks); () where there is no graph to group."""
        from passlab.analysis._graph_groups import first_opened

        step = self.step(index)
        if step is None or self._no_relax(step) is not None:
            return ()
        try:
            g = self.graph(index, params)
        except Exception:  # noqa: BLE001 - the pane shows the error itself
            return ()
        return first_opened((g,))

    def _no_relax(self, step: Step) -> str | None:
        """A note when the module has no Relax function (TVM's TIR stage), else None:
        the graph and the buffers describe Relax functions."""
        module = step.module
        if module is None or _tvm.has_relax_function(module):
            return None
        last = [s for s in self.trace if listed(s) and s.level == "relax" and s.index < step.index]
        hint = f" The last pass before it is {_numbering.ref(last[-1])}." if last else ""
        return _note(f"The module after {_numbering.ref(step)} has only TIR functions "
                     f"(TVM's TIR stage): the fused graph and the buffers describe Relax "
                     f"functions.{hint}")

    @functools.cached_property
    def _has_sources(self) -> bool:
        """Whether the input carries source node names (so the graph can be grouped)."""
        from passlab.analysis._graph_groups import has_sources

        return has_sources(self.trace)

    def _graph(self, step: Step, params: str = "collapse", overlay: str = "none",
               opened: Sequence[str] | None = None) -> str:
        """The graph after `step`, its kernels marked against the previous main-chain
        step's graph (new, rewritten, removed), optionally coloured by bytes or by
        TVM's FLOP estimate of each kernel."""
        drawing = self.graph_drawing(step, params, overlay, opened)
        return drawing if isinstance(drawing, str) else drawing.html()

    def graph_drawing(self, step: Step, params: str = "collapse", overlay: str = "none",
                      opened: Sequence[str] | None = None) -> GraphDrawing | str:
        """What the graph pane after `step` draws, everything looked up and analysed
        (graphs, change marks, FLOPs): its `GraphDrawing.html` lays it out and
        touches no cache, so a report lays several out at once. A note (str) where
        there is nothing to draw."""
        head = _failed_note(step) if step.failed else ""
        none = self._no_relax(step)
        if none:
            return none
        g = self.graph(step.index, params)
        prev = marked_against(self.trace, step)
        marks: dict[str, str] = {}
        removed: list[str] = []
        if prev is not None and not step.failed:
            modified = frozenset(step.functions_changed.modified)
            marks, removed = graph_changes(self.graph(prev.index, params), g, modified)
        values = kernel_flops(g.module, g) if overlay == "flops" else None
        if overlay == "time":
            values = self.profiler.node_times(g) if self.profiler is not None else None
            if values is None:
                head += _note("Colour by time needs a profile: open the Profile tab and press "
                              "Profile, or open passlab.Explorer(build, "
                              "profile=build.profile()).", "plx-warn")
                overlay = "none"
        return GraphDrawing(head, g, dict(overlay_by=overlay, marks=marks, removed=removed,
                                          against=None if step.failed else prev, values=values,
                                          opened=opened))

    def kernel_links(self, index: int, node_id: str, params: str = "collapse") -> str:
        """HTML for a clicked graph node: its kernel's diff in step `index`, the passes
        that created and rewrote it, its buffers ("" for data nodes and unknown ids)."""
        node = next((n for n in self.graph(index, params).nodes if n.id == node_id), None)
        if node is None:
            return ""
        try:
            prov = self.provenance
        except Exception:  # noqa: BLE001 - no provenance here: the panel shows without it
            prov = None
        return eg.kernel_links(self.trace, self.by_index[index], node, prov)

    def _buffers(self, step: Step, bounds: dict[str, int] | None = None) -> str:
        """The liveness picture above the buffer tables, and the peak across the
        pipeline with this pass marked. `bounds` values for symbolic dimensions (the
        explorer's sliders) apply where the module has those dimensions."""
        from passlab.analysis.buffers import buffers

        head = _failed_note(step) if step.failed else ""
        none = self._no_relax(step)
        if none:
            self.symbols[step.index] = ()
            return none
        target = step.before if step.failed else step
        report = buffers(target)
        self.symbols[step.index] = report.symbols
        mine = {k: v for k, v in (bounds or {}).items() if k in report.symbols}
        if mine:
            report = buffers(target, bounds=mine)
        return head + self._peak_line(step) + report.to_html(plot=True)

    def _peak_line(self, step: Step) -> str:
        """The liveness peak over the main chain (`pass_table(trace).plot("peak")`)."""
        try:
            if self._peaks is None:
                from passlab.analysis.table import pass_table

                self._peaks = pass_table(self.trace, ir_lines=False).plot("peak")
            svg = self._peaks.to_svg(mark=step.index)
            moves = self._peaks.moves()
        except Exception as exc:  # noqa: BLE001 - the picture below still shows
            return _render.error_panel(exc, "the peak across the pipeline")
        moved = ", ".join(f"{name} ({_render.human_bytes(int(a or 0))} \u2192 "
                          f"{_render.human_bytes(int(b))})" for _, name, a, b in moves[:3])
        more = f" and {len(moves) - 3} more" if len(moves) > 3 else ""
        text = f"moved by {moved}{more}" if moves else "no pass moved it"
        return ('<details class="plx-peaks"><summary>Peak across the pipeline: '
                f"{html.escape(text)} (chart: this pass marked)</summary>{svg}</details>")

    def _compare(self, a: int, b: int, mode: str, all_functions: bool) -> str:
        sa, sb = self.step(a), self.step(b)
        if sa is None or sb is None:
            return _note("Choose two passes, A and B: the diff runs from A's input to B's output.")
        head = _note(f"From the input of {_numbering.ref(sa)} to the output of "
                     f"{_numbering.ref(sb)}.")
        if sa.index > sb.index:
            head += _note("A comes after B: this diff runs backwards.", "plx-warn")
        if sb.failed:
            head += _note(f"{_numbering.ref(sb)} failed: using its input instead.", "plx-warn")
        return head + _first_view(self.module_diff(a, b), mode, all_functions, "plx-compare")

    @functools.cached_property
    def provenance(self) -> Any:
        """`passlab.provenance(trace)`, computed once for the provenance pane and the
        kernel panel's "holds ... operator calls" line."""
        from passlab.analysis.provenance import provenance

        return provenance(self.trace)

    def _provenance(self, step: Step, opened: Sequence[str] | None = None) -> str:
        """The input graph beside the fused graph after `step` (after FuseTIR when
        `step` is earlier), linked op <-> kernel, and the op table; every pass before
        fusion shares one rendering. Both graphs are grouped by the model's node paths:
        the groups in `opened` are drawn open (None: the first view's), each of the others
        one box, so that a dense model's first layout is small and a group is laid out
        when it is opened."""
        drawing = self.provenance_drawing(step, opened)
        view = self._cached(("provenance-view", drawing.view.step.index, drawing.opened),
                            drawing.view_html, f"the provenance up to {drawing.view.step.label}")
        return drawing.head + view

    def provenance_drawing(self, step: Step, opened: Sequence[str] | None = None
                           ) -> ProvenanceDrawing:
        """What the provenance pane for `step` draws with the groups `opened` open (None:
        the first view's), everything looked up: its `ProvenanceDrawing.html` lays it out
        and touches no cache, so a report lays several out at once."""
        from passlab.analysis._provenance_view import fused_step

        after, note = fused_step(self.trace, step)
        view = self.provenance_view(after)
        shown = tuple(sorted(view.first_opened() if opened is None else opened))
        return ProvenanceDrawing(_note(note) if note else "", view, shown)

    def provenance_view(self, after: Step) -> Any:
        """The provenance view of the fused graph after step `after` (cached: opening a
        group redraws it, nothing else)."""
        view = self._prov_views.get(after.index)
        if view is None:
            from passlab.analysis._provenance_view import provenance_view

            view = self._prov_views[after.index] = provenance_view(self.trace, after,
                                                                   self.provenance)
            if len(self._prov_views) > 4:
                self._prov_views.popitem(last=False)
        return view

    def _profile(self) -> str:
        if self.profiler is not None:
            return self.profiler.to_html()
        from passlab.views.explorer_profile import pane_html

        return pane_html(None)

    def forget_graphs(self) -> None:
        """Drop the cached graph panes (a new profile colours them by other times)."""
        for key in [k for k in self._cache if k[0] == "graph"]:
            del self._cache[key]

    def kernel_node(self, kernel: str, params: str = "collapse"
                    ) -> tuple[int, str, str] | None:
        """`(step index, params, node id)`: the last main-chain Relax step whose
        fused graph has a call of `kernel`, with the parameter mode that shows it
        (`params`, else "show" for a kernel folded into its consumers as a weight
        transform), or None."""
        main = [s for s in self.trace if listed(s) and not s.failed and s.level == "relax"]
        for s in reversed(main):
            if not _tvm.has_relax_function(s.after):
                continue
            for mode in dict.fromkeys((params, "show")):
                g = self.graph(s.index, mode)
                node = next((n for n in g.nodes if kernel in (n.label, n.id)
                             and n.kind not in _DATA_KINDS), None)
                if node is not None:
                    return s.index, mode, node.id
        return None

    def _edit(self) -> str:
        if self.editor is not None:
            from passlab.views.explorer_edit import pane_html

            return pane_html(self.editor)
        return _note("Editing needs the build, and this Explorer was opened on a trace: "
                     "open passlab.Explorer(passlab.build(model)) to edit and re-run.")

    def _pipeline(self) -> str:
        pipe = self.trace.pipeline
        if pipe is None:
            return _note("This trace has no pipeline (it was recorded with passlab.record(), "
                         "not built from a passlab.Pipeline).")
        out = [self._user_runs()]
        out.append(pipe.to_html())
        return "".join(out)

    def _user_runs(self) -> str:
        """Where each user pass ran in the recorded main chain: between which passes."""
        main = [s for s in self.trace if listed(s)]
        found = []
        for k, s in enumerate(main):
            if s.origin != "user":
                continue
            prev = _numbering.ref(main[k - 1]) if k else "the start"
            nxt = _numbering.ref(main[k + 1]) if k + 1 < len(main) else "the end"
            result = "failed" if s.failed else (s.functions_changed.summary() or "no change")
            p = _numbering.positions(self.trace).get(s.index)
            found.append(["" if p is None else f"#{p}", _numbering.name_of(s, self.trace),
                          s.stage, prev, nxt, result])
        if not found:
            return _note("No user pass in this build: the pipeline is TVM's default.")
        return _render.html_table(["#", "user pass", "stage", "after", "before", "result"],
                                  found, ["user"] * len(found), caption="Where your passes ran")

    # ------------------------------------------------------------------- kernels
    def kernel(self, index: int, node_id: str, params: str = "collapse") -> tuple[str, str]:
        """`(title, text)` for a clicked graph node: the TVMScript of the kernel (TIR
        PrimFunc, or Relax function before FuseTIR) it calls, looked up in the module the
        graph was drawn from."""
        step = self.by_index[index]
        graph = self.graph(index, params)
        node = next((n for n in graph.nodes if n.id == node_id), None)
        if node is None:
            return f"no node {node_id!r} in the graph after {step.label}", ""
        if node.kind in _DATA_KINDS:
            return f"{node.id} is {_DATA_WORDS[node.kind]}: data, not a kernel", ""
        module = step.module
        from passlab.analysis.ir_text import function_source

        for name in dict.fromkeys((node.label, node.id)):
            found = function_source(module, name)
            if found is not None:
                kind, text = found
                where = "input of" if step.failed else "after"
                return f"{kind} of {name} ({where} {_numbering.ref(step)})", text
        return (f"{node.label} is a Relax operator: no kernel for it in the module after "
                f"{step.label} (LegalizeOps turns operators into TIR kernels)"), ""

    def code(self, index: int, node_id: str, params: str = "collapse") -> tuple[str, str]:
        """`(title, text)`: what the target generated for a clicked graph node's
        kernel (the trace's codegen step), or empty strings when there is none."""
        code = self.trace.code
        if code is None or index not in self.by_index:
            return "", ""
        node = next((n for n in self.graph(index, params).nodes if n.id == node_id), None)
        if node is None or node.kind in _DATA_KINDS:
            return "", ""
        for name in dict.fromkeys((node.label, node.id)):
            if name in code.kernels:
                kind = code.main_kind
                text = code.kernel(name, kind)
                if text:
                    return f"{kind} generated for {name} (codegen step)", text
        return "", ""


def _first_view(d: Any, mode: str, all_functions: bool, anchors: str = "") -> str:
    """A diff's HTML: every function, or the first few plus a "show all" button (the front
    end sends `diff_all` when it is clicked); function blocks get ids `anchors-...`."""
    from passlab.analysis import _diff_render, ir_text
    from passlab.analysis.diff import FIRST_VIEW

    if all_functions:
        ir_text.prefetch([d], None)
        return d.to_html(mode, anchors=anchors)
    # a huge Relax function (a 32-layer forward) prints its first binding region only,
    # and functions are printed a few at a time until the line budget is spent: a late
    # TIR pass rewrites every kernel, and its first 400 lines hold two or three of them
    view = d.first_screen(FIRST_VIEW)
    paired = mode == "side-by-side"
    shown = view.functions[:FIRST_VIEW]
    lines = printed = 0
    while printed < len(shown) and lines <= FIRST_VIEW_LINES:
        batch = shown[printed:printed + 2]  # the printer's threads
        ir_text.prefetch([dataclasses.replace(view, functions=batch)])
        lines += sum(_diff_render.row_total(fd, paired) for fd in batch)
        printed += len(batch)
    if len(d) <= FIRST_VIEW and lines <= FIRST_VIEW_LINES and not view.regions:
        return d.to_html(mode, anchors=anchors)
    what = (f"all {len(d)} changed functions" if len(d) > FIRST_VIEW
            else "whole functions" if view.regions
            else f"all {lines:,} diff lines" if printed == len(shown) else "all diff lines")
    button = f'<button type="button" class="plx-show-all">show {what}</button>'
    return view.to_html(mode, max_functions=FIRST_VIEW, anchors=anchors,
                        max_total_lines=FIRST_VIEW_LINES) + button
