"""Any theme, any width, any keyboard (issue #13, part 4), in a real browser.

JupyterLab Dark and Light: the contrast of rendered text against its effective background
(WCAG formula, translucent layers composited, SVG text by its fill) is at least 4.5:1 in
every pane of the Explorer (the pass list and tabs; Diff with IR search hits; Fused graph
with its tools, marks, overlay legend, edge labels and a kernel's panel and links;
Buffers; Provenance; Compare; Pipeline; Edit with its pending list, buttons and A/B
table) and in plain outputs (tables, ``passlab.diff(step)``, ``fused_graph(...)``, whose
white Graphviz page gives way to the theme's); the static report in a dark colour scheme
too. At 800 px the panes stack under the list without horizontal overflow; at 1000 px with
the file browser open the pass names stay readable. ArrowRight on a focused tab opens the
next tab, focus stays in the widget and JupyterLab's shortcuts never see the keys.
Screenshots: docs/screenshots/explorer-dark.png, explorer-graph-dark.png,
explorer-narrow.png (800 px, file browser closed).

Same machinery as tests/test_browser.py; skipped, with the reason, when Chromium or
Playwright is missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from browser_helpers import SHOTS, marks, run_all, write_notebook

pytestmark = marks()


_NB = [
    "import passlab\n\nbuild = passlab.build(passlab.models.mlp())",
    "passlab.Explorer(build, selected=build.trace.find('FuseOps').index)",
    "passlab.pass_table(build.trace)",
    "build.trace",
    "passlab.diff(build.trace.find('FuseOps'))",
    "passlab.fused_graph(build.trace.find('FuseTIR'), params='show')",
]

_ACTIVE_CELL = """() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')]
    .findIndex((c) => c.classList.contains('jp-mod-active'))"""

# Contrast of an element's text against what is painted behind it: walk up to the first
# opaque background, compositing translucent ones (and the text's own alpha and the
# opacity of its ancestors) on the way. Colours may come as rgb(), rgba() or color(srgb).
_CONTRAST = """(selectors) => {
  const parse = (c) => {
    let m = c.match(/^rgba?\\(([^)]+)\\)$/);
    if (m) {
      const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = c.match(/^color\\(srgb ([^)]+)\\)$/);
    if (m) {
      const p = m[1].split(/[ /]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    throw new Error("unparsed colour " + c);
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const measure = (el) => {
    const layers = [];
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      opacity *= Number(s.opacity);
      const bg = parse(s.backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] >= 1) break;
    }
    let bg = [255, 255, 255, 1];
    for (const l of layers.reverse()) bg = over(l, bg);
    const style = getComputedStyle(el);
    const fg = parse(el instanceof SVGElement ? style.fill : style.color);
    const text = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    const [a, b] = [lum(text), lum(bg)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
  const out = [];
  for (const [what, sel] of selectors) {
    const els = [...document.querySelectorAll(sel)].filter(
      (e) => e.checkVisibility() && e.textContent.trim()).slice(0, 12);
    out.push([what, sel, els.length,
              els.map((e) => [e.textContent.trim().slice(0, 30), Math.round(measure(e) * 100) / 100])]);
  }
  return out;
}"""

_EXPLORER_TEXT = [
    ("selected row", ".plx-row.selected .plx-label"),
    ("selected row number", ".plx-row.selected .plx-i"),
    ("selected row counts", ".plx-row.selected .plx-changes"),
    ("active tab", ".plx-tab.active"),
    ("other tabs", ".plx-tab:not(.active)"),
    ("change counts", ".plx-row:not(.selected).changed .plx-changes"),
    ("unchanged passes", ".plx-row.same .plx-label"),
    ("times", ".plx-row .plx-ms"),
    ("pass count", ".plx-count"),
    ("summary", ".plx-summary"),
    ("pane text", ".plx-explain-strip p, .plx-explain-strip summary, .plx-explain-strip div"),
    ("diff summary", ".plx-pane-diff summary"),
    ("diff text", ".plx-pane-diff td.pl-code"),
    ("diff line numbers", ".plx-pane-diff td.pl-ln, .plx-pane-diff td.pl-sign"),
    ("diff counts", ".plx-pane-diff .pl-count-add, .plx-pane-diff .pl-count-del"),
]
_HITS = [
    ("IR search hits", ".plx-pane-diff mark.plx-hit:not(.plx-hit-current), "
     ".plx-pane-diff mark.plx-hit:not(.plx-hit-current) span"),
    ("current hit", ".plx-pane-diff mark.plx-hit-current, .plx-pane-diff mark.plx-hit-current span"),
    ("IR search bar", ".plx-pane-diff .plx-ir-count, .plx-pane-diff .plx-ir-jump"),
    ("diff tokens", ".plx-pane-diff td.pl-code span[class^=tok-]:not(:has(mark))"),
]
_GRAPH = [
    ("graph tools", ".plx-graph-tools button, .plx-graph-tools label, .plx-graph-tools select"),
    ("graph hint", ".plx-graph-tools .plx-hint"),
    ("graph title", ".plx-graph-title"),
    ("change marks", ".plx-graph-marks, .plx-graph-marks .plx-mark"),
    ("overlay legend", ".plx-graph-legend, .plx-graph-legend span"),
    ("edge labels", ".plx-graph-view svg g.edge text"),
    ("kernel panel", ".plx-kernel-title, .plx-code-title, .plx-kernel-text, .plx-code-text"),
    ("kernel links", ".plx-kernel-links a"),
    ("kernel buffers", ".plx-kernel-buffers td, .plx-kernel-buffers th, .plx-kernel-buffers caption"),
]
_PANES = {
    "buffers": [
        ("buffer tables", ".plx-pane-buffers .passlab-table td, .plx-pane-buffers .passlab-table th"),
        ("buffer notes", ".plx-pane-buffers .passlab-note, .plx-pane-buffers .plx-peaks > summary"),
    ],
    "provenance": [
        ("provenance graph headings", ".plx-pane-provenance .passlab-prov-head"),
        ("provenance table", ".plx-pane-provenance .passlab-table td, "
         ".plx-pane-provenance .passlab-table th"),
    ],
    "compare": [
        ("compare tools", ".plx-compare-tools select, .plx-compare-tools button"),
        ("compare diff", ".plx-pane-compare td.pl-code, .plx-pane-compare td.pl-ln, "
         ".plx-pane-compare summary"),
        ("compare counts", ".plx-pane-compare .pl-count-add, .plx-pane-compare .pl-count-del"),
    ],
    "pipeline": [
        ("pipeline table", ".plx-pane-pipeline .passlab-table td, .plx-pane-pipeline .passlab-table th"),
    ],
}
_EDIT = [
    ("edit title", ".plx-edit-title"),
    ("pending list", ".plx-edit-pending li"),
    ("run button", ".plx-edit-run:not([disabled])"),
    ("pass rows", ".plx-edit-row .plx-edit-name, .plx-edit-row .plx-i, .plx-edit-note"),
    ("edited pass", ".plx-edit-row.pending .plx-edit-name, .plx-edit-row.off .plx-edit-name"),
    ("row buttons", ".plx-edit-row:not(.pending) .plx-edit-btn"),
    ("pending row buttons", ".plx-edit-row.pending .plx-edit-btn"),
    ("stages", ".plx-edit-stage > summary, .plx-edit-stage > summary small"),
    ("insert", ".plx-edit-insert b, .plx-edit-insert select, .plx-edit-insert .plx-edit-btn"),
]
_AB = [
    ("A/B head", ".plx-ab-head"),
    ("A/B table", ".plx-ab td, .plx-ab th"),
    ("run history", ".plx-edit-history td, .plx-edit-history caption, .plx-edit-history button"),
]
_OUTPUT_TEXT = [
    ("table cells", ".jp-RenderedHTMLCommon table.passlab-table td"),
    ("table headers", ".jp-RenderedHTMLCommon table.passlab-table th"),
    ("table notes", ".jp-RenderedHTMLCommon .passlab-note"),
    # passlab.diff(step) and fused_graph(...) as plain outputs
    ("plain diff text", ".jp-RenderedHTMLCommon .passlab-diff td.pl-code, "
     ".jp-RenderedHTMLCommon .passlab-diff summary, .jp-RenderedHTMLCommon .pl-summary"),
    ("plain diff line numbers", ".jp-RenderedHTMLCommon .passlab-diff td.pl-ln, "
     ".jp-RenderedHTMLCommon .passlab-diff td.pl-sign"),
    ("plain diff labels", ".jp-RenderedHTMLCommon .passlab-diff .pl-kind, "
     ".jp-RenderedHTMLCommon .passlab-diff .pl-status, .jp-RenderedHTMLCommon .passlab-diff tr.pl-hunk td"),
    ("plain diff counts", ".jp-RenderedHTMLCommon .passlab-diff .pl-count-add, "
     ".jp-RenderedHTMLCommon .passlab-diff .pl-count-del"),
    ("plain diff tokens", ".jp-RenderedHTMLCommon .passlab-diff td.pl-code span[class^=tok-]"),
    ("plain graph labels", ".jp-RenderedHTMLCommon .passlab-graph svg g.edge text"),
    ("plain graph zoom", ".jp-RenderedHTMLCommon .passlab-zoom > label"),
]
_REPORT_TEXT = [  # the Explorer's front end over the report's static model
    ("report rows", "#plx-root .plx-row span"),
    ("report selected row", "#plx-root .plx-row.selected span"),
    ("report header", ".pl-summary-line, .pl-meta"),
    ("report diff", "#plx-root .plx-pane-diff td.pl-code, #plx-root .plx-pane-diff td.pl-ln, "
     "#plx-root .plx-pane-diff summary"),
    ("report diff counts", "#plx-root .plx-pane-diff .pl-count-add, "
     "#plx-root .plx-pane-diff .pl-count-del"),
]


def _low(page, selectors, what: str) -> list:
    """Elements of ``selectors`` whose contrast is below 4.5, and selectors that matched
    no visible element (ratio 0: a pane that did not show what it should)."""
    found = page.evaluate(_CONTRAST, selectors)
    return [(f"{what}: {name}", "(no element)", 0) for name, _, n, _ in found if not n] + [
        (name, text, ratio) for name, _, _, items in found for text, ratio in items
        if ratio < 4.5]


def _settings_dark(lab) -> None:
    """JupyterLab reads user settings from disk on each request: the dark theme is set
    before the page loads. ``lab`` is the ``lab`` fixture (the run's server, its settings
    reset after each test) or the base folder a :func:`browser_helpers.jupyter_lab`
    server was started in."""
    if hasattr(lab, "set_theme"):
        lab.set_theme("JupyterLab Dark")
        return
    d = Path(lab) / "settings" / "@jupyterlab" / "apputils-extension"
    d.mkdir(parents=True, exist_ok=True)
    (d / "themes.jupyterlab-settings").write_text(json.dumps({"theme": "JupyterLab Dark"}))


def _open(widget, tab: str, expect) -> None:
    """Open ``tab`` and wait until the kernel has answered (the panes are not dimmed)."""
    widget.locator(f".plx-tab[data-tab={tab}]").click()
    expect(widget.locator(f".plx-tab[data-tab={tab}]")).to_have_attribute("aria-selected", "true")
    expect(widget.locator(".plx-panes.plx-busy")).to_have_count(0)


def _select(page, widget, name: str, expect) -> None:
    """Select the pass ``name`` in the Explorer's list."""
    label = page.locator(".plx-label", has_text=re.compile(rf"^{re.escape(name)}$"))
    widget.locator(".plx-row", has=label).click()
    expect(widget.locator(".plx-row.selected .plx-label")).to_have_text(name)


def _pick(select, name: str, expect) -> None:
    """Choose the step called ``name`` in a "#i name" select."""
    expect(select.locator("option")).not_to_have_count(0)
    texts = select.evaluate("(s) => [...s.options].map((o) => [o.value, o.text])")
    value = next((v for v, t in texts if re.fullmatch(rf"#\d+ {re.escape(name)}", t)), None)
    assert value is not None, (name, texts)
    select.select_option(value=value)


def _panes_low(page, widget, expect, shot: str | None = None) -> list:
    """Every pane at FuseOps with what it can show (IR search hits, a picked kernel and
    the bytes overlay, two passes compared, a pending edit, then its A/B table): the
    text under 4.5:1. FoldConstant's toggle is clicked and Run: disabled, then enabled."""
    _select(page, widget, "FuseOps", expect)
    _open(widget, "diff", expect)
    pane = widget.locator(".plx-pane-diff")
    expect(pane).to_contain_text("FuseOps: ")
    pane.locator(".plx-ir-search").fill("R.call_tir")
    expect(pane.locator("mark.plx-hit-current")).to_have_count(1)
    low = _low(page, _EXPLORER_TEXT + _HITS, "diff")

    _select(page, widget, "FuseTIR", expect)  # a kernel's TIR, and marks against FuseOps
    _open(widget, "graph", expect)
    view = widget.locator(".plx-graph-view")
    view.locator("g.node", has=page.locator("title", has_text=re.compile(r"^lv$"))).click()
    expect(widget.locator(".plx-kernel-title")).to_contain_text("fused_matmul_add_relu")
    expect(widget.locator(".plx-kernel-links")).to_contain_text("created by")
    overlay = widget.locator(".plx-graph-overlay")
    if overlay.input_value() != "bytes":
        overlay.select_option("bytes")
    expect(widget.locator(".plx-graph-legend")).to_contain_text("colour by bytes")
    expect(widget.locator(".plx-panes.plx-busy")).to_have_count(0)
    low += _low(page, _GRAPH, "graph")
    if shot:
        widget.scroll_into_view_if_needed()
        widget.screenshot(path=str(SHOTS / shot))

    for tab, selectors in _PANES.items():
        _open(widget, tab, expect)
        if tab == "compare":
            a, b = widget.locator(".plx-compare-a"), widget.locator(".plx-compare-b")
            _pick(a, "FuseOps", expect)  # in the trace an edit re-ran too
            _pick(b, "FuseTIR", expect)
            expect(widget.locator(".plx-pane-compare")).to_contain_text("From the input of #")
            expect(widget.locator(".plx-panes.plx-busy")).to_have_count(0)
        low += _low(page, selectors, tab)

    _open(widget, "edit", expect)
    pane = widget.locator(".plx-pane-edit")
    row = pane.locator(".plx-edit-row", has=page.locator(
        ".plx-edit-name", has_text=re.compile(r"^FoldConstant$")))
    row.locator("[data-edit=disable], [data-edit=enable]").click()
    expect(pane.locator(".plx-edit-pending li")).to_have_count(1)
    low += _low(page, _EDIT, "edit")
    pane.locator(".plx-edit-run").click()
    expect(pane.locator(".plx-edit-pending li")).to_have_count(0)
    expect(pane.locator(".plx-ab table")).to_be_visible()
    expect(widget.locator(".plx-panes.plx-busy")).to_have_count(0)
    low += _low(page, _AB, "edit after Run")
    return low


def test_dark_theme_narrow_width_and_keys(tmp_path, lab, page, mlp_build, expect):
    trace = mlp_build.trace
    report = trace.write_report(tmp_path / "report.html")
    path = write_notebook(lab.root / "theme.ipynb", _NB)
    _settings_dark(lab)
    page.goto(lab.notebook_url(path.name))
    expect(page.locator('body[data-jp-theme-light="false"]')).to_have_count(1)
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    run_all(page, expect)
    widget = page.locator(".jp-OutputArea-output .plx")
    expect(widget.locator(".plx-pane-diff")).to_contain_text("FuseOps")
    expect(widget.locator(".plx-row.selected .plx-label")).to_have_text("FuseOps")
    expect(page.locator(".jp-RenderedHTMLCommon table.passlab-table")).to_have_count(2)
    expect(page.locator(".jp-RenderedHTMLCommon .passlab-graph svg")).to_have_count(1)
    expect(page.locator(".jp-InputArea-prompt", has_text="[6]:")).to_have_count(1)

    # ---- contrast in JupyterLab Dark: the list, the diff pane and plain outputs
    widget.scroll_into_view_if_needed()
    # (each theme's findings are collected and asserted together at the end)
    dark = _low(page, _EXPLORER_TEXT, "explorer") + _low(page, _OUTPUT_TEXT, "outputs")
    # pass names left-aligned, numbers right-aligned, in JupyterLab's output CSS too
    aligns = page.evaluate("""() => {
      const t = document.querySelector('.jp-RenderedHTMLCommon table.passlab-table');
      const row = t.querySelector('tbody tr');
      return [...row.children].map((td) => getComputedStyle(td).textAlign);
    }""")
    assert aligns[:3] == ["right", "left", "left"], aligns  # #, pass, stage
    # the plain fused_graph output is no white box: its page is transparent
    plain_page = page.locator(".jp-RenderedHTMLCommon .passlab-graph svg g.graph > polygon")
    assert plain_page.first.evaluate("(p) => getComputedStyle(p).fill") in (
        "transparent", "rgba(0, 0, 0, 0)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "explorer-dark.png"))

    # ---- keys: ArrowRight on a focused tab opens the next one; focus stays
    widget.locator(".plx-tab[data-tab=diff]").click()
    active_cell = page.evaluate(_ACTIVE_CELL)
    widget.locator(".plx-tab[data-tab=diff]").press("ArrowRight")
    graph_tab = widget.locator(".plx-tab[data-tab=graph]")
    expect(graph_tab).to_have_attribute("aria-selected", "true")
    expect(graph_tab).to_be_focused()
    expect(graph_tab).to_have_attribute("tabindex", "0")
    expect(widget.locator(".plx-tab[data-tab=diff]")).to_have_attribute("tabindex", "-1")
    expect(widget.locator(".plx-graph-view svg")).to_have_count(1)
    # the graph has no white page in the dark theme
    page_fill = widget.locator(".plx-graph-view svg g.graph > polygon").first.evaluate(
        "(p) => getComputedStyle(p).fill")
    assert page_fill in ("transparent", "rgba(0, 0, 0, 0)"), page_fill
    # j and k are JupyterLab's "select cell below/above": inside the widget they are not
    graph_tab.press("j")
    graph_tab.press("k")
    graph_tab.press("ArrowLeft")
    expect(widget.locator(".plx-tab[data-tab=diff]")).to_have_attribute("aria-selected", "true")
    assert page.evaluate("() => !!document.activeElement.closest('.plx')")
    assert page.evaluate(_ACTIVE_CELL) == active_cell

    # ---- 1000 px with the file browser open: names keep their room
    page.set_viewport_size({"width": 1000, "height": 1000})
    browser = page.locator('.jp-SideBar [data-id="filebrowser"]')
    if not page.locator("#filebrowser").is_visible():
        browser.click()
    expect(page.locator("#filebrowser")).to_be_visible()
    widths = page.evaluate("""() => [...document.querySelectorAll('.plx .plx-row .plx-label')]
        .slice(0, 20).map((l) => l.getBoundingClientRect().width)""")
    assert min(widths) >= 70, widths  # 7em of 12px text: "FuseOps", "LegalizeOps" whole
    # the row's tooltip: the whole name, then its number, step, stage and changes in words
    expect(widget.locator(".plx-row", has_text="FuseOps").first).to_have_attribute(
        "title", re.compile(r"^FuseOps\n#5 in the pipeline; step 10 of the trace\n"))

    # ---- 800 px, file browser closed: the list stacks above the panes, nothing
    # overflows sideways
    browser.click()
    expect(page.locator("#filebrowser")).to_be_hidden()
    page.set_viewport_size({"width": 800, "height": 1000})
    expect(widget).to_have_class(re.compile(r"\bplx-narrow\b"))
    box = page.evaluate("""() => {
      const r = (s) => document.querySelector(s).getBoundingClientRect();
      const root = document.querySelector('.plx');
      const out = root.closest('.jp-OutputArea-output');
      return { list: r('.plx .plx-list'), right: r('.plx .plx-right'),
               rootOver: root.scrollWidth - root.clientWidth,
               outOver: out.scrollWidth - out.clientWidth };
    }""")
    assert box["list"]["bottom"] <= box["right"]["top"] + 1, box
    assert abs(box["list"]["left"] - box["right"]["left"]) < 2, box
    assert box["rootOver"] <= 1 and box["outOver"] <= 1, box
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(SHOTS / "explorer-narrow.png"))

    # ---- every pane in JupyterLab Dark (the Edit pane's Run replaces the trace)
    page.set_viewport_size({"width": 1400, "height": 1100})
    dark += _panes_low(page, widget, expect, shot="explorer-graph-dark.png")

    # ---- the same text in JupyterLab Light (Settings > Theme)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Theme$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^JupyterLab Light$")).click()
    expect(page.locator('body[data-jp-theme-light="true"]')).to_have_count(1)
    page.wait_for_timeout(500)  # the theme's stylesheet replaces the dark one
    light = _low(page, _OUTPUT_TEXT, "outputs") + _panes_low(page, widget, expect)
    assert not page.errors, page.errors

    # ---- the static report in a dark colour scheme
    page.emulate_media(color_scheme="dark")
    page.goto(Path(report).as_uri())
    page.locator("#plx-root .plx-row", has_text="FuseOps").first.click()
    expect(page.locator("#plx-root .plx-pane-diff")).to_contain_text("FuseOps")
    report_low = _low(page, _REPORT_TEXT, "report")
    assert not page.errors, page.errors
    low = {"JupyterLab Dark": dark, "JupyterLab Light": light, "report, dark": report_low}
    assert not any(low.values()), f"text under 4.5:1: {low}"


