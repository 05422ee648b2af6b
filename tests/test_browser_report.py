"""The static report in a real headless Chromium, offline, from file://: the Explorer's
front end over the report's static model. The pass list and its keys, find-in-IR, the
graph's change marks and overlay, the kernel panel with its TIR, the provenance table,
the failing pass; no page error, no request but the file. Screenshots (light and dark,
1400 and 800 px wide) go to docs/screenshots/report-*.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_helpers import SHOTS, count_list_draws, list_draws, marks

pytestmark = marks()

FAILING = "<b>boom</b>"


def _boom(mod):
    raise ValueError("broken on purpose: <script>alert(1)</script>")


def _row(root, label: str):
    return root.locator(".plx-row", has=root.page.locator(".plx-label", has_text=re.compile(
        rf"^{re.escape(label)}$")))


def _open(new_page, path: Path, *, width: int = 1400, dark: bool = False):
    page = new_page(width, 1000)
    page.context.set_offline(True)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    if dark:
        page.emulate_media(color_scheme="dark")
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("#plx-root[data-ready]")
    page.requests = requests
    return page


def test_report_is_the_explorer_offline(tmp_path, resnet_build, new_page, expect):
    from passlab.views import _embed

    trace = resnet_build.trace
    # every block compressed, so that the browser's gzip path is exercised too
    original = _embed.COMPRESS_OVER
    from passlab.views import _report_state
    kept = _report_state.COMPRESS_OVER
    try:
        _embed.COMPRESS_OVER = _report_state.COMPRESS_OVER = 0
        path = trace.write_report(tmp_path / "resnet.html", title="resnet report")
    finally:
        _embed.COMPRESS_OVER, _report_state.COMPRESS_OVER = original, kept
    page = _open(new_page, path)
    root = page.locator("#plx-root .plx")
    # the pass list: the Explorer's rows, its filters and keys
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text("LegalizeOps")
    expect(root.locator(".plx-pane-diff .passlab-diff")).to_be_visible()
    expect(root.locator(".plx-pane-diff td.pl-code span.tok-k").first).to_be_visible()  # coloured
    root.locator(".plx-list").focus()
    page.keyboard.press("ArrowDown")
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text("AnnotateTIROpPattern")
    page.keyboard.press("j")
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text("FoldConstant")
    expect(root.locator(".plx-pane-diff")).to_contain_text("No change: the module after this pass")
    count_list_draws(root)
    root.locator(".plx-search").fill("fuse")
    expect(root.locator(".plx-count")).to_have_text(re.compile(r"^2 of \d+ passes"))
    expect(root.locator(".plx-list mark.plx-hit")).to_have_count(2)
    assert list_draws(page) == 1  # once for the search and the report's answer together
    _row(root, "FuseOps").click()
    # find in IR: a count, next/previous, marks in the diff
    diff = root.locator(".plx-pane-diff")
    expect(diff.locator(".passlab-diff")).to_contain_text("FuseOps")
    diff.locator(".plx-ir-search").fill("conv2d")
    expect(diff.locator(".plx-ir-count")).to_have_text(re.compile(r"^1 of \d+$"))
    expect(diff.locator("mark.plx-hit-current")).to_have_count(1)
    diff.locator(".plx-ir-next").click()
    expect(diff.locator(".plx-ir-count")).to_have_text(re.compile(r"^2 of \d+$"))
    # the graph after FuseTIR: change marks against FuseOps, the bytes overlay
    root.locator(".plx-search").fill("")
    _row(root, "FuseTIR").click()
    root.locator(".plx-tab[data-tab=graph]").click()
    graph = root.locator(".plx-pane-graph")
    expect(graph.locator(".plx-graph-marks")).to_contain_text("Against #5 FuseOps")
    expect(graph.locator("g.node").first).to_be_visible()
    graph.locator("select.plx-graph-overlay").select_option("bytes")
    expect(graph.locator(".plx-graph-legend")).to_contain_text("colour by bytes")
    graph.locator("select.plx-graph-overlay").select_option("none")
    # the kernel panel: a click on a fused kernel shows its TIR and generated code
    kernel = graph.locator("g.node", has=page.locator("title")).filter(
        has_text=re.compile(r"fused_batch_norm_relu")).first
    kernel.click()
    panel = graph.locator(".plx-kernel")
    expect(panel.locator(".plx-kernel-title")).to_have_text(re.compile(r"^TIR of fused_batch_norm_relu"))
    expect(panel.locator(".plx-kernel-text")).to_contain_text("T.prim_func")
    expect(panel.locator(".plx-code-title")).to_contain_text("generated for")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "report-graph.png"))
    # a pass without a kept graph says so and offers the ones kept
    _row(root, "FoldConstant").click()
    expect(graph).to_contain_text("This report draws the fused graph after #6 FuseTIR")
    graph.locator(".plx-goto-step").first.click()
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text("FuseTIR")
    # provenance: the searchable op table
    root.locator(".plx-tab[data-tab=provenance]").click()
    prov = root.locator(".plx-pane-provenance")
    expect(prov.locator(".passlab-prov-table tr[data-search]").first).to_be_visible()
    prov.locator(".passlab-prov-search").fill("relu")
    expect(prov.locator(".passlab-prov-table tr[data-search]:not([hidden])").first).to_contain_text("relu")
    # panes that need a kernel say so
    root.locator(".plx-tab[data-tab=compare]").click()
    expect(root.locator(".plx-pane-compare")).to_contain_text("Compare needs a kernel")
    root.locator(".plx-tab[data-tab=diff]").click()
    page.screenshot(path=str(SHOTS / "report.png"))
    assert page.errors == []
    assert all(u.startswith("file:") for u in page.requests), page.requests


_ROWS_JS = """(arg) => {
  let root = document.querySelector(".plx-pane-diff .passlab-diff");
  if (arg !== null) {  // Python's own rendering, parsed the same way
    const t = document.createElement("template");
    t.innerHTML = arg;
    root = t.content;
  }
  return [...root.querySelectorAll("table.pl-t")].map((table) => [table.className,
    ...[...table.querySelectorAll("tr")].map((tr) => [tr.className, tr.parentElement.className,
      ...[...tr.cells].map((td) => `${td.className}|${td.title}|${td.textContent}`)])]);
}"""


def test_unified_layout_is_made_in_the_page(tmp_path, mlp_build, new_page, expect):
    """A report keeps each diff side by side; the layout select's "unified" is made from
    it in the page (static/report/unified.js), row for row what Python's unified layout
    renders: each changed main-chain pass's tables, rows, line numbers, signs and text."""
    import passlab
    from passlab.views import report

    trace = mlp_build.trace
    path = trace.write_report(tmp_path / "mlp.html")
    page = _open(new_page, path)
    root = page.locator("#plx-root .plx")
    changed = [s for s in trace if s.kind == "pass" and s.changed]
    checked = 0
    for step in changed:
        expected = passlab.diff(step).to_html(
            "unified", max_functions=report.REPORT_FUNCTIONS, highlight=False,
            max_total_lines=report.REPORT_LINES, anchors="plx-diff")
        if "truncated" in expected or "not printed" in expected:
            continue  # unified counts lines, side by side rows: cut in other places
        if 'class="pl-t pl-unified"' not in expected:
            continue  # no line changed (both versions print identically)
        page.evaluate(f"location.hash = '#step-{step.index}'")
        expect(root.locator(".plx-row.selected")).to_have_attribute("data-index", str(step.index))
        root.locator("select.plx-mode").select_option("unified")
        expect(root.locator(".plx-pane-diff table.pl-unified").first).to_be_visible()
        expect(root.locator(".plx-pane-diff table.pl-sbs")).to_have_count(0)
        got = page.evaluate(_ROWS_JS, None)
        assert got == page.evaluate(_ROWS_JS, expected), step.label
        assert any(r[0] in ("pl-del", "pl-add") for t in got for r in t[1:]), step.label
        root.locator("select.plx-mode").select_option("side-by-side")
        expect(root.locator(".plx-pane-diff table.pl-sbs").first).to_be_visible()
        checked += 1
    assert checked >= 5, checked
    assert page.errors == []


