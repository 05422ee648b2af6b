"""The Explorer in JupyterLab, in a real headless Chromium (the static report, the
Explorer's front end offline: tests/test_browser_report.py).

JupyterLab runs on 127.0.0.1 with a fixed token; Playwright drives Debian's Chromium
(/usr/bin/chromium, never a downloaded browser). Screenshots go to docs/screenshots/.
Skipped, with the reason, when Chromium or Playwright is missing.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from browser_helpers import (
    SHOTS,
    count_list_draws,
    list_draws,
    marks,
    open_notebook,
    set_theme,
    write_notebook,
)

pytestmark = marks()

REPO = Path(__file__).resolve().parent.parent
TOUR = REPO / "notebooks" / "01-tour.ipynb"


_ACTIVE_CELL = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Cell'))
    .findIndex((c) => c.classList.contains('jp-mod-active'))"""


def _row(widget, label: str):
    return widget.locator(".plx-row", has=widget.page.locator(".plx-label", has_text=re.compile(
        rf"^{re.escape(label)}$")))


def test_explorer_in_jupyterlab(lab, page, expect):
    timings = {}
    shutil.copy(TOUR, lab.root / TOUR.name)
    start = time.perf_counter()
    open_notebook(page, lab, TOUR.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    expect(widget).to_have_count(1)
    diff = widget.locator(".plx-pane-diff")
    # opens on the first pass that changed the module, rendered by the kernel
    expect(diff).to_contain_text("LegalizeOps: ")
    expect(_row(widget, "LegalizeOps")).to_have_class(re.compile(r"\bselected\b"))
    expect(widget.locator(".plx-summary")).to_contain_text("Trace of 96 pass calls")
    expect(widget.locator(".plx-count")).to_have_text("71 of 71 passes")
    expect(page.locator(".jp-InputArea-prompt", has_text="[7]:")).to_have_count(1)
    timings["run_all"] = time.perf_counter() - start

    # a click on a pass: browser -> kernel (diff printed there) -> browser
    start = time.perf_counter()
    _row(widget, "FuseOps").click()
    expect(diff).to_contain_text("FuseOps: 13 functions changed: 12 added, 0 removed, 1 modified")
    expect(diff).to_contain_text("shown 8 of 13 changed functions")  # the first view
    expect(_row(widget, "FuseOps")).to_have_class(re.compile(r"\bselected\b"))
    timings["click_roundtrip"] = time.perf_counter() - start
    # "show all" asks the kernel for the functions the first view only named
    diff.locator(".plx-show-all").click()
    expect(diff.locator("summary code", has_text=re.compile(r"^fused_batch_norm_relu$"))
           ).to_have_count(1)
    expect(diff).not_to_contain_text("shown 8 of 13")

    # keyboard: down moves to the next pass, and JupyterLab keeps its cell
    active = page.evaluate(_ACTIVE_CELL)
    widget.locator(".plx-list").press("ArrowDown")
    expect(diff).to_contain_text("FuseTIR: ")
    expect(_row(widget, "FuseTIR")).to_have_class(re.compile(r"\bselected\b"))
    assert page.evaluate(_ACTIVE_CELL) == active

    # filters: changed only, then a search
    widget.locator(".plx-changed-only").check()
    expect(widget.locator(".plx-count")).to_have_text("33 of 71 passes")
    count_list_draws(widget)
    widget.locator(".plx-search").fill("fuse")
    expect(widget.locator(".plx-row")).to_have_count(2)
    expect(widget.locator(".plx-list mark.plx-hit")).to_have_count(2)
    assert list_draws(page) == 1  # once for the search and the kernel's answer together
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / "explorer.png"))

    # the fused graph after FuseTIR; a click on a kernel shows its TIR
    start = time.perf_counter()
    widget.locator(".plx-tab[data-tab=graph]").click()
    view = widget.locator(".plx-graph-view")
    node = view.locator("g.node", has=page.locator("title", has_text=re.compile(r"^lv$")))
    row = view.locator("tbody tr", has=page.locator("td", has_text=re.compile(r"^lv$")))
    target = node.or_(row)  # an SVG with Graphviz's dot, a table without
    expect(target).to_have_count(1)
    timings["graph"] = time.perf_counter() - start
    target.click()
    expect(widget.locator(".plx-kernel-title")).to_have_text(
        "TIR of fused_batch_norm_relu (after #6 FuseTIR)")
    expect(widget.locator(".plx-kernel-text")).to_contain_text("def fused_batch_norm_relu(")
    widget.screenshot(path=str(SHOTS / "explorer-graph.png"))

    # compare two passes, and the pipeline
    widget.locator(".plx-tab[data-tab=compare]").click()
    widget.locator(".plx-compare-a").select_option(label="#2 LegalizeOps")
    widget.locator(".plx-compare-b").select_option(label="#6 FuseTIR")
    expect(widget.locator(".plx-pane-compare")).to_contain_text(
        "From the input of #2 LegalizeOps to the output of #6 FuseTIR.")
    widget.locator(".plx-tab[data-tab=pipeline]").click()
    expect(widget.locator(".plx-pane-pipeline")).to_contain_text("Pipeline for llvm")
    assert page.errors == []
    print(" ".join(f"{k}={v:.2f}s" for k, v in timings.items()))


_BUFFERS_NB = [
    "import passlab\nfrom passlab.views.explorer import Explorer\n\n"
    "build = passlab.build(passlab.models.by_name('transformer-dynamic'))\n"
    "plan = build.trace.find('StaticPlanBlockMemory').index",
    "Explorer(build, tab='buffers', selected=plan)",
]


def test_buffers_pane_shows_the_liveness_picture(lab, page, expect):
    """The Buffers pane draws the SVG above the table, a slider redraws it with a bound for
    the symbolic sequence length; screenshots in the light and the dark theme."""
    path = write_notebook(lab.root / "buffers.ipynb", _BUFFERS_NB)
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    pane = widget.locator(".plx-pane-buffers")
    svg = pane.locator("svg.passlab-bufplot")
    expect(svg).to_be_visible()
    expect(pane.locator(".plx-bound-value")).to_have_text(
        "n unbounded: lower bound drawn; move to set n")
    expect(svg).to_contain_text("lower bound drawn")
    # one block per storage, and the picture above the tables
    expect(svg.locator("g.pb-block")).to_have_count(11)
    assert page.evaluate("""() => {
        const pane = document.querySelector('.plx-pane-buffers');
        const svg = pane.querySelector('svg.passlab-bufplot'), table = pane.querySelector('table');
        return svg.getBoundingClientRect().top < table.getBoundingClientRect().top; }""")
    # the slider: Python recomputes with bounds={"n": 64} and redraws
    pane.locator("input.plx-bound").fill("64")
    expect(svg).to_contain_text("drawn with bounds n=64")
    expect(pane.locator(".plx-bound-value")).to_have_text("n = 64")
    expect(svg.locator("g.pb-block")).to_have_count(11)
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    pane.evaluate("""(el) => { const svg = el.querySelector('svg.passlab-bufplot');
        el.scrollTop += svg.getBoundingClientRect().top - el.getBoundingClientRect().top - 48; }""")
    widget.screenshot(path=str(SHOTS / "explorer-buffers.png"))
    set_theme(page, "JupyterLab Dark")
    expect(page.locator("body[data-jp-theme-light='false']")).to_have_count(1)
    page.wait_for_timeout(500)  # the theme's CSS variables settle
    widget.screenshot(path=str(SHOTS / "explorer-buffers-dark.png"))
    set_theme(page, "JupyterLab Light")
    assert page.errors == []
