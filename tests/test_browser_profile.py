"""The Explorer's Profile tab in a real browser (issue 25): the kernel table sorts by the
clicked header, a row click shows that kernel in the fused graph (the graph tab, the
node picked and focused, its kernel panel open), and the graph's "time" colour.
Screenshots docs/screenshots/profile-table{,-dark}.png and profile-graph{,-dark}.png.

Same machinery as tests/test_browser.py (JupyterLab on 127.0.0.1, Debian's Chromium
driven by Playwright); skipped, with the reason, when either is missing.
"""

from __future__ import annotations

import re

from browser_helpers import SHOTS, marks, open_notebook, set_theme, write_notebook

pytestmark = marks()


_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.models.mlp())\n"
    "prof = build.profile(repeat=3, budget_s=0)\n"
    "ex = passlab.Explorer(build, profile=prof, tab='profile')",
    "ex",
]


def _dark_and_back(page, widget, name: str, expect) -> None:
    widget.screenshot(path=str(SHOTS / f"{name}.png"))
    set_theme(page, "JupyterLab Dark")
    expect(page.locator("body[data-jp-theme-light='false']")).to_have_count(1)
    page.wait_for_timeout(500)  # the theme's CSS variables settle
    widget.screenshot(path=str(SHOTS / f"{name}-dark.png"))
    set_theme(page, "JupyterLab Light")
    expect(page.locator("body[data-jp-theme-light='true']")).to_have_count(1)


def test_profile_table_sorts_and_a_row_shows_its_kernel_in_the_graph(lab, page, expect):
    path = write_notebook(lab.root / "profile.ipynb", _NB)
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    pane = widget.locator(".plx-pane-profile")
    expect(pane).to_be_visible()
    rows = pane.locator("tr[data-kernel]")
    expect(rows).to_have_count(4)
    # one sentence: how the instrumented run splits (or, where the noise put the run below
    # its parts, by how much they exceed it)
    expect(pane.locator(".plx-profile-summary")).to_have_text(re.compile(
        r"^forward on llvm \(cpu.*\): (of the .* instrumented run, )?4 kernels take .*the "
        r"runtime's own work .*\.$"))
    # the table fits the output's width: long names wrap, sources and passes are cut
    # short (whole on hover), so nothing scrolls sideways at this width
    scroll = pane.locator(".plx-profile-scroll")
    sizes = scroll.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert sizes[0] <= sizes[1], sizes
    clipped = pane.locator("td.plx-profile-clip").first
    assert clipped.evaluate("e => getComputedStyle(e).textOverflow") == "ellipsis"
    assert clipped.get_attribute("title")
    # a click on "kernel" sorts by name; a second one turns the order round
    pane.locator("button[data-sort]", has_text=re.compile(r"^kernel")).click()
    names = ["fused_matmul1_add1", "fused_matmul_add_relu", "transpose", "transpose1"]
    expect(rows.locator("td:first-child")).to_have_text(names)
    expect(pane.locator("th[aria-sort=ascending]")).to_have_text(re.compile(r"^kernel"))
    pane.locator("button[data-sort]", has_text=re.compile(r"^kernel")).click()
    expect(rows.locator("td:first-child")).to_have_text(names[::-1])
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    _dark_and_back(page, widget, "profile-table", expect)
    # a row click: the graph tab at the last pass, the kernel picked, its panel open
    rows.filter(has_text="fused_matmul_add_relu").first.click()
    graph = widget.locator(".plx-pane-graph")
    expect(graph).to_be_visible()
    expect(widget.locator(".plx-tab.active")).to_have_text("Fused graph")
    expect(widget.locator(".plx-kernel-title")).to_have_text(re.compile(
        r"^TIR of fused_matmul_add_relu \(after #17 AttachGlobalSymbol\)"))
    picked = graph.locator("g.node.plx-picked")
    expect(picked).to_have_count(1)
    expect(picked).to_contain_text("fused_matmul_add_relu")
    expect(graph.locator("g.node.plx-focus")).to_have_count(1)
    # the "time" colour: offered once profiled, with its labelled legend
    graph.locator("select.plx-graph-overlay").select_option("time")
    expect(graph.locator(".plx-graph-legend")).to_contain_text(
        "colour by time (per run, the profile's, log scale)")
    expect(graph.locator(".plx-legend-min")).to_have_text(re.compile(r"^[\d.]+ (us|ms)$"))
    # the kernels drawn take viridis' colours: the slowest its yellow end, unless the two
    # fused kernels' medians tie (~0.2 us each here, a timer tick apart), when all take
    # its purple start
    ends = ", ".join(f"g.node {shape}[fill='{c}']" for c in ("#fde725", "#440154")
                     for shape in ("polygon", "path"))
    expect(graph.locator(ends)).not_to_have_count(0)
    _dark_and_back(page, widget, "profile-graph", expect)
    assert page.errors == []
