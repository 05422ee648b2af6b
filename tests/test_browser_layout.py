"""Every pane fits and reads at real size (issue 34), in a real browser: the Explorer in
JupyterLab and the static report, on tests/corpus.py's ONNX ResNet-18 (torchvision's
architecture, weights as graph inputs) and Hugging Face's GPT-2 (from a config), at 1400
(JupyterLab's file browser open), 970 and 800 px, in the light and the dark theme.

Each pane is walked (the pass list; the diff unified and side by side; the fused graph,
its kernel panel and the panel maximised; provenance; buffers; profile; pipeline;
compare; edit), and after each step the layout rule is checked in the page
(`browser_helpers.LAYOUT_JS`): no box's content is wider than the box unless the box is a
declared scroller; nothing sticky overlaps a control; no control in sight is covered. At
1400 px the graph's viewport is at least 300 px tall, with and without the kernel panel;
"fit" never goes below the readable scale; at 800 px with the file browser open (a
widget ~370 px wide) the graph's viewport keeps its 300 px; the provenance table's kernels, fate and note
columns are in sight; side-by-side diffs wrap only at token boundaries; the maximised
kernel panel shows its links and diff whole. The report also checks that the search
filters and marks without moving the selection while its row is shown; the notebook's own
outputs of `passlab.diff(step)` and `passlab.fused_graph(step)` fit their output area.

One notebook run per model (the build runs in its kernel, which also writes the model's
report); the themes and widths are the same page switched and resized, as a user does.
The ONNX ResNet-18 is walked at every width in both themes (the notebook; the report at
1400 and 800 px in both, 970 in the light one). GPT-2, whose panes are the same front end
with other data, is walked at every (theme, width) pair once, in the notebook or in the
report: the notebook at 1400 and 800 px light and 970 dark, the report at 970 light and
1400 and 800 dark, which keeps the suite within its time.
Screenshots: docs/screenshots/layout-*.png (ResNet-18).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_helpers import (
    LAYOUT_JS,
    SHOTS,
    marks,
    open_notebook,
    resize,
    set_theme,
    write_notebook,
)

pytestmark = marks()

_TESTS = str(Path(__file__).resolve().parent)
#: model -> (the pass whose diff is walked, the pass whose graph is)
MODELS = {"onnx_resnet18": ("FuseOps", "FuseTIR"), "gpt2": ("FuseOps", "FuseTIR")}
WIDTHS = (1400, 970, 800)
#: model -> where -> theme -> the widths walked (see the module's docstring)
WALKS = {
    "onnx_resnet18": {"notebook": {"light": WIDTHS, "dark": WIDTHS},
                      "report": {"light": WIDTHS, "dark": (1400, 800)}},
    "gpt2": {"notebook": {"light": (1400, 800), "dark": (970,)},
             "report": {"light": (970,), "dark": (1400, 800)}},
}
READABLE = 0.75  # graph/interaction.js: the smallest scale "fit" may choose

# the notebook: the build and a short profile run in the kernel, which writes the
# model's report once; the Explorer opens on the diff of the first pass walked
_NB = [
    f"import os, sys\nsys.path.insert(0, {_TESTS!r})\nimport corpus, passlab\n\n"
    "name = {name!r}\nbuild = corpus.build(name).build\n"
    "prof = build.profile(repeat=2, budget_s=0.5)\n"
    "if not os.path.exists(name + '.html'):\n"
    "    build.trace.write_report(name + '.html', profile=prof)",
    "ex = passlab.Explorer(build, profile=prof, selected=build.trace.find({diff!r}).index)\nex",
    "passlab.diff(build.trace.find({diff!r}))",
    "passlab.fused_graph(build.trace.find({graph!r}))",
]

# The side-by-side diff's line breaks inside a token: for every code cell, each place
# where its text wraps onto a new line between two letters or digits ("cls.conv2" | "d",
# 'dtype="f' | 'loat32"'); a wrap after a space, a bracket, a comma or the . or _ inside
# a long name ("cls.fused_reshape_" | "cast_reshape1(") is at a token boundary.
_WRAPS_JS = """(root) => {
  const bad = [];
  for (const cell of [...root.querySelectorAll("table.pl-sbs td.pl-code")].slice(0, 120)) {
    const text = cell.textContent;
    let top = null, pos = 0;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.data.length; i++, pos++) {
        if (/\\s/.test(n.data[i])) continue;
        range.setStart(n, i); range.setEnd(n, i + 1);
        const t = range.getBoundingClientRect().top;
        if (top !== null && t > top + 2) {
          const before = text[pos - 1];
          if (/[A-Za-z0-9]/.test(before) && /\\w/.test(text[pos])) {
            bad.push(text.slice(Math.max(0, pos - 30), pos) + " | " + text.slice(pos, pos + 12));
          }
        }
        top = t;
      }
    }
  }
  return bad;
}"""

_SCALE_JS = """(view) => {
  const m = /scale\\(([\\d.]+)\\)/.exec(view.querySelector("svg").style.transform);
  return m ? Number(m[1]) : null;
}"""


def _settled(page) -> None:
    """Two animation frames: what the last answer changed is laid out."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def _check(root, where: str) -> None:
    """The layout rule, at this moment."""
    root.page.wait_for_timeout(50)
    _settled(root.page)
    found = root.evaluate(LAYOUT_JS)
    problems = [f"{k}: {x}" for k, xs in found.items() for x in xs]
    assert problems == [], f"{where}:\n" + "\n".join(problems)


