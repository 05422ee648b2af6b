"""LLVM's own passes in a real headless Chromium: the pass list's LLVM group under the
codegen row opens and closes, an LLVM step's diff is coloured LLVM IR, its Explain strip
has the pass's card; in the static report (offline, from file://), light and dark, wide
and narrow. Screenshots: docs/screenshots/llvm-*.png."""

from __future__ import annotations

import re

import pytest
from browser_helpers import SHOTS, marks

import passlab

pytestmark = marks()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    build = passlab.build(passlab.models.mlp(), llvm_passes=True)
    return build.trace.write_report(tmp_path_factory.mktemp("llvm") / "llvm.html",
                                    title="mlp with LLVM's passes")


@pytest.mark.parametrize("width, dark", [(1400, False), (800, True)])
def test_llvm_group_and_diff_in_the_report(report, new_page, expect, width, dark):
    page = new_page(width, 1000)
    page.context.set_offline(True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    if dark:
        page.emulate_media(color_scheme="dark")
    page.goto(report.resolve().as_uri())
    page.wait_for_selector("#plx-root[data-ready]")
    root = page.locator("#plx-root .plx")
    toggle = root.locator(".plx-llvm-toggle")
    expect(toggle).to_have_text("\u25b8 LLVM's passes \u00b7 188")
    expect(root.locator(".plx-row.llvm")).to_have_count(0)
    toggle.click()
    expect(root.locator(".plx-row.llvm")).to_have_count(40)
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(root.locator(".plx-count")).to_have_text(re.compile(r"^111 of 111 passes"))
    row = root.locator(".plx-row.llvm", has=page.locator(
        ".plx-label", has_text=re.compile(r"^Loop\s*Vectorize\s*Pass$")))
    row.click()
    strip = root.locator(".passlab-explain")
    expect(strip).to_contain_text("LoopVectorizePass changed fused_matmul_add_relu_compute_ "
                                  "of kernel fused_matmul_add_relu")
    diff = root.locator(".plx-pane-diff")
    expect(diff.locator('details[data-kind="llvm"]')).to_have_count(1)
    expect(diff.locator("td.pl-code span.tok-kt:visible", has_text="float").first).to_be_visible()
    expect(diff.locator("td.pl-code:visible", has_text="vector.body:").first).to_be_visible()
    page.screenshot(path=str(SHOTS / f"llvm-report-{'dark' if dark else 'light'}-{width}.png"))
    toggle.click()
    expect(root.locator(".plx-row.llvm")).to_have_count(0)
    assert errors == []


def test_kernel_panel_links_to_the_vectorizers(report, new_page, expect):
    page = new_page(1400, 1000)
    page.context.set_offline(True)
    page.goto(report.resolve().as_uri())
    page.wait_for_selector("#plx-root[data-ready]")
    root = page.locator("#plx-root .plx")
    root.locator(".plx-search").fill("FuseTIR")
    root.locator(".plx-row", has=page.locator(".plx-label", has_text="FuseTIR")).click()
    root.locator("button", has_text="Fused graph").click()
    page.locator("svg g.node", has_text="fused_matmul_add_relu").first.click()
    facts = root.locator(".plx-kernel-llvm")
    expect(facts).to_contain_text("LLVM: vectorized by LoopVectorize and SLPVectorizer; "
                                  "widest <4 x float>, 441 vector types")
    facts.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "llvm-kernel-panel.png"))
    facts.locator("a", has_text="LoopVectorizePass").click()
    expect(root.locator(".passlab-explain")).to_contain_text("LoopVectorizePass changed")
