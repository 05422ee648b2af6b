"""The Explorer's fused-graph pane on real models: parameter modes, change marks against
the previous pass, the bytes overlay, kernel links (diff, blame, buffers), the picked
kernel kept across steps, and zoomable plain notebook outputs."""

from __future__ import annotations

import dataclasses
import html
import re

import pytest

import passlab

pytest.importorskip("anywidget", reason="the Explorer needs the 'notebook' extra")

from passlab.analysis.graph import fused_graph, graph_changes  # noqa: E402
from passlab.views.explorer import Explorer  # noqa: E402
from passlab.views.explorer_panes import PaneRenderer  # noqa: E402


@pytest.fixture(scope="module")
def trace(mlp_build):
    return mlp_build.trace


@pytest.fixture()
def ex(trace):
    return Explorer(trace, tab="graph", selected=trace.find("FuseTIR").index)


def titles(page: str) -> list[str]:
    """Node ids of the SVG, in drawing order."""
    return re.findall(r'<g id="node\d+" class="node[^"]*">\s*<title>([^<]*)</title>', page)


def classes(page: str) -> dict[str, str]:
    return {t: c for c, t in re.findall(
        r'<g id="node\d+" class="node ?([^"]*)">\s*<title>([^<]*)</title>', page)}


def test_params_modes_re_render_the_graph(ex):
    assert titles(ex.graph_html) == ["x", "lv", "gv", "output"]
    assert "4 parameters and 2 calls that only transform parameters folded" in ex.graph_html
    ex.graph_params = "show"
    assert titles(ex.graph_html) == ["x", "lv", "fc1.weight", "permute_dims", "fc1.bias", "gv",
                                     "fc2.weight", "permute_dims1", "fc2.bias", "output"]
    ex.graph_params = "hide"
    assert titles(ex.graph_html) == ["x", "lv", "gv", "output"]
    assert "folded into their consumers" not in ex.graph_html
    ex.tab = "diff"
    ex.graph_params = "show"  # not on the graph tab: stale, redrawn when it opens
    assert ex.graph_html == ""
    ex.tab = "graph"
    assert "permute_dims1" in titles(ex.graph_html)


def test_change_marks_against_the_previous_pass(ex, trace):
    ex.selected = trace.find("FuseOps").index
    page = ex.graph_html
    assert classes(page) == {"x": "", "lv": "plx-new", "lv1": "plx-new", "output": ""}
    assert ("Against #4 FoldConstant: " in page and "</span> 2; " in page
            and '<details class="plx-removed"><summary><span class="plx-mark plx-mark-removed">'
                'removed</span> (5)</summary><div class="plx-removed-list">matmul, add, relu, '
                'matmul1, add1</div></details></div>' in page)
    assert "<details class=\"plx-removed\" open" not in page  # closed: one line above the graph
    # FuseTIR renames lv1 to gv (matched by kernel name) and rewrites both kernels as TIR
    ex.selected = trace.find("FuseTIR").index
    assert classes(ex.graph_html) == {"x": "", "lv": "plx-rewritten", "gv": "plx-rewritten",
                                      "output": ""}
    assert "removed</span> (0)</div>" in ex.graph_html  # nothing to open: no disclosure
    ex.selected = trace.find("RewriteDataflowReshape").index  # changed nothing
    assert set(classes(ex.graph_html).values()) == {""}
    # LegalizeOps turns each operator into a kernel call of the same id
    ex.selected = trace.find("LegalizeOps").index
    assert classes(ex.graph_html)["matmul"] == "plx-rewritten"


def test_changes_matches_renamed_calls(trace):
    before = fused_graph(trace.find("FuseOps"))
    after = fused_graph(trace.find("FuseTIR"))
    assert graph_changes(before, after) == ({}, [])
    assert graph_changes(after, before) == ({}, [])
    legal = fused_graph(trace.find("FoldConstant"))
    marks, removed = graph_changes(legal, before)
    assert marks == {"lv": "new", "lv1": "new"}
    assert removed == ["matmul", "add", "relu", "matmul1", "add1"]


