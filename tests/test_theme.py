"""Plain outputs that read (issue #13, part 4): names left-aligned and numbers
right-aligned in text and HTML tables, one unit for sizes, one label per step, user passes
that changed nothing still listed; a filter that hides the selected pass selects the first
one it shows."""

from __future__ import annotations

import re

import pytest

import passlab
from passlab import _render
from passlab.analysis.graph import fused_graph


@pytest.fixture(scope="module")
def trace(mlp_build):
    return mlp_build.trace


@pytest.fixture(scope="module")
def noop_build():
    """mlp with a user pass that returns the module unchanged."""
    pipe = passlab.Pipeline.default("llvm").insert(lambda mod: mod, after="legalize",
                                                   name="my_noop")
    return passlab.build(passlab.models.mlp(), pipe)


def test_columns_align_by_content_not_by_cell():
    header = ["#", "pass", "ms", "peak"]
    rows = [["7", "LegalizeOps", "6.02", "2.5 KiB"], ["91", "1e3", "0.10", ">=1.0 MiB"],
            ["92", "tirx.Filter#1", "", "-"]]
    assert _render.text_table(header, rows).splitlines() == [
        " #  pass             ms       peak",
        "--  -------------  ----  ---------",
        " 7  LegalizeOps    6.02    2.5 KiB",
        "91  1e3            0.10  >=1.0 MiB",
        "92  tirx.Filter#1                -"]
    html = _render.html_table(header, rows)
    # a name that looks like a number stays a left-aligned name: one rule per column
    assert ('<tr class=""><td class="num">91</td><td>1e3</td><td class="num">0.10</td>'
            '<td class="num">&gt;=1.0 MiB</td></tr>') in html
    assert '<th class="num">#</th><th>pass</th><th class="num">ms</th>' in html
    # beats JupyterLab's `:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td
    # { text-align: right }` (specificity 0,2,1) with (0,2,2)
    assert "table.passlab-table :is(th, td):not(.num) { text-align: left; }" in html


def test_pass_table_lists_a_user_pass_that_changed_nothing(noop_build):
    table = passlab.pass_table(noop_build.trace)
    text = table.to_text()
    row = next(line for line in text.splitlines() if "my_noop" in line)
    assert re.match(r"^ *\d+  my_noop +legalize +[\d.]+  no change ", row)
    assert "FoldConstant" not in text  # library passes that changed nothing stay hidden
    assert "library passes that changed nothing hidden: to_text(changed_only=False)" in text
    assert '<tr class="user"><td class="num">' in table.to_html()
    assert "<td>my_noop</td>" in table.to_html()


def test_one_label_per_step_in_every_table(trace):
    again = [s for s in trace if s.kind == "pass" and s.occurrence > 0]
    assert "tirx.Filter#1" in [s.label for s in again]
    table = passlab.pass_table(trace)
    for step in again:
        row = next(r for r in table if r["index"] == step.index)
        assert row["label"] == step.label and row["name"] == step.name
        line = next(x for x in table.to_text(changed_only=False).splitlines()
                    if x.split()[:1] == [str(step.index)])
        assert line.split()[1] == step.label
        assert trace.to_text().count(f"{step.index}  {step.label}") == 1
    assert "label" in table.to_dataframe().columns
    assert trace.find("tirx.Filter#1").label == "tirx.Filter#1"


def test_sizes_in_binary_units_everywhere(trace):
    step = trace.find("FuseTIR")
    graph = fused_graph(step, params="show")
    text = graph.to_text()
    sizes = re.findall(r"float32, (.+)$", text, re.M)
    assert sizes and all(re.fullmatch(r"\d+ B|\d+\.\d (KiB|MiB)", s) for s in sizes)
    assert not re.search(r"\b\d{4,} B\b", text)  # no raw byte counts past 1 KiB
    # the edge into the first kernel, the buffers table and the pass table agree
    assert "permute_dims: 16x32 float32, 2.0 KiB" in text
    assert re.search(r"^permute_dims +intermediate +16x32 +float32 +2\.0 KiB",
                     passlab.buffers(step).to_text(), re.M)
    assert "2.5 KiB" in passlab.pass_table(trace).to_text()


def test_filter_that_hides_the_selected_pass_selects_the_first_shown(trace):
    pytest.importorskip("anywidget")
    from passlab.views.explorer import Explorer

    ex = Explorer(trace, selected=trace.find("FoldConstant").index)
    ex.set_state({"changed_only": True})
    assert trace[ex.selected].changed
    assert ex.selected == ex.visible[0] == trace.find("LegalizeOps").index
    assert "LegalizeOps" in ex.diff_html  # the pane follows the new selection
    kept = trace.find("FuseTIR").index
    ex.set_state({"selected": kept})
    ex.set_state({"search": "fuse"})
    assert ex.selected == kept  # still shown: the selection stays
    ex.set_state({"search": "no such pass"})
    assert ex.visible == [] and ex.selected == kept  # nothing to select instead
    ex.set_state({"search": "", "stage": "finalize"})
    assert trace[ex.selected].stage == "finalize" and ex.selected == ex.visible[0]


def test_plain_outputs_take_the_theme(trace):
    """passlab.diff and fused_graph in a notebook without the Explorer: counts and dimmed
    text from JupyterLab's variables (no opacity, no fixed green); Graphviz's white page
    made transparent. The browser test measures the contrast."""
    diff_html = passlab.diff(trace.find("FuseOps")).to_html()
    css = diff_html[diff_html.index("<style>"):diff_html.index("</style>")]
    assert "opacity" not in css and "#2da44e;" not in css
    assert re.search(r"\.pl-count-add \{ color: color-mix\(in srgb, var\(--jp-success-color1", css)
    graph_html = fused_graph(trace.find("FuseTIR")).to_html()
    if "<svg" in graph_html:
        assert 'polygon[fill="white"]' in graph_html and "fill: transparent" in graph_html
        assert "var(--jp-content-font-color1, currentColor)" in graph_html

