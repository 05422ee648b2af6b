"""Provenance hover highlighting in a real browser: the static report (a file, no server)
and the Explorer's provenance pane in JupyterLab. Takes docs/screenshots/provenance.png
(the Explorer pane) and provenance-report.png.

Same machinery as tests/test_browser.py (Debian's Chromium driven by Playwright; JupyterLab
on 127.0.0.1); skipped, with the reason, when either is missing.
"""

from __future__ import annotations

from pathlib import Path

from browser_helpers import SHOTS, marks, open_notebook, write_notebook

pytestmark = marks()


_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.models.mlp())\n"
    "fuse = build.trace.find('FuseTIR')",
    "ex = passlab.Explorer(build, selected=fuse.index, tab='provenance')\nex",
]


def _hover_links(page, root, expect) -> None:
    """Hover the input's relu: its kernel lights up; hover that kernel: its ops do."""
    relu = root.locator('.passlab-prov-input g.node[data-op="relu"]')
    kernel = root.locator('.passlab-prov-fused g.node[data-kernel="fused_matmul_add_relu"]')
    other = root.locator('.passlab-prov-fused g.node[data-kernel="fused_matmul1_add1"]')
    relu.hover()
    expect(kernel).to_have_class("node passlab-prov-linked passlab-prov-hl")
    expect(other).not_to_have_class("node passlab-prov-linked passlab-prov-hl")
    expect(root.locator("tr.passlab-prov-hl")).to_have_count(1)  # relu's row in the table
    kernel.hover()
    expect(root.locator(".passlab-prov-input g.node.passlab-prov-hl")).to_have_count(3)
    expect(root.locator("tr.passlab-prov-hl")).to_have_count(3)  # matmul, add, relu


def test_hover_links_ops_and_kernels_in_the_report_and_the_explorer(
        tmp_path, lab, new_page, mlp_build, expect):

    trace = mlp_build.trace
    report = trace.write_report(tmp_path / "report.html")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page()
    page.goto(Path(report).resolve().as_uri())
    rep = page.locator("#plx-root .plx")  # the Explorer's front end over the report
    rep.locator(".plx-tab[data-tab=provenance]").click()
    root = rep.locator(".plx-pane-provenance .passlab-prov")
    _hover_links(page, root, expect)
    section = rep.locator(".plx-pane-provenance")
    section.scroll_into_view_if_needed()  # before hovering: a scroll moves the mouse off
    root.locator('.passlab-prov-input g.node[data-op="relu"]').hover()
    section.screenshot(path=str(SHOTS / "provenance-report.png"))
    # a click on the kernel opens it in the fused graph, focused, with its kernel panel
    root.locator('.passlab-prov-fused g.node[data-kernel="fused_matmul_add_relu"]').click()
    expect(rep.locator(".plx-pane-graph .plx-focus").first).to_be_visible()
    assert page.errors == []

    path = write_notebook(lab.root / "provenance.ipynb", _NB)
    page = new_page()
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    root = widget.locator(".plx-pane-provenance .passlab-prov")
    expect(root.locator(".passlab-prov-fused svg")).to_be_visible()
    _hover_links(page, root, expect)
    widget.scroll_into_view_if_needed()
    root.locator('.passlab-prov-input g.node[data-op="relu"]').hover()
    widget.screenshot(path=str(SHOTS / "provenance.png"))
    # a click on a kernel opens the fused-graph pane, focused on its calls
    root.locator('.passlab-prov-fused g.node[data-kernel="fused_matmul_add_relu"]').click()
    expect(widget.locator(".plx-tab[data-tab=graph]")).to_have_class("plx-tab active")
    expect(widget.locator(".plx-pane-graph svg")).to_be_visible()
    expect(widget.locator(".plx-pane-graph g.node.plx-focus")).to_have_count(1)
    expect(widget.locator(".plx-pane-graph g.node.plx-focus title")).to_have_text("lv")
    assert page.errors == []