def test_bytes_overlay_colours_edges_and_kernels(ex):
    ex.graph_overlay = "bytes"
    page = ex.graph_html
    # three tensors (128 B .. 512 B) and lv's 2.9 KiB in+out (x, both fc1 params, lv)
    assert page.count('class="edge plx-ov"') == 3
    assert re.search(r'<span class="plx-legend-min">128 B</span>.*'
                     r'<span class="plx-legend-max">2.9 KiB</span> kernels', page)
    assert 'stroke="#1f9e89"' not in page  # the largest is a kernel, not an edge
    assert 'fill="#fde725"' in page  # lv, the largest: viridis' yellow end, under black text
    assert 'stroke="#31688e"' in page  # gv's 128 B output: the edge ramp's start
    ex.graph_overlay = "none"
    assert "plx-ov" not in ex.graph_html and "plx-graph-legend" not in ex.graph_html


def test_overlay_palette_is_viridis_and_every_fill_carries_readable_text():
    from passlab.analysis import _graph_render as R

    assert (R.FILL_RAMP[0], R.FILL_RAMP[-1]) == ("#440154", "#fde725")
    # lightness rises monotonically along the ramp (a sequential palette)
    lum = [R.contrast(c, "#000000") for c in R.FILL_RAMP]
    assert lum == sorted(lum)
    # the label colour on any fill of the ramp reads at 4.5:1 or better
    worst = min(R.contrast(f, R.text_on(f)) for f in
                (R._ramp(R.FILL_RAMP, i / 100) for i in range(101)))
    assert worst >= 4.5
    assert (R.text_on("#440154"), R.text_on("#fde725")) == ("#ffffff", "#000000")
    # edges keep 3:1 on the light (#ffffff) and the dark (#111111) page
    for c in R.EDGE_RAMP:
        assert R.contrast(c, "#ffffff") >= 3 and R.contrast(c, "#111111") >= 3


def test_flops_overlay_colours_kernels_by_tvms_estimate(ex, trace):
    from passlab._tvm import tir

    after = trace.find("FuseTIR").after
    mm = tir.flops(after["fused_matmul_add_relu"])
    mm1 = tir.flops(after["fused_matmul1_add1"])
    assert mm == 4 * 32 * (2 * 16 + 2)  # x @ W (mul+add per term), + bias, relu
    assert mm1 is not None and mm1 < mm and tir.flops(after["transpose"]) is None
    ex.graph_overlay = "flops"
    page = ex.graph_html
    assert re.search(r'<span class="plx-legend-min">2.08 K</span>.*'
                     r'<span class="plx-legend-max">4.35 K</span> kernels', page)
    assert "plx-ov" not in page  # edges keep their colour
    assert 'fill="#fde725"' in page and 'fill="#440154"' in page  # viridis' two ends
    # before FuseTIR: a fused Relax function counts the kernels it calls
    ex.selected = trace.find("FuseOps").index
    assert '<span class="plx-legend-max">4.35 K</span>' in ex.graph_html
    # before LegalizeOps the calls are operators: nothing to colour, and it says why
    ex.selected = trace.find("DispatchSampling").index
    assert "colour by FLOPs: no kernel here has an estimate (before LegalizeOps" in ex.graph_html
    ex.graph_overlay = "none"
    # the graph itself colours by FLOPs too: the same ramp, from the module it was drawn from
    g = passlab.fused_graph(trace.find("FuseTIR"))
    dot = g.to_dot("flops")
    assert 'fillcolor="#fde725"' in dot and 'fillcolor="#440154"' in dot
    with pytest.raises(ValueError, match="overlay='flops' needs the FLOPs of each kernel"):
        dataclasses.replace(g, module=None).to_dot("flops")  # a graph made by hand


