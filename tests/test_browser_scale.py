"""A trace of 10,000+ steps in the Explorer in a real browser (issue 24): the first pane
appears with the main chain's rows only, and ticking "inner passes" loads every row.

Same machinery as tests/test_browser.py (Debian's Chromium driven by Playwright; JupyterLab
on 127.0.0.1); skipped, with the reason, when either is missing. The trace is the MLP's
with 10,000 inner steps crafted under FoldConstant (tests/many_steps.py): a real model of
that size (Swin-T, benchmarks/large_models.py) takes minutes to build.
"""

from __future__ import annotations

from browser_helpers import marks, open_notebook, write_notebook
from many_steps import with_inner

pytestmark = marks()

INNER = 10_000


def test_large_trace_opens_with_the_main_chain_and_loads_inner_passes(
        mlp_build, tmp_path, lab, page, expect):
    from passlab.views import explorer_list

    saved = mlp_build.trace.save(tmp_path / "mlp.trace.zip")
    big = with_inner(saved, tmp_path / "big.trace.zip", INNER)
    total = len(mlp_build.trace) + INNER
    main = len(explorer_list.visible(mlp_build.trace))
    cells = ["import passlab\n\n"
             f"trace = passlab.load_trace({str(big)!r})\n"
             "ex = passlab.Explorer(trace)\nex"]
    path = write_notebook(lab.root / "scale.ipynb", cells)
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    # loading 10,000 steps takes the kernel a while: wait for the widget itself
    expect(widget.locator(".plx-pane-diff .pl-summary")).to_be_visible(timeout=240_000)
    expect(widget.locator(".plx-count")).to_have_text(f"{main} of {main} passes")
    expect(widget.locator(".plx-list .plx-row")).to_have_count(main)
    widget.locator(".plx-show-inner").check()
    expect(widget.locator(".plx-count")).to_have_text(f"{total} of {total} passes",
                                                      timeout=120_000)
    expect(widget.locator(".plx-list .plx-row.inner")).to_have_count(
        sum(1 for s in mlp_build.trace if s.kind == "inner") + INNER)
    expect(widget.locator(".plx-rows-loading")).to_have_count(0)
    # an inner step is listed with its change summary, and selecting it shows its diff
    row = widget.locator('.plx-row[data-index="12"]')
    expect(row.locator(".plx-label")).to_have_text("tirx.StmtSimplify")
    expect(row.locator(".plx-changes")).to_have_text("-7 ~1")
    row.click()
    expect(widget.locator(".plx-pane-diff .pl-summary")).to_contain_text(
        "changed: 0 added, 7 removed, 1 modified")
    assert page.errors == []


def test_rows_sent_before_their_change_counts_get_them_in_the_page(lab, page, expect):
    # a large model's trace opens with some rows waiting for their change counts
    # (explorer_list.COMPARISONS_UP_FRONT): in a kernel without an event loop to send them
    # after the cell, the page asks for them once it has drawn the list
    cells = ["import passlab\nfrom passlab.views import _explorer_life, explorer_list\n\n"
             "explorer_list.COMPARISONS_UP_FRONT = 20\n"
             "_explorer_life.soon = lambda *args: False  # nothing scheduled: the page asks\n"
             "trace = passlab.build(passlab.models.mlp()).trace\n"
             "ex = passlab.Explorer(trace)\nprint('pending', ex.changes_pending)\nex"]
    path = write_notebook(lab.root / "counts.ipynb", cells)
    open_notebook(page, lab, path.name, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    expect(page.locator(".jp-OutputArea-output").first).to_contain_text("pending 70",
                                                                        timeout=240_000)
    expect(widget.locator(".plx-pane-diff .pl-summary")).to_be_visible(timeout=60_000)
    row = widget.locator('.plx-row[data-index="94"]')  # tirx.LowerIntrin: it waited
    expect(row.locator(".plx-label")).to_have_text("tirx.LowerIntrin")
    expect(row.locator(".plx-changes")).to_have_text("~2")
    expect(row).to_have_class("plx-row changed pass")
    expect(widget.locator(".plx-row.counting")).to_have_count(0)
    assert page.errors == []
