"""Source names: provenance reaches the ONNX node names (and PyTorch module paths) of an
imported model, both ways, and survives a saved trace; unnamed models fall back cleanly."""

from __future__ import annotations

import numpy as np
import pytest

import passlab
from passlab.io.archive import load_trace, save_trace
from passlab.models import _source_names

onnx = pytest.importorskip("onnx", reason="the ONNX tests need passlab[onnx]")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

NAMES = ("/conv1/Conv", "/relu/Relu", "/Reshape", "/fc/Gemm")


def onnx_cnn(named: bool = True, names: tuple[str, ...] = NAMES):
    """Conv (with bias) -> Relu -> Reshape -> Gemm, nodes named as torch.onnx.export
    names them (or ``names``, or unnamed)."""
    rng = np.random.default_rng(0)
    weights = {"W": rng.standard_normal((4, 3, 3, 3)), "B": rng.standard_normal(4),
               "G": rng.standard_normal((256, 10)), "GB": rng.standard_normal(10)}
    inits = [numpy_helper.from_array(v.astype("float32"), k) for k, v in weights.items()]
    inits.append(numpy_helper.from_array(np.array([1, -1], dtype="int64"), "S"))
    ops = [("Conv", ["x", "W", "B"], "c", {"pads": [1, 1, 1, 1]}), ("Relu", ["c"], "r", {}),
           ("Reshape", ["r", "S"], "f", {}), ("Gemm", ["f", "G", "GB"], "y", {})]
    nodes = [helper.make_node(op, ins, [out], name=name if named else "", **attrs)
             for (op, ins, out, attrs), name in zip(ops, names)]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def named_build():
    return passlab.build(passlab.load(onnx_cnn()))


def test_each_binding_names_the_onnx_node_it_came_from_and_the_import_is_unchanged():
    from tvm.relax.frontend.onnx import from_onnx

    mod = passlab.load(onnx_cnn())
    # the Conv's bias reshape and add are the Conv's; the Gemm's matmul and add the Gemm's
    assert _source_names.source_names(mod["main"]) == {
        "lv": ("/conv1/Conv",), "lv1": ("/conv1/Conv",), "lv2": ("/conv1/Conv",),
        "lv3": ("/relu/Relu",), "lv4": ("/Reshape",), "lv5": ("/fc/Gemm",),
        "gv": ("/fc/Gemm",)}
    # spans only: the program is the one TVM's importer makes, and prints the same
    plain = from_onnx(onnx_cnn())
    assert passlab._tvm.structural_equal(mod["main"], plain["main"])
    assert mod.script() == plain.script()


def test_provenance_reaches_onnx_node_names_both_ways(named_build):
    prov = passlab.provenance(named_build)
    assert [(o.op, o.source) for o in prov][:4] == [
        ("lv", ("/conv1/Conv",)), ("lv1", ("/conv1/Conv",)), ("lv2", ("/conv1/Conv",)),
        ("lv3", ("/relu/Relu",))]
    assert prov.sources == NAMES
    # node name -> operator calls -> kernels
    assert [o.op for o in prov.by_source("/conv1/Conv")] == ["lv", "lv1", "lv2"]
    assert prov.kernels_of("/conv1/Conv") == prov.kernels_of("/relu/Relu") == (
        "fused_conv2d_add_relu",)
    assert prov.kernels_of("/fc/Gemm") == ("fused_matmul_add1",)
    # kernel -> node names
    assert prov.sources_of("fused_conv2d_add_relu") == ("/conv1/Conv", "/relu/Relu")
    assert prov.sources_of("fused_matmul_add1") == ("/fc/Gemm",)
    lines = prov.to_text().splitlines()
    assert lines[1].split() == ["op", "operator", "kernels", "fate", "note", "source"]
    assert lines[3].split() == ["lv", "nn.conv2d", "fused_conv2d_add_relu", "kernel",
                                "/conv1/Conv"]
    assert "<td>/fc/Gemm</td>" in prov.to_html()
    frame = prov.to_dataframe()
    assert list(frame["source"]) == ["/conv1/Conv"] * 3 + ["/relu/Relu", "/Reshape"] + [
        "/fc/Gemm"] * 2
    with pytest.raises(passlab.UnknownNameError, match="did you mean '/conv1/Conv'"):
        prov.by_source("/conv1/Con")


def test_source_names_survive_a_saved_trace(named_build, tmp_path):
    loaded = load_trace(save_trace(named_build.trace, tmp_path / "cnn.zip"))
    prov = passlab.provenance(loaded)
    assert prov.kernels_of("/conv1/Conv") == ("fused_conv2d_add_relu",)
    assert prov.sources_of("fused_matmul_add1") == ("/fc/Gemm",)


def test_unnamed_onnx_nodes_fall_back_to_binding_names():
    mod = passlab.load(onnx_cnn(named=False))
    assert _source_names.source_names(mod["main"]) == {}
    prov = passlab.provenance(passlab.build(mod))
    assert prov.sources == () and all(o.source == () for o in prov)
    assert prov.kernels_of("lv") == ("fused_conv2d_add_relu",)
    assert "source" not in prov.to_text().splitlines()[1]
    assert "source" not in prov.to_dataframe().columns
    with pytest.raises(passlab.UnknownNameError) as err:
        prov.by_source("/conv1/Conv")
    assert str(err.value).strip("'\"") == (
        "unknown source node '/conv1/Conv': the input's main carries no source node names "
        "(ONNX and PyTorch models imported with passlab.load carry them, when their nodes "
        "have names); look operators up by binding name instead")


