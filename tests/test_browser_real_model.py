"""The graph and provenance panes on a model nobody here wrote the views for (issue 23
items 5 and 6): the ONNX CNN of tests/test_importers.py as torch.onnx.export writes it
(weights as graph inputs, nodes named by module path), loaded from a file in
JupyterLab, in the light and the dark theme at 1400 and 800 px; its graph opens grouped
by the ONNX node paths (/features, /head), both open on the first view; a click on a
frame's name closes a group, a click on its box opens it. Takes
docs/screenshots/real-graph-{light,dark}-{1400,800}.png, real-kernel-*.png (the kernel
panel maximised) and real-provenance-*.png.
"""

from __future__ import annotations

from browser_helpers import SHOTS, marks, open_notebook, resize, run_all, write_notebook

pytestmark = marks()

_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.load('cnn.onnx', input=(1, 3, 32, 32)))",
    "ex = passlab.Explorer(build, tab='graph', selected=build.trace.find('FuseOps').index)\n"
    "ex.graph_overlay = 'flops'\nex",
]


def _shots(page, theme: str, width: int, expect) -> None:
    widget = page.locator(".jp-OutputArea-output .plx")
    graph = widget.locator(".plx-pane-graph")
    # grouped by the ONNX node paths: the first view draws /features and /head open, as
    # frames (9 nodes: within its 40; no weight node in either: num_input)
    expect(graph.locator("svg g.node")).to_have_count(9)
    expect(graph.locator("svg g.node.plx-group")).to_have_count(0)
    # FLOPs on viridis, both ends labelled; "removed (6)" closed on one line
    expect(graph.locator(".plx-legend-min")).to_have_text("330")
    expect(graph.locator(".plx-legend-max")).to_have_text("598 K")
    removed = graph.locator("details.plx-removed")
    expect(removed.locator("summary")).to_have_text("removed (6)")
    assert removed.get_attribute("open") is None
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / f"real-graph-{theme}-{width}.png"))
    # a click on a frame's name closes the group into one box, a click on the box opens
    # it again
    for name in ("features", "head"):
        # (dispatched: at 800 px the pane's head may cover the frame until it is scrolled to)
        graph.locator(f"svg g.cluster.plx-group-open >> text={name} \u25be").dispatch_event(
            "click")
        expect(graph.locator("svg g.node.plx-group", has=page.locator("text", has_text=name))
               ).to_have_count(1)
    expect(graph.locator("svg g.node")).to_have_count(4)
    for name in ("features", "head"):
        graph.locator("svg g.node.plx-group", has=page.locator("text", has_text=name)
                      ).dispatch_event("click")
        expect(graph.locator(f"svg g.cluster.plx-group-open >> text={name} \u25be")).to_be_visible()
    expect(graph.locator("svg g.node")).to_have_count(9)
    expect(graph.locator("svg g.node.plx-group")).to_have_count(0)
    # the kernel panel: the compute function first (not the packed-API wrapper), and it
    # can take the whole pane
    # (dispatched: the node may lie outside the pan/zoom viewport's part in sight)
    graph.locator("svg g.node", has=page.locator("title", has_text="lv")).first.dispatch_event(
        "click")
    code = graph.locator(".plx-code-text")
    expect(code).to_contain_text("@fused_conv2d_add_compute_(")
    first = code.inner_text().splitlines()[0]
    assert first.startswith("define internal fastcc ") and "@fused_conv2d_add_compute_(" in first
    graph.locator(".plx-kernel-max-btn").click()
    expect(graph.locator(".plx-graph-box")).to_be_hidden()
    expect(graph.locator(".plx-kernel-max-btn")).to_have_text("restore")
    widget.screenshot(path=str(SHOTS / f"real-kernel-{theme}-{width}.png"))
    graph.locator(".plx-kernel-max-btn").click()
    expect(graph.locator(".plx-graph-box")).to_be_visible()
    widget.locator(".plx-tab[data-tab=provenance]").click()
    prov = widget.locator(".plx-pane-provenance .passlab-prov")
    expect(prov.locator(".passlab-prov-table tr[data-search]")).to_have_count(15)
    expect(prov.locator(".passlab-prov-table th").nth(1)).to_have_text("source")
    expect(prov.locator(".passlab-prov-table tr[data-op=lv] td").nth(1)).to_have_text(
        "/features/conv1/Conv")
    # the search keeps the rows of one ONNX node (its conv, bias reshape and add)
    prov.locator(".passlab-prov-search").fill("conv2/conv")
    expect(prov.locator(".passlab-prov-table tr[data-search]:visible")).to_have_count(3)
    prov.locator(".passlab-prov-search").fill("")
    # the pictures sit in pan/zoom viewports, at a readable scale
    expect(prov.locator(".plx-prov-zoom svg")).to_have_count(2)
    widget.screenshot(path=str(SHOTS / f"real-provenance-{theme}-{width}.png"))
    assert page.errors == []


def test_graph_and_provenance_on_an_onnx_export_with_weights_as_inputs(lab, new_page, expect):
    from test_browser_theme import _settings_dark
    from test_explorer_provenance import _named_cnn_with_weights_as_inputs

    write_notebook(lab.root / "real.ipynb", _NB)
    SHOTS.mkdir(parents=True, exist_ok=True)
    (lab.root / "cnn.onnx").write_bytes(_named_cnn_with_weights_as_inputs().SerializeToString())
    for theme in ("light", "dark"):
        if theme == "dark":
            _settings_dark(lab)
        # one page per theme: narrowed, the notebook runs again in its kernel (a fresh
        # widget on its first view), instead of a new page, server session and kernel
        page = new_page(width=1400)
        open_notebook(page, lab, "real.ipynb", expect)
        _shots(page, theme, 1400, expect)
        resize(page, 800)
        run_all(page, expect)
        _shots(page, theme, 800, expect)
        page.context.close()
