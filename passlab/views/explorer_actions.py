"""What the Explorer does when the user edits the pipeline or times the build: the
widget's Edit and Profile behaviour, as two traitlets mixins of
`Explorer` (imported with it, so it needs the `notebook`
extra). The panes they fill are drawn by `passlab.views.explorer_edit` and
`passlab.views.explorer_profile`; the editing model is
`passlab.research.edit_session`.
"""

from __future__ import annotations

from typing import Any

import traitlets as t

from passlab.views import explorer_list as listing
from passlab.views import explorer_panes as panes

__all__ = ["Editing", "Profiling"]


class _Shared(t.HasTraits):
    """What both halves use of the Explorer's state (set by its `__init__`)."""

    _session: Any  # research.edit_session.EditSession, None without a Build
    _panes: Any  # explorer_panes.PaneRenderer of the shown trace
    _profiles: dict[int, Any]  # history entry -> its Profile
    _profile_view: Any  # explorer_profile.ProfileView
    _ready: bool
    _closed: bool


class Editing(_Shared):
    """The Edit pane's behaviour: `edit`, `register_pass`, `history`
    and the front end's pending edits, Run and "show" buttons."""

    _trace: Any
    _build: Any
    # traits the Explorer declares (the synced state)
    stage: str
    summary: str

    # ------------------------------------------------------------- editing
    def _editing(self, what: str) -> Any:
        if self._closed:
            raise RuntimeError(f"{what}: this Explorer was closed; open a new one, "
                               "passlab.Explorer(passlab.build(model))")
        if self._session is None:
            raise TypeError(
                f"{what} needs the build, and this Explorer was opened on a "
                f"{'trace' if self._build is None else 'build'} it cannot re-run: open "
                "passlab.Explorer(passlab.build(model)) to edit and re-run")
        return self._session

    @property
    def history(self) -> tuple:
        """Every run of the Edit pane and of `edit`, the recorded build first:
        immutable `(pipeline, build, result)` entries
        (`HistoryEntry`; `build` is None for a
        run that failed); empty for an Explorer opened on a trace."""
        return () if self._session is None else self._session.history

    def register_pass(self, fn: Any, name: str | None = None) -> str:
        """Offer `fn` (IRModule -> IRModule) in the Edit pane's insert control, under
        `name` (default its `__name__`); returns the name."""
        out = self._editing("register_pass()").register(fn, name)
        self._refresh_edit()
        return out

    def edit(self, new_pipeline: Any) -> Any:
        """Re-run with `new_pipeline` from its first edit (`passlab.rerun`), add the
        run to `history` and show its trace; returns the new Build (a Rerun).

        Raises
        ------
        BuildError
            When the edited build fails; the Edit pane shows the failing step and its
            reproducer, and the Explorer keeps showing the previous run.

        Examples
        --------
        >>> import passlab
        >>> ex = passlab.Explorer(passlab.build(passlab.models.mlp()))
        >>> r = ex.edit(ex.history[-1].pipeline.disable("FoldConstant"))
        >>> len(ex.history), r.run().shape
        (2, (4, 8))
        """
        return self._run_edit(self._editing("edit()").run(new_pipeline))

    def _run_edit(self, entry: Any) -> Any:
        if entry.build is None:
            self._refresh_edit()
            raise entry.error
        self._show_run(len(self.history) - 1)
        return entry.build

    def _refresh_edit(self) -> None:
        with self.hold_sync():
            self.edit_pending = [e.to_dict() for e in self._session.pending]
            if self.tab == "edit":
                self.edit_html = self._panes.pane("edit", -1)
            else:
                self.edit_html = ""  # stale: re-rendered when its tab opens
            self.rendered += 1

    def _show_run(self, index: int) -> None:
        """Show history entry `index`: its trace in every pane."""
        entry = self._session.show(index)
        trace = entry.build.trace
        head = "" if index == 0 else f"{entry.label}: "
        self._ready = False
        try:
            with self.hold_sync():
                self._trace = trace
                self._panes = panes.PaneRenderer(trace)
                self._panes.editor = self._session
                self._profile_view.profile = self._profiles.get(index)
                self._profile_view.message = ""
                self._panes.profiler = self._profile_view
                self.has_profile = self._profile_view.profile is not None
                self.selected = -1
                for name, value in listing.trace_state(trace, self.show_inner).items():
                    setattr(self, name, value)
                if self.stage not in self.stages:
                    self.stage = ""
                self.summary = head + self.summary
                for tab in panes.TABS:
                    setattr(self, f"{tab}_html", "")
                self.node = self.kernel_title = self.kernel_text = self.kernel_text_html = ""
                self.code_title = self.code_text = ""
                self.visible = self._visible()
                self.edit_shown = index
                self.edit_pending = []
        finally:
            self._ready = True
        self.selected = listing.default_selection(trace)
        if self.selected == -1:
            self._render()

    @t.observe("edit_pending", "edit_run", "edit_shown")
    def _on_edit(self, change: Any) -> None:
        if not self._ready or self._session is None:
            return
        s = self._session
        try:
            if change["name"] == "edit_pending":
                if [e.to_dict() for e in s.pending] == change["new"]:
                    return  # our own echo
                s.set_pending(change["new"])
            elif change["name"] == "edit_shown":
                if change["new"] != s.shown:
                    s.message = ""
                    self._show_run(change["new"])
            else:
                s.message = ""
                if s.pending and s.run().build is not None:  # a failure shows in the pane
                    self._show_run(len(s.history) - 1)
        except Exception as exc:  # noqa: BLE001 - the pane says what went wrong
            s.message = f"{type(exc).__name__}: {exc}"
            if change["name"] == "edit_shown":
                self.edit_shown = s.shown
        self._refresh_edit()


