"""Scale (issues 22 and 24): what a user waits for grows with the main chain, not with
inner steps, and a crafted trace of many steps makes a bounded report."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from many_steps import with_inner, with_main

import passlab
from passlab.views import explorer_list
from passlab.views import explorer_panes as panes
from passlab.views._report_state import read_report


@pytest.fixture(scope="module")
def saved(mlp_build, tmp_path_factory) -> Path:
    return mlp_build.trace.save(tmp_path_factory.mktemp("scale") / "mlp.trace.zip")


@pytest.fixture(scope="module")
def inner_trace(saved) -> passlab.Trace:
    """The MLP's trace with 2,000 inner steps under FoldConstant."""
    return passlab.load_trace(with_inner(saved, saved.parent / "inner.zip", 2000))


def test_rows_main_only_are_the_rows_the_list_shows_first(mlp_build):
    trace = mlp_build.trace
    every = explorer_list.rows(trace)
    main = explorer_list.rows(trace, main_only=True)
    assert [r["i"] for r in main] == explorer_list.visible(trace)
    assert main == [r for r in every if r["i"] in set(explorer_list.visible(trace))]


def test_explorer_opens_with_main_chain_rows_and_loads_the_rest_on_show_inner(inner_trace):
    pytest.importorskip("anywidget")
    from passlab.views.explorer import Explorer

    trace = inner_trace
    main = [s.index for s in trace if s.kind == "pass" or s.failed]
    ex = Explorer(trace)
    assert (ex.steps_complete, ex.step_count) == (False, 2096)
    assert [r["i"] for r in ex.steps] == main == ex.visible
    # no inner step's change set was computed to open it
    assert not any("functions_changed" in s.__dict__ for s in trace if s.kind == "inner")
    ex.show_inner = True
    assert ex.steps_complete is True
    assert [r["i"] for r in ex.steps] == list(range(2096)) == ex.visible
    inner = next(r for r in ex.steps if r["label"] == "s_tir.LowerOpaqueBlock")
    assert (inner["label"], inner["depth"], inner["changed"], inner["summary"]) == (
        "s_tir.LowerOpaqueBlock", 3, True, "-7 ~1")
    ex.show_inner = False  # the rows stay: nothing is computed twice
    assert (ex.steps_complete, len(ex.steps), ex.visible) == (True, 2096, main)


def test_small_trace_sends_every_row_at_once(mlp_build):
    pytest.importorskip("anywidget")
    from passlab.views.explorer import Explorer

    ex = Explorer(mlp_build.trace)
    assert (ex.steps_complete, ex.step_count, len(ex.steps)) == (True, 96, 96)
    assert ex.changes_pending == 0  # its 267 comparisons fit the budget


def _fresh(trace: passlab.Trace) -> passlab.Trace:
    """The same steps, none of their change sets computed yet (each Step keeps its own)."""
    return passlab.Trace([dataclasses.replace(s) for s in trace], trace._meta)


def test_rows_get_their_change_counts_while_the_comparisons_fit(mlp_build):
    # an opening Explorer spends a budget of function comparisons on the rows' counts,
    # in list order; the rest are pending until the first view is out (DenseNet-121's
    # TIR passes rebuild its 140 kernels ~50 times: 6,900 comparisons)
    trace = _fresh(mlp_build.trace)
    full = explorer_list.rows(_fresh(mlp_build.trace))
    listed = [s for s in trace if explorer_list.listed(s)]
    assert [(s.label, s.comparisons()) for s in listed[:14]] == [
        ("DispatchSampling", 1), ("DispatchSortScan", 1), ("LegalizeOps", 1),
        ("AnnotateTIROpPattern", 7), ("FoldConstant", 1), ("FuseOps", 1), ("FuseTIR", 3),
        ("RewriteDataflowReshape", 1), ("ToNonDataflow", 1), ("RemovePurityChecking", 1),
        ("CallTIRRewrite", 1), ("StaticPlanBlockMemory", 1), ("LowerAllocTensor", 1),
        ("KillAfterLastUse", 1)]
    legalize = listed[2]
    assert not legalize.changes_known
    rows = explorer_list.rows(trace, comparisons=20)
    assert (legalize.changes_known, legalize.comparisons()) == (True, 0)
    waiting = [r["label"] for r in rows if r["summary"] is None]
    # StaticPlanBlockMemory spends the 20th; from LowerAllocTensor on they wait, and so
    # do the wrappers and inner passes that compare anything (the list hides them)
    assert (explorer_list.pending(rows), waiting[:5]) == (
        73, ["passlab.pipeline", "library_dispatch", "legalize", "ExpandTupleArguments",
             "CanonicalizeBindings"])
    assert [r["label"] for r in rows if r["summary"] is None and r["kind"] == "pass"][:2] == [
        "LowerAllocTensor", "KillAfterLastUse"]
    for row, whole in zip(rows, full, strict=True):
        if row["summary"] is None:
            assert (row["changed"], row["detail"]) == (None, None)
            assert {**row, "changed": whole["changed"], "summary": whole["summary"],
                    "detail": whole["detail"]} == whole
        else:
            assert row == whole
    assert not any("functions_changed" in s.__dict__ for s in trace
                   if s.label in ("LowerAllocTensor", "tirx.LowerIntrin"))
    assert explorer_list.rows(trace) == full  # no budget: every count