_GROUPS_NB = [
    "import sys\nsys.path.insert(0, {tests!r})\nimport passlab\n"
    "from passlab.analysis import _graph_groups\n"
    "from test_explorer_provenance import _named_cnn_with_weights_as_inputs\n"
    "_graph_groups.FIRST_VIEW_NODES = 8  # a first view of one box per group\n"
    "build = passlab.build(passlab.load(_named_cnn_with_weights_as_inputs(), "
    "input=(1, 3, 32, 32)))",
    "ex = passlab.Explorer(build, selected=build.trace.find('FuseTIR').index, "
    "tab='provenance')\nex",
]


def _open_and_close_a_group(page, root, expect) -> None:
    """Click the fused graph's /features box: both graphs draw it open; click its frame's
    name: closed again."""
    box = root.locator('.passlab-prov-fused g.node[data-group="/features"]')
    expect(root.locator(".passlab-prov-fused g.node[data-group]")).to_have_count(2)
    box.dispatch_event("click")  # (the pan/zoom viewport may hold it out of sight)
    opened = root.locator('.passlab-prov[data-open="[\\"/features\\"]"]')
    expect(opened).to_have_count(1)
    frame = opened.locator(".passlab-prov-fused g.cluster.plx-group-open")
    expect(frame).to_have_count(1)
    expect(opened.locator(".passlab-prov-input g.cluster.plx-group-open")).to_have_count(1)
    frame.dispatch_event("click")
    expect(root.locator('.passlab-prov[data-open="[]"]')).to_have_count(1)


def test_a_click_opens_a_provenance_group_in_the_report_and_the_explorer(
        tmp_path, lab, new_page, expect, monkeypatch):
    import sys

    from passlab.analysis import _graph_groups

    sys.path.insert(0, str(Path(__file__).parent))
    from test_explorer_provenance import _named_cnn_with_weights_as_inputs

    import passlab

    monkeypatch.setattr(_graph_groups, "FIRST_VIEW_NODES", 8)
    build = passlab.build(passlab.load(_named_cnn_with_weights_as_inputs(),
                                       input=(1, 3, 32, 32)))
    report = build.trace.write_report(tmp_path / "report.html")
    page = new_page()
    page.goto(Path(report).resolve().as_uri())
    rep = page.locator("#plx-root .plx")
    rep.locator(".plx-tab[data-tab=provenance]").click()
    _open_and_close_a_group(page, rep.locator(".plx-pane-provenance"), expect)
    assert page.errors == []

    cells = [_GROUPS_NB[0].format(tests=str(Path(__file__).parent)), _GROUPS_NB[1]]
    path = write_notebook(lab.root / "provenance-groups.ipynb", cells)
    page = new_page()
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    pane = widget.locator(".plx-pane-provenance")
    expect(pane.locator(".passlab-prov-fused svg")).to_be_visible()
    _open_and_close_a_group(page, pane, expect)
    # open again (Python lays the group out now, or takes the drawing made before) and
    # hover the /head box: the kernels and operators it holds light up on both sides
    pane.locator('.passlab-prov-fused g.node[data-group="/features"]').dispatch_event("click")
    expect(pane.locator('.passlab-prov[data-open="[\\"/features\\"]"]')).to_have_count(1)
    pane.locator('.passlab-prov-fused g.node[data-group="/head"]').dispatch_event("mouseover")
    lit = pane.locator(".passlab-prov-input g.node.passlab-prov-hl")
    expect(lit).to_have_count(1)  # the input's /head box: its operators are inside
    expect(lit).to_have_attribute("data-group", "/head")
    expect(pane.locator("tr.passlab-prov-hl")).to_have_count(4)  # lv13, lv14, lv16, gv
    graphs = pane.locator(".passlab-prov-graphs")
    graphs.scroll_into_view_if_needed()
    graphs.screenshot(path=str(SHOTS / "provenance-groups.png"))
    assert page.errors == []