class Profiling(_Shared):
    """The Profile pane's behaviour: `run_profile`, `show_kernel`, and the
    front end's header clicks, row clicks and Profile button."""

    graph_params: str  # a trait the Explorer declares

    # ------------------------------------------------------------- profile
    def run_profile(self, repeat: int = 10, budget_s: float = 2.0, **options: Any) -> Any:
        """Time the shown build (`build.profile(repeat=..., budget_s=...)`: the
        Profile button's 2 s budget keeps a press short), show it in the Profile pane
        and offer the graph's "time" colour; returns the Profile. `options` go to
        `build.profile` (`target`, `alone`, ...).

        Examples
        --------
        >>> import passlab
        >>> ex = passlab.Explorer(passlab.build(passlab.models.mlp()), tab="profile")
        >>> ex.run_profile(repeat=2, budget_s=0).entry, ex.has_profile
        ('forward', True)
        """
        build = self._session.current.build if self._session is not None else None
        if build is None:
            raise TypeError("run_profile() needs the build, and this Explorer was opened "
                            "on a trace: open passlab.Explorer(build), or pass "
                            "passlab.Explorer(trace, profile=build.profile())")
        options.setdefault("progress", False)  # the pane shows the result
        self._set_profile(build.profile(repeat=repeat, budget_s=budget_s, **options))
        return self._profile_view.profile

    def _set_profile(self, profile: Any) -> None:
        shown = self._session.shown if self._session is not None else 0
        self._profiles[shown] = profile
        view = self._profile_view
        view.profile, view.message = profile, ""
        self._panes.forget_graphs()  # a "time" colour drawn before has other times
        with self.hold_sync():
            self.has_profile = profile is not None
            self.graph_html = ""
            self._render()

    def show_kernel(self, kernel: str) -> None:
        """Show `kernel` in the fused graph: the last main-chain pass whose graph
        calls it is selected, the graph pane opened, the kernel's node picked (its
        panel open) and focused. Weights shown when the kernel only transforms them
        (folded into its consumers otherwise)."""
        found = self._panes.kernel_node(kernel, self.graph_params)
        if found is None:
            raise ValueError(f"no fused graph of this trace calls kernel {kernel!r} "
                             "(a kernel the VM runs as a builtin, or one made after the "
                             "last Relax pass)")
        index, params, node = found
        self._ready = False
        try:
            with self.hold_sync():
                self.graph_params = params
                self.tab = "graph"
                self.selected = index
                self.node = node
                self.focus = [node]
        finally:
            self._ready = True
        self._on_select(None)

    @t.validate("profile_sort")
    def _check_profile_sort(self, proposal: Any) -> str:
        from passlab.views.explorer_profile import check_sort

        try:
            return check_sort(proposal["value"])
        except ValueError as exc:
            raise t.TraitError(str(exc)) from None

    @t.observe("profile_sort", "profile_run", "profile_kernel")
    def _on_profile(self, change: Any) -> None:
        if not self._ready or self._closed:
            return
        view = self._profile_view
        name = change["name"]
        try:
            if name == "profile_kernel":
                if not change["new"]:
                    return
                self.profile_kernel = ""  # the same row clicked again is a change too
                self.show_kernel(change["new"])
                return
            view.message = ""
            if name == "profile_sort":
                view.sort = change["new"]
            else:
                self.run_profile()
                return
        except Exception as exc:  # noqa: BLE001 - the pane says what went wrong
            view.message = f"{type(exc).__name__}: {exc}"
        with self.hold_sync():
            if self.tab == "profile":
                self._render()
            else:
                self.profile_html = ""  # stale: redrawn when its tab opens