def test_explorer_sends_the_pending_counts_after_its_first_view(mlp_build, monkeypatch):
    pytest.importorskip("anywidget")
    import asyncio

    from passlab.views.explorer import Explorer, _changes_message

    monkeypatch.setattr(explorer_list, "COMPARISONS_UP_FRONT", 20)
    trace = _fresh(mlp_build.trace)
    full = explorer_list.rows(_fresh(mlp_build.trace))
    ex = Explorer(trace)
    # (finding the step to open on computed the first three counts: three more fit)
    assert (ex.changes_pending, ex.selected) == (70, trace.find("LegalizeOps").index)
    assert ex.steps[ex.selected]["summary"] == "+7 ~1"
    # its text form (the widget's fallback, shown with its first view) does not wait
    lines = ex.to_text().splitlines()
    cells = {line.split()[2]: line.split()[-2:] for line in lines if line.startswith("#")}
    assert (cells["StaticPlanBlockMemory"], cells["tirx.LowerIntrin"]) == (
        ["yes", "~1"], ["\u2026", "\u2026"])
    assert ("(\u2026: the changes of 51 passes were still being counted when this was "
            "shown; trace.to_text() prints them)") in lines
    sent = []
    ex.observe(lambda change: sent.append(change["name"]), ["steps", "changes_pending"])
    _changes_message(ex, {"load": "changes"})  # what the front end asks
    assert (ex.changes_pending, ex.steps, sent) == (0, full, ["steps", "changes_pending"])
    assert ex.to_text() == trace.to_text() + "\n\nselected: " + ex.step.to_text()
    _changes_message(ex, {"load": "changes"})  # asked twice (two views): nothing more
    assert sent == ["steps", "changes_pending"]
    # "changed only" needs every count: they come with it
    ex = Explorer(_fresh(mlp_build.trace))
    assert ex.changes_pending == 70
    ex.changed_only = True
    assert (ex.changes_pending, ex.steps) == (0, full)
    assert ex.visible == explorer_list.visible(trace, changed_only=True)

    async def cell() -> tuple[int, int]:
        # in a kernel, the counts follow once the cell (the first view) is done
        ex = Explorer(_fresh(mlp_build.trace))
        pending = ex.changes_pending
        await asyncio.sleep(0)
        return pending, ex.changes_pending

    assert asyncio.run(cell()) == (70, 0)


@pytest.mark.slow
def test_report_of_20000_main_chain_steps_is_bounded(saved, tmp_path):
    # issue 22 2(d): a 170 KB file of 20,000 changed main-chain steps made the report
    # run 135 s and write 146 MB
    from passlab.views import report

    path = with_main(saved, tmp_path / "main.zip", 20000)
    assert path.stat().st_size < 250_000
    trace = passlab.load_trace(path)
    start = time.perf_counter()
    out = report.write_report(trace, tmp_path / "main.html")
    seconds = time.perf_counter() - start
    html = out.read_text("utf-8")
    assert out.stat().st_size < 5_000_000, out.stat().st_size  # 2.2 MB; 108 MB before
    assert seconds < 40, f"{seconds:.1f} s"  # 7.6 s on a loaded 2-core machine; 385 s before
    data, kept = read_report(html)
    assert sum(r["kind"] == "pass" for r in data["state"]["steps"]) == report.REPORT_PASSES
    assert sum(k.startswith("diff:") and k.endswith(":side-by-side") for k in kept) == report.REPORT_PASSES
    assert sum(k.startswith("explain:") for k in kept) == report.REPORT_PASSES
    assert ("19,600 more steps after #399 Pass0#57 (19,600 main-chain passes) are not "
            "listed, diffed or explained: a report covers the first 400 main-chain passes; "
            "write it with full=True (passlab report --full) for every step") in html
    assert ("400 of the first 400 main-chain passes changed the module (20,000 in all; "
            "full=True reports them all)") in html