def test_kernel_links_diff_blame_buffers(ex, trace):
    ex.node = "lv"
    links = ex.kernel_html
    # named by pipeline position (as the pass list and Edit), the step index in a tooltip
    assert ('created by <a class="plx-step-link" href="#" data-step="10" title="step 10 of the '
            'trace">#5 FuseOps</a>; rewritten by <a class="plx-step-link" href="#" '
            'data-step="11" title="step 11 of the trace">#6 FuseTIR</a>' in links)
    assert '<details class="plx-kernel-diff" open><summary>changed by #6 FuseTIR' in links
    # the kernel's TIR, highlighted: the same text inside tok-* spans
    assert 'class="tok-' in ex.kernel_text_html
    assert html.unescape(re.sub(r"<[^>]+>", "", ex.kernel_text_html)) == ex.kernel_text
    # provenance: the operator calls of the input it holds
    assert ("holds 3 operator calls of the input: matmul (matmul), add (add), relu (nn.relu)"
            in links)
    assert "+@T.prim_func" in re.sub(r"<[^>]+>", "", links).replace("\n", "")
    rows = re.findall(r'<tr class="(reads|writes)"><td>[^<]*</td><td>([^<]*)</td>'
                      r'(?:<td[^>]*>[^<]*</td>){3}<td[^>]*>([^<]*)</td>', links)
    assert rows == [("reads", "permute_dims", "2.0\u00a0KiB".replace("\u00a0", " ")),
                    ("writes", "lv", "512 B")] or [r[:2] for r in rows] == [
        ("reads", "permute_dims"), ("writes", "lv")]
    # a step that did not change the kernel: history, no diff
    ex.selected = trace.find("RewriteDataflowReshape").index
    assert ex.node == "lv"  # kept: the new graph has a node lv
    assert ex.kernel_title == "TIR of fused_matmul_add_relu (after #7 RewriteDataflowReshape)"
    assert "plx-kernel-diff" not in ex.kernel_html and "created by" in ex.kernel_html
    ex.node = "x"
    assert ex.kernel_html == ""


def test_picked_kernel_survives_steps_and_modes(ex, trace):
    ex.node = "gv"
    ex.selected = trace.find("ToNonDataflow").index
    assert (ex.node, ex.kernel_title) == (
        "gv", "TIR of fused_matmul1_add1 (after #8 ToNonDataflow)")
    ex.graph_params = "show"
    assert ex.node == "gv"
    ex.selected = trace.find("FuseOps").index  # no gv there (it is lv1): cleared
    assert (ex.node, ex.kernel_title, ex.kernel_html) == ("", "", "")


def test_picked_kernel_panel_waits_for_the_graph_pane(ex, trace):
    ex.node = "gv"
    ex.tab = "diff"  # stepping through diffs does not redraw the kernel panel ...
    ex.selected = trace.find("ToNonDataflow").index
    assert ex.node == "gv" and "after #6 FuseTIR" in ex.kernel_title
    ex.tab = "graph"  # ... until the graph pane opens
    assert ex.kernel_title == "TIR of fused_matmul1_add1 (after #8 ToNonDataflow)"
    ex.tab = "diff"
    ex.selected = trace.find("FuseOps").index  # no gv there: cleared when drawn
    ex.render_all()
    assert (ex.node, ex.kernel_title, ex.kernel_html) == ("", "", "")


def test_resnet_fuse_tir_graph_has_no_weights(resnet_build):
    panes = PaneRenderer(resnet_build.trace)
    step = resnet_build.trace.find("FuseTIR")
    g = panes.graph(step.index)
    assert {n.kind for n in g.nodes} <= {"input", "kernel", "fused", "output"}
    assert not any("weight" in n.id for n in g.nodes)
    page = panes.pane("graph", step.index)
    assert len(titles(page)) == len(g.nodes) == 42
    shown = panes.graph(step.index, "show")
    assert sum(n.kind == "weight" for n in shown.nodes) > 20


def test_plain_output_zooms_without_javascript(trace):
    page = fused_graph(trace.find("FuseTIR")).to_html()
    assert "<script" not in page
    key = re.search(r'<div class="passlab-zoom (passlab-z[0-9a-f]{10})">', page).group(1)
    radios = re.findall(rf'<input type="radio" name="{key}" id="{key}-(\w+)"', page)
    assert radios == ["fit", "50", "100", "200"]
    assert f'id="{key}-fit" class="passlab-z-fit" checked>' in page
    w, h = map(float, re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', page).groups())
    assert f"width: {2 * w:.1f}pt; height: {2 * h:.1f}pt;" in page
    # (a declared scroller: zoomed in, the picture scrolls in its own box)
    assert '<div class="passlab-zoom-box" data-plx-scroll><svg' in page
    assert fused_graph(trace.find("FuseTIR")).to_html() != page  # a new group per output
