"""The provenance views: the input graph beside the fused graph, linked op <-> kernel by
data-* attributes, in the Explorer's pane and in the static report."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

import passlab
from passlab.analysis._provenance_view import fused_step, provenance_view
from passlab.views.explorer_panes import PaneRenderer
from passlab.views.report import render_report

tvm = pytest.importorskip("tvm")
from tvm import relax  # noqa: E402

_NEEDS_DOT = pytest.mark.skipif(shutil.which("dot") is None,
                                reason="Graphviz 'dot' is not installed")


@pytest.fixture(scope="module")
def trace():
    return passlab.build(passlab.models.mlp()).trace


def _tags(markup: str, attr: str) -> list[dict[str, str]]:
    """The attributes of every element that has ``attr``, unescaped."""
    out = []
    for tag in re.findall(r"<(?:g|tr) [^>]*" + attr + r'="[^>]*>', markup):
        out.append({k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', tag)})
    return out


@_NEEDS_DOT
def test_pane_after_fusetir_links_every_kernel_node_to_its_ops(trace):
    prov = passlab.provenance(trace)
    fuse = trace.find("FuseTIR")
    pane = PaneRenderer(trace).pane("provenance", fuse.index)
    assert pane.count("<svg") == 2
    assert 'class="passlab-prov-side passlab-prov-input"' in pane
    assert "Fused graph after #6 FuseTIR" in pane  # its pipeline position, as every pane
    kernels = [t for t in _tags(pane, "data-kernel") if t.get("class", "").startswith("node")]
    fused = passlab.fused_graph(fuse)
    calls = [n for n in fused.nodes if n.kind not in ("input", "output", "weight", "constant")]
    assert [(t["data-node"], t["data-kernel"]) for t in kernels] == [
        (n.id, n.label) for n in calls] == [("lv", "fused_matmul_add_relu"),
                                            ("gv", "fused_matmul1_add1")]
    for t in kernels:
        assert tuple(json.loads(t["data-ops"])) == prov.ops_of(t["data-kernel"])
    # the input graph's operators (weight transposes folded away) link to their kernels
    ops = {t["data-op"]: json.loads(t["data-kernels"]) for t in _tags(pane, "data-op")
           if t.get("class", "").startswith("node")}
    assert ops == {o: list(prov.kernels_of(o)) for o in
                   ("matmul", "add", "relu", "matmul1", "add1")}
    # the op table below: one row per operator call, with the same links
    rows = [t for t in _tags(pane, "data-op") if "class" in t and t["class"] == "kernel"]
    assert [r["data-op"] for r in rows] == [o.op for o in prov]
    assert json.loads(rows[0]["data-kernels"]) == ["transpose"]


def test_a_pass_before_fusion_shows_the_graph_after_fusetir(trace):
    fuse = trace.find("FuseTIR")
    early = trace.find("LegalizeOps")
    assert fused_step(trace, early) == (
        fuse, "#2 LegalizeOps runs before fusion: the fused graph is the one "
              "after #6 FuseTIR")  # pipeline positions, as every pane numbers passes
    panes = PaneRenderer(trace)
    pane = panes.pane("provenance", early.index)
    assert "runs before fusion" in pane
    assert pane.endswith(panes.pane("provenance", fuse.index))
    # the TIR stage has no Relax module: the last Relax pass stands in
    last = list(trace)[-1]
    step, note = fused_step(trace, last)
    assert step.level == "relax" and step.index < last.index and "no Relax module" in note


def test_kernels_are_those_of_the_step_drawn():
    # reshape is a TIR kernel after FuseTIR and a runtime builtin only later: the graph
    # after FuseTIR still links it
    t = passlab.build(passlab.models.resnet()).trace
    prov = passlab.provenance(t)
    assert prov.kernels_of("reshape") == ("vm.builtin.reshape",)
    view = provenance_view(t, prov=prov)
    links = view.links()
    assert links["reshape"] == ("reshape", ("reshape",))
    fused = [n for n in view.fused_graph.nodes if n.kind not in ("input", "output")]
    assert set(links) == {n.id for n in fused}
    for kernel, ops in links.values():
        if kernel != "reshape":
            assert ops == prov.ops_of(kernel)
    assert view.to_text().splitlines()[0] == (
        "input graph of forward (70 operator calls) -> fused graph after #6 FuseTIR")


def _hostile_trace():
    x = relax.Var('x"<b>&\\', relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x), name_hint="y</td><script>alert(1)</script>")
            out = bb.emit_output(relax.op.nn.relu(y), name_hint='o"ut\nnext')
        bb.emit_func_output(out)
    return passlab.build(bb.get()).trace


@pytest.mark.parametrize("layout", [True, False], ids=["svg", "table"])
def test_hostile_names_are_escaped_and_still_linked(layout, monkeypatch):
    t = _hostile_trace()
    if not layout:
        monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    elif shutil.which("dot") is None:
        pytest.skip("Graphviz 'dot' is not installed")
    pane = PaneRenderer(t).pane("provenance", t.find("FuseTIR").index)
    assert "<script>" not in pane and "y&lt;/td&gt;&lt;script&gt;" in pane
    kernel = _tags(pane, "data-kernel")
    assert [json.loads(k["data-ops"]) for k in kernel] == [
        ["y</td><script>alert(1)</script>", 'o"ut\nnext']]
    ops = {t["data-op"] for t in _tags(pane, "data-op") if "passlab-prov" in t.get("class", "")
           or t.get("class") in ("op", "node passlab-prov-linked")}
    assert {"y</td><script>alert(1)</script>", 'o"ut\nnext'} <= ops


def test_report_has_the_provenance_pane(trace):
    from passlab.views._report_state import read_report

    _, kept = read_report(render_report(trace))
    markup = kept["provenance:default"]  # the Explorer's pane, drawn once
    assert markup == PaneRenderer(trace).pane("provenance", trace.find("FuseTIR").index)
    assert 'data-kernel="fused_matmul_add_relu"' in markup
    assert 'class="passlab-prov-box plx-prov-box"' in markup or "plx-prov-box" in markup
    # each kernel's panel names the input's operators it holds
    panel = json.loads(kept[f"kernels:{trace.find('FuseTIR').index}:collapse"])
    [links] = [v[2] for v in panel.values() if "fused_matmul_add_relu" in v[0]]
    assert "holds 3 operator calls of the input: matmul (matmul), add (add), relu (nn.relu)" in links


def test_explorer_registers_the_pane_and_renders_it(trace):
    from passlab.views.explorer import Explorer

    ex = Explorer(trace, tab="provenance", selected=trace.find("FuseTIR").index)
    assert 'class="passlab-prov"' in ex.provenance_html
    assert "provenance: provenancePane" in Explorer._esm  # main.js: tab -> pane factory
    assert ".plx-pane-provenance" in Explorer._css


def _named_cnn_with_weights_as_inputs():
    """tests/test_importers.py's CNN as torch.onnx.export writes it: weights as graph
    inputs, nodes named by module path."""
    from test_importers import onnx_cnn, weights_as_inputs

    model = weights_as_inputs(onnx_cnn())
    for node, name in zip(model.graph.node, CNN_NAMES):
        node.name = name
    return model


CNN_NAMES = ("/features/conv1/Conv", "/features/bn1/BatchNormalization", "/features/relu1/Relu",
             "/features/pool/MaxPool", "/features/conv2/Conv", "/features/relu2/Relu",
             "/head/gap/GlobalAveragePool", "/head/flatten/Flatten", "/head/fc/Gemm")


@pytest.fixture(scope="module")
def cnn_trace():
    pytest.importorskip("onnx")
    return passlab.build(passlab.load(_named_cnn_with_weights_as_inputs(),
                                      input=(1, 3, 32, 32))).trace


@_NEEDS_DOT
def test_the_op_table_comes_first_searchable_with_the_source_names(cnn_trace):
    view = provenance_view(cnn_trace)
    header, rows = view.table()
    assert header == ["op", "source", "operator", "kernels", "fate", "note"]
    # every ONNX node name is in the source column, in program order, beside its ops
    assert len(rows) == 15 and list(dict.fromkeys(r[1] for r in rows)) == list(CNN_NAMES)
    assert [r[:4] for r in rows[:4]] == [
        ["lv", "/features/conv1/Conv", "nn.conv2d", "fused_conv2d_add"],
        ["lv1", "/features/conv1/Conv", "reshape", "vm.builtin.reshape"],
        ["lv2", "/features/conv1/Conv", "add", "fused_conv2d_add"],
        ["lv3", "/features/bn1/BatchNormalization", "nn.batch_norm", "fused_batch_norm_relu"]]
    page = view.to_html()
    # the table, its search box first, before the pictures
    table = page.index('<div class="passlab-prov-table"><input type="search" '
                       'class="passlab-prov-search"')
    assert table < page.index('<div class="passlab-prov-graphs">')
    assert '<th>op</th><th>source</th><th>operator</th>' in page
    search = [t["data-search"] for t in _tags(page, "data-search")]
    assert search[0] == "lv nn.conv2d fused_conv2d_add /features/conv1/conv"
    # the hover labels (SVG titles) name the source nodes: of an op in the input graph,
    # and of every op a fused kernel holds
    assert "<title>lv&#10;from /features/conv1/Conv</title>" in page
    assert ("<title>lv1_1&#10;from /features/bn1/BatchNormalization, /features/relu1/Relu"
            "</title>") in page
    assert page.count("&#10;from ") == 19  # 12 operators and 7 kernels


@_NEEDS_DOT
def test_the_pane_opens_grouped_and_lays_a_group_out_when_it_is_opened(cnn_trace, monkeypatch):
    from passlab import _render
    from passlab.analysis import _graph_groups
    from passlab.views.explorer import Explorer

    # a first view of at most 8 nodes: both groups (/features, /head) closed
    monkeypatch.setattr(_graph_groups, "FIRST_VIEW_NODES", 8)
    layouts = []
    real = _render._lay_out
    monkeypatch.setattr(_render, "_lay_out", lambda exe, src: layouts.append(1) or real(exe, src))
    _render.LAYOUTS.clear()
    ex = Explorer(cnn_trace, selected=cnn_trace.find("FuseTIR").index)
    ex.tab = "provenance"
    page = ex.provenance_html
    assert ex.provenance_open is None and 'data-open="[]"' in page
    assert len(layouts) == 2  # the input graph and the fused graph, each one box per group
    # one box per group in each graph, each with what it holds (lit with it on hover)
    boxes = [(t["data-group"], json.loads(t["data-group-ops"]),
              json.loads(t["data-group-kernels"])) for t in _tags(page, "data-group")]
    head = ("/head", ["lv13", "lv14", "lv16", "gv"], ["mean", "reshape2", "fused_matmul_add2"])
    assert [b[0] for b in boxes] == ["/features", "/head"] * 2 and boxes[1] == boxes[3] == head
    assert "Grouped by the model's node paths: 5 groups, 0 open; click a double-framed box" \
        in page
    ex.provenance_open = ["/features"]  # what a click on the box sends
    page = ex.provenance_html
    assert 'data-open="[&quot;/features&quot;]"' in page and len(layouts) == 4
    assert "<title>cluster_group:/features</title>" in page
    # the input graph shows the groups inside /features (its conv with a bias add) closed
    assert sorted(t["data-group"] for t in _tags(page, "data-group")) == [
        "/features/conv1", "/features/conv2", "/head", "/head"]
    ex.provenance_open = []  # closed again: both drawings made before
    assert 'data-open="[]"' in ex.provenance_html and len(layouts) == 4
    ex.close()


@_NEEDS_DOT
def test_the_report_keeps_the_first_view_and_each_group_opened(cnn_trace, monkeypatch):
    from passlab.analysis import _graph_groups
    from passlab.views._report_state import read_report

    monkeypatch.setattr(_graph_groups, "FIRST_VIEW_NODES", 8)
    data, kept = read_report(render_report(cnn_trace))
    assert data["state"]["provenance_open"] is None
    keys = sorted(k for k in kept if k.startswith("provenance"))
    assert keys == ["provenance:default", "provenance:open:", "provenance:open:/features",
                    "provenance:open:/head"]
    assert kept["provenance:open:"] == kept["provenance:default"]  # one block
    assert data["blocks"]["provenance:open:"] == data["blocks"]["provenance:default"]
    assert 'data-open="[&quot;/head&quot;]"' in kept["provenance:open:/head"]
    assert "opens and closes any group" in data["notes"]["provenance_open"]


@_NEEDS_DOT
def test_every_kept_view_is_under_the_key_the_page_looks_up(cnn_trace):
    # the page joins the groups drawn open sorted (report/model.js); the first view opens
    # them level by level (/features, /head, then /features/conv1, ...): a group opened
    # and closed again must find the first view under its sorted key
    from passlab.views._report_state import read_report

    _, kept = read_report(render_report(cnn_trace))
    views = [k.removeprefix("provenance:open:").split("\n") for k in kept
             if k.startswith("provenance:open:")]
    assert any(len(v) > 2 for v in views)  # a first view with nested groups open
    assert all(v == sorted(v) for v in views), views

