"""The Explorer's Edit tab in a real browser: disable a pass, Run, see the A/B table.
Takes docs/screenshots/explorer-edit.png.

Same machinery as tests/test_browser.py (JupyterLab on 127.0.0.1, Debian's Chromium
driven by Playwright); skipped, with the reason, when either is missing.
"""

from __future__ import annotations

import re

from browser_helpers import SHOTS, marks, open_notebook, write_notebook

pytestmark = marks()


_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.models.mlp())\n"
    "ex = passlab.Explorer(build, tab='edit')",
    "ex",
]


def test_disable_a_pass_run_and_see_the_ab_table(lab, page, expect):
    path = write_notebook(lab.root / "edit.ipynb", _NB)
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    pane = widget.locator(".plx-pane-edit")
    expect(pane.locator(".plx-edit-run")).to_be_disabled()  # nothing pending yet
    row = pane.locator(".plx-edit-row", has=page.locator(
        ".plx-edit-name", has_text=re.compile(r"^FoldConstant$")))
    row.locator("[data-edit=disable]").click()
    # the pending list says what Run will change; the row is marked
    expect(pane.locator(".plx-edit-pending li")).to_have_text(["disable #4 FoldConstant"])
    expect(row).to_have_class(re.compile(r"\boff\b.*\bpending\b"))
    pane.locator(".plx-edit-run").click()
    table = pane.locator(".plx-ab table")
    expect(table.locator("td").first).to_have_text("outputs: max abs diff vs A")
    expect(table.locator("tr", has_text="number of kernels").locator("td")).to_have_text(
        ["number of kernels", "4", "4", "+0"])
    # the Explorer now shows the new trace, and the history offers the way back
    expect(widget.locator(".plx-summary")).to_have_text(re.compile(
        r"^#1 FoldConstant disabled: Trace of"))
    expect(pane.locator(".plx-edit-history button[data-show='0']")).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / "explorer-edit.png"))
    assert page.errors == []