def _idle(root, expect) -> None:
    """The kernel (or the report's model) answered the last change."""
    expect(root.locator(".plx-panes.plx-busy")).to_have_count(0)


def _row(root, label: str):
    return root.locator(".plx-row", has=root.page.locator(
        ".plx-label", has_text=re.compile(rf"^{re.escape(label)}$")))


def _tab(root, name: str, expect) -> None:
    root.locator(f".plx-tab[data-tab={name}]").click()
    expect(root.locator(f".plx-pane-{name}")).to_be_visible()
    _idle(root, expect)


def _shot(root, label: str, theme: str, width: int, wanted: set[str]) -> None:
    key = f"{label}-{theme}-{width}"
    if key in wanted:
        root.evaluate("(e) => e.scrollIntoView({ block: 'start' })")
        face = "report-" if root.page.locator("#plx-root").count() else ""
        root.screenshot(path=str(SHOTS / f"layout-{face}{key}.png"))


def _walk(root, expect, *, model: str, theme: str, width: int, static: bool,
          shots: set[str]) -> None:
    """Every pane of one Explorer (or report) at one width; the rule after each step.
    `shots`: the panes to photograph ("graph-dark-800"; "report-graph-dark-800")."""
    face = "report" if static else "explorer"
    shots = {s.removeprefix("report-") for s in shots if s.startswith("report-") == static}
    where = f"{model} {face} {theme} {width} px"
    diff_pass, graph_pass = MODELS[model]
    page = root.page
    # the pass list explains itself: a header with units, a tooltip per row
    head = root.locator(".plx-list-head")
    expect(head.locator(".plx-ms")).to_have_attribute("title", re.compile("milliseconds"))
    expect(head.locator(".plx-changes")).to_have_attribute("title", re.compile(r"\+added -removed ~modified"))
    # --- diff, unified then side by side
    _row(root, diff_pass).click()
    _tab(root, "diff", expect)
    diff = root.locator(".plx-pane-diff")
    mode = root.locator("select.plx-mode")
    mode.select_option("unified")
    expect(diff.locator("table.pl-unified").first).to_be_visible()
    _check(root, f"{where}, pass list and unified diff")
    _shot(root, "diff", theme, width, shots)
    mode.select_option("side-by-side")
    expect(diff.locator("table.pl-sbs").first).to_be_visible()
    _idle(root, expect)
    _check(root, f"{where}, side-by-side diff")
    assert diff.evaluate(_WRAPS_JS) == [], f"{where}: side-by-side lines wrap inside tokens"
    _shot(root, "diff-sbs", theme, width, shots)
    mode.select_option("unified")
    # --- graph, kernel panel, maximised
    _row(root, graph_pass).click()
    _tab(root, "graph", expect)
    graph = root.locator(".plx-pane-graph")
    view = graph.locator(".plx-graph-view")
    expect(view.locator("svg g.node").first).to_be_visible()
    _check(root, f"{where}, fused graph")
    if width == 1400:
        assert view.evaluate("(e) => e.clientHeight") >= 300, f"{where}: graph viewport"
    graph.locator(".plx-zoom-fit").click()
    assert view.evaluate(_SCALE_JS) >= READABLE, f"{where}: fit went below a readable scale"
    _shot(root, "graph", theme, width, shots)
    kernel = view.locator("svg g.node:not(.plx-group)", has=page.locator(
        "title", has_text=re.compile(r"^(lv|gv)"))).first
    kernel.dispatch_event("click")
    panel = graph.locator(".plx-kernel")
    expect(panel.locator(".plx-kernel-title")).to_have_text(re.compile(r"^(TIR|Relax function) of "))
    _idle(root, expect)
    _check(root, f"{where}, kernel panel")
    if width == 1400:
        assert view.evaluate("(e) => e.clientHeight") >= 300, f"{where}: viewport with the kernel"
    _shot(root, "kernel", theme, width, shots)
    graph.locator(".plx-kernel-max-btn").click()
    expect(graph.locator(".plx-graph-box")).to_be_hidden()
    _check(root, f"{where}, kernel panel maximised")
    links = panel.locator(".plx-kernel-links")
    if links.count() and links.is_visible():  # its links and diff whole, not a sliver
        assert links.evaluate("(e) => e.scrollHeight <= e.clientHeight + 1"), where
    _shot(root, "kernel-max", theme, width, shots)
    graph.locator(".plx-kernel-max-btn").click()
    expect(graph.locator(".plx-graph-box")).to_be_visible()
    # --- provenance: every column of the op table in sight
    _tab(root, "provenance", expect)
    prov = root.locator(".plx-pane-provenance")
    expect(prov.locator(".passlab-prov-table tr[data-search]").first).to_be_visible()
    _check(root, f"{where}, provenance")
    right = prov.evaluate("(e) => e.getBoundingClientRect().right")
    for col in ("kernels", "fate", "note"):
        th = prov.locator(".passlab-prov-table th", has_text=re.compile(rf"^{col}$"))
        assert th.evaluate("(e) => e.getBoundingClientRect().right") <= right + 1, (where, col)
    _shot(root, "provenance", theme, width, shots)
    # --- the other panes
    for tab in ("buffers", "profile", "pipeline", "compare", "edit"):
        _tab(root, tab, expect)
        expect(root.locator(f".plx-pane-{tab}")).not_to_be_empty()
        _check(root, f"{where}, {tab}")
        _shot(root, tab, theme, width, shots)
    _tab(root, "diff", expect)


