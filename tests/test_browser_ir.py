"""The Explorer's IR reading aids in a real browser: the search in a step's IR (count,
next/previous across highlighted token spans), the function list, and the links from a
Relax binding and a buffer row to the graph; unchanged regions folded with a count that
opens them. Takes docs/screenshots/explorer-ir-search.png and explorer-diff-folds(-dark).png.

Same machinery as tests/test_browser.py (JupyterLab on 127.0.0.1, Debian's Chromium
driven by Playwright); skipped, with the reason, when either is missing.
"""

from __future__ import annotations

import re

from browser_helpers import SHOTS, marks, open_notebook, write_notebook
from test_explorer_ir import _Page

pytestmark = marks()


_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.models.mlp())\n"
    "fuse = build.trace.find('FuseOps')",
    "ex = passlab.Explorer(build, selected=fuse.index)\nex",
    "print('focus:', ex.focus)",
]

# which <mark> is current: its position among the marks (-1: none)
_CURRENT = """() => {
    const marks = [...document.querySelectorAll('.plx-pane-diff mark.plx-hit')];
    return marks.findIndex((m) => m.classList.contains('plx-hit-current')); }"""


def test_ir_search_function_list_and_links(lab, page, mlp_build, expect):
    from passlab.views.explorer_panes import PaneRenderer

    trace = mlp_build.trace
    fuse = trace.find("FuseOps").index
    cells = _Page(PaneRenderer(trace).pane("diff", fuse)).cells
    total = sum(c.lower().count("r.call_tir") for c in cells)
    assert total > 3

    path = write_notebook(lab.root / "ir.ipynb", _NB)
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    pane = widget.locator(".plx-pane-diff")
    expect(pane).to_contain_text("FuseOps: ")
    _folds_open_and_close(page, widget, pane, expect, "explorer-diff-folds.png")

    # search: every match marked (across token spans), the first one current
    box = pane.locator(".plx-ir-search")
    count = pane.locator(".plx-ir-count")
    box.fill("R.call_tir")
    expect(count).to_have_text(f"1 of {total}")
    expect(pane.locator("mark.plx-hit")).to_have_count(total)
    expect(pane.locator("mark.plx-hit-current")).to_have_count(1)
    expect(pane.locator("mark.plx-hit-current")).to_have_text("R.call_tir")
    assert page.evaluate(_CURRENT) == 0
    box.press("Enter")
    expect(count).to_have_text(f"2 of {total}")
    assert page.evaluate(_CURRENT) == 1
    pane.locator(".plx-ir-next").click()
    expect(count).to_have_text(f"3 of {total}")
    box.press("Shift+Enter")
    expect(count).to_have_text(f"2 of {total}")
    pane.locator(".plx-ir-prev").click()
    pane.locator(".plx-ir-prev").click()
    expect(count).to_have_text(f"{total} of {total}")  # wraps around
    # keys in the box stay there: JupyterLab did not leave the cell or insert one
    box.press("b")
    expect(count).to_have_text("no match")
    box.press("Backspace")
    expect(count).to_have_text(f"1 of {total}")
    expect(page.locator(".jp-NotebookPanel .jp-Cell")).to_have_count(3)
    # the text of the code is unchanged by the marks
    assert page.evaluate("""() => [...document.querySelectorAll(
        '.plx-pane-diff td.pl-code')].map((c) => c.textContent)""") == cells
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / "explorer-ir-search.png"))

    # the function list: entry first, then kernels; a folded function opens
    jump = pane.locator(".plx-ir-jump")
    options = jump.locator("option").all_text_contents()
    assert options[0] == "functions (3)" and options[1].startswith("~ forward (relax, modified")
    target = pane.locator('details[data-fn="fused_matmul_add_relu"]')
    target.locator("summary").click()
    expect(target).not_to_have_attribute("open", "")
    jump.select_option("fused_matmul_add_relu")
    expect(target).to_have_attribute("open", "")
    assert page.evaluate("""() => {
        const p = document.querySelector('.plx-pane-diff').getBoundingClientRect();
        const d = document.querySelector('.plx-pane-diff details[data-fn="fused_matmul_add_relu"]')
            .getBoundingClientRect();
        return d.top >= p.top && d.top < p.bottom; }""")

    # a binding in the Relax diff -> the graph, with the variable in focus
    link = pane.locator('tr.pl-add .pl-var[data-var="lv1"]')
    link.click()
    expect(widget.locator(".plx-tab.active")).to_have_attribute("data-tab", "graph")
    last = page.locator(".jp-NotebookPanel .jp-Cell").nth(2)

    def focus_in_kernel(text):
        last.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Control+Enter")
        expect(last.locator(".jp-OutputArea-output")).to_have_text(f"focus: {text}")

    focus_in_kernel("['lv1']")
    # a buffer row -> the graph, with the tensor's producer and consumers in focus
    widget.locator(".plx-tab[data-tab=buffers]").click()
    row = widget.locator('.plx-pane-buffers tr.plx-linked[data-tensor="lv"]'
                         '[data-function="forward"]')
    row.locator("td").first.click()
    expect(widget.locator(".plx-tab.active")).to_have_attribute("data-tab", "graph")
    focus_in_kernel("['fused_matmul_add_relu', 'fused_matmul1_add1']")
    assert page.errors == []

    # the same folds in JupyterLab Dark
    from test_browser_theme import _settings_dark

    _settings_dark(lab)
    open_notebook(page, lab, path.name, expect)
    expect(page.locator('body[data-jp-theme-light="false"]')).to_have_count(1)
    widget = page.locator(".jp-OutputArea-output .plx")
    pane = widget.locator(".plx-pane-diff")
    expect(pane).to_contain_text("FuseOps: ")
    _folds_open_and_close(page, widget, pane, expect, "explorer-diff-folds-dark.png")
    assert page.errors == []


