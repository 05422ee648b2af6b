"""Model Explorer export: the JSON graph format checked against the ai-edge-model-explorer
package's own graph-builder and node-data types (strict dacite loading)."""

from __future__ import annotations

import json

import pytest

import passlab
from passlab.analysis.graph import fused_graph

tvm = pytest.importorskip("tvm")
from relax_snapshots import snapshots  # noqa: E402

me = pytest.importorskip("model_explorer", reason="pip install 'passlab[model-explorer]'")
dacite = pytest.importorskip("dacite")
from model_explorer import graph_builder, node_data_builder  # noqa: E402

STRICT = dacite.Config(strict=True)


def load_graph(data: dict) -> graph_builder.Graph:
    return dacite.from_dict(graph_builder.Graph, data, config=STRICT)


def test_graph_matches_model_explorer_types_and_keeps_edges():
    g = fused_graph(snapshots("mlp")["FuseTIR"])
    graph = load_graph(g.to_model_explorer())
    assert graph.id == "forward"
    assert [n.id for n in graph.nodes] == [n.id for n in g.nodes] == ["x", "lv", "gv", "output"]
    by_id = {n.id: n for n in graph.nodes}
    assert [(e.sourceNodeId, e.sourceNodeOutputId, e.targetNodeInputId)
            for e in by_id["gv"].incomingEdges] == [("lv", "0", "0")]
    lv = by_id["lv"]
    assert lv.namespace == ""  # the graph is the function; no layer wraps it
    attrs = {kv.key: kv.value for kv in lv.attrs}
    assert attrs["kind"] == "fused" and attrs["ops"] == "matmul + add + relu"
    assert attrs["params"] == "fc1.weight, fc1.bias" and attrs["param_bytes"] == "2176"
    out = {kv.key: kv.value for kv in lv.outputsMetadata[0].attrs}
    assert out == {"__tensor_tag": "lv", "shape": "4x32", "dtype": "float32", "bytes": "512"}
    # every edge of the passlab graph is an incoming edge in the export
    assert sum(len(n.incomingEdges) for n in graph.nodes) == len(g.edges)


def test_backend_regions_become_namespaces():
    from tvm.relax.dpl import is_op, wildcard

    npu = passlab.Backend("npu", patterns=[
        ("dense", is_op("relax.matmul")(wildcard(), wildcard()))])
    trace = npu.preview(passlab.models.mlp())
    g = fused_graph(trace.top_level()[-1])
    graph = load_graph(g.to_model_explorer())
    spaces = {n.namespace for n in graph.nodes}
    assert "" in spaces and any(s and not s.startswith("forward") for s in spaces)


def test_file_with_one_graph_per_step_and_node_data_overlays(tmp_path, mlp_build):
    trace = mlp_build.trace
    paths = passlab.to_model_explorer(trace, tmp_path / "mlp.json")
    assert [p.name for p in paths] == ["mlp.json", "mlp.bytes_out.json", "mlp.bytes_in.json"]
    data = json.loads(paths[0].read_text())
    # the app's loader reads a graph collection: a top-level label is required
    collection = dacite.from_dict(graph_builder.GraphCollection, data, config=STRICT)
    assert collection.label == "mlp"
    graphs = collection.graphs
    names = [f"{trace.find(n).index:03d} {n}" for n in
             ("LegalizeOps", "FuseOps", "FuseTIR", "StaticPlanBlockMemory")]
    assert [g.id for g in graphs] == names
    overlay = json.loads(paths[1].read_text())
    assert list(overlay) == names
    fusetir = dacite.from_dict(node_data_builder.GraphNodeData, overlay[names[2]],
                               config=STRICT)
    g = fused_graph(trace.find("FuseTIR"))
    assert {k: r.value for k, r in fusetir.results.items()} == {"x": 256, "lv": 512, "gv": 128}
    assert set(fusetir.results) <= {n.id for n in g.nodes}


def test_bad_input_says_what_is_wanted(tmp_path, mlp_build):
    with pytest.raises(TypeError, match="takes a Trace, a Step or a list of Steps"):
        passlab.to_model_explorer(42, tmp_path / "x.json")
    trace = mlp_build.trace
    with pytest.raises(passlab.UnknownNameError, match="FuseOp"):
        passlab.to_model_explorer(trace, tmp_path / "x.json", steps=["FuseOp"])


def test_label_and_inputs_are_passed_through(tmp_path, mlp_build):
    paths = passlab.to_model_explorer(mlp_build.trace, tmp_path / "g.json", steps=["FuseTIR"],
                                      label="my mlp", inputs=["x"])
    data = json.loads(paths[0].read_text())
    assert data["label"] == "my mlp"
    (graph,) = data["graphs"]
    assert [n["id"] for n in graph["nodes"]] == ["x", "lv", "gv", "output"]
    # naming no input makes every parameter a weight, folded into the kernels
    paths = passlab.to_model_explorer(mlp_build.trace, tmp_path / "w.json", steps=["FuseTIR"],
                                      inputs=[])
    (graph,) = json.loads(paths[0].read_text())["graphs"]
    assert "x" not in [n["id"] for n in graph["nodes"]]