def test_report_full_writes_every_step(saved, tmp_path, monkeypatch):
    from passlab.views import report

    trace = passlab.load_trace(with_main(saved, tmp_path / "main.zip", 30))
    monkeypatch.setattr(report, "REPORT_PASSES", 10)
    capped = report.render_report(trace)
    rows = lambda page: [r for r in read_report(page)[0]["state"]["steps"] if r["kind"] == "pass"]  # noqa: E731
    assert len(rows(capped)) == 10 and "20 more steps after #9" in capped
    full = report.render_report(trace, full=True)
    assert len(rows(full)) == 30 and "more steps after" not in full
    assert sum(k.startswith("diff:") and k.endswith(":side-by-side") for k in read_report(full)[1]) == 30


def test_diff_html_bounds_the_lines_of_all_functions_together(mlp_build):
    from passlab.analysis.diff import diff

    d = diff(mlp_build.trace.find("LegalizeOps"))  # forward 22 lines, then 10-12 each
    html = d.to_html("unified", max_total_lines=30)
    assert html.count("data-fn=") == 2  # forward (22) and add (8 of its 10)
    assert "[truncated: shown 8 of 10 diff lines]" in html
    assert ("shown 2 of 8 changed functions (the first 30 diff lines); not printed: add1 "
            "(added), matmul (added), matmul1 (added), relu (added), transpose (added), "
            "transpose1 (added).") in html
    assert d.to_html("unified", max_total_lines=1000) == d.to_html("unified")


def test_first_view_offers_every_line_when_it_cut_some(mlp_build, monkeypatch):
    trace = mlp_build.trace
    step = trace.find("LegalizeOps")
    monkeypatch.setattr(panes, "FIRST_VIEW_LINES", 30)
    html = panes.PaneRenderer(trace).pane("diff", step.index)
    # 2 printed, 6 listed as not shown (the pane's function list); the functions after
    # the budget ran out were not printed, so the total is not known
    assert (html.count("data-fn="), html.count("<li data-fn=")) == (8, 6)
    assert html.endswith('<button type="button" class="plx-show-all">show all diff '
                         "lines</button>")
    from passlab._tvm import printing

    fds = panes.PaneRenderer(trace).module_diff(step.index).functions
    printing.clear_cache()
    panes.PaneRenderer(trace).pane("diff", step.index)
    # one batch of two printed: forward (both sides) and the added kernel add; not the
    # other six kernels
    assert [(fd.name, fd.status) for fd in fds[:2]] == [("forward", "modified"),
                                                        ("add", "added")]
    assert printing.cache_info()["size"] == 3
    # with every line within the budget, the total is known
    monkeypatch.setattr(panes, "FIRST_VIEW_LINES", 95)
    html = panes.PaneRenderer(trace).pane("diff", step.index)
    assert html.endswith('<button type="button" class="plx-show-all">show all 96 diff '
                         "lines</button>")
    full = panes.PaneRenderer(trace).pane("diff", step.index, all_functions=True)
    assert (full.count("data-fn="), full.count("<li data-fn=")) == (8, 0)
    assert "plx-show-all" not in full


def test_report_diff_blocks_are_first_screens_unless_full(mlp_build, monkeypatch):
    from passlab.views import report

    trace = mlp_build.trace
    step = trace.find("LegalizeOps")
    monkeypatch.setattr(report, "REPORT_LINES", 30)

    def block(text: str) -> str:
        return read_report(text)[1][f"diff:{step.index}:side-by-side"]

    capped = block(report.render_report(trace))
    # side by side: forward 15 rows, add 10, add1 5 of its 10; the other 5 named (the
    # pane's function list)
    assert (capped.count("data-fn="), capped.count("<li data-fn=")) == (8, 5)
    assert "(the first 30 diff lines)" in capped
    # the page says what the first screen left out, and how to keep it
    assert ('<div class="plx-note plx-first-screen">This report keeps the first screen of '
            "each pass's diff; written with full=True (passlab report --full) it keeps every "
            "changed function whole") in capped
    whole = block(report.render_report(trace, full=True))
    assert whole.count("data-fn=") == 8 and "plx-first-screen" not in whole


