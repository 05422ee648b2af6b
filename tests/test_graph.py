"""fused_graph: nodes, edges, fused ops and patterns at each stage, rendering, bad input."""

from __future__ import annotations

import re
import shutil
from types import SimpleNamespace

import pytest

from passlab import models
from passlab.analysis.graph import FusedGraph, fused_graph
from passlab.errors import UnknownNameError

tvm = pytest.importorskip("tvm")
from relax_snapshots import snapshots  # noqa: E402
from tvm import relax  # noqa: E402


def edge_rows(g: FusedGraph) -> list[tuple]:
    return [(e.src, e.dst, e.tensor, e.shape, e.dtype, e.bytes) for e in g.edges]


# ----------------------------------------------------------------------------- MLP
def test_mlp_before_legalization_has_one_node_per_operator():
    g = fused_graph(snapshots("mlp")["input"], params="show")
    assert [(n.id, n.label) for n in g.nodes if n.kind == "op"] == [
        ("permute_dims", "permute_dims"), ("matmul", "matmul"), ("add", "add"),
        ("relu", "nn.relu"), ("permute_dims1", "permute_dims"), ("matmul1", "matmul"),
        ("add1", "add")]
    assert [n.id for n in g.nodes if n.kind == "input"] == ["x"]
    assert [n.id for n in g.nodes if n.kind == "weight"] == [
        "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n.id for n in g.nodes if n.kind == "output"] == ["output"]


def test_mlp_fuseops_groups_matmul_add_relu_and_leaves_transposes_alone():
    g = fused_graph(snapshots("mlp")["FuseOps"], params="show")
    calls = [(n.label, n.kind, n.ops, n.pattern_name) for n in g.nodes
             if n.kind in ("kernel", "fused")]
    assert calls == [
        ("transpose", "kernel", ("transpose",), "injective"),
        ("fused_matmul_add_relu", "fused", ("matmul", "add", "relu"), "out-elemwise-fusable"),
        ("transpose1", "kernel", ("transpose",), "injective"),
        ("fused_matmul1_add1", "fused", ("matmul", "add"), "out-elemwise-fusable")]


def test_kernel_flops_per_call_from_the_kernel_or_the_kernels_a_fused_function_calls():
    from passlab.analysis.graph import kernel_flops

    snaps = snapshots("mlp")
    after = snaps["FuseTIR"]
    assert kernel_flops(after, fused_graph(after, params="show")) == {
        "permute_dims": None, "lv": 4 * 32 * (2 * 16 + 2), "permute_dims1": None, "gv": 2080.0}
    # before FuseTIR a fused Relax function counts the PrimFuncs it calls
    fused = snaps["FuseOps"]
    assert kernel_flops(fused, fused_graph(fused, params="show"))["lv1"] == 2080.0
    # before LegalizeOps the calls are operators: no estimate; data nodes are left out
    raw = snaps["input"]
    assert kernel_flops(raw, fused_graph(raw, params="show")) == dict.fromkeys(
        ("permute_dims", "matmul", "add", "relu", "permute_dims1", "matmul1", "add1"))


def test_ir_text_gives_a_functions_kind_and_text_or_none():
    from passlab._tvm.printing import function_text
    from passlab.analysis.ir_text import function_source

    after = snapshots("mlp")["FuseTIR"]
    kind, text = function_source(after, "fused_matmul_add_relu")
    assert kind == "TIR" and text == function_text(after["fused_matmul_add_relu"],
                                                   "fused_matmul_add_relu")
    assert function_source(after, "forward")[0] == "Relax"
    assert function_source(after, "no_such") is None and function_source(None, "forward") is None


def test_mlp_edges_after_fusetir_carry_shape_dtype_and_bytes():
    g = fused_graph(snapshots("mlp")["FuseTIR"], params="show")
    assert edge_rows(g) == [
        ("fc1.weight", "permute_dims", "fc1.weight", (32, 16), "float32", 2048),
        ("x", "lv", "x", (4, 16), "float32", 256),
        ("permute_dims", "lv", "permute_dims", (16, 32), "float32", 2048),
        ("fc1.bias", "lv", "fc1.bias", (32,), "float32", 128),
        ("fc2.weight", "permute_dims1", "fc2.weight", (8, 32), "float32", 1024),
        ("lv", "gv", "lv", (4, 32), "float32", 512),
        ("permute_dims1", "gv", "permute_dims1", (32, 8), "float32", 1024),
        ("fc2.bias", "gv", "fc2.bias", (8,), "float32", 32),
        ("gv", "output", "gv", (4, 8), "float32", 128)]


def test_fused_primfunc_ops_from_name_or_from_the_module_before_fusetir():
    snaps = snapshots("mlp")
    alone = fused_graph(snaps["FuseTIR"], params="show")
    assert (alone["lv"].ops, alone["lv"].pattern) == (("matmul", "add", "relu"), None)
    step = SimpleNamespace(name="FuseTIR", before=snaps["FuseOps"], after=snaps["FuseTIR"])
    g = fused_graph(step, params="show")
    assert (g["lv"].ops, g["lv"].pattern, g["gv"].pattern) == (("matmul", "add", "relu"), 4, 4)


def test_lowered_graph_names_tensors_after_the_program_not_the_alloc():
    g = fused_graph(snapshots("mlp")["StaticPlanBlockMemory"], params="show")
    assert [(n.id, n.label) for n in g.nodes if n.kind in ("kernel", "fused")] == [
        ("permute_dims", "transpose"), ("lv", "fused_matmul_add_relu"),
        ("permute_dims1", "transpose1"), ("gv", "fused_matmul1_add1")]
    assert [e.tensor for e in g.inputs_of("gv")] == ["lv", "permute_dims1", "fc2.bias"]


def test_text_listing_is_exact():
    text = fused_graph(snapshots("mlp")["FuseTIR"], params="show").to_text().splitlines()
    assert text[0] == ("fused graph of forward: 10 nodes (1 input, 4 weight, 2 kernel, 2 fused, "
                       "1 output), 9 edges")
    assert "  [fused] lv = fused_matmul_add_relu [matmul + add + relu]" in text
    assert "      <- permute_dims: 16x32 float32, 2.0 KiB" in text


# --------------------------------------------------------------------------- ResNet
def test_resnet_after_fusetir_has_one_node_per_kernel_call():
    mod = snapshots("resnet")["FuseTIR"]
    called = re.findall(r"R\.call_tir\((?:cls\.)?(\w+)", mod["forward"].script())
    g = fused_graph(mod, params="show")
    assert [n.label for n in g.nodes if n.kind in ("kernel", "fused")] == called
    assert len(called) == 41
    assert sum(n.kind == "weight" for n in g.nodes) == 102


def test_resnet_fused_batch_norm_ops_and_patterns():
    snaps = snapshots("resnet")
    g = fused_graph(snaps["FuseTIR"], before=snaps["FuseOps"], params="show")
    fused = {n.label: (n.ops, n.pattern_name) for n in g.nodes if n.kind == "fused"}
    assert fused["fused_batch_norm1_batch_norm1_add1_relu1"] == (
        ("batch_norm", "batch_norm", "add", "relu"), "injective")
    assert fused["fused_matmul_add4"] == (("matmul", "add"), "out-elemwise-fusable")
    assert g["conv2d"].pattern_name == "out-elemwise-fusable"


# ---------------------------------------------------------------- big graphs, tuples
def test_twelve_layer_transformer_collapses_to_one_block_and_a_repeat_node():
    mod = snapshots("tf12")["FuseTIR"]
    full = fused_graph(mod, params="show")
    assert len(full.nodes) == 311
    assert "  note: shown 200 of 311 nodes" in full.to_text()
    g = fused_graph(mod, collapse=True, params="show")
    repeats = [n for n in g.nodes if n.kind == "repeat"]
    assert len(g.nodes) == 37 and len(repeats) == 1
    assert (repeats[0].count, len(repeats[0].ops)) == (11, 18)
    assert g.notes == ("collapsed 12 identical blocks of 18 calls (rms_norm ... fused_matmul3_add) "
                       "into 1 block + repeat1",)
    assert all(e.src in {n.id for n in g.nodes} and e.dst in {n.id for n in g.nodes}
               for e in g.edges)


def test_region_filters_by_text_or_binding_range():
    g = fused_graph(snapshots("mlp")["FuseTIR"], region="matmul1", params="show")
    assert [n.id for n in g.nodes] == ["fc2.bias", "gv", "output"]
    assert g.notes == ("region 'matmul1': 3 of 10 nodes",)
    g = fused_graph(snapshots("mlp")["FuseTIR"], region=(0, 1), params="show")
    assert [n.id for n in g.nodes] == ["fc1.weight", "permute_dims"]
    with pytest.raises(UnknownNameError, match="unknown region 'conv'"):
        fused_graph(snapshots("mlp")["FuseTIR"], region="conv")


def test_tuple_outputs_flow_through_tuple_get_item():
    g = fused_graph(snapshots("dyn")["FuseTIR"])
    split = [(e.tensor, e.dst, e.shape, e.bytes, e.size) for e in g.outputs_of("split")]
    assert split[0] == ("split[0]", "lv1", (1, "n", 1, 4, 16), None, "256 * n")
    assert [s[1] for s in split] == ["lv1", "lv3", "lv5"]


def test_codegen_partition_is_drawn_as_a_cluster():
    import tvm.relax.backend.contrib.tensorrt  # noqa: F401  (registers the patterns)
    from tvm.relax.backend.pattern_registry import get_patterns_with_prefix

    f = models.mlp()["forward"]
    mod = tvm.IRModule({tvm.ir.GlobalVar("main"): f.with_attr("global_symbol", "main")})
    mod = relax.transform.FuseOpsByPattern(get_patterns_with_prefix("tensorrt"),
                                           annotate_codegen=False)(mod)
    g = fused_graph(relax.transform.MergeCompositeFunctions()(mod), params="show")
    assert len(g.clusters) == 1 and g.clusters[0].label.startswith("tensorrt: fused_relax_")
    inside = [(n.label, n.ops) for n in g.nodes if n.cluster == "c0"]
    assert inside[:2] == [("tensorrt.transpose", ("permute_dims",)),
                          ("tensorrt.nn.batch_matmul", ("matmul",))]
    assert len(inside) == 7
    assert 'subgraph "cluster_c0" {' in g.to_dot()


# ------------------------------------------------------------------------ rendering
def hostile_module() -> tvm.IRModule:
    x = relax.Var('x"<b>&\\', relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function('f<script>"', [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x), name_hint="y</td><script>alert(1)</script>")
            out = bb.emit_output(relax.op.nn.relu(y), name_hint='o"ut\nnext')
        bb.emit_func_output(out)
    return bb.get()


def test_dot_and_html_escape_hostile_names(monkeypatch):
    g = fused_graph(hostile_module())
    dot = g.to_dot()
    assert dot.startswith('digraph "f<script>\\"" {')
    assert '"x\\"<b>&\\\\" [shape=oval' in dot  # quoted ID: quote and backslash escaped
    assert "label=<<B>x&quot;&lt;b&gt;&amp;\\</B>>" in dot  # HTML-like label: entities
    assert '"o\\"ut\\nnext" -> "output"' in dot
    # every quoted string in the DOT source is closed: strip them, no quote remains
    assert '"' not in re.sub(r'"(?:[^"\\]|\\.)*"', "", dot)
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    page = g.to_html()
    assert "<script>" not in page and "y&lt;/td&gt;&lt;script&gt;" in page
    assert "f&lt;script&gt;&quot;" in page


def test_svg_without_dot_names_what_to_install(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    g = fused_graph(snapshots("mlp")["FuseTIR"])
    with pytest.raises(RuntimeError, match="install Graphviz|Install Graphviz"):
        g.to_svg()
    assert "<table" in g.to_html()


def test_mimebundle_never_raises(monkeypatch):
    g = fused_graph(snapshots("mlp")["FuseTIR"])
    monkeypatch.setattr(FusedGraph, "to_html", lambda self: 1 / 0)
    bundle = g._repr_mimebundle_()
    assert bundle["text/plain"].startswith("fused graph of forward")
    assert "ZeroDivisionError" in bundle["text/html"]


def test_dataframes():
    g = fused_graph(snapshots("mlp")["FuseTIR"], params="show")
    nodes, edges = g.to_dataframe(), g.to_dataframe("edges")
    assert list(nodes["id"]) == [n.id for n in g.nodes]
    assert list(edges["bytes"]) == [2048, 256, 2048, 128, 1024, 512, 1024, 32, 128]
    assert edges["shape"].iloc[0] == "32x16"


# ------------------------------------------------------------------------ bad input
def test_bad_inputs_give_clear_errors():
    mod = snapshots("mlp")["FuseTIR"]
    with pytest.raises(UnknownNameError, match="did you mean 'forward'"):
        fused_graph(mod, function="forwad")
    with pytest.raises(UnknownNameError, match="is a PrimFunc, not a Relax function"):
        fused_graph(mod, function="transpose")
    prims = tvm.IRModule({gv: f for gv, f in mod.functions_items()
                          if not isinstance(f, relax.Function)})
    with pytest.raises(ValueError, match="no Relax function"):
        fused_graph(prims)
    with pytest.raises(TypeError, match="tvm.IRModule or a Step"):
        fused_graph("forward")
    with pytest.raises(ValueError, match="the pass failed"):
        fused_graph(SimpleNamespace(name="Bad", before=mod, after=None))
    with pytest.raises(UnknownNameError):
        fused_graph(mod)["nope"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_svg_with_dot_escapes_hostile_names():
    svg = fused_graph(hostile_module()).to_svg()
    assert "<svg" in svg and "<script>" not in svg


# ------------------------------------------------------------------ parameters folded
def test_default_graph_folds_weights_and_parameter_plumbing_on_mlp():
    g = fused_graph(snapshots("mlp")["FuseTIR"])
    assert [n.id for n in g.nodes] == ["x", "lv", "gv", "output"]
    assert [(n.id, n.params, n.param_bytes) for n in g.nodes if n.params] == [
        ("lv", ("fc1.weight", "fc1.bias"), 2048 + 128),
        ("gv", ("fc2.weight", "fc2.bias"), 1024 + 32)]
    assert g.notes == ("4 parameters and 2 calls that only transform parameters folded into "
                       "their consumers (params='show' draws them)",)
    assert "(+2 params, 2.1 KiB: fc1.weight, fc1.bias)" in g.to_text()
    assert "+ 2 params, 2.1 KiB" in g.to_dot()


def test_resnet_after_fusetir_shows_no_weight_nodes_by_default():
    mod = snapshots("resnet")["FuseTIR"]
    shown, folded = fused_graph(mod, params="show"), fused_graph(mod)
    weights = [n for n in shown.nodes if n.kind in ("weight", "constant")]
    assert len(weights) > 50
    assert not [n for n in folded.nodes if n.kind in ("weight", "constant")]
    # every weight is noted on a consumer, and no computation on activations is lost
    assert {p for n in folded.nodes for p in n.params} == {n.id for n in weights}
    kept = {n.id for n in shown.nodes if n.kind not in ("weight", "constant")}
    plumbing = kept - {n.id for n in folded.nodes}
    assert all(all(e.src not in kept - plumbing for e in shown.inputs_of(p)) for p in plumbing)


def test_hide_drops_parameters_without_notes_and_modes_are_checked():
    g = fused_graph(snapshots("mlp")["FuseTIR"], params="hide")
    assert [n.id for n in g.nodes] == ["x", "lv", "gv", "output"]
    assert all(n.params == () for n in g.nodes)
    assert "hidden" in g.notes[0]
    with pytest.raises(UnknownNameError, match="unknown params mode 'fold'. Known params mode names: collapse, show, hide"):
        fused_graph(snapshots("mlp")["FuseTIR"], params="fold")


def test_inputs_names_the_real_inputs_when_the_model_does_not():
    mod = snapshots("mlp")["FuseTIR"]
    func = mod["forward"].without_attr("num_input")  # every parameter now counts as input
    bare = mod.__class__({**{gv: f for gv, f in mod.functions_items()},
                          mod.get_global_var("forward"): func})
    assert len([n for n in fused_graph(bare).nodes if n.kind == "input"]) == 5
    g = fused_graph(bare, inputs=["x"])
    assert [n.id for n in g.nodes] == ["x", "lv", "gv", "output"]
    with pytest.raises(UnknownNameError, match="unknown input 'y'"):
        fused_graph(bare, inputs=["y"])