#: which panes are photographed (ResNet-18's Explorer; the report's in _report); the
#: kernel panel stays open once a kernel is picked, so "graph" is taken once, before
_SHOTS = ({f"{p}-light-1400" for p in ("diff", "diff-sbs", "graph", "kernel", "kernel-max",
                                       "provenance", "buffers", "profile", "pipeline",
                                       "compare", "edit")}
          | {f"{p}-dark-1400" for p in ("diff", "kernel", "provenance", "buffers")}
          | {f"{p}-light-800" for p in ("diff", "kernel", "provenance")}
          | {"kernel-max-dark-800"})


def _outputs(page, expect, where: str) -> None:
    """The notebook's own outputs of a diff (side by side) and a fused graph fit their
    output area too (the graph's zoom box is a declared scroller)."""
    for sel in (".jp-OutputArea-output:has(> .passlab-diff)",
                ".jp-OutputArea-output:has(.passlab-graph)"):
        out = page.locator(sel).first
        expect(out).to_be_attached()
        out.scroll_into_view_if_needed()
        _check(out, f"{where}, {sel}")
    diff = page.locator(".jp-OutputArea-output > .passlab-diff").first
    assert diff.evaluate(_WRAPS_JS) == [], f"{where}: a notebook diff wraps inside tokens"


