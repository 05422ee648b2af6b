"""A build's progress bar in JupyterLab, in a real browser: tqdm's notebook widget appears
on its own (the default, once the build has run 2 s), reaches the pipeline's passes plus
codegen, and stays as a finished bar with the number of pass calls recorded.
Screenshots: docs/screenshots/progress-bar.png and progress-bar-dark.png."""

from __future__ import annotations

import re

from browser_helpers import SHOTS, marks, run_all, set_theme, write_notebook

pytestmark = marks()

_NB = [
    "import passlab\n"
    "pipe = passlab.Pipeline.default('llvm')\n"
    "total = len(pipe.relax_passes) + len(pipe.tir_passes) + 1\n"
    "build = passlab.build(passlab.models.resnet(), pipe)   # no progress= : the default",
    "print(total, sum(1 for s in build.trace if s.name != 'codegen'))  # passes, pass calls",
]


def test_the_build_bar_in_jupyterlab(lab, page, expect):
    path = write_notebook(lab.root / "progress.ipynb", _NB)
    page.goto(lab.notebook_url(path.name))
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    run_all(page, expect)
    printed = page.locator(".jp-OutputArea-output pre", has_text=re.compile(r"^\d+ \d+\s*$"))
    expect(printed).to_have_count(1, timeout=120_000)
    total, calls = map(int, printed.inner_text().split())
    bar = page.locator(".jp-OutputArea-output .widget-hprogress").first
    expect(bar).to_be_visible()
    row = bar.locator("xpath=..")  # tqdm's HBox: description, bar, counts
    text = row.inner_text().replace("\u2007", " ").replace("\xa0", " ")  # tqdm's spaces
    assert text.startswith("build for llvm: 100%"), text
    assert f"{total}/{total}" in text and f"{calls} pass calls recorded" in text, text
    # one bar per build, and the finished bar says it succeeded (tqdm's "success" style)
    assert page.locator(".jp-OutputArea-output .widget-hprogress").count() == 1
    assert "progress-bar-success" in bar.inner_html() or bar.evaluate(
        "(b) => b.querySelector('.progress-bar-success, .widget-progress-bar-success, "
        "[class*=success]') !== null")
    row.screenshot(path=str(SHOTS / "progress-bar.png"))
    set_theme(page, "JupyterLab Dark")
    expect(page.locator('body[data-jp-theme-light="false"]')).to_have_count(1)
    row.screenshot(path=str(SHOTS / "progress-bar-dark.png"))
