"""Source groups of the fused graph (passlab/analysis/_graph_groups.py): calls grouped by
the model's node paths, closed groups drawn as one box, opened ones as frames; the
Explorer's graph_open and Model Explorer's namespaces."""

from __future__ import annotations

import shutil

import pytest

import passlab
from passlab.analysis._graph_groups import fold, namespace

pytest.importorskip("tvm")
_NEEDS_DOT = pytest.mark.skipif(shutil.which("dot") is None, reason="needs graphviz's dot")


def test_namespace_is_the_path_the_source_names_share():
    assert namespace(("/layer1/layer1.0/conv2/Conv", "/layer1/layer1.0/Add",
                      "/layer1/layer1.0/relu_1/Relu")) == ("/layer1", "/layer1/layer1.0")
    assert namespace(("/conv1/Conv",)) == ("/conv1",)
    assert namespace(("layer1.0.conv1", "conv2d_1")) == ("layer1", "layer1.0", "layer1.0.conv1")
    assert namespace(("layer1.0.bn1", "layer1.0.relu", "relu_1")) == ("layer1", "layer1.0")
    assert namespace(("Conv_0", "relu")) == ()  # no path: no group


def test_groups_of_a_mapping_keep_paths_of_two_or_more_members():
    g = passlab.fused_graph(passlab.models.mlp()).with_sources({
        "matmul": ("/fc1/MatMul",), "add": ("/fc1/Add",), "relu": ("/relu/Relu",),
        "matmul1": ("/fc2/MatMul",), "add1": ("/fc2/Add",)})
    assert [(grp.id, grp.label, grp.parent, grp.nodes) for grp in g.groups] == [
        ("/fc1", "fc1", None, ("matmul", "add")), ("/fc2", "fc2", None, ("matmul1", "add1"))]
    assert g["relu"].source == ("/relu/Relu",) and g.group("add1") == "/fc2"
    closed = fold(g)
    assert [(n.id, n.kind, n.count) for n in closed.nodes] == [
        ("x", "input", 1), ("group:/fc1", "group", 2), ("relu", "op", 1),
        ("group:/fc2", "group", 2), ("output", "output", 1)]
    assert [(e.src, e.dst, e.tensor) for e in closed.edges] == [
        ("x", "group:/fc1", "x"), ("group:/fc1", "relu", "add"),
        ("relu", "group:/fc2", "relu"), ("group:/fc2", "output", "add1")]
    opened = fold(g, ["/fc1"])
    assert [(n.id, n.cluster) for n in opened.nodes][:4] == [
        ("x", None), ("matmul", "group:/fc1"), ("add", "group:/fc1"), ("relu", None)]
    assert [(c.id, c.kind) for c in opened.clusters] == [("group:/fc1", "source")]
    # a group holding every call tells nothing: dropped
    every = passlab.fused_graph(passlab.models.mlp()).with_sources(
        {n: (f"/net/{n}/Op",) for n in ("matmul", "add", "relu", "matmul1", "add1")})
    assert every.groups == ()


def test_a_first_view_opens_the_groups_level_by_level_while_it_stays_small():
    from passlab.analysis._graph_groups import drawn_nodes, first_opened

    g = passlab.fused_graph(passlab.models.mlp()).with_sources({
        "matmul": ("/a/fc1/MatMul",), "add": ("/a/fc1/Add",), "relu": ("/a/relu/Relu",),
        "matmul1": ("/b/fc2/MatMul",), "add1": ("/b/fc2/Add",)})
    # (/b holds what /b/fc2 holds: one group, the innermost path)
    assert [(grp.id, grp.parent) for grp in g.groups] == [("/a", None), ("/a/fc1", "/a"),
                                                          ("/b/fc2", None)]
    for opened in ((), ("/a",), ("/a", "/b/fc2"), ("/a", "/a/fc1", "/b/fc2"), ("/a/fc1",)):
        assert drawn_nodes(g, opened) == len(fold(g, opened).nodes)
    assert [drawn_nodes(g, o) for o in ((), ("/a", "/b/fc2"), ("/a", "/a/fc1", "/b/fc2"))] \
        == [4, 6, 7]
    assert first_opened([g], budget=5) == ()
    assert first_opened([g], budget=6) == ("/a", "/b/fc2")  # the top level, whole
    assert first_opened([g]) == ("/a", "/b/fc2", "/a/fc1")  # all of it: within 40 nodes


