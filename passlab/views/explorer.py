"""Explorer: a Jupyter widget to walk through a recorded build, pass by pass.

Python owns the state (synced traitlets); the front end (the ES modules of
`static/explorer/`, joined into one by `bundle`) only renders it and sends the
user's clicks back. Panes are rendered lazily: selecting a pass prints and lays out only
that step's open pane (`passlab.views.explorer_panes`), and the answer goes to the
front end as one message before Python's cycle collector may run (`hold_sync`).
The pass list's rows come from `passlab.views.explorer_list`; the Edit and Profile
behaviour are mixins (`passlab.views.explorer_actions`).

Needs the `notebook` extra (ipywidgets 8 and anywidget).
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator
from typing import Any

from passlab._render import no_cycle_collection
from passlab.analysis._highlight import CSS as TOKEN_CSS
from passlab.analysis._highlight import block_html
from passlab.recording import numbering as _numbering
from passlab.recording.trace import Step, Trace
from passlab.views import _bundle
from passlab.views import _explorer_life as _life
from passlab.views import explorer_list as listing
from passlab.views import explorer_panes as panes
from passlab.views.explorer_profile import ProfileView

__all__ = ["Explorer"]

#: The front end's entry module (it imports the others) and its style sheets, in order.
JS_PARTS = ("explorer/main.js",)
CSS_PARTS = ("explorer/base.css", "explorer/graph.css", "explorer/ir.css",
             "explorer/provenance.css", "explorer/edit.css", "explorer/profile.css")
#: ``PASSLAB_DEV=1``: ``_esm`` and ``_css`` are files, rebuilt when a source changes, so
#: anywidget reloads them live (its ``ANYWIDGET_HMR``, set too; needs ``watchfiles``).
DEV = os.environ.get("PASSLAB_DEV") == "1"


def bundle(parts: tuple[str, ...]) -> str:
    """The front end as one file: JS `parts` are entry modules, joined with what they
    import into one ES module (anywidget's `_esm`; `passlab.views._bundle`); CSS
    parts are joined in order. Cached."""
    return _bundle.bundle(parts, fresh=DEV)


def _asset(name: str, parts: tuple[str, ...], extra: str = "") -> Any:
    """The inline bundle, or in development mode the file it is kept in."""
    if not DEV:
        return bundle(parts) + extra
    os.environ.setdefault("ANYWIDGET_HMR", "1")
    return _bundle.dev_file(name, lambda: bundle(parts) + extra)


def _load_changes(ref: weakref.ref[Any]) -> None:
    """The rows an Explorer opened without their change counts, sent once its first view
    is out (weakly: a scheduled call does not keep a dropped Explorer alive)."""
    ex = ref()
    if ex is not None:
        ex.load_changes()


def _changes_message(widget: Any, content: Any, buffers: Any = None) -> None:
    """A custom message of the front end: `{"load": "changes"}` once it has drawn rows
    still waiting for their change counts (a kernel without an event loop, where
    nothing scheduled them)."""
    if isinstance(content, dict) and content.get("load") == "changes":
        widget.load_changes()


_NEEDS = ("passlab.Explorer needs ipywidgets and anywidget (the 'notebook' extra): "
          "pip install 'passlab[notebook]'")

try:
    import anywidget
    import traitlets as t
except ImportError as _missing:  # a stand-in that says what to install, raised on use
    _error = _missing

    class Explorer:
        """Stand-in: ipywidgets/anywidget are not installed."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(_NEEDS) from _error

else:

    from passlab.views.explorer_actions import Editing, Profiling

    class Explorer(Editing, Profiling, anywidget.AnyWidget):  # type: ignore[no-redef]
        """Explore a recorded trace: pass list, diff, fused graph, buffers, compare,
        pipeline.

        Parameters
        ----------
        trace : Trace, Build or BuildError
            What to explore (a build's or a failed build's `.trace` is taken). A Build
            can also be edited and re-run: the "edit" tab, `edit`,
            `register_pass` and `history`.
        tab : str
            The pane to open: "diff", "graph", "buffers", "provenance", "compare",
            "pipeline", "edit" or "profile".
        profile : Profile, optional
            The build's `Profile` (`build.profile()`)
            for the Profile pane and the graph's "time" colour (a profile of another
            build is refused: ValueError); without one, an Explorer on a Build shows
            the build's latest profile while it is alive, or times it when the pane's
            Profile button (or `run_profile`) is pressed.
        selected : int, optional
            The step (its `Step.index`) to open on; default the failing pass, the
            first user pass or the first pass that changed the module.
        **kwargs
            Initial values of other traits: `compare_a`, `compare_b`,
            `changed_only`, `stage`, `search`, `show_inner`, `diff_mode`,
            `bounds` (values for symbolic dimensions in the buffers pane).

        Examples
        --------
        >>> import passlab
        >>> from passlab.views.explorer import Explorer
        >>> ex = Explorer(passlab.build(passlab.models.mlp()))
        >>> ex.selected = ex.trace.find("FuseOps").index
        >>> "FuseOps" in ex.diff_html
        True
        """

        _esm = _asset("explorer.js", JS_PARTS)
        # token colours of highlighted IR (diffs, and kernel TIR shown in the graph pane)
        _css = _asset("explorer.css", CSS_PARTS, "\n" + TOKEN_CSS)

        # -- the data (sent once)
        steps = t.List(help="one row per step: i, label, stage, kind, origin, depth, "
                            "changed, summary, failed, ms; every step's when "
                            "steps_complete, else the main chain's (and failed steps')"
                       ).tag(sync=True)
        steps_complete = t.Bool(True, help="steps holds every step's row. A trace of more "
                                "than explorer_list.ROWS_UP_FRONT steps opens with the main "
                                "chain's rows only; the others are computed and sent when "
                                "the list shows inner passes (show_inner) or load_rows() "
                                "is called").tag(sync=True)
        changes_pending = t.Int(0, help="rows of steps sent without their change counts "
                                "(changed, summary and detail None): an opening Explorer "
                                "spends at most explorer_list.COMPARISONS_UP_FRONT function "
                                "comparisons on them, and load_changes() sends the others "
                                "once the first view is out (scheduled on the kernel's "
                                "event loop, and asked for by the front end)").tag(sync=True)
        step_count = t.Int(0, help="how many steps the trace has (len(trace))").tag(sync=True)
        stages = t.List(t.Unicode(), help="stage names, in pipeline order").tag(sync=True)
        summary = t.Unicode(help="one-line summary of the trace").tag(sync=True)
        failure = t.Unicode(help="why the build failed, or empty").tag(sync=True)
        # -- the list and its filters
        visible = t.List(t.Int(), help="indices of the steps the list shows").tag(sync=True)
        changed_only = t.Bool(False, help="list only passes that changed the module").tag(sync=True)
        stage = t.Unicode("", help="list only this stage ('' for all)").tag(sync=True)
        search = t.Unicode("", help="list only passes whose name contains this").tag(sync=True)
        show_inner = t.Bool(False, help="also list wrappers and passes run inside "
                                        "other passes").tag(sync=True)
        show_llvm = t.Bool(False, help="open the group of LLVM's own passes under the "
                                       "codegen step (a trace recorded with "
                                       "llvm_passes=True)").tag(sync=True)
        selected = t.Int(-1, help="Step.index of the selected pass (-1: none)").tag(sync=True)
        # -- the panes
        tab = t.Enum(panes.TABS, "diff", help="the open pane").tag(sync=True)
        diff_mode = t.Enum(panes.DIFF_MODES, "unified",  # the pane is narrower than a page
                           help="diff layout").tag(sync=True)
        diff_all = t.Bool(False, help="print every changed function in diffs, not only the "
                                      "first few").tag(sync=True)
        diff_html = t.Unicode(help="diff of the selected pass").tag(sync=True)
        graph_html = t.Unicode(help="fused graph after the selected pass").tag(sync=True)
        buffers_html = t.Unicode(help="buffers after the selected pass").tag(sync=True)
        explain_html = t.Unicode(help="the Explain strip above the step panes: what the "
                                      "selected pass does and what it changed here"
                                 ).tag(sync=True)
        bounds = t.Dict(value_trait=t.Int(min=0), help="values for symbolic dimensions in the "
                        "buffers pane, e.g. {'n': 128} (the front end's sliders)").tag(sync=True)
        symbols = t.List(t.Unicode(), help="symbolic dimensions of the buffers after the "
                         "selected pass (a slider each)").tag(sync=True)
        compare_a = t.Int(-1, help="compare: from this step's input").tag(sync=True)
        compare_b = t.Int(-1, help="compare: to this step's output").tag(sync=True)
        compare_html = t.Unicode(help="diff from compare_a to compare_b").tag(sync=True)
        pipeline_html = t.Unicode(help="the pipeline and where user passes ran").tag(sync=True)
        provenance_html = t.Unicode(help="the model's operators and the kernels they ended "
                                    "up in, up to the selected pass").tag(sync=True)
        edit_html = t.Unicode(help="the edit pane: the pipeline to change and re-run"
                              ).tag(sync=True)
        edit_pending = t.List(t.Dict(), help="the edits waiting for Run, in order: "
                              "{action, position, name, where} (passlab.pipeline.Edit)"
                              ).tag(sync=True)
        edit_run = t.Int(0, help="bumped by the front end's Run button").tag(sync=True)
        edit_shown = t.Int(0, help="the history entry whose trace the Explorer shows"
                           ).tag(sync=True)
        focus = t.List(t.Unicode(), help="graph node ids (or Relax variable names) to "
                       "highlight in the graph: set by links from other panes").tag(sync=True)
        ir_search = t.Unicode("", help="the IR search of the diff/compare pane: the front end "
                              "finds it in the printed functions, Python counts it in "
                              "those a first view does not print").tag(sync=True)
        ir_search_more = t.Dict(help="hits of ir_search in the functions not printed: "
                                "{query, where, hits, functions}").tag(sync=True)
        node = t.Unicode("", help="id of the graph node clicked in the front end").tag(sync=True)
        kernel_title = t.Unicode(help="what kernel_text shows").tag(sync=True)
        kernel_text = t.Unicode(help="TVMScript of the clicked node's kernel").tag(sync=True)
        kernel_text_html = t.Unicode(help="kernel_text highlighted (escaped HTML with "
                                     "tok-* classes)").tag(sync=True)
        code_title = t.Unicode(help="what code_text shows").tag(sync=True)
        code_text = t.Unicode(help="the code the target generated for the clicked node's "
                              "kernel (the trace's codegen step)").tag(sync=True)
        kernel_html = t.Unicode(help="what the clicked node links to: its kernel's diff in "
                                "this step, the passes that created and rewrote it, its "
                                "buffers (escaped HTML)").tag(sync=True)
        graph_params = t.Enum(("collapse", "show", "hide"), "collapse",
                              help="weights in the graph: fused_graph(params=...)"
                              ).tag(sync=True)
        graph_overlay = t.Enum(("none", "bytes", "flops", "time"), "none", help="colour the graph "
                               "by: edges by tensor bytes and kernels by bytes in+out, or "
                               "kernels by TVM's FLOP estimate, or (with a profile) by "
                               "their time per run").tag(sync=True)
        graph_open = t.List(t.Unicode(), allow_none=True, default_value=None,
                            help="source groups drawn open in the graph (their paths: "
                            "'/layer1', '/layer1/layer1.0'); the others are one box each "
                            "until a click opens them. None: the first view's (groups "
                            "opened level by level while the drawing stays small)"
                            ).tag(sync=True)
        provenance_open = t.List(t.Unicode(), allow_none=True, default_value=None,
                                 help="source groups drawn open in both provenance graphs; "
                                 "None: the first view's (groups opened level by level "
                                 "while the drawings stay small)").tag(sync=True)
        profile_html = t.Unicode(help="the Profile pane: the kernel times of the shown build "
                                 "(a Profile), sorted by profile_sort").tag(sync=True)
        has_profile = t.Bool(False, help="the shown build has a profile (the graph then "
                             "offers the 'time' colour)").tag(sync=True)
        profile_sort = t.Unicode("-total", help="the Profile table's order: a column key "
                                 "(kernel, calls, median, total, share, gflops, gbps, "
                                 "sources, passes), '-' in front for descending"
                                 ).tag(sync=True)
        profile_run = t.Int(0, help="bumped by the Profile button: times the shown build "
                            "(run_profile())").tag(sync=True)
        profile_kernel = t.Unicode("", help="a kernel clicked in the Profile table: shown in "
                                   "the graph pane (show_kernel()), then cleared"
                                   ).tag(sync=True)
        rendered = t.Int(0, help="bumped after every render (the front end's busy flag)"
                         ).tag(sync=True)

        def __init__(self, trace: Any, *, tab: str = "diff", selected: int | None = None,
                     profile: Any = None, **kwargs: Any) -> None:
            from passlab.recording.build import Build

            # earlier Explorers nobody refers to any more let go of their builds now
            # (ipywidgets' registry would keep them, and their builds, for good)
            _life.release_dropped()
            self._views = 0  # views of this widget open in front ends (_explorer_life)
            self._pinned = False  # handed to a display, no view reported yet
            self._closed = False
            #: the Build to re-run from the Edit pane (None for a trace or a BuildError)
            self._build = trace if isinstance(trace, Build) else None
            #: the picked node's panel waits for the graph pane (see _keep_node)
            self._kernel_stale = False
            #: the step the user chose that a filter hid, and the one the filter chose
            #: instead (see _follow_filter)
            self._hidden_choice: int | None = None
            self._filter_pick: int | None = None
            self._filtering = False
            self._session: Any = None
            if self._build is not None:
                from passlab.research.edit_session import EditSession

                self._session = EditSession(self._build)
            trace = getattr(trace, "trace", trace)  # a Build or a BuildError
            if not isinstance(trace, Trace):
                raise TypeError("Explorer() takes a passlab.Trace, Build or BuildError, not "
                                f"{type(trace).__name__}")
            self._trace = trace
            self._panes = panes.PaneRenderer(trace)
            self._panes.editor = self._session
            self._profiles: dict[int, Any] = {}  # history entry -> its Profile
            if profile is None and self._build is not None:
                from passlab.research.profile import last_profile

                profile = last_profile(self._build)  # profiled before: shown at once
            if profile is not None:
                from passlab.research.profile import check_belongs

                check_belongs(profile, trace, "Explorer")  # TypeError / ValueError
                self._profiles[0] = profile
            self._profile_view = ProfileView(profile, can_run=self._build is not None)
            self._panes.profiler = self._profile_view
            with no_cycle_collection():  # no collection's pause in the user's wait
                self._ready = False  # observers wait until every trait is set
                first = selected if selected is not None else listing.default_selection(trace)
                state = listing.trace_state(trace, kwargs.get("show_inner", False),
                                            listing.COMPARISONS_UP_FRONT)
                state.update(kwargs)  # e.g. compare_a=..., changed_only=True
                super().__init__(tab=tab, has_profile=profile is not None, **state)
                self.visible = self._visible()
                if self.changed_only:  # the filter computed every change set
                    self.load_changes()
                self._ready = True
                self.selected = first
                if first == -1:  # no change event: render the "empty" pane by hand
                    self._render()
            self.on_msg(_life.views_message)  # a module function: no cycle to the widget
            self.on_msg(_changes_message)
            if self.changes_pending:  # the rest of the rows once the first view is out
                _life.soon(_load_changes, weakref.ref(self))
            _life.OPEN.add(self)
            # the one this replaces (`ex = Explorer(...)` again) goes once the cell is
            # done, or at the next full collection without a kernel
            _life.watch_collections()
            _life.defer_release()

        @property
        def trace(self) -> Trace:
            if self._closed:
                raise RuntimeError("this Explorer was closed (it let go of its trace and "
                                   "build): open a new one, passlab.Explorer(build)")
            return self._trace

        @property
        def step(self) -> Step | None:
            """The selected `Step`, or None."""
            return None if self._closed else self._panes.step(self.selected)

        # ----------------------------------------------------------- lifecycle
        def close(self) -> None:
            """Close the widget (its views go from the front end) and let go of the
            build, trace and edit history. An Explorer nothing refers to any more is
            closed when the next one opens (see `passlab.views._explorer_life`)."""
            _life.OPEN.discard(self)
            layout = self._trait_values.get("layout")  # ipywidgets leaves it registered
            super().close()
            if layout is not None and hasattr(layout, "close"):
                layout.close()
            if getattr(self, "_closed", True):
                return
            self._closed, self._ready = True, False  # observers stay quiet from here
            self._build = self._session = None
            self._profiles = {}
            if getattr(self, "_profile_view", None) is not None:  # None: __init__ failed
                self._profile_view.profile = None
            self._trace = Trace([])
            self._panes = panes.PaneRenderer(self._trace)
            with self.hold_sync():
                self.steps, self.visible, self.stages = [], [], []
                for tab in panes.TABS:
                    setattr(self, f"{tab}_html", "")
                self.explain_html = self.kernel_text = self.kernel_text_html = ""
                self.kernel_html = self.code_text = ""

        @contextlib.contextmanager
        def hold_sync(self) -> Iterator[None]:
            """ipywidgets' `hold_sync` (the changes are sent as one message when the
            outermost one exits), with Python's cycle collector paused until that message
            is out: a full collection over a big trace's objects takes 30-400 ms, and it
            then runs after the front end has the new pane, not before
            (`passlab._render.no_cycle_collection`)."""
            with no_cycle_collection(), super().hold_sync():
                yield

        # ---------------------------------------------------------- validation
        @t.validate("selected", "compare_a", "compare_b")
        def _check_step(self, proposal: Any) -> int:
            value = proposal["value"]
            if value != -1 and value not in self._panes.by_index:
                last = max(self._panes.by_index, default=-1)
                raise t.TraitError(f"{proposal['trait'].name}: no step #{value} in this trace "
                                   f"(steps are #0..#{last}, or -1 for none)")
            return value

        @t.validate("stage")
        def _check_stage(self, proposal: Any) -> str:
            value = proposal["value"]
            if value and value not in self.stages:
                raise t.TraitError(f"stage {value!r} is not in this trace; stages are "
                                   f"{', '.join(self.stages) or 'none'} ('' for all)")
            return value

        # ----------------------------------------------------------- observers
        def _visible(self) -> list[int]:
            return listing.visible(self._trace, changed_only=self.changed_only, stage=self.stage,
                                 search=self.search, show_inner=self.show_inner,
                                 show_llvm=self.show_llvm)

        def load_rows(self) -> None:
            """Compute and send every step's row (inner passes and wrappers too), when
            `steps` holds only the main chain's (`steps_complete` is False)."""
            if not self.steps_complete:
                with self.hold_sync():
                    self.steps = listing.rows(self._trace)
                    self.steps_complete = True
                    self.changes_pending = 0
                    self.rendered += 1  # the front end's busy flag waited for them

        def load_changes(self) -> None:
            """Compute the change counts of the rows sent without them
            (`changes_pending`) and send the rows."""
            if self._closed or not self.changes_pending:
                return
            with self.hold_sync():
                self.steps = listing.rows(self._trace, main_only=not self.steps_complete)
                self.changes_pending = 0

        @t.observe("changed_only", "stage", "search", "show_inner", "show_llvm")
        def _on_filter(self, change: Any) -> None:
            if not self._ready:
                return
            with self.hold_sync():
                if self.show_inner or self.show_llvm:
                    self.load_rows()
                if self.changed_only:  # the filter computes every change set
                    self.load_changes()
                self.visible = self._visible()
                self._follow_filter([i for i in self.visible if i >= 0])

        def _follow_filter(self, steps: list[int]) -> None:
            """The selection under new filters (`steps`: the steps they show; a disabled
            entry's row, index < 0, has no step): kept while its row is shown. A filter
            that hides it selects the first step shown, and the pass the user had
            chosen comes back once a filter shows it again, unless they chose another
            meanwhile (typing "fuse" and clearing the search ends where it started)."""
            kept = self._hidden_choice
            if kept is not None and kept in steps and self.selected == self._filter_pick:
                target = kept
            elif steps and self.selected not in steps:
                if kept is None:
                    self._hidden_choice = self.selected
                target = steps[0]
            else:
                return
            self._filter_pick = None if target == kept else target
            if target == kept:
                self._hidden_choice = None
            self._filtering = True
            try:
                self.selected = target
            finally:
                self._filtering = False

        @t.observe("selected")
        def _on_select(self, _change: Any) -> None:
            if not self._ready:
                return
            if not self._filtering:  # the user's own choice: nothing to come back to
                self._hidden_choice = self._filter_pick = None
            with self.hold_sync():
                for name in ("diff_html", "graph_html", "buffers_html"):
                    if getattr(self, name):
                        setattr(self, name, "")  # stale: re-rendered when its tab opens
                self._keep_node()
                self.explain_html = self._panes.explain(self.selected)
                self._render()

        def _keep_node(self, now: bool = False) -> None:
            """After a new step or parameter mode: the clicked node stays picked (its
            panel redrawn) when the new graph has a node of that id, else it is cleared.
            The panel lives in the graph pane: with another pane open this waits until
            the graph pane opens (stepping through diffs does not redraw it each time),
            unless `now`."""
            if self.node and self.tab != "graph" and not now:
                self._kernel_stale = True
                return
            self._kernel_stale = False
            try:
                keep = bool(self.node) and self.selected != -1 and any(
                    n.id == self.node for n in self._panes.graph(self.selected, self.graph_params))
            except Exception:  # noqa: BLE001 - no graph here (TIR stage, error): clear
                keep = False
            if keep:
                self._show_kernel(self.node)
                return
            self.node = ""
            self.kernel_title = self.kernel_text = self.kernel_html = ""
            self.kernel_text_html = ""
            self.code_title = self.code_text = ""

        @t.observe("graph_params", "graph_overlay", "graph_open")
        def _on_graph_view(self, change: Any) -> None:
            if not self._ready:
                return
            with self.hold_sync():
                if change["name"] == "graph_params":
                    self._keep_node()
                if self.tab == "graph":
                    self._render()
                else:
                    self.graph_html = ""  # stale: redrawn when the tab opens

        @t.observe("provenance_open")
        def _on_provenance_view(self, _change: Any) -> None:
            if not self._ready:
                return
            if self.tab == "provenance":
                self._render()  # the opened group laid out now (or taken from the cache)
            else:
                self.provenance_html = ""  # stale: redrawn when the tab opens

        @t.observe("tab", "diff_mode", "diff_all", "compare_a", "compare_b", "bounds")
        def _on_view(self, change: Any) -> None:
            if not self._ready:
                return
            if change["name"] in ("diff_mode", "diff_all"):
                self.diff_html = self.compare_html = ""
            if change["name"] == "bounds" and self.tab != "buffers":
                self.buffers_html = ""  # stale: redrawn with the bounds when opened
                return
            if change["name"] == "tab" and self.tab == "graph" and self._kernel_stale:
                with self.hold_sync():
                    self._keep_node()
                    self._render()
                return
            self._render()

        @t.observe("node")
        def _on_node(self, change: Any) -> None:
            if not self._ready or not change["new"] or self.selected == -1:
                return
            self._show_kernel(change["new"])

        def _show_kernel(self, node: str) -> None:
            """The kernel panel for graph node `node` of the selected step."""
            index, params = self.selected, self.graph_params
            try:
                title, text = self._panes.kernel(index, node, params)
                code_title, code_text = self._panes.code(index, node, params)
            except Exception as exc:  # noqa: BLE001 - the widget shows it and lives on
                title, text = f"could not look up {node!r}", f"{type(exc).__name__}: {exc}"
                code_title = code_text = ""
            try:
                links = self._panes.kernel_links(index, node, params) if text else ""
            except Exception as exc:  # noqa: BLE001 - the TIR above still shows
                from passlab._render import error_panel

                links = error_panel(exc, f"the links of {node!r}")
            with self.hold_sync():
                self.kernel_title, self.kernel_text = title, text
                self.kernel_text_html = block_html(text) if text else ""
                self.code_title, self.code_text = code_title, code_text
                self.kernel_html = links

        @t.observe("ir_search")
        def _on_ir_search(self, _change: Any) -> None:
            if self._ready:
                self._search_more()

        def _search_more(self) -> None:
            """Count ir_search in the functions the open diff does not print."""
            tab, query = self.tab, self.ir_search
            first, last = ((self.compare_a, self.compare_b) if tab == "compare"
                           else (self.selected, None))
            hits = functions = 0
            if query and tab in ("diff", "compare") and not self.diff_all:
                try:
                    hits, functions = self._panes.search_unshown(
                        query, first, mode=self.diff_mode, b=last)
                except Exception:  # noqa: BLE001 - the search box then counts what it sees
                    hits = functions = 0
            # `where` names the diff counted, so the front end never shows a stale count
            where = f"{tab}:{first}:{last}:{self.diff_mode}:{self.diff_all}"
            self.ir_search_more = dict(query=query, where=where, hits=hits,
                                       functions=functions)

        def _render(self) -> None:
            """Fill the open pane for the current selection (a cached pane is free)."""
            tab = self.tab
            with self.hold_sync():
                try:
                    out = self._panes.pane(tab, self.selected, mode=self.diff_mode,
                                           a=self.compare_a, b=self.compare_b,
                                           all_functions=self.diff_all, bounds=self.bounds,
                                           params=self.graph_params,
                                           overlay=self.graph_overlay,
                                           opened=self._graph_opened(tab),
                                           provenance_open=self.provenance_open)
                    setattr(self, f"{tab}_html", out)
                    if tab == "buffers":
                        self.symbols = list(self._panes.symbols.get(self.selected, ()))
                    if self.ir_search and tab in ("diff", "compare"):
                        self._search_more()
                finally:
                    self.rendered += 1

        def _graph_opened(self, tab: str) -> list[str] | tuple[str, ...] | None:
            """The groups the graph pane draws open: `graph_open`, or while that is None
            the first view's (`PaneRenderer.first_opened`)."""
            if self.graph_open is not None or tab != "graph":
                return self.graph_open
            return self._panes.first_opened(self.selected, self.graph_params)

        def render_all(self) -> None:
            """Render every pane for the selected step now (e.g. before saving the
            notebook with widget state, so that a static page has them all)."""
            with self.hold_sync():
                if self._kernel_stale:
                    self._keep_node(now=True)
                for tab in panes.TABS:
                    setattr(self, f"{tab}_html", self._panes.pane(
                        tab, self.selected, mode=self.diff_mode, a=self.compare_a,
                        b=self.compare_b, all_functions=self.diff_all, bounds=self.bounds,
                        params=self.graph_params, overlay=self.graph_overlay,
                        provenance_open=self.provenance_open))
                self.symbols = list(self._panes.symbols.get(self.selected, ()))
                self.rendered += 1

        # ------------------------------------------------------------- display
        def to_text(self) -> str:
            """The trace table and the selected step, for terminals. The change columns
            of rows still waiting for their counts (`changes_pending`) read "…": the
            text goes with the widget's first view (its fallback), which does not wait."""
            pending = [r["i"] for r in self.steps if r["summary"] is None
                       and listing.listed(self._trace[r["i"]])]
            out = self._trace.to_text(pending=pending)
            if pending:
                out += (f"\n(\u2026: the changes of {len(pending)} passes were still "
                        "being counted when this was shown; trace.to_text() prints them)")
            step = self.step
            if step is not None:
                out += "\n\nselected: " + step.to_text()
            return out

        def _repr_mimebundle_(self, **kwargs: Any) -> Any:
            # the widget view where a front end can show it, the trace table otherwise
            # (the default text/plain is a bare object repr)
            bundle = super()._repr_mimebundle_(**kwargs)
            if bundle is None:
                return {"text/plain": self.to_text()}
            self._pinned = True  # shown somewhere: kept until its views report and go
            data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
            try:
                data["text/plain"] = self.to_text()
            except Exception as exc:  # noqa: BLE001 - display hooks never raise
                data["text/plain"] = f"{self!r} (could not render the trace: {exc!r})"
            return data, meta

        def __repr__(self) -> str:
            if getattr(self, "_closed", False):
                return "<Explorer (closed)>"
            step = self.step
            # named as the list names it: its pipeline number, the step index after it
            sel = (f", selected {_numbering.ref(step)}" + ("" if _numbering.positions(
                self._trace).get(step.index) is None else f" (step {step.index})")
                   if step is not None else "")
            return f"<Explorer: {len(self._trace)} steps{sel}, pane {self.tab!r}>"