def test_an_importer_tvm_moved_imports_without_names():
    with _source_names.capturing("tvm.relax.frontend.onnx.onnx_frontend", "NoSuchImporter",
                                 "from_onnx", "_nodes") as tables:
        assert tables == []
    mod = passlab.load(onnx_cnn())
    assert _source_names.attach(mod, []) is mod
    # the importer class is restored after the import
    from tvm.relax.frontend.onnx.onnx_frontend import ONNXGraphImporter

    assert ONNXGraphImporter.from_onnx.__name__ == "from_onnx"
    assert not hasattr(ONNXGraphImporter.from_onnx, "__wrapped__")


def test_torch_ops_name_their_module_path_and_node(tmp_path):
    torch = pytest.importorskip("torch", reason="needs passlab[torch]")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).mean((2, 3)))

    mod = passlab.load(Net(), example_inputs=(torch.randn(1, 3, 8, 8),))
    build = passlab.build(mod)
    prov = passlab.provenance(build)
    assert [o.op for o in prov.by_source("conv")] == ["lv", "lv1", "lv2"]
    assert prov["lv"].source == ("conv", "convolution")
    assert prov.kernels_of("conv") == prov.kernels_of("relu") == ("fused_conv2d_add_relu",)
    assert prov.sources_of("fused_conv2d_add_relu") == ("conv", "convolution", "relu")
    # two names in one span survive a saved trace
    loaded = load_trace(save_trace(build.trace, tmp_path / "net.zip"))
    assert passlab.provenance(loaded)["lv"].source == ("conv", "convolution")


# ---------------------------------------------------------- parent paths, odd names
def module_tree() -> passlab.analysis.provenance.Provenance:
    """Provenance of a ResNet-like block structure, as passlab.load names a torch model:
    layer1 (a Sequential: no op of its own) > layer1.0 (a block: its residual add) >
    layer1.0.conv1 ..."""
    from passlab.analysis.provenance import OpOrigin, Provenance

    rows = [("lv", "layer1.0.conv1", "fused_conv2d_relu"), ("lv1", "layer1.0.bn1", "fused_bn"),
            ("lv2", "layer1.0.conv2", "fused_conv2d1"), ("lv3", "layer1.0.bn2", "fused_bn1"),
            ("lv4", "layer1.0", "fused_add_relu"), ("lv5", "layer1.1.conv1", "fused_conv2d2"),
            ("lv6", "layer10.conv1", "fused_conv2d3")]
    return Provenance("main", tuple(OpOrigin(op, "nn.conv2d", (k,), "kernel", source=(s, f"n{i}"))
                                    for i, (op, s, k) in enumerate(rows)))


def test_a_parent_path_matches_its_whole_subtree():
    # issue 22 item 13: kernels_of("layer1.0") gave the block's own add only, and "layer1"
    # (a container with no op of its own) raised
    prov = module_tree()
    assert prov.kernels_of("layer1.0") == ("fused_conv2d_relu", "fused_bn", "fused_conv2d1",
                                           "fused_bn1", "fused_add_relu")
    assert [o.op for o in prov.by_source("layer1")] == ["lv", "lv1", "lv2", "lv3", "lv4", "lv5"]
    assert prov.kernels_of("layer1.0.conv1") == ("fused_conv2d_relu",)
    assert prov.kernels_of("layer10") == ("fused_conv2d3",)  # not layer1's: no separator
    assert prov.kernels_of("lv4") == ("fused_add_relu",)  # binding names still work
    with pytest.raises(passlab.UnknownNameError) as err:
        prov.kernels_of("layer1.O")
    assert str(err.value).startswith(
        "unknown source node 'layer1.O'; did you mean 'layer1.1', 'layer1.0', 'layer1'? "
        "Known source node names: layer1, layer1.0, layer1.0.conv1, n0, layer1.0.bn1, ")
    assert str(err.value).endswith(
        "(ONNX node names or PyTorch module paths of the input, and their parent paths; "
        "binding names such as 'lv', 'lv1' work too)")


def test_an_onnx_node_name_holding_a_newline_stays_one_name():
    # issue 22 item 13: names were joined by newlines in one SourceName, so this one came
    # back as two nodes, "/layer1/conv" and "injected", neither a node of the model
    names = ("/layer1/conv\ninjected", "/layer1/relu", '/Reshape ["x"]', "/fc/Gemm")
    build = passlab.build(passlab.load(onnx_cnn(names=names)))
    prov = passlab.provenance(build)
    assert prov.sources == names
    assert prov["lv"].source == ("/layer1/conv\ninjected",)
    assert prov.kernels_of("/layer1") == ("fused_conv2d_add_relu",)
    with pytest.raises(passlab.UnknownNameError, match="unknown source node 'injected'"):
        prov.by_source("injected")
    # what the span holds: a JSON list; an older trace's newline-joined text still reads
    span = build.trace[0].before["main"].body.blocks[0].bindings[0].span
    assert span.source_name.name == '["/layer1/conv\\ninjected"]'
    assert _source_names._names("conv\nconvolution") == ("conv", "convolution")
    assert _source_names._names('["a", "b\\nc"]') == ("a", "b\nc")
    assert _source_names._names("[not json") == ("[not json",)
