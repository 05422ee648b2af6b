"""The "Explain" strip in a real browser: above the Explorer's step panes in JupyterLab,
and above the diff in the static report. Takes docs/screenshots/explain.png.

Same machinery as tests/test_browser.py (JupyterLab on 127.0.0.1, Debian's Chromium
driven by Playwright); skipped, with the reason, when either is missing.
"""

from __future__ import annotations

import re
from pathlib import Path

from browser_helpers import SHOTS, marks, open_notebook, write_notebook

pytestmark = marks()


_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.models.mlp())\n"
    "fuse = build.trace.find('FuseOps')",
    "passlab.Explorer(build, selected=fuse.index)",
]


def test_explain_strip_in_the_explorer_and_the_report(tmp_path, lab, new_page, mlp_build,
                                                       expect):
    import passlab

    trace = mlp_build.trace
    fuse, plan = trace.find("FuseOps"), trace.find("StaticPlanBlockMemory")
    path = write_notebook(lab.root / "explain.ipynb", _NB)
    page = new_page()
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    strip = widget.locator(".plx-explain-strip")
    # above the panes, with the sentence for this step and the card's summary
    expect(strip.locator(".ple-here")).to_have_text(fuse.explain().sentence)
    expect(strip.locator(".ple-summary")).to_have_text(passlab.explain("FuseOps").summary)
    assert page.evaluate("""() => {
        const s = document.querySelector('.plx-explain-strip');
        const p = document.querySelector('.plx-panes');
        return s.getBoundingClientRect().bottom <= p.getBoundingClientRect().top + 1; }""")
    # the card's details unfold, with the coloured snippet and the TVM API name
    strip.locator("summary").click()
    expect(strip.locator(".ple-details")).to_be_visible()
    expect(strip.locator(".ple-snippet .ple-add")).to_have_count(1)
    expect(strip.locator(".ple-doc")).to_have_text("tvm.relax.transform.FuseOps")
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / "explain.png"))
    # another pass: the strip follows the selection, and stays unfolded
    widget.locator(".plx-row", has=page.locator(".plx-label", has_text=re.compile(
        r"^StaticPlanBlockMemory$"))).click()
    expect(strip.locator(".ple-here")).to_have_text(plan.explain().sentence)
    expect(strip.locator(".ple-details")).to_be_visible()
    # compare and pipeline are not step panes: no strip there
    widget.locator(".plx-tab[data-tab=pipeline]").click()
    expect(strip).to_be_hidden()
    assert page.errors == []

    report = trace.write_report(tmp_path / "report.html")
    page = new_page()
    page.goto(Path(report).resolve().as_uri())
    rep = page.locator("#plx-root .plx")  # the Explorer's front end over the report
    rep.locator(".plx-row", has=page.locator(".plx-label", has_text=re.compile(
        r"^FuseOps$"))).click()
    box = rep.locator(".plx-explain-strip")
    expect(box.locator(".ple-here")).to_have_text(fuse.explain().sentence)
    # the strip comes before the diff
    expect(rep.locator(".plx-pane-diff .passlab-diff")).to_be_visible()
    assert page.evaluate("""() => {
        const s = document.querySelector('#plx-root .plx-explain-strip');
        const d = document.querySelector('#plx-root .plx-panes');
        return s.getBoundingClientRect().bottom <= d.getBoundingClientRect().top + 1; }""")
    assert page.errors == []