def _folds_open_and_close(page, widget, pane, expect, shot: str) -> None:
    """The entry's unchanged head (decorator, signature, func_attr) is one fold with its
    count; the count reads at 4.5:1 or more; a click opens the lines and another closes
    them. Screenshot ``shot`` of the folded diff."""
    from test_browser_theme import _low

    fold = pane.locator('details[data-fn="forward"] tr.pl-fold-head')
    folded = pane.locator('details[data-fn="forward"] tr.pl-folded')
    expect(fold).to_have_count(1)
    expect(fold).to_have_text("\u22ef 3 unchanged lines")
    expect(folded).to_have_count(3)
    for k in range(3):
        expect(folded.nth(k)).to_be_hidden()
    assert _low(page, [("fold count", ".plx-pane-diff tr.pl-fold-head label")], "folds") == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / shot))
    fold.locator("label").click()
    expect(folded.nth(1)).to_be_visible()
    expect(folded.nth(1)).to_contain_text("def forward(x: R.Tensor((4, 16)")
    fold.locator("label").click()
    expect(folded.nth(1)).to_be_hidden()


def test_report_diff_layout_toggle_and_folds(tmp_path, mlp_build, page, expect):
    from pathlib import Path


    trace = mlp_build.trace
    report = trace.write_report(tmp_path / "report.html")
    page.goto(Path(report).resolve().as_uri())
    rep = page.locator("#plx-root .plx")  # the Explorer's front end over the report
    rep.locator(".plx-row", has=page.locator(".plx-label", has_text=re.compile(
        r"^FuseOps$"))).click()
    box = rep.locator(".plx-pane-diff")
    # the report opens unified, as the Explorer does (made in the page from the kept
    # side-by-side layout)
    expect(box.locator("table.pl-unified")).to_have_count(3)
    modes = rep.locator("select.plx-mode")
    expect(modes).to_have_value("unified")
    fold = box.locator('details[data-fn="forward"] tr.pl-fold-head')
    expect(fold).to_have_text("\u22ef 3 unchanged lines")
    modes.select_option("side-by-side")
    expect(box.locator("table.pl-sbs")).to_have_count(3)
    expect(box.locator("table.pl-unified")).to_have_count(0)
    folded = box.locator('details[data-fn="forward"] tr.pl-folded')
    expect(folded.nth(0)).to_be_hidden()
    fold.locator("label").click()
    expect(folded.nth(0)).to_be_visible()
    # the layout stays chosen for the next pass shown
    rep.locator(".plx-list").press("k")
    expect(rep.locator(".plx-row.selected .plx-label")).to_have_text("FoldConstant")
    rep.locator(".plx-list").press("k")  # AnnotateTIROpPattern: a diff again
    expect(box.locator("table.pl-sbs").first).to_be_visible()
    expect(modes).to_have_value("side-by-side")
    assert page.errors == []
