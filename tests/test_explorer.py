"""The Explorer widget through its synced state, without a browser.

The front end only sets traits (selected, filters, tab, compare_a/b, node); ``set_state``
is how ipywidgets applies such a message from the browser, so the tests use it too.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("anywidget", reason="the Explorer needs the 'notebook' extra")

import traitlets  # noqa: E402

import passlab  # noqa: E402
from passlab.views import explorer_list, explorer_panes  # noqa: E402
from passlab.views.explorer import Explorer  # noqa: E402

ROW_KEYS = ["i", "n", "label", "stage", "kind", "origin", "depth", "changed", "summary", "detail",
            "failed", "ms"]


@pytest.fixture(scope="module")
def trace(mlp_build):
    return mlp_build.trace


@pytest.fixture()
def ex(trace):
    return Explorer(trace)


def boom(mod):
    raise ValueError("boom <b>bad</b>")


@pytest.fixture(scope="module")
def failed():
    pipe = passlab.Pipeline.default("llvm").insert(boom, after="legalize", name="<b>boom</b>")
    with pytest.raises(passlab.BuildError) as info:
        passlab.build(passlab.models.mlp(), pipe)
    return info.value


@pytest.fixture(scope="module")
def user_build():
    pipe = passlab.Pipeline.default("llvm").insert(lambda mod: mod, after="legalize",
                                                   name="<img src=x>")
    return passlab.build(passlab.models.mlp(), pipe)


# ----------------------------------------------------------------------- state
def test_initial_state_is_lazy(ex, trace):
    legalize = trace.find("LegalizeOps")
    assert ex.selected == legalize.index  # first main-chain pass that changed something
    assert ex.tab == "diff"
    assert "<b>LegalizeOps</b>: 8 functions changed: 7 added, 0 removed, 1 modified" in ex.diff_html
    # only the open pane is rendered
    assert (ex.graph_html, ex.buffers_html, ex.compare_html, ex.pipeline_html) == ("",) * 4
    assert ex.rendered == 1
    assert list(ex.steps[legalize.index]) == ROW_KEYS
    assert ex.steps[legalize.index]["summary"] == "+7 ~1"
    assert len(ex.steps) == len(trace) == 96
    assert ex.visible == [s.index for s in trace.top_level()]
    assert ex.stages == ["relax", "library_dispatch", "legalize", "dataflow_lower", "finalize",
                         "tir", "s_tir", "tirx", "host_finalize", "codegen"]
    assert ex.summary == trace.summary()
    assert ex.failure == ""
    assert "export default" in ex._esm and ".plx-list" in ex._css


def test_synced_state_holds_what_the_front_end_reads(ex):
    state = ex.get_state()
    for key in ("steps", "visible", "selected", "diff_html", "graph_html", "kernel_text",
                "compare_a", "compare_b", "changed_only", "stage", "search", "show_inner"):
        assert key in state
    assert state["diff_html"] == ex.diff_html


def test_selecting_a_step_renders_its_diff(ex, trace):
    fuse = trace.find("FuseOps")
    ex.set_state({"selected": fuse.index})  # what a click in the browser sends
    assert ex.step is fuse
    assert "<b>FuseOps</b>: 3 functions changed: 2 added, 0 removed, 1 modified" in ex.diff_html
    assert "fused_matmul_add_relu" in ex.diff_html
    assert ex.rendered == 2
    assert 'class="pl-t pl-sbs' not in ex.diff_html  # unified: the pane is narrow
    ex.diff_mode = "side-by-side"
    assert "<b>FuseOps</b>" in ex.diff_html and 'class="pl-t pl-sbs' in ex.diff_html
    assert repr(ex) == "<Explorer: 96 steps, selected #5 FuseOps (step 10), pane 'diff'>"


def test_unchanged_step_and_stale_panes(ex, trace):
    ex.tab = "buffers"
    assert "buffers of forward" in ex.buffers_html
    fold = trace.find("FoldConstant")
    ex.selected = fold.index
    assert "buffers of forward" in ex.buffers_html  # re-rendered for the new step
    assert ex.diff_html == ""  # stale panes are emptied, rendered when opened
    ex.tab = "diff"
    assert "<b>FoldConstant</b>: no changes" in ex.diff_html


def test_bad_selection_is_refused(ex):
    with pytest.raises(traitlets.TraitError, match=r"no step #500 in this trace \(steps are #0..#95"):
        ex.selected = 500
    with pytest.raises(traitlets.TraitError, match="stage 'legalise' is not in this trace"):
        ex.stage = "legalise"


# --------------------------------------------------------------------- filters
def test_filters_change_the_visible_list(ex, trace):
    main = trace.top_level()
    ex.set_state({"changed_only": True})
    assert ex.visible == [s.index for s in main if s.changed]
    ex.set_state({"stage": "legalize"})
    assert ex.visible == [trace.find(n).index for n in
                          ("LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR")]
    ex.set_state({"search": "FUSE"})
    assert ex.visible == [10, 11]
    ex.set_state({"search": "no such pass"})
    assert ex.visible == []
    ex.set_state({"changed_only": False, "stage": "", "search": "", "show_inner": True})
    assert ex.visible == list(range(len(trace)))
    ex.set_state({"show_inner": False, "search": "tirx.remove"})
    assert ex.visible == [trace.find("tirx.RemoveNoOp#1").index]
    # a filter that hides the selected pass selects the first one it shows
    assert ex.selected == trace.find("tirx.RemoveNoOp#1").index


def test_search_keeps_the_selection_and_gives_it_back(ex, trace):
    # issue 34 item 7: typing "fuse" moved the selection from a pass the search hides to
    # FuseOps, and clearing the search left FuseOps selected
    legalize, fuse_ops, fuse_tir = (trace.find(n).index for n in
                                    ("LegalizeOps", "FuseOps", "FuseTIR"))
    ex.selected = fuse_tir
    ex.set_state({"search": "f"})  # FuseTIR still shown: the selection stays
    assert ex.selected == fuse_tir and fuse_tir in ex.visible
    ex.set_state({"search": "fuseo"})  # hides it: the first pass shown
    assert ex.visible == [fuse_ops] and ex.selected == fuse_ops
    ex.set_state({"search": "fuse"})
    ex.set_state({"search": ""})  # shown again: back to the user's choice
    assert ex.selected == fuse_tir and "FuseTIR" in ex.explain_html
    # a pass the user picks while the filter is on is theirs: clearing keeps it
    ex.set_state({"search": "legalize"})
    assert ex.selected == legalize
    ex.set_state({"selected": fuse_ops, "search": ""})
    assert ex.selected == fuse_ops
    ex.selected = fuse_tir
    ex.set_state({"search": "ops"})  # hides FuseTIR: LegalizeOps, the first shown
    assert ex.selected == legalize
    ex.selected = fuse_ops  # chosen by hand while filtered: nothing to give back
    ex.set_state({"search": ""})
    assert ex.selected == fuse_ops


def test_rows_say_what_their_change_counts_mean(trace):
    rows = {r["i"]: r for r in explorer_list.rows(trace)}
    legalize = rows[trace.find("LegalizeOps").index]
    assert (legalize["summary"], legalize["detail"]) == ("+7 ~1", "functions: 7 added, 1 modified")
    tir = rows[trace.find("FuseTIR").index]
    assert (tir["summary"], tir["detail"]) == ("-5 ~3", "functions: 5 removed, 3 modified")
    fold = rows[trace.find("FoldConstant").index]
    assert (fold["summary"], fold["detail"]) == ("", "")


def test_visible_is_plain_data(trace):
    assert explorer_list.visible(trace, stage="finalize", changed_only=True) == [
        27, 28, 29, 30, 33, 34]


# --------------------------------------------------------------------- compare
def test_compare_two_steps(ex, trace):
    a, b = trace.find("LegalizeOps"), trace.find("FuseTIR")
    ex.set_state({"tab": "compare", "compare_a": a.index, "compare_b": b.index})
    html = ex.compare_html
    assert "From the input of #2 LegalizeOps to the output of #6 FuseTIR." in html
    assert "<b>LegalizeOps … FuseTIR</b>" in html
    assert "fused_matmul_add_relu" in html
    ex.set_state({"compare_a": b.index, "compare_b": a.index})
    assert "A comes after B: this diff runs backwards." in ex.compare_html


def test_default_compare_spans_the_relax_pipeline(ex, trace):
    assert ex.compare_a == trace.top_level()[0].index
    assert ex.compare_b == trace.find("AttachGlobalSymbol").index


# ---------------------------------------------------------------- graph, kernels
def test_graph_node_click_shows_the_kernel(ex, trace):
    fuse_tir = trace.find("FuseTIR")
    ex.set_state({"selected": fuse_tir.index, "tab": "graph"})
    assert '<div class="passlab-graph">' in ex.graph_html
    assert "fused_matmul_add_relu" in ex.graph_html
    ex.set_state({"node": "lv"})  # a click on the node with id "lv"
    assert ex.kernel_title == "TIR of fused_matmul_add_relu (after #6 FuseTIR)"
    assert ex.kernel_text.startswith("@T.prim_func(private=True")
    assert "def fused_matmul_add_relu(" in ex.kernel_text
    ex.set_state({"node": "x"})
    assert (ex.kernel_title, ex.kernel_text) == ("x is an input of the function: data, not a kernel", "")
    ex.set_state({"node": "nope"})
    assert ex.kernel_title == "no node 'nope' in the graph after FuseTIR"
    ex.selected = trace.find("FuseOps").index
    assert (ex.node, ex.kernel_title, ex.kernel_text) == ("", "", "")  # cleared
    ex.node = "lv"
    assert ex.kernel_title == "Relax of fused_matmul_add_relu (after #5 FuseOps)"


def test_graph_before_legalize_has_operators_only(ex, trace):
    ex.set_state({"selected": trace.find("DispatchSampling").index, "tab": "graph"})
    ex.node = "matmul"
    assert ex.kernel_title.startswith("matmul is a Relax operator: no kernel for it")


def test_tir_stage_has_no_graph_or_buffers(ex, trace):
    ex.set_state({"selected": trace.find("tirx.MakePackedAPI").index, "tab": "graph"})
    note = ("The module after #62 tirx.MakePackedAPI has only TIR functions (TVM&#x27;s TIR "
            "stage): the fused graph and the buffers describe Relax functions. The last pass "
            "before it is #17 AttachGlobalSymbol.")
    assert ex.graph_html == f'<div class="plx-note">{note}</div>'
    ex.tab = "buffers"
    assert ex.buffers_html == ex.graph_html
    ex.tab = "diff"
    assert "<b>tirx.MakePackedAPI</b>" in ex.diff_html


def test_an_analysis_that_raises_shows_an_error_panel(ex, trace, monkeypatch):
    import passlab.analysis.graph as graph

    def broken(x, *a, **k):
        raise RuntimeError("graph <exploded>")

    monkeypatch.setattr(graph, "fused_graph", broken)
    ex.set_state({"selected": trace.find("FuseTIR").index, "tab": "graph"})
    assert 'class="passlab-error"' in ex.graph_html
    assert "RuntimeError: graph &lt;exploded&gt;" in ex.graph_html
    ex.node = "lv"
    assert ex.kernel_title == "could not look up 'lv'"
    ex.tab = "diff"  # still usable
    assert "<b>FuseTIR</b>" in ex.diff_html


# -------------------------------------------------------------------- pipeline
def test_pipeline_pane_shows_where_user_passes_ran(user_build):
    ex = Explorer(user_build, tab="pipeline")
    step = user_build.trace.user()[0]
    assert ex.selected == step.index  # a build with a user pass opens on it
    html = ex.pipeline_html
    assert "Where your passes ran" in html
    assert "&lt;img src=x&gt;" in html and "<img" not in html
    assert "<td>#6 FuseTIR</td>" in html and "<td>#8 RewriteDataflowReshape</td>" in html
    assert "+ user: inserted after legalize" in html
    assert ex.steps[step.index]["origin"] == "user"


def test_pipeline_pane_without_pipeline(ex):
    ex.tab = "pipeline"
    assert "No user pass in this build" in ex.pipeline_html
    import tvm

    with passlab.record() as rec:
        tvm.relax.transform.LegalizeOps()(passlab.models.mlp())
    recorded = Explorer(rec.trace, tab="pipeline")
    assert "This trace has no pipeline" in recorded.pipeline_html
    assert recorded.visible == [0, 1]  # NormalizeGlobalVar, LegalizeOps
    assert recorded.step.name == "LegalizeOps"


# ------------------------------------------------------------ failed and empty
def test_failed_trace_displays_plainly(failed):
    ex = Explorer(failed)
    step = failed.step
    assert ex.selected == step.index
    assert ex.failure.startswith("pass '<b>boom</b>' (step #21, in passlab.pipeline > legalize >")
    assert ex.failure.endswith("failed: ValueError: boom <b>bad</b>")  # front end: textContent
    assert ex.steps[step.index]["failed"] is True
    assert step.index in ex.visible
    assert "ValueError: boom &lt;b&gt;bad&lt;/b&gt;" in ex.diff_html
    assert "<b>bad" not in ex.diff_html
    ex.tab = "graph"
    assert "failed, so it has no output module" in ex.graph_html
    assert "passlab-graph" in ex.graph_html
    ex.node = "lv"
    assert ex.kernel_title == "TIR of fused_matmul_add_relu (input of #7 <b>boom</b>)"
    ex.tab = "buffers"
    assert "buffers of forward" in ex.buffers_html
    ex.tab = "compare"
    assert "failed: using its input instead" in ex.compare_html
    ex.set_state({"selected": failed.trace.find("FuseOps").index, "tab": "diff"})
    assert "<b>FuseOps</b>: 3 functions changed" in ex.diff_html  # still usable


def test_empty_trace_displays_plainly():
    ex = Explorer(passlab.Trace([]))
    assert (ex.steps, ex.visible, ex.selected, ex.compare_a) == ([], [], -1, -1)
    assert ex.diff_html == '<div class="plx-note">This trace is empty: no pass was recorded.</div>'
    for tab in ("graph", "buffers", "compare", "pipeline"):
        ex.tab = tab
        assert "This trace is empty" in getattr(ex, f"{tab}_html")
    ex.set_state({"changed_only": True, "node": "x"})
    assert ex.visible == [] and ex.kernel_title == ""
    assert repr(ex) == "<Explorer: 0 steps, pane 'pipeline'>"
    with pytest.raises(traitlets.TraitError, match=r"steps are #0..#-1, or -1 for none"):
        ex.selected = 0


def test_bad_argument():
    with pytest.raises(TypeError, match="Explorer\\(\\) takes a passlab.Trace, Build or "
                                        "BuildError, not int"):
        Explorer(3)


# --------------------------------------------------------------------- display
def test_mimebundle_has_the_widget_and_a_text_fallback(ex, trace):
    data, _meta = ex._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.model_id
    assert data["text/plain"] == ex.to_text()
    assert data["text/plain"].startswith(trace.to_text())
    assert data["text/plain"].endswith("selected: " + trace.find("LegalizeOps").to_text())


def test_opens_fast_on_the_largest_model():
    build = passlab.build(passlab.models.transformer(layers=8))
    start = time.perf_counter()
    ex = Explorer(build)
    seconds = time.perf_counter() - start
    assert ex.diff_html and ex.step.name == "LegalizeOps"
    assert seconds < 1.0, f"Explorer took {seconds:.2f} s to open"


def test_render_all_fills_every_pane(trace):
    ex = Explorer(trace, selected=trace.find("FuseTIR").index)
    ex.render_all()  # e.g. before saving widget state for a static page
    for tab in explorer_panes.TABS:
        assert getattr(ex, f"{tab}_html"), tab
    assert "fused graph of forward" in ex.graph_html


def test_stand_in_without_the_notebook_extra(monkeypatch):
    import importlib.util
    import sys

    import passlab.views.explorer as real

    monkeypatch.setitem(sys.modules, "anywidget", None)  # import anywidget -> ImportError
    spec = importlib.util.spec_from_file_location("passlab.views._explorer_without_widgets",
                                                  real.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ImportError, match=r"pip install 'passlab\[notebook\]'"):
        module.Explorer(passlab.Trace([]))


def test_diff_pane_prints_the_first_functions_then_shows_all_on_request(resnet_build):
    ex = Explorer(resnet_build.trace, selected=resnet_build.trace.find("LegalizeOps").index)
    assert "shown 8 of 29 changed functions" in ex.diff_html
    assert ex.diff_html.count('class="pl-status"') == 8
    assert 'class="plx-show-all">show all 29 changed functions</button>' in ex.diff_html
    ex.set_state({"diff_all": True})  # what the front end sends on a click
    assert "shown 8 of" not in ex.diff_html and "plx-show-all" not in ex.diff_html
    assert ex.diff_html.count('class="pl-status"') == 29


def test_a_response_defers_cycle_collection_until_its_message_is_out(ex, trace):
    """Selecting a step renders its panes with the cycle collector paused (a full
    collection over a big trace's objects takes 30-400 ms): it may run again once the
    one message of the response has been sent, not during it."""
    import gc

    seen = []
    ex.observe(lambda _c: seen.append(gc.isenabled()), "diff_html")
    sent = []
    real_send = ex.send_state
    ex.send_state = lambda key=None: (sent.append((key, gc.isenabled())), real_send(key))[1]
    ex.selected = trace.find("FuseOps").index
    assert seen and not any(seen)  # rendered with the collector paused
    # the selection itself is sent at once; the response (explain strip and pane, one
    # message, here without a front end an empty one) is sent before a collection may run
    assert [enabled for _key, enabled in sent] == [True, False]
    assert gc.isenabled()