def test_the_tensors_between_a_closed_group_and_a_node_are_one_edge():
    from passlab.analysis.graph import Edge, FusedGraph, Node

    nodes = (Node("x", "x", "input"), Node("a", "conv", "kernel"), Node("b", "conv1", "kernel"),
             Node("c", "concat", "kernel"), Node("output", "output", "output"))
    edges = (Edge("x", "a", "x", (1, 8), "float32", 32), Edge("x", "b", "x", (1, 8), "float32", 32),
             Edge("a", "c", "lv", (1, 8), "float32", 32), Edge("b", "c", "lv1", (1, 8), "float32", 32),
             Edge("c", "output", "gv", (1, 16), "float32", 64))
    g = FusedGraph("main", nodes, edges).with_sources({"a": ("block.conv",), "b": ("block.conv1",),
                                                      "c": ("cat",)})
    closed = fold(g)
    assert [(e.src, e.dst, e.tensor, e.bytes, e.count) for e in closed.edges] == [
        ("x", "group:block", "x", 32, 1), ("group:block", "c", "2 tensors", 64, 2),
        ("c", "output", "gv", 64, 1)]
    assert '"group:block" -> "c" [label="2 tensors\\nfloat32, 64 B"];' in g.to_dot()
    assert [e.count for e in fold(g, ["block"]).edges] == [1, 1, 1, 1, 1]  # opened: each


def test_dot_draws_closed_groups_as_boxes_and_opened_ones_as_frames():
    g = passlab.fused_graph(passlab.models.mlp()).with_sources(
        {"matmul": ("/fc1/MatMul",), "add": ("/fc1/Add",)})
    dot = g.to_dot()
    assert ('"group:/fc1" [shape=box, style="rounded,filled", peripheries=2, '
            'fillcolor="#e7f5ff", class="plx-group", tooltip="/fc1: 2 calls (click to open)"'
            in dot)
    assert '"matmul"' not in dot and "subgraph" not in dot
    dot = g.to_dot(opened=["/fc1"])
    assert 'subgraph "cluster_group:/fc1" {' in dot and 'class="plx-group-open"' in dot
    assert '"group:/fc1" [' not in dot and '"matmul" [' in dot


@pytest.fixture(scope="module")
def cnn_trace():
    pytest.importorskip("onnx")
    from test_explorer_provenance import _named_cnn_with_weights_as_inputs

    return passlab.build(passlab.load(_named_cnn_with_weights_as_inputs(),
                                      input=(1, 3, 32, 32))).trace


def test_an_onnx_cnn_groups_by_its_node_paths_at_every_step(cnn_trace):
    prov = passlab.provenance(cnn_trace)
    legal = cnn_trace.find("LegalizeOps")
    g = passlab.fused_graph(legal).with_sources(prov, legal)
    assert [(grp.id, grp.parent, len(grp.nodes)) for grp in g.groups] == [
        ("/features", None, 8), ("/features/conv1", "/features", 2),
        ("/features/conv2", "/features", 2), ("/head", None, 4), ("/head/fc", "/head", 2)]
    fuse = cnn_trace.find("FuseTIR")
    g = passlab.fused_graph(fuse).with_sources(prov, fuse)
    assert [(grp.id, grp.nodes) for grp in g.groups] == [
        ("/features", ("lv", "lv1_1", "lv8", "lv2")), ("/head", ("lv13", "lv14", "gv"))]
    assert g["lv1_1"].source == ("/features/bn1/BatchNormalization", "/features/relu1/Relu")
    me = g.to_model_explorer()
    spaces = {n["id"]: n["namespace"] for n in me["nodes"]}
    # the graph is the function: its stages are the top layers Model Explorer opens on
    assert (spaces["input"], spaces["lv"], spaces["gv"]) == ("", "features", "head")


@_NEEDS_DOT
def test_the_explorer_opens_and_closes_groups_through_graph_open(cnn_trace):
    pytest.importorskip("anywidget")
    ex = passlab.Explorer(cnn_trace, tab="graph", selected=cnn_trace.find("FuseTIR").index)
    # the first view opens the groups level by level while the drawing stays small: both
    # (the front end toggles a group from the drawing's data-open while graph_open is None)
    assert ex.graph_open is None
    assert ex.graph_html.count('class="cluster plx-group-open"') == 2
    assert ("2 top-level groups (2 in all, 0 closed)" in ex.graph_html
            and 'data-open="[&quot;/features&quot;, &quot;/head&quot;]"' in ex.graph_html)
    ex.graph_open = []
    assert ex.graph_html.count('class="node plx-group') == 2
    assert 'data-open="[]"' in ex.graph_html
    assert ("grouped by the model's node paths: 2 top-level groups (2 in all, 2 closed)"
            in ex.graph_html)
    ex.graph_open = ["/features"]
    assert ex.graph_html.count('class="node plx-group') == 1
    assert 'class="cluster plx-group-open"' in ex.graph_html
    assert "<title>cluster_group:/features</title>" in ex.graph_html
    # a static page (the report, render_all's exports) cannot click: every group open
    page = ex._panes.pane("graph", ex.selected)
    assert page.count('class="cluster plx-group-open"') == 2
    assert 'class="node plx-group' not in page