@pytest.mark.parametrize("width", [1400, 800])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_report_screenshots(tmp_path_factory, resnet_build, new_page, expect, width, dark):
    path = tmp_path_factory.getbasetemp() / "shots" / "resnet.html"
    if not path.exists():
        resnet_build.trace.write_report(path, title="resnet report")
    page = _open(new_page, path, width=width, dark=dark)
    root = page.locator("#plx-root .plx")
    _row(root, "FuseTIR").click()
    root.locator(".plx-tab[data-tab=graph]").click()
    expect(root.locator(".plx-pane-graph g.node").first).to_be_visible()
    name = f"report-{width}{'-dark' if dark else ''}.png"
    page.wait_for_timeout(400)  # the nodes' carry-over settles
    page.screenshot(path=str(SHOTS / name))
    assert page.errors == []


def test_a_failed_build_opens_on_the_failing_pass(tmp_path, new_page, expect):
    import passlab

    pipe = passlab.Pipeline.default("llvm").insert(_boom, after="CallTIRRewrite", name=FAILING)
    with pytest.raises(passlab.BuildError) as info:
        passlab.build(passlab.models.mlp(), pipe)
    path = info.value.trace.write_report(tmp_path / "failed.html", title=FAILING)
    page = _open(new_page, path)
    root = page.locator("#plx-root .plx")
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text(FAILING)
    expect(root.locator(".plx-pane-diff")).to_contain_text(
        "broken on purpose: <script>alert(1)</script>")
    assert page.evaluate("document.title") == FAILING
    _row(root, "FuseOps").click()
    page.locator(".pl-failure button.pl-goto").click()
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text(FAILING)
    assert page.errors == []


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_report_of_a_real_model(tmp_path_factory, new_page, expect, dark):
    """The report of tests/corpus.py's ONNX ResNet-18 (torchvision's, weights as graph
    inputs): the graph after FuseTIR has no weight node and is drawn in its source groups
    (the report opens them all: nothing to click offline), the provenance table names the
    ONNX nodes. Screenshots docs/screenshots/real-report-1400[-dark].png (the README's)."""
    import corpus

    if not (corpus.TORCHVISION_DIR / "torchvision").is_dir():
        pytest.skip(f"no torchvision in {corpus.TORCHVISION_DIR}: `make` installs it")
    pytest.importorskip("onnxruntime", reason="needs passlab[onnx]")
    path = tmp_path_factory.getbasetemp() / "real" / "resnet18.html"
    if not path.exists():
        corpus.build("onnx_resnet18").build.trace.write_report(path, title="resnet18.onnx")
    page = _open(new_page, path, dark=dark)
    root = page.locator("#plx-root .plx")
    _row(root, "FuseTIR").click()
    root.locator(".plx-tab[data-tab=graph]").click()
    graph = root.locator(".plx-pane-graph")
    expect(graph.locator("g.node").first).to_be_visible()
    titles = graph.locator("g.node > title").evaluate_all("els => els.map(e => e.textContent)")
    assert titles and not any(t.startswith("onnx::") for t in titles), titles[:20]
    assert graph.locator("g.cluster").count() >= 4  # the stages, drawn open
    expect(graph.locator(".plx-graph-groups")).to_contain_text("each drawn open as a frame")
    page.wait_for_timeout(400)
    page.screenshot(path=str(SHOTS / f"real-report-1400{'-dark' if dark else ''}.png"))
    root.locator(".plx-tab[data-tab=provenance]").click()
    expect(root.locator(".plx-pane-provenance")).to_contain_text("/layer1/layer1.0/")
    assert page.errors == []
    assert all(u.startswith("file:") for u in page.requests), page.requests