@pytest.fixture(scope="module")
def legalized_32_layers():
    """A 32-layer transformer's module before and after LegalizeOps (839 bindings in its
    forward: the 7B shape's, on small tensors)."""
    import tvm

    mod = passlab.models.transformer(layers=32, seq_len="n", hidden=64, heads=4, ffn=128,
                                     vocab=100)
    return mod, tvm.relax.transform.LegalizeOps()(mod)


def test_first_view_of_a_32_layer_forward_prints_its_first_binding_region(legalized_32_layers):
    from passlab._tvm import printing
    from passlab.analysis.diff import REGION_BINDINGS, diff

    before, after = legalized_32_layers
    d = diff(before, after)
    forward = d["forward"]
    nb, na = (printing.binding_count(forward.before), printing.binding_count(forward.after))
    assert nb == na == 839 > 5 * REGION_BINDINGS
    view = d.first_screen()
    cut = view["forward"]
    assert cut.head == (REGION_BINDINGS, REGION_BINDINGS, nb, na) and view.regions
    assert view["add"] is d["add"]  # small functions are not cut
    # the region is the whole function's first lines: its signature and first bindings
    whole = printing.function_text(forward.after, "forward").split("\n")
    region = cut.after_text.split("\n")
    assert region == whole[:len(region)]
    assert len(region) < len(whole) // 5
    printing.clear_cache()
    html = panes._first_view(d, "unified", False, "plx-diff")
    assert html.count("<tr") < panes.FIRST_VIEW_LINES + 40
    assert (f"first binding region printed ({REGION_BINDINGS} of {nb:,} bindings before, "
            f"{REGION_BINDINGS} of {na:,} bindings after)") in html
    assert html.endswith('<button type="button" class="plx-show-all">show all '
                         f"{len(d)} changed functions</button>")
    # "show all" prints the whole function
    full = panes._first_view(d, "unified", True, "plx-diff")
    assert "first binding region printed" not in full and full.count("<tr") > 800
    assert cut.first_region() is cut


def test_rendered_diff_blocks_are_cached_per_function_pair(mlp_build):
    from passlab.analysis import _diff_render, ir_text
    from passlab.analysis.diff import diff

    step = mlp_build.trace.find("LegalizeOps")
    ir_text.clear_caches()
    first = _diff_render.html_block(diff(step)["forward"], "unified", 100)
    again = _diff_render.html_block(diff(step)["forward"], "unified", 100)  # a new diff
    assert again is first
    assert _diff_render.html_block(diff(step)["forward"], "side-by-side", 100) is not first
    ir_text.clear_caches()
    assert len(_diff_render.BLOCKS) == 0
    assert _diff_render.html_block(diff(step)["forward"], "unified", 100) == first


def test_change_sets_compare_functions_structurally(mlp_build):
    # a structurally equal copy of every function is no change; a real edit is one
    import tvm

    trace = mlp_build.trace
    step = trace.find("LegalizeOps")
    copy = tvm.ir.load_json(tvm.ir.save_json(step.after))
    from passlab.recording.trace import _diff_functions, _HashCache

    assert _diff_functions(step.after, copy, _HashCache()).names == ()
    assert _diff_functions(step.before, copy, _HashCache()) == step.functions_changed


def test_tir_passes_rebuilt_copies_are_equal_without_a_walk(mlp_build):
    # TVM's TIR passes return many PrimFuncs rebuilt from the very same parts: such a
    # pair is structurally equal, and _tvm.rebuilt_copy says so from the fields alone
    import tvm_ffi

    from passlab import _tvm

    copies = unequal = 0
    for s in mlp_build.trace:
        if s.before is None or s.after is None:
            continue
        old = _tvm.functions(s.before)
        for name, f in _tvm.functions(s.after).items():
            g = old.get(name)
            if g is None or g.same_as(f):
                continue
            if _tvm.rebuilt_copy(g, f):
                copies += 1
                assert tvm_ffi.structural_equal(g, f, True, True)
            elif not _tvm.structural_equal(g, f):
                unequal += 1
                assert name in s.functions_changed.modified
    assert copies > 20 and unequal > 20
    f = next(iter(_tvm.functions(mlp_build.trace.find("FuseTIR").after).values()))
    assert not _tvm.rebuilt_copy(f, f.with_attr("passlab.test", 1))