def _file_browser(page, expect) -> None:
    """Open JupyterLab's file browser (the left side panel), as it opens by default."""
    if page.locator("#jp-left-stack").is_visible():
        return
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab").first.click()
    expect(page.locator("#jp-left-stack")).to_be_visible()


def _report(new_page, path: Path, model: str, theme: str, expect) -> None:
    page = new_page(WIDTHS[0], 1000)
    page.context.set_offline(True)
    if theme == "dark":
        page.emulate_media(color_scheme="dark")
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("#plx-root[data-ready]")
    root = page.locator("#plx-root .plx")
    shots = ({f"report-kernel-{theme}-1400", f"report-diff-{theme}-800"}
             if model == "onnx_resnet18" else set())
    for width in WALKS[model]["report"][theme]:
        page.set_viewport_size({"width": width, "height": 1000})
        _walk(root, expect, model=model, theme=theme, width=width, static=True, shots=shots)
    if theme == "light":
        _search_keeps_the_selection(root, MODELS[model], expect)
    assert page.errors == []
    page.context.close()


def _search_keeps_the_selection(root, passes: tuple[str, str], expect) -> None:
    """The search filters and marks; the selection moves only while its row is hidden,
    and comes back when the search is cleared."""
    _, graph_pass = passes
    _row(root, graph_pass).click()
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text(graph_pass)
    search = root.locator(".plx-search")
    search.fill("fuse")
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text(graph_pass)
    expect(root.locator(".plx-row.selected mark.plx-hit")).to_have_text(re.compile("^fuse$", re.I))
    search.fill("fuseo")
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text("FuseOps")
    search.fill("")
    expect(root.locator(".plx-row.selected .plx-label")).to_have_text(graph_pass)
    expect(root.locator(".plx-row mark.plx-hit")).to_have_count(0)


@pytest.mark.parametrize("model", list(MODELS))
def test_every_pane_fits_at_real_size(model, lab, new_page, expect):
    import corpus

    if not (corpus.TORCHVISION_DIR / "torchvision").is_dir() and model == "onnx_resnet18":
        pytest.skip(f"no torchvision in {corpus.TORCHVISION_DIR}: `make` installs it")
    pytest.importorskip("onnx" if model == "onnx_resnet18" else "transformers")
    diff_pass, _ = MODELS[model]
    graph_pass = MODELS[model][1]
    write_notebook(lab.root / "layout.ipynb",
                   [c.format(name=model, diff=diff_pass, graph=graph_pass) for c in _NB])
    SHOTS.mkdir(parents=True, exist_ok=True)
    shots = _SHOTS if model == "onnx_resnet18" else set()
    page = new_page(width=WIDTHS[0])
    open_notebook(page, lab, "layout.ipynb", expect)
    root = page.locator(".jp-OutputArea-output .plx")
    expect(root.locator(".plx-row").first).to_be_visible(timeout=300_000)  # the build
    for theme in ("light", "dark"):
        if theme == "dark":  # the same widget, JupyterLab's theme switched
            set_theme(page, "JupyterLab Dark")
            expect(page.locator('body[data-jp-theme-light="false"]')).to_have_count(1)
        for width in WALKS[model]["notebook"][theme]:
            resize(page, width)
            if width >= 1000:  # JupyterLab's file browser open beside the notebook
                _file_browser(page, expect)
            _walk(root, expect, model=model, theme=theme, width=width, static=False,
                  shots=shots)
            _outputs(page, expect, f"{model} notebook {theme} {width} px")
        # 800 px with the file browser open: the widget is ~370 px wide (stacked); the
        # graph still gets its 300 px and the panes their width
        _file_browser(page, expect)
        _tab(root, "graph", expect)
        _check(root, f"{model} explorer {theme} 800 px with the file browser")
        view = root.locator(".plx-graph-view")
        assert view.evaluate("(e) => e.clientHeight") >= 300, f"{model} {theme}: 800 px graph"
        _tab(root, "diff", expect)
        _check(root, f"{model} explorer {theme} 800 px with the file browser, diff")
    assert page.errors == []
    page.context.close()
    for theme in ("light", "dark"):
        _report(new_page, lab.root / f"{model}.html", model, theme, expect)
